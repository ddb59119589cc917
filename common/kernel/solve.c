/* The registry of solve methods and the common entry point that guards them. */
#include "solve.h"
#include "errf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Physical RAM in bytes (0 if unknown). */
static uint64_t phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return (pages > 0 && page > 0) ? (uint64_t)pages * (uint64_t)page : 0;
}

/*
 * cols for large N is aligned to 2 MB and marked for transparent huge pages:
 * the solvers touch it at every row, and 4 KB pages cost ~1 page fault per
 * 1000 queens plus TLB misses. free() releases it like any malloc'd block.
 */
static uint32_t *cols_alloc(uint64_t n)
{
    size_t bytes = (size_t)n * sizeof(uint32_t);
    if (bytes < (8u << 20))
        return malloc(bytes ? bytes : 1);
    void *p = NULL;
    if (posix_memalign(&p, 2u << 20, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes & ~(size_t)((2u << 20) - 1), MADV_HUGEPAGE);
#endif
    return p;
}

/* Refuses what cannot fit: memory(n) + cols must leave 1/8 of RAM (at least 256 MB) free. */
static int check_memory(const nq_solver_t *s, uint64_t n, char *err, size_t errlen)
{
    uint64_t need = s->memory(n);
    uint64_t cols = n * sizeof(uint32_t);
    need = (need > UINT64_MAX - cols) ? UINT64_MAX : need + cols;
    uint64_t ram = phys_bytes();
    if (ram == 0)
        return 0;
    uint64_t spare = ram / 8 > (256ULL << 20) ? ram / 8 : (256ULL << 20);
    uint64_t usable = ram > spare ? ram - spare : 0;
    if (need > usable) {
        return nq_errf(err, errlen, "%s for N=%llu needs %.2f GB of memory; this machine has %.2f GB "
                       "(at most %.2f GB may be used)", s->name, (unsigned long long)n,
                       need / 1e9, ram / 1e9, usable / 1e9);
    }
    return 0;
}

int solver_check(const nq_solver_t *s, uint64_t n, char *err, size_t errlen)
{
    if (n < s->n_min || n > s->n_max) {
        return nq_errf(err, errlen, "%s solves %llu <= N <= %llu (got N=%llu)", s->name,
                       (unsigned long long)s->n_min, (unsigned long long)s->n_max,
                       (unsigned long long)n);
    }
    return s->check ? s->check(n, err, errlen) : 0;
}

int solve_run(const nq_solver_t *s, uint64_t n, uint64_t seed, const nq_solve_opts_t *opts,
              uint32_t **cols_out, nq_solve_stats_t *stats, char *err, size_t errlen)
{
    memset(stats, 0, sizeof *stats);
    *cols_out = NULL;
    if (solver_check(s, n, err, errlen) != 0)
        return NQ_SOLVE_ERROR;
    if (check_memory(s, n, err, errlen) != 0)
        return NQ_SOLVE_ERROR;
    uint32_t *cols = cols_alloc(n);
    if (!cols) {
        snprintf(err, errlen, "out of memory for %llu columns", (unsigned long long)n);
        return NQ_SOLVE_ERROR;
    }
    nq_solve_opts_t none = { 0 };
    int rc = s->run(n, seed, opts ? opts : &none, cols, stats, err, errlen);
    if (rc != NQ_SOLVE_OK) {
        free(cols);
        return rc;
    }
    *cols_out = cols;
    return rc;
}
