/*
 * Feeds the HTTP listener (broker/http/: /metrics and the web view) from the broker's
 * live state: once a second, a snapshot of its figures, its active jobs and its peers.
 * This is the only place the broker and the HTTP threads meet.
 */
#include "broker_impl.h"
#include "clock.h"
#include "http.h"
#include "log.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

int broker_metrics_start(nq_broker_t *b, char *err, size_t errlen)
{
    nq_http_cfg_t c = { .addr = b->cfg.metrics, .token = b->cfg.http_token, .db_path = b->cfg.db_path };
    b->metrics = http_new(&c, err, errlen);
    if (!b->metrics)
        return -1;
    char url[300];
    nq_log(NQ_LOG_INFO, "http.listen", "url=%s", broker_metrics_url(b, url, sizeof url));
    return 0;
}

/* Free and total bytes of the DB's file system (one statvfs: cheap at 1 Hz). */
static void disk_space(const nq_broker_t *b, nq_metrics_snapshot_t *s)
{
    char dir[4096];
    struct statvfs v;
    snprintf(dir, sizeof dir, "%s", b->cfg.db_path ? b->cfg.db_path : ".");
    if (statvfs(dirname(dir), &v) == 0) {
        s->disk_free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
        s->disk_size_bytes = (uint64_t)v.f_blocks * v.f_frsize;
    }
}

/* The active jobs, from memory (the DB lags the open transaction); NULL when there are none. */
static nq_metrics_job_t *snapshot_jobs(nq_broker_t *b, nq_metrics_snapshot_t *s)
{
    size_t n = 0;
    for (nq_job_t *j = b->jobs; j; j = j->next)
        n++;
    nq_metrics_job_t *out = n ? calloc(n, sizeof *out) : NULL;
    for (nq_job_t *j = b->jobs; j && out; j = j->next, s->njobs++) {
        nq_metrics_job_t *m = &out[s->njobs];
        m->id = j->id;
        m->n = j->spec.n;
        snprintf(m->kind, sizeof m->kind, "%s", store_kind_name(j->spec.kind));
        snprintf(m->state, sizeof m->state, "%s", store_job_state_name(j->state));
        m->shards_total = j->shards_total;
        m->shards_done = j->shards_done;
        m->shards_failed = j->shards_failed;
        m->shards_conflict = j->shards_conflict;
        m->shards_leased = j->leases_out;
        m->shards_pending = jobq_pending(j);
        job_wait_why(b, j, m->waiting, sizeof m->waiting);
        jobs_pace(b, j, &m->eta, &m->rate);
    }
    s->jobs = out;
    s->jobs_active = (uint32_t)n;
    return out;
}

static nq_metrics_worker_t *snapshot_workers(nq_broker_t *b, nq_metrics_snapshot_t *s, double now)
{
    size_t np = 0;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        np++;
    nq_metrics_worker_t *w = np ? calloc(np, sizeof *w) : NULL;
    for (nq_peer_t *p = b->peers; p && w; p = p->next, s->nworkers++) {
        nq_metrics_worker_t *m = &w[s->nworkers];
        m->id = p->hello.worker_id;
        m->leases = p->outstanding;
        m->nodes_per_s = now > p->first_seen ? (double)p->nodes_done / (now - p->first_seen) : 0;
        m->flagged = peer_quarantined(b, p);
        m->rtt_s = peer_rtt(p);
        size_t k = nq_utf8_prefix(p->hello.build, sizeof m->kernel - 1);   /* never half an 'é' */
        memcpy(m->kernel, p->hello.build, k);
        m->kernel[k] = '\0';
        m->devices = p->devices;        /* borrowed: http_update copies what it keeps */
        m->ndevices = p->devices ? p->ndevices : 0;
    }
    s->workers = w;
    s->workers_alive = (uint32_t)np;
    return w;
}

/* Active jobs, from memory: the per-job counters move with every result (no scan of shards). */
static void snapshot_shards(nq_broker_t *b, nq_metrics_snapshot_t *s)
{
    for (nq_job_t *j = b->jobs; j; j = j->next) {
        s->shards_by_state[NQ_SHARD_PENDING] += jobq_pending(j);
        s->shards_by_state[NQ_SHARD_LEASED] += j->leases_out;
        s->shards_by_state[NQ_SHARD_DONE] += j->shards_done;
        s->shards_by_state[NQ_SHARD_FAILED] += j->shards_failed;
        s->shards_by_state[NQ_SHARD_CONFLICT] += j->shards_conflict;
    }
}

void broker_metrics_tick(nq_broker_t *b, double now)
{
    if (!b->metrics || now - b->last_metrics < 1.0)
        return;
    static uint64_t last_results;
    double dt = b->last_metrics > 0 ? now - b->last_metrics : 1.0;
    nq_metrics_snapshot_t s;
    memset(&s, 0, sizeof s);
    s.wall = nq_wall();
    snapshot_shards(b, &s);
    s.results_total = b->stats.results_total;
    s.results_duplicate = b->stats.results_duplicate;
    s.results_conflict = b->stats.results_conflict;
    s.results_rejected = b->stats.results_rejected;
    s.results_evidence = b->stats.results_evidence;
    s.leases_lost = b->stats.leases_lost;
    s.messages_bad = b->stats.messages_bad;
    s.results_per_s = (double)(b->stats.results_total - last_results) / dt;
    last_results = b->stats.results_total;
    s.commits = b->stats.commits;
    s.commit_seconds_sum = b->stats.commit_seconds_sum;
    s.commit_seconds_max = b->stats.commit_seconds_max;
    s.store_ok = b->store_ok;
    disk_space(b, &s);
    nq_metrics_job_t *jobs = snapshot_jobs(b, &s);
    nq_metrics_worker_t *w = snapshot_workers(b, &s, now);
    http_update(b->metrics, &s);
    free(w);
    free(jobs);
    b->last_metrics = now;
}

const char *broker_metrics_url(const nq_broker_t *b, char *buf, size_t len)
{
    const char *addr = b->cfg.metrics, *colon = strrchr(addr, ':');
    int hostlen = colon ? (int)(colon - addr) : 0;
    snprintf(buf, len, "http://%.*s:%u/", hostlen, addr, (unsigned)http_port(b->metrics));
    return buf;
}

void broker_metrics_stop(nq_broker_t *b)
{
    if (b->metrics)
        http_destroy((nq_http_t **)&b->metrics);
}
