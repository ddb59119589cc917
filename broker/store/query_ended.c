/*
 * The jobs that ended (done, failed, cancelled), row by row, for /metrics: their shards still
 * count in nq_shards, and the latest keep their per-job series after they end. One statement
 * over the jobs table (jobs, not shards: a campaign has few of them); each row goes through the
 * store's own row check (store_check.h), so one nq could not have written is left out.
 */
#include "query_impl.h"
#include "store.h"
#include "store_check.h"

int query_jobs_ended(sqlite3 *db, void (*fn)(void *ud, const query_ended_t *j), void *ud, char *err,
                     size_t errlen)
{
    sqlite3_stmt *st = query_prep(db, "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE state IN"
                                  " ('done', 'failed', 'cancelled') ORDER BY finished_at DESC, id DESC",
                                  err, errlen);
    if (!st)
        return -2;
    int rc;
    nq_job_row_t row;
    char why[256];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (store_job_row_read(st, &row, why, sizeof why) != 0)
            continue;
        query_ended_t j = { .id = row.id, .n = row.spec.n, .shards_total = row.shards_total,
                            .shards_done = row.shards_done, .shards_failed = row.shards_failed,
                            .shards_conflict = row.shards_conflict, .finished = row.finished_at,
                            .kind = store_kind_name(row.spec.kind), .state = store_job_state_name(row.state) };
        fn(ud, &j);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : query_db_fail(db, "jobs", err, errlen);
}
