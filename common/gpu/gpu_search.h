/*
 * The GPU counting search: one source, three compilers. It compiles as OpenCL C 1.2 (embedded
 * in the binary and built at run time for the device, see gpu_cl.c), as C (the host expands
 * shards with its filter and the unit tests run the whole kernel in-process, under the
 * sanitizers, against the CPU kernels), and as CUDA C++ (gpu_cuda.cu, a measurement fallback
 * where NVIDIA's OpenCL cannot run). Address spaces, ids, barriers, atomics and popcount go
 * through the macros below; nothing else differs.
 *
 * What it computes is count_fast.c's search, node for node (see docs/gpu.md). Every level of a
 * shard's plan is entered with its raw open cells (the plan's open cells minus the columns and
 * diagonals of the queens above), and entering counts them all as nodes; then a filter keeps
 * the cells worth a queen:
 *   levels up to m-4: the look-ahead on rows L+1, L+2 and the last (a queen that leaves one of
 *     them no open cell is dropped), after the column test of encodings 4 and 5 (fast_viable);
 *   level m-3: the look-ahead on row m-2 only, then the column test on the cells it kept
 *     (fast_last3);
 *   level m-2: every cell (fast_last2);
 *   the last level is never entered: its raw cells are counted as nodes, and those of weight 8
 *   as solutions (the plan's leaf8; rare cells of other weights are the host's, see gpu_shard.c).
 * The host places the first T levels of a shard (gpu_expand.c, the same filter) and hands each
 * surviving queen of level T-1 over as a task: level T's filtered open cells and its masks.
 *
 * A task is searched by one work-item, depth first, with a stack of (open, col, dl, dr) per
 * level. The work-items are persistent, and take their tasks in one of two ways (NQ_CHUNKED):
 *   0: each work-item takes the launch's next task with a global atomic, whatever its shard, and
 *      reads that shard's table from global memory (through the cache): no work-item waits for
 *      another, and the host can order a launch's tasks largest first;
 *   1: each work-group takes a chunk (a run of tasks of one shard) with a global atomic, copies
 *      that shard's table into local memory, and its work-items take the chunk's tasks with a
 *      local atomic; the group waits for its slowest work-item at the end of each chunk.
 * The stack lives in local memory laid out [field][depth][lane]: whatever depth each lane of a
 * warp is at, its 32 lanes hit 32 banks.
 */
#ifndef NQ_GPU_SEARCH_H
#define NQ_GPU_SEARCH_H

#if defined(__OPENCL_VERSION__)
typedef uint nq_u32;
typedef ulong nq_u64;
#define NQ_FN static inline
#define NQ_GLOBAL __global
#define NQ_LOCAL __local
#define NQ_POPC(x) popcount(x)
#define NQ_LID() ((nq_u32)get_local_id(0))
#define NQ_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define NQ_ATOMIC_INC_G(p) atomic_inc(p)
#define NQ_ATOMIC_INC_L(p) atomic_inc(p)
#elif defined(__CUDACC__)
typedef unsigned int nq_u32;
typedef unsigned long long nq_u64;
#define NQ_FN __device__ static __forceinline__
#define NQ_GLOBAL
#define NQ_LOCAL
#define NQ_POPC(x) __popc(x)
#define NQ_LID() ((nq_u32)threadIdx.x)
#define NQ_BARRIER() __syncthreads()
#define NQ_ATOMIC_INC_G(p) atomicAdd((p), 1u)
#define NQ_ATOMIC_INC_L(p) atomicAdd((p), 1u)
#else
/* C: the host's expansion, and the kernel run in-process by one work-item (NQ_WG 1), so
   barriers are empty and atomics plain increments. */
#include <stdint.h>
typedef uint32_t nq_u32;
typedef uint64_t nq_u64;
#define NQ_FN static inline
#define NQ_GLOBAL
#define NQ_LOCAL
#define NQ_POPC(x) ((nq_u32)__builtin_popcount(x))
#define NQ_LID() 0u
#define NQ_BARRIER() ((void)0)
#define NQ_ATOMIC_INC_G(p) ((*(p))++)
#define NQ_ATOMIC_INC_L(p) ((*(p))++)
#endif

/* Compile-time parameters (the OpenCL host passes them as -D; see gpu_cl.c):
   NQ_WG work-items per group, NQ_STACK levels of stack a work-item has (the rows a task
   leaves, minus 2), NQ_STACK_LOCAL 1 for the stack in local memory, 0 in private, NQ_CHUNKED
   how work-items take tasks (above), NQ_PAIRS 1 to count level m-2 and the last row in closed
   form (gpu_pairs) instead of entering level m-2. */
