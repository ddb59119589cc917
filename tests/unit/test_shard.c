/* Shard lists and descriptors: determinism, round trips, and refusal of bad bytes. */
#include "t.h"
#include "count_d4.h"
#include "proto.h"
#include "rng.h"
#include "shard.h"

T_TEST(test_deterministic)
{
    char err[256];
    int kinds[][3] = { { NQ_KIND_COUNT, 12, 0 }, { NQ_KIND_COUNT, 11, 3 }, { NQ_KIND_COUNT, 3, 0 },
                       { NQ_KIND_ENUMERATE, 10, 0 }, { NQ_KIND_ENUMERATE, 6, 4 } };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        nq_shards_t *a = shards_new(kinds[k][0], kinds[k][1], kinds[k][2], err, sizeof err);
        nq_shards_t *b = shards_new(kinds[k][0], kinds[k][1], kinds[k][2], err, sizeof err);
        T_CHECK(a && b);
        if (!a || !b)
            continue;
        T_CHECK(shards_count(a) == shards_count(b) && shards_count(a) > 0);
        T_EQ_U64(shards_depth(a), shards_depth(b));
        for (size_t i = 0; i < shards_count(a); i++) {
            uint8_t x[NQ_MAX_SPEC], y[NQ_MAX_SPEC];
            size_t la = shards_get(a, i, x), lb = shards_get(b, i, y);
            T_CHECK(la == lb && memcmp(x, y, la) == 0);
        }
        shards_destroy(&a);
        shards_destroy(&b);
        T_CHECK(a == NULL);
    }
}

typedef struct { const nq_shards_t *s; uint64_t next, bad; int stop_at; } each_check_t;

static int each_check(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    each_check_t *c = ud;
    uint8_t want[NQ_MAX_SPEC];
    size_t wl = shards_get(c->s, i, want);
    if (i != c->next || wl != len || memcmp(want, spec, len) != 0)
        c->bad++;
    c->next = i + 1;
    return c->stop_at >= 0 && (uint64_t)c->stop_at == i ? 7 : 0;
}

/* shards_each walks the list once and gives exactly what shards_get gives, index by index, for
   border and plain lists, at every depth; and stops when told to. */
T_TEST(test_each_equals_get)
{
    char err[256];
    const int E = NQ_SHARD_ENCODING;
    int cases[][4] = { { NQ_KIND_COUNT, 12, 1, E }, { NQ_KIND_COUNT, 12, 4, E },
                       { NQ_KIND_COUNT, 13, 3, E }, { NQ_KIND_COUNT, 11, 5, E },
                       { NQ_KIND_COUNT, 5, 0, E }, { NQ_KIND_ENUMERATE, 9, 3, E } };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nq_shards_t *s = shards_new_ex(cases[k][0], cases[k][1], cases[k][2], cases[k][3], err, sizeof err);
        T_CHECK(s != NULL);
        if (!s)
            continue;
        each_check_t c = { s, 0, 0, -1 };
        T_CHECK(shards_each(s, each_check, &c) == 0);
        T_EQ_U64(c.bad, 0);
        T_EQ_U64(c.next, shards_count(s));
        each_check_t stop = { s, 0, 0, 3 };
        T_CHECK(shards_count(s) < 4 || shards_each(s, each_check, &stop) == 7);
        T_CHECK(shards_count(s) < 4 || stop.next == 4);
        shards_destroy(&s);
    }
}

typedef struct { const nq_shards_t *s; uint64_t pos, bad; int stop_at; } each_at_check_t;

static int each_at_check(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    each_at_check_t *c = ud;
    uint8_t want[NQ_MAX_SPEC];
    size_t wl = shards_get(c->s, i, want);
    if (i != shards_at(c->s, c->pos) || wl != len || memcmp(want, spec, len) != 0)
        c->bad++;
    c->pos++;
    return c->stop_at >= 0 && (uint64_t)c->stop_at == i ? 9 : 0;
}

/* shards_each_at gives the shards of the lease order, position by position, whatever the runs
   it is asked for: runs that start inside a block, cross roots, run past the end or are empty. */
