/*
 * Shards in the store: reading rows (checked), walking a job's rows in one state through the
 * open-state index, leasing (a row is made the first time a shard is leased, and the frontier
 * moves with it), releasing, cancelling and retrying. A shard that was never leased has no row:
 * its descriptor is a function of the job (schema/README.md).
 */
#include "clock.h"
#include "log.h"
#include "store_check.h"
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    S_SHARD_GET, S_SHARDS_ONE_STATE, S_SHARDS_STATES, S_JOB_FRONTIER, S_SHARD_LEASE, S_SHARD_VOTED,
    S_SHARD_RELEASE, S_JOB_FAILED_ADD, S_SHARDS_CANCEL, S_ENUM_RETRY_DELETE, S_CONFIRM_RETRY_DELETE,
    S_SHARDS_RETRY, S_JOB_RETRY_COUNTS, S_FAILURE_SEEN, S_FAILURE_ADD, S_FAILURE_RETRY_DELETE, S_JOB_BACK,
    S_COUNT
};

static const char *const sql_text[S_COUNT] = {
    [S_SHARD_GET] = "SELECT " STORE_SHARD_COLUMNS " FROM shards WHERE job = ?1 AND idx = ?2",
    /* One state: the (job, state) index yields rows already by idx. The partial index (004)
       leaves done rows out; SQLite uses it only when the query repeats its condition. */
    [S_SHARDS_ONE_STATE] =
        "SELECT " STORE_SHARD_COLUMNS " FROM shards"
        " WHERE job = ?1 AND state = ?2 AND state <> 'done' AND idx >= ?3 ORDER BY idx LIMIT ?4",
    /* Several states: walk the primary key (a sort per chunk over the index would be quadratic). */
    [S_SHARDS_STATES] =
        "SELECT " STORE_SHARD_COLUMNS " FROM shards"
        " WHERE job = ?1 AND idx >= ?3 AND +state IN (?5, ?6, ?7, ?8, ?9, ?10)"
        " ORDER BY idx LIMIT ?4",
    [S_JOB_FRONTIER] =
        "UPDATE jobs SET frontier = ?2 WHERE id = ?1 AND frontier < ?2",
    [S_JOB_BACK] =
        "UPDATE jobs SET back = ?2 WHERE id = ?1 AND coalesce(back, shards_total) > ?2 AND ?2 >= frontier",
    /* a shard from beyond the frontier gets its row here */
    [S_SHARD_LEASE] =
        "INSERT INTO shards (job, idx, state, lease, worker, leased_at) SELECT ?1, ?2, 'leased', ?3, ?4, ?5"
        " WHERE ?2 < (SELECT shards_total FROM jobs WHERE id = ?1)"
        " ON CONFLICT (job, idx) DO UPDATE SET state = 'leased', lease = ?3, worker = ?4, leased_at = ?5"
        " WHERE state IN ('pending', 'leased')",
    /* a quorum vote came in on this lease: the row waits for the other votes as pending, unless
       another copy was leased after it (the row names the latest lease) */
    [S_SHARD_VOTED] =
        "UPDATE shards SET state = 'pending', lease = NULL, worker = NULL, leased_at = NULL"
        " WHERE job = ?1 AND idx = ?2 AND state = 'leased' AND lease = ?3",
    [S_SHARD_RELEASE] =
        "UPDATE shards SET attempts = attempts + ?3, lease = NULL, worker = NULL, leased_at = NULL,"
        " state = CASE WHEN attempts + ?3 >= (SELECT max_attempts FROM jobs WHERE id = ?1)"
        "   THEN 'failed' ELSE 'pending' END"
        " WHERE job = ?1 AND idx = ?2 AND state = 'leased' RETURNING state",
    [S_JOB_FAILED_ADD] =
        "UPDATE jobs SET shards_failed = shards_failed + ?2 WHERE id = ?1",
    [S_SHARDS_CANCEL] =
        "UPDATE shards SET state = 'cancelled', lease = NULL, worker = NULL, leased_at = NULL"
        " WHERE job = ?1 AND state IN ('pending', 'leased') AND state <> 'done'",
    [S_ENUM_RETRY_DELETE] =
        "DELETE FROM enum_solutions WHERE job = ?1 AND shard IN"
        " (SELECT idx FROM shards WHERE job = ?1 AND state IN ('failed', 'conflict') AND state <> 'done')",
    [S_CONFIRM_RETRY_DELETE] =
        "DELETE FROM confirmations WHERE job = ?1 AND idx IN"
        " (SELECT idx FROM shards WHERE job = ?1 AND state IN ('failed', 'conflict') AND state <> 'done')",
    /* A retried conflict forgets both results: the next one is a fresh first result. */
    [S_FAILURE_SEEN] =
        "SELECT 1 FROM failures WHERE job = ?1 AND idx = ?2 AND who = ?3",
    [S_FAILURE_ADD] =
        "INSERT OR IGNORE INTO failures (job, idx, who) VALUES (?1, ?2, ?3)",
    [S_FAILURE_RETRY_DELETE] =
        "DELETE FROM failures WHERE job = ?1",
    [S_SHARDS_RETRY] =
        "UPDATE shards SET state = 'pending', attempts = 0, lease = NULL, worker = NULL,"
        " leased_at = NULL, status = NULL, total = NULL, uniq = NULL, nodes = NULL, res13 = NULL,"
        " res15 = NULL, elapsed = NULL, confirmations = 0, conflict_with = NULL, done_at = NULL,"
        " who = NULL, verify = 0, nodes_kind = 0"
        " WHERE job = ?1 AND state IN ('failed', 'conflict', 'cancelled') AND state <> 'done'",
    /* a retry turns every failed and conflict row back to pending */
    [S_JOB_RETRY_COUNTS] =
        "UPDATE jobs SET shards_failed = 0, shards_conflict = 0 WHERE id = ?1",
};

