/*
 * The web view's pure parts: HTML escaping of values from the wire, strict job ids from
 * URLs, the per-job history ring (thinning keeps the whole run in HIST_CAP points), the
 * page cache, the token file, and the per-job Prometheus series.
 */
#define _GNU_SOURCE   /* open_memstream */
#include "t.h"

#include "http_cache.h"
#include "http_impl.h"

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

static nq_metrics_snapshot_t one_job(nq_metrics_job_t *j, uint64_t id, uint64_t done, double t)
{
    memset(j, 0, sizeof *j);
    j->id = id;
    j->shards_done = done;
    j->shards_total = 1000000;
    nq_metrics_snapshot_t s = { .wall = t, .njobs = 1, .jobs = j };
    return s;
}

T_TEST(test_history_thins_but_spans_the_whole_run)
{
    static nq_history_t h;
    static hist_sample_t out[HIST_CAP];
    nq_metrics_job_t j;
    const int seconds = 100000;                 /* 28 hours at one snapshot a second */
    for (int i = 0; i <= seconds; i++) {
        nq_metrics_snapshot_t s = one_job(&j, 7, (uint64_t)i, 1000.0 + i);
        history_add(&h, &s);
    }
    size_t n = history_get(&h, 7, out, HIST_CAP);
    T_CHECK(n > HIST_CAP / 2 && n <= HIST_CAP);
    T_CHECK(out[0].t == 1000.0 && out[0].done == 0);               /* the start is kept */
    T_CHECK(out[n - 1].t > 1000.0 + seconds - 1000.0);             /* and the recent end */
    for (size_t i = 1; i < n; i++)
        T_CHECK(out[i].t > out[i - 1].t && out[i].done >= out[i - 1].done);
    T_CHECK(history_get(&h, 8, out, HIST_CAP) == 0);
}

T_TEST(test_history_forgets_the_least_recent_job)
{
    static nq_history_t h;
    static hist_sample_t out[HIST_CAP];
    nq_metrics_job_t j;
    for (uint64_t id = 1; id <= HIST_JOBS + 1; id++) {
        nq_metrics_snapshot_t s = one_job(&j, id, 1, (double)id);
        history_add(&h, &s);
    }
    T_CHECK(history_get(&h, 1, out, HIST_CAP) == 0);               /* job 1 made room */
    T_CHECK(history_get(&h, 2, out, HIST_CAP) == 1);
    T_CHECK(history_get(&h, HIST_JOBS + 1, out, HIST_CAP) == 1);
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
    char *t = metrics_render(&s);
    T_CHECK(strstr(t, "nq_job_info{job_id=\"3\",kind=\"count\",n=\"18\",state=\"running\"} 1\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards{job_id=\"3\"} 631\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards_done{job_id=\"3\"} 40\n") != NULL);
    T_CHECK(strstr(t, "\nnq_job_shards_failed{job_id=\"3\"} 1\n") != NULL);
    T_CHECK(strstr(t, "\nnq_store_writable 1\n") != NULL);
    T_CHECK(strstr(t, "nq_store_disk_free_bytes") == NULL);     /* unknown: no figure at all */
    free(t);
    s.disk_size_bytes = 1000;
    s.disk_free_bytes = 10;
    t = metrics_render(&s);
    T_CHECK(strstr(t, "\nnq_store_disk_free_bytes 10\n") != NULL);
    free(t);
}

T_RUN_ALL()
