/*
 * What a shard costs, in the kernel's own nodes, before anyone counts it (internal to
 * common/kernel and its callers that plan: the lease order of shard_order.c, `nq estimate`).
 *
 * Knuth's estimator (1975): a random descent of the shard's search tree, each step a child
 * chosen uniformly, adds at each level the nodes that level charges times the product of the
 * branching factors above it; its expectation is the tree's node count. The tree is the one
 * count_shard searches, node for node: the same plans (count_shard's dispatch: top-down or
 * bottom-up, the weight split of a bottom-up root), count_fast.c's accounting (a level charges
 * every open cell of a node it enters, but enters only the cells that pass the look-ahead and
 * the column test) and search_leaves' (every queen placed) where count_shard runs that. The
 * last three levels of the fast search are summed exactly, not sampled: their branching is the
 * most irregular, and they cost a few dozen popcounts.
 *
 * cost_exact walks the same tree completely: it must equal count_shard's nodes, which is what
 * the unit tests check, so the estimator cannot drift from the kernel's accounting unnoticed.
 * Everything is integer arithmetic (saturating 128-bit sums), so an estimate depends only on the
 * tree and the generator's draws, never on a compiler's floating point.
 */
#ifndef NQ_SHARD_COST_H
#define NQ_SHARD_COST_H

#include "count_search.h"
#include "rng.h"

#include <stdint.h>

typedef unsigned __int128 nq_cost_u128;

/* The plans count_shard searches for one shard (one, or two for a bottom-up root whose row n-1
   holds weights 8 and others), each with its level tables and its accounting. */
typedef struct {
    int nplans;
    int fast[2];                       /* 1: count_fast.c's accounting; 0: search_leaves' */
    nq_plan_t plan[2];
    nq_levels_t lv[2];
} nq_cost_plan_t;

/* From a decoded shard (count or enumerate); 0, or -1 for a descriptor count_shard refuses. */
int cost_plan_init(nq_cost_plan_t *cp, const nq_shard_desc_t *d);
/* An unbiased estimate of the shard's nodes (saturating) from `paths` random paths (>= 1) down
   each plan, spent from the top (shard_cost.c). */
nq_cost_u128 cost_estimate(const nq_cost_plan_t *cp, uint32_t paths, nq_rng_t *rng);
/* The whole tree: count_shard's nodes exactly (for tests and small shards). */
uint64_t cost_exact(const nq_cost_plan_t *cp);

/* The children of a node (open: their bits) that `budget` paths go down (shard_cost.c): all of them
   with the paths shared out, or `budget` of them drawn uniformly without replacement, one path
   each; cost_scale turns the sum of their estimates into the node's. */
typedef struct {
    uint32_t bit[NQ_SHARD_MAX_N], budget[NQ_SHARD_MAX_N];
    int n;
    unsigned k, taken;
} nq_cost_kids_t;
void cost_share(uint32_t open, uint32_t budget, nq_rng_t *rng, nq_cost_kids_t *kids);
nq_cost_u128 cost_scale(nq_cost_u128 sum, const nq_cost_kids_t *kids);

nq_cost_u128 cost_sat_add(nq_cost_u128 x, nq_cost_u128 y);
nq_cost_u128 cost_sat_mul(nq_cost_u128 x, uint64_t k);

#endif
