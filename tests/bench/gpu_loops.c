/*
 * nq_gpu_loops N [ROWS]: the GPU searches compiled as C, on one core, over every shard of N that has
 * a GPU part (the tasks the engine would make, ROWS rows each, default the fast kernel's): steps a
 * solution and nanoseconds a solution of the fast loop (gpu_fast.h) and of the parity loop
 * (gpu_search.h), beside a plain row-by-row loop on the whole board with the mirror symmetry only,
 * the shape of the fastest public counter (its steps: one a placement above the last row). A CPU
 * is not a GPU: the steps are what carries over, the nanoseconds only rank the loops as C.
 * Prints one table row; `valgrind --tool=callgrind` on it counts the instructions.
 */
#include "clock.h"
#include "count.h"
#include "gpu.h"
#include "gpu_expand.h"
#include "gpu_fast.h"
#include "gpu_shard.h"

#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 4096 };

typedef struct { uint64_t sols, fast_steps, parity_nodes; double fast_s, parity_s; } loops_t;

/* One batch of tasks of table tb through both loops. */
static void run_batch(const nq_gpu_table_t *tb, const nq_gpu_task_t *tasks, size_t n, loops_t *r)
{
    static nq_u32 tab_of[BATCH];
    static nq_gpu_out_t out[BATCH];
    nq_u4 stk[NQ_FAST_STACK];
    nq_u32 words[NQ_FAST_STACK], counter = 0, pstk[4 * NQ_STACK];
    double t0 = nq_mono();
    gpu_fast_run((const nq_u32 *)tb, tab_of, (nq_u32)n, tasks, out, &counter, stk, words);
    double t1 = nq_mono();
    uint64_t psols = 0, fsols = 0;
    for (size_t i = 0; i < n; i++) {
        r->fast_steps += out[i].nodes;
        fsols += out[i].sols;
    }
    for (size_t i = 0; i < n; i++)
        gpu_task_search(tb, tb->level, tasks[i], pstk, 1, &r->parity_nodes, &psols);
    double t2 = nq_mono();
    if (psols != fsols) {
        fprintf(stderr, "nq_gpu_loops: the loops disagree (%llu, %llu solutions)\n", (unsigned long long)fsols,
                (unsigned long long)psols);
        exit(1);
    }
    r->sols += fsols * 8;               /* weight-8 solutions: 8 boards each */
    r->fast_s += t1 - t0;
    r->parity_s += t2 - t1;
}

static void run_shard(const uint8_t *spec, size_t len, int rows, loops_t *r)
{
    static nq_gpu_task_t tasks[BATCH];
    char err[256];
    nq_gpu_split_t sp;
    if (gpu_split_shard(spec, len, &sp, NULL, err, sizeof err) != 0 || !sp.gpu)
        return;
    nq_gpu_table_t tb;
    nq_gpu_expand_t e;
    gpu_table_build(&sp.plan, &tb);
    tb.level = (nq_u32)gpu_task_level(sp.plan.m, rows);
    if (!gpu_fast_fits(&tb))
        return;
    gpu_expand_init(&e, &tb, sp.plan.colfix, (int)tb.level);
    size_t n;
    while ((n = gpu_expand_next(&e, tasks, BATCH)) > 0)
        run_batch(&tb, tasks, n, r);
}

/* The plain loop: rows top to bottom, the first row's queen in the left half (the odd middle
   column's boards split by the second row's), the last row counted by popcount. Placements above the
   last row, and solutions, of the whole board. */
static void plain(int n, uint64_t *steps, uint64_t *sols)
{
    uint32_t full = (1u << n) - 1, cols[32], ls[32], rs[32], open[32];
    *steps = *sols = 0;
    for (uint32_t first = 0; first < (uint32_t)(n + 1) / 2; first++) {
        uint64_t st = 0, so = 0;
        int d = 1;
        uint32_t b = 1u << first;
        cols[1] = b;
        ls[1] = b << 1;
        rs[1] = b >> 1;
        open[1] = full & ~(cols[1] | ls[1] | rs[1]);
        if (n % 2 && first == (uint32_t)n / 2)
            open[1] &= (1u << (n / 2)) - 1;   /* the middle column: the second row's in the left half */
        while (d > 0) {
            uint32_t o = open[d];
            if (!o) {
                d--;
                continue;
            }
            uint32_t bit = o & (0u - o);
            open[d] = o ^ bit;
            st++;
            uint32_t c = cols[d] | bit, l = (ls[d] | bit) << 1, r = (rs[d] | bit) >> 1;
            uint32_t next = full & ~(c | l | r);
            if (d + 1 == n - 1) {
                so += (uint64_t)__builtin_popcount(next);
                continue;
            }
            d++;
            cols[d] = c;
            ls[d] = l;
            rs[d] = r;
            open[d] = next;
        }
        *steps += st;
        *sols += so * 2;                /* the mirror image of each */
    }
}

int main(int argc, char **argv)
{
    char err[256];
    int n = argc > 1 ? atoi(argv[1]) : 0, rows = argc > 2 ? atoi(argv[2]) : NQ_GPU_ROWS_FAST;
    if (n < 8 || n > 20 || rows < 2 || rows > NQ_FAST_STACK) {
        fprintf(stderr, "usage: nq_gpu_loops N [ROWS]   (8 <= N <= 20, 2 <= ROWS <= %d)\n", NQ_FAST_STACK);
        return 2;
    }
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, 0, err, sizeof err);
    if (!l) {
        fprintf(stderr, "nq_gpu_loops: %s\n", err);
        return 3;
    }
    loops_t r = { 0, 0, 0, 0, 0 };
    for (size_t i = 0; i < shards_count(l); i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        run_shard(b, len, rows, &r);
    }
    shards_destroy(&l);
    uint64_t psteps = 0, psols = 0;
    double t0 = nq_mono();
    plain(n, &psteps, &psols);
    double plain_s = nq_mono() - t0;
    double s = (double)r.sols;
    printf("| %d | %d | %.4g | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.2fx |\n", n, rows, s,
           (double)r.fast_steps / s, (double)r.parity_nodes / s, r.fast_s * 1e9 / s, r.parity_s * 1e9 / s,
           (double)psteps / (double)psols, plain_s * 1e9 / (double)psols,
           ((double)psteps / (double)psols) / ((double)r.fast_steps / s));
    return 0;
}
