/*
 * Counting shards on a GPU. An engine owns one device and a thread that feeds it: shards come in
 * from any thread (gpu_count_shard), their GPU parts are queued and their host parts then run on
 * the caller's thread (gpu_shard.h); the GPU parts are expanded into tasks, many shards' tasks to
 * a launch, two launches in flight, and each shard's tasks are folded back into one result,
 * handed to the caller's callback. Results are those of count_shard: total, unique and residues always; nodes
 * too with the parity kernel, while the fast kernel (the default) counts nodes of its own.
 *
 * A device that fails (a launch error, lost, out of memory) fails the engine: every shard it
 * holds and every later one ends with the error, never with a partial count.
 */
#ifndef NQ_GPU_H
#define NQ_GPU_H

#include "count.h"

#include <stddef.h>
#include <stdint.h>

typedef struct nq_gpu nq_gpu_t;

/* The search a GPU runs (docs/gpu.md): fast, a plain uniform loop whose nodes are its own; or
   parity, the CPU kernels' search node for node (for tests, and for comparing nodes). */
#define NQ_GPU_KERNEL_FAST 1
#define NQ_GPU_KERNEL_PARITY 2

/* How the engine runs; 0 or -1 fields take the defaults (see docs/gpu.md). */
typedef struct {
    int device;                /* index in the list `nq bench count --gpu` prints; -1: the first GPU */
    int kernel;                /* NQ_GPU_KERNEL_FAST or _PARITY (0: fast) */
    uint32_t wg;               /* work-items per group (0: 128, or less where the device allows less) */
    int rows_left;             /* rows each task leaves to the GPU (0: NQ_GPU_ROWS_LEFT) */
    int stack_local;           /* 1 stack in local memory, 0 private, -1 auto (local where it fits) */
    uint32_t groups_per_cu;    /* persistent work-groups per compute unit (0: 8) */
    uint32_t chunk;            /* parity: tasks of one shard a work-group takes at once (0: 4 x wg) */
    double launch_s;           /* the time a launch aims at (0: 0.5 s fast, 0.25 s parity; under a display
                                  watchdog's 2 s) */
    uint32_t max_tasks;        /* tasks a launch holds at most (0: 1 << 21 fast, 1 << 20 parity) */
    int chunked;               /* parity: groups take chunks of one shard (gpu_search.h); 0: one by one */
    int sort;                  /* unchunked: a launch's tasks largest first by their estimated cost (-1: 1) */
    int queues;                /* OpenCL command queues, so launches may overlap (0: 2) */
    int pairs;                 /* parity: level m-2 and the last row in closed form (gpu_search.h) */
} nq_gpu_cfg_t;

#define NQ_GPU_ROWS_LEFT 13    /* parity: tasks of ~1e4-1e5 nodes at N = 16..20 (docs/gpu.md) */
#define NQ_GPU_ROWS_FAST 14    /* fast: N = 22's 2e8 tasks, not 13 rows' 1.4e9 (the host's walk keeps up) */

void gpu_cfg_defaults(nq_gpu_cfg_t *cfg);
/* Reads NQ_GPU_KERNEL (fast|parity), NQ_GPU_WG, NQ_GPU_ROWS, NQ_GPU_STACK (local|private),
   NQ_GPU_GROUPS, NQ_GPU_CHUNK, NQ_GPU_LAUNCH_MS, NQ_GPU_MAX_TASKS, NQ_GPU_CHUNKED, NQ_GPU_SORT,
   NQ_GPU_QUEUES and NQ_GPU_PAIRS from the environment (tuning on a device); -1 with a reason when
   one is out of range. */
int gpu_cfg_from_env(nq_gpu_cfg_t *cfg, char *err, size_t errlen);
/* "fast" or "parity" into cfg->kernel; -1 with a reason for anything else. */
int gpu_cfg_kernel(nq_gpu_cfg_t *cfg, const char *name, char *err, size_t errlen);

/* Opens the device and builds the kernel for it: through OpenCL, or through CUDA where
   NQ_GPU_CUDA names a libnq_cuda.so (gpu_cuda.h). NULL with a one-line reason: no platform, no
   device, the build failed (with the first lines of its log), a setting the kernel does not
   take, no memory. */
