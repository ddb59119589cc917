/*
 * Jobs and shards rows read back and checked like wire values (store_check.h): each column for
 * its type and range, then the columns against each other, before a caller sees the row.
 */
#include "store_check.h"
#include "errf.h"
#include "store_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CHANGED "the DB was changed outside nq"

/* One row being read: the statement, whose row it is (job, and shard when shard >= 0: "job 3",
   "job 3 shard 17", put into words only for a complaint), and the first complaint. */
typedef struct {
    sqlite3_stmt *q;
    uint64_t job;
    int64_t shard;
    char *err;
    size_t errlen;
    int bad;
} row_t;

/* What column i holds, for a message: a number as it is, text quoted and cut, else its type. */
static const char *holds(sqlite3_stmt *q, int i, char *buf, size_t len)
{
    switch (sqlite3_column_type(q, i)) {
    case SQLITE_INTEGER:
        snprintf(buf, len, "%lld", (long long)sqlite3_column_int64(q, i));
        break;
    case SQLITE_FLOAT:
        snprintf(buf, len, "the real %g", sqlite3_column_double(q, i));
        break;
    case SQLITE_NULL:
        snprintf(buf, len, "NULL");
        break;
    case SQLITE_BLOB:
        snprintf(buf, len, "a blob of %d bytes", sqlite3_column_bytes(q, i));
        break;
    default: {
        /* text from the file: printable ASCII only, and not all of it */
        const unsigned char *s = sqlite3_column_text(q, i);
        size_t o = 0;
        buf[o++] = '\'';
        for (size_t k = 0; s && s[k] && k < 24 && o + 5 < len; k++)
            buf[o++] = s[k] >= 0x20 && s[k] < 0x7f && s[k] != '\'' ? (char)s[k] : '?';
        snprintf(buf + o, len - o, "%s'", s && strlen((const char *)s) > 24 ? "..." : "");
    }
    }
    return buf;
}

/* Refuses the row (the first complaint wins): "WHO: column NAME holds V (allowed WHAT): ...". */
static int refuse(row_t *r, int i, const char *name, const char *allowed)
{
    char v[64], who[64];
    if (r->shard >= 0)
        snprintf(who, sizeof who, "job %llu shard %lld", (unsigned long long)r->job, (long long)r->shard);
    else
        snprintf(who, sizeof who, "job %llu", (unsigned long long)r->job);
    if (!r->bad)
        nq_errf(r->err, r->errlen, "%s: column %s holds %s (allowed %s): " CHANGED, who, name,
                holds(r->q, i, v, sizeof v), allowed);
    r->bad = 1;
    return -1;
}

/* An integer column within [min, max]. */
static int64_t col_int(row_t *r, int i, const char *name, int64_t min, int64_t max)
{
    int64_t v = sqlite3_column_int64(r->q, i);
    if (sqlite3_column_type(r->q, i) != SQLITE_INTEGER || v < min || v > max) {
        char allowed[64];
        snprintf(allowed, sizeof allowed, "%" PRId64 "..%" PRId64, min, max);
        refuse(r, i, name, allowed);
        return min;
    }
    return v;
}

/* A u64 stored as its bit pattern (seeds, step limits, lease ids): any integer, nothing else. */
static uint64_t col_bits(row_t *r, int i, const char *name, int nullable)
{
    int t = sqlite3_column_type(r->q, i);
    if (t == SQLITE_INTEGER || (nullable && t == SQLITE_NULL))
        return (uint64_t)sqlite3_column_int64(r->q, i);
    refuse(r, i, name, nullable ? "an integer or NULL" : "an integer");
    return 0;
}

/* A time or a cost: a finite number >= 0 (NULL reads as 0 where the column may be NULL). */
static double col_real(row_t *r, int i, const char *name, int nullable)
{
    int t = sqlite3_column_type(r->q, i);
    double v = sqlite3_column_double(r->q, i);
    if (nullable && t == SQLITE_NULL)
        return 0;
    if ((t != SQLITE_FLOAT && t != SQLITE_INTEGER) || !isfinite(v) || v < 0) {
        refuse(r, i, name, nullable ? "a finite number >= 0, or NULL" : "a finite number >= 0");
        return 0;
    }
    return v;
}

