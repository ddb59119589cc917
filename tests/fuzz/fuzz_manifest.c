/*
 * libFuzzer target over the one-pass manifest scan that `nq audit FILE` runs first
 * (manifest_scan_head + manifest_scan_rest, common/kernel/manifest_scan.c; see
 * tests/fuzz/README.md). The input is the file: it is read through fmemopen, the same FILE*
 * path as audit's fopen. A manifest comes from whoever publishes a count, so every byte is
 * hostile.
 *
 * Properties checked on every input, beyond "no crash, no leak, no UB":
 *   - a refusal always says "line L: <reason>", L at most one past the lines read;
 *   - every problem reported has a text and a line that was read;
 *   - an accepted file is exactly the header's S shards + 2 lines, each ended by "\n";
 *     shards 0..S-1 came to on_line in order; each line is the one spelling of what it was
 *     parsed to (formatting the record gives its bytes back); the scan's sums are the sums
 *     of those lines, and its tree has S + 1 leaves;
 *   - the problems are exactly the disagreements recounted here, independently: descriptors
 *     that are not the list's (each line read again from the input), residues that are not
 *     the total's, numbers that the line's descriptor cannot give (count_bounds; nodes only
 *     on lines whose nodes are the CPU kernels', whose nodes alone the header sums), the root
 *     against a level-by-level tree over the lines (not the scan's streaming one), the three
 *     sums, a header count outside 2..8 times its unique; and a line is refuted to on_line
 *     exactly when its residues or its bounds are broken;
 *   - no header costs more than its lines: headers that claim up to 2^28 shards are fuzzed
 *     too, and the list is made only for as many shards as the input has lines.
 * test_manifest replays the seeds and tests/fuzz/regressions/manifest-* through this very file.
 */
#include "fuzz.h"
#include "count_bounds.h"
#include "log.h"
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const nq_manifest_scan_t *s;
    uint64_t next;                     /* the shard index on_line expects */
    uint64_t problems, expected;       /* reported through the callback; recounted here */
    nq_u128 total, unique, nodes;      /* nodes: of the lines whose nodes are the CPU kernels' */
    uint64_t fast;
} seen_t;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_manifest: %s%s%s\n", what, detail[0] ? ": " : "", detail);
    abort();
}

static void on_problem(void *ud, uint64_t line, const char *what)
{
    seen_t *v = ud;
    if (!what || !what[0])
        fail("a problem without a text", "");
    if (line < 1 || line > v->s->line)
        fail("a problem on a line that was not read", what);
    v->problems++;
}

/* The line's bytes are still in the scan's buffer when on_line is called. */
static int on_line(void *ud, const nq_manifest_line_t *l, int refuted, char *err, size_t errlen)
{
    seen_t *v = ud;
    char again[NQ_MANIFEST_LINE_MAX + 1], why[256];
    nq_count_bounds_t b;
    nq_count_result_t r = { l->total, l->unique, l->nodes, 0, 0 };
    (void)err; (void)errlen;
    if (l->idx != v->next || l->idx >= v->s->head.shards)
        fail("a shard line out of order reached on_line", v->s->buf);
    size_t n = manifest_line_format(l, again, sizeof again);
    if (n == 0 || n != strlen(v->s->buf) || memcmp(again, v->s->buf, n) != 0)
        fail("a shard line accepted in a spelling other than its own", v->s->buf);
    int res = l->total % 13 != l->res13 || l->total % 15 != l->res15;
    int cpu = l->nodes_kind == NQ_MANIFEST_NODES_CPU;     /* nodes bounded only where they are the CPU's */
    int bound = count_bounds(l->spec, l->spec_len, &b, why, sizeof why) == 0 &&
                (cpu ? count_bounds_check(&b, &r, why, sizeof why)
                     : count_bounds_check_counts(&b, &r, why, sizeof why)) != 0;
    if (refuted != (res || bound))
        fail("a line refuted to on_line other than by its residues and bounds", v->s->buf);
    v->expected += res + bound;
    v->total += l->total;
    v->unique += l->unique;
    v->nodes += cpu ? l->nodes : 0;
    v->fast += !cpu;
    v->next++;
    return 0;
}

/* "line L: reason" with 1 <= L <= lines read + 1 and a reason. */
static void check_refusal(const nq_manifest_scan_t *s, const char *err)
{
    char *end;
    if (strncmp(err, "line ", 5) != 0)
        fail("a refusal that does not name its line", err);
    unsigned long long at = strtoull(err + 5, &end, 10);
    if (end == err + 5 || at < 1 || at > s->line + 1 || strncmp(end, ": ", 2) != 0 || !end[2])
        fail("a refusal without a line that was read, or without a reason", err);
}

/* The root by the definition in merkle.h, level by level over the lines that start at at[0..lines-1]
   (each ended by "\n"): a second implementation, so that the scan's streaming tree is checked,
   not trusted. */
