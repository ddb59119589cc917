/* Feeds the /metrics endpoint (broker/metrics.c) from the broker's live state. */
#include "broker_impl.h"
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

int broker_metrics_start(nq_broker_t *b, char *err, size_t errlen)
{
    b->metrics = metrics_new(b->cfg.metrics, err, errlen);
    return b->metrics ? 0 : -1;
}

void broker_metrics_tick(nq_broker_t *b, double now)
{
    if (!b->metrics || now - b->last_metrics < 1.0)
        return;
    static uint64_t last_results;
    double dt = b->last_metrics > 0 ? now - b->last_metrics : 1.0;
    nq_metrics_snapshot_t s;
    memset(&s, 0, sizeof s);
    /* active jobs, from memory: the per-job counters move with every result (no scan) */
    for (nq_job_t *j = b->jobs; j; j = j->next) {
        s.shards_by_state[NQ_SHARD_PENDING] += jobs_pending_count(j);
        s.shards_by_state[NQ_SHARD_LEASED] += j->shards_leased;
        s.shards_by_state[NQ_SHARD_DONE] += j->shards_done;
        s.shards_by_state[NQ_SHARD_FAILED] += j->shards_failed;
        s.shards_by_state[NQ_SHARD_CONFLICT] += j->shards_conflict;
    }
    s.results_total = b->stats.results_total;
    s.results_duplicate = b->stats.results_duplicate;
    s.results_conflict = b->stats.results_conflict;
    s.messages_bad = b->stats.messages_bad;
    s.results_per_s = (double)(b->stats.results_total - last_results) / dt;
    last_results = b->stats.results_total;
    s.commits = b->stats.commits;
    s.commit_seconds_sum = b->stats.commit_seconds_sum;
    s.commit_seconds_max = b->stats.commit_seconds_max;
    size_t np = 0;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        np++;
    nq_metrics_worker_t *w = calloc(np ? np : 1, sizeof *w);
    np = 0;
    for (nq_peer_t *p = b->peers; p && w; p = p->next, np++) {
        w[np].id = p->hello.worker_id;
        w[np].leases = p->outstanding;
        w[np].nodes_per_s = now > p->first_seen ? (double)p->nodes_done / (now - p->first_seen) : 0;
    }
    s.workers_alive = (uint32_t)np;
    for (nq_job_t *j = b->jobs; j; j = j->next)
        s.jobs_active++;
    s.nworkers = w ? np : 0;
    s.workers = w;
    metrics_update(b->metrics, &s);
    free(w);
    b->last_metrics = now;
}

void broker_metrics_stop(nq_broker_t *b)
{
    if (b->metrics)
        metrics_destroy((nq_metrics_t **)&b->metrics);
}
