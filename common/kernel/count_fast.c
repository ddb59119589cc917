/*
 * The scalar hot loop of count_shard: every border shard goes through
 * search_fast in count.c (the bottom-up pass of count_flipped too); only plain mode
 * (n <= 3) and shards with fewer than 2 free rows take search_leaves. On a
 * CPU with AVX-512, search_fast hands shards with 4 or more free rows to
 * count_simd.c (about 10x faster); this loop is the portable kernel and the
 * reference the vector kernel is tested against.
 *
 * Iterative backtracking over the free rows with 32-bit masks: the current
 * level lives in registers, a stack keeps (open cells, columns, diagonals)
 * per level. The last three free rows are straight loops (fast_last3,
 * fast_last2) and the last row is never entered: its open cells are counted
 * with a popcount, weight-8 cells in bulk and the rare cells of a symmetric
 * border configuration one solution at a time (fast_rare). A queen is pushed
 * only if rows L+1, L+2 and the last row keep an open cell (look-ahead); on
 * the upper levels that test runs for a whole level at once when it is
 * entered (fast_viable), so the loop visits only queens that will be pushed.
 * Nodes = queens placed (internal placements plus solutions), as in
 * search_leaves.
 *
 * x86-64 baseline has no popcnt instruction (gcc calls a libgcc routine) and
 * only slow variable shifts, so the body is compiled twice and picked at run
 * time: plain, and with popcnt/BMI1/BMI2.
 */
#include "count_search.h"
#include "count_d4.h"


typedef struct { uint32_t open, col, dl, dr; } fast_level_t;

/* What the rare path needs to rebuild a whole solution from the search state. */
typedef struct {
    nq_plan_t *pl;
    nq_count_acc_t *acc;
    const fast_level_t *st;   /* saved levels 0..L-1 */
    int L;                    /* main-loop level (-1: the shard has 2 free rows) */
    uint32_t col_L;           /* columns at level L */
    uint32_t leaf8, leafx, last_open;
    int rc;                   /* -1 once a checked add overflowed */
} fast_ctx_t;

/*
 * Solutions whose row n-1 queen gives a weight other than 8 (a symmetric
 * border configuration): rebuild each one and count it with its weight and
 * stabilizer check. col2 = columns at level m-2, bit2 its queen, leaves the
 * last level's cells.
 */
static __attribute__((noinline)) void fast_rare(fast_ctx_t *cx, uint32_t col2, uint32_t bit2, uint32_t leaves)
{
    nq_plan_t *pl = cx->pl;
    int m = pl->m;
    for (int i = 0; i < cx->L; i++) {
        uint32_t next = i + 1 < cx->L ? cx->st[i + 1].col : cx->col_L;
        pl->cols[pl->row[i]] = (uint8_t)__builtin_ctz(next ^ cx->st[i].col);
    }
    if (cx->L >= 0)
        pl->cols[pl->row[cx->L]] = (uint8_t)__builtin_ctz(col2 ^ cx->col_L);
    pl->cols[pl->row[m - 2]] = (uint8_t)__builtin_ctz(bit2);
    while (leaves) {
        pl->cols[pl->row[m - 1]] = (uint8_t)__builtin_ctz(leaves);
        leaves &= leaves - 1;
        if (count_solution(pl, pl->cols, cx->acc))
            cx->rc = -1;
    }
}

/* Level m-2 with its open cells: counts the weight-8 solutions below it, hands the rest to fast_rare. */
static inline __attribute__((always_inline)) uint64_t
fast_last2(fast_ctx_t *cx, uint32_t open, uint32_t col, uint32_t dl, uint32_t dr, int s, uint64_t *nodes)
{
    uint64_t sols = 0, all = 0;
    const uint32_t last_open = cx->last_open, leaf8 = cx->leaf8, leafx = cx->leafx;
    *nodes += (unsigned)__builtin_popcount(open);
    while (open) {
        uint32_t bit = open & -open;
        open ^= bit;
        uint32_t x = last_open & ~((col | bit) | ((dl | bit) << s) | ((dr | bit) >> s));
        all += (unsigned)__builtin_popcount(x);
        sols += (unsigned)__builtin_popcount(x & leaf8);
        if (__builtin_expect((x & leafx) != 0, 0))
            fast_rare(cx, col, bit, x & leafx);
    }
    *nodes += all;
    return sols;
}

