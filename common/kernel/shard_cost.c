/* Knuth estimates of count_shard's nodes, and the exact walk that checks them (shard_cost.h). */
#include "shard_cost.h"
#include "shard.h"

static const nq_cost_u128 SATURATED = ~(nq_cost_u128)0 >> 1;

nq_cost_u128 cost_sat_add(nq_cost_u128 x, nq_cost_u128 y) { return x > SATURATED - y ? SATURATED : x + y; }

nq_cost_u128 cost_sat_mul(nq_cost_u128 x, uint64_t k)
{
    nq_cost_u128 p;
    /* no division: a 128-bit one is a libgcc call (__udivti3) */
    return __builtin_mul_overflow(x, (nq_cost_u128)k, &p) || p > SATURATED ? SATURATED : p;
}

static inline __attribute__((always_inline)) unsigned pop(uint32_t x)
{
    return (unsigned)__builtin_popcount(x);
}

/* ---- count_fast.c's accounting ---- */

/* fast_last2: level m-2 entered with `open`, and the last level's cells below each of its queens. */
static inline __attribute__((always_inline)) uint64_t
last2_nodes(const nq_levels_t *K, uint32_t open, uint32_t col, uint32_t dl, uint32_t dr, int s)
{
    uint64_t nodes = pop(open);
    for (; open; open &= open - 1) {
        uint32_t bit = open & -open;
        nodes += pop(K->last_open & ~((col | bit) | ((dl | bit) << s) | ((dr | bit) >> s)));
    }
    return nodes;
}

/* fast_last3: level m-3 entered with `open`; its queens that pass the look-ahead (and the column
   test) each lead to last2_nodes. */
static inline __attribute__((always_inline)) uint64_t
last3_nodes(const nq_levels_t *K, int L3, uint32_t open, uint32_t col, uint32_t dl, uint32_t dr)
{
    uint64_t nodes = pop(open);
    const int s = K->shift[L3 + 1], s2 = K->shift[L3 + 2];
    const uint32_t next_open = K->open_of[L3 + 1];
    uint32_t r1 = next_open & ~(col | (dl << s) | (dr >> s));
    open &= ~fast_kills(r1, s);
    if (K->cover[L3]) {
        int kz = K->dz[L3];
        uint32_t rz = K->last_open & ~(col | (dl << kz) | (dr >> kz));
        if ((open | r1 | rz | col) != K->full)
            open = 0;
    }
    for (; open; open &= open - 1) {
        uint32_t bit = open & -open, nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        nodes += last2_nodes(K, next_open & ~(nc | nl | nr), nc, nl, nr, s2);
    }
    return nodes;
}

/* Level L entered with open cells `no`: the nodes it charges and those below it. */
static uint64_t fast_exact(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl, uint32_t dr)
{
    if (L == K->m - 3)
        return last3_nodes(K, L, no, col, dl, dr);
    uint64_t nodes = pop(no);
    int s = K->shift[L + 1];
    for (uint32_t open = fast_viable(K, no, L, col, dl, dr); open; open &= open - 1) {
        uint32_t bit = open & -open, nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        nodes += fast_exact(K, L + 1, K->open_of[L + 1] & ~(nc | nl | nr), nc, nl, nr);
    }
    return nodes;
}

/* ---- spending paths ---- */

/*
 * The children of a node with `budget` paths to spend: every one, the paths shared out, when
 * there are at least as many paths as children; else `budget` of them, uniformly without
 * replacement, each with one path, their sum to be scaled by k / budget. Spending the paths
 * from the top down covers the top levels, where separate descents would each start afresh.
 */
void cost_share(uint32_t open, uint32_t budget, nq_rng_t *rng, nq_cost_kids_t *o)
{
    unsigned k = pop(open), i = 0;
    o->n = 0;
    o->k = k;
    o->taken = budget < k ? budget : k;
    if (o->taken == 1 && k > 1) {       /* one path: one draw */
        for (uint64_t skip = rng_below(rng, k); skip > 0; skip--)
            open &= open - 1;
        o->bit[o->n] = open & -open;
        o->budget[o->n++] = budget;
        return;
    }
    for (uint32_t need = o->taken, left = k; open && need; open &= open - 1, left--, i++) {
        if (o->taken < k && rng_below(rng, left) >= need)
            continue;                   /* selection sampling: `need` of the `left` remaining */
        o->bit[o->n] = open & -open;
        o->budget[o->n++] = budget / o->taken + (i < budget % o->taken);
        need--;
    }
}

nq_cost_u128 cost_scale(nq_cost_u128 sum, const nq_cost_kids_t *o)
{
    return o->taken == o->k ? sum : cost_sat_mul(sum, o->k) / o->taken;
}

