/*
 * The SQLite store (see store.h for the contract, schema/001_init.sql for the tables).
 *
 * Three parts, in this order:
 *   opening: inspect the file read-only, refuse what is not ours, then open for
 *            writing, set the pragmas and apply the pending migrations;
 *   transactions: group commit, and how a failed statement poisons its group;
 *   the data: jobs, shards, results, workers, totals.
 *
 * Every statement is parameterised and prepared once (cached in the store).
 * Unsigned 64-bit values are stored as their signed bit pattern and read back
 * as uint64_t; sums that may pass 2^63 are done in C, never in SQL (SQLite
 * turns an overflowing integer sum into a float or an error).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "solstore.h"
#include "log.h"
#include "migrations.h"
#include "store_check.h"
#include "store_impl.h"
#include "store_spotcheck.h"

#define NQ_APPLICATION_ID  0x6E715144    /* "nqQD": marks an nq database (PRAGMA application_id) */
#define STORE_BUSY_MS      5000
/* quick_check reads every page: at open only up to this size (a campaign's store of gigabytes
   would stall every start and every `nq status --db`); `nq check` runs it at any size. */
#define STORE_CHECK_AT_OPEN_BYTES (64ll << 20)
#define EACH_CHUNK         256           /* shards read per step of store_shards_each */

/* The cached statements, one per thing the store does. */
enum {
    Q_JOB_INSERT, Q_SHARD_INSERT, Q_JOB_GET, Q_JOB_SET_STATE, Q_JOB_CONFLICTS, Q_JOB_FRONTIER,
    Q_JOB_FAILED_ADD, Q_JOB_RETRY_COUNTS, Q_JOB_WORKER_ADD,
    Q_JOBS_ACTIVE, Q_JOB_FIND_SAME, Q_SHARD_GET, Q_SHARDS_ONE_STATE, Q_SHARDS_STATES,
    Q_SHARD_LEASE, Q_SHARD_RELEASE, Q_SHARDS_CANCEL, Q_ENUM_RETRY_DELETE, Q_SHARDS_RETRY,
    Q_PUT_LOOKUP, Q_PUT_FIRST, Q_PUT_CONFIRM, Q_PUT_CONFLICT, Q_JOB_DONE_ADD,
    Q_ENUM_PUT, Q_ENUM_GET, Q_SOLUTION_PUT, Q_WORKER_NODES, Q_WORKER_CREDIT, Q_WORKER_CONFLICT,
    Q_META_GET, Q_META_SET, Q_WORKER_FLAG, Q_WORKER_SEEN, Q_WORKER_FORGET, Q_WORKER_KEY, Q_JOB_ERROR, Q_TOTALS_WORKERS, Q_TOTALS_SOLUTIONS,
    Q_SHARD_VOTED, Q_CONFIRM_ADD, Q_CONFIRM_RETRY_DELETE, Q_EVIDENCE_PUT, Q_JOB_EVIDENCE_ADD, Q_WORKER_EVIDENCE, Q_COUNT
};

