/*
 * The deterministic list of a job's shards, indexable without materializing
 * it (see shard.h): roots (a, c, d), then blocks (the prefixes of all but the
 * last two levels) with the number of shards before each.
 */
#include "shard_list_impl.h"
#include "errf.h"
#include "nq.h"

#include <stdlib.h>
#include <string.h>

#define HDR 6

/* ---- walking the levels ---- */

/* A free row with no open cell: no completion (such prefixes are not listed). */
int list_board_dead(const board_t *p, uint32_t b_allowed)
{
    for (int r = 0; r < p->n; r++)
        if (p->row_col[r] < 0 && !board_row_open(p, r, b_allowed))
            return 1;
    return 0;
}

/* The columns a level may take: its open cells, or the side queen already in its row. */
uint32_t list_level_cand(const board_t *p, int r, uint32_t b_allowed)
{
    return p->row_col[r] >= 0 ? 1u << p->row_col[r] : board_row_open(p, r, b_allowed);
}

/*
 * The columns c of cand that leave every other free row an open cell once
 * (row, c) holds a queen. A queen attacks at most 3 cells of another row, so
 * only rows with 3 open cells or fewer can die: the leaf level costs O(n) plus
 * a little per fragile row, not O(n) per leaf.
 */
uint32_t list_level_viable(const board_t *p, int row, uint32_t cand, uint32_t b_allowed)
{
    int n = p->n, forced = p->row_col[row] >= 0;
    for (int r = 0; r < n && cand; r++) {
        if (p->row_col[r] >= 0 || r == row)
            continue;
        uint32_t o = board_row_open(p, r, b_allowed), x = o & (o - 1);
        if (x & (x - 1) & ((x & (x - 1)) - 1))   /* 4 or more open cells */
            continue;
        if (forced || !o) {
            if (!o)
                return 0;
            continue;
        }
        int dist = r > row ? r - row : row - r;
        for (uint32_t m = cand; m; m &= m - 1) {
            int c = __builtin_ctz(m);
            uint32_t hit = 1u << c | (c + dist < n ? 1u << (c + dist) : 0) |
                           (c >= dist ? 1u << (c - dist) : 0);
            if (!(o & ~hit))
                cand &= ~(1u << c);
        }
    }
    return cand;
}

/* Shards below a prefix of lv levels (at most two levels below it). */
static uint64_t walk_leaves(const walk_t *w, const board_t *p, int lv)
{
    if (lv == w->L)
        return !list_board_dead(p, w->b_allowed);
    int r = w->rows[lv];
    uint32_t cand = list_level_cand(p, r, w->b_allowed);
    if (lv == w->L - 1)
        return (uint64_t)__builtin_popcount(list_level_viable(p, r, cand, w->b_allowed));
    uint64_t sum = 0;
    for (; cand; cand &= cand - 1) {
        board_t q = *p;
        board_put(&q, r, __builtin_ctz(cand));
        sum += walk_leaves(w, &q, lv + 1);
    }
    return sum;
}

/* Called for each shard with its columns (cols[0..L-1]); nonzero stops the walk. */
typedef int (*leaf_fn)(void *ud, const uint8_t *cols);

/* Every shard below a prefix of lv levels, in list order: its columns from level lv on go to
   cols and leaf is called. Returns the first nonzero leaf returned, else 0. */
static int walk_each(const walk_t *w, const board_t *p, int lv, uint8_t *cols, leaf_fn leaf, void *ud)
{
    if (lv == w->L)
        return list_board_dead(p, w->b_allowed) ? 0 : leaf(ud, cols);
    int r = w->rows[lv], rc;
    uint32_t cand = list_level_cand(p, r, w->b_allowed);
    if (lv == w->L - 1)
        cand = list_level_viable(p, r, cand, w->b_allowed);
    for (; cand; cand &= cand - 1) {
        cols[lv] = (uint8_t)__builtin_ctz(cand);
        if (lv == w->L - 1) {
            if ((rc = leaf(ud, cols)) != 0)
                return rc;
            continue;
        }
        board_t q = *p;
        board_put(&q, r, cols[lv]);
        if ((rc = walk_each(w, &q, lv + 1, cols, leaf, ud)) != 0)
            return rc;
    }
    return 0;
}

