/*
 * The SQLite store: the happy paths, and (SQLite-style) the faults: files that
 * are not ours, damaged or from a newer nq must be refused without a byte
 * written; a full disk during a group commit must leave the DB as it was.
 */
#include "t.h"
#include "store.h"
#include "store_spotcheck.h"
#include "migrations.h"
#include "query.h"
#include "rng.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

static char made_paths[32][512];   /* every DB a test made: removed at exit */
static int nmade;

static void db_unlink(const char *path)
{
    const char *sfx[] = { "", "-wal", "-shm", "-journal" };
    for (int i = 0; i < 4; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

static void db_cleanup(void)
{
    for (int i = 0; i < nmade; i++)
        db_unlink(made_paths[i]);
}

static const char *db_path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/store_%s_%d.db", t_tmpdir(), name, (int)getpid());
    db_unlink(buf);
    if (nmade == 0)
        atexit(db_cleanup);
    if (nmade < 32)
        snprintf(made_paths[nmade++], sizeof made_paths[0], "%s", buf);
    return buf;
}

static int side_exists(const char *path, const char *suffix)
{
    char p[600];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Shard specs for count/enumerate: 8 bytes of idx, cost = idx % 7. */
static int count_shard(void *ud, uint64_t idx, nq_shard_spec_t *out)
{
    static uint8_t buf[8];
    (void)ud;
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(idx >> (8 * i));
    out->spec = buf;
    out->spec_len = sizeof buf;
    out->cost = (double)(idx % 7);
    return 0;
}

static int solve_shard(void *ud, uint64_t idx, nq_shard_spec_t *out)
{
    (void)ud;
    out->seed = 1000 + idx;
    snprintf(out->algo, sizeof out->algo, "%s", idx % 2 ? "qs4" : "minconflicts");
    return 0;
}

static nq_job_spec_t job_spec(int kind, uint64_t n)
{
    nq_job_spec_t j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.n = n;
    j.depth = 3;
    j.encoding = NQ_SHARD_ENCODING;
    j.max_attempts = 3;
    j.quorum = 1;
    if (kind == NQ_KIND_SOLVE) {       /* seeds x methods, as submit cuts it (store_check.h) */
        snprintf(j.algo, sizeof j.algo, "minconflicts,qs4");
        j.seed0 = 1000;
        j.depth = 0;
        j.encoding = 0;
    }
    return j;
}

static uint64_t make_job(nq_store_t *s, int kind, uint64_t n, uint64_t nshards, uint32_t max_attempts)
{
    nq_job_spec_t j = job_spec(kind, n);
    j.max_attempts = max_attempts;
    if (kind == NQ_KIND_SOLVE)
        j.restarts = nshards / 2;       /* two methods: nshards is even */
    uint64_t id = 0;
    char err[256] = "";
    int rc = store_job_create(s, &j, nshards, kind == NQ_KIND_SOLVE ? solve_shard : count_shard, NULL,
                              &id, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "  job create: %s\n", err);
    T_CHECK(rc == 0);
    return id;
}

static nq_result_t count_result(uint64_t job, uint64_t shard, uint64_t lease, uint64_t total)
{
    nq_result_t r;
    memset(&r, 0, sizeof r);
    r.job = job;
    r.shard = shard;
    r.lease = lease;
    r.kind = NQ_KIND_COUNT;
    r.status = NQ_RES_OK;
    r.total = total;
    r.unique = total / 8;
    r.nodes = total * 3 + 1;
    r.res13 = (uint8_t)(total % 13);
    r.res15 = (uint8_t)(total % 15);
    r.elapsed_us = 1500000;
    return r;
}

static int64_t sql_int(nq_store_t *s, const char *sql)
{
    sqlite3_stmt *q;
    int64_t v = -12345;
    if (sqlite3_prepare_v2(store_db(s), sql, -1, &q, NULL) != SQLITE_OK)
        return v;
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

static const char *shard_state(nq_store_t *s, uint64_t job, uint64_t idx)
{
    nq_shard_row_t r;
    if (store_shard_get(s, job, idx, &r) != 0)
        return "(none)";
    return store_shard_state_name(r.state);
}

/* A file's bytes and mtime, to prove a refusal wrote nothing. */
typedef struct { char *bytes; size_t len; struct timespec mtime; } snap_t;

static snap_t snap_take(const char *path)
{
    snap_t sn = { NULL, 0, { 0, 0 } };
    struct stat sb;
    FILE *f = fopen(path, "rb");
    if (!f || stat(path, &sb) != 0) {
        if (f)
            fclose(f);
        return sn;
    }
    sn.len = (size_t)sb.st_size;
    sn.mtime = sb.st_mtim;
    sn.bytes = malloc(sn.len + 1);
    if (sn.bytes && fread(sn.bytes, 1, sn.len, f) != sn.len)
        sn.len = (size_t)-1;
    fclose(f);
    return sn;
}

static int snap_same(const snap_t *a, const char *path)
{
    snap_t b = snap_take(path);
    int same = a->bytes && b.bytes && a->len == b.len && memcmp(a->bytes, b.bytes, a->len) == 0 &&
               a->mtime.tv_sec == b.mtime.tv_sec && a->mtime.tv_nsec == b.mtime.tv_nsec;
    free(b.bytes);
    return same;
}

/* Opens must fail with `want` in the message and leave the file exactly as it was. */
static void check_refused(const char *path, int readonly, const char *want)
{
    snap_t before = snap_take(path);
    int had_wal = side_exists(path, "-wal"), had_shm = side_exists(path, "-shm");
    char err[512] = "";
    nq_store_t *s = store_open(path, readonly, err, sizeof err);
    T_CHECK(s == NULL);
    store_destroy(&s);
    if (!strstr(err, want))
        fprintf(stderr, "  message '%s' lacks '%s'\n", err, want);
    T_CHECK(strstr(err, want) != NULL);
    T_CHECK(strstr(err, path) != NULL);        /* says which file */
    fprintf(stderr, "  refused: %s\n", err);
    T_CHECK(snap_same(&before, path));
    T_CHECK(side_exists(path, "-wal") == had_wal);
    T_CHECK(side_exists(path, "-shm") == had_shm);
    T_CHECK(!side_exists(path, "-journal"));
    free(before.bytes);
}

static nq_store_t *open_ok(const char *path, int readonly)
{
    char err[512] = "";
    nq_store_t *s = store_open(path, readonly, err, sizeof err);
    if (!s)
        fprintf(stderr, "  open %s: %s\n", path, err);
    T_CHECK(s != NULL);
    return s;
}

/* ---------------------------------------------------------------- open, migrate */

T_TEST(test_create_migrate_reopen)
{
    const char *path = db_path("create");
    int last = nq_migrations[nq_migrations_count - 1].version;
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    T_CHECK(store_schema_version(s) == last);
    T_EQ_STR(store_path(s), path);
    T_CHECK(sql_int(s, "SELECT count(*) FROM schema_version") == nq_migrations_count);
    T_CHECK(sql_int(s, "PRAGMA application_id") != 0);
    T_CHECK(sql_int(s, "PRAGMA synchronous") == 2);          /* FULL */
    T_CHECK(sql_int(s, "PRAGMA foreign_keys") == 1);
    T_CHECK(sql_int(s, "PRAGMA busy_timeout") >= 1000);
    T_CHECK(sql_int(s, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1);
    for (int i = 0; i < nq_migrations_count; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM schema_version WHERE version = %d AND name = '%s'",
                 nq_migrations[i].version, nq_migrations[i].name);
        T_CHECK(sql_int(s, sql) == 1);
    }
    uint64_t job = make_job(s, NQ_KIND_COUNT, 8, 10, 3);
    store_destroy(&s);
    T_CHECK(s == NULL);

    /* Reopen: nothing re-applied, the data is there. */
    s = open_ok(path, 0);
    if (!s)
        return;
    T_CHECK(sql_int(s, "SELECT count(*) FROM schema_version") == nq_migrations_count);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_EQ_U64(row.shards_total, 10);
    store_destroy(&s);

    /* Read-only: reads work, writes are refused. */
    s = open_ok(path, 1);
    if (!s)
        return;
    T_CHECK(store_schema_version(s) == last);
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_CHECK(store_worker_seen(s, "w1", "host", NULL, 4) == -1);
    T_CHECK(store_shard_lease(s, job, 0, 1, "w1", 0) == -1);
    store_destroy(&s);
}

T_TEST(test_empty_file_is_adopted)
{
    /* A 0-byte file is an empty SQLite database: nothing to lose, the writer creates in it. */
    const char *path = db_path("empty");
    FILE *f = fopen(path, "wb");
    T_CHECK(f != NULL);
    if (f)
        fclose(f);
    check_refused(path, 1, "empty database");
    nq_store_t *s = open_ok(path, 0);
    T_CHECK(s && store_schema_version(s) >= 1);
    store_destroy(&s);
}

/* ---------------------------------------------------------------- refusals */

T_TEST(test_refuse_garbage)
{
    const char *path = db_path("garbage");
    nq_rng_t r;
    rng_init(&r, 42, 7);
    FILE *f = fopen(path, "wb");
    for (int i = 0; f && i < 3 * 4096 / 8; i++) {
        uint64_t v = rng_next(&r);
        fwrite(&v, sizeof v, 1, f);
    }
    if (f)
        fclose(f);
    check_refused(path, 0, "not an nq database (file is not SQLite)");
    check_refused(path, 1, "not an nq database (file is not SQLite)");

    /* Shorter than an SQLite header. */
    path = db_path("short");
    f = fopen(path, "wb");
    if (f) {
        fputs("hello\n", f);
        fclose(f);
    }
    check_refused(path, 0, "not an nq database (file is not SQLite)");

    /* The SQLite magic, but the rest is junk: SQLite itself must say NOTADB. */
    path = db_path("magic");
    f = fopen(path, "wb");
    if (f) {
        fwrite("SQLite format 3", 1, 16, f);
        for (int i = 0; i < 4096; i++)
            fputc(0xA5, f);
        fclose(f);
    }
    check_refused(path, 0, "not an nq database");
}

static void make_foreign_db(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    T_CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    T_CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

T_TEST(test_refuse_other_application)
{
    const char *path = db_path("foreign");
    make_foreign_db(path, "CREATE TABLE foo (x INTEGER); INSERT INTO foo VALUES (1), (2);");
    check_refused(path, 0, "not an nq database");
    check_refused(path, 1, "not an nq database");

    /* Another application that stamped its id, even with no tables yet. */
    path = db_path("foreign_id");
    make_foreign_db(path, "PRAGMA application_id = 1234; CREATE TABLE t (x); DROP TABLE t;");
    check_refused(path, 0, "application_id 0x000004d2");

    /* Another WAL database: SQLite's side files may appear, the main file must not change. */
    path = db_path("foreign_wal");
    make_foreign_db(path, "PRAGMA journal_mode = WAL; CREATE TABLE foo (x);");
    check_refused(path, 0, "not an nq database");
}

T_TEST(test_refuse_newer_schema)
{
    const char *path = db_path("newer");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    T_CHECK(sqlite3_exec(store_db(s), "INSERT INTO schema_version VALUES (999, '999_future.sql', 0)",
                         NULL, NULL, NULL) == SQLITE_OK);
    store_destroy(&s);
    char want[128];
    snprintf(want, sizeof want, "created by a newer nq: schema 999, this build knows %d..%d",
             nq_migrations[0].version, nq_migrations[nq_migrations_count - 1].version);
    check_refused(path, 0, want);
    check_refused(path, 1, want);
}

/* A store of a schema before the first this build creates (a development build's, before any
   release) is refused with its version named, never migrated by guesswork or misread. */
T_TEST(test_refuse_older_schema)
{
    const char *path = db_path("older");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    T_CHECK(sqlite3_exec(store_db(s), "UPDATE schema_version SET version = 3", NULL, NULL, NULL) == SQLITE_OK);
    store_destroy(&s);
    check_refused(path, 0, "schema 3 was made by a development build of nq before any release");
    check_refused(path, 1, "schema 3 was made by a development build of nq before any release");
}

T_TEST(test_refuse_damaged)
{
    const char *path = db_path("damaged");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    make_job(s, NQ_KIND_COUNT, 12, 5000, 3);
    store_destroy(&s);                  /* checkpoints: everything is in the main file */
    T_CHECK(!side_exists(path, "-wal"));
    FILE *f = fopen(path, "r+b");
    T_CHECK(f != NULL);
    if (!f)
        return;
    nq_rng_t r;
    rng_init(&r, 7, 1);
    fseek(f, 4096 * 2, SEEK_SET);
    for (int i = 0; i < 4096 / 8; i++) {
        uint64_t v = rng_next(&r);
        fwrite(&v, sizeof v, 1, f);
    }
    fclose(f);
    check_refused(path, 0, "damaged");
    check_refused(path, 1, "damaged");

    /* Truncated in the middle of its pages. */
    path = db_path("truncated");
    s = open_ok(path, 0);
    if (!s)
        return;
    make_job(s, NQ_KIND_COUNT, 12, 5000, 3);
    store_destroy(&s);
    struct stat sb;
    T_CHECK(stat(path, &sb) == 0 && sb.st_size > 8 * 4096);
    T_CHECK(truncate(path, sb.st_size / 2) == 0);
    check_refused(path, 0, "damaged");
}

T_TEST(test_refuse_missing_readonly)
{
    const char *path = db_path("missing");
    char err[512] = "";
    nq_store_t *s = store_open(path, 1, err, sizeof err);
    T_CHECK(s == NULL);
    T_CHECK(strstr(err, "no such database") != NULL);
    T_CHECK(access(path, F_OK) != 0);             /* not created */
    T_CHECK(!side_exists(path, "-wal") && !side_exists(path, "-shm"));

    /* A directory, and a file in a folder that does not exist. */
    err[0] = 0;
    T_CHECK(store_open(t_tmpdir(), 0, err, sizeof err) == NULL);
    T_CHECK(strstr(err, "not a regular file") != NULL);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.db", t_tmpdir());
    err[0] = 0;
    T_CHECK(store_open(bad, 0, err, sizeof err) == NULL);
    T_CHECK(strstr(err, "cannot create") != NULL);
    err[0] = 0;
    T_CHECK(store_open("", 0, err, sizeof err) == NULL);
    T_CHECK(err[0] != 0);
}

/* ---------------------------------------------------------------- jobs and shards */

typedef struct { uint64_t n, last, bad_order; double cost_sum; } each_ctx_t;

static int each_count(void *ud, const nq_shard_row_t *r)
{
    each_ctx_t *c = ud;
    if (c->n > 0 && r->idx <= c->last)
        c->bad_order++;
    c->last = r->idx;
    c->n++;
    c->cost_sum += r->cost;
    return 0;
}

static uint64_t count_in(nq_store_t *s, uint64_t job, unsigned mask)
{
    each_ctx_t c = { 0, 0, 0, 0 };
    T_CHECK(store_shards_each(s, job, mask, each_count, &c) == 0);
    T_EQ_U64(c.bad_order, 0);
    return c.n;
}

T_TEST(test_job_roundtrip_1e5)
{
    const char *path = db_path("jobs");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    const uint64_t N = 100000;
    nq_job_spec_t spec = job_spec(NQ_KIND_COUNT, 17);
    spec.priority = 5;
    spec.max_attempts = 4;
    uint64_t id = 0;
    char err[256] = "";
    T_CHECK(store_job_create(s, &spec, N, count_shard, NULL, &id, err, sizeof err) == 0);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, id, &row) == 0);
    T_EQ_U64(row.id, id);
    T_CHECK(row.spec.kind == NQ_KIND_COUNT && row.spec.n == 17 && row.spec.priority == 5);
    T_CHECK(row.spec.depth == 3 && row.spec.encoding == NQ_SHARD_ENCODING && row.spec.max_attempts == 4);
    T_CHECK(row.state == NQ_JOB_PENDING && row.created_at > 1e9 && row.started_at == 0);
    T_EQ_U64(row.shards_total, N);
    T_EQ_U64(row.shards_done, 0);
    uint64_t probes[] = { 0, 1, 255, 256, 65537, N - 1 };
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        nq_shard_row_t sh;
        T_CHECK(store_shard_get(s, id, probes[i], &sh) == 0);
        T_EQ_U64(sh.idx, probes[i]);
        T_CHECK(sh.state == NQ_SHARD_PENDING && sh.attempts == 0 && sh.spec_len == 8);
        uint64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (uint64_t)sh.spec[b] << (8 * b);
        T_EQ_U64(v, probes[i]);
        T_CHECK(sh.cost == (double)(probes[i] % 7));
    }
    nq_shard_row_t sh;
    T_CHECK(store_shard_get(s, id, N, &sh) == 1);
    T_EQ_U64(count_in(s, id, 1u << NQ_SHARD_PENDING), N);
    T_EQ_U64(count_in(s, id, (1u << NQ_SHARD_PENDING) | (1u << NQ_SHARD_LEASED)), N);
    T_EQ_U64(count_in(s, id, 1u << NQ_SHARD_DONE), 0);
    T_CHECK(store_shards_each(s, id, 1u << 9, each_count, NULL) == -1);   /* no such state */

    /* Same job found again (depth 0 = any depth); a different N is not. */
    uint64_t found = 0;
    T_CHECK(store_job_find_same(s, &spec, &found) == 0 && found == id);
    spec.depth = 0;
    T_CHECK(store_job_find_same(s, &spec, &found) == 0 && found == id);
    spec.n = 18;
    T_CHECK(store_job_find_same(s, &spec, &found) == 1);

    /* A solve job keeps seeds (u64 bit patterns) and methods. */
    uint64_t sid = make_job(s, NQ_KIND_SOLVE, 1000000, 6, 3);
    T_CHECK(store_shard_get(s, sid, 5, &sh) == 0);
    T_EQ_U64(sh.seed, 1005);
    T_EQ_STR(sh.algo, "qs4");
    T_CHECK(store_job_get(s, sid, &row) == 0);
    T_EQ_STR(row.spec.algo, "minconflicts,qs4");
    store_destroy(&s);
}

static int iter_short(void *ud, uint64_t idx, nq_shard_spec_t *out)
{
    (void)ud;
    return idx < 5 ? count_shard(NULL, idx, out) : 1;
}

static int iter_bigspec(void *ud, uint64_t idx, nq_shard_spec_t *out)
{
    static uint8_t big[NQ_MAX_SPEC + 1];
    (void)ud;
    (void)idx;
    out->spec = big;
    out->spec_len = sizeof big;
    return 0;
}

T_TEST(test_job_create_refused)
{
    const char *path = db_path("jobs_refused");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    nq_job_spec_t spec = job_spec(NQ_KIND_COUNT, 10);
    uint64_t id = 77;
    char err[256] = "";
    spec.kind = 9;
    T_CHECK(store_job_create(s, &spec, 10, count_shard, NULL, &id, err, sizeof err) == -1);
    T_CHECK(strstr(err, "kind") != NULL);
    spec = job_spec(NQ_KIND_COUNT, 10);
    err[0] = 0;
    T_CHECK(store_job_create(s, &spec, 0, count_shard, NULL, &id, err, sizeof err) == -1);
    T_CHECK(strstr(err, "shard") != NULL);
    spec.quorum = 0;
    T_CHECK(store_job_create(s, &spec, 10, count_shard, NULL, &id, err, sizeof err) == -1);
    spec = job_spec(NQ_KIND_COUNT, 10);
    err[0] = 0;
    T_CHECK(store_job_create(s, &spec, 10, iter_short, NULL, &id, err, sizeof err) == -1);
    T_CHECK(strstr(err, "ended at 5 of 10") != NULL);
    err[0] = 0;
    T_CHECK(store_job_create(s, &spec, 10, iter_bigspec, NULL, &id, err, sizeof err) == -1);
    T_CHECK(strstr(err, "descriptor") != NULL);
    T_EQ_U64(id, 77);                   /* untouched on failure */
    T_CHECK(sql_int(s, "SELECT count(*) FROM jobs") == 0);
    T_CHECK(sql_int(s, "SELECT count(*) FROM shards") == 0);

    /* Inside a group, a refused job is undone alone: the group still commits. */
    T_CHECK(store_begin(s) == 0);
    T_CHECK(store_worker_seen(s, "w-group", "h", NULL, 2) == 0);
    T_CHECK(store_job_create(s, &spec, 10, iter_short, NULL, &id, err, sizeof err) == -1);
    uint64_t ok = make_job(s, NQ_KIND_COUNT, 10, 3, 3);
    T_CHECK(store_commit(s, err, sizeof err) == 0);
    T_CHECK(sql_int(s, "SELECT count(*) FROM workers WHERE id = 'w-group'") == 1);
    T_CHECK(sql_int(s, "SELECT count(*) FROM jobs") == 1);
    T_CHECK(sql_int(s, "SELECT count(*) FROM shards") == 3);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, ok, &row) == 0);
    store_destroy(&s);
}

