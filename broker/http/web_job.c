/*
 * /jobs/ID: one job's page. Its figures (the document of `nq status ID --json`), its
 * progress over time as a chart (the store's job_progress), who did its work and at what speed
 * (web_share.c), its conflicts and failed shards with the last error a worker reported,
 * and for a solve study the success table of `nq result ID`.
 */
#include "http_impl.h"

#include "query.h"
#include "store.h"

#include <string.h>

#define JOB_REFRESH_S 2

static void row(FILE *f, const char *name, const msgpack_object *job, const char *key)
{
    fprintf(f, "<tr><th class=\"l\">%s</th><td class=\"l\" id=\"f-%s\">", name, key);
    html_esc_obj(f, doc_get(job, key));
    fputs("</td></tr>\n", f);
}

/* A row whose value is a count: digits grouped for people. */
static void row_count(FILE *f, const char *name, const msgpack_object *job, const char *key)
{
    fprintf(f, "<tr><th class=\"l\">%s</th><td class=\"l\" id=\"f-%s\">", name, key);
    html_count(f, doc_get(job, key));
    fputs("</td></tr>\n", f);
}

static void row_duration(FILE *f, const char *name, const msgpack_object *job, const char *key)
{
    double d;
    fprintf(f, "<tr><th class=\"l\">%s</th><td class=\"l\">", name);
    if (doc_double(job, key, &d) == 0)
        html_duration(f, d);
    else
        fputs("-", f);
    fputs("</td></tr>\n", f);
}

/* Spot-checks (--verify-rate): the words of `nq status`. */
static void spot_rows(FILE *f, const msgpack_object *j)
{
    row(f, "verify rate", j, "verify_rate");
    row_count(f, "checks compared", j, "checks");
    row_count(f, "checks disagreed", j, "checks_disagreed");
    row_count(f, "checks open", j, "checks_open");
    const msgpack_object *fl = doc_get(j, "flagged");
    fputs("<tr><th class=\"l\">flagged</th><td class=\"l\" id=\"flagged\">", f);
    for (uint32_t i = 0; fl && fl->type == MSGPACK_OBJECT_ARRAY && i < fl->via.array.size; i++) {
        fputs(i ? ", " : "", f);
        html_esc_obj(f, &fl->via.array.ptr[i]);   /* a worker id from the wire */
    }
    if (!fl || fl->type != MSGPACK_OBJECT_ARRAY || fl->via.array.size == 0)
        fputs("nobody", f);
    fputs("</td></tr>\n", f);
}

