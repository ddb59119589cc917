/* Bounds on a count shard's result from its descriptor alone (count_bounds.h). */
#include "count_bounds.h"
#include "count_search.h"
#include "errf.h"

static unsigned gcd_u(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The weights of the b a completion can end on: row n-1's queen if the shard fixes it, else
   its open cells (plan_init blocks every b that is not canonical). */
static void bounds_weights(const nq_shard_desc_t *d, const nq_plan_t *pl, nq_count_bounds_t *b)
{
    int n = d->n;
    uint32_t reach = d->row_col[n - 1] >= 0 ? 1u << d->row_col[n - 1]
                                            : pl->full & ~(pl->block[pl->m - 1] | pl->colfix);
    b->wmin = b->wmax = b->wgcd = 0;
    b->all8 = reach != 0;
    for (; reach; reach &= reach - 1) {
        unsigned w = d->bweight[__builtin_ctz(reach)];
        if (w == 0)
            continue;                 /* not canonical: counted by another shard, never here */
        b->wmin = b->wmin && b->wmin < w ? b->wmin : w;
        b->wmax = b->wmax > w ? b->wmax : w;
        b->wgcd = gcd_u(b->wgcd, w);
        b->all8 &= w == 8;              /* weight 8: the stabilizer is the identity alone */
    }
    b->all8 &= b->wmax != 0;
}

/* Open cells per free row, largest first, each capped by the columns left (count_bounds.h). */
static void bounds_tree(const nq_plan_t *pl, nq_count_bounds_t *b)
{
    int r[NQ_SHARD_MAX_N], m = pl->m;
    for (int L = 0; L < m; L++) {
        int v = __builtin_popcount(pl->full & ~(pl->block[L] | pl->colfix)), i = L;
        for (; i > 0 && r[i - 1] < v; i--)
            r[i] = r[i - 1];
        r[i] = v;
    }
    nq_u128 at = 1, sum = 0;          /* at most 32! * e < 2^128: no overflow */
    for (int L = 0; L < m; L++) {
        at *= (nq_u128)(r[L] < m - L ? r[L] : m - L);
        sum += at;
    }
    b->leaves_max = at;               /* m = 0: the one board the descriptor fixes */
    b->nodes_max = sum;
}

int count_bounds(const uint8_t *spec, size_t len, nq_count_bounds_t *b, char *err, size_t errlen)
{
    nq_shard_desc_t d;
    nq_plan_t pl;
    if (shard_decode(spec, len, &d, err, errlen) != 0)
        return -1;
    if (d.kind != NQ_KIND_COUNT)
        return nq_errf(err, errlen, "not a count shard (kind %d)", d.kind);
    plan_init(&pl, &d, 0);            /* which rows are free and their open cells: any direction */
    b->free_rows = pl.m;
    if (pl.m == 0) {                  /* everything fixed: one board, counted with b's weight */
        unsigned w = d.bweight[d.row_col[d.n - 1]];
        *b = (nq_count_bounds_t){ 0, 1, 0, w, w, w, w == 8 };
        return 0;
    }
    bounds_weights(&d, &pl, b);
    bounds_tree(&pl, b);
    return 0;
}

/* Total and unique against the weights and the completions the rows admit: 0, or -1 with why.
   *sols gets the fewest completions that give them, for the node bounds. */
static int check_counts(const nq_count_bounds_t *b, const nq_count_result_t *r, nq_u128 *sols, char *why,
                        size_t whylen)
{
    char x[40], y[40];
    nq_u128 t = r->total, u = r->unique;
    *sols = (t + (b->wmax ? b->wmax - 1 : 0)) / (b->wmax ? b->wmax : 1);
    if (u > *sols)
        *sols = u;                    /* the fewest completions that give this total and unique */
    if (b->wmax == 0 && (t || u))
        return nq_errf(why, whylen, "total %llu, unique %llu, but no completion of this shard can count",
                       (unsigned long long)r->total, (unsigned long long)r->unique);
    if (u * b->wmin > t)
        return nq_errf(why, whylen, "unique %llu needs a total of at least %llu (each solution weighs %u or"
                       " more), not %llu", (unsigned long long)r->unique, (unsigned long long)(u * b->wmin),
                       b->wmin, (unsigned long long)r->total);
    if (b->wgcd && t % b->wgcd)
        return nq_errf(why, whylen, "total %llu is not a multiple of %u, and every solution here weighs one",
                       (unsigned long long)r->total, b->wgcd);
    if (b->all8 && t != 8 * u)
        return nq_errf(why, whylen, "total %llu is not 8 x unique %llu, and every solution here is the one"
                       " member of its class that the shard holds, of weight 8",
                       (unsigned long long)r->total, (unsigned long long)r->unique);
    if (*sols > b->leaves_max)
        return nq_errf(why, whylen, "total %llu and unique %llu need at least %s solutions, and its %d free"
                       " rows admit at most %s", (unsigned long long)r->total, (unsigned long long)r->unique,
                       u128_to_str(*sols, x), b->free_rows, u128_to_str(b->leaves_max, y));
    return 0;
}

int count_bounds_check_counts(const nq_count_bounds_t *b, const nq_count_result_t *r, char *why,
                              size_t whylen)
{
    nq_u128 sols;
    return check_counts(b, r, &sols, why, whylen);
}

int count_bounds_check(const nq_count_bounds_t *b, const nq_count_result_t *r, char *why, size_t whylen)
{
    char x[40], y[40];
    nq_u128 sols;
    if (check_counts(b, r, &sols, why, whylen) != 0)
        return -1;
    if (sols && r->nodes < sols + (nq_u128)b->free_rows - 1)
        return nq_errf(why, whylen, "nodes %llu are fewer than the %s that %s solutions in %d free rows need",
                       (unsigned long long)r->nodes, u128_to_str(sols + (nq_u128)b->free_rows - 1, x),
                       u128_to_str(sols, y), b->free_rows);
    if (r->nodes > b->nodes_max)
        return nq_errf(why, whylen, "nodes %llu are more than the %s that a search of its %d free rows can"
                       " visit", (unsigned long long)r->nodes, u128_to_str(b->nodes_max, x), b->free_rows);
    return 0;
}
