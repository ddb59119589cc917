/*
 * The lists the loop has asked the lister for (lister.h), and whom each one is
 * for: a job in memory that leases nothing until its list comes (a start, a
 * retry), or a client whose submit is answered when it does. The loop takes the
 * lists that have come at every round and hands each to whom it is for; a
 * ticket no listing holds any more (its job ended meanwhile) only frees its list.
 * Two listers: a submit's list without its order (the count its answer needs)
 * on one, a job's lease order (its cost estimates: seconds) on the other.
 */
#include "broker_impl.h"
#include "errf.h"
#include "log.h"
#include "nq.h"
#include "shard.h"

#include <stdlib.h>
#include <string.h>

int listings_start(nq_broker_t *b, const char *wake_ep, char *err, size_t errlen)
{
    b->lister = lister_new(b->ctx, wake_ep, err, errlen);
    b->orderer = b->lister ? lister_new(b->ctx, wake_ep, err, errlen) : NULL;
    return b->orderer ? 0 : -1;
}

uint64_t listings_ask(nq_broker_t *b, nq_lister_req_t *r, const nq_listing_t *x)
{
    nq_listing_t *l = malloc(sizeof *l);
    if (!l)
        return 0;
    *l = *x;
    l->ticket = r->ticket = ++b->listing_ticket;
    nq_lister_t *by = r->unordered ? b->lister : b->orderer;
    if (!by || lister_ask(by, r) != 0) {
        free(l);
        return 0;
    }
    l->next = b->listings;
    b->listings = l;
    if (l->job == 0)
        b->listing_submits++;
    return l->ticket;
}

static nq_listing_t *listing_take(nq_broker_t *b, uint64_t ticket)
{
    for (nq_listing_t **pp = &b->listings; *pp; pp = &(*pp)->next)
        if ((*pp)->ticket == ticket) {
            nq_listing_t *l = *pp;
            *pp = l->next;
            if (l->job == 0)
                b->listing_submits--;
            return l;
        }
    return NULL;
}

int listings_take(nq_broker_t *b, nq_listing_t **x, nq_lister_done_t *d)
{
    if (!b->listings || (!lister_take(b->lister, d) && (!b->orderer || !lister_take(b->orderer, d))))
        return 0;
    *x = listing_take(b, d->ticket);
    return 1;
}

void listings_stop(nq_broker_t *b)
{
    if (b->lister)
        lister_stop(b->lister);
    if (b->orderer)
        lister_stop(b->orderer);
    while (b->listings) {
        nq_listing_t *x = b->listings;
        b->listings = x->next;
        if (x->job == 0)
            outbox_answer_job(b, x->rid, x->rid_len, NQ_EXIT_ERROR, "the broker stopped before the job's "
                               "shards were listed: nothing was created; submit it again", 0);
        free(x);
    }
    b->listing_submits = 0;
}
