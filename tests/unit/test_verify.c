/* verify_perm's clashes, board drawing, and the solution file formats (solfile). */
#include "t.h"
#include "board.h"
#include "solfile.h"
#include "solve.h"
#include "verify.h"

#include <unistd.h>

static int clash_is(const uint32_t *cols, uint64_t n, uint64_t a, uint64_t b, const char *what)
{
    nq_clash_t c = { 0, 0, NULL };
    int v = verify_perm(cols, n, &c);
    if (v != 1 || c.row_a != a || c.row_b != b || strcmp(c.what, what) != 0) {
        fprintf(stderr, "  got v=%d rows %" PRIu64 ",%" PRIu64 " %s; want %" PRIu64 ",%" PRIu64 " %s\n",
                v, c.row_a, c.row_b, c.what ? c.what : "-", a, b, what);
        return 0;
    }
    return 1;
}

T_TEST(test_accepts_known)
{
    static const uint32_t q4[] = { 1, 3, 0, 2 }, q8[] = { 0, 4, 7, 5, 2, 6, 1, 3 }, q1[] = { 0 };
    nq_clash_t c;
    T_CHECK(verify_perm(q4, 4, &c) == 0);
    T_CHECK(verify_perm(q8, 8, &c) == 0);
    T_CHECK(verify_perm(q1, 1, &c) == 0);
}

T_TEST(test_rejects)
{
    static const uint32_t col[] = { 0, 4, 7, 5, 2, 6, 1, 4 };   /* rows 1 and 7 both in column 4 */
    static const uint32_t sd[] = { 0, 2, 4, 1, 3, 5 };          /* r-c: 0,-1,-2,2,1,0 -> rows 0,5 diagonal */
    static const uint32_t sa[] = { 3, 1, 4, 0, 2, 5 };          /* r+c: 3,2,6,3 -> rows 0,3 anti-diagonal */
    static const uint32_t rng[] = { 1, 3, 4, 2 };
    T_CHECK(clash_is(col, 8, 1, 7, "column"));
    T_CHECK(clash_is(sd, 6, 0, 5, "diagonal"));
    T_CHECK(clash_is(sa, 6, 0, 3, "anti-diagonal"));
    T_CHECK(clash_is(rng, 4, 2, 2, "range"));
}

/*
 * Clashes whose line index sits on either side of a 64-bit word boundary of the
 * bitmaps (63|64, 127|128, ...): an off-by-one in the word or bit split would
 * miss them or blame the neighbouring line. Rows 0 and 1 share the line; the
 * other rows hold the remaining columns and are never reached.
 */
T_TEST(test_rejects_at_word_boundaries)
{
    enum { N = 260 };
    static const uint64_t idx[] = { 63, 64, 127, 128, 191, 192, 255, 256 };
    uint32_t cols[N];
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        uint64_t x = idx[i];
        for (uint32_t r = 0; r < N; r++)
            cols[r] = r;
        if (x < N - 1) {          /* column x in both rows */
            cols[0] = cols[1] = (uint32_t)x;
            T_CHECK(clash_is(cols, N, 0, 1, "column"));
        }
        if (x <= N - 1) {         /* diagonal r-c+N-1 = x: columns N-1-x, N-x */
            cols[0] = (uint32_t)(N - 1 - x);
            cols[1] = (uint32_t)(N - x);
            T_CHECK(clash_is(cols, N, 0, 1, "diagonal"));
        }
        if (x >= 1 && x < N) {    /* anti-diagonal r+c = x: columns x, x-1 */
            cols[0] = (uint32_t)x;
            cols[1] = (uint32_t)(x - 1);
            T_CHECK(clash_is(cols, N, 0, 1, "anti-diagonal"));
        }
    }
}

