/* The counting kernel: count_shard and the search it runs. See count.h and count_search.h. */
#include "count_search.h"
#include "errf.h"
#include "count_d4.h"
#include "verify.h"
#include "nq.h"

#include <stdio.h>
#include <string.h>


/* ---- tallies: checked totals with separate residue counters ---- */

int count_tally_add(nq_count_tally_t *t, uint64_t add)
{
    uint64_t sum;
    if (__builtin_add_overflow(t->total, add, &sum))
        return -1;
    t->total = sum;
    t->r13 = (uint8_t)((t->r13 + add % 13) % 13);
    t->r15 = (uint8_t)((t->r15 + add % 15) % 15);
    return 0;
}

const char *count_kernel_name(void)
{
    return count_simd_available() ? "avx512" : "scalar";
}

/* ---- the plan ---- */

void plan_init(nq_plan_t *pl, const nq_shard_desc_t *d, int flip)
{
    int n = d->n, fixed[NQ_SHARD_MAX_N];
    uint64_t diag = 0, anti = 0;   /* lines r + c and c - r + n - 1 of the fixed queens */
    memset(pl, 0, sizeof *pl);
    pl->n = n;
    pl->flipped = flip;
    plan_set_cover(pl);               /* after pl->n */
    pl->full = n == 32 ? 0xffffffffu : (1u << n) - 1;
    for (int p = 0; p < n; p++) {
        fixed[p] = d->row_col[flip ? n - 1 - p : p];
        if (fixed[p] >= 0) {
            diag |= 1ull << (p + fixed[p]);
            anti |= 1ull << (fixed[p] - p + n - 1);
        }
    }
    for (int r = 0; r < n; r++) {
        if (fixed[r] >= 0) {
            pl->cols[r] = (uint8_t)fixed[r];
            pl->colfix |= 1u << fixed[r];
            continue;
        }
        int L = pl->m++;
        pl->row[L] = r;
        pl->shift[L] = L ? r - pl->row[L - 1] : 0;
        pl->block[L] = pl->full & (uint32_t)((diag >> r) | (anti >> (n - 1 - r)));
    }
    memcpy(pl->bweight, d->bweight, sizeof pl->bweight);
    memcpy(pl->bstab, d->bstab, sizeof pl->bstab);
    if (d->row_col[n - 1] < 0) {
        /* only canonical b are worth reaching in row n-1 */
        pl->block[flip ? 0 : pl->m - 1] |= pl->full & ~(d->bmask8 | d->bmaskx);
        pl->leaf8 = d->bmask8;
        pl->leafx = d->bmaskx;
    } else {
        /* b is fixed: the whole shard has one weight */
        int b = d->row_col[n - 1];
        pl->leaf8 = d->bweight[b] == NQ_D4_SIZE && d->bstab[b] == 1 ? pl->full : 0;
        pl->leafx = d->bweight[b] && !pl->leaf8 ? pl->full : 0;
    }
}

void plan_set_cover(nq_plan_t *pl)
{
    pl->cover = pl->n >= NQ_COVER_WIDE_N ? NQ_COVER_LEFT_5 : NQ_COVER_LEFT_4;
}

void levels_init(nq_levels_t *lv, const nq_plan_t *pl)
{
    memset(lv, 0, sizeof *lv);
    lv->m = pl->m;
    for (int i = 0; i < pl->m; i++) {
        lv->open_of[i] = plan_open(pl, i);
        lv->shift[i] = pl->shift[i];
    }
    for (int i = 0; i + 2 < pl->m; i++) {
        lv->d1[i] = pl->row[i + 1] - pl->row[i];
        lv->d2[i] = pl->row[i + 2] - pl->row[i];
        lv->dz[i] = pl->row[pl->m - 1] - pl->row[i];
        for (int j = 3; j < NQ_COVER_LEFT_5 - 1 && i + j < pl->m; j++)
            lv->dx[i][j - 3] = pl->row[i + j] - pl->row[i];
        if (pl->m - i <= pl->cover)
            lv->cover[i] = (uint8_t)(pl->m - i);
    }
    lv->wide = pl->cover == NQ_COVER_LEFT_5;
    lv->last_open = pl->m ? lv->open_of[pl->m - 1] : 0;
    lv->leaf8 = pl->leaf8;
    lv->full = pl->full;
}