#ifndef NQ_WG
#define NQ_WG 1
#endif
#ifndef NQ_STACK
#define NQ_STACK 30
#endif
#ifndef NQ_STACK_LOCAL
#define NQ_STACK_LOCAL 1
#endif
#ifndef NQ_CHUNKED
#define NQ_CHUNKED 0
#endif
#ifndef NQ_PAIRS
#define NQ_PAIRS 0
#endif
#if NQ_CHUNKED
#define NQ_TAB NQ_LOCAL    /* where the search reads a shard's table */
#else
#define NQ_TAB NQ_GLOBAL
#endif

#define NQ_GPU_LEVELS 32   /* a table's levels: NQ_SHARD_MAX_N rows at most */

/* How a level filters its raw open cells (see the top of the file). */
#define NQ_GPU_MAIN 0      /* levels 0..m-4 */
#define NQ_GPU_M3 1        /* level m-3 */
#define NQ_GPU_M2 2        /* level m-2 */

/*
 * One shard's plan, as the search reads it; u32 words only, so host and device agree on the
 * layout. Per level L:
 *   open_of[L]  its open cells before any queen of the search;
 *   geo[L]      d1 | d2 << 5 | dz << 10 | kind << 15 | cover << 17: the row distances from L
 *               to L+1, L+2 and the last level, the filter kind, and the rows left up to which
 *               the column test runs (0: it does not);
 *   gx[L]       the row distances to L+3, L+4, L+5 (the column test's extra rows), 5 bits each.
 * A distance is below 32 (rows of one board), so 5 bits hold it.
 */
typedef struct {
    nq_u32 open_of[NQ_GPU_LEVELS];
    nq_u32 geo[NQ_GPU_LEVELS];
    nq_u32 gx[NQ_GPU_LEVELS];
    nq_u32 m;        /* free rows of the plan */
    nq_u32 full;     /* the n column bits */
    nq_u32 leaf8;    /* the last level's cells that count as solutions (weight 8) */
    nq_u32 wide;     /* encoding 5's wide column test: a row it builds must keep an open cell */
    nq_u32 level;    /* the level its tasks start at */
} nq_gpu_table_t;

#define NQ_GPU_TABLE_WORDS (3 * NQ_GPU_LEVELS + 5)

/* A task: level `level` of shard table `table` entered, with these filtered open cells. */
typedef struct { nq_u32 open, col, dl, dr; } nq_gpu_task_t;
/* A chunk: `count` tasks of one shard from task index `first`, all at level `level`. */
typedef struct { nq_u32 table, first, count, level; } nq_gpu_chunk_t;
/* What a task found: nodes below its level (its own level's were counted by the host) and
   weight-8 solutions. */
typedef struct { nq_u64 nodes, sols; } nq_gpu_out_t;

#define NQ_GEO_D1(g) ((g) & 31u)
#define NQ_GEO_D2(g) (((g) >> 5) & 31u)
#define NQ_GEO_DZ(g) (((g) >> 10) & 31u)
#define NQ_GEO_KIND(g) (((g) >> 15) & 3u)
#define NQ_GEO_COVER(g) (((g) >> 17) & 15u)

/*
 * The cells b of a level whose queen leaves no open cell in a later row with open cells R, k
 * rows further: R inside {b, b << k, b >> k}. count_fast.c's fast_kills without its table:
 * A, B, C mark the b whose b, b << k, b >> k is in R; their bit-sliced sum (s1 s0) must equal
 * popcount(R), which only a row of at most 3 cells can.
 */
NQ_FN nq_u32 gpu_kills(nq_u32 R, nq_u32 k)
{
    nq_u32 A = R, B = R >> k, C = R << k, t = A ^ B;
    nq_u32 s0 = t ^ C, s1 = (A & B) | (C & t);
    nq_u32 p = NQ_POPC(R);
    nq_u32 w0 = 0u - (p & 1u), w1 = 0u - ((p >> 1) & 1u);
    return ~(s0 ^ w0) & ~(s1 ^ w1) & (p <= 3u ? ~0u : 0u);
}

/* Row `k` levels below a level with these masks: its open cells. */
NQ_FN nq_u32 gpu_row(nq_u32 open_of, nq_u32 col, nq_u32 dl, nq_u32 dr, nq_u32 k)
{
    return open_of & ~(col | (dl << k) | (dr >> k));
}

