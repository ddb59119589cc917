/*
 * The tiny test harness (in the spirit of beanstalkd's ct): a test file defines
 * functions `static void test_xxx(void)` and lists them in T_MAIN(...).
 * A failed check prints file:line and the expression, marks the test failed and
 * carries on with the next test; the process exits non-zero if any check failed.
 */
#ifndef NQ_T_H
#define NQ_T_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failed_checks;
static int t_current_failed;

#define T_CHECK(cond) do { \
    if (!(cond)) { \
        fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        t_failed_checks++; t_current_failed = 1; \
    } } while (0)

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

typedef struct { const char *name; void (*fn)(void); } t_case_t;
#define T_CASE(f) { #f, f }

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

#define T_MAIN(...) \
    int main(int argc, char **argv) { \
        t_case_t cases[] = { __VA_ARGS__ }; \
        int ncases = (int)(sizeof cases / sizeof cases[0]), nfail = 0, nrun = 0; \
        for (int i = 0; i < ncases; i++) { \
            if (argc > 1 && strstr(cases[i].name, argv[1]) == NULL) continue; \
            t_current_failed = 0; nrun++; \
            fprintf(stderr, "%s ...\n", cases[i].name); \
            cases[i].fn(); \
            if (t_current_failed) nfail++; \
        } \
        fprintf(stderr, "%d passed, %d failed\n", nrun - nfail, nfail); \
        return nfail ? 1 : 0; \
    }

#endif
