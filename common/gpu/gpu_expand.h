/*
 * The host side of a GPU count: a shard's plan turned into the table the GPU search reads, and
 * the plan's first levels placed on the host, one task per surviving queen of the level above
 * the tasks' (gpu_search.h). The expansion counts the nodes of the levels it enters exactly as
 * count_fast.c does, so its nodes plus the tasks' are the CPU kernels' node count.
 */
#ifndef NQ_GPU_EXPAND_H
#define NQ_GPU_EXPAND_H

#include "count_search.h"
#include "gpu_search.h"

#include <stddef.h>

/* The table of a plan with m >= 2 free rows (the GPU's plans: see gpu_shard.c). */
void gpu_table_build(const nq_plan_t *pl, nq_gpu_table_t *tb);

/* The level a plan's tasks start at when each task is to leave at most `rows_left` rows
   (>= 2): m - rows_left, or 0 for a plan with fewer rows; never past m - 2, the last level
   whose queens are placed (the one below is counted). */
int gpu_task_level(int m, int rows_left);

/* Whether the fast search (gpu_fast.h) can take tb, whose level is set: each table word holds a
   row's n cells and, above them, the row distance, which must fit the 32 - n bits left (always
   for n <= 27; at n = 28 the distances below the tasks' level are 1-3, well under 16). */
int gpu_fast_fits(const nq_gpu_table_t *tb);

/* A task's estimated cost (0..255), which grows with its subtree: the sum over the rows below its
   level of the bit length of their open cells' count under its masks (the log of a product of
   row widths). Cheap, and enough to order a launch's tasks largest first. */
unsigned gpu_task_cost(const nq_gpu_table_t *tb, const nq_gpu_task_t *t);

/* A resumable walk of the levels above the tasks' (depth first, lowest column first). */
typedef struct {
    const nq_gpu_table_t *tb;
    int level;                          /* the tasks' level */
    int L;                              /* the walk's level; -1 when it is over */
    nq_u32 open[NQ_GPU_LEVELS], col[NQ_GPU_LEVELS], dl[NQ_GPU_LEVELS], dr[NQ_GPU_LEVELS];
    nq_gpu_task_t first;                /* level 0's task when level is 0 */
    int first_left;
    uint64_t nodes;                     /* nodes of the levels entered so far */
    uint64_t tasks;                     /* tasks emitted so far */
} nq_gpu_expand_t;

/* Starts the walk of tb (a plan whose fixed queens' columns are colfix) down to `level`, which
   the caller has set as tb->level too. */
void gpu_expand_init(nq_gpu_expand_t *e, const nq_gpu_table_t *tb, nq_u32 colfix, int level);
/* Writes up to max tasks to out, in the CPU kernel's order; returns how many. Fewer than max
   (0 included) only when the walk is over: gpu_expand_done then says so. */
size_t gpu_expand_next(nq_gpu_expand_t *e, nq_gpu_task_t *out, size_t max);
static inline int gpu_expand_done(const nq_gpu_expand_t *e) { return e->L < 0 && !e->first_left; }

#endif