T_TEST(test_shard_transitions)
{
    const char *path = db_path("transitions");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 10, 6, 2);
    nq_shard_row_t sh;
    int failed = -1;

    T_CHECK(store_shard_lease(s, job, 0, 101, "wA", 0) == 0);
    T_CHECK(store_shard_get(s, job, 0, &sh) == 0 && sh.state == NQ_SHARD_LEASED && sh.lease == 101);
    T_CHECK(store_shard_lease(s, job, 99, 102, "wA", 0) == 1);          /* no such shard */
    /* Lost lease, counted: attempts 1 of 2, back to pending. */
    T_CHECK(store_shard_release(s, job, 0, 1, &failed) == 0 && failed == 0);
    T_CHECK(store_shard_get(s, job, 0, &sh) == 0 && sh.state == NQ_SHARD_PENDING && sh.attempts == 1);
    T_CHECK(store_shard_release(s, job, 0, 1, &failed) == 1);         /* not leased: no change */
    T_CHECK(store_shard_get(s, job, 0, &sh) == 0 && sh.attempts == 1);
    /* Released without counting (a clean BYE): attempts unchanged. */
    T_CHECK(store_shard_lease(s, job, 0, 103, "wB", 0) == 0);
    T_CHECK(store_shard_release(s, job, 0, 0, &failed) == 0 && failed == 0);
    T_CHECK(store_shard_get(s, job, 0, &sh) == 0 && sh.attempts == 1 && sh.state == NQ_SHARD_PENDING);
    /* Second counted loss reaches max_attempts = 2: FAILED, and not leasable. */
    T_CHECK(store_shard_lease(s, job, 0, 104, "wB", 0) == 0);
    T_CHECK(store_shard_release(s, job, 0, 1, &failed) == 0 && failed == 1);
    T_EQ_STR(shard_state(s, job, 0), "failed");
    T_CHECK(store_shard_lease(s, job, 0, 105, "wB", 0) == 1);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_failed == 1);

    /* Retry: failed -> pending, attempts 0. */
    T_CHECK(store_shards_retry(s, job) == 0);
    T_CHECK(store_shard_get(s, job, 0, &sh) == 0 && sh.state == NQ_SHARD_PENDING && sh.attempts == 0);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_failed == 0);

    /* Cancel: pending and leased -> cancelled; a done shard stays done. */
    nq_result_t r = count_result(job, 1, 200, 92);
    T_CHECK(store_shard_lease(s, job, 1, 200, "wA", 0) == 0);
    T_CHECK(store_result_put(s, &r, "wA", NULL, NULL) == NQ_PUT_NEW);
    T_CHECK(store_shard_lease(s, job, 2, 201, "wA", 0) == 0);
    T_CHECK(store_shards_cancel_pending(s, job) == 0);
    T_EQ_STR(shard_state(s, job, 1), "done");
    T_EQ_STR(shard_state(s, job, 2), "cancelled");
    T_EQ_U64(count_in(s, job, 1u << NQ_SHARD_CANCELLED), 5);
    T_CHECK(store_shard_lease(s, job, 3, 202, "wA", 0) == 1);

    /* Job states and their times. */
    T_CHECK(store_job_set_state(s, job, NQ_JOB_RUNNING) == 0);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.state == NQ_JOB_RUNNING && row.started_at > 0);
    double started = row.started_at;
    T_CHECK(store_job_set_state(s, job, NQ_JOB_CANCELLED) == 0);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.state == NQ_JOB_CANCELLED && row.finished_at >= started);
    T_CHECK(row.started_at == started);
    T_CHECK(store_job_set_state(s, job + 100, NQ_JOB_RUNNING) == -1);  /* no such job */
    T_CHECK(store_job_set_state(s, job, (nq_job_state_t)17) == -1);

    store_destroy(&s);
}

