/* The counting kernel: shard sums against OEIS A000170/A002562, residues, depths, refusals, overflow. */
#include "t.h"
#include "count.h"
#include "count_d4.h"
#include "enumerate.h"
#include "proto.h"
#include "shard.h"
#include "u128.h"

#include <math.h>

typedef struct { uint64_t total, unique; } oeis_t;

/* Known counts from tests/data/oeis-counts.tsv (for checking only). */
static int oeis_load(oeis_t *o, int maxn)
{
    char path[512], line[256];
    const char *src = getenv("NQ_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/oeis-counts.tsv", src ? src : ".");
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "  cannot open %s\n", path);
        return -1;
    }
    int got = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long t, u;
        int n;
        if (line[0] != '#' && sscanf(line, "%d %llu %llu", &n, &t, &u) == 3 && n >= 1 && n <= maxn) {
            o[n].total = t; o[n].unique = u;
            got++;
        }
    }
    fclose(f);
    return got == maxn ? 0 : -1;
}

/* Sums every shard of (n, depth); checks each shard's residues on the way. */
static int count_all_nodes(int n, int depth, uint64_t *total, uint64_t *unique, size_t *nshards,
                           uint64_t *nodes)
{
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
    if (!s) {
        fprintf(stderr, "  shards_new(%d, %d): %s\n", n, depth, err);
        return -1;
    }
    *total = *unique = *nodes = 0;
    *nshards = shards_count(s);
    int bad = 0;
    for (size_t i = 0; i < shards_count(s); i++) {
        size_t len;
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(s, i, b);
        nq_count_result_t r;
        if (count_shard(b, len, &r, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "  n=%d shard %zu: %s\n", n, i, err);
            bad = 1;
            break;
        }
        if (r.res13 != r.total % 13 || r.res15 != r.total % 15)
            bad = 1;
        *total += r.total;
        *unique += r.unique;
        *nodes += r.nodes;
    }
    shards_destroy(&s);
    return bad ? -1 : 0;
}

static int count_all(int n, int depth, uint64_t *total, uint64_t *unique, size_t *nshards)
{
    uint64_t nodes;
    return count_all_nodes(n, depth, total, unique, nshards, &nodes);
}

T_TEST(test_oeis_1_to_14)
{
    oeis_t o[15];
    T_CHECK(oeis_load(o, 14) == 0);
    for (int n = 1; n <= 14; n++) {
        uint64_t total = 0, unique = 0;
        size_t ns;
        T_CHECK(count_all(n, 0, &total, &unique, &ns) == 0);
        T_EQ_U64(total, o[n].total);
        T_EQ_U64(unique, o[n].unique);
    }
}

T_TEST(test_depths_agree)
{
    oeis_t o[15];
    T_CHECK(oeis_load(o, 14) == 0);
    for (int n = 4; n <= 11; n++) {
        for (int d = 1; d <= n - 2 && d <= 4; d++) {
            uint64_t total = 0, unique = 0;
            size_t ns;
            T_CHECK(count_all(n, d, &total, &unique, &ns) == 0);
            T_EQ_U64(total, o[n].total);
            T_EQ_U64(unique, o[n].unique);
        }
    }
}

/*
 * Splitting deeper never adds search: a shard fixes exactly the levels the
 * kernel would branch on first (shard.h), so the shards of depth d search
 * the depth-1 tree minus its top levels and minus dead prefixes.
 */
T_TEST(test_depth_invariant_nodes)
{
    for (int n = 8; n <= 14; n++) {
        uint64_t total, unique, base = 0, prev, nodes;
        size_t ns;
        T_CHECK(count_all_nodes(n, 1, &total, &unique, &ns, &base) == 0);
        prev = base;
        for (int d = 2; d <= n - 2; d++) {
            T_CHECK(count_all_nodes(n, d, &total, &unique, &ns, &nodes) == 0);
            double ratio = (double)nodes / (double)base;
            if (n >= 12 && d <= 3)
                fprintf(stderr, "  n=%d depth %d: %.4f of depth 1's nodes, %zu shards\n", n, d, ratio, ns);
            T_CHECK(nodes <= prev);   /* a deeper split only removes its top levels */
            T_CHECK(n < 12 || d > 3 || ratio >= 0.96);
            prev = nodes;
        }
    }
}

