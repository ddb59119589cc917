/* The GPU engine's parameters: defaults, and the environment variables a device check tunes with. */
#include "errf.h"
#include "gpu_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void gpu_cfg_defaults(nq_gpu_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->device = -1;
    cfg->stack_local = -1;
    cfg->sort = -1;
}

void gpu_cfg_resolve(nq_gpu_cfg_t *cfg)
{
    int fast = cfg->kernel != NQ_GPU_KERNEL_PARITY;
    cfg->kernel = fast ? NQ_GPU_KERNEL_FAST : NQ_GPU_KERNEL_PARITY;
    if (!cfg->wg)
        cfg->wg = 128;
    if (!cfg->rows_left)
        cfg->rows_left = fast ? NQ_GPU_ROWS_FAST : NQ_GPU_ROWS_LEFT;
    if (!cfg->groups_per_cu)
        cfg->groups_per_cu = 8;
    if (!cfg->chunk)
        cfg->chunk = 4 * cfg->wg;
    /* the fast kernel's launches are longer and hold more tasks: a lane takes ~8 of its tasks of
       14 rows in half a second at N = 21, so the launch's last ones wait less in proportion */
    if (cfg->launch_s <= 0)
        cfg->launch_s = fast ? 0.5 : 0.25;
    if (!cfg->max_tasks)
        cfg->max_tasks = fast ? 1u << 21 : 1u << 20;
    if (cfg->sort < 0)
        cfg->sort = 1;
    if (!cfg->queues)
        cfg->queues = 2;
}

/* The number in environment variable name, in lo..hi, into *v (left alone when unset). */
static int env_u32(const char *name, unsigned long lo, unsigned long hi, uint32_t *v, char *err,
                   size_t errlen)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || x < lo || x > hi || s[0] == '-')
        return nq_errf(err, errlen, "%s=%.32s: expected a number from %lu to %lu", name, s, lo, hi);
    *v = (uint32_t)x;
    return 0;
}

int gpu_cfg_kernel(nq_gpu_cfg_t *cfg, const char *name, char *err, size_t errlen)
{
    if (strcmp(name, "fast") == 0)
        cfg->kernel = NQ_GPU_KERNEL_FAST;
    else if (strcmp(name, "parity") == 0)
        cfg->kernel = NQ_GPU_KERNEL_PARITY;
    else
        return nq_errf(err, errlen, "GPU kernel '%.32s': expected fast or parity", name);
    return 0;
}

int gpu_cfg_check(const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    if (cfg->kernel == NQ_GPU_KERNEL_FAST && (cfg->chunked || cfg->pairs || cfg->stack_local == 0))
        return nq_errf(err, errlen, "NQ_GPU_CHUNKED, NQ_GPU_PAIRS and NQ_GPU_STACK=private are the parity "
                       "kernel's settings: add --gpu-kernel parity, or unset them");
    return 0;
}

int gpu_cfg_from_env(nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    uint32_t rows = 0, ms = 0, chunked = 2, sort = 2, queues = 0, pairs = 2;
    /* a stack of rows - 2 levels must fit NQ_GPU_LEVELS; 2 rows: each task a single level */
    if (env_u32("NQ_GPU_WG", 1, 1024, &cfg->wg, err, errlen) ||
        env_u32("NQ_GPU_ROWS", 2, NQ_GPU_LEVELS, &rows, err, errlen) ||
        env_u32("NQ_GPU_GROUPS", 1, 1024, &cfg->groups_per_cu, err, errlen) ||
        env_u32("NQ_GPU_CHUNK", 1, 1u << 20, &cfg->chunk, err, errlen) ||
        env_u32("NQ_GPU_LAUNCH_MS", 1, 60000, &ms, err, errlen) ||
        env_u32("NQ_GPU_CHUNKED", 0, 1, &chunked, err, errlen) ||
        env_u32("NQ_GPU_SORT", 0, 1, &sort, err, errlen) ||
        env_u32("NQ_GPU_QUEUES", 1, 2, &queues, err, errlen) ||
        env_u32("NQ_GPU_PAIRS", 0, 1, &pairs, err, errlen) ||
        env_u32("NQ_GPU_MAX_TASKS", 1024, 1u << 24, &cfg->max_tasks, err, errlen))
        return -1;
    if (pairs < 2)
        cfg->pairs = (int)pairs;
    if (chunked < 2)
        cfg->chunked = (int)chunked;
    if (sort < 2)
        cfg->sort = (int)sort;
    if (queues)
        cfg->queues = (int)queues;
    if (rows)
        cfg->rows_left = (int)rows;
    if (ms)
        cfg->launch_s = ms / 1000.0;
    const char *k = getenv("NQ_GPU_KERNEL");
    if (k && *k && gpu_cfg_kernel(cfg, k, err, errlen) != 0)
        return nq_errf(err, errlen, "NQ_GPU_KERNEL=%.32s: expected fast or parity", k);
    const char *st = getenv("NQ_GPU_STACK");
    if (st && *st) {
        if (strcmp(st, "local") == 0)
            cfg->stack_local = 1;
        else if (strcmp(st, "private") == 0)
            cfg->stack_local = 0;
        else
            return nq_errf(err, errlen, "NQ_GPU_STACK=%.32s: expected local or private", st);
    }
    return 0;
}
