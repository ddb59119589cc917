/*
 * The ABI between nq and libnq_cuda.so, the GPU kernels built by nvcc (gpu_cuda.cu), which nq loads
 * where NQ_GPU_CUDA names it (gpu_cuda.c). The same searches (gpu_fast.h, gpu_search.h), the same
 * launches; only the runtime differs, and the fast kernel's loop may be CUDA's own (a warp vote
 * ends a run of steps, and the step may be inline PTX). Plain C on both sides.
 */
#ifndef NQ_GPU_CUDA_H
#define NQ_GPU_CUDA_H

#include <stddef.h>

#define NQ_CUDA_ABI 4

/* The fast kernel's loop in libnq_cuda.so (NQ_CUDA_LOOP): */
#define NQ_CUDA_LOOP_PORTABLE 0   /* gpu_fast_run, as OpenCL runs it: a refill test every step */
#define NQ_CUDA_LOOP_VOTE 1       /* steps until a warp vote says a lane's stack is empty */
#define NQ_CUDA_LOOP_PTX 2        /* the same, each step one block of inline PTX */

typedef struct nq_cuda nq_cuda_t;

/* What the library was compiled with. */
typedef struct {
    unsigned wg;        /* NQ_WG: threads a block */
    int fast;           /* NQ_FAST: 1 the fast kernel, 0 parity */
    int stack;          /* levels of stack: NQ_FAST_STACK, or NQ_STACK (parity) */
    int loop;           /* fast: NQ_CUDA_LOOP */
    int chunked, pairs; /* parity: NQ_CHUNKED, NQ_PAIRS */
} nq_cuda_build_t;

#ifdef __cplusplus
extern "C" {
#endif

/* NQ_CUDA_ABI, and the build's parameters into *b. */
int nq_cuda_abi(nq_cuda_build_t *b);
/* Device `device` (-1: 0), at most groups_per_sm resident blocks a multiprocessor, the fast kernel's
   stack of `levels` levels a thread: 0 with *out, the device's name and the blocks a launch starts,
   or -1 with a reason. */
int nq_cuda_open(int device, unsigned groups_per_sm, int levels, nq_cuda_t **out, char *name, size_t namelen,
                 unsigned *blocks, char *err, size_t errlen);
/* gpu_backend_t's launch and wait (gpu_impl.h): arrays of nq_gpu_table_t, nq_gpu_chunk_t,
   nq_gpu_task_t, the tasks' tables (uint32) and nq_gpu_out_t, valid until the wait. */
int nq_cuda_launch(nq_cuda_t *c, int slot, const void *tables, unsigned ntables, const void *chunks,
                   unsigned nchunks, const void *tasks, const unsigned *task_tab, unsigned ntasks, void *out,
                   char *err, size_t errlen);
int nq_cuda_wait(nq_cuda_t *c, int slot, char *err, size_t errlen);
void nq_cuda_close(nq_cuda_t *c);

#ifdef __cplusplus
}
#endif

#endif