/* Shard descriptor of root rt with the levels' columns cols: its length. */
size_t list_encode(const nq_shards_t *s, const root_t *rt, int L, const uint8_t *cols, uint8_t *out)
{
    nq_shard_desc_t d = { .version = s->encoding, .kind = s->kind, .n = s->n, .mode = s->mode,
                          .weight = s->mode == NQ_SHARD_BORDER ? 0 : 1, .k = s->depth,
                          .c = rt->c, .d = rt->d, .flip = rt->flip };
    int border = s->mode == NQ_SHARD_BORDER;
    d.top[0] = rt->a;
    for (int lv = 0; lv < L; lv++)
        d.top[lv + border] = cols[lv];
    return shard_encode(&d, out);
}

static void walk_init(const nq_shards_t *s, const root_t *rt, walk_t *w)
{
    w->b_allowed = rt->b_allowed;
    if (s->mode == NQ_SHARD_BORDER) {
        nq_shard_desc_t scratch;
        shard_border_root(s->n, rt->a, rt->c, rt->d, &w->board, &scratch);
    } else {
        board_init(&w->board, s->n);
    }
    w->L = shard_level_rows(s->mode, s->n, s->depth, rt->c, rt->d, rt->flip, w->rows);
}

/* ---- building the index ---- */

typedef struct {
    nq_shards_t *s;
    walk_t w;
    uint32_t root;
    uint8_t cols[NQ_SHARD_MAX_N];
    uint64_t max_shards, steps, max_steps;
    const atomic_int *stop;
    int why;                       /* NQ_SHARDS_* once it gave up */
    char *err;
    size_t errlen;
} builder_t;

static int block_push(builder_t *B, uint64_t shards)
{
    nq_shards_t *s = B->s;
    uint64_t before = s->block_start[s->nblocks];
    if (before + shards > B->max_shards) {
        B->why = NQ_SHARDS_TOO_MANY;
        return nq_errf(B->err, B->errlen, "more than %llu shards%s", (unsigned long long)B->max_shards,
                       B->max_shards == NQ_SHARD_MAX_LIST ? ": use a smaller depth" : "");
    }
    if (s->nblocks + 1 >= s->bcap) {
        size_t cap = s->bcap * 2;
        uint32_t *r = realloc(s->block_root, cap * sizeof *r);
        if (r) s->block_root = r;
        uint8_t *c = realloc(s->block_cols, cap * (size_t)(s->split ? s->split : 1));
        if (c) s->block_cols = c;
        uint64_t *st = realloc(s->block_start, (cap + 1) * sizeof *st);
        if (st) s->block_start = st;
        if (!r || !c || !st)
            return nq_errf(B->err, B->errlen, "out of memory listing shards");
        s->bcap = cap;
    }
    s->block_root[s->nblocks] = B->root;
    memcpy(s->block_cols + s->nblocks * (size_t)s->split, B->cols, (size_t)s->split);
    s->nblocks++;
    s->block_start[s->nblocks] = before + shards;
    return 0;
}

/* Told to stop: a relaxed load per step, against a board copy and a row scan per step. */
static int build_stopped(builder_t *B)
{
    if (!B->stop || !atomic_load_explicit(B->stop, memory_order_relaxed))
        return 0;
    B->why = NQ_SHARDS_STOPPED;
    return nq_errf(B->err, B->errlen, "listing stopped: the process is stopping");
}

static int build_blocks(builder_t *B, const board_t *p, int lv)
{
    if (++B->steps > B->max_steps) {
        B->why = NQ_SHARDS_TOO_SLOW;
        return nq_errf(B->err, B->errlen, "listing takes more than %llu steps of search: use a smaller "
                       "depth", (unsigned long long)B->max_steps);
    }
    if (build_stopped(B))
        return -1;
    if (lv == B->s->split) {
        uint64_t n = walk_leaves(&B->w, p, lv);
        return n ? block_push(B, n) : 0;
    }
    if (list_board_dead(p, B->w.b_allowed))
        return 0;
    int r = B->w.rows[lv];
    for (uint32_t cand = list_level_cand(p, r, B->w.b_allowed); cand; cand &= cand - 1) {
        board_t q = *p;
        B->cols[lv] = (uint8_t)__builtin_ctz(cand);
        board_put(&q, r, B->cols[lv]);
        if (build_blocks(B, &q, lv + 1))
            return -1;
    }
    return 0;
}

