/*
 * Shards of a count or enumerate job: self-contained descriptors of a
 * pre-placement of queens that a worker completes, and the deterministic list
 * of them for a board size.
 *
 * count, n >= 4 ("border" mode): every solution has exactly one queen on each
 * border line (row 0, row n-1, column 0, column n-1). The 8 board symmetries
 * (D4) map this border set onto itself, so border configurations fall into
 * orbits. A configuration is the tuple (a, b, c, d): a = column of the queen
 * in row 0, b = column of the queen in row n-1, c = row of the queen in
 * column 0, d = row of the queen in column n-1; it is canonical when it is the
 * lexicographically least tuple of its orbit, and its weight is the orbit size
 * (1, 2, 4 or 8). The kernel counts a completion with the weight of its
 * (a, b, c, d) when that tuple is canonical and ignores it otherwise.
 *   total  = sum over completions S with canonical (a, b, c, d) of weight(a, b, c, d)
 *   unique = number of those S that are lexicographically least among their
 *            images under the stabilizer of (a, b, c, d) (every D4 class meets
 *            a canonical configuration's completions in exactly one
 *            stabilizer orbit).
 *
 * Which rows a shard fixes. A shard of depth k fixes a, c, d (the root) and then the first
 * k-1 LEVELS of the search the kernel would run on the root: the free rows in the kernel's own
 * order. The kernel searches top-down (rows 1, 2, ..., n-1, so b comes last and one search
 * covers every b) or bottom-up (rows n-1, n-2, ..., 1: b first); the descriptor carries the
 * direction: from n = 19 the list takes, for each root, the direction whose tree random probes
 * estimate smaller (shard_flip.c), below that bottom-up when c + d < n - 1 (21-26 % fewer nodes
 * than top-down everywhere). Rows c and d hold side queens and are not levels. Because a shard
 * fixes exactly the levels the kernel would branch on first, splitting at any depth never
 * repeats the search above the split: the shards of depth k together search the tree of depth
 * 1 minus its top k-1 levels and minus prefixes that are dead (a free row with no open cell),
 * which are not listed. Shards are listed in lexicographic order of (a, c, d, the level
 * columns). Below the shards the kernels run the column test (count_search.h), wider from
 * n = 24; nodes are part of a result, and quorums and spot-checks compare them, so the
 * encoding names the search as well as the bytes.
 * count, n <= 3 ("plain" mode): a single shard with nothing pre-placed,
 * weight 1, unique checked against all 8 symmetries.
 *
 * enumerate (n <= 16): shards fix rows 0..k-1 with no symmetry reduction,
 * listed in lexicographic order of those columns; see enumerate.h.
 *
 * Descriptor bytes, all single bytes:
 *   [0] encoding version   [1] kind (NQ_KIND_COUNT / NQ_KIND_ENUMERATE)
 *   [2] n   [3] mode (0 plain, 1 border)
 *   [4] weight: 1 in plain mode and for enumerate; 0 in border mode (per solution, from b)
 *   [5] k   [6 .. 6+k-1] the level columns: plain, rows 0..k-1; border, a then the
 *           columns of the k-1 levels in the kernel's order above
 *   border mode only, then: c, d (see above; a is the column of row 0), and the
 *           direction: 0 top-down, 1 bottom-up
 * shard_decode reads encoding NQ_SHARD_ENCODING only and accepts exactly the descriptors its
 * list can hold, apart from dead ones; anything else is refused with a reason.
 *
 * The list is never materialized: shards_new keeps the roots and, for every
 * prefix of all but the last two levels (a "block"), how many shards lie
 * before it; shards_get(i) finds i's block by binary search and walks at most
 * two levels. So a list of 10^7 shards costs about a megabyte and its
 * construction one pass over the top levels.
 *
 * The lease order (shards_at) is the order a job hands its shards out in, and a stored job's
 * frontier is a position in it, so a job stores the version of its order (one today, as for
 * the encoding; a release that changes it migrates stored jobs):
 *   NQ_ORDER_COST (2): shards by estimated nodes, largest first, ties by index; lists of more
 *     than NQ_ORDER_BLOCKS_FROM shards order their blocks by their estimate a shard, a block's
 *     shards in list order.
 * It gives every shard an estimate of count_shard's nodes, from seeded random paths through the list's and the kernel's levels
 * (shard_list_cost.c, shard_cost.h): the same on every machine and at every rebuild.
 */
#ifndef NQ_SHARD_H
#define NQ_SHARD_H

