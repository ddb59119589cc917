/*
 * The compute threads. Tasks wait in a queue; each thread takes one, runs
 * it to the end (or until cancelled), puts it on the done list and pokes the
 * socket loop through an inproc PUSH socket of its own (ZeroMQ sockets are
 * not shared between threads).
 *
 * With a GPU, a thread that feeds it takes the oldest count task (the largest, in the broker's
 * order) and hands it to the GPU engine, which queues its GPU part and then runs its host part on
 * the thread; the task stays on the running list (heartbeats name it) until the engine's callback
 * moves it to the done list and pokes the loop (wake_poke: the engine's thread has no socket of
 * its own). The other threads count the newest tasks on the CPU while the GPU has enough to do,
 * and the GPU takes copies of those when it has nothing else (feed.c says which, when).
 */
#include "clock.h"
#include "wake.h"
#include "worker_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define FEED_S_WEIGHT 0.05      /* a feeder's seconds a shard, smoothed over ~20 shards */
#define WAIT_NS 20000000L       /* a waiting thread looks again (the GPU's hold drains meanwhile) */

struct nq_pool {
    pthread_mutex_t lock;
    pthread_cond_t work;
    nq_wtask_t *queue, *queue_tail, *running, *done;
    int stop;
    void *ctx;
    char notify_ep[128];
    uint32_t nthreads;
    pthread_t *threads;
    nq_gpu_t *gpus[NQ_GPU_MAX_DEVICES];
    uint32_t ngpu;                      /* 0: a CPU worker */
    int gpu_only;
    uint32_t gpu_held;                  /* tasks the GPU engines hold (copies included) */
    nq_pool_dev_t dev[NQ_GPU_MAX_DEVICES];
    pthread_cond_t gpu_idle;            /* gpu_held reached 0 */
    uint32_t cpu_running;               /* count tasks on the CPU in a GPU worker */
    double feed_s;                      /* a feeder's seconds a shard, smoothed (0: none yet) */
    nq_pool_stats_t st;
};

static void list_remove(nq_wtask_t **head, nq_wtask_t *t)
{
    for (nq_wtask_t **pp = head; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            return;
        }
}

/* Off the queue (doubly linked: a CPU thread takes from its tail). */
static void queue_unlink(nq_pool_t *p, nq_wtask_t *t)
{
    if (t->prev) t->prev->next = t->next; else p->queue = t->next;
    if (t->next) t->next->prev = t->prev; else p->queue_tail = t->prev;
    t->next = t->prev = NULL;
}

/* To the done list, the loop poked where it was empty (one poke wakes it for all that follow). */
static void to_done(nq_pool_t *p, nq_wtask_t *t, void *push)
{
    int first = p->done == NULL;
    t->next = p->done;
    p->done = t;
    if (!first)
        return;
    if (push)
        zmq_send(push, "", 0, ZMQ_DONTWAIT);
    else
        wake_poke(p->ctx, p->notify_ep);
}

static int result_ok(const nq_wtask_t *t)
{
    return !t->cancelled && t->r.status == NQ_RES_OK;
}

/* A copy ended: the first to end with a result decides; an error or a cancel leaves it to the CPU. */
static void copy_ended(nq_pool_t *p, nq_wtask_t *c)
{
    nq_wtask_t *o = c->orig;
    if (o && result_ok(c)) {
        o->lost = 1;                    /* the CPU's run stops and sends nothing */
        atomic_store(&o->cancel, 1);
        o->copy = NULL;
        c->orig = NULL;
        p->st.copies_won++;
        p->st.gpu++;
        p->dev[c->dev].shards++;
        p->dev[c->dev].nodes += c->r.nodes;
        to_done(p, c, NULL);
        return;
    }
    if (o)
        o->copy = NULL;
    task_free(c);
}

/* Whether device i is failing (or stopping): it takes no more shards. */
static int dev_failing(nq_pool_t *p, uint32_t i)
{
    nq_gpu_load_t l;
    gpu_load(p->gpus[i], &l);
    return l.failing;
}

/* A shard that ended as an error because its device failed, while another device goes on: back to
   the head of the queue (the oldest, the largest), to be counted again by whichever takes it, a
   device or a CPU thread. The engine never ends a shard of a failing device with a partial count,
   so nothing of it was sent, and the recount is its only result. */
static int requeue_lost(nq_pool_t *p, nq_wtask_t *t)
{
    if (t->cancelled || t->r.status == NQ_RES_OK || atomic_load(&t->cancel) || p->stop ||
        !dev_failing(p, (uint32_t)t->dev))
        return 0;
    uint32_t other = 0;
    for (uint32_t i = 0; i < p->ngpu && !other; i++)
        other = (int)i != t->dev && !dev_failing(p, i);
    if (!other)
        return 0;                       /* the last device: its shards end as errors (worker.c) */
    list_remove(&p->running, t);
    memset(&t->r, 0, sizeof t->r);
    t->gpu_done = NULL;
    atomic_store_explicit(&t->progress, 0, memory_order_relaxed);
    t->prev = NULL;
    t->next = p->queue;
    if (p->queue)
        p->queue->prev = t;
    else
        p->queue_tail = t;
    p->queue = t;
    p->st.recounts++;
    return 1;
}

