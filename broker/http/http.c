/*
 * The broker's HTTP listener (see http.h): libmicrohttpd's daemon and its limits, the
 * token, and which path is answered by what. Pages and /api live in web_*.c.
 */
#define _GNU_SOURCE   /* open_memstream */
#include "http_impl.h"

#include "clock.h"
#include "errf.h"
#include "http_addr.h"
#include "http_cache.h"
#include "http_reaper.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-"

int http_token_load(const char *path, char *token, size_t len, char *err, size_t errlen)
{
    char buf[HTTP_TOKEN_MAX + 3] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return nq_errf(err, errlen, "cannot read the http token file %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '\r')
        buf[--n] = '\0';
    /* It travels in a header, a cookie and a URL: URL-unreserved characters need no escaping
       in any of them ('+' would turn into a space in a query string). */
    for (size_t i = 0; i < n; i++)
        if (!strchr(TOKEN_CHARS, buf[i]))
            return nq_errf(err, errlen, "the http token in %s must be one line of letters, digits "
                           "and . _ ~ - (e.g. from 'od -An -tx1 -N24 /dev/urandom | tr -d \" \\n\"')", path);
    if (n < HTTP_TOKEN_MIN || n > HTTP_TOKEN_MAX || n >= len)
        return nq_errf(err, errlen, "the http token in %s must be %d to %d characters",
                       path, HTTP_TOKEN_MIN, HTTP_TOKEN_MAX);
    memcpy(token, buf, n + 1);
    return 0;
}

uint16_t http_port(const nq_http_t *h)
{
    return h ? h->port : 0;
}

void http_update(nq_http_t *h, const nq_metrics_snapshot_t *s)
{
    nq_metrics_snapshot_t fresh, old;
    if (!h || !s || metrics_snapshot_copy(&fresh, s) != 0)
        return;   /* out of memory: keep serving the previous snapshot */
    pthread_mutex_lock(&h->lock);
    old = h->snap;
    h->snap = fresh;
    if (h->hist)
        history_add(h->hist, s);
    pthread_mutex_unlock(&h->lock);
    metrics_snapshot_free(&old);
}

#ifdef NQ_HAVE_MHD
#include <microhttpd.h>

#if MHD_VERSION < 0x00097002
typedef int mhd_result_t;   /* MHD before 0.9.71 returned int from handlers */
#else
typedef enum MHD_Result mhd_result_t;
#endif

/*
 * Limits that keep slow or hostile clients from starving a scraper or a browser (16
 * connections trickling a header byte every 5 s once filled the limit and every scrape got an
 * empty reply). A request is one small GET that arrives in microseconds:
 *   - HX_CONN_LIMIT connections in all (epoll, no FD_SETSIZE cap), HX_PER_IP from one
 *     address: a single host cannot take every slot;
 *   - near HX_CONN_LIMIT, a newcomer costs an idle connection that never passed the token
 *     check its slot, from the host holding the most (http_reaper.c): a flood of connections
 *     without the token cannot lock out a client that has it;
 *   - HX_IDLE_S: a connection silent that long is closed (MHD's inactivity timeout);
 *   - deadlines for the request head and the response (http_reaper.c), which trickling
 *     does not reset;
 *   - HX_MEMORY: a request head larger than about this is refused (431), not buffered;
 *   - HX_THREADS polling threads, so rendering for one client never waits on another.
 * A host that keeps HX_PER_IP connections busy can still starve other clients on that same
 * address (loopback is one address), only by reconnecting non-stop, never by trickling.
 */
#define HX_PER_IP 32u
#define HX_IDLE_S 5u
#define HX_MEMORY ((size_t)16 * 1024)
#define HX_THREADS 2u
#define HX_REFRESH_COOKIE "nq_token"

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    nq_http_t *h = cls;
    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ca =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci)
            http_reaper_open(h->reaper, c, ci->connect_fd, ca ? ca->client_addr : NULL);
    } else {
        http_reaper_close(h->reaper, c);
    }
}

/* A response went out: a keep-alive connection has HX_REQUEST_MS for its next request. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    nq_http_t *h = cls;
    (void)con_cls; (void)toe;
    http_reaper_idle(h->reaper, c);
}

/* Equal strings, in a time that depends only on the expected one's length. */
static int token_equal(const char *want, const char *got)
{
    size_t wn = strlen(want), gn = got ? strnlen(got, HTTP_TOKEN_MAX + 1) : 0;
    unsigned char d = (unsigned char)(wn != gn);
    for (size_t i = 0; i < wn; i++)
        d |= (unsigned char)want[i] ^ (unsigned char)(i < gn ? got[i] : 0);
    return d == 0;
}

