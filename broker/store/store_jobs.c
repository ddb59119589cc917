/*
 * Jobs in the store: creating one (its row, and with an iterator all its shard rows, in one
 * transaction), reading and checking its row, its state, the active jobs, and its running sums:
 * total, unique, nodes and residues kept in its row by every write (004_campaign.sql), so that
 * status, list and result read one row whatever the job's size.
 */
#include "clock.h"
#include "errf.h"
#include "log.h"
#include "store_check.h"
#include "store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    J_JOB_INSERT, J_SHARD_INSERT, J_JOB_GET, J_JOB_SET_STATE, J_JOB_CONFLICTS, J_JOBS_ACTIVE,
    J_JOB_FIND_SAME, J_JOB_DONE_ADD, J_JOB_ERROR, J_TOTALS_WORKERS, J_TOTALS_SOLUTIONS, J_COUNT
};

static const char *const sql_text[J_COUNT] = {
    [J_JOB_INSERT] =
        "INSERT INTO jobs (kind, n, priority, depth, encoding, algo, seed0, restarts, solutions,"
        " max_steps, max_attempts, quorum, shards_total, created_at, frontier, verify_ppm, lease_order)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    [J_SHARD_INSERT] =
        "INSERT INTO shards (job, idx, spec, seed, algo, cost) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [J_JOB_GET] = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [J_JOB_SET_STATE] =
        "UPDATE jobs SET state = ?2,"
        " started_at = CASE WHEN ?2 = 'running' AND started_at IS NULL THEN ?3 ELSE started_at END,"
        " finished_at = CASE WHEN ?2 IN ('done', 'failed', 'cancelled')"
        "   THEN (CASE WHEN state = ?2 THEN finished_at ELSE ?3 END) ELSE NULL END"
        " WHERE id = ?1",
    [J_JOB_CONFLICTS] =
        "SELECT shards_conflict FROM jobs WHERE id = ?1",
    [J_JOBS_ACTIVE] =
        "SELECT id FROM jobs WHERE state IN ('pending', 'running') ORDER BY priority DESC, id",
    [J_JOB_FIND_SAME] =
        "SELECT id FROM jobs WHERE kind = ?1 AND n = ?2 AND (?3 = 0 OR depth = ?3)"
        " AND (?4 = 0 OR encoding = ?4) AND algo = ?5 AND seed0 = ?6 AND restarts = ?7"
        " AND solutions = ?8 AND max_steps = ?9 AND quorum = ?10 ORDER BY id DESC LIMIT 1",
    /* one done shard in (?2 = 1) or out (-1), with its sums in 32-bit limbs (see 004_campaign.sql);
       its nodes in nodes (?7, ?8) or, the fast GPU kernel's own, in fast_nodes (?14, ?15; ?16 = 1) */
    [J_JOB_DONE_ADD] =
        "UPDATE jobs SET shards_done = shards_done + ?2, total_lo = total_lo + ?2 * ?3,"
        " total_hi = total_hi + ?2 * ?4, uniq_lo = uniq_lo + ?2 * ?5, uniq_hi = uniq_hi + ?2 * ?6,"
        " nodes_lo = nodes_lo + ?2 * ?7, nodes_hi = nodes_hi + ?2 * ?8, res13_sum = res13_sum + ?2 * ?9,"
        " res15_sum = res15_sum + ?2 * ?10, core_seconds = core_seconds + ?2 * ?11,"
        " shards_conflict = shards_conflict + ?12, shards_failed = shards_failed + ?13,"
        " fast_nodes_lo = fast_nodes_lo + ?2 * ?14, fast_nodes_hi = fast_nodes_hi + ?2 * ?15,"
        " fast_shards = fast_shards + ?2 * ?16 WHERE id = ?1",
    [J_JOB_ERROR] = "UPDATE jobs SET last_error = ?2 WHERE id = ?1",
    [J_TOTALS_WORKERS] =
        "SELECT count(*) FROM job_workers WHERE job = ?1",
    [J_TOTALS_SOLUTIONS] =
        "SELECT count(*) FROM solutions WHERE job = ?1",
};

_Static_assert(J_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[STORE_MOD_JOBS][id], sql_text[id]);
}

/* What the store writes is what it accepts when it reads the row back (store_check.c). */
static int check_job_spec(const nq_job_spec_t *j, uint64_t nshards, char *err, size_t errlen)
{
    if (nshards < 1 || nshards > (uint64_t)INT64_MAX)
        return nq_errf(err, errlen, "a job needs at least one shard");
    return store_spec_check(j, nshards, err, errlen);
}

