/*
 * The SQLite store (see store.h for the contract, schema/001_init.sql for the tables).
 *
 * This file opens it and keeps its transactions:
 *   opening: inspect the file read-only, refuse what is not ours, then open for
 *            writing, set the pragmas and apply the pending migrations;
 *   transactions: group commit, and how a failed statement poisons its group;
 *   the statement cache and the meta table.
 * The data are one file each: store_jobs.c, store_shards.c, store_results.c, store_workers.c,
 * and store_spotcheck.c; each keeps its SQL beside the code that runs it.
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

enum {
    C_META_GET, C_META_SET, C_COUNT
};

static const char *const sql_text[C_COUNT] = {
    [C_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [C_META_SET] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
};

_Static_assert(C_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");

/* The cached statement id, reset and unbound; NULL (logged) if it cannot be prepared. */
static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    return store_stmt_cached(s, &s->st[STORE_MOD_CORE][id], sql_text[id]);
}
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

int store_job_state_parse(const unsigned char *s)
{
    return name_index(job_state_names, NQ_JOB_CANCELLED + 1, s);
}

/* ---------------------------------------------------------------- small helpers */

/* What an SQLite failure means to an operator: disk full and I/O errors get said plainly. */
const char *store_db_reason(sqlite3 *db, int rc)
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

/* Steps a statement that returns no row we need, and resets it (so it holds no lock). */
int store_step_done(sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : rc;
}

/* Logs a failed statement; inside a group it poisons the group (see tx_end). Returns -1. */
int store_fail(nq_store_t *s, const char *op, int rc)
{
    const char *why = store_db_reason(s->db, rc);
    nq_log(NQ_LOG_ERROR, "store.error", "op=%s err=\"%s\"", op, why);
    if (s->in_tx && !s->tx_failed) {
        s->tx_failed = 1;
        snprintf(s->tx_err, sizeof s->tx_err, "%s: %s", op, why);
    }
    return -1;
}

int store_exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------- opening */

static int known_max(void)
{
    return nq_migrations_count > 0 ? nq_migrations[nq_migrations_count - 1].version : 0;
}

/* The oldest store this build can open: its first migration creates the whole schema, and no
   release has made a store before it. */
static int known_min(void)
{
    return nq_migrations_count > 0 ? nq_migrations[0].version : 0;
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
        nq_errf(err, errlen, "%s: created by a newer nq: schema %lld, this build knows %d..%d",
                path, (long long)v, known_min(), known_max());
        return -1;
    }
    if (v > 0 && v < known_min()) {
        nq_errf(err, errlen, "%s: schema %lld was made by a development build of nq before any release;"
                " this build opens schema %d..%d and has no migration from it", path, (long long)v,
                known_min(), known_max());
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
    rc = store_exec(s->db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"
                         " PRAGMA cache_size = -32768; PRAGMA journal_size_limit = 67108864");
    if (rc != SQLITE_OK)
        return nq_errf(err, errlen, "%s: %s", s->path, store_db_reason(s->db, rc));
    return 0;
}

