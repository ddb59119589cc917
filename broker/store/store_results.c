/*
 * Results in the store: the first result of a shard decides it, and what comes later is
 * compared, never voted (docs/architecture.md, the first invariant). put_again is the one
 * place that rule lives: a decided shard (done, or any shard of a done job) never changes; an
 * equal later result from another identity confirms it (table confirmations), a differing one
 * is kept as evidence against its sender (table evidence). Only store_result_dispute, for
 * quorum votes that never agreed, makes a shard CONFLICT. Enumerate payloads and solve
 * solutions are stored here too.
 * "Equal" is the one agreement relation (common/wire/agree.h), which holds a count's nodes to
 * account only between two results of the CPU kernels': the fast GPU kernel's are its own.
 */
#include "clock.h"
#include "log.h"
#include "solstore.h"
#include "store_impl.h"
#include "store_spotcheck.h"
#include "agree.h"

#include <stdio.h>
#include <string.h>

enum {
    R_PUT_LOOKUP, R_PUT_FIRST, R_PUT_CONFIRM, R_PUT_CONFLICT, R_CONFIRM_ADD, R_EVIDENCE_PUT,
    R_JOB_EVIDENCE_ADD, R_JOB_WORKER_ADD, R_ENUM_PUT, R_ENUM_GET, R_SOLUTION_PUT, R_COUNT
};

static const char *const sql_text[R_COUNT] = {
    /* no shard row (s.state NULL): a pending shard beyond the frontier, when idx < shards_total */
    [R_PUT_LOOKUP] =
        "SELECT s.state, s.done_at IS NOT NULL, s.status, s.total, s.uniq, s.nodes, s.res13,"
        " s.res15, s.worker, s.lease, j.seed0, j.kind, j.state, j.n, j.shards_total, j.restarts, s.elapsed,"
        " s.who, s.nodes_kind FROM jobs j LEFT JOIN shards s ON s.job = j.id AND s.idx = ?2 WHERE j.id = ?1",
    [R_PUT_FIRST] =
        "INSERT INTO shards (job, idx, state, status, total, uniq, nodes, res13, res15, elapsed, worker,"
        " lease, done_at, who, verify, nodes_kind, by_copy) VALUES (?1, ?2, 'done', ?3, ?4, ?5, ?6, ?7, ?8,"
        " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
        " ON CONFLICT (job, idx) DO UPDATE SET state = 'done', status = ?3, total = ?4, uniq = ?5,"
        " nodes = ?6, res13 = ?7, res15 = ?8, elapsed = ?9, worker = ?10, lease = ?11, done_at = ?12,"
        " leased_at = NULL, confirmations = 0, conflict_with = NULL, who = ?13, verify = ?14,"
        " nodes_kind = ?15, by_copy = ?16",
    [R_PUT_CONFIRM] =
        "UPDATE shards SET confirmations = confirmations + 1 WHERE job = ?1 AND idx = ?2",
    [R_PUT_CONFLICT] =
        "UPDATE shards SET state = 'conflict', conflict_with = ?3, verify = 0 WHERE job = ?1 AND idx = ?2",
    /* one row per confirming identity (schema/011_store.sql): changes() says whether it is new */
    [R_CONFIRM_ADD] =
        "INSERT OR IGNORE INTO confirmations (job, idx, who) VALUES (?1, ?2, ?3)",
    [R_EVIDENCE_PUT] =
        "INSERT OR IGNORE INTO evidence (job, idx, who, worker, status, total, uniq, nodes, res13, res15, at,"
        " nodes_kind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [R_JOB_EVIDENCE_ADD] =
        "UPDATE jobs SET evidence = evidence + 1 WHERE id = ?1",
    [R_JOB_WORKER_ADD] =
        "INSERT INTO job_workers (job, worker, shards, nodes, seconds) VALUES (?1, ?2, 1, ?3, ?4)"
        " ON CONFLICT (job, worker) DO UPDATE SET shards = shards + 1, nodes = nodes + ?3,"
        " seconds = seconds + ?4",
    [R_ENUM_PUT] =
        "INSERT OR REPLACE INTO enum_solutions (job, shard, count, data) VALUES (?1, ?2, ?3, ?4)",
    [R_ENUM_GET] =
        "SELECT data FROM enum_solutions WHERE job = ?1 AND shard = ?2",
    /* The first shard to find a permutation names it; the same one found again is not new. */
    [R_SOLUTION_PUT] =
        "INSERT OR IGNORE INTO solutions (job, hash, shard, seed, n, cols, path, found_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
};