static int root_add(builder_t *B, const root_t *rt)
{
    nq_shards_t *s = B->s;
    if (s->nroots == s->rcap) {
        size_t cap = s->rcap ? s->rcap * 2 : 64;
        root_t *r = realloc(s->roots, cap * sizeof *r);
        if (r)
            s->roots = r;
        walk_t *w = realloc(s->walks, cap * sizeof *w);
        if (w)
            s->walks = w;
        if (!r || !w)
            return nq_errf(B->err, B->errlen, "out of memory listing shards");
        s->rcap = cap;
    }
    s->roots[s->nroots] = *rt;
    s->roots[s->nroots].first_block = (uint32_t)s->nblocks;
    B->root = (uint32_t)s->nroots;
    walk_init(s, rt, &B->w);
    s->walks[s->nroots] = B->w;
    size_t before = s->nblocks;
    if (build_blocks(B, &B->w.board, 0))
        return -1;
    if (s->nblocks > before)   /* a root with no shard is not kept */
        s->nroots++;
    return 0;
}

static int build_roots(builder_t *B)
{
    nq_shards_t *s = B->s;
    int n = s->n;
    if (s->mode != NQ_SHARD_BORDER)
        return root_add(B, &(root_t){ 0, 0, 0, 0, s->n == 32 ? 0xffffffffu : (1u << n) - 1, 0 });
    uint32_t nth = 0;                   /* roots before this one: its place in the directions' table */
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            for (int d = 0; d < n; d++) {
                board_t p;
                nq_shard_desc_t o;
                if (shard_border_root(n, a, c, d, &p, &o) == 0)
                    continue;
                if (build_stopped(B))
                    return -1;
                int flip = shard_flip_root(n, a, c, d, nth++, &p, o.bmask8 | o.bmaskx, o.bmaskx);
                root_t rt = { (uint8_t)a, (uint8_t)c, (uint8_t)d, (uint8_t)flip, o.bmask8 | o.bmaskx, 0 };
                if (root_add(B, &rt))
                    return -1;
            }
    return 0;
}

/* ---- the list ---- */

static int check_args(int kind, int n, int *depth, int encoding, char *err, size_t errlen)
{
    int lo, hi;
    if (shard_depth_range(kind, n, &lo, &hi))
        return nq_errf(err, errlen, kind == NQ_KIND_ENUMERATE ? "enumerate needs 1 <= N <= %d (got %d)"
                                                              : "count needs 1 <= N <= %d (got %d)",
                       kind == NQ_KIND_ENUMERATE ? NQ_ENUM_MAX_N : NQ_SHARD_MAX_N, n);
    if (encoding != NQ_SHARD_ENCODING)
        return nq_errf(err, errlen, "shard encoding %d not supported (this build reads %d only)", encoding,
                       NQ_SHARD_ENCODING);
    if (*depth == 0) {
        *depth = shard_auto_depth(kind, n);
        return 0;
    }
    if (*depth >= lo && *depth <= hi && !(lo == 0 && hi == 0))
        return 0;
    if (hi == 0)
        return nq_errf(err, errlen, "N=%d has a single shard: leave the depth at auto (0)", n);
    return nq_errf(err, errlen, "depth must be from %d to %d for N=%d (got %d)", lo > 0 ? lo : 1, hi, n,
                   *depth);
}

