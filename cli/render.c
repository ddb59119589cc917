/*
 * Printing query documents: JSON, human text, and export pages (see render.h).
 * Every lookup goes through render_get and a type check, so a document with
 * keys missing or of another type prints "-" where the value would be.
 */
#include "render.h"

#include "json.h"
#include "query.h"
#include "u128.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(JSON_EXT_U128 == QUERY_EXT_U128, "json.c and query.c must name a 128-bit number alike");

/* ---- lookups ---- */

const msgpack_object *render_get(const msgpack_object *map, const char *key)
{
    return json_map_get(map, key);
}

int render_u128(const msgpack_object *o, unsigned __int128 *v)
{
    return json_u128(o, v);
}

void render_json(FILE *f, const msgpack_object *o)
{
    json_write(f, o);
    fputc('\n', f);
}

/* ---- small formatters for the human views; "-" for anything missing ---- */

/* A number, a string or a bool as text. */
static const char *val_str(const msgpack_object *o, char *buf, size_t len)
{
    const char *s = json_num_str(o, buf, len);
    if (s)
        return s;
    if (o && o->type == MSGPACK_OBJECT_STR && len > 0) {
        /* The reply is the broker's (or whoever answers on its port): no control byte of it
           reaches the terminal, so a string cannot move the cursor, clear the screen or end early. */
        size_t n = 0;
        for (uint32_t i = 0; i < o->via.str.size && n + 1 < len; i++) {
            unsigned char c = (unsigned char)o->via.str.ptr[i];
            buf[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        }
        buf[n] = '\0';
        return buf;
    }
    if (o && o->type == MSGPACK_OBJECT_BOOLEAN)
        return o->via.boolean ? "yes" : "no";
    return "-";
}

static const char *get_str(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    return val_str(render_get(m, key), buf, len);
}

/* A number as a double: 0 ok, -1 missing or not a number. */
static int get_double(const msgpack_object *m, const char *key, double *d)
{
    const msgpack_object *o = render_get(m, key);
    unsigned __int128 v;
    if (!o) return -1;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) *d = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) *d = (double)o->via.i64;
    else if (render_u128(o, &v) == 0) *d = (double)v;
    else return -1;
    return 0;
}

static int get_bool(const msgpack_object *m, const char *key)
{
    const msgpack_object *o = render_get(m, key);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

static const char *fmt_duration(double s, char *buf, size_t len)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "-");
    } else if (s < 60) {
        snprintf(buf, len, "%.1fs", s);
    } else {
        unsigned long long t = (unsigned long long)(s + 0.5);
        if (t >= 86400) snprintf(buf, len, "%llud%02lluh%02llum", t / 86400, t / 3600 % 24, t / 60 % 60);
        else if (t >= 3600) snprintf(buf, len, "%lluh%02llum%02llus", t / 3600, t / 60 % 60, t % 60);
        else snprintf(buf, len, "%llum%02llus", t / 60, t % 60);
    }
    return buf;
}

const char *render_span(double s, char *buf, size_t len)
{
    static const struct { double secs; const char *name; } units[] = {
        { 365.25 * 86400, "years" }, { 86400, "days" }, { 3600, "hours" }, { 60, "minutes" } };
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (s >= 2 * units[i].secs) {  /* 1.5 hours reads better as 90 minutes */
            snprintf(buf, len, "%.3g %s", s / units[i].secs, units[i].name);
            return buf;
        }
    snprintf(buf, len, "%.3g seconds", s);
    return buf;
}

static const char *get_duration(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    double d;
    if (get_double(m, key, &d) != 0) return "-";
    return fmt_duration(d, buf, len);
}

static const char *get_time(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    double d;
    struct tm tm;
    if (get_double(m, key, &d) != 0 || !isfinite(d) || d < 0 || d > 1e12) return "-";
    time_t t = (time_t)d;
    if (!localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0) return "-";
    return buf;
}

static const char *get_fixed(const msgpack_object *m, const char *key, int prec, char *buf, size_t len)
{
    double d;
    if (get_double(m, key, &d) != 0 || !isfinite(d)) return "-";
    snprintf(buf, len, "%.*f", prec, d);
    return buf;
}

/* A count for people: its digits grouped by three (4,968,057,848); anything else as val_str. */
static const char *get_count(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    unsigned __int128 v;
    const msgpack_object *o = render_get(m, key);
    if (o && render_u128(o, &v) == 0 && len >= NQ_U128_GROUPED)
        return u128_group(v, buf);
    return val_str(o, buf, len);
}

