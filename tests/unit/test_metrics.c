/*
 * The broker's Prometheus endpoint: the exposition text, the HTTP server on an
 * ephemeral loopback port (fetched with a plain socket client, as a scraper
 * would), concurrent updates while scraping, and the addresses it refuses.
 */
#include "t.h"

#include "metrics.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef NQ_HAVE_MHD
/* Sends REQUEST to 127.0.0.1:PORT and returns everything the server sent (malloc'd). */
static char *http_raw(uint16_t port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    size_t len = strlen(request), cap = 4096, n = 0;
    if (write(fd, request, len) != (ssize_t)len) {
        close(fd);
        return NULL;
    }
    char *buf = malloc(cap);
    for (ssize_t r; buf && (r = read(fd, buf + n, cap - n - 1)) > 0;) {
        n += (size_t)r;
        if (cap - n < 1024)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* HTTP/1.0 so the server closes the connection after one response. */
static char *http_get(uint16_t port, const char *path)
{
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    return http_raw(port, req);
}

/* The status code of an HTTP response ("HTTP/1.x NNN ..."), 0 when there is none. */
static int http_status(const char *r)
{
    int code = 0;
    if (!r || sscanf(r, "HTTP/1.%*d %d", &code) != 1)
        return 0;
    return code;
}

#endif

/* 1 when TEXT has LINE as a whole line. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\r' || p[n] == '\0'))
            return 1;
    return 0;
}

static int count_sub(const char *text, const char *sub)
{
    int k = 0;
    for (const char *p = text; (p = strstr(p, sub)); p += strlen(sub))
        k++;
    return k;
}

static nq_metrics_snapshot_t sample_snapshot(const nq_metrics_worker_t *w, size_t nw)
{
    nq_metrics_snapshot_t s = {
        .shards_by_state = { 5, 2, 40, 1, 0, 3 },
        .results_total = 45, .results_duplicate = 4, .results_conflict = 1,
        .messages_bad = 7, .results_per_s = 12.5, .workers_alive = 2, .jobs_active = 1,
        .commits = 9, .commit_seconds_sum = 0.25, .commit_seconds_max = 0.125,
        .nworkers = nw, .workers = w,
    };
    return s;
}

static void test_render_families(void)
{
    nq_metrics_worker_t w[] = { { "w-a", 1e6, 3 } };
    nq_metrics_snapshot_t s = sample_snapshot(w, 1);
    char *t = metrics_render(&s);
    T_CHECK(t != NULL);
    if (!t)
        return;
    T_CHECK(has_line(t, "# TYPE nq_results_total counter"));
    T_CHECK(has_line(t, "nq_results_total 45"));
    T_CHECK(has_line(t, "nq_results_duplicate_total 4"));
    T_CHECK(has_line(t, "nq_results_conflict_total 1"));
    T_CHECK(has_line(t, "nq_messages_bad_total 7"));
    T_CHECK(has_line(t, "# TYPE nq_shards gauge"));
    T_CHECK(has_line(t, "nq_shards{state=\"pending\"} 5"));
    T_CHECK(has_line(t, "nq_shards{state=\"leased\"} 2"));
    T_CHECK(has_line(t, "nq_shards{state=\"done\"} 40"));
    T_CHECK(has_line(t, "nq_shards{state=\"failed\"} 1"));
    T_CHECK(has_line(t, "nq_shards{state=\"conflict\"} 0"));
    T_CHECK(has_line(t, "nq_shards{state=\"cancelled\"} 3"));
    T_CHECK(has_line(t, "nq_results_per_second 12.5"));
    T_CHECK(has_line(t, "nq_workers_alive 2"));
    T_CHECK(has_line(t, "nq_jobs_active 1"));
    T_CHECK(has_line(t, "# TYPE nq_store_commit_seconds summary"));
    T_CHECK(has_line(t, "nq_store_commit_seconds_sum 0.25"));
    T_CHECK(has_line(t, "nq_store_commit_seconds_count 9"));
    T_CHECK(has_line(t, "nq_store_commit_max_seconds 0.125"));
    T_CHECK(has_line(t, "nq_worker_nodes_per_second{worker=\"w-a\"} 1000000"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"w-a\"} 3"));
    /* Every family has exactly one HELP and one TYPE, and every sample line belongs to one. */
    T_EQ_U64(count_sub(t, "# HELP "), count_sub(t, "# TYPE "));
    T_EQ_U64(count_sub(t, "# TYPE nq_shards "), 1);
    T_CHECK(t[strlen(t) - 1] == '\n');
    free(t);
}

static void test_render_escapes_and_special_floats(void)
{
    nq_metrics_worker_t w[] = {
        { "host\"a\\b\nc", NAN, 0 },
        { NULL, INFINITY, 1 },
        { "neg", -INFINITY, 2 },
    };
    nq_metrics_snapshot_t s = sample_snapshot(w, 3);
    char *t = metrics_render(&s);
    T_CHECK(t != NULL);
    if (!t)
        return;
    T_CHECK(has_line(t, "nq_worker_nodes_per_second{worker=\"host\\\"a\\\\b\\nc\"} NaN"));
    T_CHECK(has_line(t, "nq_worker_nodes_per_second{worker=\"\"} +Inf"));
    T_CHECK(has_line(t, "nq_worker_nodes_per_second{worker=\"neg\"} -Inf"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"host\\\"a\\\\b\\nc\"} 0"));
    T_CHECK(strstr(t, " inf") == NULL && strstr(t, " nan") == NULL && strstr(t, "-inf") == NULL);
    free(t);
}

#ifdef NQ_HAVE_MHD
static void test_http_serves_snapshot(void)
{
    char err[256] = "";
    nq_metrics_t *m = metrics_new("127.0.0.1:0", err, sizeof err);
    T_CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "  metrics_new: %s\n", err);
        return;
    }
    uint16_t port = metrics_port(m);
    T_CHECK(port != 0);

    char *r = http_get(port, "/metrics");   /* before any update: zeros, still valid */
    T_CHECK(http_status(r) == 200);
    T_CHECK(r && strstr(r, "text/plain; version=0.0.4"));
    T_CHECK(r && has_line(r, "nq_results_total 0"));
    free(r);

    char id[] = "worker-1";
    nq_metrics_worker_t w[] = { { id, 2.5e7, 4 } };
    nq_metrics_snapshot_t s = sample_snapshot(w, 1);
    metrics_update(m, &s);
    id[0] = 'X';   /* the endpoint must have copied the id */
    r = http_get(port, "/metrics");
    T_CHECK(r && has_line(r, "nq_results_total 45"));
    T_CHECK(r && has_line(r, "nq_worker_leases{worker=\"worker-1\"} 4"));
    T_CHECK(r && has_line(r, "nq_worker_nodes_per_second{worker=\"worker-1\"} 25000000"));
    free(r);

    r = http_get(port, "/");
    T_CHECK(http_status(r) == 404);
    free(r);
    r = http_get(port, "/metrics/extra");
    T_CHECK(http_status(r) == 404);
    free(r);
    r = http_raw(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
    T_CHECK(http_status(r) == 405);
    free(r);
    r = http_raw(port, "this is not http\r\n\r\n");   /* garbage: answered or closed, no crash */
    free(r);
    r = http_get(port, "/metrics");
    T_CHECK(http_status(r) == 200);
    free(r);
    metrics_destroy(&m);
    T_CHECK(m == NULL);
    metrics_destroy(&m);   /* twice is harmless */
}