typedef struct { uint64_t ids[8]; int n; } active_ctx_t;

static int active_cb(void *ud, const nq_job_row_t *j)
{
    active_ctx_t *c = ud;
    if (c->n < 8)
        c->ids[c->n++] = j->id;
    return 0;
}

T_TEST(test_jobs_active_order)
{
    const char *path = db_path("active");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t a = make_job(s, NQ_KIND_COUNT, 8, 1, 3);
    nq_job_spec_t hi = job_spec(NQ_KIND_COUNT, 9);
    hi.priority = 9;
    uint64_t b = 0, c;
    char err[256];
    T_CHECK(store_job_create(s, &hi, 1, count_shard, NULL, &b, err, sizeof err) == 0);
    c = make_job(s, NQ_KIND_COUNT, 10, 1, 3);
    T_CHECK(store_job_set_state(s, c, NQ_JOB_CANCELLED) == 0);
    uint64_t d = make_job(s, NQ_KIND_COUNT, 11, 1, 3);
    T_CHECK(store_job_set_state(s, d, NQ_JOB_RUNNING) == 0);
    active_ctx_t ctx = { { 0 }, 0 };
    T_CHECK(store_jobs_active(s, active_cb, NULL, &ctx) == 0);
    T_CHECK(ctx.n == 3);
    T_EQ_U64(ctx.ids[0], b);
    T_EQ_U64(ctx.ids[1], a);
    T_EQ_U64(ctx.ids[2], d);
    store_destroy(&s);
}