/* 1 when the request may proceed; *via_query says the token came in the URL (set a cookie). */
static int authorized(const nq_http_t *h, struct MHD_Connection *c, int *via_query)
{
    *via_query = 0;
    if (!h->token[0])
        return 1;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (a && strncasecmp(a, "Bearer ", 7) == 0 && token_equal(h->token, a + 7))
        return 1;
    if (token_equal(h->token, MHD_lookup_connection_value(c, MHD_COOKIE_KIND, HX_REFRESH_COOKIE)))
        return 1;
    *via_query = token_equal(h->token, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"));
    return *via_query;
}

static mhd_result_t reply(struct MHD_Connection *c, unsigned status, char *body, size_t len,
                          const char *ctype, const char *cookie)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* No script, no outside resource, ever: a value that slipped past escaping still runs nothing. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                            "form-action 'none'; frame-ancestors 'none'");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");   /* a ?token= URL stays here */
    if (cookie)
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"nq\"");
    mhd_result_t ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* A short plain-text answer. (Its length is taken here, not beside the strdup in one call's
   arguments: their order is unspecified, and a length read before it was set once sent the
   heap beyond the body to a client.) */
static mhd_result_t reply_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
    char *body = strdup(msg);
    if (!body)
        return MHD_NO;
    return reply(c, status, body, strlen(msg), "text/plain; charset=utf-8", NULL);
}

/* The answer to a GET of url: its status, body in f, and content type. */
static unsigned route(nq_http_t *h, const char *url, FILE *f, const char **ctype)
{
    static const char html[] = "text/html; charset=utf-8";
    uint64_t id;
    *ctype = html;
    if (strcmp(url, "/metrics") == 0) {
        *ctype = "text/plain; version=0.0.4; charset=utf-8";
        /* the snapshot first, then the DB: a job that ends meanwhile is in both (and counted once),
           never in neither; the DB is read without the lock the broker's updates take */
        nq_metrics_snapshot_t snap;
        pthread_mutex_lock(&h->lock);
        int copied = metrics_snapshot_copy(&snap, &h->snap);
        pthread_mutex_unlock(&h->lock);
        if (copied != 0)
            return 0;
        nq_metrics_ended_t *ended = h->db_path ? web_metrics_ended(h) : NULL;
        char *body = metrics_render(&snap, ended);
        metrics_snapshot_free(&snap);
        free(ended);
        if (!body)
            return 0;
        fputs(body, f);
        free(body);
        return MHD_HTTP_OK;
    }
    if (!h->db_path) {
        *ctype = "text/plain; charset=utf-8";
        fputs("not found: try /metrics\n", f);
        return MHD_HTTP_NOT_FOUND;
    }
    if (strcmp(url, "/") == 0)
        return web_page_index(h, f);
    if (strcmp(url, "/workers") == 0)
        return web_page_workers(h, f);
    if (strncmp(url, "/jobs/", 6) == 0)
        return web_parse_id(url + 6, strlen(url + 6), &id) == 0 ? web_page_job(h, id, f)
                                                                 : web_page_not_found(f, url);
    if (strcmp(url, "/api") == 0 || strncmp(url, "/api/", 5) == 0) {
        *ctype = "application/json";
        return web_api(h, url + 4, f);
    }
    return web_page_not_found(f, url);
}

/* Renders url (or takes it from the cache); 0 when out of memory. */
static unsigned render(nq_http_t *h, const char *url, char **body, size_t *len, const char **ctype)
{
    unsigned status;
    FILE *f = open_memstream(body, len);
    if (!f)
        return 0;
    double t0 = nq_mono();
    status = route(h, url, f, ctype);
    if (fclose(f) != 0 || status == 0) {
        free(*body);
        return 0;
    }
    if (status == MHD_HTTP_OK && strcmp(url, "/metrics") != 0)   /* a scrape wants now */
        http_cache_put(h->cache, url, *body, *len, status, nq_mono() - t0);
    return status;
}

static const char *content_type(const char *url)
{
    if (strcmp(url, "/api") == 0 || strncmp(url, "/api/", 5) == 0)
        return "application/json";
    return "text/html; charset=utf-8";
}

