/*
 * The worker's private parts:
 *   worker.c   the socket loop: hello, credit, tasks, acks, heartbeats, reconnects, and the
 *              outbox (results kept until the broker acknowledges them)
 *   pool.c     the compute threads and the tasks they run; with a GPU, they feed it and count on
 *              the CPU beside it
 *   feed.c     what a thread does next in a GPU worker, its feeders and its credit (pure)
 *   run_task.c one task through its kernel (count, solve, enumerate; count on the GPU)
 *   devices.c  a GPU worker's devices as its heartbeat carries them
 * Its command (nq worker) is cli/cmd_worker.c.
 */
#ifndef NQ_WORKER_IMPL_H
#define NQ_WORKER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "proto.h"
#include "worker.h"

typedef struct nq_wtask {
    nq_task_t t;                      /* t.spec points at spec below */
    uint8_t spec[NQ_MAX_SPEC];
    atomic_int cancel;
    _Atomic uint64_t progress;
    nq_result_t r;                    /* filled when done; r.payload points at payload */
    uint8_t *payload;
    uint32_t *cols;                   /* solve: the solution (r.sol_n rows) */
    int cancelled;                    /* finished because of a CANCEL: nothing to send */
    double sent_at;                   /* outbox: last time sent, or its upload last moved */
    uint32_t sends;                   /* ... and how often */
    /* a solution's upload (worker.c): rows sent, rows the broker acknowledged, when it began, and
       whether the RESULT (after the last part) went */
    uint64_t sol_sent, sol_acked;
    double upload_at;
    int result_sent;
    double started;                   /* when it began (GPU tasks end on another thread) */
    void (*gpu_done)(void *ud, struct nq_wtask *t);   /* GPU tasks: called once it ended */
    void *gpu_ud;
    struct nq_wtask *next, *prev;     /* prev: in the pool's queue only */
    /* a count on the CPU in a GPU worker, and the copy the GPU may take of it (pool.c): each
       points at the other until the first to end decides */
    int on_cpu, copied, is_copy;      /* copied: it has had a copy; is_copy: it is one */
    int lost;                         /* the copy ended first: this one sends nothing */
    int dev;                          /* on the GPU: the device it went to (an index of the pool's) */
    struct nq_wtask *copy, *orig;
} nq_wtask_t;

typedef struct nq_pool nq_pool_t;

/* gpus[0 .. ngpu) (none: ngpu 0): where count tasks go, the hungriest device first, fed by the
   threads, which count on the CPU too unless gpu_only; the pool does not own them. A device that
   fails while another goes on has its shards counted again (feed.c); the last one's end as errors. */
nq_pool_t *pool_new(void *zmq_ctx, uint32_t threads, const char *notify_ep, nq_gpu_t *const *gpus,
                    uint32_t ngpu, int gpu_only, char *err, size_t errlen);
void pool_destroy(nq_pool_t **p);
void pool_submit(nq_pool_t *p, nq_wtask_t *t);
nq_wtask_t *pool_take_done(nq_pool_t *p);           /* finished tasks, as a list */
/* Stops the tasks of job (lease 0: all of them; else that lease only): queued ones go, running
   ones end at their next poll and send nothing. */
void pool_cancel(nq_pool_t *p, uint64_t job, uint64_t lease);
nq_wtask_t *pool_take_queued(nq_pool_t *p);         /* not started: for handing back */
void pool_cancel_all(nq_pool_t *p);
uint32_t pool_busy(nq_pool_t *p);                    /* queued + running */
/* Shards each engine counted, and the GPU's copies of CPU counts (taken, and ended first). */
typedef struct { uint64_t gpu, cpu, copies, copies_won, recounts; } nq_pool_stats_t;
void pool_stats(nq_pool_t *p, nq_pool_stats_t *st);
/* Device i's part: shards it counted (copies that won included), their nodes, the shards it holds
   now and whether it failed. */
