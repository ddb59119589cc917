/*
 * The web view's pages for the whole broker: / (the figures an operator looks at first, every
 * job's progress, the broker's throughput over time, the workers alive) and /workers (every
 * worker seen), and the 404 page. Server-rendered HTML from the query
 * documents that `nq list --json` and `nq workers --json` print; they refresh themselves.
 */
#include "http_impl.h"
#include "query.h"

#include <string.h>

/* Seconds between a page's own refreshes: the bar moves, the broker hardly notices. */
#define WEB_REFRESH_S 2
/* Jobs listed on /: a campaign of many jobs shows its newest; `nq list` has them all. */
#define WEB_JOBS_LISTED 200

static void cell(FILE *f, const msgpack_object *doc, const char *key)
{
    fputs("<td>", f);
    html_count(f, doc_get(doc, key));   /* numbers grouped; text as it is */
    fputs("</td>", f);
}

/* A round trip in milliseconds, "-" before it is measured (or for a worker not connected). */
static void html_rtt(FILE *f, double rtt_s)
{
    if (rtt_s > 0)
        fprintf(f, "%.0f ms", rtt_s * 1000);
    else
        fputs("-", f);
}

static void cell_duration(FILE *f, const msgpack_object *doc, const char *key)
{
    double d;
    fputs("<td>", f);
    if (doc_double(doc, key, &d) == 0)
        html_duration(f, d);
    else
        fputs("-", f);
    fputs("</td>", f);
}

/* What a job has found so far, in the words of `nq list`: total and unique for a count. */
static void job_answer(FILE *f, const msgpack_object *j)
{
    if (doc_str_is(j, "kind", "count")) {
        cell(f, j, "total");
        cell(f, j, "unique");
    } else if (doc_str_is(j, "kind", "solve")) {
        fputs("<td colspan=\"2\" class=\"l\">", f);
        html_count(f, doc_get(j, "solutions_found"));
        fputs(" solution(s) found</td>", f);
    } else {
        fputs("<td colspan=\"2\" class=\"l\">", f);
        html_count(f, doc_get(j, "solutions"));
        fputs(" solutions</td>", f);
    }
}

static void job_row(FILE *f, const msgpack_object *j)
{
    uint64_t id = 0, done = 0, total = 0;
    double rate;
    doc_u64(j, "id", &id);
    doc_u64(j, "shards_done", &done);
    doc_u64(j, "shards_total", &total);
    fprintf(f, "<tr id=\"job-%llu\"><td><a href=\"/jobs/%llu\">%llu</a></td>", (unsigned long long)id,
            (unsigned long long)id, (unsigned long long)id);
    fputs("<td class=\"l\">", f);
    html_esc_obj(f, doc_get(j, "kind"));
    fputs("</td>", f);
    cell(f, j, "n");
    fputs("<td class=\"l\">", f);
    html_esc_obj(f, doc_get(j, "state"));
    fputs("</td><td class=\"l\">", f);
    html_progress(f, done, total);
    fputs("</td><td>", f);
    html_count_u64(f, done);
    fputc('/', f);
    html_count_u64(f, total);
    fputs("</td><td>", f);
    if (doc_double(j, "rate", &rate) == 0)
        html_rate(f, rate);
    else
        fputs("-", f);
    fputs("</td>", f);
    const msgpack_object *w = doc_get(j, "waiting");
    if (w && w->type == MSGPACK_OBJECT_STR) {   /* no ETA while it waits: say for what instead */
        fputs("<td class=\"l waiting\">waiting ", f);
        html_esc_obj(f, w);
        fputs("</td>", f);
    } else {
        cell_duration(f, j, "eta");
    }
    job_answer(f, j);
    fputs("</tr>\n", f);
}

