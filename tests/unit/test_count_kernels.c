/*
 * The two counting kernels (count_fast.c's scalar loop, count_simd.c's 16
 * lanes) against each other, shard by shard: same weighted total, residues,
 * unique count and node count, on both orientations count_shard uses. Exits
 * 77 (skipped) on a CPU without AVX-512, where only the scalar kernel runs.
 */
#include "t.h"
#include "count_search.h"
#include "nq.h"
#include <stdlib.h>

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
/* Plans where the column test searched fewer nodes than the search without it, and the wide
   test (n >= NQ_COVER_WIDE_N, forced here on every plan) fewer than the narrow one. */
static int cover_pruned, cover5_pruned;

static outcome_t compare_one(const nq_plan_t *pl, int n, int depth, size_t i, const char *how)
{
    outcome_t s = run(0, pl, NULL), v = run(1, pl, NULL);
    if (!same(&s, &v))
        fprintf(stderr, "  n=%d depth=%d shard %zu (%s, cover %d): scalar %llu/%llu/%llu nodes, simd %llu/%llu/%llu\n",
                n, depth, i, how, pl->cover, (unsigned long long)s.total, (unsigned long long)s.unique,
                (unsigned long long)s.nodes, (unsigned long long)v.total, (unsigned long long)v.unique,
                (unsigned long long)v.nodes);
    T_CHECK(same(&s, &v));
    T_EQ_U64(s.rc, 0);
    return v;
}

/* The same counts; never more nodes in the newer search. */
static void check_fewer(const outcome_t *newer, const outcome_t *older)
{
    T_CHECK(newer->total == older->total && newer->unique == older->unique && newer->r13 == older->r13 &&
            newer->r15 == older->r15 && newer->nodes <= older->nodes);
}

/* Compares the kernels on one plan under each search: no column test, the narrow one, and the
   wide one (which the kernel runs only from n = NQ_COVER_WIDE_N, forced here whatever n), and
   the searches with each other: the same counts, and never more nodes with a wider test. Counts the plans with rare (weight < 8)
   last-row cells. Returns the vector kernel's outcome on the plan as given, one of the three. */
static outcome_t compare(const nq_plan_t *pl, int n, int depth, size_t i, const char *how, int *rare)
{
    static const int rule[3] = { 0, NQ_COVER_LEFT_4, NQ_COVER_LEFT_5 };
    outcome_t by[3], v = { 0 };
    int own = 0;
    for (int e = 0; e < 3; e++) {
        nq_plan_t other = *pl;
        other.cover = rule[e];
        by[e] = compare_one(&other, n, depth, i, how);
        if (pl->cover == rule[e]) {
            v = by[e];
            own++;
        }
    }
    T_EQ_U64(own, 1);
    check_fewer(&by[1], &by[0]);
    check_fewer(&by[2], &by[1]);
    cover_pruned += by[1].nodes < by[0].nodes;
    cover5_pruned += by[2].nodes < by[1].nodes;
    *rare += pl->leafx != 0 && v.total != 0;
    rare_only += pl->leafx != 0 && v.total != 0 && !(pl->leaf8 & plan_open(pl, pl->m - 1));
    return v;
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
                   or b fixed by the shard, a weight-8 b */
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
            " (%d with only those), %d with fewer nodes by the column test, %d fewer again by the wide one\n",
            plans, fixed_b, rare, rare_only, cover_pruned, cover5_pruned);
    T_CHECK(plans > 1000);
    T_CHECK(cover_pruned > 1000);   /* the column test pruned, and left every count as it was */
    T_CHECK(cover5_pruned > 1000);
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

/* A solution symmetric under the rotation by 180 degrees, by backtracking over pairs of rows
   (n = 0 or 1 mod 4; the centre cell for odd n): 1 found, 0 none. */
