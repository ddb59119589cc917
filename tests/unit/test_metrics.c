/*
 * The broker's Prometheus endpoint: the exposition text, the HTTP server on an
 * ephemeral loopback port (fetched with a plain socket client, as a scraper
 * would), concurrent updates while scraping, and the addresses it refuses.
 */
#include "t.h"

#include "http.h"
#include "metrics.h"

#define T_TOKEN "0123456789abcdef-token"

/* The listener with /metrics only (no DB), as the tests of the exposition want it. */
static nq_http_t *t_http_new(const char *addr, const char *token, char *err, size_t errlen)
{
    nq_http_cfg_t c = { .addr = addr, .token = token };
    return http_new(&c, err, errlen);
}

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifdef NQ_HAVE_MHD
/* Sends REQUEST to 127.0.0.1:PORT and returns everything the server sent (malloc'd). */
static char *http_raw(uint16_t port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = { .tv_sec = 5 };   /* a stalled server fails the test, never hangs it */
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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
        .messages_bad = 7, .leases_lost = 6, .results_per_s = 12.5, .workers_alive = 2, .jobs_active = 1,
        .commits = 9, .commit_seconds_sum = 0.25, .commit_seconds_max = 0.125,
        .nworkers = nw, .workers = w,
    };
    return s;
}

