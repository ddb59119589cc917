/* The fast solvers (qs4, minconflicts, construct) and solve_run's guards. */
#include "t.h"
#include "solve.h"
#include "verify.h"

/* Solves and verifies; returns the solution (caller frees) or NULL after reporting. */
static uint32_t *solve_ok(const nq_solver_t *s, uint64_t n, uint64_t seed)
{
    uint32_t *cols = NULL;
    nq_solve_stats_t st;
    char err[256] = "";
    int rc = solve_run(s, n, seed, NULL, &cols, &st, err, sizeof err);
    if (rc != NQ_SOLVE_OK) {
        fprintf(stderr, "  %s n=%" PRIu64 " seed=%" PRIu64 ": rc=%d %s\n", s->name, n, seed, rc, err);
        T_CHECK(rc == NQ_SOLVE_OK);
        return NULL;
    }
    nq_clash_t clash;
    int v = verify_perm(cols, n, &clash);
    if (v != 0)
        fprintf(stderr, "  %s n=%" PRIu64 " seed=%" PRIu64 ": rows %" PRIu64 ",%" PRIu64 " %s\n",
                s->name, n, seed, clash.row_a, clash.row_b, clash.what);
    T_CHECK(v == 0);
    return cols;
}

static void check_range(const nq_solver_t *s, uint64_t lo, uint64_t hi, int seeds)
{
    for (uint64_t n = lo; n <= hi; n++)
        for (int seed = 1; seed <= seeds; seed++)
            free(solve_ok(s, n, (uint64_t)seed));
}

T_TEST(test_qs4_small) { check_range(&nq_solver_qs4, 4, 60, 5); }

T_TEST(test_qs4_large)
{
    free(solve_ok(&nq_solver_qs4, 1000, 7));
    free(solve_ok(&nq_solver_qs4, 100000, 7));
    free(solve_ok(&nq_solver_qs4, 1000000, 7));
}

static int same(const uint32_t *a, const uint32_t *b, uint64_t n)
{
    return a && b && memcmp(a, b, n * sizeof *a) == 0;
}

T_TEST(test_qs4_deterministic)
{
    uint64_t n = 5000;
    uint32_t *a = solve_ok(&nq_solver_qs4, n, 42), *b = solve_ok(&nq_solver_qs4, n, 42);
    uint32_t *c = solve_ok(&nq_solver_qs4, n, 43);
    T_CHECK(same(a, b, n));
    T_CHECK(!same(a, c, n));
    free(a); free(b); free(c);
    /* small N goes through restarts: still the same answer for the same seed */
    a = solve_ok(&nq_solver_qs4, 8, 3);
    b = solve_ok(&nq_solver_qs4, 8, 3);
    T_CHECK(same(a, b, 8));
    free(a); free(b);
}