static int check_shard_spec(const nq_shard_spec_t *sh, uint64_t idx, char *err, size_t errlen)
{
    if (sh->spec_len > NQ_MAX_SPEC || (sh->spec_len > 0 && !sh->spec))
        return nq_errf(err, errlen, "shard %llu: descriptor of %zu bytes (at most %d)",
                       (unsigned long long)idx, sh->spec_len, NQ_MAX_SPEC);
    if (memchr(sh->algo, '\0', sizeof sh->algo) == NULL)
        return nq_errf(err, errlen, "shard %llu: method name too long", (unsigned long long)idx);
    return 0;
}

static int job_insert(nq_store_t *s, const nq_job_spec_t *j, uint64_t nshards, uint64_t frontier, uint64_t *id)
{
    sqlite3_stmt *q = stmt(s, J_JOB_INSERT);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, store_kind_name(j->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, i64(j->n));
    sqlite3_bind_int(q, 3, j->priority);
    sqlite3_bind_int64(q, 4, j->depth);
    sqlite3_bind_int64(q, 5, j->encoding);
    sqlite3_bind_text(q, 6, j->algo, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 7, i64(j->seed0));
    sqlite3_bind_int64(q, 8, i64(j->restarts));
    sqlite3_bind_int64(q, 9, i64(j->solutions));
    sqlite3_bind_int64(q, 10, i64(j->max_steps));
    sqlite3_bind_int64(q, 11, j->max_attempts);
    sqlite3_bind_int64(q, 12, j->quorum);
    sqlite3_bind_int64(q, 13, i64(nshards));
    sqlite3_bind_double(q, 14, nq_wall());
    sqlite3_bind_int64(q, 15, i64(frontier));
    sqlite3_bind_int64(q, 16, j->verify_ppm);
    sqlite3_bind_int64(q, 17, j->lease_order ? j->lease_order : NQ_LEASE_ORDER);
    int rc = store_step_done(q);
    if (rc)
        return store_fail(s, "job.insert", rc);
    *id = (uint64_t)sqlite3_last_insert_rowid(s->db);
    return 0;
}

static int shard_insert(nq_store_t *s, sqlite3_stmt *q, uint64_t job, uint64_t idx, int kind,
                        const nq_shard_spec_t *sh)
{
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(idx));
    if (kind == NQ_KIND_SOLVE) {
        sqlite3_bind_null(q, 3);
        sqlite3_bind_int64(q, 4, i64(sh->seed));
        sqlite3_bind_text(q, 5, sh->algo, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_blob(q, 3, sh->spec_len ? (const void *)sh->spec : "", (int)sh->spec_len, SQLITE_STATIC);
        sqlite3_bind_null(q, 4);
        sqlite3_bind_null(q, 5);
    }
    sqlite3_bind_double(q, 6, sh->cost);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "shard.insert", rc) : 0;
}

/* Inserts the shards one by one with the one prepared statement; 0, or -1 with err. */
static int shards_insert_all(nq_store_t *s, const nq_job_spec_t *spec, uint64_t job, uint64_t nshards,
                             store_shard_iter_fn next, void *ud, char *err, size_t errlen)
{
    sqlite3_stmt *q = stmt(s, J_SHARD_INSERT);
    if (!q)
        return nq_errf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < nshards; i++) {
        nq_shard_spec_t sh;
        memset(&sh, 0, sizeof sh);
        int it = next(ud, i, &sh);
        if (it != 0)
            rc = (nq_errf(err, errlen, it == 1 ? "shard list ended at %llu of %llu shards"
                                               : "shard %llu of %llu could not be made",
                          (unsigned long long)i, (unsigned long long)nshards), -1);
        else if (check_shard_spec(&sh, i, err, errlen) != 0)
            rc = -1;
        else if (shard_insert(s, q, job, i, spec->kind, &sh) != 0)
            rc = (nq_errf(err, errlen, "%s: cannot store the shards: %s", s->path,
                          store_db_reason(s->db, sqlite3_extended_errcode(s->db))), -1);
    }
    sqlite3_reset(q);
    return rc;
}

/*
 * Under a savepoint: a refused shard abandons this job only, even inside a
 * group (a DB error still poisons the group, see db_fail).
 */