static void jobs_table(FILE *f, const msgpack_object *list)
{
    uint32_t n = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
    if (n == 0) {
        fputs("<p>No jobs yet: <code>nq submit count 16</code>.</p>\n", f);
        return;
    }
    fputs("<div class=\"wide\"><table id=\"jobs\"><tr><th>id</th><th class=\"l\">kind</th><th>N</th>"
          "<th class=\"l\">state"
          "</th><th class=\"l\">progress</th><th>shards done/total</th><th>rate (shards/s)</th>"
          "<th>ETA</th><th>total</th><th>unique</th></tr>\n", f);
    for (uint32_t i = 0; i < n && i < WEB_JOBS_LISTED; i++)
        job_row(f, &list->via.array.ptr[i]);
    fputs("</table></div>\n", f);
    if (n > WEB_JOBS_LISTED)
        fprintf(f, "<p class=\"muted\">%u older jobs not shown: <code>nq list</code>.</p>\n",
                n - WEB_JOBS_LISTED);
}

/* The workers alive now, from the broker's last snapshot. */
static void workers_alive(nq_http_t *h, FILE *f)
{
    pthread_mutex_lock(&h->lock);
    const nq_metrics_snapshot_t *s = &h->snap;
    fprintf(f, "<h2>workers alive: <span id=\"workers-alive\">%zu</span></h2>\n", s->nworkers);
    if (s->nworkers)
        fputs("<table id=\"alive\"><tr><th class=\"l\">worker</th><th>leases</th>"
              "<th title=\"its nodes since it connected, over the time since\">nodes/s since connected</th>"
              "<th>round trip</th><th class=\"l\"></th></tr>\n", f);
    for (size_t i = 0; i < s->nworkers; i++) {
        const nq_metrics_worker_t *w = &s->workers[i];
        fputs("<tr><td class=\"l worker\">", f);
        html_esc(f, w->id, strlen(w->id));
        fprintf(f, "</td><td>%u</td><td>", w->leases);
        html_rate(f, w->nodes_per_s);
        fputs("</td><td>", f);
        html_rtt(f, w->rtt_s);
        fprintf(f, "</td><td class=\"l\">%s</td></tr>\n", w->flagged ? "<span class=\"flag\">flagged"
                "</span>" : "");
    }
    if (s->nworkers)
        fputs("</table>\n", f);
    pthread_mutex_unlock(&h->lock);
}

static void db_error(FILE *f, const char *err)
{
    fputs("<p class=\"err\">The store cannot be read: ", f);
    html_esc(f, err, strlen(err));
    fputs("</p>\n", f);
}

/* The figures an operator looks at first, from the broker's last snapshot. */
static void cards(nq_http_t *h, FILE *f, const msgpack_object *list)
{
    uint32_t running = 0, njobs = list && list->type == MSGPACK_OBJECT_ARRAY ? list->via.array.size : 0;
    for (uint32_t i = 0; i < njobs; i++)
        running += doc_str_is(&list->via.array.ptr[i], "state", "running");
    pthread_mutex_lock(&h->lock);
    const nq_metrics_snapshot_t *s = &h->snap;
    double nps = 0;
    for (size_t i = 0; i < s->nworkers; i++)
        nps += s->workers[i].nodes_per_s;
    fprintf(f, "<div class=\"cards\" id=\"cards\"><div class=\"card\">jobs running"
            "<b id=\"card-running\">%u</b></div><div class=\"card\">workers alive<b>%u</b></div>"
            "<div class=\"card\">results/s<b>", running, s->workers_alive);
    html_rate(f, s->results_per_s);
    fputs("</b></div><div class=\"card\">nodes/s<b>", f);
    html_rate(f, nps);
    fprintf(f, "</b></div><div class=\"card\">store<b class=\"%s\">%s</b></div>", s->store_ok ? "" : "flag",
            s->store_ok ? "writable" : "NOT WRITABLE");
    if (s->disk_size_bytes)
        fprintf(f, "<div class=\"card\">disk free<b>%.0f%%</b></div>",
                100.0 * (double)s->disk_free_bytes / (double)s->disk_size_bytes);
    fputs("</div>\n", f);
    pthread_mutex_unlock(&h->lock);
}