/* ---------------------------------------------------------------- results */

static void aggregates_agree(nq_store_t *s, uint64_t job);

T_TEST(test_result_put)
{
    const char *path = db_path("results");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 12, 6, 1);
    T_CHECK(store_worker_seen(s, "wA", "alpha", "KEYA", 8) == 0);
    nq_result_t r = count_result(job, 0, 11, 14200);
    nq_job_row_t row;

    /* First result wins. */
    T_CHECK(store_shard_lease(s, job, 0, 11, "wA", 0) == 0);
    T_CHECK(store_result_put(s, &r, "wA", NULL, NULL) == NQ_PUT_NEW);
    T_EQ_STR(shard_state(s, job, 0), "done");
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_EQ_U64(row.shards_done, 1);
    T_CHECK(sql_int(s, "SELECT shards_done FROM workers WHERE id = 'wA'") == 1);
    T_CHECK(sql_int(s, "SELECT nodes FROM workers WHERE id = 'wA'") == (int64_t)r.nodes);
    T_CHECK(sql_int(s, "SELECT total FROM shards WHERE idx = 0") == 14200);

    /* The same lease again (a lost ACK): idempotent, not a second opinion. */
    T_CHECK(store_result_put(s, &r, "wA", NULL, NULL) == NQ_PUT_RESENT);
    T_CHECK(sql_int(s, "SELECT confirmations FROM shards WHERE idx = 0") == 0);
    T_CHECK(sql_int(s, "SELECT shards_done FROM workers WHERE id = 'wA'") == 1);

    /* Another worker, equal: a confirmation. */
    nq_result_t r2 = r;
    r2.lease = 12;
    T_CHECK(store_result_put(s, &r2, "wB", NULL, NULL) == NQ_PUT_CONFIRMED);
    T_CHECK(sql_int(s, "SELECT confirmations FROM shards WHERE idx = 0") == 1);
    T_CHECK(sql_int(s, "SELECT shards_done FROM workers WHERE id = 'wB'") == 1);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 1);

    /* A decided shard never changes: a later result that differs in any compared field is
       evidence against its sender, kept once per shard and sender, and nothing else moves. */
    nq_result_t r3 = r;
    r3.lease = 13;
    r3.nodes++;
    T_CHECK(store_result_put(s, &r3, "wC", NULL, NULL) == NQ_PUT_EVIDENCE);
    T_CHECK(store_result_put(s, &r3, "wC", NULL, NULL) == NQ_PUT_EVIDENCE);
    T_EQ_STR(shard_state(s, job, 0), "done");
    T_CHECK(sql_int(s, "SELECT total FROM shards WHERE idx = 0") == 14200);
    T_CHECK(sql_int(s, "SELECT count(*) FROM evidence WHERE idx = 0 AND worker = 'wC'") == 1);
    T_CHECK(sql_int(s, "SELECT flagged FROM workers WHERE id = 'wC'") == 1);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 1 && row.shards_conflict == 0);
    T_CHECK(row.evidence == 1);
    for (int f = 0; f < 5; f++) {
        nq_result_t x = count_result(job, 1, 30 + f, 500);
        if (f == 0)
            T_CHECK(store_result_put(s, &x, "wA", NULL, NULL) == NQ_PUT_NEW);
        x.lease = 60 + f;
        if (f == 0) x.status = NQ_RES_NOTFOUND;
        if (f == 1) x.total++;
        if (f == 2) x.unique++;
        if (f == 3) x.res13 = (uint8_t)((x.res13 + 1) % 13);
        if (f == 4) x.res15 = (uint8_t)((x.res15 + 1) % 15);
        char name[8];
        snprintf(name, sizeof name, "wD%d", f);
        T_CHECK(store_result_put(s, &x, name, NULL, NULL) == NQ_PUT_EVIDENCE);
        T_EQ_STR(shard_state(s, job, 1), "done");
    }
    /* without identities (who = 0) evidence is one row per shard: here shards 0 and 1 */
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 2 && row.evidence == 2);
    aggregates_agree(s, job);

    /* Only votes that never agreed (the broker's dispute) make a conflict, and the job may not
       finish while it stands; retry forgets both results. */
    nq_result_t d = count_result(job, 5, 90, 700);
    T_CHECK(store_result_dispute(s, &d, "wA", NULL, "quorum-dissent") == NQ_PUT_CONFLICT);
    T_EQ_STR(shard_state(s, job, 5), "conflict");
    T_CHECK(sql_int(s, "SELECT count(*) FROM shards WHERE idx = 5 AND conflict_with = 'quorum-dissent'") == 1);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 2 && row.shards_conflict == 1);
    aggregates_agree(s, job);
    T_CHECK(store_job_set_state(s, job, NQ_JOB_DONE) == -1);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.state == NQ_JOB_PENDING);
    /* ... and a dispute over a decided shard changes nothing: it is compared like any result */
    nq_result_t late_vote = r3;
    T_CHECK(store_result_dispute(s, &late_vote, "wE", NULL, "quorum-dissent") == NQ_PUT_EVIDENCE);
    T_EQ_STR(shard_state(s, job, 0), "done");
    T_CHECK(store_shards_retry(s, job) == 0);
    T_EQ_STR(shard_state(s, job, 5), "pending");
    T_EQ_STR(shard_state(s, job, 0), "done");
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 2 && row.shards_conflict == 0);

    /* A failed shard accepts a late result as its first. */
    int failed = 0;
    T_CHECK(store_shard_lease(s, job, 2, 70, "wA", 0) == 0);
    T_CHECK(store_shard_release(s, job, 2, 1, &failed) == 0 && failed == 1);
    nq_result_t late = count_result(job, 2, 70, 40);
    T_CHECK(store_result_put(s, &late, "wA", NULL, NULL) == NQ_PUT_NEW);
    T_EQ_STR(shard_state(s, job, 2), "done");

    /* ... while its job runs. A job the broker does not run (failed, or not loaded) has no
       quorum or check to see a result through: a first result decides nothing there, and a
       later one for a decided shard is still compared. */
    T_CHECK(store_shard_lease(s, job, 4, 71, "wA", 0) == 0);
    T_CHECK(store_shard_release(s, job, 4, 1, &failed) == 0 && failed == 1);
    nq_result_t forged = count_result(job, 4, 71, 4680);
    nq_put_by_t unloaded = { .unloaded = 1 };
    T_CHECK(store_result_put_by(s, &forged, "wF", NULL, NULL, &unloaded) == NQ_PUT_UNDECIDABLE);
    T_EQ_STR(shard_state(s, job, 4), "failed");
    nq_result_t again2 = late;
    again2.lease = 72;
    again2.total++;
    T_CHECK(store_result_put_by(s, &again2, "wG", NULL, NULL, &unloaded) == NQ_PUT_EVIDENCE);
    T_CHECK(sqlite3_exec(store_db(s), "UPDATE jobs SET state = 'failed'", NULL, NULL, NULL) == SQLITE_OK);
    T_CHECK(store_result_put(s, &forged, "wF", NULL, NULL) == NQ_PUT_UNDECIDABLE);
    T_EQ_STR(shard_state(s, job, 4), "failed");
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 3);
    T_CHECK(sqlite3_exec(store_db(s), "UPDATE jobs SET state = 'pending'", NULL, NULL, NULL) == SQLITE_OK);

    /* Ignored: unknown shard or job, wrong kind, a worker error, cancelled shards. */
    nq_result_t bad = count_result(job, 999, 1, 1);
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    bad = count_result(job + 50, 0, 1, 1);
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    bad = count_result(job, 3, 1, 1);
    bad.kind = NQ_KIND_ENUMERATE;
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    bad = count_result(job, 3, 1, 1);
    bad.status = NQ_RES_ERROR;
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    T_EQ_STR(shard_state(s, job, 3), "pending");
    T_CHECK(store_shards_cancel_pending(s, job) == 0);
    bad = count_result(job, 3, 1, 1);
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    T_EQ_STR(shard_state(s, job, 3), "cancelled");

    /* Caller bugs are refused before the DB is touched, and do not spoil an open group. */
    T_CHECK(store_begin(s) == 0);
    T_CHECK(store_result_put(s, NULL, "wA", NULL, NULL) == -1);
    nq_result_t nopay = count_result(job, 4, 1, 1);
    nopay.payload_len = 10;             /* length without bytes */
    T_CHECK(store_result_put(s, &nopay, "wA", NULL, NULL) == -1);
    char err[256] = "";
    T_CHECK(store_commit(s, err, sizeof err) == 0);
    store_destroy(&s);
}

