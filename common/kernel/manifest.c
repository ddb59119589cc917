/*
 * The manifest's lines: writing them, and reading them back strictly (see manifest.h). Every
 * byte read here may be hostile: lengths are bounded before use, numbers are digits only with
 * no leading zero and no overflow, hex is lowercase and even, and a field that is wrong is
 * named in the message.
 */
#include "manifest.h"
#include "errf.h"
#include "merkle.h"
#include "shard.h"

#include <stdio.h>
#include <string.h>

#define HEAD_FIELDS 10
#define LINE_FIELDS 12   /* version 4; version 3 has 11 */
#define ROOT_FIELDS 2
#define U64_DIGITS 20      /* 18446744073709551615 */
#define U128_DIGITS 39

typedef struct { const char *p; size_t len; } tok_t;

/* Splits on single spaces into exactly `want` non-empty fields. */
static int split(const char *s, size_t len, tok_t *t, int want, char *err, size_t errlen)
{
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ' ')
            continue;
        if (i == start)
            return nq_errf(err, errlen, "empty field at column %zu (two spaces, or a space at an end)",
                           i + 1);
        if (n == want)
            return nq_errf(err, errlen, "more than %d fields", want);
        t[n].p = s + start;
        t[n].len = i - start;
        n++;
        start = i + 1;
    }
    if (n != want)
        return nq_errf(err, errlen, "%d field(s), expected %d", n, want);
    return 0;
}

static int tok_is(const tok_t *t, const char *lit)
{
    return t->len == strlen(lit) && memcmp(t->p, lit, t->len) == 0;
}

/* Canonical decimal: 1..max_digits digits, no leading zero, at most max. */
static int dec_parse(const char *p, size_t len, size_t max_digits, nq_u128 max, nq_u128 *out)
{
    nq_u128 v = 0;
    if (len == 0 || len > max_digits || (len > 1 && p[0] == '0'))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > max / 10 || (v == max / 10 && d > max % 10))   /* v * 10 + d > max, without wrapping */
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int u64_field(const tok_t *t, const char *name, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    nq_u128 v;
    if (dec_parse(t->p, t->len, U64_DIGITS, max, &v) != 0)
        return nq_errf(err, errlen, "%s is not a decimal number from 0 to %llu without leading zeros",
                       name, (unsigned long long)max);
    *out = (uint64_t)v;
    return 0;
}

/* "key=NUMBER" as a 128-bit value up to max. */
static int kv_field(const tok_t *t, const char *key, nq_u128 max, nq_u128 *out, char *err, size_t errlen)
{
    size_t k = strlen(key);
    if (t->len <= k || memcmp(t->p, key, k) != 0 || t->p[k] != '=')
        return nq_errf(err, errlen, "expected %s=NUMBER", key);
    if (dec_parse(t->p + k + 1, t->len - k - 1, U128_DIGITS, max, out) != 0)
        return nq_errf(err, errlen, "%s is not a decimal number without leading zeros in range", key);
    return 0;
}

static int worker_ok(const char *p, size_t len)
{
    if (len == 0 || len > NQ_MANIFEST_WORKER_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)   /* no space, no control byte */
            return 0;
    return 1;
}