/* ---- polling: one way for every kernel to publish progress and hear a cancel ---- */

/* Publishes nodes searched so far; 2 when the task was cancelled, else 0. */
static int ctl_publish(const nq_kernel_ctl_t *ctl, uint64_t nodes)
{
    if (!ctl)
        return 0;
    if (ctl->progress)
        atomic_store_explicit(ctl->progress, nodes, memory_order_relaxed);
    if (ctl->cancel && atomic_load_explicit(ctl->cancel, memory_order_relaxed))
        return 2;
    return 0;
}

int count_poll(nq_count_acc_t *acc, uint64_t *sols, uint64_t nodes, const nq_kernel_ctl_t *ctl)
{
    uint64_t w;
    /* weight-8 solutions: a border configuration with no symmetry stands for 8 boards */
    if (__builtin_mul_overflow(*sols, (uint64_t)NQ_D4_SIZE, &w) || count_tally_add(&acc->tally, w))
        return -1;
    acc->unique += *sols;
    *sols = 0;
    return ctl_publish(ctl, acc->plan->node_base + nodes);
}

typedef struct {
    const nq_kernel_ctl_t *ctl;
    uint64_t next, base;
} poll_t;

/* Called when nodes passed p->next: publishes progress; 2 when cancelled. */
static int poll_now(poll_t *p, uint64_t nodes)
{
    p->next = nodes + NQ_KERNEL_POLL_NODES;
    return ctl_publish(p->ctl, p->base + nodes);
}

/* The one place that picks the counting kernel: the vector one where it runs, else scalar. */
int search_fast(nq_plan_t *pl, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    int rc = search_simd(pl, acc, ctl, nodes);
    return rc == NQ_SIMD_DECLINED ? search_scalar(pl, acc, ctl, nodes) : rc;
}

/* ---- every solution, one by one (unique checks, enumeration) ---- */

int search_leaves(nq_plan_t *pl, nq_leaf_fn leaf, void *ud, const nq_kernel_ctl_t *ctl, uint64_t *nodes_out)
{
    uint32_t av[NQ_SHARD_MAX_N], cl[NQ_SHARD_MAX_N], dl[NQ_SHARD_MAX_N], dr[NQ_SHARD_MAX_N];
    poll_t poll = { ctl, NQ_KERNEL_POLL_NODES, pl->node_base };
    uint64_t nodes = 0;
    int m = pl->m, rc = 0;
    *nodes_out = 0;
    if (m == 0)   /* everything fixed: the descriptor was validated, so it is a solution */
        return leaf(ud, pl->cols, pl->n);
    int L = 0;
    cl[0] = pl->colfix; dl[0] = dr[0] = 0;
    av[0] = pl->full & ~(pl->colfix | pl->block[0]);
    while (L >= 0) {
        uint32_t a = av[L];
        if (!a) { L--; continue; }
        uint32_t bit = a & -a;
        av[L] = a ^ bit;
        pl->cols[pl->row[L]] = (uint8_t)__builtin_ctz(bit);
        if (++nodes >= poll.next && (rc = poll_now(&poll, nodes)) != 0)
            break;
        if (L == m - 1) {
            if ((rc = leaf(ud, pl->cols, pl->n)) != 0)
                break;
            continue;
        }
        int s = pl->shift[L + 1];
        cl[L + 1] = cl[L] | bit;
        dl[L + 1] = (dl[L] | bit) << s;
        dr[L + 1] = (dr[L] | bit) >> s;
        L++;
        av[L] = pl->full & ~(cl[L] | dl[L] | dr[L] | pl->block[L]);
    }
    *nodes_out = nodes;
    return rc;
}

/* ---- solutions one by one ---- */

int count_solution(const nq_plan_t *pl, const uint8_t *cols, nq_count_acc_t *acc)
{
#ifdef NQ_TEST_FAULTS
    /* Test builds only: the board must be a solution. The kernels rebuild the boards they hand
       here from saved state (count_simd.c: each lane's path), and a board rebuilt wrong would
       otherwise show only where its unique check happens to reach the wrong row. */
    uint32_t wide[NQ_SHARD_MAX_N];
    nq_clash_t clash;
    for (int r = 0; r < pl->n; r++)
        wide[r] = cols[r];
    if (verify_perm(wide, (uint64_t)pl->n, &clash) != 0)
        return -1;   /* reported as an overflow: a test that counts it fails */
#endif
    int b = cols[pl->n - 1];
    unsigned w = pl->bweight[b], stab = pl->bstab[b];
    if (w == 0)
        return 0;   /* (a, b, c, d) is not canonical: another shard counts this class */
    if (count_tally_add(&acc->tally, w))
        return -1;
    if (stab == 1u || d4_is_least(cols, pl->n, stab))
        acc->unique++;
    return 0;
}