nq_gpu_t *gpu_open(const nq_gpu_cfg_t *cfg, char *err, size_t errlen);
/* Stops the engine: shards not finished end as cancelled (rc 2). */
void gpu_close(nq_gpu_t **g);

/* Nonzero when g runs on a CPU device (OpenCL on a CPU, as pocl): a GPU worker says so plainly. */
int gpu_is_cpu(const nq_gpu_t *g);
/* "NAME (PLATFORM)", e.g. "NVIDIA H100 80GB HBM3 (NVIDIA CUDA)". */
const char *gpu_name(const nq_gpu_t *g);
/* The parameters the engine runs with, one line. */
const char *gpu_params(const nq_gpu_t *g);
/* The kernel it runs: "fast" or "parity". */
const char *gpu_kernel_name(const nq_gpu_t *g);
/* The backend that runs it: "OpenCL", "CUDA" or "host" (the kernel as C, for tests). */
const char *gpu_backend_name(const nq_gpu_t *g);
/* Nonzero when the nodes of its results are the CPU kernels' (parity): only then may they be
   compared with a CPU worker's. The same for every result of an engine (a fast engine's shard
   that ran on the host alone is flagged as fast too). */
int gpu_nodes_cpu(const nq_gpu_t *g);
/* The OpenCL devices of every platform, one "I: NAME (PLATFORM, TYPE)" line each, into buf;
   -1 with a reason when there is no platform. */
int gpu_list_devices(char *buf, size_t len, char *err, size_t errlen);

/* The devices one worker drives at most: a HEARTBEAT carries a figure for each (protocol.md). */
#define NQ_GPU_MAX_DEVICES 16
/* The OpenCL devices --gpu means, as indices of gpu_list_devices: the first GPU (or accelerator),
   or every one (all), at most max, into idx[*n]. -1 when there is none, err naming the CPU devices
   found and how to name one (--gpu-device): a CPU device is taken only when named. */
int gpu_find_devices(int all, int *idx, int max, int *n, char *err, size_t errlen);

/* rc 0: r holds the shard's result; 2: cancelled; -1: err says why (r is zeroed). Called on the
   engine's thread, or on the caller's (its host part ended last, or it needs no GPU): keep it
   short. */
typedef void (*nq_gpu_done_fn)(void *ud, int rc, const nq_count_result_t *r, const char *err);

/*
 * Counts shard spec: its GPU part queued first, then its host part on this thread while the
 * device counts; done(ud, ...) once both are over (on the thread that ended the last). ctl
 * (copied; NULL for none) is polled for cancel and gets the nodes so far. Blocks while the
 * engine has 16384 shards waiting (MAX_WAITING, gpu_engine.c). Returns 0 once done
 * is sure to be called (maybe already), -1 when it will not be (and done was not called).
 */
int gpu_count_shard(nq_gpu_t *g, const uint8_t *spec, size_t len, const nq_kernel_ctl_t *ctl,
                    nq_gpu_done_fn done, void *ud);

/* Nonzero once the device failed; err gets why. */
int gpu_failed(nq_gpu_t *g, char *err, size_t errlen);

/*
 * What the engine holds and how fast it goes, for a worker that sizes its feeders, its CPU
 * counting and its credit by it: shards whose GPU part is not over, the device's seconds a shard
 * (measured over the last launches; 0 before), held x shard_s, and the shards that fill the
 * device at once (NQ_GPU_SLOTS launches of the tasks a launch holds, over the tasks a shard
 * makes; 0 before the first shard's walk). failing is set at once, before gpu_failed.
 */
typedef struct {
    uint32_t held;
    double shard_s, held_s;
    uint64_t fill;
    int failing;               /* it takes no more shards: its device failed, or it stops */
} nq_gpu_load_t;
void gpu_load(nq_gpu_t *g, nq_gpu_load_t *l);
/* Of n devices' loads, the one to feed next: the live one whose queued work runs out first
   (seconds once every live device measured its rate; before, the fewest shards held); -1
   when every one is failing. */
int gpu_load_hungriest(const nq_gpu_load_t *l, uint32_t n);

/* Shards finished, launches, tasks and seconds spent in launches so far. */
typedef struct { uint64_t shards, launches, tasks, host_tasks; double launch_s, busy_s; } nq_gpu_stats_t;
void gpu_stats(nq_gpu_t *g, nq_gpu_stats_t *st);

#endif
