/*
 * `qs1` (seed 004; Sosic & Gu 1990, "Queen Search 1"). Start from a random
 * permutation, so rows and columns never clash and only diagonals can. Then
 * pass over every pair i < j and swap the two queens' columns whenever that
 * lowers the number of diagonal collisions (surplus queens over all
 * diagonals). Passes repeat until there is no collision; a whole pass without
 * a swap means no single swap helps any more, and the seed FAILS.
 *
 * Diagonal counters make a swap test O(1) (8 diagonals change). A pair where
 * neither queen is attacked cannot lower the count (both leave
 * collision-free lines), so it is skipped without a test: same outcome as
 * the seed's full loop, cheaper. A pass is still O(n^2), so QS1 is good up
 * to about 1e4 queens; for more use qs4 / qs4-classic.
 *
 * stats->steps counts swap tests (pairs where at least one queen was
 * attacked); max_steps caps them (default: none, the passes end anyway since
 * each pass either lowers the collisions or fails).
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>

#define QS1_N_MAX 10000

typedef struct {
    uint64_t n;
    uint32_t *cols;
    uint32_t *dg, *ad;           /* queens per diagonal r-c+n-1 and anti-diagonal r+c */
    uint64_t coll;               /* sum over diagonals of max(queens - 1, 0) */
} qs1_t;

static inline void qs1_put(qs1_t *q, uint64_t r, uint64_t c)
{
    if (q->dg[r + q->n - 1 - c]++ > 0)
        q->coll++;
    if (q->ad[r + c]++ > 0)
        q->coll++;
    q->cols[r] = (uint32_t)c;
}

static inline void qs1_lift(qs1_t *q, uint64_t r)
{
    uint64_t c = q->cols[r];
    if (--q->dg[r + q->n - 1 - c] > 0)
        q->coll--;
    if (--q->ad[r + c] > 0)
        q->coll--;
}

static inline int qs1_attacked(const qs1_t *q, uint64_t r)
{
    uint64_t c = q->cols[r];
    return q->dg[r + q->n - 1 - c] > 1 || q->ad[r + c] > 1;
}

/* Swaps the columns of rows i and j; undoes it unless the collisions drop. 1 if kept. */
static int qs1_try_swap(qs1_t *q, uint64_t i, uint64_t j)
{
    uint64_t ci = q->cols[i], cj = q->cols[j], before = q->coll;
    qs1_lift(q, i);
    qs1_lift(q, j);
    qs1_put(q, i, cj);
    qs1_put(q, j, ci);
    if (q->coll < before)
        return 1;
    qs1_lift(q, i);
    qs1_lift(q, j);
    qs1_put(q, i, ci);
    qs1_put(q, j, cj);
    return 0;
}

static void qs1_start(qs1_t *q, nq_rng_t *rng)
{
    uint64_t n = q->n;
    rng_permutation(rng, q->cols, n);
    for (uint64_t r = 0; r < n; r++)
        qs1_put(q, r, q->cols[r]);
}

/* One pass over all pairs; returns the swaps made, or -1 on cancel or the step limit. */
static int64_t qs1_pass(qs1_t *q, const nq_solve_opts_t *opts, uint64_t limit, uint64_t *steps)
{
    int64_t swaps = 0;
    for (uint64_t i = 0; i + 1 < q->n && q->coll > 0; i++) {
        if (opts->cancel && atomic_load_explicit(opts->cancel, memory_order_relaxed))
            return -1;
        if (opts->progress)
            atomic_store_explicit(opts->progress, *steps, memory_order_relaxed);
        for (uint64_t j = i + 1; j < q->n && q->coll > 0; j++) {
            if (!qs1_attacked(q, i) && !qs1_attacked(q, j))
                continue;
            if (*steps >= limit)
                return -1;
            ++*steps;
            swaps += qs1_try_swap(q, i, j);
        }
    }
    return swaps;
}

static uint64_t qs1_memory(uint64_t n)
{
    return 2 * (2 * n) * sizeof(uint32_t);
}

static int qs1_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
                   uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    nq_solve_opts_t none = { 0 };
    if (!opts)
        opts = &none;
    qs1_t q = { .n = n, .cols = cols };
    q.dg = calloc(2 * n, sizeof *q.dg);
    q.ad = calloc(2 * n, sizeof *q.ad);
    if (!q.dg || !q.ad) {
        free(q.dg);
        free(q.ad);
        snprintf(err, errlen, "qs1: out of memory for N=%llu", (unsigned long long)n);
        return NQ_SOLVE_ERROR;
    }
    nq_rng_t rng;
    rng_init(&rng, seed, 0x5131);       /* stream "Q1" */
    qs1_start(&q, &rng);
    uint64_t limit = opts->max_steps ? opts->max_steps : UINT64_MAX;
    stats->steps = 0;
    stats->restarts = 0;
    int rc = NQ_SOLVE_OK;
    while (q.coll > 0) {
        int64_t swaps = qs1_pass(&q, opts, limit, &stats->steps);
        if (swaps < 0) {
            int cancelled = opts->cancel && atomic_load_explicit(opts->cancel, memory_order_relaxed);
            rc = cancelled ? NQ_SOLVE_CANCELLED : NQ_SOLVE_FAILED;
            break;
        }
        if (swaps == 0 && q.coll > 0) {
            rc = NQ_SOLVE_FAILED;       /* no single swap helps: the seed is stuck */
            break;
        }
    }
    free(q.dg);
    free(q.ad);
    return rc;
}

const nq_solver_t nq_solver_qs1 = {
    "qs1", "Sosic-Gu QS1: random permutation + pairwise swap passes, O(n^2)/pass, n <= 1e4 (seed 004)",
    4, QS1_N_MAX, qs1_memory, qs1_run, NULL,
};
