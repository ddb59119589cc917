/*
 * Rows read back as hostile input (broker/store/store_check.h): every value nq could not have
 * written is refused with the job (and shard) and the column named; what the store is asked to
 * write is held to the same limits; the O(1) bound on a list's length holds for real lists.
 */
#include "t.h"
#include "shard.h"
#include "store.h"
#include "store_check.h"

#include <unistd.h>

#define CHANGED "the DB was changed outside nq"

static char path[512];

static void db_remove(void)
{
    static const char *const sides[] = { "", "-wal", "-shm", "-journal" };
    char p[600];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, sides[i]);
        unlink(p);
    }
}

/* A store with job 1: count N=10 (75 shards, the real list at depth 1), shards 0..5 with rows;
   job 2: solve N=20, 3 seeds of two methods (6 shards). */
static nq_store_t *store_made(void)
{
    char err[256] = "";
    snprintf(path, sizeof path, "%s/store_check_%d.db", t_tmpdir(), (int)getpid());
    db_remove();
    nq_store_t *s = store_open(path, 0, err, sizeof err);
    T_CHECK(s != NULL);
    if (!s)
        return NULL;
    nq_job_spec_t c = { .kind = NQ_KIND_COUNT, .n = 10, .depth = 1, .encoding = NQ_SHARD_ENCODING,
                        .max_attempts = 3, .quorum = 1 };
    nq_job_spec_t v = { .kind = NQ_KIND_SOLVE, .n = 20, .restarts = 3, .max_attempts = 3, .quorum = 1 };
    snprintf(v.algo, sizeof v.algo, "qs4,minconflicts");
    uint64_t id = 0;
    T_CHECK(store_job_create(s, &c, 75, NULL, NULL, &id, err, sizeof err) == 0 && id == 1);
    T_CHECK(store_job_create(s, &v, 6, NULL, NULL, &id, err, sizeof err) == 0 && id == 2);
    for (uint64_t i = 0; i < 6; i++)
        T_CHECK(store_shard_lease(s, 1, i, 100 + i, "w", i + 1) == 0);
    return s;
}

static void exec_sql(nq_store_t *s, const char *sql)
{
    char *e = NULL;
    if (sqlite3_exec(store_db(s), sql, NULL, NULL, &e) != SQLITE_OK)
        fprintf(stderr, "  SQL failed: %s: %s\n", sql, e ? e : "?");
    sqlite3_free(e);
}

typedef struct { uint64_t loaded[4], refused[4]; int nloaded, nrefused; char why[320]; } active_t;

static int on_job(void *ud, const nq_job_row_t *j)
{
    active_t *a = ud;
    if (a->nloaded < 4)
        a->loaded[a->nloaded++] = j->id;
    return 0;
}

static int on_refused(void *ud, uint64_t id, const char *why)
{
    active_t *a = ud;
    if (a->nrefused < 4)
        a->refused[a->nrefused++] = id;
    snprintf(a->why, sizeof a->why, "%s", why);
    return 0;
}

/* SQL makes job `id` one nq could not have written: every way of reading it says `want`. */
static void job_refused(nq_store_t *s, uint64_t id, const char *sql, const char *want)
{
    exec_sql(s, "SAVEPOINT bad; PRAGMA ignore_check_constraints = 1");
    exec_sql(s, sql);
    nq_job_row_t row;
    char err[400] = "";
    T_CHECK(store_job_get(s, id, &row) == -1);
    T_CHECK(store_job_load(s, id, &row, err, sizeof err) == -1);
    if (!strstr(err, want) || !strstr(err, CHANGED))
        fprintf(stderr, "  %s: got '%s', want '%s'\n", sql, err, want);
    T_CHECK(strstr(err, want) != NULL && strstr(err, CHANGED) != NULL);
    err[0] = '\0';
    T_CHECK(store_job_read(store_db(s), id, &row, err, sizeof err) == -1 && strstr(err, want) != NULL);
    /* a walk over the active jobs: the other job still loads, this one (when its state is still
       an active one) goes to `refused` with the reason */
    active_t a = { .nloaded = 0 };
    sqlite3_stmt *q = NULL;
    sqlite3_prepare_v2(store_db(s), "SELECT state IN ('pending', 'running') FROM jobs WHERE id = ?1", -1, &q,
                       NULL);
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    int active = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    T_CHECK(store_jobs_active(s, on_job, on_refused, &a) == 0);
    T_CHECK(a.nloaded == 1 && a.loaded[0] == 3 - id && a.nrefused == active);
    T_CHECK(!active || a.refused[0] == id);
    T_CHECK(!active || strstr(a.why, want) != NULL);
    exec_sql(s, "PRAGMA ignore_check_constraints = 0; ROLLBACK TO bad; RELEASE bad");
    T_CHECK(store_job_get(s, id, &row) == 0);
}