/* A job's nodes: the CPU-comparable ones, then those of shards the fast GPU kernel counted, apart
   (it counts nodes of its own, not comparable with the CPU kernels'): "1,234 + 5,678 of the fast
   GPU kernel (12 shards)". */
static const char *get_nodes(const msgpack_object *m, char *buf, size_t len)
{
    char a[NQ_U128_GROUPED + 8], b[NQ_U128_GROUPED + 8], c[NQ_U128_GROUPED + 8];
    unsigned __int128 shards;
    const msgpack_object *o = render_get(m, "fast_shards");
    if (!o || render_u128(o, &shards) != 0 || shards == 0)
        return get_count(m, "nodes", buf, len);
    snprintf(buf, len, "%s + %s of the fast GPU kernel (%s shards)", get_count(m, "nodes", a, sizeof a),
             get_count(m, "fast_nodes", b, sizeof b), get_count(m, "fast_shards", c, sizeof c));
    return buf;
}

/* d with prec decimals and its integer part grouped (12,345.6); "-" when not a finite d >= 0. */
static const char *group_fixed(double d, int prec, char *buf, size_t len)
{
    char g[NQ_U128_GROUPED];
    if (!isfinite(d) || d < 0 || d >= 1e38) return "-";
    double whole = floor(d), frac = d - whole;
    char f[32];
    snprintf(f, sizeof f, "%.*f", prec, frac);           /* "0.63", or "1.00" when it rounds up */
    if (f[0] == '1') whole += 1;
    if (snprintf(buf, len, "%s%s", u128_group((unsigned __int128)whole, g), prec > 0 ? f + 1 : "") >=
        (int)len)
        return "-";                     /* never with the callers' buffers */
    return buf;
}

static const char *get_group_fixed(const msgpack_object *m, const char *key, int prec, char *buf, size_t len)
{
    double d;
    return get_double(m, key, &d) == 0 ? group_fixed(d, prec, buf, len) : "-";
}

/* A rate for people: three significant digits or more, never three decimals (130.625 read as
   130,625): 0.13, 7.25, 130.6, 12,346. */
static const char *get_rate(const msgpack_object *m, const char *key, char *buf, size_t len)
{
    double d;
    if (get_double(m, key, &d) != 0) return "-";
    return group_fixed(d, d < 10 ? 2 : d < 1000 ? 1 : 0, buf, len);
}

/* "done/total" shards. */
static const char *done_total(const msgpack_object *job, char *buf, size_t len)
{
    char a[NQ_U128_GROUPED], b[NQ_U128_GROUPED];
    if (snprintf(buf, len, "%s/%s", get_count(job, "shards_done", a, sizeof a),
                 get_count(job, "shards_total", b, sizeof b)) >= (int)len)
        buf[len - 1] = 0;               /* too narrow a column: cut, as the caller asked */
    return buf;
}

static int is_kind(const msgpack_object *job, const char *kind)
{
    const msgpack_object *o = render_get(job, "kind");
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(kind) &&
           memcmp(o->via.str.ptr, kind, o->via.str.size) == 0;
}

static const msgpack_object *get_array(const msgpack_object *m, const char *key)
{
    const msgpack_object *o = render_get(m, key);
    return o && o->type == MSGPACK_OBJECT_ARRAY ? o : NULL;
}

/* ---- job and list ---- */

/* Spot-checks, when the job has them: what was checked, what disagreed, who is flagged. */
static void render_checks(FILE *f, const msgpack_object *job)
{
    char a[64], b[64], c[64], d[64];
    const msgpack_object *flagged = get_array(job, "flagged");
    if (!render_get(job, "verify_rate"))
        return;
    fprintf(f, "  %-9s %s compared, %s disagreed, %s open (verify rate %s)\n", "checks",
            get_count(job, "checks", a, sizeof a), get_count(job, "checks_disagreed", b, sizeof b),
            get_count(job, "checks_open", c, sizeof c), get_fixed(job, "verify_rate", 4, d, sizeof d));
    if (!flagged || flagged->via.array.size == 0)
        return;
    fprintf(f, "  %-9s", "flagged");
    for (uint32_t i = 0; i < flagged->via.array.size; i++) {
        char name[80];
        fprintf(f, "%s %s", i ? "," : "", val_str(&flagged->via.array.ptr[i], name, sizeof name));
    }
    fprintf(f, " (%s in all; every result of theirs in this job is checked)\n",
            get_count(job, "flagged_count", a, sizeof a));
}