static mhd_result_t on_request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version,
                               const char *upload, size_t *upload_size, void **con_cls)
{
    nq_http_t *h = cls;
    (void)version; (void)upload; (void)upload_size; (void)con_cls;
    http_reaper_busy(h->reaper, c);   /* the head arrived: now the answer */
    size_t len;
    const char *ctype = "text/plain; charset=utf-8";
    int via_query;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET or HEAD\n");
    if (!authorized(h, c, &via_query))
        return reply_text(c, MHD_HTTP_UNAUTHORIZED, "token required: Authorization: Bearer TOKEN, "
                          "or ?token=TOKEN\n");
    http_reaper_trust(h->reaper, c);   /* kept when the listener is full (http_reaper.c) */
    char cookie[HTTP_TOKEN_MAX + 96], *body = NULL;
    snprintf(cookie, sizeof cookie, HX_REFRESH_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict", h->token);
    unsigned status;
    if (http_cache_get(h->cache, url, &body, &len, &status) == 0)
        ctype = content_type(url);
    else if (!(status = render(h, url, &body, &len, &ctype)))
        return MHD_NO;   /* out of memory: MHD closes the connection */
    return reply(c, status, body, len, ctype, via_query ? cookie : NULL);
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
    static double window;
    static int started;
    static unsigned in_window;
    static unsigned long long dropped;
    char msg[256], q[NQ_LOG_QLEN];
    (void)cls;
    double now = nq_mono();
    pthread_mutex_lock(&lk);
    if (!started || now - window >= 10.0) {
        started = 1;
        window = now;
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
    nq_log(NQ_LOG_WARN, "http.mhd", "msg=%s dropped=%llu", nq_log_qs(q, sizeof q, msg), was_dropped);
}

/*
 * No percent-decoding, of the path or of the query: every path served is plain ASCII and a
 * token is made of URL-unreserved characters, so an escape can only be an attempt to get
 * something past the parsing ("/jobs/1%00" would decode to "/jobs/1" in a C string).
 */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls; (void)c;
    return strlen(s);
}

static struct MHD_Daemon *daemon_start(nq_http_t *h, const http_addr_t *a)
{
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (a->family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a->sa,
                            MHD_OPTION_THREAD_POOL_SIZE, HX_THREADS,
                            MHD_OPTION_CONNECTION_LIMIT, HX_CONN_LIMIT,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, HX_PER_IP,
                            MHD_OPTION_CONNECTION_TIMEOUT, HX_IDLE_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, HX_MEMORY,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                            MHD_OPTION_END);
}

/* The parts that need no socket; -1 when out of memory. */
static int http_init(nq_http_t *h, const nq_http_cfg_t *cfg)
{
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->db_lock, NULL);
    snprintf(h->token, sizeof h->token, "%s", cfg->token ? cfg->token : "");
    h->reaper = http_reaper_new();
    h->cache = http_cache_new();
    if (cfg->db_path) {
        h->db_path = strdup(cfg->db_path);
        h->hist = calloc(1, sizeof *h->hist);
    }
    return h->reaper && h->cache && (!cfg->db_path || (h->db_path && h->hist)) ? 0 : -1;
}

nq_http_t *http_new(const nq_http_cfg_t *cfg, char *err, size_t errlen)
{
    http_addr_t a;
    int has_token = cfg->token && cfg->token[0];
    if (http_addr_parse(cfg->addr, has_token, &a, err, errlen) != 0)
        return NULL;
    if (has_token && strlen(cfg->token) > HTTP_TOKEN_MAX) {
        nq_errf(err, errlen, "the http token is longer than %d characters", HTTP_TOKEN_MAX);
        return NULL;
    }
    nq_http_t *h = calloc(1, sizeof *h);
    if (!h || http_init(h, cfg) != 0) {
        nq_errf(err, errlen, "out of memory");
        http_destroy(&h);
        return NULL;
    }
    errno = 0;
    h->daemon = daemon_start(h, &a);
    if (!h->daemon) {
        int e = errno;
        nq_errf(err, errlen, "cannot serve http on %s: %s", cfg->addr,
                e ? strerror(e) : "libmicrohttpd failed to start");
        http_destroy(&h);
        return NULL;
    }
    http_reaper_start(h->reaper);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : 0;
    return h;
}

void http_destroy(nq_http_t **hp)
{
    nq_http_t *h = hp ? *hp : NULL;
    if (!h)
        return;
    http_reaper_stop(h->reaper);       /* no socket is cut while MHD closes them */
    if (h->daemon)
        MHD_stop_daemon(h->daemon);    /* joins the HTTP threads: no handler runs after this */
    http_reaper_destroy(&h->reaper);
    http_cache_destroy(&h->cache);
    web_db_close(h);
    metrics_snapshot_free(&h->snap);
    pthread_mutex_destroy(&h->db_lock);
    pthread_mutex_destroy(&h->lock);
    free(h->hist);
    free(h->db_path);
    free(h);
    *hp = NULL;
}

#else

nq_http_t *http_new(const nq_http_cfg_t *cfg, char *err, size_t errlen)
{
    http_addr_t a;
    if (http_addr_parse(cfg->addr, cfg->token && cfg->token[0], &a, err, errlen) == 0)
        nq_errf(err, errlen, "cannot serve http on %s: nq was built without libmicrohttpd "
                "(install libmicrohttpd-dev and rebuild)", cfg->addr);
    return NULL;
}

void http_destroy(nq_http_t **h)
{
    if (h)
        *h = NULL;
}

#endif
