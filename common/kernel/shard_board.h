/*
 * A board of fixed queens with O(1) conflict checks and O(1) open cells per
 * row (internal to the shard modules: shard.c, shard_list.c).
 *
 * Diagonals are bit sets over their index: diag = r + c, anti = c - r + n - 1,
 * both below 63 for n <= 32. The cells of row r that a diagonal set covers are
 * then one shift away: (diag >> r) and (anti >> (n - 1 - r)), bit c = column c.
 */
#ifndef NQ_SHARD_BOARD_H
#define NQ_SHARD_BOARD_H

#include "nq.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    int n;
    uint32_t full;
    int8_t row_col[NQ_SHARD_MAX_N];
    uint32_t cols;
    uint64_t diag, anti;
} board_t;

static inline void board_init(board_t *p, int n)
{
    p->n = n;
    p->full = n == 32 ? 0xffffffffu : (1u << n) - 1;
    memset(p->row_col, -1, sizeof p->row_col);
    p->cols = 0;
    p->diag = p->anti = 0;
}

/* The cells of row r no queen attacks (whether or not row r holds one). */
static inline uint32_t board_open(const board_t *p, int r)
{
    return p->full & ~p->cols & ~(uint32_t)(p->diag >> r) & ~(uint32_t)(p->anti >> (p->n - 1 - r));
}

/* The cells a queen of row r may take: open ones, and in row n-1 only the canonical b. */
static inline uint32_t board_row_open(const board_t *p, int r, uint32_t b_allowed)
{
    return board_open(p, r) & (r == p->n - 1 ? b_allowed : p->full);
}

static inline int board_free(const board_t *p, int r, int c)
{
    return (int)(board_open(p, r) >> c & 1u);
}

/* 0: placed (or the same queen was already there); -1: clashes with a queen. */
static inline int board_put(board_t *p, int r, int c)
{
    if (p->row_col[r] == c)
        return 0;
    if (p->row_col[r] >= 0 || !board_free(p, r, c))
        return -1;
    p->row_col[r] = (int8_t)c;
    p->cols |= 1u << c;
    p->diag |= 1ull << (r + c);
    p->anti |= 1ull << (c - r + p->n - 1);
    return 0;
}

/* shard.c, for shard_list.c: */

/* Encoding 2's direction: 1 when the kernel searches a border shard from the bottom (shard.h). */
int shard_flip(int n, int c, int d);

/* The direction (shard_flip.c) whose tree random probes estimate smaller, for the
   root (a, c, d) on board `root` (holding just those queens) with row n-1's canonical cells
   b_allowed, b_rare of them of weight 2 or 4; the rule below SHARD_FLIP_MIN_N and for a rare b.
   Deterministic: the same answer on every machine. Seconds of CPU for all roots of a large n: */
int shard_flip_probe(int n, int a, int c, int d, const board_t *root, uint32_t b_allowed, uint32_t b_rare);
/* The same answer, from the table below: for the list, whose nth root (counted from 0 over the
   roots shard_border_root accepts, in (a, c, d) order) (a, c, d) is. */
int shard_flip_root(int n, int a, int c, int d, uint32_t nth, const board_t *root, uint32_t b_allowed,
                    uint32_t b_rare);

/* From n = 19 a root's direction comes from the probes (below, the rule: a root's search is over
   before the probes are, shard_flip.c). */
#define SHARD_FLIP_MIN_N 19
/* shard_flip_table.c, written by nq_flip_table (tests/tools): shard_flip_probe's answer for every
   root of n = SHARD_FLIP_MIN_N .. NQ_SHARD_MAX_N, one bit each (1: bottom-up), the nth root of n
   at bit first[n - SHARD_FLIP_MIN_N] + nth of bits (64 a word, lowest first). */
extern const uint64_t shard_flip_table_bits[];
extern const uint32_t shard_flip_table_first[NQ_SHARD_MAX_N - SHARD_FLIP_MIN_N + 2];

/* Bytes after a border descriptor's levels: c, d and the direction. */
#define NQ_SHARD_BORDER_BYTES 3

/* The rows the levels of a shard fix, in order (see shard.h); returns how many (L). */
int shard_level_rows(int mode, int n, int k, int c, int d, int flip, uint8_t *rows);

/* Places (0, a), (c, 0), (d, n-1) on a fresh board and fills o's per-b weights; returns how
   many b are possible and canonical (0: none, or the three clash). */
struct nq_shard_desc;
int shard_border_root(int n, int a, int c, int d, board_t *p, struct nq_shard_desc *o);

#endif
