/*
 * The web view's pure parts: HTML escaping of values from the wire, strict job ids from
 * URLs, the broker's history ring (thinning keeps the whole run in HIST_CAP points), a job's
 * progress chart in shares of its work, the
 * page cache, the token file, the per-job Prometheus series, and which connection the reaper
 * cuts when the listener is full.
 */
#define _GNU_SOURCE   /* open_memstream */
#include "t.h"

#include "http_cache.h"
#include "http_impl.h"
#include "http_reaper.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static char *esc(const char *s, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    html_esc(f, s, n);
    fclose(f);
    return buf;
}

T_TEST(test_html_escapes_markup_and_bad_bytes)
{
    const char *xss = "<script>alert('x')</script>&\"";
    char *a = esc(xss, strlen(xss));
    T_EQ_STR(a, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
    free(a);
    char *b = esc("a\x01" "b\x1b\xff\xc3\xa9", 7);   /* controls and a stray byte; é kept */
    T_EQ_STR(b, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9");
    T_CHECK(t_valid_utf8((const unsigned char *)b, strlen(b)));
    free(b);
    char *c = esc("x\0<y", 4);                  /* a NUL inside a value does not end it early */
    T_EQ_STR(c, "x\xef\xbf\xbd&lt;y");
    free(c);
}

T_TEST(test_job_ids_parse_strictly)
{
    static const char *const bad[] = {
        "", "0", "01", "-1", "+1", "1e3", "1 ", " 1", "0x10", "abc", "1/", "18446744073709551616",
        "99999999999999999999", "123456789012345678901",
    };
    uint64_t id;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (web_parse_id(bad[i], strlen(bad[i]), &id) == 0)
            fprintf(stderr, "  accepted '%s'\n", bad[i]);
        T_CHECK(web_parse_id(bad[i], strlen(bad[i]), &id) != 0);
    }
    T_CHECK(web_parse_id("1", 1, &id) == 0 && id == 1);
    T_CHECK(web_parse_id("18446744073709551615", 20, &id) == 0 && id == UINT64_MAX);
    T_CHECK(web_parse_id("42/result", 2, &id) == 0 && id == 42);   /* n bounds it */
}

T_TEST(test_history_thins_but_spans_the_whole_run)
{
    static nq_history_t h;
    static hist_sample_t out[HIST_CAP];
    const int seconds = 100000;                 /* 28 hours at one snapshot a second */
    for (int i = 0; i <= seconds; i++) {
        nq_metrics_snapshot_t s = { .wall = 1000.0 + i, .results_total = (uint64_t)i, .workers_alive = 2 };
        history_add(&h, &s);
    }
    size_t n = history_get_broker(&h, out, HIST_CAP);
    T_CHECK(n > HIST_CAP / 2 && n <= HIST_CAP);
    T_CHECK(out[0].t == 1000.0 && out[0].done == 0);               /* the start is kept */
    T_CHECK(out[n - 1].t > 1000.0 + seconds - 1000.0);             /* and the recent end */
    for (size_t i = 1; i < n; i++)
        T_CHECK(out[i].t > out[i - 1].t && out[i].done >= out[i - 1].done && out[i].workers == 2);
}

/* A job's chart draws shares of its work: the left axis in %, the points' shares listed as
   they are, the line at their height (a point at 0.5 is half way up the plot). */
T_TEST(test_progress_chart_draws_shares_of_the_work)
{
    hist_sample_t s[3] = { { 1000, 0, 0 }, { 1060, 0.5, 0 }, { 1120, 0.75, 0 } };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    chart_progress(f, s, 3, 1);
    fclose(f);
    T_CHECK(strstr(buf, "<desc id=\"chart-shares\">0.000000 0.500000 0.750000</desc>") != NULL);
    T_CHECK(strstr(buf, "work done (%) (left axis)") != NULL);
    T_CHECK(strstr(buf, ">100</text>") != NULL);                   /* the left axis' top: 100 % */
    const char *line = strstr(buf, "id=\"chart-done\"");
    T_CHECK(line != NULL);
    double x0, y0, x1, y1;
    T_CHECK(line && sscanf(strstr(line, "points=\"") + 8, "%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1) == 4);
    T_CHECK(y1 < y0 && y1 > 0);
    free(buf);
}

T_TEST(test_cache_keeps_copies_by_path)
{
    http_cache_t *c = http_cache_new();
    char *body = NULL, longkey[CACHE_KEY_MAX + 8];
    size_t len = 0;
    unsigned status = 0;
    T_CHECK(http_cache_get(c, "/", &body, &len, &status) == -1);
    http_cache_put(c, "/", "<p>a</p>", 8, 200, 0.001);
    T_CHECK(http_cache_get(c, "/", &body, &len, &status) == 0);
    T_CHECK(len == 8 && status == 200 && memcmp(body, "<p>a</p>", 8) == 0);
    free(body);
    memset(longkey, 'a', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    http_cache_put(c, longkey, "x", 1, 200, 0.001);                 /* hostile paths: not kept */
    T_CHECK(http_cache_get(c, longkey, &body, &len, &status) == -1);
    for (int i = 0; i < 3 * CACHE_ENTRIES; i++) {                   /* bounded: old ones make room */
        char k[32];
        snprintf(k, sizeof k, "/jobs/%d", i + 1);
        http_cache_put(c, k, "y", 1, 200, 0.001);
    }
    T_CHECK(http_cache_get(c, "/", &body, &len, &status) == -1);
    http_cache_destroy(&c);
    T_CHECK(c == NULL);
}

static int token_file(const char *text, char *tok, size_t len, char *err, size_t errlen)
{
    char path[300];
    snprintf(path, sizeof path, "%s/web-token-%d", t_tmpdir(), (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    int rc = http_token_load(path, tok, len, err, errlen);
    unlink(path);
    return rc;
}

T_TEST(test_token_file_is_one_line_of_safe_characters)
{
    char tok[HTTP_TOKEN_MAX + 1], err[256];
    T_CHECK(token_file("0123456789abcdef0123\n", tok, sizeof tok, err, sizeof err) == 0);
    T_EQ_STR(tok, "0123456789abcdef0123");
    T_CHECK(token_file("short\n", tok, sizeof tok, err, sizeof err) == -1);
    T_CHECK(token_file("0123456789abcdef 0123\n", tok, sizeof tok, err, sizeof err) == -1);
    T_CHECK(token_file("0123456789abcdef+0123\n", tok, sizeof tok, err, sizeof err) == -1);
    T_CHECK(token_file("0123456789abcdef0123\nsecond\n", tok, sizeof tok, err, sizeof err) == -1);
    T_CHECK(http_token_load("/nonexistent/nq-token", tok, sizeof tok, err, sizeof err) == -1);
}

T_TEST(test_metrics_per_job_series)
{
    nq_metrics_job_t j = { .id = 3, .n = 18, .kind = "count", .state = "running", .shards_total = 631,
                           .shards_done = 40, .shards_failed = 1 };
    nq_metrics_snapshot_t s = { .njobs = 1, .jobs = &j, .store_ok = 1 };
    char *t = metrics_render(&s, NULL);
    T_CHECK(strstr(t, "nq_job_info{job_id=\"3\",kind=\"count\",n=\"18\",state=\"running\"} 1\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards{job_id=\"3\"} 631\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards_done{job_id=\"3\"} 40\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards_failed{job_id=\"3\"} 1\n") != NULL);
    T_CHECK(strstr(t, "\nnq_store_writable 1\n") != NULL);
    T_CHECK(strstr(t, "nq_store_disk_free_bytes") == NULL);     /* unknown: no figure at all */
    free(t);
    s.disk_size_bytes = 1000;
    s.disk_free_bytes = 10;
    t = metrics_render(&s, NULL);
    T_CHECK(strstr(t, "\nnq_store_disk_free_bytes 10\n") != NULL);
    free(t);
}

/* ---- the reaper: which connection goes when the listener is full ---- */

/* A tracked connection: the reaper holds end[0] (as it holds MHD's socket) and the test reads
   end[1] to see whether it was cut. */
typedef struct {
    int end[2];
    char id;                    /* its address is the connection's identity */
} t_conn_t;

static struct sockaddr_storage t_addr(const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *b = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, ip, &a->sin_addr) == 1)
        a->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, ip, &b->sin6_addr) == 1)
        b->sin6_family = AF_INET6;
    return ss;
}

static void t_open(http_reaper_t *r, t_conn_t *c, const char *ip)
{
    struct sockaddr_storage ss = t_addr(ip);
    T_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, c->end) == 0);
    http_reaper_open(r, &c->id, c->end[0], (const struct sockaddr *)&ss);
}

