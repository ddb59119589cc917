/*
 * Structured logging: key=value or JSON lines on stderr (see log.h).
 *
 * Safety against log injection (values from the wire in a line):
 *   - the formatted message is first "cleaned": raw bytes < 0x20, 0x7f, C1 controls and
 *     bytes that are not valid UTF-8 become \n, \t, \r or \xNN, so the text line is
 *     always one line of valid UTF-8 without terminal escapes;
 *   - nq_log_q() quotes a wire value as one "..." token with \" \\ \xNN escapes, so a
 *     space or "key=" inside it cannot start a field;
 *   - the JSON path parses key=value with the same rules: a quoted token is unescaped
 *     into one JSON string, a key is [A-Za-z0-9_.-]+ and never one seen before in the
 *     line (nor ts/level/event), so the object has no duplicate or overriding keys.
 * Each line is assembled in memory and written with one fwrite under a lock.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static nq_log_level_t log_level = NQ_LOG_INFO;
static int log_json;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

void nq_log_set_level(nq_log_level_t lvl) { log_level = lvl; }
int nq_log_enabled(nq_log_level_t lvl) { return lvl >= log_level && log_level != NQ_LOG_OFF; }

int nq_log_set_level_name(const char *name)
{
    for (int i = 0; i <= NQ_LOG_OFF; i++)
        if (strcmp(name, level_names[i]) == 0) {
            log_level = (nq_log_level_t)i;
            return 0;
        }
    return -1;
}

int nq_log_set_format(const char *name)
{
    if (strcmp(name, "text") == 0) log_json = 0;
    else if (strcmp(name, "json") == 0) log_json = 1;
    else return -1;
    return 0;
}

/* ---- UTF-8 and escapes ----------------------------------------------------------------- */

size_t nq_utf8_len(const void *sv, size_t n)
{
    const unsigned char *s = sv;
    if (!s || n == 0)
        return 0;
    unsigned c = s[0];
    size_t need;
    if (c < 0x80) return 1;
    else if (c >= 0xc2 && c <= 0xdf) need = 2;
    else if (c >= 0xe0 && c <= 0xef) need = 3;
    else if (c >= 0xf0 && c <= 0xf4) need = 4;
    else return 0;   /* continuation byte, overlong lead (c0, c1) or f5..ff */
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) ||    /* overlong 3-byte form */
        (c == 0xed && s[1] > 0x9f) ||    /* UTF-16 surrogates */
        (c == 0xf0 && s[1] < 0x90) ||    /* overlong 4-byte form */
        (c == 0xf4 && s[1] > 0x8f))      /* above U+10FFFF */
        return 0;
    return need;
}

size_t nq_utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;                            /* s[n] continues the character s[n - 1..] begins */
    return n;
}

static const char hexd[] = "0123456789abcdef";

static size_t put_hex(char *out, unsigned c)
{
    out[0] = '\\';
    out[1] = 'x';
    out[2] = hexd[(c >> 4) & 15];
    out[3] = hexd[c & 15];
    return 4;
}

/*
 * The escaped form of the character at S (N bytes left) into OUT (8 bytes at most):
 * returns how many input bytes it stands for, *OLEN the output length. QUOTE also
 * escapes '"' and '\\' (inside a quoted token).
 */
static size_t esc_char(const unsigned char *s, size_t n, int quote, char *out, size_t *olen)
{
    unsigned c = s[0];
    if (quote && (c == '"' || c == '\\')) {
        out[0] = '\\';
        out[1] = (char)c;
        *olen = 2;
        return 1;
    }
    if (c == '\n' || c == '\t' || c == '\r') {
        out[0] = '\\';
        out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        *olen = 2;
        return 1;
    }
    if (c < 0x20 || c == 0x7f) {
        *olen = put_hex(out, c);
        return 1;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        *olen = 1;
        return 1;
    }
    size_t k = nq_utf8_len(s, n);
    if (k == 0) {
        *olen = put_hex(out, c);
        return 1;
    }
    if (k == 2 && c == 0xc2 && s[1] < 0xa0) {   /* C1 control U+0080..U+009F (e.g. CSI) */
        *olen = put_hex(out, c);
        *olen += put_hex(out + 4, s[1]);
        return 2;
    }
    memcpy(out, s, k);
    *olen = k;
    return k;
}

/* Cleans S[0..n) into OUT (room for 4 * n + 1 bytes): no raw controls, valid UTF-8. */
static size_t clean_into(char *out, const char *s, size_t n)
{
    size_t o = 0, pl;
    for (size_t i = 0; i < n;) {
        i += esc_char((const unsigned char *)s + i, n - i, 0, out + o, &pl);
        o += pl;
    }
    out[o] = '\0';
    return o;
}

