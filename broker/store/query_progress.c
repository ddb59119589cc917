/*
 * A job's progress chart as the broker keeps it (store_progress.c): one range of job_progress's
 * primary key, a few hundred rows at most, whatever the job's size or age.
 */
#include "query_impl.h"
#include "errf.h"

#include <math.h>

int query_progress(sqlite3 *db, uint64_t id, query_point_t *out, size_t max, size_t *n, char *err,
                   size_t errlen)
{
    *n = 0;
    sqlite3_stmt *st = query_prep(db, "SELECT t, done FROM job_progress WHERE job = ? ORDER BY t", err,
                                  errlen);
    if (!st)
        return -2;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max) {
        double t = sqlite3_column_double(st, 0), done = sqlite3_column_double(st, 1);
        if (!isfinite(t) || !(done >= 0 && done <= 1)) {
            sqlite3_finalize(st);
            nq_errf(err, errlen, "job %llu: job_progress holds a point nq could not have written (t %g, "
                    "done %g): the DB was changed outside nq", (unsigned long long)id, t, done);
            return -2;
        }
        out[(*n)++] = (query_point_t){ t, done };
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : query_db_fail(db, "job_progress", err, errlen);
}
