/* Work done on a thread of its own for the broker's loop (offload.h). */
#include "offload.h"
#include "errf.h"
#include "wake.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { offload_item_t *head, *tail; } queue_t;

struct nq_offload {
    pthread_mutex_t mu;                /* guards the two queues and `stopped` */
    pthread_cond_t cv;                 /* an item came, or stop */
    pthread_t th;
    atomic_int stop;                   /* read by a run under way */
    int stopped;                       /* joined: asks are refused */
    queue_t todo, done;
    nq_offload_ops_t ops;
    void *ctx;
    char wake_ep[128];
};

static void queue_push(queue_t *q, offload_item_t *it)
{
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
}

static offload_item_t *queue_pop(queue_t *q)
{
    offload_item_t *it = q->head;
    if (it && !(q->head = it->next))
        q->tail = NULL;
    return it;
}

static void queue_free(nq_offload_t *o, queue_t *q)
{
    for (offload_item_t *it; (it = queue_pop(q));)
        o->ops.free_item(it);
}

/* ops.fault_gate (offload.h): test builds only. */
static void fault_gate(nq_offload_t *o)
{
#ifdef NQ_TEST_FAULTS
    const char *gate = o->ops.fault_gate ? getenv(o->ops.fault_gate) : NULL;
    char held[4200];
    if (!gate || snprintf(held, sizeof held, "%s.held", gate) >= (int)sizeof held)
        return;
    FILE *f = fopen(held, "w");
    if (f)
        fclose(f);
    while (access(gate, F_OK) != 0 && !atomic_load(&o->stop))
        usleep(10000);
#else
    (void)o;
#endif
}

static void *offload_main(void *arg)
{
    nq_offload_t *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (!o->todo.head && !atomic_load(&o->stop))
            pthread_cond_wait(&o->cv, &o->mu);
        if (atomic_load(&o->stop))
            break;
        offload_item_t *it = queue_pop(&o->todo);
        pthread_mutex_unlock(&o->mu);
        fault_gate(o);
        o->ops.run(o->ops.ud, it, &o->stop);
        pthread_mutex_lock(&o->mu);
        queue_push(&o->done, it);
        pthread_mutex_unlock(&o->mu);
        wake_poke(o->ctx, o->wake_ep);  /* outside the lock: the loop may be taking answers */
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

nq_offload_t *offload_new(void *ctx, const char *wake_ep, const nq_offload_ops_t *ops, char *err, size_t errlen)
{
    nq_offload_t *o = calloc(1, sizeof *o);
    if (!o)
        return nq_errf(err, errlen, "out of memory"), NULL;
    o->ctx = ctx;
    o->ops = *ops;
    snprintf(o->wake_ep, sizeof o->wake_ep, "%s", wake_ep);
    atomic_init(&o->stop, 0);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    int rc = pthread_create(&o->th, NULL, offload_main, o);
    if (rc != 0) {
        pthread_cond_destroy(&o->cv);
        pthread_mutex_destroy(&o->mu);
        free(o);
        nq_errf(err, errlen, "cannot start the thread that %s: %s", ops->what, strerror(rc));
        return NULL;
    }
    return o;
}

int offload_ask(nq_offload_t *o, offload_item_t *it)
{
    pthread_mutex_lock(&o->mu);
    int ok = !o->stopped;
    if (ok) {
        queue_push(&o->todo, it);
        pthread_cond_signal(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    if (!ok)
        o->ops.free_item(it);
    return ok ? 0 : -1;
}

offload_item_t *offload_take(nq_offload_t *o)
{
    pthread_mutex_lock(&o->mu);
    offload_item_t *it = queue_pop(&o->done);
    pthread_mutex_unlock(&o->mu);
    return it;
}

void offload_stop(nq_offload_t *o)
{
    pthread_mutex_lock(&o->mu);
    int joined = o->stopped;
    o->stopped = 1;
    atomic_store(&o->stop, 1);
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    if (joined)
        return;
    pthread_join(o->th, NULL);
    queue_free(o, &o->todo);
    queue_free(o, &o->done);
}

void offload_destroy(nq_offload_t **op)
{
    nq_offload_t *o = *op;
    if (!o)
        return;
    offload_stop(o);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
    *op = NULL;
}
