/*
 * The HTTP listener's private state, shared by its files:
 *   http.c        libmicrohttpd: limits, the token, routing, the page cache
 *   http_reaper.c deadlines that close slow clients; who goes first when the listener is full
 *   http_addr.c   HOST:PORT, loopback or not
 *   metrics.c     the snapshot's copy and its Prometheus text (/metrics)
 *   history.c     the broker's ring of samples since it started: what the home page's chart draws
 *   web_db.c      the read-only DB connection and the query documents read through it
 *   web_html.c    HTML text: escaping, numbers, durations, the page frame
 *   web_chart.c   the inline SVG chart
 *   web_pages.c   /, /workers and the 404 page
 *   web_job.c     /jobs/ID
 *   web_share.c   a job's per-worker share and its failed shards, from its export rows
 *   web_api.c     /api/...: the --json documents
 * Nothing here sees the broker: what it knows comes from http_update() and the DB.
 */
#ifndef NQ_HTTP_IMPL_H
#define NQ_HTTP_IMPL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <msgpack.h>
#include <sqlite3.h>

#include "http.h"

/* ---- history.c ---- */

/* Points of the broker's ring: when it is full, every other point goes and the spacing doubles,
   so a broker's run of any length is drawn whole in HIST_CAP points (a week at 1 Hz is 19
   halvings). A job's chart is the store's (job_progress), kept across restarts. */
#define HIST_CAP 240

typedef struct {
    double t;                  /* unix seconds */
    double done;               /* the broker's ring: results received; a job's chart: share of its work */
    uint32_t workers;          /* the broker's ring: workers alive */
} hist_sample_t;

typedef struct {
    size_t n;
    uint32_t stride, skipped;  /* one snapshot in `stride` becomes a point */
    hist_sample_t s[HIST_CAP];
} hist_ring_t;

typedef struct {
    hist_ring_t broker;        /* the whole broker: results received and workers alive */
} nq_history_t;

void history_add(nq_history_t *h, const nq_metrics_snapshot_t *s);
/* The broker's points (oldest first): results received so far and workers alive. */
size_t history_get_broker(const nq_history_t *h, hist_sample_t *out, size_t max);

/* ---- http.c: the server's state ---- */

struct nq_http {
    void *daemon;                      /* struct MHD_Daemon */
    uint16_t port;
    char token[HTTP_TOKEN_MAX + 1];    /* "" : none */
    char *db_path;                     /* NULL: /metrics only */
    pthread_mutex_t lock;              /* snap and hist */
    nq_metrics_snapshot_t snap;        /* owned deep copy */
    nq_history_t *hist;
    pthread_mutex_t db_lock;           /* db: one query at a time (each runs in its own read txn) */
    sqlite3 *db;                       /* read-only, opened on first use */
    struct http_cache *cache;          /* rendered pages (http.c) */
    struct http_reaper *reaper;        /* http_reaper.c */
};

/* ---- web_db.c ---- */

/* A query document, unpacked: doc points into it. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_unpacked u;
    const msgpack_object *doc;
} web_doc_t;

typedef enum { WEB_DOC_JOB, WEB_DOC_LIST, WEB_DOC_WORKERS, WEB_DOC_RESULT, WEB_DOC_STUDY } web_doc_kind_t;

/* The job page's study table reads at most this many done seeds per method (query_study_sample):
   a refresh then costs the same for any size of study. `nq result` has the table over all. */
#define WEB_STUDY_SAMPLE 2000

/* Runs one query (query.h) on the read-only connection: 0, -1 no such job, -2 DB error;
   err says why. The document is valid until web_doc_free (also after a failure). */
int web_doc(nq_http_t *h, web_doc_kind_t kind, uint64_t job, web_doc_t *d, char *err, size_t errlen);
/* One page of query_export. */
int web_doc_export(nq_http_t *h, uint64_t job, uint64_t cursor, uint32_t rows, web_doc_t *d,
                   char *err, size_t errlen);
