/*
 * The GPU searches (gpu_fast.h, gpu_search.h) built by nvcc as libnq_cuda.so, loaded by nq where
 * NQ_GPU_CUDA names it (gpu_cuda.c). Built only where nvcc exists (CMake target nq_cuda, or
 * tests/gpu/device_check.sh), with the compile-time parameters the OpenCL build gets:
 *   nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DNQ_FAST=1 -DNQ_WG=128 -DNQ_FAST_STACK=13 \
 *        -DNQ_CUDA_LOOP=2 -Icommon/gpu -o libnq_cuda.so common/gpu/gpu_cuda.cu
 * (parity: -DNQ_FAST=0 -DNQ_STACK=11 -DNQ_STACK_LOCAL=1 -DNQ_CHUNKED=0 -DNQ_PAIRS=0).
 *
 * The fast kernel's loop is one of three (NQ_CUDA_LOOP, gpu_cuda.h): the portable one, which tests
 * at every step whether the lane's stack is empty and refills it (a divergent branch, taken
 * rarely); or runs of steps ended by a warp vote when some lane's stack is empty, after which
 * those lanes refill and the warp goes on (the run's only branch is its back edge, uniform);
 * with the step in C or as inline PTX (one predicated block, as the fastest public counter's).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NQ_FAST
#define NQ_FAST 1
#endif
#ifndef NQ_CUDA_LOOP
#define NQ_CUDA_LOOP 2
#endif

#if NQ_FAST
/* A lane's next task index: one atomic for the lanes of its warp that take one now. */
__device__ static __forceinline__ unsigned gpu_cuda_take(unsigned *counter)
{
    unsigned mask = __activemask(), lane = threadIdx.x & 31u, base = 0;
    int leader = __ffs(mask) - 1;
    if ((int)lane == leader)
        base = atomicAdd(counter, (unsigned)__popc(mask));
    base = __shfl_sync(mask, base, leader);
    return base + (unsigned)__popc(mask & ((1u << lane) - 1u));
}
#define NQ_FAST_TAKE(counter) gpu_cuda_take(counter)
#endif

#include "gpu_cuda.h"
#if NQ_CUDA_LOOP != NQ_CUDA_LOOP_PORTABLE
#define NQ_FAST_OWN_RUN 1               /* gpu_fast.h leaves its loop out: ours is below */
#endif
#include "gpu_search.h"
#include "gpu_fast.h"

#define SLOTS 2

#if NQ_FAST
#if NQ_CUDA_LOOP == NQ_CUDA_LOOP_PTX
/*
 * NQ_FAST_STEP as one block of PTX, a byte address for the top (tp) and the table (tb0, the lane's
 * table less its root's level): no branch, every store and move of the top predicated. Steps are
 * counted by the loop around it (every lane of the warp steps as often).
 */
#define NQ_CUDA_STEP(tp, tb0, ln, sols)                                                            \
    asm volatile("{\n\t"                                                                           \
                 ".reg .u32 o, c, l, r, b, w, s, t, a, x;\n\t"                                     \
                 ".reg .u64 q;\n\t"                                                                \
                 ".reg .pred pl, pz, pe;\n\t"                                                      \
                 "ld.shared.v4.u32 {o, c, l, r}, [%0];\n\t"   /* the top entry */                  \
                 "neg.s32 b, o;\n\t"                                                               \
                 "and.b32 b, o, b;\n\t"                       /* its lowest open cell */           \
                 "xor.b32 o, o, b;\n\t"                                                            \
                 "st.shared.u32 [%0], o;\n\t"                 /* the rest, back */                 \
                 "popc.b32 t, c;\n\t"                                                              \
                 "mad.lo.u32 a, t, %5, %2;\n\t"               /* its level's table word */         \
                 "ld.shared.u32 w, [a];\n\t"                                                       \
                 "shr.b32 s, w, %3;\n\t"                      /* the row distance */               \
                 "or.b32 c, c, b;\n\t"                                                             \
                 "or.b32 l, l, b;\n\t"                                                             \
                 "shl.b32 l, l, s;\n\t"                                                            \
                 "or.b32 r, r, b;\n\t"                                                             \
                 "shr.b32 r, r, s;\n\t"                                                            \
                 "lop3.b32 x, c, l, r, 0x1;\n\t"              /* ~c & ~l & ~r */                   \
                 "and.b32 x, x, w;\n\t"                       /* the child's cells */              \
                 "setp.eq.u32 pl, t, %4;\n\t"                 /* the children are leaves */        \
                 "setp.eq.or.u32 pz, x, 0, pl;\n\t"           /* nothing to push */                \
                 "popc.b32 a, x;\n\t"                                                              \
                 "selp.u32 a, a, 0, pl;\n\t"                                                       \
                 "cvt.u64.u32 q, a;\n\t"                                                           \
                 "add.u64 %1, %1, q;\n\t"                     /* solutions */                      \
                 "setp.eq.u32 pe, o, 0;\n\t"                                                       \
                 "@pe sub.u32 %0, %0, %6;\n\t"                /* the parent is spent: pop */       \
                 "@!pz add.u32 %0, %0, %6;\n\t"                                                    \
                 "@!pz st.shared.v4.u32 [%0], {x, c, l, r};\n\t"                                   \
                 "}"                                                                               \
                 : "+r"(tp), "+l"(sols)                                                            \
                 : "r"(tb0), "r"((ln).n), "r"((ln).lastpc), "n"(NQ_WG * 4), "n"(NQ_WG * 16)        \
                 : "memory")