/* 1 when the reaper shut the connection down (its peer reads EOF). */
static int t_cut(const t_conn_t *c)
{
    char b;
    ssize_t n = recv(c->end[1], &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* What MHD does once it sees the EOF: the slot and the host's count are freed (r NULL: the
   test's own cleanup). */
static void t_close(http_reaper_t *r, t_conn_t *c)
{
    if (r)
        http_reaper_close(r, &c->id);
    close(c->end[0]);
    close(c->end[1]);
    c->end[0] = c->end[1] = -1;
}

static uint64_t t_evicted(http_reaper_t *r)
{
    uint64_t slow, evicted;
    http_reaper_counts(r, &slow, &evicted);
    return evicted;
}

#define T_SOFT (HX_CONN_LIMIT - HX_CONN_SPARE)

/*
 * A flood of idle connections from four addresses fills the listener to its soft limit. The
 * scraper's host holds the most connections, but all except one are authenticated, and that
 * one is older than any of the flood's. Newcomers cut flood connections from the host that
 * holds the most idle ones that never authenticated, oldest first; the scraper's connections,
 * a busy one and the newcomers stay. (By age alone, or by connections per host, the
 * scraper's idle connection would go first.)
 */
T_TEST(test_reaper_full_listener_cuts_the_busiest_hosts_idle_untrusted)
{
    static t_conn_t c[HX_CONN_LIMIT];
    static const char *const ip[] = { "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5" };
    static const size_t per[] = { 10, 32, 30, 4 };  /* + 1 busy on .2, 1 + 34 on .1: T_SOFT */
    http_reaper_t *r = http_reaper_new();
    size_t n = 0;
    t_open(r, &c[n++], "127.0.0.1");                  /* 0: the scraper, connected, no head yet */
    t_open(r, &c[n++], "127.0.0.2");                  /* 1: no token, its request being answered */
    http_reaper_busy(r, &c[1].id);
    while (n < 36) {                                  /* 34 authenticated, between requests */
        t_open(r, &c[n], "127.0.0.1");
        http_reaper_busy(r, &c[n].id);
        http_reaper_trust(r, &c[n].id);
        http_reaper_idle(r, &c[n++].id);
    }
    size_t first[4];
    for (size_t h = 0; h < 4; h++) {
        first[h] = n;
        for (size_t i = 0; i < per[h]; i++)
            t_open(r, &c[n++], ip[h]);
    }
    T_EQ_U64(n, T_SOFT);
    for (size_t i = 0; i < n; i++)
        T_CHECK(!t_cut(&c[i]));                       /* at the soft limit nothing goes yet */
    T_EQ_U64(t_evicted(r), 0);

    /* .3 holds 32: its two oldest go; then .3 and .4 hold 30 each and .3's are older. */
    size_t want[] = { first[1], first[1] + 1, first[1] + 2 };
    for (size_t k = 0; k < 3; k++) {
        t_open(r, &c[n++], "127.0.0.9");
        T_CHECK(t_cut(&c[want[k]]));
        for (size_t i = 0; i < n; i++)
            if (i != want[k] && c[i].end[0] >= 0)
                T_CHECK(!t_cut(&c[i]));
        t_close(r, &c[want[k]]);
    }
    T_EQ_U64(t_evicted(r), 3);
    http_reaper_destroy(&r);
    T_CHECK(r == NULL);
    for (size_t i = 0; i < n; i++)
        if (c[i].end[0] >= 0)
            t_close(NULL, &c[i]);
}

/* Connections that authenticated or are being answered are never cut to make room: newcomers
   take the spare slots instead (past them MHD refuses a newcomer, as it did before). */
T_TEST(test_reaper_spares_authenticated_and_busy_connections)
{
    static t_conn_t c[HX_CONN_LIMIT];
    http_reaper_t *r = http_reaper_new();
    for (size_t i = 0; i < T_SOFT; i++) {
        t_open(r, &c[i], i % 2 ? "127.0.0.2" : "127.0.0.3");
        http_reaper_busy(r, &c[i].id);
        if (i % 3)   /* two in three answered and authenticated; the rest still being answered */
            http_reaper_trust(r, &c[i].id), http_reaper_idle(r, &c[i].id);
    }
    for (size_t i = T_SOFT; i < HX_CONN_LIMIT; i++) {
        t_open(r, &c[i], "127.0.0.4");                /* each sends its request at once */
        http_reaper_busy(r, &c[i].id);
    }
    for (size_t i = 0; i < HX_CONN_LIMIT; i++)
        T_CHECK(!t_cut(&c[i]));
    T_EQ_U64(t_evicted(r), 0);
    http_reaper_destroy(&r);
    for (size_t i = 0; i < HX_CONN_LIMIT; i++)
        t_close(NULL, &c[i]);
}

/* An IPv6 client counts as its /64, so taking more addresses does not make it more hosts; an
   IPv4 client of a dual-stack socket (::ffff:a.b.c.d) counts as its IPv4 address. */
T_TEST(test_reaper_counts_an_ipv6_64_as_one_host)
{
    static t_conn_t c[HX_CONN_LIMIT];
    char ip[64];
    http_reaper_t *r = http_reaper_new();
    size_t n = 0;
    for (size_t i = 0; i < 40; i++) {                 /* 40 hosts: one old connection each */
        snprintf(ip, sizeof ip, "10.0.0.%zu", i + 1);
        t_open(r, &c[n++], ip);
    }
    t_open(r, &c[n++], "::ffff:10.0.0.1");            /* 10.0.0.1's second: 2, the most of them */
    size_t v6 = n;
    while (n < T_SOFT) {                              /* 71 addresses, one /64 */
        snprintf(ip, sizeof ip, "2001:db8:0:7::%zx", n);
        t_open(r, &c[n++], ip);
    }
    t_open(r, &c[n++], "2001:db8:0:8::1");
    T_CHECK(t_cut(&c[v6]));                           /* the /64's oldest, not 10.0.0.1's */
    for (size_t i = 0; i < n; i++)
        if (i != v6)
            T_CHECK(!t_cut(&c[i]));
    http_reaper_destroy(&r);
    for (size_t i = 0; i < n; i++)
        t_close(NULL, &c[i]);
}

T_RUN_ALL()