/* Level L's cells worth a queen, from its raw open cells (see the top of the file). */
NQ_FN nq_u32 gpu_filter(const NQ_TAB nq_gpu_table_t *tb, nq_u32 L, nq_u32 raw, nq_u32 col, nq_u32 dl,
                        nq_u32 dr)
{
    nq_u32 g = tb->geo[L], kind = NQ_GEO_KIND(g), cover = NQ_GEO_COVER(g);
    if (kind == NQ_GPU_M2)
        return raw;
    nq_u32 k1 = NQ_GEO_D1(g), kz = NQ_GEO_DZ(g);
    nq_u32 r1 = gpu_row(tb->open_of[L + 1], col, dl, dr, k1);
    nq_u32 rz = gpu_row(tb->open_of[tb->m - 1], col, dl, dr, kz);
    nq_u32 kill = gpu_kills(r1, k1), r2 = 0;
    if (kind == NQ_GPU_MAIN) {
        nq_u32 k2 = NQ_GEO_D2(g);
        r2 = gpu_row(tb->open_of[L + 2], col, dl, dr, k2);
        kill |= gpu_kills(r2, k2) | gpu_kills(rz, kz);
    }
    nq_u32 open = raw & ~kill;
    if (cover) {
        /* fast_viable covers with the raw cells, fast_last3 with those the look-ahead kept */
        nq_u32 cov = (kind == NQ_GPU_MAIN ? raw : open) | r1 | r2 | rz | col;
        nq_u32 dead = 0;
        for (nq_u32 j = 3; j + 2 <= cover; j++) {
            nq_u32 r = gpu_row(tb->open_of[L + j], col, dl, dr, (tb->gx[L] >> (5 * (j - 3))) & 31u);
            dead |= tb->wide && !r;
            cov |= r;
        }
        if (dead || cov != tb->full)
            open = 0;
    }
    return open;
}

/*
 * The last row's cells below every queen of level m-2 at once (count_simd.c's closed form): with
 * o the level's cells, R the last row's open cells before its queen and s the row distance, a
 * queen u leaves R minus {u, u << s, u >> s}, three different cells, so the sum over u is
 * |o| |R| minus the cells of R in o, o << s and o >> s.
 */
NQ_FN nq_u32 gpu_pairs(nq_u32 R, nq_u32 o, nq_u32 s)
{
    return NQ_POPC(o) * NQ_POPC(R) - NQ_POPC(R & o) - NQ_POPC(R & (o << s)) - NQ_POPC(R & (o >> s));
}

#if NQ_STACK_LOCAL
#define NQ_STK NQ_LOCAL
#else
#define NQ_STK
#endif

/*
 * One task, depth first from level `level` with its filtered open cells. stk is this
 * work-item's stack: field f of depth d at stk[(4 d + f) * stride]. Adds nodes and weight-8
 * solutions to *nodes and *sols.
 */
NQ_FN void gpu_task_search(const NQ_TAB nq_gpu_table_t *tb, nq_u32 level, nq_gpu_task_t t,
                           NQ_STK nq_u32 *stk, nq_u32 stride, nq_u64 *nodes_out, nq_u64 *sols_out)
{
    nq_u32 L = level, sp = 0, last = tb->m - 1, leaf8 = tb->leaf8;
    nq_u32 open = t.open, col = t.col, dl = t.dl, dr = t.dr;
    nq_u64 nodes = 0, sols = 0;
    for (;;) {
        if (open) {
            nq_u32 bit = open & (0u - open);
            open ^= bit;
            nq_u32 s = NQ_GEO_D1(tb->geo[L]);
            nq_u32 nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
            nq_u32 raw = tb->open_of[L + 1] & ~(nc | nl | nr);
            nodes += NQ_POPC(raw);
            if (L + 1 == last) {        /* the last row: counted, never entered */
                sols += NQ_POPC(raw & leaf8);
                continue;
            }
#if NQ_PAIRS
            if (L + 2 == last) {        /* level m-2 (no filter) and the last row, in closed form */
                nq_u32 s2 = NQ_GEO_D1(tb->geo[L + 1]);
                nq_u32 R = tb->open_of[last] & ~(nc | (nl << s2) | (nr >> s2));
                nodes += gpu_pairs(R, raw, s2);
                sols += gpu_pairs(R & leaf8, raw, s2);
                continue;
            }
#endif
            NQ_STK nq_u32 *e = stk + 4u * sp * stride;
            e[0] = open;
            e[stride] = col;
            e[2 * stride] = dl;
            e[3 * stride] = dr;
            sp++;
            L++;
            col = nc;
            dl = nl;
            dr = nr;
            open = gpu_filter(tb, L, raw, col, dl, dr);
        } else {
            if (sp == 0)
                break;
            sp--;
            L--;
            NQ_STK nq_u32 *e = stk + 4u * sp * stride;
            open = e[0];
            col = e[stride];
            dl = e[2 * stride];
            dr = e[3 * stride];
        }
    }
    *nodes_out += nodes;
    *sols_out += sols;
}

