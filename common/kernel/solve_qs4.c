/*
 * `qs4`: QS4-style conflict minimisation (Sosic and Gu 1991), rebuilt for
 * speed and memory at N = 1e8..1e9.
 *
 * Greedy phase. Rows are filled in order; each row takes the next column from
 * a candidate stream that fits both of its diagonals. Candidates that do not
 * fit are parked and come back in the next pass. Pass 1 streams every column
 * once in a keyed random order, written into the unused tail of cols a chunk
 * ahead of the hot loop (no pool array); later passes stream the parked
 * columns, which sit in the unused tail of cols itself. Because the stream is
 * in random order, taking its first fitting column is a uniform choice among
 * the fitting ones (a forward scan from a random start would favour columns
 * after gaps and ruin the end game). Above 2^24 queens the order is random
 * within tiles of columns, visited a slice at a time, so that the bitmaps are
 * read in cache-sized windows instead of at random (qs4_stream_t).
 * Diagonal occupancy is two bitmaps of 2N bits (N/2 bytes in all), so the
 * whole solver needs ~4.6 bytes per queen with cols. The inner loop has no
 * data-dependent branch and prefetches the bitmap lines of candidates 16 ahead.
 *
 * Repair phase. When a whole pass places nothing, the rows left (a few dozen
 * for large N) keep the leftover columns and are fixed one at a time: swap
 * with a random other row when that puts both queens on free diagonals (O(1)
 * bit tests). Small N may get stuck; then the whole run restarts with keys
 * drawn from the next stream of the seed, so (N, seed) stays deterministic.
 */
#include "solve.h"
#include "rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LOOKAHEAD 16                 /* candidates prefetched ahead (power of two) */
#define CHECK_EVERY (1u << 20)       /* steps between cancel checks / progress stores */

/* A keyed bijection of [0, n): xorshift-multiply rounds on k bits, cycle-walked into range. */
typedef struct {
    uint64_t n, mask, key[3], mul[3];
    unsigned shift;
} qs4_perm_t;

static void perm_init(qs4_perm_t *p, uint64_t n, nq_rng_t *rng)
{
    unsigned k = 2;
    while ((1ULL << k) < n)
        k++;
    p->n = n;
    p->mask = (1ULL << k) - 1;
    p->shift = (k + 1) / 2;
    for (int i = 0; i < 3; i++) {
        p->key[i] = rng_next(rng) & p->mask;
        p->mul[i] = rng_next(rng) | 1;   /* odd: invertible mod 2^k */
    }
}

static inline uint64_t perm_round(const qs4_perm_t *p, uint64_t x)
{
    for (int i = 0; i < 3; i++) {
        x = ((x ^ p->key[i]) * p->mul[i]) & p->mask;
        x ^= x >> p->shift;
    }
    return x;
}

static inline uint64_t perm_at(const qs4_perm_t *p, uint64_t i)
{
    uint64_t x = perm_round(p, i);
    while (x >= p->n)                /* < 2 rounds on average: the domain is < 2n */
        x = perm_round(p, x);
    return x;
}

/*
 * Pass 1's stream. Below LOCAL_ABOVE it is one keyed bijection of [0, n), as
 * it always was (so those boards are the ones earlier releases found).
 *
 * Above, a uniform order reads the diagonal bitmaps at random: at N = 1e9
 * they are 500 MB and nearly every candidate cost two DRAM misses (pass 1
 * 31 s, 31 ns a candidate). So the stream is tiled: the columns fall in
 * tiles of 2^TILE_BITS, and the stream visits one slice of 2^SLICE_BITS
 * candidates of one tile at a time, the slices of all tiles in keyed random
 * order. The rows advance little during a visit, so both diagonals a
 * candidate reads lie in two windows of about 2^TILE_BITS bits (512 KB) that
 * stay in cache. A visit takes only 1/16 of its tile on purpose: visits of a
 * whole tile crowded the window's diagonals and placed 38 % of the queens in
 * pass 1 instead of 56 %. Within a tile the order is a keyed bijection of
 * 2^TILE_BITS, rotated per tile; columns of the last tile that lie past n are
 * cycle-walked through the whole map, which keeps the stream a bijection.
 */