static int symmetric_solution(int n, int i, uint8_t *q, uint64_t *used)
{
    if (i == n / 2) {
        if (n % 2 == 0)
            return 1;
        q[i] = (uint8_t)i;
        for (int r = 0; r < i; r++)
            if (q[r] == i || abs(q[r] - i) == i - r)
                return 0;
        return 1;
    }
    for (int c = 0; c < n; c++) {
        int ok = !(*used >> c & 1) && c != n - 1 - c;
        for (int r = 0; ok && r < i; r++)
            ok = abs(q[r] - c) != i - r && abs(q[n - 1 - r] - c) != n - 1 - i - r;
        ok = ok && abs((n - 1 - c) - c) != n - 1 - 2 * i;   /* the pair's own two queens */
        if (!ok)
            continue;
        q[i] = (uint8_t)c;
        q[n - 1 - i] = (uint8_t)(n - 1 - c);
        *used |= 1ull << c | 1ull << (n - 1 - c);
        if (symmetric_solution(n, i + 1, q, used))
            return 1;
        *used &= ~(1ull << c | 1ull << (n - 1 - c));
    }
    return 0;
}

/*
 * Plans as deep as a campaign's (n = 20..32, 16-29 free rows), too big to search whole: every
 * free row cut to a known solution's cell and three others, so the tree is small but has as
 * many levels as a large shard's. The rare pass carries as many path words as the levels need
 * (count_simd.c, rare_words: 3 to 5 here, at most 2 in the shards above). The known solution is
 * symmetric under the rotation by 180 degrees and every last-row cell is made rare with that
 * stabilizer (or every other one, so both passes run): its unique check then compares the whole
 * board with its image, row by row to the end, so a board rebuilt wrong from its path shows.
 */
T_TEST(test_kernels_agree_on_deep_plans)
{
    static const int sizes[] = { 20, 21, 24, 25, 28, 29, 32 };
    int rare = 0, plans = 0;
    uint64_t unique = 0;
    skip_without_simd();
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (uint64_t seed = 1; seed <= 2; seed++)
    for (int mixed = 0; mixed <= 1; mixed++) {
        int n = sizes[si];
        uint8_t q[NQ_SHARD_MAX_N];
        uint64_t used = 0;
        T_CHECK(symmetric_solution(n, 0, q, &used));
        nq_shard_desc_t d;
        memset(&d, 0, sizeof d);
        d.version = NQ_SHARD_ENCODING; d.kind = NQ_KIND_COUNT; d.n = n; d.mode = NQ_SHARD_BORDER; d.k = 1;
        memset(d.row_col, -1, sizeof d.row_col);
        for (int r = 0; r < n - 1; r++)      /* the border queens of row 0, column 0 and column n-1 */
            if (r == 0 || q[r] == 0 || q[r] == n - 1)
                d.row_col[r] = (int8_t)q[r];
        for (int c = 0; c < n; c++) {
            int eight = mixed && c % 2 != q[n - 1] % 2;
            d.bweight[c] = eight ? 8 : 4;
            d.bstab[c] = eight ? 0x01 : 0x05;
            *(eight ? &d.bmask8 : &d.bmaskx) |= 1u << c;
        }
        nq_plan_t pl;
        plan_init(&pl, &d, 0);
        uint64_t rng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)n;
        for (int L = 0; L < pl.m; L++) {
            uint32_t keep = 1u << q[pl.row[L]];
            while (__builtin_popcount(keep) < 4) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                keep |= 1u << (rng >> 33) % (uint64_t)n;
            }
            pl.block[L] |= pl.full & ~keep;
        }
        outcome_t o = compare(&pl, n, 0, (size_t)seed, mixed ? "deep, mixed" : "deep, rare only", &rare);
        T_CHECK(o.unique >= 1);   /* the symmetric solution, at least */
        unique += o.unique;
        plans++;
    }
    fprintf(stderr, "  %d deep plans, %d with rare solutions, %llu unique\n", plans, rare, (unsigned long long)unique);
    T_CHECK(plans == 28 && rare == 28);
}

T_RUN_ALL()