T_TEST(test_render_families)
{
    nq_metrics_worker_t w[] = { { "w-a", 1e6, 3, 0, "", NULL, 0, 0.25 }, { "w-b", 1e6, 3, 0, "", NULL, 0, 0 } };
    nq_metrics_snapshot_t s = sample_snapshot(w, 2);
    char *t = metrics_render(&s, NULL);
    T_CHECK(t != NULL);
    if (!t)
        return;
    T_CHECK(has_line(t, "# TYPE nq_worker_round_trip_seconds gauge"));
    T_CHECK(has_line(t, "nq_worker_round_trip_seconds{worker=\"w-a\"} 0.25"));
    T_CHECK(strstr(t, "nq_worker_round_trip_seconds{worker=\"w-b\"}") == NULL);   /* not measured yet */
    T_CHECK(has_line(t, "# TYPE nq_results_total counter"));
    T_CHECK(has_line(t, "nq_results_total 45"));
    T_CHECK(has_line(t, "nq_results_duplicate_total 4"));
    T_CHECK(has_line(t, "nq_results_conflict_total 1"));
    T_CHECK(has_line(t, "nq_messages_bad_total 7"));
    T_CHECK(has_line(t, "# TYPE nq_leases_lost_total counter"));
    T_CHECK(has_line(t, "nq_leases_lost_total 6"));
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

T_TEST(test_render_escapes_and_special_floats)
{
    nq_metrics_worker_t w[] = {
        { "host\"a\\b\nc", NAN, 0, 0, "", NULL, 0, 0 },
        { NULL, INFINITY, 1, 0, "", NULL, 0, 0 },
        { "neg", -INFINITY, 2, 0, "", NULL, 0, 0 },
    };
    nq_metrics_snapshot_t s = sample_snapshot(w, 3);
    char *t = metrics_render(&s, NULL);
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



static int name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/*
 * A structural check of the text exposition format 0.0.4 (promtool is not at hand): every
 * line is "# HELP name text", "# TYPE name type" or "name{l="v",...} value" with label
 * values using only the \\ \" \n escapes, each sample after the TYPE of its family; no
 * control byte but the line ends; valid UTF-8. Returns the number of the first bad line
 * (1-based), 0 when all are good.
 */
static int exposition_bad_line(const char *t)
{
    char family[128] = "";
    int lineno = 0;
    if (!t_valid_utf8((const unsigned char *)t, strlen(t)))
        return -1;
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            return lineno + 1;   /* the last line must end in \n too */
        lineno++;
        for (const char *q = p; q < nl; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7f)
                return lineno;
        if (strncmp(p, "# HELP ", 7) == 0 || strncmp(p, "# TYPE ", 7) == 0) {
            const char *n = p + 7, *e = n;
            while (e < nl && name_char(*e, e == n))
                e++;
            if (e == n || e >= nl || *e != ' ')
                return lineno;
            if (p[2] == 'T') {
                const char *ty = e + 1;
                size_t tl = (size_t)(nl - ty);
                if (!((tl == 7 && !strncmp(ty, "counter", 7)) || (tl == 5 && !strncmp(ty, "gauge", 5)) ||
                      (tl == 7 && !strncmp(ty, "summary", 7)) || (tl == 9 && !strncmp(ty, "histogram", 9)) ||
                      (tl == 7 && !strncmp(ty, "untyped", 7))))
                    return lineno;
                snprintf(family, sizeof family, "%.*s", (int)(e - n), n);
            }
        } else {
            const char *e = p;
            while (e < nl && name_char(*e, e == p))
                e++;
            if (e == p || !family[0] || strncmp(p, family, strlen(family)) != 0)
                return lineno;
            if (*e == '{') {
                for (e++;;) {
                    const char *ln = e;
                    while (e < nl && name_char(*e, e == ln))
                        e++;
                    if (e == ln || e + 1 >= nl || e[0] != '=' || e[1] != '"')
                        return lineno;
                    for (e += 2; e < nl && *e != '"'; e++)
                        if (*e == '\\' && (++e >= nl || (*e != '\\' && *e != '"' && *e != 'n')))
                            return lineno;
                    if (e >= nl)
                        return lineno;
                    e++;
                    if (*e == ',') { e++; continue; }
                    if (*e != '}')
                        return lineno;
                    e++;
                    break;
                }
            }
            if (e >= nl || *e != ' ')
                return lineno;
            char num[64];
            snprintf(num, sizeof num, "%.*s", (int)(nl - e - 1), e + 1);
            char *endp;
            if (strcmp(num, "NaN") && strcmp(num, "+Inf") && strcmp(num, "-Inf") &&
                (strtod(num, &endp), *num == '\0' || *endp != '\0'))
                return lineno;
        }
        p = nl + 1;
    }
    return 0;
}

/* A GPU worker's devices: a series each, with the worker and the device's index and name as
   labels; a name from the wire that tries to end its label and forge a sample stays inside it. */
T_TEST(test_render_device_series)
{
    nq_hb_device_t d[2] = {
        { "H100", NQ_DEVICE_OK, 40, 1234, 2500 },
        { "x\"} 1\nnq_workers_alive 99", NQ_DEVICE_FAILED, 0, 7, 0 },
    };
    nq_metrics_worker_t w[] = { { "gpu-1", 1e9, 3, 0, "", d, 2, 0 } };
    nq_metrics_snapshot_t s = sample_snapshot(w, 1);
    char *t = metrics_render(&s, NULL);
    T_CHECK(t != NULL);
    if (!t)
        return;
    T_CHECK(strstr(t, "nq_worker_device_shards_per_second{worker=\"gpu-1\",device=\"0\",name=\"H100\"} 2.5\n"));
    T_CHECK(strstr(t, "nq_worker_device_queued{worker=\"gpu-1\",device=\"0\",name=\"H100\"} 40\n"));
    T_CHECK(strstr(t, "nq_worker_device_shards{worker=\"gpu-1\",device=\"1\",name=\"x\\\"} 1\\nnq_workers_alive 99\"} 7\n"));
    T_CHECK(strstr(t, "nq_worker_device_up{worker=\"gpu-1\",device=\"1\",name=\"x\\\"} 1\\nnq_workers_alive 99\"} 0\n"));
    T_CHECK(strstr(t, "\nnq_workers_alive 99") == NULL);
    T_EQ_U64(exposition_bad_line(t), 0);
    free(t);
}

/* Worker ids come from the wire: invalid UTF-8 and control characters must not reach the text. */
T_TEST(test_render_label_values_stay_valid_utf8)
{
    nq_metrics_worker_t w[] = {
        { "\xff\xfe", 1, 1, 0, "", NULL, 0, 0 },
        { "a\x01" "b\x1b[2J\x7f" "c", 2, 2, 0, "", NULL, 0, 0 },
        { "caf\xc3\xa9-\xe2\x82\xac", 3, 3, 0, "", NULL, 0, 0 },       /* valid UTF-8 is kept */
        { "\xc2\x9b" "31m", 4, 4, 0, "", NULL, 0, 0 },                  /* C1 control (CSI) */
        { "t\tr\rn\nq\"b\\", 5, 5, 0, "", NULL, 0, 0 },
        { "\xed\xa0\x80|\xc0\xaf|\xe2\x82", 6, 6, 0, "", NULL, 0, 0 },   /* surrogate, overlong, truncated */
        { "} 1\nnq_workers_alive 99\n# x", 7, 7, 0, "", NULL, 0, 0 },   /* a forged sample */
    };
    nq_metrics_snapshot_t s = sample_snapshot(w, sizeof w / sizeof w[0]);
    char *t = metrics_render(&s, NULL);
    T_CHECK(t != NULL);
    if (!t)
        return;
    int bad = exposition_bad_line(t);
    if (bad)
        fprintf(stderr, "  bad exposition line %d:\n%s\n", bad, t);
    T_CHECK(bad == 0);
#define FFFD "\xef\xbf\xbd"
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"" FFFD FFFD "\"} 1"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"a" FFFD "b" FFFD "[2J" FFFD "c\"} 2"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"caf\xc3\xa9-\xe2\x82\xac\"} 3"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"" FFFD "31m\"} 4"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"t" FFFD "r" FFFD "n\\nq\\\"b\\\\\"} 5"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"" FFFD FFFD FFFD "|" FFFD FFFD "|" FFFD FFFD "\"} 6"));
    T_CHECK(has_line(t, "nq_worker_leases{worker=\"} 1\\nnq_workers_alive 99\\n# x\"} 7"));
    T_CHECK(has_line(t, "nq_workers_alive 2") && !has_line(t, "nq_workers_alive 99"));
