/*
 * Manifest lines (common/kernel/manifest.h): what is written reads back to the same record and
 * the same bytes, and the reader refuses every other spelling with the field named; the
 * one-pass scan over a whole manifest built here from a real shard list.
 */
#include "t.h"
#include "count.h"
#include "manifest.h"
/* The fuzz target itself: the seeds and regressions are replayed with its checks (below). */
#include "fuzz/fuzz_manifest.c"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static nq_manifest_line_t sample_line(void)
{
    nq_manifest_line_t l;
    memset(&l, 0, sizeof l);
    l.idx = 42;
    l.spec_len = 3;
    l.spec[0] = 0x02; l.spec[1] = 0xab; l.spec[2] = 0x00;
    l.total = UINT64_MAX;
    l.unique = 0;
    l.nodes = 1234567;
    l.res13 = (unsigned)(UINT64_MAX % 13);
    l.res15 = (unsigned)(UINT64_MAX % 15);
    snprintf(l.worker, sizeof l.worker, "host:12:ab");
    l.confirmations = 2;
    l.evidence = 1;
    return l;
}

T_TEST(test_line_round_trip_is_byte_exact)
{
    char buf[NQ_MANIFEST_LINE_MAX], again[NQ_MANIFEST_LINE_MAX], err[256];
    nq_manifest_line_t l = sample_line(), back;
    size_t n = manifest_line_format(&l, buf, sizeof buf);
    T_EQ_STR(buf, "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 1 0 0");
    T_CHECK(manifest_line_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(manifest_line_format(&back, again, sizeof again) == n && memcmp(buf, again, n) == 0);
}

/* A line says whose nodes it carries: 1 the fast GPU kernel's own. It reads back as written; a
   kind outside 0..1 is neither read nor written, and a line of another field count (a version 1
   or 2 line, or a header of another version) is refused. */
T_TEST(test_lines_say_whose_nodes_and_other_versions_are_refused)
{
    char buf[NQ_MANIFEST_LINE_MAX], err[256] = "";
    nq_manifest_line_t l = sample_line(), back;
    l.nodes_kind = NQ_MANIFEST_NODES_GPU_FAST;
    size_t n = manifest_line_format(&l, buf, sizeof buf);
    T_EQ_STR(buf, "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 1 1 0");
    T_CHECK(manifest_line_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(back.nodes_kind == NQ_MANIFEST_NODES_GPU_FAST && back.evidence == 1 && back.nodes == 1234567);
    l.nodes_kind = 2;
    T_CHECK(manifest_line_format(&l, buf, sizeof buf) == 0);
    const char *k2 = "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 7 2 0";
    T_CHECK(manifest_line_parse(k2, strlen(k2), &back, err, sizeof err) == -1);
    T_CHECK(strstr(err, "nodes_kind") != NULL);
    const char *v3 = "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 7 1";
    T_CHECK(manifest_line_parse(v3, strlen(v3), &back, err, sizeof err) == -1);
    T_CHECK(strstr(err, "11 field(s), expected 12") != NULL);
    const char *v2 = "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 7";
    T_CHECK(manifest_line_parse(v2, strlen(v2), &back, err, sizeof err) == -1);
    T_CHECK(strstr(err, "10 field(s), expected 12") != NULL);
    nq_manifest_head_t h;
    const char *head = "nq-manifest 4 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0";
    T_CHECK(manifest_head_parse(head, strlen(head), &h, err, sizeof err) == 0 && h.version == 4);
    head = "nq-manifest 2 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0";
    T_CHECK(manifest_head_parse(head, strlen(head), &h, err, sizeof err) == -1);
    T_CHECK(strstr(err, "version") != NULL);
}

/* Version 4's last field: whether a tail copy decided the shard. It reads back as written, and a
   mark other than 0 or 1 is neither written nor read. */
T_TEST(test_lines_say_whether_a_copy_decided_them)
{
    char buf[NQ_MANIFEST_LINE_MAX], err[256] = "";
    nq_manifest_line_t l = sample_line(), back;
    l.by_copy = 1;
    size_t n = manifest_line_format(&l, buf, sizeof buf);
    T_EQ_STR(buf, "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2 1 0 1");
    memset(&back, 0, sizeof back);
    T_CHECK(manifest_line_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(back.by_copy == 1 && back.evidence == 1 && back.nodes_kind == NQ_MANIFEST_NODES_CPU);
    l.by_copy = 2;
    T_CHECK(manifest_line_format(&l, buf, sizeof buf) == 0);
}

T_TEST(test_head_round_trip_with_128_bit_sums)
{
    char buf[NQ_MANIFEST_LINE_MAX], err[256];
    nq_manifest_head_t h = { .n = 27, .depth = 3, .encoding = NQ_SHARD_ENCODING, .shards = 13500000,
                             .total = (nq_u128)UINT64_MAX * 1000, .unique = 5, .nodes = 7 }, back;
    size_t n = manifest_head_format(&h, buf, sizeof buf);
    T_EQ_STR(buf, "nq-manifest 4 count n=27 depth=3 encoding=5 shards=13500000 total=18446744073709551615000"
                  " unique=5 nodes=7");
    T_CHECK(manifest_head_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(back.total == h.total && back.n == 27 && back.shards == 13500000);
}

/* Each spelling that is not the canonical one, and the field the message must name. */
T_TEST(test_line_parse_refuses_every_other_spelling)
{
    static const struct { const char *line, *names; } bad[] = {
        { "42 02ab00 18446744073709551616 0 1 2 0 w 2 0 0 0", "total" },        /* 2^64 */
        { "42 02ab00 01 0 1 1 1 w 2 0 0 0", "total" },                          /* leading zero */
        { "42 02ab00 +1 0 1 1 1 w 2 0 0 0", "total" },
        { "42 02AB00 1 0 1 1 1 w 2 0 0 0", "hex" },
        { "42 02ab0 1 0 1 1 1 w 2 0 0 0", "even" },
        { "42  02ab00 1 0 1 1 1 w 2 0 0", "empty field" },
        { " 42 02ab00 1 0 1 1 1 w 2 0 0", "empty field" },
        { "42 02ab00 1 0 1 1 1 w 2 0 0 ", "empty field" },
        { "42 02ab00 1 0 1 13 1 w 2 0 0 0", "res13" },
        { "42 02ab00 1 0 1 1 15 w 2 0 0 0", "res15" },
        { "42 02ab00 1 0 1 1 1 w 2 0 0", "11 field(s), expected 12" },
        { "42 02ab00 1 0 1 1 1 w 2 3 0 0 4", "more than 12" },
        { "42 02ab00 1 0 1 1 1 w 2 01 0 0", "evidence" },
        { "42 02ab00 1 0 1 1 1 w 2 0 0 2", "by_copy" },
        { "42 02ab00 1 0 1 1 1 w 2 0 0 01", "by_copy" },
        { "x 02ab00 1 0 1 1 1 w 2 0 0 0", "shard index" },
        { "", "empty field" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nq_manifest_line_t l;
        char err[256] = "";
        T_CHECK(manifest_line_parse(bad[i].line, strlen(bad[i].line), &l, err, sizeof err) == -1);
        if (!strstr(err, bad[i].names))
            fprintf(stderr, "  '%s': '%s' lacks '%s'\n", bad[i].line, err, bad[i].names);
        T_CHECK(strstr(err, bad[i].names) != NULL);
    }
}

T_TEST(test_head_parse_refuses_other_kinds_versions_and_ranges)
{
    static const struct { const char *line, *names; } bad[] = {
        { "nq-manifest 4 solve n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "count jobs only" },
        { "nq-manifest 2 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "version" },
        { "nq-manifest 3 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "version 3" },
        { "nq-manifest 5 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "version" },
        { "nq-manifest 0 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "version" },
        { "nq-manifesto 3 count n=8 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "not a manifest" },
        { "nq-manifest 4 count n=33 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", "n " },
        { "nq-manifest 4 count n=8 depth=1 encoding=4 shards=1 total=0 unique=0 nodes=0", "encoding" },
        { "nq-manifest 4 count n=8 depth=1 encoding=9 shards=1 total=0 unique=0 nodes=0", "encoding" },
        { "nq-manifest 4 count depth=1 n=8 encoding=5 shards=1 total=0 unique=0 nodes=0", "expected n=" },
        { "nq-manifest 4 count n=8 depth=1 encoding=5 shards=0 total=0 unique=0 nodes=0", "at least" },
        { "nq-manifest 4 count n=8 depth=1 encoding=5 shards=1 total=1e3 unique=0 nodes=0", "total" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nq_manifest_head_t h;
        char err[256] = "";
        T_CHECK(manifest_head_parse(bad[i].line, strlen(bad[i].line), &h, err, sizeof err) == -1);
        if (!strstr(err, bad[i].names))
            fprintf(stderr, "  '%s': '%s' lacks '%s'\n", bad[i].line, err, bad[i].names);
        T_CHECK(strstr(err, bad[i].names) != NULL);
    }
}

T_TEST(test_format_refuses_what_it_could_not_read_back)
{
    char buf[NQ_MANIFEST_LINE_MAX];
    nq_manifest_line_t l = sample_line();
    snprintf(l.worker, sizeof l.worker, "has space");
    T_CHECK(manifest_line_format(&l, buf, sizeof buf) == 0);
    l = sample_line();
    l.res13 = 13;
    T_CHECK(manifest_line_format(&l, buf, sizeof buf) == 0);
    l = sample_line();
    T_CHECK(manifest_line_format(&l, buf, 10) == 0);       /* does not fit */
}

/* A true manifest of N=8 made here: every shard counted, lines formatted, the tree built; every
   fifth shard's line says a tail copy decided it. change >= 0 adds 1 to that shard's total after
   the root is taken; flip >= 0 flips that shard's copy mark after it. fast: the odd shards' lines
   carry nodes of the fast GPU kernel's own (none here: fewer than any CPU search takes), which
   the header's nodes leave out. */
static char *make_manifest_flip(long change, long flip, int fast, size_t *len)
{
    char err[256], buf[NQ_MANIFEST_LINE_MAX];
    nq_shards_t *list = shards_new(NQ_KIND_COUNT, 8, 0, err, sizeof err);
    nq_manifest_head_t h = { .n = 8, .depth = shards_depth(list), .encoding = NQ_SHARD_ENCODING,
                             .shards = shards_count(list) };
    nq_manifest_line_t *l = calloc(h.shards, sizeof *l);
    nq_merkle_t tree;
    for (uint64_t i = 0; i < h.shards; i++) {
        nq_count_result_t r;
        l[i].idx = i;
        l[i].spec_len = shards_get(list, i, l[i].spec);
        T_CHECK(count_shard(l[i].spec, l[i].spec_len, &r, NULL, err, sizeof err) == 0);
        l[i].total = r.total, l[i].unique = r.unique, l[i].nodes = r.nodes, l[i].res13 = r.res13,
        l[i].res15 = r.res15;
        snprintf(l[i].worker, sizeof l[i].worker, "-");
        if (fast && i % 2)
            l[i].nodes_kind = NQ_MANIFEST_NODES_GPU_FAST, l[i].nodes = 0;
        l[i].by_copy = i % 5 == 0;
        h.total += r.total, h.unique += r.unique, h.nodes += l[i].nodes_kind ? 0 : r.nodes;
    }
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    merkle_init(&tree);
    size_t n = manifest_head_format(&h, buf, sizeof buf);
    merkle_add(&tree, buf, n);
    fprintf(f, "%s\n", buf);
    for (uint64_t i = 0; i < h.shards; i++) {
        n = manifest_line_format(&l[i], buf, sizeof buf);
        merkle_add(&tree, buf, n);
        if ((long)i == change)
            l[i].total += 1, n = manifest_line_format(&l[i], buf, sizeof buf);
        if ((long)i == flip)
            l[i].by_copy ^= 1, n = manifest_line_format(&l[i], buf, sizeof buf);
        fprintf(f, "%s\n", buf);
    }
    uint8_t root[NQ_MERKLE_BYTES];
    merkle_root(&tree, root);
    manifest_root_format(root, buf, sizeof buf);
    fprintf(f, "%s\n", buf);
    fclose(f);
    free(l);
    shards_destroy(&list);
    return out;
}

static char *make_manifest_ex(long change, int fast, size_t *len)
{
    return make_manifest_flip(change, -1, fast, len);
}

static char *make_manifest(long change, size_t *len)
{
    return make_manifest_ex(change, 0, len);
}

static void count_problem(void *ud, uint64_t line, const char *what)
{
    (void)line; (void)what;
    ++*(int *)ud;
}

static int scan(const char *text, size_t len, nq_manifest_scan_t *s, int *problems)
{
    char err[512];
    *problems = 0;
    *s = (nq_manifest_scan_t){ .f = fmemopen((void *)text, len, "r"), .problem = count_problem, .ud = problems };
    int rc = manifest_scan_head(s, err, sizeof err);
    if (rc == 0)
        rc = manifest_scan_rest(s, err, sizeof err);
    fclose(s->f);
    manifest_scan_free(s);
    return rc;
}

T_TEST(test_scan_of_a_true_manifest_finds_nothing_and_the_oeis_count)
{
    size_t len;
    char *text = make_manifest(-1, &len);
    nq_manifest_scan_t s;
    int problems;
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 0);
    T_EQ_U64((uint64_t)s.total, 92);       /* OEIS A000170(8), for checking only */
    T_EQ_U64((uint64_t)s.unique, 12);      /* A002562(8) */
    free(text);
}

/* Shard 3's total + 1: the tree (root made before), the residues, the sum and the shard's
   bounds (no count of it gives an odd total) each catch it. */
T_TEST(test_scan_names_a_changed_total_four_ways)
{
    size_t len;
    char *text = make_manifest(3, &len);
    nq_manifest_scan_t s;
    int problems;
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 4);
    free(text);
}

/* Lines of the fast GPU kernel: their nodes are held to no bound and left out of the header's
   nodes; their totals still are (shard 3, odd: + 1 is caught by the tree, residues, sum and bounds). */
T_TEST(test_scan_holds_fast_lines_to_their_counts_and_sums_only_cpu_nodes)
{
    size_t len;
    char *text = make_manifest_ex(-1, 1, &len);
    nq_manifest_scan_t s;
    int problems;
    T_CHECK(strstr(text, "nq-manifest 4 ") == text);
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 0);
    T_EQ_U64((uint64_t)s.total, 92);
    T_EQ_U64(s.fast_lines, 15);            /* of the 31 shards of N=8 */
    free(text);
    text = make_manifest_ex(3, 1, &len);
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 4);
    free(text);
}

/* The copy mark is part of the line's bytes, so of the tree: a mark flipped either way after the
   root was taken (shard 5 marked, shard 6 not) is caught by the root, the one check that can see it. */
T_TEST(test_scan_catches_a_copy_mark_flipped_after_the_root)
{
    size_t len;
    nq_manifest_scan_t s;
    int problems;
    for (long flip = 5; flip <= 6; flip++) {
        char *text = make_manifest_flip(-1, flip, 0, &len);
        char *line = strstr(text, flip == 5 ? "\n5 " : "\n6 ") + 1;
        T_CHECK(memcmp(strchr(line, '\n') - 2, flip == 5 ? " 0" : " 1", 2) == 0);   /* flipped */
        T_CHECK(scan(text, len, &s, &problems) == 0);
        T_EQ_U64(problems, 1);
        T_EQ_U64((uint64_t)s.total, 92);
        free(text);
    }
    char *text = make_manifest(-1, &len);
    T_CHECK(strstr(text, "\n5 ") && memcmp(strchr(strstr(text, "\n5 ") + 1, '\n') - 2, " 1", 2) == 0);
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 0);
    free(text);
}

/* A version 3 file (no copy marks) is refused at its first line, with what to do about it. */
T_TEST(test_scan_refuses_a_version_3_file_and_says_to_export_again)
{
    size_t len;
    char *text = make_manifest(-1, &len), err[512] = "";
    T_CHECK(memcmp(text, "nq-manifest 4 ", 14) == 0);
    text[12] = '3';
    nq_manifest_scan_t s = { .f = fmemopen(text, len, "r") };
    T_CHECK(manifest_scan_head(&s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: manifest version 3 is not read by this build") != NULL);
    T_CHECK(strstr(err, "export the job again") != NULL);
    fclose(s.f);
    manifest_scan_free(&s);
    free(text);
}

T_TEST(test_scan_stops_at_a_truncation_with_its_line)
{
    size_t len;
    char *text = make_manifest(-1, &len), err[512];
    char *cut = strchr(strchr(text, '\n') + 1, '\n') + 1;    /* header and shard 0 only */
    int problems = 0;
    nq_manifest_scan_t s = { .f = fmemopen(text, (size_t)(cut - text), "r"), .problem = count_problem,
                             .ud = &problems };
    T_CHECK(manifest_scan_head(&s, err, sizeof err) == 0);
    T_CHECK(manifest_scan_rest(&s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 3: the file ends where a shard line should be") != NULL);
    fclose(s.f);
    manifest_scan_free(&s);
    free(text);
}

/* A header and `lines` shard lines of the right form (descriptor 00, all zero) and a root line
   that is not theirs: what the scan says about the list the header asks for. */
static int scan_claim(const char *head, uint64_t lines, nq_manifest_scan_t *s, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fprintf(m, "%s\n", head);
    for (uint64_t i = 0; i < lines; i++)
        fprintf(m, "%llu 00 0 0 0 0 0 - 0 0 0 0\n", (unsigned long long)i);
    fprintf(m, "root %064d\n", 0);
    fclose(m);
    *s = (nq_manifest_scan_t){ .f = fmemopen(text, len, "r") };
    int rc = manifest_scan_head(s, err, errlen);
    if (rc == 0)
        rc = manifest_scan_rest(s, err, errlen);
    fclose(s->f);
    free(text);
    return rc;
}

/* The list a header asks for costs nothing until the lines that back it were read: a header of a
   few bytes once set the scan listing shards for 44 s and 3 GB (n=18 depth=12 shards=2^28); the
   fuzzer's n=29 depth=7 took 3 s to learn that it has more than 2^28 shards, and n=32 depth=30
   was still searching after a minute. The list is bounded by the lines read. */
T_TEST(test_scan_makes_no_list_before_the_lines_and_bounds_it_by_them)
{
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    char err[512] = "";
    T_CHECK(scan_claim("nq-manifest 4 count n=18 depth=12 encoding=5 shards=268435456 total=0 unique=0"
                       " nodes=0", 0, s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 2: the root line comes after 0 of 268435456 shard lines") != NULL);
    T_CHECK(s->list == NULL);
    T_CHECK(scan_claim("nq-manifest 4 count n=29 depth=7 encoding=5 shards=3 total=0 unique=0 nodes=0", 3,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=3, but no list of n=29 depth=7 encoding=5 has that many: "
                        "more than 3 shards") != NULL);
    manifest_scan_free(s);
    T_CHECK(scan_claim("nq-manifest 4 count n=32 depth=30 encoding=5 shards=1 total=0 unique=0 nodes=0", 1,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "listing takes more than") != NULL);
    manifest_scan_free(s);
    /* a claim short of the true length names it */
    T_CHECK(scan_claim("nq-manifest 4 count n=8 depth=1 encoding=5 shards=32 total=0 unique=0 nodes=0", 32,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=32, but the list of n=8 depth=1 encoding=5 has 31") != NULL);
    manifest_scan_free(s);
    /* a true length passes, and each line's descriptor (00 here) is named as not the list's */
    T_CHECK(scan_claim("nq-manifest 4 count n=8 depth=1 encoding=5 shards=31 total=0 unique=0 nodes=0", 31,
                       s, err, sizeof err) == 0);
    T_EQ_U64(s->problems, 31 + 1);          /* and the root line, which is not the lines' */
    manifest_scan_free(s);
    free(s);
}

/* A regular file is measured before a line is read: the 72-byte header of 2^28 shards. */
T_TEST(test_scan_head_refuses_a_claim_its_file_cannot_hold)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/manifest-claim.txt", t_tmpdir());
    FILE *f = fopen(path, "w");
    fprintf(f, "nq-manifest 4 count n=18 depth=12 encoding=5 shards=268435456 total=0 unique=0 nodes=0\n");
    fclose(f);
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    *s = (nq_manifest_scan_t){ .f = fopen(path, "r") };
    T_CHECK(manifest_scan_head(s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=268435456, but the 0 bytes after it hold 0 shard lines at most"));
    T_CHECK(s->list == NULL && s->line == 1);
    fclose(s->f);
    manifest_scan_free(s);
    free(s);
    unlink(path);
}

/* Depths and shard counts that no job of its n has are refused by the header alone. */
T_TEST(test_scan_head_refuses_a_depth_or_count_no_job_has)
{
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    char err[512] = "";
    T_CHECK(scan_claim("nq-manifest 4 count n=10 depth=9 encoding=5 shards=1 total=0 unique=0 nodes=0", 1,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: depth=9, but a count of n=10 has depths 1 to 8") != NULL);
    T_CHECK(scan_claim("nq-manifest 4 count n=3 depth=1 encoding=5 shards=1 total=0 unique=0 nodes=0", 1,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: depth=1, but a count of n=3 has one shard, of depth 0") != NULL);
    T_CHECK(scan_claim("nq-manifest 4 count n=2 depth=0 encoding=5 shards=2 total=0 unique=0 nodes=0", 2,
                       s, err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=2, but a count of n=2 has one shard") != NULL);
    free(s);
}

/* A count that no job can have against its unique: every class has 2 to 8 members. */
T_TEST(test_scan_names_a_header_count_out_of_its_unique_range)
{
    static const char *const heads[] = {
        "nq-manifest 4 count n=8 depth=1 encoding=5 shards=31 total=97 unique=12 nodes=0",
        "nq-manifest 4 count n=8 depth=1 encoding=5 shards=31 total=23 unique=12 nodes=0",
    };
    for (int i = 0; i < 2; i++) {
        nq_manifest_scan_t *s = calloc(1, sizeof *s);
        int problems = 0;
        char err[512] = "";
        s->problem = count_problem, s->ud = &problems;
        char text[256];
        int n = snprintf(text, sizeof text, "%s\n", heads[i]);
        s->f = fmemopen(text, (size_t)n, "r");
        T_CHECK(manifest_scan_head(s, err, sizeof err) == 0);
        T_EQ_U64(problems, 1);
        fclose(s->f);
        free(s);
    }
}

/* Descriptors that are not the list's: named line by line where the input can be read again,
   in one problem where it cannot (a pipe). */
T_TEST(test_scan_names_each_descriptor_not_the_lists_or_says_it_cannot)
{
    size_t len;
    char *text = make_manifest(-1, &len);
    char *line3 = strchr(strchr(text, '\n') + 1, '\n') + 1, *spec = strchr(line3, ' ') + 1;
    spec[11] = spec[11] == '0' ? '1' : '0';                  /* shard 1: another level column */
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    int problems;
    T_CHECK(scan(text, len, s, &problems) == 0);
    T_EQ_U64(problems, 2);                                   /* the descriptor and the root */
    int fd[2];
    T_CHECK(pipe(fd) == 0);
    T_CHECK(write(fd[1], text, len) == (ssize_t)len);        /* under 64 KiB: the pipe holds it */
    close(fd[1]);
    char err[512];
    problems = 0;
    *s = (nq_manifest_scan_t){ .f = fdopen(fd[0], "r"), .problem = count_problem, .ud = &problems };
    T_CHECK(manifest_scan_head(s, err, sizeof err) == 0 && manifest_scan_rest(s, err, sizeof err) == 0);
    T_CHECK(s->body_at == -1);
    T_EQ_U64(problems, 2);
    fclose(s->f);
    manifest_scan_free(s);
    free(s);
    free(text);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *buf = NULL;
    *len = 0;
    if (f && fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) != NULL)
        *len = fread(buf, 1, (size_t)st.st_size, f);
    if (f)
        fclose(f);
    return buf;
}

/* Every file of dir whose name starts with prefix, through the fuzz target (which aborts, and
   so fails this case, when one of its properties breaks); then ok-* must scan without a
   problem and bad-* must be refused or have one. Returns the number of files. */
static int replay_dir(const char *dir, const char *prefix)
{
    char path[1024];
    const char *src = getenv("NQ_SOURCE_DIR") ? getenv("NQ_SOURCE_DIR") : ".";
    snprintf(path, sizeof path, "%s/%s", src, dir);
    DIR *d = opendir(path);
    T_CHECK(d != NULL);
    if (!d)
        return 0;
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/%s", src, dir, e->d_name);
        size_t len;
        char *text = slurp(path, &len);
        T_CHECK(text != NULL);
        if (!text)
            continue;
        LLVMFuzzerTestOneInput((const uint8_t *)text, len);
        nq_manifest_scan_t *s = calloc(1, sizeof *s);
        int problems, rc = scan(text, len, s, &problems);
        int ok = rc == 0 && problems == 0;
        if ((!strncmp(e->d_name, "ok-", 3) && !ok) || (!strncmp(e->d_name, "bad-", 4) && ok))
            fprintf(stderr, "  %s: scan %d with %d problem(s), not what its name says\n", path, rc, problems);
        T_CHECK(strncmp(e->d_name, "ok-", 3) != 0 || ok);
        T_CHECK(strncmp(e->d_name, "bad-", 4) != 0 || !ok);
        free(s);
        free(text);
        files++;
    }
    closedir(d);
    return files;
}

T_TEST(test_replay_fuzz_seeds_and_regressions)
{
    LLVMFuzzerInitialize(NULL, NULL);
    int seeds = replay_dir("tests/fuzz/corpus/manifest", "");
    int regs = replay_dir("tests/fuzz/regressions", "manifest-");
    T_CHECK(seeds >= 10);
    fprintf(stderr, "  replayed %d seeds, %d regressions\n", seeds, regs);
}

T_RUN_ALL()
