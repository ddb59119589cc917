/*
 * Which shards `nq audit` counts again, and counting them: the descriptor always comes from
 * the job's list (which the scan has checked every line against), never from the file.
 */
#include "audit.h"
#include "rng.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define RNG_STREAM_AUDIT 0x617564u    /* "aud": the sample's draws are its own */

static int cmp_pick(const void *a, const void *b)
{
    uint64_t x = ((const audit_pick_t *)a)->idx, y = ((const audit_pick_t *)b)->idx;
    return x < y ? -1 : x > y;
}

static int cmp_rank(const void *a, const void *b)
{
    uint64_t x = ((const audit_pick_t *)a)->rank, y = ((const audit_pick_t *)b)->rank;
    return x < y ? -1 : x > y;
}

/* Floyd: for j = shards-k .. shards-1 draw t in [0, j]; take t unless taken, else j. Each
   k-subset is equally likely, and the membership test is a scan of at most k entries, which
   is fine for the hundreds an audit samples. */
audit_pick_t *audit_sample(uint64_t shards, uint64_t k, uint64_t seed)
{
    nq_rng_t r;
    audit_pick_t *p = calloc(k ? k : 1, sizeof *p);
    if (!p)
        return NULL;
    rng_init(&r, seed, RNG_STREAM_AUDIT);
    size_t n = 0;
    for (uint64_t j = shards - k; j < shards; j++) {
        uint64_t t = rng_below(&r, j + 1);
        for (size_t i = 0; i < n; i++)
            if (p[i].idx == t) {
                t = j;
                break;
            }
        p[n].idx = t;
        p[n].rank = n;
        n++;
    }
    qsort(p, n, sizeof *p, cmp_pick);
    return p;
}

audit_pick_t *audit_find(audit_pick_t *p, size_t n, uint64_t idx)
{
    audit_pick_t key = { .idx = idx };
    return n ? bsearch(&key, p, n, sizeof *p, cmp_pick) : NULL;
}

void audit_by_rank(audit_pick_t *p, size_t n)
{
    if (n)
        qsort(p, n, sizeof *p, cmp_rank);
}

int audit_reservoir_init(audit_reservoir_t *r, size_t cap, uint64_t seed, uint64_t stream)
{
    *r = (audit_reservoir_t){ .cap = cap };
    rng_init(&r->rng, seed, stream);
    r->p = calloc(cap ? cap : 1, sizeof *r->p);
    return r->p ? 0 : -1;
}

/* Algorithm R: the m-th line replaces a random one of the cap kept with probability cap/m. */
audit_pick_t *audit_reservoir_offer(audit_reservoir_t *r)
{
    r->seen++;
    if (r->n < r->cap)
        return &r->p[r->n++];
    uint64_t j = rng_below(&r->rng, r->seen);
    return j < r->cap ? &r->p[j] : NULL;
}

void audit_reservoir_free(audit_reservoir_t *r)
{
    free(r->p);
    r->p = NULL;
}

typedef struct {
    const nq_shards_t *list;
    audit_pick_t *p;
    size_t n;
    atomic_size_t next;
} recount_t;

static void *recount_thread(void *arg)
{
    recount_t *w = arg;
    uint8_t spec[NQ_MAX_SPEC];
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        audit_pick_t *p = &w->p[i];
        size_t len = shards_get(w->list, p->idx, spec);
        p->rc = count_shard(spec, len, &p->got, NULL, p->err, sizeof p->err);
    }
    return NULL;
}

void audit_recount(const nq_shards_t *list, audit_pick_t *p, size_t n, unsigned threads)
{
    recount_t w = { .list = list, .p = p, .n = n };
    atomic_init(&w.next, 0);
    if (threads > n)
        threads = n ? (unsigned)n : 1;
    pthread_t *tid = calloc(threads, sizeof *tid);
    unsigned started = 0;
    while (tid && started < threads && pthread_create(&tid[started], NULL, recount_thread, &w) == 0)
        started++;
    if (started == 0)
        recount_thread(&w);       /* no thread could start: this one does it all */
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
}
