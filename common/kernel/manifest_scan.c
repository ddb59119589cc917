/* One pass over a manifest: its format, descriptors, residues, sums and root (manifest.h). */
#include "manifest.h"
#include "errf.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

/*
 * What listing the header's shards may cost before a line is read, in steps of the search
 * (shards_new_bounded). The header is a few bytes that anyone can write: the fuzzer's
 * "n=29 depth=7 shards=3" ran past its 10 s limit searching for a list far too long, and
 * "n=32 depth=30 shards=1" kept nq audit busy for more than a minute. Steps per shard, measured over
 * every count list from n=4 to 32, depth 1 up to the first one refused (2^27 steps or 2^28
 * shards): 0.002 (n=32 depth 3) to 74 (n=14 depth 12; lists near depth n-2 are sparse). So a
 * true list of S shards takes fewer than LIST_STEPS_PER_SHARD * S + LIST_STEPS_MIN steps, with
 * room to spare, and a false header costs no more than that. LIST_STEPS_MAX bounds a header
 * that claims 2^28 shards (2 min in a Debug build); a true list dearer than that cannot be
 * audited, and audit says why (the broker takes as long to list it: n=17 depth 11 needs
 * more than 2^27 steps, 10 s optimized).
 */
#define LIST_STEPS_PER_SHARD 256
#define LIST_STEPS_MIN (1ull << 20)     /* small lists: n=6 depth 4 takes 19 steps for its one shard */
#define LIST_STEPS_MAX (1ull << 30)

enum { READ_EOF = -1, READ_LONG = -2, READ_BYTE = -3, READ_NO_NL = -4, READ_IO = -5 };

/* One line into s->buf without its "\n": its length, or a READ_* code. A line is bounded
   before it is stored, so a file of one 10 GB line costs nothing. */
static long read_line(nq_manifest_scan_t *s, unsigned char *bad)
{
    size_t n = 0;
    int c;
    while ((c = getc_unlocked(s->f)) != EOF && c != '\n') {
        if (n == NQ_MANIFEST_LINE_MAX)
            return READ_LONG;
        if (c < ' ' || c == 0x7f)
            return *bad = (unsigned char)c, READ_BYTE;
        s->buf[n++] = (char)c;
    }
    if (c == EOF && ferror(s->f))
        return READ_IO;
    if (c == EOF)
        return n == 0 ? READ_EOF : READ_NO_NL;
    s->buf[n] = '\0';
    s->line++;
    return (long)n;
}

static int read_err(nq_manifest_scan_t *s, long rc, unsigned char bad, const char *want, char *err,
                    size_t errlen)
{
    uint64_t at = s->line + 1;
    switch (rc) {
    case READ_EOF: return nq_errf(err, errlen, "line %llu: the file ends where %s should be (truncated?)",
                                  (unsigned long long)at, want);
    case READ_LONG: return nq_errf(err, errlen, "line %llu: longer than %d bytes", (unsigned long long)at,
                                   NQ_MANIFEST_LINE_MAX);
    case READ_BYTE: return nq_errf(err, errlen, "line %llu: control byte 0x%02x", (unsigned long long)at,
                                   bad);
    case READ_NO_NL: return nq_errf(err, errlen, "line %llu: the last line has no newline (truncated?)",
                                    (unsigned long long)at);
    default: nq_errf(err, errlen, "read error at line %llu: %s", (unsigned long long)at, strerror(errno));
             return -2;
    }
}

