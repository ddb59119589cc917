/*
 * Reading a manifest: the header, then every line in one pass (format, residues, bounds, sums,
 * root), then the job's list and the lines' descriptors against it (manifest.h).
 */
#include "manifest.h"
#include "count_bounds.h"
#include "errf.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

/*
 * What listing the header's shards may cost, in steps of the search (shards_new_bounded). The
 * list is made only after every shard line was read, so the count it is bounded by is one that
 * the file's own lines back: a header alone ("n=18 depth=12 shards=268435456", 72 bytes) once
 * cost 44 s and 3 GB of listing before a line was read; the fuzzer's "n=29 depth=7 shards=3"
 * ran past its 10 s limit, and "n=32 depth=30 shards=1" kept nq audit busy for more than a
 * minute. Steps per shard, measured over every count list from n=4 to 32, depth 1 up to the
 * first one refused (2^27 steps or 2^28 shards): 0.002 (n=32 depth 3) to 74 (n=14 depth 12;
 * lists near depth n-2 are sparse). So a true list of S shards takes fewer than
 * LIST_STEPS_PER_SHARD * S + LIST_STEPS_MIN steps, with room to spare, and a false header
 * costs no more than that. LIST_STEPS_MAX bounds a file of 2^28 lines (2 min in a Debug
 * build); a true list dearer than that cannot be audited, and audit says why (the broker
 * takes as long to list it: n=17 depth 11 needs more than 2^27 steps, 10 s optimized).
 */
#define LIST_STEPS_PER_SHARD 256
#define LIST_STEPS_MIN (1ull << 20)     /* small lists: n=6 depth 4 takes 19 steps for its one shard */
#define LIST_STEPS_MAX (1ull << 30)

/* The shortest lines there are, "0 00 0 0 0 0 0 - 0\n" and "root HEX\n": a regular file's size
   bounds how many shard lines it can hold before one is read. */
#define SHARD_LINE_MIN 19
#define ROOT_LINE_LEN (5 + NQ_MERKLE_HEX + 1)

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
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    s->problems++;
    if (s->problem)
        s->problem(s->ud, line, what);
}

/* A depth or shard count that no count job of the header's n has, refused before a line is
   read (n, the encoding and shards <= NQ_SHARD_MAX_LIST are in range by manifest_head_parse;
   depth 0 is the automatic one, as in a list). */
static int head_check(const nq_manifest_head_t *h, char *err, size_t errlen)
{
    int lo, hi;
    if (shard_depth_range(NQ_KIND_COUNT, h->n, &lo, &hi) != 0)
        return nq_errf(err, errlen, "line 1: n=%d is no count this build lists", h->n);
    if (hi == 0 && h->shards != 1)
        return nq_errf(err, errlen, "line 1: shards=%llu, but a count of n=%d has one shard",
                       (unsigned long long)h->shards, h->n);
    if (h->depth == 0 || (h->depth >= lo && h->depth <= hi && hi > 0))
        return 0;
    if (hi == 0)
        return nq_errf(err, errlen, "line 1: depth=%d, but a count of n=%d has one shard, of depth 0",
                       h->depth, h->n);
    return nq_errf(err, errlen, "line 1: depth=%d, but a count of n=%d has depths %d to %d", h->depth, h->n,
                   lo > 0 ? lo : 1, hi);
}

/* A regular file must have room for the lines its header claims; a pipe's lines are read
   first and counted (manifest_scan_rest) before anything costs more than reading them. */
