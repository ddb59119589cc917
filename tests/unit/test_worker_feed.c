/*
 * A GPU worker's threads (worker/feed.c, worker/pool.c): feeders sized to what the GPU consumes,
 * CPU counting only while the GPU holds a second of work, the credit from the device's fill and
 * the measured rate (made-up figures); then a pool on the GPU engine's host backend, its device
 * slowed by the test fault switch: every shard exact and sent once whichever engine counted it
 * (the CPU's with the CPU's nodes), both engines used, the GPU's copies of slow CPU counts, and
 * a device lost while the CPU counts.
 */
#include "t.h"
#include "clock.h"
#include "count.h"
#include "gpu_impl.h"
#include "shard.h"
#include "worker_impl.h"

#include <stdlib.h>
#include <time.h>
#include <zmq.h>

static nq_feed_t gpu_feed(uint32_t threads)
{
    nq_feed_t f;
    memset(&f, 0, sizeof f);
    f.threads = threads;
    f.prefetch = 1;
    f.gpu = 1;
    return f;
}

/* Across a far link a worker asks for what it finishes in a round trip and half that again, at its
   threads' busy rate (a starved worker's rate is only what the link let through). */
T_TEST(test_feed_credit_covers_the_round_trip)
{
    nq_feed_t f;
    memset(&f, 0, sizeof f);
    f.threads = 1;
    f.prefetch = 1;
    f.prefetch_auto = 1;
    T_EQ_U64(feed_credit(&f), 2);               /* nothing measured: the threads and the prefetch */
    f.rate = 6.7;                               /* starved: two shards a 0.3 s round trip */
    f.busy_rate = 200;                          /* its thread does a shard in 5 ms */
    f.rtt = 0.3;
    T_EQ_U64(feed_credit(&f), 2 + 90);          /* 200 a second x 0.3 s x 1.5 */
    f.rtt = 0.0002;                             /* the same worker on a LAN */
    T_EQ_U64(feed_credit(&f), 2);
    f.rtt = 2.0;
    f.busy_rate = 1e6;
    T_EQ_U64(feed_credit(&f), NQ_CREDIT_MAX);
}

/* --prefetch P is the user's bound: it does not grow with the link (0: a worker that may crash on a
   shard holds only what it runs, and a crash charges one shard, not a round trip's worth). */
T_TEST(test_feed_fixed_prefetch_does_not_grow)
{
    nq_feed_t f;
    memset(&f, 0, sizeof f);
    f.threads = 1;
    f.prefetch = 0;
    f.busy_rate = 1e5;
    f.rtt = 0.3;
    T_EQ_U64(feed_credit(&f), 1);
}

T_TEST(test_feed_cpu_worker_counts_on_every_thread)
{
    nq_feed_t f;
    memset(&f, 0, sizeof f);
    f.threads = 8;
    f.prefetch = 1;
    T_EQ_U64(feed_feeders(&f), 0);
    T_EQ_U64(feed_cpu_max(&f), 8);
    T_EQ_U64(feed_next(&f, 7, 1, 0), FEED_CPU);
    T_EQ_U64(feed_next(&f, 0, 0, 0), FEED_WAIT);
    T_EQ_U64(feed_credit(&f), 8 + 1);   /* the threads and the prefetch */
    T_EQ_U64(feed_prefetch(8), 8);      /* by default, one waiting behind each running shard */
}

/* Before anything is measured every thread feeds; then the feeders follow a feeder's seconds a
   shard over the device's, a quarter more and one. */
