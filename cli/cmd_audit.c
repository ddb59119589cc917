/*
 * `nq audit FILE [--sample K --seed S | --shards A-B] [--threads T]`: the auditor's check of
 * a manifest (common/kernel/manifest.h) with nothing but the file and this binary: no broker,
 * no DB. One pass checks the format, the hash tree against the root line, each line's
 * descriptor against the job's list and its residues against its total, and the sums against
 * the header; then the chosen shards are counted again with the kernel.
 * Exit 0 everything agrees, 1 a disagreement or a malformed file (each named by line),
 * 2 usage, 3 the file cannot be read.
 */
#include "audit.h"
#include "cli.h"
#include "merkle.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SAMPLE 10
#define MAX_THREADS 4096

typedef struct {
    const char *file;
    uint64_t sample, seed, a, b;
    int range;
    unsigned threads;
} audit_args_t;

/* "A-B" with A <= B. */
static int parse_range(const char *s, audit_args_t *o)
{
    const char *dash = strchr(s, '-');
    char a[32];
    if (!dash || (size_t)(dash - s) >= sizeof a)
        return cli_usage_error("audit", "--shards takes A-B, e.g. --shards 0-99 (got '%s')", s);
    memcpy(a, s, (size_t)(dash - s));
    a[dash - s] = '\0';
    int rc = cli_parse_u64("audit", "--shards A", a, 0, UINT64_MAX, &o->a);
    if (rc == 0)
        rc = cli_parse_u64("audit", "--shards B", dash + 1, 0, UINT64_MAX, &o->b);
    if (rc == 0 && o->b < o->a)
        rc = cli_usage_error("audit", "--shards A-B needs A <= B (got '%s')", s);
    o->range = 1;
    return rc;
}

static int audit_args(int argc, char **argv, audit_args_t *o)
{
    static const struct option longopts[] = {
        { "sample", required_argument, NULL, 'k' }, { "seed", required_argument, NULL, 's' },
        { "shards", required_argument, NULL, 'r' }, { "threads", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
    uint64_t v;
    int c, rc = 0, sampled = 0, seeded = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (audit_args_t){ .sample = DEFAULT_SAMPLE, .seed = 1, .threads = cores > 0 ? (unsigned)cores : 1 };
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'k')
            rc = cli_parse_u64("audit", "--sample", optarg, 0, UINT32_MAX, &o->sample), sampled = 1;
        else if (c == 's')
            rc = cli_parse_u64("audit", "--seed", optarg, 0, UINT64_MAX, &o->seed), seeded = 1;
        else if (c == 'r')
            rc = parse_range(optarg, o);
        else if (c == 't' && (rc = cli_parse_u64("audit", "--threads", optarg, 1, MAX_THREADS, &v)) == 0)
            o->threads = (unsigned)v;
        else if (c == 'h')
            return cli_help("audit"), -1;
        else if (c == '?')
            return cli_usage_error("audit", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
    if (rc)
        return rc;
    if (o->range && (sampled || seeded))
        return cli_usage_error("audit", "--shards A-B and --sample/--seed exclude each other");
    if (optind != argc - 1)
        return cli_usage_error("audit", optind == argc ? "expected the manifest file: nq audit FILE"
                                                       : "expected one manifest file");
    o->file = argv[optind];
    return 0;
}

typedef struct {
    audit_pick_t *p;
    size_t n;
} picks_t;

static void on_problem(void *ud, uint64_t line, const char *what)
{
    (void)ud;
    printf("line %llu: %s\n", (unsigned long long)line, what);
}

/* Keeps what the manifest claims for a shard that will be counted again. */
static int on_line(void *ud, const nq_manifest_line_t *l, char *err, size_t errlen)
{
    picks_t *k = ud;
    audit_pick_t *p = audit_find(k->p, k->n, l->idx);
    (void)err; (void)errlen;
    if (p) {
        p->claimed = 1;
        p->claim = (nq_count_result_t){ l->total, l->unique, l->nodes, (uint8_t)l->res13, (uint8_t)l->res15 };
    }
    return 0;
}

static int choose(const audit_args_t *o, const nq_manifest_head_t *h, picks_t *k)
{
    if (o->range && o->b >= h->shards)
        return cli_usage_error("audit", "--shards %llu-%llu: the manifest has shards 0-%llu",
                               (unsigned long long)o->a, (unsigned long long)o->b,
                               (unsigned long long)h->shards - 1);
    k->n = o->range ? (size_t)(o->b - o->a + 1) : (size_t)(o->sample < h->shards ? o->sample : h->shards);
    k->p = o->range ? audit_range(o->a, o->b) : audit_sample(h->shards, k->n, o->seed);
    return k->p ? 0 : cli_error("audit", "out of memory for %zu shards", k->n);
}

/* One line per shard counted again; the number that disagree. Shard i is on line i + 2. */
static uint64_t report_recount(const picks_t *k)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < k->n; i++) {
        const audit_pick_t *p = &k->p[i];
        const nq_count_result_t *c = &p->claim, *g = &p->got;
        unsigned long long line = (unsigned long long)p->idx + 2, idx = (unsigned long long)p->idx;
        if (p->rc != 0) {
            printf("line %llu: shard %llu: the kernel could not count it: %s\n", line, idx, p->err);
            bad++;
        } else if (c->total != g->total || c->unique != g->unique || c->nodes != g->nodes ||
                   c->res13 != g->res13 || c->res15 != g->res15) {
            printf("line %llu: shard %llu: DISAGREES: the manifest says total %llu, unique %llu, nodes %llu;"
                   " counted again: total %llu, unique %llu, nodes %llu\n", line, idx,
                   (unsigned long long)c->total, (unsigned long long)c->unique, (unsigned long long)c->nodes,
                   (unsigned long long)g->total, (unsigned long long)g->unique, (unsigned long long)g->nodes);
            bad++;
        } else {
            printf("shard %llu: agrees (total %llu, unique %llu, nodes %llu)\n", idx,
                   (unsigned long long)g->total, (unsigned long long)g->unique, (unsigned long long)g->nodes);
        }
    }
    return bad;
}

