/*
 * Read-only query documents (see query.h): the jobs/shards/workers/solutions
 * tables turned into msgpack maps for status, list, workers, result and export.
 * This file holds what the documents share (query_impl.h), the job document and
 * the list; the others are query_workers.c, query_result.c and query_export.c.
 *
 * Each document is packed into a private buffer inside one read transaction
 * and appended to the caller's packer only when complete, so an error leaves
 * the caller's buffer as it was. Counts are stored as the bit pattern of a u64
 * in SQLite's signed integers: read back with a cast, summed in 128 bits in C
 * (SQLite's SUM would overflow at 2^63).
 */
#include "query_impl.h"
#include "errf.h"
#include "store.h"
#include "store_check.h"
#include "clock.h"

#include "enumerate.h"
#include "shard.h"
#include "solfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* ---- private buffer: records a failed write so OOM cannot go unnoticed ---- */

static int qbuf_write(void *data, const char *buf, size_t len)
{
    qbuf_t *b = data;
    if (b->failed || msgpack_sbuffer_write(&b->sb, buf, len) != 0) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

void query_buf_init(qbuf_t *b)
{
    msgpack_sbuffer_init(&b->sb);
    b->failed = 0;
    msgpack_packer_init(&b->pk, b, qbuf_write);
}

void query_buf_destroy(qbuf_t *b) { msgpack_sbuffer_destroy(&b->sb); }

/* Appends already packed bytes (a finished sub-document) to pk. */
void query_buf_append(msgpack_packer *pk, const qbuf_t *b)
{
    if (b->sb.size)
        pk->callback(pk->data, b->sb.data, b->sb.size);
}

/* ---- packing helpers ---- */

void query_pack_str(msgpack_packer *pk, const char *s)
{
    size_t len = strlen(s);
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, s, len);
}

int query_pack_u128(msgpack_packer *pk, unsigned __int128 v)
{
    if (v <= UINT64_MAX)
        return msgpack_pack_uint64(pk, (uint64_t)v);
    char le[16];
    for (int i = 0; i < 16; i++)
        le[i] = (char)(uint8_t)(v >> (8 * i));
    if (msgpack_pack_ext(pk, 16, QUERY_EXT_U128) != 0)
        return -1;
    return msgpack_pack_ext_body(pk, le, 16);
}

/* Column i as a u64 (stored as its bit pattern), a float, or text; nil when NULL. */
void query_pack_col_u64(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_uint64(pk, (uint64_t)sqlite3_column_int64(st, i));
}

void query_pack_col_double(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_double(pk, sqlite3_column_double(st, i));
}

void query_pack_col_text(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    if (!s)
        msgpack_pack_nil(pk);
    else
        query_pack_str(pk, (const char *)s);
}

void query_col_copy(sqlite3_stmt *st, int i, char *out, size_t outlen)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(out, outlen, "%s", s ? (const char *)s : "");
}

/* ---- statements and the read snapshot ---- */

int query_db_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "database error (%s): %s", what, sqlite3_errmsg(db));
    return -2;
}

sqlite3_stmt *query_prep(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        query_db_fail(db, "prepare", err, errlen);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Runs fn in one read transaction (unless the caller already has one open) into a
   private buffer, and appends the document to out only when fn succeeded. */

int query_doc_run(sqlite3 *db, doc_fn fn, void *args, msgpack_packer *out, char *err, size_t errlen)
{
    qbuf_t b;
    int began = 0, rc;
    if (sqlite3_get_autocommit(db)) {
        if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            return query_db_fail(db, "begin", err, errlen);
        began = 1;
    }
    query_buf_init(&b);
    rc = fn(db, args, &b.pk, err, errlen);
    if (began)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);   /* read-only: nothing to lose */
    if (rc == 0 && b.failed) {
        snprintf(err, errlen, "out of memory packing the document");
        rc = -2;
    }
    if (rc == 0 && out->callback(out->data, b.sb.data, b.sb.size) != 0) {
        snprintf(err, errlen, "out of memory sending the document");
        rc = -2;
    }
    query_buf_destroy(&b);
    return rc;
}

/* ---- the job document ---- */

/* The job's row, checked as the store checks every row it reads (store_check.h): a row that
   holds what nq could not have written is refused (-2, j->refused), never shown as a job. */