#include "nq.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define NQ_SHARD_ENCODING 5       /* the one encoding listed and read; a job stores it */
#define NQ_SHARD_BORDER_MIN_N 4      /* below: the plain mode */
#define NQ_SHARD_MAX_LIST (1ull << 28) /* shards_new refuses to list more than this */
#define NQ_ORDER_COST 2           /* shards (blocks past NQ_ORDER_BLOCKS_FROM shards) by estimated
                                     nodes a shard, largest first */
#define NQ_ORDER_CURRENT NQ_ORDER_COST
#define NQ_ORDER_BLOCKS_FROM 1000000   /* 16 bytes a shard up to here, 24 a block beyond */
#define NQ_SHARD_COST_FLOOR 1000  /* nodes in every shard's estimate for its cost outside the search
                                     (decoding, planning, recording: ~0.5 us, docs/kernel.md) */

enum { NQ_SHARD_PLAIN = 0, NQ_SHARD_BORDER = 1 };

typedef struct nq_shard_desc {
    int version, kind, n, mode, weight, k;
    int flip;                         /* border: the kernel searches from the bottom (see above) */
    uint8_t top[NQ_SHARD_MAX_N];      /* the level columns, bytes 6.. (see above) */
    int c, d;                         /* border mode only */
    int8_t row_col[NQ_SHARD_MAX_N];   /* every fixed queen: column by row, -1 = free row */
    /* per column b of the row n-1 queen: weight of (a, b, c, d) (0: not
       canonical or not possible) and its stabilizer (bitmask of D4 elements,
       bit 0 = identity), the elements unique is checked against. Plain mode:
       weight 1, all 8 elements; enumerate: weight 1, identity. */
    uint8_t bweight[NQ_SHARD_MAX_N];
    uint8_t bstab[NQ_SHARD_MAX_N];
    uint32_t bmask8, bmaskx;          /* columns b of weight 8 / of a smaller weight */
} nq_shard_desc_t;

typedef struct nq_shards nq_shards_t;

/* depth 0 = auto from n. NULL with a reason in err when kind, n or depth is out of range.
   shards_new, shards_new_ex and shards_new_bounded give lease order NQ_ORDER_COST. */
nq_shards_t *shards_new(int kind, int n, int depth, char *err, size_t errlen);
/* The same for a stored job's encoding (refused unless NQ_SHARD_ENCODING). */
nq_shards_t *shards_new_ex(int kind, int n, int depth, int encoding, char *err, size_t errlen);
/* The same, refusing as soon as it knows that the list has more than max_shards shards (at most
   NQ_SHARD_MAX_LIST) or that listing it takes more than max_steps steps of the search (prefixes
   visited, each O(n) to O(n^3)). For parameters that someone else chose (a manifest's header):
   the cost of a list is not bounded by its length. n=32 at depth 30 searches for minutes without
   finding the first of its shards, so a cap on the count alone stops nothing. */
nq_shards_t *shards_new_bounded(int kind, int n, int depth, int encoding, uint64_t max_shards,
                                uint64_t max_steps, char *err, size_t errlen);
/* What shards_new_limited may spend, and why it gave up (lim->why, when it returns NULL). */
typedef struct {
    uint64_t max_shards, max_steps;   /* as for shards_new_bounded */
    const atomic_int *stop;           /* NULL, or: give up as soon as it is non-zero (checked at every
                                         step and every root: a list built on a thread of a process
                                         that is told to stop; the cost estimates check it at
                                         every unit too) */
    int order;                        /* the lease order: NQ_ORDER_COST, or 0 for the same */
    int unordered;                    /* 1: the list without its lease order, whose cost estimates
                                         are most of a large list's time (N=27: seconds); see
                                         shards_ordered */
    int why;                          /* out: NQ_SHARDS_* */
} nq_shards_limits_t;
enum {
    NQ_SHARDS_REFUSED = 1,            /* kind, n, depth, encoding or order out of range; out of memory */
    NQ_SHARDS_TOO_MANY,               /* more than max_shards */
    NQ_SHARDS_TOO_SLOW,               /* more than max_steps */
    NQ_SHARDS_STOPPED                 /* *stop became non-zero */
};
/* shards_new_bounded, stoppable, saying which limit refused it. */
nq_shards_t *shards_new_limited(int kind, int n, int depth, int encoding, nq_shards_limits_t *lim,
                                char *err, size_t errlen);
/* shards_new_ex in a given lease order (NQ_ORDER_*). */
nq_shards_t *shards_new_ordered(int kind, int n, int depth, int encoding, int order, char *err,
                                size_t errlen);
uint64_t shards_count(const nq_shards_t *s);
/* Writes shard i's descriptor to out (NQ_MAX_SPEC bytes); returns its length, 0 when i is past the end. */
size_t shards_get(const nq_shards_t *s, uint64_t i, uint8_t *out);
/* Calls fn for every shard, in index order, in one walk of the list: O(1) amortized a shard,
   where shards_get walks its block each time. 0, or the first nonzero fn returned. */