_Static_assert(R_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[STORE_MOD_RESULTS][id], sql_text[id]);
}

/* What the store holds about a shard when a result arrives. */
typedef struct {
    int shard_state, job_state, kind, has_result;
    int64_t who;                       /* identity of the stored result's sender, 0 not known */
    uint64_t n, seed, lease, shards_total;
    int status;
    uint64_t total, unique, nodes;
    int res13, res15;
    int nodes_kind;                    /* the stored result's: NQ_NODES_* */
    double elapsed;
    char worker[NQ_STR_MAX];
} put_ctx_t;

/* 0 found, 1 unknown shard, -1 error. */
static int put_lookup(nq_store_t *s, const nq_result_t *r, put_ctx_t *c)
{
    sqlite3_stmt *q = stmt(s, R_PUT_LOOKUP);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        /* no row: pending, beyond the frontier (whether idx is a shard at all is checked below) */
        c->shard_state = sqlite3_column_type(q, 0) == SQLITE_NULL ? NQ_SHARD_PENDING
                         : store_shard_state_parse(sqlite3_column_text(q, 0));
        c->has_result = sqlite3_column_int(q, 1);
        c->status = sqlite3_column_int(q, 2);
        c->total = col_u64(q, 3);
        c->unique = col_u64(q, 4);
        c->nodes = col_u64(q, 5);
        c->res13 = sqlite3_column_int(q, 6);
        c->res15 = sqlite3_column_int(q, 7);
        const unsigned char *w = sqlite3_column_text(q, 8);
        snprintf(c->worker, sizeof c->worker, "%s", w ? (const char *)w : "");
        c->lease = col_u64(q, 9);
        uint64_t restarts = col_u64(q, 15);
        c->seed = store_solve_seed(col_u64(q, 10), restarts, r->shard);
        c->kind = store_kind_parse((const char *)sqlite3_column_text(q, 11));
        c->job_state = store_job_state_parse(sqlite3_column_text(q, 12));
        c->n = col_u64(q, 13);
        c->shards_total = col_u64(q, 14);
        c->elapsed = sqlite3_column_double(q, 16);
        c->who = sqlite3_column_int64(q, 17);
        c->nodes_kind = sqlite3_column_int(q, 18);
    }
    sqlite3_reset(q);
    if (rc == SQLITE_ROW && r->shard >= c->shards_total)
        return 1;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : store_fail(s, "result.lookup", rc);
}

static int bind_run(nq_store_t *s, int id, uint64_t job, uint64_t idx, const char *text, const char *op)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(idx));
    if (text)
        sqlite3_bind_text(q, 3, text, -1, SQLITE_STATIC);
    int rc = store_step_done(q);
    return rc ? store_fail(s, op, rc) : 0;
}

static int job_worker_add(nq_store_t *s, uint64_t job, const char *worker, uint64_t nodes, double seconds)
{
    sqlite3_stmt *q = stmt(s, R_JOB_WORKER_ADD);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_text(q, 2, worker, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, nodes > INT64_MAX ? INT64_MAX : (sqlite3_int64)nodes);
    sqlite3_bind_double(q, 4, seconds);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "job.worker", rc) : 0;
}

static int put_enum_payload(nq_store_t *s, const nq_result_t *r)
{
    sqlite3_stmt *q = stmt(s, R_ENUM_PUT);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    sqlite3_bind_int64(q, 3, i64(r->total));
    /* A zero-length blob, not NULL: a shard may have no solutions. */
    sqlite3_bind_blob(q, 4, r->payload_len ? (const void *)r->payload : "", (int)r->payload_len, SQLITE_STATIC);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "result.enum", rc) : 0;
}