nq_shards_t *list_new_unordered(int kind, int n, int depth, int encoding, nq_shards_limits_t *lim,
                               char *err, size_t errlen)
{
    lim->why = NQ_SHARDS_REFUSED;
    if (check_args(kind, n, &depth, encoding, err, errlen))
        return NULL;
    nq_shards_t *s = calloc(1, sizeof *s);
    if (!s) {
        nq_errf(err, errlen, "out of memory");
        return NULL;
    }
    s->kind = kind; s->n = n; s->depth = depth; s->encoding = encoding;
    s->mode = (kind == NQ_KIND_COUNT && n >= NQ_SHARD_BORDER_MIN_N) ? NQ_SHARD_BORDER : NQ_SHARD_PLAIN;
    s->len = HDR + (size_t)depth + (s->mode == NQ_SHARD_BORDER ? NQ_SHARD_BORDER_BYTES : 0);
    int L = s->mode == NQ_SHARD_BORDER ? depth - 1 : depth;
    s->split = L > 2 ? L - 2 : 0;
    s->bcap = 64;
    s->block_root = malloc(s->bcap * sizeof *s->block_root);
    s->block_cols = malloc(s->bcap * (size_t)(s->split ? s->split : 1));
    s->block_start = calloc(s->bcap + 1, sizeof *s->block_start);
    uint64_t max_shards = lim->max_shards < NQ_SHARD_MAX_LIST ? lim->max_shards : NQ_SHARD_MAX_LIST;
    builder_t B = { .s = s, .max_shards = max_shards, .max_steps = lim->max_steps, .stop = lim->stop,
                    .why = NQ_SHARDS_REFUSED, .err = err, .errlen = errlen };
    if (!s->block_root || !s->block_cols || !s->block_start) {
        nq_errf(err, errlen, "out of memory listing shards");
        shards_destroy(&s);
    } else if (build_roots(&B)) {
        lim->why = B.why;
        shards_destroy(&s);
    }
    return s;
}

int list_order_set(nq_shards_t *s, nq_shards_limits_t *lim, char *err, size_t errlen)
{
    int stopped = 0;
    if (lim->order != 0 && lim->order != NQ_ORDER_COST) {
        lim->why = NQ_SHARDS_REFUSED;
        return nq_errf(err, errlen, "lease order %d not supported (this build knows %d only)", lim->order,
                       NQ_ORDER_COST);
    }
    order_free(s);
    s->order = NQ_ORDER_COST;
    if (lim->unordered)
        return 0;
    if (order_build(s, lim->stop, &stopped) == 0)
        return 0;
    lim->why = stopped ? NQ_SHARDS_STOPPED : NQ_SHARDS_REFUSED;
    return nq_errf(err, errlen, stopped ? "listing stopped: the process is stopping"
                                        : "out of memory listing shards");
}

nq_shards_t *shards_new_limited(int kind, int n, int depth, int encoding, nq_shards_limits_t *lim,
                                char *err, size_t errlen)
{
    nq_shards_t *s = list_new_unordered(kind, n, depth, encoding, lim, err, errlen);
    if (s && list_order_set(s, lim, err, errlen) != 0)
        shards_destroy(&s);
    return s;
}

nq_shards_t *shards_new_bounded(int kind, int n, int depth, int encoding, uint64_t max_shards,
                                uint64_t max_steps, char *err, size_t errlen)
{
    nq_shards_limits_t lim = { .max_shards = max_shards, .max_steps = max_steps };
    return shards_new_limited(kind, n, depth, encoding, &lim, err, errlen);
}

nq_shards_t *shards_new_ex(int kind, int n, int depth, int encoding, char *err, size_t errlen)
{
    return shards_new_bounded(kind, n, depth, encoding, NQ_SHARD_MAX_LIST, UINT64_MAX, err, errlen);
}

nq_shards_t *shards_new(int kind, int n, int depth, char *err, size_t errlen)
{
    return shards_new_ex(kind, n, depth, NQ_SHARD_ENCODING, err, errlen);
}

nq_shards_t *shards_new_ordered(int kind, int n, int depth, int encoding, int order, char *err, size_t errlen)
{
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .order = order };
    return shards_new_limited(kind, n, depth, encoding, &lim, err, errlen);
}

uint64_t shards_count(const nq_shards_t *s) { return s->block_start[s->nblocks]; }
int shards_depth(const nq_shards_t *s) { return s->depth; }
int shards_encoding(const nq_shards_t *s) { return s->encoding; }