#define TILE_BITS 22
#define SLICE_BITS (TILE_BITS - 4)
#define LOCAL_ABOVE (1ULL << 24)
#define GROUP_MIN (1ULL << 16)           /* fewer parked columns: not worth grouping */

/* Tiles of 2^TILE_BITS columns that cover [0, n), the last one perhaps partly. */
static uint64_t tiles_of(uint64_t n)
{
    return (n + (1ULL << TILE_BITS) - 1) >> TILE_BITS;
}

typedef struct {
    uint64_t n;
    int tiled;
    qs4_perm_t whole;                /* !tiled: the stream is whole(0..n-1) */
    qs4_perm_t visits;               /* tiled: the order of the tiles * 16 slices */
    uint64_t tiles;
    uint32_t key[3], mul[3];         /* tiled: the order within a tile */
} qs4_stream_t;

static void stream_init(qs4_stream_t *s, uint64_t n, nq_rng_t *rng)
{
    s->n = n;
    perm_init(&s->whole, n, rng);
    s->tiled = n > LOCAL_ABOVE;
    if (!s->tiled)
        return;
    s->tiles = tiles_of(n);
    perm_init(&s->visits, s->tiles << (TILE_BITS - SLICE_BITS), rng);
    for (int i = 0; i < 3; i++) {
        s->key[i] = (uint32_t)rng_next(rng);
        s->mul[i] = (uint32_t)rng_next(rng) | 1;
    }
}

/* The keyed bijection of [0, 2^TILE_BITS): 32-bit, no walk, so the fill loop has no branch. */
static inline uint32_t tile_perm(const qs4_stream_t *s, uint32_t x)
{
    const uint32_t mask = (1u << TILE_BITS) - 1;
    for (int i = 0; i < 3; i++) {
        x = ((x & mask) ^ s->key[i]) * s->mul[i] & mask;
        x ^= x >> (TILE_BITS / 2);
    }
    return x;
}

/* Visit t: which tile, and where in the tile's order its slice starts (rotated per tile). */
static inline void visit_of(const qs4_stream_t *s, uint64_t t, uint64_t *tile, uint64_t *base)
{
    uint64_t v = perm_at(&s->visits, t);
    *tile = v % s->tiles;
    *base = ((v / s->tiles) << SLICE_BITS) + *tile * 0x9e3779b9u;
}

/* The tiled map of [0, tiles * 2^TILE_BITS), walked from c until it lands below n. */
static uint64_t tiled_walk(const qs4_stream_t *s, uint64_t c)
{
    while (c >= s->n) {
        uint64_t tile, base;
        visit_of(s, c >> SLICE_BITS, &tile, &base);
        c = tile << TILE_BITS | tile_perm(s, (uint32_t)(base + (c & ((1ULL << SLICE_BITS) - 1))));
    }
    return c;
}

typedef struct {
    uint64_t n;
    uint32_t *cols;
    uint64_t *dg, *ad;               /* diagonal r-c+n-1 and anti-diagonal r+c: 2n bits each */
    size_t bm_bytes;
    uint64_t steps, max_steps;
    const nq_solve_opts_t *opts;
    uint32_t *group_buf;             /* tiled: parked_group's buffer of group_len columns */
    uint64_t group_len, tiles;
    uint32_t *rank;                  /* tiled: a tile's place in this pass's order */
    uint64_t *at;                    /* tiled: tiles + 1 counters */
} qs4_t;

static inline uint64_t bit_get(const uint64_t *bm, uint64_t i) { return (bm[i >> 6] >> (i & 63)) & 1; }
static inline void bit_or(uint64_t *bm, uint64_t i, uint64_t v) { bm[i >> 6] |= v << (i & 63); }
static inline void bit_clear(uint64_t *bm, uint64_t i) { bm[i >> 6] &= ~(1ULL << (i & 63)); }

static inline int fits(const qs4_t *q, uint64_t r, uint64_t c)
{
    return !(bit_get(q->dg, r + q->n - 1 - c) | bit_get(q->ad, r + c));
}

