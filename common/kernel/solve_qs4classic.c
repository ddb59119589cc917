/*
 * `qs4-classic` (seed 004; Sosic & Gu, "Queen Search 4"), as the seed gives it.
 *
 * 1. Initial permutation, row by row. For the first m = n - c rows, a queen
 *    takes a random still-free column, redrawn until its two diagonals are
 *    free; the last c rows take random free columns, collisions allowed.
 *    c ("queens that may conflict") comes from the seed's table (qs4c_c).
 * 2. Repair: over and over, for each queen of the set that may conflict
 *    (at first the c last rows) that is attacked, pick a random partner row
 *    and swap the two columns if that lowers the diagonal collisions
 *    (surplus queens over all diagonals).
 * 3. No solution within this attempt's budget: start again (the seed's
 *    "re-initialise"), with the next random stream of the seed.
 *
 * Three points the seed leaves implicit, each needed to terminate:
 * - A row whose conflict-free draws keep failing (QS4C_DRAWS_PER_FREE times
 *   its number of free columns: it may have no free square at all) ends the
 *   conflict-free phase early; that row and the rest join the repaired set.
 * - A swap that lowers the collisions may still leave the random partner
 *   attacked; the partner then joins the set (it now "may conflict").
 *   Without that, collisions drift out of the c rows where the repair never
 *   looks, and most attempts stall (measured: 746 restarts at n = 1e4).
 *   Every overloaded diagonal keeps an attacked member of the set, so an
 *   empty set means a solution. The set only grows by accepted swaps, each
 *   of which lowers the collisions, so it stays below 3c entries.
 * - An attempt ends after QS4C_TESTS_PER_N * n + QS4C_TESTS_MIN swap tests.
 *   Small n often stalls in a local minimum where no swap helps, so a short
 *   budget and a restart beat waiting: over 100 seeds at n = 100, a budget of
 *   4n + 1e5 took 19 ms/run, 8n + 100 took 0.4 ms (n = 1000: equal).
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>

#define QS4C_N_MAX 100000000ULL  /* 16 bytes/queen beyond cols: 1.6 GB at the top */
#define QS4C_DRAWS_PER_FREE 4
#define QS4C_TESTS_PER_N 8
#define QS4C_TESTS_MIN 100
#define QS4C_MAX_ATTEMPTS 100

typedef struct {
    uint64_t n, m;               /* m: rows placed conflict-free; rows m..n-1 get repaired */
    uint32_t *cols;
    uint32_t *dg, *ad;           /* queens per diagonal r-c+n-1 and anti-diagonal r+c */
    uint64_t coll;               /* sum over diagonals of max(queens - 1, 0) */
    uint32_t *todo, *next;       /* the set that may conflict: this pass, the next */
    uint64_t ntodo, cap;
    uint64_t steps, limit;
    nq_rng_t rng;
    const nq_solve_opts_t *opts;
} qs4c_t;

/* The seed's Table 1: how many queens may conflict after the initial placement. */
static uint64_t qs4c_c(uint64_t n)
{
    if (n <= 10)
        return n > 8 ? 8 : n;
    if (n < 100)
        return n;
    if (n < 1000)
        return 30;
    if (n < 10000)
        return 50;
    if (n < 100000)
        return 80;
    return 100;
}

static inline void qs4c_put(qs4c_t *q, uint64_t r, uint64_t c)
{
    if (q->dg[r + q->n - 1 - c]++ > 0)
        q->coll++;
    if (q->ad[r + c]++ > 0)
        q->coll++;
    q->cols[r] = (uint32_t)c;
}

static inline void qs4c_lift(qs4c_t *q, uint64_t r)
{
    uint64_t c = q->cols[r];
    if (--q->dg[r + q->n - 1 - c] > 0)
        q->coll--;
    if (--q->ad[r + c] > 0)
        q->coll--;
}

static inline int qs4c_attacked(const qs4c_t *q, uint64_t r)
{
    uint64_t c = q->cols[r];
    return q->dg[r + q->n - 1 - c] > 1 || q->ad[r + c] > 1;
}

static inline int qs4c_cancelled(const qs4c_t *q)
{
    return q->opts->cancel && atomic_load_explicit(q->opts->cancel, memory_order_relaxed);
}

static inline void qs4c_swap_free(qs4c_t *q, uint64_t a, uint64_t b)
{
    uint32_t t = q->cols[a];
    q->cols[a] = q->cols[b];
    q->cols[b] = t;
}

/* Step 1. cols[r..n) always holds the free columns. */
static void qs4c_place(qs4c_t *q)
{
    uint64_t n = q->n, r = 0, m = n - qs4c_c(n);
    for (uint64_t i = 0; i < n; i++)
        q->cols[i] = (uint32_t)i;
    for (uint64_t i = 0; i < 2 * n; i++)
        q->dg[i] = q->ad[i] = 0;
    q->coll = 0;
    for (; r < m; r++) {
        uint64_t draws = QS4C_DRAWS_PER_FREE * (n - r), j = 0;
        for (; draws > 0; draws--) {
            j = r + rng_below(&q->rng, n - r);
            uint64_t c = q->cols[j];
            if (q->dg[r + n - 1 - c] == 0 && q->ad[r + c] == 0)
                break;
        }
        if (draws == 0)
            break;                      /* no free square found: repair from here on */
        qs4c_swap_free(q, r, j);
        qs4c_put(q, r, q->cols[r]);
    }
    q->m = r;
    for (; r < n; r++) {
        qs4c_swap_free(q, r, r + rng_below(&q->rng, n - r));
        qs4c_put(q, r, q->cols[r]);
    }
}

