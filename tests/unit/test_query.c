/* Query documents on a DB built from the real migrations and plain SQL inserts. */
#include "t.h"

#include <math.h>
#include <stdarg.h>
#include <time.h>
#include <sqlite3.h>

#include "migrations.h"
#include "query.h"
#include "shard.h"
#include "store.h"
#include "store_check.h"
#include "render.h"
#include "solfile.h"

/* ---- DB fixtures ---- */

static sqlite3 *db_new(void)
{
    sqlite3 *db = NULL;
    T_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    for (int i = 0; i < nq_migrations_count; i++)
        T_CHECK(sqlite3_exec(db, nq_migrations[i].sql, NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static void sql(sqlite3 *db, const char *fmt, ...)
{
    va_list ap;
    char *e = NULL;
    va_start(ap, fmt);
    char *q = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (sqlite3_exec(db, q, NULL, NULL, &e) != SQLITE_OK) {
        fprintf(stderr, "  SQL failed: %s: %s\n", q, e);
        T_CHECK(0);
    }
    sqlite3_free(q);
    sqlite3_free(e);
}

/* A job row as nq writes it (the store refuses any other, store_check.h): a count or enumerate job
   of the current encoding at the shallowest depth whose list can have `shards` shards, a solve job
   of `shards` seeds of qs4. */
static void job_add(sqlite3 *db, uint64_t id, const char *kind, int n, const char *state, uint64_t shards)
{
    int k = store_kind_parse(kind), depth = 0, lo = 0, hi = 0;
    if (k != NQ_KIND_SOLVE && shard_depth_range(k, n, &lo, &hi) == 0)
        for (depth = lo; depth < hi && store_list_bound(k, (uint64_t)n, (uint32_t)depth) < shards; depth++)
            ;
    sql(db, "INSERT INTO jobs (id, kind, n, state, shards_total, created_at, depth, encoding, restarts, algo)"
        " VALUES (%llu, %Q, %d, %Q, %llu, 1000.5, %d, %d, %llu, %Q)", (unsigned long long)id, kind, n, state,
        (unsigned long long)shards, depth, k == NQ_KIND_SOLVE ? 0 : NQ_SHARD_ENCODING,
        (unsigned long long)(k == NQ_KIND_SOLVE ? shards : 0), k == NQ_KIND_SOLVE ? "qs4" : "");
}

/* The store keeps a job's counts and sums in its row (schema/011_store.sql); rows written by hand
   here get them the way that migration computes them. */
static void job_resum(sqlite3 *db, uint64_t job)
{
    const char *done = "FROM shards WHERE job = %llu AND state = 'done'";
    char q[2048];
    snprintf(q, sizeof q,
             "UPDATE jobs SET shards_done = (SELECT count(*) %s),"
             " shards_failed = (SELECT count(*) FROM shards WHERE job = %%llu AND state = 'failed'),"
             " shards_conflict = (SELECT count(*) FROM shards WHERE job = %%llu AND state = 'conflict'),"
             " total_lo = (SELECT coalesce(sum(total & 4294967295), 0) %s),"
             " total_hi = (SELECT coalesce(sum((total >> 32) & 4294967295), 0) %s),"
             " uniq_lo = (SELECT coalesce(sum(uniq & 4294967295), 0) %s),"
             " uniq_hi = (SELECT coalesce(sum((uniq >> 32) & 4294967295), 0) %s),"
             " nodes_lo = (SELECT coalesce(sum(nodes & 4294967295), 0) %s),"
             " nodes_hi = (SELECT coalesce(sum((nodes >> 32) & 4294967295), 0) %s),"
             " res13_sum = (SELECT coalesce(sum(res13), 0) %s), res15_sum = (SELECT coalesce(sum(res15), 0) %s),"
             " core_seconds = (SELECT coalesce(sum(elapsed), 0) %s) WHERE id = %%llu",
             done, done, done, done, done, done, done, done, done, done);
    sql(db, q, (unsigned long long)job, (unsigned long long)job, (unsigned long long)job, (unsigned long long)job,
        (unsigned long long)job, (unsigned long long)job, (unsigned long long)job, (unsigned long long)job,
        (unsigned long long)job, (unsigned long long)job, (unsigned long long)job, (unsigned long long)job,
        (unsigned long long)job, (unsigned long long)job);
    sql(db, "DELETE FROM job_workers WHERE job = %llu", (unsigned long long)job);
    sql(db, "INSERT INTO job_workers (job, worker, shards) SELECT job, worker, count(*) FROM shards"
            " WHERE job = %llu AND state = 'done' AND worker IS NOT NULL GROUP BY worker", (unsigned long long)job);
}

typedef struct {
    const char *state, *worker, *algo;
    uint64_t total, uniq, nodes, seed;
    double elapsed;
    int status;
} shard_t;

/* Counts go in as the bit pattern of a u64, as the store writes them. */
static void shard_add(sqlite3 *db, uint64_t job, uint64_t idx, const shard_t *s)
{
    sqlite3_stmt *st = NULL;
    T_CHECK(sqlite3_prepare_v2(db, "INSERT INTO shards (job, idx, state, worker, algo, total, uniq, nodes, res13,"
                                   " res15, elapsed, seed, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)idx);
    sqlite3_bind_text(st, 3, s->state, -1, SQLITE_STATIC);
    if (s->worker) sqlite3_bind_text(st, 4, s->worker, -1, SQLITE_STATIC);
    if (s->algo) sqlite3_bind_text(st, 5, s->algo, -1, SQLITE_STATIC);
    if (strcmp(s->state, "done") == 0) {
        sqlite3_bind_int64(st, 6, (sqlite3_int64)s->total);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)s->uniq);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)s->nodes);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)(s->total % 13));
        sqlite3_bind_int64(st, 10, (sqlite3_int64)(s->total % 15));
        sqlite3_bind_double(st, 11, s->elapsed);
        sqlite3_bind_int(st, 13, s->status);
    }
    sqlite3_bind_int64(st, 12, (sqlite3_int64)s->seed);
    T_CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
    job_resum(db, job);
}

/* ---- documents ---- */

typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked up;
    char err[256];
} doc_t;

static void doc_init(doc_t *d)
{
    msgpack_sbuffer_init(&d->sb);
    msgpack_packer_init(&d->pk, &d->sb, msgpack_sbuffer_write);
    msgpack_unpacked_init(&d->up);
    d->err[0] = 0;
}

static void doc_free(doc_t *d)
{
    msgpack_unpacked_destroy(&d->up);
    msgpack_sbuffer_destroy(&d->sb);
}

/* The one object in the buffer (which must hold exactly one). */
static const msgpack_object *doc_obj(doc_t *d)
{
    size_t off = 0;
    T_CHECK(msgpack_unpack_next(&d->up, d->sb.data, d->sb.size, &off) == MSGPACK_UNPACK_SUCCESS);
    T_EQ_U64(off, d->sb.size);
    return &d->up.data;
}

