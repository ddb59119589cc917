/*
 * The estimated nodes of a list's units (shard_list_impl.h): each shard of a list of up to
 * NQ_ORDER_BLOCKS_FROM shards, each block of a longer one, each root for the old order.
 *
 * A unit's estimate is a sum of random paths (shard_cost.h): from the unit's prefix down the
 * list's remaining levels (uniformly among the columns the list takes there: the open cells,
 * and at the last level those that leave every free row a cell), then down the kernel's tree
 * of the shard reached. The product of the choices makes each path an unbiased estimate of the
 * unit's nodes, whatever its shape.
 *
 * The estimates decide a job's lease order, and a stored job's frontier is a position in that
 * order: the list rebuilt after a restart, or on another machine, must give the same order to
 * the shard. So the generator is seeded by the list's parameters and the unit's index, every
 * estimate is an integer, and ties go by index. Changing what this file or shard_cost.c
 * computes for a unit changes the order of stored jobs: that is a new NQ_ORDER_* version, with
 * the old computation kept for the old one (as shard encodings keep their searches).
 */
#include "shard_list_impl.h"
#include "shard_cost.h"

#include <stdlib.h>

/*
 * Paths a unit gets: a list of S shards spends about PATHS_PER_LIST paths (at least MIN, at
 * most MAX a unit). Measured (docs/kernel.md): a path costs 1-2 us at N=21-28 and decoding a
 * shard 1-3 us, so N=21 (13,252 shards, 39 paths each) takes ~0.5 s and 10^6 shards (one path
 * each) ~3 s; rank correlation with the true nodes 0.96 at 64 paths, 0.87-0.91 at 16, 0.6 at 1.
 * A root of the old order gets ROOT_PATHS: its estimate only weighs its shards for a scheduler.
 */
#define PATHS_PER_LIST (1u << 21)
#define PATHS_MIN 1
#define PATHS_MAX 64


static uint32_t unit_paths(size_t nunits)
{
    uint64_t p = PATHS_PER_LIST / (nunits ? nunits : 1);
    return p < PATHS_MIN ? PATHS_MIN : p > PATHS_MAX ? PATHS_MAX : (uint32_t)p;
}

/* The list's seed: its parameters and the unit kind, so no two lists or unit kinds share draws. */
static uint64_t list_seed(const nq_shards_t *s, int unit)
{
    uint64_t x = (uint64_t)s->kind << 40 | (uint64_t)s->n << 32 | (uint64_t)s->depth << 16 |
                 (uint64_t)s->encoding << 8 | (uint64_t)unit;
    return rng_splitmix64(&x);
}

/* The kernel's part: a shard's estimate from `paths` paths, plus the floor; 0 if undecodable
   (cannot happen for a listed shard). */
static nq_cost_u128 shard_paths(const uint8_t *spec, size_t len, uint32_t paths, nq_rng_t *rng)
{
    nq_shard_desc_t d;
    nq_cost_plan_t cp;
    if (shard_decode(spec, len, &d, NULL, 0) != 0 || cost_plan_init(&cp, &d) != 0)
        return 0;
    return cost_sat_add(cost_estimate(&cp, paths, rng), NQ_SHARD_COST_FLOOR);
}

/* Paths from a prefix of lv levels (board p, its columns in cols) down the list's other levels. */
static nq_cost_u128 prefix_paths(const nq_shards_t *s, const root_t *rt, const walk_t *w, const board_t *p,
                                 int lv, uint8_t *cols, uint32_t budget, nq_rng_t *rng)
{
    if (lv == w->L) {
        uint8_t spec[NQ_MAX_SPEC];
        if (list_board_dead(p, w->b_allowed))   /* a root of no levels: the list keeps only live ones */
            return 0;
        return shard_paths(spec, list_encode(s, rt, w->L, cols, spec), budget, rng);
    }
    int r = w->rows[lv];
    uint32_t cand = list_level_cand(p, r, w->b_allowed);
    if (lv == w->L - 1)
        cand = list_level_viable(p, r, cand, w->b_allowed);
    nq_cost_kids_t kids;
    cost_share(cand, budget, rng, &kids);
    nq_cost_u128 sum = 0;
    for (int i = 0; i < kids.n; i++) {
        board_t q = *p;
        cols[lv] = (uint8_t)__builtin_ctz(kids.bit[i]);
        board_put(&q, r, cols[lv]);
        sum = cost_sat_add(sum, prefix_paths(s, rt, w, &q, lv + 1, cols, kids.budget[i], rng));
    }
    return cost_scale(sum, &kids);
}

