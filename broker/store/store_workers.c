/*
 * Workers in the store, by the worker id they give (a name, never proof: identities are in
 * store_spotcheck.c): when they were seen, with which key (a name belongs to the first key that
 * used it), what they delivered, and whether they are flagged.
 */
#include "clock.h"
#include "log.h"
#include "store_impl.h"

#include <stdio.h>
#include <string.h>

enum {
    W_WORKER_SEEN, W_WORKER_KEY, W_WORKER_FLAG, W_WORKER_FORGET, W_WORKER_NODES, W_WORKER_CREDIT,
    W_WORKER_CONFLICT, W_WORKER_EVIDENCE, W_COUNT
};

static const char *const sql_text[W_COUNT] = {
    [W_WORKER_SEEN] =
        "INSERT INTO workers (id, host, pubkey, threads, first_seen, last_seen)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (id) DO UPDATE SET host = excluded.host,"
        " pubkey = coalesce(excluded.pubkey, pubkey), threads = excluded.threads,"
        " last_seen = excluded.last_seen",
    [W_WORKER_KEY] = "SELECT pubkey FROM workers WHERE id = ?1",
    [W_WORKER_FLAG] =
        "UPDATE workers SET conflicts = conflicts + 1, flagged = 1 WHERE id = ?1",
    [W_WORKER_FORGET] =               /* a peer that did nothing leaves no trace: HELLO floods add no rows */
        "DELETE FROM workers WHERE id = ?1 AND shards_done = 0 AND conflicts = 0 AND flagged = 0",
    [W_WORKER_NODES] =
        "SELECT nodes FROM workers WHERE id = ?1",
    [W_WORKER_CREDIT] =
        "INSERT INTO workers (id, host, first_seen, last_seen, shards_done, nodes, seconds)"
        " VALUES (?1, '', ?2, ?2, 1, ?3, ?4) ON CONFLICT (id) DO UPDATE SET last_seen = ?2,"
        " shards_done = shards_done + 1, nodes = ?3, seconds = seconds + ?4",
    [W_WORKER_CONFLICT] =
        "INSERT INTO workers (id, host, first_seen, last_seen, conflicts) VALUES (?1, '', ?2, ?2, 1)"
        " ON CONFLICT (id) DO UPDATE SET last_seen = ?2, conflicts = conflicts + 1",
    [W_WORKER_EVIDENCE] =
        "INSERT INTO workers (id, host, first_seen, last_seen, conflicts, flagged) VALUES (?1, '', ?2, ?2, 1, 1)"
        " ON CONFLICT (id) DO UPDATE SET last_seen = ?2, conflicts = conflicts + 1, flagged = 1",
};

_Static_assert(W_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[STORE_MOD_WORKERS][id], sql_text[id]);
}

/* Runs statement `which` on the workers row `id`, inside the open transaction or its own. */
static int worker_exec(nq_store_t *s, int which, const char *id, const char *op)
{
    if (!id || !*id)
        return -1;
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, which);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        int e = store_step_done(q);
        rc = e ? store_fail(s, op, e) : 0;
    }
    return store_tx_leave(s, own, rc);
}

int store_worker_flag(nq_store_t *s, const char *id)
{
    return worker_exec(s, W_WORKER_FLAG, id, "worker.flag");
}

int store_worker_seen(nq_store_t *s, const char *id, const char *host, const char *key, uint32_t threads)
{
    if (!id || !*id || strlen(id) >= NQ_STR_MAX)
        return -1;
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, W_WORKER_SEEN);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, host ? host : "", -1, SQLITE_STATIC);
        if (key && *key)
            sqlite3_bind_text(q, 3, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 4, threads);
        sqlite3_bind_double(q, 5, nq_wall());
        int e = store_step_done(q);
        rc = e ? store_fail(s, "worker.seen", e) : 0;
    }
    return store_tx_leave(s, own, rc);
}

int store_worker_forget_idle(nq_store_t *s, const char *id)
{
    return worker_exec(s, W_WORKER_FORGET, id, "worker.forget");
}

int store_worker_key_ok(nq_store_t *s, const char *id, const char *key)
{
    sqlite3_stmt *q = stmt(s, W_WORKER_KEY);
    if (!q)
        return 0;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    int ok = 1;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) == SQLITE_TEXT)
        ok = strcmp((const char *)sqlite3_column_text(q, 0), key) == 0;
    sqlite3_reset(q);
    return ok;
}

/* Adds to a worker's counters; nodes in C with saturation (u64 bit patterns, no SQL overflow). */
int store_worker_credit(nq_store_t *s, const char *worker, uint64_t nodes, double seconds)
{
    sqlite3_stmt *q = stmt(s, W_WORKER_NODES);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    uint64_t old = rc == SQLITE_ROW ? col_u64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_fail(s, "worker.credit", rc);
    uint64_t sum = old + nodes < old ? UINT64_MAX : old + nodes;
    if (!(q = stmt(s, W_WORKER_CREDIT)))
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 2, nq_wall());
    sqlite3_bind_int64(q, 3, i64(rc == SQLITE_ROW ? sum : nodes));
    sqlite3_bind_double(q, 4, seconds);
    rc = store_step_done(q);
    return rc ? store_fail(s, "worker.credit", rc) : 0;
}

int store_worker_conflict(nq_store_t *s, const char *worker)
{
    sqlite3_stmt *q = stmt(s, W_WORKER_CONFLICT);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 2, nq_wall());
    int rc = store_step_done(q);
    return rc ? store_fail(s, "worker.conflict", rc) : 0;
}

/* A worker that sent a result against a decided shard: flagged, one more conflict. */
int store_worker_evidence(nq_store_t *s, const char *worker)
{
    sqlite3_stmt *q = stmt(s, W_WORKER_EVIDENCE);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 2, nq_wall());
    int rc = store_step_done(q);
    return rc ? store_fail(s, "result.evidence", rc) : 0;
}
