/*
 * How a worker spends its threads and how much it asks the broker for (pure: the pool and the
 * socket loop hand it what they measured, and test_worker_feed drives it with made-up rates).
 *
 * A GPU worker's threads feed its GPU first: a feeder queues a shard's GPU part and then runs its
 * host part (gpu_count_shard). The GPU needs feeders for what it consumes: a feeder's seconds a
 * shard over the device's seconds a shard are the threads kept busy feeding it; those, a quarter
 * more and one, are kept for it. The others count shards on the CPU, in the same process, but only
 * while the GPU holds FEED_AHEAD_S of work or more, and the newest shard the worker holds (in the
 * broker's largest-first order, the smallest): a core is ~60 times slower than an H100 (N=20: 16
 * cores 27.7 s, the GPU 7.3 s), and a large shard there would be the job's last to end. When
 * nothing is queued and the GPU wants work, it takes a copy of a shard the CPU is counting; the
 * first to end decides. A worker with several GPUs sees them as one device (feed_combine) for all
 * of this, and hands each shard to the hungriest (gpu_load_hungriest).
 */
#include "worker_impl.h"

#include <string.h>

#define FEED_MARGIN 1.25        /* feeders beyond the measured need: host parts vary shard to shard */
#define CREDIT_AHEAD_S 3.0      /* the broker keeps a worker ~2 s ahead (dispatch.c): a cap above it */

void feed_combine(nq_feed_t *f)
{
    nq_gpu_load_t *a = &f->load;
    double rate = 0, hungry_s = -1;
    uint32_t live = 0, timed = 0;
    memset(a, 0, sizeof *a);
    for (uint32_t i = 0; i < f->ndev; i++) {
        const nq_gpu_load_t *d = &f->dev[i];
        if (d->failing)
            continue;
        live++;
        a->held += d->held;
        a->fill += d->fill;
        if (d->shard_s > 0) {
            timed++;
            rate += 1 / d->shard_s;
            if (hungry_s < 0 || d->held_s < hungry_s)
                hungry_s = d->held_s;
        }
    }
    if (live > 0 && timed == live) {    /* seconds only once every live device measured its own */
        a->shard_s = 1 / rate;
        a->held_s = hungry_s;
    }
    a->failing = f->ndev > 0 && live == 0;
    f->failed = a->failing;
    f->hungriest = gpu_load_hungriest(f->dev, f->ndev);
}

uint32_t feed_feeders(const nq_feed_t *f)
{
    if (!f->gpu)
        return 0;
    if (f->gpu_only || f->failed || f->feed_s <= 0 || f->load.shard_s <= 0)
        return f->threads;              /* nothing measured yet: every thread feeds */
    double need = f->feed_s / f->load.shard_s * FEED_MARGIN + 1;
    if (need >= f->threads)
        return f->threads;
    uint32_t n = (uint32_t)need;
    return n < need ? n + 1 : n;        /* rounded up */
}

uint32_t feed_cpu_max(const nq_feed_t *f)
{
    if (!f->gpu)
        return f->threads;
    if (f->failed)
        return f->threads;              /* the GPU is gone: what is left is the CPU's */
    return f->threads - feed_feeders(f);
}

/* The GPU wants more: it holds less than FEED_AHEAD_S; before its rate is known, fewer shards
   than fill it (or than the threads, before its first walk says what fills it). */
static int gpu_wants(const nq_feed_t *f)
{
    if (f->load.shard_s > 0)
        return f->load.held_s < FEED_AHEAD_S;
    return f->load.held < (f->load.fill > f->threads ? f->load.fill : f->threads);
}

int feed_next(const nq_feed_t *f, uint32_t cpu_running, int queued, int copyable)
{
    if (!f->gpu || f->failed)
        return queued ? FEED_CPU : FEED_WAIT;
    if (!queued)
        return copyable && !f->gpu_only && gpu_wants(f) ? FEED_COPY : FEED_WAIT;
    if (f->gpu_only || gpu_wants(f))
        return FEED_GPU;
    return cpu_running < feed_cpu_max(f) ? FEED_CPU : FEED_WAIT;
}

/*
 * A worker's default prefetch: one shard waiting behind each running one. One for the whole
 * worker left a thread idle for a round trip whenever shards ended together (the broker sends the
 * next one only then); the broker's work budget keeps a slow worker from sitting on many. Measured
 * on the (busy) 2-core development machine, broker and one `nq worker --threads 2` over TCP,
 * medians of alternating runs: count 16 at depth 3 (29,641 shards of ~20 us) 5.3 s with the old
 * prefetch of 1 (a credit of 3) against 4.0 s with one a thread (4), 6 pairs; count 17 at depth 2
 * paced to 1e8 nodes/s a thread (NQ_FAULT_PACE, 4.85 s if nothing waited) 6.1 s against 5.9 s, 4
 * pairs. With one thread the default is what it was (a credit of 2).
 */
uint32_t feed_prefetch(uint32_t threads)
{
    return threads;
}

/*
 * The shards to ask for at most (the broker budgets by work within it, dispatch.c): the threads
 * and the prefetch; a GPU worker, on top, the more of the shards that fill its device at once
 * (the engine's launches) and CREDIT_AHEAD_S of the shards it finished lately, so that a new GPU
 * worker fills its device at once and then follows its rate. Across a far link, also what it
 * finishes in a round trip and half that again: a lease comes a round trip after the result that
 * freed its credit, and with only the threads and the prefetch out, a one-thread worker 0.3 s
 * away did two shards a round trip and waited out the rest (count 18 took 15-21 times as long).
 * What it finishes is its threads' busy rate (their shards' seconds), or its rate when higher: a
 * starved worker's rate is what the link let through, and credit grown from it grew a round trip
 * at a time. A prefetch given with --prefetch is the user's own bound (0: nothing queued, which
 * a worker that may crash on a shard relies on to hold only what it runs), so it does not grow.
 */
#define CREDIT_LINK_MARGIN 1.5

uint32_t feed_credit(const nq_feed_t *f)
{
    double speed = f->busy_rate > f->rate ? f->busy_rate : f->rate;
    double c = f->threads + f->prefetch + (f->prefetch_auto ? speed * f->rtt * CREDIT_LINK_MARGIN : 0);
    if (f->gpu) {
        double ahead = f->rate * CREDIT_AHEAD_S;
        c += ahead > (double)f->load.fill ? ahead : (double)f->load.fill;
    }
    return c > NQ_CREDIT_MAX ? NQ_CREDIT_MAX : c < 1 ? 1 : (uint32_t)c;
}
