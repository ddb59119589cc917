/* The registry of solve methods and the common entry point that guards them. */
#include "solve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const nq_solver_t *const nq_solvers[] = {
    &nq_solver_qs4,
    &nq_solver_minconflicts,
    &nq_solver_construct,
    &nq_solver_hillclimb,
    &nq_solver_sweep,
    &nq_solver_qs1,
    &nq_solver_qs4classic,
    &nq_solver_divide,
    NULL,
};

const nq_solver_t *solver_find(const char *name)
{
    for (int i = 0; nq_solvers[i]; i++)
        if (strcmp(nq_solvers[i]->name, name) == 0)
            return nq_solvers[i];
    return NULL;
}

/* PLACEHOLDER body: the solve helper replaces it with range and memory checks. */
int solve_run(const nq_solver_t *s, uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
              uint32_t **cols_out, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    uint32_t *cols = malloc(n * sizeof *cols);
    if (!cols) { snprintf(err, errlen, "out of memory"); return NQ_SOLVE_ERROR; }
    memset(stats, 0, sizeof *stats);
    int rc = s->run(n, seed, opts, cols, stats, err, errlen);
    if (rc != NQ_SOLVE_OK) { free(cols); return rc; }
    *cols_out = cols;
    return rc;
}