/* This work-item's part of the stack stk (the group's, or its own), and the stride between its
   words. */
#if NQ_STACK_LOCAL
#define NQ_MY_STACK(stk) ((stk) + NQ_LID())
#define NQ_STACK_STRIDE NQ_WG
#else
#define NQ_MY_STACK(stk) (stk)
#define NQ_STACK_STRIDE 1u
#endif

#if !NQ_CHUNKED || !defined(__OPENCL_VERSION__)
/*
 * NQ_CHUNKED 0: a work-item's whole life in a launch: the next task of the launch (task_tab
 * names its shard's table) until none is left.
 */
NQ_FN void gpu_free_run(NQ_GLOBAL const nq_u32 *tables, NQ_GLOBAL const nq_u32 *task_tab, nq_u32 ntasks,
                        NQ_GLOBAL const nq_gpu_task_t *tasks, NQ_GLOBAL nq_gpu_out_t *out,
                        NQ_GLOBAL nq_u32 *next_task, NQ_STK nq_u32 *stk)
{
    NQ_STK nq_u32 *mine = NQ_MY_STACK(stk);
    for (;;) {
        nq_u32 i = NQ_ATOMIC_INC_G(next_task);
        if (i >= ntasks)
            break;
        const NQ_GLOBAL nq_gpu_table_t *tb =
            (const NQ_GLOBAL nq_gpu_table_t *)(tables + (nq_u64)task_tab[i] * NQ_GPU_TABLE_WORDS);
        nq_u64 nodes = 0, sols = 0;
        gpu_task_search(tb, tb->level, tasks[i], mine, NQ_STACK_STRIDE, &nodes, &sols);
        out[i].nodes = nodes;
        out[i].sols = sols;
    }
}
#endif

#if NQ_CHUNKED || !defined(__OPENCL_VERSION__)
/*
 * NQ_CHUNKED 1: a work-group's whole life in a launch: take chunks until none is left, and in
 * each the chunk's tasks until none is left. tab, cur and next are the group's local scratch;
 * stk the group's stack (NQ_STACK_LOCAL) or this work-item's own.
 */
NQ_FN void gpu_group_run(NQ_GLOBAL const nq_u32 *tables, NQ_GLOBAL const nq_gpu_chunk_t *chunks,
                         nq_u32 nchunks, NQ_GLOBAL const nq_gpu_task_t *tasks, NQ_GLOBAL nq_gpu_out_t *out,
                         NQ_GLOBAL nq_u32 *next_chunk, NQ_LOCAL nq_gpu_table_t *tab, NQ_LOCAL nq_u32 *cur,
                         NQ_LOCAL nq_u32 *next, NQ_STK nq_u32 *stk)
{
    nq_u32 lid = NQ_LID(), stride = NQ_STACK_STRIDE;
    NQ_STK nq_u32 *mine = NQ_MY_STACK(stk);
    for (;;) {
        if (lid == 0) {
            *cur = NQ_ATOMIC_INC_G(next_chunk);
            *next = 0;
        }
        NQ_BARRIER();
        nq_u32 c = *cur;
        if (c >= nchunks)
            break;                      /* the same c in every work-item: all leave together */
        nq_gpu_chunk_t ch = chunks[c];
        NQ_LOCAL nq_u32 *w = (NQ_LOCAL nq_u32 *)tab;
        for (nq_u32 i = lid; i < NQ_GPU_TABLE_WORDS; i += NQ_WG)
            w[i] = tables[(nq_u64)ch.table * NQ_GPU_TABLE_WORDS + i];
        NQ_BARRIER();
        for (;;) {
            nq_u32 i = NQ_ATOMIC_INC_L(next);
            if (i >= ch.count)
                break;
            nq_u64 nodes = 0, sols = 0;
            gpu_task_search(tab, ch.level, tasks[ch.first + i], mine, stride, &nodes, &sols);
            out[ch.first + i].nodes = nodes;
            out[ch.first + i].sols = sols;
        }
        NQ_BARRIER();                   /* every work-item is done with tab and cur */
    }
}
#endif

#endif
