/*
 * A job's progress over its whole life (schema: job_progress), written in the broker's group
 * commit every few seconds while the job runs. Each call reads one job's rows (at most
 * STORE_PROGRESS_CAP, a range of the primary key) and writes one or two statements: a job of
 * any age costs the same, and the table grows by at most the cap a job.
 */
#include "store_impl.h"

enum { P_SPAN, P_INSERT, P_MOVE, P_THIN, P_COUNT };

static const char *const sql_text[P_COUNT] = {
    /* rows, first, newest, and the one before the newest */
    [P_SPAN] =
        "SELECT count(*), coalesce(min(t), 0), coalesce(max(t), 0),"
        " (SELECT t FROM job_progress WHERE job = ?1 ORDER BY t DESC LIMIT 1 OFFSET 1)"
        " FROM job_progress WHERE job = ?1",
    [P_INSERT] = "INSERT OR REPLACE INTO job_progress (job, t, done) VALUES (?1, ?2, ?3)",
    [P_MOVE] = "UPDATE job_progress SET t = ?3, done = ?4 WHERE job = ?1 AND t = ?2",
    /* every second point, oldest first, but the newest: the first point (the job's start) stays */
    [P_THIN] =
        "DELETE FROM job_progress WHERE job = ?1 AND t IN (SELECT t FROM (SELECT t,"
        " row_number() OVER (ORDER BY t) AS k, count(*) OVER () AS n FROM job_progress WHERE job = ?1)"
        " WHERE k % 2 = 0 AND k < n)",
};

static sqlite3_stmt *stmt(nq_store_t *s, int id)
{
    _Static_assert(P_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");
    return store_stmt_cached(s, &s->st[STORE_MOD_PROGRESS][id], sql_text[id]);
}

typedef struct { int64_t n; double first, newest, before; int has_before; } span_t;

static int span_get(nq_store_t *s, uint64_t job, span_t *p)
{
    sqlite3_stmt *q = stmt(s, P_SPAN);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        p->n = sqlite3_column_int64(q, 0);
        p->first = sqlite3_column_double(q, 1);
        p->newest = sqlite3_column_double(q, 2);
        p->has_before = sqlite3_column_type(q, 3) != SQLITE_NULL;
        p->before = sqlite3_column_double(q, 3);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : store_fail(s, "progress.span", rc);
}

static int run(nq_store_t *s, int id, uint64_t job, double a, double b, double c, const char *op)
{
    sqlite3_stmt *q = stmt(s, id);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 1, i64(job));
    if (id != P_THIN) {
        sqlite3_bind_double(q, 2, a);
        sqlite3_bind_double(q, 3, b);
        if (id == P_MOVE)
            sqlite3_bind_double(q, 4, c);
    }
    int rc = store_step_done(q);
    return rc ? store_fail(s, op, rc) : 0;
}

int store_progress_add(nq_store_t *s, uint64_t job, double t, double done, double period)
{
    span_t p = { 0 };
    done = done < 0 ? 0 : done > 1 ? 1 : done;
    if (span_get(s, job, &p) != 0)
        return -1;
    if (p.n > 0 && t <= p.newest)
        return 0;                       /* a clock stepped back: the chart's time only goes on */
    double step = (p.newest - p.first) / STORE_PROGRESS_CAP;
    step = step > period ? step : period;
    if (p.has_before && t - p.before < step)    /* the newest point moves on: the chart ends now */
        return run(s, P_MOVE, job, p.newest, t, done, "progress.move");
    if (run(s, P_INSERT, job, t, done, 0, "progress.add") != 0)
        return -1;
    return p.n + 1 > STORE_PROGRESS_CAP ? run(s, P_THIN, job, 0, 0, 0, "progress.thin") : 0;
}