T_TEST(test_job_values_nq_could_not_write_are_refused)
{
    nq_store_t *s = store_made();
    if (!s)
        return;
    job_refused(s, 1, "UPDATE jobs SET quorum = -1 WHERE id = 1",
                      "job 1: column quorum holds -1 (allowed 1..3)");
    job_refused(s, 1, "UPDATE jobs SET quorum = 4294967297 WHERE id = 1", "column quorum holds 4294967297");
    job_refused(s, 1, "UPDATE jobs SET shards_total = 9223372036854775807 WHERE id = 1",
                "job 1: column shards_total holds 9223372036854775807 (allowed 1..1000 for count N=10 at "
                "depth 1)");
    job_refused(s, 1, "UPDATE jobs SET shards_total = -3 WHERE id = 1", "column shards_total holds -3");
    job_refused(s, 1, "UPDATE jobs SET state = 'zzz' WHERE id = 1", "job 1: column state holds 'zzz'");
    job_refused(s, 1, "UPDATE jobs SET kind = 'sort' WHERE id = 1", "column kind holds 'sort'");
    job_refused(s, 1, "UPDATE jobs SET n = 33 WHERE id = 1", "column n holds 33 (allowed 1..32 for count)");
    job_refused(s, 1, "UPDATE jobs SET n = '10' || x'00' WHERE id = 1", "column n holds");
    job_refused(s, 1, "UPDATE jobs SET depth = 9 WHERE id = 1",
                      "column depth holds 9 (allowed 1..8 for count N=10)");
    job_refused(s, 1, "UPDATE jobs SET encoding = 6 WHERE id = 1", "column encoding holds 6");
    job_refused(s, 1, "UPDATE jobs SET encoding = 4 WHERE id = 1", "column encoding holds 4 (allowed 5");
    job_refused(s, 1, "UPDATE jobs SET lease_order = 1 WHERE id = 1", "column lease_order holds 1 (allowed 2..2)");
    job_refused(s, 1, "UPDATE jobs SET lease_order = 3 WHERE id = 1", "column lease_order holds 3");
    job_refused(s, 1, "UPDATE jobs SET max_attempts = 0 WHERE id = 1",
                      "column max_attempts holds 0 (allowed 1..100)");
    job_refused(s, 1, "UPDATE jobs SET priority = -1 WHERE id = 1", "column priority holds -1");
    job_refused(s, 1, "UPDATE jobs SET verify_ppm = 1000001 WHERE id = 1", "column verify_ppm holds 1000001");
    job_refused(s, 1, "UPDATE jobs SET verify_ppm = 5, quorum = 2 WHERE id = 1", "column verify_ppm holds 5");
    job_refused(s, 1, "UPDATE jobs SET shards_done = 76 WHERE id = 1",
                      "column shards_done holds 76 (allowed 0..75)");
    job_refused(s, 1, "UPDATE jobs SET frontier = 80 WHERE id = 1", "column frontier holds 80");
    job_refused(s, 1, "UPDATE jobs SET checks = 2, disagreed = 3 WHERE id = 1", "column disagreed holds 3");
    job_refused(s, 1, "UPDATE jobs SET fast_shards = 1 WHERE id = 1",
                      "column fast_shards holds 1 (allowed 0..0)");      /* more than its done shards */
    job_refused(s, 1, "UPDATE jobs SET fast_shards = -1 WHERE id = 1", "column fast_shards holds -1");
    job_refused(s, 1, "UPDATE jobs SET created_at = 'yesterday' WHERE id = 1",
                "column created_at holds 'yesterday' (allowed a finite number >= 0)");
    job_refused(s, 1, "UPDATE jobs SET started_at = 9e999 WHERE id = 1",
                      "column started_at holds the real inf");
    job_refused(s, 1, "UPDATE jobs SET algo = printf('%.200c', 'a') WHERE id = 1", "column algo holds 'aaaa");
    job_refused(s, 2, "UPDATE jobs SET restarts = 4 WHERE id = 2",
                "job 2: column shards_total holds 6 (allowed 8: restarts 4 x 2 method(s))");
    job_refused(s, 2, "UPDATE jobs SET restarts = 0 WHERE id = 2", "column restarts holds 0");
    job_refused(s, 2, "UPDATE jobs SET algo = 'qs4,,minconflicts' WHERE id = 2",
                      "column algo holds 'qs4,,minconflicts'");
    job_refused(s, 2, "UPDATE jobs SET algo = 'qs4,MINCONFLICTS' WHERE id = 2", "column algo holds");
    job_refused(s, 2, "UPDATE jobs SET solutions = 4 WHERE id = 2", "column solutions holds 4 (allowed 0..3");
    job_refused(s, 2, "UPDATE jobs SET seed0 = 'x' WHERE id = 2",
                      "column seed0 holds 'x' (allowed an integer)");
    job_refused(s, 2, "UPDATE jobs SET n = 1000000001 WHERE id = 2", "column n holds 1000000001");
    store_destroy(&s);
    db_remove();
}

