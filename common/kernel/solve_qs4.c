/*
 * `qs4`: QS4-style conflict minimisation (Sosic and Gu 1991), rebuilt for
 * speed and memory at N = 1e8..1e9.
 *
 * Greedy phase. Rows are filled in order; each row takes the next column from
 * a candidate stream that fits both of its diagonals. Candidates that do not
 * fit are parked and come back in the next pass. Pass 1 streams every column
 * once in the order of a keyed bijection of [0, N), written into the unused
 * tail of cols a chunk ahead of the hot loop (no pool array, no random reads);
 * later passes stream the parked columns, which sit in the unused tail
 * of cols itself. Because the stream is in random order, taking its first
 * fitting column is a uniform choice among the fitting ones (a forward scan
 * from a random start would favour columns after gaps and ruin the end game).
 * Diagonal occupancy is two bitmaps of 2N bits (N/2 bytes in all), so the
 * whole solver needs ~4.5 bytes per queen with cols. The inner loop has no
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

typedef struct {
    uint64_t n;
    uint32_t *cols;
    uint64_t *dg, *ad;               /* diagonal r-c+n-1 and anti-diagonal r+c: 2n bits each */
    size_t bm_bytes;
    uint64_t steps, max_steps;
    const nq_solve_opts_t *opts;
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
 * Writes perm(i) to slots [from, to): untouched slots of pass 1's stream. Done
 * a chunk at a time just ahead of greedy_run, so the chunk is still in cache
 * when the hot loop reads it.
 */
static void perm_fill(const qs4_perm_t *p, uint32_t *cols, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++)
        cols[i] = (uint32_t)perm_at(p, i);
}

/* Pass 1: the stream is perm(0..n-1). */
static int greedy_first_pass(qs4_t *q, const qs4_perm_t *p, uint64_t *r)
{
    uint64_t n = q->n, filled = 0;
    for (uint64_t j0 = 0; j0 < n; j0 += CHECK_EVERY) {
        uint64_t end = n - j0 > CHECK_EVERY ? j0 + CHECK_EVERY : n;
        /* greedy_run reads LOOKAHEAD slots past its end for the prefetches. */
        uint64_t want = n - end > LOOKAHEAD ? end + LOOKAHEAD : n;
        perm_fill(p, q->cols, filled, want);
        filled = want;
        *r = greedy_run(q, *r, j0, end);
        q->steps += end - j0;
        int rc = qs4_tick(q);
        if (rc)
            return rc;
    }
    return 0;
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
    qs4_perm_t perm;
    rng_init(&rng, seed, stream);
    perm_init(&perm, q->n, &rng);
    if (stream > 0)   /* a fresh mapping is zero already: clearing it would touch 0.5 GB at N=1e9 */
        memset(q->dg, 0, q->bm_bytes);
    uint64_t r = 0, placed = 1;
    int rc = greedy_first_pass(q, &perm, &r);
    while (!rc && r < q->n && placed)
        rc = greedy_pass(q, &r, &placed);
    uint64_t limit = 256 + 4 * q->n < 100000 ? 256 + 4 * q->n : 100000;
    for (uint64_t b = r; !rc && b < q->n; b++)
        rc = repair_row(q, &rng, b, limit);
    return rc;
}

static uint64_t bitmap_bytes(uint64_t n)
{
    return 2 * ((2 * n + 63) / 64) * sizeof(uint64_t);
}

static uint64_t qs4_memory(uint64_t n)
{
    return bitmap_bytes(n);
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
    int rc = NQ_SOLVE_FAILED;
    uint64_t attempt;
    for (attempt = 0; rc == NQ_SOLVE_FAILED && q.steps <= q.max_steps; attempt++)
        rc = qs4_attempt(&q, seed, attempt);
    munmap(bm, q.bm_bytes);
    stats->steps = q.steps;
    stats->restarts = attempt - 1;
    if (opts->progress)
        atomic_store_explicit(opts->progress, q.steps, memory_order_relaxed);
    return rc;
}

const nq_solver_t nq_solver_qs4 = {
    "qs4", "QS4-style greedy placement + swap repair, ~4.5 bytes/queen (default)",
    4, NQ_SOLVE_MAX_N, qs4_memory, qs4_run, NULL,
};
