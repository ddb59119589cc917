/*
 * The CUDA backend: libnq_cuda.so (gpu_cuda.cu, built by nvcc where it exists), loaded at run
 * time where NQ_GPU_CUDA names it, so that nq itself needs no CUDA to build or run. For measuring
 * on a machine whose NVIDIA OpenCL cannot run; the search and the launches are the same.
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
typedef int (*cuda_open_fn)(int, unsigned, nq_cuda_t **, char *, size_t, char *, size_t);

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

/* The library's functions, and a check that it was built for this nq and these parameters. */
static int cuda_bind(cuda_backend_t *c, const char *path, const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    int (*abi)(unsigned *, int *, int *, int *) =
        (int (*)(unsigned *, int *, int *, int *))dlsym(c->lib, "nq_cuda_abi");
    c->launch = (cuda_launch_fn)dlsym(c->lib, "nq_cuda_launch");
    c->wait = (cuda_wait_fn)dlsym(c->lib, "nq_cuda_wait");
    c->close = (void (*)(nq_cuda_t *))dlsym(c->lib, "nq_cuda_close");
    if (!abi || !c->launch || !c->wait || !c->close)
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s: not an nq CUDA library (no nq_cuda_* functions)", path);
    unsigned wg;
    int stack, chunked, pairs, v = abi(&wg, &stack, &chunked, &pairs);
    if (v != NQ_CUDA_ABI)
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s: ABI %d, this nq speaks %d", path, v, NQ_CUDA_ABI);
    if (wg != cfg->wg || stack < cfg->rows_left - 2 || chunked != cfg->chunked || pairs != cfg->pairs)
        return nq_errf(err, errlen, "NQ_GPU_CUDA=%s was built with NQ_WG=%u NQ_STACK=%d NQ_CHUNKED=%d "
                       "NQ_PAIRS=%d; this run needs NQ_WG=%u, NQ_STACK >= %d, NQ_CHUNKED=%d and NQ_PAIRS=%d "
                       "(set NQ_GPU_* to match, or rebuild it)", path, wg, stack, chunked, pairs, cfg->wg,
                       cfg->rows_left - 2, cfg->chunked, cfg->pairs);
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
    c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        nq_errf(err, errlen, "NQ_GPU_CUDA: %s", dlerror());
        free(c);
        return NULL;
    }
    cuda_open_fn open = (cuda_open_fn)dlsym(c->lib, "nq_cuda_open");
    int rc = !open ? nq_errf(err, errlen, "NQ_GPU_CUDA=%s: not an nq CUDA library (no nq_cuda_open)", path)
                   : cuda_bind(c, path, cfg, err, errlen);
    if (rc == 0)
        rc = open(cfg->device, cfg->groups_per_cu, &c->c, c->b.name, sizeof c->b.name, err, errlen);
    if (rc != 0) {
        cuda_destroy(&c->b);
        return NULL;
    }
    const char *how = cfg->chunked ? "chunked" : cfg->sort ? "tasks largest first" : "tasks in order";
    snprintf(c->b.params, sizeof c->b.params, "wg %u, rows %d, CUDA, groups/SM %u, %s%s", cfg->wg,
             cfg->rows_left, cfg->groups_per_cu, how, cfg->pairs ? ", pairs" : "");
    return &c->b;
}