static void root_by_levels(const uint8_t *data, const size_t *at, size_t lines, uint8_t out[NQ_MERKLE_BYTES])
{
    uint8_t (*h)[NQ_MERKLE_BYTES] = malloc(lines * sizeof *h);
    if (!h)
        fail("out of memory", "");
    for (size_t i = 0; i < lines; i++)
        merkle_leaf_hash(data + at[i], at[i + 1] - at[i] - 1, h[i]);
    for (size_t w = lines; w > 1; w = (w + 1) / 2) {
        for (size_t i = 0; i + 1 < w; i += 2)
            merkle_node_hash(h[i], h[i + 1], h[i / 2]);
        if (w % 2)
            memcpy(h[w / 2], h[w - 1], NQ_MERKLE_BYTES);    /* the odd node is promoted */
    }
    memcpy(out, h[0], NQ_MERKLE_BYTES);
    free(h);
}

/* A header count that is not 2 to 8 times its unique (N=1: 1 to 8), without the scan's formula:
   where 8u or 2u would not fit in 128 bits, no count is above or every count is below it. */
static int head_out_of_range(const nq_manifest_head_t *h)
{
    nq_u128 t = h->total, u = h->unique;
    int over = u < (nq_u128)1 << 125 && t > 8 * u;
    int under = h->n > 1 ? u >= (nq_u128)1 << 127 || 2 * u > t : u > t;
    return over || under;
}

/* The shard lines whose descriptor is not their shard's in the list, read from the input. */
static uint64_t specs_not_the_lists(const nq_manifest_scan_t *s, const uint8_t *data, const size_t *at)
{
    uint64_t bad = 0;
    for (uint64_t i = 0; i < s->head.shards; i++) {
        nq_manifest_line_t l;
        uint8_t want[NQ_MAX_SPEC];
        char why[256];
        const char *line = (const char *)data + at[i + 1];
        if (manifest_line_parse(line, at[i + 2] - at[i + 1] - 1, &l, why, sizeof why) != 0)
            fail("an accepted shard line does not parse", why);
        size_t wl = shards_get(s->list, i, want);
        bad += wl != l.spec_len || memcmp(want, l.spec, wl) != 0;
    }
    return bad;
}

/* Whether the line that starts at data + at and ends before the "\n" at data + end is text. */
static int line_is(const uint8_t *data, size_t at, size_t end, const char *text, size_t len)
{
    return len > 0 && end - at == len && memcmp(data + at, text, len) == 0;
}

static void check_accepted(const nq_manifest_scan_t *s, seen_t *v, const uint8_t *data, size_t size)
{
    char line[NQ_MANIFEST_LINE_MAX + 1];
    uint8_t root[NQ_MERKLE_BYTES];
    size_t lines = 0, *at = malloc((size + 1) * sizeof *at);     /* where each line starts */
    if (!at)
        fail("out of memory", "");
    at[0] = 0;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n')
            at[++lines] = i + 1;
    if (size == 0 || data[size - 1] != '\n' || lines != s->head.shards + 2 || s->line != lines)
        fail("accepted a file that is not header + shards + root lines, each with its newline", "");
    if (v->next != s->head.shards || s->tree.leaves != s->head.shards + 1)
        fail("accepted without every shard line reaching on_line and the tree", "");
    if (!line_is(data, at[0], at[1] - 1, line, manifest_head_format(&s->head, line, sizeof line)))
        fail("accepted a header in a spelling other than its own", line);
    if (!line_is(data, at[lines - 1], size - 1, line, manifest_root_format(s->root, line, sizeof line)))
        fail("accepted a root line in a spelling other than its own", line);
    if (s->total != v->total || s->unique != v->unique || s->nodes != v->nodes || s->fast_lines != v->fast)
        fail("the scan's sums are not the sums of its lines", "");
    root_by_levels(data, at, lines - 1, root);
    v->expected += specs_not_the_lists(s, data, at);
    free(at);
    v->expected += memcmp(root, s->root, NQ_MERKLE_BYTES) != 0;
    v->expected += (s->head.total != v->total) + (s->head.unique != v->unique) + (s->head.nodes != v->nodes);
    v->expected += head_out_of_range(&s->head);
    if (v->problems != s->problems || v->problems != v->expected) {
        char why[120];
        snprintf(why, sizeof why, "%llu reported, %llu counted, %llu recounted here",
                 (unsigned long long)v->problems, (unsigned long long)s->problems,
                 (unsigned long long)v->expected);
        fail("the problems are not the disagreements", why);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    nq_log_set_level(NQ_LOG_OFF);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t none[1];
    char err[512] = "";
    nq_manifest_scan_t *s = calloc(1, sizeof *s);     /* as cmd_audit: the buffer and tree are big */
    seen_t v = { .s = s };
    if (!s)
        fail("out of memory", "");
    FILE *f = fmemopen((void *)(size ? data : none), size, "r");    /* none: never NULL, 0 bytes */
    if (!f)
        fail("fmemopen failed", "");
    *s = (nq_manifest_scan_t){ .f = f, .problem = on_problem, .on_line = on_line, .ud = &v };
    int rc = manifest_scan_head(s, err, sizeof err);
    if (rc == 0)
        rc = manifest_scan_rest(s, err, sizeof err);
    if (rc == 0)
        check_accepted(s, &v, data, size);
    else if (rc == -1)
        check_refusal(s, err);
    else
        fail("an in-memory file gave a read error", err);
    manifest_scan_free(s);
    free(s);
    fclose(f);
    return 0;
}
