/*
 * The GPU kernels compiled as C and run on the calling thread by one work-item (gpu_search.h's
 * and gpu_fast.h's C builds): the engine's reference backend. Exact and slow; the unit tests run
 * the engine on it, under the sanitizers, where no OpenCL device exists.
 */
#include "errf.h"
#include "gpu_impl.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    gpu_backend_t b;
    int chunked, fast;
    gpu_launch_t pending[NQ_GPU_SLOTS];
} host_backend_t;

static int host_launch(gpu_backend_t *b, int slot, const gpu_launch_t *l, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ((host_backend_t *)b)->pending[slot] = *l;
    return 0;
}

static int host_wait(gpu_backend_t *b, int slot, char *err, size_t errlen)
{
    host_backend_t *h = (host_backend_t *)b;
    gpu_launch_t *l = &h->pending[slot];
    nq_gpu_table_t tab;
    nq_u32 counter = 0, cur, next, stk[4 * NQ_STACK];
    (void)err;
    (void)errlen;
    if (h->fast) {
        nq_u4 fstk[NQ_FAST_STACK];
        nq_u32 ftab[NQ_FAST_STACK];
        gpu_fast_run((const nq_u32 *)l->tables, l->task_tab, l->ntasks, l->tasks, l->out, &counter, fstk,
                     ftab);
    } else if (h->chunked)
        gpu_group_run((const nq_u32 *)l->tables, l->chunks, l->nchunks, l->tasks, l->out, &counter, &tab,
                      &cur, &next, stk);
    else
        gpu_free_run((const nq_u32 *)l->tables, l->task_tab, l->ntasks, l->tasks, l->out, &counter, stk);
    return 0;
}

static void host_destroy(gpu_backend_t *b) { free(b); }

gpu_backend_t *gpu_host_open(const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    int fast = cfg->kernel == NQ_GPU_KERNEL_FAST;
    if (fast ? NQ_FAST_LEVELS(cfg->rows_left) > NQ_FAST_STACK : cfg->rows_left - 2 > NQ_STACK)
        return nq_errf(err, errlen, "rows left %d: the host kernel's stack is too small", cfg->rows_left),
               NULL;
    host_backend_t *h = calloc(1, sizeof *h);
    if (!h)
        return nq_errf(err, errlen, "out of memory"), NULL;
    h->b.launch = host_launch;
    h->b.wait = host_wait;
    h->b.destroy = host_destroy;
    h->chunked = cfg->chunked;
    h->fast = fast;
    h->b.backend = "host";
    h->b.lanes = 1;
    h->b.cpu = 1;
    snprintf(h->b.name, sizeof h->b.name, "host (the kernel as C)");
    snprintf(h->b.params, sizeof h->b.params, "%s kernel, wg 1, rows %d, %s", fast ? "fast" : "parity",
             cfg->rows_left, cfg->chunked ? "chunked" : cfg->sort ? "tasks largest first" : "tasks in order");
    return &h->b;
}
