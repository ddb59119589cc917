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
 * first to end decides.
 */
#include "worker_impl.h"

#define FEED_MARGIN 1.25        /* feeders beyond the measured need: host parts vary shard to shard */
#define CREDIT_AHEAD_S 3.0      /* the broker keeps a worker ~2 s ahead (dispatch.c): a cap above it */
#define CPU_CREDIT_PER_THREAD 2 /* a CPU worker's shards a thread (feed_credit says why) */

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
 * The shards to ask for at most (the broker budgets by work within it, dispatch.c):
 *  - a CPU worker: CPU_CREDIT_PER_THREAD a thread and the prefetch. One a thread and one more
 *    left a thread idle for a round trip whenever shards ended together (the broker sends the
 *    next one only then); two a thread keep one waiting behind each running one, and the
 *    broker's work budget keeps a slow worker from sitting on many. Measured on the (busy)
 *    2-core development machine, broker and one `nq worker --threads 2` over TCP, medians of
 *    alternating runs: count 16 at depth 3 (29,641 shards of ~20 us) 4.1 s with 3 against 3.3 s
 *    with 5; count 17 at depth 2 paced to 1e8 nodes/s a thread (NQ_FAULT_PACE, 4.85 s if
 *    nothing waited) 7.0 s against 6.7 s;
 *  - a GPU worker: its threads and prefetch, and on top the more of the shards that fill its
 *    device at once (the engine's launches) and CREDIT_AHEAD_S of the shards it finished lately,
 *    so that a new GPU worker fills its device at once and then follows its rate.
 */
uint32_t feed_credit(const nq_feed_t *f)
{
    double c = f->threads + f->prefetch;
    if (!f->gpu) {
        c += (CPU_CREDIT_PER_THREAD - 1) * (double)f->threads;
    } else {
        double ahead = f->rate * CREDIT_AHEAD_S;
        c += ahead > (double)f->load.fill ? ahead : (double)f->load.fill;
    }
    return c > NQ_CREDIT_MAX ? NQ_CREDIT_MAX : c < 1 ? 1 : (uint32_t)c;
}