#undef FFFD
    free(t);
}

#ifdef NQ_HAVE_MHD
T_TEST(test_http_serves_snapshot)
{
    char err[256] = "";
    nq_http_t *m = t_http_new("127.0.0.1:0", NULL, err, sizeof err);
    T_CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "  metrics_new: %s\n", err);
        return;
    }
    uint16_t port = http_port(m);
    T_CHECK(port != 0);

    char *r = http_get(port, "/metrics");   /* before any update: zeros, still valid */
    T_CHECK(http_status(r) == 200);
    T_CHECK(r && strstr(r, "text/plain; version=0.0.4"));
    T_CHECK(r && has_line(r, "nq_results_total 0"));
    free(r);

    char id[] = "worker-1";
    nq_metrics_worker_t w[] = { { id, 2.5e7, 4, 0, "", NULL, 0, 0 } };
    nq_metrics_snapshot_t s = sample_snapshot(w, 1);
    http_update(m, &s);
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
    http_destroy(&m);
    T_CHECK(m == NULL);
    http_destroy(&m);   /* twice is harmless */
}

typedef struct { nq_http_t *m; int rounds; } updater_t;

static void *update_loop(void *arg)
{
    updater_t *u = arg;
    char ids[8][40];
    nq_metrics_worker_t w[8];
    for (int i = 0; i < u->rounds; i++) {
        size_t nw = (size_t)(i % 8);
        for (size_t k = 0; k < nw; k++) {
            snprintf(ids[k], sizeof ids[k], "w%d-%zu", i, k);
            w[k] = (nq_metrics_worker_t){ ids[k], (double)i, (uint32_t)k, 0, "", NULL, 0, 0 };
        }
        nq_metrics_snapshot_t s = sample_snapshot(w, nw);
        s.results_total = (uint64_t)i;
        http_update(u->m, &s);
    }
    return NULL;
}

/* Scrapes while another thread replaces the snapshot: ASan/TSan find any race or leak. */
T_TEST(test_http_concurrent_updates)
{
    char err[256] = "";
    updater_t u = { t_http_new("localhost:0", NULL, err, sizeof err), 3000 };
    T_CHECK(u.m != NULL);
    if (!u.m)
        return;
    pthread_t th;
    pthread_create(&th, NULL, update_loop, &u);
    int ok = 0;
    for (int i = 0; i < 20; i++) {
        char *r = http_get(http_port(u.m), "/metrics");
        ok += r && strstr(r, "# TYPE nq_worker_leases gauge") != NULL;
        free(r);
    }
    pthread_join(th, NULL);
    T_EQ_U64(ok, 20);
    char *r = http_get(http_port(u.m), "/metrics");
    T_CHECK(r && has_line(r, "nq_results_total 2999"));
    free(r);
    http_destroy(&u.m);
}


