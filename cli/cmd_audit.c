/*
 * `nq audit FILE [--sample K --seed S | --shards A-B] [--threads T]`: the auditor's check of
 * a manifest (common/kernel/manifest.h) with nothing but the file and this binary: no broker,
 * no DB. One pass checks the format, the hash tree against the root line, each line's residues
 * against its total and its numbers against what a count of its shard can give
 * (count_bounds.h), the sums against the header; then each descriptor against the job's list;
 * then shards are counted again with the kernel: a sample drawn with a seed from the system's
 * secure random source, printed so that the audit can be repeated (--seed S), and before it
 * the marked lines: those the checks refuted, those with evidence against a late result and
 * those a tail copy decided without its holder. A forger who knew the seed would know which
 * shards are safe to change. A line whose nodes are the fast GPU
 * kernel's own (NODES_KIND 1) is held to its total, unique and residues: its
 * nodes are bounded and recounted only where they are the CPU kernels'.
 * Exit 0 everything agrees, 1 a disagreement or a malformed file (each named by line),
 * 2 usage, 3 the file cannot be read.
 */
#include "audit.h"
#include "cli.h"
#include "merkle.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define DEFAULT_SAMPLE 10

typedef struct {
    const char *file;
    uint64_t sample, seed, a, b;
    int range, seeded;
    double catch_share;                /* --catch: the share of wrong lines to catch (0: not given) */
    unsigned threads;
} audit_args_t;

/* --catch P%: a share of wrong lines, "1%" or "0.01", above 0 and below 1 (100 %). */
static int parse_catch(const char *s, audit_args_t *o)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    int pct = end != s && *end == '%' && end[1] == '\0';
    if (pct)
        v /= 100;
    if (end == s || errno || (!pct && *end) || !isfinite(v) || !(v > 0) || v >= 1)
        return cli_usage_error("audit", "--catch takes the share of wrong lines to catch, above 0 and below"
                               " 100%%, like 1%% or 0.01 (got '%s')", s);
    o->catch_share = v;
    o->sample = audit_power_sample(v);
    return 0;
}

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
        { "catch", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
    uint64_t v;
    int c, rc = 0, sampled = 0, caught = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (audit_args_t){ .sample = DEFAULT_SAMPLE, .threads = cores > 0 ? (unsigned)cores : 1 };
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'k')
            rc = cli_parse_u64("audit", "--sample", optarg, 0, UINT32_MAX, &o->sample), sampled = 1;
        else if (c == 's')
            rc = cli_parse_u64("audit", "--seed", optarg, 0, UINT64_MAX, &o->seed), o->seeded = 1;
        else if (c == 'r')
            rc = parse_range(optarg, o);
        else if (c == 'c')
            rc = parse_catch(optarg, o), caught = 1;
        else if (c == 't' && (rc = cli_parse_u64("audit", "--threads", optarg, 1, NQ_THREADS_MAX, &v)) == 0)
            o->threads = (unsigned)v;
        else if (c == 'h')
            return cli_help("audit"), -1;
        else if (c == '?')
            return cli_usage_error("audit", "unknown or incomplete option '%s'", argv[optind - 1]);
    }
    if (rc)
        return rc;
    if (o->range && (sampled || o->seeded || caught))
        return cli_usage_error("audit", "--shards A-B and --sample/--seed/--catch exclude each other");
    if (sampled && caught)
        return cli_usage_error("audit", "--sample K and --catch P%% exclude each other: --catch sets K");
    if (optind != argc - 1)
        return cli_usage_error("audit", optind == argc ? "expected the manifest file: nq audit FILE"
                                                       : "expected one manifest file");
    o->file = argv[optind];
    /* unpredictable unless asked: a forger must not know which shards will be counted again */
    if (!o->range && !o->seeded && getrandom(&o->seed, sizeof o->seed, 0) != (ssize_t)sizeof o->seed)
        return cli_error("audit", "cannot draw a random seed: %s (give --seed S)", strerror(errno));
    return 0;
}

/*
 * The shards to count again. Sample: the draw, made when the header gives the shard count (want
 * shards, whatever the file says), and ON TOP of it the suspect lines: refuted by the checks,
 * marked with evidence against a late result, or marked as decided by a tail copy, up to want of
 * each kind, chosen at random among them (a line with several marks is one of the first kind it
 * has, in that order). Suspect lines once took the draw's places: a forger who marked evidence on
 * ten honest lines passed every default audit, its wrong lines never drawn. They are counted
 * before the draw: a copy's result had no second identity behind it. Range: the lines in it,
 * kept as they are read, so a header's claim allocates nothing.
 */
