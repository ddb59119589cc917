/*
 * A GPU worker's devices as its HEARTBEAT carries them (protocol 5): each one's name, state,
 * queued shards, shards counted and its rate lately, so that `nq workers`, the web view and
 * /metrics show every device of a worker.
 */
#include "worker_impl.h"

#include <string.h>

_Static_assert(NQ_GPU_MAX_DEVICES <= NQ_MAX_HB_DEVICES, "a heartbeat holds every device a worker drives");

#define RATE_WEIGHT 0.5         /* a device's shards a second, smoothed over a few seconds */

/* The driver's name as one line of text of at most cap - 1 bytes: control bytes become '?' and a
   cut never splits a UTF-8 sequence (the encoder refuses what the decoder would, and a refused
   heartbeat would cost the worker its leases). */
void device_name_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    if (n == cap - 1)
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;                        /* src[n] continues a sequence: cut before its lead byte */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 32 || c == 127 ? '?' : (char)c;
    }
    dst[n] = 0;
}

void devices_measure(nq_dev_rates_t *r, nq_pool_t *p, uint32_t n, double now)
{
    if (r->at > 0 && now - r->at < 1.0)
        return;
    for (uint32_t i = 0; i < n && i < NQ_MAX_HB_DEVICES; i++) {
        nq_pool_dev_t d;
        pool_dev_stats(p, i, &d);
        if (r->at > 0) {
            double x = (double)(d.shards - r->seen[i]) / (now - r->at);
            r->rate[i] = r->rate[i] > 0 ? (1 - RATE_WEIGHT) * r->rate[i] + RATE_WEIGHT * x : x;
        }
        r->seen[i] = d.shards;
    }
    r->at = now;
}

void devices_heartbeat(const nq_dev_rates_t *r, nq_pool_t *p, nq_gpu_t *const *gpus, uint32_t n,
                       nq_heartbeat_t *hb)
{
    hb->ndevices = 0;
    for (uint32_t i = 0; i < n && i < NQ_MAX_HB_DEVICES; i++, hb->ndevices++) {
        nq_hb_device_t *d = &hb->devices[i];
        nq_pool_dev_t s;
        pool_dev_stats(p, i, &s);
        device_name_copy(d->name, sizeof d->name, gpu_name(gpus[i]));
        d->state = s.failed ? NQ_DEVICE_FAILED : NQ_DEVICE_OK;
        d->queued = s.held;
        d->shards = s.shards;
        d->rate_milli = s.failed ? 0 : (uint64_t)(r->rate[i] * 1000 + 0.5);
    }
}