T_TEST(test_enumerate_and_solve_payloads)
{
    const char *path = db_path("payloads");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    /* enumerate: the packed solutions are kept; a different payload is a conflict. */
    uint64_t ej = make_job(s, NQ_KIND_ENUMERATE, 6, 3, 3);
    nq_result_t e = count_result(ej, 0, 1, 2);
    e.kind = NQ_KIND_ENUMERATE;
    const uint8_t sols[] = { 0x31, 0x50, 0x42, 0x42, 0x05, 0x13 };
    e.payload = sols;
    e.payload_len = sizeof sols;
    T_CHECK(store_result_put(s, &e, "wA", NULL, NULL) == NQ_PUT_NEW);
    T_CHECK(sql_int(s, "SELECT length(data) FROM enum_solutions WHERE shard = 0") == (int64_t)sizeof sols);
    T_CHECK(sql_int(s, "SELECT count FROM enum_solutions WHERE shard = 0") == 2);
    e.lease = 2;
    T_CHECK(store_result_put(s, &e, "wB", NULL, NULL) == NQ_PUT_CONFIRMED);
    uint8_t other[sizeof sols];
    memcpy(other, sols, sizeof sols);
    other[3] ^= 1;
    e.payload = other;
    e.lease = 3;
    T_CHECK(store_result_put(s, &e, "wC", NULL, NULL) == NQ_PUT_EVIDENCE);   /* decided: it stands */
    T_CHECK(sql_int(s, "SELECT count(*) FROM enum_solutions WHERE shard = 0 AND data = x'315042420513'") == 1);
    /* A shard without solutions stores an empty blob (NOT NULL column). */
    nq_result_t none = count_result(ej, 1, 4, 0);
    none.kind = NQ_KIND_ENUMERATE;
    T_CHECK(store_result_put(s, &none, "wA", NULL, NULL) == NQ_PUT_NEW);
    T_CHECK(sql_int(s, "SELECT length(data) FROM enum_solutions WHERE shard = 1") == 0);

    /* solve: inline columns for small N, a file name for large N; one row per distinct solution. */
    uint64_t sj = make_job(s, NQ_KIND_SOLVE, 4, 4, 3);
    const uint8_t cols[16] = { 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0 };
    nq_result_t v;
    memset(&v, 0, sizeof v);
    v.job = sj;
    v.kind = NQ_KIND_SOLVE;
    v.status = NQ_RES_OK;
    v.nodes = 17;
    v.sol_n = 4;
    v.payload = cols;
    v.payload_len = sizeof cols;
    T_CHECK(store_result_put(s, &v, "wA", "abc123", NULL) == NQ_PUT_NEW);
    T_CHECK(sql_int(s, "SELECT length(cols) FROM solutions WHERE hash = 'abc123'") == 16);
    T_CHECK(sql_int(s, "SELECT seed FROM solutions WHERE hash = 'abc123'") == 1000);
    v.shard = 1;                        /* another seed, the same permutation */
    v.lease = 5;
    T_CHECK(store_result_put(s, &v, "wA", "abc123", NULL) == NQ_PUT_NEW);
    T_CHECK(sql_int(s, "SELECT count(*) FROM solutions") == 1);
    v.shard = 2;
    v.payload = NULL;
    v.payload_len = 0;
    T_CHECK(store_result_put(s, &v, "wA", "def456", "x.db.solutions/def456.nqsol") == NQ_PUT_NEW);
    T_CHECK(sql_int(s, "SELECT count(*) FROM solutions WHERE path = 'x.db.solutions/def456.nqsol'"
                       " AND cols IS NULL") == 1);
    /* Refused before the DB: a hash without the permutation; ignored: wrong length for N. */
    v.shard = 3;
    T_CHECK(store_result_put(s, &v, "wA", "0badc0de", NULL) == -1);
    v.payload = cols;
    v.payload_len = 12;
    T_CHECK(store_result_put(s, &v, "wA", "0badc0de", NULL) == NQ_PUT_IGNORED);
    T_EQ_STR(shard_state(s, sj, 3), "pending");
    /* Not found: a real outcome of a study, no solution row. */
    nq_result_t nf = v;
    nf.status = NQ_RES_NOTFOUND;
    nf.payload = NULL;
    nf.payload_len = 0;
    T_CHECK(store_result_put(s, &nf, "wA", NULL, NULL) == NQ_PUT_NEW);
    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, sj, &t) == 0);
    T_EQ_U64(t.solutions, 2);
    T_EQ_U64(t.shards_done, 4);
    T_EQ_U64(t.workers, 1);
    store_destroy(&s);
}

T_TEST(test_totals_128bit)
{
    const char *path = db_path("totals");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    const uint64_t N = 2000;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 27, N, 3);
    unsigned __int128 want_total = 0, want_unique = 0, want_nodes = 0;
    T_CHECK(store_begin(s) == 0);
    for (uint64_t i = 0; i < N; i++) {
        nq_result_t r = count_result(job, i, i + 1, UINT64_MAX - i);   /* near 2^64 each */
        r.unique = (UINT64_C(1) << 63) + i;
        r.nodes = UINT64_MAX - 3 * i;
        want_total += r.total;
        want_unique += r.unique;
        want_nodes += r.nodes;
        T_CHECK(store_result_put(s, &r, i % 2 ? "wOdd" : "wEven", NULL, NULL) == NQ_PUT_NEW);
    }
    char err[256] = "";
    T_CHECK(store_commit(s, err, sizeof err) == 0);
    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, job, &t) == 0);
    T_CHECK(t.total == want_total);
    T_CHECK(t.unique == want_unique);
    T_CHECK(t.nodes == want_nodes);
    T_CHECK((t.total >> 64) == N - 1);        /* well past 2^64: exact, not a float */
    T_EQ_U64((uint64_t)t.total, (uint64_t)want_total);
    T_EQ_U64(t.shards_done, N);
    T_EQ_U64(t.workers, 2);
    T_CHECK(t.core_seconds > 1.5 * N - 1 && t.core_seconds < 1.5 * N + 1);
    /* A worker's node counter saturates instead of wrapping. */
    T_CHECK((uint64_t)sql_int(s, "SELECT nodes FROM workers WHERE id = 'wOdd'") == UINT64_MAX);
    T_CHECK(store_job_totals(s, job + 1, &t) == -1);
    store_destroy(&s);
}

/* The job row's counts and sums against a recount of its rows (what `nq check` compares). */
static void aggregates_agree(nq_store_t *s, uint64_t job)
{
    nq_job_totals_t a, b;
    nq_job_row_t row;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    T_CHECK(store_job_sums(store_db(s), job, &a) == SQLITE_DONE);
    T_CHECK(store_job_recount(store_db(s), job, &b) == SQLITE_DONE);
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_EQ_U64(a.shards_done, b.shards_done);
    T_EQ_U64(row.shards_failed, b.shards_failed);
    T_EQ_U64(row.shards_conflict, b.shards_conflict);
    T_CHECK(a.total == b.total && a.unique == b.unique && a.nodes == b.nodes);
    T_CHECK(a.fast_nodes == b.fast_nodes);
    T_EQ_U64(a.fast_shards, b.fast_shards);
    T_EQ_U64(row.fast_shards, b.fast_shards);
    T_EQ_U64(a.res13, b.res13);
    T_EQ_U64(a.res15, b.res15);
    T_CHECK(a.core_seconds > b.core_seconds - 1e-6 && a.core_seconds < b.core_seconds + 1e-6);
    T_EQ_U64(b.residues_bad, 0);
}

/*
 * A job created without rows (schema/011_store.sql): a lease makes the shard's row and moves the
 * frontier; a result for a shard with no row makes it; done, conflict, failed and a late result
 * after FAILED all move the job's counts and sums in step with the rows; a retry clears them.
 */