T_TEST(test_each_at_equals_lease_order)
{
    char err[256];
    const int E = NQ_SHARD_ENCODING;
    int cases[][4] = { { NQ_KIND_COUNT, 12, 1, E }, { NQ_KIND_COUNT, 12, 4, E },
                       { NQ_KIND_COUNT, 13, 3, E }, { NQ_KIND_COUNT, 5, 0, E }, { NQ_KIND_ENUMERATE, 9, 3, E } };
    uint64_t runs[] = { 1, 2, 7, 64, 1000 };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nq_shards_t *s = shards_new_ex(cases[k][0], cases[k][1], cases[k][2], cases[k][3], err, sizeof err);
        T_CHECK(s != NULL);
        if (!s)
            continue;
        uint64_t n = shards_count(s);
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            each_at_check_t c = { s, 0, 0, -1 };
            for (uint64_t pos = 0; pos < n; pos += runs[r]) {
                c.pos = pos;
                T_CHECK(shards_each_at(s, pos, runs[r], each_at_check, &c) == 0);
                T_EQ_U64(c.pos, pos + runs[r] < n ? pos + runs[r] : n);
            }
            T_EQ_U64(c.bad, 0);
        }
        each_at_check_t none = { s, n, 0, -1 };
        T_CHECK(shards_each_at(s, n, 5, each_at_check, &none) == 0 && none.pos == n);
        T_CHECK(shards_each_at(s, UINT64_MAX, UINT64_MAX, each_at_check, &none) == 0 && none.pos == n);
        T_CHECK(shards_each_at(s, 0, 0, each_at_check, &none) == 0 && none.pos == n);
        each_at_check_t all = { s, 0, 0, -1 };
        T_CHECK(shards_each_at(s, 0, UINT64_MAX, each_at_check, &all) == 0);
        T_EQ_U64(all.pos, n);
        T_EQ_U64(all.bad, 0);
        each_at_check_t stop = { s, 0, 0, (int)shards_at(s, n / 2) };
        T_CHECK(shards_each_at(s, 0, n, each_at_check, &stop) == 9);
        T_EQ_U64(stop.pos, n / 2 + 1);
        shards_destroy(&s);
    }
}

T_TEST(test_roundtrip)
{
    char err[256];
    for (int n = 1; n <= 12; n++) {
        for (int kind = NQ_KIND_COUNT; kind <= NQ_KIND_ENUMERATE; kind += 2) {
            nq_shards_t *s = shards_new(kind, n, 0, err, sizeof err);
            T_CHECK(s != NULL);
            for (size_t i = 0; s && i < shards_count(s); i++) {
                size_t len;
                uint8_t b[NQ_MAX_SPEC];
                len = shards_get(s, i, b);
                nq_shard_desc_t d;
                uint8_t re[NQ_MAX_SPEC];
                T_CHECK(len <= NQ_MAX_SPEC);
                T_CHECK(shard_decode(b, len, &d, err, sizeof err) == 0);
                T_CHECK(shard_encode(&d, re) == len && memcmp(re, b, len) == 0);
                T_CHECK(d.n == n && d.kind == kind && d.k == shards_depth(s));
                T_CHECK(d.weight == (d.mode == NQ_SHARD_BORDER ? 0 : 1));
            }
            T_CHECK(!s || shards_get(s, shards_count(s), (uint8_t[NQ_MAX_SPEC]){ 0 }) == 0);
            shards_destroy(&s);
        }
    }
}