_Static_assert(S_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[STORE_MOD_SHARDS][id], sql_text[id]);
}

#define EACH_CHUNK 256                  /* shards read per step of store_shards_each */

/* A shard row, checked (store_check.c): 0, or -1 with the reason logged and kept (store_refusal). */
static int shard_row_read(nq_store_t *s, sqlite3_stmt *q, nq_shard_row_t *o)
{
    if (store_shard_row_read(q, o, s->refused, sizeof s->refused) == 0)
        return 0;
    char why[NQ_LOG_QLEN];
    nq_log(NQ_LOG_WARN, "store.refused", "op=shard.read reason=%s", nq_log_qs(why, sizeof why, s->refused));
    return -1;
}

int store_shard_get(nq_store_t *s, uint64_t job, uint64_t idx, nq_shard_row_t *out)
{
    sqlite3_stmt *q = stmt(s, S_SHARD_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(idx));
    int rc = sqlite3_step(q), bad = rc == SQLITE_ROW && shard_row_read(s, q, out) != 0;
    sqlite3_reset(q);
    if (bad)
        return -1;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : store_fail(s, "shard.get", rc);
}

/* Reads up to EACH_CHUNK rows from idx `from` on into rows[]; *n = how many. */
static int shards_chunk(nq_store_t *s, uint64_t job, unsigned mask, uint64_t from,
                        nq_shard_row_t *rows, size_t *n)
{
    /* one open state: its range of the open-state index; done rows are not in it (004) */
    int single = (mask & (mask - 1)) == 0 && !(mask & (1u << NQ_SHARD_DONE));
    sqlite3_stmt *q = stmt(s, single ? S_SHARDS_ONE_STATE : S_SHARDS_STATES);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 3, i64(from));
    sqlite3_bind_int(q, 4, EACH_CHUNK);
    for (int st = 0, k = 0; st <= NQ_SHARD_CANCELLED; st++)
        if (mask & (1u << st))
            sqlite3_bind_text(q, single ? 2 : 5 + k++, store_shard_state_name((nq_shard_state_t)st), -1, SQLITE_STATIC);
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (shard_row_read(s, q, &rows[(*n)++]) != 0)
            break;
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return -2;                      /* a refused row: the job's shards cannot be trusted */
    return rc == SQLITE_DONE ? 0 : store_fail(s, "shards.each", rc);
}

/*
 * In chunks, with the statement reset before fn runs: fn may then change the
 * shards it is shown (lease, cancel) or call the store again, without the
 * undefined effects of writing a table under a running SELECT.
 */
int store_shards_each(nq_store_t *s, uint64_t job, unsigned state_mask,
                      int (*fn)(void *ud, const nq_shard_row_t *r), void *ud)
{
    if (state_mask == 0 || state_mask >= (1u << (NQ_SHARD_CANCELLED + 1)))
        return state_mask == 0 ? 0 : -1;
    nq_shard_row_t *rows = malloc(EACH_CHUNK * sizeof *rows);
    if (!rows)
        return -1;
    uint64_t from = 0;
    size_t n;
    int rc;
    do {
        rc = shards_chunk(s, job, state_mask, from, rows, &n);
        for (size_t i = 0; rc == 0 && i < n; i++)
            rc = fn(ud, &rows[i]);
        if (n > 0)
            from = rows[n - 1].idx + 1;
    } while (rc == 0 && n == EACH_CHUNK);
    free(rows);
    return rc;
}

/* Statement id (S_JOB_FRONTIER or S_JOB_BACK) on (job, pos). */
static int job_end(nq_store_t *s, int id, uint64_t job, uint64_t pos)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(pos));
    int e = store_step_done(q);
    return e ? store_fail(s, "job.frontier", e) : 0;
}

