/*
 * Prometheus endpoint of the broker (see metrics.h): address parsing, the
 * text exposition renderer, and the libmicrohttpd glue.
 */
#define _GNU_SOURCE   /* open_memstream */
#include "metrics.h"

#include "errf.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#ifdef NQ_HAVE_MHD
#include <microhttpd.h>
#endif

/* ---- rendering (no HTTP needed) ------------------------------------------------------- */

/* Prometheus floats: Go's ParseFloat syntax, so inf/nan need their own spelling. */
static void put_double(FILE *f, double v)
{
    if (isnan(v))
        fputs("NaN", f);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", f);
    else
        fprintf(f, "%.17g", v);
}

/*
 * Label values escape backslash, double quote and newline (exposition format 0.0.4). They
 * come from the wire (worker ids), so the renderer also keeps the exposition valid UTF-8
 * on its own: every byte that is not part of valid UTF-8, every other control character
 * (C0, DEL, C1) becomes U+FFFD (one per stray byte or control character).
 */
static void put_label_value(FILE *f, const char *s)
{
    static const char repl[] = "\xef\xbf\xbd";   /* U+FFFD REPLACEMENT CHARACTER */
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : nq_utf8_len(s + i, n - i);
        if (c == '\\')
            fputs("\\\\", f);
        else if (c == '"')
            fputs("\\\"", f);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20 || c == 0x7f || k == 0 ||
                 (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
            fputs(repl, f);
        else
            fwrite(s + i, 1, k, f);
        i += k ? k : 1;
    }
}

