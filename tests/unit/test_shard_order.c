/*
 * The lease order and cost estimates (shard_order.c, shard_list_cost.c, shard_cost.c): order 2
 * is a deterministic permutation by estimate with consistent sums,
 * by shard and (forced by the test hook) by block; the estimator walks exactly count_shard's
 * tree; its estimates rank shards as count_shard's nodes do; a stop flag ends the estimates.
 */
#include "t.h"
#include "count.h"
#include "rng.h"
#include "shard.h"
#include "shard_cost.h"

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* What every order must give: a permutation, positive costs, cost_at = cost of at, sums that add
   up, and shards_each_at walking the same positions. Returns the failures (0 = consistent). */
typedef struct { const nq_shards_t *s; uint64_t pos, bad; } walk_check_t;

static int walk_check(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    walk_check_t *c = ud;
    uint8_t want[NQ_MAX_SPEC];
    size_t wl = shards_get(c->s, i, want);
    c->bad += i != shards_at(c->s, c->pos) || wl != len || memcmp(want, spec, len) != 0;
    c->pos++;
    return 0;
}

static uint64_t order_check(const nq_shards_t *s)
{
    uint64_t n = shards_count(s), bad = 0;
    uint8_t *seen = calloc(n, 1);
    double sum = 0;
    for (uint64_t p = 0; p < n; p++) {
        uint64_t i = shards_at(s, p);
        if (i >= n || seen[i]++) {
            bad++;
            continue;
        }
        double c = shards_cost_at(s, p), before = shards_cost_before(s, p);
        bad += !(c > 0) || c != shards_cost(s, i);
        bad += fabs(before - sum) > 1e-9 * (sum + 1);
        sum += c;
    }
    bad += fabs(shards_cost_total(s) - sum) > 1e-9 * sum || shards_cost_before(s, n) != shards_cost_total(s);
    bad += shards_cost(s, n) != 0 || shards_cost_at(s, n) != 0;
    uint64_t runs[] = { 1, 3, 64 };
    for (size_t r = 0; r < 3; r++) {
        walk_check_t c = { s, 0, 0 };
        for (uint64_t p = 0; p < n; p += runs[r]) {
            c.pos = p;
            shards_each_at(s, p, runs[r], walk_check, &c);
        }
        bad += c.bad;
    }
    free(seen);
    return bad;
}

/* Two builds of order 2 give the same positions and costs, bit for bit. */
static uint64_t order_differences(const nq_shards_t *a, const nq_shards_t *b)
{
    uint64_t diff = shards_count(a) != shards_count(b);
    for (uint64_t p = 0; !diff && p < shards_count(a); p++)
        diff += shards_at(a, p) != shards_at(b, p) || shards_cost_at(a, p) != shards_cost_at(b, p);
    return diff;
}

static const int lists[][4] = {   /* kind, N, depth, encoding */
    { NQ_KIND_COUNT, 12, 1, 5 }, { NQ_KIND_COUNT, 12, 4, 5 }, { NQ_KIND_COUNT, 13, 3, 5 },
    { NQ_KIND_COUNT, 14, 2, 5 }, { NQ_KIND_COUNT, 5, 0, 5 }, { NQ_KIND_COUNT, 3, 0, 5 },
    { NQ_KIND_ENUMERATE, 9, 3, 5 }, { NQ_KIND_COUNT, 19, 1, 5 },
};

/* Order 2 by shard: deterministic, consistent, and largest estimate first, whether named or the
   default of shards_new_ex; any other order is refused by name. */
