/*
 * The GPU layer's private parts:
 *   gpu_search.h  the parity search (OpenCL C, C, CUDA): the CPU kernels' nodes, node for node
 *   gpu_fast.h    the fast search (the same three): a uniform loop, nodes of its own
 *   gpu_kernel.cl the OpenCL entry point of either
 *   gpu_expand.c  a plan's table, and the host's walk of a shard's first levels into tasks
 *   gpu_shard.c   a shard split between the GPU and the host, and the result folded back
 *   gpu_engine.c  the engine: shards in, launches out, results folded per shard
 *   gpu_cfg.c     the engine's parameters (defaults, environment)
 *   gpu_cl.c      the OpenCL backend: device, program (built from the embedded source), launches
 *   gpu_host.c    either kernel compiled as C and run on the host (tests, and the reference)
 *   gpu_cuda.c    the CUDA backend: libnq_cuda.so (gpu_cuda.cu, by nvcc) loaded where NQ_GPU_CUDA names it
 * A backend runs launches; everything else is the engine's.
 */
#ifndef NQ_GPU_IMPL_H
#define NQ_GPU_IMPL_H

#include "gpu.h"
#include "gpu_search.h"
#include "gpu_fast.h"

/* One launch: tables, chunks and tasks in, one output per task. Arrays stay valid until wait. */
typedef struct {
    const nq_gpu_table_t *tables;
    uint32_t ntables;
    const nq_gpu_chunk_t *chunks;
    uint32_t nchunks;
    const nq_gpu_task_t *tasks;
    const uint32_t *task_tab;       /* the table of each task (NQ_CHUNKED 0) */
    uint32_t ntasks;
    nq_gpu_out_t *out;
} gpu_launch_t;

#define NQ_GPU_SLOTS 2   /* launches in flight: one runs while the host fills the next */

typedef struct gpu_backend gpu_backend_t;
struct gpu_backend {
    /* Queues launch l on slot (0 .. NQ_GPU_SLOTS-1) and returns; 0, or -1 with a reason. */
    int (*launch)(gpu_backend_t *b, int slot, const gpu_launch_t *l, char *err, size_t errlen);
    /* Waits for slot's launch; its outputs are in l->out after 0; -1 with a reason. */
    int (*wait)(gpu_backend_t *b, int slot, char *err, size_t errlen);
    void (*destroy)(gpu_backend_t *b);
    char name[200];                 /* "NAME (PLATFORM)" */
    const char *backend;            /* "OpenCL", "CUDA", "host" */
    char params[200];               /* what it was built with, one line */
    uint32_t lanes;                 /* work-items a launch runs at once (groups x work-group) */
    int cpu;                        /* a CPU device (OpenCL on a CPU, as pocl; the host backend) */
};

/* The OpenCL device cfg names, with the kernel built for it. NULL with a reason. */
gpu_backend_t *gpu_cl_open(const nq_gpu_cfg_t *cfg, char *err, size_t errlen);
/* libnq_cuda.so at path (gpu_cuda.h), for the device cfg names. NULL with a reason. */
gpu_backend_t *gpu_cuda_open(const char *path, const nq_gpu_cfg_t *cfg, char *err, size_t errlen);
/* The kernel as C on the calling thread, one work-item: exact and slow; for tests. */
gpu_backend_t *gpu_host_open(const nq_gpu_cfg_t *cfg, char *err, size_t errlen);
/* An engine over backend b (which it owns from then on, also on failure). */
nq_gpu_t *gpu_open_backend(gpu_backend_t *b, const nq_gpu_cfg_t *cfg, char *err, size_t errlen);

/* Tests: fn(ud) runs on the submitting thread just before a shard's host part, once its GPU
   part is queued (NULL: none). Set before any shard is submitted. */
void gpu_set_host_hook(nq_gpu_t *g, void (*fn)(void *ud), void *ud);

/* cfg with its defaults filled in (gpu_cfg.c). */
void gpu_cfg_resolve(nq_gpu_cfg_t *cfg);
/* -1 with a reason when the settings do not go together (a parity setting with the fast kernel). */
int gpu_cfg_check(const nq_gpu_cfg_t *cfg, char *err, size_t errlen);

#endif