int store_job_create(nq_store_t *s, const nq_job_spec_t *spec, uint64_t nshards,
                     store_shard_iter_fn next, void *ud, uint64_t *id, char *err, size_t errlen)
{
    int own;
    if (check_job_spec(spec, nshards, err, errlen) != 0)
        return -1;
    if (store_tx_enter(s, &own) != 0)
        return nq_errf(err, errlen, "%s: cannot begin: %s", s->path,
                       s->tx_failed ? s->tx_err : sqlite3_errmsg(s->db));
    uint64_t job = 0;
    int rc = store_exec(s->db, "SAVEPOINT job_create");
    if (rc != SQLITE_OK)
        rc = (nq_errf(err, errlen, "%s: %s", s->path, store_db_reason(s->db, rc)),
              store_fail(s, "job.create", rc));
    else if (job_insert(s, spec, nshards, next ? nshards : 0, &job) != 0)
        rc = (nq_errf(err, errlen, "%s: cannot store the job: %s", s->path,
                      store_db_reason(s->db, sqlite3_extended_errcode(s->db))), -1);
    else if (next)
        rc = shards_insert_all(s, spec, job, nshards, next, ud, err, errlen);
    if (rc == 0)
        rc = store_exec(s->db, "RELEASE job_create") == SQLITE_OK ? 0
                                                                  : store_fail(s, "job.create", SQLITE_ERROR);
    else if (!sqlite3_get_autocommit(s->db))
        store_exec(s->db, "ROLLBACK TO job_create; RELEASE job_create");
    int c = store_tx_leave(s, own, rc);
    if (c != 0 && rc == 0)
        nq_errf(err, errlen, "%s: commit failed: %s", s->path, store_db_reason(s->db, sqlite3_extended_errcode(s->db)));
    if (c == 0)
        *id = job;
    return c == 0 ? 0 : -1;
}

/* A refused row is not passed on: the reason is kept for store_refusal. 0, 1 no such job, -1 refused
   or a DB error. */
static int job_get(nq_store_t *s, uint64_t id, nq_job_row_t *out)
{
    sqlite3_stmt *q = stmt(s, J_JOB_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(id));
    int rc = sqlite3_step(q), res;
    if (rc == SQLITE_ROW)
        res = store_job_row_read(q, out, s->refused, sizeof s->refused);
    else
        res = rc == SQLITE_DONE ? 1 : store_fail(s, "job.get", rc);
    sqlite3_reset(q);
    return res;
}

/* One row: the counts are kept in it (004_campaign.sql), so this costs the same for any job. */
int store_job_get(nq_store_t *s, uint64_t id, nq_job_row_t *out)
{
    return job_get(s, id, out) == 0 ? 0 : -1;
}

int store_job_load(nq_store_t *s, uint64_t id, nq_job_row_t *out, char *err, size_t errlen)
{
    s->refused[0] = '\0';
    int rc = job_get(s, id, out);
    if (rc == 1)
        nq_errf(err, errlen, "no job %llu", (unsigned long long)id);
    else if (rc < 0)
        nq_errf(err, errlen, "%s", s->refused[0] ? s->refused : sqlite3_errmsg(s->db));
    return rc;
}

const char *store_refusal(nq_store_t *s) { return s->refused; }

static int job_conflicts(nq_store_t *s, uint64_t id, sqlite3_int64 *n)
{
    sqlite3_stmt *q = stmt(s, J_JOB_CONFLICTS);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(id));
    int rc = sqlite3_step(q);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : store_fail(s, "job.conflicts", rc);
}

int store_job_set_state(nq_store_t *s, uint64_t id, nq_job_state_t st)
{
    if ((unsigned)st > NQ_JOB_CANCELLED)
        return -1;
    int own, rc = store_tx_enter(s, &own);
    if (rc != 0)
        return -1;
    sqlite3_int64 conflicts = 0;
    /* Invariant 1: a job cannot finish while one of its shards is in conflict. */
    if (st == NQ_JOB_DONE && (rc = job_conflicts(s, id, &conflicts)) == 0 && conflicts > 0) {
        nq_log(NQ_LOG_WARN, "store.refused", "op=job.set_state job=%llu state=done conflicts=%lld",
               (unsigned long long)id, (long long)conflicts);
        rc = 1;
    }
    sqlite3_stmt *q = rc == 0 ? stmt(s, J_JOB_SET_STATE) : NULL;
    if (rc == 0 && !q)
        rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(id));
        sqlite3_bind_text(q, 2, store_job_state_name((nq_job_state_t)st), -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 3, nq_wall());
        int e = store_step_done(q);
        rc = e ? store_fail(s, "job.set_state", e) : (sqlite3_changes(s->db) == 1 ? 0 : 1);
    }
    rc = store_tx_leave(s, own, rc);
    return rc == 0 ? 0 : -1;
}

