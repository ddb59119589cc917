/*
 * The GPU search (common/gpu/gpu_search.h) compiled as C, against the scalar CPU kernel, plan
 * by plan: the host expansion down to every task level, then the tasks, must find the same
 * weight-8 solutions and exactly the same nodes as count_fast.c, under each column-test rule.
 * test_gpu_pairs.c runs the same cases with NQ_PAIRS 1 (level m-2 in closed form).
 */
#include "t.h"
#include "gpu_expand.h"
#include "nq.h"

#include <stdlib.h>

typedef struct { uint64_t nodes, sols, tasks; } gpu_sum_t;

/* The scalar kernel on the plan, with the rare cells left to nobody: what the GPU part counts. */
static gpu_sum_t cpu_count(const nq_plan_t *plan)
{
    nq_plan_t pl = *plan;
    nq_count_acc_t acc;
    gpu_sum_t s = { 0, 0, 0 };
    memset(&acc, 0, sizeof acc);
    pl.leafx = 0;
    acc.plan = &pl;
    T_EQ_U64(search_scalar(&pl, &acc, NULL, &s.nodes), 0);
    T_EQ_U64(acc.tally.total % 8, 0);
    s.sols = acc.tally.total / 8;
    T_EQ_U64(acc.unique, s.sols);
    return s;
}

/* The plan expanded down to `level` on the host, each task searched by gpu_task_search. */
static gpu_sum_t gpu_count(const nq_plan_t *pl, int level)
{
    nq_gpu_table_t tb;
    nq_gpu_expand_t e;
    nq_gpu_task_t tasks[64];
    nq_u32 stk[4 * NQ_STACK];
    gpu_sum_t s = { 0, 0, 0 };
    gpu_table_build(pl, &tb);
    gpu_expand_init(&e, &tb, pl->colfix, level);
    for (;;) {
        size_t n = gpu_expand_next(&e, tasks, 64);
        for (size_t i = 0; i < n; i++)
            gpu_task_search(&tb, (nq_u32)level, tasks[i], stk, 1, &s.nodes, &s.sols);
        if (n < 64)
            break;
    }
    T_CHECK(gpu_expand_done(&e));
    s.nodes += e.nodes;
    s.tasks = e.tasks;
    return s;
}

static int plans, cover5_differs;
static uint64_t levels_run;

/* Every task level of the plan, under no column test, the narrow one and the wide one. */
static void check_plan(const nq_plan_t *plan, const char *what, int n, size_t i, int all_levels)
{
    static const int rule[3] = { 0, NQ_COVER_LEFT_4, NQ_COVER_LEFT_5 };
    uint64_t nodes4 = 0;
    for (int r = 0; r < 3; r++) {
        nq_plan_t pl = *plan;
        pl.cover = rule[r];
        gpu_sum_t want = cpu_count(&pl);
        for (int level = 0; level <= pl.m - 2; level++) {
            if (!all_levels && level != 0 && level != pl.m - 2 && level != pl.m / 2)
                continue;
            gpu_sum_t got = gpu_count(&pl, level);
            levels_run++;
            if (got.nodes != want.nodes || got.sols != want.sols)
                fprintf(stderr, "  n=%d shard %zu %s rule %d level %d: cpu %llu sols %llu nodes, "
                        "gpu %llu sols %llu nodes\n", n, i, what, rule[r], level,
                        (unsigned long long)want.sols, (unsigned long long)want.nodes,
                        (unsigned long long)got.sols, (unsigned long long)got.nodes);
            T_EQ_U64(got.nodes, want.nodes);
            T_EQ_U64(got.sols, want.sols);
        }
        if (r == 1)
            nodes4 = want.nodes;
        if (r == 2)
            cover5_differs += want.nodes != nodes4;
    }
    plans++;
}

/* The plans count_shard hands its fast kernel for descriptor d: top-down, or bottom-up with
   the weight-8 cells of row n-1 (b free) or a weight-8 b fixed. */
static void check_desc(const nq_shard_desc_t *d, int n, size_t i, int all_levels)
{
    nq_plan_t top, bottom;
    plan_init(&top, d, 0);
    if (top.m >= 2)
        check_plan(&top, "top-down", n, i, all_levels);
    plan_init(&bottom, d, 1);
    if (d->row_col[n - 1] < 0) {
        bottom.block[0] |= ~d->bmask8;
        bottom.leaf8 = bottom.full;
        bottom.leafx = 0;
    }
    if (d->flip && bottom.m >= 2 && bottom.leaf8)
        check_plan(&bottom, "bottom-up", n, i, all_levels);
}