static const char *const sql_text[Q_COUNT] = {
    [Q_JOB_INSERT] =
        "INSERT INTO jobs (kind, n, priority, depth, encoding, algo, seed0, restarts, solutions,"
        " max_steps, max_attempts, quorum, shards_total, created_at, frontier, verify_ppm)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    [Q_SHARD_INSERT] =
        "INSERT INTO shards (job, idx, spec, seed, algo, cost) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [Q_JOB_GET] = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [Q_JOB_FRONTIER] =
        "UPDATE jobs SET frontier = ?2 WHERE id = ?1 AND frontier < ?2",
    [Q_JOB_FAILED_ADD] =
        "UPDATE jobs SET shards_failed = shards_failed + ?2 WHERE id = ?1",
    /* a retry turns every failed and conflict row back to pending */
    [Q_JOB_RETRY_COUNTS] =
        "UPDATE jobs SET shards_failed = 0, shards_conflict = 0 WHERE id = ?1",
    [Q_JOB_WORKER_ADD] =
        "INSERT INTO job_workers (job, worker, shards, nodes, seconds) VALUES (?1, ?2, 1, ?3, ?4)"
        " ON CONFLICT (job, worker) DO UPDATE SET shards = shards + 1, nodes = nodes + ?3,"
        " seconds = seconds + ?4",
    [Q_JOB_SET_STATE] =
        "UPDATE jobs SET state = ?2,"
        " started_at = CASE WHEN ?2 = 'running' AND started_at IS NULL THEN ?3 ELSE started_at END,"
        " finished_at = CASE WHEN ?2 IN ('done', 'failed', 'cancelled')"
        "   THEN (CASE WHEN state = ?2 THEN finished_at ELSE ?3 END) ELSE NULL END"
        " WHERE id = ?1",
    [Q_JOB_CONFLICTS] =
        "SELECT shards_conflict FROM jobs WHERE id = ?1",
    [Q_JOBS_ACTIVE] =
        "SELECT id FROM jobs WHERE state IN ('pending', 'running') ORDER BY priority DESC, id",
    [Q_JOB_FIND_SAME] =
        "SELECT id FROM jobs WHERE kind = ?1 AND n = ?2 AND (?3 = 0 OR depth = ?3)"
        " AND (?4 = 0 OR encoding = ?4) AND algo = ?5 AND seed0 = ?6 AND restarts = ?7"
        " AND solutions = ?8 AND max_steps = ?9 AND quorum = ?10 ORDER BY id DESC LIMIT 1",
    [Q_SHARD_GET] = "SELECT " STORE_SHARD_COLUMNS " FROM shards WHERE job = ?1 AND idx = ?2",
    /* One state: the (job, state) index yields rows already by idx. The partial index (004)
       leaves done rows out; SQLite uses it only when the query repeats its condition. */
    [Q_SHARDS_ONE_STATE] =
        "SELECT " STORE_SHARD_COLUMNS " FROM shards"
        " WHERE job = ?1 AND state = ?2 AND state <> 'done' AND idx >= ?3 ORDER BY idx LIMIT ?4",
    /* Several states: walk the primary key (a sort per chunk over the index would be quadratic). */
    [Q_SHARDS_STATES] =
        "SELECT " STORE_SHARD_COLUMNS " FROM shards"
        " WHERE job = ?1 AND idx >= ?3 AND +state IN (?5, ?6, ?7, ?8, ?9, ?10)"
        " ORDER BY idx LIMIT ?4",
    /* a shard from beyond the frontier gets its row here */
    [Q_SHARD_LEASE] =
        "INSERT INTO shards (job, idx, state, lease, worker, leased_at) SELECT ?1, ?2, 'leased', ?3, ?4, ?5"
        " WHERE ?2 < (SELECT shards_total FROM jobs WHERE id = ?1)"
        " ON CONFLICT (job, idx) DO UPDATE SET state = 'leased', lease = ?3, worker = ?4, leased_at = ?5"
        " WHERE state IN ('pending', 'leased')",
    [Q_SHARD_RELEASE] =
        "UPDATE shards SET attempts = attempts + ?3, lease = NULL, worker = NULL, leased_at = NULL,"
        " state = CASE WHEN attempts + ?3 >= (SELECT max_attempts FROM jobs WHERE id = ?1)"
        "   THEN 'failed' ELSE 'pending' END"
        " WHERE job = ?1 AND idx = ?2 AND state = 'leased' RETURNING state",
    /* a quorum vote came in on this lease: the row waits for the other votes as pending, unless
       another copy was leased after it (the row names the latest lease) */
    [Q_SHARD_VOTED] =
        "UPDATE shards SET state = 'pending', lease = NULL, worker = NULL, leased_at = NULL"
        " WHERE job = ?1 AND idx = ?2 AND state = 'leased' AND lease = ?3",
    [Q_SHARDS_CANCEL] =
        "UPDATE shards SET state = 'cancelled', lease = NULL, worker = NULL, leased_at = NULL"
        " WHERE job = ?1 AND state IN ('pending', 'leased') AND state <> 'done'",
    [Q_ENUM_RETRY_DELETE] =
        "DELETE FROM enum_solutions WHERE job = ?1 AND shard IN"
        " (SELECT idx FROM shards WHERE job = ?1 AND state IN ('failed', 'conflict') AND state <> 'done')",
    /* A retried conflict forgets both results: the next one is a fresh first result. */
    [Q_SHARDS_RETRY] =
        "UPDATE shards SET state = 'pending', attempts = 0, lease = NULL, worker = NULL,"
        " leased_at = NULL, status = NULL, total = NULL, uniq = NULL, nodes = NULL, res13 = NULL,"
        " res15 = NULL, elapsed = NULL, confirmations = 0, conflict_with = NULL, done_at = NULL,"
        " who = NULL, verify = 0"
        " WHERE job = ?1 AND state IN ('failed', 'conflict', 'cancelled') AND state <> 'done'",
    /* no shard row (s.state NULL): a pending shard beyond the frontier, when idx < shards_total */
    [Q_PUT_LOOKUP] =
        "SELECT s.state, s.done_at IS NOT NULL, s.status, s.total, s.uniq, s.nodes, s.res13,"
        " s.res15, s.worker, s.lease, j.seed0, j.kind, j.state, j.n, j.shards_total, j.restarts, s.elapsed,"
        " s.who FROM jobs j LEFT JOIN shards s ON s.job = j.id AND s.idx = ?2 WHERE j.id = ?1",
    [Q_PUT_FIRST] =
        "INSERT INTO shards (job, idx, state, status, total, uniq, nodes, res13, res15, elapsed, worker,"
        " lease, done_at, who, verify) VALUES (?1, ?2, 'done', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
        " ?13, ?14)"
        " ON CONFLICT (job, idx) DO UPDATE SET state = 'done', status = ?3, total = ?4, uniq = ?5,"
        " nodes = ?6, res13 = ?7, res15 = ?8, elapsed = ?9, worker = ?10, lease = ?11, done_at = ?12,"
        " leased_at = NULL, confirmations = 0, conflict_with = NULL, who = ?13, verify = ?14",
    [Q_PUT_CONFIRM] =
        "UPDATE shards SET confirmations = confirmations + 1 WHERE job = ?1 AND idx = ?2",
    [Q_PUT_CONFLICT] =
        "UPDATE shards SET state = 'conflict', conflict_with = ?3, verify = 0 WHERE job = ?1 AND idx = ?2",
    /* one done shard in (?2 = 1) or out (-1), with its sums in 32-bit limbs (see 004_campaign.sql) */
    [Q_JOB_DONE_ADD] =
        "UPDATE jobs SET shards_done = shards_done + ?2, total_lo = total_lo + ?2 * ?3,"
        " total_hi = total_hi + ?2 * ?4, uniq_lo = uniq_lo + ?2 * ?5, uniq_hi = uniq_hi + ?2 * ?6,"
        " nodes_lo = nodes_lo + ?2 * ?7, nodes_hi = nodes_hi + ?2 * ?8, res13_sum = res13_sum + ?2 * ?9,"
        " res15_sum = res15_sum + ?2 * ?10, core_seconds = core_seconds + ?2 * ?11,"
        " shards_conflict = shards_conflict + ?12, shards_failed = shards_failed + ?13 WHERE id = ?1",
    [Q_ENUM_PUT] =
        "INSERT OR REPLACE INTO enum_solutions (job, shard, count, data) VALUES (?1, ?2, ?3, ?4)",
    [Q_ENUM_GET] =
        "SELECT data FROM enum_solutions WHERE job = ?1 AND shard = ?2",
    /* The first shard to find a permutation names it; the same one found again is not new. */
    [Q_SOLUTION_PUT] =
        "INSERT OR IGNORE INTO solutions (job, hash, shard, seed, n, cols, path, found_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [Q_WORKER_NODES] =
        "SELECT nodes FROM workers WHERE id = ?1",
    [Q_WORKER_CREDIT] =
        "INSERT INTO workers (id, host, first_seen, last_seen, shards_done, nodes, seconds)"
        " VALUES (?1, '', ?2, ?2, 1, ?3, ?4) ON CONFLICT (id) DO UPDATE SET last_seen = ?2,"
        " shards_done = shards_done + 1, nodes = ?3, seconds = seconds + ?4",
    [Q_WORKER_CONFLICT] =
        "INSERT INTO workers (id, host, first_seen, last_seen, conflicts) VALUES (?1, '', ?2, ?2, 1)"
        " ON CONFLICT (id) DO UPDATE SET last_seen = ?2, conflicts = conflicts + 1",
    [Q_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [Q_META_SET] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
    [Q_WORKER_FLAG] =
        "UPDATE workers SET conflicts = conflicts + 1, flagged = 1 WHERE id = ?1",
    [Q_WORKER_FORGET] =               /* a peer that did nothing leaves no trace: HELLO floods add no rows */
        "DELETE FROM workers WHERE id = ?1 AND shards_done = 0 AND conflicts = 0 AND flagged = 0",
    [Q_WORKER_KEY] = "SELECT pubkey FROM workers WHERE id = ?1",
    [Q_JOB_ERROR] = "UPDATE jobs SET last_error = ?2 WHERE id = ?1",
    [Q_WORKER_SEEN] =
        "INSERT INTO workers (id, host, pubkey, threads, first_seen, last_seen)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (id) DO UPDATE SET host = excluded.host,"
        " pubkey = coalesce(excluded.pubkey, pubkey), threads = excluded.threads,"
        " last_seen = excluded.last_seen",
    [Q_TOTALS_WORKERS] =
        "SELECT count(*) FROM job_workers WHERE job = ?1",
    [Q_TOTALS_SOLUTIONS] =
        "SELECT count(*) FROM solutions WHERE job = ?1",
    /* one row per confirming identity (007_decided.sql): changes() says whether it is new */
    [Q_CONFIRM_ADD] =
        "INSERT OR IGNORE INTO confirmations (job, idx, who) VALUES (?1, ?2, ?3)",
    [Q_CONFIRM_RETRY_DELETE] =
        "DELETE FROM confirmations WHERE job = ?1 AND idx IN"
        " (SELECT idx FROM shards WHERE job = ?1 AND state IN ('failed', 'conflict') AND state <> 'done')",
    [Q_EVIDENCE_PUT] =
        "INSERT OR IGNORE INTO evidence (job, idx, who, worker, status, total, uniq, nodes, res13, res15, at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [Q_JOB_EVIDENCE_ADD] =
        "UPDATE jobs SET evidence = evidence + 1 WHERE id = ?1",
    [Q_WORKER_EVIDENCE] =
        "INSERT INTO workers (id, host, first_seen, last_seen, conflicts, flagged) VALUES (?1, '', ?2, ?2, 1, 1)"
        " ON CONFLICT (id) DO UPDATE SET last_seen = ?2, conflicts = conflicts + 1, flagged = 1",
};

struct nq_store {
    sqlite3 *db;
    char *path;
    int readonly;
    int version;
    int in_tx;                 /* store_begin was called and not yet committed/rolled back */
    int tx_failed;             /* a statement of the open group failed: the group must roll back */
    char tx_err[256];          /* why, for store_commit */
    char refused[320];         /* why the last row read was refused (store_refusal) */
    sqlite3_stmt *st[Q_COUNT];
    sqlite3_stmt *spot[STORE_SPOT_STMTS];   /* store_spotcheck.c's */
};

/* ---------------------------------------------------------------- names */

static const char *const shard_state_names[] = {
    "pending", "leased", "done", "failed", "conflict", "cancelled"
};
static const char *const job_state_names[] = { "pending", "running", "done", "failed", "cancelled" };
static const char *const kind_names[] = { NULL, "count", "solve", "enumerate" };

const char *store_shard_state_name(nq_shard_state_t s)
{
    return (unsigned)s <= NQ_SHARD_CANCELLED ? shard_state_names[s] : "?";
}

const char *store_job_state_name(nq_job_state_t s)
{
    return (unsigned)s <= NQ_JOB_CANCELLED ? job_state_names[s] : "?";
}

const char *store_kind_name(int kind)
{
    return kind >= NQ_KIND_COUNT && kind <= NQ_KIND_ENUMERATE ? kind_names[kind] : "?";
}

int store_kind_parse(const char *s)
{
    for (int k = NQ_KIND_COUNT; s && k <= NQ_KIND_ENUMERATE; k++)
        if (strcmp(s, kind_names[k]) == 0)
            return k;
    return -1;
}

static int name_index(const char *const *names, int count, const unsigned char *s)
{
    for (int i = 0; s && i < count; i++)
        if (strcmp((const char *)s, names[i]) == 0)
            return i;
    return -1;
}

int store_shard_state_parse(const unsigned char *s)
{
    return name_index(shard_state_names, NQ_SHARD_CANCELLED + 1, s);
}

/* ---------------------------------------------------------------- small helpers */


static sqlite3_int64 i64(uint64_t v) { return (sqlite3_int64)v; }   /* the bit pattern */
static uint64_t col_u64(sqlite3_stmt *q, int i) { return (uint64_t)sqlite3_column_int64(q, i); }

/* What an SQLite failure means to an operator: disk full and I/O errors get said plainly. */
static const char *db_reason(sqlite3 *db, int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL: return "the disk is full (SQLITE_FULL)";
    case SQLITE_IOERR: return "I/O error writing the database (SQLITE_IOERR)";
    case SQLITE_BUSY: return "the database is locked by another process (SQLITE_BUSY)";
    case SQLITE_READONLY: return "the database is read-only (SQLITE_READONLY)";
    case SQLITE_CORRUPT: return "the database is damaged (SQLITE_CORRUPT)";
    default: return db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    }
}

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[id], sql_text[id]);
}