int store_jobs_active(nq_store_t *s, int (*fn)(void *ud, const nq_job_row_t *j),
                      int (*refused)(void *ud, uint64_t id, const char *why), void *ud)
{
    /* Ids first, then the rows: fn may call back into the store (and change these jobs). */
    sqlite3_stmt *q = stmt(s, J_JOBS_ACTIVE);
    if (!q)
        return -1;
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            uint64_t *v = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof *v);
            if (!v) {
                rc = SQLITE_NOMEM;
                break;
            }
            ids = v;
        }
        ids[n++] = col_u64(q, 0);
    }
    sqlite3_reset(q);
    int res = rc == SQLITE_DONE ? 0 : store_fail(s, "jobs.active", rc);
    for (size_t i = 0; res == 0 && i < n; i++) {
        nq_job_row_t row;
        s->refused[0] = '\0';
        int got = job_get(s, ids[i], &row);
        if (got == 0)
            res = fn(ud, &row);
        else if (got < 0 && s->refused[0] && refused)
            res = refused(ud, ids[i], s->refused);   /* the others are served: this one waits */
        else if (got < 0 && !s->refused[0])
            res = -1;
    }
    free(ids);
    return res;
}

int store_job_find_same(nq_store_t *s, const nq_job_spec_t *j, uint64_t *id)
{
    sqlite3_stmt *q = stmt(s, J_JOB_FIND_SAME);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, store_kind_name(j->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, i64(j->n));
    sqlite3_bind_int64(q, 3, j->depth);
    sqlite3_bind_int64(q, 4, j->encoding);
    sqlite3_bind_text(q, 5, j->algo, (int)strnlen(j->algo, sizeof j->algo), SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, i64(j->seed0));
    sqlite3_bind_int64(q, 7, i64(j->restarts));
    sqlite3_bind_int64(q, 8, i64(j->solutions));
    sqlite3_bind_int64(q, 9, i64(j->max_steps));
    sqlite3_bind_int64(q, 10, j->quorum);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *id = col_u64(q, 0);
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : store_fail(s, "job.find_same", rc);
}

/* One done result into (dir = 1) or out of (dir = -1) its job's aggregates, with the
   conflict and failed counts moving by dconflict, dfailed (004_campaign.sql). */
int store_job_move(nq_store_t *s, uint64_t job, int dir, const store_sums_t *d, int dconflict, int dfailed)
{
    sqlite3_stmt *q = stmt(s, J_JOB_DONE_ADD);
    if (!q)
        return -1;
    const uint64_t lo = 0xffffffffu;
    int fast = d->nodes_kind != NQ_NODES_CPU;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int(q, 2, dir);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)(d->total & lo));
    sqlite3_bind_int64(q, 4, (sqlite3_int64)(d->total >> 32));
    sqlite3_bind_int64(q, 5, (sqlite3_int64)(d->unique & lo));
    sqlite3_bind_int64(q, 6, (sqlite3_int64)(d->unique >> 32));
    uint64_t cpu_nodes = fast ? 0 : d->nodes, fast_nodes = fast ? d->nodes : 0;
    sqlite3_bind_int64(q, 7, (sqlite3_int64)(cpu_nodes & lo));
    sqlite3_bind_int64(q, 8, (sqlite3_int64)(cpu_nodes >> 32));
    sqlite3_bind_int64(q, 14, (sqlite3_int64)(fast_nodes & lo));
    sqlite3_bind_int64(q, 15, (sqlite3_int64)(fast_nodes >> 32));
    sqlite3_bind_int(q, 16, fast);
    sqlite3_bind_int(q, 9, d->res13);
    sqlite3_bind_int(q, 10, d->res15);
    sqlite3_bind_double(q, 11, d->seconds);
    sqlite3_bind_int(q, 12, dconflict);
    sqlite3_bind_int(q, 13, dfailed);
    int rc = store_step_done(q);
    return rc ? store_fail(s, "job.aggregates", rc) : 0;
}