#define RNG_STREAM_REFUTED 0x726566u      /* "ref": the reservoirs' draws are their own */
#define RNG_STREAM_EVIDENCE 0x657669u     /* "evi" */
#define RNG_STREAM_COPY 0x636f70u         /* "cop" */

typedef struct {
    const audit_args_t *o;
    audit_pick_t *p;                  /* the draw, sorted by index; at the end everything counted */
    size_t n, cap;
    size_t want;
    uint64_t shards;                  /* the header's */
    audit_reservoir_t refuted, evidence, copied;
    size_t drawn_refuted, drawn_evidence, drawn_copied;   /* suspect lines the draw took anyway */
    size_t drawn;                     /* the draw's picks, once the suspect lines are beside them */
    uint64_t copy_lines, drawn_copy;  /* lines marked BY_COPY; of them, those the draw took */
} picks_t;

static void on_problem(void *ud, uint64_t line, const char *what)
{
    (void)ud;
    printf("line %llu: %s\n", (unsigned long long)line, what);
}

/* Range: one more line in it (lines come in index order: the picks stay sorted). */
static int pick_add(picks_t *k, const nq_manifest_line_t *l)
{
    if (k->n == k->cap) {
        size_t c = k->cap ? 2 * k->cap : 64;
        audit_pick_t *q = realloc(k->p, c * sizeof *q);
        if (!q)
            return -1;
        k->p = q, k->cap = c;
    }
    k->p[k->n] = (audit_pick_t){ .idx = l->idx, .rank = k->n };
    k->n++;
    return 0;
}

static void pick_claim(audit_pick_t *p, const nq_manifest_line_t *l)
{
    p->claimed = 1;
    p->claim = (nq_count_result_t){ l->total, l->unique, l->nodes, (uint8_t)l->res13, (uint8_t)l->res15 };
    p->nodes_kind = l->nodes_kind;
    p->by_copy = l->by_copy;
}

/* Keeps what the manifest claims for a shard that will be counted again. */
static int on_line(void *ud, const nq_manifest_line_t *l, int refuted, char *err, size_t errlen)
{
    picks_t *k = ud;
    const audit_args_t *o = k->o;
    if (o->range) {
        if (l->idx < o->a || l->idx > o->b)
            return 0;
        if (pick_add(k, l) != 0)
            return nq_errf(err, errlen, "out of memory for the shards to count again");
        pick_claim(&k->p[k->n - 1], l);
        return 0;
    }
    audit_pick_t *p = audit_find(k->p, k->n, l->idx);
    if (p)
        pick_claim(p, l);
    k->copy_lines += l->by_copy;
    k->drawn_copy += p && l->by_copy;
    /* a shard whose decided result a later sender disputed (evidence) is suspect: the store kept
       the first answer, a recount says which was right; one a tail copy decided had no second
       identity behind it (BY_COPY) */
    if (!refuted && l->evidence == 0 && !l->by_copy)
        return 0;
    audit_why_t why = refuted ? AUDIT_REFUTED : l->evidence ? AUDIT_EVIDENCE : AUDIT_COPY;
    if (p) {                          /* drawn anyway: counted once, as drawn */
        k->drawn_refuted += why == AUDIT_REFUTED;
        k->drawn_evidence += why == AUDIT_EVIDENCE;
        k->drawn_copied += why == AUDIT_COPY;
        return 0;
    }
    audit_reservoir_t *r = why == AUDIT_REFUTED    ? &k->refuted
                         : why == AUDIT_EVIDENCE ? &k->evidence : &k->copied;
    audit_pick_t *slot = audit_reservoir_offer(r);
    if (slot) {
        *slot = (audit_pick_t){ .idx = l->idx, .why = why };
        pick_claim(slot, l);
    }
    return 0;
}

static int choose(const audit_args_t *o, const nq_manifest_head_t *h, picks_t *k)
{
    if (o->range && o->b >= h->shards)
        return cli_usage_error("audit", "--shards %llu-%llu: the manifest has shards 0-%llu",
                               (unsigned long long)o->a, (unsigned long long)o->b,
                               (unsigned long long)h->shards - 1);
    if (o->range)
        return 0;
    k->shards = h->shards;
    k->want = (size_t)(o->sample < h->shards ? o->sample : h->shards);
    k->n = k->want;
    k->p = audit_sample(h->shards, k->want, o->seed);
    if (!k->p || audit_reservoir_init(&k->refuted, k->want, o->seed, RNG_STREAM_REFUTED) != 0 ||
        audit_reservoir_init(&k->evidence, k->want, o->seed, RNG_STREAM_EVIDENCE) != 0 ||
        audit_reservoir_init(&k->copied, k->want, o->seed, RNG_STREAM_COPY) != 0)
        return cli_error("audit", "out of memory for %zu shards", k->want);
    return 0;
}

