/*
 * The ABI between nq and libnq_cuda.so, the GPU kernel built by nvcc (gpu_cuda.cu), which nq loads
 * where NQ_GPU_CUDA names it (gpu_cuda.c): a measurement fallback for a machine whose NVIDIA
 * OpenCL cannot run (a sandbox that passes CUDA's calls and not OpenCL's). The same search
 * (gpu_search.h), the same launches; only the runtime differs. Plain C on both sides.
 */
#ifndef NQ_GPU_CUDA_H
#define NQ_GPU_CUDA_H

#include <stddef.h>

#define NQ_CUDA_ABI 3

typedef struct nq_cuda nq_cuda_t;

#ifdef __cplusplus
extern "C" {
#endif

/* NQ_CUDA_ABI, and the NQ_WG, NQ_STACK, NQ_CHUNKED and NQ_PAIRS the library was compiled with. */
int nq_cuda_abi(unsigned *wg, int *stack, int *chunked, int *pairs);
/* Device `device` (-1: 0), persistent blocks per multiprocessor: 0 with *out and the device's
   name, or -1 with a reason. */
int nq_cuda_open(int device, unsigned groups_per_sm, nq_cuda_t **out, char *name, size_t namelen, char *err,
                 size_t errlen);
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