/* Steps a statement that returns no row we need, and resets it (so it holds no lock). */
static int run_done(sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : rc;
}

/* Logs a failed statement; inside a group it poisons the group (see tx_end). Returns -1. */
static int db_fail(nq_store_t *s, const char *op, int rc)
{
    const char *why = db_reason(s->db, rc);
    nq_log(NQ_LOG_ERROR, "store.error", "op=%s err=\"%s\"", op, why);
    if (s->in_tx && !s->tx_failed) {
        s->tx_failed = 1;
        snprintf(s->tx_err, sizeof s->tx_err, "%s: %s", op, why);
    }
    return -1;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------- opening */

static int known_max(void)
{
    return nq_migrations_count > 0 ? nq_migrations[nq_migrations_count - 1].version : 0;
}

/* "file:" URI for the path (needed for immutable=1): everything but unreserved chars escaped. */
static char *path_uri(const char *path, int immutable)
{
    size_t len = strlen(path);
    char *u = malloc(len * 3 + 40);
    if (!u)
        return NULL;
    char *p = u + sprintf(u, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("/-._~", *c))
            *p++ = (char)*c;
        else
            p += sprintf(p, "%%%02X", *c);
    }
    sprintf(p, "?mode=ro%s", immutable ? "&immutable=1" : "");
    return u;
}

static int side_file_exists(const char *path, const char *suffix)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s%s", path, suffix) >= (int)sizeof buf)
        return 1;   /* cannot tell: assume it does (the safe answer) */
    return access(buf, F_OK) == 0;
}

/*
 * Reads the first bytes with plain read(): is it SQLite at all? *empty = 1 for a
 * 0-byte file (SQLite treats it as an empty database). 0 ok, -1 refused.
 */
static int inspect_header(const char *path, int *empty, char *err, size_t errlen)
{
    static const char magic[16] = "SQLite format 3";   /* with its NUL: 16 bytes */
    unsigned char h[100];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return nq_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    ssize_t got = read(fd, h, sizeof h);
    int e = errno;
    close(fd);
    if (got < 0)
        return nq_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    *empty = got == 0;
    if (got > 0 && (got < (ssize_t)sizeof h || memcmp(h, magic, sizeof magic) != 0))
        return nq_errf(err, errlen, "%s: not an nq database (file is not SQLite)", path);
    return 0;
}

static int query_int(sqlite3 *db, const char *sql, sqlite3_int64 *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(q, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int damaged(const char *path, int rc, const char *detail, char *err, size_t errlen)
{
    int code = rc & 0xff;
    if (code == SQLITE_NOTADB)
        nq_errf(err, errlen, "%s: not an nq database (file is not SQLite)", path);
    else if (code == SQLITE_CORRUPT || !rc)
        nq_errf(err, errlen, "%s: the database is damaged (%s)", path, detail);
    else
        nq_errf(err, errlen, "%s: cannot read the database: %s", path, detail);
    return -1;
}

/* Runs quick_check; 0 when it says "ok", else -1 with its first complaint in err. */
static int inspect_quick_check(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &q, NULL);
    if (rc != SQLITE_OK)
        return damaged(path, rc, sqlite3_errmsg(db), err, errlen);
    rc = sqlite3_step(q);
    int ok = rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
    if (!ok) {
        char what[200];
        const char *msg = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : sqlite3_errmsg(db);
        const char *banner = "*** in database main ***\n";
        if (strncmp(msg, banner, strlen(banner)) == 0)
            msg += strlen(banner);
        snprintf(what, sizeof what, "quick_check: %s", msg);
        for (char *p = what; *p; p++)       /* one line, for logs and CLI messages */
            if (*p == '\n')
                *p = ' ';
        sqlite3_finalize(q);
        return damaged(path, rc == SQLITE_ROW ? 0 : rc, what, err, errlen);
    }
    sqlite3_finalize(q);
    return 0;
}

/* Ours (application_id), or an empty SQLite file we may adopt; *version = applied schema. */
static int inspect_identity(sqlite3 *db, const char *path, int *version, char *err, size_t errlen)
{
    sqlite3_int64 app = 0, tables = 0, v = 0;
    int rc = query_int(db, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &tables);
    if (rc != SQLITE_OK)
        return damaged(path, rc, sqlite3_errmsg(db), err, errlen);
    if (app != NQ_APPLICATION_ID) {
        if (app == 0 && tables == 0) {
            *version = 0;      /* an empty SQLite database: nothing to lose, we may create in it */
            return 0;
        }
        nq_errf(err, errlen, "%s: not an nq database (an SQLite database of another application:"
                " application_id 0x%08llx, %lld schema objects)",
                path, (unsigned long long)(uint32_t)app, (long long)tables);
        return -1;
    }
    rc = query_int(db, "SELECT coalesce(max(version), 0) FROM schema_version", &v);
    if (rc != SQLITE_OK)
        return damaged(path, rc, sqlite3_errmsg(db), err, errlen);
    if (v > known_max()) {
        nq_errf(err, errlen, "%s: created by a newer nq: schema %lld, this build knows 1..%d",
                path, (long long)v, known_max());
        return -1;
    }
    *version = (int)v;
    return 0;
}

/*
 * Looks at an existing file without writing a byte: the header by hand, then a
 * read-only connection. When no -wal or -journal file is beside it, everything
 * is in the main file and the connection is opened immutable, so SQLite does
 * not even create the -shm/-wal side files.
 */
static off_t file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

static int inspect(const char *path, int *version, int full_check, char *err, size_t errlen)
{
    int empty = 0;
    if (inspect_header(path, &empty, err, errlen) != 0)
        return -1;
    if (empty) {
        *version = 0;
        return 0;
    }
    int immutable = !side_file_exists(path, "-wal") && !side_file_exists(path, "-journal");
    char *uri = path_uri(path, immutable);
    if (!uri)
        return nq_errf(err, errlen, "%s: out of memory", path);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    int res = -1;
    if (rc != SQLITE_OK)
        damaged(path, rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), err, errlen);
    else {
        sqlite3_busy_timeout(db, STORE_BUSY_MS);
        res = inspect_identity(db, path, version, err, errlen);
        if (res == 0 && *version > 0 && (full_check || file_bytes(path) <= STORE_CHECK_AT_OPEN_BYTES))
            res = inspect_quick_check(db, path, err, errlen);
    }
    sqlite3_close(db);
    return res;
}