/* The GPU engine's end of a task: to the done list, the loop poked; or, its device lost, back to
   the queue. */
static void pool_gpu_done(void *ud, nq_wtask_t *t)
{
    nq_pool_t *p = ud;
    pthread_mutex_lock(&p->lock);
    p->dev[t->dev].held--;
    if (t->is_copy) {                   /* a copy of a CPU count (pool_copy) */
        copy_ended(p, t);
    } else if (!requeue_lost(p, t)) {
        list_remove(&p->running, t);
        p->st.gpu += result_ok(t);
        if (result_ok(t)) {
            p->dev[t->dev].shards++;
            p->dev[t->dev].nodes += t->r.nodes;
        }
        to_done(p, t, NULL);
    }
    if (--p->gpu_held == 0)             /* last: pool_destroy waits for it before it frees p */
        pthread_cond_broadcast(&p->gpu_idle);
    pthread_cond_signal(&p->work);      /* the GPU holds less: a waiting thread may feed it */
    pthread_mutex_unlock(&p->lock);
}

/* The broker asked for the CPU kernels' count (NQ_TASK_CPU): no GPU runs it, nor a copy of it. */
static int task_wants_cpu(const nq_wtask_t *t)
{
    return t->t.kind == NQ_KIND_COUNT && strcmp(t->t.algo, NQ_TASK_CPU) == 0;
}

/* A count the CPU runs that may get a copy on the GPU (one copy a task: copied stays set), or NULL. */
static nq_wtask_t *copy_candidate(const nq_pool_t *p)
{
    nq_wtask_t *o = p->running;
    while (o && !(o->on_cpu && !o->copied && !o->lost && !atomic_load(&o->cancel) && !task_wants_cpu(o)))
        o = o->next;
    return o;
}

/* A copy for the GPU of a count the CPU runs without one (NULL: none, or no memory). */
static nq_wtask_t *pool_copy(nq_pool_t *p)
{
    nq_wtask_t *o = copy_candidate(p);
    nq_wtask_t *c = o ? calloc(1, sizeof *c) : NULL;
    if (!c)
        return NULL;
    c->t = o->t;
    memcpy(c->spec, o->spec, o->t.spec_len);
    c->t.spec = c->spec;
    c->is_copy = o->copied = 1;         /* one copy a task */
    c->orig = o;
    o->copy = c;
    p->st.copies++;
    return c;
}

static void feed_fill(nq_pool_t *p, nq_feed_t *f);

/* What this thread does next, and with which task (taken off the queue, on the running list). */
static int pool_pick(nq_pool_t *p, nq_wtask_t **tp)
{
    nq_feed_t f;
    *tp = NULL;
    feed_fill(p, &f);
    int how = feed_next(&f, p->cpu_running, p->queue != NULL, p->ngpu && copy_candidate(p) != NULL);
    nq_wtask_t *t = NULL;
    if ((how == FEED_GPU || how == FEED_COPY) && f.hungriest < 0)
        how = FEED_WAIT;                /* every device failing: feed_next sees it at the next look */
    if (how == FEED_GPU && (p->queue->t.kind != NQ_KIND_COUNT || task_wants_cpu(p->queue)))
        how = FEED_CPU;                 /* no GPU path (solve, enumerate), or the CPU's count wanted */
    if (how == FEED_GPU)
        t = p->queue;
    else if (how == FEED_CPU)
        t = p->ngpu && !f.failed ? p->queue_tail : p->queue;   /* beside a GPU: the newest, the smallest */
    else if (how == FEED_COPY && !(t = pool_copy(p)))
        how = FEED_WAIT;
    if (t && how != FEED_COPY) {
        queue_unlink(p, t);
        t->next = p->running;
        p->running = t;
    }
    if (t && (how == FEED_GPU || how == FEED_COPY))
        t->dev = f.hungriest;
    *tp = t;
    return how;
}

/* A count task (or a copy) to the GPU engine: its GPU part queued, its host part on this thread. */
static void run_gpu(nq_pool_t *p, nq_wtask_t *t)
{
    p->gpu_held++;                      /* queued in the engine: its progress moves with its launches */
    p->dev[t->dev].held++;
    pthread_mutex_unlock(&p->lock);
    double t0 = nq_mono();
    task_run_gpu(t, p->gpus[t->dev], pool_gpu_done, p);
    double s = nq_mono() - t0;
    pthread_mutex_lock(&p->lock);
    p->feed_s = p->feed_s > 0 ? (1 - FEED_S_WEIGHT) * p->feed_s + FEED_S_WEIGHT * s : s;
}

/* A task on this thread's CPU. A count in a GPU worker may have a copy on the GPU: the first to
   end decides (copy_ended is the copy's side). */