/* Border shards are strictly increasing in (a, c, d) order; per b, weight x stabilizer size = 8. */
T_TEST(test_border_orbits)
{
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 9, 1, err, sizeof err);
    T_CHECK(s != NULL);
    uint8_t prev[NQ_MAX_SPEC];
    int have_prev = 0;
    for (size_t i = 0; s && i < shards_count(s); i++) {
        size_t len;
        nq_shard_desc_t d;
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(s, i, b);
        T_CHECK(shard_decode(b, len, &d, err, sizeof err) == 0);
        T_EQ_U64(d.weight, 0);
        /* depth 1: bytes 6..8 are a, c, d */
        T_CHECK(!have_prev || memcmp(prev + 6, b + 6, 3) < 0);
        memcpy(prev, b, len);
        have_prev = 1;
        T_CHECK((d.bmask8 | d.bmaskx) != 0 && (d.bmask8 & d.bmaskx) == 0);
        for (int c = 0; c < 9; c++) {
            int allowed = (int)((d.bmask8 | d.bmaskx) >> c & 1u);
            T_CHECK(allowed == (d.bweight[c] != 0));
            if (allowed) {
                T_EQ_U64(d.bweight[c] * (uint64_t)__builtin_popcount(d.bstab[c]), 8);
                T_CHECK(d.bstab[c] & 1u);
                T_CHECK((d.bweight[c] == 8) == (int)(d.bmask8 >> c & 1u));
            }
        }
    }
    shards_destroy(&s);
}

static int refused(const uint8_t *b, size_t len, const char *want)
{
    char err[256] = "";
    nq_shard_desc_t d;
    int rc = shard_decode(b, len, &d, err, sizeof err);
    if (rc != -1 || !err[0] || (want && !strstr(err, want))) {
        fprintf(stderr, "  decode gave %d '%s' (wanted '%s')\n", rc, err, want ? want : "");
        return 0;
    }
    return 1;
}

T_TEST(test_refusals)
{
    char err[256];
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 10, 2, err, sizeof err);
    size_t len;
    uint8_t good[NQ_MAX_SPEC];
    len = shards_get(s, 7, good);
    uint8_t b[NQ_MAX_SPEC + 8];
    for (size_t cut = 0; cut < len; cut++)
        T_CHECK(refused(good, cut, NULL));                     /* truncated */
    memcpy(b, good, len); b[len] = 0;
    T_CHECK(refused(b, len + 1, "length"));                    /* trailing byte */
    memcpy(b, good, len); b[0] = 0;  T_CHECK(refused(b, len, "encoding"));
    memcpy(b, good, len); b[0] = NQ_SHARD_ENCODING + 1; T_CHECK(refused(b, len, "encoding"));
    memcpy(b, good, len); b[1] = 2;  T_CHECK(refused(b, len, "kind"));
    memcpy(b, good, len); b[2] = 0;  T_CHECK(refused(b, len, "n"));
    memcpy(b, good, len); b[2] = 33; T_CHECK(refused(b, len, "n"));
    memcpy(b, good, len); b[3] = 0;  T_CHECK(refused(b, len, "mode"));
    memcpy(b, good, len); b[4] = 8;  T_CHECK(refused(b, len, "weight"));
    memcpy(b, good, len); b[5] = 9;  T_CHECK(refused(b, len, "depth"));
    memcpy(b, good, len); b[7] = 10; T_CHECK(refused(b, len, "range"));
    T_CHECK(refused(NULL, 0, "truncated"));
    T_CHECK(refused(b, NQ_MAX_SPEC + 1, "long"));
    /* two attacking queens: the first level's queen in row 0's column */
    memcpy(b, good, len); b[7] = b[6];
    T_CHECK(refused(b, len, "attack"));
    /* a non-canonical border: the column mirror (a, c, d) -> (n-1-a, d, c) of a shard with
       2a < n-1 puts row 0's queen right of the middle, which no canonical tuple has */
    nq_shards_t *s1 = shards_new(NQ_KIND_COUNT, 10, 1, err, sizeof err);
    int found = 0;
    for (size_t i = 0; s1 && i < shards_count(s1) && found < 20; i++) {
        size_t l1;
        uint8_t x[NQ_MAX_SPEC];
        l1 = shards_get(s1, i, x);
        if (2 * x[6] >= 9)
            continue;
        memcpy(b, x, l1);
        b[6] = (uint8_t)(9 - x[6]); b[7] = x[8]; b[8] = x[7];
        found++;
        T_CHECK(refused(b, l1, "canonical"));
    }
    T_CHECK(found == 20);
    shards_destroy(&s1);
    /* enumerate beyond 16, plain count shards above n = 3 */
    uint8_t e[] = { NQ_SHARD_ENCODING, NQ_KIND_ENUMERATE, 17, 0, 1, 1, 0 };
    T_CHECK(refused(e, sizeof e, "n"));
    uint8_t p[] = { NQ_SHARD_ENCODING, NQ_KIND_COUNT, 8, 0, 1, 0 };
    T_CHECK(refused(p, sizeof p, "mode"));
    shards_destroy(&s);
}

