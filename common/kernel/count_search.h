/*
 * The search engine behind count_shard and enumerate_shard (internal to
 * common/): a shard's fixed queens turned into per-row masks, and the
 * iterative bitboard backtracker over the free rows.
 *
 * Fixed queens never enter the moving diagonal masks: each free row gets a
 * static mask of the cells fixed queens attack diagonally, and the column
 * mask starts with their columns. Attack is symmetric, so this checks both
 * directions, and fixed rows are simply jumped: the diagonal masks shift by
 * the row distance between consecutive free rows.
 */
#ifndef NQ_COUNT_SEARCH_H
#define NQ_COUNT_SEARCH_H

#include "count.h"
#include "shard.h"

typedef struct {
    int n, m;                          /* board size; number of free rows */
    uint32_t full;                     /* the n column bits */
    uint32_t colfix;                   /* columns of fixed queens */
    int row[NQ_SHARD_MAX_N];           /* free rows, increasing */
    int shift[NQ_SHARD_MAX_N + 1];     /* shift[L] = row[L] - row[L-1] (L >= 1) */
    uint32_t block[NQ_SHARD_MAX_N + 1];/* cells of free row L attacked by fixed queens */
    uint8_t cols[NQ_SHARD_MAX_N];      /* fixed queens' columns (free rows filled during search) */
    /* The last free level's cells by what a solution ending there weighs:
       leaf8 = weight 8 with a trivial stabilizer (unique = 1 each, no check),
       leafx = any other weight (checked solution by solution). The last
       free level's block already excludes every other cell. */
    uint32_t leaf8, leafx;
    uint8_t bweight[NQ_SHARD_MAX_N], bstab[NQ_SHARD_MAX_N];   /* by column of row n-1 */
    int flipped;                       /* rows are numbered from the bottom (see plan_init) */
    /* The column test's rule (see nq_levels_t), set by plan_set_cover: the rows left up to
       which it runs (NQ_COVER_LEFT_5 is the wide rule, where every row it builds must also keep
       an open cell). */
    int cover;
    uint64_t node_base;                /* added to the nodes this search publishes as progress */
} nq_plan_t;

/*
 * flip = 0: free rows are searched top-down. flip = 1: the board is mirrored
 * top to bottom first (plan row p = board row n-1-p), so the search runs
 * bottom-up; cols[] are then in plan orientation, and the leaf masks are left
 * to the caller (the row n-1 queen is the first level, not the last).
 */
void plan_init(nq_plan_t *pl, const nq_shard_desc_t *d, int flip);

/* Bottom-up with row n-1 free (its queen is the first level): splits the plan p8 from
   plan_init(.., 1) by that queen's weight. p8 keeps the weight-8 columns, whose solutions all
   weigh 8 (counted in bulk); px gets the others (solution by solution). count_flipped and the
   GPU's split both search exactly these two plans. */
void plan_split_weight(const nq_shard_desc_t *d, nq_plan_t *p8, nq_plan_t *px);

/* The column test on pl->n (see nq_levels_t): below n = NQ_COVER_WIDE_N at 3-5 rows left; from
   there ("wide") at 3-7 rows left, and every row it builds must keep an open cell. */
#define NQ_COVER_LEFT_4 5
#define NQ_COVER_LEFT_5 7
#define NQ_COVER_WIDE_N 24
void plan_set_cover(nq_plan_t *pl);

/* Free level L's cells that no fixed queen attacks: its open cells before any queen of the search. */
static inline uint32_t plan_open(const nq_plan_t *pl, int L) { return pl->full & ~pl->block[L]; }

/*
 * The per-level tables both counting kernels read (count_fast.c, count_simd.c):
 * the open cells of each level before any queen of the search, and the row
 * distances from level i to levels i+1, i+2 and the last (d1, d2, dz;
 * defined for i + 2 < m), and to the levels i+3.. the column test builds (dx).
 * shift[i] = d1[i - 1], as in the plan.
 *
 * The column test (shard encodings 4 and 5, plan->cover): a node entered at a
 * level with k = cover[i] rows left is a dead end unless every free column
 * keeps an open cell in one of those rows (k queens must fill k free
 * columns). The look-ahead tests rows; a column that every remaining row's
 * diagonals cut off passes it and dies only k levels further down. The test
 * ORs the rows the look-ahead has already built (the node's own, i+1, i+2 and
 * the last) with the node's columns, builds the k - 4 rows between (i+3 ..
 * i+k-2), and compares with all columns; at k = 3 it reads the node's cells
 * that pass the look-ahead, row m-2 and the last.
 * Encoding 4 runs it at k = 3..5 (measured at N=18: 8 % fewer steps of the
 * vector kernel; at k = 6 the further 2.5 % cost as much as they saved there).
 * Encoding 5, from n = 24, runs it at k = 3..7 and also kills a node where a
 * row it builds has no open cell (wide; the look-ahead tests only rows i+1,
 * i+2 and the last). The rows are wider at large n, and there it pays where
 * it does not at n = 18 (n = 28: 0.87 of encoding 4's nodes, 0.93-0.94 of its
 * time on a quiet host; n = 24: 0.91 of the nodes, ~0.96 of the time; n = 22:
 * 0.93 of the nodes, ~1.01 of the time; n = 18: 0.96 of the nodes, 1.01-1.04
 * of the time), so below n = 24 encoding 5 searches as encoding 4 does.
 * Node counts differ between the encodings, and quorums and spot-checks
 * compare them, so each is an encoding of its own.
 */
