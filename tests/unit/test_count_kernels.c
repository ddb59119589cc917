/*
 * The two counting kernels (count_fast.c's scalar loop, count_simd.c's 16
 * lanes) against each other, shard by shard: same weighted total, residues,
 * unique count and node count, on both orientations count_shard uses. Exits
 * 77 (skipped) on a CPU without AVX-512, where only the scalar kernel runs.
 */
#include "t.h"
#include "count_search.h"
#include "nq.h"

typedef struct {
    uint64_t total, unique, nodes;
    int r13, r15, rc;
} outcome_t;

static outcome_t run(int simd, const nq_plan_t *plan, const nq_kernel_ctl_t *ctl)
{
    nq_plan_t pl = *plan;
    nq_count_acc_t acc;
    outcome_t o;
    memset(&acc, 0, sizeof acc);
    acc.plan = &pl;
    /* "simd" goes through the picker: the vector kernel, or the scalar one where it declines */
    o.rc = simd ? search_fast(&pl, &acc, ctl, &o.nodes) : search_scalar(&pl, &acc, ctl, &o.nodes);
    o.total = acc.tally.total;
    o.unique = acc.unique;
    o.r13 = acc.tally.r13;
    o.r15 = acc.tally.r15;
    return o;
}

static int same(const outcome_t *a, const outcome_t *b)
{
    return a->rc == b->rc && a->total == b->total && a->unique == b->unique && a->nodes == b->nodes &&
           a->r13 == b->r13 && a->r15 == b->r15;
}

/* Plans whose solutions are all rare: the vector kernel's rare pass alone gives their nodes. */
static int rare_only;

/* Compares the kernels on one plan; counts the plans with rare (weight < 8) last-row cells. */
static void compare(const nq_plan_t *pl, int n, int depth, size_t i, const char *how, int *rare)
{
    outcome_t s = run(0, pl, NULL), v = run(1, pl, NULL);
    if (!same(&s, &v))
        fprintf(stderr, "  n=%d depth=%d shard %zu (%s): scalar %llu/%llu/%llu nodes, simd %llu/%llu/%llu\n",
                n, depth, i, how, (unsigned long long)s.total, (unsigned long long)s.unique,
                (unsigned long long)s.nodes, (unsigned long long)v.total, (unsigned long long)v.unique,
                (unsigned long long)v.nodes);
    T_CHECK(same(&s, &v));
    T_EQ_U64(s.rc, 0);
    *rare += pl->leafx != 0 && s.total != 0;
    rare_only += pl->leafx != 0 && s.total != 0 && !(pl->leaf8 & plan_open(pl, pl->m - 1));
}

/* Shard i of s, decoded, and its plan in one orientation. */
static void plan_of(const nq_shards_t *s, size_t i, int flip, nq_shard_desc_t *d, nq_plan_t *pl)
{
    char err[256];
    size_t len;
    uint8_t b[NQ_MAX_SPEC];
    len = shards_get(s, i, b);
    T_CHECK(shard_decode(b, len, d, err, sizeof err) == 0);
    plan_init(pl, d, flip);
}

static void skip_without_simd(void)
{
    if (!count_simd_available()) {
        fprintf(stderr, "  skipped: no AVX-512 on this CPU (or NQ_COUNT_KERNEL=scalar)\n");
        exit(77);
    }
}

T_TEST(test_kernels_agree_on_every_shard)
{
    char err[256];
    int rare = 0, plans = 0, fixed_b = 0;
    skip_without_simd();
    for (int n = 4; n <= 15; n++) {
        for (int depth = 1; depth <= 3 && depth <= n - 2; depth++) {
            if (n == 15 && depth > 1)
                break;
            nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
            T_CHECK(s != NULL);
            for (size_t i = 0; s && i < shards_count(s); i++) {
                nq_shard_desc_t d;
                nq_plan_t top, bottom;
                plan_of(s, i, 0, &d, &top);
                if (top.m >= 4) {
                    compare(&top, n, depth, i, "top-down", &rare);
                    plans++;
                }
                /* bottom-up as count_flipped runs it: row n-1 free, its weight-8 cells only;
                   or b fixed by the shard (encoding 2 at depth 2+), a weight-8 b */
                plan_of(s, i, 1, &d, &bottom);
                if (d.row_col[n - 1] < 0) {
                    bottom.block[0] |= ~d.bmask8;
                    bottom.leaf8 = bottom.full;
                    bottom.leafx = 0;
                }
                if (bottom.m >= 4 && d.flip && bottom.leaf8) {
                    compare(&bottom, n, depth, i, "bottom-up", &rare);
                    plans++;
                    fixed_b += d.row_col[n - 1] >= 0;
                }
            }
            shards_destroy(&s);
        }
    }
    fprintf(stderr, "  %d plans (%d bottom-up with b fixed), %d with rare last-row cells and solutions"
            " (%d with only those)\n", plans, fixed_b, rare, rare_only);
    T_CHECK(plans > 1000);
    T_CHECK(fixed_b > 100);
    T_CHECK(rare > 10);   /* the pass for rare cells was exercised */
    T_CHECK(rare_only > 10);
}

/* Fewer than 4 free rows is the scalar kernel's case: search_simd declines it, untouched, and
   the picker (search_fast) is still exact there. */
T_TEST(test_small_plans_fall_back)
{
    char err[256];
    int rare = 0, small = 0;
    skip_without_simd();
    for (int n = 6; n <= 9; n++)
    for (int depth = n - 4; depth <= n - 2; depth++) {
        nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
        T_CHECK(s != NULL);
        for (size_t i = 0; s && i < shards_count(s); i++) {
            nq_shard_desc_t d;
            nq_plan_t pl;
            plan_of(s, i, 0, &d, &pl);
            if (pl.m >= 2 && pl.m < 4) {
                nq_plan_t p2 = pl;
                nq_count_acc_t acc;
                uint64_t nodes = 0;
                memset(&acc, 0, sizeof acc);
                acc.plan = &p2;
                T_CHECK(search_simd(&p2, &acc, NULL, &nodes) == NQ_SIMD_DECLINED && nodes == 0 &&
                        acc.tally.total == 0);
                compare(&pl, n, depth, i, "small", &rare);
                small++;
            }
        }
        shards_destroy(&s);
    }
    T_CHECK(small > 0);
}

T_TEST(test_simd_cancel_and_progress)
{
    char err[256];
    atomic_int cancel = 1;
    _Atomic uint64_t progress = 0;
    nq_kernel_ctl_t ctl = { &cancel, &progress };
    skip_without_simd();
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 20, 1, err, sizeof err);
    T_CHECK(s != NULL);
    for (size_t i = 0; s && i < shards_count(s); i += shards_count(s) / 3) {
        nq_shard_desc_t d;
        nq_plan_t pl;
        plan_of(s, i, 0, &d, &pl);
        atomic_store(&progress, 0);
        outcome_t o = run(1, &pl, &ctl);
        T_EQ_U64(o.rc, 2);
        T_CHECK(atomic_load(&progress) >= NQ_KERNEL_POLL_NODES);
    }
    shards_destroy(&s);
}

T_RUN_ALL()
