/* Shard descriptors: validation, encoding, the deterministic list, cost estimates. See shard.h. */
#include "shard.h"
#include "count_d4.h"
#include "errf.h"
#include "nq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR 6   /* version, kind, n, mode, weight, k */

struct nq_shards {
    int kind, n, depth;
    size_t len;        /* every descriptor of one list has the same length */
    size_t count, cap; /* in descriptors */
    uint8_t *buf;      /* count * len bytes */
};


/* ---- a board of fixed queens with O(1) conflict checks ---- */

typedef struct {
    int n;
    int8_t row_col[NQ_SHARD_MAX_N];
    uint32_t cols;
    uint64_t diag, anti;   /* r + c and r - c + n - 1: up to 63 lines */
} board_t;

static void board_init(board_t *p, int n)
{
    p->n = n;
    memset(p->row_col, -1, sizeof p->row_col);
    p->cols = 0;
    p->diag = p->anti = 0;
}

/* 0: placed (or the same queen was already there); -1: clashes with a queen. */
static int board_put(board_t *p, int r, int c)
{
    if (p->row_col[r] == c)
        return 0;
    uint64_t dg = 1ull << (r + c), an = 1ull << (r - c + p->n - 1);
    if (p->row_col[r] >= 0 || (p->cols >> c & 1u) || (p->diag & dg) || (p->anti & an))
        return -1;
    p->row_col[r] = (int8_t)c;
    p->cols |= 1u << c;
    p->diag |= dg;
    p->anti |= an;
    return 0;
}

static int board_free(const board_t *p, int r, int c)
{
    return !(p->cols >> c & 1u) && !(p->diag >> (r + c) & 1u) && !(p->anti >> (r - c + p->n - 1) & 1u);
}

/* ---- border configurations and their D4 orbits ---- */

typedef struct { int v[4]; } border_t;   /* a, b, c, d */

static void border_points(const border_t *t, int n, int pr[4], int pc[4])
{
    pr[0] = 0;        pc[0] = t->v[0];
    pr[1] = n - 1;    pc[1] = t->v[1];
    pr[2] = t->v[2];  pc[2] = 0;
    pr[3] = t->v[3];  pc[3] = n - 1;
}

/* The queens a shard fixes on the border: (0, a), (c, 0), (d, n-1); b is left free. */
static int border_place_acd(int n, int a, int c, int d, board_t *p)
{
    return board_put(p, 0, a) || board_put(p, c, 0) || board_put(p, d, n - 1) ? -1 : 0;
}

/* The image of a valid border configuration under g (a valid one too). */
static border_t border_image(const border_t *t, int n, int g)
{
    int pr[4], pc[4];
    border_t o = { { -1, -1, -1, -1 } };
    border_points(t, n, pr, pc);
    for (int i = 0; i < 4; i++) {
        int r, c;
        d4_map(g, n, pr[i], pc[i], &r, &c);
        if (r == 0) o.v[0] = c;
        if (r == n - 1) o.v[1] = c;
        if (c == 0) o.v[2] = r;
        if (c == n - 1) o.v[3] = r;
    }
    return o;
}

/* For a valid configuration: is it the least of its orbit, and which g fix it. */
static int border_canonical(const border_t *t, int n, unsigned *stab)
{
    int least = 1;
    *stab = 0;
    for (int g = 0; g < NQ_D4_SIZE; g++) {
        border_t o = border_image(t, n, g);
        int cmp = memcmp(o.v, t->v, sizeof o.v) == 0 ? 0 : 1;
        for (int i = 0; i < 4 && cmp; i++)
            if (o.v[i] != t->v[i]) {
                cmp = o.v[i] < t->v[i] ? -1 : 1;
                break;
            }
        if (cmp == 0)
            *stab |= 1u << g;
        else if (cmp < 0)
            least = 0;
    }
    return least;
}

/*
 * For fixed (a, c, d) on board p (holding just those queens): the weight and
 * stabilizer of (a, b, c, d) for every b that is possible and canonical.
 * Returns how many such b there are.
 */
