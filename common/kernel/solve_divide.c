/*
 * `divide` (seed 001): the divide-and-conquer construction of Abramson and
 * Yung (1986). No search: the seed is ignored, the answer depends on n only.
 *
 * Three rules, applied to n:
 * - n odd and not a multiple of 3 (n = 1, 5, 7, 11, 13, ...): the "modular"
 *   solution, row r -> column 2r mod n. It is also a solution on the torus,
 *   which is what lets it be used as a block below.
 * - n odd, a multiple of 3: split n = 4b + c with b and c both modular sizes
 *   (c in {1, 5, 7, 11}, one of which always fits: see dv_split). Lay out the
 *   5-queens solution (0 2 4 1 3) as a 5x5 grid of blocks whose first row
 *   and column of blocks are c wide and the others b wide: block (0,0) holds
 *   the c-queens solution, blocks (k, 0 2 4 1 3[k]) for k = 1..4 the
 *   b-queens solution. This is the seed's "shrink the first b x b block of
 *   the 5b board to c x c"; its code dropped rows by position but columns by
 *   value, and its printed 111-queens answer has 14 diagonal clashes, so the
 *   layout is written here directly. It works when b >= c.
 * - n even: build n + 1 (whose first queen sits in the corner (0, 0) under
 *   both rules above) and drop that corner's row and column.
 * That leaves exactly the N the paper excludes: 2, 3, 8, 9, 14, 15, 26, 27,
 * 38, 39 (9 = 4*1+5, 15 = 4*1+11, 27 = 4*5+7 and 39 = 4*7+11 have b < c, and
 * each even one is its odd neighbour minus one). run() and check() refuse them.
 *
 * Every row is an O(1) formula, so the whole board is O(n) time and needs no
 * memory beyond cols. stats->steps = rows placed.
 */
#include "solve.h"
#include "errf.h"

#include <stdio.h>

#define DV_N_MAX NQ_SOLVE_MAX_N
#define DV_POLL 65536            /* rows between cancel polls */

static const uint64_t dv_five[5] = { 0, 2, 4, 1, 3 };

static int dv_modular(uint64_t n)
{
    return n % 2 == 1 && n % 3 != 0;
}

/* For odd n, a multiple of 3: picks c with b = (n - c) / 4 odd; 0 if b < c. */
static int dv_split(uint64_t n, uint64_t *b, uint64_t *c)
{
    /* b odd needs n - c = 4 (mod 8): c = n + 4 (mod 8), so c mod 8 covers 1, 3, 5, 7.
     * b is then never a multiple of 3: 4b + c = n = 0 (mod 3) gives b = -c (mod 3). */
    static const uint64_t by_mod8[8] = { 0, 5, 0, 7, 0, 1, 0, 11 };
    *c = by_mod8[n % 8];
    if (n < *c)
        return 0;
    *b = (n - *c) / 4;
    return *b >= *c;
}

/* Whether the construction gives an n-queens board. */
static int dv_covers(uint64_t n)
{
    uint64_t odd = n % 2 ? n : n + 1, b, c;
    if (dv_modular(odd))
        return 1;
    return dv_split(odd, &b, &c);
}

/* Column of row r in the odd-n board (n covered); b, c as from dv_split. */
static inline uint64_t dv_col(uint64_t n, uint64_t b, uint64_t c, uint64_t r)
{
    if (dv_modular(n))
        return 2 * r % n;
    if (r < c)
        return 2 * r % c;               /* c = 1 gives 0 */
    uint64_t k = 1 + (r - c) / b, i = (r - c) % b;
    return c + (dv_five[k] - 1) * b + 2 * i % b;
}

static uint64_t dv_memory(uint64_t n)
{
    (void)n;
    return 0;
}

/* The N the construction leaves out, refused with the reason (also at submit: solver_check). */
static int dv_check(uint64_t n, char *err, size_t errlen)
{
    if (n >= 1 && n <= DV_N_MAX && dv_covers(n))
        return 0;
    return nq_errf(err, errlen, "divide (Abramson-Yung) covers every N >= 1 except 2, 3, 8, 9, "
                   "14, 15, 26, 27, 38, 39 (got N=%llu); use --algo construct",
                   (unsigned long long)n);
}

static int dv_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
                  uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    (void)seed;
    nq_solve_opts_t none = { 0 };
    if (!opts)
        opts = &none;
    stats->steps = 0;
    stats->restarts = 0;
    if (dv_check(n, err, errlen) != 0)
        return NQ_SOLVE_ERROR;
    /* Even n: row r, column x of n is row r+1, column x+1 of the odd board n+1. */
    uint64_t odd = n % 2 ? n : n + 1, shift = odd - n, b = 0, c = 0;
    if (!dv_modular(odd))
        dv_split(odd, &b, &c);
    for (uint64_t r = 0; r < n; r++) {
        if (r % DV_POLL == 0) {
            if (opts->cancel && atomic_load_explicit(opts->cancel, memory_order_relaxed))
                return NQ_SOLVE_CANCELLED;
            if (opts->progress)
                atomic_store_explicit(opts->progress, r, memory_order_relaxed);
        }
        cols[r] = (uint32_t)(dv_col(odd, b, c, r + shift) - shift);
    }
    stats->steps = n;
    if (opts->progress)
        atomic_store_explicit(opts->progress, n, memory_order_relaxed);
    return NQ_SOLVE_OK;
}

const nq_solver_t nq_solver_divide = {
    "divide", "Abramson-Yung divide-and-conquer construction, O(N), all N but 2,3,8,9,14,15,26,27,38,39 (seed 001)",
    1, DV_N_MAX, dv_memory, dv_run, dv_check,
};
