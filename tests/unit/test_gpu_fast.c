/*
 * The fast GPU search (common/gpu/gpu_fast.h) compiled as C: every shard of N = 8..13 at every
 * depth (N = 14 sampled), split as the engine splits it, expanded to tasks
 * of 2 to 16 rows and counted by the fast loop, must give count_shard's total, unique count and
 * residues. Its nodes are its own; they must be the same from one run to the next.
 */
#include "t.h"
#include "count.h"
#include "gpu_expand.h"
#include "gpu_fast.h"
#include "gpu_shard.h"
#include "nq.h"

#include <stdlib.h>

enum { BATCH = 256 };

/* The fast loop over the tasks of one table, in batches, as a launch runs them (one work-item). */
static void fast_tasks(const nq_gpu_table_t *tb, nq_gpu_expand_t *e, uint64_t *steps, uint64_t *sols)
{
    static nq_gpu_task_t tasks[BATCH];
    static nq_u32 tab_of[BATCH];
    static nq_gpu_out_t out[BATCH];
    nq_u4 stk[NQ_FAST_STACK];
    nq_u32 words[NQ_FAST_STACK];
    for (;;) {
        size_t n = gpu_expand_next(e, tasks, BATCH);
        nq_u32 counter = 0;
        memset(out, 0xff, sizeof out);
        memset(tab_of, 0, sizeof tab_of);
        gpu_fast_run((const nq_u32 *)tb, tab_of, (nq_u32)n, tasks, out, &counter, stk, words);
        T_EQ_U64(counter, n + 1);       /* one take past the end: the work-item's last */
        for (size_t i = 0; i < n; i++) {
            T_CHECK(!__builtin_add_overflow(*steps, out[i].nodes, steps));
            T_CHECK(!__builtin_add_overflow(*sols, out[i].sols, sols));
        }
        if (n < BATCH)
            break;
    }
}

/* Shard spec through the fast search with tasks of `rows` rows; 0, or -1 when the split failed.
   *fits says whether the fast table could hold the plan. */
static int fast_count(const uint8_t *spec, size_t len, int rows, nq_count_result_t *r, int *fits)
{
    char err[256];
    nq_gpu_split_t sp;
    *fits = 1;
    if (gpu_split_shard(spec, len, &sp, NULL, err, sizeof err) != 0)
        return -1;
    uint64_t steps = 0, sols = 0;
    if (sp.gpu) {
        nq_gpu_table_t tb;
        nq_gpu_expand_t e;
        gpu_table_build(&sp.plan, &tb);
        tb.level = (nq_u32)gpu_task_level(sp.plan.m, rows);
        *fits = gpu_fast_fits(&tb);
        if (!*fits)
            return 0;
        gpu_expand_init(&e, &tb, sp.plan.colfix, (int)tb.level);
        fast_tasks(&tb, &e, &steps, &sols);
        T_CHECK(gpu_expand_done(&e));
        steps += e.nodes;
    }
    return gpu_split_finish(&sp, steps, sols, r, err, sizeof err);
}

static uint64_t shards_checked, gpu_parts;

static void check_list(int n, int depth, size_t step)
{
    char err[256];
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
    T_CHECK(l != NULL);
    for (size_t i = 0; l && i < shards_count(l); i += step) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        nq_count_result_t want, got, again;
        int fits, rows = 2 + (int)(i % 15);            /* tasks of 2 .. 16 rows */
        T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
        T_EQ_U64(fast_count(b, len, rows, &got, &fits), 0);
        T_CHECK(fits);
        if (got.total != want.total || got.unique != want.unique || got.res13 != want.res13 ||
            got.res15 != want.res15)
            fprintf(stderr, "  n=%d depth %d shard %zu rows %d: %llu/%llu, want %llu/%llu\n", n,
                    depth, i, rows, (unsigned long long)got.total, (unsigned long long)got.unique,
                    (unsigned long long)want.total, (unsigned long long)want.unique);
        T_EQ_U64(got.total, want.total);
        T_EQ_U64(got.unique, want.unique);
        T_EQ_U64(got.res13, want.res13);
        T_EQ_U64(got.res15, want.res15);
        T_EQ_U64(fast_count(b, len, rows, &again, &fits), 0);
        T_EQ_U64(again.nodes, got.nodes);
        shards_checked++;
        gpu_parts += got.nodes != want.nodes;
    }
    shards_destroy(&l);
}

