/*
 * Read-only query documents (see query.h): the jobs/shards/workers/solutions
 * tables turned into msgpack maps for status, list, workers, result and export.
 *
 * Each document is packed into a private buffer inside one read transaction
 * and appended to the caller's packer only when complete, so an error leaves
 * the caller's buffer as it was. Counts are stored as the bit pattern of a u64
 * in SQLite's signed integers: read back with a cast, summed in 128 bits in C
 * (SQLite's SUM would overflow at 2^63).
 */
#include "query.h"
#include "errf.h"
#include "store.h"
#include "store_check.h"
#include "clock.h"

#include "enumerate.h"
#include "solfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- private buffer: records a failed write so OOM cannot go unnoticed ---- */

typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int failed;
} qbuf_t;

static int qbuf_write(void *data, const char *buf, size_t len)
{
    qbuf_t *b = data;
    if (b->failed || msgpack_sbuffer_write(&b->sb, buf, len) != 0) {
        b->failed = 1;
        return -1;
    }
    return 0;
}

static void qbuf_init(qbuf_t *b)
{
    msgpack_sbuffer_init(&b->sb);
    b->failed = 0;
    msgpack_packer_init(&b->pk, b, qbuf_write);
}

static void qbuf_destroy(qbuf_t *b) { msgpack_sbuffer_destroy(&b->sb); }

/* Appends already packed bytes (a finished sub-document) to pk. */
static void pk_raw(msgpack_packer *pk, const qbuf_t *b)
{
    if (b->sb.size)
        pk->callback(pk->data, b->sb.data, b->sb.size);
}

/* ---- packing helpers ---- */

static void pk_str(msgpack_packer *pk, const char *s)
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
static void pk_col_u64(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_uint64(pk, (uint64_t)sqlite3_column_int64(st, i));
}

static void pk_col_double(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_double(pk, sqlite3_column_double(st, i));
}

static void pk_col_text(msgpack_packer *pk, sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    if (!s)
        msgpack_pack_nil(pk);
    else
        pk_str(pk, (const char *)s);
}

static void col_copy(sqlite3_stmt *st, int i, char *out, size_t outlen)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    snprintf(out, outlen, "%s", s ? (const char *)s : "");
}

/* ---- statements and the read snapshot ---- */

static int db_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "database error (%s): %s", what, sqlite3_errmsg(db));
    return -2;
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_fail(db, "prepare", err, errlen);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Runs fn in one read transaction (unless the caller already has one open) into a
   private buffer, and appends the document to out only when fn succeeded. */
typedef int (*doc_fn)(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen);

static int doc_run(sqlite3 *db, doc_fn fn, void *args, msgpack_packer *out, char *err, size_t errlen)
{
    qbuf_t b;
    int began = 0, rc;
    if (sqlite3_get_autocommit(db)) {
        if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(db, "begin", err, errlen);
        began = 1;
    }
    qbuf_init(&b);
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
    qbuf_destroy(&b);
    return rc;
}


/* ---- the job document ---- */

#define ST_COUNT (NQ_SHARD_CANCELLED + 1)   /* shard states, named by store_shard_state_name */

typedef struct {
    uint64_t id, n, seed0, restarts;
    char kind[16], state[16], algo[128];
    int64_t priority;
    uint64_t shards_total, shards[ST_COUNT];
    double created, started, finished;
    int has_started, has_finished;
    unsigned __int128 total, unique, nodes;   /* sums over done shards */
    double core_seconds;
    unsigned res13, res15;                    /* the done shards' residues, summed */
    uint64_t solutions_found;
    char last_error[300];                     /* the last worker error, "" when none */
    /* spot-checks (006_spotcheck.sql): rate, checks compared, disagreeing, not decided, and the
       workers flagged in this job (the first QJOB_FLAGGED_MAX names, and how many in all) */
    uint64_t verify_ppm, checks, disagreed, checks_open, nflagged;
    char flagged[8][64];
    /* results that disagreed with a decided shard (007_decided.sql): how many, and the first
       QJOB_FLAGGED_MAX senders by name */
    uint64_t evidence, nevidence_by;
    char evidence_by[8][64];
    char waiting[160];                        /* from the broker (query_live_t), "" when not waiting */
    int refused;                              /* its row holds what nq could not have written */
} qjob_t;

#define QJOB_FLAGGED_MAX 8

/* The job's row, checked as the store checks every row it reads (store_check.h): a row that
   holds what nq could not have written is refused (-2, j->refused), never shown as a job. */