/* The stored result's answer (agree.h), an enumerate's digest from its stored payload: 0, or -1. */
static int stored_answer(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, nq_answer_t *a)
{
    nq_result_t old = { .kind = (uint8_t)c->kind, .status = (uint8_t)c->status, .total = c->total,
                        .unique = c->unique, .nodes = c->nodes, .res13 = (uint8_t)c->res13,
                        .res15 = (uint8_t)c->res15, .nodes_kind = (uint8_t)c->nodes_kind };
    sqlite3_stmt *q = NULL;
    if (c->kind == NQ_KIND_ENUMERATE) {
        if (!(q = stmt(s, R_ENUM_GET)))
            return -1;
        sqlite3_bind_int64(q, 1, i64(r->job));
        sqlite3_bind_int64(q, 2, i64(r->shard));
        int rc = sqlite3_step(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            sqlite3_reset(q);
            return store_fail(s, "result.enum", rc);
        }
        if (rc == SQLITE_ROW) {
            old.payload = sqlite3_column_blob(q, 0);
            old.payload_len = (size_t)sqlite3_column_bytes(q, 0);
        }
    }
    nq_answer_of(&old, NULL, a);
    if (q)
        sqlite3_reset(q);
    return 0;
}

static int put_solution(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c,
                        const char *hash, const char *path)
{
    sqlite3_stmt *q = stmt(s, R_SOLUTION_PUT);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_text(q, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, i64(r->shard));
    sqlite3_bind_int64(q, 4, i64(c->seed));
    sqlite3_bind_int64(q, 5, i64(c->n));
    if (path && *path)
        sqlite3_bind_text(q, 7, path, -1, SQLITE_STATIC);
    else
        sqlite3_bind_blob(q, 6, r->payload, (int)r->payload_len, SQLITE_STATIC);
    sqlite3_bind_double(q, 8, nq_wall());
    int rc = store_step_done(q);
    return rc ? store_fail(s, "result.solution", rc) : 0;
}

static int put_first(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker,
                     const char *sol_hash, const char *sol_path, const nq_put_by_t *by)
{
    sqlite3_stmt *q = stmt(s, R_PUT_FIRST);
    if (!q)
        return -1;
    double secs = r->elapsed_us / 1e6;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    sqlite3_bind_int(q, 3, r->status);
    sqlite3_bind_int64(q, 4, i64(r->total));
    sqlite3_bind_int64(q, 5, i64(r->unique));
    sqlite3_bind_int64(q, 6, i64(r->nodes));
    sqlite3_bind_int(q, 7, r->res13);
    sqlite3_bind_int(q, 8, r->res15);
    sqlite3_bind_double(q, 9, secs);
    if (worker)
        sqlite3_bind_text(q, 10, worker, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 11, i64(r->lease));
    sqlite3_bind_double(q, 12, nq_wall());
    if (by && by->who > 0)
        sqlite3_bind_int64(q, 13, by->who);   /* for every job: resends are told by identity */
    sqlite3_bind_int(q, 14, by ? by->verify : 0);
    sqlite3_bind_int(q, 15, r->nodes_kind);
    sqlite3_bind_int(q, 16, by ? by->copy : 0);
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "result.first", rc);
    store_sums_t d = { r->total, r->unique, r->nodes, r->res13, r->res15, secs, r->nodes_kind };
    if (store_job_move(s, r->job, 1, &d, 0, c->shard_state == NQ_SHARD_FAILED ? -1 : 0) != 0)
        return -1;
    if (worker && job_worker_add(s, r->job, worker, r->nodes, secs) != 0)
        return -1;
    if (by && by->who > 0 && by->spot && store_identity_stored(s, by->who) != 0)
        return -1;
    if (c->kind == NQ_KIND_ENUMERATE && put_enum_payload(s, r) != 0)
        return -1;
    if (c->kind == NQ_KIND_SOLVE && r->status == NQ_RES_OK && sol_hash &&
        put_solution(s, r, c, sol_hash, sol_path) != 0)
        return -1;
    if (worker && store_worker_credit(s, worker, r->nodes, secs) != 0)
        return -1;
    return NQ_PUT_NEW;
}

/* 1 when r says the same as the stored first result (agree.h: nodes count where both are the CPU
   kernels'), 0 when not, -1 error. */
static int put_same(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c)
{
    nq_answer_t stored, now;
    if (stored_answer(s, r, c, &stored) != 0)
        return -1;
    nq_answer_of(r, NULL, &now);
    return nq_answer_compare(&stored, &now) == NQ_AGREE;
}