/* What the draw proves (audit_power.c): the smallest share of wrong lines it catches with
   probability 0.99. The marked lines counted before it are chosen, not drawn: they only add to
   that, and are not part of the figure. */
static void power_line(const picks_t *k, size_t marked)
{
    char besides[160] = "";
    if (marked)
        snprintf(besides, sizeof besides, "; the %zu marked line(s) counted first are not part of the draw"
                 " and only add to it", marked);
    if (k->shards > 0 && k->drawn >= k->shards) {
        printf("audit: power: every line is counted again: a manifest with any line wrong fails this audit\n");
        return;
    }
    if (k->drawn == 0) {
        printf("audit: power: no line is drawn: the sample proves nothing (--catch P%% draws one that"
               " does)%s\n", besides);
        return;
    }
    double f = audit_power_share(k->drawn) * 100;
    printf("audit: power: a manifest with %.3g %% of its lines wrong would fail this audit with probability"
           " 0.99 at --sample %zu (--catch P%% draws the sample that catches P %%)%s\n", f, k->drawn,
           besides);
}

/* The lines a tail copy decided, whatever reservoir they went to: how many were counted first
   because of the mark, and whether that was all of them (each kind's budget is the sample's). */
static void copy_line(const picks_t *k, size_t marked)
{
    size_t first = 0;
    for (size_t i = 0; i < marked; i++)
        first += k->p[i].by_copy != 0;
    if (k->copy_lines == 0)
        return;
    unsigned long long all = (unsigned long long)k->copy_lines, drawn = (unsigned long long)k->drawn_copy;
    if (first + k->drawn_copy == k->copy_lines)
        printf("audit: copies: all %llu line(s) decided by a tail copy without its holder are counted again:"
               " %zu first, chosen because a copy decided them, %llu drawn in the sample\n", all, first,
               drawn);
    else
        printf("audit: copies: %zu of the %llu line(s) decided by a tail copy without its holder are counted"
               " first, chosen because a copy decided them (at random among them: at most %zu of each mark,"
               " the sample's size), %llu drawn in the sample, %llu not counted again\n", first, all, k->want,
               drawn, all - first - drawn);
}

/* Sample: the marked lines first (refuted, with evidence, decided by a copy), then the draw in
   its order; the seed is printed before any is counted, so an audit cut short can be repeated. */
static int finish_sample(picks_t *k)
{
    unsigned long long seed = (unsigned long long)k->o->seed;
    size_t marked = k->refuted.n + k->evidence.n + k->copied.n, n = k->n + marked;
    audit_pick_t *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return cli_error("audit", "out of memory for %zu shards", n);
    audit_by_rank(k->p, k->n);
    memcpy(all, k->refuted.p, k->refuted.n * sizeof *all);
    memcpy(all + k->refuted.n, k->evidence.p, k->evidence.n * sizeof *all);
    memcpy(all + k->refuted.n + k->evidence.n, k->copied.p, k->copied.n * sizeof *all);
    memcpy(all + marked, k->p, k->n * sizeof *all);
    free(k->p);
    k->p = all;
    k->drawn = k->n;
    if (n)
        printf("audit: counting %zu shard(s) again, the marked lines first: %zu of %llu decided by a tail copy,"
               " %zu of %llu line(s) refuted by the checks and %zu of %llu with evidence against a late result,"
               " on top of %zu drawn with seed %llu (--seed %llu draws the same)\n", n, k->copied.n,
               (unsigned long long)(k->copied.seen + k->drawn_copied), k->refuted.n,
               (unsigned long long)(k->refuted.seen + k->drawn_refuted), k->evidence.n,
               (unsigned long long)(k->evidence.seen + k->drawn_evidence), k->drawn, seed, seed);
    copy_line(k, marked);
    power_line(k, marked);
    k->n = n;
    return 0;
}

/* The kernel's count against the line's: total, unique and residues always, nodes where they are
   the CPU kernels' (a line of the fast GPU kernel's carries its own, which no recount gives). */
static int claim_agrees(const audit_pick_t *p)
{
    const nq_count_result_t *c = &p->claim, *g = &p->got;
    return c->total == g->total && c->unique == g->unique && c->res13 == g->res13 && c->res15 == g->res15 &&
           (p->nodes_kind != NQ_MANIFEST_NODES_CPU || c->nodes == g->nodes);
}

