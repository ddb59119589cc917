/*
 * The worker's private parts:
 *   worker.c   the socket loop: hello, credit, tasks, acks, heartbeats, reconnects, and the
 *              outbox (results kept until the broker acknowledges them)
 *   pool.c     the compute threads and the tasks they run; with a GPU, count tasks go to it
 *   run_task.c one task through its kernel (count, solve, enumerate; count on the GPU)
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
    double sent_at;                   /* outbox: last time sent */
    double started;                   /* when it began (GPU tasks end on another thread) */
    void (*gpu_done)(void *ud, struct nq_wtask *t);   /* GPU tasks: called once it ended */
    void *gpu_ud;
    struct nq_wtask *next;
} nq_wtask_t;

typedef struct nq_pool nq_pool_t;

/* gpu (may be NULL): where count tasks go; the pool does not own it. */
nq_pool_t *pool_new(void *zmq_ctx, uint32_t threads, const char *notify_ep, nq_gpu_t *gpu, char *err,
                    size_t errlen);
void pool_destroy(nq_pool_t **p);
void pool_submit(nq_pool_t *p, nq_wtask_t *t);
nq_wtask_t *pool_take_done(nq_pool_t *p);           /* finished tasks, as a list */
/* Stops the tasks of job (lease 0: all of them; else that lease only): queued ones go, running
   ones end at their next poll and send nothing. */
void pool_cancel(nq_pool_t *p, uint64_t job, uint64_t lease);
nq_wtask_t *pool_take_queued(nq_pool_t *p);         /* not started: for handing back */
void pool_cancel_all(nq_pool_t *p);
uint32_t pool_busy(nq_pool_t *p);                    /* queued + running */
uint32_t pool_progress(nq_pool_t *p, nq_hb_item_t *items, uint32_t max);   /* running, queued, done */
/* Heartbeat items for the tasks of `list`, written from items[n] on, at most max in all: the new n. */
uint32_t task_items(const nq_wtask_t *list, nq_hb_item_t *items, uint32_t n, uint32_t max);

void task_run(nq_wtask_t *t);                        /* run_task.c */
/* A count task on the GPU: its host part now, the rest on the GPU; done(ud, t) once it ended
   (on the GPU engine's thread, or on this one). */
void task_run_gpu(nq_wtask_t *t, nq_gpu_t *g, void (*done)(void *ud, nq_wtask_t *t), void *ud);
void task_free(nq_wtask_t *t);

#endif