/* The whole broker's throughput over time, and the workers it had. */
static void throughput(nq_http_t *h, FILE *f)
{
    static __thread hist_sample_t s[HIST_CAP];   /* 6 KB: off the MHD thread's stack */
    pthread_mutex_lock(&h->lock);
    size_t n = h->hist ? history_get_broker(h->hist, s, HIST_CAP) : 0;
    pthread_mutex_unlock(&h->lock);
    fputs("<h2>throughput</h2>\n<div class=\"wide\">", f);
    chart_broker(f, s, n);
    fputs("</div>\n", f);
}

unsigned web_page_index(nq_http_t *h, FILE *f)
{
    web_doc_t d;
    char err[256] = "";
    int rc = web_doc(h, WEB_DOC_LIST, 0, &d, err, sizeof err);
    html_head(f, "jobs", WEB_REFRESH_S);
    cards(h, f, rc == 0 ? d.doc : NULL);
    if (rc == 0)
        jobs_table(f, d.doc);
    else
        db_error(f, err);
    throughput(h, f);
    workers_alive(h, f);
    html_foot(f);
    web_doc_free(&d);
    return rc == 0 ? 200 : 503;
}

static void cell_time(FILE *f, const msgpack_object *w, const char *key)
{
    double t;
    fputs("<td>", f);
    if (doc_double(w, key, &t) == 0)
        html_time(f, t);
    else
        fputs("-", f);
    fputs("</td>", f);
}

/* A GPU worker's devices under its kernel, one a line: "0: NAME, counting, 40 queued, 12 shards,
   2.5 shards/s" (names and all from the worker: escaped). */
static void cell_devices(FILE *f, const msgpack_object *w)
{
    const msgpack_object *ds = doc_get(w, "devices");
    if (!ds || ds->type != MSGPACK_OBJECT_ARRAY)
        return;
    for (uint32_t i = 0; i < ds->via.array.size; i++) {
        const msgpack_object *d = &ds->via.array.ptr[i];
        fprintf(f, "<br><span class=\"device\">%u: ", (unsigned)i);
        html_esc_obj(f, doc_get(d, "name"));
        fputs(", ", f);
        html_esc_obj(f, doc_get(d, "state"));
        fputs(", ", f);
        html_esc_obj(f, doc_get(d, "queued"));
        fputs(" queued, ", f);
        html_esc_obj(f, doc_get(d, "shards"));
        const msgpack_object *r = doc_get(d, "shards_per_s");
        double rate = r && r->type == MSGPACK_OBJECT_FLOAT64 ? r->via.f64 : 0.0;
        fprintf(f, " shards, %.3g shards/s</span>", rate);
    }
}

