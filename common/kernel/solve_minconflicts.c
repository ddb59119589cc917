/*
 * `minconflicts`: classic min-conflicts (Minton et al. 1992) with one queen
 * per row. Counters per column, diagonal and anti-diagonal give the conflicts
 * of any square in O(1). Start: a greedy placement that gives each row the
 * least-conflicted of a few sampled free columns (a random start has ~0.53N
 * conflicts and would need ~N moves of O(N) each). Then, while a queen is
 * attacked: pick a random attacked queen and move it to the least-conflicted
 * column of its row (scanning the row, ties broken at random). A run that
 * exceeds its step budget restarts with the seed's next stream.
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INIT_SAMPLES 32

typedef struct {
    uint64_t n;
    uint32_t *cols;
    uint32_t *colc, *dg, *ad;   /* queens per column, diagonal r-c+n-1, anti-diagonal r+c */
    uint32_t *todo;             /* rows that may be attacked (lazily pruned) */
    uint8_t *listed;            /* listed[r]: r is in todo */
    uint64_t ntodo;
    nq_rng_t rng;
} mc_t;

static inline uint64_t mc_conflicts(const mc_t *m, uint64_t r, uint64_t c)
{
    return m->colc[c] + m->dg[r + m->n - 1 - c] + m->ad[r + c];
}

static inline void mc_add(mc_t *m, uint64_t r, uint64_t c, uint32_t delta)
{
    m->colc[c] += delta;
    m->dg[r + m->n - 1 - c] += delta;
    m->ad[r + c] += delta;
}

/* Greedy start: cols[r..n) holds the unused columns; row r takes the best of a sample. */
static void mc_init(mc_t *m)
{
    uint64_t n = m->n;
    memset(m->colc, 0, n * sizeof *m->colc);
    memset(m->dg, 0, 2 * n * sizeof *m->dg);
    memset(m->ad, 0, 2 * n * sizeof *m->ad);
    for (uint64_t c = 0; c < n; c++)
        m->cols[c] = (uint32_t)c;
    for (uint64_t r = 0; r < n; r++) {
        uint64_t best = r, best_k = UINT64_MAX;
        for (int s = 0; s < INIT_SAMPLES && best_k; s++) {
            uint64_t i = r + rng_below(&m->rng, n - r);
            uint64_t k = mc_conflicts(m, r, m->cols[i]);
            if (k < best_k) {
                best_k = k;
                best = i;
            }
        }
        uint32_t t = m->cols[r];
        m->cols[r] = m->cols[best];
        m->cols[best] = t;
        mc_add(m, r, m->cols[r], 1);
    }
}

static void mc_list(mc_t *m, uint64_t r)
{
    if (!m->listed[r]) {
        m->listed[r] = 1;
        m->todo[m->ntodo++] = (uint32_t)r;
    }
}

/* Rebuilds the list of attacked rows; returns how many there are. */
static uint64_t mc_scan(mc_t *m)
{
    for (uint64_t r = 0; r < m->n; r++)
        if (mc_conflicts(m, r, m->cols[r]) > 3)   /* a lone queen counts itself 3 times */
            mc_list(m, r);
    return m->ntodo;
}

/* Lists the `k` queens attacking row r's queen: they must move too, or r just oscillates. */
static void mc_list_attackers(mc_t *m, uint64_t r, uint64_t k)
{
    uint64_t c = m->cols[r];
    for (uint64_t i = 0; i < m->n && k; i++) {
        uint64_t ci = m->cols[i];
        if (i != r && (ci == c || i + c == r + ci || i + ci == r + c)) {
            mc_list(m, i);
            k--;
        }
    }
}

/* Moves row r's queen to a least-conflicted column, chosen at random among the ties. */
static void mc_move(mc_t *m, uint64_t r)
{
    uint64_t n = m->n, cur = m->cols[r];
    mc_add(m, r, cur, (uint32_t)-1);
    uint64_t best = UINT64_MAX, ties = 0;
    for (uint64_t c = 0; c < n; c++) {
        uint64_t k = mc_conflicts(m, r, c);
        if (k < best) {
            best = k;
            ties = 1;
        } else if (k == best) {
            ties++;
        }
    }
    uint64_t pick = rng_below(&m->rng, ties), c = 0;
    for (;; c++)
        if (mc_conflicts(m, r, c) == best && pick-- == 0)
            break;
    m->cols[r] = (uint32_t)c;
    mc_add(m, r, c, 1);
    if (best)
        mc_list_attackers(m, r, best);
}

/* One run from a fresh start: 0 solved, NQ_SOLVE_FAILED out of budget, or cancelled. */
static int mc_attempt(mc_t *m, uint64_t budget, const nq_solve_opts_t *opts, uint64_t *steps)
{
    mc_init(m);
    *steps += m->n;
    for (uint64_t used = 0; used < budget; used++) {
        if (m->ntodo == 0 && mc_scan(m) == 0)
            return NQ_SOLVE_OK;
        uint64_t i = rng_below(&m->rng, m->ntodo), r = m->todo[i];
        if (mc_conflicts(m, r, m->cols[r]) <= 3) {      /* no longer attacked: prune */
            m->listed[r] = 0;
            m->todo[i] = m->todo[--m->ntodo];
            continue;
        }
        mc_move(m, r);
        ++*steps;
        if ((*steps & 255) == 0) {
            if (opts->progress)
                atomic_store_explicit(opts->progress, *steps, memory_order_relaxed);
            if (opts->cancel && atomic_load_explicit(opts->cancel, memory_order_relaxed))
                return NQ_SOLVE_CANCELLED;
        }
    }
    return NQ_SOLVE_FAILED;
}

static uint64_t mc_memory(uint64_t n)
{
    return (n + 4 * n + n) * sizeof(uint32_t) + n;   /* colc, dg + ad (2n each), todo, listed */
}

static int mc_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts, uint32_t *cols,
                  nq_solve_stats_t *stats, char *err, size_t errlen)
{
    mc_t m = { .n = n, .cols = cols };
    uint32_t *mem = malloc(mc_memory(n));
    if (!mem) {
        snprintf(err, errlen, "out of memory for the conflict counters");
        return NQ_SOLVE_ERROR;
    }
    m.colc = mem;
    m.dg = mem + n;
    m.ad = m.dg + 2 * n;
    m.todo = m.ad + 2 * n;
    m.listed = (uint8_t *)(m.todo + n);
    /* Moves per attempt: small boards need restarts, not long walks on a plateau. */
    uint64_t budget = 100 + 4 * n < 100000 ? 100 + 4 * n : 100000;
    uint64_t max_steps = opts->max_steps ? opts->max_steps : 1000000 + 20 * n;
    uint64_t steps = 0, attempt = 0;
    int rc = NQ_SOLVE_FAILED;
    for (; rc == NQ_SOLVE_FAILED && steps < max_steps; attempt++) {
        rng_init(&m.rng, seed, attempt);
        m.ntodo = 0;
        memset(m.listed, 0, n);
        rc = mc_attempt(&m, budget, opts, &steps);
    }
    free(mem);
    stats->steps = steps;
    stats->restarts = attempt ? attempt - 1 : 0;
    return rc;
}

const nq_solver_t nq_solver_minconflicts = {
    "minconflicts", "classic min-conflicts: move a random attacked queen to its least-conflicted column",
    4, 1000000, mc_memory, mc_run, NULL,
};