/*
 * Node counts are part of a result, which quorums and spot-checks compare: a kernel change that
 * searches a different tree would make new results disagree with a running job's first ones.
 * These are the nodes the kernel searched when the encoding was made (below NQ_COVER_WIDE_N;
 * its wider test is checked against the narrower one on every plan in test_count_kernels); a
 * check of the search's size, not of any count (the totals are checked against OEIS above).
 */
T_TEST(test_encoding_keeps_its_nodes)
{
    static const struct { int n, depth; uint64_t nodes; } pinned[] = {
        { 12, 1, 123779 }, { 12, 3, 119309 }, { 13, 1, 649327 },
        { 13, 3, 641429 }, { 14, 1, 3682013 }, { 14, 3, 3668571 },
    };
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint64_t t, u, nodes;
        size_t ns;
        T_CHECK(count_all_nodes(pinned[i].n, pinned[i].depth, &t, &u, &ns, &nodes) == 0);
        T_EQ_U64(nodes, pinned[i].nodes);
    }
}

T_TEST(test_residues_nonzero_shards)
{
    /* a shard with a large total: residues must still match and be kernel-computed */
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 12, 1, err, sizeof err);
    T_CHECK(s != NULL);
    int seen = 0;
    for (size_t i = 0; s && i < shards_count(s); i++) {
        size_t len;
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(s, i, b);
        nq_count_result_t r;
        T_CHECK(count_shard(b, len, &r, NULL, err, sizeof err) == 0);
        T_EQ_U64(r.res13, r.total % 13);
        T_EQ_U64(r.res15, r.total % 15);
        T_CHECK(r.unique <= r.total);
        if (r.total >= 15)
            seen++;
    }
    T_CHECK(seen > 0);
    shards_destroy(&s);
}

T_TEST(test_corrupt_refused)
{
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 10, 2, err, sizeof err);
    T_CHECK(s != NULL);
    size_t len;
    uint8_t b[NQ_MAX_SPEC];
    len = shards_get(s, 5, b);
    uint8_t buf[NQ_MAX_SPEC];
    nq_count_result_t r;
    memcpy(buf, b, len);
    buf[0] = 9;                                   /* wrong version */
    T_CHECK(count_shard(buf, len, &r, NULL, err, sizeof err) == -1);
    T_CHECK(strstr(err, "encoding") != NULL);
    memcpy(buf, b, len);
    T_CHECK(count_shard(buf, len - 1, &r, NULL, err, sizeof err) == -1);   /* truncated */
    buf[6] = 10;                                  /* column out of range */
    T_CHECK(count_shard(buf, len, &r, NULL, err, sizeof err) == -1);
    T_CHECK(count_shard(NULL, 0, &r, NULL, err, sizeof err) == -1);
    /* an enumerate shard is not a count shard */
    nq_shards_t *e = shards_new(NQ_KIND_ENUMERATE, 8, 1, err, sizeof err);
    T_CHECK(e != NULL);
    len = shards_get(e, 0, b);
    T_CHECK(count_shard(b, len, &r, NULL, err, sizeof err) == -1);
    shards_destroy(&e);
    shards_destroy(&s);
}

T_TEST(test_overflow_checked)
{
    nq_count_tally_t t = { UINT64_MAX - 3, (uint8_t)((UINT64_MAX - 3) % 13), (uint8_t)((UINT64_MAX - 3) % 15) };
    T_CHECK(count_tally_add(&t, 3) == 0);
    T_EQ_U64(t.total, UINT64_MAX);
    T_EQ_U64(t.r13, UINT64_MAX % 13);
    T_EQ_U64(t.r15, UINT64_MAX % 15);
    T_CHECK(count_tally_add(&t, 1) == -1);
    T_EQ_U64(t.total, UINT64_MAX);               /* unchanged on overflow */
    /* residues follow the adds, not the total: a corrupted total shows */
    nq_count_tally_t v = { 0, 0, 0 };
    for (int i = 0; i < 1000; i++)
        T_CHECK(count_tally_add(&v, (uint64_t)(i % 3 == 0 ? 8 : i % 3 == 1 ? 4 : 2)) == 0);
    T_EQ_U64(v.r13, v.total % 13);
    T_EQ_U64(v.r15, v.total % 15);
    v.total += 1;
    T_CHECK(v.r13 != v.total % 13 && v.r15 != v.total % 15);
}