/* Random bytes and random single-byte changes never crash and are refused or re-encode exactly. */
T_TEST(test_fuzzish)
{
    char err[256];
    nq_rng_t rng;
    rng_init(&rng, 42, 7);
    nq_shards_t *s = shards_new(NQ_KIND_COUNT, 12, 3, err, sizeof err);
    int accepted = 0;
    for (int it = 0; it < 20000; it++) {
        uint8_t b[NQ_MAX_SPEC], re[NQ_MAX_SPEC];
        size_t len;
        if (it % 2) {
            len = (size_t)rng_below(&rng, 24);
            for (size_t i = 0; i < len; i++)
                b[i] = (uint8_t)rng_next(&rng);
            if (len > 0) b[0] = (uint8_t)(NQ_SHARD_ENCODING - 1 + rng_below(&rng, 2));
            if (len > 1) b[1] = (uint8_t)(rng_below(&rng, 2) ? NQ_KIND_COUNT : NQ_KIND_ENUMERATE);
            if (len > 2) b[2] = (uint8_t)rng_below(&rng, 34);
        } else {
            uint8_t g[NQ_MAX_SPEC];
            len = shards_get(s, (size_t)rng_below(&rng, shards_count(s)), g);
            memcpy(b, g, len);
            b[rng_below(&rng, len)] ^= (uint8_t)(1 + rng_below(&rng, 255));
        }
        nq_shard_desc_t d;
        if (shard_decode(b, len, &d, err, sizeof err) == 0) {
            accepted++;
            T_CHECK(shard_encode(&d, re) == len && memcmp(re, b, len) == 0);
        } else {
            T_CHECK(err[0] != '\0');
        }
    }
    T_CHECK(accepted < 20000);
    shards_destroy(&s);
}

T_TEST(test_bad_arguments)
{
    char err[256];
    T_CHECK(shards_new(NQ_KIND_COUNT, 0, 0, err, sizeof err) == NULL && strstr(err, "1 <= N <= 32"));
    T_CHECK(shards_new(NQ_KIND_COUNT, 33, 0, err, sizeof err) == NULL);
    T_CHECK(shards_new(NQ_KIND_ENUMERATE, 17, 0, err, sizeof err) == NULL && strstr(err, "16"));
    T_CHECK(shards_new(NQ_KIND_SOLVE, 10, 0, err, sizeof err) == NULL);
    T_CHECK(shards_new(NQ_KIND_COUNT, 10, 9, err, sizeof err) == NULL && strstr(err, "depth"));
    T_CHECK(shards_new(NQ_KIND_COUNT, 10, -1, err, sizeof err) == NULL);
    T_CHECK(shards_new(NQ_KIND_COUNT, 3, 1, err, sizeof err) == NULL);
    T_CHECK(shards_new(NQ_KIND_ENUMERATE, 8, 9, err, sizeof err) == NULL);
}

/* A bounded list is refused as soon as it is longer than asked or dearer to search than allowed,
   and built as usual within both: without the step bound, n=32 at depth 30 searched for more than
   a minute (manifest_scan.c, which lists what a manifest's header says). */
