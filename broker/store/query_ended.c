/*
 * The jobs that ended (done, failed, cancelled), row by row, for /metrics: their shards still
 * count in nq_shards, and the latest keep their per-job series after they end. One statement
 * over the jobs table (jobs, not shards: a campaign has few of them).
 */
#include "query_impl.h"

#include <string.h>

/* Column i as a count: 0, or -1 when negative (nothing nq writes). */
static int col_count(sqlite3_stmt *st, int i, uint64_t *v)
{
    sqlite3_int64 x = sqlite3_column_int64(st, i);
    *v = (uint64_t)x;
    return x >= 0 ? 0 : -1;
}

/* The row as a job, or -1 when nq could not have written it (it is then left out, not counted). */
static int ended_row(sqlite3_stmt *st, query_ended_t *j)
{
    j->kind = (const char *)sqlite3_column_text(st, 1);
    j->state = (const char *)sqlite3_column_text(st, 3);
    j->finished = sqlite3_column_double(st, 8);
    if (!j->kind || !j->state || col_count(st, 0, &j->id) || col_count(st, 2, &j->n) ||
        col_count(st, 4, &j->shards_total) || col_count(st, 5, &j->shards_done) ||
        col_count(st, 6, &j->shards_failed) || col_count(st, 7, &j->shards_conflict) || !j->id || !j->n)
        return -1;
    uint64_t left = j->shards_total;      /* done, failed and conflict are shards of the job */
    if (j->shards_done > left || j->shards_failed > (left -= j->shards_done) ||
        j->shards_conflict > left - j->shards_failed)
        return -1;
    return 0;
}

int query_jobs_ended(sqlite3 *db, void (*fn)(void *ud, const query_ended_t *j), void *ud, char *err,
                     size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT id, kind, n, state, shards_total, shards_done, shards_failed,"
                                  " shards_conflict, coalesce(finished_at, 0) FROM jobs WHERE state IN"
                                  " ('done', 'failed', 'cancelled') ORDER BY finished_at DESC, id DESC",
                                  err, errlen);
    if (!st)
        return -2;
    int rc;
    query_ended_t j;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (ended_row(st, &j) == 0)
            fn(ud, &j);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : query_db_fail(db, "jobs", err, errlen);
}
