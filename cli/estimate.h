/* `nq estimate`'s node estimate (estimate_nodes.c), apart from its timed sample (cmd_estimate.c). */
#ifndef NQ_ESTIMATE_H
#define NQ_ESTIMATE_H

#include "shard.h"

#include <stddef.h>
#include <stdint.h>

/* The nodes of a whole count, estimated, with the standard error of that estimate. */
typedef struct {
    double nodes, se;
    uint64_t shards;                   /* shards estimated: every one (every = 1) or a sample */
    int every;
    uint32_t paths;                    /* paths down each of them */
} nq_est_nodes_t;

/* The nodes of the count of list's shards, from `paths` random paths (shard_cost.h) down each
   of `sample` shards drawn with `seed` (all of them, with a stratified interval, when the list
   has no more). 0, or -1 with a reason (out of memory). */
int estimate_nodes(const nq_shards_t *list, uint64_t sample, uint32_t paths, uint64_t seed,
                   nq_est_nodes_t *out, char *err, size_t errlen);

#endif