#endif

#if NQ_CUDA_LOOP != NQ_CUDA_LOOP_PORTABLE
/* gpu_fast_run with CUDA's loop: lanes whose stack is empty refill (or leave, at the launch's end),
   then the warp steps until a vote finds an empty stack again. */
__device__ static void gpu_cuda_fast_run(const nq_u32 *tables, const nq_u32 *task_tab, nq_u32 ntasks,
                                         const nq_gpu_task_t *tasks, nq_gpu_out_t *out, nq_u32 *next_task,
                                         uint4 *stk, nq_u32 *tab)
{
    nq_u32 lid = threadIdx.x;
    uint4 *mine = stk + lid;
    int toff = 0;
    nq_fast_lane_t ln;
    nq_u64 it = 0, it0 = 0, sols = 0;  /* it: the warp's steps so far; it0: when this task began */
    nq_u32 cur = ntasks, next = NQ_FAST_TAKE(next_task);
    ln.top = -1;
    ln.n = ln.base = ln.lastpc = 0;
    for (;;) {
        while (ln.top < 0) {
            if (cur < ntasks) {
                out[cur].nodes = it - it0;
                out[cur].sols = sols;
            }
            it0 = it;
            sols = 0;
            cur = next;
            if (cur >= ntasks)
                return;
            next = NQ_FAST_TAKE(next_task);
            const nq_gpu_table_t *tb =
                (const nq_gpu_table_t *)(tables + (nq_u64)task_tab[cur] * NQ_GPU_TABLE_WORDS);
            gpu_fast_start(tb, tasks[cur], mine, tab + lid, &ln);
            toff = (int)lid - (int)ln.base * NQ_WG;
        }
        /* every lane that has not left steps together; a lane that left counts as there for the
           *_sync functions, so the full mask holds at the launch's end too */
        __syncwarp();
#if NQ_CUDA_LOOP == NQ_CUDA_LOOP_PTX
        unsigned sbase = (unsigned)__cvta_generic_to_shared(mine);
        unsigned tp = sbase + (unsigned)ln.top * (NQ_WG * 16u);
        unsigned tb0 = (unsigned)__cvta_generic_to_shared(tab) + (unsigned)toff * 4u;
        do {
            NQ_CUDA_STEP(tp, tb0, ln, sols);
            it++;
        } while (!__any_sync(0xffffffffu, (int)(tp - sbase) < 0));
        ln.top = (int)(tp - sbase) < 0 ? -1 : (int)((tp - sbase) / (NQ_WG * 16u));
#else
        nq_u64 steps = 0;
        do
            NQ_FAST_STEP(mine, tab, toff, ln, steps, sols);
        while (!__any_sync(0xffffffffu, ln.top < 0));
        it += steps;
#endif
    }
}
#endif