typedef struct { uint64_t shards, nodes; uint32_t held; int failed; } nq_pool_dev_t;
void pool_dev_stats(nq_pool_t *p, uint32_t i, nq_pool_dev_t *d);
uint32_t pool_progress(nq_pool_t *p, nq_hb_item_t *items, uint32_t max);   /* running, queued, done */
/* Heartbeat items for the tasks of `list`, written from items[n] on, at most max in all: the new n. */
uint32_t task_items(const nq_wtask_t *list, nq_hb_item_t *items, uint32_t n, uint32_t max);

/* What the pool and the socket loop measured, for feed.c. */
typedef struct {
    uint32_t threads, prefetch;
    int gpu;                          /* a GPU worker */
    int gpu_only;                     /* its threads only feed the GPU */
    int failed;                       /* its GPUs failed, every one */
    double feed_s;                    /* a feeder's seconds a shard (queueing it, its host part); 0 unknown */
    uint32_t ndev;                    /* its devices (failed ones too) */
    nq_gpu_load_t dev[NQ_GPU_MAX_DEVICES];   /* each engine's (gpu.h) */
    nq_gpu_load_t load;               /* theirs together (feed_combine) */
    int hungriest;                    /* the device to feed next (gpu_load_hungriest); -1 none */
    double rate;                      /* shards a second the worker finished lately; 0 unknown */
    double busy_rate;                 /* shards a second its threads finish when none waits; 0 unknown */
    double rtt;                       /* the broker's round trip, seconds; 0 unknown */
    int prefetch_auto;                /* the prefetch is the default: it grows to cover the round trip */
} nq_feed_t;
/* Fills f's threads, gpu, gpu_only, failed, feed_s, dev, load and hungriest from p. */
void pool_feed(nq_pool_t *p, nq_feed_t *f);
/* f->load, failed and hungriest from f->dev[0 .. ndev): the live devices as one, consuming shards at
   their rates together (held and fill summed, seconds a shard 1 / the sum of their rates), holding
   the hungriest one's seconds of work (the first to want more). */
void feed_combine(nq_feed_t *f);

#define FEED_AHEAD_S 1.0              /* the GPU's work held before a thread counts on the CPU */
enum { FEED_WAIT = 0, FEED_GPU, FEED_CPU, FEED_COPY };
/* Threads kept for feeding the GPU, and those that may count on the CPU. */
uint32_t feed_feeders(const nq_feed_t *f);
uint32_t feed_cpu_max(const nq_feed_t *f);
/* What a free thread does: feed the GPU the oldest queued shard, count the newest on the CPU, give
   the GPU a copy of a CPU count (copyable: one runs without a copy), or wait. */
int feed_next(const nq_feed_t *f, uint32_t cpu_running, int queued, int copyable);
/* The credit to ask the broker for, and a worker's default prefetch. */
uint32_t feed_credit(const nq_feed_t *f);
uint32_t feed_prefetch(uint32_t threads);

/* Each device's shards a second, measured from the pool's counts (devices.c). */
typedef struct {
    double at;                        /* when last measured (0: never) */
    uint64_t seen[NQ_MAX_HB_DEVICES];
    double rate[NQ_MAX_HB_DEVICES];
} nq_dev_rates_t;
/* Measures again when a second or more has passed since the last time. */
void devices_measure(nq_dev_rates_t *r, nq_pool_t *p, uint32_t n, double now);
/* hb's devices: gpus[0 .. n)'s names, states, queued shards, shards counted and rates. */
void devices_heartbeat(const nq_dev_rates_t *r, nq_pool_t *p, nq_gpu_t *const *gpus, uint32_t n,
                       nq_heartbeat_t *hb);
/* src as a name a heartbeat may carry: text, at most cap - 1 bytes, cut between characters. */
void device_name_copy(char *dst, size_t cap, const char *src);

void task_run(nq_wtask_t *t);                        /* run_task.c */
/* A count task on the GPU: its host part now, the rest on the GPU; done(ud, t) once it ended
   (on the GPU engine's thread, or on this one). */
void task_run_gpu(nq_wtask_t *t, nq_gpu_t *g, void (*done)(void *ud, nq_wtask_t *t), void *ud);
void task_free(nq_wtask_t *t);

#endif
