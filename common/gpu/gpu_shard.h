/*
 * A count shard split between the GPU and the host, exactly as count_shard searches it
 * (count.c): the plan count_shard hands its fast kernel goes to the GPU, counting every node
 * and the weight-8 solutions; what the fast kernel would count one solution at a time (last-row
 * cells of a smaller weight, whose unique check needs the whole board) and what count_shard
 * runs through search_leaves stay on the host, which runs them with the CPU kernels.
 * The host's part is small: border configurations with a symmetry are rare.
 *
 * Choosing the parts (gpu_split_plan) costs no search, so that the GPU's part can be queued
 * before the host runs its own (gpu_split_host): the device never waits for the host's work.
 */
#ifndef NQ_GPU_SHARD_H
#define NQ_GPU_SHARD_H

#include "count_search.h"

/* What the host's part runs (gpu_split_host). */
enum { NQ_GPU_HOST_NONE = 0, NQ_GPU_HOST_FAST, NQ_GPU_HOST_LEAVES };

typedef struct {
    int gpu;                  /* plan goes to the GPU */
    nq_plan_t plan;           /* the GPU's plan (m >= 2, leafx ignored) */
    int host;                 /* NQ_GPU_HOST_*: the host's part, still to run */
    nq_plan_t hplan;          /* its plan */
    int host_nodes;           /* its nodes are the shard's (0: a rare pass, whose last row the GPU counts) */
    nq_count_tally_t tally;   /* what the host counted, checked */
    uint64_t unique;
    uint64_t nodes;           /* nodes the host counted that the GPU part's do not include */
} nq_gpu_split_t;

/* Decodes spec and chooses the GPU's part and the host's, searching nothing. 0 ok, -1 with a
   reason in err (a bad descriptor, not a count shard). */
int gpu_split_plan(const uint8_t *spec, size_t len, nq_gpu_split_t *s, char *err, size_t errlen);

/* Runs the host's part with the CPU kernels (nothing when there is none). 0 ok, 2 cancelled (ctl
   may be NULL), -1 with a reason (an overflow). */
int gpu_split_host(nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, char *err, size_t errlen);

/* Both of the above: the split with its host part counted. */
int gpu_split_shard(const uint8_t *spec, size_t len, nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl,
                    char *err, size_t errlen);

/* The GPU's part run on the host instead (search_fast on its plan, weight-8 cells only), for a
   plan the GPU's kernel cannot take: s->gpu is 0 after it. 0, 2 cancelled, -1 with a reason. */
int gpu_split_host_rest(nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, char *err, size_t errlen);

/* The shard's result from the host's part and the GPU part's nodes and weight-8 solutions
   (all 0 where s->gpu is 0). 0, or -1 on a 64-bit overflow. */
int gpu_split_finish(const nq_gpu_split_t *s, uint64_t gpu_nodes, uint64_t gpu_sols, nq_count_result_t *r,
                     char *err, size_t errlen);

#endif