/* Level m-3 with its open cells: each queen there leads to fast_last2 for the last two levels. */
static inline __attribute__((always_inline)) uint64_t
fast_last3(fast_ctx_t *cx, const nq_levels_t *K, int L3, uint32_t open, uint32_t col, uint32_t dl, uint32_t dr,
           uint64_t *nodes)
{
    uint64_t sols = 0;
    const int s = K->shift[L3 + 1], s2 = K->shift[L3 + 2];
    const uint32_t next_open = K->open_of[L3 + 1];
    *nodes += (unsigned)__builtin_popcount(open);
    cx->L = L3;
    cx->col_L = col;
    /* skip, without a branch per queen, the queens that leave row m-2 no open cell */
    uint32_t r1 = next_open & ~(col | (dl << s) | (dr >> s));
    open &= ~fast_kills(r1, s);
    if (K->cover[L3]) {
        /* the column test (count_search.h): three rows left */
        int kz = K->dz[L3];
        uint32_t rz = K->last_open & ~(col | (dl << kz) | (dr >> kz));
        if ((open | r1 | rz | col) != K->full)
            open = 0;
    }
    while (open) {
        uint32_t bit = open & -open;
        open ^= bit;
        uint32_t nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
        sols += fast_last2(cx, next_open & ~(nc | nl | nr), nc, nl, nr, s2, nodes);
    }
    return sols;
}

/*
 * Levels 0..m-4 iteratively; a queen placed on level m-4 hands level m-3 to
 * fast_last3. A queen is only pushed when the next row has an open cell and
 * row L+2 and the last row keep one even before the next queen (a look-ahead
 * that saves the pushes of dead ends: the last row is the most constrained,
 * only canonical b are open there). The test was one unpredictable branch
 * per queen; fast_viable now applies it to the whole level when it is
 * entered: ~20 % more instructions but ~40 % fewer branch mispredictions
 * (callgrind, N=14/15) and ~16 % less time at N=17. Nodes still count every
 * open cell of an entered level, so node counts are unchanged.
 */
static inline __attribute__((always_inline)) int
fast_body(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes_out)
{
    fast_level_t st[NQ_SHARD_MAX_N];
    nq_levels_t lv;
    levels_init(&lv, pl);
    const uint32_t *open_of = lv.open_of;
    const int *shift = lv.shift;
    const int m = pl->m, last_main = m - 4;
    uint64_t nodes = 0, sols = 0, next_poll = NQ_KERNEL_POLL_NODES;
    int L = 0, rc = 0;
    fast_ctx_t cx = { pl, acc, st, -1, 0, pl->leaf8, pl->leafx, open_of[m - 1], 0 };
    uint32_t col = pl->colfix, dl = 0, dr = 0, open = open_of[0] & ~col;
    if (m == 2) {
        sols = fast_last2(&cx, open, col, dl, dr, shift[1], &nodes);
        goto done;
    }
    if (m == 3) {
        /* fast_last3's rare path reads level 0 from cx->col_L and nothing from st */
        sols = fast_last3(&cx, &lv, 0, open, col, dl, dr, &nodes);
        goto done;
    }
    nodes += (unsigned)__builtin_popcount(open);
    open = fast_viable(&lv, open, 0, col, dl, dr);
    for (;;) {
        if (open) {
            uint32_t bit = open & -open;
            open ^= bit;
            int s = shift[L + 1];
            uint32_t nc = col | bit, nl = (dl | bit) << s, nr = (dr | bit) >> s;
            uint32_t no = open_of[L + 1] & ~(nc | nl | nr);
            st[L] = (fast_level_t){ open, col, dl, dr };   /* fast_rare reads levels 0..L too */
            if (L == last_main) {
                sols += fast_last3(&cx, &lv, L + 1, no, nc, nl, nr, &nodes);
            } else {
                L++;
                col = nc; dl = nl; dr = nr;
                nodes += (unsigned)__builtin_popcount(no);
                open = fast_viable(&lv, no, L, col, dl, dr);
            }
            continue;
        }
        if (L == 0)
            break;
        L--;
        open = st[L].open; col = st[L].col; dl = st[L].dl; dr = st[L].dr;
        if (__builtin_expect(nodes >= next_poll, 0)) {
            next_poll = nodes + NQ_KERNEL_POLL_NODES;
            if ((rc = count_poll(acc, &sols, nodes, ctl)) != 0 || (rc = cx.rc) != 0)
                break;
        }
    }
done:
    if (rc == 0)
        rc = count_poll(acc, &sols, nodes, NULL);
    if (rc == 0)
        rc = cx.rc;
    *nodes_out = nodes;
    return rc;
}

static int fast_plain(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    return fast_body(pl, acc, ctl, nodes);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt,bmi,bmi2")))
static int fast_bmi2(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    return fast_body(pl, acc, ctl, nodes);
}

/* Reads what libgcc's constructor found: cheap enough per shard. */
static int cpu_has_bmi2(void)
{
    return __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
}
#endif

int search_scalar(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (cpu_has_bmi2())
        return fast_bmi2(pl, acc, ctl, nodes);
#endif
    return fast_plain(pl, acc, ctl, nodes);
}
