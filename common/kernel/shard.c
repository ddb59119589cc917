/* Shard descriptors: validation, encoding, the deterministic list, cost estimates. See shard.h. */
#include "shard.h"
#include "shard_board.h"
#include "shard_list_impl.h"
#include "count_d4.h"
#include "count_search.h"
#include "errf.h"
#include "nq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR 6   /* version, kind, n, mode, weight, k */


/* ---- border configurations and their D4 orbits ---- */

typedef struct { int v[4]; } border_t;   /* a, b, c, d */

/* The queens a shard fixes on the border: (0, a), (c, 0), (d, n-1); b is left free. */
static int border_place_acd(int n, int a, int c, int d, board_t *p)
{
    return board_put(p, 0, a) || board_put(p, c, 0) || board_put(p, d, n - 1) ? -1 : 0;
}

/* Writes where the image of border queen (r, c) under g sits into o (a corner fills two). */
static void border_map_point(border_t *o, int n, int g, int r, int c)
{
    int r2, c2;
    d4_map(g, n, r, c, &r2, &c2);
    if (r2 == 0) o->v[0] = c2;
    if (r2 == n - 1) o->v[1] = c2;
    if (c2 == 0) o->v[2] = r2;
    if (c2 == n - 1) o->v[3] = r2;
}

static int border_cmp(const border_t *x, const border_t *y)
{
    for (int i = 0; i < 4; i++)
        if (x->v[i] != y->v[i])
            return x->v[i] < y->v[i] ? -1 : 1;
    return 0;
}

/*
 * For fixed (a, c, d) on board p (holding just those queens): the weight and
 * stabilizer of (a, b, c, d) for every b that is possible and canonical
 * (the least tuple of its D4 orbit). Returns how many such b there are. The
 * images of the three fixed queens are mapped once, then only b's per b.
 */
static int border_weights_compute(int n, int a, int c, int d, const board_t *p, nq_shard_desc_t *o)
{
    border_t part[NQ_D4_SIZE];
    int found = 0;
    memset(o->bweight, 0, sizeof o->bweight);
    memset(o->bstab, 0, sizeof o->bstab);
    o->bmask8 = o->bmaskx = 0;
    for (int g = 0; g < NQ_D4_SIZE; g++) {
        part[g] = (border_t){ { -1, -1, -1, -1 } };
        border_map_point(&part[g], n, g, 0, a);
        border_map_point(&part[g], n, g, c, 0);
        border_map_point(&part[g], n, g, d, n - 1);
    }
    uint32_t open = p->row_col[n - 1] >= 0 ? 1u << p->row_col[n - 1] : board_open(p, n - 1);
    for (; open; open &= open - 1) {
        int b = __builtin_ctz(open);
        border_t t = { { a, b, c, d } };
        unsigned stab = 0;
        int least = 1;
        for (int g = 0; g < NQ_D4_SIZE && least; g++) {
            border_t img = part[g];
            border_map_point(&img, n, g, n - 1, b);
            int cmp = border_cmp(&img, &t);
            least = cmp >= 0;
            stab |= (unsigned)(cmp == 0) << g;
        }
        if (!least)
            continue;
        o->bweight[b] = (uint8_t)(NQ_D4_SIZE / __builtin_popcount(stab));
        o->bstab[b] = (uint8_t)stab;
        if (o->bweight[b] == NQ_D4_SIZE)
            o->bmask8 |= 1u << b;
        else
            o->bmaskx |= 1u << b;
        found++;
    }
    return found;
}

/*
 * border_weights_compute runs for every shard a worker decodes and every descriptor a list
 * makes: ~3,600 instructions, more than the whole search of a deep shard at N = 18. Its answer
 * depends only on (n, a, c, d) (p holds just those queens at both callers), and a job has a
 * few hundred such roots, so each thread keeps the answers of the last CACHE_ROOTS roots it saw,
 * direct-mapped: shards of one root, in a row or interleaved by cost, decode from the cache.
 */
#define CACHE_ROOTS 256