static inline void place(qs4_t *q, uint64_t r, uint64_t c)
{
    bit_or(q->dg, r + q->n - 1 - c, 1);
    bit_or(q->ad, r + c, 1);
}

/* Between chunks of work: progress, cancel, step limit. 0 = go on. */
static int qs4_tick(qs4_t *q)
{
    if (q->opts->progress)
        atomic_store_explicit(q->opts->progress, q->steps, memory_order_relaxed);
    if (q->opts->cancel && atomic_load_explicit(q->opts->cancel, memory_order_relaxed))
        return NQ_SOLVE_CANCELLED;
    return q->steps > q->max_steps ? NQ_SOLVE_FAILED : 0;
}

/*
 * The hot loop of both kinds of pass. Slot j (j in [from, to)) holds candidate
 * j: perm(j) in pass 1 (perm_fill put it there), a parked column in later
 * passes. Slots [r, j) hold the columns parked so far. On a fit the candidate
 * moves to slot r and the parked column there moves up to slot j; otherwise it
 * stays at j. No branch on the outcome: it is a coin flip the predictor cannot
 * learn. Everything lives in locals so r stays in a register: the loop's
 * critical path is r -> bitmap load -> fit -> r. The loop is kept this small on
 * purpose: computing perm() in it (~30 instructions) filled the reorder window
 * and cost pass 1 ~40 % at N=1e8, because fewer prefetches were in flight.
 */
static inline uint64_t greedy_run(qs4_t *q, uint64_t r, uint64_t from, uint64_t to)
{
    const uint64_t n = q->n, off = n - 1;
    uint64_t *const dg = q->dg, *const ad = q->ad;
    uint32_t *const cols = q->cols;
    for (uint64_t j = from; j < to; j++) {
        uint64_t c = cols[j];
        if (j + LOOKAHEAD < n) {
            uint64_t ahead = cols[j + LOOKAHEAD];
            __builtin_prefetch(&dg[(r + off - ahead) >> 6], 1);
            __builtin_prefetch(&ad[(r + ahead) >> 6], 1);
        }
        uint64_t d = r + off - c, a = r + c;
        uint64_t ok = (((dg[d >> 6] >> (d & 63)) | (ad[a >> 6] >> (a & 63))) & 1) ^ 1;
        uint32_t parked = cols[r];
        cols[j] = ok ? parked : (uint32_t)c;
        cols[r] = ok ? (uint32_t)c : parked;
        dg[d >> 6] |= ok << (d & 63);
        ad[a >> 6] |= ok << (a & 63);
        r += ok;
    }
    return r;
}

/*
 * Writes stream(i) to slots [from, to): untouched slots of pass 1's stream.
 * Done a chunk at a time just ahead of greedy_run, so the chunk is still in
 * cache when the hot loop reads it.
 */
static void stream_fill(const qs4_stream_t *s, uint32_t *cols, uint64_t from, uint64_t to)
{
    if (!s->tiled) {
        for (uint64_t i = from; i < to; i++)
            cols[i] = (uint32_t)perm_at(&s->whole, i);
        return;
    }
    const uint64_t slice = 1ULL << SLICE_BITS;
    for (uint64_t i = from; i < to;) {
        uint64_t tile, base;
        visit_of(s, i >> SLICE_BITS, &tile, &base);
        uint64_t stop = (i | (slice - 1)) + 1 < to ? (i | (slice - 1)) + 1 : to;
        uint64_t hi = tile << TILE_BITS;
        for (; i < stop; i++) {
            uint64_t c = hi | tile_perm(s, (uint32_t)(base + (i & (slice - 1))));
            cols[i] = (uint32_t)(c < s->n ? c : tiled_walk(s, c));
        }
    }
}