__global__ void __launch_bounds__(NQ_WG)
nq_count_cuda(const nq_u32 *tables, const nq_gpu_chunk_t *chunks, nq_u32 nchunks, const nq_gpu_task_t *tasks,
              const nq_u32 *task_tab, nq_u32 ntasks, nq_gpu_out_t *out, nq_u32 *counter)
{
    extern __shared__ uint4 dyn[];     /* the stack, then the table: NQ_FAST_STACK x NQ_WG each */
    nq_u32 *tab = (nq_u32 *)(dyn + NQ_FAST_STACK * NQ_WG);
    (void)chunks;
    (void)nchunks;
#if NQ_CUDA_LOOP == NQ_CUDA_LOOP_PORTABLE
    gpu_fast_run(tables, task_tab, ntasks, tasks, out, counter, dyn, tab);
#else
    gpu_cuda_fast_run(tables, task_tab, ntasks, tasks, out, counter, dyn, tab);
#endif
}

#define DYN_SHARED ((size_t)NQ_FAST_STACK * NQ_WG * (sizeof(uint4) + sizeof(nq_u32)))
#else
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
    (void)chunks;
    (void)nchunks;
    gpu_free_run(tables, task_tab, ntasks, tasks, out, counter, stk);
#endif
}

#define DYN_SHARED ((size_t)0)
#endif

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

extern "C" int nq_cuda_abi(nq_cuda_build_t *b)
{
    b->wg = NQ_WG;
    b->fast = NQ_FAST;
#if NQ_FAST
    b->stack = NQ_FAST_STACK;
    b->loop = NQ_CUDA_LOOP;
    b->chunked = b->pairs = 0;
#else
    b->stack = NQ_STACK;
    b->loop = 0;
    b->chunked = NQ_CHUNKED;
    b->pairs = NQ_PAIRS;
#endif
    return NQ_CUDA_ABI;
}

/* Blocks a launch starts: the resident ones (at most groups_per_sm a multiprocessor), no more:
   a block that could not start before the tasks run out would find none. */
static cudaError_t cuda_blocks(const cudaDeviceProp *p, unsigned groups_per_sm, unsigned *blocks)
{
    int per_sm = 0;
    cudaError_t e;
    if (DYN_SHARED > 48u * 1024u &&     /* past the static 48 KB a block needs asking for */
        (e = cudaFuncSetAttribute(nq_count_cuda, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)DYN_SHARED)) != cudaSuccess)
        return e;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nq_count_cuda, NQ_WG, DYN_SHARED)) !=
        cudaSuccess)
        return e;
    if (per_sm < 1)
        return cudaErrorInvalidConfiguration;
    unsigned g = groups_per_sm ? groups_per_sm : 8;
    *blocks = (unsigned)p->multiProcessorCount * ((unsigned)per_sm < g ? (unsigned)per_sm : g);
    return cudaSuccess;
}

extern "C" int nq_cuda_open(int device, unsigned groups_per_sm, int levels, nq_cuda_t **out, char *name,
                            size_t namelen, unsigned *blocks, char *err, size_t errlen)
{
    cudaDeviceProp p;
    cudaError_t e;
    int n = 0;
    (void)levels;                       /* the build's NQ_FAST_STACK: checked by nq against its rows */
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
    if ((e = cuda_blocks(&p, groups_per_sm, &c->blocks)) != cudaSuccess) {
        nq_cuda_close(c);
        return fail(err, errlen, "the kernel's occupancy (shared memory a block)", e);
    }
    for (int k = 0; k < SLOTS; k++)
        if ((e = cudaStreamCreate(&c->stream[k])) != cudaSuccess ||
            (e = cudaMalloc((void **)&c->slot[k].counter, sizeof(nq_u32))) != cudaSuccess ||
            (e = cudaEventCreate(&c->slot[k].done)) != cudaSuccess) {
            nq_cuda_close(c);
            return fail(err, errlen, "cudaStreamCreate/cudaMalloc/cudaEventCreate", e);
        }
    snprintf(name, namelen, "%s (CUDA, sm_%d%d)", p.name, p.major, p.minor);
    *blocks = c->blocks;
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
    int chunked = 0;
#if !NQ_FAST
    chunked = NQ_CHUNKED;
#endif
    unsigned work = chunked ? nchunks : (ntasks + NQ_WG - 1) / NQ_WG;   /* no block without work */
    unsigned blocks = c->blocks < work ? c->blocks : work;
    nq_count_cuda<<<blocks, NQ_WG, DYN_SHARED, st>>>(
        (const nq_u32 *)s->tables, (const nq_gpu_chunk_t *)s->chunks, nchunks,
        (const nq_gpu_task_t *)s->tasks, (const nq_u32 *)s->task_tab, ntasks, (nq_gpu_out_t *)s->out,
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
