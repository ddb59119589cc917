/*
 * The fast GPU count: the same tasks as the parity search (gpu_search.h), searched by a plain,
 * uniform loop. One source, three compilers, after gpu_search.h (its types and macros).
 *
 * A step places one queen: it reads the top entry of the work-item's stack, takes its lowest open
 * cell, writes the rest back, and builds the child's cells from the row below's cells and the
 * three masks. A child on the last row is counted (popcount of its weight-8 cells) and never
 * pushed; any other child with an open cell is pushed (into the parent's slot when the parent has
 * no cell left). Every write and move of the stack pointer is a select, so a step has no branch
 * but the loop's own: the lanes of a warp run the same instructions whatever each one does. No
 * look-ahead and no column test: on a GPU a kill test costs more on every step than the steps it
 * saves (docs/gpu.md). The filter only prunes subtrees without solutions, so the solutions are
 * the same; the nodes are this loop's own (a step each, not the CPU kernels' count).
 *
 * The level of an entry is the number of queens in its column mask (popcount) less that of its
 * task's root: the slot does not tell it, since a child may take its parent's slot. Each level's
 * row below (its open cells, the weight-8 cells for the last row) and the row distance to it
 * sit in one word of a per-work-item table in local memory, filled when the work-item takes a
 * task: cells in the low n bits, distance above them (gpu_fast_fits says when it fits). The
 * column mask carries ones above the n column bits, so the mask's AND clears the distance.
 *
 * Stack entries are 16 bytes (open, col, dl, dr), laid out [depth][work-item] like the table,
 * so the 32 lanes of a warp always touch 32 consecutive entries: no bank conflict.
 *
 * Work-items are persistent and take tasks on their own: the index of the next one is taken
 * ahead (a global atomic, warp-aggregated in CUDA), and a work-item whose stack is empty writes
 * its task's counts (64 bits each) and takes that next task. Nobody waits for anybody until the
 * launch runs out of tasks.
 */
#ifndef NQ_GPU_FAST_H
#define NQ_GPU_FAST_H

#if defined(__OPENCL_VERSION__)
typedef uint4 nq_u4;
#define NQ_U4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
#elif defined(__CUDACC__)
typedef uint4 nq_u4;
#define NQ_U4(a, b, c, d) make_uint4((a), (b), (c), (d))
#else
typedef struct { nq_u32 x, y, z, w; } nq_u4;
#define NQ_U4(a, b, c, d) ((nq_u4){ (a), (b), (c), (d) })
#endif

/* The stack levels a task of `rows` rows needs: its own level down to the one above the last
   row (the last is counted, never pushed). The table has as many words. */
#define NQ_FAST_LEVELS(rows) ((rows) - 1)

#ifndef NQ_FAST_STACK
#define NQ_FAST_STACK NQ_GPU_LEVELS
#endif

/* How a work-item takes the index of its next task (CUDA: warp-aggregated, in gpu_cuda.cu). */
#ifndef NQ_FAST_TAKE
#define NQ_FAST_TAKE(counter) NQ_ATOMIC_INC_G(counter)
#endif

/* The board's n, from a table's column bits. */
NQ_FN nq_u32 gpu_fast_n(const NQ_GLOBAL nq_gpu_table_t *tb) { return NQ_POPC(tb->full); }

/* Table word of level L (>= the tasks' level, <= m-2): the row below's cells (weight 8 only for
   the last row) with the row distance above bit n. */
NQ_FN nq_u32 gpu_fast_word(const NQ_GLOBAL nq_gpu_table_t *tb, nq_u32 L, nq_u32 n)
{
    nq_u32 cells = tb->open_of[L + 1];
    if (L + 2 == tb->m)
        cells &= tb->leaf8;
    return cells | (NQ_GEO_D1(tb->geo[L]) << n);
}

/*
 * One work-item's state in the fast loop. stk and tab are its first stack entry and table word;
 * the next depth is NQ_WG further (the group's arrays are [depth][work-item]).
 */
typedef struct {
    int top;                /* the stack's top slot, -1 when empty */
    nq_u32 n;               /* where the distance starts in a table word */
    nq_u32 base;            /* popcount of the task's root column mask: its level */
    nq_u32 lastpc;          /* popcount of the column mask of an entry whose children are leaves */
} nq_fast_lane_t;

/*
 * Starts task t of table tb on an empty stack: the table words of its levels, its root entry.
 * A task with no open cell leaves the stack empty.
 */
