/*
 * The OpenCL entry point of the GPU count (OpenCL C 1.2). The build embeds gpu_search.h,
 * gpu_fast.h and this file, in that order, as one source (gpu_embed.cmake), compiled at run time
 * with NQ_FAST (the kernel: 1 fast, 0 parity) and its parameters defined (gpu_cl.c): NQ_WG and
 * NQ_FAST_STACK; or NQ_WG, NQ_STACK, NQ_STACK_LOCAL, NQ_CHUNKED and NQ_PAIRS. Persistent
 * work-items: the host starts a few groups per compute unit, and they take tasks (or chunks of
 * tasks) until none is left (gpu_fast_run, gpu_free_run, gpu_group_run).
 */
__kernel __attribute__((reqd_work_group_size(NQ_WG, 1, 1)))
void nq_count(__global const uint *tables, __global const nq_gpu_chunk_t *chunks, uint nchunks,
              __global const nq_gpu_task_t *tasks, __global const uint *task_tab, uint ntasks,
              __global nq_gpu_out_t *out, __global uint *counter)
{
#if NQ_FAST
    __local uint4 stk[NQ_FAST_STACK * NQ_WG];
    __local uint tab[NQ_FAST_STACK * NQ_WG];
    gpu_fast_run(tables, task_tab, ntasks, tasks, out, counter, stk, tab);
#else
#if NQ_STACK_LOCAL
    __local uint stk[4 * NQ_STACK * NQ_WG];
#else
    uint stk[4 * NQ_STACK];
#endif
#if NQ_CHUNKED
    __local nq_gpu_table_t tab;
    __local uint cur, next;
    gpu_group_run(tables, chunks, nchunks, tasks, out, counter, &tab, &cur, &next, stk);
#else
    gpu_free_run(tables, task_tab, ntasks, tasks, out, counter, stk);
#endif
#endif
}