static int border_weights(int n, int a, int c, int d, const board_t *p, nq_shard_desc_t *o)
{
    int found = 0;
    memset(o->bweight, 0, sizeof o->bweight);
    memset(o->bstab, 0, sizeof o->bstab);
    o->bmask8 = o->bmaskx = 0;
    for (int b = 0; b < n; b++) {
        board_t q = *p;
        border_t t = { { a, b, c, d } };
        unsigned stab;
        if (board_put(&q, n - 1, b) || !border_canonical(&t, n, &stab))
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

/* ---- decoding ---- */

static int decode_header(const uint8_t *b, size_t len, nq_shard_desc_t *o, char *err, size_t errlen)
{
    if (!b || len < HDR)
        return nq_errf(err, errlen, "shard descriptor truncated (%zu bytes)", len);
    if (len > NQ_MAX_SPEC)
        return nq_errf(err, errlen, "shard descriptor too long (%zu bytes)", len);
    o->version = b[0]; o->kind = b[1]; o->n = b[2]; o->mode = b[3]; o->weight = b[4]; o->k = b[5];
    if (o->version != NQ_SHARD_ENCODING)
        return nq_errf(err, errlen, "shard encoding %d not supported (want %d)", o->version, NQ_SHARD_ENCODING);
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
    size_t want = HDR + (size_t)o->k + (o->mode == NQ_SHARD_BORDER ? 2 : 0);
    if (len != want)
        return nq_errf(err, errlen, "shard descriptor length %zu, expected %zu", len, want);
    return 0;
}

static int decode_queens(const uint8_t *b, nq_shard_desc_t *o, board_t *p, char *err, size_t errlen)
{
    int n = o->n;
    board_init(p, n);
    for (int r = 0; r < o->k; r++) {
        o->top[r] = b[HDR + r];
        if (o->top[r] >= n)
            return nq_errf(err, errlen, "shard column %d out of range in row %d", o->top[r], r);
    }
    if (o->mode == NQ_SHARD_BORDER) {
        const uint8_t *t = b + HDR + o->k;
        o->c = t[0]; o->d = t[1];
        if (o->c >= n || o->d >= n)
            return nq_errf(err, errlen, "shard border position out of range");
        if (border_place_acd(n, o->top[0], o->c, o->d, p))
            return nq_errf(err, errlen, "shard border queens attack each other");
        if (border_weights(n, o->top[0], o->c, o->d, p, o) == 0)
            return nq_errf(err, errlen, "shard border configuration is not canonical for any b");
    }
    for (int r = 0; r < o->k; r++)
        if (board_put(p, r, o->top[r]))
            return nq_errf(err, errlen, "shard queen in row %d attacks another", r);
    return 0;
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
    out[0] = NQ_SHARD_ENCODING; out[1] = (uint8_t)d->kind; out[2] = (uint8_t)d->n;
    out[3] = (uint8_t)d->mode; out[4] = (uint8_t)d->weight; out[5] = (uint8_t)d->k;
    for (int r = 0; r < d->k; r++)
        out[len++] = d->top[r];
    if (d->mode == NQ_SHARD_BORDER) {
        out[len++] = (uint8_t)d->c; out[len++] = (uint8_t)d->d;
    }
    return len;
}

/* ---- the list ---- */

typedef struct {
    nq_shards_t *s;
    nq_shard_desc_t d;
    char *err;
    size_t errlen;
} lister_t;

/* A fixed placement with a free row that has no free cell has no completion: not listed. */
static int board_dead(const board_t *p, uint32_t last_row_allowed)
{
    for (int r = 0; r < p->n; r++) {
        if (p->row_col[r] >= 0)
            continue;
        int any = 0;
        for (int c = 0; c < p->n && !any; c++)
            any = board_free(p, r, c) && (r < p->n - 1 || (last_row_allowed >> c & 1u));
        if (!any)
            return 1;
    }
    return 0;
}

static int list_push(lister_t *L, const board_t *p)
{
    nq_shards_t *s = L->s;
    if (board_dead(p, L->d.bmask8 | L->d.bmaskx))
        return 0;
    if (s->count == s->cap) {
        if (s->cap >= NQ_SHARD_MAX_LIST)
            return nq_errf(L->err, L->errlen, "more than %u shards: use a smaller depth", NQ_SHARD_MAX_LIST);
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint8_t *nb = realloc(s->buf, cap * s->len);
        if (!nb)
            return nq_errf(L->err, L->errlen, "out of memory listing shards");
        s->buf = nb;
        s->cap = cap;
    }
    for (int r = 0; r < L->d.k; r++)
        L->d.top[r] = (uint8_t)p->row_col[r];
    shard_encode(&L->d, s->buf + s->count * s->len);
    s->count++;
    return 0;
}

/* Rows from..k-1 in lexicographic order (rows already fixed by the border are forced). */
static int list_rows(lister_t *L, const board_t *p, int r)
{
    if (r == L->d.k)
        return list_push(L, p);
    if (p->row_col[r] >= 0)
        return list_rows(L, p, r + 1);
    for (int c = 0; c < p->n; c++) {
        board_t q = *p;
        if (board_put(&q, r, c) == 0 && list_rows(L, &q, r + 1))
            return -1;
    }
    return 0;
}

static int list_border(lister_t *L)
{
    int n = L->s->n;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            for (int d = 0; d < n; d++) {
                board_t p;
                board_init(&p, n);
                if (border_place_acd(n, a, c, d, &p) || border_weights(n, a, c, d, &p, &L->d) == 0)
                    continue;
                L->d.c = c; L->d.d = d;
                if (list_rows(L, &p, 1))
                    return -1;
            }
    return 0;
}

nq_shards_t *shards_new(int kind, int n, int depth, char *err, size_t errlen)
{
    int lo, hi;
    if (shard_depth_range(kind, n, &lo, &hi)) {
        nq_errf(err, errlen, kind == NQ_KIND_ENUMERATE ? "enumerate needs 1 <= N <= %d (got %d)"
                                                    : "count needs 1 <= N <= %d (got %d)",
             kind == NQ_KIND_ENUMERATE ? NQ_ENUM_MAX_N : NQ_SHARD_MAX_N, n);
        return NULL;
    }
    if (depth == 0)
        depth = shard_auto_depth(kind, n);
    else if (depth < lo || depth > hi || (lo == 0 && hi == 0)) {
        if (hi == 0)
            nq_errf(err, errlen, "N=%d has a single shard: leave the depth at auto (0)", n);
        else
            nq_errf(err, errlen, "depth must be from %d to %d for N=%d (got %d)", lo > 0 ? lo : 1, hi, n, depth);
        return NULL;
    }
    nq_shards_t *s = calloc(1, sizeof *s);
    if (!s) {
        nq_errf(err, errlen, "out of memory");
        return NULL;
    }
    lister_t L = { .s = s, .err = err, .errlen = errlen };
    s->kind = kind; s->n = n; s->depth = depth;
    L.d.kind = kind; L.d.n = n; L.d.k = depth;
    L.d.mode = (kind == NQ_KIND_COUNT && n >= NQ_SHARD_BORDER_MIN_N) ? NQ_SHARD_BORDER : NQ_SHARD_PLAIN;
    L.d.weight = L.d.mode == NQ_SHARD_BORDER ? 0 : 1;
    L.d.bmaskx = n == 32 ? 0xffffffffu : (1u << n) - 1;   /* plain: no restriction on the last row */
    s->len = HDR + (size_t)depth + (L.d.mode == NQ_SHARD_BORDER ? 2 : 0);
    board_t p;
    board_init(&p, n);
    int rc = L.d.mode == NQ_SHARD_BORDER ? list_border(&L) : list_rows(&L, &p, 0);
    if (rc) {
        shards_destroy(&s);
        return NULL;
    }
    return s;
}

size_t shards_count(const nq_shards_t *s) { return s->count; }
int shards_depth(const nq_shards_t *s) { return s->depth; }

const uint8_t *shards_get(const nq_shards_t *s, size_t i, size_t *len)
{
    if (i >= s->count)
        return NULL;
    *len = s->len;
    return s->buf + i * s->len;
}

/*
 * A rough search-tree size: the product over free rows of the cells the fixed
 * queens leave open (row n-1: only canonical b). Only the order matters
 * (largest first); never 0. Measured rank correlation with the nodes a shard
 * really takes: 0.3 (n=15, depth 1), 0.6 (n=14, depth 2), 0.8 (n=13, depth 3).
 */
double shards_cost(const nq_shards_t *s, size_t i)
{
    nq_shard_desc_t d;
    size_t len;
    const uint8_t *b = shards_get(s, i, &len);
    if (!b || shard_decode(b, len, &d, NULL, 0))
        return 1e-300;
    board_t p;
    board_init(&p, d.n);
    for (int r = 0; r < d.n; r++)
        if (d.row_col[r] >= 0)
            board_put(&p, r, d.row_col[r]);
    uint32_t last_allowed = d.mode == NQ_SHARD_BORDER ? d.bmask8 | d.bmaskx : 0xffffffffu;
    double logc = 0;
    for (int r = 0; r < d.n; r++) {
        if (d.row_col[r] >= 0)
            continue;
        int open = 0;
        for (int c = 0; c < d.n; c++)
            open += board_free(&p, r, c) && (r < d.n - 1 || (last_allowed >> c & 1u));
        logc += log(open + 0.5);
    }
    return exp(logc) + 1e-300;
}

void shards_destroy(nq_shards_t **sp)
{
    if (!sp || !*sp)
        return;
    free((*sp)->buf);
    free(*sp);
    *sp = NULL;
}
