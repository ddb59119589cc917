/*
 * Where solve solutions are stored: the content hash (BLAKE2b-256 over n and the columns,
 * checked against vectors computed apart from nq), its spread, and the file a large solution gets.
 */
#include "t.h"

#include "query.h"
#include "solfile.h"
#include "solstore.h"
#include "store.h"

#include <sys/stat.h>
#include <unistd.h>

/*
 * The vectors were computed with Python's hashlib, over the bytes this layout gives:
 *   b = struct.pack("<Q", n) + struct.pack("<%dI" % n, *cols)
 *   hashlib.blake2b(b, digest_size=32).hexdigest()
 * For the 8-queens solution below, b is 0800000000000000 00000000 04000000 07000000 05000000
 * 02000000 06000000 01000000 03000000 (hex).
 */
T_TEST(test_hash_is_blake2b_256_of_n_and_columns_le)
{
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    char h[NQ_SOL_HASH_HEX + 1];
    solstore_hash(q8, 8, h);
    T_EQ_STR(h, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    /* Longer than the packing chunk, and not a multiple of it: cols[i] = 7i mod 5003. */
    enum { N = 5003 };
    static uint32_t big[N];
    for (uint32_t i = 0; i < N; i++)
        big[i] = (7 * i) % N;
    solstore_hash(big, N, h);
    T_EQ_STR(h, "3eb9d03f34b4df1bd27cda936217ddba111abc8fcfec660e3970a1f10f665159");
}

static int bits_apart(const char *a, const char *b)
{
    int d = 0;
    for (size_t i = 0; a[i] && b[i]; i++) {
        unsigned x = (unsigned)(a[i] <= '9' ? a[i] - '0' : a[i] - 'a' + 10);
        unsigned y = (unsigned)(b[i] <= '9' ? b[i] - '0' : b[i] - 'a' + 10);
        d += __builtin_popcount(x ^ y);
    }
    return d;
}

/* One column changed anywhere (first, middle, last, by one or by a lot) changes about half of
   the 256 bits: 128 on average, and never fewer than 90 here (a 5-sigma floor; the inputs
   are fixed, so this is exact, not a chance). */
T_TEST(test_one_column_change_changes_many_bits)
{
    enum { N = 1000 };
    static uint32_t cols[N];
    char a[NQ_SOL_HASH_HEX + 1], b[NQ_SOL_HASH_HEX + 1];
    for (uint32_t i = 0; i < N; i++)
        cols[i] = (3 * i) % N;
    solstore_hash(cols, N, a);
    int total = 0, min = NQ_SOL_HASH_BYTES * 8, tries = 0;
    for (uint32_t i = 0; i < N; i += 37) {
        uint32_t was = cols[i];
        for (uint32_t delta = 1; delta <= 512; delta *= 8) {
            cols[i] = was ^ delta;
            solstore_hash(cols, N, b);
            int d = bits_apart(a, b);
            total += d;
            min = d < min ? d : min;
            tries++;
        }
        cols[i] = was;
    }
    double mean = (double)total / tries;
    fprintf(stderr, "  %d one-column changes: %.1f of 256 bits differ on average, %d at least\n",
            tries, mean, min);
    T_CHECK(min >= 90);
    T_CHECK(mean > 120 && mean < 136);
    /* n is hashed too: the same columns as a prefix of a longer board differ. */
    solstore_hash(cols, N - 1, b);
    T_CHECK(bits_apart(a, b) >= 90);
}

/* ---- saving, with a DB ---- */

typedef struct {
    char dir[300], db[320];
    nq_store_t *st;
} t_env_t;

static void env_open(t_env_t *e, const char *name)
{
    char err[256];
    snprintf(e->dir, sizeof e->dir, "%.200s/solstore_%s_%d", t_tmpdir(), name, (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", e->dir, e->dir);
    T_CHECK(system(cmd) == 0);
    snprintf(e->db, sizeof e->db, "%s/s.db", e->dir);
    e->st = store_open(e->db, 0, err, sizeof err);
    T_CHECK(e->st != NULL);
}

static void env_close(t_env_t *e)
{
    store_destroy(&e->st);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    T_CHECK(system(cmd) == 0);
}

static int exists(const t_env_t *e, const char *rel)
{
    char full[1200];
    snprintf(full, sizeof full, "%s/%s", e->dir, rel);
    return access(full, F_OK) == 0;
}

static uint32_t *identity(uint64_t n)
{
    uint32_t *c = malloc(n * sizeof *c);
    for (uint64_t i = 0; c && i < n; i++)
        c[i] = (uint32_t)(n - 1 - i);
    return c;
}

/* A new solution gets the new hash: inline when small, in s.db.solutions/<hash>.nqsol when large. */
T_TEST(test_save_names_a_new_solution_by_blake2b)
{
    t_env_t e;
    env_open(&e, "new");
    char hash[80], path[512], why[256], want[NQ_SOL_HASH_HEX + 1], name[600];
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    T_CHECK(solstore_save(e.db, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    T_EQ_STR(path, "");
    uint64_t n = NQ_SOL_INLINE_MAX + 1;
    uint32_t *big = identity(n);
    T_CHECK(solstore_save(e.db, big, n, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    solstore_hash(big, n, want);
    T_EQ_STR(hash, want);
    snprintf(name, sizeof name, "s.db.solutions/%s.nqsol", want);
    T_EQ_STR(path, name);
    T_CHECK(exists(&e, path));
    free(big);
    env_close(&e);
}

/* A small solution needs no folder: nothing is written. */
T_TEST(test_save_small_writes_nothing)
{
    char hash[80], path[512], why[256];
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    T_CHECK(solstore_save("/nonexistent/s.db", q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    T_EQ_STR(path, "");
}

T_RUN_ALL()