T_TEST(test_lazy_job_aggregates)
{
    const char *path = db_path("lazy");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    nq_job_spec_t spec = job_spec(NQ_KIND_COUNT, 27);
    uint64_t job = 0;
    char err[256] = "";
    T_CHECK(store_job_create(s, &spec, 13529636, NULL, NULL, &job, err, sizeof err) == 0);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, job, &row) == 0 && row.frontier == 0 && row.shards_total == 13529636);
    T_CHECK(sql_int(s, "SELECT count(*) FROM shards") == 0);
    T_CHECK(store_shard_lease(s, job, 5, 11, "wA", 1) == 0);
    T_CHECK(store_shard_lease(s, job, 13529636, 12, "wA", 2) == 1);     /* not a shard of the job */
    T_CHECK(store_job_get(s, job, &row) == 0 && row.frontier == 1);
    T_CHECK(sql_int(s, "SELECT count(*) FROM shards") == 1);
    T_EQ_STR(shard_state(s, job, 5), "leased");
    T_EQ_STR(shard_state(s, job, 6), "(none)");

    nq_result_t r7 = count_result(job, 7, 99, 1000), r5 = count_result(job, 5, 11, 500);
    T_CHECK(store_result_put(s, &r7, "wB", NULL, NULL) == NQ_PUT_NEW);    /* no row: made now */
    T_CHECK(store_result_put(s, &r5, "wA", NULL, NULL) == NQ_PUT_NEW);
    nq_result_t bad = count_result(job, 13529636, 1, 3);
    T_CHECK(store_result_put(s, &bad, "wA", NULL, NULL) == NQ_PUT_IGNORED);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 2);
    aggregates_agree(s, job);

    nq_result_t other = count_result(job, 5, 12, 501);
    T_CHECK(store_result_put(s, &other, "wC", NULL, NULL) == NQ_PUT_EVIDENCE);   /* decided: it stands */
    nq_result_t split = count_result(job, 6, 13, 77);                             /* no row: made now */
    T_CHECK(store_result_dispute(s, &split, "wC", NULL, "quorum-dissent") == NQ_PUT_CONFLICT);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 2 && row.shards_conflict == 1);
    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, job, &t) == 0);
    T_CHECK(t.total == 1500 && t.res13 == 1500 % 13 && t.res15 == 1500 % 15);
    aggregates_agree(s, job);

    int failed = 0;
    for (int i = 0; i < 3; i++) {
        T_CHECK(store_shard_lease(s, job, 9, 20 + (uint64_t)i, "wD", 0) == 0);
        T_CHECK(store_shard_release(s, job, 9, 1, &failed) == 0);
    }
    T_CHECK(failed == 1);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_failed == 1);
    aggregates_agree(s, job);
    nq_result_t late = count_result(job, 9, 22, 9);
    T_CHECK(store_result_put(s, &late, "wD", NULL, NULL) == NQ_PUT_NEW);
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_failed == 0 && row.shards_done == 3);
    aggregates_agree(s, job);

    T_CHECK(store_shards_retry(s, job) == 0);                    /* the conflict goes back to pending */
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_conflict == 0 && row.shards_done == 3);
    aggregates_agree(s, job);
    T_EQ_U64(sql_int(s, "SELECT count(*) FROM job_workers WHERE job = 1"), 4);
    store_destroy(&s);
}

static nq_result_t fast_result(uint64_t job, uint64_t shard, uint64_t lease, uint64_t total)
{
    nq_result_t r = count_result(job, shard, lease, total);
    r.nodes = total * 7 + 5;            /* the fast GPU kernel's own count: not the CPU's */
    r.nodes_kind = NQ_NODES_GPU_FAST;
    return r;
}

/*
 * Results of the fast GPU kernel (schema/011_store.sql): a later result with the decided total and
 * other nodes confirms it when either's nodes are the fast kernel's (not even two of those
 * compare), and is evidence when both are the CPU kernels'; a different total is evidence
 * whoever counted. The row keeps whose nodes it holds, and the job sums the CPU kernels' nodes
 * apart from the fast kernel's, through results, conflicts and a spot-check's replacement.
 */
T_TEST(test_put_compares_nodes_only_between_cpu_results)
{
    const char *path = db_path("kinds");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 12, 10, 3);
    nq_identity_t id[4];
    nq_put_by_t by[4];
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof key, "key%c", 'A' + i);
        T_CHECK(store_identity(s, key, key, &id[i]) == 0);
        by[i] = (nq_put_by_t){ .who = id[i].id };
    }
    nq_result_t cpu0 = count_result(job, 0, 1, 800), fast1 = fast_result(job, 1, 2, 1600);
    T_CHECK(store_result_put_by(s, &cpu0, "wA", NULL, NULL, &by[0]) == NQ_PUT_NEW);
    T_CHECK(store_result_put_by(s, &fast1, "wA", NULL, NULL, &by[0]) == NQ_PUT_NEW);
    T_EQ_U64(sql_int(s, "SELECT nodes_kind FROM shards WHERE job = 1 AND idx = 1"), NQ_NODES_GPU_FAST);
    T_EQ_U64(sql_int(s, "SELECT nodes_kind FROM shards WHERE job = 1 AND idx = 0"), NQ_NODES_CPU);
    T_CHECK(sqlite3_exec(store_db(s), "UPDATE shards SET nodes_kind = 2 WHERE job = 1", NULL, NULL, NULL) ==
            SQLITE_CONSTRAINT);                                    /* 0 or 1, nothing else */

    nq_result_t r = fast_result(job, 0, 3, 800);                   /* decided by the CPU */
    T_CHECK(store_result_put_by(s, &r, "wB", NULL, NULL, &by[1]) == NQ_PUT_CONFIRMED);
    r = count_result(job, 0, 4, 800);
    r.nodes += 1;
    T_CHECK(store_result_put_by(s, &r, "wC", NULL, NULL, &by[2]) == NQ_PUT_EVIDENCE);
    r = fast_result(job, 0, 5, 808);
    T_CHECK(store_result_put_by(s, &r, "wD", NULL, NULL, &by[3]) == NQ_PUT_EVIDENCE);
    r = fast_result(job, 1, 6, 1600);                              /* decided by the fast kernel */
    r.nodes += 1;
    T_CHECK(store_result_put_by(s, &r, "wB", NULL, NULL, &by[1]) == NQ_PUT_CONFIRMED);
    r = count_result(job, 1, 7, 1600);
    T_CHECK(store_result_put_by(s, &r, "wC", NULL, NULL, &by[2]) == NQ_PUT_CONFIRMED);
    r = count_result(job, 1, 8, 1608);
    T_CHECK(store_result_put_by(s, &r, "wD", NULL, NULL, &by[3]) == NQ_PUT_EVIDENCE);
    T_EQ_U64(sql_int(s, "SELECT confirmations FROM shards WHERE job = 1 AND idx = 1"), 2);
    T_EQ_U64(sql_int(s, "SELECT count(*) FROM evidence WHERE job = 1 AND nodes_kind = 1"), 1);

    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, job, &t) == 0);
    T_CHECK(t.total == 2400 && t.nodes == cpu0.nodes && t.fast_nodes == fast1.nodes && t.fast_shards == 1);
    aggregates_agree(s, job);

    nq_result_t split = fast_result(job, 2, 9, 80);               /* votes that never agreed */
    T_CHECK(store_result_dispute(s, &split, "wB", NULL, "quorum-dissent") == NQ_PUT_CONFLICT);
    T_CHECK(store_job_totals(s, job, &t) == 0 && t.fast_shards == 1 && t.fast_nodes == fast1.nodes);
    aggregates_agree(s, job);

    nq_shard_votes_t sv;                                          /* a check's fast result wins */
    T_CHECK(store_shard_votes(s, job, 0, &sv) == 0 && sv.votes[0].nodes_kind == NQ_NODES_CPU);
    nq_vote_t win = sv.votes[0];
    win.total = 816, win.unique = 102, win.res13 = 816 % 13, win.res15 = 816 % 15;
    win.nodes = 99, win.nodes_kind = NQ_NODES_GPU_FAST;
    T_CHECK(store_check_put(s, job, 0, 1, &win, 0) == 0);
    T_CHECK(store_shard_replace(s, job, 0, &sv.votes[0], &win) == 0);
    T_CHECK(store_shard_votes(s, job, 0, &sv) == 0 && sv.votes[0].nodes_kind == NQ_NODES_GPU_FAST);
    T_CHECK(sv.nvotes == 2 && sv.votes[1].nodes_kind == NQ_NODES_GPU_FAST);
    T_CHECK(store_job_totals(s, job, &t) == 0);
    T_CHECK(t.nodes == 0 && t.fast_nodes == fast1.nodes + 99 && t.fast_shards == 2);
    aggregates_agree(s, job);
    store_destroy(&s);
}

