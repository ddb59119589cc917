/*
 * `construct`: the explicit solution for every N >= 4, in O(N) with no search
 * (Hoffman, Loessi and Moore 1969; the form given by Bernhardsson 1991).
 * With 1-based numbers: the even numbers 2,4,..., then the odd ones 1,3,...,
 * except two residues of N mod 6, where a few are moved:
 *   N mod 6 == 2:  odds become 3,1,7,9,...,5  (1 and 3 swapped, 5 to the end)
 *   N mod 6 == 3:  evens become 4,6,...,2 and odds 5,7,...,1,3
 * The list gives, left to right, the row of the queen in each column; a
 * solution's transpose is a solution too, so it serves directly as cols[].
 * The seed is ignored: there is one answer per N.
 */
#include "solve.h"
#include "errf.h"

#include <stdio.h>

static uint64_t construct_memory(uint64_t n)
{
    (void)n;
    return 0;
}

/* Appends evens (first = 2) or odds (first = 1) up to n, skipping the moved ones. */
static uint64_t put_run(uint32_t *cols, uint64_t k, uint64_t first, uint64_t n,
                        const uint64_t *skip, int nskip)
{
    for (uint64_t v = first; v <= n; v += 2) {
        int skipped = 0;
        for (int i = 0; i < nskip; i++)
            skipped |= (v == skip[i]);
        if (!skipped)
            cols[k++] = (uint32_t)(v - 1);
    }
    return k;
}

static int construct_check(uint64_t n, char *err, size_t errlen)
{
    if (n >= 4 && n <= UINT32_MAX)
        return 0;
    return nq_errf(err, errlen, "construct needs 4 <= N <= %u (got N=%llu)", UINT32_MAX, (unsigned long long)n);
}

static int construct_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts, uint32_t *cols,
                         nq_solve_stats_t *stats, char *err, size_t errlen)
{
    (void)seed;
    (void)opts;
    if (construct_check(n, err, errlen) != 0)
        return NQ_SOLVE_ERROR;
    uint64_t k = 0, m = n % 6;
    if (m == 2) {
        static const uint64_t skip[] = { 1, 3, 5 };
        k = put_run(cols, k, 2, n, NULL, 0);
        cols[k++] = 2;                      /* 3 */
        cols[k++] = 0;                      /* 1 */
        k = put_run(cols, k, 1, n, skip, 3);
        cols[k++] = 4;                      /* 5 */
    } else if (m == 3) {
        static const uint64_t skip_even[] = { 2 }, skip_odd[] = { 1, 3 };
        k = put_run(cols, k, 2, n, skip_even, 1);
        cols[k++] = 1;                      /* 2 */
        k = put_run(cols, k, 1, n, skip_odd, 2);
        cols[k++] = 0;                      /* 1 */
        cols[k++] = 2;                      /* 3 */
    } else {
        k = put_run(cols, k, 2, n, NULL, 0);
        k = put_run(cols, k, 1, n, NULL, 0);
    }
    stats->steps = k;
    return NQ_SOLVE_OK;
}

const nq_solver_t nq_solver_construct = {
    "construct", "explicit closed-form solution by N mod 6 (Hoffman-Loessi-Moore), O(N), seed ignored",
    4, NQ_SOLVE_MAX_N, construct_memory, construct_run, construct_check,
};