/* The block holding shard i (< shards_count): the last one starting at or before i. */
size_t list_block_of(const nq_shards_t *s, uint64_t i)
{
    size_t lo = 0, hi = s->nblocks;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->block_start[mid] <= i) lo = mid; else hi = mid;
    }
    return lo;
}

/* shards_each's walk: the root and block being walked, the next index, the shards wanted
   ([from, to)), the caller's function; past_end is set when the walk passed `to`. */
typedef struct {
    const nq_shards_t *s;
    const root_t *rt;
    const walk_t *w;
    uint64_t i, from, to;
    int past_end;
    shards_each_fn fn;
    void *ud;
} each_t;

static int each_leaf(void *ud, const uint8_t *cols)
{
    each_t *e = ud;
    uint8_t out[NQ_MAX_SPEC];
    if (e->i < e->from) {               /* the start of the first block, before the range */
        e->i++;
        return 0;
    }
    if (e->i >= e->to) {
        e->past_end = 1;
        return 1;
    }
    size_t len = list_encode(e->s, e->rt, e->w->L, cols, out);
    return e->fn(e->ud, e->i++, out, len);
}

/* Walks the blocks from b on until e->to: 0, or the first nonzero e->fn returned. */
static int each_blocks(const nq_shards_t *s, size_t b, each_t *e)
{
    for (; b < s->nblocks && s->block_start[b] < e->to; b++) {
        walk_t w = s->walks[s->block_root[b]];
        uint8_t cols[NQ_SHARD_MAX_N];
        e->rt = &s->roots[s->block_root[b]];
        e->w = &w;
        e->i = s->block_start[b];
        memcpy(cols, s->block_cols + b * (size_t)s->split, (size_t)s->split);
        for (int lv = 0; lv < s->split; lv++)
            board_put(&w.board, w.rows[lv], cols[lv]);
        int rc = walk_each(&w, &w.board, s->split, cols, each_leaf, e);
        if (rc != 0)
            return e->past_end ? 0 : rc;
    }
    return 0;
}

/* shards_get's callback: the one shard asked for, copied out. */
typedef struct { uint8_t *out; size_t len; } get_t;

static int get_copy(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    get_t *g = ud;
    (void)i;
    memcpy(g->out, spec, len);
    g->len = len;
    return 0;
}

size_t shards_get(const nq_shards_t *s, uint64_t i, uint8_t *out)
{
    if (i >= shards_count(s))
        return 0;
    get_t g = { out, 0 };
    each_t e = { .s = s, .from = i, .to = i + 1, .fn = get_copy, .ud = &g };
    each_blocks(s, list_block_of(s, i), &e);
    return g.len;
}

int shards_each(const nq_shards_t *s, shards_each_fn fn, void *ud)
{
    each_t e = { .s = s, .from = 0, .to = UINT64_MAX, .fn = fn, .ud = ud };
    return each_blocks(s, 0, &e);
}

int list_each_range(const nq_shards_t *s, uint64_t from, uint64_t to, shards_each_fn fn, void *ud)
{
    if (from >= to || from >= shards_count(s))
        return 0;
    each_t e = { .s = s, .from = from, .to = to, .fn = fn, .ud = ud };
    return each_blocks(s, list_block_of(s, from), &e);
}

uint64_t list_unit_first(const nq_shards_t *s, int unit, size_t u)
{
    return unit == UNIT_SHARD ? u : s->block_start[unit == UNIT_BLOCK ? u : s->roots[u].first_block];
}

uint64_t list_unit_count(const nq_shards_t *s, int unit, size_t u)
{
    if (unit == UNIT_SHARD)
        return 1;
    if (unit == UNIT_BLOCK)
        return s->block_start[u + 1] - s->block_start[u];
    size_t end = u + 1 < s->nroots ? s->roots[u + 1].first_block : s->nblocks;
    return s->block_start[end] - s->block_start[s->roots[u].first_block];
}

void shards_destroy(nq_shards_t **sp)
{
    if (!sp || !*sp)
        return;
    free((*sp)->roots);
    free((*sp)->walks);
    free((*sp)->block_root);
    free((*sp)->block_cols);
    free((*sp)->block_start);
    order_free(*sp);
    free(*sp);
    *sp = NULL;
}