typedef struct { uint64_t n, idx[16]; int64_t sweep_who; uint64_t sweep_next; } spot_seen_t;

static void on_idx(void *ud, uint64_t idx)
{
    spot_seen_t *v = ud;
    if (v->n < 16)
        v->idx[v->n++] = idx;
}

static void on_sweep(void *ud, int64_t who, uint64_t next)
{
    spot_seen_t *v = ud;
    v->sweep_who = who;
    v->sweep_next = next;
}

/* Spot-check records: a check that agrees, a dispute the check wins (the shard's row and
   the job's sums take its result), one with no majority (CONFLICT, out of the sums), the flag
   and its sweep over the loser's other results, and what a restart loads back. */
T_TEST(test_spotcheck_records)
{
    const char *path = db_path("spot");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    nq_job_spec_t spec = job_spec(NQ_KIND_COUNT, 27);
    spec.verify_ppm = 50000;
    uint64_t job = 0;
    char err[256] = "";
    T_CHECK(store_job_create(s, &spec, 100, NULL, NULL, &job, err, sizeof err) == 0);
    nq_identity_t a, b, c, again;
    T_CHECK(store_identity(s, "keyA", "wA", &a) == 0 && store_identity(s, "keyB", "wB", &b) == 0);
    T_CHECK(store_identity(s, "keyC", "wC", &c) == 0 && store_identity(s, "keyA", "wA2", &again) == 0);
    T_CHECK(a.id != b.id && b.id != c.id && again.id == a.id);    /* one row per identity */
    for (uint64_t i = 0; i < 6; i++) {                            /* A delivers 0..5; 0..2 drawn */
        nq_result_t r = count_result(job, i, 10 + i, 100 + i);
        nq_put_by_t by = { .who = a.id, .verify = i < 3, .spot = 1 };
        T_CHECK(store_result_put_by(s, &r, "wA", NULL, NULL, &by) == NQ_PUT_NEW);
    }
    T_CHECK(store_identity_get(s, a.id, &again) == 0 && again.results == 6);
    uint64_t open = 0;
    T_CHECK(store_spot_open(s, job, &open) == 0 && open == 3);
    nq_shard_votes_t sv;
    T_CHECK(store_shard_votes(s, job, 0, &sv) == 0 && sv.state == NQ_SHARD_DONE && sv.verify == 1);
    T_CHECK(sv.nvotes == 1 && sv.votes[0].who == a.id && sv.votes[0].total == 100);

    /* shard 0: B agrees */
    nq_vote_t vb = sv.votes[0];
    vb.who = b.id;
    T_CHECK(store_check_put(s, job, 0, 1, &vb, 1) == 0 && store_shard_set_verify(s, job, 0, 0) == 0);
    /* shard 1: B disagrees, C sides with B: B's result replaces A's in the row and the sums */
    T_CHECK(store_shard_votes(s, job, 1, &sv) == 0);
    nq_vote_t first = sv.votes[0], vb1 = first, vc1;
    vb1.who = b.id;
    vb1.total = 7 * 13 * 15;
    vb1.res13 = vb1.res15 = 0;
    vc1 = vb1;
    vc1.who = c.id;
    T_CHECK(store_check_put(s, job, 1, 1, &vb1, 0) == 0 && store_shard_set_verify(s, job, 1, 2) == 0);
    T_CHECK(store_check_put(s, job, 1, 2, &vc1, 0) == 0 && store_shard_replace(s, job, 1, &first, &vb1) == 0);
    T_CHECK(store_shard_votes(s, job, 1, &sv) == 0 && sv.verify == 0 && sv.nvotes == 3);
    T_CHECK(sv.votes[0].who == b.id && sv.votes[0].total == 1365);
    /* shard 2: nobody agrees: CONFLICT, out of the sums */
    T_CHECK(store_shard_votes(s, job, 2, &sv) == 0);
    T_CHECK(store_shard_dispute_lost(s, job, 2, &sv.votes[0]) == 0);
    nq_job_row_t row;
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_CHECK(row.shards_done == 5 && row.shards_conflict == 1 && row.checks == 3 && row.disagreed == 2);
    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, job, &t) == 0);
    T_CHECK(t.total == 100 + 1365 + 103 + 104 + 105);
    aggregates_agree(s, job);
    T_EQ_U64(sql_int(s, "SELECT confirmations FROM shards WHERE job = 1 AND idx = 0"), 1);

    /* A lost: flagged once; its sweep marks its unchecked done results (3, 4, 5), in spans */
    T_CHECK(store_job_flag(s, job, a.id, 1) == 0 && store_job_flag(s, job, a.id, 1) == 1);
    spot_seen_t marked = { 0 }, loaded = { 0 };
    T_CHECK(store_flag_sweep(s, job, a.id, 0, 4, on_idx, &marked) == 0);
    T_CHECK(marked.n == 1 && marked.idx[0] == 3);
    T_CHECK(store_spot_load(s, job, on_idx, on_sweep, &loaded) == 0);   /* as a restart would */
    T_CHECK(loaded.n == 1 && loaded.idx[0] == 3);
    T_CHECK(loaded.sweep_who == a.id && loaded.sweep_next == 4);       /* resumes at 4, not 0 */
    T_CHECK(store_flag_sweep(s, job, a.id, 4, 100, on_idx, &marked) == 0);
    T_CHECK(marked.n == 3 && marked.idx[1] == 4 && marked.idx[2] == 5);
    memset(&loaded, 0, sizeof loaded);
    T_CHECK(store_spot_load(s, job, on_idx, on_sweep, &loaded) == 0);
    T_CHECK(loaded.n == 3 && loaded.sweep_who == 0);                   /* the sweep is finished */
    T_CHECK(store_spot_open(s, job, &open) == 0 && open == 3);
    T_EQ_U64(sql_int(s, "SELECT sweep FROM job_flagged WHERE job = 1"), 100);
    store_destroy(&s);
}

T_TEST(test_worker_seen)
{
    const char *path = db_path("workers");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    T_CHECK(store_worker_seen(s, "h1:10:1", "h1", "PUBKEY", 4) == 0);
    int64_t first = sql_int(s, "SELECT CAST(first_seen * 1000 AS INTEGER) FROM workers");
    T_CHECK(store_worker_seen(s, "h1:10:1", "h1b", NULL, 8) == 0);
    T_CHECK(sql_int(s, "SELECT count(*) FROM workers") == 1);
    T_CHECK(sql_int(s, "SELECT threads FROM workers") == 8);
    T_CHECK(sql_int(s, "SELECT count(*) FROM workers WHERE host = 'h1b' AND pubkey = 'PUBKEY'") == 1);
    T_CHECK(sql_int(s, "SELECT CAST(first_seen * 1000 AS INTEGER) FROM workers") == first);
    T_CHECK(store_worker_seen(s, "", "h", NULL, 1) == -1);
    T_CHECK(store_worker_seen(s, NULL, "h", NULL, 1) == -1);
    store_destroy(&s);
}

/* ---------------------------------------------------------------- faults */

static int put_group(nq_store_t *s, uint64_t job, uint64_t from, uint64_t count, int *failed_puts)
{
    *failed_puts = 0;
    if (store_begin(s) != 0)
        return -1;
    for (uint64_t i = from; i < from + count; i++) {
        nq_result_t r = count_result(job, i, 1000 + i, 1000000 + i);
        if (store_result_put(s, &r, "wFull", NULL, NULL) < 0)
            (*failed_puts)++;
    }
    return 0;
}

