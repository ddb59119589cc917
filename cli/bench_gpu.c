/*
 * `nq bench count N --gpu`: the whole board through the GPU engine. Threads take runs of the
 * lease order, as the CPU bench does, and hand each shard to the engine (its host part runs on
 * the thread); the engine's callback adds each result up. Same sums as the CPU bench.
 */
#include "bench_gpu.h"
#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    nq_gpu_t *g;
    const nq_shards_t *list;
    uint64_t nshards, run;
    atomic_uint_fast64_t next;
    atomic_int stop;
    pthread_mutex_t lock;       /* guards what follows */
    pthread_cond_t ended;
    uint64_t submitted, finished;
    nq_u128 total, unique;
    uint64_t nodes;
    char err[256];
} gbench_t;

typedef struct { gbench_t *b; uint64_t i; } gshard_t;

static void gbench_done(void *ud, int rc, const nq_count_result_t *r, const char *err)
{
    gshard_t *s = ud;
    gbench_t *b = s->b;
    pthread_mutex_lock(&b->lock);
    if (rc == 0 && (r->res13 != r->total % 13 || r->res15 != r->total % 15)) {
        rc = -1;
        err = "residues disagree with the total";
    }
    if (rc == 0) {
        b->total += r->total;
        b->unique += r->unique;
        b->nodes += r->nodes;
    } else if (rc != 2 && !b->err[0]) {
        snprintf(b->err, sizeof b->err, "shard %llu: %s", (unsigned long long)s->i, err);
    }
    if (rc != 0)
        atomic_store(&b->stop, 1);
    b->finished++;
    pthread_cond_broadcast(&b->ended);
    pthread_mutex_unlock(&b->lock);
    free(s);
}

static int gbench_shard(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    gbench_t *b = ud;
    if (atomic_load(&b->stop))
        return 1;
    gshard_t *s = malloc(sizeof *s);
    if (!s) {
        pthread_mutex_lock(&b->lock);
        if (!b->err[0])
            snprintf(b->err, sizeof b->err, "out of memory");
        pthread_mutex_unlock(&b->lock);
        atomic_store(&b->stop, 1);
        return 1;
    }
    *s = (gshard_t){ b, i };
    nq_kernel_ctl_t ctl = { .cancel = &b->stop, .progress = NULL };
    pthread_mutex_lock(&b->lock);
    b->submitted++;
    pthread_mutex_unlock(&b->lock);
    gpu_count_shard(b->g, spec, len, &ctl, gbench_done, s);
    return 0;
}

static void *gbench_thread(void *arg)
{
    gbench_t *b = arg;
    for (;;) {
        uint64_t pos = atomic_fetch_add(&b->next, b->run);
        if (pos >= b->nshards || atomic_load(&b->stop))
            break;
        if (shards_each_at(b->list, pos, b->run, gbench_shard, b) != 0)
            break;
    }
    return NULL;
}

int bench_gpu_run(nq_gpu_t *g, const nq_shards_t *list, int threads, uint64_t run, nq_u128 *total,
                  nq_u128 *unique, uint64_t *nodes, char *err, size_t errlen)
{
    gbench_t b = { .g = g, .list = list, .nshards = shards_count(list), .run = run };
    pthread_t tid[1024];
    int started = 0;
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.ended, NULL);
    for (; started < threads && started < 1024; started++)
        if (pthread_create(&tid[started], NULL, gbench_thread, &b) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_lock(&b.lock);
    while (b.finished < b.submitted)
        pthread_cond_wait(&b.ended, &b.lock);
    pthread_mutex_unlock(&b.lock);
    pthread_cond_destroy(&b.ended);
    pthread_mutex_destroy(&b.lock);
    if (started == 0)
        return nq_errf(err, errlen, "cannot start threads");
    if (b.err[0])
        return nq_errf(err, errlen, "%s", b.err);
    *total = b.total;
    *unique = b.unique;
    *nodes = b.nodes;
    return 0;
}

int cli_gpu_open(const char *cmd, int device, int list_only, int kernel, nq_gpu_t **g)
{
    nq_gpu_cfg_t cfg;
    char err[1024], buf[8192];
    *g = NULL;
    if (list_only) {
        if (gpu_list_devices(buf, sizeof buf, err, sizeof err) != 0)
            return cli_error(cmd, "%s", err);
        fputs(buf, stdout);
        return -1;
    }
    gpu_cfg_defaults(&cfg);
    cfg.device = device;
    if (gpu_cfg_from_env(&cfg, err, sizeof err) != 0)
        return cli_usage_error(cmd, "%s", err);
    if (kernel)                         /* --gpu-kernel over NQ_GPU_KERNEL */
        cfg.kernel = kernel;
    *g = gpu_open(&cfg, err, sizeof err);
    return *g ? 0 : cli_error(cmd, "%s", err);
}

int cli_gpu_device_option(const char *cmd, const char *arg, int *device, int *list_only)
{
    uint64_t v;
    if (strcmp(arg, "list") == 0) {
        *list_only = 1;
        return 0;
    }
    int rc = cli_parse_u64(cmd, "--gpu-device", arg, 0, 63, &v);
    *device = (int)v;
    return rc;
}

int cli_gpu_kernel_option(const char *cmd, const char *arg, int *kernel)
{
    nq_gpu_cfg_t cfg;
    char err[128];
    gpu_cfg_defaults(&cfg);
    if (gpu_cfg_kernel(&cfg, arg, err, sizeof err) != 0)
        return cli_usage_error(cmd, "--gpu-kernel is fast or parity (got '%.32s')", arg);
    *kernel = cfg.kernel;
    return 0;
}