static int summary(const nq_manifest_scan_t *s, const audit_args_t *o, const picks_t *k, uint64_t bad)
{
    char t[40], u[40], hex[NQ_MERKLE_HEX + 1];
    merkle_hex(s->root, hex);
    char how[80];
    if (o->range)
        snprintf(how, sizeof how, "shards %llu-%llu", (unsigned long long)o->a, (unsigned long long)o->b);
    else
        snprintf(how, sizeof how, "sampled with seed %llu", (unsigned long long)o->seed);
    if (s->problems + bad == 0) {
        printf("audit: OK: N=%d, %llu shards, total %s, unique %s, root %s; %zu shard(s) (%s) counted"
               " again, all agree\n", s->head.n, (unsigned long long)s->head.shards, u128_to_str(s->head.total, t),
               u128_to_str(s->head.unique, u), hex, k->n, how);
        return NQ_EXIT_OK;
    }
    printf("audit: FAILED: %llu problem(s) in the manifest, %llu of %zu shard(s) counted again disagree\n",
           (unsigned long long)s->problems, (unsigned long long)bad, k->n);
    return NQ_EXIT_NO;
}

int cmd_audit(int argc, char **argv)
{
    audit_args_t o;
    picks_t k = { NULL, 0 };
    char err[512];
    int rc = audit_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    FILE *f = fopen(o.file, "r");
    if (!f)
        return cli_error("audit", "%s: %s", o.file, strerror(errno));
    nq_manifest_scan_t *s = calloc(1, sizeof *s);
    if (!s)
        return fclose(f), cli_error("audit", "out of memory");
    *s = (nq_manifest_scan_t){ .f = f, .problem = on_problem, .on_line = on_line, .ud = &k };
    rc = manifest_scan_head(s, err, sizeof err);
    if (rc == 0 && (rc = choose(&o, &s->head, &k)) != 0)
        rc = rc == NQ_EXIT_USAGE ? -3 : -4;
    if (rc == 0)
        rc = manifest_scan_rest(s, err, sizeof err);
    if (rc == 0) {
        audit_recount(s->list, k.p, k.n, o.threads);
        rc = summary(s, &o, &k, report_recount(&k));
    } else if (rc == -1) {
        printf("%s: %s\naudit: FAILED: the file is not a valid manifest\n", o.file, err);
        rc = NQ_EXIT_NO;
    } else {
        rc = rc == -3 ? NQ_EXIT_USAGE : rc == -4 ? NQ_EXIT_ERROR : cli_error("audit", "%s: %s", o.file, err);
    }
    manifest_scan_free(s);
    free(s);
    free(k.p);
    fclose(f);
    return rc;
}