T_TEST(test_disk_full_group)
{
    const char *path = db_path("full");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 16, 3000, 3);
    /* The file may not grow by a single page: results need new pages, so the group hits SQLITE_FULL. */
    char sql[80];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)sql_int(s, "PRAGMA page_count"));
    T_CHECK(sqlite3_exec(store_db(s), sql, NULL, NULL, NULL) == SQLITE_OK);
    int failed_puts = 0;
    T_CHECK(put_group(s, job, 0, 1000, &failed_puts) == 0);
    T_CHECK(failed_puts > 0);
    char err[512] = "";
    T_CHECK(store_commit(s, err, sizeof err) == -1);
    if (!strstr(err, "disk is full"))
        fprintf(stderr, "  message: %s\n", err);
    T_CHECK(strstr(err, "disk is full") != NULL);
    T_CHECK(strstr(err, "rolled back") != NULL);
    /* Nothing of the group is visible, here or to another reader. */
    nq_job_row_t row;
    T_CHECK(store_job_get(s, job, &row) == 0 && row.shards_done == 0);
    T_EQ_U64(count_in(s, job, 1u << NQ_SHARD_DONE), 0);
    T_CHECK(sql_int(s, "SELECT count(*) FROM workers") == 0);
    nq_store_t *ro = open_ok(path, 1);
    T_CHECK(ro && store_job_get(ro, job, &row) == 0 && row.shards_done == 0);
    store_destroy(&ro);
    /* Outside a group too: a job that needs pages is refused whole, with the reason. */
    uint64_t id = 0;
    nq_job_spec_t big = job_spec(NQ_KIND_COUNT, 17);
    err[0] = 0;
    T_CHECK(store_job_create(s, &big, 5000, count_shard, NULL, &id, err, sizeof err) == -1);
    T_CHECK(strstr(err, "disk is full") != NULL);
    T_CHECK(sqlite3_get_autocommit(store_db(s)) == 1);
    T_CHECK(sql_int(s, "SELECT count(*) FROM jobs") == 1);

    /* Space again: the same group commits, all of it. */
    T_CHECK(sqlite3_exec(store_db(s), "PRAGMA max_page_count = 1073741823", NULL, NULL, NULL) == SQLITE_OK);
    T_CHECK(put_group(s, job, 0, 1000, &failed_puts) == 0);
    T_CHECK(failed_puts == 0);
    T_CHECK(store_commit(s, err, sizeof err) == 0);
    T_CHECK(store_job_get(s, job, &row) == 0);
    T_EQ_U64(row.shards_done, 1000);
    T_EQ_U64(count_in(s, job, 1u << NQ_SHARD_DONE), 1000);
    store_destroy(&s);
    /* And the DB still opens, checks and holds the results. */
    s = open_ok(path, 0);
    T_CHECK(s && store_job_get(s, job, &row) == 0 && row.shards_done == 1000);
    store_destroy(&s);
}

T_TEST(test_group_without_own_transactions)
{
    const char *path = db_path("group");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t job = make_job(s, NQ_KIND_COUNT, 10, 10, 3);
    T_CHECK(store_begin(s) == 0);
    T_CHECK(store_begin(s) == -1);                    /* no nesting */
    nq_result_t r = count_result(job, 0, 1, 724);
    T_CHECK(store_result_put(s, &r, "w", NULL, NULL) == NQ_PUT_NEW);
    T_CHECK(sqlite3_get_autocommit(store_db(s)) == 0);   /* still inside the one transaction */
    store_rollback(s);
    T_EQ_STR(shard_state(s, job, 0), "pending");
    char err[256] = "";
    T_CHECK(store_commit(s, err, sizeof err) == -1);   /* nothing open */
    T_CHECK(err[0] != 0);
    store_destroy(&s);
}

T_TEST(test_concurrent_readonly)
{
    const char *path = db_path("concurrent");
    nq_store_t *w = open_ok(path, 0);
    if (!w)
        return;
    uint64_t job = make_job(w, NQ_KIND_COUNT, 10, 10, 3);
    nq_result_t r = count_result(job, 0, 1, 724);
    T_CHECK(store_result_put(w, &r, "w", NULL, NULL) == NQ_PUT_NEW);
    /* The writer holds a transaction with 5 more results in it. */
    T_CHECK(store_begin(w) == 0);
    for (uint64_t i = 1; i <= 5; i++) {
        nq_result_t x = count_result(job, i, 1 + i, 100 + i);
        T_CHECK(store_result_put(w, &x, "w", NULL, NULL) == NQ_PUT_NEW);
    }
    /* The writer holds its transaction throughout: a reader that needed it could only fail after
       its busy timeout, so opening at all shows it does not wait (no clock asked). */
    nq_store_t *ro = open_ok(path, 1);
    nq_job_row_t row;
    T_CHECK(ro && store_job_get(ro, job, &row) == 0);
    T_EQ_U64(row.shards_done, 1);                       /* the last committed state */
    nq_job_totals_t t;
    T_CHECK(ro && store_job_totals(ro, job, &t) == 0 && t.total == 724);
    char err[256] = "";
    T_CHECK(store_commit(w, err, sizeof err) == 0);
    T_CHECK(ro && store_job_get(ro, job, &row) == 0);
    T_EQ_U64(row.shards_done, 6);                       /* a new read sees the commit */
    store_destroy(&ro);
    store_destroy(&w);
}

/* ---------------------------------------------------------------- measure (printed, not asserted) */

T_TEST(test_measure)
{
    const char *path = db_path("measure");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    const uint64_t SHARDS = 1000000, RESULTS = 100000, GROUP = 1000;
    double t0 = now_mono();
    uint64_t job = make_job(s, NQ_KIND_COUNT, 20, SHARDS, 3);
    double t1 = now_mono();
    char err[256] = "";
    for (uint64_t g = 0; g < RESULTS; g += GROUP) {
        T_CHECK(store_begin(s) == 0);
        for (uint64_t i = g; i < g + GROUP; i++) {
            nq_result_t r = count_result(job, i * (SHARDS / RESULTS), i + 1, 1000 + i);
            if (store_result_put(s, &r, i % 4 ? "wA" : "wB", NULL, NULL) != NQ_PUT_NEW)
                T_CHECK(0);
        }
        T_CHECK(store_commit(s, err, sizeof err) == 0);
    }
    double t2 = now_mono();
    nq_job_totals_t t;
    T_CHECK(store_job_totals(s, job, &t) == 0);
    double t3 = now_mono();
    store_destroy(&s);
    double t4 = now_mono();
    s = open_ok(path, 1);               /* quick_check of the whole file on open */
    double t5 = now_mono();
    store_destroy(&s);
    T_EQ_U64(t.shards_done, RESULTS);
    fprintf(stderr, "  create job, %llu shards: %.2f s (%.0f shards/s)\n", (unsigned long long)SHARDS,
            t1 - t0, SHARDS / (t1 - t0));
    fprintf(stderr, "  put %llu results, groups of %llu: %.2f s (%.0f results/s)\n",
            (unsigned long long)RESULTS, (unsigned long long)GROUP, t2 - t1, RESULTS / (t2 - t1));
    fprintf(stderr, "  totals over %llu done shards: %.3f s; close %.2f s; read-only open with quick_check: %.2f s\n",
            (unsigned long long)RESULTS, t3 - t2, t4 - t3, t5 - t4);
}

T_RUN_ALL()

/* A job's progress chart: every few seconds for ~58 days (a campaign), written in groups as the
   broker does, stays within the cap, keeps the job's start and its newest point, and its values
   are shares of the work that only grow; it survives a reopen (a broker restart). */
T_TEST(test_progress_stays_bounded_over_a_long_job)
{
    const char *path = db_path("progress");
    nq_store_t *s = open_ok(path, 0);
    if (!s)
        return;
    uint64_t id = make_job(s, NQ_KIND_COUNT, 10, 4, 3);
    const int points = 20000;
    char err[256] = "";
    for (int i = 0; i < points; i++) {
        if (i % 500 == 0)
            T_CHECK(store_begin(s) == 0);
        T_CHECK(store_progress_add(s, id, 1000.0 + 250.0 * i, (double)i / points, 2.0) == 0);
        if (i % 500 == 499 || i == points - 1)
            T_CHECK(store_commit(s, err, sizeof err) == 0);
    }
    store_destroy(&s);
    s = open_ok(path, 0);
    if (!s)
        return;
    static query_point_t p[STORE_PROGRESS_CAP + 1];
    size_t n = 0;
    T_CHECK(query_progress(store_db(s), id, p, STORE_PROGRESS_CAP + 1, &n, err, sizeof err) == 0);
    T_CHECK(n > STORE_PROGRESS_CAP / 4 && n <= STORE_PROGRESS_CAP);
    T_CHECK(p[0].t == 1000.0 && p[0].done == 0);                          /* the start is kept */
    T_CHECK(p[n - 1].t == 1000.0 + 250.0 * (points - 1));                 /* and the newest */
    T_CHECK(p[n - 1].done == (double)(points - 1) / points);
    for (size_t i = 1; i < n; i++)
        T_CHECK(p[i].t > p[i - 1].t && p[i].done >= p[i - 1].done && p[i].done <= 1);
    T_CHECK(query_progress(store_db(s), id + 1, p, STORE_PROGRESS_CAP, &n, err, sizeof err) == 0 && n == 0);
    store_destroy(&s);
}
