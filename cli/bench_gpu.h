/* The GPU side of the CLI: opening the device for a command, and `nq bench count --gpu`. */
#ifndef NQ_BENCH_GPU_H
#define NQ_BENCH_GPU_H

#include "gpu.h"
#include "rng.h"
#include "shard.h"
#include "u128.h"

#include <stddef.h>
#include <stdint.h>

/* Which devices a command counts on (docs/gpu.md): --gpu, the first GPU; --gpu all, every GPU;
   --gpu-device I[,J...], those by index, a CPU device too (said plainly); --gpu-device list. */
typedef struct { int all, list, n, idx[NQ_GPU_MAX_DEVICES]; } cli_gpu_sel_t;
void cli_gpu_sel_init(cli_gpu_sel_t *s);

/* What each device of a bench counted: its shards and nodes (its share of the work). */
typedef struct { uint64_t shards, nodes; } bench_gpu_share_t;

/* Counts every shard of list through the n engines gs with `threads` threads taking `run` shards
   at a time, each shard to the device that holds the least work: 0, or -1 with the first shard's
   error. share[i] (may be NULL) gets device i's part. */
int bench_gpu_run(nq_gpu_t *const *gs, uint32_t n, const nq_shards_t *list, int threads, uint64_t run,
                  nq_u128 *total, nq_u128 *unique, uint64_t *nodes, bench_gpu_share_t *share, char *err,
                  size_t errlen);

/* Opens the devices sel names for command cmd (kernel NQ_GPU_KERNEL_*, 0: NQ_GPU_KERNEL or the
   default; NQ_GPU_* tuning from the environment) into gs[0 .. *n): 0; -1 after printing the device
   list (sel->list); else an exit code, the reason printed (no platform, no GPU, no such device, the
   build failed). A CPU device, which only an index names, is said on stderr. */
int cli_gpu_open(const char *cmd, const cli_gpu_sel_t *sel, int kernel, nq_gpu_t **gs, uint32_t *n);
void cli_gpu_close(nq_gpu_t **gs, uint32_t n);
/* The engine of gs[0 .. n) that holds the least work (seconds where measured, else shards), not
   failing; -1 when every one fails. */
int cli_gpu_hungriest(nq_gpu_t *const *gs, uint32_t n);
/* `nq estimate count --gpu`: the sample cmd_estimate.c draws from rng (probes with `extra` levels, or
   k whole shards), counted on the ng engines gs in one batch (dealt round the devices): each
   sample's node estimate into nodes[k], and the batch's nodes per second into *rate (all
   devices'). 0, or -1 with a reason. */
int estimate_gpu_sample(nq_gpu_t *const *gs, uint32_t ng, const nq_shards_t *sh, int probes, int extra,
                        size_t k, nq_rng_t *rng, double *nodes, double *rate, char *err, size_t errlen);
/* --gpu's optional argument (NULL, or "all"): 0, or NQ_EXIT_USAGE (reported). */
int cli_gpu_option(const char *cmd, const char *arg, cli_gpu_sel_t *sel);
/* `--gpu all` written as two words becomes --gpu=all in argv (getopt_long takes an optional argument
   only after '='): the new argc. */
int cli_gpu_argv(int argc, char **argv);
/* --gpu-device I[,J...]|list: 0, or NQ_EXIT_USAGE (reported). */
int cli_gpu_device_option(const char *cmd, const char *arg, cli_gpu_sel_t *sel);
/* --gpu-kernel fast|parity into *kernel (NQ_GPU_KERNEL_*): 0, or NQ_EXIT_USAGE (reported). */
int cli_gpu_kernel_option(const char *cmd, const char *arg, int *kernel);

#endif