T_TEST(test_order_cost_by_shard)
{
    char err[256];
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const int *l = lists[k];
        nq_shards_t *a = shards_new_ordered(l[0], l[1], l[2], l[3], NQ_ORDER_COST, err, sizeof err);
        nq_shards_t *b = shards_new_ordered(l[0], l[1], l[2], l[3], NQ_ORDER_COST, err, sizeof err);
        nq_shards_t *old = shards_new_ex(l[0], l[1], l[2], l[3], err, sizeof err);
        T_CHECK(a && b && old);
        if (!a || !b || !old)
            continue;
        T_EQ_U64(shards_order(a), NQ_ORDER_COST);
        T_EQ_U64(order_check(a), 0);
        T_EQ_U64(shards_order(old), NQ_ORDER_COST);
        T_EQ_U64(order_differences(a, old), 0);
        T_EQ_U64(order_differences(a, b), 0);
        uint64_t rises = 0;
        for (uint64_t p = 1; p < shards_count(a); p++)
            rises += shards_cost_at(a, p) > shards_cost_at(a, p - 1);
        T_EQ_U64(rises, 0);
        shards_destroy(&a);
        shards_destroy(&b);
        shards_destroy(&old);
    }
    for (int order = 1; order <= 3; order += 2) {
        nq_shards_t *other = shards_new_ordered(NQ_KIND_COUNT, 8, 1, NQ_SHARD_ENCODING, order, err, sizeof err);
        T_CHECK(other == NULL && strstr(err, "lease order") != NULL);
    }
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .order = 3 };
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 10, 1, 5, &lim, err, sizeof err) == NULL);
    T_CHECK(lim.why == NQ_SHARDS_REFUSED && strstr(err, "lease order 3 not supported") != NULL);
    lim.order = -1;
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 10, 1, 5, &lim, err, sizeof err) == NULL);
}

#ifdef NQ_TEST_FAULTS
/* The block a descriptor belongs to: its root and the levels above the last two (shard.h). */
static size_t block_key(const uint8_t *spec, size_t len, uint8_t *key)
{
    int border = spec[3] == NQ_SHARD_BORDER, k = spec[5], L = border ? k - 1 : k, split = L > 2 ? L - 2 : 0;
    size_t n = (size_t)(border + split);
    memcpy(key, spec + 6, n);                      /* a, then the block's levels */
    memcpy(key + n, spec + 6 + k, len - 6 - (size_t)k);   /* c, d, the direction */
    return n + len - 6 - (size_t)k;
}

/* Walks the order block by block: each block's shards together and consecutive, one per-shard
   cost, falling from block to block (to the 24 bits and the whole node the key keeps). Returns the
   failures and the number of blocks. */
static uint64_t blocks_check(const nq_shards_t *s, uint64_t *nblocks)
{
    uint64_t bad = 0, n = shards_count(s);
    uint8_t prev[NQ_MAX_SPEC], key[NQ_MAX_SPEC], spec[NQ_MAX_SPEC];
    size_t prev_len = 0;
    double last = INFINITY;
    *nblocks = 0;
    for (uint64_t p = 0; p <= n; p++) {
        size_t kl = 0;
        if (p < n)
            kl = block_key(spec, shards_get(s, shards_at(s, p), spec), key);
        if (p > 0 && p < n && kl == prev_len && memcmp(key, prev, kl) == 0) {
            bad += shards_at(s, p) != shards_at(s, p - 1) + 1;
            bad += shards_cost_at(s, p) != shards_cost_at(s, p - 1);
            continue;
        }
        if (p < n) {                               /* a block starts */
            bad += shards_cost_at(s, p) > last * (1 + 1e-6) + 1;   /* a node: the mean is an integer */
            last = shards_cost_at(s, p);
            memcpy(prev, key, kl);
            prev_len = kl;
            ++*nblocks;
        }
    }
    return bad;
}

/* Past the threshold (lowered here), order 2 goes by block: the same guarantees as by shard, each
   block's shards together in list order sharing its estimate, blocks by their estimate a shard,
   largest first; deterministic. Below it, the same lists go by shard. */