/* One line per shard counted again; the number that disagree. Shard i is on line i + 2. */
static uint64_t report_recount(const picks_t *k)
{
    static const char *const why[] = { [AUDIT_DRAWN] = "", [AUDIT_REFUTED] = " (refuted by the checks)",
                                       [AUDIT_EVIDENCE] = " (with evidence)",
                                       [AUDIT_COPY] = " (decided by a copy)" };
    uint64_t bad = 0;
    for (size_t i = 0; i < k->n; i++) {
        const audit_pick_t *p = &k->p[i];
        const nq_count_result_t *c = &p->claim, *g = &p->got;
        unsigned long long line = (unsigned long long)p->idx + 2, idx = (unsigned long long)p->idx;
        char w[64];                   /* a line counted for another reason may carry the copy mark too */
        snprintf(w, sizeof w, "%s%s", why[p->why],
                 p->by_copy && p->why != AUDIT_COPY ? why[AUDIT_COPY] : "");
        if (p->rc != 0) {
            printf("line %llu: shard %llu: the kernel could not count it: %s%s\n", line, idx, p->err, w);
            bad++;
        } else if (!claim_agrees(p)) {
            printf("line %llu: shard %llu: DISAGREES: the manifest says total %llu, unique %llu, nodes %llu;"
                   " counted again: total %llu, unique %llu, nodes %llu%s\n", line, idx,
                   (unsigned long long)c->total, (unsigned long long)c->unique, (unsigned long long)c->nodes,
                   (unsigned long long)g->total, (unsigned long long)g->unique, (unsigned long long)g->nodes, w);
            bad++;
        } else if (p->nodes_kind != NQ_MANIFEST_NODES_CPU) {
            printf("shard %llu: agrees (total %llu, unique %llu; its nodes %llu are the fast GPU kernel's"
                   " own, not compared with the %llu counted again)%s\n", idx, (unsigned long long)g->total,
                   (unsigned long long)g->unique, (unsigned long long)c->nodes, (unsigned long long)g->nodes,
                   w);
        } else {
            printf("shard %llu: agrees (total %llu, unique %llu, nodes %llu)%s\n", idx,
                   (unsigned long long)g->total, (unsigned long long)g->unique, (unsigned long long)g->nodes, w);
        }
    }
    return bad;
}

/* What was counted again, each kind apart. */
static void describe(const audit_args_t *o, const picks_t *k, char *how, size_t len)
{
    if (o->range) {
        snprintf(how, len, "shards %llu-%llu", (unsigned long long)o->a, (unsigned long long)o->b);
        return;
    }
    int w = snprintf(how, len, "%zu drawn with seed %llu", k->drawn, (unsigned long long)o->seed);
    if (k->refuted.n && w > 0 && (size_t)w < len)
        w += snprintf(how + w, len - (size_t)w, ", %zu refuted by the checks", k->refuted.n);
    if (k->evidence.n && w > 0 && (size_t)w < len)
        w += snprintf(how + w, len - (size_t)w, ", %zu with evidence", k->evidence.n);
    if (k->copied.n && w > 0 && (size_t)w < len)
        snprintf(how + w, len - (size_t)w, ", %zu decided by a copy", k->copied.n);
}

static int summary(const nq_manifest_scan_t *s, const audit_args_t *o, const picks_t *k, uint64_t bad)
{
    char t[40], u[40], hex[NQ_MERKLE_HEX + 1];
    merkle_hex(s->root, hex);
    char how[200];
    describe(o, k, how, sizeof how);
    if (s->fast_lines)
        printf("audit: %llu of %llu line(s) carry the fast GPU kernel's own nodes: their total, unique and"
               " residues are checked, their nodes neither bounded nor compared (the header sums the"
               " others)\n",
               (unsigned long long)s->fast_lines, (unsigned long long)s->head.shards);
    if (s->problems + bad == 0) {
        printf("audit: OK: N=%d, %llu shards, total %s, unique %s, root %s; %zu shard(s) (%s) counted"
               " again, all agree\n", s->head.n, (unsigned long long)s->head.shards, u128_to_str(s->head.total, t),
               u128_to_str(s->head.unique, u), hex, k->n, how);
        return NQ_EXIT_OK;
    }
    printf("audit: FAILED: %llu problem(s) in the manifest, %llu of %zu shard(s) (%s) counted again"
           " disagree\n", (unsigned long long)s->problems, (unsigned long long)bad, k->n, how);
    return NQ_EXIT_NO;
}

int cmd_audit(int argc, char **argv)
{
    audit_args_t o;
    picks_t k = { .o = &o };
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
    if (rc == 0 && !o.range && finish_sample(&k) != 0)
        rc = -4;
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
    audit_reservoir_free(&k.refuted);
    audit_reservoir_free(&k.evidence);
    audit_reservoir_free(&k.copied);
    fclose(f);
    return rc;
}