static void summary(FILE *f, const msgpack_object *j)
{
    uint64_t done = 0, total = 0;
    double rate, t;
    doc_u64(j, "shards_done", &done);
    doc_u64(j, "shards_total", &total);
    fputs("<table id=\"summary\">\n", f);
    row(f, "state", j, "state");
    fputs("<tr><th class=\"l\">progress</th><td class=\"l\">", f);
    html_progress(f, done, total);
    fputs(" &nbsp; <span id=\"done-total\">", f);
    html_count_u64(f, done);
    fputc('/', f);
    html_count_u64(f, total);
    fputs("</span> shards done</td></tr>\n", f);
    fputs("<tr><th class=\"l\">rate</th><td class=\"l\">", f);
    if (doc_double(j, "rate", &rate) == 0)
        html_rate(f, rate);
    else
        fputs("-", f);
    fputs(" shards/s</td></tr>\n", f);
    row_duration(f, "ETA", j, "eta");
    row_duration(f, "elapsed", j, "elapsed");
    if (doc_str_is(j, "kind", "count")) {
        row_count(f, doc_bool(j, "final") ? "total" : "total so far", j, "total");
        row_count(f, doc_bool(j, "final") ? "unique" : "unique so far", j, "unique");
        row_count(f, "nodes", j, "nodes");
        uint64_t fast = 0;              /* the fast GPU kernel's nodes are its own: shown apart */
        if (doc_u64(j, "fast_shards", &fast) == 0 && fast > 0) {
            row_count(f, "nodes of the fast GPU kernel", j, "fast_nodes");
            row_count(f, "shards counted by the fast GPU kernel", j, "fast_shards");
        }
    } else if (doc_str_is(j, "kind", "solve")) {
        row(f, "algo", j, "algo");
        row_count(f, "solutions found", j, "solutions_found");
    } else {
        row_count(f, "solutions", j, "solutions");
    }
    row_count(f, "shards pending", j, "shards_pending");
    row_count(f, "shards leased", j, "shards_leased");
    if (doc_get(j, "copies_open"))
        row_count(f, "copies to count (spot-checks, quorum votes)", j, "copies_open");
    const msgpack_object *w = doc_get(j, "waiting");
    if (w && w->type == MSGPACK_OBJECT_STR)
        row(f, "waiting", j, "waiting");
    uint64_t evidence = 0;
    if (doc_u64(j, "evidence", &evidence) == 0 && evidence > 0) {
        fputs("<tr><th class=\"l\">evidence</th><td class=\"l\" id=\"evidence\">", f);
        html_count(f, doc_get(j, "evidence"));
        fputs(" late results disagreed with decided shards (the answer stands); from ", f);
        const msgpack_object *by = doc_get(j, "evidence_by");
        for (uint32_t i = 0; by && by->type == MSGPACK_OBJECT_ARRAY && i < by->via.array.size; i++) {
            fputs(i ? ", " : "", f);
            html_esc_obj(f, &by->via.array.ptr[i]);   /* worker ids from the wire */
        }
        fputs("</td></tr>\n", f);
    }
    if (doc_get(j, "verify_rate"))
        spot_rows(f, j);
    fputs("<tr><th class=\"l\">started</th><td class=\"l\">", f);
    if (doc_double(j, "started_at", &t) == 0) html_time(f, t); else fputs("-", f);
    fputs("</td></tr>\n<tr><th class=\"l\">finished</th><td class=\"l\">", f);
    if (doc_double(j, "finished_at", &t) == 0) html_time(f, t); else fputs("-", f);
    fputs("</td></tr>\n</table>\n", f);
}

/* The job's points as the broker stored them while it ran, across restarts (job_progress), plus
   its end when it ended after the last one: all its work when it is done. A job whose points the
   store lacks is drawn from its start to its end, which its row keeps. */
static void chart(nq_http_t *h, FILE *f, const msgpack_object *j, uint64_t id)
{
    static __thread query_point_t p[STORE_PROGRESS_CAP + 2];   /* off the MHD thread's stack */
    static __thread hist_sample_t s[STORE_PROGRESS_CAP + 2];
    char err[256] = "";
    double fin, start;
    size_t n = 0;
    if (web_db_hold(h, err, sizeof err) == 0) {
        if (query_progress(h->db, id, p, STORE_PROGRESS_CAP, &n, err, sizeof err) != 0)
            n = 0;
        web_db_release(h);
    }
    for (size_t i = 0; i < n; i++)
        s[i] = (hist_sample_t){ .t = p[i].t, .done = p[i].done };
    int ended = doc_double(j, "finished_at", &fin) == 0;
    if (n == 0 && ended && doc_double(j, "started_at", &start) == 0 && start <= fin)
        s[n++] = (hist_sample_t){ .t = start, .done = 0 };
    if (ended && (n == 0 || fin > s[n - 1].t)) {
        double last = doc_str_is(j, "state", "done") ? 1 : n ? s[n - 1].done : 0;
        s[n++] = (hist_sample_t){ .t = fin, .done = last };
    }
    fputs("<h2>progress over time</h2>\n<div class=\"wide\">", f);
    chart_progress(f, s, n, !ended);
    fputs("</div>\n<p class=\"muted\">The share of the job's estimated work done (from its shards' cost "
          "estimates, as its ETA), sampled every few seconds while a broker runs it, kept across restarts; "
          "older points are thinned so the whole run fits.</p>\n", f);
    if (err[0]) {
        fputs("<p class=\"err\">Its progress points cannot be read: ", f);
        html_esc(f, err, strlen(err));
        fputs("</p>\n", f);
    }
}