/* A block's estimate. */
static nq_cost_u128 group_paths(const nq_shards_t *s, int unit, size_t u, uint32_t budget, nq_rng_t *rng)
{
    size_t root = s->block_root[u];
    walk_t w = s->walks[root];
    uint8_t cols[NQ_SHARD_MAX_N];
    int lv = 0;
    if (unit == UNIT_BLOCK)
        for (; lv < s->split; lv++) {
            cols[lv] = s->block_cols[u * (size_t)s->split + (size_t)lv];
            board_put(&w.board, w.rows[lv], cols[lv]);
        }
    return prefix_paths(s, &s->roots[root], &w, &w.board, lv, cols, budget, rng);
}

uint32_t costs_pack(uint64_t v)
{
    /* Below 2^24 exactly; above, 24 significant bits and the shift, in an order-preserving word:
       integers only, so the key (and the order it gives) is the same from any compiler. */
    if (v < (1u << 24))
        return (uint32_t)v;
    int shift = 64 - __builtin_clzll(v) - 24;
    return (uint32_t)(shift + 1) << 23 | (uint32_t)((v >> shift) & ((1u << 23) - 1));
}

uint64_t costs_nodes(uint32_t key)
{
    if (key < (1u << 24))
        return key;
    return (uint64_t)((1u << 23) | (key & ((1u << 23) - 1))) << ((key >> 23) - 1);
}

double costs_unpack(uint32_t key)
{
    if (key < (1u << 24))
        return (double)key;
    int shift = (int)(key >> 23) - 1;
    return (double)((1u << 23) | (key & ((1u << 23) - 1))) * (double)(1ull << shift);
}

static uint32_t key_of(nq_cost_u128 est)
{
    return costs_pack(est > UINT64_MAX ? UINT64_MAX : (uint64_t)est);
}

static int told_to_stop(const atomic_int *stop)
{
    return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

/* shards_each's callback for UNIT_SHARD: shard i's estimate. */
typedef struct {
    uint32_t *keys, paths;
    uint64_t seed;
    const atomic_int *stop;
} by_shard_t;

static int shard_key(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    by_shard_t *b = ud;
    nq_rng_t rng;
    if (told_to_stop(b->stop))
        return 1;
    rng_init(&rng, b->seed, i);
    b->keys[i] = key_of(shard_paths(spec, len, b->paths, &rng));
    return 0;
}

int costs_compute(const nq_shards_t *s, int unit, uint32_t *keys, const atomic_int *stop, int *stopped)
{
    size_t nunits = unit == UNIT_BLOCK ? s->nblocks : shards_count(s);
    uint32_t paths = unit_paths(nunits);
    uint64_t seed = list_seed(s, unit);
    *stopped = 0;
    if (unit == UNIT_SHARD) {
        by_shard_t b = { keys, paths, seed, stop };
        *stopped = shards_each(s, shard_key, &b) != 0;
        return *stopped ? -1 : 0;
    }
    for (size_t u = 0; u < nunits; u++) {
        nq_rng_t rng;
        if (told_to_stop(stop)) {
            *stopped = 1;
            return -1;
        }
        rng_init(&rng, seed, u);
        nq_cost_u128 est = group_paths(s, unit, u, paths, &rng);
        uint64_t floor = list_unit_count(s, unit, u) * NQ_SHARD_COST_FLOOR;
        keys[u] = key_of(est > floor ? est : floor);   /* paths that all died still leave shards */
    }
    return 0;
}