void web_doc_free(web_doc_t *d);
void web_db_close(nq_http_t *h);
/* The jobs that ended, for /metrics (malloc'd; the caller frees it); NULL when the DB cannot be
   read: the scrape then shows the snapshot alone. */
nq_metrics_ended_t *web_metrics_ended(nq_http_t *h);

/* ---- web_html.c ---- */

void html_esc(FILE *f, const char *s, size_t n);           /* text or attribute value */
void html_esc_obj(FILE *f, const msgpack_object *o);       /* a document value; "-" when missing */
void html_head(FILE *f, const char *title, int refresh_s);
void html_foot(FILE *f);
const msgpack_object *doc_get(const msgpack_object *m, const char *key);
int doc_double(const msgpack_object *m, const char *key, double *d);   /* 0, or -1 missing */
int doc_u64(const msgpack_object *m, const char *key, uint64_t *v);
int doc_str_is(const msgpack_object *m, const char *key, const char *want);
int doc_bool(const msgpack_object *m, const char *key);
void html_duration(FILE *f, double s);                     /* 3h05m, "-" when unknown */
void html_rate(FILE *f, double per_s);                     /* 1.23 M/s style */
void html_time(FILE *f, double unix_s);                    /* UTC, "-" when 0 */
void html_progress(FILE *f, uint64_t done, uint64_t total);
/* A count for people, its digits grouped by three (4,968,057,848); other values as html_esc_obj.
   The /api documents stay plain. */
void html_count(FILE *f, const msgpack_object *o);
void html_count_u64(FILE *f, uint64_t v);

/* ---- web_chart.c ---- */

/* A job's share of its estimated work done (left axis, in %; s[i].done from 0 to 1) and how fast
   that share grows (right axis, % an hour) against time, as an <svg> with a legend and a time axis
   in UTC; `running`: the last point is now. */
void chart_progress(FILE *f, const hist_sample_t *s, size_t n, int running);
/* The broker's results a second (left axis) and workers alive (right axis) against time. */
void chart_broker(FILE *f, const hist_sample_t *s, size_t n);

/* ---- pages: each writes the body and returns the HTTP status ---- */

unsigned web_page_index(nq_http_t *h, FILE *f);
unsigned web_page_workers(nq_http_t *h, FILE *f);
unsigned web_page_job(nq_http_t *h, uint64_t id, FILE *f);
unsigned web_page_not_found(FILE *f, const char *what);
unsigned web_api(nq_http_t *h, const char *path, FILE *f); /* path after "/api" */

/* ---- web_share.c ---- */

#define SHARE_WORKERS 64           /* workers listed per job; the rest are summed as "others" */
#define SHARE_SHARDS_LISTED 20     /* failed and conflicting shards named on the page */

typedef struct {
    char id[128];
    uint64_t shards;
    double nodes, seconds;
} share_worker_t;

typedef struct {
    uint64_t job;
    size_t nworkers;
    share_worker_t w[SHARE_WORKERS + 1];   /* the last one: "others" */
    uint64_t failed[SHARE_SHARDS_LISTED], conflict[SHARE_SHARDS_LISTED];
    size_t nfailed, nconflict;
    int have_workers;                      /* the job's rows name workers (not enumerate) */
} web_share_t;

/* Who did a count or solve job's work (the store's job_workers: per job and worker, first
   results, nodes, seconds) and its first failed and conflicting shards (the open-state index):
   O(workers + listed shards), never a pass over the job's rows. Enumerate: nothing is read,
   have_workers = 0. 0, -2 DB error. */
int web_share_get(nq_http_t *h, uint64_t job, int enumerate, web_share_t *out, char *err, size_t errlen);
/* The web view's DB connection, held (locked, opened) for direct reads: 0, or -2 with err. */
int web_db_hold(nq_http_t *h, char *err, size_t errlen);
void web_db_release(nq_http_t *h);

/* Parses a job id from a URL: 1 to 20 digits, no sign, no leading zero, fits 64 bits, >= 1.
   0 ok, -1 otherwise. */
int web_parse_id(const char *s, size_t n, uint64_t *id);

#endif