static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_u64(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
    put_family(f, name, type, help);
    fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

static void put_shards(FILE *f, const nq_metrics_snapshot_t *s)
{
    static const char *const states[6] = {
        "pending", "leased", "done", "failed", "conflict", "cancelled"
    };
    put_family(f, "nq_shards", "gauge", "Shards of all jobs by state.");
    for (int i = 0; i < 6; i++)
        fprintf(f, "nq_shards{state=\"%s\"} %llu\n", states[i],
                (unsigned long long)s->shards_by_state[i]);
}

static void put_commits(FILE *f, const nq_metrics_snapshot_t *s)
{
    /* A summary without quantiles: _sum/_count give the mean over any window. */
    put_family(f, "nq_store_commit_seconds", "summary",
               "Latency of store commits (one commit holds many results).");
    fputs("nq_store_commit_seconds_sum ", f);
    put_double(f, s->commit_seconds_sum);
    fprintf(f, "\nnq_store_commit_seconds_count %llu\n", (unsigned long long)s->commits);
    put_family(f, "nq_store_commit_max_seconds", "gauge",
               "Slowest store commit since the broker started.");
    fputs("nq_store_commit_max_seconds ", f);
    put_double(f, s->commit_seconds_max);
    fputc('\n', f);
}

static void put_workers(FILE *f, const nq_metrics_snapshot_t *s)
{
    put_family(f, "nq_worker_nodes_per_second", "gauge",
               "Search nodes per second reported by each connected worker.");
    for (size_t i = 0; i < s->nworkers; i++) {
        fputs("nq_worker_nodes_per_second{worker=\"", f);
        put_label_value(f, s->workers[i].id);
        fputs("\"} ", f);
        put_double(f, s->workers[i].nodes_per_s);
        fputc('\n', f);
    }
    put_family(f, "nq_worker_leases", "gauge", "Shards leased to each connected worker.");
    for (size_t i = 0; i < s->nworkers; i++) {
        fputs("nq_worker_leases{worker=\"", f);
        put_label_value(f, s->workers[i].id);
        fprintf(f, "\"} %u\n", s->workers[i].leases);
    }
}

char *metrics_render(const nq_metrics_snapshot_t *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    put_family(f, "nq_build_info", "gauge", "Version of the running nq broker.");
    fputs("nq_build_info{version=\"", f);
    put_label_value(f, NQ_VERSION);
    fputs("\"} 1\n", f);
    put_shards(f, s);
    put_u64(f, "nq_results_total", "counter", "Shard results received.", s->results_total);
    put_u64(f, "nq_results_duplicate_total", "counter",
            "Results for a shard that already had an equal result.", s->results_duplicate);
    put_u64(f, "nq_results_conflict_total", "counter",
            "Results that disagreed with the stored result of their shard.", s->results_conflict);
    put_u64(f, "nq_messages_bad_total", "counter",
            "Malformed or unexpected messages dropped.", s->messages_bad);
    put_family(f, "nq_results_per_second", "gauge", "Recent rate of shard results.");
    fputs("nq_results_per_second ", f);
    put_double(f, s->results_per_s);
    fputc('\n', f);
    put_u64(f, "nq_workers_alive", "gauge", "Workers currently connected and alive.",
            s->workers_alive);
    put_u64(f, "nq_jobs_active", "gauge", "Jobs pending or running.", s->jobs_active);
    put_commits(f, s);
    put_workers(f, s);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- address parsing ------------------------------------------------------------------ */

typedef struct {
    struct sockaddr_storage sa;
    int family;
} metrics_addr_t;

static int addr_is_loopback(const metrics_addr_t *a)
{
    if (a->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&a->sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->sa;
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
        return 1;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
}

/* Splits "HOST:PORT" / "[V6]:PORT" into host and port; -1 when the shape is wrong. */
static int addr_split(const char *addr, char *host, size_t hostlen, const char **port)
{
    const char *h = addr, *end;
    if (*addr == '[') {
        h = addr + 1;
        end = strchr(h, ']');
        if (!end || end[1] != ':')
            return -1;
        *port = end + 2;
    } else {
        end = strrchr(addr, ':');
        if (!end || memchr(addr, ':', (size_t)(end - addr)))
            return -1;   /* no port, or an IPv6 address without brackets */
        *port = end + 1;
    }
    size_t n = (size_t)(end - h);
    if (n == 0 || n >= hostlen)
        return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    return 0;
}

static int addr_parse(const char *addr, int allow_remote, metrics_addr_t *out,
                      char *err, size_t errlen)
{
    char host[64];
    const char *port_s;
    uint64_t port;
    memset(out, 0, sizeof *out);
    if (!addr || addr_split(addr, host, sizeof host, &port_s) != 0 ||
        nq_parse_u64(port_s, 0, 65535, &port) != 0) {
        return nq_errf(err, errlen, "metrics address must be HOST:PORT, e.g. 127.0.0.1:9555 or "
                       "[::1]:9555, with PORT from 0 to 65535 (got '%s')", addr ? addr : "");
    }
    struct sockaddr_in *in = (struct sockaddr_in *)&out->sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->sa;
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
        out->family = in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        out->family = in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
    } else {
        return nq_errf(err, errlen, "metrics host must be an IP address or 'localhost' (got '%s')",
                       host);
    }
    if (!allow_remote && !addr_is_loopback(out)) {
        return nq_errf(err, errlen, "metrics address '%s' is not loopback: the endpoint has no "
                       "authentication, so bind 127.0.0.1 or [::1] (or allow remote explicitly)",
                       addr);
    }
    return 0;
}

/* ---- the snapshot the HTTP thread serves ---------------------------------------------- */

static void snapshot_free(nq_metrics_snapshot_t *s)
{
    for (size_t i = 0; i < s->nworkers; i++)
        free((char *)s->workers[i].id);
    free((nq_metrics_worker_t *)s->workers);
    s->workers = NULL;
    s->nworkers = 0;
}

/* Deep copy (worker ids included); -1 when out of memory, dst then untouched. */
static int snapshot_copy(nq_metrics_snapshot_t *dst, const nq_metrics_snapshot_t *src)
{
    nq_metrics_snapshot_t c = *src;
    nq_metrics_worker_t *w = NULL;
    c.workers = NULL;
    c.nworkers = 0;
    if (src->nworkers) {
        w = calloc(src->nworkers, sizeof *w);
        if (!w)
            return -1;
        c.workers = w;
        for (size_t i = 0; i < src->nworkers; i++, c.nworkers++) {
            w[i] = src->workers[i];
            w[i].id = strdup(src->workers[i].id ? src->workers[i].id : "");
            if (!w[i].id) {
                snapshot_free(&c);
                return -1;
            }
        }
    }
    *dst = c;
    return 0;
}

/* ---- HTTP (libmicrohttpd) ------------------------------------------------------------- */

#ifdef NQ_HAVE_MHD

#if MHD_VERSION < 0x00097002
typedef int mhd_result_t;   /* MHD before 0.9.71 returned int from handlers */
#else
typedef enum MHD_Result mhd_result_t;
#endif

/*
 * Limits that keep one slow or hostile client from starving a scraper (issue 11, item 13:
 * 16 connections trickling a header byte every 5 s used to fill the old limit of 16 and
 * every scrape got an empty reply). A scrape is one small GET that arrives in
 * microseconds, so:
 *   - MX_CONN_LIMIT connections in all (epoll, no FD_SETSIZE cap), MX_PER_IP from one
 *     address: a single host cannot take every slot;
 *   - MX_IDLE_S: a connection silent that long is closed (MHD's inactivity timeout);
 *   - MX_REQUEST_MS: trickling defeats an inactivity timeout, so a connection must
 *     deliver a complete request head within this time of being accepted (or of its
 *     previous response, for keep-alive), and a response must be taken within
 *     MX_RESPONSE_MS; a reaper thread shuts down the socket of a connection past its
 *     deadline, and MHD then closes it and frees the slot;
 *   - MX_MEMORY: a request head larger than about this is refused (431), not buffered;
 *   - MX_THREADS polling threads, so rendering for one client never waits on another.
 * A host that keeps MX_PER_IP connections busy can still starve other clients on that
 * same address (loopback is one address): it can no longer do it by trickling, only by
 * reconnecting non-stop, and it cannot touch clients on other addresses.
 */
#define MX_CONN_LIMIT 128u
#define MX_PER_IP 32u
#define MX_IDLE_S 5u
#define MX_REQUEST_MS 3000
#define MX_RESPONSE_MS 30000
#define MX_MEMORY ((size_t)16 * 1024)
#define MX_THREADS 2u

typedef struct {
    struct MHD_Connection *c;   /* NULL: free slot */
    int fd;
    int cut;                    /* the reaper shut it down already */
    int64_t deadline_ms;
} mx_conn_t;

struct nq_metrics {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    nq_metrics_snapshot_t snap;   /* owned deep copy */
    uint16_t port;
    /* The deadline reaper: slots are taken and freed by MHD's connection callbacks (MHD
     * tells us a connection is closed before it closes its socket, so a tracked fd is
     * always still that connection's socket while conn_lock is held). */
    pthread_mutex_t conn_lock;
    pthread_cond_t conn_cv;
    mx_conn_t conns[MX_CONN_LIMIT];
    int stopping;
    int reaper_started;
    pthread_t reaper;
    uint64_t cut_total, cut_logged;
    int64_t cut_logged_ms;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static mx_conn_t *conn_slot(nq_metrics_t *m, struct MHD_Connection *c)
{
    for (size_t i = 0; i < MX_CONN_LIMIT; i++)
        if (m->conns[i].c == c)
            return &m->conns[i];
    return NULL;
}

/* Sets the deadline of connection C (if tracked) to now + MS. */
static void conn_deadline(nq_metrics_t *m, struct MHD_Connection *c, int64_t ms)
{
    pthread_mutex_lock(&m->conn_lock);
    mx_conn_t *k = conn_slot(m, c);
    if (k)
        k->deadline_ms = mono_ms() + ms;
    pthread_mutex_unlock(&m->conn_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    nq_metrics_t *m = cls;
    (void)socket_context;
    pthread_mutex_lock(&m->conn_lock);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        mx_conn_t *k = conn_slot(m, NULL);
        if (k && ci) {
            k->c = c;
            k->fd = ci->connect_fd;
            k->cut = 0;
            k->deadline_ms = mono_ms() + MX_REQUEST_MS;
        }
    } else {
        mx_conn_t *k = conn_slot(m, c);
        if (k)
            k->c = NULL;
    }
    pthread_mutex_unlock(&m->conn_lock);
}

/* A response went out: a keep-alive connection has MX_REQUEST_MS for its next request. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)con_cls; (void)toe;
    conn_deadline(cls, c, MX_REQUEST_MS);
}

static void *reaper_main(void *arg)
{
    nq_metrics_t *m = arg;
    pthread_mutex_lock(&m->conn_lock);
    while (!m->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&m->conn_cv, &m->conn_lock, &until);
        if (m->stopping)
            break;
        int64_t now = mono_ms();
        for (size_t i = 0; i < MX_CONN_LIMIT; i++) {
            mx_conn_t *k = &m->conns[i];
            if (k->c && !k->cut && now > k->deadline_ms) {
                shutdown(k->fd, SHUT_RDWR);   /* MHD sees EOF, closes it, frees the slot */
                k->cut = 1;
                m->cut_total++;
            }
        }
        if (m->cut_total != m->cut_logged &&
            (m->cut_logged == 0 || now - m->cut_logged_ms >= 10000)) {
            uint64_t n = m->cut_total - m->cut_logged;
            m->cut_logged = m->cut_total;
            m->cut_logged_ms = now;
            nq_log(NQ_LOG_WARN, "metrics.slow_client", "closed=%llu total=%llu reason=\"no "
                   "complete request within %d ms\"", (unsigned long long)n,
                   (unsigned long long)m->cut_total, MX_REQUEST_MS);
        }
    }
    pthread_mutex_unlock(&m->conn_lock);
    return NULL;
}