static int job_read_row(sqlite3 *db, uint64_t id, qjob_t *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, "SELECT " STORE_JOB_COLUMNS ", last_error FROM jobs WHERE id = ?", err,
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
        col_copy(st, STORE_JOB_NCOLS, j->last_error, sizeof j->last_error);
        j->seed0 = row.spec.seed0;
        j->restarts = row.spec.restarts;
        j->verify_ppm = row.spec.verify_ppm;
        j->checks = row.checks;
        j->disagreed = row.disagreed;
        j->evidence = row.evidence;
        rc = 0;
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "no job %llu", (unsigned long long)id);
        rc = -1;
    } else {
        rc = db_fail(db, "jobs", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

/*
 * Shards per state and the sums over the done ones, in O(1) of the job's size: done, failed,
 * conflict and the sums are kept in the job's row (004_campaign.sql); leased shards are
 * counted through the open-state index (as many as there are leases out); a finished job's
 * unfinished shards (cancelled, or a solve that found its solutions) are cancelled; the rest
 * are pending.
 */
static int job_scan(sqlite3 *db, qjob_t *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, "SELECT shards_failed, shards_conflict,"
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
        return db_fail(db, "jobs", err, errlen);
    nq_job_totals_t t;
    memset(&t, 0, sizeof t);
    if (store_job_sums(db, j->id, &t) != SQLITE_DONE)
        return db_fail(db, "jobs", err, errlen);
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
    j->core_seconds = t.core_seconds;
    j->res13 = t.res13;
    j->res15 = t.res15;
    return 0;
}

static int count_rows(sqlite3 *db, const char *sql, uint64_t id, uint64_t *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, sql, err, errlen);
    if (!st)
        return -2;
    if (sqlite3_bind_parameter_count(st) > 0)
        sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : db_fail(db, "count", err, errlen);
}

/* Spot-checks: the open ones through the partial index shards_verify (O(open)), the flagged
   identities of the job by name. */
static int job_spot(sqlite3 *db, qjob_t *j, char *err, size_t errlen)
{
    int rc = count_rows(db, "SELECT count(*) FROM shards WHERE job = ? AND verify <> 0", j->id,
                        &j->checks_open, err, errlen);
    sqlite3_stmt *st = rc ? NULL : prep(db, "SELECT i.worker FROM job_flagged f JOIN identities i"
                                            " ON i.id = f.who WHERE f.job = ? ORDER BY f.at", err, errlen);
    if (!st)
        return rc ? rc : -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (j->nflagged < QJOB_FLAGGED_MAX)
            col_copy(st, 0, j->flagged[j->nflagged], sizeof j->flagged[0]);
        j->nflagged++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(db, "job_flagged", err, errlen);
}

/* Who sent the evidence: distinct names from the job's rows (its primary key's range). */
static int job_evidence(sqlite3 *db, qjob_t *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, "SELECT DISTINCT worker FROM evidence WHERE job = ? LIMIT 8", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && j->nevidence_by < QJOB_FLAGGED_MAX)
        col_copy(st, 0, j->evidence_by[j->nevidence_by++], sizeof j->evidence_by[0]);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : db_fail(db, "evidence", err, errlen);
}

static int job_load(sqlite3 *db, uint64_t id, qjob_t *j, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    int rc = job_read_row(db, id, j, err, errlen);
    if (rc == 0)
        rc = job_scan(db, j, err, errlen);
    if (rc == 0 && strcmp(j->kind, "solve") == 0)
        rc = count_rows(db, "SELECT COUNT(*) FROM solutions WHERE job = ?", id,
                        &j->solutions_found, err, errlen);
    if (rc == 0 && j->verify_ppm > 0)
        rc = job_spot(db, j, err, errlen);
    if (rc == 0 && j->evidence > 0)
        rc = job_evidence(db, j, err, errlen);
    return rc;
}

static uint32_t job_npairs(const qjob_t *j)
{
    uint32_t n = 21;
    if (j->evidence > 0) n++;
    if (strcmp(j->kind, "count") == 0) n += 4;
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

/* elapsed, rate and eta: from the start to the finish (or now). */
static void pk_progress(msgpack_packer *pk, const qjob_t *j)
{
    double elapsed = 0, rate = 0;
    if (j->has_started) {
        double end = j->has_finished ? j->finished : nq_wall();
        elapsed = end > j->started ? end - j->started : 0;
    }
    if (elapsed > 0)
        rate = (double)j->shards[NQ_SHARD_DONE] / elapsed;
    pk_str(pk, "elapsed"); msgpack_pack_double(pk, elapsed);
    pk_str(pk, "rate"); msgpack_pack_double(pk, rate);
    pk_str(pk, "eta");
    uint64_t left = j->shards_total > j->shards[NQ_SHARD_DONE] ? j->shards_total - j->shards[NQ_SHARD_DONE] : 0;
    if (strcmp(j->state, "done") == 0)
        msgpack_pack_double(pk, 0);
    else if (strcmp(j->state, "running") == 0 && rate > 0)
        msgpack_pack_double(pk, (double)left / rate);
    else
        msgpack_pack_nil(pk);
}

static void pk_job_pairs(msgpack_packer *pk, const qjob_t *j)
{
    static const char *const state_keys[ST_COUNT] = {
        "shards_pending", "shards_leased", "shards_done", "shards_failed",
        "shards_conflict", "shards_cancelled"
    };
    pk_str(pk, "id"); msgpack_pack_uint64(pk, j->id);
    pk_str(pk, "kind"); pk_str(pk, j->kind);
    pk_str(pk, "n"); msgpack_pack_uint64(pk, j->n);
    pk_str(pk, "state"); pk_str(pk, j->state);
    pk_str(pk, "priority"); msgpack_pack_int64(pk, j->priority);
    pk_str(pk, "shards_total"); msgpack_pack_uint64(pk, j->shards_total);
    for (int k = 0; k < ST_COUNT; k++) {
        pk_str(pk, state_keys[k]);
        msgpack_pack_uint64(pk, j->shards[k]);
    }
    pk_str(pk, "created_at"); msgpack_pack_double(pk, j->created);
    pk_str(pk, "started_at"); pk_time(pk, j->has_started, j->started);
    pk_str(pk, "finished_at"); pk_time(pk, j->has_finished, j->finished);
    pk_str(pk, "last_error");
    if (j->last_error[0]) pk_str(pk, j->last_error);
    else msgpack_pack_nil(pk);
    pk_progress(pk, j);
    if (strcmp(j->kind, "count") == 0) {
        pk_str(pk, "total"); query_pack_u128(pk, j->total);
        pk_str(pk, "unique"); query_pack_u128(pk, j->unique);
        pk_str(pk, "nodes"); query_pack_u128(pk, j->nodes);
        pk_str(pk, "final");
        if (strcmp(j->state, "done") == 0) msgpack_pack_true(pk);
        else msgpack_pack_false(pk);
    } else if (strcmp(j->kind, "solve") == 0) {
        pk_str(pk, "algo"); pk_str(pk, j->algo);
        pk_str(pk, "solutions_found"); msgpack_pack_uint64(pk, j->solutions_found);
        pk_str(pk, "seeds_done"); msgpack_pack_uint64(pk, j->shards[NQ_SHARD_DONE]);
    } else if (strcmp(j->kind, "enumerate") == 0) {
        pk_str(pk, "solutions"); query_pack_u128(pk, j->total);
    }
    pk_str(pk, "waiting");
    if (j->waiting[0]) pk_str(pk, j->waiting);
    else msgpack_pack_nil(pk);
    pk_str(pk, "evidence"); msgpack_pack_uint64(pk, j->evidence);
    if (j->evidence > 0) {
        pk_str(pk, "evidence_by");
        msgpack_pack_array(pk, (uint32_t)j->nevidence_by);
        for (uint64_t i = 0; i < j->nevidence_by; i++)
            pk_str(pk, j->evidence_by[i]);
    }
    if (j->verify_ppm > 0) {
        pk_str(pk, "verify_rate"); msgpack_pack_double(pk, j->verify_ppm / 1e6);
        pk_str(pk, "checks"); msgpack_pack_uint64(pk, j->checks);
        pk_str(pk, "checks_disagreed"); msgpack_pack_uint64(pk, j->disagreed);
        pk_str(pk, "checks_open"); msgpack_pack_uint64(pk, j->checks_open);
        pk_str(pk, "flagged_count"); msgpack_pack_uint64(pk, j->nflagged);
        pk_str(pk, "flagged");
        uint64_t shown = j->nflagged < QJOB_FLAGGED_MAX ? j->nflagged : QJOB_FLAGGED_MAX;
        msgpack_pack_array(pk, (uint32_t)shown);
        for (uint64_t i = 0; i < shown; i++)
            pk_str(pk, j->flagged[i]);
    }
}

typedef struct { uint64_t id; const query_live_t *live; } job_args_t;

/* An active job's pending and leased figures are the broker's (copies, in memory); the store's
   would count a quorum shard with a vote in as leased for as long as it waits for a second. */
static void job_live(qjob_t *j, const query_live_t *live)
{
    uint64_t pending, leased;
    if (live && live->job && live->job(live->ud, j->id, &pending, &leased, j->waiting, sizeof j->waiting) == 0) {
        j->shards[NQ_SHARD_PENDING] = pending;
        j->shards[NQ_SHARD_LEASED] = leased;
    }
}

static int job_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const job_args_t *a = args;
    qjob_t j;
    int rc = job_load(db, a->id, &j, err, errlen);
    if (rc != 0)
        return rc;
    job_live(&j, a->live);
    msgpack_pack_map(pk, job_npairs(&j));
    pk_job_pairs(pk, &j);
    return 0;
}

