/*
 * Deadlines for HTTP connections, and who goes first when the listener is full.
 *
 * Trickling a byte at a time defeats an inactivity timeout, so a connection must deliver a
 * complete request head within HX_REQUEST_MS of being accepted (or of its previous response,
 * for keep-alive), and take its response within HX_RESPONSE_MS. A thread shuts down the socket
 * of a connection past its deadline; libmicrohttpd then sees EOF, closes it and frees its slot
 * (logged as http.slow_client).
 *
 * Deadlines alone let a client without the token hold every slot: 128 idle connections from
 * four addresses, dialled again as each is cut, made up to half the scrapes that had the token
 * time out. So past HX_CONN_LIMIT - HX_CONN_SPARE open connections, each new one cuts an idle
 * connection (waiting for a request head, complete or not) that has never authenticated (sent
 * a request that passed the token check; with no token, any complete request): the oldest of
 * the host that holds the most such connections. The newcomer is spared. By age alone, a
 * flood that dials fast enough cycles through every slot before a scraper's request is read;
 * by host, a scraper's connection goes only when its host holds as many idle ones as the
 * flood's busiest. Cuts are logged as http.evicted.
 */
#include "http_reaper.h"

#include "log.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A host: an IPv4 address, or an IPv6 /64 (what one machine is usually given, so a client
   cannot pass for many hosts by taking more addresses). A family byte, then the bytes. */
#define HX_HOST_KEY 9

typedef struct {
    uint8_t key[HX_HOST_KEY];
    uint32_t conns;             /* tracked connections from it; 0: a free entry */
    uint32_t idle;              /* ... of them idle, not cut, never authenticated */
} hx_host_t;

typedef struct {
    const void *c;              /* NULL: free slot */
    int fd;
    int cut;                    /* shut down already */
    int busy;                   /* a request head is in and its response not yet out */
    int trusted;                /* a request passed the token check */
    uint32_t host;              /* index in hosts */
    uint64_t seq;               /* order of arrival: the lowest is the oldest */
    int64_t deadline_ms;
} hx_conn_t;

/* What was cut and what of it the log has told, for one reason. */
typedef struct {
    uint64_t total, logged;
    int64_t logged_ms;
} hx_tally_t;

struct http_reaper {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    /* Slots are taken and freed by MHD's connection callbacks (MHD tells us a connection is
       closed before it closes its socket, so a tracked fd is still that connection's socket
       while `lock` is held). */
    hx_conn_t conns[HX_CONN_LIMIT];
    hx_host_t hosts[HX_CONN_LIMIT];     /* one per connection at most */
    uint64_t next_seq;
    int stopping, started;
    pthread_t thread;
    hx_tally_t slow, evicted;
    int64_t request_ms;                /* HX_REQUEST_MS (request_ms_of) */
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

/* The host key of a client address; all zero when it is unknown (those count as one host). */
static void host_key(const struct sockaddr *sa, uint8_t key[HX_HOST_KEY])
{
    memset(key, 0, HX_HOST_KEY);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {   /* an IPv4 client of a dual-stack socket */
            key[0] = 4;
            memcpy(key + 1, a->s6_addr + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a->s6_addr, 8);
        }
    }
}

/* The index of sa's host, counting one more connection; there is always room, as there are
   as many host entries as connection slots. */
static uint32_t host_add(http_reaper_t *r, const struct sockaddr *sa)
{
    uint8_t key[HX_HOST_KEY];
    uint32_t free_at = HX_CONN_LIMIT;
    host_key(sa, key);
    for (uint32_t i = 0; i < HX_CONN_LIMIT; i++) {
        hx_host_t *h = &r->hosts[i];
        if (h->conns && memcmp(h->key, key, HX_HOST_KEY) == 0) {
            h->conns++;
            return i;
        }
        if (!h->conns && free_at == HX_CONN_LIMIT)
            free_at = i;
    }
    memcpy(r->hosts[free_at].key, key, HX_HOST_KEY);
    r->hosts[free_at].conns = 1;
    return free_at;
}

/* What make_room may cut. */
static int idle_untrusted(const hx_conn_t *k)
{
    return k->c && !k->cut && !k->busy && !k->trusted;
}

/* After k changed (state or cut): its host's idle count follows; was = idle_untrusted before. */
static void host_recount(http_reaper_t *r, const hx_conn_t *k, int was)
{
    int now = idle_untrusted(k);
    if (now && !was)
        r->hosts[k->host].idle++;
    else if (was && !now)
        r->hosts[k->host].idle--;
}

static void cut(http_reaper_t *r, hx_conn_t *k, hx_tally_t *why)
{
    int was = idle_untrusted(k);
    shutdown(k->fd, SHUT_RDWR);   /* MHD sees EOF, closes it, frees the slot */
    k->cut = 1;
    why->total++;
    host_recount(r, k, was);
}

