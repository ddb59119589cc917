/*
 * Deadlines for HTTP connections: trickling a byte at a time defeats an inactivity
 * timeout, so a connection must deliver a complete request head within HX_REQUEST_MS of
 * being accepted (or of its previous response, for keep-alive), and take its response
 * within HX_RESPONSE_MS. A thread shuts down the socket of a connection past its deadline;
 * libmicrohttpd then sees EOF, closes it and frees its slot (logged as http.slow_client).
 */
#include "http_reaper.h"

#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

typedef struct {
    const void *c;              /* NULL: free slot */
    int fd;
    int cut;                    /* shut down already */
    int64_t deadline_ms;
} hx_conn_t;

struct http_reaper {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    /* Slots are taken and freed by MHD's connection callbacks (MHD tells us a connection is
       closed before it closes its socket, so a tracked fd is still that connection's socket
       while `lock` is held). */
    hx_conn_t conns[HX_CONN_LIMIT];
    int stopping, started;
    pthread_t thread;
    uint64_t cut_total, cut_logged;
    int64_t cut_logged_ms;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static hx_conn_t *slot(http_reaper_t *r, const void *c)
{
    for (size_t i = 0; i < HX_CONN_LIMIT; i++)
        if (r->conns[i].c == c)
            return &r->conns[i];
    return NULL;
}

void http_reaper_open(http_reaper_t *r, const void *c, int fd)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, NULL);
    if (k) {
        k->c = c;
        k->fd = fd;
        k->cut = 0;
        k->deadline_ms = mono_ms() + HX_REQUEST_MS;
    }
    pthread_mutex_unlock(&r->lock);
}

void http_reaper_close(http_reaper_t *r, const void *c)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, c);
    if (k)
        k->c = NULL;
    pthread_mutex_unlock(&r->lock);
}

void http_reaper_deadline(http_reaper_t *r, const void *c, int64_t ms)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, c);
    if (k)
        k->deadline_ms = mono_ms() + ms;
    pthread_mutex_unlock(&r->lock);
}

static void reap(http_reaper_t *r, int64_t now)
{
    for (size_t i = 0; i < HX_CONN_LIMIT; i++) {
        hx_conn_t *k = &r->conns[i];
        if (k->c && !k->cut && now > k->deadline_ms) {
            shutdown(k->fd, SHUT_RDWR);   /* MHD sees EOF, closes it, frees the slot */
            k->cut = 1;
            r->cut_total++;
        }
    }
    if (r->cut_total != r->cut_logged && (r->cut_logged == 0 || now - r->cut_logged_ms >= 10000)) {
        uint64_t n = r->cut_total - r->cut_logged;
        r->cut_logged = r->cut_total;
        r->cut_logged_ms = now;
        nq_log(NQ_LOG_WARN, "http.slow_client", "closed=%llu total=%llu reason=\"no complete "
               "request within %d ms\"", (unsigned long long)n, (unsigned long long)r->cut_total,
               HX_REQUEST_MS);
    }
}

static void *reaper_main(void *arg)
{
    http_reaper_t *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;   /* deadlines are seconds: 200 ms is fine enough */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->cv, &r->lock, &until);
        if (!r->stopping)
            reap(r, mono_ms());
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

http_reaper_t *http_reaper_new(void)
{
    http_reaper_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cv, NULL);
    return r;
}

int http_reaper_start(http_reaper_t *r)
{
    r->started = pthread_create(&r->thread, NULL, reaper_main, r) == 0;
    if (!r->started)
        nq_log(NQ_LOG_WARN, "http.no_reaper", "reason=\"cannot start a thread\"");
    return r->started ? 0 : -1;
}

void http_reaper_stop(http_reaper_t *r)
{
    if (!r || !r->started)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    r->started = 0;
}

void http_reaper_destroy(http_reaper_t **rp)
{
    http_reaper_t *r = *rp;
    if (!r)
        return;
    http_reaper_stop(r);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->lock);
    free(r);
    *rp = NULL;
}