static int set_pragmas(nq_store_t *s, char *err, size_t errlen)
{
    sqlite3_busy_timeout(s->db, STORE_BUSY_MS);
    if (s->readonly)
        return 0;
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &q, NULL);
    int wal = rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(q, 0), "wal") == 0;
    sqlite3_finalize(q);
    if (!wal)
        return nq_errf(err, errlen, "%s: cannot switch to WAL mode: %s", s->path,
                       sqlite3_errmsg(s->db));
    /* FULL: a commit is on disk before the broker ACKs; group commit keeps the fsyncs few. */
    rc = exec_sql(s->db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
                         " PRAGMA cache_size = -32768; PRAGMA journal_size_limit = 67108864");
    if (rc != SQLITE_OK)
        return nq_errf(err, errlen, "%s: %s", s->path, db_reason(s->db, rc));
    return 0;
}

/* One transaction per migration; the first one also stamps the application_id. */
static int migrate_one(nq_store_t *s, const nq_migration_t *m, char *err, size_t errlen)
{
    sqlite3_int64 cur = 0;
    int rc = exec_sql(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return nq_errf(err, errlen, "%s: cannot migrate: %s", s->path, db_reason(s->db, rc));
    /* Re-read inside the transaction: another process may have migrated meanwhile. */
    if (query_int(s->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_version'", &cur) == SQLITE_OK &&
        cur > 0)
        rc = query_int(s->db, "SELECT coalesce(max(version), 0) FROM schema_version", &cur);
    if (rc == SQLITE_OK && cur >= m->version)
        return exec_sql(s->db, "COMMIT"), 0;
    if (rc == SQLITE_OK && cur == 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d", NQ_APPLICATION_ID);
        rc = exec_sql(s->db, sql);
    }
    if (rc == SQLITE_OK)
        rc = exec_sql(s->db, m->sql);
    if (rc == SQLITE_OK) {
        sqlite3_stmt *q;
        rc = sqlite3_prepare_v2(s->db, "INSERT INTO schema_version (version, name, applied_at)"
                                       " VALUES (?1, ?2, ?3)", -1, &q, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int(q, 1, m->version);
            sqlite3_bind_text(q, 2, m->name, -1, SQLITE_STATIC);
            sqlite3_bind_double(q, 3, nq_wall());
            rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
            sqlite3_finalize(q);
        }
    }
    if (rc == SQLITE_OK)
        rc = exec_sql(s->db, "COMMIT");
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "%s: migration %s failed: %s", s->path, m->name, db_reason(s->db, rc));
        exec_sql(s->db, "ROLLBACK");
        return -1;
    }
    nq_log(NQ_LOG_INFO, "store.migrated", "db=%s version=%d name=%s", s->path, m->version, m->name);
    return 0;
}

static int migrate(nq_store_t *s, char *err, size_t errlen)
{
    for (int i = 0; i < nq_migrations_count; i++) {
        if (nq_migrations[i].version <= s->version)
            continue;
        if (migrate_one(s, &nq_migrations[i], err, errlen) != 0)
            return -1;
        s->version = nq_migrations[i].version;
    }
    return 0;
}

/* A new DB starts as an empty file of mode 0600: it holds the lease key (who can read it can
   forge results) and SQLite gives its -wal and -shm files the DB file's mode. */
static int store_create_private(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return nq_errf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    close(fd);
    return 0;
}

nq_store_t *store_open(const char *path, int readonly, char *err, size_t errlen)
{
    struct stat sb;
    int version = 0, create = 0;
    if (!path || !*path)
        return nq_errf(err, errlen, "no database path given"), NULL;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT || readonly)
            return nq_errf(err, errlen, "%s: %s", path,
                           errno == ENOENT ? "no such database" : strerror(errno)), NULL;
        create = 1;
    } else if (!S_ISREG(sb.st_mode)) {
        return nq_errf(err, errlen, "%s: not a regular file", path), NULL;
    } else if (inspect(path, &version, 0, err, errlen) != 0) {
        return NULL;
    }
    if (readonly && version < known_max()) {
        nq_errf(err, errlen, version == 0 ? "%s: empty database: no nq schema yet"
                             : "%s: schema %d is older than this build's %d: run the broker on it once to upgrade",
                path, version, known_max());
        return NULL;
    }
    nq_store_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return nq_errf(err, errlen, "%s: out of memory", path), NULL;
    }
    s->readonly = readonly;
    s->version = version;
    if (create && store_create_private(path, err, errlen) != 0) {
        store_destroy(&s);
        return NULL;
    }
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "%s: cannot %s: %s", path, create ? "create" : "open",
                s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        store_destroy(&s);
        return NULL;
    }
    if (set_pragmas(s, err, errlen) != 0 || (!readonly && migrate(s, err, errlen) != 0)) {
        store_destroy(&s);
        return NULL;
    }
    return s;
}

uint64_t store_solve_seed(uint64_t seed0, uint64_t restarts, uint64_t idx)
{
    return seed0 + (restarts ? idx % restarts : 0);
}

void store_solve_method(const char *algos, uint64_t restarts, uint64_t idx, char *out, size_t outlen)
{
    uint64_t k = restarts ? idx / restarts : 0;
    const char *p = algos[0] ? algos : "qs4";
    while (k > 0 && (p = strchr(p, ',')) != NULL) {
        p++;
        k--;
    }
    size_t len = p ? strcspn(p, ",") : 0;
    snprintf(out, outlen, "%.*s", (int)(len < outlen ? len : outlen - 1), p ? p : "");
}

int store_set_local(nq_store_t *s)
{
    return exec_sql(s->db, "PRAGMA synchronous = NORMAL") == SQLITE_OK ? 0 : -1;
}

