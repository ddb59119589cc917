/*
 * Prometheus endpoint of the broker (see metrics.h): address parsing, the
 * text exposition renderer, and the libmicrohttpd glue.
 */
#define _GNU_SOURCE   /* open_memstream */
#include "metrics.h"

#include "cli.h"
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

/* Label values escape backslash, double quote and newline (exposition format 0.0.4). */
static void put_label_value(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '"')
            fputs("\\\"", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
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
        snprintf(err, errlen, "metrics address must be HOST:PORT, e.g. 127.0.0.1:9555 or "
                 "[::1]:9555, with PORT from 0 to 65535 (got '%s')", addr ? addr : "");
        return -1;
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
        snprintf(err, errlen, "metrics host must be an IP address or 'localhost' (got '%s')",
                 host);
        return -1;
    }
    if (!allow_remote && !addr_is_loopback(out)) {
        snprintf(err, errlen, "metrics address '%s' is not loopback: the endpoint has no "
                 "authentication, so bind 127.0.0.1 or [::1] (or allow remote explicitly)",
                 addr);
        return -1;
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

struct nq_metrics {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    nq_metrics_snapshot_t snap;   /* owned deep copy */
    uint16_t port;
};

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

/* MHD's own diagnostics go through nq's structured log. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[256];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    nq_log(NQ_LOG_WARN, "metrics.http", "msg=\"%s\"", msg);
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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (a.family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* Few, short connections: a scraper every few seconds, not a web site. */
    errno = 0;
    m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a.sa,
                                 MHD_OPTION_CONNECTION_LIMIT, 16u,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                                 MHD_OPTION_END);
    if (!m->daemon) {
        int e = errno;
        snprintf(err, errlen, "cannot serve metrics on %s: %s", addr,
                 e ? strerror(e) : "libmicrohttpd failed to start");
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
    MHD_stop_daemon(m->daemon);   /* joins the HTTP thread: no handler runs after this */
    snapshot_free(&m->snap);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *mp = NULL;
}

#else /* !NQ_HAVE_MHD */

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
