/*
 * Spot-checks in the store (store_spotcheck.h, schema/006_spotcheck.sql). Every statement
 * here touches one shard, one identity or one job row, except the sweep, which reads one range
 * of a job's primary key per call: none of it scans a job.
 */
#include "store_spotcheck.h"
#include "store_impl.h"
#include "clock.h"

#include <stdio.h>
#include <string.h>

enum {
    S_IDENT_UPSERT, S_IDENT_GET, S_IDENT_STORED, S_IDENT_CONFIRMED, S_IDENT_OUTVOTED, S_IDENT_NAME,
    S_SHARD_FIRST, S_SHARD_CHECKS, S_CHECK_PUT, S_JOB_CHECKS, S_SET_VERIFY, S_REPLACE, S_CONFLICT,
    S_FLAG, S_SWEEP_ROWS, S_SWEEP_MARK, S_SWEEP_SAVE, S_LOAD_SHARDS, S_LOAD_SWEEPS, S_OPEN, S_CONFIRM,
    S_COPY_ALONE, S_COUNT
};

static const char *const spot_sql[S_COUNT] = {
    [S_IDENT_UPSERT] =
        "INSERT INTO identities (ident, worker, first_seen) VALUES (?1, ?2, ?3)"
        " ON CONFLICT (ident) DO UPDATE SET worker = ?2 RETURNING id, results, confirmed, outvoted",
    [S_IDENT_GET] = "SELECT id, results, confirmed, outvoted FROM identities WHERE id = ?1",
    [S_IDENT_STORED] = "UPDATE identities SET results = results + 1 WHERE id = ?1",
    [S_IDENT_CONFIRMED] = "UPDATE identities SET confirmed = confirmed + 1 WHERE id = ?1",
    [S_IDENT_OUTVOTED] = "UPDATE identities SET outvoted = outvoted + 1 WHERE id = ?1",
    [S_IDENT_NAME] = "SELECT worker FROM identities WHERE id = ?1",
    [S_SHARD_FIRST] =
        "SELECT state, verify, coalesce(who, 0), status, total, uniq, nodes, res13, res15, elapsed,"
        " nodes_kind, done_at IS NOT NULL FROM shards WHERE job = ?1 AND idx = ?2",
    [S_SHARD_CHECKS] =
        "SELECT who, status, total, uniq, nodes, res13, res15, elapsed, nodes_kind FROM checks"
        " WHERE job = ?1 AND idx = ?2 ORDER BY seq",
    [S_CHECK_PUT] =
        "INSERT OR REPLACE INTO checks (job, idx, seq, who, status, total, uniq, nodes, res13, res15,"
        " elapsed, nodes_kind, agreed, at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [S_JOB_CHECKS] = "UPDATE jobs SET checks = checks + 1, disagreed = disagreed + ?2 WHERE id = ?1",
    [S_SET_VERIFY] = "UPDATE shards SET verify = ?3 WHERE job = ?1 AND idx = ?2",
    [S_COPY_ALONE] = "UPDATE shards SET verify = 0 WHERE job = ?1 AND idx = ?2 AND verify = 1 AND by_copy = 1",
    [S_REPLACE] =
        "UPDATE shards SET status = ?3, total = ?4, uniq = ?5, nodes = ?6, res13 = ?7, res15 = ?8,"
        " elapsed = ?9, nodes_kind = ?10, who = ?11, verify = 0, confirmations = 1,"
        " worker = coalesce((SELECT worker FROM identities WHERE id = ?11), worker)"
        " WHERE job = ?1 AND idx = ?2",
    [S_CONFLICT] =
        "UPDATE shards SET state = 'conflict', verify = 0, conflict_with = 'spot-check'"
        " WHERE job = ?1 AND idx = ?2",
    [S_FLAG] =
        "INSERT INTO job_flagged (job, who, shard, sweep, at) VALUES (?1, ?2, ?3, 0, ?4)"
        " ON CONFLICT (job, who) DO NOTHING",
    /* a range of the primary key; `+state`: the open-state index holds no done rows. A result
       another identity already confirmed is verified: not checked again */
    [S_SWEEP_ROWS] =
        "SELECT idx FROM shards WHERE job = ?1 AND idx >= ?2 AND idx < ?3 AND who = ?4"
        " AND +state = 'done' AND verify = 0 AND NOT EXISTS (SELECT 1 FROM checks c"
        " WHERE c.job = ?1 AND c.idx = shards.idx AND c.agreed = 1)",
    [S_SWEEP_MARK] = "UPDATE shards SET verify = 1 WHERE job = ?1 AND idx = ?2",
    [S_SWEEP_SAVE] = "UPDATE job_flagged SET sweep = max(sweep, ?3) WHERE job = ?1 AND who = ?2",
    /* the partial index shards_verify, which SQLite uses when the query repeats its condition */
    [S_LOAD_SHARDS] = "SELECT idx FROM shards WHERE job = ?1 AND verify <> 0 ORDER BY idx",
    /* an agreeing check is a confirmation, as a later equal result is (the manifest shows it) */
    [S_CONFIRM] = "UPDATE shards SET confirmations = confirmations + 1 WHERE job = ?1 AND idx = ?2",
    [S_OPEN] = "SELECT count(*) FROM shards WHERE job = ?1 AND verify <> 0",
    [S_LOAD_SWEEPS] =
        "SELECT f.who, f.sweep FROM job_flagged f JOIN jobs j ON j.id = f.job"
        " WHERE f.job = ?1 AND f.sweep < j.shards_total",
};