int store_check_file(const char *path, char *err, size_t errlen)
{
    int version = 0;
    return inspect(path, &version, 1, err, errlen);
}

void store_destroy(nq_store_t **sp)
{
    if (!sp || !*sp)
        return;
    nq_store_t *s = *sp;
    if (s->in_tx)
        store_rollback(s);
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    for (int i = 0; i < STORE_SPOT_STMTS; i++)
        sqlite3_finalize(s->spot[i]);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
    *sp = NULL;
}

sqlite3 *store_db(nq_store_t *s) { return s->db; }
const char *store_path(nq_store_t *s) { return s->path; }
int store_schema_version(nq_store_t *s) { return s->version; }

/* ---------------------------------------------------------------- transactions */

/*
 * A group (store_begin .. store_commit) is all or nothing. SQLite may roll a
 * whole transaction back on its own after SQLITE_FULL or IOERR, after which
 * later statements would each commit alone; so the first failed statement
 * poisons the group: later writes in it are refused and store_commit rolls
 * back and reports the first error.
 */
int store_begin(nq_store_t *s)
{
    if (s->in_tx) {
        nq_log(NQ_LOG_ERROR, "store.error", "op=begin err=\"a transaction is already open\"");
        return -1;
    }
    int rc = exec_sql(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return db_fail(s, "begin", rc);
    s->in_tx = 1;
    s->tx_failed = 0;
    s->tx_err[0] = '\0';
    return 0;
}

static void tx_clear(nq_store_t *s)
{
    if (!sqlite3_get_autocommit(s->db))
        exec_sql(s->db, "ROLLBACK");
    s->in_tx = 0;
    s->tx_failed = 0;
}

int store_commit(nq_store_t *s, char *err, size_t errlen)
{
    if (!s->in_tx)
        return nq_errf(err, errlen, "%s: commit without a transaction", s->path);
    if (s->tx_failed) {
        nq_errf(err, errlen, "%s: %s; the group was rolled back, nothing of it is stored", s->path, s->tx_err);
        tx_clear(s);
        return -1;
    }
    int rc = exec_sql(s->db, "COMMIT");
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "%s: commit failed: %s; the group was rolled back, nothing of it is stored",
                s->path, db_reason(s->db, rc));
        nq_log(NQ_LOG_ERROR, "store.error", "op=commit err=\"%s\"", db_reason(s->db, rc));
        tx_clear(s);
        return -1;
    }
    s->in_tx = 0;
    return 0;
}

/* ---- for the store's other files (store_impl.h) ---- */

sqlite3_stmt *store_stmt_cached(nq_store_t *s, sqlite3_stmt **slot, const char *sql)
{
    if (!*slot && sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK) {
        char q[NQ_LOG_QLEN];
        nq_log(NQ_LOG_ERROR, "store.prepare", "sql=%s err=\"%s\"", nq_log_qs(q, sizeof q, sql),
               sqlite3_errmsg(s->db));
        *slot = NULL;
        return NULL;
    }
    sqlite3_reset(*slot);
    sqlite3_clear_bindings(*slot);
    return *slot;
}

sqlite3_stmt **store_spot_slots(nq_store_t *s) { return s->spot; }
int store_fail(nq_store_t *s, const char *op, int rc) { return db_fail(s, op, rc); }
int store_step_done(sqlite3_stmt *q) { return run_done(q); }

void store_rollback(nq_store_t *s)
{
    if (s->in_tx)
        tx_clear(s);
}

/* Joins the open group, or opens a transaction of its own (*own = 1). -1: poisoned group or error. */
static int tx_enter(nq_store_t *s, int *own)
{
    *own = 0;
    if (s->in_tx)
        return s->tx_failed ? -1 : 0;
    int rc = exec_sql(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return db_fail(s, "begin", rc);
    *own = 1;
    return 0;
}

/* Ends what tx_enter started: commits on rc >= 0, else rolls back. Returns rc or -1. */
static int tx_leave(nq_store_t *s, int own, int rc)
{
    if (!own)
        return rc;
    if (rc >= 0) {
        int c = exec_sql(s->db, "COMMIT");
        if (c == SQLITE_OK)
            return rc;
        db_fail(s, "commit", c);
        rc = -1;
    }
    if (!sqlite3_get_autocommit(s->db))
        exec_sql(s->db, "ROLLBACK");
    return rc;
}

/* ---------------------------------------------------------------- jobs */

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
    sqlite3_stmt *q = stmt(s, Q_JOB_INSERT);
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
    int rc = run_done(q);
    if (rc)
        return db_fail(s, "job.insert", rc);
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
    int rc = run_done(q);
    return rc ? db_fail(s, "shard.insert", rc) : 0;
}

/* Inserts the shards one by one with the one prepared statement; 0, or -1 with err. */
static int shards_insert_all(nq_store_t *s, const nq_job_spec_t *spec, uint64_t job, uint64_t nshards,
                             store_shard_iter_fn next, void *ud, char *err, size_t errlen)
{
    sqlite3_stmt *q = stmt(s, Q_SHARD_INSERT);
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
                          db_reason(s->db, sqlite3_extended_errcode(s->db))), -1);
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
    if (tx_enter(s, &own) != 0)
        return nq_errf(err, errlen, "%s: cannot begin: %s", s->path,
                       s->tx_failed ? s->tx_err : sqlite3_errmsg(s->db));
    uint64_t job = 0;
    int rc = exec_sql(s->db, "SAVEPOINT job_create");
    if (rc != SQLITE_OK)
        rc = (nq_errf(err, errlen, "%s: %s", s->path, db_reason(s->db, rc)), db_fail(s, "job.create", rc));
    else if (job_insert(s, spec, nshards, next ? nshards : 0, &job) != 0)
        rc = (nq_errf(err, errlen, "%s: cannot store the job: %s", s->path,
                      db_reason(s->db, sqlite3_extended_errcode(s->db))), -1);
    else if (next)
        rc = shards_insert_all(s, spec, job, nshards, next, ud, err, errlen);
    if (rc == 0)
        rc = exec_sql(s->db, "RELEASE job_create") == SQLITE_OK ? 0 : db_fail(s, "job.create", SQLITE_ERROR);
    else if (!sqlite3_get_autocommit(s->db))
        exec_sql(s->db, "ROLLBACK TO job_create; RELEASE job_create");
    int c = tx_leave(s, own, rc);
    if (c != 0 && rc == 0)
        nq_errf(err, errlen, "%s: commit failed: %s", s->path, db_reason(s->db, sqlite3_extended_errcode(s->db)));
    if (c == 0)
        *id = job;
    return c == 0 ? 0 : -1;
}

/* A refused row is not passed on: the reason is kept for store_refusal. 0, 1 no such job, -1 refused
   or a DB error. */
static int job_get(nq_store_t *s, uint64_t id, nq_job_row_t *out)
{
    sqlite3_stmt *q = stmt(s, Q_JOB_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(id));
    int rc = sqlite3_step(q), res;
    if (rc == SQLITE_ROW)
        res = store_job_row_read(q, out, s->refused, sizeof s->refused);
    else
        res = rc == SQLITE_DONE ? 1 : db_fail(s, "job.get", rc);
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
    sqlite3_stmt *q = stmt(s, Q_JOB_CONFLICTS);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(id));
    int rc = sqlite3_step(q);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_fail(s, "job.conflicts", rc);
}

