/*
 * HTML text for the web view: every value is escaped on its way out (worker ids, hosts
 * and error messages come from the wire), numbers and durations are written the way
 * `nq status` writes them, and the page frame carries its own style: no script, font or
 * stylesheet from anywhere (the page must work on an air-gapped cluster).
 */
#include "http_impl.h"
#include "errf.h"

#include "json.h"
#include "log.h"
#include "u128.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* Escapes the five characters HTML gives meaning to, in text and in quoted attributes, and
   keeps the page valid UTF-8: a stray byte or a control character becomes U+FFFD. */
void html_esc(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : nq_utf8_len(s + i, n - i);
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || k == 0 ||
                (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
                fputs("\xef\xbf\xbd", f);
            else
                fwrite(s + i, 1, k, f);
        }
        i += k ? k : 1;
    }
}

void html_esc_obj(FILE *f, const msgpack_object *o)
{
    char buf[64];
    const char *num = json_num_str(o, buf, sizeof buf);
    if (num)
        fputs(num, f);
    else if (o && o->type == MSGPACK_OBJECT_STR)
        html_esc(f, o->via.str.ptr, o->via.str.size);
    else if (o && o->type == MSGPACK_OBJECT_BOOLEAN)
        fputs(o->via.boolean ? "yes" : "no", f);
    else
        fputs("-", f);
}

const msgpack_object *doc_get(const msgpack_object *m, const char *key)
{
    return json_map_get(m, key);
}

int doc_double(const msgpack_object *m, const char *key, double *d)
{
    const msgpack_object *o = json_map_get(m, key);
    unsigned __int128 v;
    if (!o)
        return -1;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        *d = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *d = (double)o->via.i64;
    else if (json_u128(o, &v) == 0)
        *d = (double)v;
    else
        return -1;
    return isfinite(*d) ? 0 : -1;
}

int doc_u64(const msgpack_object *m, const char *key, uint64_t *v)
{
    const msgpack_object *o = json_map_get(m, key);
    if (!o || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return -1;
    *v = o->via.u64;
    return 0;
}

int doc_str_is(const msgpack_object *m, const char *key, const char *want)
{
    const msgpack_object *o = json_map_get(m, key);
    size_t n = strlen(want);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, want, n) == 0;
}

int doc_bool(const msgpack_object *m, const char *key)
{
    const msgpack_object *o = json_map_get(m, key);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

/* As `nq status` writes a duration: 12.3s, 4m05s, 3h05m10s, 2d03h10m. */
void html_duration(FILE *f, double s)
{
    if (!isfinite(s) || s < 0) {
        fputs("-", f);
        return;
    }
    if (s < 60) {
        fprintf(f, "%.1fs", s);
        return;
    }
    unsigned long long t = s > 1e15 ? (unsigned long long)1e15 : (unsigned long long)(s + 0.5);
    if (t >= 86400) fprintf(f, "%llud%02lluh%02llum", t / 86400, t / 3600 % 24, t / 60 % 60);
    else if (t >= 3600) fprintf(f, "%lluh%02llum%02llus", t / 3600, t / 60 % 60, t % 60);
    else fprintf(f, "%llum%02llus", t / 60, t % 60);
}

/* 1234567 -> 1.23 M; small numbers as they are. */
void html_rate(FILE *f, double v)
{
    static const char *const unit[] = { "", " k", " M", " G", " T", " P" };
    int u = 0;
    if (!isfinite(v) || v < 0) {
        fputs("-", f);
        return;
    }
    while (v >= 1000 && u < 5) {
        v /= 1000;
        u++;
    }
    fprintf(f, u ? "%.2f%s" : "%.1f%s", v, unit[u]);
}

void html_time(FILE *f, double unix_s)
{
    char buf[32];
    struct tm tm;
    time_t t = (time_t)unix_s;
    if (!(unix_s > 0) || unix_s > 1e11 || !gmtime_r(&t, &tm)) {
        fputs("-", f);
        return;
    }
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "%s UTC", buf);
}

void html_count_u64(FILE *f, uint64_t v)
{
    char g[NQ_U128_GROUPED];
    fputs(u128_group(v, g), f);
}

void html_count(FILE *f, const msgpack_object *o)
{
    unsigned __int128 v;
    char g[NQ_U128_GROUPED];
    if (o && json_u128(o, &v) == 0)
        fputs(u128_group(v, g), f);
    else
        html_esc_obj(f, o);
}

/* A native <progress> element: it needs no script, and a test can read its value. */
void html_progress(FILE *f, uint64_t done, uint64_t total)
{
    double pct = total ? 100.0 * (double)done / (double)total : 0;
    fprintf(f, "<progress value=\"%llu\" max=\"%llu\">%.1f%%</progress> %.1f%%",
            (unsigned long long)done, (unsigned long long)(total ? total : 1), pct, pct);
}

static const char STYLE[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fff}"
    "nav a{margin-right:1em}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse}th,td{padding:.25em .7em;text-align:right;"
    "border-bottom:1px solid #dde}th{background:#f3f4f7}td.l,th.l{text-align:left}"
    "progress{width:12em;vertical-align:middle}.flag{color:#b00020;font-weight:bold}"
    ".muted{color:#667}.err{color:#b00020;white-space:pre-wrap}code{font-size:.95em}"
    "svg text{font:12px system-ui,sans-serif;fill:#445}svg.chart{width:100%;max-width:720px;height:auto}"
    "svg.chart *{vector-effect:non-scaling-stroke}"   /* lines as thick at a phone's width */
    /* a phone (390 px): the chart scales down whole (a min-width cut its right axis off), and the
       jobs table keeps id, N, state, done/total, ETA and total, dropping kind, the bar, rate, unique */
    "@media(max-width:600px){body{margin:.8em}progress{width:5em}th,td{padding:.25em .35em}"
    "#jobs td:nth-child(2),#jobs th:nth-child(2),#jobs td:nth-child(5),#jobs th:nth-child(5),"
    "#jobs td:nth-child(7),#jobs th:nth-child(7),#jobs td:nth-child(10),#jobs th:nth-child(10){display:none}}"
    ".cards{display:flex;flex-wrap:wrap;gap:.6em;margin:.5em 0 1em}.card{border:1px solid #dde;"
    "border-radius:6px;padding:.4em .9em;min-width:8em}.card b{display:block;font-size:1.3em}"
    ".wide{overflow-x:auto}";

void html_head(FILE *f, const char *title, int refresh_s)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">", f);
    if (refresh_s > 0)
        fprintf(f, "<meta http-equiv=\"refresh\" content=\"%d\">", refresh_s);
    fputs("<meta name=\"viewport\" content=\"width=device-width\"><title>", f);
    html_esc(f, title, strlen(title));
    fprintf(f, " - nq</title><style>%s</style></head>\n<body><nav><a href=\"/\">jobs</a>"
            "<a href=\"/workers\">workers</a><a href=\"/metrics\">metrics</a></nav>\n<h1>", STYLE);
    html_esc(f, title, strlen(title));
    fputs("</h1>\n", f);
}

void html_foot(FILE *f)
{
    fputs("<p class=\"muted\">nq " NQ_VERSION ", read-only; the same documents as --json are under "
          "<a href=\"/api/jobs\">/api/jobs</a> and <a href=\"/api/workers\">/api/workers</a>.</p>\n"
          "</body></html>\n", f);
}

int web_parse_id(const char *s, size_t n, uint64_t *id)
{
    if (n == 0 || s[0] == '0')        /* no leading zero: one spelling per job */
        return -1;
    return nq_parse_digits(s, n, id);
}
