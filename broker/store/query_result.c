/*
 * A job's result document (query.h): its sums and residue check, who delivered, a solve job's
 * solutions and a study's table; and one solve solution read back in full.
 */
#include "query_impl.h"
#include "clock.h"
#include "errf.h"
#include "solfile.h"
#include "solstore.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- result: residues, workers, solutions, study ---- */

/* An array with one element per row of st, packed by fn; st is finalized. 0, or -2 with err
   naming what was read. */
typedef void (*row_pack_fn)(msgpack_packer *pk, sqlite3_stmt *st);
static int pack_rows(sqlite3 *db, sqlite3_stmt *st, row_pack_fn fn, const char *what, msgpack_packer *pk,
                     char *err, size_t errlen)
{
    qbuf_t items;
    uint32_t count = 0;
    int rc;
    query_buf_init(&items);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        fn(&items.pk, st);
        count++;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) {
        msgpack_pack_array(pk, count);
        query_buf_append(pk, &items);
    }
    query_buf_destroy(&items);
    return rc == SQLITE_DONE ? 0 : query_db_fail(db, what, err, errlen);
}

static void pk_worker_name(msgpack_packer *pk, sqlite3_stmt *st) { query_pack_col_text(pk, st, 0); }

static int result_workers(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT worker FROM job_workers WHERE job = ? ORDER BY worker", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    return pack_rows(db, st, pk_worker_name, "workers of job", pk, err, errlen);
}

/* The threads of the job's workers as each last said: `nq run --workers 2` is one worker (one
   identity) of 2 threads, which "1 worker" alone misreported. A DB row below 0 counts as 0. */
static int result_threads(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t n = 0;
    int rc = query_count_rows(db, "SELECT coalesce(sum(max(w.threads, 0)), 0) FROM job_workers jw"
                                  " JOIN workers w ON w.id = jw.worker WHERE jw.job = ?",
                              id, &n, err, errlen);
    if (rc == 0)
        msgpack_pack_uint64(pk, n);
    return rc;
}

/* The size of a solution's file (-1: inline, or not there), so that a 337 MB answer beside the DB
   is said, not found on the disk later. */
static long long solution_bytes(sqlite3_stmt *st)
{
    const char *db_path = sqlite3_db_filename(sqlite3_db_handle(st), "main");
    const char *path = (const char *)sqlite3_column_text(st, 7);
    char file[4400];
    struct stat sb;
    if (sqlite3_column_int(st, 6) || !path || !db_path || !*db_path ||
        solstore_row_file(db_path, path, file, sizeof file) != 0 || stat(file, &sb) != 0)
        return -1;
    return (long long)sb.st_size;
}

/* seed, hash, shard, n, steps, seconds, where its columns are (inline, or a file's path) and that
   file's bytes */
static void pk_solution(msgpack_packer *pk, sqlite3_stmt *st)
{
    static const char *const keys[6] = { "seed", "hash", "shard", "n", "steps", "seconds" };
    long long bytes = solution_bytes(st);
    msgpack_pack_map(pk, 8);
    for (int i = 0; i < 6; i++) {
        query_pack_str(pk, keys[i]);
        if (i == 1) query_pack_col_text(pk, st, i);
        else if (i == 5) query_pack_col_double(pk, st, i);
        else query_pack_col_u64(pk, st, i);
    }
    query_pack_str(pk, "where");
    if (sqlite3_column_int(st, 6)) query_pack_str(pk, "inline");
    else query_pack_col_text(pk, st, 7);
    query_pack_str(pk, "bytes");
    if (bytes >= 0) msgpack_pack_uint64(pk, (uint64_t)bytes);
    else msgpack_pack_nil(pk);
}

static int result_solutions(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db,
        "SELECT so.seed, so.hash, so.shard, so.n, sh.nodes, sh.elapsed, so.cols IS NOT NULL, so.path"
        " FROM solutions so LEFT JOIN shards sh ON sh.job = so.job AND sh.idx = so.shard"
        " WHERE so.job = ? ORDER BY so.found_at, so.hash LIMIT ?", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    sqlite3_bind_int64(st, 2, QUERY_RESULT_MAX_SOLUTIONS);
    return pack_rows(db, st, pk_solution, "solutions", pk, err, errlen);
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
    query_pack_str(pk, "algo"); query_pack_str(pk, a->algo);
    query_pack_str(pk, "seeds"); msgpack_pack_uint64(pk, a->seeds);
    query_pack_str(pk, "solved"); msgpack_pack_uint64(pk, a->solved);
    query_pack_str(pk, "rate"); msgpack_pack_double(pk, (double)a->solved / (double)a->seeds);
    query_pack_str(pk, "ci_low"); msgpack_pack_double(pk, lo);
    query_pack_str(pk, "ci_high"); msgpack_pack_double(pk, hi);
    query_pack_str(pk, "steps_median"); msgpack_pack_double(pk, quantile(a->steps, n, 0.5));
    query_pack_str(pk, "steps_p95"); msgpack_pack_double(pk, quantile(a->steps, n, 0.95));
    query_pack_str(pk, "seconds_median"); msgpack_pack_double(pk, quantile(a->secs, n, 0.5));
    query_pack_str(pk, "seconds_p95"); msgpack_pack_double(pk, quantile(a->secs, n, 0.95));
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
    sqlite3_stmt *st = query_prep(db, "SELECT idx, status, nodes, elapsed FROM shards WHERE job = ?1"
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
    query_buf_init(&items);
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
        query_buf_append(pk, &items);
    }
    free(acc.steps);
    free(acc.secs);
    query_buf_destroy(&items);
    if (oom) {
        snprintf(err, errlen, "out of memory for the study summary");
        return -2;
    }
    return rc == SQLITE_DONE ? 0 : query_db_fail(db, "study", err, errlen);
}