/* A name from a fixed list: its index. */
static int col_name(row_t *r, int i, const char *name, const char *const *names, int count,
                    const char *allowed)
{
    const unsigned char *s = sqlite3_column_text(r->q, i);
    for (int k = 0; s && sqlite3_column_type(r->q, i) == SQLITE_TEXT && k < count; k++)
        if (names[k] && strcmp((const char *)s, names[k]) == 0)
            return k;
    refuse(r, i, name, allowed);
    return 0;
}

/* Text of at most outlen - 1 bytes, without NUL or control bytes (a TASK carries it). */
static void col_text(row_t *r, int i, const char *name, int nullable, char *out, size_t outlen)
{
    int t = sqlite3_column_type(r->q, i);
    const unsigned char *s = sqlite3_column_text(r->q, i);
    size_t len = (size_t)sqlite3_column_bytes(r->q, i);
    out[0] = '\0';
    if (nullable && t == SQLITE_NULL)
        return;
    int ok = t == SQLITE_TEXT && s && len < outlen;
    for (size_t k = 0; ok && k < len; k++)
        ok = s[k] >= 0x20 && s[k] != 0x7f;
    if (!ok) {
        char allowed[80];
        snprintf(allowed, sizeof allowed, "text of at most %zu printable bytes%s", outlen - 1,
                 nullable ? ", or NULL" : "");
        refuse(r, i, name, allowed);
        return;
    }
    memcpy(out, s, len);
    out[len] = '\0';
}

static void row_init(row_t *r, sqlite3_stmt *q, uint64_t job, int64_t shard, char *err, size_t errlen)
{
    r->q = q;
    r->job = job;
    r->shard = shard;
    r->err = err;
    r->errlen = errlen;
    r->bad = 0;
}

/* ---------------------------------------------------------------- jobs */

/* The columns of STORE_JOB_COLUMNS, in order. */
enum {
    J_ID, J_KIND, J_N, J_STATE, J_PRIORITY, J_DEPTH, J_ENCODING, J_ALGO, J_SEED0, J_RESTARTS,
    J_SOLUTIONS, J_MAX_STEPS, J_MAX_ATTEMPTS, J_QUORUM, J_SHARDS_TOTAL, J_SHARDS_DONE, J_CREATED,
    J_STARTED, J_FINISHED, J_SHARDS_FAILED, J_SHARDS_CONFLICT, J_FRONTIER, J_VERIFY_PPM, J_CHECKS,
    J_DISAGREED, J_EVIDENCE, J_BACK, J_LEASE_ORDER, J_FAST_SHARDS, J_COUNT
};
_Static_assert(J_COUNT == STORE_JOB_NCOLS, "STORE_JOB_COLUMNS and this list must agree");

/* Where a spec's complaint goes: a row read back (the column and what it holds), or a spec the
   store was asked to write (row NULL). */
typedef struct {
    row_t *row;
    char *err;
    size_t errlen;
    int bad;
} check_t;