typedef struct {
    int m;
    uint32_t open_of[NQ_SHARD_MAX_N + 1];
    uint32_t last_open;                /* open_of[m - 1] */
    uint32_t leaf8;                    /* the plan's weight-8 cells of the last level */
    uint32_t full;                     /* the n column bits */
    int shift[NQ_SHARD_MAX_N + 1];
    int d1[NQ_SHARD_MAX_N + 1], d2[NQ_SHARD_MAX_N + 1], dz[NQ_SHARD_MAX_N + 1];
    int dx[NQ_SHARD_MAX_N + 1][NQ_COVER_LEFT_5 - 4];   /* dx[i][j - 3]: level i to level i+j */
    uint8_t cover[NQ_SHARD_MAX_N + 1]; /* rows left where the column test runs, else 0 */
    int wide;                          /* plan->cover is NQ_COVER_LEFT_5: each row built keeps a cell */
} nq_levels_t;

void levels_init(nq_levels_t *lv, const nq_plan_t *pl);

/* The look-ahead of count_fast.c, here so that the cost estimator (shard_cost.c) reads the very
   code whose nodes it estimates. */

/*
 * The cells of a level whose queen would leave no open cell in a later row
 * with open cells R, k rows further: those b with R inside {b, b<<k, b>>k}.
 * Found for all b at once: A, B, C mark the b whose b, b<<k, b>>k is in R;
 * their bit-sliced sum (s1 s0, at most 3) must equal popcount(R), so R with
 * 4 or more cells is never killed. The table turns the compare into two
 * xors and a mask without branches (measured faster than computing them).
 */
static inline __attribute__((always_inline)) uint32_t fast_kills(uint32_t R, int k)
{
    uint32_t A = R, B = R >> k, C = R << k, t = A ^ B;
    uint32_t s0 = t ^ C, s1 = (A & B) | (C & t);   /* the count's two bits: sum and majority */
    /* by popcount(R): the complement of the count bits to match (x ^ ~want is
       all-ones where x == want); a zero mask above 3, where none can match */
    static const uint32_t want[33][2] = { { ~0u, ~0u }, { 0, ~0u }, { ~0u, 0 }, { 0, 0 } };
    static const uint32_t small[33] = { ~0u, ~0u, ~0u, ~0u };
    unsigned p = (unsigned)__builtin_popcount(R);
    return (s0 ^ want[p][0]) & (s1 ^ want[p][1]) & small[p];
}

/* A level's open cells minus those that fail the look-ahead (rows L+1, L+2, last); none where
   the column test (above) finds a free column that no remaining row can take. */
static inline __attribute__((always_inline)) uint32_t
fast_viable(const nq_levels_t *K, uint32_t open, int L, uint32_t col, uint32_t dl, uint32_t dr)
{
    int k1 = K->d1[L], k2 = K->d2[L], kz = K->dz[L];
    uint32_t r1 = K->open_of[L + 1] & ~(col | (dl << k1) | (dr >> k1));
    uint32_t r2 = K->open_of[L + 2] & ~(col | (dl << k2) | (dr >> k2));
    uint32_t rz = K->last_open & ~(col | (dl << kz) | (dr >> kz));
    if (K->cover[L]) {
        uint32_t cov = open | r1 | r2 | rz | col;
        for (int j = 3; j <= K->cover[L] - 2; j++) {
            int kj = K->dx[L][j - 3];
            uint32_t r = K->open_of[L + j] & ~(col | (dl << kj) | (dr >> kj));
            if (K->wide && !r)
                return 0;           /* encoding 5: a row with no open cell */
            cov |= r;
        }
        if (cov != K->full)
            return 0;
    }
    return open & ~(fast_kills(r1, k1) | fast_kills(r2, k2) | fast_kills(rz, kz));
}

/* Called for each solution in lexicographic order; nonzero stops the search and is returned. */
typedef int (*nq_leaf_fn)(void *ud, const uint8_t *cols, int n);

/* Every completion, one by one. 0 done, 2 cancelled, else what leaf returned. *nodes gets the node count. */
int search_leaves(nq_plan_t *pl, nq_leaf_fn leaf, void *ud, const nq_kernel_ctl_t *ctl, uint64_t *nodes);

/* A weighted count in progress. */
typedef struct {
    nq_count_tally_t tally;   /* weighted solutions, checked, with residues */
    uint64_t unique;
    const nq_plan_t *plan;
} nq_count_acc_t;

/* Adds one solution (all columns known) with its weight and unique check: 0, -1 overflow. */
int count_solution(const nq_plan_t *pl, const uint8_t *cols, nq_count_acc_t *acc);
/* search_leaves' leaf for an nq_count_acc_t (ud): a bottom-up plan's columns are turned back to
   board orientation for the weight and the D4 check, then count_solution. */
int count_leaf(void *ud, const uint8_t *cols, int n);

/*
 * count_fast.c, for m >= 2 free rows: adds every completion to *acc (weight 8
 * cells in bulk, others through count_solution). 0 done, 2 cancelled, -1
 * overflow. *nodes gets the node count.
 */
int search_fast(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes);

/* The two kernels search_fast (count.c, the one place that picks) chooses from: the scalar
   loop of count_fast.c, and count_simd.c's 16 lanes (same counts, same nodes). search_simd
   returns NQ_SIMD_DECLINED, having done nothing, where it cannot run (no AVX-512, fewer than
   4 free rows, no memory). */
#define NQ_SIMD_DECLINED 1
int search_scalar(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes);
int search_simd(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes);
/* Nonzero when search_simd can run here and NQ_COUNT_KERNEL is not "scalar". */
int count_simd_available(void);

/* Moves *sols weight-8 solutions into acc, publishes progress (node_base + nodes)
   and polls cancel (ctl may be NULL): 0, 2 cancelled, -1 overflow. */
int count_poll(nq_count_acc_t *acc, uint64_t *sols, uint64_t nodes, const nq_kernel_ctl_t *ctl);

#endif
