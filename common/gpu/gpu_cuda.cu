/*
 * The GPU search (gpu_search.h) built by nvcc as libnq_cuda.so: the thin CUDA wrapper of the same
 * kernel, for measuring where NVIDIA's OpenCL cannot run. Built only where nvcc exists (CMake
 * target nq_cuda, or tests/gpu/device_check.sh), with the same compile-time parameters the
 * OpenCL build gets:
 *   nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DNQ_WG=128 -DNQ_STACK=11 -DNQ_STACK_LOCAL=1 \
 *        -DNQ_CHUNKED=0 -Icommon/gpu -o libnq_cuda.so common/gpu/gpu_cuda.cu
 * and loaded by nq with NQ_GPU_CUDA=/path/libnq_cuda.so (gpu_cuda.c).
 */
#include "gpu_search.h"
#include "gpu_cuda.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 2

__global__ void __launch_bounds__(NQ_WG)
nq_count_cuda(const nq_u32 *tables, const nq_gpu_chunk_t *chunks, nq_u32 nchunks, const nq_gpu_task_t *tasks,
              const nq_u32 *task_tab, nq_u32 ntasks, nq_gpu_out_t *out, nq_u32 *counter)
{
#if NQ_STACK_LOCAL
    __shared__ nq_u32 stk[4 * NQ_STACK * NQ_WG];
#else
    nq_u32 stk[4 * NQ_STACK];
#endif
#if NQ_CHUNKED
    __shared__ nq_gpu_table_t tab;
    __shared__ nq_u32 cur, next;
    gpu_group_run(tables, chunks, nchunks, tasks, out, counter, &tab, &cur, &next, stk);
#else
    gpu_free_run(tables, task_tab, ntasks, tasks, out, counter, stk);
#endif
}

struct cuda_slot {
    void *tables, *chunks, *tasks, *task_tab, *out;
    size_t cap_tables, cap_chunks, cap_tasks, cap_tab;
    nq_u32 *counter;
    cudaEvent_t done;
    int pending;
};

struct nq_cuda {
    int device;
    unsigned blocks;
    cudaStream_t stream[SLOTS];        /* one a slot, so launches may overlap */
    cuda_slot slot[SLOTS];
};

static int fail(char *err, size_t errlen, const char *what, cudaError_t e)
{
    snprintf(err, errlen, "GPU (CUDA): %s failed: %s (%d)", what, cudaGetErrorString(e), (int)e);
    return -1;
}

extern "C" int nq_cuda_abi(unsigned *wg, int *stack, int *chunked, int *pairs)
{
    *wg = NQ_WG;
    *stack = NQ_STACK;
    *chunked = NQ_CHUNKED;
    *pairs = NQ_PAIRS;
    return NQ_CUDA_ABI;
}

extern "C" int nq_cuda_open(int device, unsigned groups_per_sm, nq_cuda_t **out, char *name, size_t namelen,
                            char *err, size_t errlen)
{
    cudaDeviceProp p;
    cudaError_t e;
    int n = 0;
    if ((e = cudaGetDeviceCount(&n)) != cudaSuccess)
        return fail(err, errlen, "cudaGetDeviceCount", e);
    if (device < 0)
        device = 0;
    if (device >= n) {
        snprintf(err, errlen, "GPU (CUDA): device %d: there are %d", device, n);
        return -1;
    }
    if ((e = cudaSetDevice(device)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&p, device)) != cudaSuccess)
        return fail(err, errlen, "cudaSetDevice", e);
    nq_cuda_t *c = (nq_cuda_t *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->device = device;
    c->blocks = (unsigned)p.multiProcessorCount * (groups_per_sm ? groups_per_sm : 8);
    for (int k = 0; k < SLOTS; k++)
        if ((e = cudaStreamCreate(&c->stream[k])) != cudaSuccess ||
            (e = cudaMalloc((void **)&c->slot[k].counter, sizeof(nq_u32))) != cudaSuccess ||
            (e = cudaEventCreate(&c->slot[k].done)) != cudaSuccess) {
            nq_cuda_close(c);
            return fail(err, errlen, "cudaStreamCreate/cudaMalloc/cudaEventCreate", e);
        }
    snprintf(name, namelen, "%s (CUDA, sm_%d%d)", p.name, p.major, p.minor);
    *out = c;
    return 0;
}

