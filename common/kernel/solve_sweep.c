/*
 * `minconflicts-sweep` (seed 000): min-conflicts with the rows visited in
 * order. Start from a random permutation (one queen per row, distinct
 * columns). A sweep visits rows 0..n-1; an attacked queen moves to the
 * column of its row with the fewest conflicts, ties broken at random among
 * all the best columns, its own included (a queen that is not attacked
 * stays). Sweeps repeat until no queen is attacked.
 *
 * Taking ties sideways matters: the seed's code counts its own square one
 * too high (the column term keeps the queen itself) and so moves on ties; a
 * strict "only if better" rule gets stuck on plateaus for most seeds.
 *
 * Counters per column and diagonal give any square's conflicts in O(1), so a
 * sweep costs O(n^2) (the seed: ~40 sweeps at n = 5e4). `bad`, the number of
 * surplus queens over all lines, is kept up to date so the end is seen the
 * moment it happens, even mid-sweep.
 *
 * stats->steps counts SWEEPS (started); max_steps caps them (default
 * SW_MAX_SWEEPS), then FAILED. A sweep in which no attacked queen had a
 * column as good as its own elsewhere is a fixed point: FAILED at once.
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>

#define SW_MAX_SWEEPS 1000
#define SW_N_MAX 50000           /* the seed's largest run; a sweep is O(n^2) */

typedef struct {
    uint64_t n;
    uint32_t *cols;
    uint32_t *colc, *dg, *ad;    /* queens per column, diagonal r-c+n-1, anti-diagonal r+c */
    uint64_t bad;                /* sum over all lines of max(queens - 1, 0) */
    nq_rng_t rng;
} sw_t;

static inline uint64_t sw_seen(const sw_t *s, uint64_t r, uint64_t c)
{
    return (uint64_t)s->colc[c] + s->dg[r + s->n - 1 - c] + s->ad[r + c];
}

static inline void sw_inc(uint32_t *line, uint64_t *bad)
{
    if ((*line)++ > 0)
        ++*bad;
}

static inline void sw_dec(uint32_t *line, uint64_t *bad)
{
    if (--(*line) > 0)
        --*bad;
}

static void sw_put(sw_t *s, uint64_t r, uint64_t c)
{
    sw_inc(&s->colc[c], &s->bad);
    sw_inc(&s->dg[r + s->n - 1 - c], &s->bad);
    sw_inc(&s->ad[r + c], &s->bad);
    s->cols[r] = (uint32_t)c;
}

static void sw_lift(sw_t *s, uint64_t r)
{
    uint64_t c = s->cols[r];
    sw_dec(&s->colc[c], &s->bad);
    sw_dec(&s->dg[r + s->n - 1 - c], &s->bad);
    sw_dec(&s->ad[r + c], &s->bad);
}

/* Random permutation (Fisher-Yates), as the seed's init(). */
static void sw_start(sw_t *s)
{
    uint64_t n = s->n;
    rng_permutation(&s->rng, s->cols, n);
    for (uint64_t r = 0; r < n; r++)
        sw_put(s, r, s->cols[r]);
}

/*
 * Row r's queen, if attacked, goes to a least-conflicted column of its row
 * (uniform among the ties, its own square included). Returns 1 when another
 * column was at least as good (so a later sweep may differ), else 0.
 */
static int sw_adjust(sw_t *s, uint64_t r)
{
    uint64_t n = s->n, cur = s->cols[r];
    uint64_t best = sw_seen(s, r, cur) - 3, best_c = cur, ties = 1;
    if (best == 0)
        return 0;
    for (uint64_t c = 0; c < n; c++) {
        if (c == cur)
            continue;
        uint64_t k = sw_seen(s, r, c);
        if (k > best)
            continue;
        if (k < best) {
            best = k;
            ties = 0;
        }
        if (rng_below(&s->rng, ++ties) == 0)
            best_c = c;
    }
    if (best_c == cur)
        return ties > 1;
    sw_lift(s, r);
    sw_put(s, r, best_c);
    return 1;
}

static int sw_search(sw_t *s, const nq_solve_opts_t *opts, uint64_t *sweeps)
{
    uint64_t limit = opts->max_steps ? opts->max_steps : SW_MAX_SWEEPS;
    while (s->bad > 0) {
        if (*sweeps >= limit)
            return NQ_SOLVE_FAILED;
        ++*sweeps;
        if (opts->progress)
            atomic_store_explicit(opts->progress, *sweeps, memory_order_relaxed);
        uint64_t movable = 0;
        for (uint64_t r = 0; r < s->n && s->bad > 0; r++) {
            if ((r & 255) == 0 && opts->cancel &&
                atomic_load_explicit(opts->cancel, memory_order_relaxed))
                return NQ_SOLVE_CANCELLED;
            movable += (uint64_t)sw_adjust(s, r);
        }
        if (movable == 0 && s->bad > 0)
            return NQ_SOLVE_FAILED;     /* a fixed point with conflicts */
    }
    return NQ_SOLVE_OK;
}

static uint64_t sw_memory(uint64_t n)
{
    return (n + 2 * (2 * n)) * sizeof(uint32_t);
}

static int sw_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
                  uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    nq_solve_opts_t none = { 0 };
    if (!opts)
        opts = &none;
    sw_t s = { .n = n, .cols = cols };
    s.colc = calloc(n, sizeof *s.colc);
    s.dg = calloc(2 * n, sizeof *s.dg);
    s.ad = calloc(2 * n, sizeof *s.ad);
    int rc = NQ_SOLVE_ERROR;
    if (!s.colc || !s.dg || !s.ad) {
        snprintf(err, errlen, "minconflicts-sweep: out of memory for N=%llu",
                 (unsigned long long)n);
        goto done;
    }
    rng_init(&s.rng, seed, 0x5357);     /* stream "SW" */
    sw_start(&s);
    stats->steps = 0;
    stats->restarts = 0;
    rc = sw_search(&s, opts, &stats->steps);
done:
    free(s.colc);
    free(s.dg);
    free(s.ad);
    return rc;
}

const nq_solver_t nq_solver_sweep = {
    "minconflicts-sweep",
    "min-conflicts sweeping rows in order, O(1) line counters; steps = sweeps (seed 000)",
    4, SW_N_MAX, sw_memory, sw_run, NULL,
};