/* FNV-1a over the columns: a short fingerprint of a whole solution. */
static uint64_t cols_hash(const uint32_t *cols, uint64_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint64_t i = 0; cols && i < n; i++) {
        h ^= cols[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/*
 * "Same seed, same solution, on any machine" across releases too: a job re-run
 * after an upgrade must find the board it stored. The fingerprints were taken
 * from qs4 as of 748a2db, before pass 1's stream moved out of the hot loop into
 * chunks; 1048676 crosses a chunk boundary (2^20) within the look-ahead, and
 * 17 goes through restarts. Above 2^24 queens the stream is tiled (since the
 * change that made 1e9 queens take 40 s instead of 98); 2^24 + 1 has a last
 * tile of one column, so nearly every column of that tile is cycle-walked;
 * 20971520 is five whole tiles, so nothing is.
 */
T_TEST(test_qs4_same_boards_as_before)
{
    static const struct { uint64_t n, seed, hash; } pin[] = {
        { 17, 2, 0x5f918e8d66c31351ULL },
        { 1000, 7, 0xb82d765da1fe11a9ULL },
        { 1048676, 7, 0x880fbe5c2bbd40a3ULL },
        { 3000017, 7, 0x9636f2d8be0d3aadULL },
        { 16777216, 7, 0xa3e060a24675bdd7ULL },
        { 16777217, 7, 0x379ba47dac61795dULL },
        { 20971520, 7, 0x3ccea6c7fb98f9c3ULL },
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
        uint32_t *cols = solve_ok(&nq_solver_qs4, pin[i].n, pin[i].seed);
        uint64_t h = cols_hash(cols, pin[i].n);
        if (h != pin[i].hash)
            fprintf(stderr, "  n=%" PRIu64 " seed=%" PRIu64 ": hash %016" PRIx64 "\n", pin[i].n,
                    pin[i].seed, h);
        T_CHECK(h == pin[i].hash);
        free(cols);
    }
}

T_TEST(test_minconflicts)
{
    check_range(&nq_solver_minconflicts, 4, 60, 2);
    free(solve_ok(&nq_solver_minconflicts, 10000, 1));
    free(solve_ok(&nq_solver_minconflicts, 100000, 1));
    uint32_t *a = solve_ok(&nq_solver_minconflicts, 500, 9), *b = solve_ok(&nq_solver_minconflicts, 500, 9);
    T_CHECK(same(a, b, 500));
    free(a); free(b);
}

T_TEST(test_construct)
{
    check_range(&nq_solver_construct, 4, 1000, 1);
    free(solve_ok(&nq_solver_construct, 1000000, 1));
    uint32_t *a = solve_ok(&nq_solver_construct, 1234, 1), *b = solve_ok(&nq_solver_construct, 1234, 99);
    T_CHECK(same(a, b, 1234));   /* one answer per N: the seed is ignored */
    free(a); free(b);
}

T_TEST(test_bad_n_refused)
{
    const nq_solver_t *all[] = { &nq_solver_qs4, &nq_solver_minconflicts, &nq_solver_construct };
    for (int i = 0; i < 3; i++) {
        uint64_t bad[] = { 0, 3, all[i]->n_max + 1 };
        for (int k = 0; k < 3; k++) {
            uint32_t *cols = (uint32_t *)1;
            nq_solve_stats_t st;
            char err[256] = "";
            T_CHECK(solve_run(all[i], bad[k], 1, NULL, &cols, &st, err, sizeof err) == NQ_SOLVE_ERROR);
            T_CHECK(cols == NULL);
            T_CHECK(strstr(err, "<= N <=") != NULL);   /* the message names the range */
        }
    }
}

static int fake_ran;
static uint64_t huge_memory(uint64_t n) { return n * 1000000000ULL; }
static int fake_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *o, uint32_t *cols,
                    nq_solve_stats_t *st, char *err, size_t errlen)
{
    (void)n; (void)seed; (void)o; (void)cols; (void)st; (void)err; (void)errlen;
    fake_ran = 1;
    return NQ_SOLVE_OK;
}

T_TEST(test_too_big_for_memory)
{
    /* A method claiming 1 GB per queen: N=100000 needs 100 TB, refused before allocating. */
    nq_solver_t fat = { "fat", "test", 4, 1000000000ULL, huge_memory, fake_run, NULL };
    uint32_t *cols = NULL;
    nq_solve_stats_t st;
    char err[256] = "";
    T_CHECK(solve_run(&fat, 100000, 1, NULL, &cols, &st, err, sizeof err) == NQ_SOLVE_ERROR);
    T_CHECK(!fake_ran);
    T_CHECK(strstr(err, "needs") != NULL && strstr(err, "GB") != NULL);
}

/* a method's check() is asked before anything else, by solver_check and by solve_run. */
static uint64_t small_memory(uint64_t n)
{
    (void)n;
    return 0;
}

static int odd_only(uint64_t n, char *err, size_t errlen)
{
    if (n % 2)
        return 0;
    snprintf(err, errlen, "odd-only takes odd N (got N=%llu)", (unsigned long long)n);
    return -1;
}

T_TEST(test_check_before_run)
{
    nq_solver_t odd = { "odd-only", "test", 4, 1000, small_memory, fake_run, odd_only };
    uint32_t *cols = NULL;
    nq_solve_stats_t st;
    char err[256] = "";
    fake_ran = 0;
    T_EQ_U64(solver_check(&odd, 8, err, sizeof err), (uint64_t)-1);
    T_EQ_STR(err, "odd-only takes odd N (got N=8)");
    err[0] = 0;
    T_CHECK(solve_run(&odd, 8, 1, NULL, &cols, &st, err, sizeof err) == NQ_SOLVE_ERROR);
    T_EQ_STR(err, "odd-only takes odd N (got N=8)");
    T_CHECK(!fake_ran && cols == NULL);
    T_EQ_U64(solver_check(&odd, 9, err, sizeof err), 0);
    T_EQ_U64(solver_check(&odd, 1001, err, sizeof err), (uint64_t)-1);   /* the range comes first */
    T_CHECK(strstr(err, "odd-only solves 4 <= N <= 1000 (got N=1001)") != NULL);
    T_EQ_U64(solver_check(&nq_solver_qs4, 8, err, sizeof err), 0);      /* no check(): the range */
}

T_TEST(test_qs4_cancel_and_limit)
{
    atomic_int cancel = 1;
    _Atomic uint64_t progress = 0;
    nq_solve_opts_t o = { .cancel = &cancel, .progress = &progress };
    uint32_t *cols = NULL;
    nq_solve_stats_t st;
    char err[256];
    T_CHECK(solve_run(&nq_solver_qs4, 3000000, 1, &o, &cols, &st, err, sizeof err) == NQ_SOLVE_CANCELLED);
    T_CHECK(cols == NULL);
    T_CHECK(atomic_load(&progress) > 0);
    nq_solve_opts_t lim = { .max_steps = 1000 };
    T_CHECK(solve_run(&nq_solver_qs4, 3000000, 1, &lim, &cols, &st, err, sizeof err) == NQ_SOLVE_FAILED);
    T_CHECK(cols == NULL);
}

T_TEST(test_registry)
{
    T_CHECK(nq_solvers[0] == &nq_solver_qs4);
    T_CHECK(solver_find("qs4") == &nq_solver_qs4);
    T_CHECK(solver_find("minconflicts") == &nq_solver_minconflicts);
    T_CHECK(solver_find("construct") == &nq_solver_construct);
    T_CHECK(solver_find("nope") == NULL);
}

T_RUN_ALL()