/* The root kept by the last `nq export --manifest` (005_manifest.sql), or nil. */
static int result_manifest_root(sqlite3 *db, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT root FROM manifests WHERE job = ?", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT)
        query_pack_col_text(pk, st, 0);
    else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        msgpack_pack_nil(pk);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_db_fail(db, "manifests", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

typedef struct { uint64_t id; const query_live_t *live; } result_args_t;

static int result_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const result_args_t *a = args;
    qjob_t j;
    int rc = query_job_load(db, a->id, a->live, &j, err, errlen);
    if (rc != 0)
        return rc;
    query_job_live(&j, a->live);        /* pending, leased and why it waits: as status says them */
    int is_count = strcmp(j.kind, "count") == 0, is_solve = strcmp(j.kind, "solve") == 0;
    /* O(1): the total must agree with the sum of the done shards' residues; which shard
       does not is `nq check`'s question (every row) */
    int residues_ok = (unsigned)(j.total % 13) == j.res13 && (unsigned)(j.total % 15) == j.res15;
    /* count documents already carry nodes */
    uint32_t extra = 3 + (is_count ? 2 : 1) + (is_solve ? 3 : 0);
    msgpack_pack_map(pk, query_job_npairs(&j) + extra);
    query_pack_job(pk, &j);
    query_pack_str(pk, "core_seconds"); msgpack_pack_double(pk, j.core_seconds);
    if (!is_count) {
        query_pack_str(pk, "nodes"); query_pack_u128(pk, j.nodes);
    }
    query_pack_str(pk, "workers");
    if ((rc = result_workers(db, j.id, pk, err, errlen)) != 0)
        return rc;
    query_pack_str(pk, "worker_threads");
    if ((rc = result_threads(db, j.id, pk, err, errlen)) != 0)
        return rc;
    if (is_count) {
        query_pack_str(pk, "residues_ok"); if (residues_ok) msgpack_pack_true(pk); else msgpack_pack_false(pk);
        query_pack_str(pk, "manifest_root");
        if ((rc = result_manifest_root(db, j.id, pk, err, errlen)) != 0)
            return rc;
    }
    if (is_solve) {
        query_pack_str(pk, "solutions_total"); msgpack_pack_uint64(pk, j.solutions_found);
        query_pack_str(pk, "solutions");
        if ((rc = result_solutions(db, j.id, pk, err, errlen)) != 0)
            return rc;
        query_pack_str(pk, "study");
        if ((rc = result_study(db, &j, 0, pk, err, errlen)) != 0)
            return rc;
    }
    return 0;
}

int query_result(sqlite3 *db, uint64_t id, const query_live_t *live, msgpack_packer *pk, char *err,
                 size_t errlen)
{
    result_args_t a = { id, live };
    return query_doc_run(db, result_doc, &a, pk, err, errlen);
}

typedef struct { uint64_t id; uint32_t per_method; } study_args_t;

static int study_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const study_args_t *a = args;
    qjob_t j;
    int rc = query_job_load(db, a->id, NULL, &j, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(j.kind, "solve") != 0)
        return nq_errf(err, errlen, "job %llu is not a solve job", (unsigned long long)a->id);
    msgpack_pack_map(pk, 2);
    query_pack_str(pk, "sample_per_method"); msgpack_pack_uint32(pk, a->per_method);
    query_pack_str(pk, "study");
    return result_study(db, &j, a->per_method, pk, err, errlen);
}

int query_study_sample(sqlite3 *db, uint64_t id, uint32_t per_method, msgpack_packer *pk, char *err,
                       size_t errlen)
{
    study_args_t a = { id, per_method ? per_method : 1 };
    return query_doc_run(db, study_doc, &a, pk, err, errlen);
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

/* A large solution: the file the row names, in the DB's .solutions folder. */
static int solution_file(const char *db_path, const char *name, uint64_t n, uint32_t **cols,
                         char *err, size_t errlen)
{
    char path[4400], why[256];
    if (solstore_row_file(db_path, name, path, sizeof path) != 0) {
        snprintf(err, errlen, "stored solution file name '%s' is not a name inside the DB's folder", name);
        return -2;
    }
    uint64_t got = 0;
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

static int solution_find(sqlite3 *db, uint64_t id, uint64_t index, const char *db_path,
                         uint32_t **cols, uint64_t *n, char *err, size_t errlen)
{
    qjob_t j;
    memset(&j, 0, sizeof j);
    int rc = query_job_read_row(db, id, &j, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(j.kind, "solve") != 0) {
        return nq_errf(err, errlen, "job %llu is a %s job, not solve", (unsigned long long)id, j.kind);
    }
    sqlite3_stmt *st = query_prep(db, "SELECT n, cols, path FROM solutions WHERE job = ?"
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
            rc = solution_file(db_path, path ? (const char *)path : "", *n, cols, err, errlen);
        }
    } else if (step == SQLITE_DONE) {
        uint64_t have = 0;
        rc = query_count_rows(db, "SELECT COUNT(*) FROM solutions WHERE job = ?", id, &have, err, errlen);
        if (rc == 0) {
            snprintf(err, errlen, "job %llu has %llu solution(s): no solution %llu (counting from 0)",
                     (unsigned long long)id, (unsigned long long)have, (unsigned long long)index);
            rc = -1;
        }
    } else {
        rc = query_db_fail(db, "solutions", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

int query_solution(sqlite3 *db, const char *db_path, uint64_t id, uint64_t index,
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
            return query_db_fail(db, "begin", err, errlen);
        began = 1;
    }
    int rc = solution_find(db, id, index, db_path, cols, n, err, errlen);
    if (began)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != 0)
        *n = 0;
    return rc;
}
