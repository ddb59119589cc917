/*
 * The lease orders of a shard list (shard.h), and the estimated cost of every position in them.
 *
 * The order (NQ_ORDER_COST) is a sequence of slots, each a unit of consecutive shards
 * (shard_list_impl.h): shards by estimated nodes, largest first (ties by index); past
 * NQ_ORDER_BLOCKS_FROM shards, blocks by estimated nodes a shard, a block's shards in list
 * order, each with its block's estimate over its count.
 * Memory: per slot a unit (4 bytes), its packed estimate (4), the estimate before it (8), and
 * for blocks the shards before it (8): 16 bytes a shard up to NQ_ORDER_BLOCKS_FROM,
 * 24 a block beyond (N=28, depth 4: 17.3 M shards in 51,885 blocks; docs/scheduling-costs.md).
 */
#include "shard_list_impl.h"

#include <stdlib.h>

static uint64_t blocks_from = NQ_ORDER_BLOCKS_FROM;

#ifdef NQ_TEST_FAULTS
void shards_test_blocks_from(uint64_t shards)
{
    blocks_from = shards ? shards : NQ_ORDER_BLOCKS_FROM;
}
#endif

/* ---- largest estimates first ---- */

typedef struct { uint32_t key, unit; } ranked_unit_t;

static int cmp_unit_cost(const void *x, const void *y)
{
    const ranked_unit_t *a = x, *b = y;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/*
 * Leases are shards, so blocks go by their estimate a shard (the total over the count, in
 * integers): N=16-18 at depth 4-5 forced by block, lease position against true nodes 0.72-0.80
 * this way, 0.35-0.74 by the blocks' totals (a block of many small shards went first). The keys
 * are integers and ties go by unit, so the comparison is a total order: any sort gives the same
 * permutation.
 */
static int order_costs(const nq_shards_t *s, uint32_t *perm)
{
    ranked_unit_t *rk = malloc((s->nunits ? s->nunits : 1) * sizeof *rk);
    if (!rk)
        return -1;
    for (size_t u = 0; u < s->nunits; u++) {
        uint32_t key = s->cost_key[u];
        if (s->unit == UNIT_BLOCK)
            key = costs_pack(costs_nodes(key) / list_unit_count(s, UNIT_BLOCK, u));
        rk[u] = (ranked_unit_t){ key, (uint32_t)u };
    }
    qsort(rk, s->nunits, sizeof *rk, cmp_unit_cost);
    for (size_t k = 0; k < s->nunits; k++)
        perm[k] = rk[k].unit;
    free(rk);
    return 0;
}

/* ---- building ---- */

static void order_sums(nq_shards_t *s)
{
    if (s->perm_start)
        s->perm_start[0] = 0;
    s->cost_before[0] = 0;
    for (size_t k = 0; k < s->nunits; k++) {
        if (s->perm_start)
            s->perm_start[k + 1] = s->perm_start[k] + list_unit_count(s, s->unit, s->perm[k]);
        s->cost_before[k + 1] = s->cost_before[k] + costs_unpack(s->cost_key[s->perm[k]]);
    }
}

int order_build(nq_shards_t *s, const atomic_int *stop, int *stopped)
{
    uint64_t count = shards_count(s);
    *stopped = 0;
    s->unit = count > blocks_from ? UNIT_BLOCK : UNIT_SHARD;
    s->nunits = s->unit == UNIT_BLOCK ? s->nblocks : count;
    size_t n = s->nunits ? s->nunits : 1;
    s->cost_key = malloc(n * sizeof *s->cost_key);
    s->perm = malloc(n * sizeof *s->perm);
    s->cost_before = malloc((s->nunits + 1) * sizeof *s->cost_before);
    if (s->unit != UNIT_SHARD)
        s->perm_start = malloc((s->nunits + 1) * sizeof *s->perm_start);
    if (!s->cost_key || !s->perm || !s->cost_before || (s->unit != UNIT_SHARD && !s->perm_start))
        return -1;
    if (costs_compute(s, s->unit, s->cost_key, stop, stopped) != 0)
        return -1;
    if (order_costs(s, s->perm) != 0)
        return -1;
    order_sums(s);
    return 0;
}

void order_free(nq_shards_t *s)
{
    free(s->cost_key);
    free(s->perm);
    free(s->perm_start);
    free(s->cost_before);
    s->cost_key = s->perm = NULL;
    s->perm_start = NULL;
    s->cost_before = NULL;
}

/* ---- positions ---- */

/* The slot holding position pos (< count): pos itself, or the last block starting at or before it. */
static size_t slot_of(const nq_shards_t *s, uint64_t pos)
{
    if (s->unit == UNIT_SHARD)
        return (size_t)pos;
    size_t lo = 0, hi = s->nunits;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->perm_start[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
}

static uint64_t slot_start(const nq_shards_t *s, size_t k)
{
    return s->unit == UNIT_SHARD ? k : s->perm_start[k];
}

uint64_t shards_at(const nq_shards_t *s, uint64_t pos)
{
    if (pos >= shards_count(s) || !shards_ordered(s))
        return pos;                     /* past the end, as asked; or in index order */
    size_t k = slot_of(s, pos);
    return list_unit_first(s, s->unit, s->perm[k]) + (pos - slot_start(s, k));
}

/* The index range of a run of the lease order from pos: a block's rest, or for single shards the
   consecutive indices that follow (a walk of their block once, not once each). */
int shards_each_at(const nq_shards_t *s, uint64_t pos, uint64_t count, shards_each_fn fn, void *ud)
{
    uint64_t total = shards_count(s), end = pos >= total ? pos : count < total - pos ? pos + count : total;
    if (!shards_ordered(s))
        return pos < end ? list_each_range(s, pos, end, fn, ud) : 0;
    while (pos < end) {
        size_t k = slot_of(s, pos);
        uint64_t first = shards_at(s, pos), run = 1;
        if (s->unit != UNIT_SHARD)
            run = (s->perm_start[k + 1] < end ? s->perm_start[k + 1] : end) - pos;
        else
            while (pos + run < end && s->perm[k + run] == first + run)
                run++;
        int rc = list_each_range(s, first, first + run, fn, ud);
        if (rc != 0)
            return rc;
        pos += run;
    }
    return 0;
}

/* ---- costs ---- */

int shards_order(const nq_shards_t *s) { return s->order; }
int shards_ordered(const nq_shards_t *s) { return s->perm != NULL; }

double shards_cost(const nq_shards_t *s, uint64_t idx)
{
    if (idx >= shards_count(s))
        return 0;
    if (!shards_ordered(s))
        return 1;
    if (s->unit == UNIT_SHARD)
        return costs_unpack(s->cost_key[idx]);
    size_t b = list_block_of(s, idx);
    return costs_unpack(s->cost_key[b]) / (double)list_unit_count(s, s->unit, b);
}

double shards_cost_at(const nq_shards_t *s, uint64_t pos)
{
    return pos < shards_count(s) ? shards_cost(s, shards_at(s, pos)) : 0;
}

double shards_cost_before(const nq_shards_t *s, uint64_t pos)
{
    if (pos >= shards_count(s))
        return shards_cost_total(s);
    if (!shards_ordered(s))
        return (double)pos;
    size_t k = slot_of(s, pos);
    uint64_t into = pos - slot_start(s, k);
    if (into == 0)
        return s->cost_before[k];
    size_t u = s->perm[k];
    double each = costs_unpack(s->cost_key[u]) / (double)list_unit_count(s, s->unit, u);
    return s->cost_before[k] + (double)into * each;
}

double shards_cost_total(const nq_shards_t *s)
{
    return shards_ordered(s) ? s->cost_before[s->nunits] : (double)shards_count(s);
}