/*
 * A single path below a node draws its children by importance, not uniformly: child c with
 * probability h(c) / H, where h(c) is the product of (1 + the open cells its queen leaves) in
 * the next LOOK_ROWS levels, and the path's weight is multiplied by H / h(c). Siblings whose
 * subtrees differ most differ in those rows first. N=16, 16 paths a shard: rank correlation
 * with the true nodes 0.78 drawn uniformly, 0.87 this way at depth 1; 0.85 and 0.91 at depth 2.
 * More rows measured no better (6: 0.91, all: 0.91).
 *
 * The weight is m x 2^(e - MANT), m kept in [2^MANT, 2^(MANT+1)) once it is past 1: integers
 * (the same estimate from any compiler), one 64-bit division a level (the 128-bit one it
 * replaced was 15 % of a list's estimates), and m x H stays under 2^62 (H < 2^21: at most 32
 * children of weight at most 33^3).
 */
#define LOOK_ROWS 3
#define MANT 39

static inline __attribute__((always_inline)) uint64_t
look_weight(const nq_levels_t *K, int L, uint32_t col, uint32_t dl, uint32_t dr, uint32_t bit)
{
    uint64_t h = 1;
    int dist = 0;
    col |= bit;
    dl |= bit;
    dr |= bit;
    for (int j = 1; j <= LOOK_ROWS && L + j < K->m; j++) {
        dist += K->shift[L + j];
        h *= 1 + pop(K->open_of[L + j] & ~(col | (dl << dist) | (dr >> dist)));
    }
    return h;
}

/* est + v x 2^e, saturating (e grows without bound on a path of ever larger weights). */
static inline __attribute__((always_inline)) nq_cost_u128 add_shifted(nq_cost_u128 est, uint64_t v, int e)
{
    if (!v)
        return est;
    if (64 - __builtin_clzll(v) + e > 126)
        return SATURATED;
    return cost_sat_add(est, (nq_cost_u128)v << e);
}

/* One path from level L entered with `no`: sum over levels of (path weight) x (the level's nodes). */
static inline __attribute__((always_inline)) nq_cost_u128
drawn_body(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl, uint32_t dr, nq_rng_t *rng)
{
    uint64_t m = 1ull << MANT;
    int e = 0;
    nq_cost_u128 est = 0;
    for (;; L++) {
        if (L == K->m - 3)
            return add_shifted(est, m * last3_nodes(K, L, no, col, dl, dr), e) >> MANT;
        est = add_shifted(est, m * pop(no), e);
        uint32_t open = fast_viable(K, no, L, col, dl, dr), bits[NQ_SHARD_MAX_N];
        uint64_t h[NQ_SHARD_MAX_N], H = 0;
        int k = 0;
        for (; open; open &= open - 1, k++) {
            bits[k] = open & -open;
            h[k] = look_weight(K, L, col, dl, dr, bits[k]);
            H += h[k];
        }
        if (!k)
            return est >> MANT;
        int c = 0;
        for (uint64_t r = rng_below(rng, H); r >= h[c]; c++)
            r -= h[c];
        int s = K->shift[L + 1];
        col |= bits[c];
        dl = (dl | bits[c]) << s;
        dr = (dr | bits[c]) >> s;
        no = K->open_of[L + 1] & ~(col | dl | dr);
        for (m = m * H / h[c]; m >> (MANT + 1); m >>= 1)
            e++;
    }
}

/* The body twice, as count_fast.c's: x86-64's baseline has no popcnt instruction (gcc calls a
   libgcc routine, 20 % of a list's estimates), so the CPU picks at run time; same results. */
static nq_cost_u128 drawn_plain(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl,
                                uint32_t dr, nq_rng_t *rng)
{
    return drawn_body(K, L, no, col, dl, dr, rng);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt")))
static nq_cost_u128 drawn_popcnt(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl,
                                 uint32_t dr, nq_rng_t *rng)
{
    return drawn_body(K, L, no, col, dl, dr, rng);
}
#endif

static nq_cost_u128 fast_drawn(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl,
                               uint32_t dr, nq_rng_t *rng)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("popcnt"))
        return drawn_popcnt(K, L, no, col, dl, dr, rng);
#endif
    return drawn_plain(K, L, no, col, dl, dr, rng);
}

/* The fast tree below level L entered with `no`, estimated with `budget` paths. */
static nq_cost_u128 fast_paths(const nq_levels_t *K, int L, uint32_t no, uint32_t col, uint32_t dl,
                               uint32_t dr, uint32_t budget, nq_rng_t *rng)
{
    if (L == K->m - 3)
        return last3_nodes(K, L, no, col, dl, dr);
    if (budget == 1)
        return fast_drawn(K, L, no, col, dl, dr, rng);
    nq_cost_kids_t kids;
    cost_share(fast_viable(K, no, L, col, dl, dr), budget, rng, &kids);
    nq_cost_u128 sum = 0;
    int s = K->shift[L + 1];
    for (int i = 0; i < kids.n; i++) {
        uint32_t bit = kids.bit[i], nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        sum = cost_sat_add(sum, fast_paths(K, L + 1, K->open_of[L + 1] & ~(nc | nl | nr), nc, nl, nr,
                                           kids.budget[i], rng));
    }
    return cost_sat_add(pop(no), cost_scale(sum, &kids));
}