T_TEST(test_bounded_list_stops_at_either_bound)
{
    const int C = NQ_KIND_COUNT, E = NQ_SHARD_ENCODING;
    char err[256] = "";
    nq_shards_t *s = shards_new_bounded(C, 8, 1, E, 31, UINT64_MAX, err, sizeof err);
    T_CHECK(s && shards_count(s) == 31);                 /* exactly as long as allowed */
    shards_destroy(&s);
    s = shards_new_bounded(C, 8, 1, E, 30, UINT64_MAX, err, sizeof err);
    T_CHECK(s == NULL && strstr(err, "more than 30 shards") && !strstr(err, "depth"));
    s = shards_new_bounded(C, 32, 30, E, NQ_SHARD_MAX_LIST, 1 << 16, err, sizeof err);
    T_CHECK(s == NULL && strstr(err, "more than 65536 steps"));
    /* n=10 depth 8: 96 shards, about 5000 steps, the sparsest of n=10 */
    s = shards_new_bounded(C, 10, 8, E, NQ_SHARD_MAX_LIST, 10000, err, sizeof err);
    nq_shards_t *ref = shards_new(C, 10, 8, err, sizeof err);
    T_CHECK(s && ref && shards_count(s) == shards_count(ref));
    uint8_t a[NQ_MAX_SPEC], b[NQ_MAX_SPEC];
    for (uint64_t i = 0; s && ref && i < shards_count(ref); i++) {
        size_t la = shards_get(s, i, a);
        T_CHECK(la > 0 && la == shards_get(ref, i, b) && memcmp(a, b, la) == 0);
    }
    shards_destroy(&s);
    shards_destroy(&ref);
    s = shards_new_bounded(C, 10, 8, E, NQ_SHARD_MAX_LIST, 1000, err, sizeof err);
    T_CHECK(s == NULL && strstr(err, "steps"));
}

/* A descriptor carries each border root's direction (shard_flip.c): a list from n=19 has it from
   random probes of both trees, and it differs from the rule below n=19 (c + d < n - 1) for some
   roots, not all; listed again it is the same; a direction byte other than 0 or 1 is refused. */
T_TEST(test_direction)
{
    char err[256] = "";
    nq_shards_t *s3 = shards_new(NQ_KIND_COUNT, 19, 1, err, sizeof err);
    T_CHECK(s3 != NULL);
    uint64_t differ = 0, bad = 0;
    for (uint64_t i = 0; s3 && i < shards_count(s3); i++) {
        uint8_t x[NQ_MAX_SPEC], z[NQ_MAX_SPEC];
        size_t l3 = shards_get(s3, i, x);
        nq_shard_desc_t d3;
        if (shard_decode(x, l3, &d3, err, sizeof err) || x[l3 - 1] != d3.flip || shard_encode(&d3, z) != l3 ||
            memcmp(x, z, l3) != 0) {
            bad++;
            continue;
        }
        differ += d3.flip != (d3.c + d3.d < 18);
        z[l3 - 1] = 2;
        T_CHECK(refused(z, l3, "direction"));
    }
    T_EQ_U64(bad, 0);
    T_CHECK(s3 && differ > 0 && differ < shards_count(s3) / 2);
    /* listed again, the same directions (a table's, shard_flip_table.c) */
    nq_shards_t *again = shards_new(NQ_KIND_COUNT, 19, 1, err, sizeof err);
    T_CHECK(again && s3 && shards_count(again) == shards_count(s3));
    for (uint64_t i = 0; again && s3 && i < shards_count(s3); i++) {
        uint8_t x[NQ_MAX_SPEC], y[NQ_MAX_SPEC];
        size_t lx = shards_get(s3, i, x);
        T_CHECK(lx == shards_get(again, i, y) && memcmp(x, y, lx) == 0);
    }
    shards_destroy(&again);
    shards_destroy(&s3);
}

/*
 * --shard-seconds picks a depth by the planning model, so the model must follow the kernel's
 * measured work, which grows faster with n at campaign sizes than at small n. Measured on one
 * AVX-512 core (README, Benchmarks): N=19 21-22 s, N=20 165 s, N=21 1,562 s of CPU (a busy
 * host); N=28 ~385 core-years by the node estimate (encoding 5). A model fitted at n = 16..19 put N=28 at
 * 47 core-years, and asked for shards of 600 s it chose depth 3, whose shards take ~3.6 hours.
 */