static void problem(nq_manifest_scan_t *s, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(nq_manifest_scan_t *s, uint64_t line, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    s->problems++;
    if (s->problem)
        s->problem(s->ud, line, what);
}

int manifest_scan_head(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char why[256];
    unsigned char bad = 0;
    long len = read_line(s, &bad);
    merkle_init(&s->tree);
    s->total = s->unique = s->nodes = 0;
    if (len < 0)
        return read_err(s, len, bad, "the header", err, errlen);
    if (manifest_head_parse(s->buf, (size_t)len, &s->head, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line 1: %s", why);
    uint64_t steps = LIST_STEPS_MIN + LIST_STEPS_PER_SHARD * s->head.shards;   /* shards <= 2^28: no wrap */
    s->list = shards_new_bounded(NQ_KIND_COUNT, s->head.n, s->head.depth, s->head.encoding, s->head.shards,
                                 steps < LIST_STEPS_MAX ? steps : LIST_STEPS_MAX, why, sizeof why);
    if (!s->list)
        return nq_errf(err, errlen, "line 1: shards=%llu, but no list of n=%d depth=%d encoding=%d has that"
                       " many: %s", (unsigned long long)s->head.shards, s->head.n, s->head.depth,
                       s->head.encoding, why);
    if (shards_count(s->list) != s->head.shards)
        return nq_errf(err, errlen, "line 1: shards=%llu, but the list of n=%d depth=%d encoding=%d has %llu",
                       (unsigned long long)s->head.shards, s->head.n, s->head.depth, s->head.encoding,
                       (unsigned long long)shards_count(s->list));
    merkle_add(&s->tree, s->buf, (size_t)len);
    return 0;
}

/* What a line claims that its own bytes or the job's list can refute, without counting. */
static void line_check(nq_manifest_scan_t *s, const nq_manifest_line_t *l)
{
    uint8_t want[NQ_MAX_SPEC];
    size_t wl = shards_get(s->list, l->idx, want);
    if (wl != l->spec_len || memcmp(want, l->spec, wl) != 0)
        problem(s, s->line, "shard %llu: the descriptor is not shard %llu of the job's list",
                (unsigned long long)l->idx, (unsigned long long)l->idx);
    if (l->total % 13 != l->res13 || l->total % 15 != l->res15)
        problem(s, s->line, "shard %llu: residues %u, %u disagree with total %llu (mod 13 = %u, mod 15 = %u)",
                (unsigned long long)l->idx, l->res13, l->res15, (unsigned long long)l->total,
                (unsigned)(l->total % 13), (unsigned)(l->total % 15));
}

static int shard_line(nq_manifest_scan_t *s, uint64_t idx, char *err, size_t errlen)
{
    nq_manifest_line_t l;
    char why[256];
    unsigned char bad = 0;
    long len = read_line(s, &bad);
    if (len < 0)
        return read_err(s, len, bad, "a shard line", err, errlen);
    if (len > 5 && memcmp(s->buf, "root ", 5) == 0)
        return nq_errf(err, errlen, "line %llu: the root line comes after %llu of %llu shard lines",
                       (unsigned long long)s->line, (unsigned long long)idx,
                       (unsigned long long)s->head.shards);
    if (manifest_line_parse(s->buf, (size_t)len, &l, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line %llu: %s", (unsigned long long)s->line, why);
    if (l.idx != idx)
        return nq_errf(err, errlen, "line %llu: shard %llu where shard %llu should be (lines out of order?)",
                       (unsigned long long)s->line, (unsigned long long)l.idx, (unsigned long long)idx);
    line_check(s, &l);
    s->total += l.total;            /* < 2^28 shards of < 2^64 each: no 128-bit overflow */
    s->unique += l.unique;
    s->nodes += l.nodes;
    merkle_add(&s->tree, s->buf, (size_t)len);
    if (s->on_line && s->on_line(s->ud, &l, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line %llu: %s", (unsigned long long)s->line, why);
    return 0;
}

static void sum_check(nq_manifest_scan_t *s, const char *name, nq_u128 claimed, nq_u128 sum)
{
    char a[40], b[40];
    if (claimed != sum)
        problem(s, 1, "header: %s=%s, but the shard lines sum to %s", name, u128_to_str(claimed, a),
                u128_to_str(sum, b));
}

/* The root line, nothing after it, then the checks that need every line. */
static int root_line(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char why[256], got[NQ_MERKLE_HEX + 1], want[NQ_MERKLE_HEX + 1];
    uint8_t root[NQ_MERKLE_BYTES];
    unsigned char bad = 0;
    long len = read_line(s, &bad);
    if (len < 0)
        return read_err(s, len, bad, "the root line", err, errlen);
    if (manifest_root_parse(s->buf, (size_t)len, s->root, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line %llu: %s", (unsigned long long)s->line, why);
    uint64_t root_at = s->line;
    if ((len = read_line(s, &bad)) != READ_EOF)
        return len == READ_IO ? read_err(s, len, bad, "", err, errlen)
                              : nq_errf(err, errlen, "line %llu: text after the root line",
                                        (unsigned long long)root_at + 1);
    merkle_root(&s->tree, root);
    if (memcmp(root, s->root, NQ_MERKLE_BYTES) != 0) {
        merkle_hex(root, got);
        merkle_hex(s->root, want);
        problem(s, root_at, "root: the lines hash to %s, the root line says %s", got, want);
    }
    sum_check(s, "total", s->head.total, s->total);
    sum_check(s, "unique", s->head.unique, s->unique);
    sum_check(s, "nodes", s->head.nodes, s->nodes);
    return 0;
}

int manifest_scan_rest(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < s->head.shards; i++) {
        int rc = shard_line(s, i, err, errlen);
        if (rc != 0)
            return rc;
    }
    return root_line(s, err, errlen);
}

void manifest_scan_free(nq_manifest_scan_t *s)
{
    shards_destroy(&s->list);
}