T_TEST(test_order_cost_by_block)
{
    char err[256];
    const int big[][4] = { { NQ_KIND_COUNT, 12, 5, 5 }, { NQ_KIND_COUNT, 13, 3, 5 },
                           { NQ_KIND_COUNT, 11, 6, 5 }, { NQ_KIND_ENUMERATE, 10, 4, 5 } };
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        const int *l = big[k];
        nq_shards_t *by_shard = shards_new_ordered(l[0], l[1], l[2], l[3], NQ_ORDER_COST, err, sizeof err);
        shards_test_blocks_from(100);
        nq_shards_t *a = shards_new_ordered(l[0], l[1], l[2], l[3], NQ_ORDER_COST, err, sizeof err);
        nq_shards_t *b = shards_new_ordered(l[0], l[1], l[2], l[3], NQ_ORDER_COST, err, sizeof err);
        shards_test_blocks_from(0);
        T_CHECK(a && b && by_shard && shards_count(a) > 100);
        if (!a || !b || !by_shard)
            continue;
        uint64_t nblocks = 0, nshard_blocks = 0;
        T_EQ_U64(order_check(a), 0);
        T_EQ_U64(order_differences(a, b), 0);
        T_EQ_U64(blocks_check(a, &nblocks), 0);
        T_CHECK(blocks_check(by_shard, &nshard_blocks) > 0);   /* by shard, blocks mix */
        T_CHECK(nblocks < shards_count(a));
        fprintf(stderr, "  kind %d N=%d depth %d: %llu shards in %llu blocks\n", l[0], l[1], l[2],
                (unsigned long long)shards_count(a), (unsigned long long)nblocks);
        shards_destroy(&a);
        shards_destroy(&b);
        shards_destroy(&by_shard);
    }
}
#endif

/* The estimator's tree is count_shard's, node for node: its exact walk gives the kernel's nodes
   for every shard at several depths, count and enumerate. */
typedef struct { uint64_t shards, bad; } exact_t;

static int exact_one(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    exact_t *x = ud;
    nq_shard_desc_t d;
    nq_cost_plan_t cp;
    nq_count_result_t r = { 0 };
    char err[256];
    (void)i;
    x->shards++;
    if (shard_decode(spec, len, &d, err, sizeof err) || cost_plan_init(&cp, &d)) {
        x->bad++;
        return 0;
    }
    if (d.kind == NQ_KIND_COUNT && count_shard(spec, len, &r, NULL, err, sizeof err) != 0) {
        x->bad++;
        return 0;
    }
    if (d.kind == NQ_KIND_COUNT && cost_exact(&cp) != r.nodes) {
        if (x->bad++ < 3)
            fprintf(stderr, "  N=%d depth %d: exact %llu, count_shard %llu\n", d.n, d.k,
                    (unsigned long long)cost_exact(&cp), (unsigned long long)r.nodes);
    }
    return 0;
}

T_TEST(test_cost_tree_is_the_kernels)
{
    char err[256];
    uint64_t shards = 0;
    for (int n = 4; n <= 13; n++)
        for (int depth = 1; depth <= 4 && depth <= n - 2; depth++) {
            nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
            T_CHECK(s != NULL);
            exact_t x = { 0, 0 };
            if (s)
                shards_each(s, exact_one, &x);
            T_EQ_U64(x.bad, 0);
            shards += x.shards;
            shards_destroy(&s);
        }
    fprintf(stderr, "  %llu shards: the estimator's exact walk equals count_shard's nodes\n",
            (unsigned long long)shards);
}

/* Ranks, ties averaged; Spearman's correlation is Pearson's on them. */
typedef struct { double v; uint64_t i; } ranked_t;

static int cmp_ranked(const void *x, const void *y)
{
    double a = ((const ranked_t *)x)->v, b = ((const ranked_t *)y)->v;
    return a < b ? -1 : a > b;
}

static void ranks(const double *v, uint64_t n, double *r)
{
    ranked_t *k = malloc(n * sizeof *k);
    for (uint64_t i = 0; i < n; i++)
        k[i] = (ranked_t){ v[i], i };
    qsort(k, n, sizeof *k, cmp_ranked);
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j + 1 < n && k[j + 1].v == k[i].v)
            j++;
        for (uint64_t t = i; t <= j; t++)
            r[k[t].i] = (double)(i + j) / 2;
        i = j + 1;
    }
    free(k);
}

static double spearman(const double *a, const double *b, uint64_t n)
{
    double *ra = malloc(n * sizeof *ra), *rb = malloc(n * sizeof *rb), ma = 0, mb = 0, ab = 0, aa = 0, bb = 0;
    ranks(a, n, ra);
    ranks(b, n, rb);
    for (uint64_t i = 0; i < n; i++) {
        ma += ra[i] / (double)n;
        mb += rb[i] / (double)n;
    }
    for (uint64_t i = 0; i < n; i++) {
        ab += (ra[i] - ma) * (rb[i] - mb);
        aa += (ra[i] - ma) * (ra[i] - ma);
        bb += (rb[i] - mb) * (rb[i] - mb);
    }
    free(ra);
    free(rb);
    return ab / sqrt(aa * bb);
}