static sqlite3_stmt *spot(nq_store_t *s, int id)
{
    _Static_assert(S_COUNT <= STORE_SPOT_STMTS, "store_impl.h: raise STORE_SPOT_STMTS");
    return store_stmt_cached(s, &store_spot_slots(s)[id], spot_sql[id]);
}

/* Runs statement id with (?1, ?2) = (a, b): 0, or -1 logged. */
static int run2(nq_store_t *s, int id, int64_t a, int64_t b, const char *op)
{
    sqlite3_stmt *q = spot(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, a);
    sqlite3_bind_int64(q, 2, b);
    int rc = store_step_done(q);
    return rc ? store_fail(s, op, rc) : 0;
}

/* ---- identities ---- */

static void ident_read(sqlite3_stmt *q, nq_identity_t *out)
{
    out->id = sqlite3_column_int64(q, 0);
    out->results = (uint64_t)sqlite3_column_int64(q, 1);
    out->confirmed = (uint64_t)sqlite3_column_int64(q, 2);
    out->outvoted = (uint64_t)sqlite3_column_int64(q, 3);
}

int store_identity(nq_store_t *s, const char *ident, const char *worker, nq_identity_t *out)
{
    memset(out, 0, sizeof *out);
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = spot(s, S_IDENT_UPSERT);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, ident, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, worker, -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 3, nq_wall());
        int e = sqlite3_step(q);
        if (e == SQLITE_ROW)
            ident_read(q, out);
        sqlite3_reset(q);
        rc = e == SQLITE_ROW ? 0 : store_fail(s, "identity", e);
    }
    return store_tx_leave(s, own, rc);
}

int store_identity_get(nq_store_t *s, int64_t id, nq_identity_t *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *q = spot(s, S_IDENT_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, id);
    int e = sqlite3_step(q);
    if (e == SQLITE_ROW)
        ident_read(q, out);
    sqlite3_reset(q);
    return e == SQLITE_ROW ? 0 : e == SQLITE_DONE ? 1 : store_fail(s, "identity.get", e);
}

static int ident_bump(nq_store_t *s, int which, int64_t id)
{
    sqlite3_stmt *q = spot(s, which);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, id);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "identity.record", rc) : 0;
}

int store_identity_stored(nq_store_t *s, int64_t id) { return ident_bump(s, S_IDENT_STORED, id); }
int store_identity_confirmed(nq_store_t *s, int64_t id) { return ident_bump(s, S_IDENT_CONFIRMED, id); }
int store_identity_outvoted(nq_store_t *s, int64_t id) { return ident_bump(s, S_IDENT_OUTVOTED, id); }

int store_identity_name(nq_store_t *s, int64_t id, char *out, size_t outlen)
{
    snprintf(out, outlen, "identity-%lld", (long long)id);
    sqlite3_stmt *q = spot(s, S_IDENT_NAME);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, id);
    int e = sqlite3_step(q);
    if (e == SQLITE_ROW)
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_reset(q);
    return e == SQLITE_ROW ? 0 : -1;
}

/* ---- a shard's votes ---- */