/* One transaction per migration; the first one also stamps the application_id. */
static int migrate_one(nq_store_t *s, const nq_migration_t *m, char *err, size_t errlen)
{
    sqlite3_int64 cur = 0;
    int rc = store_exec(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return nq_errf(err, errlen, "%s: cannot migrate: %s", s->path, store_db_reason(s->db, rc));
    /* Re-read inside the transaction: another process may have migrated meanwhile. */
    if (query_int(s->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_version'", &cur) == SQLITE_OK &&
        cur > 0)
        rc = query_int(s->db, "SELECT coalesce(max(version), 0) FROM schema_version", &cur);
    if (rc == SQLITE_OK && cur >= m->version)
        return store_exec(s->db, "COMMIT"), 0;
    if (rc == SQLITE_OK && cur == 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d", NQ_APPLICATION_ID);
        rc = store_exec(s->db, sql);
    }
    if (rc == SQLITE_OK)
        rc = store_exec(s->db, m->sql);
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
        rc = store_exec(s->db, "COMMIT");
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "%s: migration %s failed: %s", s->path, m->name, store_db_reason(s->db, rc));
        store_exec(s->db, "ROLLBACK");
        return -1;
    }
    char qd[NQ_LOG_QLEN];
    nq_log(NQ_LOG_INFO, "store.migrated", "db=%s version=%d name=%s", nq_log_v(qd, sizeof qd, s->path), m->version,
           m->name);
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
    /* an empty file made beforehand (touch, a mounted volume's placeholder) becomes what a new
       DB is: 0600, before the lease key goes in */
    if (!create && !readonly && version == 0 && (sb.st_mode & 077) && chmod(path, sb.st_mode & 0700) != 0) {
        nq_errf(err, errlen, "%s: cannot make it private (mode 0600): %s", path, strerror(errno));
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
    if (stat(path, &sb) == 0) {
        s->dev = sb.st_dev;
        s->ino = sb.st_ino;
    }
    return s;
}

int store_file_check(nq_store_t *s, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(s->path, &sb) != 0)
        return nq_errf(err, errlen, "%s was removed (%s) while the broker had it open: what it commits now "
                       "would be lost", s->path, strerror(errno));
    if (sb.st_dev != s->dev || sb.st_ino != s->ino)
        return nq_errf(err, errlen, "%s was replaced by another file while the broker had it open: what it "
                       "commits now would go to the old one", s->path);
    return 0;
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
    return store_exec(s->db, "PRAGMA synchronous = NORMAL") == SQLITE_OK ? 0 : -1;
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
    for (int m = 0; m < STORE_MODS; m++)
        for (int i = 0; i < STORE_MOD_STMTS; i++)
            sqlite3_finalize(s->st[m][i]);
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
    int rc = store_exec(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return store_fail(s, "begin", rc);
    s->in_tx = 1;
    s->tx_failed = 0;
    s->tx_err[0] = '\0';
    return 0;
}

static void tx_clear(nq_store_t *s)
{
    if (!sqlite3_get_autocommit(s->db))
        store_exec(s->db, "ROLLBACK");
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
    int rc = store_exec(s->db, "COMMIT");
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "%s: commit failed: %s; the group was rolled back, nothing of it is stored",
                s->path, store_db_reason(s->db, rc));
        nq_log(NQ_LOG_ERROR, "store.error", "op=commit err=\"%s\"", store_db_reason(s->db, rc));
        tx_clear(s);
        return -1;
    }
    s->in_tx = 0;
    return 0;
}

/* ---- for the store's other files (store_impl.h) ---- */

sqlite3_stmt **store_spot_slots(nq_store_t *s) { return s->st[STORE_MOD_SPOT]; }

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

void store_rollback(nq_store_t *s)
{
    if (s->in_tx)
        tx_clear(s);
}

/* Joins the open group, or opens a transaction of its own (*own = 1). -1: poisoned group or error. */
int store_tx_enter(nq_store_t *s, int *own)
{
    *own = 0;
    if (s->in_tx)
        return s->tx_failed ? -1 : 0;
    int rc = store_exec(s->db, "BEGIN IMMEDIATE");
    if (rc != SQLITE_OK)
        return store_fail(s, "begin", rc);
    *own = 1;
    return 0;
}

/* Ends what store_tx_enter started: commits on rc >= 0, else rolls back. Returns rc or -1. */
int store_tx_leave(nq_store_t *s, int own, int rc)
{
    if (!own)
        return rc;
    if (rc >= 0) {
        int c = store_exec(s->db, "COMMIT");
        if (c == SQLITE_OK)
            return rc;
        store_fail(s, "commit", c);
        rc = -1;
    }
    if (!sqlite3_get_autocommit(s->db))
        store_exec(s->db, "ROLLBACK");
    return rc;
}

/* ---------------------------------------------------------------- meta */

int store_meta_get(nq_store_t *s, const char *key, char *val, size_t vallen)
{
    sqlite3_stmt *q = stmt(s, C_META_GET);
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
        out = store_fail(s, "meta.get", rc);
    }
    sqlite3_reset(q);
    return out;
}

int store_meta_set(nq_store_t *s, const char *key, const char *val)
{
    int own;
    if (store_tx_enter(s, &own) != 0)
        return -1;
    sqlite3_stmt *q = stmt(s, C_META_SET);
    int rc = -1;
    if (q) {
        sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, val, -1, SQLITE_STATIC);
        int e = store_step_done(q);
        rc = e ? store_fail(s, "meta.set", e) : 0;
    }
    return store_tx_leave(s, own, rc);
}