/* Fills BUF from index 1 with escaped characters of S while they fit below LIMIT. */
static size_t quote_fill(char *buf, size_t limit, const unsigned char *s, size_t n,
                         size_t *consumed)
{
    size_t o = 1, i = 0, pl;
    char piece[8];
    while (i < n) {
        size_t k = esc_char(s + i, n - i, 1, piece, &pl);
        if (o + pl > limit)
            break;
        memcpy(buf + o, piece, pl);
        o += pl;
        i += k;
    }
    *consumed = i;
    return o;
}

const char *nq_log_q(char *buf, size_t len, const void *sv, size_t n)
{
    if (!buf || len < 3)
        return "\"\"";
    const unsigned char *s = sv;
    if (!s)
        n = 0;
    size_t used, o;
    buf[0] = '"';
    o = quote_fill(buf, len - 2, s, n, &used);   /* room for the closing quote and NUL */
    if (used < n && len >= 6) {                  /* cut: make room for "..." as well */
        o = quote_fill(buf, len - 5, s, n, &used);
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

const char *nq_log_qs(char *buf, size_t len, const char *s)
{
    return nq_log_q(buf, len, s, s ? strlen(s) : 0);
}

const char *nq_log_v(char *buf, size_t len, const char *s)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@+,*-";
    if (s && *s && strspn(s, plain) == strlen(s) && strlen(s) < len) {
        memcpy(buf, s, strlen(s) + 1);
        return buf;
    }
    return nq_log_qs(buf, len, s);
}

/* ---- JSON ----------------------------------------------------------------------------- */

/* A JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)? */
static int is_number(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && s[i] == '-')
        i++;
    if (i >= len || s[i] < '0' || s[i] > '9')
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i < len && s[i] == '.') {
        size_t d = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    return i == len;
}

/* A JSON string of any bytes: controls as \uXXXX, bytes outside valid UTF-8 as the text \xNN. */
static void put_json_string(FILE *f, const char *sv, size_t len)
{
    const unsigned char *s = (const unsigned char *)sv;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f);
            i++;
        } else if (c == '\t') {
            fputs("\\t", f);
            i++;
        } else if (c == '\r') {
            fputs("\\r", f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            fputc((int)c, f);
            i++;
        } else {
            size_t k = nq_utf8_len(s + i, len - i);
            if (k == 0) {
                fprintf(f, "\\\\x%02x", c);
                i++;
            } else if (k == 2 && c == 0xc2 && s[i + 1] < 0xa0) {
                fprintf(f, "\\u%04x", s[i + 1]);
                i += 2;
            } else {
                fwrite(s + i, 1, k, f);
                i += k;
            }
        }
    }
    fputc('"', f);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The body of a quoted token (between the quotes) unescaped into a JSON string. */
static void put_json_unquoted(FILE *f, const char *s, size_t len)
{
    char *u = malloc(len + 1);
    if (!u) {
        put_json_string(f, s, len);
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            u[o++] = s[i];
            continue;
        }
        char e = s[++i];
        int h1, h2;
        if (e == 'n') u[o++] = '\n';
        else if (e == 't') u[o++] = '\t';
        else if (e == 'r') u[o++] = '\r';
        else if (e == '"' || e == '\\') u[o++] = e;
        else if (e == 'x' && i + 2 < len && (h1 = hexval(s[i + 1])) >= 0 &&
                 (h2 = hexval(s[i + 2])) >= 0) {
            u[o++] = (char)(h1 * 16 + h2);
            i += 2;
        } else {   /* unknown escape: keep it as written */
            u[o++] = '\\';
            u[o++] = e;
        }
    }
    put_json_string(f, u, o);
    free(u);
}

/* Keys already in the JSON object: a value's " key=" only starts a field if key is new. */
typedef struct {
    const char *k[64];
    size_t n[64];
    int count;
} keyset_t;

static int key_seen(const keyset_t *ks, const char *k, size_t n)
{
    static const char *const fixed[] = { "ts", "level", "event" };
    for (size_t i = 0; i < 3; i++)
        if (strlen(fixed[i]) == n && memcmp(fixed[i], k, n) == 0)
            return 1;
    for (int i = 0; i < ks->count; i++)
        if (ks->n[i] == n && memcmp(ks->k[i], k, n) == 0)
            return 1;
    return ks->count == 64;   /* full: no new fields, later text joins the last value */
}

static void key_add(keyset_t *ks, const char *k, size_t n)
{
    if (ks->count < 64) {
        ks->k[ks->count] = k;
        ks->n[ks->count++] = n;
    }
}