/* Pass 1: the stream is stream(0..n-1). */
static int greedy_first_pass(qs4_t *q, const qs4_stream_t *p, uint64_t *r)
{
    uint64_t n = q->n, filled = 0;
    for (uint64_t j0 = 0; j0 < n; j0 += CHECK_EVERY) {
        uint64_t end = n - j0 > CHECK_EVERY ? j0 + CHECK_EVERY : n;
        /* greedy_run reads LOOKAHEAD slots past its end for the prefetches. */
        uint64_t want = n - end > LOOKAHEAD ? end + LOOKAHEAD : n;
        stream_fill(p, q->cols, filled, want);
        filled = want;
        *r = greedy_run(q, *r, j0, end);
        q->steps += end - j0;
        int rc = qs4_tick(q);
        if (rc)
            return rc;
    }
    return 0;
}

/*
 * Before a later pass of a tiled run: the parked columns in slots [lo, n) are
 * grouped by tile, one chunk of group_len at a time (a stable counting sort
 * through the buffer), the tiles in a random order per pass. The pass then
 * reads them tile by tile, as pass 1 read its slices. Without this the parked
 * queue's rotation (greedy_run) mixes the tiles, and each pass reads the
 * bitmaps more at random than the one before. At N = 1e9 the grouping costs
 * ~4 ns a column and saves more: pass 2's candidates went from 9.9 to 7 ns,
 * pass 4's from 13 to 6, and the verification that follows the solve from
 * 11 s to 6 s (the solution's rows lie closer to their diagonals' neighbours).
 */
static void parked_group(qs4_t *q, uint64_t lo, nq_rng_t *rng)
{
    uint64_t tiles = q->tiles;
    uint32_t *rank = q->rank;
    uint64_t *at = q->at;
    rng_permutation(rng, rank, tiles);
    uint32_t *cols = q->cols;
    for (uint64_t c0 = lo; c0 < q->n; c0 += q->group_len) {
        uint64_t len = q->n - c0 < q->group_len ? q->n - c0 : q->group_len;
        memset(at, 0, (tiles + 1) * sizeof *at);
        for (uint64_t i = 0; i < len; i++)
            at[rank[cols[c0 + i] >> TILE_BITS] + 1]++;
        for (uint64_t t = 1; t <= tiles; t++)
            at[t] += at[t - 1];
        for (uint64_t i = 0; i < len; i++)
            q->group_buf[at[rank[cols[c0 + i] >> TILE_BITS]]++] = cols[c0 + i];
        memcpy(cols + c0, q->group_buf, len * sizeof *cols);
    }
}

/* Later passes: the stream is the parked columns in slots [*r, n). Sets *placed. */
static int greedy_pass(qs4_t *q, uint64_t *r, uint64_t *placed)
{
    uint64_t n = q->n, lo = *r;
    for (uint64_t j0 = lo; j0 < n; j0 += CHECK_EVERY) {
        uint64_t end = n - j0 > CHECK_EVERY ? j0 + CHECK_EVERY : n;
        *r = greedy_run(q, *r, j0, end);
        q->steps += end - j0;
        int rc = qs4_tick(q);
        if (rc)
            return rc;
    }
    *placed = *r - lo;
    return 0;
}

/*
 * Fixes bad row b (rows >= b hold columns on no bitmap) by one swap with a
 * random row j: j > b is another leftover (only b's new queen must fit);
 * j < b is placed (both moved queens must fit, and not attack each other).
 * Returns 0 when fixed, NQ_SOLVE_FAILED after `limit` tries.
 */
static int repair_row(qs4_t *q, nq_rng_t *rng, uint64_t b, uint64_t limit)
{
    uint64_t n = q->n;
    for (uint64_t t = 0; t < limit; t++) {
        q->steps++;
        uint64_t j = rng_below(rng, n - 1);
        j += (j >= b);
        uint64_t cb = q->cols[b], cj = q->cols[j];
        if (!fits(q, b, cj))
            continue;
        if (j < b) {
            if (!fits(q, j, cb) || b + cb == j + cj || b + cj == j + cb)
                continue;   /* the two moved queens would share a diagonal */
            bit_clear(q->dg, j + n - 1 - cj);
            bit_clear(q->ad, j + cj);
            place(q, j, cb);
        }
        q->cols[b] = (uint32_t)cj;
        q->cols[j] = (uint32_t)cb;
        place(q, b, cj);
        return 0;
    }
    return NQ_SOLVE_FAILED;
}

