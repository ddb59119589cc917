/* Shard lists built on a thread of their own, so that the broker's loop never waits for one (lister.h). */
#include "lister.h"
#include "clock.h"
#include "errf.h"
#include "offload.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct item {
    offload_item_t link;               /* first: what the offload queues */
    nq_lister_req_t req;
    nq_lister_done_t done;
} item_t;

struct nq_lister {
    nq_offload_t *o;
    atomic_int held;                    /* tests: builds wait while set (lister_test_hold) */
};

static void item_free(offload_item_t *it)
{
    item_t *x = (item_t *)it;
    shards_destroy(&x->done.list);
    free(x);
}

static void build(void *ud, offload_item_t *link, const atomic_int *stop)
{
    nq_lister_t *l = ud;
    while (atomic_load(&l->held) && !atomic_load(stop))
        usleep(1000);
    item_t *it = (item_t *)link;
    const nq_lister_req_t *r = &it->req;
    nq_shards_limits_t lim = { .max_shards = r->max_shards, .max_steps = r->max_steps, .stop = stop,
                               .order = r->order,
                               .unordered = r->unordered };
    double t0 = nq_mono();
    it->done.ticket = r->ticket;
    char *err = it->done.err;
    size_t errlen = sizeof it->done.err;
    if (r->seconds > 0)
        it->done.list = shards_new_for_seconds(r->kind, r->n, r->seconds, &lim, err, errlen);
    else
        it->done.list = shards_new_limited(r->kind, r->n, r->depth, r->encoding, &lim, err, errlen);
    it->done.why = it->done.list ? 0 : lim.why;
    it->done.seconds = nq_mono() - t0;
}

nq_lister_t *lister_new(void *ctx, const char *wake_ep, char *err, size_t errlen)
{
    nq_lister_t *l = calloc(1, sizeof *l);
    nq_offload_ops_t ops = { build, item_free, l, "lists shards", "NQ_FAULT_LIST_GATE" };
    if (!l || !(l->o = offload_new(ctx, wake_ep, &ops, err, errlen))) {
        if (!l)
            nq_errf(err, errlen, "out of memory");
        free(l);
        return NULL;
    }
    return l;
}

int lister_ask(nq_lister_t *l, const nq_lister_req_t *r)
{
    item_t *it = calloc(1, sizeof *it);
    if (!it)
        return -1;
    it->req = *r;
    return offload_ask(l->o, &it->link);
}

int lister_take(nq_lister_t *l, nq_lister_done_t *out)
{
    item_t *it = (item_t *)offload_take(l->o);
    if (!it)
        return 0;
    *out = it->done;                    /* the list goes with it */
    free(it);
    return 1;
}

#ifdef NQ_TEST_FAULTS
void lister_test_hold(nq_lister_t *l, int held)
{
    atomic_store(&l->held, held);
}
#endif

void lister_stop(nq_lister_t *l)
{
    offload_stop(l->o);
}

void lister_destroy(nq_lister_t **lp)
{
    nq_lister_t *l = *lp;
    if (!l)
        return;
    offload_destroy(&l->o);
    free(l);
    *lp = NULL;
}