static int count_rows(void *ud, const nq_shard_row_t *r)
{
    (void)r;
    ++*(int *)ud;
    return 0;
}

/* SQL makes shard 3 of job 1 one nq could not have written: a read of it, and a walk over the
   leased shards when it is still one of them, say `want` and pass nothing on. */
static void shard_refused(nq_store_t *s, const char *sql, int walk, const char *want)
{
    exec_sql(s, "SAVEPOINT bad; PRAGMA ignore_check_constraints = 1");
    exec_sql(s, sql);
    nq_shard_row_t r;
    T_CHECK(store_shard_get(s, 1, 3, &r) == -1);
    if (!strstr(store_refusal(s), want))
        fprintf(stderr, "  %s: got '%s', want '%s'\n", sql, store_refusal(s), want);
    T_CHECK(strstr(store_refusal(s), want) != NULL && strstr(store_refusal(s), CHANGED) != NULL);
    int n = 0;
    T_CHECK(store_shards_each(s, 1, 1u << NQ_SHARD_LEASED, count_rows, &n) == (walk ? -2 : 0));
    exec_sql(s, "PRAGMA ignore_check_constraints = 0; ROLLBACK TO bad; RELEASE bad");
    T_CHECK(store_shard_get(s, 1, 3, &r) == 0 && r.state == NQ_SHARD_LEASED);
}

T_TEST(test_shard_values_nq_could_not_write_are_refused)
{
    nq_store_t *s = store_made();
    if (!s)
        return;
    int leased = 1, n = 0;
    T_CHECK(store_shards_each(s, 1, 1u << NQ_SHARD_LEASED, count_rows, &n) == 0 && n == 6);
    shard_refused(s, "UPDATE shards SET attempts = 101 WHERE idx = 3", leased,
                  "job 1 shard 3: column attempts holds 101 (allowed 0..100)");
    shard_refused(s, "UPDATE shards SET attempts = -1 WHERE idx = 3", leased, "column attempts holds -1");
    shard_refused(s, "UPDATE shards SET spec = zeroblob(257) WHERE idx = 3", leased,
                  "job 1 shard 3: column spec holds a blob of 257 bytes (allowed NULL or a blob of at most "
                  "256 bytes)");
    shard_refused(s, "UPDATE shards SET spec = 'text' WHERE idx = 3", leased, "column spec holds 'text'");
    shard_refused(s, "UPDATE shards SET lease = 1.5 WHERE idx = 3",
                     leased, "column lease holds the real 1.5");
    shard_refused(s, "UPDATE shards SET algo = printf('%.32c', 'q') WHERE idx = 3", leased,
                  "column algo holds 'qqqq");
    shard_refused(s, "UPDATE shards SET algo = 'a' || char(10) WHERE idx = 3",
                     leased, "column algo holds 'a?'");
    shard_refused(s, "UPDATE shards SET cost = -1 WHERE idx = 3", leased, "column cost holds the real -1");
    shard_refused(s, "UPDATE shards SET seed = x'00' WHERE idx = 3",
                     leased, "column seed holds a blob of 1 bytes");
    /* a state with no name: the per-state walks never meet it (by design: no scans; `nq check`
       reads every row), a get does */
    shard_refused(s, "UPDATE shards SET state = 'zzz' WHERE idx = 3",
                     0, "job 1 shard 3: column state holds 'zzz'");
    store_destroy(&s);
    db_remove();
}