static void vote_read(sqlite3_stmt *q, int col, nq_vote_t *v)
{
    v->status = sqlite3_column_int(q, col);
    v->total = (uint64_t)sqlite3_column_int64(q, col + 1);
    v->unique = (uint64_t)sqlite3_column_int64(q, col + 2);
    v->nodes = (uint64_t)sqlite3_column_int64(q, col + 3);
    v->res13 = sqlite3_column_int(q, col + 4);
    v->res15 = sqlite3_column_int(q, col + 5);
    v->elapsed = sqlite3_column_double(q, col + 6);
    v->nodes_kind = sqlite3_column_int(q, col + 7);
}

int store_shard_votes(nq_store_t *s, uint64_t job, uint64_t idx, nq_shard_votes_t *out)
{
    memset(out, 0, sizeof *out);
    out->state = -1;
    sqlite3_stmt *q = spot(s, S_SHARD_FIRST);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, (int64_t)idx);
    int e = sqlite3_step(q);
    if (e == SQLITE_ROW) {
        out->state = store_shard_state_parse(sqlite3_column_text(q, 0));
        out->verify = sqlite3_column_int(q, 1);
        if (sqlite3_column_int(q, 11)) {        /* it has a result: the first vote */
            out->votes[0].who = sqlite3_column_int64(q, 2);
            vote_read(q, 3, &out->votes[0]);
            out->nvotes = 1;
        }
    }
    sqlite3_reset(q);
    if (e != SQLITE_ROW && e != SQLITE_DONE)
        return store_fail(s, "shard.votes", e);
    if (out->nvotes == 0 || !(q = spot(s, S_SHARD_CHECKS)))
        return out->nvotes == 0 ? 0 : -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, (int64_t)idx);
    while ((e = sqlite3_step(q)) == SQLITE_ROW && out->nvotes < NQ_SPOT_MAX_VOTES) {
        nq_vote_t *v = &out->votes[out->nvotes++];
        v->who = sqlite3_column_int64(q, 0);
        vote_read(q, 1, v);
    }
    sqlite3_reset(q);
    return e == SQLITE_ROW || e == SQLITE_DONE ? 0 : store_fail(s, "shard.checks", e);
}

/* ---- writes ---- */

static void bind_vote(sqlite3_stmt *q, int col, const nq_vote_t *v)
{
    sqlite3_bind_int(q, col, v->status);
    sqlite3_bind_int64(q, col + 1, (int64_t)v->total);
    sqlite3_bind_int64(q, col + 2, (int64_t)v->unique);
    sqlite3_bind_int64(q, col + 3, (int64_t)v->nodes);
    sqlite3_bind_int(q, col + 4, v->res13);
    sqlite3_bind_int(q, col + 5, v->res15);
    sqlite3_bind_double(q, col + 6, v->elapsed);
    sqlite3_bind_int(q, col + 7, v->nodes_kind);
}

int store_check_put(nq_store_t *s, uint64_t job, uint64_t idx, int seq, const nq_vote_t *v, int agreed)
{
    sqlite3_stmt *q = spot(s, S_CHECK_PUT);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, (int64_t)idx);
    sqlite3_bind_int(q, 3, seq);
    sqlite3_bind_int64(q, 4, v->who);
    bind_vote(q, 5, v);
    sqlite3_bind_int(q, 13, agreed);
    sqlite3_bind_double(q, 14, nq_wall());
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "check.put", rc);
    if (agreed && run2(s, S_CONFIRM, (int64_t)job, (int64_t)idx, "check.confirm") != 0)
        return -1;
    return run2(s, S_JOB_CHECKS, (int64_t)job, !agreed, "check.job");
}

int store_shard_set_verify(nq_store_t *s, uint64_t job, uint64_t idx, int verify)
{
    sqlite3_stmt *q = spot(s, S_SET_VERIFY);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, (int64_t)idx);
    sqlite3_bind_int(q, 3, verify);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "shard.verify", rc) : 0;
}

int store_shard_copy_alone(nq_store_t *s, uint64_t job, uint64_t idx)
{
    if (run2(s, S_COPY_ALONE, (int64_t)job, (int64_t)idx, "shard.copy_alone") != 0)
        return -1;
    return sqlite3_changes(s->db) > 0;
}

static store_sums_t vote_sums(const nq_vote_t *v)
{
    store_sums_t d = { v->total, v->unique, v->nodes, v->res13, v->res15, v->elapsed, v->nodes_kind };
    return d;
}