T_TEST(test_gpu_fast_matches_count_shard_in_every_depth)
{
    for (int n = 8; n <= 13; n++)
        for (int depth = 1; depth <= n - 2; depth++)
            check_list(n, depth, 1);
    fprintf(stderr, "  %llu shards, %llu whose nodes differ from the CPU's (a GPU part)\n",
            (unsigned long long)shards_checked, (unsigned long long)gpu_parts);
    T_CHECK(gpu_parts > shards_checked / 2);
}

/* N = 14: every depth, a sample (every 7th shard at depths 1-4, every 97th of the
   2.2 million further down). */
T_TEST(test_gpu_fast_matches_count_shard_at_14)
{
    for (int depth = 1; depth <= 12; depth++)
        check_list(14, depth, depth < 5 ? 7 : 97);
    fprintf(stderr, "  %llu shards\n", (unsigned long long)shards_checked);
    T_CHECK(shards_checked > 10000);
}

static uint64_t pick(void *ud, uint64_t bound)
{
    uint64_t *x = ud;
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (*x >> 33) % bound;
}

/* The fast table holds the row distances up to n = 28: random shards (Knuth probes from the listed
   ones) at n = 20..28, with tasks of 13, 14 and 16 rows; and every level's distance in the plans'
   last 16 rows, however deep, is at most 3 (two fixed rows between free ones). */
T_TEST(test_gpu_fast_table_fits_up_to_28)
{
    char err[256];
    uint64_t seed = 777;
    int checked = 0;
    nq_u32 maxd = 0;
    for (int n = 20; n <= 28; n += 2) {
        /* unordered: the lease order's cost estimates are most of a list's time at these n */
        nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .unordered = 1 };
        nq_shards_t *s = shards_new_limited(NQ_KIND_COUNT, n, 2, NQ_SHARD_ENCODING, &lim, err, sizeof err);
        T_CHECK(s != NULL);
        for (int k = 0; s && k < 200; k++) {
            uint8_t b[NQ_MAX_SPEC], deep[NQ_MAX_SPEC];
            size_t len = shards_get(s, pick(&seed, shards_count(s)), b);
            double w;
            int dl = shard_probe(b, len, (int)pick(&seed, 5), pick, &seed, deep, &w);
            if (dl <= 0)
                continue;
            nq_shard_desc_t d;
            nq_plan_t pl;
            T_CHECK(shard_decode(deep, (size_t)dl, &d, err, sizeof err) == 0);
            plan_init(&pl, &d, d.flip);     /* the plan the split hands the GPU (no host part run) */
            if (pl.m < 2)
                continue;
            nq_gpu_table_t tb;
            gpu_table_build(&pl, &tb);
            for (int rows = 13; rows <= 16; rows += rows == 14 ? 2 : 1) {
                tb.level = (nq_u32)gpu_task_level(pl.m, rows);
                T_CHECK(gpu_fast_fits(&tb));
            }
            for (nq_u32 L = tb.level; L + 1 < tb.m; L++)
                maxd = NQ_GEO_D1(tb.geo[L]) > maxd ? NQ_GEO_D1(tb.geo[L]) : maxd;
            checked++;
        }
        shards_destroy(&s);
    }
    fprintf(stderr, "  %d plans at n = 20..28, largest distance in the last 16 rows: %u\n", checked, maxd);
    T_CHECK(checked > 300);
    T_CHECK(maxd <= 3);
}

T_RUN_ALL()
