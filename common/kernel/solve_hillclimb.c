/*
 * `hillclimb` (seed 003; Russell & Norvig's steepest-ascent hill climbing with
 * sideways moves). State: one queen per COLUMN, in any row (rows may repeat,
 * so the state is not a permutation). Objective h: the number of attacking
 * pairs, counted over rows and both diagonals (sum of k*(k-1)/2 per line).
 * Neighbours: one queen moved within its column, n*(n-1) of them.
 *
 * Each step scans every neighbour and moves to the best one (ties at random).
 * When the best is no better than the current state but equally good, the
 * step is a random "sideways" move among the equal neighbours; at most
 * HC_SIDEWAYS of those in a row (the AIMA experiment's cap), so plateaus do
 * not loop forever. A state with no better and no equal neighbour, or a
 * sideways run that hits the cap, is where the method gives up: the run
 * FAILS for this seed (no restarts; restarts are the caller's: other seeds).
 *
 * Line counters make the value of any neighbour an O(1) lookup, so a step
 * costs O(n^2) rather than the seed's O(n^4) (it rebuilt the board and
 * recounted attacks for each of the n^2 neighbours).
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>

#define HC_SIDEWAYS 100        /* consecutive sideways moves allowed */
#define HC_N_MAX 1000          /* a step is O(n^2) and a run takes ~n steps */

typedef struct {
    uint64_t n;
    uint32_t *row_of;          /* row_of[c]: the row of column c's queen */
    uint32_t *rowc, *dg, *ad;  /* queens per row, diagonal r-c+n-1, anti-diagonal r+c */
    uint64_t h;                /* attacking pairs */
    nq_rng_t rng;
} hc_t;

/* Queens that a queen standing on (r, c) would attack, not counting one already there. */
static inline uint64_t hc_seen(const hc_t *s, uint64_t r, uint64_t c)
{
    return (uint64_t)s->rowc[r] + s->dg[r + s->n - 1 - c] + s->ad[r + c];
}

static void hc_put(hc_t *s, uint64_t r, uint64_t c)
{
    s->h += hc_seen(s, r, c);
    s->rowc[r]++;
    s->dg[r + s->n - 1 - c]++;
    s->ad[r + c]++;
    s->row_of[c] = (uint32_t)r;
}

static void hc_lift(hc_t *s, uint64_t c)
{
    uint64_t r = s->row_of[c];
    s->rowc[r]--;
    s->dg[r + s->n - 1 - c]--;
    s->ad[r + c]--;
    s->h -= hc_seen(s, r, c);
}

/*
 * Finds the best neighbour: *best_delta is the change in h, and (*bc, *br) a
 * uniformly random one of the neighbours with that change (reservoir sampling).
 */
static void hc_best(hc_t *s, int64_t *best_delta, uint64_t *bc, uint64_t *br)
{
    uint64_t n = s->n, ties = 0;
    int64_t best = INT64_MAX;
    for (uint64_t c = 0; c < n; c++) {
        uint64_t r0 = s->row_of[c];
        /* hc_seen counts the queen itself on its row and both diagonals: 3 too many. */
        int64_t here = (int64_t)hc_seen(s, r0, c) - 3;
        for (uint64_t r = 0; r < n; r++) {
            if (r == r0)
                continue;
            int64_t d = (int64_t)hc_seen(s, r, c) - here;
            if (d > best)
                continue;
            if (d < best) {
                best = d;
                ties = 0;
            }
            if (rng_below(&s->rng, ++ties) == 0) {
                *bc = c;
                *br = r;
            }
        }
    }
    *best_delta = best;
}

static void hc_random_start(hc_t *s)
{
    for (uint64_t c = 0; c < s->n; c++)
        hc_put(s, rng_below(&s->rng, s->n), c);
}

/* Climbs until h == 0 (OK), a dead end (FAILED), the step limit or a cancel. */
static int hc_climb(hc_t *s, const nq_solve_opts_t *opts, uint64_t *steps)
{
    uint64_t limit = opts->max_steps ? opts->max_steps : UINT64_MAX;
    unsigned sideways = 0;
    while (s->h > 0) {
        if (*steps >= limit)
            return NQ_SOLVE_FAILED;
        if (opts->cancel && atomic_load_explicit(opts->cancel, memory_order_relaxed))
            return NQ_SOLVE_CANCELLED;
        int64_t delta;
        uint64_t c = 0, r = 0;
        hc_best(s, &delta, &c, &r);
        if (delta > 0)
            return NQ_SOLVE_FAILED;                 /* strict local optimum */
        if (delta == 0 && ++sideways > HC_SIDEWAYS)
            return NQ_SOLVE_FAILED;                 /* plateau too wide */
        if (delta < 0)
            sideways = 0;
        hc_lift(s, c);
        hc_put(s, r, c);
        ++*steps;
        if (opts->progress)
            atomic_store_explicit(opts->progress, *steps, memory_order_relaxed);
    }
    return NQ_SOLVE_OK;
}

static uint64_t hc_memory(uint64_t n)
{
    return n * sizeof(uint32_t) * 2 + 2 * (2 * n) * sizeof(uint32_t);
}

static int hc_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
                  uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    nq_solve_opts_t none = { 0 };
    if (!opts)
        opts = &none;
    hc_t s = { .n = n };
    s.row_of = malloc(n * sizeof *s.row_of);
    s.rowc = calloc(n, sizeof *s.rowc);
    s.dg = calloc(2 * n, sizeof *s.dg);
    s.ad = calloc(2 * n, sizeof *s.ad);
    int rc;
    if (!s.row_of || !s.rowc || !s.dg || !s.ad) {
        snprintf(err, errlen, "hillclimb: out of memory for N=%llu", (unsigned long long)n);
        rc = NQ_SOLVE_ERROR;
        goto done;
    }
    rng_init(&s.rng, seed, 0x4843);                 /* stream "HC" */
    hc_random_start(&s);
    stats->steps = 0;
    stats->restarts = 0;
    rc = hc_climb(&s, opts, &stats->steps);
    if (rc == NQ_SOLVE_OK)                          /* h == 0: rows are distinct, so invert */
        for (uint64_t c = 0; c < n; c++)
            cols[s.row_of[c]] = (uint32_t)c;
done:
    free(s.row_of);
    free(s.rowc);
    free(s.dg);
    free(s.ad);
    return rc;
}

const nq_solver_t nq_solver_hillclimb = {
    "hillclimb",
    "steepest-ascent hill climbing, <=100 sideways moves, fails at local optima (seed 003)",
    4, HC_N_MAX, hc_memory, hc_run, NULL,
};