/* A TCP connection to 127.0.0.1:PORT from source address SRC (any 127.x.y.z); -1 on failure. */
static int connect_from(const char *src, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in me = { .sin_family = AF_INET };
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    inet_pton(AF_INET, src, &me.sin_addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof me) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* 1 when the server has closed FD (EOF or reset), 0 while it is still open. */
static int closed_by_server(int fd)
{
    char c;
    ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/*
 * connections that send part of a request head and stay open used to
 * fill the 16 slots, and every scrape got an empty reply. 20 such clients on the
 * scraper's own address and 40 on another (127.0.0.2) must leave /metrics answering, and
 * one address is held to its per-address share (the rest are refused at once).
 */
T_TEST(test_http_slow_clients_do_not_starve)
{
    char err[256] = "";
    nq_http_t *m = t_http_new("127.0.0.1:0", NULL, err, sizeof err);
    T_CHECK(m != NULL);
    if (!m)
        return;
    uint16_t port = http_port(m);
    int fds[60], nfd = 0;
    for (int i = 0; i < 60; i++) {
        int fd = connect_from(i < 20 ? "127.0.0.1" : "127.0.0.2", port);
        if (fd >= 0) {
            const char part[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
            if (write(fd, part, sizeof part - 1) < 0) { /* refused already: counted below */ }
            fds[nfd++] = fd;
        }
    }
    T_EQ_U64(nfd, 60);
    usleep(300 * 1000);
    char *r = http_get(port, "/metrics");
    T_CHECK(http_status(r) == 200);
    T_CHECK(r && has_line(r, "nq_results_total 0"));
    free(r);
    int open_a = 0, open_b = 0;
    for (int i = 0; i < nfd; i++)
        if (!closed_by_server(fds[i]))
            *(i < 20 ? &open_a : &open_b) += 1;
    fprintf(stderr, "  slow clients still open: %d of 20 from 127.0.0.1, %d of 40 from 127.0.0.2\n",
            open_a, open_b);
    T_EQ_U64(open_a, 20);
    T_CHECK(open_b >= 16 && open_b <= 32);   /* capped per address */
    http_destroy(&m);   /* with the slow clients still connected */
    T_CHECK(m == NULL);
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
}

/* A request head larger than the per-connection memory cap is refused, not buffered. */
T_TEST(test_http_request_head_capped)
{
    char err[256] = "";
    nq_http_t *m = t_http_new("127.0.0.1:0", NULL, err, sizeof err);
    T_CHECK(m != NULL);
    if (!m)
        return;
    size_t big = 24 * 1024;
    char *req = malloc(big + 128);
    int n = sprintf(req, "GET /metrics HTTP/1.0\r\nX-Big: ");
    memset(req + n, 'a', big);
    strcpy(req + n + big, "\r\n\r\n");
    char *r = http_raw(http_port(m), req);
    int st = http_status(r);
    fprintf(stderr, "  24 KiB request head: status %d\n", st);
    T_CHECK(st != 200 && (st == 0 || st == 431 || st == 413 || st == 414 || st == 400));
    free(r);
    free(req);
    r = http_get(http_port(m), "/metrics");   /* and the endpoint still serves */
    T_CHECK(http_status(r) == 200);
    free(r);
    http_destroy(&m);
}

T_TEST(test_port_in_use_refused)
{
    char err[256] = "";
    nq_http_t *a = t_http_new("127.0.0.1:0", NULL, err, sizeof err);
    T_CHECK(a != NULL);
    if (!a)
        return;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", http_port(a));
    nq_http_t *b = t_http_new(addr, NULL, err, sizeof err);
    T_CHECK(b == NULL);
    T_CHECK(strstr(err, "cannot serve http on") != NULL);
    http_destroy(&b);
    http_destroy(&a);
}

T_TEST(test_ipv6_loopback)
{
    char err[256] = "";
    nq_http_t *m = t_http_new("[::1]:0", NULL, err, sizeof err);
    if (!m) {   /* hosts without IPv6 (some containers): only the reason may differ */
        fprintf(stderr, "  skipped: no IPv6 loopback here (%s)\n", err);
        T_CHECK(strstr(err, "cannot serve http on") != NULL);
        return;
    }
    T_CHECK(http_port(m) != 0);
    http_destroy(&m);
}
#else
T_TEST(test_built_without_mhd)
{
    char err[256] = "";
    T_CHECK(t_http_new("127.0.0.1:0", NULL, err, sizeof err) == NULL);
    T_CHECK(strstr(err, "built without libmicrohttpd") != NULL);
}
#endif

T_TEST(test_bad_addresses_refused)
{
    static const char *const bad[] = {
        "", "127.0.0.1", "127.0.0.1:", ":9555", "127.0.0.1:65536", "127.0.0.1:-1",
        "127.0.0.1:9x", "127.0.0.1: 9555", "::1:9555", "[::1]", "[::1]9555", "[::1:9555",
        "example.com:9555", "127.0.0.256:9555", "localhostx:9555",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        nq_http_t *m = t_http_new(bad[i], NULL, err, sizeof err);
        if (m) {
            fprintf(stderr, "  accepted bad address '%s'\n", bad[i]);
            http_destroy(&m);
        }
        T_CHECK(m == NULL);
        T_CHECK(strstr(err, "HOST:PORT") != NULL || strstr(err, "host must be") != NULL);
        T_CHECK(strstr(err, "cannot serve") == NULL);   /* refused before any bind */
    }
    char err[256] = "";
    T_CHECK(t_http_new(NULL, NULL, err, sizeof err) == NULL);
}

T_TEST(test_non_loopback_needs_a_token)
{
    static const char *const remote[] = { "0.0.0.0:0", "10.1.2.3:9555", "[::]:0", "[2001:db8::1]:9555" };
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        char err[256] = "";
        T_CHECK(t_http_new(remote[i], NULL, err, sizeof err) == NULL);
        T_CHECK(strstr(err, "without a token") != NULL);
    }
    /* 127.x.y.z is all loopback, and a token opens the wildcard address. */
    char err[256] = "";
    nq_http_t *m = t_http_new("127.0.0.2:0", NULL, err, sizeof err);
#ifdef NQ_HAVE_MHD
    T_CHECK(m != NULL);
    http_destroy(&m);
    m = t_http_new("0.0.0.0:0", T_TOKEN, err, sizeof err);
    T_CHECK(m != NULL);
    T_CHECK(http_port(m) != 0);
#endif
    http_destroy(&m);
}

T_TEST(test_update_null_is_noop)
{
    nq_metrics_snapshot_t s = sample_snapshot(NULL, 0);
    http_update(NULL, &s);
    nq_http_t *m = NULL;
    http_destroy(&m);
    http_destroy(NULL);
    T_CHECK(http_port(NULL) == 0);
}

/* Ended jobs from the DB: their shards count in nq_shards, the recent ones keep their series in
   their final state, and a job that ended after the snapshot counts once, as ended. */
T_TEST(test_render_ended_jobs)
{
    nq_metrics_job_t active[2] = {
        { .id = 7, .n = 18, .kind = "count", .state = "running", .shards_total = 100, .shards_done = 40,
          .shards_leased = 2, .shards_pending = 58 },
        { .id = 8, .n = 17, .kind = "count", .state = "running", .shards_total = 50, .shards_done = 49,
          .shards_leased = 1 },         /* it ends after the snapshot: the DB has it done */
    };
    nq_metrics_snapshot_t s = { .shards_by_state = { 58, 3, 89, 0, 0, 0 }, .jobs_active = 2, .njobs = 2,
                                .jobs = active };
    static nq_metrics_ended_t e;
    double now = 1e9;
    nq_metrics_job_t j8 = { .id = 8, .n = 17, .kind = "count", .state = "done", .shards_total = 50,
                            .shards_done = 50 };
    nq_metrics_job_t j5 = { .id = 5, .n = 16, .kind = "count", .state = "cancelled", .shards_total = 30,
                            .shards_done = 10, .shards_failed = 2 };
    nq_metrics_job_t j2 = { .id = 2, .n = 12, .kind = "count", .state = "done", .shards_total = 20,
                            .shards_done = 20 };
    metrics_ended_add(&e, &j8, now - 0.5, now);
    metrics_ended_add(&e, &j5, now - 3600, now);
    metrics_ended_add(&e, &j2, now - 2 * METRICS_ENDED_KEEP_S, now);   /* too long ago for series */
    char *t = metrics_render(&s, &e);
    T_CHECK(t != NULL);
    if (!t)
        return;
    T_CHECK(has_line(t, "nq_shards{state=\"done\"} 120"));       /* 40 + 50 + 10 + 20 */
    T_CHECK(has_line(t, "nq_shards{state=\"pending\"} 58"));
    T_CHECK(has_line(t, "nq_shards{state=\"leased\"} 2"));
    T_CHECK(has_line(t, "nq_shards{state=\"failed\"} 2"));
    T_CHECK(has_line(t, "nq_shards{state=\"cancelled\"} 18"));   /* job 5's open shards */
    T_CHECK(has_line(t, "nq_job_info{job_id=\"7\",kind=\"count\",n=\"18\",state=\"running\"} 1"));
    T_CHECK(has_line(t, "nq_job_info{job_id=\"8\",kind=\"count\",n=\"17\",state=\"done\"} 1"));
    T_CHECK(has_line(t, "nq_job_info{job_id=\"5\",kind=\"count\",n=\"16\",state=\"cancelled\"} 1"));
    T_CHECK(!strstr(t, "job_id=\"8\",kind=\"count\",n=\"17\",state=\"running\""));
    T_EQ_U64(count_sub(t, "nq_job_shards_done{job_id=\"8\"}"), 1);
    T_CHECK(has_line(t, "nq_job_shards_done{job_id=\"8\"} 50"));
    T_CHECK(has_line(t, "nq_job_shards_done{job_id=\"5\"} 10"));
    T_CHECK(!strstr(t, "job_id=\"2\""));
    T_EQ_U64(exposition_bad_line(t), 0);
    free(t);
}

T_RUN_ALL()