NQ_FN void gpu_fast_start(const NQ_GLOBAL nq_gpu_table_t *tb, nq_gpu_task_t t, NQ_LOCAL nq_u4 *stk,
                          NQ_LOCAL nq_u32 *tab, nq_fast_lane_t *ln)
{
    nq_u32 n = gpu_fast_n(tb), L0 = tb->level, m = tb->m;
    for (nq_u32 L = L0; L + 1 < m; L++)
        tab[(L - L0) * NQ_WG] = gpu_fast_word(tb, L, n);
    nq_u32 col = t.col | ~tb->full;
    ln->n = n;
    ln->base = NQ_POPC(col);
    ln->lastpc = ln->base + (m - 2 - L0);
    stk[0] = NQ_U4(t.open, col, t.dl, t.dr);
    ln->top = t.open ? 0 : -1;
}

/*
 * One step (see the top of the file). tab is the group's table and toff this work-item's offset
 * in it, less its root's level: a column mask's popcount indexes it, tab[popc(col) * NQ_WG + toff].
 */
#define NQ_FAST_STEP(stk, tab, toff, ln, steps, sols)                                              \
    do {                                                                                           \
        nq_u4 e_ = (stk)[(ln).top * NQ_WG];                                                        \
        nq_u32 bit_ = e_.x & (0u - e_.x), open_ = e_.x ^ bit_;                                     \
        (stk)[(ln).top * NQ_WG].x = open_;                                                         \
        nq_u32 pc_ = NQ_POPC(e_.y);                                                                \
        nq_u32 w_ = (tab)[(int)pc_ * NQ_WG + (toff)], s_ = w_ >> (ln).n;                           \
        nq_u32 nc_ = e_.y | bit_, nl_ = (e_.z | bit_) << s_, nr_ = (e_.w | bit_) >> s_;            \
        nq_u32 raw_ = w_ & ~(nc_ | nl_ | nr_);                                                     \
        int leaf_ = pc_ == (ln).lastpc;                                                            \
        (steps)++;                                                                                 \
        (sols) += leaf_ ? NQ_POPC(raw_) : 0u;                                                      \
        (ln).top -= open_ == 0;                                                                    \
        int push_ = !leaf_ && raw_ != 0;                                                           \
        if (push_)                                                                                 \
            (stk)[((ln).top + 1) * NQ_WG] = NQ_U4(raw_, nc_, nl_, nr_);                            \
        (ln).top += push_;                                                                         \
    } while (0)

#if !defined(__CUDACC__) || !defined(NQ_FAST_OWN_RUN)
/*
 * A work-item's whole life in a launch (the loop every backend but CUDA's own runs): take the
 * next task whenever the stack is empty, else step. stk and tab are the group's arrays, of
 * NQ_FAST_STACK depths each.
 */
NQ_FN void gpu_fast_run(NQ_GLOBAL const nq_u32 *tables, NQ_GLOBAL const nq_u32 *task_tab, nq_u32 ntasks,
                        NQ_GLOBAL const nq_gpu_task_t *tasks, NQ_GLOBAL nq_gpu_out_t *out,
                        NQ_GLOBAL nq_u32 *next_task, NQ_LOCAL nq_u4 *stk, NQ_LOCAL nq_u32 *tab)
{
    nq_u32 lid = NQ_LID();
    NQ_LOCAL nq_u4 *mine = stk + lid;
    int toff = 0;
    nq_fast_lane_t ln;
    nq_u64 steps = 0, sols = 0;
    nq_u32 cur = ntasks, next = NQ_FAST_TAKE(next_task);
    ln.top = -1;
    ln.n = ln.base = ln.lastpc = 0;
    for (;;) {
        if (ln.top < 0) {
            if (cur < ntasks) {
                out[cur].nodes = steps;
                out[cur].sols = sols;
            }
            steps = sols = 0;
            cur = next;
            if (cur >= ntasks)
                break;
            next = NQ_FAST_TAKE(next_task);
            const NQ_GLOBAL nq_gpu_table_t *tb =
                (const NQ_GLOBAL nq_gpu_table_t *)(tables + (nq_u64)task_tab[cur] * NQ_GPU_TABLE_WORDS);
            gpu_fast_start(tb, tasks[cur], mine, tab + lid, &ln);
            toff = (int)lid - (int)ln.base * NQ_WG;
            continue;
        }
        NQ_FAST_STEP(mine, tab, toff, ln, steps, sols);
    }
}
#endif

#endif