/* *buf holds at least n elements of size each, grown as launches need. */
static cudaError_t room(void **buf, size_t *cap, size_t n, size_t each)
{
    if (*buf && n <= *cap)
        return cudaSuccess;
    if (*buf)
        cudaFree(*buf);
    *buf = NULL;
    size_t want = n < 1024 ? 1024 : n;
    cudaError_t e = cudaMalloc(buf, want * each);
    *cap = e == cudaSuccess ? want : 0;
    return e;
}

extern "C" int nq_cuda_launch(nq_cuda_t *c, int k, const void *tables, unsigned ntables, const void *chunks,
                              unsigned nchunks, const void *tasks, const unsigned *task_tab, unsigned ntasks,
                              void *out, char *err, size_t errlen)
{
    cuda_slot *s = &c->slot[k];
    cudaStream_t st = c->stream[k];
    size_t cap_out = s->cap_tasks;
    cudaError_t e;
    if ((e = room(&s->tables, &s->cap_tables, ntables, sizeof(nq_gpu_table_t))) != cudaSuccess ||
        (e = room(&s->chunks, &s->cap_chunks, nchunks, sizeof(nq_gpu_chunk_t))) != cudaSuccess ||
        (e = room(&s->task_tab, &s->cap_tab, ntasks, sizeof(nq_u32))) != cudaSuccess ||
        (e = room(&s->tasks, &s->cap_tasks, ntasks, sizeof(nq_gpu_task_t))) != cudaSuccess ||
        (e = room(&s->out, &cap_out, ntasks, sizeof(nq_gpu_out_t))) != cudaSuccess)
        return fail(err, errlen, "cudaMalloc", e);
    cudaMemcpyAsync(s->tables, tables, ntables * sizeof(nq_gpu_table_t), cudaMemcpyHostToDevice, st);
    cudaMemcpyAsync(s->chunks, chunks, nchunks * sizeof(nq_gpu_chunk_t), cudaMemcpyHostToDevice, st);
    cudaMemcpyAsync(s->tasks, tasks, ntasks * sizeof(nq_gpu_task_t), cudaMemcpyHostToDevice, st);
    cudaMemcpyAsync(s->task_tab, task_tab, ntasks * sizeof(nq_u32), cudaMemcpyHostToDevice, st);
    cudaMemsetAsync(s->counter, 0, sizeof(nq_u32), st);
    unsigned work = NQ_CHUNKED ? nchunks : (ntasks + NQ_WG - 1) / NQ_WG;   /* no block without work */
    unsigned blocks = c->blocks < work ? c->blocks : work;
    nq_count_cuda<<<blocks, NQ_WG, 0, st>>>((const nq_u32 *)s->tables, (const nq_gpu_chunk_t *)s->chunks,
                                            nchunks, (const nq_gpu_task_t *)s->tasks,
                                            (const nq_u32 *)s->task_tab, ntasks, (nq_gpu_out_t *)s->out,
                                            s->counter);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return fail(err, errlen, "the kernel launch", e);
    cudaMemcpyAsync(out, s->out, ntasks * sizeof(nq_gpu_out_t), cudaMemcpyDeviceToHost, st);
    if ((e = cudaEventRecord(s->done, st)) != cudaSuccess)
        return fail(err, errlen, "cudaEventRecord", e);
    s->pending = 1;
    return 0;
}

extern "C" int nq_cuda_wait(nq_cuda_t *c, int k, char *err, size_t errlen)
{
    cuda_slot *s = &c->slot[k];
    if (!s->pending) {
        snprintf(err, errlen, "GPU (CUDA): no launch to wait for");
        return -1;
    }
    s->pending = 0;
    cudaError_t e = cudaEventSynchronize(s->done);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    return e == cudaSuccess ? 0 : fail(err, errlen, "the launch", e);
}

extern "C" void nq_cuda_close(nq_cuda_t *c)
{
    if (!c)
        return;
    for (int k = 0; k < SLOTS; k++) {
        cuda_slot *s = &c->slot[k];
        if (c->stream[k])
            cudaStreamSynchronize(c->stream[k]);
        cudaFree(s->tables);
        cudaFree(s->chunks);
        cudaFree(s->tasks);
        cudaFree(s->task_tab);
        cudaFree(s->out);
        cudaFree(s->counter);
        if (s->done)
            cudaEventDestroy(s->done);
        if (c->stream[k])
            cudaStreamDestroy(c->stream[k]);
    }
    free(c);
}