T_TEST(test_feed_feeders_follow_host_time_over_gpu_rate)
{
    nq_feed_t f = gpu_feed(16);
    T_EQ_U64(feed_feeders(&f), 16);
    T_EQ_U64(feed_cpu_max(&f), 0);
    f.feed_s = 0.007;                   /* 7 ms a shard on a feeder */
    T_EQ_U64(feed_feeders(&f), 16);     /* the device's rate not known yet */
    f.load.shard_s = 0.002;             /* 500 shards a second: 3.5 feeders busy */
    T_EQ_U64(feed_feeders(&f), 6);      /* 3.5 x 1.25 + 1 = 5.4, rounded up */
    T_EQ_U64(feed_cpu_max(&f), 10);
    f.load.shard_s = 0.0002;            /* a device ten times faster wants every thread */
    T_EQ_U64(feed_feeders(&f), 16);
    T_EQ_U64(feed_cpu_max(&f), 0);
    f.load.shard_s = 1.0;               /* a slow one: one feeder and one more */
    T_EQ_U64(feed_feeders(&f), 2);
    f.gpu_only = 1;
    T_EQ_U64(feed_feeders(&f), 16);
    T_EQ_U64(feed_cpu_max(&f), 0);
}

/* The GPU is fed first; the CPU counts only while the GPU holds FEED_AHEAD_S, on the threads the
   feeders leave; with nothing queued the GPU takes copies of CPU counts while it wants work. */
T_TEST(test_feed_next_feeds_the_gpu_first)
{
    nq_feed_t f = gpu_feed(16);
    f.feed_s = 0.007;                   /* 6 feeders, 10 CPU threads once the device's rate is known */
    f.load.held = 3;                    /* the rate not known: up to the threads, or the fill */
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_GPU);
    f.load.held = 16;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_WAIT);
    f.load.fill = 100;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_GPU);
    f.load.held = 100;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_WAIT);
    f.load.shard_s = 0.002;
    f.load.held_s = 0;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_GPU);
    f.load.held_s = FEED_AHEAD_S / 2;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_GPU);
    f.load.held_s = FEED_AHEAD_S * 1.5;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_CPU);
    T_EQ_U64(feed_next(&f, 9, 1, 0), FEED_CPU);
    T_EQ_U64(feed_next(&f, 10, 1, 0), FEED_WAIT);   /* the rest are the feeders' */
    T_EQ_U64(feed_next(&f, 0, 0, 1), FEED_WAIT);    /* busy enough: no copies */
    f.load.held_s = FEED_AHEAD_S / 2;
    T_EQ_U64(feed_next(&f, 3, 0, 1), FEED_COPY);
    T_EQ_U64(feed_next(&f, 3, 0, 0), FEED_WAIT);
    f.gpu_only = 1;
    f.load.held_s = FEED_AHEAD_S * 5;
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_GPU);
    T_EQ_U64(feed_next(&f, 0, 0, 1), FEED_WAIT);
    f.gpu_only = 0;
    f.failed = 1;                       /* the device is gone: the CPU counts what is left */
    T_EQ_U64(feed_next(&f, 15, 1, 1), FEED_CPU);
    T_EQ_U64(feed_next(&f, 15, 0, 1), FEED_WAIT);
    T_EQ_U64(feed_cpu_max(&f), 16);
}

/* A new GPU worker asks for what fills its device at once, then for CREDIT_AHEAD_S of its rate
   where that is more, never past NQ_CREDIT_MAX. */
T_TEST(test_feed_credit_fills_the_device_then_follows_the_rate)
{
    nq_feed_t f = gpu_feed(16);
    T_EQ_U64(feed_credit(&f), 17);      /* nothing known: threads and prefetch */
    f.load.fill = 1400;
    T_EQ_U64(feed_credit(&f), 17 + 1400);
    f.rate = 100;                       /* 300 in three seconds: the fill is more */
    T_EQ_U64(feed_credit(&f), 17 + 1400);
    f.rate = 500;
    T_EQ_U64(feed_credit(&f), 17 + 1500);
    f.rate = 1e6;
    T_EQ_U64(feed_credit(&f), NQ_CREDIT_MAX);
}

/* Two devices fed as one: held and fill summed, seconds a shard from their rates together, the
   hungriest one's seconds of work (the first to want more), and it is the one fed next; a failing
   device counts for nothing, and all failing is the worker's GPUs failed. */