/* Swaps the columns of rows i and j; undoes it unless the collisions drop. 1 if kept. */
static int qs4c_try_swap(qs4c_t *q, uint64_t i, uint64_t j)
{
    uint64_t ci = q->cols[i], cj = q->cols[j], before = q->coll;
    qs4c_lift(q, i);
    qs4c_lift(q, j);
    qs4c_put(q, i, cj);
    qs4c_put(q, j, ci);
    if (q->coll < before)
        return 1;
    qs4c_lift(q, i);
    qs4c_lift(q, j);
    qs4c_put(q, i, ci);
    qs4c_put(q, j, cj);
    return 0;
}

/* The set starts as rows m..n-1; room for it plus one entry per possible accepted swap. */
static int qs4c_set_init(qs4c_t *q)
{
    uint64_t need = (q->n - q->m) + q->coll + 1;
    if (need > q->cap) {
        free(q->todo);
        free(q->next);
        q->todo = malloc(need * sizeof *q->todo);
        q->next = malloc(need * sizeof *q->next);
        q->cap = q->todo && q->next ? need : 0;
        if (!q->cap)
            return -1;
    }
    q->ntodo = 0;
    for (uint64_t r = q->m; r < q->n; r++)
        q->todo[q->ntodo++] = (uint32_t)r;
    return 0;
}

/* One pass over the set; returns the swap tests made. */
static uint64_t qs4c_pass(qs4c_t *q)
{
    uint64_t n = q->n, nnext = 0, tests = 0;
    for (uint64_t t = 0; t < q->ntodo && q->coll > 0; t++) {
        uint64_t i = q->todo[t];
        if (!qs4c_attacked(q, i))
            continue;
        uint64_t j = rng_below(&q->rng, n - 1);
        j += (j >= i);                  /* a partner other than i itself */
        tests++;
        if (qs4c_try_swap(q, i, j) && qs4c_attacked(q, j))
            q->next[nnext++] = (uint32_t)j;
        if (qs4c_attacked(q, i))
            q->next[nnext++] = (uint32_t)i;
    }
    uint32_t *t = q->todo;
    q->todo = q->next;
    q->next = t;
    q->ntodo = nnext;
    return tests;
}

/* Step 2. OK, FAILED (this attempt is over budget), CANCELLED, or ERROR (memory). */
static int qs4c_repair(qs4c_t *q)
{
    uint64_t budget = QS4C_TESTS_PER_N * q->n + QS4C_TESTS_MIN;
    if (qs4c_set_init(q) != 0)
        return NQ_SOLVE_ERROR;
    while (q->coll > 0) {
        uint64_t tests = qs4c_pass(q);
        q->steps += tests;
        if (q->opts->progress)
            atomic_store_explicit(q->opts->progress, q->steps, memory_order_relaxed);
        if (qs4c_cancelled(q))
            return NQ_SOLVE_CANCELLED;
        if (q->coll == 0)
            break;
        if (tests >= budget || q->steps >= q->limit || q->ntodo == 0)
            return NQ_SOLVE_FAILED;     /* ntodo == 0 with collisions cannot happen; see top */
        budget -= tests;
    }
    return NQ_SOLVE_OK;
}

static uint64_t qs4c_memory(uint64_t n)
{
    /* the set: 2 arrays of up to 3c entries (more only if the placement gave up early) */
    return 2 * (2 * n) * sizeof(uint32_t) + 2 * 3 * qs4c_c(n) * sizeof(uint32_t);
}

static int qs4c_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
                    uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    nq_solve_opts_t none = { 0 };
    qs4c_t q = { .n = n, .cols = cols, .opts = opts ? opts : &none };
    q.dg = malloc(2 * n * sizeof *q.dg);
    q.ad = malloc(2 * n * sizeof *q.ad);
    if (!q.dg || !q.ad) {
        free(q.dg);
        free(q.ad);
        snprintf(err, errlen, "qs4-classic: out of memory for N=%llu", (unsigned long long)n);
        return NQ_SOLVE_ERROR;
    }
    q.limit = q.opts->max_steps ? q.opts->max_steps
            : QS4C_MAX_ATTEMPTS * (QS4C_TESTS_PER_N * n + QS4C_TESTS_MIN);
    int rc = NQ_SOLVE_FAILED;
    uint64_t attempt = 0;
    while (rc == NQ_SOLVE_FAILED && q.steps < q.limit) {
        if (qs4c_cancelled(&q)) {
            rc = NQ_SOLVE_CANCELLED;
            break;
        }
        rng_init(&q.rng, seed, 0x51344300 + attempt++);  /* stream "Q4C" + attempt */
        qs4c_place(&q);
        rc = qs4c_repair(&q);
    }
    if (rc == NQ_SOLVE_ERROR)
        snprintf(err, errlen, "qs4-classic: out of memory for N=%llu", (unsigned long long)n);
    stats->steps = q.steps;
    stats->restarts = attempt ? attempt - 1 : 0;
    free(q.todo);
    free(q.next);
    free(q.dg);
    free(q.ad);
    return rc;
}

const nq_solver_t nq_solver_qs4classic = {
    "qs4-classic", "Sosic-Gu QS4 as the seed gives it: table of c by n, swap repair (seed 004)",
    4, QS4C_N_MAX, qs4c_memory, qs4c_run, NULL,
};
