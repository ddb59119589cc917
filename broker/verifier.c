/* Solutions checked and stored on a thread of their own, so that the broker's loop never waits for
   one (verifier.h). */
#include "verifier.h"
#include "errf.h"
#include "solstore.h"
#include "verify.h"
#include "wake.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    nq_verify_t v;
    struct item *next;
} item_t;

typedef struct { item_t *head, *tail; } queue_t;

struct nq_verifier {
    pthread_mutex_t mu;                /* guards the queues and `stopped` */
    pthread_cond_t cv;                 /* a request came, or stop */
    pthread_t th;
    int stop, stopped;
    queue_t todo, done;
    void *ctx;
    char wake_ep[128];
    char db_path[4096];
    sqlite3 *db;                       /* read-only, this thread's: earlier solutions (solstore_v1) */
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
        free(it->v.cols);
        free(it);
    }
}

static void check(nq_verifier_t *vr, nq_verify_t *v)
{
    nq_clash_t c;
    v->ok = 0;
    if (verify_perm(v->cols, v->n, &c) != 0) {
        nq_errf(v->why, sizeof v->why, "solution fails verification: rows %llu and %llu share a %s",
                (unsigned long long)c.row_a, (unsigned long long)c.row_b, c.what);
        return;
    }
    if (!vr->db && sqlite3_open_v2(vr->db_path, &vr->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(vr->db);          /* then no lookup of solutions stored before the hash changed */
        vr->db = NULL;
    }
    if (vr->db)
        sqlite3_busy_timeout(vr->db, 2000);
    if (solstore_save(vr->db, vr->db_path, v->job, v->cols, v->n, v->hash, sizeof v->hash, v->path,
                      sizeof v->path, v->why, sizeof v->why) == 0)
        v->ok = 1;
}

static void *verifier_main(void *arg)
{
    nq_verifier_t *vr = arg;
    pthread_mutex_lock(&vr->mu);
    for (;;) {
        while (!vr->todo.head && !vr->stop)
            pthread_cond_wait(&vr->cv, &vr->mu);
        if (vr->stop)
            break;
        item_t *it = queue_pop(&vr->todo);
        pthread_mutex_unlock(&vr->mu);
        check(vr, &it->v);
        pthread_mutex_lock(&vr->mu);
        queue_push(&vr->done, it);
        pthread_mutex_unlock(&vr->mu);
        wake_poke(vr->ctx, vr->wake_ep);   /* outside the lock: the loop may be taking verdicts */
        pthread_mutex_lock(&vr->mu);
    }
    pthread_mutex_unlock(&vr->mu);
    sqlite3_close(vr->db);
    return NULL;
}

nq_verifier_t *verifier_new(void *ctx, const char *wake_ep, const char *db_path, char *err, size_t errlen)
{
    nq_verifier_t *vr = calloc(1, sizeof *vr);
    if (!vr)
        return nq_errf(err, errlen, "out of memory"), NULL;
    vr->ctx = ctx;
    snprintf(vr->wake_ep, sizeof vr->wake_ep, "%s", wake_ep);
    snprintf(vr->db_path, sizeof vr->db_path, "%s", db_path);
    pthread_mutex_init(&vr->mu, NULL);
    pthread_cond_init(&vr->cv, NULL);
    int rc = pthread_create(&vr->th, NULL, verifier_main, vr);
    if (rc != 0) {
        pthread_cond_destroy(&vr->cv);
        pthread_mutex_destroy(&vr->mu);
        free(vr);
        nq_errf(err, errlen, "cannot start the thread that checks solutions: %s", strerror(rc));
        return NULL;
    }
    return vr;
}

int verifier_ask(nq_verifier_t *vr, nq_verify_t *r)
{
    item_t *it = calloc(1, sizeof *it);
    if (!it) {
        free(r->cols);
        return -1;
    }
    it->v = *r;
    pthread_mutex_lock(&vr->mu);
    int ok = !vr->stopped;
    if (ok) {
        queue_push(&vr->todo, it);
        pthread_cond_signal(&vr->cv);
    }
    pthread_mutex_unlock(&vr->mu);
    if (!ok) {
        free(it->v.cols);
        free(it);
    }
    return ok ? 0 : -1;
}

int verifier_take(nq_verifier_t *vr, nq_verify_t *out)
{
    pthread_mutex_lock(&vr->mu);
    item_t *it = queue_pop(&vr->done);
    pthread_mutex_unlock(&vr->mu);
    if (!it)
        return 0;
    *out = it->v;
    free(it);
    return 1;
}

void verifier_destroy(nq_verifier_t **vp)
{
    nq_verifier_t *vr = *vp;
    if (!vr)
        return;
    pthread_mutex_lock(&vr->mu);
    vr->stop = vr->stopped = 1;
    pthread_cond_signal(&vr->cv);
    pthread_mutex_unlock(&vr->mu);
    pthread_join(vr->th, NULL);       /* a check under way finishes first: seconds at most */
    queue_free(&vr->todo);
    queue_free(&vr->done);
    pthread_cond_destroy(&vr->cv);
    pthread_mutex_destroy(&vr->mu);
    free(vr);
    *vp = NULL;
}