T_TEST(test_cancel_and_progress)
{
    char err[256];
    atomic_int cancel = 1;
    _Atomic uint64_t progress = 0;
    nq_kernel_ctl_t ctl = { &cancel, &progress };
    size_t len;
    nq_count_result_t r;
    /* every N=20 shard passes a poll point (2^20 nodes) quickly: cancelled there */
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 20, 1, err, sizeof err);
    T_CHECK(s != NULL);
    for (size_t i = 0; s && i < shards_count(s); i += shards_count(s) / 3) {
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(s, i, b);
        atomic_store(&progress, 0);
        T_CHECK(count_shard(b, len, &r, &ctl, err, sizeof err) == 2);
        T_CHECK(atomic_load(&progress) >= NQ_KERNEL_POLL_NODES);
    }
    shards_destroy(&s);
    /* not cancelled: the final progress is the node count */
    atomic_store(&cancel, 0);
    s = shards_new(NQ_KIND_COUNT, 12, 1, err, sizeof err);
    T_CHECK(s != NULL);
    uint8_t b[NQ_MAX_SPEC];
    len = shards_get(s, shards_count(s) / 2, b);
    T_CHECK(count_shard(b, len, &r, &ctl, err, sizeof err) == 0);
    T_EQ_U64(atomic_load(&progress), r.nodes);
    T_CHECK(r.nodes > 0);
    shards_destroy(&s);
}

/*
 * Per-shard reference: every solution (from enumeration) goes to the one shard
 * whose fixed queens it contains when its border tuple (a, b, c, d) is the
 * least of its D4 orbit, with weight 8 / |stabilizer| and unique when it is
 * least among its stabilizer images. Each shard's kernel result must match,
 * and no solution may fit two shards or none.
 */
typedef struct {
    int n, k;
    size_t count;
    int8_t (*fixed)[NQ_SHARD_MAX_N];   /* per shard: its decoded row_col */
    uint64_t *total, *unique;
    int missing, twice;
} ref_t;

static void ref_tuple(const uint8_t *cols, int n, int t[4])
{
    t[0] = cols[0]; t[1] = cols[n - 1];
    for (int r = 0; r < n; r++) {
        if (cols[r] == 0) t[2] = r;
        if (cols[r] == n - 1) t[3] = r;
    }
}

static int ref_solution(void *ud, const uint8_t *cols, int n)
{
    ref_t *rf = ud;
    uint8_t img[32];
    int t[4], u[4];
    unsigned stab = 0;
    ref_tuple(cols, n, t);
    for (int g = 0; g < 8; g++) {
        d4_perm(g, n, cols, img);
        ref_tuple(img, n, u);
        int cmp = memcmp(u, t, sizeof t);   /* small non-negative ints: byte order is fine for == */
        for (int i = 0; i < 4 && cmp; i++)
            if (u[i] != t[i]) { cmp = u[i] < t[i] ? -1 : 1; break; }
        if (cmp < 0)
            return 0;                        /* another shard's class member */
        if (cmp == 0)
            stab |= 1u << g;
    }
    int found = 0;
    for (size_t i = 0; i < rf->count; i++) {
        int fits = 1;
        for (int r = 0; r < n && fits; r++)
            fits = rf->fixed[i][r] < 0 || rf->fixed[i][r] == cols[r];
        if (!fits)
            continue;
        rf->total[i] += (uint64_t)(8 / __builtin_popcount(stab));
        rf->unique[i] += (uint64_t)d4_is_least(cols, n, stab);
        found++;
    }
    rf->missing += found == 0;
    rf->twice += found > 1;
    return 0;
}