static mhd_result_t reply(struct MHD_Connection *c, unsigned status, char *body,
                          const char *ctype)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    mhd_result_t ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static mhd_result_t on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version,
                               const char *upload, size_t *upload_size, void **con_cls)
{
    nq_metrics_t *m = cls;
    (void)version; (void)upload; (void)upload_size; (void)con_cls;
    conn_deadline(m, c, MX_RESPONSE_MS);   /* the head arrived: now the answer must go out */
    const char *text = "text/plain; charset=utf-8";
    if (strcmp(url, "/metrics") != 0)
        return reply(c, MHD_HTTP_NOT_FOUND, strdup("not found: try /metrics\n"), text);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("only GET /metrics\n"), text);
    pthread_mutex_lock(&m->lock);
    char *body = metrics_render(&m->snap);
    pthread_mutex_unlock(&m->lock);
    if (!body)
        return MHD_NO;   /* out of memory: MHD closes the connection */
    return reply(c, MHD_HTTP_OK, body, "text/plain; version=0.0.4; charset=utf-8");
}

/*
 * MHD's own diagnostics go through nq's structured log, quoted (they may echo what a
 * client sent) and rate-limited: most are about misbehaving clients, and a client must
 * not be able to flood the broker's log. At most 5 lines per 10 s; the next line that
 * gets through says how many were dropped.
 */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
    static int64_t window_ms;
    static int started;
    static unsigned in_window;
    static unsigned long long dropped;
    char msg[256], q[NQ_LOG_QLEN];
    (void)cls;
    int64_t now = mono_ms();
    pthread_mutex_lock(&lk);
    if (!started || now - window_ms >= 10000) {
        started = 1;
        window_ms = now;
        in_window = 0;
    }
    int show = in_window < 5;
    unsigned long long was_dropped = 0;
    if (show) {
        in_window++;
        was_dropped = dropped;
        dropped = 0;
    } else {
        dropped++;
    }
    pthread_mutex_unlock(&lk);
    if (!show)
        return;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    nq_log(NQ_LOG_WARN, "metrics.http", "msg=%s dropped=%llu", nq_log_qs(q, sizeof q, msg),
           was_dropped);
}