typedef struct {
    uint32_t key;                        /* 1 + packed (n, a, c, d); 0 = empty */
    int found;
    uint32_t bmask8, bmaskx;
    uint8_t bweight[NQ_SHARD_MAX_N], bstab[NQ_SHARD_MAX_N];
} border_cached_t;

static _Thread_local border_cached_t border_cache[CACHE_ROOTS];

static int border_weights(int n, int a, int c, int d, const board_t *p, nq_shard_desc_t *o)
{
    uint32_t key = 1 + ((uint32_t)n << 15 | (uint32_t)a << 10 | (uint32_t)c << 5 | (uint32_t)d);
    border_cached_t *e = &border_cache[(key * 0x9e3779b1u) >> 24];
    if (e->key != key) {
        e->found = border_weights_compute(n, a, c, d, p, o);
        e->bmask8 = o->bmask8;
        e->bmaskx = o->bmaskx;
        memcpy(e->bweight, o->bweight, sizeof e->bweight);
        memcpy(e->bstab, o->bstab, sizeof e->bstab);
        e->key = key;
        return e->found;
    }
    o->bmask8 = e->bmask8;
    o->bmaskx = e->bmaskx;
    memcpy(o->bweight, e->bweight, sizeof o->bweight);
    memcpy(o->bstab, e->bstab, sizeof o->bstab);
    return e->found;
}

/* ---- depths ---- */

int shard_depth_range(int kind, int n, int *min, int *max)
{
    if (kind == NQ_KIND_COUNT && n >= NQ_SHARD_BORDER_MIN_N && n <= NQ_SHARD_MAX_N) {
        *min = 1; *max = n - 2;
    } else if (kind == NQ_KIND_COUNT && n >= 1 && n < NQ_SHARD_BORDER_MIN_N) {
        *min = 0; *max = 0;
    } else if (kind == NQ_KIND_ENUMERATE && n >= 1 && n <= NQ_ENUM_MAX_N) {
        *min = 0; *max = n;
    } else {
        return -1;
    }
    return 0;
}

/*
 * count: depth 1 (border only) gives about n^3/8 shards (905 at n=20) and each
 * further row multiplies that by roughly n/2 to n-5 (n=20: 12k at depth 2,
 * 130k at depth 3). Measured totals grow about 7x per n (n=18: 4.3 s on one
 * core with the AVX-512 kernel, 49 s with the scalar one), so these depths
 * keep a shard near 0.01 .. 1 min (AVX-512) or 0.1 s .. 10 min (scalar) from
 * n=20 to 28, far above the per-shard cost of the broker (~12 us), and the
 * list below ~30M. Past 28 nothing is feasible anyway: keep the list small.
 */
int shard_auto_depth(int kind, int n)
{
    if (kind == NQ_KIND_ENUMERATE)
        return n < NQ_SHARD_BORDER_MIN_N ? 0 : n < 8 ? 1 : n < 13 ? 2 : 3;  /* tiny boards: one whole-board shard, so a board without solutions still has a job */
    if (n < NQ_SHARD_BORDER_MIN_N)
        return 0;
    if (n <= 19)
        return 1;
    if (n <= 23)
        return 2;
    if (n <= 26)
        return 3;
    if (n <= 28)
        return 4;
    return 3;
}

/* ---- the rows a shard fixes ---- */

int shard_flip(int n, int c, int d)
{
    /* measured at depth 1: 21-26% fewer nodes from the bottom when the side queens sit in the
       top half (n = 15, 16). Then row n-1 holds no side queen, so b is the first level. */
    return c + d < n - 1;
}

int shard_level_rows(int mode, int n, int k, int c, int d, int flip, uint8_t *rows)
{
    int L = 0;
    if (mode == NQ_SHARD_PLAIN) {
        for (int r = 0; r < k; r++)
            rows[L++] = (uint8_t)r;
    } else {
        for (int i = 1; i < n && L < k - 1; i++) {
            int r = flip ? n - i : i;        /* the kernel's order: free rows from its first */
            if (r != c && r != d)
                rows[L++] = (uint8_t)r;
        }
    }
    return L;
}

