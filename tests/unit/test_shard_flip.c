/* Border roots' search directions: the table that lists read (shard_flip_table.c) is the probes'
   answer, and the lists made from it are the ones the probes made. */
#include "t.h"
#include "shard.h"
#include "shard_board.h"

/* Roots of n from n = 21 on are checked one in SAMPLE: the probes of all roots from 19 to 32
   take about 30 s of one core, which the tool that writes the table spends once. */
enum { FULL_TO_N = 20, SAMPLE = 31 };

T_TEST(test_table_is_the_probes)
{
    uint64_t checked = 0, wrong = 0, counted_wrong = 0;
    for (int n = 4; n <= NQ_SHARD_MAX_N; n++) {
        uint32_t nth = 0;
        for (int a = 0; a < n; a++)
            for (int c = 0; c < n; c++)
                for (int d = 0; d < n; d++) {
                    board_t p;
                    nq_shard_desc_t o;
                    if (shard_border_root(n, a, c, d, &p, &o) == 0)
                        continue;
                    uint32_t b = o.bmask8 | o.bmaskx, i = nth++;
                    if (n > FULL_TO_N && i % SAMPLE != (uint32_t)n % SAMPLE)
                        continue;
                    checked++;
                    wrong += shard_flip_root(n, a, c, d, i, &p, b, o.bmaskx) !=
                             shard_flip_probe(n, a, c, d, &p, b, o.bmaskx);
                }
        if (n >= SHARD_FLIP_MIN_N)     /* the table holds as many roots of n as there are */
            counted_wrong += shard_flip_table_first[n - SHARD_FLIP_MIN_N + 1] -
                             shard_flip_table_first[n - SHARD_FLIP_MIN_N] != nth;
    }
    T_EQ_U64(wrong, 0);
    T_EQ_U64(counted_wrong, 0);
    T_CHECK(checked > 1000);
}

/* Asked past the table's roots of n, the probes answer. */
T_TEST(test_past_the_table_the_probes_answer)
{
    int n = 25, differ = 0;
    for (int a = 0; a < n; a++)
        for (int d = 0; d < n; d++) {
            board_t p;
            nq_shard_desc_t o;
            if (shard_border_root(n, a, 3, d, &p, &o) == 0 || o.bmaskx)
                continue;
            uint32_t b = o.bmask8 | o.bmaskx;
            int probed = shard_flip_probe(n, a, 3, d, &p, b, 0);
            T_CHECK(shard_flip_root(n, a, 3, d, UINT32_MAX, &p, b, 0) == probed);
            differ += probed != shard_flip(n, 3, d);
        }
    T_CHECK(differ > 0);               /* the probes, not the rule */
}

typedef struct { uint64_t h, n; } digest_t;

static int digest_shard(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    digest_t *g = ud;
    const uint8_t *ib = (const uint8_t *)&i;
    for (size_t k = 0; k < sizeof i + len; k++) {      /* FNV-1a over the index, then the bytes */
        g->h ^= k < sizeof i ? ib[k] : spec[k - sizeof i];
        g->h *= 0x100000001b3ull;
    }
    g->n++;
    return 0;
}

/*
 * The lists of N >= 19, their shards by index and the lease order, digested as they came out
 * when every list probed each root itself. A stored job's shards and frontier are positions in
 * these lists, so a table that differed from the probes would move them (the digests are of
 * the index as a little-endian word: the hosts nq runs on).
 */
T_TEST(test_lists_keep_their_shards_and_order)
{
    struct { int n, depth, ordered; uint64_t count, digest; } lists[] = {
        { 24, 2, 1, 25163, 0x5edef6f3d5c3b82aull },
        { 27, 3, 0, 806686, 0x1e2643e9504a4bb5ull },
        { 32, 2, 0, 94602, 0x41c8d133f9fcf3f1ull },
    };
    char err[256] = "";
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX,
                                   .unordered = !lists[k].ordered };
        nq_shards_t *s = shards_new_limited(NQ_KIND_COUNT, lists[k].n, lists[k].depth, NQ_SHARD_ENCODING,
                                            &lim, err, sizeof err);
        T_CHECK(s != NULL);
        if (!s)
            continue;
        digest_t g = { 0xcbf29ce484222325ull, 0 };
        if (lists[k].ordered)
            T_CHECK(shards_each_at(s, 0, shards_count(s), digest_shard, &g) == 0);
        else
            T_CHECK(shards_each(s, digest_shard, &g) == 0);
        T_EQ_U64(shards_count(s), lists[k].count);
        T_EQ_U64(g.n, lists[k].count);
        T_EQ_U64(g.h, lists[k].digest);
        shards_destroy(&s);
    }
}

T_RUN_ALL()