/* 1 when a should go before b: its host holds more idle untrusted connections, or as many
   and it is older. */
static int evict_before(const http_reaper_t *r, const hx_conn_t *a, const hx_conn_t *b)
{
    uint32_t na = r->hosts[a->host].idle, nb = r->hosts[b->host].idle;
    return na != nb ? na > nb : a->seq < b->seq;
}

/* Past the soft limit, one idle connection that never authenticated goes (never `keep`, the
   newcomer). One pass over HX_CONN_LIMIT slots per accepted connection. Under `lock`. */
static void make_room(http_reaper_t *r, const hx_conn_t *keep)
{
    size_t open = 0;
    hx_conn_t *victim = NULL;
    for (size_t i = 0; i < HX_CONN_LIMIT; i++) {
        hx_conn_t *k = &r->conns[i];
        if (!k->c || k->cut)
            continue;
        open++;
        if (k != keep && idle_untrusted(k) && (!victim || evict_before(r, k, victim)))
            victim = k;
    }
    if (open > HX_CONN_LIMIT - HX_CONN_SPARE && victim && !r->stopping)
        cut(r, victim, &r->evicted);
}

void http_reaper_open(http_reaper_t *r, const void *c, int fd, const struct sockaddr *client)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, NULL);
    if (k) {
        *k = (hx_conn_t){ .c = c, .fd = fd, .host = host_add(r, client), .seq = r->next_seq++,
                          .deadline_ms = mono_ms() + r->request_ms };
        host_recount(r, k, 0);
        make_room(r, k);
    }
    pthread_mutex_unlock(&r->lock);
}

void http_reaper_close(http_reaper_t *r, const void *c)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, c);
    if (k) {
        int was = idle_untrusted(k);
        k->c = NULL;
        host_recount(r, k, was);
        r->hosts[k->host].conns--;
    }
    pthread_mutex_unlock(&r->lock);
}

/* busy: 1 a request head is in, 0 a response went out, -1 unchanged; trust: 1 sets it. */
static void mark(http_reaper_t *r, const void *c, int busy, int trust)
{
    pthread_mutex_lock(&r->lock);
    hx_conn_t *k = slot(r, c);
    if (k) {
        int was = idle_untrusted(k);
        if (busy >= 0) {
            k->busy = busy;
            k->deadline_ms = mono_ms() + (busy ? HX_RESPONSE_MS : r->request_ms);
        }
        if (trust)
            k->trusted = 1;
        host_recount(r, k, was);
    }
    pthread_mutex_unlock(&r->lock);
}

void http_reaper_busy(http_reaper_t *r, const void *c) { mark(r, c, 1, 0); }
void http_reaper_idle(http_reaper_t *r, const void *c) { mark(r, c, 0, 0); }
void http_reaper_trust(http_reaper_t *r, const void *c) { mark(r, c, -1, 1); }

void http_reaper_counts(http_reaper_t *r, uint64_t *slow, uint64_t *evicted)
{
    pthread_mutex_lock(&r->lock);
    *slow = r->slow.total;
    *evicted = r->evicted.total;
    pthread_mutex_unlock(&r->lock);
}

/* One line per reason and 10 s at most: a flood must not flood the log too. */
static void tally_log(hx_tally_t *t, int64_t now, const char *event, const char *reason)
{
    if (t->total == t->logged || (t->logged != 0 && now - t->logged_ms < 10000))
        return;
    uint64_t n = t->total - t->logged;
    t->logged = t->total;
    t->logged_ms = now;
    nq_log(NQ_LOG_WARN, event, "closed=%llu total=%llu reason=\"%s\"", (unsigned long long)n,
           (unsigned long long)t->total, reason);
}

static void reap(http_reaper_t *r, int64_t now)
{
    for (size_t i = 0; i < HX_CONN_LIMIT; i++) {
        hx_conn_t *k = &r->conns[i];
        if (k->c && !k->cut && now > k->deadline_ms)
            cut(r, k, &r->slow);
    }
    tally_log(&r->slow, now, "http.slow_client", "no complete request or response in time");
    tally_log(&r->evicted, now, "http.evicted", "the listener was full: idle connections that "
              "never authenticated go first");
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

/* HX_REQUEST_MS, or NQ_FAULT_HTTP_REQUEST_MS in a test build: a test that must tell the per-address
   cap and eviction from the deadline turns the deadline off, so no clock decides what it sees. */
static int64_t request_ms_of(void)
{
#ifdef NQ_TEST_FAULTS
    const char *v = getenv("NQ_FAULT_HTTP_REQUEST_MS");
    if (v && atoll(v) > 0)
        return atoll(v);
#endif
    return HX_REQUEST_MS;
}

http_reaper_t *http_reaper_new(void)
{
    http_reaper_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->request_ms = request_ms_of();
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
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;             /* make_room cuts nothing from now on either */
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->lock);
    if (r->started)
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