typedef struct { nq_metrics_t *m; int rounds; } updater_t;

static void *update_loop(void *arg)
{
    updater_t *u = arg;
    char ids[8][40];
    nq_metrics_worker_t w[8];
    for (int i = 0; i < u->rounds; i++) {
        size_t nw = (size_t)(i % 8);
        for (size_t k = 0; k < nw; k++) {
            snprintf(ids[k], sizeof ids[k], "w%d-%zu", i, k);
            w[k] = (nq_metrics_worker_t){ ids[k], (double)i, (uint32_t)k };
        }
        nq_metrics_snapshot_t s = sample_snapshot(w, nw);
        s.results_total = (uint64_t)i;
        metrics_update(u->m, &s);
    }
    return NULL;
}

/* Scrapes while another thread replaces the snapshot: ASan/TSan find any race or leak. */
static void test_http_concurrent_updates(void)
{
    char err[256] = "";
    updater_t u = { metrics_new("localhost:0", err, sizeof err), 3000 };
    T_CHECK(u.m != NULL);
    if (!u.m)
        return;
    pthread_t th;
    pthread_create(&th, NULL, update_loop, &u);
    int ok = 0;
    for (int i = 0; i < 20; i++) {
        char *r = http_get(metrics_port(u.m), "/metrics");
        ok += r && strstr(r, "# TYPE nq_worker_leases gauge") != NULL;
        free(r);
    }
    pthread_join(th, NULL);
    T_EQ_U64(ok, 20);
    char *r = http_get(metrics_port(u.m), "/metrics");
    T_CHECK(r && has_line(r, "nq_results_total 2999"));
    free(r);
    metrics_destroy(&u.m);
}