int query_job(sqlite3 *db, uint64_t id, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen)
{
    job_args_t a = { id, live };
    return doc_run(db, job_doc, &a, pk, err, errlen);
}

/* ---- list ---- */

/* A job whose row is refused, as a list entry: its id, state "refused", and the reason. */
static void pk_refused(msgpack_packer *pk, uint64_t id, const char *why)
{
    msgpack_pack_map(pk, 3);
    pk_str(pk, "id"); msgpack_pack_uint64(pk, id);
    pk_str(pk, "state"); pk_str(pk, "refused");
    pk_str(pk, "last_error"); pk_str(pk, why);
}

static int list_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    (void)args;
    sqlite3_stmt *st = prep(db, "SELECT id FROM jobs ORDER BY id DESC", err, errlen);
    if (!st)
        return -2;
    qbuf_t items;
    uint32_t count = 0;
    int rc;
    qbuf_init(&items);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        qjob_t j;
        if (job_load(db, id, &j, err, errlen) == 0) {
            msgpack_pack_map(&items.pk, job_npairs(&j));
            pk_job_pairs(&items.pk, &j);
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
        pk_raw(pk, &items);
    } else if (rc == SQLITE_ROW) {
        rc = -2;   /* job_doc said why */
    } else {
        rc = db_fail(db, "jobs", err, errlen);
    }
    if (items.failed && rc == 0) {
        snprintf(err, errlen, "out of memory packing the list");
        rc = -2;
    }
    qbuf_destroy(&items);
    return rc;
}

int query_list(sqlite3 *db, msgpack_packer *pk, char *err, size_t errlen)
{
    return doc_run(db, list_doc, NULL, pk, err, errlen);
}

/* ---- workers ---- */

static void pk_worker(msgpack_packer *pk, sqlite3_stmt *st, const query_live_t *live)
{
    static const char *const keys[11] = {
        "id", "host", "pubkey", "threads", "first_seen", "last_seen",
        "shards_done", "nodes", "seconds", "conflicts", "flagged"
    };
    double seconds = sqlite3_column_double(st, 8);
    double nps = seconds > 0 ? (double)(uint64_t)sqlite3_column_int64(st, 7) / seconds : 0;
    msgpack_pack_map(pk, 15);
    for (int i = 0; i < 11; i++) {
        pk_str(pk, keys[i]);
        if (i <= 2) pk_col_text(pk, st, i);
        else if (i == 4 || i == 5 || i == 8) pk_col_double(pk, st, i);
        else if (i == 10) {
            if (sqlite3_column_int64(st, i)) msgpack_pack_true(pk);
            else msgpack_pack_false(pk);
        } else pk_col_u64(pk, st, i);
    }
    int alive = 0;
    double live_nps = 0;
    uint32_t leases = 0;
    char kernel[QUERY_KERNEL_MAX] = "";
    const char *id = (const char *)sqlite3_column_text(st, 0);
    int known = live && live->lookup && id &&
                live->lookup(live->ud, id, &alive, &live_nps, &leases, kernel) == 0;
    pk_str(pk, "nodes_per_s"); msgpack_pack_double(pk, known ? live_nps : nps);
    pk_str(pk, "alive");
    if (!live) msgpack_pack_nil(pk);
    else if (known && alive) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
    pk_str(pk, "leases");
    if (!live) msgpack_pack_nil(pk);
    else msgpack_pack_uint32(pk, known ? leases : 0);
    pk_str(pk, "kernel");               /* the worker's own words: renderers escape them */
    if (known && alive && kernel[0]) pk_str(pk, kernel);
    else msgpack_pack_nil(pk);
}

