/*
 * A small ring of samples per job (see HIST_CAP in http_impl.h): shards done against
 * time, one point per snapshot until the ring is full; then every other point goes and
 * only every second snapshot becomes a point, and so on. Memory stays HIST_JOBS rings
 * however long a campaign runs, and the chart always spans the job's whole life since
 * the broker started. One more ring follows the whole broker (results, workers) for /.
 */
#include "http_impl.h"

#include <string.h>

static hist_ring_t *ring_for(nq_history_t *h, uint64_t job, double now)
{
    hist_ring_t *free_one = NULL, *oldest = &h->rings[0];
    for (size_t i = 0; i < HIST_JOBS; i++) {
        hist_ring_t *r = &h->rings[i];
        if (r->job == job)
            return r;
        if (!r->job && !free_one)
            free_one = r;
        if (r->updated < oldest->updated)
            oldest = r;
    }
    hist_ring_t *r = free_one ? free_one : oldest;   /* forget the job updated least recently */
    memset(r, 0, sizeof *r);
    r->job = job;
    r->stride = 1;
    r->updated = now;
    return r;
}

static void ring_halve(hist_ring_t *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i += 2)
        r->s[k++] = r->s[i];
    r->n = k;
    r->stride *= 2;
}

static void ring_add(hist_ring_t *r, double t, uint64_t done, uint32_t workers)
{
    r->updated = t;
    if (r->n > 0 && ++r->skipped < r->stride)
        return;
    r->skipped = 0;
    if (r->n == HIST_CAP)
        ring_halve(r);
    r->s[r->n].t = t;
    r->s[r->n].done = done;
    r->s[r->n].workers = workers;
    r->n++;
}

void history_add(nq_history_t *h, const nq_metrics_snapshot_t *s)
{
    for (size_t i = 0; i < s->njobs; i++)
        ring_add(ring_for(h, s->jobs[i].id, s->wall), s->wall, s->jobs[i].shards_done, 0);
    if (!h->broker.stride)
        h->broker.stride = 1;
    ring_add(&h->broker, s->wall, s->results_total, s->workers_alive);
}

size_t history_get_broker(const nq_history_t *h, hist_sample_t *out, size_t max)
{
    size_t n = h->broker.n < max ? h->broker.n : max;
    memcpy(out, h->broker.s, n * sizeof *out);
    return n;
}

size_t history_get(const nq_history_t *h, uint64_t job, hist_sample_t *out, size_t max)
{
    for (size_t i = 0; i < HIST_JOBS; i++) {
        const hist_ring_t *r = &h->rings[i];
        if (r->job == job && job) {
            size_t n = r->n < max ? r->n : max;
            memcpy(out, r->s, n * sizeof *out);
            return n;
        }
    }
    return 0;
}
