/*
 * The web view's own read-only connection to the broker's DB, and the query documents
 * (broker/store/query.h) read through it: the same documents as `nq status/list/workers/
 * result --json`. The broker's store runs in WAL mode, so this reader never blocks its
 * writer; each query is one short read transaction. One query at a time (db_lock): the
 * queries open their own transaction on the connection, and two threads must not share one.
 */
#include "http_impl.h"

#include "clock.h"
#include "errf.h"
#include "query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long a read waits for a lock: WAL readers only wait during a checkpoint's restart. */
#define WEB_BUSY_MS 2000

static int db_open(nq_http_t *h, char *err, size_t errlen)
{
    if (h->db)
        return 0;
    int rc = sqlite3_open_v2(h->db_path, &h->db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK) {
        nq_errf(err, errlen, "cannot open %s read-only: %s", h->db_path,
                h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc));
        sqlite3_close(h->db);
        h->db = NULL;
        return -2;
    }
    sqlite3_busy_timeout(h->db, WEB_BUSY_MS);
    return 0;
}

int web_db_hold(nq_http_t *h, char *err, size_t errlen)
{
    pthread_mutex_lock(&h->db_lock);
    int rc = db_open(h, err, errlen);
    if (rc != 0)
        pthread_mutex_unlock(&h->db_lock);
    return rc;
}

void web_db_release(nq_http_t *h)
{
    pthread_mutex_unlock(&h->db_lock);
}

void web_db_close(nq_http_t *h)
{
    sqlite3_close(h->db);
    h->db = NULL;
}

/* query_jobs_ended's rows into the /metrics figures of the jobs that ended. */
typedef struct { nq_metrics_ended_t *e; double now; } ended_ctx_t;

static void ended_one(void *ud, const query_ended_t *q)
{
    ended_ctx_t *c = ud;
    nq_metrics_job_t j = { .id = q->id, .n = q->n, .shards_total = q->shards_total,
                           .shards_done = q->shards_done, .shards_failed = q->shards_failed,
                           .shards_conflict = q->shards_conflict };
    snprintf(j.kind, sizeof j.kind, "%s", q->kind);
    snprintf(j.state, sizeof j.state, "%s", q->state);
    metrics_ended_add(c->e, &j, q->finished, c->now);
}

nq_metrics_ended_t *web_metrics_ended(nq_http_t *h)
{
    char err[256];
    nq_metrics_ended_t *e = calloc(1, sizeof *e);
    if (!e || web_db_hold(h, err, sizeof err) != 0) {
        free(e);
        return NULL;
    }
    ended_ctx_t c = { e, nq_wall() };
    int rc = query_jobs_ended(h->db, ended_one, &c, err, sizeof err);
    web_db_release(h);
    if (rc != 0) {
        free(e);
        return NULL;
    }
    return e;
}