static int workers_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const query_live_t *live = args;
    uint64_t count;
    int rc = count_rows(db, "SELECT COUNT(*) FROM workers", 0, &count, err, errlen);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st = prep(db, "SELECT id, host, pubkey, threads, first_seen, last_seen, shards_done,"
                                " nodes, seconds, conflicts, flagged FROM workers ORDER BY id",
                            err, errlen);
    if (!st)
        return -2;
    msgpack_pack_array(pk, (uint32_t)count);
    uint64_t seen = 0;
    while (seen < count && sqlite3_step(st) == SQLITE_ROW) {
        pk_worker(pk, st, live);
        seen++;
    }
    sqlite3_finalize(st);
    if (seen == count)
        return 0;
    return db_fail(db, "workers", err, errlen);
}

int query_workers(sqlite3 *db, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen)
{
    return doc_run(db, workers_doc, (void *)live, pk, err, errlen);
}

/* ---- result: residues, workers, solutions, study ---- */

static int result_workers(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, "SELECT worker FROM job_workers WHERE job = ? ORDER BY worker", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    qbuf_t items;
    uint32_t count = 0;
    int rc;
    qbuf_init(&items);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        pk_col_text(&items.pk, st, 0);
        count++;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        msgpack_pack_array(pk, count);
        pk_raw(pk, &items);
    }
    qbuf_destroy(&items);
    return rc == SQLITE_DONE ? 0 : db_fail(db, "workers of job", err, errlen);
}

static int result_solutions(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db,
        "SELECT so.seed, so.hash, so.shard, so.n, sh.nodes, sh.elapsed, so.cols IS NOT NULL, so.path"
        " FROM solutions so LEFT JOIN shards sh ON sh.job = so.job AND sh.idx = so.shard"
        " WHERE so.job = ? ORDER BY so.found_at, so.hash LIMIT ?", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sqlite3_bind_int64(st, 2, QUERY_RESULT_MAX_SOLUTIONS);
    static const char *const keys[6] = { "seed", "hash", "shard", "n", "steps", "seconds" };
    qbuf_t items;
    uint32_t count = 0;
    int rc;
    qbuf_init(&items);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        msgpack_pack_map(&items.pk, 7);
        for (int i = 0; i < 6; i++) {
            pk_str(&items.pk, keys[i]);
            if (i == 1) pk_col_text(&items.pk, st, i);
            else if (i == 5) pk_col_double(&items.pk, st, i);
            else pk_col_u64(&items.pk, st, i);
        }
        pk_str(&items.pk, "where");
        if (sqlite3_column_int(st, 6)) pk_str(&items.pk, "inline");
        else pk_col_text(&items.pk, st, 7);
        count++;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        msgpack_pack_array(pk, count);
        pk_raw(pk, &items);
    }
    qbuf_destroy(&items);
    return rc == SQLITE_DONE ? 0 : db_fail(db, "solutions", err, errlen);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile p of sorted x[0..n-1], interpolating between order statistics (numpy's default). */
static double quantile(const double *x, size_t n, double p)
{
    if (n == 0)
        return 0;
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)h;
    if (lo + 1 >= n)
        return x[n - 1];
    return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}

/* 95% Wilson score interval of s successes in n trials. */
static void wilson95(uint64_t s, uint64_t n, double *lo, double *hi)
{
    const double z = 1.959963984540054;
    if (n == 0) {
        *lo = 0;
        *hi = 1;
        return;
    }
    double p = (double)s / (double)n, nn = (double)n, z2 = z * z;
    double denom = 1 + z2 / nn;
    double center = (p + z2 / (2 * nn)) / denom;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
    *lo = center - half < 0 ? 0 : center - half;
    *hi = center + half > 1 ? 1 : center + half;
}

typedef struct {
    char algo[128];
    uint64_t seeds, solved;
    double *steps, *secs;
    size_t cap;
} study_acc_t;

static int study_add(study_acc_t *a, int solved, double steps, double secs)
{
    if (a->seeds == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        double *s1 = realloc(a->steps, cap * sizeof *s1);
        if (!s1)
            return -1;
        a->steps = s1;
        double *s2 = realloc(a->secs, cap * sizeof *s2);
        if (!s2)
            return -1;
        a->secs = s2;
        a->cap = cap;
    }
    a->steps[a->seeds] = steps;
    a->secs[a->seeds] = secs;
    a->seeds++;
    a->solved += solved;
    return 0;
}

