/* Shard lists built on a thread of their own, so that the broker's loop never waits for one (lister.h). */
#include "lister.h"
#include "clock.h"
#include "errf.h"
#include "wake.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    nq_lister_req_t req;
    nq_lister_done_t done;
    struct item *next;
} item_t;

typedef struct { item_t *head, *tail; } queue_t;

struct nq_lister {
    pthread_mutex_t mu;                /* guards the two queues and `stopped` */
    pthread_cond_t cv;                 /* a request came, or stop */
    pthread_t th;
    atomic_int stop;                   /* read by the list being built at every step */
    int stopped;                       /* joined: asks are refused */
    queue_t todo, done;
    void *ctx;
    char wake_ep[128];
};

static void queue_push(queue_t *q, item_t *it)
{
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
}

static item_t *queue_pop(queue_t *q)
{
    item_t *it = q->head;
    if (it && !(q->head = it->next))
        q->tail = NULL;
    return it;
}

static void queue_free(queue_t *q)
{
    for (item_t *it; (it = queue_pop(q));) {
        shards_destroy(&it->done.list);
        free(it);
    }
}

static void build(nq_lister_t *l, item_t *it)
{
    const nq_lister_req_t *r = &it->req;
    nq_shards_limits_t lim = { .max_shards = r->max_shards, .max_steps = r->max_steps, .stop = &l->stop,
                               .order = r->order };
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

static void *lister_main(void *arg)
{
    nq_lister_t *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->todo.head && !atomic_load(&l->stop))
            pthread_cond_wait(&l->cv, &l->mu);
        if (atomic_load(&l->stop))
            break;
        item_t *it = queue_pop(&l->todo);
        pthread_mutex_unlock(&l->mu);
        build(l, it);
        pthread_mutex_lock(&l->mu);
        queue_push(&l->done, it);
        pthread_mutex_unlock(&l->mu);
        wake_poke(l->ctx, l->wake_ep);  /* outside the lock: the loop may be taking answers */
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

nq_lister_t *lister_new(void *ctx, const char *wake_ep, char *err, size_t errlen)
{
    nq_lister_t *l = calloc(1, sizeof *l);
    if (!l) {
        nq_errf(err, errlen, "out of memory");
        return NULL;
    }
    l->ctx = ctx;
    snprintf(l->wake_ep, sizeof l->wake_ep, "%s", wake_ep);
    atomic_init(&l->stop, 0);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    int rc = pthread_create(&l->th, NULL, lister_main, l);
    if (rc != 0) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l);
        nq_errf(err, errlen, "cannot start the thread that lists shards: %s", strerror(rc));
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
    pthread_mutex_lock(&l->mu);
    int ok = !l->stopped;
    if (ok) {
        queue_push(&l->todo, it);
        pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    if (!ok)
        free(it);
    return ok ? 0 : -1;
}

int lister_take(nq_lister_t *l, nq_lister_done_t *out)
{
    pthread_mutex_lock(&l->mu);
    item_t *it = queue_pop(&l->done);
    pthread_mutex_unlock(&l->mu);
    if (!it)
        return 0;
    *out = it->done;                    /* the list goes with it */
    free(it);
    return 1;
}

void lister_stop(nq_lister_t *l)
{
    pthread_mutex_lock(&l->mu);
    int joined = l->stopped;
    l->stopped = 1;
    atomic_store(&l->stop, 1);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (joined)
        return;
    pthread_join(l->th, NULL);
    queue_free(&l->todo);
    queue_free(&l->done);
}

void lister_destroy(nq_lister_t **lp)
{
    nq_lister_t *l = *lp;
    if (!l)
        return;
    lister_stop(l);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
    *lp = NULL;
}