int store_job_note_error(nq_store_t *s, uint64_t job, uint64_t idx, const char *text)
{
    char note[300];
    snprintf(note, sizeof note, "shard %llu: %s", (unsigned long long)idx, text);
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, J_JOB_ERROR);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_text(q, 2, note, -1, SQLITE_TRANSIENT);
        int e = store_step_done(q);
        rc = e ? store_fail(s, "job.error", e) : 0;
    }
    return store_tx_leave(s, own, rc);
}

static int count_one(nq_store_t *s, int id, uint64_t job, uint64_t *out)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    int rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? col_u64(q, 0) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : store_fail(s, "job.totals", rc);
}

static int totals_read(nq_store_t *s, uint64_t job, nq_job_totals_t *out)
{
    nq_job_row_t row;
    if (store_job_get(s, job, &row) != 0)
        return -1;
    int rc = store_job_sums(s->db, job, out);
    if (rc != SQLITE_DONE)
        return store_fail(s, "job.totals", rc);
    if (count_one(s, J_TOTALS_WORKERS, job, &out->workers) != 0 ||
        count_one(s, J_TOTALS_SOLUTIONS, job, &out->solutions) != 0)
        return -1;
    return 0;
}

static unsigned __int128 limbs(sqlite3_stmt *q, int lo)
{
    return ((unsigned __int128)col_u64(q, lo + 1) << 32) + col_u64(q, lo);
}

int store_job_sums(sqlite3 *db, uint64_t job, nq_job_totals_t *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, "SELECT shards_done, total_lo, total_hi, uniq_lo, uniq_hi, nodes_lo,"
                                " nodes_hi, core_seconds, res13_sum, res15_sum, fast_nodes_lo, fast_nodes_hi,"
                                " fast_shards FROM jobs WHERE id = ?1",
                                -1, &q, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(q, 1, i64(job));
    if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        out->shards_done += col_u64(q, 0);
        out->total += limbs(q, 1);
        out->unique += limbs(q, 3);
        out->nodes += limbs(q, 5);
        out->core_seconds += sqlite3_column_double(q, 7);
        out->res13 = (unsigned)(col_u64(q, 8) % 13);
        out->res15 = (unsigned)(col_u64(q, 9) % 15);
        out->fast_nodes += limbs(q, 10);
        out->fast_shards += col_u64(q, 12);
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(q);
    return rc;
}

int store_job_recount(sqlite3 *db, uint64_t job, nq_job_totals_t *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, "SELECT state, total, uniq, nodes, elapsed, res13, res15, nodes_kind"
                                " FROM shards WHERE job = ?1", -1, &q, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_int64(q, 1, i64(job));
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *st = (const char *)sqlite3_column_text(q, 0);
        if (st && strcmp(st, "failed") == 0)
            out->shards_failed++;
        if (st && strcmp(st, "conflict") == 0)
            out->shards_conflict++;
        if (!st || strcmp(st, "done") != 0)
            continue;
        uint64_t total = col_u64(q, 1);
        out->total += total;
        out->unique += col_u64(q, 2);
        if (sqlite3_column_int(q, 7) == NQ_NODES_CPU)
            out->nodes += col_u64(q, 3);
        else
            out->fast_nodes += col_u64(q, 3), out->fast_shards++;
        out->core_seconds += sqlite3_column_double(q, 4);
        out->res13 = (out->res13 + (unsigned)(col_u64(q, 5) % 13)) % 13;
        out->res15 = (out->res15 + (unsigned)(col_u64(q, 6) % 15)) % 15;
        out->residues_bad += col_u64(q, 5) != total % 13 || col_u64(q, 6) != total % 15;
        out->shards_done++;
    }
    sqlite3_finalize(q);
    return rc;
}

/* In one read transaction (unless a group is open): the sums and counts are one snapshot. */
int store_job_totals(nq_store_t *s, uint64_t job, nq_job_totals_t *out)
{
    memset(out, 0, sizeof *out);
    int own = !s->in_tx && sqlite3_get_autocommit(s->db);
    if (own && store_exec(s->db, "BEGIN") != SQLITE_OK)
        return store_fail(s, "job.totals", sqlite3_errcode(s->db));
    int rc = totals_read(s, job, out);
    if (own)
        store_exec(s->db, "COMMIT");
    return rc;
}

int store_job_solutions(nq_store_t *s, uint64_t job, uint64_t *n)
{
    return count_one(s, J_TOTALS_SOLUTIONS, job, n);
}
