/*
 * The broker's ring of samples (see HIST_CAP in http_impl.h): results received and workers alive
 * against time, one point per snapshot until the ring is full; then every other point goes and
 * only every second snapshot becomes a point, and so on. What the home page's chart draws, from
 * the broker's start. A job's chart is kept in the store instead (broker/progress.c).
 */
#include "http_impl.h"

#include <string.h>

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
    if (!r->stride)
        r->stride = 1;
    if (r->n > 0 && ++r->skipped < r->stride)
        return;
    r->skipped = 0;
    if (r->n == HIST_CAP)
        ring_halve(r);
    r->s[r->n].t = t;
    r->s[r->n].done = (double)done;
    r->s[r->n].workers = workers;
    r->n++;
}

void history_add(nq_history_t *h, const nq_metrics_snapshot_t *s)
{
    ring_add(&h->broker, s->wall, s->results_total, s->workers_alive);
}

size_t history_get_broker(const nq_history_t *h, hist_sample_t *out, size_t max)
{
    size_t n = h->broker.n < max ? h->broker.n : max;
    memcpy(out, h->broker.s, n * sizeof *out);
    return n;
}
