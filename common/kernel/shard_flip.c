/*
 * Which way the kernel searches a border root (a, c, d): top-down or bottom-up.
 *
 * Encoding 2 decides by where the side queens sit (c + d < n - 1: bottom-up), which measured
 * 21-26 % fewer nodes than top-down everywhere. But the better direction is a property of the
 * root's whole tree, and the rule takes the worse one for about a root in four (N=18: 178 of
 * 631). Encoding 3 estimates both trees and takes the smaller: Knuth's estimator, random paths
 * from the root whose branching factors, multiplied, estimate the nodes of each level. With
 * PROBES paths a direction, N=19 searched 3.4 % fewer nodes (54.01·10^9 against 55.91·10^9)
 * and N=20 3.2 %; N=18 3.6 % (4.1 % with 1,024 paths; 4.0-4.2 % choosing by an exact count of
 * each tree's first 9 levels). Below SHARD_FLIP_MIN_N (19) the probes cost more than they save (N=18:
 * 0.19 s of listing, against a 3 s count on one core); there the rule stays.
 *
 * Roots with b of weight 2 or 4 keep the rule: bottom-up counts those solution by solution
 * (count_flipped in count.c), and chosen that way the count measured slower for fewer nodes.
 *
 * The choice goes into the descriptor (a direction byte), so a worker never repeats it; a list
 * must come out the same on every machine and at every restart: the random paths come from a
 * generator seeded by the root, and the estimates are integers (saturating 128-bit sums, no
 * floating point whose rounding a compiler flag could change). So each root's answer is a
 * constant, which lists read from a table (shard_flip_root, below).
 */
#include "shard_board.h"
#include "shard.h"

enum { PROBES = 256 };     /* random paths a direction */

typedef unsigned __int128 u128;

static const u128 SATURATED = ~(u128)0 >> 1;

static u128 sat_add(u128 x, u128 y) { return x > SATURATED - y ? SATURATED : x + y; }

static u128 sat_mul(u128 x, uint32_t k) { return k && x > SATURATED / k ? SATURATED : x * k; }

/* xorshift64: deterministic, and enough for choosing among at most 32 cells */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The cells of row `rows[lv]` whose queen leaves an open cell in the next two rows of the
   order and in its last row: the look-ahead the kernels apply (count_fast.c). */
static uint32_t probe_children(const board_t *p, const uint8_t *rows, int m, int lv, uint32_t b_allowed)
{
    int r = rows[lv], ahead[3], na = 0;
    uint32_t open[3];
    for (int t = lv + 1; t < m; t = t < lv + 2 ? t + 1 : (t < m - 1 ? m - 1 : m)) {
        ahead[na] = rows[t] > r ? rows[t] - r : r - rows[t];
        open[na++] = board_row_open(p, rows[t], b_allowed);
    }
    uint32_t kids = 0;
    for (uint32_t cand = board_row_open(p, r, b_allowed); cand; cand &= cand - 1) {
        int c = __builtin_ctz(cand), ok = 1;
        for (int i = 0; i < na && ok; i++) {
            uint64_t hit = 1ull << c | 1ull << (c + ahead[i]) | (c >= ahead[i] ? 1ull << (c - ahead[i]) : 0);
            ok = (open[i] & ~(uint32_t)hit) != 0;
        }
        kids |= (uint32_t)ok << c;
    }
    return kids;
}

/* One random path down the root's tree in the order `rows`: its estimate of the nodes. */
static u128 probe_path(board_t p, const uint8_t *rows, int m, int from, uint32_t b_allowed, uint64_t *rng)
{
    u128 weight = 1, nodes = 0;
    for (int lv = from; lv < m; lv++) {
        uint32_t kids = probe_children(&p, rows, m, lv, b_allowed);
        int k = __builtin_popcount(kids);
        if (!k)
            break;
        weight = sat_mul(weight, (uint32_t)k);
        nodes = sat_add(nodes, weight);
        for (uint64_t skip = rng_next(rng) % (uint64_t)k; skip > 0; skip--)
            kids &= kids - 1;
        board_put(&p, rows[lv], __builtin_ctz(kids));
    }
    return nodes;
}

/* Stratified: the first level's children all taken, each one's subtree estimated by an equal
   share of the paths (N=18, 256 paths: 7,117 against 7,123 million nodes for plain paths). */
static u128 tree_estimate(const board_t *root, const uint8_t *rows, int m, uint32_t b_allowed, uint64_t *rng)
{
    uint32_t kids = probe_children(root, rows, m, 0, b_allowed);
    int k = __builtin_popcount(kids);
    if (!k)
        return 0;
    int per = PROBES / k > 0 ? PROBES / k : 1;
    u128 est = (u128)k;
    for (; kids; kids &= kids - 1) {
        board_t q = *root;
        board_put(&q, rows[0], __builtin_ctz(kids));
        u128 sum = 0;
        for (int i = 0; i < per; i++)
            sum = sat_add(sum, probe_path(q, rows, m, 1, b_allowed, rng));
        est = sat_add(est, sum / (unsigned)per);
    }
    return est;
}

/* The direction whose tree the probes estimate smaller: 1 bottom-up. */
static int flip_estimate(int n, int a, int c, int d, const board_t *root, uint32_t b_allowed)
{
    uint8_t rows[NQ_SHARD_MAX_N];
    u128 est[2];
    for (int dir = 0; dir < 2; dir++) {
        /* every free row in the kernel's order: the levels of a shard as deep as the board */
        int m = shard_level_rows(NQ_SHARD_BORDER, n, n, c, d, dir, rows);
        uint64_t rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 48 | (uint64_t)a << 32 | (uint64_t)c << 16 |
                                                (uint64_t)d << 1 | (uint64_t)dir);
        est[dir] = tree_estimate(root, rows, m, b_allowed, &rng);
    }
    return est[1] < est[0];
}

/* The probes of one root, computed: what the table (shard_flip_table.c) holds. */
int shard_flip_probe(int n, int a, int c, int d, const board_t *root, uint32_t b_allowed, uint32_t b_rare)
{
    /* rare b (weight 2 or 4) are counted solution by solution bottom-up: keep the rule there */
    if (n < SHARD_FLIP_MIN_N || b_rare)
        return shard_flip(n, c, d);
    return flip_estimate(n, a, c, d, root, b_allowed);
}

/*
 * A list's direction for its nth root, from the table. The probes of every root of an N cost
 * 1.3 s at N=27 and 3 s at N=32 on one core, and a list of N >= 20 needs them for its length
 * (its levels are the rows of each root's direction, so its shards are not the same either
 * way), so a submit, answered once its list's length is known, would wait for them. They are a
 * pure function of the root: computed once, by nq_flip_table (tests/tools), and kept in the table;
 * test_shard_flip checks it against the probes. Past the table's roots of n (a table that does
 * not match shard_border_root) the probes answer, so a list stays right, only slower.
 */
int shard_flip_root(int n, int a, int c, int d, uint32_t nth, const board_t *root, uint32_t b_allowed,
                    uint32_t b_rare)
{
    if (n < SHARD_FLIP_MIN_N || b_rare)
        return shard_flip(n, c, d);
    uint32_t first = shard_flip_table_first[n - SHARD_FLIP_MIN_N];
    uint32_t end = shard_flip_table_first[n - SHARD_FLIP_MIN_N + 1];
    if (nth >= end - first)
        return shard_flip_probe(n, a, c, d, root, b_allowed, b_rare);
    uint32_t bit = first + nth;
    return (int)(shard_flip_table_bits[bit / 64] >> bit % 64 & 1);
}
