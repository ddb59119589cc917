/*
 * `nq bench count N --gpu`: the whole board through the GPU engines (one, or one a device with
 * --gpu all). Threads take runs of the lease order, as the CPU bench does, and hand each shard to
 * the engine that holds the least work (its host part runs on the thread); the engine's callback
 * adds each result up, and to its device's share. Same sums as the CPU bench.
 */
#include "bench_gpu.h"
#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    nq_gpu_t *const *gs;
    uint32_t ng;
    const nq_shards_t *list;
    uint64_t nshards, run;
    atomic_uint_fast64_t next;
    atomic_int stop;
    pthread_mutex_t lock;       /* guards what follows */
    pthread_cond_t ended;
    uint64_t submitted, finished;
    nq_u128 total, unique;
    uint64_t nodes;
    bench_gpu_share_t share[NQ_GPU_MAX_DEVICES];
    char err[256];
} gbench_t;

typedef struct { gbench_t *b; uint64_t i; int dev; } gshard_t;

static void gbench_done(void *ud, int rc, const nq_count_result_t *r, const char *err)
{
    gshard_t *s = ud;
    gbench_t *b = s->b;
    pthread_mutex_lock(&b->lock);
    if (rc == 0 && (r->res13 != r->total % 13 || r->res15 != r->total % 15)) {
        rc = -1;
        err = "residues disagree with the total";
    }
    if (rc == 0) {
        b->total += r->total;
        b->unique += r->unique;
        b->nodes += r->nodes;
        b->share[s->dev].shards++;
        b->share[s->dev].nodes += r->nodes;
    } else if (rc != 2 && !b->err[0]) {
        snprintf(b->err, sizeof b->err, "shard %llu: %s", (unsigned long long)s->i, err);
    }
    if (rc != 0)
        atomic_store(&b->stop, 1);
    b->finished++;
    pthread_cond_broadcast(&b->ended);
    pthread_mutex_unlock(&b->lock);
    free(s);
}

static int gbench_shard(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    gbench_t *b = ud;
    if (atomic_load(&b->stop))
        return 1;
    gshard_t *s = malloc(sizeof *s);
    if (!s) {
        pthread_mutex_lock(&b->lock);
        if (!b->err[0])
            snprintf(b->err, sizeof b->err, "out of memory");
        pthread_mutex_unlock(&b->lock);
        atomic_store(&b->stop, 1);
        return 1;
    }
    int dev = cli_gpu_hungriest(b->gs, b->ng);
    *s = (gshard_t){ b, i, dev < 0 ? 0 : dev };   /* all failed: the engine ends it with why */
    nq_kernel_ctl_t ctl = { .cancel = &b->stop, .progress = NULL };
    pthread_mutex_lock(&b->lock);
    b->submitted++;
    pthread_mutex_unlock(&b->lock);
    gpu_count_shard(b->gs[s->dev], spec, len, &ctl, gbench_done, s);
    return 0;
}

static void *gbench_thread(void *arg)
{
    gbench_t *b = arg;
    for (;;) {
        uint64_t pos = atomic_fetch_add(&b->next, b->run);
        if (pos >= b->nshards || atomic_load(&b->stop))
            break;
        if (shards_each_at(b->list, pos, b->run, gbench_shard, b) != 0)
            break;
    }
    return NULL;
}

int bench_gpu_run(nq_gpu_t *const *gs, uint32_t n, const nq_shards_t *list, int threads, uint64_t run,
                  nq_u128 *total, nq_u128 *unique, uint64_t *nodes, bench_gpu_share_t *share, char *err,
                  size_t errlen)
{
    gbench_t b = { .gs = gs, .ng = n, .list = list, .nshards = shards_count(list), .run = run };
    pthread_t tid[1024];
    int started = 0;
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.ended, NULL);
    for (; started < threads && started < 1024; started++)
        if (pthread_create(&tid[started], NULL, gbench_thread, &b) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_lock(&b.lock);
    while (b.finished < b.submitted)
        pthread_cond_wait(&b.ended, &b.lock);
    pthread_mutex_unlock(&b.lock);
    pthread_cond_destroy(&b.ended);
    pthread_mutex_destroy(&b.lock);
    if (started == 0)
        return nq_errf(err, errlen, "cannot start threads");
    if (b.err[0])
        return nq_errf(err, errlen, "%s", b.err);
    *total = b.total;
    *unique = b.unique;
    *nodes = b.nodes;
    if (share)
        memcpy(share, b.share, n * sizeof *share);
    return 0;
}

