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
    return l;
}

T_TEST(test_line_round_trip_is_byte_exact)
{
    char buf[NQ_MANIFEST_LINE_MAX], again[NQ_MANIFEST_LINE_MAX], err[256];
    nq_manifest_line_t l = sample_line(), back;
    size_t n = manifest_line_format(&l, buf, sizeof buf);
    T_EQ_STR(buf, "42 02ab00 18446744073709551615 0 1234567 2 0 host:12:ab 2");
    T_CHECK(manifest_line_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(manifest_line_format(&back, again, sizeof again) == n && memcmp(buf, again, n) == 0);
}

T_TEST(test_head_round_trip_with_128_bit_sums)
{
    char buf[NQ_MANIFEST_LINE_MAX], err[256];
    nq_manifest_head_t h = { .n = 27, .depth = 3, .encoding = 2, .shards = 13500000,
                             .total = (nq_u128)UINT64_MAX * 1000, .unique = 5, .nodes = 7 }, back;
    size_t n = manifest_head_format(&h, buf, sizeof buf);
    T_EQ_STR(buf, "nq-manifest 1 count n=27 depth=3 encoding=2 shards=13500000 total=18446744073709551615000"
                  " unique=5 nodes=7");
    T_CHECK(manifest_head_parse(buf, n, &back, err, sizeof err) == 0);
    T_CHECK(back.total == h.total && back.n == 27 && back.shards == 13500000);
}

/* Each spelling that is not the canonical one, and the field the message must name. */
T_TEST(test_line_parse_refuses_every_other_spelling)
{
    static const struct { const char *line, *names; } bad[] = {
        { "42 02ab00 18446744073709551616 0 1 2 0 w 2", "total" },            /* 2^64 */
        { "42 02ab00 01 0 1 1 1 w 2", "total" },                              /* leading zero */
        { "42 02ab00 +1 0 1 1 1 w 2", "total" },
        { "42 02AB00 1 0 1 1 1 w 2", "hex" },
        { "42 02ab0 1 0 1 1 1 w 2", "even" },
        { "42  02ab00 1 0 1 1 1 w 2", "empty field" },
        { " 42 02ab00 1 0 1 1 1 w 2", "empty field" },
        { "42 02ab00 1 0 1 1 1 w 2 ", "empty field" },
        { "42 02ab00 1 0 1 13 1 w 2", "res13" },
        { "42 02ab00 1 0 1 1 15 w 2", "res15" },
        { "42 02ab00 1 0 1 1 1 w", "8 field(s), expected 9" },
        { "42 02ab00 1 0 1 1 1 w 2 3", "more than 9" },
        { "x 02ab00 1 0 1 1 1 w 2", "shard index" },
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
        { "nq-manifest 1 solve n=8 depth=1 encoding=2 shards=1 total=0 unique=0 nodes=0", "count jobs only" },
        { "nq-manifest 2 count n=8 depth=1 encoding=2 shards=1 total=0 unique=0 nodes=0", "version" },
        { "nq-manifesto 1 count n=8 depth=1 encoding=2 shards=1 total=0 unique=0 nodes=0", "not a manifest" },
        { "nq-manifest 1 count n=33 depth=1 encoding=2 shards=1 total=0 unique=0 nodes=0", "n " },
        { "nq-manifest 1 count n=8 depth=1 encoding=9 shards=1 total=0 unique=0 nodes=0", "encoding" },
        { "nq-manifest 1 count depth=1 n=8 encoding=2 shards=1 total=0 unique=0 nodes=0", "expected n=" },
        { "nq-manifest 1 count n=8 depth=1 encoding=2 shards=0 total=0 unique=0 nodes=0", "at least" },
        { "nq-manifest 1 count n=8 depth=1 encoding=2 shards=1 total=1e3 unique=0 nodes=0", "total" },
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

/* A true manifest of N=8 made here: every shard counted, lines formatted, the tree built.
   change >= 0 adds 1 to that shard's total after the root is taken. */
static char *make_manifest(long change, size_t *len)
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
        h.total += r.total, h.unique += r.unique, h.nodes += r.nodes;
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

/* Shard 3's total + 1: the tree (root made before), the residues and the sum each catch it. */
T_TEST(test_scan_names_a_changed_total_three_ways)
{
    size_t len;
    char *text = make_manifest(3, &len);
    nq_manifest_scan_t s;
    int problems;
    T_CHECK(scan(text, len, &s, &problems) == 0);
    T_EQ_U64(problems, 3);
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

/* Header only: what the scan says about the list it asks for, before any shard line. */
static int scan_header(const char *head, char *err, size_t errlen)
{
    char text[256];
    int n = snprintf(text, sizeof text, "%s\n", head);
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    *s = (nq_manifest_scan_t){ .f = fmemopen(text, (size_t)n, "r") };
    int rc = manifest_scan_head(s, err, errlen);
    fclose(s->f);
    manifest_scan_free(s);
    free(s);
    return rc;
}

/* The fuzzer's first finding: a header of a few bytes set the scan listing shards before it read
   a line. n=29 depth=7 took 3 s (Debug; past libFuzzer's 10 s under ASan) to learn that it has
   more than 2^28 shards; n=32 depth=30 was still searching after a minute. The list is now
   bounded by what the header claims, in shards and in steps of search. */
T_TEST(test_scan_head_bounds_the_list_by_the_claim)
{
    char err[512] = "";
    T_CHECK(scan_header("nq-manifest 1 count n=29 depth=7 encoding=1 shards=3 total=0 unique=0 nodes=0",
                        err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=3, but no list of n=29 depth=7 encoding=1 has that many: "
                        "more than 3 shards") != NULL);
    T_CHECK(scan_header("nq-manifest 1 count n=32 depth=30 encoding=2 shards=1 total=0 unique=0 nodes=0",
                        err, sizeof err) == -1);
    T_CHECK(strstr(err, "listing takes more than") != NULL);
    /* a true count still passes the head, and a claim short of it names the true length */
    T_CHECK(scan_header("nq-manifest 1 count n=8 depth=1 encoding=2 shards=31 total=0 unique=0 nodes=0",
                        err, sizeof err) == 0);
    T_CHECK(scan_header("nq-manifest 1 count n=8 depth=1 encoding=2 shards=32 total=0 unique=0 nodes=0",
                        err, sizeof err) == -1);
    T_CHECK(strstr(err, "line 1: shards=32, but the list of n=8 depth=1 encoding=2 has 31") != NULL);
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