typedef int (*shards_each_fn)(void *ud, uint64_t i, const uint8_t *spec, size_t len);
int shards_each(const nq_shards_t *s, shards_each_fn fn, void *ud);
/* The lease order, a permutation of 0..count-1: the shard at position pos (see above). O(1)
   for shards ordered one by one, O(log roots or blocks) otherwise. */
uint64_t shards_at(const nq_shards_t *s, uint64_t pos);
/* shards_each for the shards at lease positions pos..pos+count-1 (clipped to the list), in
   lease order: fn gets each one's index and descriptor. O(log blocks) plus one block's walk
   to find pos, then O(1) amortized a shard within a root or block (order 2 by shard: a block's
   walk a shard, as shards_get). Lets threads take runs of the lease order without the whole
   list of descriptors in memory. */
int shards_each_at(const nq_shards_t *s, uint64_t pos, uint64_t count, shards_each_fn fn, void *ud);
int shards_order(const nq_shards_t *s);
/* 0 for a list made with limits.unordered: its count, descriptors and walks are all there, but
   its lease order is the index order (shards_at(pos) = pos) and every shard costs 1. For what
   needs no order: a job's row, a one-pass benchmark. */
int shards_ordered(const nq_shards_t *s);
/* Estimated nodes of count_shard on shard idx (by list index), and on the shard at lease position
   pos: > 0 for every shard (0 past the end). In nodes of the job's encoding; an
   estimate, whose scale a scheduler should calibrate from real results. */
double shards_cost(const nq_shards_t *s, uint64_t idx);
double shards_cost_at(const nq_shards_t *s, uint64_t pos);
/* The estimates of positions [0, pos) summed (O(1) by shard, O(log) by root or block), so the
   work left in [front, back) is a difference; the total at or past the end. */
double shards_cost_before(const nq_shards_t *s, uint64_t pos);
double shards_cost_total(const nq_shards_t *s);
#ifdef NQ_TEST_FAULTS
/* Tests only: order 2 goes by block from lists of more than `shards` (0: NQ_ORDER_BLOCKS_FROM). */
void shards_test_blocks_from(uint64_t shards);
#endif
int shards_encoding(const nq_shards_t *s);
int shards_depth(const nq_shards_t *s);
void shards_destroy(nq_shards_t **s);

/* Validates untrusted bytes completely. 0 ok, -1 with a reason. */
int shard_decode(const uint8_t *b, size_t len, nq_shard_desc_t *out, char *err, size_t errlen);
/* Encodes a descriptor (as filled by shard_decode); returns the length (<= NQ_MAX_SPEC). */
size_t shard_encode(const nq_shard_desc_t *d, uint8_t *out);

/* The depth shards_new uses for depth 0, and the allowed range of depths. */
int shard_auto_depth(int kind, int n);
int shard_depth_range(int kind, int n, int *min, int *max);
/*
 * Knuth's random probe one step further: extends a count shard by `extra` levels,
 * each a column picked uniformly among its open cells (pick(ud, m) returns 0..m-1), into out
 * (NQ_MAX_SPEC bytes); *weight = the product of the numbers of choices. Summing weight x (the
 * work of the deeper shard) estimates the shard's work without bias. Returns the deeper
 * descriptor's length; 0 when the path died (no work below it); -1 not a shard this can extend.
 */
int shard_probe(const uint8_t *spec, size_t len, int extra, uint64_t (*pick)(void *ud, uint64_t bound), void *ud,
                uint8_t *out, double *weight);
/* The planning model: a count of n on one AVX-512 core, in seconds, and the nodes it searches
   (see shard.c). */
double shard_count_core_seconds(int n);
double shard_count_nodes(int n);
/* The deepest count depth whose shards still take `seconds` on average by that model (the
   shallowest when none does); -1 with a reason when the kind or n has no depth to choose. It
   builds lists (seconds of CPU for a large n): a loop that must answer calls neither this nor: */
int shard_depth_for_seconds(int kind, int n, double seconds, char *err, size_t errlen);
/* ... the list at that depth (encoding NQ_SHARD_ENCODING), each trial bounded by lim's steps and
   stop flag; lim->max_shards is not used (the mean decides how long a list may be). */
nq_shards_t *shards_new_for_seconds(int kind, int n, double seconds, nq_shards_limits_t *lim, char *err,
                                    size_t errlen);
/* 0 when a count of n has depths to choose from, else -1 with the reason; cheap. */
int shard_seconds_check(int kind, int n, char *err, size_t errlen);

#endif