size_t manifest_head_format(const nq_manifest_head_t *h, char *buf, size_t cap)
{
    char t[40], u[40], x[40];
    int n = snprintf(buf, cap,
                     "nq-manifest %d count n=%d depth=%d encoding=%d shards=%llu total=%s unique=%s nodes=%s",
                     NQ_MANIFEST_VERSION, h->n, h->depth, h->encoding,
                     (unsigned long long)h->shards,
                     u128_to_str(h->total, t), u128_to_str(h->unique, u), u128_to_str(h->nodes, x));
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t manifest_line_format(const nq_manifest_line_t *l, char *buf, size_t cap)
{
    static const char digits[] = "0123456789abcdef";
    char hex[2 * NQ_MAX_SPEC + 1];
    size_t wl = strnlen(l->worker, sizeof l->worker);
    if (l->spec_len == 0 || l->spec_len > NQ_MAX_SPEC || l->res13 >= 13 || l->res15 >= 15 ||
        !worker_ok(l->worker, wl) || l->nodes_kind > NQ_MANIFEST_NODES_GPU_FAST || l->by_copy > 1)
        return 0;
    for (size_t i = 0; i < l->spec_len; i++) {
        hex[2 * i] = digits[l->spec[i] >> 4];
        hex[2 * i + 1] = digits[l->spec[i] & 15];
    }
    hex[2 * l->spec_len] = '\0';
    int n = snprintf(buf, cap, "%llu %s %llu %llu %llu %u %u %s %llu %llu %u %u", (unsigned long long)l->idx,
                     hex, (unsigned long long)l->total, (unsigned long long)l->unique,
                     (unsigned long long)l->nodes, l->res13, l->res15, l->worker,
                     (unsigned long long)l->confirmations, (unsigned long long)l->evidence, l->nodes_kind,
                     l->by_copy);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t manifest_root_format(const uint8_t root[32], char *buf, size_t cap)
{
    char hex[NQ_MERKLE_HEX + 1];
    merkle_hex(root, hex);
    int n = snprintf(buf, cap, "root %s", hex);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Magic, version and kind come first, so a file that is not a manifest, a newer format and a
   job of another kind each get their own message. */
static int head_preamble(const tok_t *t, char *err, size_t errlen)
{
    if (!tok_is(&t[0], "nq-manifest"))
        return nq_errf(err, errlen, "not a manifest: the first line must start with 'nq-manifest'");
    if (tok_is(&t[1], "3"))
        return nq_errf(err, errlen, "manifest version 3 is not read by this build, which reads version 4"
                       " only (a shard line says whether a tail copy decided it): export the job again"
                       " with this nq");
    if (!tok_is(&t[1], "4"))
        return nq_errf(err, errlen, "manifest version '%.*s' is not the one this build reads (4)",
                       (int)(t[1].len > 20 ? 20 : t[1].len), t[1].p);
    if (tok_is(&t[2], "solve") || tok_is(&t[2], "enumerate"))
        return nq_errf(err, errlen, "manifest: count jobs only");
    if (!tok_is(&t[2], "count"))
        return nq_errf(err, errlen, "the kind must be 'count'");
    return 0;
}

int manifest_head_parse(const char *s, size_t len, nq_manifest_head_t *h, char *err, size_t errlen)
{
    tok_t t[HEAD_FIELDS];
    nq_u128 n, depth, enc, shards;
    if (split(s, len, t, HEAD_FIELDS, err, errlen) != 0 || head_preamble(t, err, errlen) != 0)
        return -1;
    h->version = NQ_MANIFEST_VERSION;
    if (kv_field(&t[3], "n", NQ_SHARD_MAX_N, &n, err, errlen) != 0 ||
        kv_field(&t[4], "depth", NQ_SHARD_MAX_N, &depth, err, errlen) != 0 ||
        kv_field(&t[5], "encoding", NQ_SHARD_ENCODING, &enc, err, errlen) != 0 ||
        kv_field(&t[6], "shards", NQ_SHARD_MAX_LIST, &shards, err, errlen) != 0 ||
        kv_field(&t[7], "total", NQ_U128_MAX, &h->total, err, errlen) != 0 ||
        kv_field(&t[8], "unique", NQ_U128_MAX, &h->unique, err, errlen) != 0 ||
        kv_field(&t[9], "nodes", NQ_U128_MAX, &h->nodes, err, errlen) != 0)
        return -1;
    if (n < 1 || enc != NQ_SHARD_ENCODING || shards < 1)
        return nq_errf(err, errlen, "n and shards must be at least 1, and the encoding %d", NQ_SHARD_ENCODING);
    h->n = (int)n;
    h->depth = (int)depth;
    h->encoding = (int)enc;
    h->shards = (uint64_t)shards;
    return 0;
}

static int hex_nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int spec_field(const tok_t *t, nq_manifest_line_t *l, char *err, size_t errlen)
{
    if (t->len == 0 || t->len % 2 || t->len > 2 * NQ_MAX_SPEC)
        return nq_errf(err, errlen, "the descriptor must be 2 to %d hex digits, an even number",
                       2 * NQ_MAX_SPEC);
    for (size_t i = 0; i < t->len; i += 2) {
        int hi = hex_nibble(t->p[i]), lo = hex_nibble(t->p[i + 1]);
        if (hi < 0 || lo < 0)
            return nq_errf(err, errlen,
                           "the descriptor has a character that is not lowercase hex at byte %zu",
                           i + (hi < 0 ? 1 : 2));
        l->spec[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    l->spec_len = t->len / 2;
    return 0;
}

int manifest_line_parse(const char *s, size_t len, nq_manifest_line_t *l, char *err, size_t errlen)
{
    tok_t t[LINE_FIELDS];
    uint64_t r13 = 0, r15 = 0, kind = NQ_MANIFEST_NODES_CPU, copy = 0;
    l->evidence = 0;
    if (split(s, len, t, LINE_FIELDS, err, errlen) != 0 ||
        u64_field(&t[0], "the shard index", UINT64_MAX, &l->idx, err, errlen) != 0 ||
        spec_field(&t[1], l, err, errlen) != 0 ||
        u64_field(&t[2], "total", UINT64_MAX, &l->total, err, errlen) != 0 ||
        u64_field(&t[3], "unique", UINT64_MAX, &l->unique, err, errlen) != 0 ||
        u64_field(&t[4], "nodes", UINT64_MAX, &l->nodes, err, errlen) != 0 ||
        u64_field(&t[5], "res13", 12, &r13, err, errlen) != 0 ||
        u64_field(&t[6], "res15", 14, &r15, err, errlen) != 0 ||
        u64_field(&t[8], "confirmations", UINT64_MAX, &l->confirmations, err, errlen) != 0 ||
        u64_field(&t[9], "evidence", UINT64_MAX, &l->evidence, err, errlen) != 0 ||
        u64_field(&t[10], "nodes_kind", NQ_MANIFEST_NODES_GPU_FAST, &kind, err, errlen) != 0 ||
        u64_field(&t[11], "by_copy", 1, &copy, err, errlen) != 0)
        return -1;
    if (!worker_ok(t[7].p, t[7].len))
        return nq_errf(err, errlen, "the worker must be 1 to %d bytes without spaces or control bytes",
                       NQ_MANIFEST_WORKER_MAX);
    memcpy(l->worker, t[7].p, t[7].len);
    l->worker[t[7].len] = '\0';
    l->res13 = (unsigned)r13;
    l->res15 = (unsigned)r15;
    l->nodes_kind = (unsigned)kind;
    l->by_copy = (unsigned)copy;
    return 0;
}

int manifest_root_parse(const char *s, size_t len, uint8_t root[32], char *err, size_t errlen)
{
    tok_t t[ROOT_FIELDS];
    if (split(s, len, t, ROOT_FIELDS, err, errlen) != 0)
        return -1;
    if (!tok_is(&t[0], "root"))
        return nq_errf(err, errlen, "expected 'root HEX'");
    if (merkle_parse_hex(t[1].p, t[1].len, root) != 0)
        return nq_errf(err, errlen, "the root must be %d lowercase hex digits", NQ_MERKLE_HEX);
    return 0;
}
