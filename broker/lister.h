/*
 * Shard lists built on a thread of their own (lister.c). A count list can take
 * seconds of CPU: the cost estimates of its lease order (2.5 s at N=27), or tens
 * of millions of shards before a list is known to be over a cap. The broker's loop
 * answers within milliseconds throughout, so it never builds one: it asks, this
 * thread builds, and the loop takes the answer when the thread has poked its wake
 * socket.
 *
 * The thread shares nothing with the broker: a request is parameters, an answer
 * is a list (which the loop then owns) or a reason. One list at a time, in the
 * order asked: lists compete for CPU with the workers of a small machine.
 */
#ifndef NQ_LISTER_H
#define NQ_LISTER_H

#include <stddef.h>
#include <stdint.h>

#include "shard.h"

typedef struct nq_lister_req {
    uint64_t ticket;                   /* the asker's name for it */
    int kind, n, depth, encoding;
    uint64_t max_shards, max_steps;
    double seconds;                    /* > 0: the depth is shards_new_for_seconds' (count only) */
    int order;                         /* the lease order: NQ_ORDER_COST (0: the same) */
    int unordered;                     /* 1: without the order (its estimates): see shards_ordered */
} nq_lister_req_t;

typedef struct {
    uint64_t ticket;
    nq_shards_t *list;                 /* the taker owns it; NULL: refused, see why and err */
    int why;                           /* NQ_SHARDS_* when refused */
    char err[256];                     /* a list's reasons are one short line */
    double seconds;                    /* how long it took to build */
} nq_lister_done_t;

typedef struct nq_lister nq_lister_t;

/* Starts the thread; each answer is followed by one empty message to the inproc PULL socket
   bound at wake_ep in the ZeroMQ context ctx. NULL with err. */
nq_lister_t *lister_new(void *ctx, const char *wake_ep, char *err, size_t errlen);
/* Queues a request (copied). -1: out of memory. */
int lister_ask(nq_lister_t *l, const nq_lister_req_t *r);
/* The oldest answer not yet taken: 1 and *out filled, or 0 when there is none. */
int lister_take(nq_lister_t *l, nq_lister_done_t *out);
/* Tells the thread to stop (a list being built gives up within a millisecond or so) and waits for
   it; requests and answers not taken are dropped. Later asks are refused. */
void lister_stop(nq_lister_t *l);
void lister_destroy(nq_lister_t **l);   /* stops it first */
#ifdef NQ_TEST_FAULTS
/* Tests only: while held, the thread waits before each list (to see what waits for one). */
void lister_test_hold(nq_lister_t *l, int held);
#endif

#endif
