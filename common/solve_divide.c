/* PLACEHOLDER: replaced by the real implementation. */
#include "solve.h"
#include <stdio.h>
static uint64_t mem(uint64_t n) { (void)n; return 0; }
static int run(uint64_t n, uint64_t seed, const nq_solve_opts_t *o, uint32_t *cols, nq_solve_stats_t *st, char *err, size_t errlen)
{ (void)n; (void)seed; (void)o; (void)cols; (void)st; snprintf(err, errlen, "not built yet"); return NQ_SOLVE_ERROR; }
const nq_solver_t nq_solver_divide = { "divide", "placeholder", 4, 4, mem, run };