/* Results that came after their shard was decided and disagreed: the answer stands, and the
   senders are named so an operator can look at those machines. */
static void render_evidence(FILE *f, const msgpack_object *job)
{
    double n = 0;
    if (get_double(job, "evidence", &n) != 0 || n <= 0)
        return;
    char a[64];
    fprintf(f, "  %-9s %s late results disagreed with decided shards (the answer stands); from",
            "evidence", get_count(job, "evidence", a, sizeof a));
    const msgpack_object *by = get_array(job, "evidence_by");
    for (uint32_t i = 0; by && i < by->via.array.size; i++) {
        char name[80];
        fprintf(f, "%s %s", i ? "," : "", val_str(&by->via.array.ptr[i], name, sizeof name));
    }
    fprintf(f, "\n");
}

void render_job(FILE *f, const msgpack_object *job)
{
    char a[64], b[64], c[64], d[64], e[64], nodes[256];
    double done, total;
    fprintf(f, "job %s: %s N=%s, %s (priority %s)\n", get_str(job, "id", a, sizeof a),
            get_str(job, "kind", b, sizeof b), get_count(job, "n", c, sizeof c),
            get_str(job, "state", d, sizeof d), get_str(job, "priority", e, sizeof e));
    fprintf(f, "  %-9s %s done", "shards", done_total(job, a, sizeof a));
    if (get_double(job, "shards_done", &done) == 0 && get_double(job, "shards_total", &total) == 0 && total > 0)
        fprintf(f, " (%.1f%%)", 100.0 * done / total);
    fprintf(f, ", %s pending, %s leased, %s failed, %s conflict\n",
            get_count(job, "shards_pending", a, sizeof a), get_count(job, "shards_leased", b, sizeof b),
            get_count(job, "shards_failed", c, sizeof c), get_count(job, "shards_conflict", d, sizeof d));
    if (render_get(job, "copies_open"))   /* spot-check copies and quorum votes still to come */
        fprintf(f, "  %-9s %s more copies of shards to count (spot-checks, quorum votes)\n", "copies",
                get_count(job, "copies_open", a, sizeof a));
    fprintf(f, "  %-9s %s, started %s, finished %s\n", "created", get_time(job, "created_at", a, sizeof a),
            get_time(job, "started_at", b, sizeof b), get_time(job, "finished_at", c, sizeof c));
    fprintf(f, "  %-9s %s, %s shards/s, ETA %s\n", "elapsed", get_duration(job, "elapsed", a, sizeof a),
            get_rate(job, "rate", b, sizeof b), get_duration(job, "eta", c, sizeof c));
    if (is_kind(job, "count"))
        fprintf(f, "  %-9s %s, unique %s, nodes %s%s\n", "total", get_count(job, "total", a, sizeof a),
                get_count(job, "unique", b, sizeof b), get_nodes(job, nodes, sizeof nodes),
                get_bool(job, "final") ? "" : " (so far)");
    else if (is_kind(job, "solve"))
        fprintf(f, "  %-9s %s distinct found, %s seeds done, algo %s\n", "solutions",
                get_count(job, "solutions_found", a, sizeof a), get_count(job, "seeds_done", b, sizeof b),
                get_str(job, "algo", c, sizeof c));
    else if (is_kind(job, "enumerate"))
        fprintf(f, "  %-9s %s\n", "solutions", get_count(job, "solutions", a, sizeof a));
    render_checks(f, job);
    render_evidence(f, job);
    const msgpack_object *wait = render_get(job, "waiting");
    if (wait && wait->type == MSGPACK_OBJECT_STR) {
        char msg[200];
        fprintf(f, "  %-9s %s\n", "waiting", val_str(wait, msg, sizeof msg));
    }
    const msgpack_object *err = render_get(job, "last_error");
    if (err && err->type == MSGPACK_OBJECT_STR) {
        char msg[320];
        fprintf(f, "  %-9s %s\n", "error", val_str(err, msg, sizeof msg));
    }
}