T_TEST(test_gpu_search_matches_cpu_on_every_shard)
{
    char err[256];
    for (int n = 8; n <= (NQ_PAIRS ? 13 : 14); n++)   /* the closed form: n = 14 adds nothing */
        for (int depth = 1; depth <= n - 2; depth++) {
            nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
            /* n = 14, a sample: every 9th shard at depths 1-4, every 41st of the 2.2 million
               further down (the whole of n = 14 took 4x n = 8..13's time, 3 minutes under ASan) */
            size_t step = n < 14 ? 1 : depth < 5 ? 9 : 41;
            T_CHECK(s != NULL);
            for (size_t i = 0; s && i < shards_count(s); i += step) {
                uint8_t b[NQ_MAX_SPEC];
                size_t len = shards_get(s, i, b);
                nq_shard_desc_t d;
                T_CHECK(shard_decode(b, len, &d, err, sizeof err) == 0);
                /* every task level up to n = 12; at 13 and 14 the first, middle and last */
                check_desc(&d, n, i, n <= 12);
            }
            shards_destroy(&s);
        }
    fprintf(stderr, "  %d plans, %llu expansions, %d where the wide test changed the nodes\n",
            plans, (unsigned long long)levels_run, cover5_differs);
    T_CHECK(plans > 10000);
    T_CHECK(cover5_differs > 1000);
}

static uint64_t pick(void *ud, uint64_t bound)
{
    uint64_t *x = ud;
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (*x >> 33) % bound;
}

/* N = 24..26, where the kernel runs its wide column test: random deep shards (Knuth probes
   from the listed ones, 13 free rows), ~10^4 nodes each, under the wide rule. */
T_TEST(test_gpu_search_matches_cpu_at_wide_n)
{
    char err[256];
    uint64_t seed = 12345;
    int wide = 0, checked = 0, differs = 0;
    uint64_t nodes = 0;
    for (int n = 24; n <= 26; n++) {
        /* unordered: the lease order's cost estimates are most of a list's time at these n */
        nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .unordered = 1 };
        nq_shards_t *s = shards_new_limited(NQ_KIND_COUNT, n, 2, NQ_SHARD_ENCODING, &lim, err, sizeof err);
        T_CHECK(s != NULL);
        for (int k = 0; s && k < 100; k++) {
            uint8_t b[NQ_MAX_SPEC], deep[NQ_MAX_SPEC];
            size_t len = shards_get(s, pick(&seed, shards_count(s)), b);
            double w;
            int dl = shard_probe(b, len, n - 17, pick, &seed, deep, &w);
            T_CHECK(dl >= 0);
            if (dl <= 0)
                continue;
            nq_shard_desc_t d;
            T_CHECK(shard_decode(deep, (size_t)dl, &d, err, sizeof err) == 0);
            nq_plan_t pl;
            plan_init(&pl, &d, d.flip);
            if (d.flip && d.row_col[n - 1] < 0) {   /* count_flipped's weight-8 plan */
                pl.block[0] |= ~d.bmask8;
                pl.leaf8 = pl.full;
            }
            plan_set_cover(&pl);
            wide += pl.cover == NQ_COVER_LEFT_5;
            if (pl.m < 2)
                continue;
            gpu_sum_t want = cpu_count(&pl);
            nq_plan_t p4 = pl;
            p4.cover = NQ_COVER_LEFT_4;
            differs += cpu_count(&p4).nodes != want.nodes;   /* the wide test pruned here */
            nodes += want.nodes;
            for (int level = 0; level <= pl.m - 2; level += 3) {
                gpu_sum_t got = gpu_count(&pl, level);
                T_EQ_U64(got.nodes, want.nodes);
                T_EQ_U64(got.sols, want.sols);
            }
            checked++;
        }
        shards_destroy(&s);
    }
    fprintf(stderr, "  %d deep shards at n = 24..26, %llu nodes; the wide test pruned %d of them\n", checked,
            (unsigned long long)nodes, differs);
    T_CHECK(checked > 200);
    T_EQ_U64(wide, checked);
    T_CHECK(differs > checked / 4);
}

/* The two ways work-items take tasks, run in C by one work-item: the work-group loop
   (gpu_group_run) over chunks of several shards in any order, and the loop that takes tasks one
   by one (gpu_free_run), each naming its shard's table; their outputs land on their own tasks. */
