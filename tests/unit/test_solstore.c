/*
 * Where solve solutions are stored: the content hash (BLAKE2b-256 over n and the columns,
 * checked against vectors computed apart from nq), its spread, the file a large solution gets,
 * and solutions that a DB from before BLAKE2b holds under the older hash.
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

/* The older hash, pinned to what nq computed before BLAKE2b: rows of older DBs are found by it. */
T_TEST(test_v1_hash_is_unchanged)
{
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 }, other[8] = { 0, 4, 7, 5, 2, 6, 1, 2 };
    char h[NQ_SOL_HASH_V1_HEX + 1];
    solstore_hash_v1(q8, 8, h);
    T_EQ_STR(h, "c6d899ef8b34852abe7d7a028505d526");
    solstore_hash_v1(other, 8, h);
    T_EQ_STR(h, "13adec5ace69cd77f179e23d643bd1b6");
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
    /* Four solve jobs, as rows (their shards do not matter here). */
    T_CHECK(sqlite3_exec(store_db(e->st), "INSERT INTO jobs (id, kind, n, state, shards_total, created_at,"
                         " restarts, algo) VALUES (1, 'solve', 8, 'running', 1, 1.0, 1, 'qs4'),"
                         " (2, 'solve', 8, 'running', 1, 1.0, 1, 'qs4'), (3, 'solve', 8, 'running', 1, 1.0, 1, 'qs4'),"
                         " (4, 'solve', 8, 'running', 1, 1.0, 1, 'qs4')",
                         NULL, NULL, NULL) == SQLITE_OK);
}

static void env_close(t_env_t *e)
{
    store_destroy(&e->st);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    T_CHECK(system(cmd) == 0);
}