static int bad(check_t *c, int col, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad(check_t *c, int col, const char *name, const char *fmt, ...)
{
    char allowed[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(allowed, sizeof allowed, fmt, ap);
    va_end(ap);
    if (c->row)
        refuse(c->row, col, name, allowed);
    else if (!c->bad)
        nq_errf(c->err, c->errlen, "cannot store the job: its %s is not one nq allows (%s)", name, allowed);
    c->bad = 1;
    return -1;
}

static uint64_t n_max(int kind)
{
    return kind == NQ_KIND_COUNT ? NQ_SHARD_MAX_N
         : kind == NQ_KIND_ENUMERATE ? NQ_ENUM_MAX_N : NQ_SOLVE_MAX_N;
}

/* (n, depth, encoding) and the number of shards they make. */
static void check_list(check_t *c, const nq_job_spec_t *s, uint64_t shards)
{
    const char *kind = store_kind_name(s->kind);
    int lo, hi;
    if (s->encoding != NQ_SHARD_ENCODING) {
        bad(c, J_ENCODING, "encoding", "%d", NQ_SHARD_ENCODING);
    } else if (shard_depth_range(s->kind, (int)s->n, &lo, &hi) != 0 || (int64_t)s->depth < lo ||
               (int64_t)s->depth > hi) {
        bad(c, J_DEPTH, "depth", "%d..%d for %s N=%llu", lo, hi, kind, (unsigned long long)s->n);
    } else {
        uint64_t most = store_list_bound(s->kind, s->n, s->depth);
        if (shards < 1 || shards > most)
            bad(c, J_SHARDS_TOTAL, "shards_total", "1..%llu for %s N=%llu at depth %u",
                (unsigned long long)most, kind, (unsigned long long)s->n, s->depth);
    }
}

/* A solve job: seeds times methods, as submit.c cut it. */
static void check_solve(check_t *c, const nq_job_spec_t *s, uint64_t shards)
{
    int methods = store_solve_methods(s->algo);
    if (s->encoding != 0)
        bad(c, J_ENCODING, "encoding", "0 for a solve job");
    else if (s->depth > NQ_SHARD_MAX_N)
        bad(c, J_DEPTH, "depth", "0..%d", NQ_SHARD_MAX_N);
    else if (methods == 0)
        bad(c, J_ALGO, "algo", "1..%d comma-separated method names", NQ_JOB_MAX_METHODS);
    else if (s->restarts < 1 || s->restarts > NQ_JOB_MAX_SEEDS)
        bad(c, J_RESTARTS, "restarts", "1..%llu", NQ_JOB_MAX_SEEDS);
    else if (s->solutions > s->restarts)
        bad(c, J_SOLUTIONS, "solutions", "0..%llu, at most restarts", (unsigned long long)s->restarts);
    else if (shards != s->restarts * (uint64_t)methods)
        bad(c, J_SHARDS_TOTAL, "shards_total", "%llu: restarts %llu x %d method(s)",
            (unsigned long long)(s->restarts * (uint64_t)methods), (unsigned long long)s->restarts, methods);
}

/* Everything a spec asks for against the limits of store.h. */
static int check_spec(check_t *c, const nq_job_spec_t *s, uint64_t shards)
{
    if (s->kind < NQ_KIND_COUNT || s->kind > NQ_KIND_ENUMERATE)
        return bad(c, J_KIND, "kind", "count, solve or enumerate");
    if (s->n < 1 || s->n > n_max(s->kind))
        return bad(c, J_N, "n", "1..%llu for %s", (unsigned long long)n_max(s->kind),
                   store_kind_name(s->kind));
    if (s->priority < 0 || s->priority > NQ_JOB_MAX_PRIORITY)
        return bad(c, J_PRIORITY, "priority", "0..%d", NQ_JOB_MAX_PRIORITY);
    if (s->max_attempts < 1 || s->max_attempts > NQ_JOB_MAX_ATTEMPTS)
        return bad(c, J_MAX_ATTEMPTS, "max_attempts", "1..%d", NQ_JOB_MAX_ATTEMPTS);
    if (s->quorum < 1 || s->quorum > NQ_JOB_MAX_QUORUM)
        return bad(c, J_QUORUM, "quorum", "1..%d", NQ_JOB_MAX_QUORUM);
    if (s->verify_ppm > NQ_JOB_PPM)
        return bad(c, J_VERIFY_PPM, "verify_ppm", "0..%d", NQ_JOB_PPM);
    if (s->verify_ppm > 0 && (s->kind != NQ_KIND_COUNT || s->quorum > 1))
        return bad(c, J_VERIFY_PPM, "verify_ppm", "0 for a %s job with quorum %u", store_kind_name(s->kind),
                   s->quorum);
    if (memchr(s->algo, '\0', sizeof s->algo) == NULL)
        return bad(c, J_ALGO, "algo", "at most %zu bytes", sizeof s->algo - 1);
    if (s->kind == NQ_KIND_SOLVE)
        check_solve(c, s, shards);
    else
        check_list(c, s, shards);
    return c->bad ? -1 : 0;
}

int store_spec_check(const nq_job_spec_t *spec, uint64_t nshards, char *err, size_t errlen)
{
    check_t c = { NULL, err, errlen, 0 };
    return check_spec(&c, spec, nshards);
}

/* kind, n ... verify_ppm: what the job asks for, each within its own limit, or at least within its C
   type (a value that does not fit would be cut to one that passes) until check_spec relates it to
   the others. */
static void job_params(row_t *r, nq_job_row_t *o)
{
    const char *kinds[] = { NULL, store_kind_name(NQ_KIND_COUNT), store_kind_name(NQ_KIND_SOLVE),
                            store_kind_name(NQ_KIND_ENUMERATE) };
    const char *states[] = { store_job_state_name(NQ_JOB_PENDING), store_job_state_name(NQ_JOB_RUNNING),
                             store_job_state_name(NQ_JOB_DONE), store_job_state_name(NQ_JOB_FAILED),
                             store_job_state_name(NQ_JOB_CANCELLED) };
    nq_job_spec_t *s = &o->spec;
    s->kind = col_name(r, J_KIND, "kind", kinds, 4, "count, solve or enumerate");
    s->n = (uint64_t)col_int(r, J_N, "n", 1, INT64_MAX);
    o->state = (nq_job_state_t)col_name(r, J_STATE, "state", states, 5,
                                        "pending, running, done, failed or cancelled");
    s->priority = (int)col_int(r, J_PRIORITY, "priority", 0, NQ_JOB_MAX_PRIORITY);
    s->depth = (uint32_t)col_int(r, J_DEPTH, "depth", 0, UINT32_MAX);
    s->encoding = (uint32_t)col_int(r, J_ENCODING, "encoding", 0, UINT32_MAX);
    col_text(r, J_ALGO, "algo", 0, s->algo, sizeof s->algo);
    s->seed0 = col_bits(r, J_SEED0, "seed0", 0);
    s->restarts = col_bits(r, J_RESTARTS, "restarts", 0);
    s->solutions = col_bits(r, J_SOLUTIONS, "solutions", 0);
    s->max_steps = col_bits(r, J_MAX_STEPS, "max_steps", 0);
    s->max_attempts = (uint32_t)col_int(r, J_MAX_ATTEMPTS, "max_attempts", 1, NQ_JOB_MAX_ATTEMPTS);
    s->quorum = (uint32_t)col_int(r, J_QUORUM, "quorum", 1, NQ_JOB_MAX_QUORUM);
    s->verify_ppm = (uint32_t)col_int(r, J_VERIFY_PPM, "verify_ppm", 0, NQ_JOB_PPM);
}

/* shards_total ... disagreed: how far the job got, each within what it could have reached. */
static void job_progress(row_t *r, nq_job_row_t *o)
{
    o->shards_total = (uint64_t)col_int(r, J_SHARDS_TOTAL, "shards_total", 1, INT64_MAX);
    int64_t total = (int64_t)o->shards_total;
    o->shards_done = (uint64_t)col_int(r, J_SHARDS_DONE, "shards_done", 0, total);
    o->shards_failed = (uint64_t)col_int(r, J_SHARDS_FAILED, "shards_failed", 0, total);
    o->shards_conflict = (uint64_t)col_int(r, J_SHARDS_CONFLICT, "shards_conflict", 0, total);
    o->fast_shards = (uint64_t)col_int(r, J_FAST_SHARDS, "fast_shards", 0, (int64_t)o->shards_done);
    o->frontier = (uint64_t)col_int(r, J_FRONTIER, "frontier", 0, total);
    o->back = (uint64_t)col_int(r, J_BACK, "back", (int64_t)o->frontier, total);   /* [frontier, back): no rows */
    o->spec.lease_order = (uint32_t)col_int(r, J_LEASE_ORDER, "lease_order", NQ_LEASE_ORDER, NQ_LEASE_ORDER);
    o->checks = (uint64_t)col_int(r, J_CHECKS, "checks", 0, INT64_MAX);
    o->disagreed = (uint64_t)col_int(r, J_DISAGREED, "disagreed", 0, (int64_t)o->checks);
    o->evidence = (uint64_t)col_int(r, J_EVIDENCE, "evidence", 0, INT64_MAX);
    o->created_at = col_real(r, J_CREATED, "created_at", 0);
    o->started_at = col_real(r, J_STARTED, "started_at", 1);    /* NULL: not yet (0) */
    o->finished_at = col_real(r, J_FINISHED, "finished_at", 1);
}

int store_job_row_read(sqlite3_stmt *q, nq_job_row_t *o, char *err, size_t errlen)
{
    row_t r;
    memset(o, 0, sizeof *o);
    o->id = (uint64_t)sqlite3_column_int64(q, J_ID);
    row_init(&r, q, o->id, -1, err, errlen);
    col_int(&r, J_ID, "id", 1, INT64_MAX);
    job_params(&r, o);
    job_progress(&r, o);
    check_t c = { &r, err, errlen, 0 };
    if (!r.bad)
        check_spec(&c, &o->spec, o->shards_total);
    return r.bad ? -1 : 0;
}

int store_job_read(sqlite3 *db, uint64_t id, nq_job_row_t *out, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = ?1";
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        nq_errf(err, errlen, "database error (jobs): %s", sqlite3_errmsg(db));
        sqlite3_finalize(q);
        return -2;
    }
    sqlite3_bind_int64(q, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        rc = store_job_row_read(q, out, err, errlen);
    else if (rc == SQLITE_DONE)
        rc = (nq_errf(err, errlen, "no job %llu", (unsigned long long)id), 1);
    else
        rc = (nq_errf(err, errlen, "database error (jobs): %s", sqlite3_errmsg(db)), -2);
    sqlite3_finalize(q);
    return rc;
}

/* ---------------------------------------------------------------- shards */

enum { S_JOB, S_IDX, S_STATE, S_ATTEMPTS, S_LEASE, S_SPEC, S_SEED, S_ALGO, S_COST };

/* Called for every row a job's load reads (10^8 at campaign scale): nothing here formats text
   unless the row is refused. */
int store_shard_row_read(sqlite3_stmt *q, nq_shard_row_t *o, char *err, size_t errlen)
{
    row_t r;
    o->job = (uint64_t)sqlite3_column_int64(q, S_JOB);
    o->idx = (uint64_t)sqlite3_column_int64(q, S_IDX);
    row_init(&r, q, o->job, (int64_t)o->idx, err, errlen);
    col_int(&r, S_JOB, "job", 1, INT64_MAX);
    col_int(&r, S_IDX, "idx", 0, INT64_MAX);
    int st = store_shard_state_parse(sqlite3_column_text(q, S_STATE));
    if (st < 0 || sqlite3_column_type(q, S_STATE) != SQLITE_TEXT)
        refuse(&r, S_STATE, "state", "pending, leased, done, failed, conflict or cancelled");
    o->state = st < 0 ? NQ_SHARD_PENDING : (nq_shard_state_t)st;
    o->attempts = (uint32_t)col_int(&r, S_ATTEMPTS, "attempts", 0, NQ_JOB_MAX_ATTEMPTS);
    o->lease = col_bits(&r, S_LEASE, "lease", 1);
    int t = sqlite3_column_type(q, S_SPEC), len = sqlite3_column_bytes(q, S_SPEC);
    if (t != SQLITE_NULL && (t != SQLITE_BLOB || len > NQ_MAX_SPEC)) {
        char allowed[64];
        snprintf(allowed, sizeof allowed, "NULL or a blob of at most %d bytes", NQ_MAX_SPEC);
        refuse(&r, S_SPEC, "spec", allowed);
    } else {
        o->spec_len = t == SQLITE_BLOB ? (size_t)len : 0;
        if (o->spec_len)
            memcpy(o->spec, sqlite3_column_blob(q, S_SPEC), o->spec_len);
    }
    o->seed = col_bits(&r, S_SEED, "seed", 1);
    col_text(&r, S_ALGO, "algo", 1, o->algo, sizeof o->algo);
    o->cost = col_real(&r, S_COST, "cost", 0);
    return r.bad ? -1 : 0;
}

int store_shard_in_job(const nq_shard_row_t *r, uint64_t shards, char *err, size_t errlen)
{
    if (r->idx < shards)
        return 0;
    return nq_errf(err, errlen, "job %llu shard %llu: column idx holds %llu (allowed 0..%llu): " CHANGED,
                   (unsigned long long)r->job, (unsigned long long)r->idx, (unsigned long long)r->idx,
                   (unsigned long long)shards - 1);
}

/* ---------------------------------------------------------------- lists and methods */

uint64_t store_list_bound(int kind, uint64_t n, uint32_t depth)
{
    /* count: at most n choices for each of a, c, d (the root) and for each of the depth - 1
       levels; enumerate: n for each of the depth fixed rows; a count below the border mode is
       one shard. Depth 0 lists at the automatic depth (shards_new). */
    if (depth == 0 && n <= NQ_SHARD_MAX_N)
        depth = (uint32_t)shard_auto_depth(kind, (int)n);
    int factors = kind == NQ_KIND_COUNT ? (n < NQ_SHARD_BORDER_MIN_N ? 0 : (int)depth + 2)
                                        : (int)depth;
    uint64_t most = 1;
    for (int i = 0; i < factors && most <= NQ_SHARD_MAX_LIST; i++)
        most = n > NQ_SHARD_MAX_LIST ? NQ_SHARD_MAX_LIST + 1 : most * n;
    return most < NQ_SHARD_MAX_LIST ? most : NQ_SHARD_MAX_LIST;
}

int store_solve_methods(const char *algos)
{
    int methods = 1;
    size_t name = 0;
    if (!algos[0])
        return 1;                       /* qs4 alone */
    for (const char *p = algos;; p++) {
        if (*p == ',' || *p == '\0') {
            if (name == 0 || name > NQ_JOB_METHOD_MAX || methods > NQ_JOB_MAX_METHODS)
                return 0;
            if (*p == '\0')
                return methods;
            methods++;
            name = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_') {
            name++;
        } else {
            return 0;
        }
    }
}

int store_list_matches(uint64_t id, const nq_job_spec_t *s, uint64_t shards, const nq_shards_t *list,
                       const char *why, char *err, size_t errlen)
{
    if (!list)
        return nq_errf(err, errlen, "job %llu: its shard list (%s N=%llu, depth %u, encoding %u) cannot be "
                       "made: %s", (unsigned long long)id, store_kind_name(s->kind), (unsigned long long)s->n,
                       s->depth, s->encoding, why);
    if (shards_count(list) != shards)
        return nq_errf(err, errlen, "job %llu: column shards_total holds %llu (allowed %llu: its list of %s "
                       "N=%llu at depth %u, encoding %u): " CHANGED, (unsigned long long)id,
                       (unsigned long long)shards, (unsigned long long)shards_count(list),
                       store_kind_name(s->kind), (unsigned long long)s->n, s->depth, s->encoding);
    return 0;
}

nq_shards_t *store_job_list(const nq_job_row_t *row, char *err, size_t errlen)
{
    const nq_job_spec_t *s = &row->spec;
    char why[200] = "";
    nq_shards_t *list = shards_new_bounded(s->kind, (int)s->n, (int)s->depth, (int)s->encoding,
                                           NQ_SHARD_MAX_LIST, NQ_JOB_LIST_STEPS, why, sizeof why);
    if (store_list_matches(row->id, s, row->shards_total, list, why, err, errlen) != 0)
        shards_destroy(&list);
    return list;
}