int store_shard_replace(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *old, const nq_vote_t *v)
{
    sqlite3_stmt *q = spot(s, S_REPLACE);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, (int64_t)idx);
    bind_vote(q, 3, v);
    sqlite3_bind_int64(q, 11, v->who);
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "shard.replace", rc);
    store_sums_t out = vote_sums(old), in = vote_sums(v);
    if (store_job_move(s, job, -1, &out, 0, 0) != 0 || store_job_move(s, job, 1, &in, 0, 0) != 0)
        return -1;
    return 0;
}

int store_shard_dispute_lost(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *stored)
{
    if (run2(s, S_CONFLICT, (int64_t)job, (int64_t)idx, "shard.dispute") != 0)
        return -1;
    store_sums_t out = vote_sums(stored);
    return store_job_move(s, job, -1, &out, 1, 0);
}

int store_job_flag(nq_store_t *s, uint64_t job, int64_t who, uint64_t shard)
{
    sqlite3_stmt *q = spot(s, S_FLAG);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, who);
    sqlite3_bind_int64(q, 3, (int64_t)shard);
    sqlite3_bind_double(q, 4, nq_wall());
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "job.flag", rc);
    return sqlite3_changes(sqlite3_db_handle(q)) == 0;
}

int store_flag_sweep(nq_store_t *s, uint64_t job, int64_t who, uint64_t from, uint64_t to,
                     void (*fn)(void *ud, uint64_t idx), void *ud)
{
    enum { BATCH = 256 };
    uint64_t found[BATCH];
    for (;;) {                          /* read a batch, then mark it: no write under a live read */
        sqlite3_stmt *q = spot(s, S_SWEEP_ROWS);
        if (!q)
            return -1;
        sqlite3_bind_int64(q, 1, (int64_t)job);
        sqlite3_bind_int64(q, 2, (int64_t)from);
        sqlite3_bind_int64(q, 3, (int64_t)to);
        sqlite3_bind_int64(q, 4, who);
        int n = 0, e;
        while (n < BATCH && (e = sqlite3_step(q)) == SQLITE_ROW)
            found[n++] = (uint64_t)sqlite3_column_int64(q, 0);
        if (n < BATCH && e != SQLITE_DONE) {
            sqlite3_reset(q);
            return store_fail(s, "flag.sweep", e);
        }
        sqlite3_reset(q);
        for (int i = 0; i < n; i++) {
            if (run2(s, S_SWEEP_MARK, (int64_t)job, (int64_t)found[i], "flag.sweep") != 0)
                return -1;
            fn(ud, found[i]);
        }
        if (n < BATCH)
            break;
        from = found[n - 1] + 1;
    }
    sqlite3_stmt *q = spot(s, S_SWEEP_SAVE);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    sqlite3_bind_int64(q, 2, who);
    sqlite3_bind_int64(q, 3, (int64_t)to);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "flag.sweep", rc) : 0;
}

int store_spot_load(nq_store_t *s, uint64_t job, void (*shard_fn)(void *ud, uint64_t idx),
                    void (*sweep_fn)(void *ud, int64_t who, uint64_t next), void *ud)
{
    sqlite3_stmt *q = spot(s, S_LOAD_SHARDS);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    int e;
    while ((e = sqlite3_step(q)) == SQLITE_ROW)
        shard_fn(ud, (uint64_t)sqlite3_column_int64(q, 0));
    sqlite3_reset(q);
    if (e != SQLITE_DONE || !(q = spot(s, S_LOAD_SWEEPS)))
        return e != SQLITE_DONE ? store_fail(s, "spot.load", e) : -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    while ((e = sqlite3_step(q)) == SQLITE_ROW)
        sweep_fn(ud, sqlite3_column_int64(q, 0), (uint64_t)sqlite3_column_int64(q, 1));
    sqlite3_reset(q);
    return e == SQLITE_DONE ? 0 : store_fail(s, "spot.load", e);
}

int store_spot_open(nq_store_t *s, uint64_t job, uint64_t *n)
{
    *n = 0;
    sqlite3_stmt *q = spot(s, S_OPEN);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, (int64_t)job);
    int e = sqlite3_step(q);
    if (e == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return e == SQLITE_ROW ? 0 : store_fail(s, "spot.open", e);
}