/* Packs one study entry and empties the accumulator for the next method. */
static void study_flush(msgpack_packer *pk, study_acc_t *a)
{
    double lo, hi;
    size_t n = (size_t)a->seeds;
    qsort(a->steps, n, sizeof *a->steps, cmp_double);
    qsort(a->secs, n, sizeof *a->secs, cmp_double);
    wilson95(a->solved, a->seeds, &lo, &hi);
    msgpack_pack_map(pk, 10);
    pk_str(pk, "algo"); pk_str(pk, a->algo);
    pk_str(pk, "seeds"); msgpack_pack_uint64(pk, a->seeds);
    pk_str(pk, "solved"); msgpack_pack_uint64(pk, a->solved);
    pk_str(pk, "rate"); msgpack_pack_double(pk, (double)a->solved / (double)a->seeds);
    pk_str(pk, "ci_low"); msgpack_pack_double(pk, lo);
    pk_str(pk, "ci_high"); msgpack_pack_double(pk, hi);
    pk_str(pk, "steps_median"); msgpack_pack_double(pk, quantile(a->steps, n, 0.5));
    pk_str(pk, "steps_p95"); msgpack_pack_double(pk, quantile(a->steps, n, 0.95));
    pk_str(pk, "seconds_median"); msgpack_pack_double(pk, quantile(a->secs, n, 0.5));
    pk_str(pk, "seconds_p95"); msgpack_pack_double(pk, quantile(a->secs, n, 0.95));
    a->seeds = a->solved = 0;
}

/* Adds the rows of st to the study, one entry per method as the method changes. */
static int study_scan(sqlite3_stmt *st, const qjob_t *j, study_acc_t *acc, msgpack_packer *pk,
                      uint32_t *count, int *oom)
{
    int rc;
    while (!*oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        char algo[64];
        store_solve_method(j->algo, j->restarts, (uint64_t)sqlite3_column_int64(st, 0), algo, sizeof algo);
        if (acc->seeds && strcmp(algo, acc->algo) != 0) {
            study_flush(pk, acc);
            (*count)++;
        }
        snprintf(acc->algo, sizeof acc->algo, "%s", algo);
        *oom = study_add(acc, sqlite3_column_type(st, 1) != SQLITE_NULL && sqlite3_column_int(st, 1) == 0,
                         (double)(uint64_t)sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3));
    }
    return *oom ? SQLITE_NOMEM : rc;
}

/*
 * The study over the done seeds. per_method = 0: every done seed (`nq result`). Otherwise at
 * most the first per_method done seeds of each method, read as one bounded range of the
 * primary key per method (shards are algorithm-major: method k holds idx k*restarts ..): what
 * the web page shows, so a refresh costs the same for a study of 10^3 seeds or 10^8.
 */
static int result_study(sqlite3 *db, const qjob_t *j, uint32_t per_method, msgpack_packer *pk,
                        char *err, size_t errlen)
{
    /* Methods in the order of the job's list: by idx */
    sqlite3_stmt *st = prep(db, "SELECT idx, status, nodes, elapsed FROM shards WHERE job = ?1"
                                " AND idx >= ?2 AND idx < ?3 AND +state = 'done' ORDER BY idx LIMIT ?4",
                            err, errlen);
    if (!st)
        return -2;
    uint64_t methods = 1, span = INT64_MAX;   /* per_method = 0: one pass over every method */
    if (per_method && j->restarts) {
        span = j->restarts;
        for (const char *c = j->algo; *c; c++)
            methods += *c == ',';
    }
    study_acc_t acc = { .algo = "" };
    qbuf_t items;
    uint32_t count = 0;
    int rc = SQLITE_DONE, oom = 0;
    qbuf_init(&items);
    for (uint64_t k = 0; k < methods && !oom && rc == SQLITE_DONE; k++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(k * span));
        sqlite3_bind_int64(st, 3, (sqlite3_int64)((k + 1) * span));   /* methods = 1 when span is max */
        sqlite3_bind_int64(st, 4, per_method ? (sqlite3_int64)per_method : -1);
        rc = study_scan(st, j, &acc, &items.pk, &count, &oom);
    }
    sqlite3_finalize(st);
    if (!oom && rc == SQLITE_DONE && acc.seeds) {
        study_flush(&items.pk, &acc);
        count++;
    }
    if (!oom && rc == SQLITE_DONE) {
        msgpack_pack_array(pk, count);
        pk_raw(pk, &items);
    }
    free(acc.steps);
    free(acc.secs);
    qbuf_destroy(&items);
    if (oom) {
        snprintf(err, errlen, "out of memory for the study summary");
        return -2;
    }
    return rc == SQLITE_DONE ? 0 : db_fail(db, "study", err, errlen);
}