/* A row as solstore_save's caller stores it (inline cols, or a path), at found_at `at`. */
static void add_row(t_env_t *e, const char *hash, uint64_t n, const uint32_t *cols, const char *path,
                    double at)
{
    sqlite3_stmt *q = NULL;
    static const char sql[] = "INSERT INTO solutions (job, hash, shard, seed, n, cols, path, found_at)"
                              " VALUES (1, ?, 0, 0, ?, ?, ?, ?)";
    T_CHECK(sqlite3_prepare_v2(store_db(e->st), sql, -1, &q, NULL) == SQLITE_OK);
    uint8_t *packed = cols ? solstore_pack(cols, n) : NULL;
    sqlite3_bind_text(q, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)n);
    if (packed)
        sqlite3_bind_blob(q, 3, packed, (int)(4 * n), SQLITE_STATIC);
    if (path)
        sqlite3_bind_text(q, 4, path, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 5, at);
    T_CHECK(sqlite3_step(q) == SQLITE_DONE);
    sqlite3_finalize(q);
    free(packed);
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
    T_CHECK(solstore_save(store_db(e.st), e.db, 1, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    T_EQ_STR(path, "");
    uint64_t n = NQ_SOL_INLINE_MAX + 1;
    uint32_t *big = identity(n);
    T_CHECK(solstore_save(store_db(e.st), e.db, 1, big, n, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    solstore_hash(big, n, want);
    T_EQ_STR(hash, want);
    snprintf(name, sizeof name, "s.db.solutions/%s.nqsol", want);
    T_EQ_STR(path, name);
    T_CHECK(exists(&e, path));
    free(big);
    env_close(&e);
}

/*
 * A DB from before BLAKE2b: job 1 holds an 8-queens solution inline and a large one in a file,
 * both under the v1 hash. Found again, each keeps its v1 hash and path (the row's key then
 * counts it once, and no second file is written); both still read back. A different
 * permutation stored under the same v1 hash (a collision, forged in the DB) is not taken for
 * it, and a row's path other than the one nq gave it is not followed.
 */
T_TEST(test_save_keeps_a_solution_stored_under_its_v1_hash)
{
    t_env_t e;
    env_open(&e, "v1");
    char hash[80], path[512], why[256], v1[NQ_SOL_HASH_V1_HEX + 1], name[600], full[1200];
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 }, q8b[8] = { 0, 5, 7, 2, 6, 3, 1, 4 };
    solstore_hash_v1(q8, 8, v1);
    add_row(&e, v1, 8, q8, NULL, 1.0);
    uint64_t n = NQ_SOL_INLINE_MAX + 1;
    uint32_t *big = identity(n);
    solstore_hash_v1(big, n, v1);
    solstore_file_name(e.db, v1, name, sizeof name);
    T_CHECK(mkdir(strcat(strcpy(full, e.dir), "/s.db.solutions"), 0755) == 0);
    snprintf(full, sizeof full, "%s/%s", e.dir, name);
    T_CHECK(solfile_write(full, big, n, 1, why, sizeof why) == 0);
    add_row(&e, v1, n, NULL, name, 2.0);

    T_CHECK(solstore_save(store_db(e.st), e.db, 1, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "c6d899ef8b34852abe7d7a028505d526");
    T_EQ_STR(path, "");
    T_CHECK(solstore_save(store_db(e.st), e.db, 1, big, n, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, v1);
    T_EQ_STR(path, name);
    char fresh[NQ_SOL_HASH_HEX + 1], fresh_name[600];
    solstore_hash(big, n, fresh);
    solstore_file_name(e.db, fresh, fresh_name, sizeof fresh_name);
    T_CHECK(!exists(&e, fresh_name));
    /* Another job holds neither: there they are new. */
    T_CHECK(solstore_save(store_db(e.st), e.db, 2, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_U64(strlen(hash), NQ_SOL_HASH_HEX);

    /* Both old rows read back by their stored path, as before. */
    uint32_t *got = NULL;
    uint64_t gn = 0;
    T_CHECK(query_solution(store_db(e.st), e.db, 1, 0, &got, &gn, why, sizeof why) == 0);
    T_CHECK(gn == 8 && got && memcmp(got, q8, sizeof q8) == 0);
    free(got);
    got = NULL;
    T_CHECK(query_solution(store_db(e.st), e.db, 1, 1, &got, &gn, why, sizeof why) == 0);
    T_CHECK(gn == n && got && memcmp(got, big, n * sizeof *big) == 0);
    free(got);

    /* Forged: q8b's row under q8's v1 hash in job 3, and job 4's file row pointing elsewhere. */
    solstore_hash_v1(q8, 8, v1);
    T_CHECK(sqlite3_exec(store_db(e.st), "UPDATE solutions SET job = 3 WHERE n = 8", NULL, NULL, NULL)
            == SQLITE_OK);
    T_CHECK(sqlite3_exec(store_db(e.st), "UPDATE solutions SET job = 4, path = '../s.db.solutions/x.nqsol'"
                         " WHERE n > 8", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    T_CHECK(sqlite3_prepare_v2(store_db(e.st), "UPDATE solutions SET cols = ? WHERE job = 3", -1, &q, NULL)
            == SQLITE_OK);
    uint8_t *packed = solstore_pack(q8b, 8);
    sqlite3_bind_blob(q, 1, packed, 32, SQLITE_STATIC);
    T_CHECK(sqlite3_step(q) == SQLITE_DONE);
    sqlite3_finalize(q);
    free(packed);
    T_CHECK(solstore_save(store_db(e.st), e.db, 3, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    T_CHECK(solstore_save(store_db(e.st), e.db, 4, big, n, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, fresh);
    T_EQ_STR(path, fresh_name);
    T_CHECK(exists(&e, fresh_name));
    free(big);
    env_close(&e);
}

/* No DB (db NULL): the new hash, nothing looked up. */
T_TEST(test_save_without_a_db_uses_the_new_hash)
{
    char hash[80], path[512], why[256];
    static const uint32_t q8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    T_CHECK(solstore_save(NULL, "/nonexistent/s.db", 1, q8, 8, hash, sizeof hash, path, sizeof path,
                          why, sizeof why) == 0);
    T_EQ_STR(hash, "722156b513569b672ec30f44ac55cacad00861ea730b39e3af46aaa0a5548fa8");
    T_EQ_STR(path, "");
}

T_RUN_ALL()