/* What a job has produced so far, in one cell; for a job whose row the store refused, why. */
static const char *job_answer(const msgpack_object *job, char *buf, size_t len)
{
    const msgpack_object *st = render_get(job, "state");
    if (st && st->type == MSGPACK_OBJECT_STR && st->via.str.size == 7 &&
        !memcmp(st->via.str.ptr, "refused", 7))
        return get_str(job, "last_error", buf, len);
    if (is_kind(job, "count")) {
        char t[NQ_U128_GROUPED];
        snprintf(buf, len, "%s%s", get_count(job, "total", t, sizeof t),
                 get_bool(job, "final") ? "" : " (so far)");
        return buf;
    }
    if (is_kind(job, "solve")) {
        char t[NQ_U128_GROUPED];
        snprintf(buf, len, "%s found", get_count(job, "solutions_found", t, sizeof t));
        return buf;
    }
    return get_count(job, "solutions", buf, len);
}

void render_list(FILE *f, const msgpack_object *arr)
{
    char a[64], b[64], c[64], d[64], e[64], g[320];
    fprintf(f, "%6s  %-9s  %10s  %-9s  %17s  %s\n", "ID", "KIND", "N", "STATE", "DONE/TOTAL", "RESULT");
    if (!arr || arr->type != MSGPACK_OBJECT_ARRAY)
        return;
    for (uint32_t i = 0; i < arr->via.array.size; i++) {
        const msgpack_object *j = &arr->via.array.ptr[i];
        fprintf(f, "%6s  %-9s  %10s  %-9s  %17s  %s\n", get_str(j, "id", a, sizeof a),
                get_str(j, "kind", b, sizeof b), get_count(j, "n", c, sizeof c),
                get_str(j, "state", d, sizeof d),
                done_total(j, e, sizeof e), job_answer(j, g, sizeof g));
    }
}

/* ---- workers ---- */

/* The start of the worker's CURVE public key, "-" for a worker without keys. */
static const char *key_prefix(const msgpack_object *w, char *buf, size_t len)
{
    char key[64];
    const char *k = get_str(w, "pubkey", key, sizeof key);
    if (!strcmp(k, "-") || !k[0])
        return "-";
    snprintf(buf, len, "%.*s%s", QUERY_KEY_SHOWN, k, strlen(k) > QUERY_KEY_SHOWN ? "..." : "");
    return buf;
}

/* A worker's round trip in milliseconds, "-" before it is measured or when it is not connected. */
static const char *get_rtt(const msgpack_object *w, char *buf, size_t len)
{
    double s;
    if (get_double(w, "rtt_s", &s) != 0 || !(s > 0))
        return "-";
    snprintf(buf, len, "%.0f ms", s * 1000 < 1e9 ? s * 1000 : 1e9);
    return buf;
}

/* A GPU worker's devices, a line each under its row. */
static void render_devices(FILE *f, const msgpack_object *ds)
{
    char name[NQ_DEVICE_NAME_MAX], st[16], q[64], s[64], r[64];   /* numbers: room for 128 bits */
    for (uint32_t i = 0; ds && i < ds->via.array.size; i++) {
        const msgpack_object *d = &ds->via.array.ptr[i];
        fprintf(f, "  device %u  %-40s  %-8s  %8s queued  %10s shards  %s shards/s\n", (unsigned)i,
                get_str(d, "name", name, sizeof name), get_str(d, "state", st, sizeof st),
                get_str(d, "queued", q, sizeof q), get_str(d, "shards", s, sizeof s),
                get_fixed(d, "shards_per_s", 2, r, sizeof r));
    }
}

void render_workers(FILE *f, const msgpack_object *arr)
{
    char a[256], b[256], c[64], d[64], e[64], g[64], h[64], k[64], t[64], kern[256], key[32], rtt[32];
    fprintf(f, "%-28s  %-16s  %-15s  %7s  %5s  %6s  %8s  %13s  %9s  %9s  %-19s  %s\n", "ID", "HOST", "KEY",
            "THREADS", "ALIVE", "LEASES", "SHARDS", "NODES/S", "RTT", "CONFLICTS", "LAST SEEN", "KERNEL");
    if (!arr || arr->type != MSGPACK_OBJECT_ARRAY)
        return;
    for (uint32_t i = 0; i < arr->via.array.size; i++) {
        const msgpack_object *w = &arr->via.array.ptr[i];
        /* KERNEL last: a GPU worker's names its device, of any length */
        fprintf(f, "%-28s  %-16s  %-15s  %7s  %5s  %6s  %8s  %13s  %9s  %9s  %-19s  %s%s\n",
                get_str(w, "id", a, sizeof a), get_str(w, "host", b, sizeof b),
                key_prefix(w, key, sizeof key),
                get_str(w, "threads", c, sizeof c), get_str(w, "alive", d, sizeof d),
                get_str(w, "leases", e, sizeof e),
                get_count(w, "shards_done", g, sizeof g), get_group_fixed(w, "nodes_per_s", 0, h, sizeof h),
                get_rtt(w, rtt, sizeof rtt), get_count(w, "conflicts", k, sizeof k),
                get_time(w, "last_seen", t, sizeof t),
                get_str(w, "kernel", kern, sizeof kern), get_bool(w, "flagged") ? "  FLAGGED" : "");
        render_devices(f, get_array(w, "devices"));
    }
}

