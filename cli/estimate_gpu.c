/*
 * `nq estimate count N --gpu`: the same sample as on the CPU (the same shards, or the same Knuth
 * probes for the same seed), counted in one batch on the GPU. A GPU runs thousands of shards at
 * once, so no shard has a time of its own: each gets nodes / (the batch's nodes per second), and
 * the estimate is the sample's node estimate over the GPU's measured rate. That assumes the rate
 * does not depend on the shard, which holds as well as the sample's shards resemble the job's.
 */
#include "bench_gpu.h"
#include "cli.h"
#include "clock.h"
#include "rng.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    size_t done;
    double *nodes;              /* per sample: its count's nodes times its weight */
    const double *weight;
    char err[256];
} est_batch_t;

typedef struct { est_batch_t *b; size_t i; } est_item_t;

static void est_done(void *ud, int rc, const nq_count_result_t *r, const char *err)
{
    est_item_t *it = ud;
    est_batch_t *b = it->b;
    pthread_mutex_lock(&b->lock);
    if (rc == 0)
        b->nodes[it->i] = it->b->weight[it->i] * (double)r->nodes;
    else if (!b->err[0])
        snprintf(b->err, sizeof b->err, "sample %zu: %s", it->i, rc == 2 ? "cancelled" : err);
    b->done++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->lock);
    free(it);
}

static uint64_t pick_uniform(void *ud, uint64_t bound) { return rng_below(ud, bound); }

/* The k descriptors of the sample, drawn from rng as cmd_estimate.c draws them, into specs
   (NQ_MAX_SPEC each) with their lengths (0: a probe whose path died) and weights. */
static void est_draw(const nq_shards_t *sh, int probes, int extra, size_t k, nq_rng_t *rng, uint8_t *specs,
                     size_t *lens, double *w)
{
    size_t s = shards_count(sh), taken = 0;
    if (!probes) {
        for (size_t i = 0; i < s && taken < k; i++) {
            if (rng_below(rng, s - i) >= k - taken)
                continue;
            lens[taken] = shards_get(sh, i, specs + taken * NQ_MAX_SPEC);
            w[taken++] = 1;
        }
        return;
    }
    for (size_t j = 0; j < k; j++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(sh, rng_below(rng, s), b);
        int dl = shard_probe(b, len, extra, pick_uniform, rng, specs + j * NQ_MAX_SPEC, &w[j]);
        lens[j] = dl > 0 ? (size_t)dl : 0;
    }
}

int estimate_gpu_sample(nq_gpu_t *const *gs, uint32_t ng, const nq_shards_t *sh, int probes, int extra,
                        size_t k, nq_rng_t *rng, double *nodes, double *rate, char *err, size_t errlen)
{
    uint8_t *specs = malloc(k * NQ_MAX_SPEC);
    size_t *lens = calloc(k, sizeof *lens);
    double *w = calloc(k, sizeof *w);
    est_batch_t b = { .nodes = nodes, .weight = w };
    if (!specs || !lens || !w) {
        free(specs);
        free(lens);
        free(w);
        return nq_errf(err, errlen, "out of memory");
    }
    est_draw(sh, probes, extra, k, rng, specs, lens, w);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cv, NULL);
    double t0 = nq_mono();
    size_t sent = 0;
    for (size_t i = 0; i < k; i++) {
        nodes[i] = 0;
        if (!lens[i])
            continue;                   /* a dead probe: nothing below it */
        est_item_t *it = malloc(sizeof *it);
        if (!it) {
            pthread_mutex_lock(&b.lock);
            snprintf(b.err, sizeof b.err, "out of memory");
            pthread_mutex_unlock(&b.lock);
            break;
        }
        *it = (est_item_t){ &b, i };
        gpu_count_shard(gs[sent % ng], specs + i * NQ_MAX_SPEC, lens[i], NULL, est_done, it);
        sent++;
    }
    pthread_mutex_lock(&b.lock);
    while (b.done < sent)
        pthread_cond_wait(&b.cv, &b.lock);
    pthread_mutex_unlock(&b.lock);
    double secs = nq_mono() - t0, sum = 0;
    for (size_t i = 0; i < k; i++)
        sum += w[i] > 0 && lens[i] ? nodes[i] / w[i] : 0;   /* the nodes the GPU really searched */
    *rate = secs > 0 ? sum / secs : 0;
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.lock);
    free(specs);
    free(lens);
    free(w);
    if (b.err[0])
        return nq_errf(err, errlen, "%s", b.err);
    return 0;
}
