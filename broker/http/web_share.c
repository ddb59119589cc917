/*
 * Who did a job's work, and which shards failed or are in conflict, for the job page: the
 * store's job_workers rows (per job and worker: first results, nodes or steps, seconds) and
 * the open-state index (schema/README.md). O(workers + listed shards) at any job size: a
 * campaign's job page must not read 10^7 rows.
 */
#include "http_impl.h"

#include <stdio.h>
#include <string.h>

static void share_workers(sqlite3 *db, uint64_t job, web_share_t *s, int *rc)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT worker, shards, nodes, seconds FROM job_workers WHERE job = ?1"
                               " ORDER BY shards DESC, worker", -1, &q, NULL) != SQLITE_OK) {
        *rc = -2;
        return;
    }
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(q, 0);
        share_worker_t *w = &s->w[SHARE_WORKERS];     /* past the listed ones: "(others)" */
        if (s->nworkers < SHARE_WORKERS && id && strlen(id) < sizeof w->id) {
            w = &s->w[s->nworkers++];
            snprintf(w->id, sizeof w->id, "%s", id);
        } else {
            snprintf(w->id, sizeof w->id, "(others)");
        }
        w->shards += (uint64_t)sqlite3_column_int64(q, 1);
        w->nodes += sqlite3_column_double(q, 2);
        w->seconds += sqlite3_column_double(q, 3);
    }
    sqlite3_finalize(q);
}

static void share_state(sqlite3 *db, uint64_t job, const char *state, uint64_t *idx, size_t *n, int *rc)
{
    sqlite3_stmt *q;
    /* state <> 'done': the partial index's own condition, so SQLite uses it */
    if (sqlite3_prepare_v2(db, "SELECT idx FROM shards WHERE job = ?1 AND state = ?2 AND state <> 'done'"
                               " ORDER BY idx LIMIT ?3", -1, &q, NULL) != SQLITE_OK) {
        *rc = -2;
        return;
    }
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_text(q, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, SHARE_SHARDS_LISTED);
    while (*n < SHARE_SHARDS_LISTED && sqlite3_step(q) == SQLITE_ROW)
        idx[(*n)++] = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
}

int web_share_get(nq_http_t *h, uint64_t job, int enumerate, web_share_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->job = job;
    if (enumerate)
        return 0;
    out->have_workers = 1;
    int rc = web_db_hold(h, err, errlen);
    if (rc != 0)
        return rc;
    sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL);       /* one snapshot for the three reads */
    share_workers(h->db, job, out, &rc);
    share_state(h->db, job, "failed", out->failed, &out->nfailed, &rc);
    share_state(h->db, job, "conflict", out->conflict, &out->nconflict, &rc);
    if (rc != 0)
        snprintf(err, errlen, "job %llu: %s", (unsigned long long)job, sqlite3_errmsg(h->db));
    sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
    web_db_release(h);
    return rc;
}