T_TEST(test_depth_for_seconds_follows_the_kernel)
{
    char err[256];
    const double year = 365.25 * 86400;
    double measured[][2] = { { 19, 22 }, { 20, 165 }, { 21, 1562 }, { 28, 385 * year } };
    for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++) {
        double model = shard_count_core_seconds((int)measured[i][0]);
        T_CHECK(model > measured[i][1] / 1.3 && model < measured[i][1] * 1.3);
    }
    for (int n = 4; n < 32; n++)   /* more work every n, also past the table */
        T_CHECK(shard_count_core_seconds(n + 1) > 5 * shard_count_core_seconds(n));
    /* N=28: depth 4 has 17,314,566 shards of ~700 s, depth 3 1,010,562 of ~12,000 s */
    T_EQ_U64(shard_depth_for_seconds(NQ_KIND_COUNT, 28, 600, err, sizeof err), 4);
    T_EQ_U64(shard_depth_for_seconds(NQ_KIND_COUNT, 28, 10000, err, sizeof err), 3);
    T_CHECK(shard_depth_for_seconds(NQ_KIND_ENUMERATE, 12, 60, err, sizeof err) < 0 && strstr(err, "count"));
}

static uint64_t count_of(int kind, int n, int depth)
{
    char err[256];
    nq_shards_t *s = shards_new(kind, n, depth, err, sizeof err);
    uint64_t c = s ? shards_count(s) : 0;
    shards_destroy(&s);
    return c;
}

/* shards_new_limited: each refusal names its limit, and a stop flag stops it (a broker stopping). */
T_TEST(test_shards_limited_say_why)
{
    char err[256];
    atomic_int stop;
    atomic_init(&stop, 1);
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .stop = &stop };
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 20, 3, NQ_SHARD_ENCODING, &lim, err, sizeof err) == NULL);
    T_EQ_U64(lim.why, NQ_SHARDS_STOPPED);
    atomic_store(&stop, 0);
    nq_shards_t *s = shards_new_limited(NQ_KIND_COUNT, 12, 2, NQ_SHARD_ENCODING, &lim, err, sizeof err);
    T_CHECK(s != NULL && shards_count(s) == count_of(NQ_KIND_COUNT, 12, 2));
    shards_destroy(&s);
    lim.max_shards = 10;
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 12, 2, NQ_SHARD_ENCODING, &lim, err, sizeof err) == NULL);
    T_EQ_U64(lim.why, NQ_SHARDS_TOO_MANY);
    lim.max_shards = NQ_SHARD_MAX_LIST;
    lim.max_steps = 100;
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 18, 8, NQ_SHARD_ENCODING, &lim, err, sizeof err) == NULL);
    T_EQ_U64(lim.why, NQ_SHARDS_TOO_SLOW);
    T_CHECK(shards_new_limited(NQ_KIND_COUNT, 12, 11, NQ_SHARD_ENCODING, &lim, err, sizeof err) == NULL);
    T_EQ_U64(lim.why, NQ_SHARDS_REFUSED);
}

/* --shard-seconds: the deepest depth whose mean (the model over the list's length) is at least
   the seconds asked, else the shallowest; found with trials cut short, it is the depth the
   whole lists give. */
T_TEST(test_shards_for_seconds_is_the_deepest_long_enough)
{
    char err[256];
    static const double secs[] = { 1e-7, 1e-5, 1e-3, 0.1, 10 };
    for (int n = 8; n <= 16; n += 4)
        for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
            int lo, hi, want = -1;
            shard_depth_range(NQ_KIND_COUNT, n, &lo, &hi);
            for (int d = lo; d <= hi; d++) {
                uint64_t c = count_of(NQ_KIND_COUNT, n, d);
                if (d == lo || shard_count_core_seconds(n) / (double)c >= secs[i])
                    want = d;
                if (shard_count_core_seconds(n) / (double)c < secs[i])
                    break;
            }
            nq_shards_limits_t lim = { .max_steps = UINT64_MAX };
            nq_shards_t *s = shards_new_for_seconds(NQ_KIND_COUNT, n, secs[i], &lim, err, sizeof err);
            T_CHECK(s != NULL && shards_depth(s) == want);
            if (s && shards_depth(s) != want)
                fprintf(stderr, "  n=%d seconds=%g: depth %d, want %d\n", n, secs[i], shards_depth(s), want);
            shards_destroy(&s);
        }
}

T_RUN_ALL()