/* ---- result ---- */

/* A solve job's seeds that found a solution, over its study's methods: many seeds may find the
   same solution, so this is not the count of distinct ones. -1 when the document has no study. */
static double study_solved(const msgpack_object *res)
{
    const msgpack_object *study = get_array(res, "study");
    double solved = 0, one;
    if (!study)
        return -1;
    for (uint32_t i = 0; i < study->via.array.size; i++)
        if (get_double(&study->via.array.ptr[i], "solved", &one) == 0)
            solved += one;
    return solved;
}

static void result_answer(FILE *f, const msgpack_object *res)
{
    char a[64], b[64], c[64], d[64];
    const char *n = get_count(res, "n", a, sizeof a);
    if (is_kind(res, "count")) {
        fprintf(f, "N=%s: %s solutions, %s unique", n, get_count(res, "total", b, sizeof b),
                get_count(res, "unique", c, sizeof c));
        if (!get_bool(res, "final"))
            fprintf(f, " (partial: %s shards done)", done_total(res, d, sizeof d));
        fputc('\n', f);
    } else if (is_kind(res, "solve")) {
        double solved = study_solved(res);
        fprintf(f, "N=%s: %s distinct solution(s) found", n, get_count(res, "solutions_found", b, sizeof b));
        if (solved >= 0)
            fprintf(f, " by %.0f solved seeds", solved);
        fprintf(f, ", %s seeds done\n", done_total(res, c, sizeof c));
    } else if (is_kind(res, "enumerate")) {
        fprintf(f, "N=%s: %s solutions%s (nq export lists them)\n", n,
                get_count(res, "solutions", b, sizeof b),
                get_str(res, "state", c, sizeof c)[0] == 'd' ? "" : " so far");
    } else {
        fprintf(f, "job %s: kind %s\n", get_str(res, "id", b, sizeof b), get_str(res, "kind", c, sizeof c));
    }
}

/* A study can find thousands of solutions: people see the first few, programs use --json or export. */
#define RESULT_SOLUTIONS_SHOWN 10

static void result_solutions(FILE *f, const msgpack_object *res)
{
    char a[64], b[256], c[64], d[64], e[64], g[256], h[64];
    const msgpack_object *sols = get_array(res, "solutions");
    if (!sols || sols->via.array.size == 0)
        return;
    fprintf(f, "\n  %20s  %8s  %14s  %10s  %-16s  %s\n", "SEED", "SHARD", "STEPS", "SECONDS", "HASH", "WHERE");
    uint32_t shown = sols->via.array.size < RESULT_SOLUTIONS_SHOWN ? sols->via.array.size : RESULT_SOLUTIONS_SHOWN;
    for (uint32_t i = 0; i < shown; i++) {
        const msgpack_object *s = &sols->via.array.ptr[i];
        const msgpack_object *bytes = render_get(s, "bytes");
        fprintf(f, "  %20s  %8s  %14s  %10s  %-16.16s  %s", get_str(s, "seed", a, sizeof a),
                get_str(s, "shard", c, sizeof c), get_count(s, "steps", d, sizeof d),
                get_fixed(s, "seconds", 3, e, sizeof e), get_str(s, "hash", b, sizeof b),
                get_str(s, "where", g, sizeof g));
        if (bytes && bytes->type == MSGPACK_OBJECT_POSITIVE_INTEGER)   /* a file: its size, said */
            fprintf(f, " (%s bytes)", get_count(s, "bytes", h, sizeof h));
        fputc('\n', f);
    }
    double total;
    if (get_double(res, "solutions_total", &total) != 0 || total < sols->via.array.size)
        total = sols->via.array.size;
    if (total > shown)
        fprintf(f, "  ... %.0f more (--json lists up to 1000; nq export lists every seed)\n", total - shown);
}