/* Every shard of every list from n = 6 to 11, depths 1 to 4, against the enumeration. */
T_TEST(test_per_shard_reference)
{
    char err[256];
    const int enc = NQ_SHARD_ENCODING;
    for (int n = 6; n <= 11; n++) {
        for (int k = 1; k <= 4 && k <= n - 2; k++) {
            nq_shards_t *s = shards_new_ex(NQ_KIND_COUNT, n, k, enc, err, sizeof err);
            nq_shards_t *e = shards_new(NQ_KIND_ENUMERATE, n, 1, err, sizeof err);
            T_CHECK(s && e);
            if (!s || !e)
                return;
            size_t ns = shards_count(s);
            ref_t rf = { n, k, ns, calloc(ns, NQ_SHARD_MAX_N), calloc(ns, 8), calloc(ns, 8), 0, 0 };
            for (size_t i = 0; i < ns; i++) {
                uint8_t b[NQ_MAX_SPEC];
                nq_shard_desc_t d;
                size_t len = shards_get(s, i, b);
                T_CHECK(len > 0 && b[0] == enc && shard_decode(b, len, &d, err, sizeof err) == 0);
                memcpy(rf.fixed[i], d.row_col, NQ_SHARD_MAX_N);
            }
            for (size_t i = 0; i < shards_count(e); i++) {
                size_t len;
                uint8_t b[NQ_MAX_SPEC];
                len = shards_get(e, i, b);
                T_CHECK(enumerate_shard(b, len, ref_solution, &rf, NULL, err, sizeof err) == 0);
            }
            T_EQ_U64(rf.missing, 0);
            T_EQ_U64(rf.twice, 0);
            for (size_t i = 0; i < shards_count(s); i++) {
                size_t len;
                uint8_t b[NQ_MAX_SPEC];
                len = shards_get(s, i, b);
                nq_count_result_t r;
                T_CHECK(count_shard(b, len, &r, NULL, err, sizeof err) == 0);
                if (r.total != rf.total[i] || r.unique != rf.unique[i])
                    fprintf(stderr, "  enc=%d n=%d k=%d shard %zu: %llu/%llu, reference %llu/%llu\n", enc, n, k, i,
                            (unsigned long long)r.total, (unsigned long long)r.unique,
                            (unsigned long long)rf.total[i], (unsigned long long)rf.unique[i]);
                T_EQ_U64(r.total, rf.total[i]);
                T_EQ_U64(r.unique, rf.unique[i]);
            }
            free(rf.total);
            free(rf.unique);
            free(rf.fixed);
            shards_destroy(&s);
            shards_destroy(&e);
        }
    }
}

T_TEST(test_u128)
{
    char buf[40];
    nq_u128 v = 0, big = NQ_U128_MAX;
    T_EQ_STR(u128_to_str(0, buf), "0");
    T_EQ_STR(u128_to_str(big, buf), "340282366920938463463374607431768211455");
    T_CHECK(u128_parse(buf, &v) == 0 && v == big);
    T_CHECK(u128_parse("234907967154122528", &v) == 0 && v == (nq_u128)234907967154122528ull);
    nq_u128 x = (nq_u128)UINT64_MAX * 1000 + 7;
    T_CHECK(u128_parse(u128_to_str(x, buf), &v) == 0 && v == x);
    const char *bad[] = { "", "-1", "+1", " 1", "1 ", "1e3", "0x10", "340282366920938463463374607431768211456",
                          "9999999999999999999999999999999999999999", NULL };
    for (int i = 0; bad[i]; i++)
        T_CHECK(u128_parse(bad[i], &v) == -1);
    T_CHECK(u128_parse(NULL, &v) == -1);
    nq_u128 a = big - 1;
    T_CHECK(u128_add_checked(&a, 1) == 0 && a == big);
    T_CHECK(u128_add_checked(&a, 1) == -1 && a == big);
}

/* Either direction counts a root's completions: every n=10 root (depth 1) counted
   top-down and bottom-up gives the same total and unique, rare b (weight 2 or 4) included, and
   the sums are the known ones. Only the node counts may differ. */
T_TEST(test_direction_byte_counts_the_same)
{
    char err[256] = "";
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 10, 1, err, sizeof err);
    T_CHECK(s != NULL);
    uint64_t total[2] = { 0, 0 }, unique[2] = { 0, 0 }, mismatch = 0;
    for (uint64_t i = 0; s && i < shards_count(s); i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(s, i, b);
        nq_count_result_t r[2];
        for (int flip = 0; flip < 2; flip++) {
            b[len - 1] = (uint8_t)flip;
            T_CHECK(count_shard(b, len, &r[flip], NULL, err, sizeof err) == 0);
            total[flip] += (uint64_t)r[flip].total;
            unique[flip] += (uint64_t)r[flip].unique;
        }
        mismatch += r[0].total != r[1].total || r[0].unique != r[1].unique;
    }
    T_EQ_U64(mismatch, 0);
    T_EQ_U64(total[0], 724);
    T_EQ_U64(total[1], 724);
    T_EQ_U64(unique[0], 92);
    T_EQ_U64(unique[1], 92);
    shards_destroy(&s);
}