T_TEST(test_gpu_group_run_folds_chunks)
{
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 12, 2, err, sizeof err);
    T_CHECK(s != NULL);
    enum { MAXT = 20000, MAXS = 64 };
    static nq_gpu_table_t tabs[MAXS];
    static nq_gpu_task_t tasks[MAXT];
    static nq_gpu_out_t out[MAXT];
    static nq_gpu_chunk_t chunks[MAXT];
    static gpu_sum_t want[MAXS];
    static uint64_t host_nodes[MAXS];
    nq_u32 ntasks = 0, nchunks = 0, nshards = 0;
    for (size_t i = 0; s && i < shards_count(s) && nshards < MAXS; i++) {
        uint8_t b[NQ_MAX_SPEC];
        nq_shard_desc_t d;
        nq_plan_t pl;
        size_t len = shards_get(s, i, b);
        T_CHECK(shard_decode(b, len, &d, err, sizeof err) == 0);
        plan_init(&pl, &d, 0);
        if (pl.m < 4)
            continue;
        want[nshards] = cpu_count(&pl);
        gpu_table_build(&pl, &tabs[nshards]);
        nq_gpu_expand_t e;
        int level = gpu_task_level(pl.m, 5);
        tabs[nshards].level = (nq_u32)level;
        gpu_expand_init(&e, &tabs[nshards], pl.colfix, level);
        /* chunks of at most 3 tasks, so a shard spans several */
        for (;;) {
            size_t n = gpu_expand_next(&e, tasks + ntasks, 3);
            if (n)
                chunks[nchunks++] = (nq_gpu_chunk_t){ nshards, ntasks, (nq_u32)n, (nq_u32)level };
            ntasks += (nq_u32)n;
            if (n < 3)
                break;
        }
        host_nodes[nshards] = e.nodes;
        nshards++;
    }
    shards_destroy(&s);
    T_CHECK(nshards > 20);
    for (nq_u32 i = 0; i + 1 < nchunks; i += 2) {      /* out of order: pairs swapped */
        nq_gpu_chunk_t c = chunks[i];
        chunks[i] = chunks[i + 1];
        chunks[i + 1] = c;
    }
    nq_gpu_table_t tab;
    nq_u32 next_chunk = 0, cur, next, stk[4 * NQ_STACK];
    memset(out, 0xff, sizeof out);
    gpu_group_run((const nq_u32 *)tabs, chunks, nchunks, tasks, out, &next_chunk, &tab, &cur, &next, stk);
    T_EQ_U64(next_chunk, nchunks + 1);
    static gpu_sum_t got[MAXS];
    for (nq_u32 c = 0; c < nchunks; c++)
        for (nq_u32 k = 0; k < chunks[c].count; k++) {
            got[chunks[c].table].nodes += out[chunks[c].first + k].nodes;
            got[chunks[c].table].sols += out[chunks[c].first + k].sols;
        }
    for (nq_u32 i = 0; i < nshards; i++) {
        T_EQ_U64(got[i].nodes + host_nodes[i], want[i].nodes);
        T_EQ_U64(got[i].sols, want[i].sols);
    }

    /* the same tasks taken one by one (gpu_free_run), each naming its table, in reverse order */
    static nq_u32 task_tab[MAXT];
    static nq_gpu_task_t rev[MAXT];
    for (nq_u32 c = 0; c < nchunks; c++)
        for (nq_u32 k = 0; k < chunks[c].count; k++) {
            nq_u32 i = chunks[c].first + k, r = ntasks - 1 - i;
            rev[r] = tasks[i];
            task_tab[r] = chunks[c].table;
        }
    memset(out, 0xff, sizeof out);
    nq_u32 next_task = 0;
    gpu_free_run((const nq_u32 *)tabs, task_tab, ntasks, rev, out, &next_task, stk);
    T_EQ_U64(next_task, ntasks + 1);
    memset(got, 0, sizeof got);
    for (nq_u32 i = 0; i < ntasks; i++) {
        got[task_tab[i]].nodes += out[i].nodes;
        got[task_tab[i]].sols += out[i].sols;
    }
    for (nq_u32 i = 0; i < nshards; i++) {
        T_EQ_U64(got[i].nodes + host_nodes[i], want[i].nodes);
        T_EQ_U64(got[i].sols, want[i].sols);
    }
}

T_RUN_ALL()
