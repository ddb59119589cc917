/* The broker's snapshot (see metrics.h): its deep copy and its Prometheus text exposition. */
#define _GNU_SOURCE   /* open_memstream */
#include "metrics.h"

#include "log.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prometheus floats: Go's ParseFloat syntax, so inf/nan need their own spelling. */
static void put_double(FILE *f, double v)
{
    if (isnan(v))
        fputs("NaN", f);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", f);
    else
        fprintf(f, "%.17g", v);
}

/*
 * Label values escape backslash, double quote and newline (exposition format 0.0.4). They
 * come from the wire (worker ids), so the renderer also keeps the exposition valid UTF-8
 * on its own: every byte that is not part of valid UTF-8, every other control character
 * (C0, DEL, C1) becomes U+FFFD (one per stray byte or control character).
 */
static void put_label_value(FILE *f, const char *s)
{
    static const char repl[] = "\xef\xbf\xbd";   /* U+FFFD REPLACEMENT CHARACTER */
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : nq_utf8_len(s + i, n - i);
        if (c == '\\')
            fputs("\\\\", f);
        else if (c == '"')
            fputs("\\\"", f);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20 || c == 0x7f || k == 0 ||
                 (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
            fputs(repl, f);
        else
            fwrite(s + i, 1, k, f);
        i += k ? k : 1;
    }
}

