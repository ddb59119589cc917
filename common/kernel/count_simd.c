/*
 * The counting kernel on 16 lanes (AVX-512), used by search_fast when the CPU
 * has it. Same plan, same look-ahead, same counts and node counts as the
 * scalar loop in count_fast.c; only the order of the work differs.
 *
 * Why it is fast: the scalar loop spends its time on a data-dependent branch
 * per level ("is there another queen here?") that the CPU mispredicts about
 * once per level, and on one level's look-ahead at a time. Here the search
 * runs breadth-first in bounded chunks: every level L has a buffer of nodes
 * (col, dl, dr and the open cells still to try), and 16 lanes, all at the
 * same level, each take one queen of their node per step and write the child
 * to level L+1's buffer if its look-ahead leaves it an open cell. Because
 * the lanes share the level, they share its row distances, so the diagonal
 * shifts are uniform vector shifts. A lane whose node is used up is refilled
 * from the level's buffer (expand); children are packed with compress. When
 * level L+1's buffer is nearly full the search steps down to it, and back up
 * when it can no longer fill every lane (see drain), so memory stays at 1.4 MB
 * a thread whatever the shard. A level runs two such groups of 16 lanes in
 * turn, so that one group's wait for its refill overlaps the other's step.
 * The level m-3 queens end in closed form: for a queen there, with o2 the
 * open cells of row m-2 and R those of the last row, the completions are
 * the pairs (u in o2, v in R) where u does not attack v; u, u << s and u >> s
 * are three different cells, so that is |o2| |R| minus three popcounts.
 *
 * Only weight-8 solutions are counted here (in bulk); solutions whose last-row
 * cell has another weight (symmetric border configurations, rare) need the
 * whole board for their unique check. A second pass over the same shard, with
 * the last row cut down to those cells, counts them one by one: the same
 * kernel, but each node also carries its path (the column of every level,
 * 5 bits each), so that a lane with solutions can rebuild the board. That
 * pass was scalar until it was measured: a quarter of the time at N = 17-18.
 */
#include "count_search.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define SIMD_TARGET __attribute__((target("avx512f,avx512vpopcntdq,bmi,bmi2,popcnt")))

enum {
    LANES = 16,
    GROUPS = 2,           /* groups of 16 lanes a level steps in turn (see drain) */
    CAP = 1024,           /* nodes a level buffer holds before the search steps down (see drain) */
    ROOM = CAP + LANES,   /* a round of two steps starts at <= CAP - 32; a push writes 16 entries ... */
    SLACK = LANES,        /* ... and a refill reads 16 entries from any position */
    FLUSH_STEPS = 1024,   /* 32-bit lane counters are summed before they could overflow */
    PATH_LEVELS = 6,      /* levels per 32-bit path word (5 bits each) */
    PATH_WORDS = (NQ_SHARD_MAX_N + PATH_LEVELS - 1) / PATH_LEVELS
};

/* One level's buffer of nodes, and the lanes it had when the search stepped below it. */
typedef struct {
    uint32_t open[ROOM + SLACK], col[ROOM + SLACK], dl[ROOM + SLACK], dr[ROOM + SLACK];
    uint32_t lane_open[GROUPS * LANES], lane_col[GROUPS * LANES], lane_dl[GROUPS * LANES];
    uint32_t lane_dr[GROUPS * LANES];
    uint32_t path[PATH_WORDS][ROOM + SLACK], lane_path[PATH_WORDS][GROUPS * LANES];   /* rare pass only */
    int cnt, rd;
    int held;                          /* the lane_* arrays hold the level's lanes (else all empty) */
} simd_level_t;

