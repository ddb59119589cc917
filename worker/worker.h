/*
 * The worker: connects to a broker (DEALER), asks for shards enough to keep its threads (and its
 * GPU) busy (feed.c), runs them on its thread pool,
 * heartbeats with progress, and keeps every result in an outbox until the
 * broker has acknowledged it — resending after any reconnect.
 */
#ifndef NQ_WORKER_H
#define NQ_WORKER_H

#include "gpu.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *connect;         /* broker endpoint */
    void *zmq_ctx;               /* NULL: own context; else shared (inproc in `nq run`) */
    uint32_t threads;            /* 0 = online cores */
    uint32_t prefetch;           /* shards queued beyond the running ones (NQ_PREFETCH_AUTO: one a thread,
                                    feed.c says why) */
    const char *key_file;        /* own CURVE key pair */
    const char *broker_key_file; /* broker's public key */
    const char *id;              /* NULL: host:pid:random */
    nq_gpu_t *const *gpus;       /* count shards on these GPUs, one engine a device (the caller's,
                                    opened and closed by it); ngpu 0: on the threads */
    uint32_t ngpu;
    int gpu_only;                /* with a GPU: the threads only feed it, counting nothing themselves */
} nq_worker_cfg_t;

#define NQ_PREFETCH_AUTO UINT32_MAX

typedef struct nq_worker nq_worker_t;

void worker_cfg_defaults(nq_worker_cfg_t *cfg);
nq_worker_t *worker_new(const nq_worker_cfg_t *cfg, char *err, size_t errlen);
/* Works until *stop: then stops taking work, hands back what it holds (BYE) and returns 0. With
   *stop == WORKER_STOP_BROKER_GONE (an embedded broker that ended) it waits for no ACK first.
   Returns 3 when the broker refuses it (bad key) or its last GPU failed (after reporting the
   shards that GPU held as errors and finishing those it counts on the CPU): err says why. A GPU
   that fails while another goes on is logged (worker.gpu_failed) and its shards counted again. */
#define WORKER_STOP_BROKER_GONE 2
int worker_run(nq_worker_t *w, const atomic_int *stop, char *err, size_t errlen);
/* From another thread, after setting *stop: worker_run sees it now, not at its next 50 ms wake-up. */
void worker_wake(nq_worker_t *w);
void worker_destroy(nq_worker_t **w);

#endif