static void result_study(FILE *f, const msgpack_object *res)
{
    char a[128], b[64], c[64], d[64], e[64], g[64], h[64], k[64], m[64], p[64];
    const msgpack_object *study = get_array(res, "study");
    if (!study || study->via.array.size == 0)
        return;
    fprintf(f, "\n  %-14s  %8s  %8s  %7s  %-17s  %12s  %12s  %10s  %10s\n", "ALGO", "SEEDS", "SOLVED", "RATE",
            "95% CI", "STEPS MED", "STEPS P95", "SEC MED", "SEC P95");
    for (uint32_t i = 0; i < study->via.array.size; i++) {
        const msgpack_object *s = &study->via.array.ptr[i];
        char ci[160];
        snprintf(ci, sizeof ci, "%s..%s", get_fixed(s, "ci_low", 3, h, sizeof h),
                 get_fixed(s, "ci_high", 3, k, sizeof k));
        fprintf(f, "  %-14s  %8s  %8s  %7s  %-17s  %12s  %12s  %10s  %10s\n", get_str(s, "algo", a, sizeof a),
                get_count(s, "seeds", b, sizeof b), get_count(s, "solved", c, sizeof c),
                get_fixed(s, "rate", 3, d, sizeof d), ci, get_group_fixed(s, "steps_median", 0, e, sizeof e),
                get_group_fixed(s, "steps_p95", 0, g, sizeof g),
                get_fixed(s, "seconds_median", 3, m, sizeof m),
                get_fixed(s, "seconds_p95", 3, p, sizeof p));
    }
}

void render_result(FILE *f, const msgpack_object *res)
{
    char a[64], nodes[256];
    const msgpack_object *workers = get_array(res, "workers");
    result_answer(f, res);
    render_job(f, res);
    /* a shard's seconds are a core's only on a CPU: a GPU counts thousands at once, each timed from
       its queueing to its end, so their sum is no core's (20.5 "core-seconds" in 0.1 s on 2 cores) */
    unsigned __int128 fast = 0;
    const msgpack_object *fo = render_get(res, "fast_shards");
    int gpu = fo && render_u128(fo, &fast) == 0 && fast > 0;
    fprintf(f, "  %-9s %s %s, nodes %s, ", "work", get_group_fixed(res, "core_seconds", 1, a, sizeof a),
            gpu ? "shard-seconds (summed over shards; a GPU's overlap)" : "core-seconds",
            get_nodes(res, nodes, sizeof nodes));
    if (workers) fprintf(f, "%u worker(s), %s thread(s)\n", workers->via.array.size,
                         get_count(res, "worker_threads", a, sizeof a));
    else fprintf(f, "workers -\n");
    if (render_get(res, "residues_ok")) {
        if (get_bool(res, "residues_ok")) fprintf(f, "  %-9s the total agrees with its shards' residues (mod 13, 15)\n", "residues");
        else fprintf(f, "  %-9s the total DISAGREES with its shards' residues: run 'nq check JOB'\n", "residues");
    }
    const msgpack_object *root = render_get(res, "manifest_root");
    char hex[80];
    if (root && root->type == MSGPACK_OBJECT_STR)    /* a kept manifest's hash-tree root: nq audit checks it */
        fprintf(f, "  %-9s root %s\n", "manifest", get_str(res, "manifest_root", hex, sizeof hex));
    result_solutions(f, res);
    result_study(f, res);
}

/* ---- export pages ---- */

/* The page's columns and rows, or -1 when it is not {columns: [str...], rows: [[ncols]...]}. */
static int page_check(const msgpack_object *page, const msgpack_object **cols, const msgpack_object **rows)
{
    *cols = get_array(page, "columns");
    *rows = get_array(page, "rows");
    if (!*cols || !*rows)
        return -1;
    for (uint32_t i = 0; i < (*cols)->via.array.size; i++)
        if ((*cols)->via.array.ptr[i].type != MSGPACK_OBJECT_STR)
            return -1;
    for (uint32_t i = 0; i < (*rows)->via.array.size; i++) {
        const msgpack_object *r = &(*rows)->via.array.ptr[i];
        if (r->type != MSGPACK_OBJECT_ARRAY || r->via.array.size != (*cols)->via.array.size)
            return -1;
    }
    return 0;
}

