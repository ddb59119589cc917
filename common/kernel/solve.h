/*
 * Local-search and constructive solvers for one N-Queens solution.
 *
 * Every method has the same interface and is deterministic for (n, seed):
 * the same seed gives the same solution, on every machine (use the project's
 * own PRNG in rng.h, never rand()). A solution is a permutation: cols[r] is
 * the 0-based column of the queen in row r.
 *
 * Each method lives in a file of its own (solve_<name>.c) and exports one
 * nq_solver_t; solve.c lists them all.
 */
#ifndef NQ_SOLVE_H
#define NQ_SOLVE_H

#include "nq.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>


typedef struct {
    uint64_t max_steps;            /* 0 = the method's default limit */
    const atomic_int *cancel;      /* may be NULL; when it becomes non-zero, stop soon and return NQ_SOLVE_CANCELLED */
    _Atomic uint64_t *progress;    /* may be NULL; store the step count now and then (cheaply) */
} nq_solve_opts_t;

typedef struct {
    uint64_t steps;                /* the method's unit of work (moves, swaps, sweeps...) */
    uint64_t restarts;             /* internal restarts, where the method has them */
} nq_solve_stats_t;

enum {
    NQ_SOLVE_OK = 0,               /* cols holds a solution (the caller still verifies it) */
    NQ_SOLVE_FAILED = 1,           /* no solution for this seed within the limits (a real outcome) */
    NQ_SOLVE_CANCELLED = 2,
    NQ_SOLVE_ERROR = -1,           /* bad n, or memory: err says why */
};

typedef struct {
    const char *name;              /* the --algo name */
    const char *summary;           /* one line */
    uint64_t n_min, n_max;         /* what the method is meant for; outside: refused */
    /* Bytes the method needs beyond the caller's cols array (for refusing N that will not fit). */
    uint64_t (*memory)(uint64_t n);
    /* n within [n_min, n_max]; cols has room for n entries. err gets a reason on NQ_SOLVE_ERROR. */
    int (*run)(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
               uint32_t *cols, nq_solve_stats_t *stats, char *err, size_t errlen);
    /*
     * Whether the method can solve n at all (n within [n_min, n_max]), independent of the
     * seed and of the machine: 0, or -1 with the very reason run() gives when it refuses n
     * (run() calls it). NULL: every n of the range. The broker asks it at submit, so a job
     * the method refuses is never created.
     */
    int (*check)(uint64_t n, char *err, size_t errlen);
} nq_solver_t;

/* NULL-terminated list of every method, default (qs4) first. */
extern const nq_solver_t *const nq_solvers[];
const nq_solver_t *solver_find(const char *name);

/*
 * Whether s can solve n, on any machine: n within [n_min, n_max] and s->check.
 * 0, or -1 with the method's reason in err. (Memory is checked by solve_run
 * only: it depends on the machine that runs the method.)
 */
int solver_check(const nq_solver_t *s, uint64_t n, char *err, size_t errlen);

/*
 * The common entry point: checks n with solver_check and against this
 * machine's memory (physical RAM), allocates cols, runs, and returns the
 * method's code. On NQ_SOLVE_OK *cols_out is a malloc'd permutation the caller frees.
 * err always gets a reason when the result is NQ_SOLVE_ERROR.
 */
int solve_run(const nq_solver_t *s, uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
              uint32_t **cols_out, nq_solve_stats_t *stats, char *err, size_t errlen);

/* The methods. */
extern const nq_solver_t nq_solver_qs4;          /* solve_qs4.c: fast QS4-style, default */
extern const nq_solver_t nq_solver_minconflicts; /* solve_minconflicts.c */
extern const nq_solver_t nq_solver_construct;    /* solve_construct.c: closed form, any n >= 4 */
extern const nq_solver_t nq_solver_hillclimb;    /* solve_hillclimb.c (seed 003) */
extern const nq_solver_t nq_solver_sweep;        /* solve_sweep.c: minconflicts-sweep (seed 000) */
extern const nq_solver_t nq_solver_qs1;          /* solve_qs1.c (seed 004) */
extern const nq_solver_t nq_solver_qs4classic;   /* solve_qs4classic.c (seed 004) */
extern const nq_solver_t nq_solver_divide;       /* solve_divide.c: Abramson-Yung (seed 001) */

#endif
