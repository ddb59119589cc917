/*
 * The CUDA backend: libnq_cuda.so (gpu_cuda.cu, built by nvcc where it exists), loaded at run
 * time where NQ_GPU_CUDA names it, so that nq itself needs no CUDA to build or run. The searches
 * and the launches are OpenCL's; the fast kernel's loop may be CUDA's own (gpu_cuda.h).
 */
#include "errf.h"
#include "gpu_cuda.h"
#include "gpu_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*cuda_launch_fn)(nq_cuda_t *, int, const void *, unsigned, const void *, unsigned, const void *,
                              const unsigned *, unsigned, void *, char *, size_t);
typedef int (*cuda_wait_fn)(nq_cuda_t *, int, char *, size_t);
typedef int (*cuda_open_fn)(int, unsigned, int, nq_cuda_t **, char *, size_t, unsigned *, char *, size_t);

typedef struct {
    gpu_backend_t b;
    void *lib;
    nq_cuda_t *c;
    cuda_launch_fn launch;
    cuda_wait_fn wait;
    void (*close)(nq_cuda_t *);
} cuda_backend_t;

static int cuda_launch(gpu_backend_t *b, int slot, const gpu_launch_t *l, char *err, size_t errlen)
{
    cuda_backend_t *c = (cuda_backend_t *)b;
    return c->launch(c->c, slot, l->tables, l->ntables, l->chunks, l->nchunks, l->tasks, l->task_tab,
                     l->ntasks, l->out, err, errlen);
}

static int cuda_wait(gpu_backend_t *b, int slot, char *err, size_t errlen)
{
    cuda_backend_t *c = (cuda_backend_t *)b;
    return c->wait(c->c, slot, err, errlen);
}

static void cuda_destroy(gpu_backend_t *b)
{
    cuda_backend_t *c = (cuda_backend_t *)b;
    if (c->c)
        c->close(c->c);
    if (c->lib)
        dlclose(c->lib);
    free(c);
}

static const char *loop_name(int loop)
{
    return loop == NQ_CUDA_LOOP_PTX ? "PTX step" : loop == NQ_CUDA_LOOP_VOTE ? "warp vote" : "portable loop";
}

/* The library's functions, and a check that it was built for this nq and these parameters. */
static int cuda_bind(cuda_backend_t *c, const char *path, const nq_gpu_cfg_t *cfg, nq_cuda_build_t *bd,
                     char *err, size_t errlen)
{
    int (*abi)(nq_cuda_build_t *) = (int (*)(nq_cuda_build_t *))dlsym(c->lib, "nq_cuda_abi");
    c->launch = (cuda_launch_fn)dlsym(c->lib, "nq_cuda_launch");
    c->wait = (cuda_wait_fn)dlsym(c->lib, "nq_cuda_wait");
    c->close = (void (*)(nq_cuda_t *))dlsym(c->lib, "nq_cuda_close");
    if (!abi || !c->launch || !c->wait || !c->close)
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s: not an nq CUDA library (no nq_cuda_* functions)", path);
    int v = abi(bd);
    if (v != NQ_CUDA_ABI)
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s: ABI %d, this nq speaks %d", path, v, NQ_CUDA_ABI);
    int fast = cfg->kernel == NQ_GPU_KERNEL_FAST;
    int need = fast ? NQ_FAST_LEVELS(cfg->rows_left) : cfg->rows_left - 2;
    if (bd->wg != cfg->wg || bd->fast != fast || bd->stack < need ||
        (!fast && (bd->chunked != cfg->chunked || bd->pairs != cfg->pairs)))
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s was built with NQ_FAST=%d NQ_WG=%u, a stack of %d "
                       "levels, NQ_CHUNKED=%d NQ_PAIRS=%d; this run needs NQ_FAST=%d NQ_WG=%u, at least %d "
                       "levels, NQ_CHUNKED=%d NQ_PAIRS=%d (set NQ_GPU_* and --gpu-kernel to match, or "
                       "rebuild it)", path, bd->fast, bd->wg, bd->stack, bd->chunked, bd->pairs, fast,
                       cfg->wg, need, cfg->chunked, cfg->pairs);
    return 0;
}

gpu_backend_t *gpu_cuda_open(const char *path, const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    cuda_backend_t *c = calloc(1, sizeof *c);
    if (!c)
        return nq_errf(err, errlen, "out of memory"), NULL;
    c->b.launch = cuda_launch;
    c->b.wait = cuda_wait;
    c->b.destroy = cuda_destroy;
    c->b.backend = "CUDA";
    c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        nq_errf(err, errlen, "NQ_GPU_CUDA: %s", dlerror());
        free(c);
        return NULL;
    }
    nq_cuda_build_t bd;
    unsigned blocks = 0;
    cuda_open_fn open = (cuda_open_fn)dlsym(c->lib, "nq_cuda_open");
    int rc = !open ? nq_errf(err, errlen, "NQ_GPU_CUDA=%s: not an nq CUDA library (no nq_cuda_open)", path)
                   : cuda_bind(c, path, cfg, &bd, err, errlen);
    if (rc == 0)
        rc = open(cfg->device, cfg->groups_per_cu, bd.stack, &c->c, c->b.name, sizeof c->b.name, &blocks, err,
                  errlen);
    if (rc != 0) {
        cuda_destroy(&c->b);
        return NULL;
    }
    c->b.lanes = blocks * cfg->wg;
    const char *how = cfg->chunked ? "chunked" : cfg->sort ? "tasks largest first" : "tasks in order";
    if (bd.fast)
        snprintf(c->b.params, sizeof c->b.params, "fast kernel, wg %u, rows %d, %s, blocks %u, %s", cfg->wg,
                 cfg->rows_left, loop_name(bd.loop), blocks, how);
    else
        snprintf(c->b.params, sizeof c->b.params, "parity kernel, wg %u, rows %d, blocks %u, %s%s", cfg->wg,
                 cfg->rows_left, blocks, how, cfg->pairs ? ", pairs" : "");
    return &c->b;
}
