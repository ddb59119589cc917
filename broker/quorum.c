/*
 * Quorum (--quorum Q): a shard counts only when Q different workers agree on
 * it. "Different" means different identities (CURVE keys when keys are on,
 * sessions otherwise; see nq_peer), never different self-chosen worker ids:
 * so with keys, Q votes need Q keys. Votes are kept in memory, keyed by
 * (job, shard), in the broker's ballot table; when Q equal votes
 * are in, that result goes to the store as the shard's first result and the
 * workers whose votes disagreed are flagged (`nq workers`). A disagreement
 * asks one more worker; after Q + 2 votes without agreement the shard is
 * stored as a CONFLICT, visible and retryable.
 *
 * Votes are not durable: after a broker restart an undecided shard is simply
 * computed again — correct, at the price of some repeated work.
 */
#include "broker_impl.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#define BALLOT_BUCKETS 4096

typedef struct vote {
    char ident[64];                    /* who voted: the identity that counts */
    char worker[NQ_STR_MAX];           /* its worker id: a name for the flag */
    nq_result_t r;                     /* payload not kept: compared by hash */
    uint64_t payload_hash;
    char sol_hash[80];
    struct vote *next;
} vote_t;

struct ballot {
    uint64_t job, shard;
    vote_t *votes;
    int nvotes;
    struct ballot *next;
};
typedef struct ballot ballot_t;

static size_t ballot_bucket(uint64_t job, uint64_t shard)
{
    return (size_t)(((job * 0x9e3779b97f4a7c15ull) ^ shard) * 0xbf58476d1ce4e5b9ull >> 40) % BALLOT_BUCKETS;
}

static ballot_t *ballot_find(nq_broker_t *b, uint64_t job, uint64_t shard, int create)
{
    if (!b->ballots && !(b->ballots = calloc(BALLOT_BUCKETS, sizeof *b->ballots)))
        return NULL;
    ballot_t **ballots = b->ballots;
    size_t h = ballot_bucket(job, shard);
    for (ballot_t *x = ballots[h]; x; x = x->next)
        if (x->job == job && x->shard == shard)
            return x;
    if (!create)
        return NULL;
    ballot_t *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->job = job;
    x->shard = shard;
    x->next = ballots[h];
    ballots[h] = x;
    return x;
}

static void ballot_free(nq_broker_t *b, ballot_t *x)
{
    size_t h = ballot_bucket(x->job, x->shard);
    for (ballot_t **pp = &b->ballots[h]; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    while (x->votes) {
        vote_t *v = x->votes;
        x->votes = v->next;
        free(v);
    }
    free(x);
}

static uint64_t bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Equal votes. A count's nodes are compared only between two results of the CPU kernels'
   (store_nodes_comparable): a fast GPU vote agrees with a CPU one on total, unique and residues. */
static int same(const vote_t *a, const vote_t *b)
{
    const nq_result_t *x = &a->r, *y = &b->r;
    return x->status == y->status && x->total == y->total && x->unique == y->unique &&
           x->res13 == y->res13 && x->res15 == y->res15 &&
           (x->kind != NQ_KIND_COUNT || !store_nodes_comparable(x->nodes_kind, y->nodes_kind) ||
            x->nodes == y->nodes) &&
           a->payload_hash == b->payload_hash && strcmp(a->sol_hash, b->sol_hash) == 0;
}

int quorum_voted(nq_broker_t *b, uint64_t job, uint64_t shard, const char *ident)
{
    ballot_t *x = ballot_find(b, job, shard, 0);
    for (vote_t *v = x ? x->votes : NULL; v; v = v->next)
        if (strcmp(v->ident, ident) == 0)
            return 1;
    return 0;
}

static void flag_losers(nq_broker_t *b, ballot_t *x, const vote_t *winner)
{
    for (vote_t *v = x->votes; v; v = v->next)
        if (!same(v, winner)) {
            store_worker_flag(b->store, v->worker);
            nq_log(NQ_LOG_WARN, "quorum.outvoted", "job=%llu shard=%llu worker=%s",
                   (unsigned long long)x->job, (unsigned long long)x->shard, v->worker);
        }
}

/*
 * Records e as a vote. Returns 1 when the shard is decided and e (equal to
 * the winners) should be stored; 0 when more votes are needed (e is not
 * stored); -1 when this worker had already voted (a resend).
 * After Q + 2 votes without agreement: returns 2 and the caller stores the
 * first two differing votes, which marks the shard CONFLICT.
 */
int quorum_vote(nq_broker_t *b, nq_job_t *j, nq_pending_result_t *e, nq_result_t *other)
{
    ballot_t *x = ballot_find(b, e->r.job, e->r.shard, 1);
    if (!x)
        return 0;
    if (quorum_voted(b, e->r.job, e->r.shard, e->ident))
        return -1;
    vote_t *v = calloc(1, sizeof *v);
    if (!v)
        return 0;
    snprintf(v->ident, sizeof v->ident, "%s", e->ident);
    snprintf(v->worker, sizeof v->worker, "%s", e->worker);
    v->r = e->r;
    v->r.payload = NULL;
    v->payload_hash = bytes_hash(e->r.payload, e->r.payload_len);
    snprintf(v->sol_hash, sizeof v->sol_hash, "%s", e->sol_hash);
    v->next = x->votes;
    x->votes = v;
    x->nvotes++;
    int agree = 0;
    for (vote_t *w = x->votes; w; w = w->next)
        agree += same(w, v);
    if (agree >= (int)j->spec.quorum) {
        flag_losers(b, x, v);
        ballot_free(b, x);
        return 1;
    }
    if (x->nvotes >= (int)j->spec.quorum + 2) {
        for (vote_t *w = x->votes; w; w = w->next)
            if (!same(w, v)) {
                *other = w->r;
                break;
            }
        ballot_free(b, x);
        return 2;
    }
    if (x->nvotes >= (int)j->spec.quorum)
        jobq_push(j, e->r.shard);    /* they disagree: ask one more worker */
    return 0;
}

void quorum_free_all(nq_broker_t *b)
{
    if (!b->ballots)
        return;
    for (size_t h = 0; h < BALLOT_BUCKETS; h++)
        while (b->ballots[h])
            ballot_free(b, b->ballots[h]);
    free(b->ballots);
    b->ballots = NULL;
}