int shard_border_root(int n, int a, int c, int d, board_t *p, nq_shard_desc_t *o)
{
    board_init(p, n);
    if (border_place_acd(n, a, c, d, p))
        return 0;
    return border_weights(n, a, c, d, p, o);
}

/*
 * A count's work on one AVX-512 core: the nodes shard encoding 5 searches for n (shard_count_nodes:
 * within 25 % of a count's from n = 15 on, further below: 2.7x at n = 12), over this kernel's rate
 * (2.47e9 nodes/s, N=20 on one thread; 2.31e9 from NQ_COVER_WIDE_N, where the wider column test
 * searches 0.87 of the nodes in 0.93 of the time at N=28). The nodes are the
 * planning table of docs/campaign.md: counted for n = 18..21, estimated by `nq estimate` for n = 22..28.
 * Outside that range the nearest step is carried on. The growth per n is not constant (7.8x from 19 to 20,
 * 10-11x from 25 on): a single factor fitted at n = 16..19 (7.1x) put N=28 at 47 core-years
 * against ~400, and --shard-seconds 600 then chose shards of 3.6 hours. A scalar core is about
 * 18x slower; the model is for planning, never for an answer.
 */
double shard_count_nodes(int n)
{
    static const double log10_nodes[] = {   /* n = 18 .. 28 */
        9.844, 10.707, 11.611, 12.533, 13.452, 14.420, 15.356, 16.388, 17.377, 18.432, 19.448
    };
    const int first = 18, top = (int)(sizeof log10_nodes / sizeof log10_nodes[0]) - 1;
    int i = n - first;
    double x;
    if (i < 0)
        x = log10_nodes[0] + i * (log10_nodes[1] - log10_nodes[0]);
    else if (i > top)
        x = log10_nodes[top] + (i - top) * (log10_nodes[top] - log10_nodes[top - 1]);
    else
        x = log10_nodes[i];
    return pow(10.0, x);
}

double shard_count_core_seconds(int n)
{
    return shard_count_nodes(n) / (n >= NQ_COVER_WIDE_N ? 2.31e9 : 2.47e9);
}

int shard_seconds_check(int kind, int n, char *err, size_t errlen)
{
    int lo, hi;
    if (kind != NQ_KIND_COUNT || shard_depth_range(kind, n, &lo, &hi) || hi < 1)
        return nq_errf(err, errlen, "--shard-seconds applies to count jobs of N >= %d",
                       NQ_SHARD_BORDER_MIN_N);
    return 0;
}

/*
 * Each depth's list is a trial, shallowest first, and the last that passes is the answer, so it
 * is built once. A depth whose mean is under `seconds` has more than total / seconds shards: its
 * trial stops there (NQ_SHARDS_TOO_MANY), not at the end of a list of hundreds of millions (the
 * shallowest is built whole: it is the answer either way). A trial refused for its steps ends the
 * search too: a deeper list would cost more still.
 */
nq_shards_t *shards_new_for_seconds(int kind, int n, double seconds, nq_shards_limits_t *lim, char *err,
                                    size_t errlen)
{
    int lo = 0, hi = -1;
    lim->why = NQ_SHARDS_REFUSED;
    if (shard_seconds_check(kind, n, err, errlen) != 0 || shard_depth_range(kind, n, &lo, &hi) != 0)
        return NULL;                    /* the check said why; the range cannot fail after it */
    double most = seconds > 0 ? shard_count_core_seconds(n) / seconds : (double)NQ_SHARD_MAX_LIST;
    nq_shards_limits_t trial = *lim;
    nq_shards_t *best = NULL;
    for (int d = lo; d <= hi; d++) {
        trial.max_shards = !best || most >= (double)NQ_SHARD_MAX_LIST ? NQ_SHARD_MAX_LIST : (uint64_t)most;
        nq_shards_t *l = list_new_unordered(kind, n, d, NQ_SHARD_ENCODING, &trial, err, errlen);
        if (!l && best && (trial.why == NQ_SHARDS_TOO_MANY || trial.why == NQ_SHARDS_TOO_SLOW))
            break;                      /* deeper only makes shards shorter, and lists longer */
        shards_destroy(&best);
        if (!l) {
            lim->why = trial.why;
            return NULL;
        }
        best = l;
        if ((double)shards_count(l) > most)
            break;                      /* the shallowest already has shorter shards */
    }
    if (best && list_order_set(best, lim, err, errlen) != 0)   /* the answer's order only */
        shards_destroy(&best);
    return best;
}