/* A later result equal to the stored one. The stored sender again (the same lease, whose proof
   binds it to one identity, or the same identity under another lease or worker id) is a resend;
   another identity confirms once, however often it sends and under whatever names. */
static int put_confirm(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker,
                       int64_t who)
{
    if (c->lease == r->lease || (who > 0 && who == c->who))
        return NQ_PUT_RESENT;
    if (who <= 0 && worker && strcmp(c->worker, worker) == 0)
        return NQ_PUT_RESENT;           /* a caller without identities: the name is all there is */
    if (who > 0) {
        sqlite3_stmt *q = stmt(s, R_CONFIRM_ADD);
        if (!q)
            return -1;
        sqlite3_bind_int64(q, 1, i64(r->job));
        sqlite3_bind_int64(q, 2, i64(r->shard));
        sqlite3_bind_int64(q, 3, who);
        int rc = store_step_done(q);
        if (rc)
            return store_fail(s, "result.confirm", rc);
        if (sqlite3_changes(s->db) == 0)
            return NQ_PUT_RESENT;       /* this identity confirmed it before */
    }
    if (bind_run(s, R_PUT_CONFIRM, r->job, r->shard, NULL, "result.confirm") != 0)
        return -1;
    if (worker && store_worker_credit(s, worker, r->nodes, r->elapsed_us / 1e6) != 0)
        return -1;
    return NQ_PUT_CONFIRMED;
}

/* A later result that differs from a decided one: evidence against its sender, kept once per
   shard and identity. The shard, the job's sums and the job's state do not move. */
static int put_evidence(nq_store_t *s, const nq_result_t *r, const char *worker, int64_t who)
{
    sqlite3_stmt *q = stmt(s, R_EVIDENCE_PUT);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    sqlite3_bind_int64(q, 3, who > 0 ? who : 0);
    sqlite3_bind_text(q, 4, worker ? worker : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 5, r->status);
    sqlite3_bind_int64(q, 6, i64(r->total));
    sqlite3_bind_int64(q, 7, i64(r->unique));
    sqlite3_bind_int64(q, 8, i64(r->nodes));
    sqlite3_bind_int(q, 9, r->res13);
    sqlite3_bind_int(q, 10, r->res15);
    sqlite3_bind_double(q, 11, nq_wall());
    sqlite3_bind_int(q, 12, r->nodes_kind);
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "result.evidence", rc);
    if (sqlite3_changes(s->db) == 0)
        return NQ_PUT_EVIDENCE;         /* the same sender on the same shard: counted once */
    if (!(q = stmt(s, R_JOB_EVIDENCE_ADD)))
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    if ((rc = store_step_done(q)))
        return store_fail(s, "result.evidence", rc);
    if (worker && *worker && store_worker_evidence(s, worker) != 0)
        return -1;
    return NQ_PUT_EVIDENCE;
}

/* Marks a shard whose votes disagree CONFLICT: out of the job's sums (when it was in them), and
   the job cannot finish while it stands. */
static int put_conflict(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker)
{
    if (bind_run(s, R_PUT_CONFLICT, r->job, r->shard, worker ? worker : "", "result.conflict") != 0)
        return -1;
    if (c->shard_state == NQ_SHARD_DONE) {   /* no longer done: its sums leave the job's */
        store_sums_t d = { c->total, c->unique, c->nodes, c->res13, c->res15, c->elapsed, c->nodes_kind };
        if (store_job_move(s, r->job, -1, &d, 1, 0) != 0)
            return -1;
    }
    if (worker && store_worker_conflict(s, worker) != 0)
        return -1;
    return NQ_PUT_CONFLICT;
}

/*
 * A result for a shard that has one. A done shard is decided (its quorum agreed, or it was
 * taken as the first result, or its check agreed), and so is every shard of a done job: what
 * comes later confirms or is evidence, and never changes the answer. This is the one place that
 * rule lives; the broker's paths (late leases, quorum, spot-checks) all end here. A shard in
 * CONFLICT is not decided: a later differing result keeps it so.
 */
static int put_again(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker, int64_t who)
{
    int same = put_same(s, r, c);
    if (same < 0)
        return -1;
    if (same)
        return put_confirm(s, r, c, worker, who);
    if (c->shard_state == NQ_SHARD_DONE || c->job_state == NQ_JOB_DONE)
        return put_evidence(s, r, worker, who);
    return put_conflict(s, r, c, worker);
}