/* The root kept by the last `nq export --manifest` (005_manifest.sql), or nil. */
static int result_manifest_root(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = prep(db, "SELECT root FROM manifests WHERE job = ?", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
        pk_col_text(pk, st, 0);
    else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        msgpack_pack_nil(pk);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(db, "manifests", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

static int result_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    qjob_t j;
    int rc = job_load(db, *(const uint64_t *)args, &j, err, errlen);
    if (rc != 0)
        return rc;
    int is_count = strcmp(j.kind, "count") == 0, is_solve = strcmp(j.kind, "solve") == 0;
    /* O(1): the total must agree with the sum of the done shards' residues; which shard
       does not is `nq check`'s question (every row) */
    int residues_ok = (unsigned)(j.total % 13) == j.res13 && (unsigned)(j.total % 15) == j.res15;
    /* count documents already carry nodes */
    uint32_t extra = 2 + (is_count ? 2 : 1) + (is_solve ? 3 : 0);
    msgpack_pack_map(pk, job_npairs(&j) + extra);
    pk_job_pairs(pk, &j);
    pk_str(pk, "core_seconds"); msgpack_pack_double(pk, j.core_seconds);
    if (!is_count) {
        pk_str(pk, "nodes"); query_pack_u128(pk, j.nodes);
    }
    pk_str(pk, "workers");
    if ((rc = result_workers(db, j.id, pk, err, errlen)) != 0)
        return rc;
    if (is_count) {
        pk_str(pk, "residues_ok"); if (residues_ok) msgpack_pack_true(pk); else msgpack_pack_false(pk);
        pk_str(pk, "manifest_root");
        if ((rc = result_manifest_root(db, j.id, pk, err, errlen)) != 0)
            return rc;
    }
    if (is_solve) {
        pk_str(pk, "solutions_total"); msgpack_pack_uint64(pk, j.solutions_found);
        pk_str(pk, "solutions");
        if ((rc = result_solutions(db, j.id, pk, err, errlen)) != 0)
            return rc;
        pk_str(pk, "study");
        if ((rc = result_study(db, &j, 0, pk, err, errlen)) != 0)
            return rc;
    }
    return 0;
}

int query_result(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    return doc_run(db, result_doc, &id, pk, err, errlen);
}

typedef struct { uint64_t id; uint32_t per_method; } study_args_t;

static int study_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const study_args_t *a = args;
    qjob_t j;
    int rc = job_load(db, a->id, &j, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(j.kind, "solve") != 0)
        return nq_errf(err, errlen, "job %llu is not a solve job", (unsigned long long)a->id);
    msgpack_pack_map(pk, 2);
    pk_str(pk, "sample_per_method"); msgpack_pack_uint32(pk, a->per_method);
    pk_str(pk, "study");
    return result_study(db, &j, a->per_method, pk, err, errlen);
}

int query_study_sample(sqlite3 *db, uint64_t id, uint32_t per_method, msgpack_packer *pk, char *err,
                       size_t errlen)
{
    study_args_t a = { id, per_method ? per_method : 1 };
    return doc_run(db, study_doc, &a, pk, err, errlen);
}

/* ---- export ---- */

typedef struct {
    uint64_t id, cursor;
    uint32_t max_rows;
    int unique_only;
} export_args_t;

static void pk_columns(msgpack_packer *pk, const char *const *names, uint32_t n)
{
    pk_str(pk, "columns");
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++)
        pk_str(pk, names[i]);
}

/* A shard without a row: pending (or cancelled with its job), described by the job alone. */
static void pk_rowless(msgpack_packer *r, const qjob_t *j, uint64_t idx, int solve)
{
    const char *state = strcmp(j->state, "pending") == 0 || strcmp(j->state, "running") == 0 ? "pending"
                                                                                                : "cancelled";
    if (!solve) {
        msgpack_pack_array(r, 10);
        msgpack_pack_uint64(r, idx);
        pk_str(r, state);
        for (int i = 2; i <= 8; i++)
            msgpack_pack_nil(r);
        msgpack_pack_uint64(r, 0);
        return;
    }
    char algo[64];
    store_solve_method(j->algo, j->restarts, idx, algo, sizeof algo);
    msgpack_pack_array(r, 7);
    msgpack_pack_uint64(r, idx);
    msgpack_pack_uint64(r, store_solve_seed(j->seed0, j->restarts, idx));
    pk_str(r, algo);
    pk_str(r, state);
    msgpack_pack_nil(r); msgpack_pack_nil(r); msgpack_pack_nil(r);
}

static void pk_shard_row(msgpack_packer *r, sqlite3_stmt *st, const qjob_t *j, uint64_t idx, int solve)
{
    if (!solve) {
        msgpack_pack_array(r, 10);
        pk_col_u64(r, st, 0); pk_col_text(r, st, 1);
        for (int i = 2; i <= 6; i++) pk_col_u64(r, st, i);
        pk_col_double(r, st, 7); pk_col_text(r, st, 8); pk_col_u64(r, st, 9);
        return;
    }
    const char *state = (const char *)sqlite3_column_text(st, 1);
    int status = sqlite3_column_int(st, 12);
    char algo[64];
    store_solve_method(j->algo, j->restarts, idx, algo, sizeof algo);   /* as leased */
    msgpack_pack_array(r, 7);
    msgpack_pack_uint64(r, idx);
    msgpack_pack_uint64(r, store_solve_seed(j->seed0, j->restarts, idx));
    pk_str(r, algo);
    if (!state || strcmp(state, "done") != 0) pk_col_text(r, st, 1);
    else pk_str(r, status == 0 ? "solved" : status == 1 ? "not found" : "error");
    pk_col_u64(r, st, 4); pk_col_double(r, st, 7); pk_col_text(r, st, 8);
}

/*
 * A page of count or solve shards: every idx from the cursor on, max_rows of them. Shards
 * with a row come from it; the others (never leased: 004_campaign.sql) are described from
 * the job, so a page costs its own rows, never a scan of the job.
 */
static int export_shards(sqlite3 *db, const qjob_t *j, const export_args_t *a,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    static const char *const count_cols[10] = { "idx", "state", "total", "unique", "nodes", "res13",
                                                "res15", "seconds", "worker", "confirmations" };
    static const char *const solve_cols[7] = { "idx", "seed", "algo", "status", "steps", "seconds",
                                               "worker" };
    int solve = strcmp(j->kind, "solve") == 0;
    uint64_t end = a->cursor < j->shards_total ? j->shards_total : a->cursor;
    if (end - a->cursor > a->max_rows)
        end = a->cursor + a->max_rows;
    sqlite3_stmt *st = prep(db, "SELECT idx, state, total, uniq, nodes, res13, res15, elapsed, worker,"
                                " confirmations, NULL, NULL, status FROM shards"
                                " WHERE job = ? AND idx >= ? AND idx < ? ORDER BY idx", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)a->cursor);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)end);
    qbuf_t rows;
    qbuf_init(&rows);
    int rc = sqlite3_step(st);
    for (uint64_t idx = a->cursor; idx < end && (rc == SQLITE_ROW || rc == SQLITE_DONE); idx++) {
        if (rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(st, 0) == idx) {
            pk_shard_row(&rows.pk, st, j, idx, solve);
            rc = sqlite3_step(st);
        } else {
            pk_rowless(&rows.pk, j, idx, solve);
        }
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        msgpack_pack_map(pk, 3);
        if (solve) pk_columns(pk, solve_cols, 7);
        else pk_columns(pk, count_cols, 10);
        pk_str(pk, "rows");
        msgpack_pack_array(pk, (uint32_t)(end - a->cursor));
        pk_raw(pk, &rows);
        pk_str(pk, "next");
        if (end < j->shards_total) msgpack_pack_uint64(pk, end);
        else msgpack_pack_nil(pk);
    }
    qbuf_destroy(&rows);
    return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : db_fail(db, "export", err, errlen);
}