/* ---- search_leaves' accounting: every queen placed is a node ---- */

static uint64_t leaves_exact(const nq_plan_t *pl, int L, uint32_t av, uint32_t col, uint32_t dl, uint32_t dr)
{
    uint64_t nodes = pop(av);
    if (L == pl->m - 1)
        return nodes;
    int s = pl->shift[L + 1];
    for (; av; av &= av - 1) {
        uint32_t bit = av & -av, nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        nodes += leaves_exact(pl, L + 1, pl->full & ~(nc | nl | nr | pl->block[L + 1]), nc, nl, nr);
    }
    return nodes;
}

static nq_cost_u128 leaves_paths(const nq_plan_t *pl, int L, uint32_t av, uint32_t col, uint32_t dl,
                                 uint32_t dr, uint32_t budget, nq_rng_t *rng)
{
    if (L == pl->m - 1)
        return pop(av);
    nq_cost_kids_t kids;
    cost_share(av, budget, rng, &kids);
    nq_cost_u128 sum = 0;
    int s = pl->shift[L + 1];
    for (int i = 0; i < kids.n; i++) {
        uint32_t bit = kids.bit[i], nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        sum = cost_sat_add(sum, leaves_paths(pl, L + 1, pl->full & ~(nc | nl | nr | pl->block[L + 1]), nc, nl,
                                             nr, kids.budget[i], rng));
    }
    return cost_sat_add(pop(av), cost_scale(sum, &kids));
}

/* ---- count_shard's plans ---- */

static void cost_add_plan(nq_cost_plan_t *cp, const nq_plan_t *pl, int fast)
{
    int i = cp->nplans++;
    cp->plan[i] = *pl;
    cp->fast[i] = fast;
    if (fast)
        levels_init(&cp->lv[i], pl);
}

/* count_shard's dispatch, plan for plan (count.c: count_shard, count_flipped). */
int cost_plan_init(nq_cost_plan_t *cp, const nq_shard_desc_t *d)
{
    nq_plan_t pl, px;
    cp->nplans = 0;
    if (d->kind == NQ_KIND_ENUMERATE) {
        plan_init(&pl, d, 0);
        cost_add_plan(cp, &pl, 0);
        return 0;
    }
    if (d->kind != NQ_KIND_COUNT)
        return -1;
    int free_rows = 0, border = d->mode == NQ_SHARD_BORDER;
    for (int r = 0; r < d->n; r++)
        free_rows += d->row_col[r] < 0;
    if (!(border && free_rows >= 3 && d->flip)) {
        plan_init(&pl, d, 0);
        cost_add_plan(cp, &pl, border && pl.m >= 2);
        return 0;
    }
    plan_init(&pl, d, 1);
    if (d->row_col[d->n - 1] >= 0) {
        cost_add_plan(cp, &pl, pl.leaf8 && pl.m >= 2);
        return 0;
    }
    plan_split_weight(d, &pl, &px);
    if (d->bmaskx)
        cost_add_plan(cp, &px, 0);
    if (d->bmask8)
        cost_add_plan(cp, &pl, 1);
    return 0;
}

nq_cost_u128 cost_estimate(const nq_cost_plan_t *cp, uint32_t paths, nq_rng_t *rng)
{
    nq_cost_u128 est = 0;
    if (paths == 0)
        paths = 1;                      /* a budget of none would scale by k / 0 */
    for (int i = 0; i < cp->nplans; i++) {
        const nq_plan_t *pl = &cp->plan[i];
        const nq_levels_t *K = &cp->lv[i];
        uint32_t first = pl->full & ~(pl->colfix | pl->block[0]);   /* level 0's open cells */
        nq_cost_u128 e = 0;
        if (cp->fast[i] && pl->m == 2)
            e = last2_nodes(K, first, pl->colfix, 0, 0, pl->shift[1]);
        else if (cp->fast[i])
            e = fast_paths(K, 0, first, pl->colfix, 0, 0, paths, rng);
        else if (pl->m > 0)
            e = leaves_paths(pl, 0, first, pl->colfix, 0, 0, paths, rng);
        est = cost_sat_add(est, e);
    }
    return est;
}

uint64_t cost_exact(const nq_cost_plan_t *cp)
{
    uint64_t nodes = 0;
    for (int i = 0; i < cp->nplans; i++) {
        const nq_plan_t *pl = &cp->plan[i];
        if (cp->fast[i] && pl->m == 2)
            nodes += last2_nodes(&cp->lv[i], cp->lv[i].open_of[0] & ~pl->colfix, pl->colfix, 0, 0,
                                 pl->shift[1]);
        else if (cp->fast[i])
            nodes += fast_exact(&cp->lv[i], 0, cp->lv[i].open_of[0] & ~pl->colfix, pl->colfix, 0, 0);
        else if (pl->m > 0)
            nodes += leaves_exact(pl, 0, pl->full & ~(pl->colfix | pl->block[0]), pl->colfix, 0, 0);
    }
    return nodes;
}