nq_metrics_t *metrics_new_ex(const char *addr, int allow_remote, char *err, size_t errlen)
{
    metrics_addr_t a;
    if (addr_parse(addr, allow_remote, &a, err, errlen) != 0)
        return NULL;
    nq_metrics_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->conn_lock, NULL);
    pthread_cond_init(&m->conn_cv, NULL);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (a.family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* See MX_* above: a scraper every few seconds, never starved by slow clients. */
    errno = 0;
    m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.sa,
                                 MHD_OPTION_THREAD_POOL_SIZE, MX_THREADS,
                                 MHD_OPTION_CONNECTION_LIMIT, MX_CONN_LIMIT,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, MX_PER_IP,
                                 MHD_OPTION_CONNECTION_TIMEOUT, MX_IDLE_S,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, MX_MEMORY,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
                                 MHD_OPTION_END);
    if (m->daemon) {
        if (pthread_create(&m->reaper, NULL, reaper_main, m) == 0)
            m->reaper_started = 1;
        else
            nq_log(NQ_LOG_WARN, "metrics.no_reaper", "reason=\"cannot start a thread\"");
    }
    if (!m->daemon) {
        int e = errno;
        snprintf(err, errlen, "cannot serve metrics on %s: %s", addr,
                 e ? strerror(e) : "libmicrohttpd failed to start");
        pthread_cond_destroy(&m->conn_cv);
        pthread_mutex_destroy(&m->conn_lock);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
    m->port = info ? info->port : 0;
    return m;
}