/* Unpacks solution k of a shard's blob; -1 if a column is off the board (a damaged blob). */
static int sol_unpack(const uint8_t *blob, size_t bytes_per, uint64_t k, int n, uint8_t *cols)
{
    enumerate_unpack(blob + k * bytes_per, n, cols);
    for (int r = 0; r < n; r++)
        if (cols[r] >= n)
            return -1;
    return 0;
}

/* A class representative: equal to the least of its 8 board images. */
static int sol_is_canonical(const uint8_t *cols, int n)
{
    uint8_t least[16];
    enumerate_canonical(cols, n, least);
    return memcmp(least, cols, (size_t)n) == 0;
}

typedef struct {
    qbuf_t rows;
    uint32_t count, max;
    int n, unique_only, full;
    uint64_t next;
} enum_page_t;

/* Adds the solutions of one shard from position `from`; sets full/next when the page is full. */
static int enum_page_shard(enum_page_t *pg, uint64_t shard, const uint8_t *blob, uint64_t nsol,
                           uint64_t from, char *err, size_t errlen)
{
    size_t bytes_per = (size_t)(pg->n + 1) / 2;
    uint8_t cols[16];
    for (uint64_t k = from; k < nsol; k++) {
        if (sol_unpack(blob, bytes_per, k, pg->n, cols) != 0) {
            snprintf(err, errlen, "enumerate shard %llu: solution %llu has a column off the board",
                     (unsigned long long)shard, (unsigned long long)k);
            return -2;
        }
        if (pg->unique_only && !sol_is_canonical(cols, pg->n))
            continue;
        if (pg->count == pg->max) {
            pg->full = 1;
            pg->next = (shard << 32) | k;
            return 0;
        }
        msgpack_pack_array(&pg->rows.pk, 1);
        msgpack_pack_array(&pg->rows.pk, (uint32_t)pg->n);
        for (int r = 0; r < pg->n; r++)
            msgpack_pack_uint8(&pg->rows.pk, cols[r]);
        pg->count++;
    }
    return 0;
}