/* The broker's live view of a worker, from the last snapshot (query_live_t). */
static int live_lookup(void *ud, const char *id, query_worker_live_t *out)
{
    nq_http_t *h = ud;
    int rc = -1;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->snap.nworkers; i++) {
        const nq_metrics_worker_t *w = &h->snap.workers[i];
        if (strcmp(w->id, id) == 0) {
            out->alive = 1;
            out->nodes_per_s = w->nodes_per_s;
            out->leases = w->leases;
            snprintf(out->kernel, sizeof out->kernel, "%s", w->kernel);
            out->rtt_s = w->rtt_s;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* A live GPU worker's devices, from the last snapshot (query_live_t). */
static uint32_t live_devices(void *ud, const char *id, nq_hb_device_t *out, uint32_t max)
{
    nq_http_t *h = ud;
    uint32_t n = 0;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->snap.nworkers; i++) {
        const nq_metrics_worker_t *w = &h->snap.workers[i];
        if (strcmp(w->id, id) == 0) {
            n = w->ndevices < max ? w->ndevices : max;
            if (n)
                memcpy(out, w->devices, n * sizeof *out);
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* The broker's live view of an active job, from the last snapshot (query_live_t). */
static int live_job(void *ud, uint64_t id, uint64_t *pending, uint64_t *leased, char *waiting, size_t len)
{
    nq_http_t *h = ud;
    int rc = -1;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->snap.njobs; i++) {
        const nq_metrics_job_t *j = &h->snap.jobs[i];
        if (j->id == id) {
            *pending = j->shards_pending;
            *leased = j->shards_leased;
            snprintf(waiting, len, "%s", j->waiting);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* An active job's ETA and rate from the last snapshot: the broker's pace this run, the figures of
   `nq status` (query_live_t), its ETA less the time since the snapshot. */
static int live_pace(void *ud, uint64_t id, double *eta, double *rate)
{
    nq_http_t *h = ud;
    int rc = -1;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < h->snap.njobs && rc; i++) {
        const nq_metrics_job_t *j = &h->snap.jobs[i];
        if (j->id == id) {
            double age = nq_wall() - h->snap.wall;
            *eta = j->eta < 0 ? -1 : j->eta > age ? j->eta - age : 0;
            *rate = j->rate;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* What a page asks of the DB: a document, or (export) a page of a job's rows. */
typedef struct {
    web_doc_kind_t kind;
    uint64_t job, cursor;
    uint32_t rows;
    int export;
} doc_req_t;

static int run_query(nq_http_t *h, const doc_req_t *q, msgpack_packer *pk, char *err, size_t errlen)
{
    query_live_t live = { live_lookup, h, live_job, live_devices, NULL, live_pace };
    uint64_t job = q->job;
    if (q->export)
        return query_export(h->db, job, q->cursor, q->rows, 0, pk, err, errlen);
    switch (q->kind) {
    case WEB_DOC_JOB: return query_job(h->db, job, &live, pk, err, errlen);
    case WEB_DOC_LIST: return query_list(h->db, &live, pk, err, errlen);
    case WEB_DOC_WORKERS: return query_workers(h->db, &live, pk, err, errlen);
    case WEB_DOC_RESULT: return query_result(h->db, job, &live, pk, err, errlen);
    case WEB_DOC_STUDY: return query_study_sample(h->db, job, WEB_STUDY_SAMPLE, pk, err, errlen);
    }
    return nq_errf(err, errlen, "unknown document");
}

static int unpack(web_doc_t *d, int rc, char *err, size_t errlen)
{
    size_t off = 0;
    if (rc == 0 && msgpack_unpack_next(&d->u, d->sb.data, d->sb.size, &off) != MSGPACK_UNPACK_SUCCESS) {
        nq_errf(err, errlen, "a query document did not unpack");
        return -2;
    }
    if (rc == 0)
        d->doc = &d->u.data;
    return rc;
}

static void doc_init(web_doc_t *d)
{
    msgpack_sbuffer_init(&d->sb);
    msgpack_unpacked_init(&d->u);
    d->doc = NULL;
}

/* Runs q on the listener's connection (opened on first use) and unpacks the answer into d. */
static int doc_fetch(nq_http_t *h, const doc_req_t *q, web_doc_t *d, char *err, size_t errlen)
{
    msgpack_packer pk;
    doc_init(d);
    msgpack_packer_init(&pk, &d->sb, msgpack_sbuffer_write);
    pthread_mutex_lock(&h->db_lock);
    int rc = db_open(h, err, errlen);
    if (rc == 0)
        rc = run_query(h, q, &pk, err, errlen);
    pthread_mutex_unlock(&h->db_lock);
    return unpack(d, rc, err, errlen);
}

int web_doc(nq_http_t *h, web_doc_kind_t kind, uint64_t job, web_doc_t *d, char *err, size_t errlen)
{
    doc_req_t q = { .kind = kind, .job = job };
    return doc_fetch(h, &q, d, err, errlen);
}

int web_doc_export(nq_http_t *h, uint64_t job, uint64_t cursor, uint32_t rows, web_doc_t *d,
                   char *err, size_t errlen)
{
    doc_req_t q = { .job = job, .cursor = cursor, .rows = rows, .export = 1 };
    return doc_fetch(h, &q, d, err, errlen);
}

void web_doc_free(web_doc_t *d)
{
    msgpack_unpacked_destroy(&d->u);
    msgpack_sbuffer_destroy(&d->sb);
    d->doc = NULL;
}
