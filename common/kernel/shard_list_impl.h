/*
 * The shard list's private state, shared by its files (internal to common/kernel):
 *   shard_list.c        the index: roots and blocks, built once; shards_new*, shards_get, shards_each
 *   shard_list_cost.c   the estimated nodes of the list's units (roots, blocks or shards), by
 *                       random paths through the list's levels and the kernel's (shard_cost.h)
 *   shard_order.c       the lease orders and what they cost: shards_at, shards_each_at, shards_cost*
 *   shard.c             shards_new_for_seconds: trial lists without an order, then the answer's
 */
#ifndef NQ_SHARD_LIST_IMPL_H
#define NQ_SHARD_LIST_IMPL_H

#include "shard.h"
#include "shard_board.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct {
    uint8_t a, c, d, flip;
    uint32_t b_allowed;            /* row n-1's canonical columns; every column in plain mode */
    uint32_t first_block;          /* its blocks are first_block .. the next root's first_block - 1 */
} root_t;

/* A root made ready to walk: its board and the rows of its levels. */
typedef struct {
    board_t board;
    uint8_t rows[NQ_SHARD_MAX_N];
    int L;
    uint32_t b_allowed;
} walk_t;

/* What a lease order is made of: "units" of consecutive shards (list indices), each with one
   estimated cost that its shards share evenly. */
enum { UNIT_BLOCK = 1, UNIT_SHARD };

struct nq_shards {
    int kind, n, depth, encoding, mode;
    size_t len;                    /* every descriptor of one list has the same length */
    int split;                     /* levels in a block's prefix: max(0, L - 2) */
    root_t *roots;
    walk_t *walks;                 /* per root, ready: shards_get starts from it */
    size_t nroots, rcap;
    uint32_t *block_root;          /* per block: its root */
    uint8_t *block_cols;           /* per block: split columns */
    uint64_t *block_start;         /* per block: shards before it; [nblocks] = the count */
    size_t nblocks, bcap;
    /* the lease order (shard_order.c): a sequence of slots, each one unit */
    int order;                     /* NQ_ORDER_* */
    int unit;                      /* UNIT_*: the lease order goes by shard or by block */
    size_t nunits;
    uint32_t *cost_key;            /* per unit, by its index: estimated nodes, packed (costs_pack) */
    uint32_t *perm;                /* per slot: its unit */
    uint64_t *perm_start;          /* per slot: shards before it, [nunits] = the count (not UNIT_SHARD) */
    double *cost_before;           /* per slot: estimated nodes before it, [nunits] = the total */
};

/* shard_list.c */
/* shards_new_limited without the lease order (shards_at and the costs unusable until
   list_order_set): the trial lists of shards_new_for_seconds, of which one is kept. */
nq_shards_t *list_new_unordered(int kind, int n, int depth, int encoding, nq_shards_limits_t *lim,
                               char *err, size_t errlen);
/* Builds lim->order's lease order: 0, or -1 with lim->why and err. */
int list_order_set(nq_shards_t *s, nq_shards_limits_t *lim, char *err, size_t errlen);
int list_board_dead(const board_t *p, uint32_t b_allowed);
uint32_t list_level_cand(const board_t *p, int r, uint32_t b_allowed);
uint32_t list_level_viable(const board_t *p, int row, uint32_t cand, uint32_t b_allowed);
size_t list_encode(const nq_shards_t *s, const root_t *rt, int L, const uint8_t *cols, uint8_t *out);
size_t list_block_of(const nq_shards_t *s, uint64_t i);
/* The shards of indices [from, to), in index order, to fn: 0, or the first nonzero fn returned. */
int list_each_range(const nq_shards_t *s, uint64_t from, uint64_t to, shards_each_fn fn, void *ud);
/* A unit's shards: the first one's index and how many. */
uint64_t list_unit_first(const nq_shards_t *s, int unit, size_t u);
uint64_t list_unit_count(const nq_shards_t *s, int unit, size_t u);

/* shard_list_cost.c: every unit's estimated nodes into keys[nunits], packed; 0, or -1 when told to
   stop (*stop non-zero) or out of memory (*stopped says which). */
int costs_compute(const nq_shards_t *s, int unit, uint32_t *keys, const atomic_int *stop, int *stopped);
uint32_t costs_pack(uint64_t nodes);
uint64_t costs_nodes(uint32_t key);   /* the packed value, as an integer */
double costs_unpack(uint32_t key);

/* shard_order.c: the lease order of s->order, built once the index is (0; -1 stopped or out of
   memory, *stopped says which), and freed. */
int order_build(nq_shards_t *s, const atomic_int *stop, int *stopped);
void order_free(nq_shards_t *s);

#endif