static int export_enum_rows(sqlite3 *db, const qjob_t *j, const export_args_t *a, enum_page_t *pg,
                            char *err, size_t errlen)
{
    uint64_t start = a->cursor >> 32, from = a->cursor & 0xffffffffu;
    sqlite3_stmt *st = prep(db, "SELECT shard, count, data FROM enum_solutions WHERE job = ? AND shard >= ?"
                                " ORDER BY shard", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)start);
    int rc = 0, step;
    while (rc == 0 && !pg->full && (step = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t shard = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_int64 nsol = sqlite3_column_int64(st, 1);
        const uint8_t *blob = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if (shard > 0xffffffffu || nsol < 0 || nsol > 0xffffffffLL ||
            len != (size_t)nsol * (size_t)((pg->n + 1) / 2)) {
            snprintf(err, errlen, "enumerate shard %llu of job %llu: stored solutions are damaged"
                     " (%lld solutions in %zu bytes)", (unsigned long long)shard,
                     (unsigned long long)j->id, (long long)nsol, len);
            rc = -2;
            break;
        }
        rc = enum_page_shard(pg, shard, blob, (uint64_t)nsol, shard == start ? from : 0, err, errlen);
    }
    if (rc == 0 && !pg->full && step != SQLITE_DONE)
        rc = db_fail(db, "enum_solutions", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

static int export_enum(sqlite3 *db, const qjob_t *j, const export_args_t *a,
                       msgpack_packer *pk, char *err, size_t errlen)
{
    static const char *const cols[1] = { "cols" };
    if (j->n < 1 || j->n > 16) {
        snprintf(err, errlen, "enumerate job %llu has n=%llu: stored solutions are for n <= 16",
                 (unsigned long long)j->id, (unsigned long long)j->n);
        return -2;
    }
    enum_page_t pg = { .max = a->max_rows, .n = (int)j->n, .unique_only = a->unique_only };
    qbuf_init(&pg.rows);
    int rc = export_enum_rows(db, j, a, &pg, err, errlen);
    if (rc == 0) {
        msgpack_pack_map(pk, 3);
        pk_columns(pk, cols, 1);
        pk_str(pk, "rows");
        msgpack_pack_array(pk, pg.count);
        pk_raw(pk, &pg.rows);
        pk_str(pk, "next");
        if (pg.full) msgpack_pack_uint64(pk, pg.next);
        else msgpack_pack_nil(pk);
    }
    qbuf_destroy(&pg.rows);
    return rc;
}

static int export_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const export_args_t *a = args;
    qjob_t j;
    memset(&j, 0, sizeof j);
    int rc = job_read_row(db, a->id, &j, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(j.kind, "enumerate") == 0)
        return export_enum(db, &j, a, pk, err, errlen);
    if (a->unique_only) {
        snprintf(err, errlen, "job %llu is a %s job: unique-only export applies to enumerate jobs",
                 (unsigned long long)a->id, j.kind);
        return QUERY_REFUSED;
    }
    return export_shards(db, &j, a, pk, err, errlen);
}

int query_export(sqlite3 *db, uint64_t id, uint64_t cursor, uint32_t max_rows, int unique_only,
                 msgpack_packer *pk, char *err, size_t errlen)
{
    if (max_rows < 1 || max_rows > QUERY_EXPORT_MAX_ROWS) {
        snprintf(err, errlen, "rows per page must be from 1 to %u (got %u)", QUERY_EXPORT_MAX_ROWS, max_rows);
        return QUERY_REFUSED;
    }
    if (cursor > (uint64_t)INT64_MAX) {
        snprintf(err, errlen, "bad export cursor %llu", (unsigned long long)cursor);
        return QUERY_REFUSED;
    }
    export_args_t a = { id, cursor, max_rows, unique_only };
    return doc_run(db, export_doc, &a, pk, err, errlen);
}

/* ---- one solve solution ---- */

static int solution_inline(const void *blob, size_t len, uint64_t n, uint32_t **cols,
                           char *err, size_t errlen)
{
    if (len != n * 4) {
        snprintf(err, errlen, "stored solution is damaged (%zu bytes for n=%llu)", len, (unsigned long long)n);
        return -2;
    }
    uint32_t *c = malloc(n * sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory for a solution of n=%llu", (unsigned long long)n);
        return -2;
    }
    const uint8_t *p = blob;
    for (uint64_t r = 0; r < n; r++) {
        c[r] = (uint32_t)p[4 * r] | (uint32_t)p[4 * r + 1] << 8 |
               (uint32_t)p[4 * r + 2] << 16 | (uint32_t)p[4 * r + 3] << 24;
        if (c[r] >= n) {
            snprintf(err, errlen, "stored solution is damaged (row %llu: column %u off the board)",
                     (unsigned long long)r, c[r]);
            free(c);
            return -2;
        }
    }
    *cols = c;
    return 0;
}

/* A large solution: the solution file named (relative to the DB's folder) in the row. */
static int solution_file(const char *db_dir, const char *name, uint64_t n, uint32_t **cols,
                         char *err, size_t errlen)
{
    /* The name comes from the DB: never let it point outside the DB's folder. */
    if (!*name || name[0] == '/' || strstr(name, "..")) {
        snprintf(err, errlen, "stored solution file name '%s' is not a name inside the DB's folder", name);
        return -2;
    }
    char path[4096], why[256];
    uint64_t got = 0;
    if (snprintf(path, sizeof path, "%s/%s", db_dir ? db_dir : ".", name) >= (int)sizeof path) {
        snprintf(err, errlen, "solution file path too long");
        return -2;
    }
    if (solfile_read(path, cols, &got, why, sizeof why) != SOLFILE_OK) {
        snprintf(err, errlen, "cannot read the stored solution: %s", why);
        return -2;
    }
    if (got != n) {
        free(*cols);
        *cols = NULL;
        snprintf(err, errlen, "stored solution file %s holds n=%llu, the DB says n=%llu", path,
                 (unsigned long long)got, (unsigned long long)n);
        return -2;
    }
    return 0;
}

static int solution_find(sqlite3 *db, uint64_t id, uint64_t index, const char *db_dir,
                         uint32_t **cols, uint64_t *n, char *err, size_t errlen)
{
    qjob_t j;
    memset(&j, 0, sizeof j);
    int rc = job_read_row(db, id, &j, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(j.kind, "solve") != 0) {
        return nq_errf(err, errlen, "job %llu is a %s job, not solve", (unsigned long long)id, j.kind);
    }
    sqlite3_stmt *st = prep(db, "SELECT n, cols, path FROM solutions WHERE job = ?"
                                " ORDER BY found_at, hash LIMIT 1 OFFSET ?", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)index);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *n = (uint64_t)sqlite3_column_int64(st, 0);
        const void *blob = sqlite3_column_blob(st, 1);
        if (*n < 1 || *n > (uint64_t)UINT32_MAX) {
            snprintf(err, errlen, "stored solution is damaged (n=%llu)", (unsigned long long)*n);
            rc = -2;
        } else if (blob) {
            rc = solution_inline(blob, (size_t)sqlite3_column_bytes(st, 1), *n, cols, err, errlen);
        } else {
            const unsigned char *path = sqlite3_column_text(st, 2);
            rc = solution_file(db_dir, path ? (const char *)path : "", *n, cols, err, errlen);
        }
    } else if (step == SQLITE_DONE) {
        uint64_t have = 0;
        rc = count_rows(db, "SELECT COUNT(*) FROM solutions WHERE job = ?", id, &have, err, errlen);
        if (rc == 0) {
            snprintf(err, errlen, "job %llu has %llu solution(s): no solution %llu (counting from 0)",
                     (unsigned long long)id, (unsigned long long)have, (unsigned long long)index);
            rc = -1;
        }
    } else {
        rc = db_fail(db, "solutions", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

int query_solution(sqlite3 *db, const char *db_dir, uint64_t id, uint64_t index,
                   uint32_t **cols, uint64_t *n, char *err, size_t errlen)
{
    *cols = NULL;
    *n = 0;
    if (index > (uint64_t)INT64_MAX) {
        return nq_errf(err, errlen, "no solution %llu", (unsigned long long)index);
    }
    int began = 0;
    if (sqlite3_get_autocommit(db)) {
        if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(db, "begin", err, errlen);
        began = 1;
    }
    int rc = solution_find(db, id, index, db_dir, cols, n, err, errlen);
    if (began)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != 0)
        *n = 0;
    return rc;
}
