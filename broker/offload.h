/*
 * Work done on a thread of its own for the broker's loop, which must never wait for it: the loop
 * queues an item, the thread runs it and queues it back done, pokes the loop's wake socket, and
 * the loop takes it in a later round. One item at a time, in the order asked. The lister (shard
 * lists) and the verifier (big solutions) are the two users.
 *
 * An item is the caller's struct with an offload_item_t first; the thread hands it to run(), and
 * what run() writes into it is the answer.
 */
#ifndef NQ_OFFLOAD_H
#define NQ_OFFLOAD_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct offload_item {
    struct offload_item *next;
} offload_item_t;

typedef struct nq_offload nq_offload_t;

/* run(ud, it, stop): does the work of one item, on the thread; *stop becomes non-zero when the
   offload is stopping (a long run gives up). free_item: what offload_stop does with items left. */
typedef struct {
    void (*run)(void *ud, offload_item_t *it, const atomic_int *stop);
    void (*free_item)(offload_item_t *it);
    void *ud;
    const char *what;                  /* for the error when the thread cannot start */
    /* Test builds (NQ_TEST_FAULTS) only: an environment variable naming a FILE; when set, each
       item first writes FILE.held and waits until FILE exists, so a test holds an item on the
       thread for as long as it asks the loop, at any machine speed. */
    const char *fault_gate;
} nq_offload_ops_t;

/* Starts the thread; each done item is followed by one empty message to the inproc PULL socket
   bound at wake_ep in the ZeroMQ context ctx. NULL with err. */
nq_offload_t *offload_new(void *ctx, const char *wake_ep, const nq_offload_ops_t *ops, char *err, size_t errlen);
/* Queues it (taken). -1 when stopped: it is freed. */
int offload_ask(nq_offload_t *o, offload_item_t *it);
/* The oldest done item not yet taken (the caller's now), or NULL. */
offload_item_t *offload_take(nq_offload_t *o);
/* Tells the thread to stop (a run under way sees *stop) and waits for it; items not done or not
   taken are freed; later asks are refused. Twice is fine. */
void offload_stop(nq_offload_t *o);
void offload_destroy(nq_offload_t **o);   /* stops it first */

#endif