T_TEST(test_board)
{
    static const uint32_t q4[] = { 1, 3, 0, 2 };
    char path[300];
    snprintf(path, sizeof path, "%s/board.txt", t_tmpdir());
    FILE *f = fopen(path, "w+");
    T_CHECK(f != NULL);
    if (!f) return;
    T_CHECK(board_print(f, q4, 4) == 0);
    rewind(f);
    char buf[64] = "";
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = 0;
    T_EQ_STR(buf, ".Q..\n...Q\nQ...\n..Q.\n");
    uint32_t big[65] = { 0 };
    T_CHECK(board_print(f, big, 65) == -1);
    fclose(f);
    unlink(path);
}

static char *tmp_path(const char *name)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", t_tmpdir(), name);
    return path;
}

static void roundtrip(uint64_t n, int binary)
{
    uint32_t *cols = NULL, *back = NULL;
    nq_solve_stats_t st;
    char err[256] = "";
    T_CHECK(solve_run(&nq_solver_qs4, n, 5, NULL, &cols, &st, err, sizeof err) == NQ_SOLVE_OK);
    const char *p = tmp_path(binary ? "rt.bin" : "rt.txt");
    T_CHECK(solfile_write(p, cols, n, binary, err, sizeof err) == SOLFILE_OK);
    uint64_t m = 0;
    int rc = solfile_read(p, &back, &m, err, sizeof err);
    if (rc) fprintf(stderr, "  read: %s\n", err);
    T_CHECK(rc == SOLFILE_OK);
    T_EQ_U64(m, n);
    T_CHECK(back && cols && memcmp(cols, back, n * sizeof *cols) == 0);
    free(cols);
    free(back);
    unlink(p);
}

T_TEST(test_roundtrip)
{
    uint64_t sizes[] = { 4, 5, 8, 9, 17, 1000, 1000000 };
    for (int i = 0; i < 7; i++) {
        roundtrip(sizes[i], 0);
        roundtrip(sizes[i], 1);
    }
    /* n = 1 and powers of two: the bit width edge cases */
    static const uint32_t one[] = { 0 }, two[] = { 1, 0 };
    char err[256];
    uint32_t *back;
    uint64_t m;
    T_CHECK(solfile_write(tmp_path("one.bin"), one, 1, 1, err, sizeof err) == 0);
    T_CHECK(solfile_read(tmp_path("one.bin"), &back, &m, err, sizeof err) == 0 && m == 1 && back[0] == 0);
    free(back);
    T_CHECK(solfile_write(tmp_path("two.bin"), two, 2, 1, err, sizeof err) == 0);
    T_CHECK(solfile_read(tmp_path("two.bin"), &back, &m, err, sizeof err) == 0 && m == 2 && back[0] == 1);
    free(back);
}

/* Writes raw bytes, reads them back: must fail with SOLFILE_EFORMAT and a message with `want`. */
static int refused(const void *bytes, size_t len, const char *want)
{
    const char *p = tmp_path("bad.sol");
    FILE *f = fopen(p, "wb");
    if (!f) return 0;
    fwrite(bytes, 1, len, f);
    fclose(f);
    uint32_t *cols = (uint32_t *)1;
    uint64_t n = 77;
    char err[256] = "";
    int rc = solfile_read(p, &cols, &n, err, sizeof err);
    unlink(p);
    if (rc != SOLFILE_EFORMAT || !strstr(err, want)) {
        fprintf(stderr, "  rc=%d err='%s' (wanted '%s')\n", rc, err, want);
        return 0;
    }
    return cols == (uint32_t *)1 && n == 77;   /* nothing handed back */
}

T_TEST(test_text_refused)
{
    T_CHECK(refused("", 0, "empty file"));
    T_CHECK(refused("1\n3\n0\n2\n\n", 9, "line 5: empty line"));
    T_CHECK(refused("1\nabc\n", 6, "line 2: unexpected character"));
    T_CHECK(refused("1\n-3\n", 5, "line 2"));
    T_CHECK(refused("1\n3 \n0\n2\n", 9, "line 2"));
    T_CHECK(refused("1\n3\n0\n4\n", 8, "line 4: column 4 out of range for N=4"));
    T_CHECK(refused("99999999999\n", 12, "too large"));
    T_CHECK(refused("\x7f" "ELF\x01\x02", 6, "line 1: unexpected byte 0x7f"));
}