int count_simd_available(void)
{
    static atomic_int cached = -1;   /* -1 unknown, 0 no, 1 yes: a benign race */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        const char *force = getenv("NQ_COUNT_KERNEL");
        v = (!force || strcmp(force, "scalar") != 0) && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("bmi2");
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

/* fast_kills of count_fast.c on 16 rows at once (see there for the bit-sliced count). */
SIMD_TARGET static inline __m512i v_kills(__m512i R, __m128i k)
{
    const __m512i want0 = _mm512_setr_epi32(-1, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i want1 = _mm512_setr_epi32(-1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512i B = _mm512_srl_epi32(R, k), C = _mm512_sll_epi32(R, k);
    __m512i s0 = _mm512_ternarylogic_epi32(R, B, C, 0x96);   /* a ^ b ^ c */
    __m512i s1 = _mm512_ternarylogic_epi32(R, B, C, 0xe8);   /* majority */
    __m512i p = _mm512_popcnt_epi32(R);
    __mmask16 small = _mm512_cmplt_epu32_mask(p, _mm512_set1_epi32(4));
    __m512i x = _mm512_xor_si512(s0, _mm512_permutexvar_epi32(p, want0));
    /* x & (s1 ^ w1): 0x60 = a & (b ^ c) */
    return _mm512_maskz_ternarylogic_epi32(small, x, s1, _mm512_permutexvar_epi32(p, want1), 0x60);
}

/* The cells of a row k rows below that the queens (col, dl, dr) leave among open. */
SIMD_TARGET static inline __m512i v_row(__m512i open, __m512i col, __m512i dl, __m512i dr, __m128i k)
{
    __m512i hit = _mm512_ternarylogic_epi32(col, _mm512_sll_epi32(dl, k), _mm512_srl_epi32(dr, k), 0xfe);
    return _mm512_andnot_si512(hit, open);
}

static __m128i shift_of(int k) { return _mm_cvtsi32_si128(k); }

/*
 * The column test (count_search.h): u | w, the rows already built, and the node's columns, plus
 * the rows c+3 .. c+k-2 between them and the last. v where every free column keeps an open cell
 * (and, with `wide`, every row built here keeps one), else nothing. `wide` (encoding 5 from
 * NQ_COVER_WIDE_N) is a constant in the main passes: a loop over the rows for both rules made
 * encoding 4's 1.7 % slower at N=18 (bench_ab.sh, 6 rounds).
 */
SIMD_TARGET static inline __m512i v_cover(const nq_levels_t *K, int c, __m512i v, __m512i u, __m512i w,
                                          __m512i col, __m512i dl, __m512i dr, int wide)
{
    __m512i cov = _mm512_ternarylogic_epi32(u, w, col, 0xfe);
    __mmask16 live = 0xffff;
    if (!wide) {
        if (K->cover[c] == NQ_COVER_LEFT_4)
            cov = _mm512_or_si512(cov, v_row(_mm512_set1_epi32((int)K->open_of[c + 3]), col, dl, dr,
                                             shift_of(K->dx[c][0])));
    } else {
        for (int j = 3; j <= K->cover[c] - 2; j++) {
            __m512i r = v_row(_mm512_set1_epi32((int)K->open_of[c + j]), col, dl, dr,
                              shift_of(K->dx[c][j - 3]));
            cov = _mm512_or_si512(cov, r);
            live = _mm512_mask_test_epi32_mask(live, r, r);
        }
    }
    __mmask16 covered = _mm512_mask_cmpeq_epi32_mask(live, cov, _mm512_set1_epi32((int)K->full));
    return _mm512_maskz_mov_epi32(covered, v);
}

/*
 * The open cells worth trying at level c (c <= m-4: rows c+1, c+2 and the
 * last keep an open cell; c == m-3: row m-2 keeps one, as in fast_last3),
 * and none where the column test runs and fails.
 */
SIMD_TARGET static inline __m512i v_viable(const nq_levels_t *K, int c, __m512i no, __m512i col, __m512i dl,
                                           __m512i dr, int wide)
{
    if (c == K->m - 3) {
        __m128i s = shift_of(K->shift[c + 1]);
        __m512i r1 = v_row(_mm512_set1_epi32((int)K->open_of[c + 1]), col, dl, dr, s);
        __m512i v = _mm512_andnot_si512(v_kills(r1, s), no);
        if (!K->cover[c])
            return v;
        __m512i rz = v_row(_mm512_set1_epi32((int)K->last_open), col, dl, dr, shift_of(K->dz[c]));
        return v_cover(K, c, v, v, _mm512_or_si512(r1, rz), col, dl, dr, wide);
    }
    __m128i k1 = shift_of(K->d1[c]), k2 = shift_of(K->d2[c]), kz = shift_of(K->dz[c]);
    __m512i r1 = v_row(_mm512_set1_epi32((int)K->open_of[c + 1]), col, dl, dr, k1);
    __m512i r2 = v_row(_mm512_set1_epi32((int)K->open_of[c + 2]), col, dl, dr, k2);
    __m512i rz = v_row(_mm512_set1_epi32((int)K->last_open), col, dl, dr, kz);
    __m512i dead = _mm512_ternarylogic_epi32(v_kills(r1, k1), v_kills(r2, k2), v_kills(rz, kz), 0xfe);
    __m512i v = _mm512_andnot_si512(dead, no);
    if (!K->cover[c])
        return v;
    return v_cover(K, c, v, _mm512_ternarylogic_epi32(no, r1, r2, 0xfe), rz, col, dl, dr, wide);
}

typedef struct {
    __m512i open, col, dl, dr;
    __m512i path[PATH_WORDS];          /* rare pass: levels 0..c-1's columns */
} lanes_t;

/* `rare` is a constant at every call, the path words the pass carries (0 in the main pass, whose
   code has no path in it; see DRAIN_PASS). */
SIMD_TARGET static inline void lanes_save(simd_level_t *lv, const lanes_t *x, int rare)
{
#pragma GCC unroll 4
    for (int g = 0; g < GROUPS; g++) {
        int o = g * LANES;
        _mm512_storeu_si512(lv->lane_open + o, x[g].open);
        _mm512_storeu_si512(lv->lane_col + o, x[g].col);
        _mm512_storeu_si512(lv->lane_dl + o, x[g].dl);
        _mm512_storeu_si512(lv->lane_dr + o, x[g].dr);
        for (int w = 0; w < rare; w++)
            _mm512_storeu_si512(lv->lane_path[w] + o, x[g].path[w]);
    }
}

SIMD_TARGET static inline void lanes_load(const simd_level_t *lv, lanes_t *x, int rare)
{
#pragma GCC unroll 4
    for (int g = 0; g < GROUPS; g++) {
        int o = g * LANES;
        x[g].open = _mm512_loadu_si512(lv->lane_open + o);
        x[g].col = _mm512_loadu_si512(lv->lane_col + o);
        x[g].dl = _mm512_loadu_si512(lv->lane_dl + o);
        x[g].dr = _mm512_loadu_si512(lv->lane_dr + o);
        for (int w = 0; w < rare; w++)
            x[g].path[w] = _mm512_loadu_si512(lv->lane_path[w] + o);
    }
}

/*
 * Empty lanes take the next nodes of the level's buffer (read position *rd of cnt), in order.
 * When the buffer cannot fill them all: 1 and nothing taken unless `final` (the parent level
 * has no more children to give), else as many as there are.
 */
SIMD_TARGET static inline int lanes_refill(const simd_level_t *lv, int *rd, int cnt, lanes_t *x, int rare,
                                           int final)
{
    __mmask16 need = _mm512_testn_epi32_mask(x->open, x->open);
    int r = *rd, avail = cnt - r;
    if (!need)
        return 0;
    if (__builtin_popcount(need) > avail) {
        if (!final)
            return 1;
        if (avail <= 0)
            return 0;
        need = (__mmask16)_pdep_u32((1u << avail) - 1, need);
    }
    x->open = _mm512_mask_expand_epi32(x->open, need, _mm512_loadu_si512(lv->open + r));
    x->col = _mm512_mask_expand_epi32(x->col, need, _mm512_loadu_si512(lv->col + r));
    x->dl = _mm512_mask_expand_epi32(x->dl, need, _mm512_loadu_si512(lv->dl + r));
    x->dr = _mm512_mask_expand_epi32(x->dr, need, _mm512_loadu_si512(lv->dr + r));
    for (int w = 0; w < rare; w++)
        x->path[w] = _mm512_mask_expand_epi32(x->path[w], need, _mm512_loadu_si512(lv->path[w] + r));
    *rd = r + __builtin_popcount(need);
    return 0;
}

/* A starved level keeps its unread nodes (fewer than LANES) at the start of its buffer: one
   vector each (a refill reads 16 entries from any position, so these loads stay in the buffer). */
SIMD_TARGET static inline void level_compact(simd_level_t *lv, int rd, int cnt, int rare)
{
    _mm512_storeu_si512(lv->open, _mm512_loadu_si512(lv->open + rd));
    _mm512_storeu_si512(lv->col, _mm512_loadu_si512(lv->col + rd));
    _mm512_storeu_si512(lv->dl, _mm512_loadu_si512(lv->dl + rd));
    _mm512_storeu_si512(lv->dr, _mm512_loadu_si512(lv->dr + rd));
    for (int w = 0; w < rare; w++)
        _mm512_storeu_si512(lv->path[w], _mm512_loadu_si512(lv->path[w] + rd));
    lv->cnt = cnt - rd;
    lv->rd = 0;
}

/*
 * Appends the lanes in keep to the level's buffer, which holds *cnt nodes. One compress of
 * the lane numbers and a permute per array, not a compress per array: on this core a compress
 * is two uops on the permute pipes, which the refill's expands also need (6 uops for 8 in the
 * main pass, 11 for 20 in the rare one). N=18, depth 2: 2-3 % less time in 10 paired rounds of
 * tests/bench/bench_ab.sh on either vCPU. Past the kept lanes the stores write copies of lane
 * 0, which nothing reads (a refill takes only the first cnt entries).
 */
SIMD_TARGET static inline void level_push(simd_level_t *lv, int *cnt, __mmask16 keep, __m512i open,
                                          __m512i col, __m512i dl, __m512i dr, const __m512i *path, int rare)
{
    int w = *cnt;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i from = _mm512_maskz_compress_epi32(keep, lane);
    _mm512_storeu_si512(lv->open + w, _mm512_permutexvar_epi32(from, open));
    _mm512_storeu_si512(lv->col + w, _mm512_permutexvar_epi32(from, col));
    _mm512_storeu_si512(lv->dl + w, _mm512_permutexvar_epi32(from, dl));
    _mm512_storeu_si512(lv->dr + w, _mm512_permutexvar_epi32(from, dr));
    for (int i = 0; i < rare; i++)
        _mm512_storeu_si512(lv->path[i] + w, _mm512_permutexvar_epi32(from, path[i]));
    *cnt = w + __builtin_popcount(keep);
}

/* Running totals: 32-bit lane counters, summed into 64 bits every FLUSH_STEPS steps. */
typedef struct {
    __m512i nodes, sols;
    int steps;
    int err;                           /* rare pass: -1 once count_solution overflowed */
    uint64_t nodes64, sols64, next_poll;
} simd_tally_t;

SIMD_TARGET static inline void tally_flush(simd_tally_t *t)
{
    t->nodes64 += (uint32_t)_mm512_reduce_add_epi32(t->nodes);
    t->sols64 += (uint32_t)_mm512_reduce_add_epi32(t->sols);
    t->nodes = t->sols = _mm512_setzero_si512();
    t->steps = 0;
}

/* A queen placed at level c in every lane: the child's columns, diagonals and open cells at level c+1. */
typedef struct {
    __mmask16 act;                     /* the lanes that had a queen to place */
    __m512i bit, col, dl, dr, open;
} placed_t;

/* Each lane takes the lowest queen of its node at level c. */
SIMD_TARGET static inline placed_t lanes_place(const nq_levels_t *K, int c, lanes_t *x)
{
    placed_t p;
    __m512i bit = _mm512_and_si512(x->open, _mm512_sub_epi32(_mm512_setzero_si512(), x->open));
    __m128i s = shift_of(K->shift[c + 1]);
    p.bit = bit;
    p.act = _mm512_test_epi32_mask(x->open, x->open);
    x->open = _mm512_xor_si512(x->open, bit);
    p.col = _mm512_or_si512(x->col, bit);
    p.dl = _mm512_sll_epi32(_mm512_or_si512(x->dl, bit), s);
    p.dr = _mm512_srl_epi32(_mm512_or_si512(x->dr, bit), s);
    p.open = _mm512_andnot_si512(_mm512_ternarylogic_epi32(p.col, p.dl, p.dr, 0xfe),
                                 _mm512_set1_epi32((int)K->open_of[c + 1]));
    return p;
}

/*
 * One step at level c (< m-3): each active lane places the lowest queen of its
 * node; children with a viable cell go to level c+1. Returns the lanes that were active.
 */
SIMD_TARGET static inline __mmask16 step_main(const nq_levels_t *K, int c, lanes_t *x, simd_level_t *out,
                                             int *out_cnt, simd_tally_t *t, int rare, int wide)
{
    placed_t p = lanes_place(K, c, x);
    t->nodes = _mm512_add_epi32(t->nodes, _mm512_maskz_popcnt_epi32(p.act, p.open));
    __m512i vo = v_viable(K, c + 1, p.open, p.col, p.dl, p.dr, wide);
    __m512i path[PATH_WORDS];
    if (rare) {
        /* the child's path: the parent's plus this level's column (popcount of the bits below it) */
        __m512i at = _mm512_sll_epi32(_mm512_popcnt_epi32(_mm512_sub_epi32(p.bit, _mm512_set1_epi32(1))),
                                      shift_of(5 * (c % PATH_LEVELS)));
        for (int w = 0; w < rare; w++)
            path[w] = w == c / PATH_LEVELS ? _mm512_or_si512(x->path[w], at) : x->path[w];
    }
    level_push(out, out_cnt, _mm512_mask_test_epi32_mask(p.act, vo, vo), vo, p.col, p.dl, p.dr, path, rare);
    return p.act;
}

/*
 * The rare pass's solutions below the level m-3 queens of the lanes in `has`:
 * each lane's board rebuilt from its path, the last two rows' pairs walked,
 * and every solution counted with its weight and unique check.
 */
SIMD_TARGET static __attribute__((noinline)) void rare_emit(const nq_plan_t *pl, nq_count_acc_t *acc,
                                                            simd_tally_t *t, __mmask16 has, const lanes_t *x,
                                                            int words, __m512i bit, __m512i o2, __m512i R,
                                                            int s2)
{
    uint32_t path[PATH_WORDS][LANES], b3[LANES], row2[LANES], last[LANES];
    for (int w = 0; w < words; w++)
        _mm512_storeu_si512(path[w], x->path[w]);
    _mm512_storeu_si512(b3, bit);
    _mm512_storeu_si512(row2, o2);
    _mm512_storeu_si512(last, R);
    const int m = pl->m;
    uint8_t cols[NQ_SHARD_MAX_N];
    memcpy(cols, pl->cols, sizeof cols);   /* the fixed queens */
    for (unsigned lanes = has; lanes; lanes &= lanes - 1) {
        int i = __builtin_ctz(lanes);
        for (int L = 0; L < m - 3; L++)
            cols[pl->row[L]] = (uint8_t)(path[L / PATH_LEVELS][i] >> (5 * (L % PATH_LEVELS)) & 31);
        cols[pl->row[m - 3]] = (uint8_t)__builtin_ctz(b3[i]);
        for (uint32_t v = row2[i]; v; v &= v - 1) {
            uint32_t u = v & -v, free_last = last[i] & ~(u | u << s2 | u >> s2);
            cols[pl->row[m - 2]] = (uint8_t)__builtin_ctz(u);
            for (; free_last; free_last &= free_last - 1) {
                cols[pl->row[m - 1]] = (uint8_t)__builtin_ctz(free_last);
                if (count_solution(pl, cols, acc))
                    t->err = -1;
            }
        }
    }
}

/* The pairs (u in o2, v in R) where u attacks v, v == u, v == u << s or v == u >> s (u, u << s and
   u >> s are three different cells): three popcounts. */
SIMD_TARGET static inline __m512i v_clashes(__m512i o2, __m512i R, __m128i s)
{
    return _mm512_add_epi32(_mm512_popcnt_epi32(_mm512_and_si512(o2, R)),
                            _mm512_add_epi32(_mm512_popcnt_epi32(_mm512_and_si512(o2, _mm512_srl_epi32(R, s))),
                                             _mm512_popcnt_epi32(_mm512_and_si512(o2, _mm512_sll_epi32(R, s)))));
}

/*
 * One step at level m-3: the lowest queen of each active lane's node, and the last two rows in
 * closed form. `all8` (a constant, main pass only): every open cell of the last row weighs 8, as
 * in nine roots of ten, so the solutions are the pairs and the weight-8 cells need no count of
 * their own (N=18: 0.979 of the time it took before, medians of 8 paired rounds).
 */
SIMD_TARGET static inline __mmask16 step_last(const nq_levels_t *K, lanes_t *x, simd_tally_t *t,
                                             const nq_plan_t *pl, nq_count_acc_t *acc, int rare, int all8)
{
    const int c = K->m - 3;
    placed_t p = lanes_place(K, c, x);
    __mmask16 act = p.act;
    __m128i s2 = shift_of(K->shift[c + 2]);
    __m512i o2 = p.open;
    __m512i R = v_row(_mm512_set1_epi32((int)K->last_open), p.col, p.dl, p.dr, s2);
    __m512i n2 = _mm512_popcnt_epi32(o2);
    __m512i pairs = _mm512_sub_epi32(_mm512_mullo_epi32(n2, _mm512_popcnt_epi32(R)), v_clashes(o2, R, s2));
    t->nodes = _mm512_mask_add_epi32(t->nodes, act, t->nodes, _mm512_add_epi32(n2, pairs));
    if (rare) {
        /* the rare pass's last row holds only rare cells: its solutions go one by one */
        __mmask16 has = _mm512_mask_cmpgt_epu32_mask(act, pairs, _mm512_setzero_si512());
        if (has)
            rare_emit(pl, acc, t, has, x, rare, p.bit, o2, R, K->shift[c + 2]);
    } else if (all8) {
        t->sols = _mm512_mask_add_epi32(t->sols, act, t->sols, pairs);
    } else {
        __m512i R8 = _mm512_and_si512(R, _mm512_set1_epi32((int)K->leaf8));
        __m512i sols = _mm512_sub_epi32(_mm512_mullo_epi32(n2, _mm512_popcnt_epi32(R8)), v_clashes(o2, R8, s2));
        t->sols = _mm512_mask_add_epi32(t->sols, act, t->sols, sols);
    }
    return act;
}

typedef int drain_fn(const nq_levels_t *K, const nq_plan_t *pl, simd_level_t *lv, int c, simd_tally_t *t,
                     nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, int final);
SIMD_TARGET static drain_fn drain_main, drain_main8, drain_main_wide, drain_main8_wide, drain_rare1,
    drain_rare2, drain_rare3, drain_rare4, drain_rare6;

/* The drain of a pass: `rare` path words (0: the main pass), `all8` (step_last), `wide` (v_cover;
   a constant of the main passes only); see DRAIN_PASS. */
static drain_fn *drain_for(int rare, int all8, int wide)
{
    switch (rare) {
    case 0: return wide ? (all8 ? drain_main8_wide : drain_main_wide) : all8 ? drain_main8 : drain_main;
    case 1: return drain_rare1;
    case 2: return drain_rare2;
    case 3: return drain_rare3;
    case 4: return drain_rare4;
    default: return drain_rare6;
    }
}

/* The drain of the same pass, one level down. */
SIMD_TARGET static inline int descend(const nq_levels_t *K, const nq_plan_t *pl, simd_level_t *lv, int c,
                                      simd_tally_t *t, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl,
                                      int rare, int all8, int wide, int final)
{
    return drain_for(rare, all8, wide)(K, pl, lv, c + 1, t, acc, ctl, final);
}

/* Flushes the lane counters and polls about every 2^20 nodes: 0, 2 cancelled, -1 overflow. */
SIMD_TARGET static int tally_poll(simd_tally_t *t, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl)
{
    tally_flush(t);
    if (t->nodes64 < t->next_poll)
        return 0;
    t->next_poll = t->nodes64 + NQ_KERNEL_POLL_NODES;
    return count_poll(acc, &t->sols64, t->nodes64, ctl);
}

/*
 * Runs level c (stepping down whenever level c+1 fills up): 0, or what tally_poll returned.
 * Recursion depth is at most m.
 *
 * Until `final` (level c-1 is done, so no more nodes will come), the level runs only while
 * its buffer can fill every empty lane: when it cannot, it keeps its lanes and its last few
 * nodes (lv[c].held) and returns, and level c-1 makes more children before the next visit.
 * A level used to run to the end at every visit, its last steps on fewer and fewer lanes:
 * at N=17, depth 1, 95.1 % of the lanes of a step were busy, now 99.97 % (41.0 M steps, now
 * 39.0 M). With visits cut short, a bigger buffer pays (CAP 1024, was 512): fewer visits,
 * each one a save, a compaction and a load. N=17: 0.499 s against 0.524 s; N=18: 3.50 s
 * against 3.69 s (interleaved medians of 9 and 5, one thread, depth 1).
 *
 * Two groups of 16 lanes step in turn: each step's refill waits on the last one's (which lanes
 * emptied, how far the read position moves, then the loads), a chain of ~20 cycles in a
 * step of ~40, and the two groups' chains overlap. On the final visit only group 0 takes
 * new nodes and group 1 steps only while it holds some: a small shard's levels are mostly
 * final visits, where a second, emptier group cost more steps than it saved (N=16 depth 4:
 * 0.197 s against 0.170 s when both groups refilled to the end; 0.168 s so). N=17 depth 1:
 * 0.444 s against 0.493 s with one group (medians of 9, interleaved, one thread).
 *
 * The buffer positions and the lane tallies live in locals while the level
 * runs, and go back to memory only around a step down or a poll: the vector
 * stores into the buffers may alias anything reachable by pointer, so kept
 * in *t or lv they were stored and reloaded every step, and those round
 * trips sat on the chain from one step to the next (N=18: 3.72 s before, 3.52 s
 * after). always_inline: grown by this, drain was no longer inlined into its
 * two passes, and `rare` stopped being a constant.
 */
SIMD_TARGET static inline __attribute__((always_inline)) int drain(const nq_levels_t *K, const nq_plan_t *pl,
                                                                   simd_level_t *lv, int c, simd_tally_t *t,
                                                                   nq_count_acc_t *acc,
                                                                   const nq_kernel_ctl_t *ctl, int rare,
                                                                   int all8, int wide, int final)
{
    const int last = K->m - 3;
    /* registers only because every loop over the groups is unrolled (#pragma GCC unroll): left
       a loop, GCC kept x on the stack, and two groups were slower than one */
    lanes_t x[GROUPS];
    if (lv[c].held) {
        lanes_load(&lv[c], x, rare);
    } else {
#pragma GCC unroll 4
        for (int g = 0; g < GROUPS; g++) {
            x[g].open = x[g].col = x[g].dl = x[g].dr = _mm512_setzero_si512();
            for (int w = 0; w < rare; w++)
                x[g].path[w] = _mm512_setzero_si512();
        }
    }
    simd_tally_t tl = *t;
    int rc = 0, rd = lv[c].rd, cnt = lv[c].cnt, out_cnt = c < last ? lv[c + 1].cnt : 0;
    for (;;) {
        /* group 1 takes no new nodes on the final visit, so the level's tail runs on one group */
        int starved = lanes_refill(&lv[c], &rd, cnt, &x[0], rare, final);
        if (!starved && !final)
            starved = lanes_refill(&lv[c], &rd, cnt, &x[1], rare, 0);
        if (starved) {
            /* starved: keep the lanes and the unread nodes for the next visit */
            lanes_save(&lv[c], x, rare);
            lv[c].held = 1;
            level_compact(&lv[c], rd, cnt, rare);
            if (c < last)
                lv[c + 1].cnt = out_cnt;
            *t = tl;
            return 0;
        }
        unsigned act = c == last ? step_last(K, &x[0], &tl, pl, acc, rare, all8)
                                 : step_main(K, c, &x[0], &lv[c + 1], &out_cnt, &tl, rare, wide);
        if (!final || _mm512_test_epi32_mask(x[1].open, x[1].open))
            act |= c == last ? step_last(K, &x[1], &tl, pl, acc, rare, all8)
                             : step_main(K, c, &x[1], &lv[c + 1], &out_cnt, &tl, rare, wide);
        if (!act)
            break;
        if (rare && tl.err) {
            rc = tl.err;
            break;
        }
        if ((tl.steps += GROUPS) >= FLUSH_STEPS) {
            *t = tl;
            rc = tally_poll(t, acc, ctl);
            tl = *t;
            if (rc != 0)
                break;
        }
        if (c < last && out_cnt > CAP - GROUPS * LANES) {
            lanes_save(&lv[c], x, rare);
            lv[c].rd = rd;
            lv[c + 1].cnt = out_cnt;
            *t = tl;
            rc = descend(K, pl, lv, c, t, acc, ctl, rare, all8, wide, 0);
            tl = *t;
            if (rc != 0)
                break;
            out_cnt = lv[c + 1].cnt;
            lanes_load(&lv[c], x, rare);
        }
    }
    *t = tl;
    if (rc != 0)
        return rc;
    lv[c].cnt = lv[c].rd = lv[c].held = 0;
    if (c < last)
        lv[c + 1].cnt = out_cnt;
    /* level c is done: the last visit of level c+1, to what it holds */
    if (c < last && (out_cnt || lv[c + 1].held))
        return descend(K, pl, lv, c, t, acc, ctl, rare, all8, wide, 1);
    return 0;
}

/*
 * The passes' drains, each compiled with its own constants: the main pass (rare = 0), with or
 * without `all8` (step_last), and the rare pass with as many path words as the shard's levels
 * need (rare_words), not always the six of n = 32. Every word is a permute and a store a push, a
 * load and an expand a refill; N=18, where the rare pass was ~5 % of the time: 0.987 of the time
 * with 2 words instead of 6 (medians of 8 paired rounds of tests/bench/bench_ab.sh, one thread).
 */
#define DRAIN_PASS(name, words, all8, wide)                                                                \
    SIMD_TARGET static int name(const nq_levels_t *K, const nq_plan_t *pl, simd_level_t *lv, int c,        \
                                simd_tally_t *t, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, int final) \
    {                                                                                                      \
        return drain(K, pl, lv, c, t, acc, ctl, words, all8, wide, final);                                 \
    }
DRAIN_PASS(drain_main, 0, 0, 0)
DRAIN_PASS(drain_main8, 0, 1, 0)
DRAIN_PASS(drain_main_wide, 0, 0, 1)
DRAIN_PASS(drain_main8_wide, 0, 1, 1)
/* the rare passes (a few % of the time) read `wide` from the levels */
DRAIN_PASS(drain_rare1, 1, 0, K->wide)
DRAIN_PASS(drain_rare2, 2, 0, K->wide)
DRAIN_PASS(drain_rare3, 3, 0, K->wide)
DRAIN_PASS(drain_rare4, 4, 0, K->wide)
DRAIN_PASS(drain_rare6, PATH_WORDS, 0, K->wide)

/* The path words a rare pass over m levels carries: the columns of levels 0..m-4, rounded up to a
   drain that exists. */
static int rare_words(int m)
{
    int w = (m - 3 + PATH_LEVELS - 1) / PATH_LEVELS;
    return w <= 4 ? w : PATH_WORDS;
}

SIMD_TARGET static int simd_body(const nq_plan_t *pl, simd_level_t *lv, nq_count_acc_t *acc,
                                 const nq_kernel_ctl_t *ctl, uint64_t *nodes_out, int rare)
{
    nq_levels_t K;
    levels_init(&K, pl);
    for (int c = 0; c < pl->m; c++)      /* empty levels, whatever a cancelled pass left */
        lv[c].cnt = lv[c].rd = lv[c].held = 0;
    simd_tally_t t = { _mm512_setzero_si512(), _mm512_setzero_si512(), 0, 0, 0, 0, NQ_KERNEL_POLL_NODES };
    /* the root: level 0 with the fixed queens' columns, filtered like any other level */
    uint32_t open0 = K.open_of[0] & ~pl->colfix;
    __m512i col = _mm512_set1_epi32((int)pl->colfix), zero = _mm512_setzero_si512();
    __m512i vo = v_viable(&K, 0, _mm512_set1_epi32((int)open0), col, zero, zero, K.wide);
    t.nodes64 = (unsigned)__builtin_popcount(open0);
    /*
     * Its queens spread over the lanes, one each, for a step of up to 16 of them: as a node
     * in one lane it took a step per queen at 1/16 occupancy, and a deep shard's search is
     * small (N=17, depth 4: 1.8 M of 46 M steps, for 0.3 M shards; 4-5 % of the time). Doing
     * the same for level 1 from its buffer cost more in scalar gathering than it saved.
     */
    lanes_t x;
    x.col = col;
    x.dl = x.dr = zero;
    for (int w = 0; w < PATH_WORDS; w++)
        x.path[w] = zero;
    uint32_t bits[LANES];
    for (uint32_t root = (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(vo)); root;) {
        int k = 0;
        for (; root && k < LANES; root &= root - 1)
            bits[k++] = root & -root;
        x.open = _mm512_maskz_loadu_epi32((__mmask16)((1u << k) - 1), bits);
        step_main(&K, 0, &x, &lv[1], &lv[1].cnt, &t, rare, K.wide);
    }
    /* a last row of weight-8 cells only: the main pass's solutions are its pairs (step_last) */
    int all8 = !rare && !(K.last_open & ~pl->leaf8);
    int rc = descend(&K, pl, lv, 0, &t, acc, ctl, rare, all8, K.wide, 1);
    tally_flush(&t);
    if (rc == 0)
        rc = count_poll(acc, &t.sols64, t.nodes64, NULL);
    *nodes_out = t.nodes64;
    return rc;
}

/*
 * The level buffers, ~43 kB a level (17 of them for the main pass, the rest the rare pass's
 * paths), are the thread's own and kept between shards: a deep shard's whole search can take
 * less time than a malloc of m levels (past glibc's mmap threshold that was an mmap, page
 * faults and an munmap per shard). All NQ_SHARD_MAX_N levels, 1.4 MB, sit in one 2 MB huge
 * page where the kernel gives one (MADV_HUGEPAGE; a hint, nothing depends on it): a small
 * shard touches the start of four arrays, the lanes and the counters on each of its levels,
 * ~70 pages of 4 kB, more than the first-level TLB holds (N=16, depth 4: 0.168 s against
 * 0.175 s with CAP 1024, medians of 9). Not zeroed: only the counters need a value, and
 * what is read past them (a refill's or a compaction's 16 entries) goes unused.
 * Freed by the key's destructor when the thread ends.
 */
static pthread_key_t levels_key;      /* only to free a thread's pool when the thread ends */
static pthread_once_t levels_once = PTHREAD_ONCE_INIT;
static _Thread_local simd_level_t *levels_mine;   /* a TLS load a shard, not a key lookup */

typedef struct { simd_level_t lv[NQ_SHARD_MAX_N]; } level_pool_t;

static void levels_key_make(void) { pthread_key_create(&levels_key, free); }

static simd_level_t *levels_get(void)
{
    if (levels_mine)
        return levels_mine;
    pthread_once(&levels_once, levels_key_make);
    size_t huge = (size_t)2 << 20, size = (sizeof(level_pool_t) + huge - 1) / huge * huge;
    level_pool_t *p = aligned_alloc(huge, size);
    if (!p || pthread_setspecific(levels_key, p) != 0) {
        free(p);
        return NULL;
    }
    madvise(p, size, MADV_HUGEPAGE);
    return levels_mine = p->lv;
}

int search_simd(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    if (pl->m < 4 || !count_simd_available())
        return NQ_SIMD_DECLINED;
    simd_level_t *lv = levels_get();
    if (!lv)
        return NQ_SIMD_DECLINED;
    uint32_t last_open = plan_open(pl, pl->m - 1);
    if (!pl->leafx || (last_open & pl->leaf8)) {
        int rc = simd_body(pl, lv, acc, ctl, nodes, 0);
        if (rc != 0 || !pl->leafx)
            return rc;
    }
    /*
     * The rare cells of the last row, one solution at a time. When the last row has
     * no weight-8 cell the cut changes nothing, so this pass alone gives the nodes.
     */
    nq_plan_t px = *pl;
    uint64_t rare_nodes;
    px.block[px.m - 1] |= ~pl->leafx;
    px.leaf8 = 0;
    px.node_base = pl->node_base + ((last_open & pl->leaf8) ? *nodes : 0);
    int rc = simd_body(&px, lv, acc, ctl, &rare_nodes, rare_words(px.m));
    if (!(last_open & pl->leaf8))
        *nodes = rare_nodes;
    return rc;
}

#else

int count_simd_available(void) { return 0; }

int search_simd(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    (void)pl; (void)acc; (void)ctl; (void)nodes;
    return NQ_SIMD_DECLINED;
}

#endif
