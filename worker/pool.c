/*
 * The compute threads. Tasks wait in a queue; each thread takes one, runs
 * it to the end (or until cancelled), puts it on the done list and pokes the
 * socket loop through an inproc PUSH socket of its own (ZeroMQ sockets are
 * not shared between threads).
 *
 * With a GPU, a thread runs a count task's host part and hands the rest to the GPU engine; the
 * task stays on the running list (heartbeats name it) until the engine's callback moves it to
 * the done list and pokes the loop (wake_poke: the engine's thread has no socket of its own).
 */
#include "wake.h"
#include "worker_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

struct nq_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    nq_wtask_t *queue, *queue_tail, *running, *done;
    int stop;
    void *ctx;
    char notify_ep[128];
    uint32_t nthreads;
    pthread_t *threads;
    nq_gpu_t *gpu;
    uint32_t gpu_held;                  /* tasks the GPU engine holds */
    pthread_cond_t gpu_idle;            /* gpu_held reached 0 */
};

static void list_remove(nq_wtask_t **head, nq_wtask_t *t)
{
    for (nq_wtask_t **pp = head; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

/* The GPU engine's end of a task: to the done list, the loop poked. */
static void pool_gpu_done(void *ud, nq_wtask_t *t)
{
    nq_pool_t *p = ud;
    pthread_mutex_lock(&p->lock);
    list_remove(&p->running, t);
    int first = p->done == NULL;        /* one poke wakes the loop for all that follow it */
    t->next = p->done;
    p->done = t;
    pthread_mutex_unlock(&p->lock);
    if (first)
        wake_poke(p->ctx, p->notify_ep);
    pthread_mutex_lock(&p->lock);       /* last: pool_destroy waits for it before it frees p */
    if (--p->gpu_held == 0)
        pthread_cond_broadcast(&p->gpu_idle);
    pthread_mutex_unlock(&p->lock);
}

static void *pool_thread(void *arg)
{
    nq_pool_t *p = arg;
    void *push = zmq_socket(p->ctx, ZMQ_PUSH);
    int linger = 0;
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(push, p->notify_ep);
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        nq_wtask_t *t = p->queue;
        if (!t) {
            pthread_cond_wait(&p->work, &p->lock);
            continue;
        }
        p->queue = t->next;
        if (!p->queue)
            p->queue_tail = NULL;
        t->next = p->running;
        p->running = t;
        if (p->gpu && t->t.kind == NQ_KIND_COUNT) {
            p->gpu_held++;              /* queued in the engine: its progress moves with its launches */
            pthread_mutex_unlock(&p->lock);
            task_run_gpu(t, p->gpu, pool_gpu_done, p);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        /* started: the broker counts a lease stalled when its progress has not moved since it
           was sent, and a queued task reports 0 (leases.c, peer_release_stalled) */
        atomic_store_explicit(&t->progress, 1, memory_order_relaxed);
        pthread_mutex_unlock(&p->lock);
        task_run(t);
        pthread_mutex_lock(&p->lock);
        list_remove(&p->running, t);
        t->next = p->done;
        p->done = t;
        zmq_send(push, "", 0, ZMQ_DONTWAIT);
    }
    pthread_mutex_unlock(&p->lock);
    zmq_close(push);
    return NULL;
}

nq_pool_t *pool_new(void *ctx, uint32_t threads, const char *notify_ep, nq_gpu_t *gpu, char *err,
                    size_t errlen)
{
    nq_pool_t *p = calloc(1, sizeof *p);
    if (!p || !(p->threads = calloc(threads, sizeof *p->threads))) {
        free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->gpu_idle, NULL);
    p->gpu = gpu;
    p->ctx = ctx;
    snprintf(p->notify_ep, sizeof p->notify_ep, "%s", notify_ep);
    for (; p->nthreads < threads; p->nthreads++)
        if (pthread_create(&p->threads[p->nthreads], NULL, pool_thread, p) != 0) {
            snprintf(err, errlen, "cannot start compute thread %u", p->nthreads);
            pool_destroy(&p);
            return NULL;
        }
    return p;
}

static void free_list(nq_wtask_t *t)
{
    while (t) {
        nq_wtask_t *n = t->next;
        task_free(t);
        t = n;
    }
}

void pool_destroy(nq_pool_t **pp)
{
    nq_pool_t *p = *pp;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;                        /* first: no thread starts another task */
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    pool_cancel_all(p);
    pthread_mutex_lock(&p->lock);
    while (p->gpu_held > 0)             /* cancelled: each ends within a launch */
        pthread_cond_wait(&p->gpu_idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free_list(p->queue);
    free_list(p->running);
    free_list(p->done);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->gpu_idle);
    free(p->threads);
    free(p);
    *pp = NULL;
}

void pool_submit(nq_pool_t *p, nq_wtask_t *t)
{
    pthread_mutex_lock(&p->lock);
    t->next = NULL;
    if (p->queue_tail)
        p->queue_tail->next = t;
    else
        p->queue = t;
    p->queue_tail = t;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

nq_wtask_t *pool_take_done(nq_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    nq_wtask_t *d = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->lock);
    return d;
}

/* The tasks a CANCEL names: every one of the job (lease 0), or that one lease of it. */
static int cancel_hits(const nq_wtask_t *t, uint64_t job, uint64_t lease)
{
    return t->t.job == job && (lease == 0 || t->t.lease == lease);
}

void pool_cancel(nq_pool_t *p, uint64_t job, uint64_t lease)
{
    pthread_mutex_lock(&p->lock);
    for (nq_wtask_t *t = p->running; t; t = t->next)
        if (cancel_hits(t, job, lease))
            atomic_store(&t->cancel, 1);
    nq_wtask_t *keep = NULL, *tail = NULL;
    for (nq_wtask_t *t = p->queue, *n; t; t = n) {
        n = t->next;
        t->next = NULL;
        if (cancel_hits(t, job, lease)) {
            task_free(t);
            continue;
        }
        if (tail) tail->next = t; else keep = t;
        tail = t;
    }
    p->queue = keep;
    p->queue_tail = tail;
    pthread_mutex_unlock(&p->lock);
}

nq_wtask_t *pool_take_queued(nq_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    nq_wtask_t *q = p->queue;
    p->queue = p->queue_tail = NULL;
    pthread_mutex_unlock(&p->lock);
    return q;
}

void pool_cancel_all(nq_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    for (nq_wtask_t *t = p->running; t; t = t->next)
        atomic_store(&t->cancel, 1);
    pthread_mutex_unlock(&p->lock);
}

uint32_t pool_busy(nq_pool_t *p)
{
    uint32_t n = 0;
    pthread_mutex_lock(&p->lock);
    for (nq_wtask_t *t = p->queue; t; t = t->next) n++;
    for (nq_wtask_t *t = p->running; t; t = t->next) n++;
    pthread_mutex_unlock(&p->lock);
    return n;
}

uint32_t task_items(const nq_wtask_t *list, nq_hb_item_t *items, uint32_t n, uint32_t max)
{
    for (const nq_wtask_t *t = list; t && n < max; t = t->next, n++) {
        items[n].lease = t->t.lease;
        items[n].progress = atomic_load_explicit(&t->progress, memory_order_relaxed);
    }
    return n;
}

uint32_t pool_progress(nq_pool_t *p, nq_hb_item_t *items, uint32_t max)
{
    pthread_mutex_lock(&p->lock);
    uint32_t n = task_items(p->running, items, 0, max);
    n = task_items(p->queue, items, n, max);   /* not started: progress 0 */
    n = task_items(p->done, items, n, max);    /* finished, not yet sent */
    pthread_mutex_unlock(&p->lock);
    return n;
}