/* Length of a new key at P ("[A-Za-z0-9_.-]{1,64}="), 0 when P starts none. */
static size_t new_key_len(const keyset_t *ks, const char *p)
{
    size_t n = 0;
    while (n < 64 && ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
                      (p[n] >= '0' && p[n] <= '9') || p[n] == '_' || p[n] == '.' || p[n] == '-'))
        n++;
    if (n == 0 || p[n] != '=' || key_seen(ks, p, n))
        return 0;
    return n;
}

/* End of an unquoted value starting at V: the next " key=" with a new key, or the end. */
static const char *plain_end(const keyset_t *ks, const char *v)
{
    for (const char *sp = strchr(v, ' '); sp; sp = strchr(sp + 1, ' '))
        if (new_key_len(ks, sp + 1))
            return sp;
    return v + strlen(v);
}

/*
 * If V starts a quoted token ("..." with backslash escapes) followed by the end of the
 * line or by spaces and then the end or a new key, returns its closing quote; else NULL.
 */
static const char *quoted_close(const keyset_t *ks, const char *v)
{
    if (*v != '"')
        return NULL;
    const char *q = v + 1;
    for (; *q && *q != '"'; q++)
        if (*q == '\\' && q[1])
            q++;
    if (*q != '"')
        return NULL;
    const char *r = q + 1;
    while (*r == ' ')
        r++;
    if (*r == '\0' || (r > q + 1 && new_key_len(ks, r)))
        return q;
    return NULL;
}

/* Turns the cleaned "a=1 b=x y c=\"q\"" into JSON fields (see the top of this file). */
static void put_json_fields(FILE *f, const char *kv)
{
    keyset_t ks = { .count = 0 };
    const char *p = kv;
    while (*p == ' ')
        p++;
    if (*p && !new_key_len(&ks, p)) {   /* text before the first key: field "_" */
        const char *end = plain_end(&ks, p);
        fputs(",\"_\":", f);
        put_json_string(f, p, (size_t)(end - p));
        key_add(&ks, "_", 1);
        p = end;
    }
    while (*p) {
        while (*p == ' ')
            p++;
        size_t kn = new_key_len(&ks, p);
        if (!kn)
            break;   /* only trailing spaces are left */
        const char *v = p + kn + 1;
        fputc(',', f);
        put_json_string(f, p, kn);
        fputc(':', f);
        key_add(&ks, p, kn);
        const char *q = quoted_close(&ks, v);
        if (q) {
            put_json_unquoted(f, v + 1, (size_t)(q - v - 1));
            p = q + 1;
        } else {
            const char *end = plain_end(&ks, v);
            if (is_number(v, (size_t)(end - v))) fwrite(v, 1, (size_t)(end - v), f);
            else put_json_string(f, v, (size_t)(end - v));
            p = end;
        }
    }
}

/* ---- the line ------------------------------------------------------------------------- */

void nq_log(nq_log_level_t lvl, const char *event, const char *fmt, ...)
{
    if (!nq_log_enabled(lvl))
        return;
    if ((unsigned)lvl > NQ_LOG_ERROR)
        lvl = NQ_LOG_ERROR;
    char msg[2048], clean[4 * sizeof msg + 1], ev[4 * 64 + 1];
    va_list ap;
    va_start(ap, fmt);
    int mn = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t ml = mn < 0 ? 0 : (size_t)mn >= sizeof msg ? sizeof msg - 1 : (size_t)mn;
    msg[ml] = '\0';
    clean_into(clean, msg, strnlen(msg, ml));   /* a %s with NUL inside ends the message */
    size_t evl = event ? strlen(event) : 0;
    clean_into(ev, event ? event : "", evl > 64 ? 64 : evl);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    pthread_mutex_lock(&log_lock);
    FILE *out = f ? f : stderr;   /* out of memory: straight to stderr, unbuffered */
    if (log_json) {
        fprintf(out, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"event\":", when,
                ts.tv_nsec / 1000000, level_names[lvl]);
        put_json_string(out, ev, strlen(ev));
        put_json_fields(out, clean);
        fputs("}\n", out);
    } else {
        fprintf(out, "ts=%s.%03ldZ level=%s event=%s%s%s\n", when, ts.tv_nsec / 1000000,
                level_names[lvl], ev, clean[0] ? " " : "", clean);
    }
    if (f && fclose(f) == 0) {
        fwrite(line, 1, len, stderr);
        fflush(stderr);
    }
    pthread_mutex_unlock(&log_lock);
    free(line);
}