int shard_depth_for_seconds(int kind, int n, double seconds, char *err, size_t errlen)
{
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .unordered = 1 };
    nq_shards_t *l = shards_new_for_seconds(kind, n, seconds, &lim, err, errlen);
    int d = l ? shards_depth(l) : -1;
    shards_destroy(&l);
    return d;
}

int shard_probe(const uint8_t *spec, size_t len, int extra, uint64_t (*pick)(void *ud, uint64_t bound),
                void *ud, uint8_t *out, double *weight)
{
    nq_shard_desc_t d;
    board_t p;
    uint8_t rows[NQ_SHARD_MAX_N];
    *weight = 1;
    if (shard_decode(spec, len, &d, NULL, 0) || d.mode != NQ_SHARD_BORDER ||
        d.k + extra > d.n - 2 || extra < 0)
        return -1;
    board_init(&p, d.n);
    for (int r = 0; r < d.n; r++)
        if (d.row_col[r] >= 0)
            board_put(&p, r, d.row_col[r]);
    int L = shard_level_rows(d.mode, d.n, d.k + extra, d.c, d.d, d.flip, rows);
    uint32_t b_allowed = d.bmask8 | d.bmaskx;
    for (int lv = d.k - 1; lv < L; lv++) {
        int r = rows[lv];
        uint32_t cand = board_row_open(&p, r, b_allowed);
        int choices = __builtin_popcount(cand);
        if (!choices)
            return 0;                 /* a dead prefix: its subtree is empty */
        for (uint64_t k = pick(ud, (uint64_t)choices); k > 0; k--)
            cand &= cand - 1;
        int c = __builtin_ctz(cand);
        *weight *= choices;
        board_put(&p, r, c);
        d.top[lv + 1] = (uint8_t)c;
    }
    d.k += extra;
    return (int)shard_encode(&d, out);
}

/* ---- decoding ---- */

static int decode_header(const uint8_t *b, size_t len, nq_shard_desc_t *o, char *err, size_t errlen)
{
    if (!b || len < HDR)
        return nq_errf(err, errlen, "shard descriptor truncated (%zu bytes)", len);
    if (len > NQ_MAX_SPEC)
        return nq_errf(err, errlen, "shard descriptor too long (%zu bytes)", len);
    o->version = b[0]; o->kind = b[1]; o->n = b[2]; o->mode = b[3]; o->weight = b[4]; o->k = b[5];
    if (o->version != NQ_SHARD_ENCODING)
        return nq_errf(err, errlen, "shard encoding %d not supported (this build reads %d only)", o->version,
                       NQ_SHARD_ENCODING);
    if (o->kind != NQ_KIND_COUNT && o->kind != NQ_KIND_ENUMERATE)
        return nq_errf(err, errlen, "shard kind %d is not count or enumerate", o->kind);
    int lo, hi;
    if (shard_depth_range(o->kind, o->n, &lo, &hi))
        return nq_errf(err, errlen, "shard n %d out of range (count 1..%d, enumerate 1..%d)",
                    o->n, NQ_SHARD_MAX_N, NQ_ENUM_MAX_N);
    int want_mode = (o->kind == NQ_KIND_COUNT && o->n >= NQ_SHARD_BORDER_MIN_N) ? NQ_SHARD_BORDER : NQ_SHARD_PLAIN;
    if (o->mode != want_mode)
        return nq_errf(err, errlen, "shard mode %d invalid for this kind and n", o->mode);
    if (o->k < lo || o->k > hi)
        return nq_errf(err, errlen, "shard depth %d out of range %d..%d", o->k, lo, hi);
    size_t want = HDR + (size_t)o->k + (o->mode == NQ_SHARD_BORDER ? NQ_SHARD_BORDER_BYTES : 0);
    if (len != want)
        return nq_errf(err, errlen, "shard descriptor length %zu, expected %zu", len, want);
    return 0;
}