int store_job_set_state(nq_store_t *s, uint64_t id, nq_job_state_t st)
{
    if ((unsigned)st > NQ_JOB_CANCELLED)
        return -1;
    int own, rc = tx_enter(s, &own);
    if (rc != 0)
        return -1;
    sqlite3_int64 conflicts = 0;
    /* Invariant 1: a job cannot finish while one of its shards is in conflict. */
    if (st == NQ_JOB_DONE && (rc = job_conflicts(s, id, &conflicts)) == 0 && conflicts > 0) {
        nq_log(NQ_LOG_WARN, "store.refused", "op=job.set_state job=%llu state=done conflicts=%lld",
               (unsigned long long)id, (long long)conflicts);
        rc = 1;
    }
    sqlite3_stmt *q = rc == 0 ? stmt(s, Q_JOB_SET_STATE) : NULL;
    if (rc == 0 && !q)
        rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(id));
        sqlite3_bind_text(q, 2, job_state_names[st], -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 3, nq_wall());
        int e = run_done(q);
        rc = e ? db_fail(s, "job.set_state", e) : (sqlite3_changes(s->db) == 1 ? 0 : 1);
    }
    rc = tx_leave(s, own, rc);
    return rc == 0 ? 0 : -1;
}

int store_jobs_active(nq_store_t *s, int (*fn)(void *ud, const nq_job_row_t *j),
                      int (*refused)(void *ud, uint64_t id, const char *why), void *ud)
{
    /* Ids first, then the rows: fn may call back into the store (and change these jobs). */
    sqlite3_stmt *q = stmt(s, Q_JOBS_ACTIVE);
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
    int res = rc == SQLITE_DONE ? 0 : db_fail(s, "jobs.active", rc);
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
    sqlite3_stmt *q = stmt(s, Q_JOB_FIND_SAME);
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
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : db_fail(s, "job.find_same", rc);
}

/* ---------------------------------------------------------------- shards */

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
    sqlite3_stmt *q = stmt(s, Q_SHARD_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(idx));
    int rc = sqlite3_step(q), bad = rc == SQLITE_ROW && shard_row_read(s, q, out) != 0;
    sqlite3_reset(q);
    if (bad)
        return -1;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : db_fail(s, "shard.get", rc);
}

/* Reads up to EACH_CHUNK rows from idx `from` on into rows[]; *n = how many. */
static int shards_chunk(nq_store_t *s, uint64_t job, unsigned mask, uint64_t from,
                        nq_shard_row_t *rows, size_t *n)
{
    /* one open state: its range of the open-state index; done rows are not in it (004) */
    int single = (mask & (mask - 1)) == 0 && !(mask & (1u << NQ_SHARD_DONE));
    sqlite3_stmt *q = stmt(s, single ? Q_SHARDS_ONE_STATE : Q_SHARDS_STATES);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 3, i64(from));
    sqlite3_bind_int(q, 4, EACH_CHUNK);
    for (int st = 0, k = 0; st <= NQ_SHARD_CANCELLED; st++)
        if (mask & (1u << st))
            sqlite3_bind_text(q, single ? 2 : 5 + k++, shard_state_names[st], -1, SQLITE_STATIC);
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (shard_row_read(s, q, &rows[(*n)++]) != 0)
            break;
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return -2;                      /* a refused row: the job's shards cannot be trusted */
    return rc == SQLITE_DONE ? 0 : db_fail(s, "shards.each", rc);
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

static int job_frontier(nq_store_t *s, uint64_t job, uint64_t frontier)
{
    sqlite3_stmt *q = stmt(s, Q_JOB_FRONTIER);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int64(q, 2, i64(frontier));
    int e = run_done(q);
    return e ? db_fail(s, "job.frontier", e) : 0;
}

/* 0 done, 1 not leasable (decided, or cancelled), -1 DB error. frontier > 0: the row is the
   first one at that order position, and the job's frontier moves past it in the same step. */
int store_shard_lease(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease, const char *worker,
                      uint64_t frontier)
{
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_SHARD_LEASE);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
        sqlite3_bind_int64(q, 3, i64(lease));
        if (worker)
            sqlite3_bind_text(q, 4, worker, -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 5, nq_wall());
        int e = run_done(q);
        rc = e ? db_fail(s, "shard.lease", e) : (sqlite3_changes(s->db) == 1 ? 0 : 1);
    }
    if (rc == 0 && frontier > 0)
        rc = job_frontier(s, job, frontier);
    return tx_leave(s, own, rc);
}

/* 0 released (*failed says whether it reached max_attempts), 1 not leased, -1 DB error. */
int store_shard_voted(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease)
{
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_SHARD_VOTED);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
        sqlite3_bind_int64(q, 3, i64(lease));
        int e = run_done(q);
        rc = e ? db_fail(s, "shard.voted", e) : 0;
    }
    return tx_leave(s, own, rc);
}

int store_shard_release(nq_store_t *s, uint64_t job, uint64_t idx, int count_attempt, int *failed)
{
    int own, rc = -1;
    if (failed)
        *failed = 0;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_SHARD_RELEASE);
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
            rc = db_fail(s, "shard.release", e);
        else if (now_failed && (q = stmt(s, Q_JOB_FAILED_ADD)) != NULL) {
            sqlite3_bind_int64(q, 1, i64(job));
            sqlite3_bind_int(q, 2, 1);
            if ((e = run_done(q)) != 0)
                rc = db_fail(s, "shard.release", e);
        }
    }
    return tx_leave(s, own, rc);
}

static int job_stmt(nq_store_t *s, int id, uint64_t job, const char *op)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    int e = run_done(q);
    return e ? db_fail(s, op, e) : 0;
}

int store_shards_cancel_pending(nq_store_t *s, uint64_t job)
{
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    return tx_leave(s, own, job_stmt(s, Q_SHARDS_CANCEL, job, "shards.cancel"));
}

int store_shards_retry(nq_store_t *s, uint64_t job)
{
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    int rc = job_stmt(s, Q_ENUM_RETRY_DELETE, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, Q_CONFIRM_RETRY_DELETE, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, Q_SHARDS_RETRY, job, "shards.retry");
    if (rc == 0)
        rc = job_stmt(s, Q_JOB_RETRY_COUNTS, job, "shards.retry");
    return tx_leave(s, own, rc);
}

/* ---------------------------------------------------------------- results */

/* What the store holds about a shard when a result arrives. */
typedef struct {
    int shard_state, job_state, kind, has_result;
    int64_t who;                       /* identity of the stored result's sender, 0 not known */
    uint64_t n, seed, lease, shards_total;
    int status;
    uint64_t total, unique, nodes;
    int res13, res15;
    double elapsed;
    char worker[NQ_STR_MAX];
} put_ctx_t;

/* 0 found, 1 unknown shard, -1 error. */
static int put_lookup(nq_store_t *s, const nq_result_t *r, put_ctx_t *c)
{
    sqlite3_stmt *q = stmt(s, Q_PUT_LOOKUP);
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
        c->job_state = name_index(job_state_names, 5, sqlite3_column_text(q, 12));
        c->n = col_u64(q, 13);
        c->shards_total = col_u64(q, 14);
        c->elapsed = sqlite3_column_double(q, 16);
        c->who = sqlite3_column_int64(q, 17);
    }
    sqlite3_reset(q);
    if (rc == SQLITE_ROW && r->shard >= c->shards_total)
        return 1;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : db_fail(s, "result.lookup", rc);
}