int count_leaf(void *ud, const uint8_t *cols, int n)
{
    nq_count_acc_t *acc = ud;
    uint8_t board[NQ_SHARD_MAX_N];
    if (acc->plan->flipped) {   /* back to board orientation for the weight and the D4 check */
        for (int r = 0; r < n; r++)
            board[r] = cols[n - 1 - r];
        cols = board;
    }
    return count_solution(acc->plan, cols, acc);
}

void plan_split_weight(const nq_shard_desc_t *d, nq_plan_t *p8, nq_plan_t *px)
{
    *px = *p8;
    p8->block[0] |= ~d->bmask8;
    p8->leaf8 = p8->full;
    p8->leafx = 0;
    px->block[0] |= ~d->bmaskx;
}

/*
 * Bottom-up (d->flip). With row n-1 free its queen is the first level, so
 * split by its weight: weight-8 columns through the fast loop, the others one
 * solution at a time. With b fixed (a deeper shard) the whole shard has b's
 * weight: weight 8 in bulk, any other weight solution by solution.
 */
static int count_flipped(const nq_shard_desc_t *d, nq_count_acc_t *acc, const nq_kernel_ctl_t *ctl,
                         uint64_t *nodes)
{
    nq_plan_t p8, px;
    uint64_t n8 = 0, nx = 0;
    int rc = 0;
    plan_init(&p8, d, 1);
    if (d->row_col[d->n - 1] >= 0) {
        acc->plan = &p8;
        if (p8.leaf8 && p8.m >= 2)
            return search_fast(&p8, acc, ctl, nodes);
        return search_leaves(&p8, count_leaf, acc, ctl, nodes);
    }
    plan_split_weight(d, &p8, &px);
    if (d->bmaskx) {
        acc->plan = &px;
        rc = search_leaves(&px, count_leaf, acc, ctl, &nx);
    }
    if (rc == 0 && d->bmask8) {
        p8.node_base = nx;
        acc->plan = &p8;
        rc = search_fast(&p8, acc, ctl, &n8);
    }
    *nodes = n8 + nx;
    return rc;
}

int count_shard(const uint8_t *spec, size_t len, nq_count_result_t *r, const nq_kernel_ctl_t *ctl,
                char *err, size_t errlen)
{
    nq_shard_desc_t d;
    nq_plan_t pl;
    nq_count_acc_t acc;
    uint64_t nodes = 0;
    memset(r, 0, sizeof *r);
    if (shard_decode(spec, len, &d, err, errlen))
        return -1;
    if (d.kind != NQ_KIND_COUNT)
        return nq_errf(err, errlen, "not a count shard (kind %d)", d.kind);
    int free_rows = 0, rc;
    for (int r = 0; r < d.n; r++)
        free_rows += d.row_col[r] < 0;
    memset(&acc, 0, sizeof acc);
    acc.plan = &pl;
    if (d.mode == NQ_SHARD_BORDER && free_rows >= 3 && d.flip) {
        rc = count_flipped(&d, &acc, ctl, &nodes);   /* bottom-up: it makes its own plans */
    } else {
        plan_init(&pl, &d, 0);                       /* one plan a shard: ~900 instructions */
        if (d.mode == NQ_SHARD_BORDER && pl.m >= 2)
            rc = search_fast(&pl, &acc, ctl, &nodes);
        else
            rc = search_leaves(&pl, count_leaf, &acc, ctl, &nodes);
    }
    if (rc == 2)
        return 2;
    if (rc != 0)
        return nq_errf(err, errlen, "64-bit overflow counting the shard");
    r->total = acc.tally.total;
    r->unique = acc.unique;
    r->nodes = nodes;
    r->res13 = acc.tally.r13;
    r->res15 = acc.tally.r15;
    if (ctl && ctl->progress)
        atomic_store_explicit(ctl->progress, nodes, memory_order_relaxed);
    return 0;
}