static int size_check(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    struct stat st;
    long long at = ftello(s->f);
    int fd = fileno(s->f);            /* -1 for a stream in memory */
    if (at < 0 || fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    uint64_t left = st.st_size > at ? (uint64_t)(st.st_size - at) : 0;
    uint64_t room = left < ROOT_LINE_LEN ? 0 : (left - ROOT_LINE_LEN) / SHARD_LINE_MIN;
    if (s->head.shards <= room)
        return 0;
    return nq_errf(err, errlen, "line 1: shards=%llu, but the %llu bytes after it hold %llu shard lines"
                   " at most (the file is cut short, or the header is not its own)",
                   (unsigned long long)s->head.shards, (unsigned long long)left, (unsigned long long)room);
}

/* Every class of solutions has 8, 4 or 2 members (no reflection fixes a solution for n > 1;
   N=1's one board is its class): a count lies between 2 (N=1: 1) and 8 times its unique. */
static void head_sums_check(nq_manifest_scan_t *s)
{
    nq_u128 t = s->head.total, u = s->head.unique;
    unsigned lo = s->head.n > 1 ? 2 : 1;
    char a[40], b[40];
    if (t / 8 > u || (t / 8 == u && t % 8 != 0))
        problem(s, 1, "header: total=%s is more than 8 x unique=%s, and a class of solutions has at most"
                " 8 members", u128_to_str(t, a), u128_to_str(u, b));
    else if (u > t / lo)
        problem(s, 1, "header: total=%s is less than %u x unique=%s, and a class of solutions has at least"
                " %u members", u128_to_str(t, a), lo, u128_to_str(u, b), lo);
}

int manifest_scan_head(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char why[256];
    unsigned char bad = 0;
    long len = read_line(s, &bad);
    merkle_init(&s->tree);
    crypto_generichash_init(&s->specs, NULL, 0, NQ_MERKLE_BYTES);
    s->total = s->unique = s->nodes = 0;
    s->fast_lines = 0;
    s->body_at = -1;
    if (len < 0)
        return read_err(s, len, bad, "the header", err, errlen);
    if (manifest_head_parse(s->buf, (size_t)len, &s->head, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line 1: %s", why);
    if (head_check(&s->head, err, errlen) != 0 || size_check(s, err, errlen) != 0)
        return -1;
    s->body_at = ftello(s->f);        /* -1 on a pipe: the lines cannot be read again */
    merkle_add(&s->tree, s->buf, (size_t)len);
    head_sums_check(s);
    return 0;
}

/* What a line claims that its own bytes refute, without the list and without counting: its
   residues, and the bounds of its descriptor (count_bounds.h; a descriptor that is not the
   list's is named after the lines, and one that does not decode has none): on nodes too when
   they are the CPU kernels', the only search those bounds describe. 1 when refuted. */
static int line_check(nq_manifest_scan_t *s, const nq_manifest_line_t *l)
{
    nq_count_bounds_t b;
    nq_count_result_t r = { l->total, l->unique, l->nodes, 0, 0 };
    int (*check)(const nq_count_bounds_t *, const nq_count_result_t *, char *, size_t) =
        l->nodes_kind == NQ_MANIFEST_NODES_CPU ? count_bounds_check : count_bounds_check_counts;
    char why[256];
    int refuted = 0;
    if (l->total % 13 != l->res13 || l->total % 15 != l->res15) {
        problem(s, s->line, "shard %llu: residues %u, %u disagree with total %llu (mod 13 = %u, mod 15 = %u)",
                (unsigned long long)l->idx, l->res13, l->res15, (unsigned long long)l->total,
                (unsigned)(l->total % 13), (unsigned)(l->total % 15));
        refuted = 1;
    }
    if (count_bounds(l->spec, l->spec_len, &b, why, sizeof why) == 0 && check(&b, &r, why, sizeof why) != 0) {
        problem(s, s->line, "shard %llu: no count of it gives this: %s", (unsigned long long)l->idx, why);
        refuted = 1;
    }
    return refuted;
}

/* The length first (two bytes, little-endian): the stream of descriptors splits one way only. */
static void spec_hash(crypto_generichash_state *h, const uint8_t *spec, size_t len)
{
    uint8_t n[2] = { (uint8_t)(len & 0xff), (uint8_t)(len >> 8) };
    crypto_generichash_update(h, n, sizeof n);
    crypto_generichash_update(h, spec, len);
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
    int refuted = line_check(s, &l);
    spec_hash(&s->specs, l.spec, l.spec_len);
    s->total += l.total;            /* < 2^28 shards of < 2^64 each: no 128-bit overflow */
    s->unique += l.unique;
    if (l.nodes_kind == NQ_MANIFEST_NODES_CPU)
        s->nodes += l.nodes;        /* the header's nodes are the CPU kernels' alone */
    else
        s->fast_lines++;
    merkle_add(&s->tree, s->buf, (size_t)len);
    if (s->on_line && s->on_line(s->ud, &l, refuted, why, sizeof why) != 0)
        return nq_errf(err, errlen, "line %llu: %s", (unsigned long long)s->line, why);
    return 0;
}

static void sum_check(nq_manifest_scan_t *s, const char *name, nq_u128 claimed, nq_u128 sum, const char *note)
{
    char a[40], b[40];
    if (claimed != sum)
        problem(s, 1, "header: %s=%s, but the shard lines sum to %s%s", name, u128_to_str(claimed, a),
                u128_to_str(sum, b), note);
}

/* The root line, nothing after it, then the checks that need every line. */
static int root_line(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char why[256], got[NQ_MERKLE_HEX + 1], want[NQ_MERKLE_HEX + 1];
    uint8_t root[NQ_MERKLE_BYTES];
    unsigned char bad = 0;
    nq_manifest_line_t l;
    long len = read_line(s, &bad);
    if (len < 0)
        return read_err(s, len, bad, "the root line", err, errlen);
    if (manifest_root_parse(s->buf, (size_t)len, s->root, why, sizeof why) != 0)
        return manifest_line_parse(s->buf, (size_t)len, &l, why, sizeof why) == 0
            ? nq_errf(err, errlen, "line %llu: a shard line where the root line should be, after the header's"
                      " shards=%llu", (unsigned long long)s->line, (unsigned long long)s->head.shards)
            : nq_errf(err, errlen, "line %llu: %s", (unsigned long long)s->line, why);
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
    sum_check(s, "total", s->head.total, s->total, "");
    sum_check(s, "unique", s->head.unique, s->unique, "");
    sum_check(s, "nodes", s->head.nodes, s->nodes, s->fast_lines ? " (the nodes of the lines of kind 0: the"
              " others are the fast GPU kernel's own)" : "");
    return 0;
}

/* The job's list, once the lines that claim it were read: its cost is bounded by them. */
static int list_make(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char why[256];
    const nq_manifest_head_t *h = &s->head;
    uint64_t steps = LIST_STEPS_MIN + LIST_STEPS_PER_SHARD * h->shards;   /* shards <= 2^28: no wrap */
    s->list = shards_new_bounded(NQ_KIND_COUNT, h->n, h->depth, h->encoding, h->shards,
                                 steps < LIST_STEPS_MAX ? steps : LIST_STEPS_MAX, why, sizeof why);
    if (!s->list)
        return nq_errf(err, errlen, "line 1: shards=%llu, but no list of n=%d depth=%d encoding=%d has that"
                       " many: %s", (unsigned long long)h->shards, h->n, h->depth, h->encoding, why);
    if (shards_count(s->list) != h->shards)
        return nq_errf(err, errlen, "line 1: shards=%llu, but the list of n=%d depth=%d encoding=%d has %llu",
                       (unsigned long long)h->shards, h->n, h->depth, h->encoding,
                       (unsigned long long)shards_count(s->list));
    return 0;
}

typedef struct {
    nq_manifest_scan_t *s;
    uint64_t line, named;
} name_t;

/* One shard line read again beside the list's shard i; nonzero when it is not the line the
   first pass read (the file changed under the scan). */
static int name_one(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    name_t *c = ud;
    nq_manifest_line_t l;
    char why[256];
    unsigned char bad = 0;
    long n = read_line(c->s, &bad);
    c->line = i + 2;
    if (n < 0 || manifest_line_parse(c->s->buf, (size_t)n, &l, why, sizeof why) != 0 || l.idx != i)
        return 1;
    if (l.spec_len != len || memcmp(l.spec, spec, len) != 0) {
        problem(c->s, c->line, "shard %llu: the descriptor is not shard %llu of the job's list",
                (unsigned long long)i, (unsigned long long)i);
        c->named++;
    }
    return 0;
}

static int hash_one(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    (void)i;
    spec_hash(ud, spec, len);
    return 0;
}

/* The lines' descriptors against the list's, by their hashes; when they differ, the shard lines
   are read again to name each one that is not its shard's. */
static void specs_check(nq_manifest_scan_t *s)
{
    crypto_generichash_state h;
    uint8_t got[NQ_MERKLE_BYTES], want[NQ_MERKLE_BYTES];
    crypto_generichash_init(&h, NULL, 0, sizeof want);
    shards_each(s->list, hash_one, &h);
    crypto_generichash_final(&h, want, sizeof want);
    crypto_generichash_final(&s->specs, got, sizeof got);
    if (memcmp(got, want, sizeof got) == 0)
        return;
    uint64_t lines = s->line;
    name_t c = { s, 2, 0 };
    if (s->body_at < 0 || fseeko(s->f, s->body_at, SEEK_SET) != 0)
        problem(s, 2, "the shard lines' descriptors are not the job's list (the input cannot be read again"
                " to name the lines: audit it as a file)");
    else if (shards_each(s->list, name_one, &c) != 0 || c.named == 0)   /* read again, they all agree */
        problem(s, c.line, "the file changed while it was read: its lines are not the ones read before");
    s->line = lines;
}

int manifest_scan_rest(nq_manifest_scan_t *s, char *err, size_t errlen)
{
    for (uint64_t i = 0; i < s->head.shards; i++) {
        int rc = shard_line(s, i, err, errlen);
        if (rc != 0)
            return rc;
    }
    int rc = root_line(s, err, errlen);
    if (rc == 0 && (rc = list_make(s, err, errlen)) == 0)
        specs_check(s);
    return rc;
}

void manifest_scan_free(nq_manifest_scan_t *s)
{
    shards_destroy(&s->list);
}