/* The kernel build a live worker named in its HELLO (not stored in the DB), and its devices. */
static void cell_kernel(nq_http_t *h, FILE *f, const msgpack_object *w)
{
    const msgpack_object *id = doc_get(w, "id");
    fputs("<td class=\"l\">", f);
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; id && id->type == MSGPACK_OBJECT_STR && i < h->snap.nworkers; i++) {
        const nq_metrics_worker_t *k = &h->snap.workers[i];
        if (strlen(k->id) == id->via.str.size && memcmp(k->id, id->via.str.ptr, id->via.str.size) == 0) {
            html_esc(f, k->kernel, strnlen(k->kernel, sizeof k->kernel));
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    cell_devices(f, w);
    fputs("</td>", f);
}

/* The start of the worker's CURVE public key (QUERY_KEY_SHOWN characters; /api/workers has the
   whole key), "-" without keys. */

static void cell_key(FILE *f, const msgpack_object *w)
{
    const msgpack_object *k = doc_get(w, "pubkey");
    fputs("<td class=\"l key\">", f);
    if (k && k->type == MSGPACK_OBJECT_STR && k->via.str.size > 0) {
        html_esc(f, k->via.str.ptr, k->via.str.size < QUERY_KEY_SHOWN ? k->via.str.size : QUERY_KEY_SHOWN);
        fputs(k->via.str.size > QUERY_KEY_SHOWN ? "&hellip;" : "", f);
    } else {
        fputs("-", f);
    }
    fputs("</td>", f);
}

static void worker_row(nq_http_t *h, FILE *f, const msgpack_object *w)
{
    double nps;
    fputs("<tr><td class=\"l worker\">", f);
    html_esc_obj(f, doc_get(w, "id"));
    fputs("</td><td class=\"l\">", f);
    html_esc_obj(f, doc_get(w, "host"));
    fputs("</td>", f);
    cell_key(f, w);
    cell_time(f, w, "last_seen");
    cell(f, w, "threads");
    cell_kernel(h, f, w);
    fputs("<td class=\"l\">", f);
    html_esc_obj(f, doc_get(w, "alive"));
    fputs("</td>", f);
    cell(f, w, "leases");
    cell(f, w, "shards_done");
    fputs("<td>", f);
    if (doc_double(w, "nodes_per_s", &nps) == 0)
        html_rate(f, nps);
    else
        fputs("-", f);
    fputs("</td><td>", f);
    double rtt = 0;
    html_rtt(f, doc_double(w, "rtt_s", &rtt) == 0 ? rtt : 0);
    fputs("</td>", f);
    cell(f, w, "conflicts");
    fprintf(f, "<td class=\"l\">%s</td></tr>\n", doc_bool(w, "flagged") ? "<span class=\"flag\">"
            "flagged</span>" : "");
}

unsigned web_page_workers(nq_http_t *h, FILE *f)
{
    web_doc_t d;
    char err[256] = "";
    int rc = web_doc(h, WEB_DOC_WORKERS, 0, &d, err, sizeof err);
    html_head(f, "workers", WEB_REFRESH_S);
    if (rc != 0) {
        db_error(f, err);
    } else if (d.doc->type != MSGPACK_OBJECT_ARRAY || d.doc->via.array.size == 0) {
        fputs("<p>No worker has connected yet: <code>nq worker --connect tcp://BROKER:7555</code>.</p>\n", f);
    } else {
        fputs("<p class=\"muted\">Every worker this DB has seen. Kernel and leases are known for the "
              "workers alive; nodes/s is since it connected for them (as on the jobs page), an average over "
              "their work for the others.</p>\n", f);
        fputs("<div class=\"wide\"><table id=\"workers\"><tr><th class=\"l\">worker</th>"
              "<th class=\"l\">host</th><th class=\"l\">key</th><th>last seen"
              "</th><th>threads</th><th class=\"l\">kernel</th><th class=\"l\">alive</th><th>leases</th>"
              "<th>shards done</th>"
              "<th>nodes/s since connected</th><th>round trip</th><th>conflicts</th><th class=\"l\"></th></tr>\n", f);
        for (uint32_t i = 0; i < d.doc->via.array.size; i++)
            worker_row(h, f, &d.doc->via.array.ptr[i]);
        fputs("</table></div>\n", f);
    }
    html_foot(f);
    web_doc_free(&d);
    return rc == 0 ? 200 : 503;
}

unsigned web_page_not_found(FILE *f, const char *what)
{
    size_t n = strlen(what);
    html_head(f, "not found", 0);
    fputs("<p id=\"not-found\">Nothing here: <code>", f);
    html_esc(f, what, n > 200 ? 200 : n);   /* echoes the path, escaped and cut short */
    fputs(n > 200 ? "...</code>" : "</code>", f);
    fputs(". Jobs are at <a href=\"/\">/</a>, one job at /jobs/ID.</p>\n", f);
    html_foot(f);
    return 404;
}