/* The queens of the levels: top[0] is row 0's in border mode (a), the rest follow the level rows. */
static int decode_levels(nq_shard_desc_t *o, board_t *p, char *err, size_t errlen)
{
    uint8_t rows[NQ_SHARD_MAX_N];
    int border = o->mode == NQ_SHARD_BORDER, n = o->n;
    int L = shard_level_rows(o->mode, n, o->k, o->c, o->d, o->flip, rows);
    for (int i = 0; i < L; i++) {
        int r = rows[i], col = o->top[i + border];
        if (board_put(p, r, col))
            return nq_errf(err, errlen, "shard queen in row %d attacks another", r);
        if (border && r == n - 1 && o->bweight[col] == 0)
            return nq_errf(err, errlen, "shard border configuration is not canonical for b=%d", col);
    }
    return 0;
}

static int decode_queens(const uint8_t *b, nq_shard_desc_t *o, board_t *p, char *err, size_t errlen)
{
    int n = o->n;
    board_init(p, n);
    for (int r = 0; r < o->k; r++) {
        o->top[r] = b[HDR + r];
        if (o->top[r] >= n)
            return nq_errf(err, errlen, "shard column %d out of range in level %d", o->top[r], r);
    }
    if (o->mode == NQ_SHARD_BORDER) {
        const uint8_t *t = b + HDR + o->k;
        o->c = t[0]; o->d = t[1];
        if (o->c >= n || o->d >= n)
            return nq_errf(err, errlen, "shard border position out of range");
        o->flip = t[2];
        if (o->flip > 1)
            return nq_errf(err, errlen, "shard direction byte %d is not 0 or 1", o->flip);
        if (border_place_acd(n, o->top[0], o->c, o->d, p))
            return nq_errf(err, errlen, "shard border queens attack each other");
        if (border_weights(n, o->top[0], o->c, o->d, p, o) == 0)
            return nq_errf(err, errlen, "shard border configuration is not canonical for any b");
    }
    return decode_levels(o, p, err, errlen);
}

int shard_decode(const uint8_t *b, size_t len, nq_shard_desc_t *o, char *err, size_t errlen)
{
    board_t p;
    memset(o, 0, sizeof *o);
    if (decode_header(b, len, o, err, errlen) || decode_queens(b, o, &p, err, errlen))
        return -1;
    int weight = o->mode == NQ_SHARD_BORDER ? 0 : 1;
    if (o->weight != weight)
        return nq_errf(err, errlen, "shard weight byte %d, expected %d", o->weight, weight);
    if (o->mode == NQ_SHARD_PLAIN) {
        /* every completion counts once; unique: least of all 8 images (enumerate: no check) */
        uint8_t stab = o->kind == NQ_KIND_COUNT ? 0xff : 0x01;
        for (int c = 0; c < o->n; c++) {
            o->bweight[c] = 1;
            o->bstab[c] = stab;
        }
        o->bmaskx = o->n == 32 ? 0xffffffffu : (1u << o->n) - 1;
    }
    memcpy(o->row_col, p.row_col, sizeof o->row_col);
    return 0;
}

size_t shard_encode(const nq_shard_desc_t *d, uint8_t *out)
{
    size_t len = HDR;
    out[0] = (uint8_t)d->version; out[1] = (uint8_t)d->kind; out[2] = (uint8_t)d->n;
    out[3] = (uint8_t)d->mode; out[4] = (uint8_t)d->weight; out[5] = (uint8_t)d->k;
    for (int r = 0; r < d->k; r++)
        out[len++] = d->top[r];
    if (d->mode == NQ_SHARD_BORDER) {
        out[len++] = (uint8_t)d->c; out[len++] = (uint8_t)d->d;
        out[len++] = (uint8_t)d->flip;
    }
    return len;
}