/* Adds to a worker's counters; nodes in C with saturation (u64 bit patterns, no SQL overflow). */
static int worker_credit(nq_store_t *s, const char *worker, uint64_t nodes, double seconds)
{
    sqlite3_stmt *q = stmt(s, Q_WORKER_NODES);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    uint64_t old = rc == SQLITE_ROW ? col_u64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(s, "worker.credit", rc);
    uint64_t sum = old + nodes < old ? UINT64_MAX : old + nodes;
    if (!(q = stmt(s, Q_WORKER_CREDIT)))
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 2, nq_wall());
    sqlite3_bind_int64(q, 3, i64(rc == SQLITE_ROW ? sum : nodes));
    sqlite3_bind_double(q, 4, seconds);
    rc = run_done(q);
    return rc ? db_fail(s, "worker.credit", rc) : 0;
}

static int worker_conflict(nq_store_t *s, const char *worker)
{
    sqlite3_stmt *q = stmt(s, Q_WORKER_CONFLICT);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
    sqlite3_bind_double(q, 2, nq_wall());
    int rc = run_done(q);
    return rc ? db_fail(s, "worker.conflict", rc) : 0;
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
    int rc = run_done(q);
    return rc ? db_fail(s, op, rc) : 0;
}

/* One done result into (dir = 1) or out of (dir = -1) its job's aggregates, with the
   conflict and failed counts moving by dconflict, dfailed (004_campaign.sql). */
static int job_move_done(nq_store_t *s, uint64_t job, int dir, const store_sums_t *d, int dconflict, int dfailed)
{
    sqlite3_stmt *q = stmt(s, Q_JOB_DONE_ADD);
    if (!q)
        return -1;
    const uint64_t lo = 0xffffffffu;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_int(q, 2, dir);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)(d->total & lo));
    sqlite3_bind_int64(q, 4, (sqlite3_int64)(d->total >> 32));
    sqlite3_bind_int64(q, 5, (sqlite3_int64)(d->unique & lo));
    sqlite3_bind_int64(q, 6, (sqlite3_int64)(d->unique >> 32));
    sqlite3_bind_int64(q, 7, (sqlite3_int64)(d->nodes & lo));
    sqlite3_bind_int64(q, 8, (sqlite3_int64)(d->nodes >> 32));
    sqlite3_bind_int(q, 9, d->res13);
    sqlite3_bind_int(q, 10, d->res15);
    sqlite3_bind_double(q, 11, d->seconds);
    sqlite3_bind_int(q, 12, dconflict);
    sqlite3_bind_int(q, 13, dfailed);
    int rc = run_done(q);
    return rc ? db_fail(s, "job.aggregates", rc) : 0;
}

static int job_worker_add(nq_store_t *s, uint64_t job, const char *worker, uint64_t nodes, double seconds)
{
    sqlite3_stmt *q = stmt(s, Q_JOB_WORKER_ADD);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    sqlite3_bind_text(q, 2, worker, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, nodes > INT64_MAX ? INT64_MAX : (sqlite3_int64)nodes);
    sqlite3_bind_double(q, 4, seconds);
    int rc = run_done(q);
    return rc ? db_fail(s, "job.worker", rc) : 0;
}

static int put_enum_payload(nq_store_t *s, const nq_result_t *r)
{
    sqlite3_stmt *q = stmt(s, Q_ENUM_PUT);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    sqlite3_bind_int64(q, 3, i64(r->total));
    /* A zero-length blob, not NULL: a shard may have no solutions. */
    sqlite3_bind_blob(q, 4, r->payload_len ? (const void *)r->payload : "", (int)r->payload_len, SQLITE_STATIC);
    int rc = run_done(q);
    return rc ? db_fail(s, "result.enum", rc) : 0;
}

/* 1 when the stored enumerate payload equals r's, 0 when not, -1 error. */
static int enum_payload_equal(nq_store_t *s, const nq_result_t *r)
{
    sqlite3_stmt *q = stmt(s, Q_ENUM_GET);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(r->job));
    sqlite3_bind_int64(q, 2, i64(r->shard));
    int rc = sqlite3_step(q), eq = 0;
    if (rc == SQLITE_ROW) {
        size_t len = (size_t)sqlite3_column_bytes(q, 0);
        const void *data = sqlite3_column_blob(q, 0);
        eq = len == r->payload_len && (len == 0 || memcmp(data, r->payload, len) == 0);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? eq : db_fail(s, "result.enum", rc);
}

static int put_solution(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c,
                        const char *hash, const char *path)
{
    sqlite3_stmt *q = stmt(s, Q_SOLUTION_PUT);
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
    int rc = run_done(q);
    return rc ? db_fail(s, "result.solution", rc) : 0;
}

static int put_first(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker,
                     const char *sol_hash, const char *sol_path, const nq_put_by_t *by)
{
    sqlite3_stmt *q = stmt(s, Q_PUT_FIRST);
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
    int rc = run_done(q);
    if (rc)
        return db_fail(s, "result.first", rc);
    store_sums_t d = { r->total, r->unique, r->nodes, r->res13, r->res15, secs };
    if (job_move_done(s, r->job, 1, &d, 0, c->shard_state == NQ_SHARD_FAILED ? -1 : 0) != 0)
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
    if (worker && worker_credit(s, worker, r->nodes, secs) != 0)
        return -1;
    return NQ_PUT_NEW;
}

/* 1 when r says the same as the stored first result, 0 when not, -1 error. */
static int put_same(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c)
{
    if (r->status != c->status || r->total != c->total || r->unique != c->unique ||
        r->res13 != c->res13 || r->res15 != c->res15)
        return 0;
    if (c->kind == NQ_KIND_COUNT && r->nodes != c->nodes)
        return 0;
    if (c->kind == NQ_KIND_ENUMERATE)
        return enum_payload_equal(s, r);
    return 1;
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
        sqlite3_stmt *q = stmt(s, Q_CONFIRM_ADD);
        if (!q)
            return -1;
        sqlite3_bind_int64(q, 1, i64(r->job));
        sqlite3_bind_int64(q, 2, i64(r->shard));
        sqlite3_bind_int64(q, 3, who);
        int rc = run_done(q);
        if (rc)
            return db_fail(s, "result.confirm", rc);
        if (sqlite3_changes(s->db) == 0)
            return NQ_PUT_RESENT;       /* this identity confirmed it before */
    }
    if (bind_run(s, Q_PUT_CONFIRM, r->job, r->shard, NULL, "result.confirm") != 0)
        return -1;
    if (worker && worker_credit(s, worker, r->nodes, r->elapsed_us / 1e6) != 0)
        return -1;
    return NQ_PUT_CONFIRMED;
}

/* A later result that differs from a decided one: evidence against its sender, kept once per
   shard and identity. The shard, the job's sums and the job's state do not move. */
static int put_evidence(nq_store_t *s, const nq_result_t *r, const char *worker, int64_t who)
{
    sqlite3_stmt *q = stmt(s, Q_EVIDENCE_PUT);
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
    int rc = run_done(q);
    if (rc)
        return db_fail(s, "result.evidence", rc);
    if (sqlite3_changes(s->db) == 0)
        return NQ_PUT_EVIDENCE;         /* the same sender on the same shard: counted once */
    if (job_stmt(s, Q_JOB_EVIDENCE_ADD, r->job, "result.evidence") != 0)
        return -1;
    if (worker && *worker) {
        if (!(q = stmt(s, Q_WORKER_EVIDENCE)))
            return -1;
        sqlite3_bind_text(q, 1, worker, -1, SQLITE_STATIC);
        sqlite3_bind_double(q, 2, nq_wall());
        if ((rc = run_done(q)))
            return db_fail(s, "result.evidence", rc);
    }
    return NQ_PUT_EVIDENCE;
}