/* A valid binary file for the 8-queens solution, to corrupt. */
static size_t good_bin(uint8_t *buf, size_t cap)
{
    static const uint32_t q8[] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    char err[256];
    const char *p = tmp_path("good.bin");
    if (solfile_write(p, q8, 8, 1, err, sizeof err) != 0) return 0;
    FILE *f = fopen(p, "rb");
    size_t k = f ? fread(buf, 1, cap, f) : 0;
    if (f) fclose(f);
    unlink(p);
    return k;
}

T_TEST(test_bin_refused)
{
    uint8_t b[128], c[128];
    size_t len = good_bin(b, sizeof b);
    T_EQ_U64(len, 16 + 3 + 8);   /* 8 columns x 3 bits = 3 bytes */
    T_CHECK(refused(b, len - 1, "truncated"));
    T_CHECK(refused(b, 20, "truncated"));
    T_CHECK(refused(b, 12, "truncated"));
    memcpy(c, b, len); c[len] = 0;
    T_CHECK(refused(c, len + 1, "wrong length"));
    memcpy(c, b, len); c[5] = '2';
    T_CHECK(refused(c, len, "bad magic"));
    memcpy(c, b, len); c[17] ^= 0x10;
    T_CHECK(refused(c, len, "bad checksum"));
    memcpy(c, b, len); c[len - 1] ^= 0x01;
    T_CHECK(refused(c, len, "bad checksum"));
    memcpy(c, b, len); c[8] = 9;                  /* header says N=9: size no longer matches */
    T_CHECK(refused(c, len, "N=9"));
    memcpy(c, b, len); memset(c + 8, 0, 8);        /* N=0 */
    T_CHECK(refused(c, len, "out of range"));
    memcpy(c, b, len); memset(c + 8, 0xff, 8);     /* N=2^64-1: must not try to allocate it */
    T_CHECK(refused(c, len, "out of range"));
}

/* Columns >= n and non-zero padding behind a valid checksum are still refused. */
T_TEST(test_bin_values_refused)
{
    static const uint32_t five[] = { 0, 1, 2, 3, 4 };   /* written for n=5: 3 bits, values ok */
    char err[256];
    uint8_t b[128];
    const char *p = tmp_path("five.bin");
    T_CHECK(solfile_write(p, five, 5, 1, err, sizeof err) == 0);
    FILE *f = fopen(p, "rb");
    size_t len = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    unlink(p);
    T_EQ_U64(len, 16 + 2 + 8);
    b[16] |= 0x07;   /* row 0 := 7 (>= 5) */
    solfile_hash_t h;
    solfile_hash_init(&h);
    solfile_hash_update(&h, b, len - 8);
    uint64_t sum = solfile_hash_final(&h);
    for (int i = 0; i < 8; i++) b[len - 8 + i] = (uint8_t)(sum >> (8 * i));
    T_CHECK(refused(b, len, "row 0: column 7 out of range"));
}

T_TEST(test_io_errors)
{
    uint32_t *cols;
    uint64_t n;
    char err[256] = "";
    static const uint32_t q4[] = { 1, 3, 0, 2 };
    T_CHECK(solfile_read("/nonexistent/dir/x.sol", &cols, &n, err, sizeof err) == SOLFILE_EIO);
    T_CHECK(strlen(err) > 0);
    T_CHECK(solfile_read(t_tmpdir(), &cols, &n, err, sizeof err) == SOLFILE_EIO);
    T_CHECK(solfile_write("/nonexistent/dir/x.sol", q4, 4, 0, err, sizeof err) == SOLFILE_EIO);
    T_CHECK(strstr(err, "/nonexistent/dir/x.sol") != NULL);
    T_CHECK(solfile_write(tmp_path("zero.sol"), q4, 0, 0, err, sizeof err) != SOLFILE_OK);
}

T_RUN_ALL()