/* Checks that are about the caller, not the DB: refused before any transaction is touched. */
static int put_args_ok(const nq_result_t *r, const char *worker, const char *sol_hash, const char *sol_path)
{
    if (!r || (worker && strlen(worker) >= NQ_STR_MAX))
        return 0;
    if (r->payload_len > 0 && !r->payload)
        return 0;
    if (r->kind != NQ_KIND_SOLVE || r->status != NQ_RES_OK || !sol_hash)
        return 1;
    /* A solution row needs its permutation: a file beside the DB, or inline when small. */
    if (!*sol_hash)
        return 0;
    if (sol_path && *sol_path)
        return 1;
    return r->payload_len >= 4 && r->payload_len % 4 == 0 && r->payload_len / 4 <= NQ_SOL_INLINE_MAX;
}

int store_result_put(nq_store_t *s, const nq_result_t *r, const char *worker,
                     const char *sol_hash, const char *sol_path)
{
    return store_result_put_by(s, r, worker, sol_hash, sol_path, NULL);
}

/* The put itself, inside a transaction the caller holds: the outcome, or -1. */
static int put_result(nq_store_t *s, const nq_result_t *r, const char *worker, const char *sol_hash,
                      const char *sol_path, const nq_put_by_t *by)
{
    put_ctx_t c;
    memset(&c, 0, sizeof c);
    int rc = put_lookup(s, r, &c);
    if (rc == 1 || (rc == 0 && (c.shard_state == NQ_SHARD_CANCELLED || c.job_state == NQ_JOB_CANCELLED)))
        return NQ_PUT_IGNORED;
    if (rc != 0)
        return rc;
    if (c.kind != r->kind || (c.kind == NQ_KIND_SOLVE && r->status == NQ_RES_OK && sol_hash &&
                              !(sol_path && *sol_path) && r->payload_len != 4 * c.n)) {
        nq_log(NQ_LOG_WARN, "store.put.mismatch", "job=%llu shard=%llu kind=%d", (unsigned long long)r->job,
               (unsigned long long)r->shard, r->kind);
        return NQ_PUT_IGNORED;
    }
    if (c.has_result)
        return put_again(s, r, &c, worker, by ? by->who : 0);
    /* A shard is decided by the broker's rules for its job (quorum, spot-checks), and only a
       running job has them: a first result for a job not running is kept nowhere, or `nq retry`
       would count it without a vote or a check. */
    if ((by && by->unloaded) || (c.job_state != NQ_JOB_PENDING && c.job_state != NQ_JOB_RUNNING))
        return NQ_PUT_UNDECIDABLE;
    return put_first(s, r, &c, worker, sol_hash, sol_path, by);
}

int store_result_put_by(nq_store_t *s, const nq_result_t *r, const char *worker,
                        const char *sol_hash, const char *sol_path, const nq_put_by_t *by)
{
    if (!put_args_ok(r, worker, sol_hash, sol_path)) {
        nq_log(NQ_LOG_ERROR, "store.put.invalid", "job=%llu shard=%llu",
               r ? (unsigned long long)r->job : 0ull, r ? (unsigned long long)r->shard : 0ull);
        return -1;
    }
    if (r->status == NQ_RES_ERROR)
        return NQ_PUT_IGNORED;   /* an error is not a result: the broker releases the shard */
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    return store_tx_leave(s, own, put_result(s, r, worker, sol_hash, sol_path, by));
}

int store_result_dispute(nq_store_t *s, const nq_result_t *r, const char *worker, const nq_put_by_t *by,
                         const char *other_worker)
{
    if (!put_args_ok(r, worker, NULL, NULL) || r->status == NQ_RES_ERROR)
        return -1;
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    int rc = put_result(s, r, worker, NULL, NULL, by);
    if (rc == NQ_PUT_NEW) {             /* only a first result can be disputed: a decided one stays */
        put_ctx_t c;
        memset(&c, 0, sizeof c);
        rc = put_lookup(s, r, &c);
        rc = rc == 0 ? put_conflict(s, r, &c, other_worker) : -1;
    }
    return store_tx_leave(s, own, rc);
}
