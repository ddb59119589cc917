/*
 * A job's rows, page by page (query.h): shard rows, or an enumerate job's solutions.
 */
#include "query_impl.h"
#include "enumerate.h"
#include "errf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- export ---- */

typedef struct {
    uint64_t id, cursor;
    uint32_t max_rows;
    int unique_only;
} export_args_t;

static void pk_columns(msgpack_packer *pk, const char *const *names, uint32_t n)
{
    query_pack_str(pk, "columns");
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++)
        query_pack_str(pk, names[i]);
}

/* A shard without a row: pending (or cancelled with its job), described by the job alone. */
static void pk_rowless(msgpack_packer *r, const qjob_t *j, uint64_t idx, int solve)
{
    const char *state = strcmp(j->state, "pending") == 0 || strcmp(j->state, "running") == 0 ? "pending"
                                                                                                : "cancelled";
    if (!solve) {
        msgpack_pack_array(r, 11);
        msgpack_pack_uint64(r, idx);
        query_pack_str(r, state);
        for (int i = 2; i <= 8; i++)
            msgpack_pack_nil(r);
        msgpack_pack_uint64(r, 0);
        msgpack_pack_nil(r);
        return;
    }
    char algo[64];
    store_solve_method(j->algo, j->restarts, idx, algo, sizeof algo);
    msgpack_pack_array(r, 7);
    msgpack_pack_uint64(r, idx);
    msgpack_pack_uint64(r, store_solve_seed(j->seed0, j->restarts, idx));
    query_pack_str(r, algo);
    query_pack_str(r, state);
    msgpack_pack_nil(r); msgpack_pack_nil(r); msgpack_pack_nil(r);
}

static void pk_shard_row(msgpack_packer *r, sqlite3_stmt *st, const qjob_t *j, uint64_t idx, int solve)
{
    if (!solve) {
        msgpack_pack_array(r, 11);
        query_pack_col_u64(r, st, 0); query_pack_col_text(r, st, 1);
        for (int i = 2; i <= 6; i++) query_pack_col_u64(r, st, i);
        query_pack_col_double(r, st, 7); query_pack_col_text(r, st, 8); query_pack_col_u64(r, st, 9);
        query_pack_col_u64(r, st, 13);
        return;
    }
    const char *state = (const char *)sqlite3_column_text(st, 1);
    int status = sqlite3_column_int(st, 12);
    char algo[64];
    store_solve_method(j->algo, j->restarts, idx, algo, sizeof algo);   /* as leased */
    msgpack_pack_array(r, 7);
    msgpack_pack_uint64(r, idx);
    msgpack_pack_uint64(r, store_solve_seed(j->seed0, j->restarts, idx));
    query_pack_str(r, algo);
    if (!state || strcmp(state, "done") != 0) query_pack_col_text(r, st, 1);
    else query_pack_str(r, status == 0 ? "solved" : status == 1 ? "not found" : "error");
    query_pack_col_u64(r, st, 4); query_pack_col_double(r, st, 7); query_pack_col_text(r, st, 8);
}

/*
 * A page of count or solve shards: every idx from the cursor on, max_rows of them. Shards
 * with a row come from it; the others (never leased: 004_campaign.sql) are described from
 * the job, so a page costs its own rows, never a scan of the job.
 */
static int export_shards(sqlite3 *db, const qjob_t *j, const export_args_t *a,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    /* nodes_kind: whose nodes the row's are (0 the CPU kernels', 1 the fast GPU kernel's own) */
    static const char *const count_cols[11] = { "idx", "state", "total", "unique", "nodes", "res13",
                                                "res15", "seconds", "worker", "confirmations",
                                                "nodes_kind" };
    static const char *const solve_cols[7] = { "idx", "seed", "algo", "status", "steps", "seconds",
                                               "worker" };
    int solve = strcmp(j->kind, "solve") == 0;
    uint64_t end = a->cursor < j->shards_total ? j->shards_total : a->cursor;
    if (end - a->cursor > a->max_rows)
        end = a->cursor + a->max_rows;
    sqlite3_stmt *st = query_prep(db, "SELECT idx, state, total, uniq, nodes, res13, res15, elapsed, worker,"
                                " confirmations, NULL, NULL, status,"
                                " CASE WHEN state = 'done' THEN nodes_kind END FROM shards"
                                " WHERE job = ? AND idx >= ? AND idx < ? ORDER BY idx", err, errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)a->cursor);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)end);
    qbuf_t rows;
    query_buf_init(&rows);
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
        else pk_columns(pk, count_cols, 11);
        query_pack_str(pk, "rows");
        msgpack_pack_array(pk, (uint32_t)(end - a->cursor));
        query_buf_append(pk, &rows);
        query_pack_str(pk, "next");
        if (end < j->shards_total) msgpack_pack_uint64(pk, end);
        else msgpack_pack_nil(pk);
    }
    query_buf_destroy(&rows);
    return (rc == SQLITE_ROW || rc == SQLITE_DONE) ? 0 : query_db_fail(db, "export", err, errlen);
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
    sqlite3_stmt *st = query_prep(db, "SELECT shard, count, data FROM enum_solutions WHERE job = ? AND shard >= ?"
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
        rc = query_db_fail(db, "enum_solutions", err, errlen);
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
    query_buf_init(&pg.rows);
    int rc = export_enum_rows(db, j, a, &pg, err, errlen);
    if (rc == 0) {
        msgpack_pack_map(pk, 3);
        pk_columns(pk, cols, 1);
        query_pack_str(pk, "rows");
        msgpack_pack_array(pk, pg.count);
        query_buf_append(pk, &pg.rows);
        query_pack_str(pk, "next");
        if (pg.full) msgpack_pack_uint64(pk, pg.next);
        else msgpack_pack_nil(pk);
    }
    query_buf_destroy(&pg.rows);
    return rc;
}

static int export_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const export_args_t *a = args;
    qjob_t j;
    memset(&j, 0, sizeof j);
    int rc = query_job_read_row(db, a->id, &j, err, errlen);
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
    return query_doc_run(db, export_doc, &a, pk, err, errlen);
}