T_TEST(test_feed_combines_devices_and_feeds_the_hungriest)
{
    nq_feed_t f = gpu_feed(16);
    f.ndev = 2;
    f.dev[0] = (nq_gpu_load_t){ .held = 10, .fill = 40 };
    f.dev[1] = (nq_gpu_load_t){ .held = 4, .fill = 40 };
    feed_combine(&f);
    T_EQ_U64(f.load.held, 14);
    T_EQ_U64(f.load.fill, 80);
    T_CHECK(f.load.shard_s == 0);       /* rates not known: shards held decide */
    T_EQ_U64(f.hungriest, 1);
    f.dev[0] = (nq_gpu_load_t){ .held = 10, .fill = 40, .shard_s = 0.002, .held_s = 0.02 };
    f.dev[1] = (nq_gpu_load_t){ .held = 4, .fill = 40, .shard_s = 0.004 };
    f.dev[1].held_s = 4 * 0.004;
    feed_combine(&f);
    T_CHECK(f.load.shard_s > 0.00133 && f.load.shard_s < 0.00134);   /* 500 + 250 shards a second */
    T_CHECK(f.load.held_s == f.dev[1].held_s);
    T_EQ_U64(f.hungriest, 1);
    f.dev[1].held_s = 0.5;              /* the slow one holds more seconds: the fast one is fed */
    feed_combine(&f);
    T_EQ_U64(f.hungriest, 0);
    f.dev[0].failing = 1;
    feed_combine(&f);
    T_EQ_U64(f.hungriest, 1);
    T_EQ_U64(f.load.held, 4);
    T_CHECK(!f.failed);
    f.dev[1].failing = 1;
    feed_combine(&f);
    T_CHECK(f.failed);
    T_EQ_U64((uint64_t)(f.hungriest + 1), 0);
    T_EQ_U64(feed_next(&f, 0, 1, 0), FEED_CPU);   /* what is left is the CPU's */
}

/* ---- a pool on the host backend ---- */

typedef struct {
    void *ctx, *pull;
    nq_gpu_t *g, *gs[2];
    uint32_t ng;
    nq_pool_t *p;
} rig_t;

/* ndev engines on the host backend (fast kernel, tasks of 5 rows, launches of 100 tasks at most;
   device i has index i, for NQ_FAULT_GPU_LOST_DEVICE) and a pool of threads over them. */
static void rig_open_devices(rig_t *r, uint32_t threads, uint32_t ndev)
{
    char err[256];
    memset(r, 0, sizeof *r);
    for (uint32_t i = 0; i < ndev; i++) {
        nq_gpu_cfg_t cfg;
        gpu_cfg_defaults(&cfg);
        cfg.device = (int)i;
        cfg.rows_left = 5;
        cfg.max_tasks = 100;
        gpu_cfg_resolve(&cfg);
        gpu_backend_t *b = gpu_host_open(&cfg, err, sizeof err);
        T_CHECK(b != NULL);
        r->gs[i] = gpu_open_backend(b, &cfg, err, sizeof err);
        T_CHECK(r->gs[i] != NULL);
    }
    r->g = r->gs[0];
    r->ng = ndev;
    r->ctx = zmq_ctx_new();
    r->pull = zmq_socket(r->ctx, ZMQ_PULL);
    T_EQ_U64(zmq_bind(r->pull, "inproc://feed-test"), 0);
    r->p = pool_new(r->ctx, threads, "inproc://feed-test", r->gs, ndev, 0, err, sizeof err);
    T_CHECK(r->p != NULL);
}

static void rig_open(rig_t *r, uint32_t threads) { rig_open_devices(r, threads, 1); }

static void rig_close(rig_t *r)
{
    pool_destroy(&r->p);
    for (uint32_t i = 0; i < r->ng; i++)
        gpu_close(&r->gs[i]);
    zmq_close(r->pull);
    zmq_ctx_term(r->ctx);
}