static void csv_string(FILE *f, const char *s, size_t len)
{
    int quote = 0;
    for (size_t i = 0; i < len && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!quote) {
        fwrite(s, 1, len, f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

/* One CSV cell: nil is empty (an array is spread over cells by csv_row). */
static void csv_cell(FILE *f, const msgpack_object *o)
{
    char buf[64];
    const char *num = json_num_str(o, buf, sizeof buf);
    if (num) fputs(num, f);
    else if (o->type == MSGPACK_OBJECT_STR) csv_string(f, o->via.str.ptr, o->via.str.size);
    else if (o->type == MSGPACK_OBJECT_BOOLEAN) fputs(o->via.boolean ? "true" : "false", f);
}

/* A row's cells, an array's values each in a cell of its own: a solution's columns are as many
   CSV columns, which a spreadsheet or a CSV reader can use, where one cell of them was text. */
static void csv_row(FILE *f, const msgpack_object *row)
{
    int first = 1;
    for (uint32_t i = 0; i < row->via.array.size; i++) {
        const msgpack_object *c = &row->via.array.ptr[i];
        uint32_t k = c->type == MSGPACK_OBJECT_ARRAY ? c->via.array.size : 1;
        for (uint32_t e = 0; e < k; e++, first = 0) {
            if (!first) fputc(',', f);
            csv_cell(f, c->type == MSGPACK_OBJECT_ARRAY ? &c->via.array.ptr[e] : c);
        }
    }
    fputc('\n', f);
}

/* The header: a column whose cells are arrays (in the first row) names each of its values. An
   enumerate job's "cols" holds the column of each row's queen, so its names are row0, row1, ... */
static void csv_header(FILE *f, const msgpack_object *cols, const msgpack_object *rows)
{
    const msgpack_object *row0 = rows->via.array.size ? &rows->via.array.ptr[0] : NULL;
    for (uint32_t i = 0; i < cols->via.array.size; i++) {
        const msgpack_object *name = &cols->via.array.ptr[i], *c = row0 ? &row0->via.array.ptr[i] : NULL;
        if (i) fputc(',', f);
        if (!c || c->type != MSGPACK_OBJECT_ARRAY) {
            csv_cell(f, name);
            continue;
        }
        int queens = name->via.str.size == 4 && !memcmp(name->via.str.ptr, "cols", 4);
        for (uint32_t e = 0; e < c->via.array.size; e++) {
            char h[80];
            snprintf(h, sizeof h, "%s%u", queens ? "row" : "", e);
            if (e) fputc(',', f);
            if (!queens) csv_cell(f, name);
            fputs(h, f);
        }
    }
    fputc('\n', f);
}

static void export_csv(FILE *f, const msgpack_object *cols, const msgpack_object *rows, int first_page)
{
    if (first_page)
        csv_header(f, cols, rows);
    for (uint32_t r = 0; r < rows->via.array.size; r++)
        csv_row(f, &rows->via.array.ptr[r]);
}

static void export_json(FILE *f, const msgpack_object *cols, const msgpack_object *rows,
                        int first_page, int last_page)
{
    if (first_page)
        fputc('[', f);
    for (uint32_t r = 0; r < rows->via.array.size; r++) {
        const msgpack_object *row = &rows->via.array.ptr[r];
        /* Rows of earlier pages end without a separator, so every row but the very first starts with one. */
        fputs(first_page && r == 0 ? "\n{" : ",\n{", f);
        for (uint32_t i = 0; i < row->via.array.size; i++) {
            const msgpack_object *name = &cols->via.array.ptr[i];
            if (i) fputc(',', f);
            json_write(f, name);
            fputc(':', f);
            json_write(f, &row->via.array.ptr[i]);
        }
        fputc('}', f);
    }
    if (last_page)
        fputs("\n]\n", f);
}

int render_export(FILE *f, const msgpack_object *page, int csv, int first_page, int last_page)
{
    const msgpack_object *cols, *rows;
    if (page_check(page, &cols, &rows) != 0)
        return -1;
    if (csv) export_csv(f, cols, rows, first_page);
    else export_json(f, cols, rows, first_page, last_page);
    return (int)rows->via.array.size;
}