static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_u64(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
    put_family(f, name, type, help);
    fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* Is job id among the ended (it ended after the snapshot was taken)? */
static int ended_has(const nq_metrics_ended_t *e, uint64_t id)
{
    for (size_t i = 0; e && i < e->njobs; i++)
        if (e->jobs[i].id == id)
            return 1;
    return 0;
}

static void put_shards(FILE *f, const nq_metrics_snapshot_t *s, const nq_metrics_ended_t *e)
{
    static const char *const states[6] = {
        "pending", "leased", "done", "failed", "conflict", "cancelled"
    };
    uint64_t by[6];
    for (int i = 0; i < 6; i++)
        by[i] = s->shards_by_state[i] + (e ? e->shards_by_state[i] : 0);
    for (size_t k = 0; k < s->njobs; k++) {
        const nq_metrics_job_t *j = &s->jobs[k];
        if (!ended_has(e, j->id))
            continue;                   /* its final figures are the ended ones: not twice */
        const uint64_t mine[6] = { j->shards_pending, j->shards_leased, j->shards_done, j->shards_failed,
                                   j->shards_conflict, 0 };
        for (int i = 0; i < 6; i++)
            by[i] -= by[i] >= mine[i] ? mine[i] : by[i];
    }
    put_family(f, "nq_shards", "gauge",
               "Shards of all jobs by state (cancelled: left open when their job ended).");
    for (int i = 0; i < 6; i++)
        fprintf(f, "nq_shards{state=\"%s\"} %llu\n", states[i], (unsigned long long)by[i]);
}

void metrics_ended_add(nq_metrics_ended_t *e, const nq_metrics_job_t *j, double finished, double now)
{
    uint64_t settled = j->shards_done + j->shards_failed + j->shards_conflict;
    e->shards_by_state[2] += j->shards_done;
    e->shards_by_state[3] += j->shards_failed;
    e->shards_by_state[4] += j->shards_conflict;
    e->shards_by_state[5] += j->shards_total > settled ? j->shards_total - settled : 0;
    if (e->njobs < METRICS_ENDED_MAX && now - finished < METRICS_ENDED_KEEP_S)
        e->jobs[e->njobs++] = *j;
}

static void put_commits(FILE *f, const nq_metrics_snapshot_t *s)
{
    /* A summary without quantiles: _sum/_count give the mean over any window. */
    put_family(f, "nq_store_commit_seconds", "summary",
               "Latency of store commits (one commit holds many results).");
    fputs("nq_store_commit_seconds_sum ", f);
    put_double(f, s->commit_seconds_sum);
    fprintf(f, "\nnq_store_commit_seconds_count %llu\n", (unsigned long long)s->commits);
    put_family(f, "nq_store_commit_max_seconds", "gauge",
               "Slowest store commit since the broker started.");
    fputs("nq_store_commit_max_seconds ", f);
    put_double(f, s->commit_seconds_max);
    fputc('\n', f);
}

/* {worker="ID",device="I",name="NAME"}: a GPU worker's device I, named in the worker's words
   (escaped like its id). */
static void put_device_labels(FILE *f, const char *metric, const nq_metrics_worker_t *w, uint32_t i)
{
    fprintf(f, "%s{worker=\"", metric);
    put_label_value(f, w->id);
    fprintf(f, "\",device=\"%u\",name=\"", (unsigned)i);
    put_label_value(f, w->devices[i].name);
    fputs("\"} ", f);
}

/* A series per device of each GPU worker: its rate, queued shards, shards counted and state. */
static void put_devices(FILE *f, const nq_metrics_snapshot_t *s)
{
    static const struct { const char *name, *type, *help; } fam[4] = {
        { "nq_worker_device_shards_per_second", "gauge",
          "Shards a second each device of a GPU worker counts lately." },
        { "nq_worker_device_queued", "gauge", "Shards each device of a GPU worker holds." },
        { "nq_worker_device_shards", "gauge",
          "Shards each device of a GPU worker counted since the worker started." },
        { "nq_worker_device_up", "gauge", "1 while a GPU worker's device counts, 0 once it failed." },
    };
    for (int k = 0; k < 4; k++) {
        put_family(f, fam[k].name, fam[k].type, fam[k].help);
        for (size_t i = 0; i < s->nworkers; i++)
            for (uint32_t d = 0; d < s->workers[i].ndevices; d++) {
                const nq_hb_device_t *x = &s->workers[i].devices[d];
                put_device_labels(f, fam[k].name, &s->workers[i], d);
                if (k == 0)
                    put_double(f, (double)x->rate_milli / 1000);
                else
                    fprintf(f, "%llu", (unsigned long long)(k == 1 ? x->queued : k == 2 ? x->shards
                                                            : x->state != NQ_DEVICE_FAILED));
                fputc('\n', f);
            }
    }
}

static void put_workers(FILE *f, const nq_metrics_snapshot_t *s)
{
    put_family(f, "nq_worker_nodes_per_second", "gauge",
               "Search nodes per second reported by each connected worker.");
    for (size_t i = 0; i < s->nworkers; i++) {
        fputs("nq_worker_nodes_per_second{worker=\"", f);
        put_label_value(f, s->workers[i].id);
        fputs("\"} ", f);
        put_double(f, s->workers[i].nodes_per_s);
        fputc('\n', f);
    }
    put_family(f, "nq_worker_leases", "gauge", "Shards leased to each connected worker.");
    for (size_t i = 0; i < s->nworkers; i++) {
        fputs("nq_worker_leases{worker=\"", f);
        put_label_value(f, s->workers[i].id);
        fprintf(f, "\"} %u\n", s->workers[i].leases);
    }
    put_devices(f, s);
    put_family(f, "nq_worker_round_trip_seconds", "gauge",
               "Each connected worker's round trip as the broker measured it (absent until measured).");
    for (size_t i = 0; i < s->nworkers; i++) {
        if (s->workers[i].rtt_s <= 0)
            continue;
        fputs("nq_worker_round_trip_seconds{worker=\"", f);
        put_label_value(f, s->workers[i].id);
        fputs("\"} ", f);
        put_double(f, s->workers[i].rtt_s);
        fputc('\n', f);
    }
}

/* The jobs with series: the snapshot's (active), then the ended, each once. */
typedef struct {
    const nq_metrics_snapshot_t *s;
    const nq_metrics_ended_t *e;
} job_lists_t;

static size_t jobs_count(const job_lists_t *l)
{
    return l->s->njobs + (l->e ? l->e->njobs : 0);
}

/* Job i of the lists, or NULL where an active one ended since (the ended one stands for it). */
static const nq_metrics_job_t *jobs_at(const job_lists_t *l, size_t i)
{
    if (i >= l->s->njobs)
        return &l->e->jobs[i - l->s->njobs];
    return ended_has(l->e, l->s->jobs[i].id) ? NULL : &l->s->jobs[i];
}

/* One gauge per job; `nq_job_info` carries the labels that never change value. */
static void put_job_series(FILE *f, const job_lists_t *l, const char *name, const char *help, size_t field)
{
    put_family(f, name, "gauge", help);
    for (size_t i = 0; i < jobs_count(l); i++) {
        const nq_metrics_job_t *j = jobs_at(l, i);
        uint64_t v;
        if (!j)
            continue;
        memcpy(&v, (const char *)j + field, sizeof v);
        fprintf(f, "%s{job_id=\"%llu\"} %llu\n", name, (unsigned long long)j->id, (unsigned long long)v);
    }
}

static void put_jobs(FILE *f, const job_lists_t *l)
{
    put_family(f, "nq_job_info", "gauge",
               "One series per active job and per job that ended in the last day: its kind, N and state.");
    for (size_t i = 0; i < jobs_count(l); i++) {
        const nq_metrics_job_t *j = jobs_at(l, i);
        if (!j)
            continue;
        fprintf(f, "nq_job_info{job_id=\"%llu\",kind=\"", (unsigned long long)j->id);
        put_label_value(f, j->kind);
        fprintf(f, "\",n=\"%llu\",state=\"", (unsigned long long)j->n);
        put_label_value(f, j->state);
        fputs("\"} 1\n", f);
    }
    put_job_series(f, l, "nq_job_shards", "Shards of each job, in all (not _total: a gauge).",
                   offsetof(nq_metrics_job_t, shards_total));
    put_job_series(f, l, "nq_job_shards_done", "Shards of each job with an accepted result.",
                   offsetof(nq_metrics_job_t, shards_done));
    put_job_series(f, l, "nq_job_shards_failed", "Shards of each job that ran out of attempts.",
                   offsetof(nq_metrics_job_t, shards_failed));
    put_job_series(f, l, "nq_job_shards_conflict", "Shards of each job whose results disagreed.",
                   offsetof(nq_metrics_job_t, shards_conflict));
    put_job_series(f, l, "nq_job_shards_leased", "Shards of each job out on workers.",
                   offsetof(nq_metrics_job_t, shards_leased));
}

static void put_store(FILE *f, const nq_metrics_snapshot_t *s)
{
    put_u64(f, "nq_store_writable", "gauge",
            "1 while store commits succeed; 0 after one failed (disk full?): no leasing, no ACKs.",
            s->store_ok ? 1 : 0);
    if (s->disk_size_bytes == 0)
        return;                     /* statvfs failed: no figure is better than a wrong one */
    put_u64(f, "nq_store_disk_free_bytes", "gauge",
            "Bytes free to the broker on the file system of its DB.", s->disk_free_bytes);
    put_u64(f, "nq_store_disk_size_bytes", "gauge",
            "Size of the file system of the broker's DB.", s->disk_size_bytes);
}

char *metrics_render(const nq_metrics_snapshot_t *s, const nq_metrics_ended_t *ended)
{
    job_lists_t jobs = { s, ended };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    put_family(f, "nq_build_info", "gauge", "Version of the running nq broker.");
    fputs("nq_build_info{version=\"", f);
    put_label_value(f, NQ_VERSION);
    fputs("\"} 1\n", f);
    put_shards(f, s, ended);
    put_u64(f, "nq_results_total", "counter", "Shard results received.", s->results_total);
    put_u64(f, "nq_results_duplicate_total", "counter",
            "Results for a shard that already had an equal result.", s->results_duplicate);
    put_u64(f, "nq_results_conflict_total", "counter",
            "Results that disagreed with the stored result of their shard.", s->results_conflict);
    put_u64(f, "nq_results_evidence_total", "counter",
            "Results that disagreed with a decided shard: kept as evidence, the answer stands.",
            s->results_evidence);
    put_u64(f, "nq_results_rejected_total", "counter",
            "Results that failed the broker's checks (wrong lease, proof or answer).",
            s->results_rejected);
    put_u64(f, "nq_leases_lost_total", "counter",
            "Leases taken back because the worker's heartbeat showed it never got the TASK.",
            s->leases_lost);
    put_u64(f, "nq_messages_bad_total", "counter",
            "Malformed or unexpected messages dropped.", s->messages_bad);
    put_family(f, "nq_results_per_second", "gauge", "Recent rate of shard results.");
    fputs("nq_results_per_second ", f);
    put_double(f, s->results_per_s);
    fputc('\n', f);
    put_u64(f, "nq_workers_alive", "gauge", "Workers currently connected and alive.",
            s->workers_alive);
    put_u64(f, "nq_jobs_active", "gauge", "Jobs pending or running.", s->jobs_active);
    put_commits(f, s);
    put_store(f, s);
    put_workers(f, s);
    put_jobs(f, &jobs);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- the snapshot's deep copy ------------------------------------------------------------ */

void metrics_snapshot_free(nq_metrics_snapshot_t *s)
{
    for (size_t i = 0; i < s->nworkers; i++) {
        free((char *)s->workers[i].id);
        free((nq_hb_device_t *)s->workers[i].devices);
    }
    free((nq_metrics_worker_t *)s->workers);
    free((nq_metrics_job_t *)s->jobs);
    s->workers = NULL;
    s->nworkers = 0;
    s->jobs = NULL;
    s->njobs = 0;
}

static int copy_workers(nq_metrics_snapshot_t *c, const nq_metrics_snapshot_t *src)
{
    if (!src->nworkers)
        return 0;
    nq_metrics_worker_t *w = calloc(src->nworkers, sizeof *w);
    if (!w)
        return -1;
    c->workers = w;
    for (size_t i = 0; i < src->nworkers; i++, c->nworkers++) {
        w[i] = src->workers[i];
        w[i].devices = NULL;
        w[i].ndevices = 0;
        w[i].id = strdup(src->workers[i].id ? src->workers[i].id : "");
        if (!w[i].id)
            return -1;
        uint32_t nd = src->workers[i].ndevices;
        if (nd && src->workers[i].devices) {
            nq_hb_device_t *d = malloc(nd * sizeof *d);
            if (!d)
                return -1;
            memcpy(d, src->workers[i].devices, nd * sizeof *d);
            w[i].devices = d;
            w[i].ndevices = nd;
        }
    }
    return 0;
}

int metrics_snapshot_copy(nq_metrics_snapshot_t *dst, const nq_metrics_snapshot_t *src)
{
    nq_metrics_snapshot_t c = *src;
    c.workers = NULL;
    c.nworkers = 0;
    c.jobs = NULL;
    c.njobs = 0;
    if (src->njobs) {
        nq_metrics_job_t *j = malloc(src->njobs * sizeof *j);   /* njobs: the broker's own list */
        if (!j)
            return -1;
        memcpy(j, src->jobs, src->njobs * sizeof *j);
        c.jobs = j;
        c.njobs = src->njobs;
    }
    if (copy_workers(&c, src) != 0) {
        metrics_snapshot_free(&c);
        return -1;
    }
    *dst = c;
    return 0;
}