/* Every shard of n at depth, leases 1.., to the pool. */
static size_t submit_all(rig_t *r, int n, int depth, nq_shards_t **lp)
{
    char err[256];
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
    T_CHECK(l != NULL);
    size_t cnt = l ? shards_count(l) : 0;
    for (size_t i = 0; i < cnt; i++) {
        nq_wtask_t *t = calloc(1, sizeof *t);
        t->t.job = 1;
        t->t.shard = i;
        t->t.lease = i + 1;
        t->t.kind = NQ_KIND_COUNT;
        t->t.n = (uint64_t)n;
        t->t.spec_len = shards_get(l, i, t->spec);
        t->t.spec = t->spec;
        pool_submit(r->p, t);
    }
    *lp = l;
    return cnt;
}

typedef struct { size_t ok, errors, gpu, cpu, dup; } tally_t;

/* Takes what ends until every shard did once (120 s at most): each result once, exact (total,
   unique, residues; the CPU kernels' nodes where the CPU counted it), or an error. */
static void collect(rig_t *r, const nq_shards_t *l, size_t cnt, tally_t *tl)
{
    char err[256];
    uint8_t *seen = calloc(cnt, 1);
    memset(tl, 0, sizeof *tl);
    double until = nq_mono() + 120;
    while (tl->ok + tl->errors < cnt && nq_mono() < until) {
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
        for (nq_wtask_t *t = pool_take_done(r->p), *nx; t; t = nx) {
            nx = t->next;
            if (!t->cancelled) {
                size_t i = t->t.shard;
                tl->dup += seen[i]++ > 0;
                if (t->r.status != NQ_RES_OK) {
                    tl->errors++;
                } else {
                    uint8_t b[NQ_MAX_SPEC];
                    size_t len = shards_get(l, i, b);
                    nq_count_result_t want;
                    T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
                    int on_gpu = t->gpu_done != NULL;
                    T_EQ_U64(t->r.total, want.total);
                    T_EQ_U64(t->r.unique, want.unique);
                    T_EQ_U64(t->r.res13, want.res13);
                    T_EQ_U64(t->r.res15, want.res15);
                    if (!on_gpu)
                        T_EQ_U64(t->r.nodes, want.nodes);
                    tl->ok++;
                    tl->gpu += on_gpu;
                    tl->cpu += !on_gpu;
                }
            }
            task_free(t);
        }
    }
    free(seen);
    T_EQ_U64(tl->ok + tl->errors, cnt);
    T_EQ_U64(tl->dup, 0);
}

/* A slow device (each launch 50 ms at least): the GPU holds more than a second of work, and the
   threads the feeders leave count shards on the CPU; every shard exact, each sent once. */
T_TEST(test_pool_counts_on_cpu_and_gpu_exactly)
{
    setenv("NQ_FAULT_GPU_SLOW", "0.05", 1);
    rig_t r;
    rig_open(&r, 4);
    nq_shards_t *l;
    size_t cnt = submit_all(&r, 12, 2, &l);
    tally_t tl;
    collect(&r, l, cnt, &tl);
    nq_pool_stats_t st;
    pool_stats(r.p, &st);
    fprintf(stderr, "  %zu shards: %zu on the GPU, %zu on the CPU; copies %llu (%llu first)\n", cnt, tl.gpu,
            tl.cpu, (unsigned long long)st.copies, (unsigned long long)st.copies_won);
    T_EQ_U64(tl.ok, cnt);
    T_CHECK(tl.gpu > 0 && tl.cpu > 0);
    T_EQ_U64(st.gpu, tl.gpu);
    T_EQ_U64(st.cpu, tl.cpu);
    shards_destroy(&l);
    rig_close(&r);
}

/* CPU counts that never end on their own (paced to a node in 1000 s: NQ_FAULT_PACE), beside a
   slow device (each launch a second at least: the two launches that fill it are two seconds of work
   whatever the machine's speed, so the threads the feeders leave count on the CPU): once nothing
   is queued the GPU takes copies of them, the
   copies end first and decide, and every shard is still sent once, exact. What is checked is the
   mechanism (no CPU count can end first), not a race between the two, which a busy machine moved. */