/*
 * Quality: over every shard of count N=14..16 (default depth), the estimates rank shards as
 * count_shard's nodes do (measured 0.97 each; the floor leaves room for another seed's luck),
 * and sum, less each shard's NQ_SHARD_COST_FLOOR, to within 3 % of the nodes counted.
 */
T_TEST(test_cost_ranks_like_true_nodes)
{
    char err[256];
    for (int n = 14; n <= 16; n++) {
        nq_shards_t *s = shards_new_ordered(NQ_KIND_COUNT, n, 0, NQ_SHARD_ENCODING, NQ_ORDER_COST, err,
                                            sizeof err);
        T_CHECK(s != NULL);
        if (!s)
            continue;
        uint64_t S = shards_count(s);
        double *truth = malloc(S * sizeof *truth), *est = malloc(S * sizeof *est);
        double counted = 0;
        for (uint64_t p = 0; p < S; p++) {
            uint8_t spec[NQ_MAX_SPEC];
            nq_count_result_t r;
            uint64_t i = p;
            size_t len = shards_get(s, i, spec);
            T_CHECK(count_shard(spec, len, &r, NULL, err, sizeof err) == 0);
            truth[i] = (double)r.nodes;
            counted += truth[i];
            est[i] = shards_cost(s, i);
        }
        double rho = spearman(truth, est, S);
        double ratio = (shards_cost_total(s) - (double)S * NQ_SHARD_COST_FLOOR) / counted;
        fprintf(stderr, "  N=%d, %llu shards: rank correlation %.3f, total %.4f of the nodes counted\n", n,
                (unsigned long long)S, rho, ratio);
        T_CHECK(rho >= 0.93);
        T_CHECK(ratio > 0.97 && ratio < 1.03);
        free(truth);
        free(est);
        shards_destroy(&s);
    }
}

/* A stop flag set while order 2's estimates run (N=22, depth 3: the listing is over in tens of
   milliseconds once the directions are known, the estimates take a second) ends the build at
   once: NULL, NQ_SHARDS_STOPPED. */
typedef struct { atomic_int *stop; useconds_t after; } stopper_t;

static void *stop_later(void *arg)
{
    stopper_t *st = arg;
    usleep(st->after);
    atomic_store(st->stop, 1);
    return NULL;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

T_TEST(test_cost_estimates_stop)
{
    char err[256];
    atomic_int stop = 0;
    nq_shards_limits_t bare = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .unordered = 1 };
    nq_shards_t *warm = shards_new_limited(NQ_KIND_COUNT, 22, 3, NQ_SHARD_ENCODING, &bare, err, sizeof err);
    double t0 = mono();                         /* the directions, cached: the listing alone */
    shards_destroy(&warm);
    warm = shards_new_limited(NQ_KIND_COUNT, 22, 3, NQ_SHARD_ENCODING, &bare, err, sizeof err);
    double listing = mono() - t0;
    shards_destroy(&warm);
    /* well past the listing (a sanitizer build lists slower), well before order 2's estimates end */
    double after = listing * 3 > 0.3 ? listing * 3 : 0.3;
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .stop = &stop,
                               .order = NQ_ORDER_COST };
    stopper_t st = { &stop, (useconds_t)(after * 1e6) };
    pthread_t th;
    pthread_create(&th, NULL, stop_later, &st);
    t0 = mono();
    nq_shards_t *s = shards_new_limited(NQ_KIND_COUNT, 22, 3, NQ_SHARD_ENCODING, &lim, err, sizeof err);
    double took = mono() - t0;
    pthread_join(th, NULL);
    fprintf(stderr, "  N=22 depth 3: listing %.3f s; order 2 stopped after %.3f s (stop at %.3f s)\n",
            listing, took, after);
    T_CHECK(s == NULL && lim.why == NQ_SHARDS_STOPPED && strstr(err, "stopped") != NULL);
    T_CHECK(took < after + 2.0);
    shards_destroy(&s);
}

T_RUN_ALL()
