/* The GPU side of the CLI: opening the device for a command, and `nq bench count --gpu`. */
#ifndef NQ_BENCH_GPU_H
#define NQ_BENCH_GPU_H

#include "gpu.h"
#include "rng.h"
#include "shard.h"
#include "u128.h"

#include <stddef.h>
#include <stdint.h>

/* Counts every shard of list through g with `threads` threads taking `run` shards at a time:
   0, or -1 with the first shard's error. */
int bench_gpu_run(nq_gpu_t *g, const nq_shards_t *list, int threads, uint64_t run, nq_u128 *total,
                  nq_u128 *unique, uint64_t *nodes, char *err, size_t errlen);

/* Opens the GPU for command cmd (device -1: the first GPU; kernel NQ_GPU_KERNEL_*, 0: NQ_GPU_KERNEL
   or the default; NQ_GPU_* tuning from the environment): 0; -1 after printing the device list
   (list_only); else an exit code, the reason printed (no platform, no device, the build failed). */
int cli_gpu_open(const char *cmd, int device, int list_only, int kernel, nq_gpu_t **g);
/* `nq estimate count --gpu`: the sample cmd_estimate.c draws from rng (probes with `extra` levels, or
   k whole shards), counted on g in one batch: each sample's node estimate into nodes[k], and the
   batch's nodes per second into *rate. 0, or -1 with a reason. */
int estimate_gpu_sample(nq_gpu_t *g, const nq_shards_t *sh, int probes, int extra, size_t k, nq_rng_t *rng,
                        double *nodes, double *rate, char *err, size_t errlen);
/* --gpu-device I|list: 0, or NQ_EXIT_USAGE (reported). */
int cli_gpu_device_option(const char *cmd, const char *arg, int *device, int *list_only);
/* --gpu-kernel fast|parity into *kernel (NQ_GPU_KERNEL_*): 0, or NQ_EXIT_USAGE (reported). */
int cli_gpu_kernel_option(const char *cmd, const char *arg, int *kernel);

#endif