/* One attempt with the keys of `stream`: greedy passes, then repair of what is left. */
static int qs4_attempt(qs4_t *q, uint64_t seed, uint64_t stream)
{
    nq_rng_t rng;
    qs4_stream_t order;
    rng_init(&rng, seed, stream);
    stream_init(&order, q->n, &rng);
    if (stream > 0)   /* a fresh mapping is zero already: clearing it would touch 0.5 GB at N=1e9 */
        memset(q->dg, 0, q->bm_bytes);
    uint64_t r = 0, placed = 1;
    int rc = greedy_first_pass(q, &order, &r);
    while (!rc && r < q->n && placed) {
        if (q->group_buf && q->n - r >= GROUP_MIN)
            parked_group(q, r, &rng);
        rc = greedy_pass(q, &r, &placed);
    }
    uint64_t limit = 256 + 4 * q->n < 100000 ? 256 + 4 * q->n : 100000;
    for (uint64_t b = r; !rc && b < q->n; b++)
        rc = repair_row(q, &rng, b, limit);
    return rc;
}

static uint64_t bitmap_bytes(uint64_t n)
{
    return 2 * ((2 * n + 63) / 64) * sizeof(uint64_t);
}

/* parked_group's buffer: 1/32 of cols, so 0.125 bytes a queen. */
static uint64_t group_len(uint64_t n)
{
    return n > LOCAL_ABOVE ? n / 32 : 0;
}

static uint64_t qs4_memory(uint64_t n)
{
    return bitmap_bytes(n) + group_len(n) * sizeof(uint32_t);
}

static void qs4_free(qs4_t *q, void *bm)
{
    munmap(bm, q->bm_bytes);
    free(q->group_buf);
    free(q->rank);
    free(q->at);
}

static int qs4_run(uint64_t n, uint64_t seed, const nq_solve_opts_t *opts, uint32_t *cols,
                   nq_solve_stats_t *stats, char *err, size_t errlen)
{
    qs4_t q = { .n = n, .cols = cols, .opts = opts, .bm_bytes = bitmap_bytes(n) };
    q.max_steps = opts->max_steps ? opts->max_steps : 64 * n + 1000000;
    /* mmap, not calloc: the bitmaps are read at random, so ask for huge pages (TLB misses). */
    void *bm = mmap(NULL, q.bm_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (bm == MAP_FAILED) {
        snprintf(err, errlen, "out of memory for the diagonal bitmaps (%zu bytes)", q.bm_bytes);
        return NQ_SOLVE_ERROR;
    }
#ifdef MADV_HUGEPAGE
    madvise(bm, q.bm_bytes, MADV_HUGEPAGE);
#endif
    q.dg = bm;
    q.ad = q.dg + q.bm_bytes / 2 / sizeof(uint64_t);
    q.group_len = group_len(n);
    q.tiles = tiles_of(n);
    if (q.group_len) {
        q.group_buf = malloc(q.group_len * sizeof *q.group_buf);
        q.rank = malloc(q.tiles * sizeof *q.rank);
        q.at = malloc((q.tiles + 1) * sizeof *q.at);
        if (!q.group_buf || !q.rank || !q.at) {
            qs4_free(&q, bm);
            snprintf(err, errlen, "out of memory for the grouping buffer (%llu bytes)",
                     (unsigned long long)(q.group_len * sizeof *q.group_buf));
            return NQ_SOLVE_ERROR;
        }
    }
    int rc = NQ_SOLVE_FAILED;
    uint64_t attempt;
    for (attempt = 0; rc == NQ_SOLVE_FAILED && q.steps <= q.max_steps; attempt++)
        rc = qs4_attempt(&q, seed, attempt);
    qs4_free(&q, bm);
    stats->steps = q.steps;
    stats->restarts = attempt - 1;
    if (opts->progress)
        atomic_store_explicit(opts->progress, q.steps, memory_order_relaxed);
    return rc;
}

const nq_solver_t nq_solver_qs4 = {
    "qs4", "QS4-style greedy placement + swap repair, ~4.6 bytes/queen (default)",
    4, NQ_SOLVE_MAX_N, qs4_memory, qs4_run, NULL,
};