/* store_job_create holds a spec to the limits a read holds the row to: nothing is written. */
T_TEST(test_store_writes_only_what_it_would_read_back)
{
    nq_store_t *s = store_made();
    if (!s)
        return;
    char err[300];
    uint64_t id = 0;
    nq_job_spec_t good = { .kind = NQ_KIND_COUNT, .n = 10, .depth = 1, .encoding = NQ_SHARD_ENCODING,
                           .max_attempts = 3, .quorum = 1 };
    nq_job_spec_t quorum = good, attempts = good, depth = good;
    quorum.quorum = 4;
    attempts.max_attempts = 101;
    depth.depth = 9;
    struct { nq_job_spec_t spec; uint64_t shards; const char *want; } bad[] = {
        { good, 1001, "shards_total" },
        { good, 0, "at least one shard" },
        { { .kind = 9, .n = 10, .max_attempts = 3, .quorum = 1 }, 1, "kind" },
        { quorum, 75, "quorum" },
        { attempts, 75, "max_attempts" },
        { depth, 75, "depth" },
        { { .kind = NQ_KIND_SOLVE, .n = 20, .restarts = 3, .max_attempts = 3, .quorum = 1 }, 4,
          "shards_total" },
        { { .kind = NQ_KIND_SOLVE, .n = 20, .restarts = 3, .solutions = 4, .max_attempts = 3,
            .quorum = 1 }, 3, "solutions" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        T_CHECK(store_job_create(s, &bad[i].spec, bad[i].shards, NULL, NULL, &id, err, sizeof err) == -1);
        if (!strstr(err, bad[i].want))
            fprintf(stderr, "  case %zu: '%s' lacks '%s'\n", i, err, bad[i].want);
        T_CHECK(strstr(err, bad[i].want) != NULL);
    }
    active_t a = { .nloaded = 0 };
    T_CHECK(store_jobs_active(s, on_job, on_refused, &a) == 0 && a.nloaded == 2 && a.nrefused == 0);
    store_destroy(&s);
    db_remove();
}

/* The O(1) bound must hold for every real list, or a real job would be refused. */
T_TEST(test_list_bound_holds_for_real_lists)
{
    char err[200];
    int checked = 0;
    for (int kind = NQ_KIND_COUNT; kind <= NQ_KIND_ENUMERATE; kind += 2)
        for (int n = 1; n <= 12; n++) {
            int lo, hi;
            if (shard_depth_range(kind, n, &lo, &hi) != 0)
                continue;
            for (int d = lo; d <= hi && d <= lo + 3; d++) {
                nq_shards_t *l = shards_new_ex(kind, n, d, NQ_SHARD_ENCODING, err, sizeof err);
                T_CHECK(l != NULL);
                if (!l)
                    continue;
                uint64_t bound = store_list_bound(kind, (uint64_t)n, (uint32_t)d);
                if (shards_count(l) > bound)
                    fprintf(stderr, "  kind %d n %d depth %d: %llu shards > bound %llu\n", kind, n, d,
                            (unsigned long long)shards_count(l), (unsigned long long)bound);
                T_CHECK(shards_count(l) <= bound);   /* 0: no job (a job has a shard) */
                shards_destroy(&l);
                checked++;
            }
        }
    T_CHECK(checked > 50);
    T_EQ_U64(store_list_bound(NQ_KIND_COUNT, 10, 1), 1000);
    T_EQ_U64(store_list_bound(NQ_KIND_COUNT, 32, 30), NQ_SHARD_MAX_LIST);
    T_EQ_U64(store_list_bound(NQ_KIND_COUNT, UINT64_MAX, 3), NQ_SHARD_MAX_LIST);
}

T_TEST(test_method_lists)
{
    T_CHECK(store_solve_methods("") == 1 && store_solve_methods("qs4") == 1);
    T_CHECK(store_solve_methods("qs4,minconflicts-sweep,qs4-classic") == 3);
    T_CHECK(store_solve_methods("a,b,c,d,e,f,g,h") == 8);
    const char *bad[] = { "a,b,c,d,e,f,g,h,i", "qs4,", ",qs4", "qs4,,qs1", "QS4", "qs 4", "qs4;rm",
                          "abcdefghijklmnopqrstuvwxyzabcdef" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        T_CHECK(store_solve_methods(bad[i]) == 0);
    T_CHECK(store_solve_methods("abcdefghijklmnopqrstuvwxyzabcde") == 1);   /* 31 bytes: a TASK's algo */
}

T_RUN_ALL()