int store_shard_lease(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease, const char *worker,
                      uint64_t frontier)
{
    return store_shard_lease_at(s, job, idx, lease, worker, frontier, UINT64_MAX);
}

/* 0 done, 1 not leasable (decided, or cancelled), -1 DB error. frontier > 0: the row is the first
   one at order position frontier - 1, and the job's frontier moves past it in the same step;
   back < UINT64_MAX: the row is the one at position back, and the job's back moves down to it. */
int store_shard_lease_at(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease, const char *worker,
                         uint64_t frontier, uint64_t back)
{
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_SHARD_LEASE);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
        sqlite3_bind_int64(q, 3, i64(lease));
        if (worker)
            sqlite3_bind_text(q, 4, worker, -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 5, nq_wall());
        int e = store_step_done(q);
        rc = e ? store_fail(s, "shard.lease", e) : (sqlite3_changes(s->db) == 1 ? 0 : 1);
    }
    if (rc == 0 && frontier > 0)
        rc = job_end(s, S_JOB_FRONTIER, job, frontier);
    if (rc == 0 && back != UINT64_MAX)
        rc = job_end(s, S_JOB_BACK, job, back);
    return store_tx_leave(s, own, rc);
}

/* 0 released (*failed says whether it reached max_attempts), 1 not leased, -1 DB error. */
int store_shard_voted(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease)
{
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_SHARD_VOTED);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
        sqlite3_bind_int64(q, 3, i64(lease));
        int e = store_step_done(q);
        rc = e ? store_fail(s, "shard.voted", e) : 0;
    }
    return store_tx_leave(s, own, rc);
}

/* Runs statement id on (job, idx, who): 1 it returned a row, 0 it did not, -1 error. */
static int failure_stmt(nq_store_t *s, int id, uint64_t job, uint64_t idx, int64_t who)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(idx));
    sqlite3_bind_int64(q, 3, who);
    int e = sqlite3_step(q);
    sqlite3_reset(q);
    return e == SQLITE_ROW ? 1 : e == SQLITE_DONE ? 0 : store_fail(s, "shard.failure", e);
}

int store_shard_release(nq_store_t *s, uint64_t job, uint64_t idx, int count_attempt, int *failed)
{
    return store_shard_release_by(s, job, idx, count_attempt, 0, failed);
}

int store_shard_release_by(nq_store_t *s, uint64_t job, uint64_t idx, int count_attempt, int64_t who,
                           int *failed)
{
    int own, rc = -1;
    if (failed)
        *failed = 0;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    if (count_attempt && who > 0) {     /* this identity was charged for the shard before: not again */
        int seen = failure_stmt(s, S_FAILURE_SEEN, job, idx, who);
        if (seen < 0)
            return store_tx_leave(s, own, -1);
        count_attempt = !seen;
    }
    sqlite3_stmt *q = stmt(s, S_SHARD_RELEASE);
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
        sqlite3_bind_int(q, 3, count_attempt ? 1 : 0);
        int e = sqlite3_step(q);
        int now_failed = e == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(q, 0), "failed") == 0;
        if (failed)
            *failed = now_failed;
        rc = e == SQLITE_ROW ? 0 : 1;
        if (e == SQLITE_ROW)
            e = sqlite3_step(q);       /* run RETURNING to completion so the change is made */
        sqlite3_reset(q);
        if (e != SQLITE_DONE)
            rc = store_fail(s, "shard.release", e);
        else if (rc == 0 && count_attempt && who > 0 && failure_stmt(s, S_FAILURE_ADD, job, idx, who) < 0)
            rc = -1;
        else if (now_failed && (q = stmt(s, S_JOB_FAILED_ADD)) != NULL) {
            sqlite3_bind_int64(q, 1, i64(job));
            sqlite3_bind_int(q, 2, 1);
            if ((e = store_step_done(q)) != 0)
                rc = store_fail(s, "shard.release", e);
        }
    }
    return store_tx_leave(s, own, rc);
}

static int job_stmt(nq_store_t *s, int id, uint64_t job, const char *op)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    int e = store_step_done(q);
    return e ? store_fail(s, op, e) : 0;
}

int store_shards_cancel_pending(nq_store_t *s, uint64_t job)
{
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    return store_tx_leave(s, own, job_stmt(s, S_SHARDS_CANCEL, job, "shards.cancel"));
}

int store_shards_retry(nq_store_t *s, uint64_t job)
{
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    int rc = job_stmt(s, S_ENUM_RETRY_DELETE, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, S_CONFIRM_RETRY_DELETE, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, S_FAILURE_RETRY_DELETE, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, S_SHARDS_RETRY, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, S_JOB_RETRY_COUNTS, job, "shards.retry");
    return store_tx_leave(s, own, rc);
}