static void run_cpu(nq_pool_t *p, nq_wtask_t *t, void *push)
{
    int counted = p->ngpu && t->t.kind == NQ_KIND_COUNT;
    t->on_cpu = counted;
    p->cpu_running += counted;
    /* started: the broker counts a lease stalled when its progress has not moved since it
       was sent, and a queued task reports 0 (peers.c, peer_release_stalled) */
    atomic_store_explicit(&t->progress, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
    task_run(t);
    pthread_mutex_lock(&p->lock);
    p->cpu_running -= counted;
    t->on_cpu = 0;
    if (t->lost)
        t->cancelled = 1;               /* the copy's result went instead */
    if (t->copy) {                      /* this one ended first (or was cancelled): the copy stops */
        atomic_store(&t->copy->cancel, 1);
        t->copy->orig = NULL;
        t->copy = NULL;
    }
    p->st.cpu += counted && result_ok(t);
    list_remove(&p->running, t);
    to_done(p, t, push);
}

/* Waits for work; beside a GPU, with tasks queued or counted on the CPU, only a little: what the
   GPU holds drains meanwhile, and the thread may feed it or copy a CPU count then. */
static void pool_wait(nq_pool_t *p)
{
    if (!p->ngpu || (!p->queue && !p->cpu_running)) {
        pthread_cond_wait(&p->work, &p->lock);   /* pool_submit and pool_gpu_done signal */
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WAIT_NS;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->work, &p->lock, &ts);
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
        nq_wtask_t *t;
        int how = pool_pick(p, &t);
        if (how == FEED_WAIT)
            pool_wait(p);
        else if (how == FEED_CPU)
            run_cpu(p, t, push);
        else
            run_gpu(p, t);
    }
    pthread_mutex_unlock(&p->lock);
    zmq_close(push);
    return NULL;
}

nq_pool_t *pool_new(void *ctx, uint32_t threads, const char *notify_ep, nq_gpu_t *const *gpus,
                    uint32_t ngpu, int gpu_only, char *err, size_t errlen)
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
    p->ngpu = ngpu < NQ_GPU_MAX_DEVICES ? ngpu : NQ_GPU_MAX_DEVICES;
    for (uint32_t i = 0; i < p->ngpu; i++)
        p->gpus[i] = gpus[i];
    p->gpu_only = gpu_only;
    p->ctx = ctx;
    snprintf(p->notify_ep, sizeof p->notify_ep, "%s", notify_ep);
    pthread_mutex_lock(&p->lock);       /* the threads read nthreads (pool_feed) */
    for (; p->nthreads < threads; p->nthreads++)
        if (pthread_create(&p->threads[p->nthreads], NULL, pool_thread, p) != 0) {
            pthread_mutex_unlock(&p->lock);
            snprintf(err, errlen, "cannot start compute thread %u", p->nthreads);
            pool_destroy(&p);
            return NULL;
        }
    pthread_mutex_unlock(&p->lock);
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
    t->prev = p->queue_tail;
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

/* A running task stops at its next poll, and so does its copy on the GPU. */
static void cancel_running(nq_wtask_t *t)
{
    atomic_store(&t->cancel, 1);
    if (t->copy)
        atomic_store(&t->copy->cancel, 1);
}

void pool_cancel(nq_pool_t *p, uint64_t job, uint64_t lease)
{
    pthread_mutex_lock(&p->lock);
    for (nq_wtask_t *t = p->running; t; t = t->next)
        if (cancel_hits(t, job, lease))
            cancel_running(t);
    for (nq_wtask_t *t = p->queue, *n; t; t = n) {
        n = t->next;
        if (cancel_hits(t, job, lease)) {
            queue_unlink(p, t);
            task_free(t);
        }
    }
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
        cancel_running(t);
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

void pool_stats(nq_pool_t *p, nq_pool_stats_t *st)
{
    pthread_mutex_lock(&p->lock);
    *st = p->st;
    pthread_mutex_unlock(&p->lock);
}

/* With p->lock held. gpu_load and gpu_failed take the engine's lock: the pool's lock is always
   taken first (the engine calls pool_gpu_done holding none of its own). */
static void feed_fill(nq_pool_t *p, nq_feed_t *f)
{
    char err[8];
    memset(f, 0, sizeof *f);
    f->threads = p->nthreads;
    f->gpu = p->ngpu > 0;
    f->gpu_only = p->gpu_only;
    f->feed_s = p->feed_s;
    f->ndev = p->ngpu;
    for (uint32_t i = 0; i < p->ngpu; i++) {
        gpu_load(p->gpus[i], &f->dev[i]);
        f->dev[i].failing |= gpu_failed(p->gpus[i], err, sizeof err);
    }
    feed_combine(f);
}

void pool_dev_stats(nq_pool_t *p, uint32_t i, nq_pool_dev_t *d)
{
    memset(d, 0, sizeof *d);
    if (i >= p->ngpu)
        return;
    pthread_mutex_lock(&p->lock);
    *d = p->dev[i];
    d->failed = dev_failing(p, i);
    pthread_mutex_unlock(&p->lock);
}

void pool_feed(nq_pool_t *p, nq_feed_t *f)
{
    pthread_mutex_lock(&p->lock);
    feed_fill(p, f);
    pthread_mutex_unlock(&p->lock);
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