uint16_t metrics_port(const nq_metrics_t *m)
{
    return m ? m->port : 0;
}

void metrics_update(nq_metrics_t *m, const nq_metrics_snapshot_t *s)
{
    nq_metrics_snapshot_t fresh, old;
    if (!m || !s || snapshot_copy(&fresh, s) != 0)
        return;   /* out of memory: keep serving the previous snapshot */
    pthread_mutex_lock(&m->lock);
    old = m->snap;
    m->snap = fresh;
    pthread_mutex_unlock(&m->lock);
    snapshot_free(&old);
}

void metrics_destroy(nq_metrics_t **mp)
{
    if (!mp || !*mp)
        return;
    nq_metrics_t *m = *mp;
    if (m->reaper_started) {
        pthread_mutex_lock(&m->conn_lock);
        m->stopping = 1;
        pthread_cond_signal(&m->conn_cv);
        pthread_mutex_unlock(&m->conn_lock);
        pthread_join(m->reaper, NULL);
    }
    MHD_stop_daemon(m->daemon);   /* joins the HTTP threads: no handler runs after this */
    snapshot_free(&m->snap);
    pthread_cond_destroy(&m->conn_cv);
    pthread_mutex_destroy(&m->conn_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}

#endif

int metrics_addr_check(const char *addr, char *err, size_t errlen)
{
    metrics_addr_t a;
    return addr_parse(addr, 0, &a, err, errlen);
}

#ifndef NQ_HAVE_MHD

struct nq_metrics { int unused; };

nq_metrics_t *metrics_new_ex(const char *addr, int allow_remote, char *err, size_t errlen)
{
    metrics_addr_t a;
    if (addr_parse(addr, allow_remote, &a, err, errlen) == 0)
        snprintf(err, errlen, "cannot serve metrics on %s: nq was built without libmicrohttpd "
                 "(install libmicrohttpd-dev and rebuild)", addr);
    (void)snapshot_copy;
    (void)snapshot_free;
    return NULL;
}

uint16_t metrics_port(const nq_metrics_t *m) { (void)m; return 0; }
void metrics_update(nq_metrics_t *m, const nq_metrics_snapshot_t *s) { (void)m; (void)s; }
void metrics_destroy(nq_metrics_t **m) { if (m) *m = NULL; }

#endif

nq_metrics_t *metrics_new(const char *addr, char *err, size_t errlen)
{
    return metrics_new_ex(addr, 0, err, errlen);
}
