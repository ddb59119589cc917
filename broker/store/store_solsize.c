/* The size of a stored solution from its row, for refusing a large one before loading it. */
#include "store_solsize.h"
#include "errf.h"

#include <stdio.h>

int store_solution_n(sqlite3 *db, uint64_t job, uint64_t index, uint64_t *n, char *err, size_t errlen)
{
    *n = 0;
    if (index > (uint64_t)INT64_MAX || job > (uint64_t)INT64_MAX)
        return 1;
    /* Only n is asked for: SQLite does not read the cols blob (stored after it) or its overflow pages. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT n FROM solutions WHERE job = ? ORDER BY found_at, hash LIMIT 1 OFFSET ?",
                           -1, &st, NULL) != SQLITE_OK) {
        return nq_errf(err, errlen, "solutions: %s", sqlite3_errmsg(db));
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)index);
    int rc = sqlite3_step(st), res;
    if (rc == SQLITE_ROW) {
        sqlite3_int64 v = sqlite3_column_int64(st, 0);
        *n = v > 0 ? (uint64_t)v : 0;
        res = 0;
    } else if (rc == SQLITE_DONE) {
        res = 1;
    } else {
        snprintf(err, errlen, "solutions: %s", sqlite3_errmsg(db));
        res = -1;
    }
    sqlite3_finalize(st);
    return res;
}