/* Marks a shard whose votes disagree CONFLICT: out of the job's sums (when it was in them), and
   the job cannot finish while it stands. */
static int put_conflict(nq_store_t *s, const nq_result_t *r, const put_ctx_t *c, const char *worker)
{
    if (bind_run(s, Q_PUT_CONFLICT, r->job, r->shard, worker ? worker : "", "result.conflict") != 0)
        return -1;
    if (c->shard_state == NQ_SHARD_DONE) {   /* no longer done: its sums leave the job's */
        store_sums_t d = { c->total, c->unique, c->nodes, c->res13, c->res15, c->elapsed };
        if (job_move_done(s, r->job, -1, &d, 1, 0) != 0)
            return -1;
    }
    if (worker && worker_conflict(s, worker) != 0)
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
    return c.has_result ? put_again(s, r, &c, worker, by ? by->who : 0)
                        : put_first(s, r, &c, worker, sol_hash, sol_path, by);
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
    if (tx_enter(s, &own) != 0)
        return -1;
    return tx_leave(s, own, put_result(s, r, worker, sol_hash, sol_path, by));
}

int store_result_dispute(nq_store_t *s, const nq_result_t *r, const char *worker, const nq_put_by_t *by,
                         const char *other_worker)
{
    if (!put_args_ok(r, worker, NULL, NULL) || r->status == NQ_RES_ERROR)
        return -1;
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    int rc = put_result(s, r, worker, NULL, NULL, by);
    if (rc == NQ_PUT_NEW) {             /* only a first result can be disputed: a decided one stays */
        put_ctx_t c;
        memset(&c, 0, sizeof c);
        rc = put_lookup(s, r, &c);
        rc = rc == 0 ? put_conflict(s, r, &c, other_worker) : -1;
    }
    return tx_leave(s, own, rc);
}

/* ---------------------------------------------------------------- workers */

int store_meta_get(nq_store_t *s, const char *key, char *val, size_t vallen)
{
    sqlite3_stmt *q = stmt(s, Q_META_GET);
    if (!q)
        return -1;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q), out = 1;
    if (rc == SQLITE_ROW && (sqlite3_column_type(q, 0) != SQLITE_TEXT ||
                             (size_t)sqlite3_column_bytes(q, 0) >= vallen)) {
        val[0] = '\0';                  /* never cut short, never a number read as text */
        out = 2;
    } else if (rc == SQLITE_ROW) {
        snprintf(val, vallen, "%s", (const char *)sqlite3_column_text(q, 0));
        out = 0;
    } else if (rc != SQLITE_DONE) {
        out = db_fail(s, "meta.get", rc);
    }
    sqlite3_reset(q);
    return out;
}

int store_meta_set(nq_store_t *s, const char *key, const char *val)
{
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_META_SET);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
        int e = run_done(q);
        rc = e ? db_fail(s, "meta.set", e) : 0;
    }
    return tx_leave(s, own, rc);
}

/* Runs statement `which` on the workers row `id`, inside the open transaction or its own. */
static int worker_exec(nq_store_t *s, int which, const char *id, const char *op)
{
    if (!id || !*id)
        return -1;
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, which);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        int e = run_done(q);
        rc = e ? db_fail(s, op, e) : 0;
    }
    return tx_leave(s, own, rc);
}

int store_worker_flag(nq_store_t *s, const char *id)
{
    return worker_exec(s, Q_WORKER_FLAG, id, "worker.flag");
}

int store_worker_seen(nq_store_t *s, const char *id, const char *host, const char *key, uint32_t threads)
{
    if (!id || !*id || strlen(id) >= NQ_STR_MAX)
        return -1;
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_WORKER_SEEN);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, host ? host : "", -1, SQLITE_STATIC);
        if (key && *key)
            sqlite3_bind_text(q, 3, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 4, threads);
        sqlite3_bind_double(q, 5, nq_wall());
        int e = run_done(q);
        rc = e ? db_fail(s, "worker.seen", e) : 0;
    }
    return tx_leave(s, own, rc);
}

int store_worker_forget_idle(nq_store_t *s, const char *id)
{
    return worker_exec(s, Q_WORKER_FORGET, id, "worker.forget");
}

int store_worker_key_ok(nq_store_t *s, const char *id, const char *key)
{
    sqlite3_stmt *q = stmt(s, Q_WORKER_KEY);
    if (!q)
        return 0;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    int ok = 1;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) == SQLITE_TEXT)
        ok = strcmp((const char *)sqlite3_column_text(q, 0), key) == 0;
    sqlite3_reset(q);
    return ok;
}

int store_job_note_error(nq_store_t *s, uint64_t job, uint64_t idx, const char *text)
{
    char note[300];
    snprintf(note, sizeof note, "shard %llu: %s", (unsigned long long)idx, text);
    int own;
    if (tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, Q_JOB_ERROR);
    int rc = -1;
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_text(q, 2, note, -1, SQLITE_TRANSIENT);
        int e = run_done(q);
        rc = e ? db_fail(s, "job.error", e) : 0;
    }
    return tx_leave(s, own, rc);
}

/* ---------------------------------------------------------------- totals */

static int count_one(nq_store_t *s, int id, uint64_t job, uint64_t *out)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    int rc = sqlite3_step(q);
    *out = rc == SQLITE_ROW ? col_u64(q, 0) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_fail(s, "job.totals", rc);
}

static int totals_read(nq_store_t *s, uint64_t job, nq_job_totals_t *out)
{
    nq_job_row_t row;
    if (store_job_get(s, job, &row) != 0)
        return -1;
    int rc = store_job_sums(s->db, job, out);
    if (rc != SQLITE_DONE)
        return db_fail(s, "job.totals", rc);
    if (count_one(s, Q_TOTALS_WORKERS, job, &out->workers) != 0 ||
        count_one(s, Q_TOTALS_SOLUTIONS, job, &out->solutions) != 0)
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
                                " nodes_hi, core_seconds, res13_sum, res15_sum FROM jobs WHERE id = ?1",
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
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(q);
    return rc;
}

int store_job_recount(sqlite3 *db, uint64_t job, nq_job_totals_t *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, "SELECT state, total, uniq, nodes, elapsed, res13, res15 FROM shards"
                                " WHERE job = ?1", -1, &q, NULL);
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
        out->nodes += col_u64(q, 3);
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
    if (own && exec_sql(s->db, "BEGIN") != SQLITE_OK)
        return db_fail(s, "job.totals", sqlite3_errcode(s->db));
    int rc = totals_read(s, job, out);
    if (own)
        exec_sql(s->db, "COMMIT");
    return rc;
}

int store_job_solutions(nq_store_t *s, uint64_t job, uint64_t *n)
{
    return count_one(s, Q_TOTALS_SOLUTIONS, job, n);
}

int store_tx_enter(nq_store_t *s, int *own) { return tx_enter(s, own); }
int store_tx_leave(nq_store_t *s, int own, int rc) { return tx_leave(s, own, rc); }

int store_job_move(nq_store_t *s, uint64_t job, int dir, const store_sums_t *d, int dconflict, int dfailed)
{
    return job_move_done(s, job, dir, d, dconflict, dfailed);
}