static const msgpack_object *get(const msgpack_object *m, const char *k)
{
    const msgpack_object *o = render_get(m, k);
    if (!o) fprintf(stderr, "  missing key '%s'\n", k);
    T_CHECK(o != NULL);
    return o;
}

static uint64_t getu(const msgpack_object *m, const char *k)
{
    unsigned __int128 v = 0;
    int ok = render_u128(render_get(m, k), &v) == 0 && v <= UINT64_MAX;
    if (!ok) fprintf(stderr, "  key '%s' is not a u64\n", k);
    T_CHECK(ok);
    return (uint64_t)v;
}

static double getd(const msgpack_object *m, const char *k)
{
    const msgpack_object *o = render_get(m, k);
    int ok = o && o->type == MSGPACK_OBJECT_FLOAT64;
    if (!ok) fprintf(stderr, "  key '%s' is not a float\n", k);
    T_CHECK(ok);
    return ok ? o->via.f64 : NAN;
}

static int is_nil(const msgpack_object *m, const char *k)
{
    const msgpack_object *o = render_get(m, k);
    return o && o->type == MSGPACK_OBJECT_NIL;
}

static int str_is(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static int getb(const msgpack_object *m, const char *k)
{
    const msgpack_object *o = render_get(m, k);
    T_CHECK(o && o->type == MSGPACK_OBJECT_BOOLEAN);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

#define NEAR(a, b, eps) T_CHECK(fabs((double)(a) - (double)(b)) <= (eps))

/* ---- tests ---- */

/* A job row holding what nq could not have written: every document of it is refused (-2) with
   the job and column named, nothing appended; the list still lists the others, and this one as
   refused with the reason. Before, 2^63-1 shards exported page after page without end. */
T_TEST(test_refused_row)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 10, "running", 75);
    job_add(db, 2, "solve", 20, "done", 5);
    sql(db, "UPDATE jobs SET shards_total = 9223372036854775807 WHERE id = 1");
    const char *want = "job 1: column shards_total holds 9223372036854775807 (allowed 1..1000 for count "
                       "N=10 at depth 1): the DB was changed outside nq";
    doc_t d;
    uint32_t *cols = NULL;
    uint64_t n = 0;
    doc_init(&d);
    msgpack_pack_nil(&d.pk);   /* what the caller had before */
    T_CHECK(query_job(db, 1, NULL, &d.pk, d.err, sizeof d.err) == -2);
    T_EQ_STR(d.err, want);
    T_CHECK(query_result(db, 1, NULL, &d.pk, d.err, sizeof d.err) == -2 && strcmp(d.err, want) == 0);
    T_CHECK(query_export(db, 1, 0, 10, 0, &d.pk, d.err, sizeof d.err) == -2 && strcmp(d.err, want) == 0);
    T_CHECK(query_study_sample(db, 1, 5, &d.pk, d.err, sizeof d.err) == -2);
    sql(db, "UPDATE jobs SET restarts = 6 WHERE id = 2");
    T_CHECK(query_solution(db, "nq.db", 2, 0, &cols, &n, d.err, sizeof d.err) == -2 && cols == NULL);
    T_CHECK(strstr(d.err, "job 2: column shards_total holds 5 (allowed 6: restarts 6 x 1 method(s))"));
    sql(db, "UPDATE jobs SET restarts = 5 WHERE id = 2");
    T_EQ_U64(d.sb.size, 1);
    doc_free(&d);

    doc_init(&d);
    T_CHECK(query_list(db, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *l = doc_obj(&d);
    T_CHECK(l->type == MSGPACK_OBJECT_ARRAY && l->via.array.size == 2);
    if (l->type == MSGPACK_OBJECT_ARRAY && l->via.array.size == 2) {
        const msgpack_object *j2 = &l->via.array.ptr[0], *j1 = &l->via.array.ptr[1];
        T_CHECK(getu(j2, "id") == 2 && str_is(get(j2, "kind"), "solve") && str_is(get(j2, "state"), "done"));
        T_CHECK(getu(j1, "id") == 1 && str_is(get(j1, "state"), "refused"));
        T_CHECK(str_is(get(j1, "last_error"), want));
    }
    doc_free(&d);
    sqlite3_close(db);
}

/* A count job part-way through, then finished: states, sums, timing fields. */
T_TEST(test_job_count)
{
    sqlite3 *db = db_new();
    double now = (double)time(NULL);
    job_add(db, 1, "count", 8, "running", 10);
    sql(db, "UPDATE jobs SET started_at = %.3f, priority = 2 WHERE id = 1", now - 100);
    uint64_t totals[6] = { 8, 16, 0, 28, 24, 16 }, sum = 0, usum = 0;
    for (int i = 0; i < 6; i++) {
        shard_t s = { .state = "done", .worker = "w1", .total = totals[i], .uniq = totals[i] / 8,
                      .nodes = 100 + i, .elapsed = 0.5 };
        shard_add(db, 1, (uint64_t)i, &s);
        sum += totals[i];
        usum += totals[i] / 8;
    }
    shard_add(db, 1, 6, &(shard_t){ .state = "pending" });
    shard_add(db, 1, 7, &(shard_t){ .state = "pending" });
    shard_add(db, 1, 8, &(shard_t){ .state = "leased", .worker = "w2" });
    shard_add(db, 1, 9, &(shard_t){ .state = "failed" });

    doc_t d;
    doc_init(&d);
    T_CHECK(query_job(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *j = doc_obj(&d);
    T_EQ_U64(getu(j, "id"), 1);
    T_CHECK(str_is(get(j, "kind"), "count"));
    T_CHECK(str_is(get(j, "state"), "running"));
    T_EQ_U64(getu(j, "n"), 8);
    T_CHECK(get(j, "priority")->type == MSGPACK_OBJECT_POSITIVE_INTEGER && get(j, "priority")->via.u64 == 2);
    T_EQ_U64(getu(j, "shards_total"), 10);
    T_EQ_U64(getu(j, "shards_done"), 6);
    T_EQ_U64(getu(j, "shards_pending"), 2);
    T_EQ_U64(getu(j, "shards_leased"), 1);
    T_EQ_U64(getu(j, "shards_failed"), 1);
    T_EQ_U64(getu(j, "shards_conflict"), 0);
    T_EQ_U64(getu(j, "total"), sum);
    T_EQ_U64(getu(j, "unique"), usum);
    T_EQ_U64(getu(j, "nodes"), 100 * 6 + 15);
    T_CHECK(!getb(j, "final"));
    NEAR(getd(j, "created_at"), 1000.5, 1e-9);
    NEAR(getd(j, "started_at"), now - 100, 1e-3);
    T_CHECK(is_nil(j, "finished_at"));
    double el = getd(j, "elapsed");
    T_CHECK(el >= 99.9 && el < 200);
    NEAR(getd(j, "rate"), 6 / el, 1e-9);
    NEAR(getd(j, "eta"), 4 / (6 / el), 1e-6);
    doc_free(&d);

    /* Finished: elapsed is start to finish, eta 0, the totals final. */
    sql(db, "UPDATE jobs SET state = 'done', started_at = 2000, finished_at = 2050 WHERE id = 1");
    doc_init(&d);
    T_CHECK(query_job(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    j = doc_obj(&d);
    NEAR(getd(j, "elapsed"), 50, 1e-9);
    NEAR(getd(j, "rate"), 6 / 50.0, 1e-12);
    NEAR(getd(j, "eta"), 0, 0);
    T_CHECK(getb(j, "final"));
    doc_free(&d);

    /* Not started: no rate, no eta. */
    job_add(db, 2, "count", 9, "pending", 3);
    doc_init(&d);
    T_CHECK(query_job(db, 2, NULL, &d.pk, d.err, sizeof d.err) == 0);
    j = doc_obj(&d);
    T_CHECK(is_nil(j, "started_at"));
    NEAR(getd(j, "elapsed"), 0, 0);
    T_CHECK(is_nil(j, "eta"));
    T_EQ_U64(getu(j, "total"), 0);
    doc_free(&d);
    sqlite3_close(db);
}

/* A count hands out its largest shards first, so its ETA follows its nodes against the planning
   model's (machine-free), not its shards: 2 of 100 shards done with half the model's nodes after
   100 s is 100 s to go, not 4,900. Past the model, and for other kinds, the shards decide. */
T_TEST(test_eta_follows_a_counts_nodes)
{
    sqlite3 *db = db_new();
    double now = (double)time(NULL), half = shard_count_nodes(18) / 2;
    job_add(db, 1, "count", 18, "running", 100);
    sql(db, "UPDATE jobs SET started_at = %.3f WHERE id = 1", now - 100);
    for (int i = 0; i < 2; i++)
        shard_add(db, 1, (uint64_t)i, &(shard_t){ .state = "done", .worker = "w",
                                                  .nodes = (uint64_t)(half / 2) });
    doc_t d;
    doc_init(&d);
    T_CHECK(query_job(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *j = doc_obj(&d);
    double el = getd(j, "elapsed");
    NEAR(getd(j, "eta"), el, 1);
    doc_free(&d);

    sql(db, "UPDATE jobs SET nodes_lo = 0, nodes_hi = 4 WHERE id = 1");   /* 1.7e10 nodes: past the model */
    doc_init(&d);
    T_CHECK(query_job(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    j = doc_obj(&d);
    NEAR(getd(j, "eta"), getd(j, "elapsed") * 98 / 2, 1);
    doc_free(&d);

    job_add(db, 2, "solve", 100, "running", 100);
    sql(db, "UPDATE jobs SET started_at = %.3f WHERE id = 2", now - 100);
    for (int i = 0; i < 2; i++)
        shard_add(db, 2, (uint64_t)i, &(shard_t){ .state = "done", .worker = "w", .algo = "qs4",
                                                  .seed = (uint64_t)i, .nodes = 1u << 30 });
    doc_init(&d);
    T_CHECK(query_job(db, 2, NULL, &d.pk, d.err, sizeof d.err) == 0);
    j = doc_obj(&d);
    NEAR(getd(j, "eta"), getd(j, "elapsed") * 98 / 2, 1);
    doc_free(&d);
    sqlite3_close(db);
}

/* The broker counts copies: a done shard's spot-check copy, a quorum shard's second vote. */
static int live_copies(void *ud, uint64_t id, uint64_t *pending, uint64_t *leased, char *waiting, size_t len)
{
    const uint64_t *pl = ud;
    (void)id;
    *pending = pl[0];
    *leased = pl[1];
    snprintf(waiting, len, "%s", "");
    return 0;
}

/* Shards pending and leased are shards without a decision; the copies beyond them are counted
   apart. A --verify-rate job showed "759/759 done (100.0%), 16 pending" while checks waited. */
T_TEST(test_copies_counted_apart_from_shards)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 8, "running", 4);
    sql(db, "UPDATE jobs SET verify_ppm = 50000 WHERE id = 1");
    for (int i = 0; i < 3; i++)
        shard_add(db, 1, (uint64_t)i, &(shard_t){ .state = "done", .worker = "w", .total = 8, .nodes = 9 });
    const uint64_t cases[][4] = {   /* broker's pending, leased -> shards pending, leased, copies */
        { 16, 2, 0, 1 }, { 0, 1, 0, 1 }, { 3, 0, 1, 0 }, { 1, 0, 1, 0 },
    };
    const uint64_t want_copies[] = { 17, 0, 2, 0 };
    for (size_t c = 0; c < 4; c++) {
        query_live_t live = { NULL, (void *)cases[c], live_copies, NULL, NULL, NULL };
        doc_t d;
        doc_init(&d);
        T_CHECK(query_job(db, 1, &live, &d.pk, d.err, sizeof d.err) == 0);
        const msgpack_object *j = doc_obj(&d);
        T_EQ_U64(getu(j, "shards_pending"), cases[c][2]);
        T_EQ_U64(getu(j, "shards_leased"), cases[c][3]);
        if (want_copies[c]) T_EQ_U64(getu(j, "copies_open"), want_copies[c]);
        else T_CHECK(render_get(j, "copies_open") == NULL);
        doc_free(&d);
    }
    /* a job that makes no copies: an excess is figures that ran ahead of the rows, not copies */
    sql(db, "UPDATE jobs SET verify_ppm = 0 WHERE id = 1");
    query_live_t live = { NULL, (void *)cases[0], live_copies, NULL, NULL, NULL };
    doc_t d;
    doc_init(&d);
    T_CHECK(query_job(db, 1, &live, &d.pk, d.err, sizeof d.err) == 0);
    T_CHECK(render_get(doc_obj(&d), "copies_open") == NULL);
    doc_free(&d);
    sqlite3_close(db);
}

/* A missing job: -1 and a reason, and nothing appended to the caller's buffer. */
T_TEST(test_missing_job)
{
    sqlite3 *db = db_new();
    doc_t d;
    uint32_t *cols = (uint32_t *)&d;
    uint64_t n = 7;
    doc_init(&d);
    msgpack_pack_nil(&d.pk);   /* what the caller had before */
    T_CHECK(query_job(db, 42, NULL, &d.pk, d.err, sizeof d.err) == -1);
    T_EQ_STR(d.err, "no job 42");
    T_CHECK(query_result(db, 42, NULL, &d.pk, d.err, sizeof d.err) == -1);
    T_EQ_STR(d.err, "no job 42");
    T_CHECK(query_export(db, 42, 0, 10, 0, &d.pk, d.err, sizeof d.err) == -1);
    T_EQ_STR(d.err, "no job 42");
    T_CHECK(query_job(db, UINT64_MAX, NULL, &d.pk, d.err, sizeof d.err) == -1);
    T_CHECK(query_solution(db, "nq.db", 42, 0, &cols, &n, d.err, sizeof d.err) == -1);
    T_CHECK(cols == NULL && n == 0);
    T_EQ_U64(d.sb.size, 1);
    doc_free(&d);

    /* An empty DB lists nothing. */
    doc_init(&d);
    T_CHECK(query_list(db, NULL, &d.pk, d.err, sizeof d.err) == 0);
    T_CHECK(doc_obj(&d)->type == MSGPACK_OBJECT_ARRAY && doc_obj(&d)->via.array.size == 0);
    doc_free(&d);

    /* A DB without the tables: a DB error (-2) with a reason, nothing appended. */
    sqlite3 *empty = NULL;
    sqlite3_open(":memory:", &empty);
    doc_init(&d);
    T_CHECK(query_list(empty, NULL, &d.pk, d.err, sizeof d.err) == -2);
    T_CHECK(strstr(d.err, "no such table") != NULL);
    T_EQ_U64(d.sb.size, 0);
    doc_free(&d);
    sqlite3_close(empty);
    sqlite3_close(db);
}

/* Totals near 2^64 per shard sum past 2^64: packed as EXT 1, exact. */
T_TEST(test_u128_totals)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 30, "done", 500);
    unsigned __int128 want = 0, want_nodes = 0;
    for (uint64_t i = 0; i < 500; i++) {
        shard_t s = { .state = "done", .total = UINT64_MAX - i * 7919, .uniq = (UINT64_MAX >> 3) - i,
                      .nodes = UINT64_MAX - i };
        shard_add(db, 1, i, &s);
        want += s.total;
        want_nodes += s.nodes;
    }
    doc_t d;
    doc_init(&d);
    T_CHECK(query_result(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *j = doc_obj(&d), *t = get(j, "total");
    unsigned __int128 v = 0;
    T_CHECK(t->type == MSGPACK_OBJECT_EXT && t->via.ext.type == QUERY_EXT_U128 && t->via.ext.size == 16);
    T_CHECK(render_u128(t, &v) == 0 && v == want);
    T_CHECK(render_u128(get(j, "nodes"), &v) == 0 && v == want_nodes);
    T_CHECK(getb(j, "residues_ok"));
    doc_free(&d);

    /* The boundary: 2^64-1 is a plain uint, 2^64 an EXT with byte 8 set. */
    doc_init(&d);
    query_pack_u128(&d.pk, UINT64_MAX);
    T_CHECK(doc_obj(&d)->type == MSGPACK_OBJECT_POSITIVE_INTEGER && doc_obj(&d)->via.u64 == UINT64_MAX);
    doc_free(&d);
    doc_init(&d);
    query_pack_u128(&d.pk, (unsigned __int128)1 << 64);
    const msgpack_object *e = doc_obj(&d);
    T_CHECK(e->type == MSGPACK_OBJECT_EXT && e->via.ext.size == 16);
    if (e->type == MSGPACK_OBJECT_EXT && e->via.ext.size == 16)
        for (int i = 0; i < 16; i++)
            T_EQ_U64((uint8_t)e->via.ext.ptr[i], i == 8);
    doc_free(&d);
    sqlite3_close(db);
}

/* Newest first, each with its kind's fields. */
T_TEST(test_list)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 8, "done", 1);
    job_add(db, 2, "solve", 1000, "running", 4);
    sql(db, "UPDATE jobs SET algo = 'qs4' WHERE id = 2");
    sql(db, "INSERT INTO solutions (job, hash, shard, seed, n, cols, found_at) VALUES (2, 'ab', 0, 5, 1000, x'00', 1.0)");
    job_add(db, 3, "enumerate", 6, "running", 6);
    shard_add(db, 3, 0, &(shard_t){ .state = "done", .total = 1 });
    shard_add(db, 3, 1, &(shard_t){ .state = "done", .total = 3 });
    doc_t d;
    doc_init(&d);
    T_CHECK(query_list(db, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *a = doc_obj(&d);
    T_CHECK(a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 3);
    if (a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 3) {
        const msgpack_object *e = &a->via.array.ptr[0], *s = &a->via.array.ptr[1], *c = &a->via.array.ptr[2];
        T_EQ_U64(getu(e, "id"), 3);
        T_EQ_U64(getu(e, "solutions"), 4);
        T_EQ_U64(getu(s, "id"), 2);
        T_CHECK(str_is(get(s, "algo"), "qs4"));
        T_EQ_U64(getu(s, "solutions_found"), 1);
        T_EQ_U64(getu(s, "seeds_done"), 0);
        T_EQ_U64(getu(c, "id"), 1);
        T_CHECK(render_get(c, "total") != NULL && render_get(c, "algo") == NULL);
    }
    doc_free(&d);
    sqlite3_close(db);
}

static int live_solutions_777(void *ud, uint64_t id, uint64_t *n)
{
    (void)ud;
    if (id != 2)
        return -1;
    *n = 777;
    return 0;
}

/* The broker's loop answers a status with the solutions it counts in memory: counting a solve
   job's rows for every status (O(solutions) each) halved its results/s under a status loop. */
T_TEST(test_live_solutions_not_counted)
{
    sqlite3 *db = db_new();
    job_add(db, 2, "solve", 1000, "running", 4);
    sql(db, "INSERT INTO solutions (job, hash, shard, seed, n, cols, found_at) VALUES (2, 'ab', 0, 5, 1000, x'00', 1.0)");
    query_live_t live = { .solutions = live_solutions_777 };
    doc_t d;
    doc_init(&d);
    T_CHECK(query_job(db, 2, &live, &d.pk, d.err, sizeof d.err) == 0);
    T_EQ_U64(getu(doc_obj(&d), "solutions_found"), 777);
    doc_free(&d);
    doc_init(&d);
    T_CHECK(query_list(db, &live, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *a = doc_obj(&d);
    T_CHECK(a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 1 &&
            getu(&a->via.array.ptr[0], "solutions_found") == 777);
    doc_free(&d);
    doc_init(&d);
    T_CHECK(query_job(db, 2, NULL, &d.pk, d.err, sizeof d.err) == 0);   /* offline: the rows */
    T_EQ_U64(getu(doc_obj(&d), "solutions_found"), 1);
    doc_free(&d);
    sqlite3_close(db);
}

static int live_lookup(void *ud, const char *id, query_worker_live_t *w)
{
    (void)ud;
    if (strcmp(id, "w1") != 0)
        return -1;
    w->alive = 1;
    w->nodes_per_s = 123.5;
    w->leases = 3;
    snprintf(w->kernel, sizeof w->kernel, "nq-0.1.0 gpu: Some GPU (Vendor)");
    w->rtt_s = 0.3;
    return 0;
}

T_TEST(test_workers)
{
    sqlite3 *db = db_new();
    sql(db, "INSERT INTO workers (id, host, pubkey, threads, first_seen, last_seen, shards_done, nodes, seconds,"
            " conflicts, flagged) VALUES ('w1', 'h1', NULL, 4, 10, 20, 7, 1000, 4.0, 0, 0),"
            " ('w2', 'h2', 'KEY', 2, 11, 21, 1, -1, 0, 2, 1)");
    doc_t d;
    doc_init(&d);
    T_CHECK(query_workers(db, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *a = doc_obj(&d);
    T_CHECK(a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 2);
    if (a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 2) {
        const msgpack_object *w1 = &a->via.array.ptr[0], *w2 = &a->via.array.ptr[1];
        T_CHECK(str_is(get(w1, "id"), "w1") && str_is(get(w1, "host"), "h1"));
        T_CHECK(is_nil(w1, "pubkey") && str_is(get(w2, "pubkey"), "KEY"));
        T_EQ_U64(getu(w1, "threads"), 4);
        T_EQ_U64(getu(w1, "shards_done"), 7);
        NEAR(getd(w1, "nodes_per_s"), 250, 1e-9);
        NEAR(getd(w2, "nodes_per_s"), 0, 0);             /* no seconds yet: 0, not inf */
        T_EQ_U64(getu(w2, "nodes"), UINT64_MAX);          /* stored bit pattern read as u64 */
        T_CHECK(!getb(w1, "flagged") && getb(w2, "flagged"));
        T_EQ_U64(getu(w2, "conflicts"), 2);
        T_CHECK(is_nil(w1, "alive") && is_nil(w1, "leases") && is_nil(w1, "kernel") && is_nil(w1, "rtt_s"));
    }
    doc_free(&d);

    query_live_t live = { live_lookup, NULL, NULL, NULL, NULL, NULL };
    doc_init(&d);
    T_CHECK(query_workers(db, &live, &d.pk, d.err, sizeof d.err) == 0);
    a = doc_obj(&d);
    if (a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size == 2) {
        const msgpack_object *w1 = &a->via.array.ptr[0], *w2 = &a->via.array.ptr[1];
        T_CHECK(getb(w1, "alive") && !getb(w2, "alive"));
        T_EQ_U64(getu(w1, "leases"), 3);
        T_EQ_U64(getu(w2, "leases"), 0);
        NEAR(getd(w1, "nodes_per_s"), 123.5, 0);
        T_CHECK(str_is(get(w1, "kernel"), "nq-0.1.0 gpu: Some GPU (Vendor)"));   /* the device it runs on */
        T_CHECK(is_nil(w2, "kernel"));
        NEAR(getd(w1, "rtt_s"), 0.3, 0);                  /* its link's round trip */
        T_CHECK(is_nil(w2, "rtt_s"));
    }
    doc_free(&d);
    sqlite3_close(db);
}

/* Result of a count job: workers that delivered, core seconds, residues. */
T_TEST(test_result_count)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 8, "done", 4);
    const char *who[4] = { "w2", "w1", "w2", NULL };
    for (int i = 0; i < 4; i++)
        shard_add(db, 1, (uint64_t)i, &(shard_t){ .state = i < 3 ? "done" : "leased", .worker = who[i] ? who[i] : "w9",
                                                  .total = 30 + (uint64_t)i, .elapsed = 1.25 });
    doc_t d;
    doc_init(&d);
    T_CHECK(query_result(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *r = doc_obj(&d), *w = get(r, "workers");
    T_CHECK(w->type == MSGPACK_OBJECT_ARRAY && w->via.array.size == 2);
    if (w->type == MSGPACK_OBJECT_ARRAY && w->via.array.size == 2)
        T_CHECK(str_is(&w->via.array.ptr[0], "w1") && str_is(&w->via.array.ptr[1], "w2"));
    NEAR(getd(r, "core_seconds"), 3.75, 1e-12);
    T_EQ_U64(getu(r, "total"), 30 + 31 + 32);
    T_CHECK(getb(r, "residues_ok"));
    doc_free(&d);

    /* a damaged aggregate: the O(1) residue check of the result sees it; the recount finds
       the shard whose residue disagrees */
    sql(db, "UPDATE shards SET res15 = (res15 + 1) %% 15 WHERE job = 1 AND idx = 2");
    job_resum(db, 1);
    doc_init(&d);
    T_CHECK(query_result(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    r = doc_obj(&d);
    T_CHECK(!getb(r, "residues_ok"));
    doc_free(&d);
    nq_job_totals_t t;
    memset(&t, 0, sizeof t);
    T_CHECK(store_job_recount(db, 1, &t) == SQLITE_DONE);
    T_EQ_U64(t.residues_bad, 1);
    T_EQ_U64(t.shards_done, 3);
    sqlite3_close(db);
}

/* A study mixing two methods: per-method rate, Wilson interval, quantiles; solutions in found order. */
T_TEST(test_result_study)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "solve", 100, "done", 20);
    sql(db, "UPDATE jobs SET algo = 'qs4,minconflicts', restarts = 10 WHERE id = 1");
    for (int i = 0; i < 10; i++)   /* qs4: steps 1..10 (shuffled by idx), 8 of 10 solved */
        shard_add(db, 1, (uint64_t)i, &(shard_t){ .state = "done", .algo = "qs4", .nodes = (uint64_t)((i * 7) % 10 + 1),
                                                  .elapsed = 0.1 * (i + 1), .status = i < 8 ? 0 : 1,
                                                  .seed = 100 + (uint64_t)i, .worker = "w1" });
    for (int i = 10; i < 15; i++)  /* minconflicts: 5 of 5 */
        shard_add(db, 1, (uint64_t)i, &(shard_t){ .state = "done", .algo = "minconflicts", .nodes = 50,
                                                  .elapsed = 2, .status = 0, .seed = 100 + (uint64_t)i });
    shard_add(db, 1, 15, &(shard_t){ .state = "pending", .algo = "qs4" });
    sql(db, "INSERT INTO solutions (job, hash, shard, seed, n, cols, path, found_at) VALUES"
            " (1, 'bb', 3, 103, 100, x'00', NULL, 5.0), (1, 'cc', 1, 101, 200000, NULL, 'db.solutions/cc.nqsol', 4.0)");
    doc_t d;
    doc_init(&d);
    T_CHECK(query_result(db, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *r = doc_obj(&d), *sols = get(r, "solutions"), *study = get(r, "study");
    T_EQ_U64(getu(r, "solutions_total"), 2);
    T_CHECK(sols->type == MSGPACK_OBJECT_ARRAY && sols->via.array.size == 2);
    if (sols->type == MSGPACK_OBJECT_ARRAY && sols->via.array.size == 2) {
        const msgpack_object *s0 = &sols->via.array.ptr[0], *s1 = &sols->via.array.ptr[1];
        T_CHECK(str_is(get(s0, "hash"), "cc") && str_is(get(s0, "where"), "db.solutions/cc.nqsol"));
        T_EQ_U64(getu(s0, "seed"), 101);
        T_EQ_U64(getu(s0, "steps"), 8);        /* shard 1's nodes: (7 % 10) + 1 */
        NEAR(getd(s0, "seconds"), 0.2, 1e-12);
        T_CHECK(str_is(get(s1, "where"), "inline"));
        T_EQ_U64(getu(s1, "n"), 100);
    }
    T_CHECK(study->type == MSGPACK_OBJECT_ARRAY && study->via.array.size == 2);
    if (study->type == MSGPACK_OBJECT_ARRAY && study->via.array.size == 2) {
        const msgpack_object *m = &study->via.array.ptr[1], *q = &study->via.array.ptr[0];   /* list order */
        T_CHECK(str_is(get(m, "algo"), "minconflicts") && str_is(get(q, "algo"), "qs4"));
        T_EQ_U64(getu(q, "seeds"), 10);
        T_EQ_U64(getu(q, "solved"), 8);
        NEAR(getd(q, "rate"), 0.8, 1e-12);
        NEAR(getd(q, "ci_low"), 0.49016247153664183, 1e-9);   /* Wilson, z = 1.96, 8 of 10 */
        NEAR(getd(q, "ci_high"), 0.9433178485456247, 1e-9);
        NEAR(getd(q, "steps_median"), 5.5, 1e-12);
        NEAR(getd(q, "steps_p95"), 9.55, 1e-9);
        NEAR(getd(q, "seconds_median"), 0.55, 1e-9);
        NEAR(getd(q, "seconds_p95"), 0.955, 1e-9);
        T_EQ_U64(getu(m, "solved"), 5);
        NEAR(getd(m, "ci_low"), 0.5655175352168251, 1e-9);
        NEAR(getd(m, "ci_high"), 1.0, 1e-12);
        NEAR(getd(m, "steps_p95"), 50, 0);
    }
    doc_free(&d);

    /* the web page's bounded table: the first 3 done seeds of each method, both methods there */
    doc_init(&d);
    T_CHECK(query_study_sample(db, 1, 3, &d.pk, d.err, sizeof d.err) == 0);
    r = doc_obj(&d);                    /* once: unpacking again frees the first tree */
    study = get(r, "study");
    T_EQ_U64(getu(r, "sample_per_method"), 3);
    T_CHECK(study->type == MSGPACK_OBJECT_ARRAY && study->via.array.size == 2);
    if (study->type == MSGPACK_OBJECT_ARRAY && study->via.array.size == 2) {
        const msgpack_object *q = &study->via.array.ptr[0], *m = &study->via.array.ptr[1];
        T_CHECK(str_is(get(q, "algo"), "qs4") && str_is(get(m, "algo"), "minconflicts"));
        T_EQ_U64(getu(q, "seeds"), 3);         /* idx 0..2: steps 1, 8, 5; all solved */
        T_EQ_U64(getu(q, "solved"), 3);
        NEAR(getd(q, "steps_median"), 5, 1e-12);
        T_EQ_U64(getu(m, "seeds"), 3);
    }
    doc_free(&d);
    doc_init(&d);
    T_CHECK(query_study_sample(db, 99, 3, &d.pk, d.err, sizeof d.err) != 0);   /* no such job */
    doc_free(&d);
    sqlite3_close(db);
}

/* Pages through a job; returns the rows seen, checking the cursor resumes exactly. */
static uint64_t export_all(sqlite3 *db, uint64_t job, uint32_t max_rows, int unique_only,
                           void (*row_fn)(void *ud, const msgpack_object *row), void *ud)
{
    uint64_t cursor = 0, rows = 0;
    for (int page = 0; page < 100000; page++) {
        doc_t d;
        doc_init(&d);
        int rc = query_export(db, job, cursor, max_rows, unique_only, &d.pk, d.err, sizeof d.err);
        if (rc != 0) fprintf(stderr, "  export: %s\n", d.err);
        T_CHECK(rc == 0);
        const msgpack_object *p = rc == 0 ? doc_obj(&d) : NULL, *r = p ? get(p, "rows") : NULL;
        if (!r || r->type != MSGPACK_OBJECT_ARRAY) {
            doc_free(&d);
            return rows;
        }
        T_CHECK(r->via.array.size <= max_rows);
        for (uint32_t i = 0; i < r->via.array.size; i++)
            row_fn(ud, &r->via.array.ptr[i]);
        rows += r->via.array.size;
        int last = is_nil(p, "next");
        if (!last) {
            T_CHECK(r->via.array.size == max_rows);   /* only the last page is short */
            cursor = getu(p, "next");
        }
        doc_free(&d);
        if (last)
            return rows;
    }
    T_CHECK(!"export never ended");
    return rows;
}

static void count_row(void *ud, const msgpack_object *row)
{
    uint64_t *expect = ud;
    T_CHECK(row->type == MSGPACK_OBJECT_ARRAY && row->via.array.size == 11);
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 11)
        return;
    T_EQ_U64(row->via.array.ptr[0].via.u64, *expect);   /* every idx once, in order */
    if (*expect % 3 == 0) {
        T_EQ_U64(row->via.array.ptr[2].via.u64, *expect * 10);
        T_CHECK(row->via.array.ptr[10].type == MSGPACK_OBJECT_POSITIVE_INTEGER);   /* whose nodes */
    } else {
        T_CHECK(row->via.array.ptr[2].type == MSGPACK_OBJECT_NIL);
        T_CHECK(row->via.array.ptr[10].type == MSGPACK_OBJECT_NIL);
    }
    (*expect)++;
}

T_TEST(test_export_count)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "count", 12, "running", 1000);
    for (uint64_t i = 0; i < 1000; i++)
        shard_add(db, 1, i, &(shard_t){ .state = i % 3 == 0 ? "done" : "pending", .total = i * 10, .worker = "w" });
    uint32_t sizes[4] = { 1, 7, 1000, 50000 };
    for (int k = 0; k < 4; k++) {
        uint64_t expect = 0;
        T_EQ_U64(export_all(db, 1, sizes[k], 0, count_row, &expect), 1000);
        T_EQ_U64(expect, 1000);
    }
    /* The columns, and a resume in the middle. */
    doc_t d;
    doc_init(&d);
    T_CHECK(query_export(db, 1, 500, 2, 0, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *p = doc_obj(&d), *c = get(p, "columns");
    T_CHECK(c->type == MSGPACK_OBJECT_ARRAY && c->via.array.size == 11);
    if (c->type == MSGPACK_OBJECT_ARRAY && c->via.array.size == 11)
        T_CHECK(str_is(&c->via.array.ptr[0], "idx") && str_is(&c->via.array.ptr[9], "confirmations") &&
                str_is(&c->via.array.ptr[10], "nodes_kind"));
    T_EQ_U64(getu(p, "next"), 502);
    doc_free(&d);

    /* Bad requests: refused, nothing appended. */
    doc_init(&d);
    T_CHECK(query_export(db, 1, 0, 0, 0, &d.pk, d.err, sizeof d.err) == QUERY_REFUSED);
    T_CHECK(strstr(d.err, "rows per page") != NULL);
    T_CHECK(query_export(db, 1, 0, QUERY_EXPORT_MAX_ROWS + 1, 0, &d.pk, d.err, sizeof d.err) == QUERY_REFUSED);
    T_CHECK(query_export(db, 1, (uint64_t)INT64_MAX + 1, 10, 0, &d.pk, d.err, sizeof d.err) == QUERY_REFUSED);
    T_CHECK(query_export(db, 1, 0, 10, 1, &d.pk, d.err, sizeof d.err) == QUERY_REFUSED);
    T_CHECK(strstr(d.err, "enumerate") != NULL);
    T_EQ_U64(d.sb.size, 0);
    doc_free(&d);
    sqlite3_close(db);
}

T_TEST(test_export_solve)
{
    sqlite3 *db = db_new();
    job_add(db, 1, "solve", 50, "running", 3);
    /* a shard's seed and method follow from the job: seed0 + idx % restarts, algorithm-major */
    sql(db, "UPDATE jobs SET algo = 'qs4,minconflicts,qs4', restarts = 1, seed0 = -1 WHERE id = 1");
    shard_add(db, 1, 0, &(shard_t){ .state = "done", .status = 0, .seed = UINT64_MAX, .nodes = 12, .elapsed = 0.5 });
    shard_add(db, 1, 1, &(shard_t){ .state = "done", .status = 1, .seed = 2, .algo = "minconflicts" });
    shard_add(db, 1, 2, &(shard_t){ .state = "leased", .seed = 3 });
    doc_t d;
    doc_init(&d);
    T_CHECK(query_export(db, 1, 0, 10, 0, &d.pk, d.err, sizeof d.err) == 0);
    const msgpack_object *p = doc_obj(&d), *rows = get(p, "rows");
    T_CHECK(is_nil(p, "next"));
    T_CHECK(rows->type == MSGPACK_OBJECT_ARRAY && rows->via.array.size == 3);
    if (rows->type == MSGPACK_OBJECT_ARRAY && rows->via.array.size == 3) {
        const msgpack_object *r0 = rows->via.array.ptr[0].via.array.ptr, *r1 = rows->via.array.ptr[1].via.array.ptr,
                             *r2 = rows->via.array.ptr[2].via.array.ptr;
        T_EQ_U64(r0[1].via.u64, UINT64_MAX);
        T_CHECK(str_is(&r0[2], "qs4") && str_is(&r0[3], "solved"));
        T_EQ_U64(r0[4].via.u64, 12);
        T_CHECK(str_is(&r1[2], "minconflicts") && str_is(&r1[3], "not found"));
        T_CHECK(str_is(&r2[3], "leased") && r2[4].type == MSGPACK_OBJECT_NIL);
    }
    doc_free(&d);
    sqlite3_close(db);
}

/* ---- enumerate: real solutions from a tiny backtracker ---- */

typedef struct {
    int n, count;
    uint8_t sols[100][16];
} sols_t;

static int safe(const uint8_t *cols, int row, int c)
{
    for (int r = 0; r < row; r++)
        if (cols[r] == c || abs(cols[r] - c) == row - r)
            return 0;
    return 1;
}

/* Every solution in lexicographic order of the column list. */
static void solve_all(sols_t *s, uint8_t *cols, int row)
{
    if (row == s->n) {
        memcpy(s->sols[s->count++], cols, (size_t)s->n);
        return;
    }
    for (int c = 0; c < s->n; c++)
        if (safe(cols, row, c)) {
            cols[row] = (uint8_t)c;
            solve_all(s, cols, row + 1);
        }
}

/* Stores the solutions as the enumerate shards would: one shard per first column, packed. */
static void enum_store(sqlite3 *db, uint64_t job, const sols_t *s)
{
    size_t bpr = (size_t)(s->n + 1) / 2;
    for (int first = 0; first < s->n; first++) {
        uint8_t blob[100 * 8];
        int cnt = 0;
        memset(blob, 0, sizeof blob);
        for (int i = 0; i < s->count; i++) {
            if (s->sols[i][0] != first) continue;
            for (int r = 0; r < s->n; r++)
                blob[cnt * bpr + (size_t)r / 2] |= (uint8_t)(s->sols[i][r] << (4 * (r & 1)));
            cnt++;
        }
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "INSERT INTO enum_solutions (job, shard, count, data) VALUES (?,?,?,?)", -1, &st, NULL);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
        sqlite3_bind_int(st, 2, first);
        sqlite3_bind_int(st, 3, cnt);
        sqlite3_bind_blob(st, 4, blob, (int)(cnt * bpr), SQLITE_TRANSIENT);
        T_CHECK(sqlite3_step(st) == SQLITE_DONE);
        sqlite3_finalize(st);
        shard_add(db, job, (uint64_t)first, &(shard_t){ .state = "done", .total = (uint64_t)cnt });
    }
}

typedef struct {
    const sols_t *s;
    int next;          /* index in s of the next expected row (all rows) */
    int seen;
} enum_check_t;

static void enum_row(void *ud, const msgpack_object *row)
{
    enum_check_t *c = ud;
    T_CHECK(row->type == MSGPACK_OBJECT_ARRAY && row->via.array.size == 1);
    const msgpack_object *cols = &row->via.array.ptr[0];
    T_CHECK(cols->type == MSGPACK_OBJECT_ARRAY && (int)cols->via.array.size == c->s->n);
    if (cols->type != MSGPACK_OBJECT_ARRAY || (int)cols->via.array.size != c->s->n)
        return;
    if (c->next >= 0) {   /* all rows: exactly the solutions, in order */
        T_CHECK(c->next < c->s->count);
        for (int r = 0; r < c->s->n && c->next < c->s->count; r++)
            T_EQ_U64(cols->via.array.ptr[r].via.u64, c->s->sols[c->next][r]);
        c->next++;
    }
    c->seen++;
}

T_TEST(test_export_enumerate)
{
    sqlite3 *db = db_new();
    int ns[2] = { 6, 8 }, totals[2] = { 4, 92 }, classes[2] = { 1, 12 };
    for (int k = 0; k < 2; k++) {
        sols_t s = { .n = ns[k] };
        uint8_t cols[16];
        solve_all(&s, cols, 0);
        T_EQ_U64(s.count, totals[k]);
        job_add(db, (uint64_t)k + 1, "enumerate", s.n, "done", (uint64_t)s.n);
        enum_store(db, (uint64_t)k + 1, &s);
        uint32_t sizes[4] = { 1, 5, 13, 1000 };   /* pages end mid-shard and on boundaries */
        for (int p = 0; p < 4; p++) {
            enum_check_t c = { &s, 0, 0 };
            T_EQ_U64(export_all(db, (uint64_t)k + 1, sizes[p], 0, enum_row, &c), totals[k]);
            T_EQ_U64(c.next, totals[k]);
            enum_check_t u = { &s, -1, 0 };
            T_EQ_U64(export_all(db, (uint64_t)k + 1, sizes[p], 1, enum_row, &u), classes[k]);
        }
    }
    /* The job document sums the shards. */
    doc_t d;
    doc_init(&d);
    T_CHECK(query_job(db, 2, NULL, &d.pk, d.err, sizeof d.err) == 0);
    T_EQ_U64(getu(doc_obj(&d), "solutions"), 92);
    doc_free(&d);

    /* Damaged blobs are reported, not read past. */
    sql(db, "UPDATE enum_solutions SET data = x'0102' WHERE job = 2 AND shard = 3");
    doc_init(&d);
    T_CHECK(query_export(db, 2, 0, 1000, 0, &d.pk, d.err, sizeof d.err) == -2);
    T_CHECK(strstr(d.err, "damaged") != NULL);
    T_EQ_U64(d.sb.size, 0);
    doc_free(&d);
    sql(db, "UPDATE enum_solutions SET data = x'ffffffff', count = 1 WHERE job = 2 AND shard = 3");
    doc_init(&d);
    T_CHECK(query_export(db, 2, 0, 1000, 0, &d.pk, d.err, sizeof d.err) == -2);
    T_CHECK(strstr(d.err, "off the board") != NULL);
    doc_free(&d);
    sqlite3_close(db);
}

/* ---- one solution ---- */

T_TEST(test_solution)
{
    sqlite3 *db = db_new();
    const char *dir = t_tmpdir();
    char path[512], msg[256], dbp[512];
    uint32_t sol8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };
    uint8_t le[32];
    for (int i = 0; i < 32; i++)
        le[i] = (uint8_t)(sol8[i / 4] >> (8 * (i % 4)));
    job_add(db, 1, "solve", 8, "done", 2);
    job_add(db, 2, "count", 8, "done", 1);
    snprintf(dbp, sizeof dbp, "%s/q.db", dir);   /* where the rows say they live */
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "INSERT INTO solutions (job, hash, shard, seed, n, cols, path, found_at) VALUES"
                           " (1, ?, 0, 1, 8, ?, ?, ?)", -1, &st, NULL);
    /* found second, inline */
    sqlite3_bind_text(st, 1, "h-inline", -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, le, 32, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, 20.0);
    T_CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    /* found first, in a file beside the DB */
    snprintf(path, sizeof path, "%s/q.db.solutions", dir);
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
        T_CHECK(system(cmd) == 0);
    }
    snprintf(path, sizeof path, "%s/q.db.solutions/h.nqsol", dir);
    T_CHECK(solfile_write(path, sol8, 8, 1, msg, sizeof msg) == 0);
    sqlite3_bind_text(st, 1, "h-file", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, "q.db.solutions/h.nqsol", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, 10.0);
    T_CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);

    uint32_t *cols = NULL;
    uint64_t n = 0;
    for (uint64_t idx = 0; idx < 2; idx++) {
        T_CHECK(query_solution(db, dbp, 1, idx, &cols, &n, msg, sizeof msg) == 0);
        T_EQ_U64(n, 8);
        T_CHECK(cols && memcmp(cols, sol8, sizeof sol8) == 0);
        free(cols);
    }
    /* Refusals: no such index, not a solve job, a path out of the DB's folder, a damaged blob, a missing file. */
    T_CHECK(query_solution(db, dbp, 1, 2, &cols, &n, msg, sizeof msg) == -1);
    T_EQ_STR(msg, "job 1 has 2 solution(s): no solution 2 (counting from 0)");
    T_CHECK(query_solution(db, dbp, 2, 0, &cols, &n, msg, sizeof msg) == -1);
    T_EQ_STR(msg, "job 2 is a count job, not solve");
    sql(db, "UPDATE solutions SET path = '../q.db.solutions/h.nqsol' WHERE hash = 'h-file'");
    T_CHECK(query_solution(db, dbp, 1, 0, &cols, &n, msg, sizeof msg) == -2);
    T_CHECK(strstr(msg, "not a name inside") != NULL);
    sql(db, "UPDATE solutions SET path = 'q.db.solutions/gone.nqsol' WHERE hash = 'h-file'");
    T_CHECK(query_solution(db, dbp, 1, 0, &cols, &n, msg, sizeof msg) == -2);
    T_CHECK(strstr(msg, "cannot read") != NULL);
    sql(db, "UPDATE solutions SET cols = x'00010203' WHERE hash = 'h-inline'");
    T_CHECK(query_solution(db, dbp, 1, 1, &cols, &n, msg, sizeof msg) == -2);
    T_CHECK(strstr(msg, "damaged") != NULL);
    T_CHECK(cols == NULL && n == 0);
    sql(db, "UPDATE solutions SET cols = x'09000000%s' WHERE hash = 'h-inline'",
        "00000000000000000000000000000000000000000000000000000000");
    T_CHECK(query_solution(db, dbp, 1, 1, &cols, &n, msg, sizeof msg) == -2);
    T_EQ_STR(msg, "stored solution is damaged (row 0: column 9 off the board)");
    T_CHECK(cols == NULL && n == 0);
    sqlite3_close(db);
}

/* Works on a read-only connection to a file, and inside the caller's own transaction. */
T_TEST(test_connections)
{
    char path[512];
    snprintf(path, sizeof path, "%s/test_query_ro.db", t_tmpdir());
    remove(path);
    sqlite3 *w = NULL, *ro = NULL;
    T_CHECK(sqlite3_open(path, &w) == SQLITE_OK);
    sqlite3_exec(w, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    for (int i = 0; i < nq_migrations_count; i++)
        T_CHECK(sqlite3_exec(w, nq_migrations[i].sql, NULL, NULL, NULL) == SQLITE_OK);
    job_add(w, 1, "count", 5, "done", 2);
    shard_add(w, 1, 0, &(shard_t){ .state = "done", .total = 10 });
    T_CHECK(sqlite3_open_v2(path, &ro, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    doc_t d;
    doc_init(&d);
    T_CHECK(query_result(ro, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    T_EQ_U64(getu(doc_obj(&d), "total"), 10);
    doc_free(&d);
    T_CHECK(sqlite3_get_autocommit(ro));   /* its snapshot was released */

    /* The writer mid-transaction (group commit) can still query. */
    sql(w, "BEGIN");
    shard_add(w, 1, 1, &(shard_t){ .state = "done", .total = 5 });
    doc_init(&d);
    T_CHECK(query_job(w, 1, NULL, &d.pk, d.err, sizeof d.err) == 0);
    T_EQ_U64(getu(doc_obj(&d), "total"), 15);
    doc_free(&d);
    T_CHECK(!sqlite3_get_autocommit(w));   /* the caller's transaction is still open */
    sql(w, "COMMIT");
    sqlite3_close(ro);
    sqlite3_close(w);
    remove(path);
}

T_RUN_ALL()
