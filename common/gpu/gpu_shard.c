/* A count shard split between the GPU and the host: see gpu_shard.h. Mirrors count_shard's choices
   (count.c), which test_gpu_shard checks shard by shard. */
#include "gpu_shard.h"
#include "count_d4.h"
#include "errf.h"
#include "nq.h"

#include <string.h>

static void acc_into(nq_gpu_split_t *s, const nq_count_acc_t *acc)
{
    s->tally = acc->tally;
    s->unique = acc->unique;
}

/* An accumulator over plan pl that goes on from what s holds (acc_into gives it back). */
static void acc_from(nq_count_acc_t *acc, const nq_gpu_split_t *s, nq_plan_t *pl)
{
    memset(acc, 0, sizeof *acc);
    acc->tally = s->tally;
    acc->unique = s->unique;
    acc->plan = pl;
}

/* Every solution one by one on the host (count_shard's search_leaves), into s. */
static int host_leaves(nq_plan_t *pl, nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    nq_count_acc_t acc;
    acc_from(&acc, s, pl);
    int rc = search_leaves(pl, count_leaf, &acc, ctl, nodes);
    acc_into(s, &acc);
    return rc;
}

/* The fast kernel on the host, for a plan the GPU does not take or for the rare pass. */
static int host_fast(nq_plan_t *pl, nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, uint64_t *nodes)
{
    nq_count_acc_t acc;
    acc_from(&acc, s, pl);
    int rc = search_fast(pl, &acc, ctl, nodes);
    acc_into(s, &acc);
    return rc;
}

/* The host's part: run (kind) on plan pl; its nodes the shard's or not. */
static void host_part(nq_gpu_split_t *s, int kind, const nq_plan_t *pl, int nodes)
{
    s->host = kind;
    s->hplan = *pl;
    s->host_nodes = nodes;
}

/*
 * Top-down, m >= 2 (search_fast's case). The GPU takes the plan whenever its last row has a
 * weight-8 cell; the rare cells then get a pass of their own on the host with the last row cut
 * down to them, whose nodes are not the shard's (count_simd.c does the same). A last row of rare
 * cells only is the host's whole.
 */
static void split_top(nq_plan_t *pl, nq_gpu_split_t *s)
{
    if (!(plan_open(pl, pl->m - 1) & pl->leaf8)) {
        host_part(s, NQ_GPU_HOST_FAST, pl, 1);
        return;
    }
    s->gpu = 1;
    s->plan = *pl;
    if (!pl->leafx)
        return;
    nq_plan_t px = *pl;
    px.block[px.m - 1] |= ~pl->leafx;
    px.leaf8 = 0;
    host_part(s, NQ_GPU_HOST_FAST, &px, 0);   /* nodes: the GPU counts the whole last row */
}

/* Bottom-up (count_flipped): b fixed, or free and split by its weight. */
static void split_flipped(const nq_shard_desc_t *d, nq_gpu_split_t *s)
{
    nq_plan_t p8, px;
    plan_init(&p8, d, 1);
    if (d->row_col[d->n - 1] >= 0) {
        if (p8.leaf8 && p8.m >= 2) {
            s->gpu = 1;
            s->plan = p8;
        } else {
            host_part(s, NQ_GPU_HOST_LEAVES, &p8, 1);
        }
        return;
    }
    plan_split_weight(d, &p8, &px);
    if (d->bmaskx)
        host_part(s, NQ_GPU_HOST_LEAVES, &px, 1);
    if (d->bmask8) {
        s->gpu = 1;
        s->plan = p8;
    }
}

int gpu_split_plan(const uint8_t *spec, size_t len, nq_gpu_split_t *s, char *err, size_t errlen)
{
    nq_shard_desc_t d;
    nq_plan_t pl;
    memset(s, 0, sizeof *s);
    if (shard_decode(spec, len, &d, err, errlen))
        return -1;
    if (d.kind != NQ_KIND_COUNT)
        return nq_errf(err, errlen, "not a count shard (kind %d)", d.kind);
    int free_rows = 0;
    for (int r = 0; r < d.n; r++)
        free_rows += d.row_col[r] < 0;
    if (d.mode == NQ_SHARD_BORDER && free_rows >= 3 && d.flip) {
        split_flipped(&d, s);
        return 0;
    }
    plan_init(&pl, &d, 0);
    if (d.mode == NQ_SHARD_BORDER && pl.m >= 2)
        split_top(&pl, s);
    else
        host_part(s, NQ_GPU_HOST_LEAVES, &pl, 1);
    return 0;
}

int gpu_split_host(nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, char *err, size_t errlen)
{
    uint64_t nodes = 0;
    int rc = 0;
    if (s->host == NQ_GPU_HOST_FAST)
        rc = host_fast(&s->hplan, s, ctl, &nodes);
    else if (s->host == NQ_GPU_HOST_LEAVES)
        rc = host_leaves(&s->hplan, s, ctl, &nodes);
    if (rc == 0 && s->host_nodes && __builtin_add_overflow(s->nodes, nodes, &s->nodes))
        rc = -1;
    s->host = NQ_GPU_HOST_NONE;
    if (rc == 2)
        return 2;
    return rc ? nq_errf(err, errlen, "64-bit overflow counting the shard") : 0;
}

int gpu_split_shard(const uint8_t *spec, size_t len, nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl,
                    char *err, size_t errlen)
{
    if (gpu_split_plan(spec, len, s, err, errlen) != 0)
        return -1;
    return gpu_split_host(s, ctl, err, errlen);
}

int gpu_split_host_rest(nq_gpu_split_t *s, const nq_kernel_ctl_t *ctl, char *err, size_t errlen)
{
    nq_plan_t pl = s->plan;
    uint64_t nodes = 0;
    pl.leafx = 0;                       /* the rare cells had their pass (split_top) */
    s->gpu = 0;
    int rc = host_fast(&pl, s, ctl, &nodes);
    if (rc == 0 && __builtin_add_overflow(s->nodes, nodes, &s->nodes))
        rc = -1;
    if (rc == 2)
        return 2;
    return rc ? nq_errf(err, errlen, "64-bit overflow counting the shard") : 0;
}

int gpu_split_finish(const nq_gpu_split_t *s, uint64_t gpu_nodes, uint64_t gpu_sols, nq_count_result_t *r,
                     char *err, size_t errlen)
{
    nq_count_tally_t t = s->tally;
    uint64_t w, unique, nodes;
    memset(r, 0, sizeof *r);
    /* weight-8 solutions: a border configuration with no symmetry stands for 8 boards */
    if (__builtin_mul_overflow(gpu_sols, (uint64_t)NQ_D4_SIZE, &w) || count_tally_add(&t, w) ||
        __builtin_add_overflow(s->unique, gpu_sols, &unique) ||
        __builtin_add_overflow(s->nodes, gpu_nodes, &nodes))
        return nq_errf(err, errlen, "64-bit overflow counting the shard");
    r->total = t.total;
    r->unique = unique;
    r->nodes = nodes;
    r->res13 = t.r13;
    r->res15 = t.r15;
    return 0;
}