int query_job_read_row(sqlite3 *db, uint64_t id, qjob_t *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT " STORE_JOB_COLUMNS ", last_error FROM jobs WHERE id = ?", err,
                            errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    nq_job_row_t row;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && store_job_row_read(st, &row, err, errlen) != 0) {
        j->refused = 1;
        rc = -2;
    } else if (rc == SQLITE_ROW) {
        j->id = id;
        snprintf(j->kind, sizeof j->kind, "%s", store_kind_name(row.spec.kind));
        j->n = row.spec.n;
        snprintf(j->state, sizeof j->state, "%s", store_job_state_name(row.state));
        j->priority = row.spec.priority;
        snprintf(j->algo, sizeof j->algo, "%s", row.spec.algo);
        j->shards_total = row.shards_total;
        j->created = row.created_at;
        j->has_started = sqlite3_column_type(st, 17) != SQLITE_NULL;   /* started_at */
        j->started = row.started_at;
        j->has_finished = sqlite3_column_type(st, 18) != SQLITE_NULL;  /* finished_at */
        j->finished = row.finished_at;
        query_col_copy(st, STORE_JOB_NCOLS, j->last_error, sizeof j->last_error);
        j->seed0 = row.spec.seed0;
        j->restarts = row.spec.restarts;
        j->verify_ppm = row.spec.verify_ppm;
        j->quorum = row.spec.quorum;
        j->checks = row.checks;
        j->disagreed = row.disagreed;
        j->evidence = row.evidence;
        rc = 0;
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "no job %llu", (unsigned long long)id);
        rc = -1;
    } else {
        rc = query_db_fail(db, "jobs", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

/*
 * Shards per state and the sums over the done ones, in O(1) of the job's size: done, failed,
 * conflict and the sums are kept in the job's row (schema/011_store.sql); leased shards are
 * counted through the open-state index (as many as there are leases out); a finished job's
 * unfinished shards (cancelled, or a solve that found its solutions) are cancelled; the rest
 * are pending.
 */
static int job_scan(sqlite3 *db, qjob_t *j, int live_leases, char *err, size_t errlen)
{
    /* the broker's loop has the leases in memory (query_job_live): counting their rows for every
       status there walked one index entry a lease out (4,096 with 16 workers of 256 credits) */
    sqlite3_stmt *st = query_prep(db, live_leases
                                ? "SELECT shards_failed, shards_conflict, 0 FROM jobs WHERE id = ?1"
                                : "SELECT shards_failed, shards_conflict,"
                                " (SELECT count(*) FROM shards WHERE job = ?1 AND state = 'leased'"
                                "  AND state <> 'done')"   /* the partial index's own condition */
                                " FROM jobs WHERE id = ?1", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        j->shards[NQ_SHARD_FAILED] = (uint64_t)sqlite3_column_int64(st, 0);
        j->shards[NQ_SHARD_CONFLICT] = (uint64_t)sqlite3_column_int64(st, 1);
        j->shards[NQ_SHARD_LEASED] = (uint64_t)sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return query_db_fail(db, "jobs", err, errlen);
    nq_job_totals_t t;
    memset(&t, 0, sizeof t);
    if (store_job_sums(db, j->id, &t) != SQLITE_DONE)
        return query_db_fail(db, "jobs", err, errlen);
    j->shards[NQ_SHARD_DONE] = t.shards_done;
    uint64_t settled = t.shards_done + j->shards[NQ_SHARD_FAILED] + j->shards[NQ_SHARD_CONFLICT];
    uint64_t open = j->shards_total > settled ? j->shards_total - settled : 0;
    if (strcmp(j->state, "pending") != 0 && strcmp(j->state, "running") != 0) {
        j->shards[NQ_SHARD_CANCELLED] = open;   /* a finished job's unfinished shards: not needed */
        j->shards[NQ_SHARD_LEASED] = 0;
    } else {
        j->shards[NQ_SHARD_PENDING] = open > j->shards[NQ_SHARD_LEASED] ? open - j->shards[NQ_SHARD_LEASED] : 0;
    }
    j->total = t.total;
    j->unique = t.unique;
    j->nodes = t.nodes;
    j->fast_nodes = t.fast_nodes;
    j->fast_shards = t.fast_shards;
    j->core_seconds = t.core_seconds;
    j->res13 = t.res13;
    j->res15 = t.res15;
    return 0;
}

int query_count_rows(sqlite3 *db, const char *sql, uint64_t id, uint64_t *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, sql, err, errlen);
    if (!st)
        return -2;
    if (sqlite3_bind_parameter_count(st) > 0)
        sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : query_db_fail(db, "count", err, errlen);
}

/* Spot-checks: the open ones through the partial index shards_verify (O(open)), the flagged
   identities of the job by name. */
static int job_spot(sqlite3 *db, qjob_t *j, char *err, size_t errlen)
{
    int rc = query_count_rows(db, "SELECT count(*) FROM shards WHERE job = ? AND verify <> 0", j->id,
                        &j->checks_open, err, errlen);
    sqlite3_stmt *st = rc ? NULL : query_prep(db, "SELECT i.worker FROM job_flagged f JOIN identities i"
                                            " ON i.id = f.who WHERE f.job = ? ORDER BY f.at", err, errlen);
    if (!st)
        return rc ? rc : -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (j->nflagged < QJOB_FLAGGED_MAX)
            query_col_copy(st, 0, j->flagged[j->nflagged], sizeof j->flagged[0]);
        j->nflagged++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : query_db_fail(db, "job_flagged", err, errlen);
}

/* Who sent the evidence: distinct names from the job's rows (its primary key's range). */
static int job_evidence(sqlite3 *db, qjob_t *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT DISTINCT worker FROM evidence WHERE job = ? LIMIT 8", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && j->nevidence_by < QJOB_FLAGGED_MAX)
        query_col_copy(st, 0, j->evidence_by[j->nevidence_by++], sizeof j->evidence_by[0]);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : query_db_fail(db, "evidence", err, errlen);
}

/* A solve job's solutions: the broker's count when it has one, else its rows counted. */
static int job_solutions(sqlite3 *db, qjob_t *j, const query_live_t *live, char *err, size_t errlen)
{
    if (live && live->solutions && live->solutions(live->ud, j->id, &j->solutions_found) == 0)
        return 0;
    return query_count_rows(db, "SELECT COUNT(*) FROM solutions WHERE job = ?", j->id, &j->solutions_found,
                            err, errlen);
}

int query_job_load(sqlite3 *db, uint64_t id, const query_live_t *live, qjob_t *j, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    int rc = query_job_read_row(db, id, j, err, errlen);
    if (rc == 0)
        rc = job_scan(db, j, live && live->job, err, errlen);
    if (rc == 0 && strcmp(j->kind, "solve") == 0)
        rc = job_solutions(db, j, live, err, errlen);
    if (rc == 0 && j->verify_ppm > 0)
        rc = job_spot(db, j, err, errlen);
    if (rc == 0 && j->evidence > 0)
        rc = job_evidence(db, j, err, errlen);
    return rc;
}

uint32_t query_job_npairs(const qjob_t *j)
{
    uint32_t n = 21;
    if (j->evidence > 0) n++;
    if (j->copies > 0) n++;
    if (strcmp(j->kind, "count") == 0) n += 6;
    else if (strcmp(j->kind, "solve") == 0) n += 3;
    else if (strcmp(j->kind, "enumerate") == 0) n += 1;
    if (j->verify_ppm > 0) n += 6;
    return n;
}

static void pk_time(msgpack_packer *pk, int has, double t)
{
    if (has) msgpack_pack_double(pk, t);
    else msgpack_pack_nil(pk);
}

/*
 * How much of a job is done, from 0 to 1, for its ETA. Shards are handed out largest first, so
 * the share of shards done lags the share of work done (an ETA of 212 s where 25 s was left).
 * A count's nodes are a measure of its work that does not depend on the machine: their share of
 * the planning model's nodes for N (shard_count_nodes, within 25 % from N = 15 on) runs with
 * the work. The larger of the two shares counts; once the nodes pass the model (a model below
 * the truth), the shards alone.
 */
static double job_fraction_done(const qjob_t *j)
{
    double shards = j->shards_total ? (double)j->shards[NQ_SHARD_DONE] / (double)j->shards_total : 0;
    if (strcmp(j->kind, "count") != 0 || j->n < 1 || j->n > NQ_SHARD_MAX_N)
        return shards;
    double nodes = (double)j->nodes / shard_count_nodes((int)j->n);
    return nodes < 1 && nodes > shards ? nodes : shards;
}

/* elapsed, rate and eta: from the start to the finish (or now). */
static void pk_progress(msgpack_packer *pk, const qjob_t *j)
{
    double elapsed = 0, rate = 0, done = job_fraction_done(j);
    if (j->has_started) {
        double end = j->has_finished ? j->finished : nq_wall();
        elapsed = end > j->started ? end - j->started : 0;
    }
    if (elapsed > 0)
        rate = (double)j->shards[NQ_SHARD_DONE] / elapsed;
    if (j->has_pace)
        rate = j->pace_rate;            /* this run's, not since the first start */
    query_pack_str(pk, "elapsed"); msgpack_pack_double(pk, elapsed);
    query_pack_str(pk, "rate"); msgpack_pack_double(pk, rate);
    query_pack_str(pk, "eta");
    if (strcmp(j->state, "done") == 0)
        msgpack_pack_double(pk, 0);
    else if (j->waiting[0])
        msgpack_pack_nil(pk);           /* no ETA while it waits: "waiting" says for what */
    else if (j->has_pace && j->pace_eta >= 0)
        msgpack_pack_double(pk, j->pace_eta);
    else if (j->has_pace)
        msgpack_pack_nil(pk);           /* nothing done this run yet */
    else if (strcmp(j->state, "running") == 0 && elapsed > 0 && done > 0)
        msgpack_pack_double(pk, elapsed * (1 - done) / done);
    else
        msgpack_pack_nil(pk);
}

void query_pack_job(msgpack_packer *pk, const qjob_t *j)
{
    static const char *const state_keys[ST_COUNT] = {
        "shards_pending", "shards_leased", "shards_done", "shards_failed",
        "shards_conflict", "shards_cancelled"
    };
    query_pack_str(pk, "id"); msgpack_pack_uint64(pk, j->id);
    query_pack_str(pk, "kind"); query_pack_str(pk, j->kind);
    query_pack_str(pk, "n"); msgpack_pack_uint64(pk, j->n);
    query_pack_str(pk, "state"); query_pack_str(pk, j->state);
    query_pack_str(pk, "priority"); msgpack_pack_int64(pk, j->priority);
    query_pack_str(pk, "shards_total"); msgpack_pack_uint64(pk, j->shards_total);
    for (int k = 0; k < ST_COUNT; k++) {
        query_pack_str(pk, state_keys[k]);
        msgpack_pack_uint64(pk, j->shards[k]);
    }
    query_pack_str(pk, "created_at"); msgpack_pack_double(pk, j->created);
    query_pack_str(pk, "started_at"); pk_time(pk, j->has_started, j->started);
    query_pack_str(pk, "finished_at"); pk_time(pk, j->has_finished, j->finished);
    query_pack_str(pk, "last_error");
    if (j->last_error[0]) query_pack_str(pk, j->last_error);
    else msgpack_pack_nil(pk);
    pk_progress(pk, j);
    if (strcmp(j->kind, "count") == 0) {
        query_pack_str(pk, "total"); query_pack_u128(pk, j->total);
        query_pack_str(pk, "unique"); query_pack_u128(pk, j->unique);
        /* nodes in one unit: the CPU kernels', over the done shards that carry them; the fast GPU
           kernel's own apart, with their shards (schema/011_store.sql) */
        query_pack_str(pk, "nodes"); query_pack_u128(pk, j->nodes);
        query_pack_str(pk, "fast_nodes"); query_pack_u128(pk, j->fast_nodes);
        query_pack_str(pk, "fast_shards"); msgpack_pack_uint64(pk, j->fast_shards);
        query_pack_str(pk, "final");
        if (strcmp(j->state, "done") == 0) msgpack_pack_true(pk);
        else msgpack_pack_false(pk);
    } else if (strcmp(j->kind, "solve") == 0) {
        query_pack_str(pk, "algo"); query_pack_str(pk, j->algo);
        query_pack_str(pk, "solutions_found"); msgpack_pack_uint64(pk, j->solutions_found);
        query_pack_str(pk, "seeds_done"); msgpack_pack_uint64(pk, j->shards[NQ_SHARD_DONE]);
    } else if (strcmp(j->kind, "enumerate") == 0) {
        query_pack_str(pk, "solutions"); query_pack_u128(pk, j->total);
    }
    query_pack_str(pk, "waiting");
    if (j->waiting[0]) query_pack_str(pk, j->waiting);
    else msgpack_pack_nil(pk);
    if (j->copies > 0) {
        query_pack_str(pk, "copies_open"); msgpack_pack_uint64(pk, j->copies);
    }
    query_pack_str(pk, "evidence"); msgpack_pack_uint64(pk, j->evidence);
    if (j->evidence > 0) {
        query_pack_str(pk, "evidence_by");
        msgpack_pack_array(pk, (uint32_t)j->nevidence_by);
        for (uint64_t i = 0; i < j->nevidence_by; i++)
            query_pack_str(pk, j->evidence_by[i]);
    }
    if (j->verify_ppm > 0) {
        query_pack_str(pk, "verify_rate"); msgpack_pack_double(pk, j->verify_ppm / 1e6);
        query_pack_str(pk, "checks"); msgpack_pack_uint64(pk, j->checks);
        query_pack_str(pk, "checks_disagreed"); msgpack_pack_uint64(pk, j->disagreed);
        query_pack_str(pk, "checks_open"); msgpack_pack_uint64(pk, j->checks_open);
        query_pack_str(pk, "flagged_count"); msgpack_pack_uint64(pk, j->nflagged);
        query_pack_str(pk, "flagged");
        uint64_t shown = j->nflagged < QJOB_FLAGGED_MAX ? j->nflagged : QJOB_FLAGGED_MAX;
        msgpack_pack_array(pk, (uint32_t)shown);
        for (uint64_t i = 0; i < shown; i++)
            query_pack_str(pk, j->flagged[i]);
    }
}

typedef struct { uint64_t id; const query_live_t *live; } job_args_t;

/* An active job's pending and leased figures are the broker's (copies, in memory); the store's
   would count a quorum shard with a vote in as leased for as long as it waits for a second. They
   count copies, though: a shard under a quorum has several, and a done shard a spot-check copy,
   so "759/759 done, 16 pending" once said that checks were waiting. The shards without a decision
   are pending or leased; the copies beyond them are counted apart. */
void query_job_live(qjob_t *j, const query_live_t *live)
{
    uint64_t pending, leased;
    j->has_pace = live && live->pace && live->pace(live->ud, j->id, &j->pace_eta, &j->pace_rate) == 0;
    if (!live || !live->job ||
        live->job(live->ud, j->id, &pending, &leased, j->waiting, sizeof j->waiting) != 0)
        return;
    uint64_t open = j->shards_total, settled[3] = { j->shards[NQ_SHARD_DONE], j->shards[NQ_SHARD_FAILED],
                                                     j->shards[NQ_SHARD_CONFLICT] };
    for (int i = 0; i < 3; i++)
        open = open > settled[i] ? open - settled[i] : 0;
    uint64_t l = leased < open ? leased : open, p = pending < open - l ? pending : open - l;
    j->shards[NQ_SHARD_PENDING] = p;
    j->shards[NQ_SHARD_LEASED] = l;
    /* only a job that makes copies has any: elsewhere an excess is the live figures running ahead
       of the committed rows (the web view's snapshot is up to a second old) */
    if (j->quorum > 1 || j->verify_ppm > 0)
        j->copies = (pending - p) + (leased - l);
}

static int job_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const job_args_t *a = args;
    qjob_t j;
    int rc = query_job_load(db, a->id, a->live, &j, err, errlen);
    if (rc != 0)
        return rc;
    query_job_live(&j, a->live);
    msgpack_pack_map(pk, query_job_npairs(&j));
    query_pack_job(pk, &j);
    return 0;
}

int query_job(sqlite3 *db, uint64_t id, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen)
{
    job_args_t a = { id, live };
    return query_doc_run(db, job_doc, &a, pk, err, errlen);
}
/* ---- list ---- */

/* A job whose row is refused, as a list entry: its id, state "refused", and the reason. */
static void pk_refused(msgpack_packer *pk, uint64_t id, const char *why)
{
    msgpack_pack_map(pk, 3);
    query_pack_str(pk, "id"); msgpack_pack_uint64(pk, id);
    query_pack_str(pk, "state"); query_pack_str(pk, "refused");
    query_pack_str(pk, "last_error"); query_pack_str(pk, why);
}

static int list_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const query_live_t *live = args;
    sqlite3_stmt *st = query_prep(db, "SELECT id FROM jobs ORDER BY id DESC", err, errlen);
    if (!st)
        return -2;
    qbuf_t items;
    uint32_t count = 0;
    int rc;
    query_buf_init(&items);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        qjob_t j;
        if (query_job_load(db, id, live, &j, err, errlen) == 0) {
            query_job_live(&j, live);
            msgpack_pack_map(&items.pk, query_job_npairs(&j));
            query_pack_job(&items.pk, &j);
        } else if (j.refused) {
            pk_refused(&items.pk, id, err);    /* the others are listed; this one says why not */
        } else {
            break;
        }
        count++;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        rc = 0;
        msgpack_pack_array(pk, count);
        query_buf_append(pk, &items);
    } else if (rc == SQLITE_ROW) {
        rc = -2;   /* job_doc said why */
    } else {
        rc = query_db_fail(db, "jobs", err, errlen);
    }
    if (items.failed && rc == 0) {
        snprintf(err, errlen, "out of memory packing the list");
        rc = -2;
    }
    query_buf_destroy(&items);
    return rc;
}

int query_list(sqlite3 *db, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen)
{
    return query_doc_run(db, list_doc, (void *)live, pk, err, errlen);
}