T_TEST(test_pool_gpu_copies_slow_cpu_counts)
{
    setenv("NQ_FAULT_GPU_SLOW", "1", 1);
    setenv("NQ_FAULT_PACE", "0.001", 1);
    rig_t r;
    rig_open(&r, 4);
    nq_shards_t *l;
    size_t cnt = submit_all(&r, 10, 1, &l);
    tally_t tl;
    collect(&r, l, cnt, &tl);
    nq_pool_stats_t st;
    pool_stats(r.p, &st);
    fprintf(stderr, "  %zu shards: %zu on the GPU, %zu on the CPU; copies %llu (%llu first)\n", cnt, tl.gpu,
            tl.cpu, (unsigned long long)st.copies, (unsigned long long)st.copies_won);
    T_EQ_U64(tl.ok, cnt);
    T_EQ_U64(st.cpu, 0);                /* none ended on the CPU: every one it began, a copy finished */
    T_CHECK(st.copies > 0);
    T_EQ_U64(st.copies_won, st.copies);
    T_EQ_U64(st.gpu, cnt);
    shards_destroy(&l);
    rig_close(&r);
}

/* Two devices, device 1 lost at its 3rd launch: its shards go back to the queue and are counted
   again by device 0 or the CPU; nothing ends as an error, every shard once and exact, device 0
   goes on, and the pool says which failed. */
T_TEST(test_pool_lost_device_recounted_on_the_others)
{
    setenv("NQ_FAULT_GPU_SLOW", "0.05", 1);
    setenv("NQ_FAULT_GPU_LOST", "3", 1);
    setenv("NQ_FAULT_GPU_LOST_DEVICE", "1", 1);
    rig_t r;
    rig_open_devices(&r, 4, 2);
    nq_shards_t *l;
    size_t cnt = submit_all(&r, 12, 2, &l);
    tally_t tl;
    collect(&r, l, cnt, &tl);
    nq_pool_stats_t st;
    nq_pool_dev_t d0, d1;
    pool_stats(r.p, &st);
    pool_dev_stats(r.p, 0, &d0);
    pool_dev_stats(r.p, 1, &d1);
    fprintf(stderr, "  %zu shards: device 0 %llu, device 1 %llu, CPU %llu; %llu counted again\n", cnt,
            (unsigned long long)d0.shards, (unsigned long long)d1.shards, (unsigned long long)st.cpu,
            (unsigned long long)st.recounts);
    T_EQ_U64(tl.errors, 0);
    T_EQ_U64(tl.ok, cnt);
    T_CHECK(st.recounts > 0);
    T_CHECK(d1.failed && !d0.failed);
    T_CHECK(d0.shards > 0);
    T_EQ_U64(d0.shards + d1.shards + st.cpu, cnt);
    shards_destroy(&l);
    rig_close(&r);
}

/* The device lost at its 10th launch while the CPU counts: the shards the GPU held end as errors,
   the CPU's (and those it takes after) end exact; each once. */
T_TEST(test_pool_lost_gpu_errors_its_shards_cpu_finishes)
{
    char err[256];
    setenv("NQ_FAULT_GPU_SLOW", "0.05", 1);
    setenv("NQ_FAULT_GPU_LOST", "10", 1);
    setenv("NQ_FAULT_PACE", "200000", 1);
    rig_t r;
    rig_open(&r, 4);
    nq_shards_t *l;
    size_t cnt = submit_all(&r, 12, 2, &l);
    tally_t tl;
    collect(&r, l, cnt, &tl);
    fprintf(stderr, "  %zu shards: %zu on the GPU, %zu on the CPU, %zu errors\n", cnt, tl.gpu, tl.cpu,
            tl.errors);
    T_WAIT_UNTIL(gpu_failed(r.g, err, sizeof err), 30);  /* said after its last shard ended */
    T_CHECK(tl.errors > 0 && tl.cpu > 0);
    shards_destroy(&l);
    rig_close(&r);
}

T_RUN_ALL()
