/* Enumeration: all solutions, in canonical order across shards, valid; representatives; packing. */
#include "t.h"
#include "enumerate.h"
#include "proto.h"
#include "shard.h"
#include "verify.h"

static int oeis_load(uint64_t *total, uint64_t *unique, int maxn)
{
    char path[512], line[256];
    const char *src = getenv("NQ_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/oeis-counts.tsv", src ? src : ".");
    FILE *f = fopen(path, "r");
    int got = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long t, u;
        int n;
        if (line[0] != '#' && sscanf(line, "%d %llu %llu", &n, &t, &u) == 3 && n >= 1 && n <= maxn) {
            total[n] = t; unique[n] = u;
            got++;
        }
    }
    if (f)
        fclose(f);
    return got == maxn ? 0 : -1;
}

typedef struct {
    int n;
    uint64_t count, reps, bad;
    uint8_t prev[32];
} collect_t;

static int collect(void *ud, const uint8_t *cols, int n)
{
    collect_t *c = ud;
    uint32_t perm[32];
    uint8_t canon[32], packed[16], back[32];
    nq_clash_t clash;
    for (int i = 0; i < n; i++)
        perm[i] = cols[i];
    if (n != c->n || verify_perm(perm, (uint64_t)n, &clash) != 0)
        c->bad++;
    if (c->count && memcmp(c->prev, cols, (size_t)n) >= 0)   /* strictly increasing */
        c->bad++;
    memcpy(c->prev, cols, (size_t)n);
    enumerate_canonical(cols, n, canon);
    if (memcmp(canon, cols, (size_t)n) == 0)
        c->reps++;
    if (memcmp(canon, cols, (size_t)n) > 0)                  /* the least image is never larger */
        c->bad++;
    if (enumerate_pack(cols, n, packed) != (size_t)(n + 1) / 2)
        c->bad++;
    enumerate_unpack(packed, n, back);
    if (memcmp(back, cols, (size_t)n) != 0)
        c->bad++;
    c->count++;
    return 0;
}

static void run_all(int n, int depth, collect_t *c)
{
    char err[256];
    memset(c, 0, sizeof *c);
    c->n = n;
    nq_shards_t *s = shards_new(NQ_KIND_ENUMERATE, n, depth, err, sizeof err);
    T_CHECK(s != NULL);
    for (size_t i = 0; s && i < shards_count(s); i++) {
        size_t len;
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(s, i, b);
        T_CHECK(enumerate_shard(b, len, collect, c, NULL, err, sizeof err) == 0);
    }
    shards_destroy(&s);
}

T_TEST(test_all_solutions_in_order)
{
    uint64_t total[13], unique[13];
    T_CHECK(oeis_load(total, unique, 12) == 0);
    for (int n = 1; n <= 12; n++) {
        collect_t c;
        run_all(n, 0, &c);
        T_EQ_U64(c.count, total[n]);
        T_EQ_U64(c.reps, unique[n]);
        T_EQ_U64(c.bad, 0);
    }
}

T_TEST(test_depths_same_sequence)
{
    for (int n = 6; n <= 9; n++) {
        for (int d = 1; d <= n; d++) {
            collect_t a, b;
            run_all(n, d, &a);
            run_all(n, 1, &b);
            T_EQ_U64(a.count, b.count);
            T_EQ_U64(a.bad, 0);
            T_CHECK(memcmp(a.prev, b.prev, (size_t)n) == 0);   /* same last solution */
        }
    }
}

T_TEST(test_canonical_and_pack)
{
    /* the N=8 solution 0 4 7 5 2 6 1 3 is the least of its class */
    uint8_t s8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 }, img[8], out[8], packed[4];
    for (int i = 0; i < 8; i++)
        img[i] = (uint8_t)(7 - s8[i]);   /* its mirror */
    enumerate_canonical(img, 8, out);
    T_CHECK(memcmp(out, s8, 8) == 0);
    T_EQ_U64(enumerate_pack(s8, 8, packed), 4);
    T_EQ_U64(packed[0], 0x40);
    uint8_t cols[16], back[16], pk[8];
    for (int n = 1; n <= 16; n++) {
        for (int i = 0; i < n; i++)
            cols[i] = (uint8_t)((i * 7 + 3) % n);
        T_EQ_U64(enumerate_pack(cols, n, pk), (n + 1) / 2);
        enumerate_unpack(pk, n, back);
        T_CHECK(memcmp(cols, back, (size_t)n) == 0);
    }
}

static int stop_after_3(void *ud, const uint8_t *cols, int n)
{
    (void)cols; (void)n;
    return ++*(int *)ud >= 3;
}

T_TEST(test_refusals)
{
    char err[256];
    int seen = 0;
    nq_shards_t *s = shards_new(NQ_KIND_ENUMERATE, 8, 1, err, sizeof err);
    size_t len;
    uint8_t b[NQ_MAX_SPEC];
    len = shards_get(s, 0, b);
    T_CHECK(enumerate_shard(b, len, stop_after_3, &seen, NULL, err, sizeof err) == -1);
    T_EQ_U64(seen, 3);
    T_CHECK(enumerate_shard(b, len - 1, stop_after_3, &seen, NULL, err, sizeof err) == -1);
    nq_shards_t *c = shards_new(NQ_KIND_COUNT, 8, 1, err, sizeof err);
    len = shards_get(c, 0, b);
    T_CHECK(enumerate_shard(b, len, stop_after_3, &seen, NULL, err, sizeof err) == -1);
    T_CHECK(strstr(err, "enumerate") != NULL);
    shards_destroy(&c);
    shards_destroy(&s);
    T_CHECK(shards_new(NQ_KIND_ENUMERATE, 17, 0, err, sizeof err) == NULL);
}

T_RUN_ALL()