/* Every path of shard_probe, in order: an odometer over the choices the probe asks for. */
typedef struct { int len, calls; uint64_t digit[NQ_SHARD_MAX_N], bound[NQ_SHARD_MAX_N]; } odometer_t;

static uint64_t odometer_pick(void *ud, uint64_t bound)
{
    odometer_t *o = ud;
    int i = o->calls++;
    if (i >= o->len) {
        o->digit[i] = 0;
        o->len = i + 1;
    }
    o->bound[i] = bound;
    return o->digit[i];
}

/* The next path: the deepest choice that has another value takes it, and the choices below
   it start again from 0. 0 when every path has been walked. */
static int odometer_next(odometer_t *o)
{
    for (int i = o->calls - 1; i >= 0; i--)
        if (o->digit[i] + 1 < o->bound[i]) {
            o->digit[i]++;
            o->len = i + 1;
            o->calls = 0;
            return 1;
        }
    return 0;
}

/* Knuth's probe, which `nq estimate` scales by its weight, is unbiased only if the paths it can
   take split the shard: over all of them, the probabilities 1/weight sum to 1, each weight is
   the product of the choices offered, and the deeper shards' totals and unique counts add up
   to the shard's own (dead paths count nothing). Every shard of n = 11 and 13, 1-3 levels
   deeper. A probe that cannot go that deep, or is asked to go up, is refused. */
T_TEST(test_probe_paths_partition_a_shard)
{
    char err[256] = "";
    uint64_t bad_sum = 0, bad_prob = 0, bad_weight = 0, paths = 0, dead = 0;
    for (int n = 11; n <= 13; n += 2) {
        nq_shards_t *s = shards_new(NQ_KIND_COUNT, n, 2, err, sizeof err);
        T_CHECK(s != NULL);
        for (uint64_t i = 0; s && i < shards_count(s); i++) {
            uint8_t b[NQ_MAX_SPEC], deep[NQ_MAX_SPEC];
            size_t len = shards_get(s, i, b);
            nq_count_result_t want, r;
            T_CHECK(count_shard(b, len, &want, NULL, err, sizeof err) == 0);
            for (int extra = 1; extra <= 3; extra++) {
                odometer_t o = { 0 };
                uint64_t total = 0, unique = 0;
                double prob = 0, w;
                do {
                    int dl = shard_probe(b, len, extra, odometer_pick, &o, deep, &w);
                    double prod = 1;
                    for (int j = 0; j < o.calls; j++)
                        prod *= (double)o.bound[j];
                    bad_weight += dl < 0 || w != prod;
                    prob += 1 / w;
                    paths++;
                    dead += dl == 0;
                    if (dl > 0 && count_shard(deep, (size_t)dl, &r, NULL, err, sizeof err) == 0) {
                        total += r.total;
                        unique += r.unique;
                    }
                } while (odometer_next(&o));
                bad_sum += total != want.total || unique != want.unique;
                bad_prob += fabs(prob - 1) > 1e-9;
            }
        }
        uint8_t b[NQ_MAX_SPEC], deep[NQ_MAX_SPEC];
        size_t len = s ? shards_get(s, 0, b) : 0;
        double w;
        odometer_t o = { 0 };
        T_CHECK(shard_probe(b, len, -1, odometer_pick, &o, deep, &w) == -1);
        T_CHECK(shard_probe(b, len, n - 3, odometer_pick, &o, deep, &w) == -1);
        shards_destroy(&s);
    }
    T_EQ_U64(bad_weight, 0);
    T_EQ_U64(bad_prob, 0);
    T_EQ_U64(bad_sum, 0);
    T_CHECK(paths > 1000 && dead > 0);
}

T_RUN_ALL()