static void share_table(FILE *f, const web_share_t *s)
{
    uint64_t all = 0;
    size_t n = s->nworkers + (s->w[SHARE_WORKERS].shards ? 1 : 0);
    for (size_t i = 0; i <= SHARE_WORKERS; i++)
        all += s->w[i].shards;
    fputs("<h2>workers on this job</h2>\n", f);
    if (!s->have_workers || all == 0) {
        fputs(s->have_workers ? "<p>No shard done yet.</p>\n" : "<p class=\"muted\">An enumerate job's "
              "rows are its solutions; who found them is in <code>nq export</code>.</p>\n", f);
        return;
    }
    fputs("<table id=\"share\"><tr><th class=\"l\">worker</th><th>shards done</th><th>share</th>"
          "<th>nodes</th><th title=\"its nodes on this job over the seconds its threads spent on them\">"
          "nodes per thread-second</th></tr>\n", f);
    for (size_t k = 0; k < n; k++) {
        const share_worker_t *w = &s->w[k < s->nworkers ? k : SHARE_WORKERS];
        fputs("<tr><td class=\"l worker\">", f);
        html_esc(f, w->id, strlen(w->id));
        fputs("</td><td>", f);
        html_count_u64(f, w->shards);
        fprintf(f, "</td><td>%.1f%%</td><td>", 100.0 * (double)w->shards / (double)all);
        html_count_u64(f, w->nodes >= 0 && w->nodes < 1.8e19 ? (uint64_t)w->nodes : 0);
        fputs("</td><td>", f);
        html_rate(f, w->seconds > 0 ? w->nodes / w->seconds : 0);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void shard_list(FILE *f, const char *what, const uint64_t *idx, size_t n, uint64_t count)
{
    if (count == 0)
        return;
    fprintf(f, "<p id=\"%s\">%llu shard(s) %s", what, (unsigned long long)count, what);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%llu", i ? ", " : ": ", (unsigned long long)idx[i]);
    fputs(count > n ? ", ...</p>\n" : "</p>\n", f);
}

static void problems(FILE *f, const msgpack_object *j, const web_share_t *s, uint64_t id)
{
    uint64_t failed = 0, conflict = 0;
    const msgpack_object *err = doc_get(j, "last_error");
    doc_u64(j, "shards_failed", &failed);
    doc_u64(j, "shards_conflict", &conflict);
    fputs("<h2>conflicts and failed shards</h2>\n", f);
    if (!failed && !conflict && !(err && err->type == MSGPACK_OBJECT_STR)) {
        fputs("<p id=\"no-problems\">None.</p>\n", f);
        return;
    }
    shard_list(f, "conflict", s->conflict, s->nconflict, conflict);
    shard_list(f, "failed", s->failed, s->nfailed, failed);
    if (err && err->type == MSGPACK_OBJECT_STR) {
        fputs("<p>Last error a worker reported: <span class=\"err\" id=\"last-error\">", f);
        html_esc_obj(f, err);
        fputs("</span></p>\n", f);
    }
    if (failed || conflict)
        fprintf(f, "<p class=\"muted\"><code>nq retry %llu</code> tries them again.</p>\n",
                (unsigned long long)id);
}

static void study_cell(FILE *f, const msgpack_object *m, const char *key, const char *fmt)
{
    double d;
    fputs("<td>", f);
    if (doc_double(m, key, &d) == 0)
        fprintf(f, fmt, d);
    else
        fputs("-", f);
    fputs("</td>", f);
}

/* A solve study's success table: the columns of `nq result ID`, over a bounded sample. */
static void study(nq_http_t *h, FILE *f, uint64_t id)
{
    web_doc_t d;
    char err[256];
    if (web_doc(h, WEB_DOC_STUDY, id, &d, err, sizeof err) != 0) {
        web_doc_free(&d);
        return;
    }
    const msgpack_object *st = doc_get(d.doc, "study");
    if (st && st->type == MSGPACK_OBJECT_ARRAY && st->via.array.size > 0) {
        fputs("<h2>study</h2>\n<table id=\"study\"><tr><th class=\"l\">algo</th><th>seeds</th><th>solved"
              "</th><th>rate</th><th>95% CI</th><th>steps median</th><th>steps p95</th><th>seconds median"
              "</th><th>seconds p95</th></tr>\n", f);
        for (uint32_t i = 0; i < st->via.array.size; i++) {
            const msgpack_object *m = &st->via.array.ptr[i];
            fputs("<tr><td class=\"l\">", f);
            html_esc_obj(f, doc_get(m, "algo"));
            fputs("</td>", f);
            study_cell(f, m, "seeds", "%.0f");
            study_cell(f, m, "solved", "%.0f");
            study_cell(f, m, "rate", "%.3f");
            double lo, hi;
            if (doc_double(m, "ci_low", &lo) == 0 && doc_double(m, "ci_high", &hi) == 0)
                fprintf(f, "<td>%.3f..%.3f</td>", lo, hi);
            else
                fputs("<td>-</td>", f);
            study_cell(f, m, "steps_median", "%.0f");
            study_cell(f, m, "steps_p95", "%.0f");
            study_cell(f, m, "seconds_median", "%.3f");
            study_cell(f, m, "seconds_p95", "%.3f");
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
        fprintf(f, "<p class=\"muted\">From the first %d done seeds of each method, so that this page "
                "costs the same for any size of study; <code>nq result %llu</code> has the table over "
                "every seed.</p>\n", WEB_STUDY_SAMPLE, (unsigned long long)id);
    }
    web_doc_free(&d);
}

static void title(char *buf, size_t len, const msgpack_object *j, uint64_t id)
{
    const msgpack_object *k = doc_get(j, "kind");
    uint64_t n = 0;
    doc_u64(j, "n", &n);
    int ok = k && k->type == MSGPACK_OBJECT_STR && k->via.str.size < 16;
    snprintf(buf, len, "job %llu: %.*s N=%llu", (unsigned long long)id, ok ? (int)k->via.str.size : 1,
             ok ? k->via.str.ptr : "?", (unsigned long long)n);
}

unsigned web_page_job(nq_http_t *h, uint64_t id, FILE *f)
{
    static __thread web_share_t share;   /* 10 KB: off the MHD thread's stack */
    web_doc_t d;
    char err[256] = "", name[64];
    int rc = web_doc(h, WEB_DOC_JOB, id, &d, err, sizeof err);
    if (rc == -1) {
        web_doc_free(&d);
        snprintf(name, sizeof name, "/jobs/%llu", (unsigned long long)id);
        return web_page_not_found(f, name);
    }
    title(name, sizeof name, rc == 0 ? d.doc : NULL, id);
    html_head(f, name, JOB_REFRESH_S);
    if (rc == 0)
        rc = web_share_get(h, id, doc_str_is(d.doc, "kind", "enumerate"), &share, err, sizeof err);
    if (rc != 0) {
        fputs("<p class=\"err\">The store cannot be read: ", f);
        html_esc(f, err, strlen(err));
        fputs("</p>\n", f);
    } else {
        summary(f, d.doc);
        chart(h, f, d.doc, id);
        share_table(f, &share);
        problems(f, d.doc, &share, id);
        if (doc_str_is(d.doc, "kind", "solve"))
            study(h, f, id);
        fprintf(f, "<p class=\"muted\">As JSON: <a href=\"/api/jobs/%llu\">/api/jobs/%llu</a>, "
                "<a href=\"/api/jobs/%llu/result\">/api/jobs/%llu/result</a>.</p>\n", (unsigned long long)id,
                (unsigned long long)id, (unsigned long long)id, (unsigned long long)id);
    }
    html_foot(f);
    web_doc_free(&d);
    return rc == 0 ? 200 : 503;
}
