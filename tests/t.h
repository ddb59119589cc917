/*
 * The tiny test harness (in the spirit of beanstalkd's ct): a test file defines its
 * cases with `T_TEST(test_xxx) { ... }` and ends with T_RUN_ALL().
 * A failed check prints file:line and the expression, marks the test failed and
 * carries on with the next test; the process exits non-zero if any check failed.
 */
#ifndef NQ_T_H
#define NQ_T_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int t_failed_checks;
static int t_current_failed;

#define T_CHECK(cond) do { \
    if (!(cond)) { \
        fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        t_failed_checks++; t_current_failed = 1; \
    } } while (0)

/* For what another thread makes true in its own time (an engine's failure flag after the last
   callback): polls every millisecond for up to `seconds`, then checks. A bound, not a timing:
   it is sized for a loaded machine and a sanitizer build, and costs nothing when cond holds. */
#define T_WAIT_UNTIL(cond, seconds) do { \
    for (long t_ms_ = 0; !(cond) && t_ms_ < (long)(seconds) * 1000; t_ms_++) \
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL); \
    T_CHECK(cond); } while (0)

#define T_EQ_U64(a, b) do { \
    uint64_t t_a_ = (uint64_t)(a), t_b_ = (uint64_t)(b); \
    if (t_a_ != t_b_) { \
        fprintf(stderr, "  FAIL %s:%d: %s == %s (%" PRIu64 " != %" PRIu64 ")\n", \
                __FILE__, __LINE__, #a, #b, t_a_, t_b_); \
        t_failed_checks++; t_current_failed = 1; \
    } } while (0)

#define T_EQ_STR(a, b) do { \
    const char *t_a_ = (a), *t_b_ = (b); \
    if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0) { \
        fprintf(stderr, "  FAIL %s:%d: %s == %s (\"%s\" != \"%s\")\n", __FILE__, __LINE__, \
                #a, #b, t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)"); \
        t_failed_checks++; t_current_failed = 1; \
    } } while (0)


/* Scratch directory for tests that write files (set by ctest; else /tmp). */
static inline const char *t_tmpdir(void) {
    const char *d = getenv("NQ_TEST_TMP");
    static char buf[256];
    if (!d) d = "/tmp";
    snprintf(buf, sizeof buf, "%s", d);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", buf);
    if (system(cmd) != 0) { /* fall back */ return "/tmp"; }
    return buf;
}

/* Strictly valid UTF-8 (no overlongs, surrogates, > U+10FFFF): what tests check output against. */
static inline int t_valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3
                 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        if (!k || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
            return 0;
        i += k;
    }
    return 1;
}

/*
 * Test cases register themselves: `T_TEST(test_xxx) { ... }` defines the case and a
 * constructor that adds it to the table, so a case cannot be written and forgotten.
 * T_RUN_ALL() runs them in the order they appear in the file, each in a child process of
 * its own: one case that crashes, leaks state or exits cannot hide or fake another's
 * result. NQ_TEST_ONE_PROCESS=1 runs them all in this process (for a debugger). An
 * argument runs only the cases whose name contains it. A case that exits 77 (a skip) makes
 * the whole file a skip when no case failed.
 */
#include <sys/wait.h>
#include <unistd.h>

#ifndef T_MAX_CASES
#define T_MAX_CASES 256                 /* a file with more fails (T_RUN_ALL): raise it */
#endif
typedef struct { const char *name; void (*fn)(void); int line; } t_case_t;
static t_case_t t_cases[T_MAX_CASES];
static int t_ncases, t_written;         /* registered; written (past the table: never run) */

#define T_TEST(f) \
    static void f(void); \
    __attribute__((constructor)) static void t_register_##f(void) { \
        if (t_written++ < T_MAX_CASES) \
            t_cases[t_ncases++] = (t_case_t){ #f, f, __LINE__ }; \
    } \
    static void f(void)

static int t_case_cmp(const void *a, const void *b)
{
    return ((const t_case_t *)a)->line - ((const t_case_t *)b)->line;
}

/* Runs one case; 0 passed, 1 failed, 77 skipped. */
static int t_run_case(const t_case_t *c, int one_process)
{
    fprintf(stderr, "%s ...\n", c->name);
    fflush(stderr);
    if (one_process) {
        t_current_failed = 0;
        c->fn();
        return t_current_failed;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        t_current_failed = 0;
        c->fn();
        exit(t_current_failed);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        fprintf(stderr, "  FAIL %s: cannot run it in a child process\n", c->name);
        return 1;
    }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "  FAIL %s: killed by signal %d\n", c->name, WTERMSIG(st));
        return 1;
    }
    return WEXITSTATUS(st) == 77 ? 77 : WEXITSTATUS(st) != 0;
}

#define T_RUN_ALL() \
    int main(int argc, char **argv) { \
        int one = getenv("NQ_TEST_ONE_PROCESS") != NULL, nfail = 0, nrun = 0, nskip = 0; \
        if (t_written > T_MAX_CASES) { \
            fprintf(stderr, "FAIL: %d test cases for a table of %d: raise T_MAX_CASES\n", t_written, \
                    T_MAX_CASES); \
            return 1; \
        } \
        qsort(t_cases, (size_t)t_ncases, sizeof t_cases[0], t_case_cmp); \
        for (int i = 0; i < t_ncases; i++) { \
            if (argc > 1 && strstr(t_cases[i].name, argv[1]) == NULL) continue; \
            int rc = t_run_case(&t_cases[i], one); \
            nrun++; \
            if (rc == 77) nskip++; else if (rc) nfail++; \
        } \
        fprintf(stderr, "%d passed, %d failed, %d skipped\n", nrun - nfail - nskip, nfail, nskip); \
        return nfail ? 1 : (nskip && nskip == nrun) ? 77 : 0; \
    }

#endif