static void test_port_in_use_refused(void)
{
    char err[256] = "";
    nq_metrics_t *a = metrics_new("127.0.0.1:0", err, sizeof err);
    T_CHECK(a != NULL);
    if (!a)
        return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", metrics_port(a));
    nq_metrics_t *b = metrics_new(addr, err, sizeof err);
    T_CHECK(b == NULL);
    T_CHECK(strstr(err, "cannot serve metrics on") != NULL);
    metrics_destroy(&b);
    metrics_destroy(&a);
}

static void test_ipv6_loopback(void)
{
    char err[256] = "";
    nq_metrics_t *m = metrics_new("[::1]:0", err, sizeof err);
    if (!m) {   /* hosts without IPv6 (some containers): only the reason may differ */
        fprintf(stderr, "  skipped: no IPv6 loopback here (%s)\n", err);
        T_CHECK(strstr(err, "cannot serve metrics on") != NULL);
        return;
    }
    T_CHECK(metrics_port(m) != 0);
    metrics_destroy(&m);
}
#else
static void test_built_without_mhd(void)
{
    char err[256] = "";
    T_CHECK(metrics_new("127.0.0.1:0", err, sizeof err) == NULL);
    T_CHECK(strstr(err, "built without libmicrohttpd") != NULL);
}
#endif

static void test_bad_addresses_refused(void)
{
    static const char *const bad[] = {
        "", "127.0.0.1", "127.0.0.1:", ":9555", "127.0.0.1:65536", "127.0.0.1:-1",
        "127.0.0.1:9x", "127.0.0.1: 9555", "::1:9555", "[::1]", "[::1]9555", "[::1:9555",
        "example.com:9555", "127.0.0.256:9555", "localhostx:9555",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        nq_metrics_t *m = metrics_new(bad[i], err, sizeof err);
        if (m) {
            fprintf(stderr, "  accepted bad address '%s'\n", bad[i]);
            metrics_destroy(&m);
        }
        T_CHECK(m == NULL);
        T_CHECK(strstr(err, "metrics") != NULL);
        T_CHECK(strstr(err, "cannot serve") == NULL);   /* refused before any bind */
    }
    char err[256] = "";
    T_CHECK(metrics_new(NULL, err, sizeof err) == NULL);
}

static void test_non_loopback_needs_allow_remote(void)
{
    static const char *const remote[] = { "0.0.0.0:0", "10.1.2.3:9555", "[::]:0", "[2001:db8::1]:9555" };
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        char err[256] = "";
        T_CHECK(metrics_new(remote[i], err, sizeof err) == NULL);
        T_CHECK(strstr(err, "not loopback") != NULL);
    }
    /* 127.x.y.z is all loopback, and allow_remote opens the wildcard address. */
    char err[256] = "";
    nq_metrics_t *m = metrics_new("127.0.0.2:0", err, sizeof err);
#ifdef NQ_HAVE_MHD
    T_CHECK(m != NULL);
    metrics_destroy(&m);
    m = metrics_new_ex("0.0.0.0:0", 1, err, sizeof err);
    T_CHECK(m != NULL);
    T_CHECK(metrics_port(m) != 0);
#endif
    metrics_destroy(&m);
}

static void test_update_null_is_noop(void)
{
    nq_metrics_snapshot_t s = sample_snapshot(NULL, 0);
    metrics_update(NULL, &s);
    nq_metrics_t *m = NULL;
    metrics_destroy(&m);
    metrics_destroy(NULL);
    T_CHECK(metrics_port(NULL) == 0);
}

#ifdef NQ_HAVE_MHD
#define HTTP_CASES T_CASE(test_http_serves_snapshot), T_CASE(test_http_concurrent_updates), \
                   T_CASE(test_port_in_use_refused), T_CASE(test_ipv6_loopback)
#else
#define HTTP_CASES T_CASE(test_built_without_mhd)
#endif

T_MAIN(T_CASE(test_render_families), T_CASE(test_render_escapes_and_special_floats), HTTP_CASES,
       T_CASE(test_bad_addresses_refused), T_CASE(test_non_loopback_needs_allow_remote),
       T_CASE(test_update_null_is_noop))
