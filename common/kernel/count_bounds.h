/*
 * What a count shard's result can be, from its descriptor alone: bounds that every honest
 * count of it meets, whatever the kernel (scalar or vector), the search direction or the
 * encoding. `nq audit` checks every line of a manifest against them before it counts any
 * shard again, so a subtotal that no search could give is caught without a recount.
 *
 * Why each is sound (count.c, count_fast.c; the vector kernel gives the same nodes):
 *   - a completion is a leaf of the search, and the kernel counts every leaf as a node;
 *     every leaf it reaches has a canonical b (the last row's other cells are blocked), so
 *     the completions C are exactly the leaves, and each adds bweight[b] to the total and
 *     at most 1 to unique: wmin * C <= total <= wmax * C and unique <= C;
 *   - the first leaf's path puts one node on each of the m free levels, each further leaf
 *     adds itself: nodes >= C + m - 1 when C > 0 (a shard with every row fixed, m = 0,
 *     reaches its one completion with no node at all);
 *   - a node at depth L is a placement of L + 1 free rows in their open cells (the cells no
 *     fixed queen attacks), in distinct columns: at most the product of min(open cells,
 *     columns left) over the rows taken with the most open cells first, for any order of
 *     rows the search may take (min is supermodular: pairing the largest with the largest
 *     gives the most). So C and the nodes at each depth are bounded without a search;
 *   - when every b the shard can reach weighs 8 (no symmetry), each completion is alone in
 *     its class here and counts in unique: total = 8 * unique exactly.
 * Not sound per shard, and so not checked here: total <= 8 * unique. A shard whose border
 * has a symmetry may hold members of a class whose least member lies in another shard (at
 * N=10, 2 to 4 shards of each depth have total > 8 * unique). It holds for a job's sums.
 */
#ifndef NQ_COUNT_BOUNDS_H
#define NQ_COUNT_BOUNDS_H

#include "count.h"
#include "u128.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int free_rows;                /* m: the levels the search places */
    nq_u128 leaves_max;           /* completions the open cells admit at most */
    nq_u128 nodes_max;            /* nodes a search can count at most */
    unsigned wmin, wmax, wgcd;    /* the weights of the b it can reach; all 0 when none */
    int all8;                     /* every such b weighs 8: total = 8 * unique */
} nq_count_bounds_t;

/* The bounds of a count shard's descriptor: 0, or -1 when it does not decode as one (err). */
int count_bounds(const uint8_t *spec, size_t len, nq_count_bounds_t *b, char *err, size_t errlen);
/* 0 when an honest count of a shard with bounds b can give r's total, unique and nodes;
   -1 with the first bound it breaks, in words, in why. */
int count_bounds_check(const nq_count_bounds_t *b, const nq_count_result_t *r, char *why, size_t whylen);
/* The same for total and unique alone: for a result whose nodes are not the CPU kernels' (the fast
   GPU search's own steps, whose number also moves with how many rows the host leaves it), which
   the bounds on nodes, made for the CPU kernels' search, do not describe. */
int count_bounds_check_counts(const nq_count_bounds_t *b, const nq_count_result_t *r, char *why,
                              size_t whylen);

#endif
