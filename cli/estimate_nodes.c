/*
 * `nq estimate`'s nodes: Knuth paths down the kernel's own tree (shard_cost.h), thousands of
 * shards' worth, where the old estimate counted one deep probe a sample and timed it.
 *
 * A path is cheap (about a microsecond) and the tree it follows is count_shard's node for node,
 * so the estimate can afford many shards: every shard of the list when there are at most
 * `sample` of them, else `sample` shards drawn uniformly with replacement.
 *   every shard: each gets two independent halves of its paths, a_i and b_i; the total is
 *     sum (a_i + b_i) / 2 and its variance sum (a_i - b_i)^2 / 4, the stratified estimator with
 *     two replicates a stratum (unbiased whatever the shards' skew).
 *   a sample: x_i = S * (shard i's estimate); the total is their mean and its variance
 *     sd(x)^2 / K, which holds both the spread between shards and the paths' own.
 * Per-shard estimates are skewed (a rare path through a large subtree weighs a lot), which is
 * why the sample is of thousands of shards, not hundreds: docs/benchmarks.md shows seeds and
 * sample sizes whose intervals agree, and the estimate against whole counts.
 */
#include "estimate.h"
#include "errf.h"
#include "rng.h"
#include "shard_cost.h"

#include <math.h>

#define STREAM_NODES 0x6e6f646573ull   /* "nodes": apart from the timed sample's draws */

/* One shard's estimate from `paths` paths seeded (seed, stream); -1 for a descriptor that does
   not decode (cannot happen for a listed shard). */
static double shard_estimate(const uint8_t *spec, size_t len, uint32_t paths, uint64_t seed, uint64_t stream)
{
    nq_shard_desc_t d;
    nq_cost_plan_t cp;
    nq_rng_t rng;
    if (shard_decode(spec, len, &d, NULL, 0) != 0 || cost_plan_init(&cp, &d) != 0)
        return -1;
    rng_init(&rng, seed, stream);
    return (double)cost_estimate(&cp, paths, &rng);
}

typedef struct {
    uint32_t half;                     /* paths in each replicate */
    uint64_t seed;
    double total, var;
    int bad;
} every_t;

static int every_shard(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    every_t *e = ud;
    double a = shard_estimate(spec, len, e->half, e->seed, 2 * i);
    double b = shard_estimate(spec, len, e->half, e->seed, 2 * i + 1);
    if (a < 0 || b < 0)
        return e->bad = 1;
    e->total += (a + b) / 2;
    e->var += (a - b) * (a - b) / 4;
    return 0;
}

int estimate_nodes(const nq_shards_t *list, uint64_t sample, uint32_t paths, uint64_t seed,
                   nq_est_nodes_t *out, char *err, size_t errlen)
{
    uint64_t s = shards_count(list);
    uint64_t mixed = seed ^ STREAM_NODES;
    *out = (nq_est_nodes_t){ .paths = paths < 2 ? 2 : paths };
    mixed = rng_splitmix64(&mixed);
    if (s <= sample) {
        every_t e = { .half = out->paths / 2, .seed = mixed };
        out->paths = 2 * e.half;
        if (shards_each(list, every_shard, &e) != 0 || e.bad)
            return nq_errf(err, errlen, "a shard of the list does not decode");
        *out = (nq_est_nodes_t){ e.total, sqrt(e.var), s, 1, out->paths };
        return 0;
    }
    nq_rng_t draw;
    double mean = 0, m2 = 0;            /* Welford: K can be millions */
    rng_init(&draw, mixed, 0);
    for (uint64_t k = 0; k < sample; k++) {
        uint8_t spec[NQ_MAX_SPEC];
        size_t len = shards_get(list, rng_below(&draw, s), spec);
        double x = (double)s * shard_estimate(spec, len, out->paths, mixed, k + 1);
        if (x < 0)
            return nq_errf(err, errlen, "a shard of the list does not decode");
        double d = x - mean;
        mean += d / (double)(k + 1);
        m2 += d * (x - mean);
    }
    *out = (nq_est_nodes_t){ mean, sqrt(m2 / (double)(sample - 1) / (double)sample), sample, 0, out->paths };
    return 0;
}
