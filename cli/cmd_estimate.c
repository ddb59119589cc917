/*
 * `nq estimate count N`: the nodes a count searches, the rate this machine searches them at, and
 * the time that makes, each with a 95 % interval.
 *
 * Nodes (estimate_nodes.c): Knuth paths down the kernel's own tree, cheap enough for thousands
 * of shards (--node-sample, default 100,000; every shard of a list that has no more), each with
 * --paths paths. Nodes do not depend on the machine or its load: plan with them.
 *
 * Rate: a seeded random sample of K timed counts (--sample, default 200): whole shards drawn
 * uniformly without replacement where K of them take ~10 s by the planning model, else Knuth
 * probes, a random shard and E more random levels (shard_probe) counted whole, E the smallest
 * that brings a probe to ~20 ms. The rate is the ratio of the sample's nodes to its CPU seconds,
 * each weighted by the probe's choices: sum(w n) / sum(w t), a ratio whose numerator and
 * denominator move together, so its interval is narrow where the old estimate of time,
 * S * mean(w t), was as skewed as the shard sizes (N=28: 30 and 300 probes gave intervals that
 * missed each other). Interval by linearization: se = sd(w n - rate w t) / (sqrt(K) mean(w t)).
 *
 * Time: nodes / rate, its relative interval from both (independent samples). When the sample is
 * every shard, counted whole, nodes, rate and time are the count's own, a point.
 */
#include "bench_gpu.h"
#include "cli.h"
#include "count.h"
#include "estimate.h"
#include "proto.h"
#include "render.h"
#include "rng.h"
#include "shard.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "estimate"

typedef struct {
    uint64_t n, sample, seed, depth, node_sample, paths;
    int json, gpu, gpu_kernel;
    cli_gpu_sel_t sel;
} est_opts_t;

static int est_parse(int argc, char **argv, est_opts_t *o)
{
    static const struct option longopts[] = {
        { "sample", required_argument, NULL, 'k' }, { "seed", required_argument, NULL, 's' },
        { "depth", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' }, { "gpu", optional_argument, NULL, 'g' },
        { "gpu-device", required_argument, NULL, 'G' }, { "gpu-kernel", required_argument, NULL, 'K' },
        { "node-sample", required_argument, NULL, 'N' }, { "paths", required_argument, NULL, 'P' },
        { 0, 0, 0, 0 } };
    int c, rc;
    /* 200 timed counts: the rate is a ratio of two sums that move together (see above); 100,000
       shards of 16 paths: the node intervals of seeds and sizes agree (docs/benchmarks.md) */
    o->sample = 200; o->seed = 1; o->depth = 0; o->json = 0;
    o->node_sample = 100000; o->paths = 16;
    o->gpu = o->gpu_kernel = 0;
    cli_gpu_sel_init(&o->sel);
    argc = cli_gpu_argv(argc, argv);
    if (argc < 2 || strcmp(argv[1], "count") != 0)
        return cli_usage_error(CMD, "expected 'count N' (only counts can be estimated)");
    argc--; argv++;        /* argv[0] is now "count" */
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'k': if ((rc = cli_parse_u64(CMD, "--sample", optarg, 2, 1000000, &o->sample))) return rc; break;
        case 's': if ((rc = cli_parse_u64(CMD, "--seed", optarg, 0, UINT64_MAX, &o->seed))) return rc; break;
        case 'd': if ((rc = cli_parse_u64(CMD, "--depth", optarg, 0, NQ_SHARD_MAX_N, &o->depth))) return rc; break;
        case 'N': rc = cli_parse_u64(CMD, "--node-sample", optarg, 2, 100000000, &o->node_sample);
                  if (rc) return rc;
                  break;
        case 'P': if ((rc = cli_parse_u64(CMD, "--paths", optarg, 2, 1u << 20, &o->paths))) return rc; break;
        case 'j': o->json = 1; break;
        case 'g': if ((rc = cli_gpu_option(CMD, optarg, &o->sel))) return rc;
                  o->gpu = 1; break;
        case 'G': if ((rc = cli_gpu_device_option(CMD, optarg, &o->sel))) return rc;
                  o->gpu = 1; break;
        case 'K': if ((rc = cli_gpu_kernel_option(CMD, optarg, &o->gpu_kernel))) return rc;
                  o->gpu = 1; break;
        case 'h': cli_help(CMD); return -1;
        default: return cli_count_bad_option(CMD, argv, &o->n);
        }
    }
    return cli_count_n(CMD, argc, argv, &o->n);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Knuth's selection sampling: k of s indices, uniform, without replacement, in order, O(1) memory. */
static int est_time_sample(const nq_shards_t *sh, size_t k, uint64_t seed, double *secs, double *nod)
{
    nq_rng_t rng;
    char err[256];
    size_t s = shards_count(sh), taken = 0;
    rng_init(&rng, seed, 0x657374);   /* stream "est" */
    for (size_t i = 0; i < s && taken < k; i++) {
        if (rng_below(&rng, s - i) >= k - taken)
            continue;
        size_t len;
        uint8_t b[NQ_MAX_SPEC];
        len = shards_get(sh, i, b);
        nq_count_result_t r;
        double t0 = cpu_now();
        if (count_shard(b, len, &r, NULL, err, sizeof err) != 0)
            return cli_error(CMD, "shard %zu: %s", i, err);
        secs[taken] = cpu_now() - t0;
        nod[taken] = (double)r.nodes;
        taken++;
    }
    return 0;
}

static uint64_t pick_uniform(void *ud, uint64_t bound)
{
    return rng_below(ud, bound);
}

/* One probe E levels below a uniform random shard: its estimates of that shard's CPU seconds and
   nodes, and the probe's own time. */
static int probe_once(const nq_shards_t *sh, int extra, nq_rng_t *rng, double *est, double *est_nodes, double *t)
{
    char err[256];
    uint8_t b[NQ_MAX_SPEC], deep[NQ_MAX_SPEC];
    uint64_t i = rng_below(rng, shards_count(sh));
    size_t len = shards_get(sh, i, b);
    double w;
    int dl = shard_probe(b, len, extra, pick_uniform, rng, deep, &w);
    if (dl < 0)
        return cli_error(CMD, "shard %llu cannot be probed", (unsigned long long)i);
    *est = *est_nodes = *t = 0;
    if (dl == 0)
        return 0;                       /* the path died: nothing below it */
    nq_count_result_t r;
    double t0 = cpu_now();
    if (count_shard(deep, (size_t)dl, &r, NULL, err, sizeof err) != 0)
        return cli_error(CMD, "probe below shard %llu: %s", (unsigned long long)i, err);
    *t = cpu_now() - t0;
    *est = w * *t;
    *est_nodes = w * (double)r.nodes;
    return 0;
}

/* The levels a probe adds: from the planning model, then corrected by a few pilot probes. */
static int probe_depth(const nq_shards_t *sh, int n, nq_rng_t *rng, int *extra)
{
    double mean = shard_count_core_seconds(n) / (double)shards_count(sh), target = 0.02;
    int e = 0, room = n - 2 - shards_depth(sh);
    while (e < room && mean > target * 4) {
        mean /= n / 2.5;                /* a level of these depths divides the work by about n/2.5 */
        e++;
    }
    /* by the pilots' mean, not their worst: a worst under 10x the target let N=24's probes
       average 0.28 s, and a rate sample of 200 take a minute */
    for (int pass = 0; pass < 4; pass++) {
        double t, est, est_nodes, mean_t = 0;
        for (int i = 0; i < 6; i++) {
            if (probe_once(sh, e, rng, &est, &est_nodes, &t) != 0)
                return NQ_EXIT_ERROR;
            mean_t += t / 6;
        }
        if (mean_t > 3 * target && e < room) e++;
        else if (mean_t < target / 8 && e > 0) e--;
        else break;
    }
    *extra = e;
    return 0;
}

static int est_probe_sample(const nq_shards_t *sh, int n, size_t k, uint64_t seed, double *secs, double *nod,
                            int *extra)
{
    nq_rng_t rng;
    rng_init(&rng, seed, 0x70726f6265);   /* stream "probe" */
    int rc = probe_depth(sh, n, &rng, extra);
    for (size_t i = 0; rc == 0 && i < k; i++) {
        double t;
        rc = probe_once(sh, *extra, &rng, &secs[i], &nod[i], &t);
    }
    return rc;
}

/* A value with its 95 % interval. */
typedef struct { double v, lo, hi; } est_ci_t;

static est_ci_t est_ci(double v, double rel_se)
{
    double half = 1.96 * rel_se * v;
    return (est_ci_t){ v, v - half > 0 ? v - half : 0, v + half };
}

/* What the command found: nodes, rate and CPU seconds of the whole count, and the timed sample. */
typedef struct {
    nq_est_nodes_t nodes;
    int counted;                       /* the timed sample was every shard, whole: all exact */
    est_ci_t node, rate, secs;
    double mean_s, sd_s;               /* per shard: the estimate's mean; the timed sample's spread */
} est_result_t;

/* The rate from the timed sample: sum(w n) / sum(w t), with its linearized standard error. */
static est_ci_t est_rate(const double *secs, const double *nod, size_t k)
{
    double sy = 0, sx = 0, ss = 0;
    for (size_t i = 0; i < k; i++) {
        sy += nod[i];
        sx += secs[i];
    }
    double r = sx > 0 ? sy / sx : 0;
    for (size_t i = 0; i < k; i++)
        ss += (nod[i] - r * secs[i]) * (nod[i] - r * secs[i]);
    double se = k > 1 && sx > 0 ? sqrt(ss / (double)(k - 1) / (double)k) / (sx / (double)k) : 0;
    return est_ci(r, r > 0 ? se / r : 0);
}

static void est_spread(const double *secs, size_t k, double *sd)
{
    double mean = 0, ss = 0;
    for (size_t i = 0; i < k; i++)
        mean += secs[i] / (double)k;
    for (size_t i = 0; i < k; i++)
        ss += (secs[i] - mean) * (secs[i] - mean);
    *sd = k > 1 ? sqrt(ss / (double)(k - 1)) : 0;
}

/* Nodes (counted, or estimated), the rate, and the time they make. 0, or an exit code. */
static int est_combine(const est_opts_t *o, const nq_shards_t *sh, int probes, size_t k, const double *secs,
                       const double *nod, est_ci_t rate, est_result_t *r)
{
    char err[256];
    size_t s = shards_count(sh);
    memset(r, 0, sizeof *r);
    r->counted = !probes && k == s;
    if (r->counted) {
        double sum = 0;
        for (size_t i = 0; i < k; i++)
            sum += nod[i];
        r->nodes = (nq_est_nodes_t){ sum, 0, s, 1, 0 };
    } else if (estimate_nodes(sh, o->node_sample, (uint32_t)o->paths, o->seed, &r->nodes, err,
                              sizeof err) != 0) {
        return cli_error(CMD, "%s", err);
    }
    if (r->counted)
        rate.lo = rate.hi = rate.v;     /* the whole count's own */
    double node_rel = r->nodes.nodes > 0 ? r->nodes.se / r->nodes.nodes : 0;
    double rate_rel = rate.v > 0 ? (rate.hi - rate.v) / 1.96 / rate.v : 0;
    r->node = est_ci(r->nodes.nodes, node_rel);
    r->rate = rate;
    r->secs = est_ci(rate.v > 0 ? r->nodes.nodes / rate.v : 0,
                     sqrt(node_rel * node_rel + rate_rel * rate_rel));
    if (!probes) {                      /* whole shards: never below what the sample itself holds */
        double sn = 0, st = 0;
        for (size_t i = 0; i < k; i++) {
            sn += nod[i];
            st += secs[i];
        }
        r->node.lo = r->node.lo > sn ? r->node.lo : sn;
        r->secs.lo = r->secs.lo > st ? r->secs.lo : st;
    }
    r->mean_s = s ? r->secs.v / (double)s : 0;
    est_spread(secs, k, &r->sd_s);
    return 0;
}

static const char *nodes_method(const est_result_t *r)
{
    return r->counted ? "counted" : r->nodes.every ? "every shard" : "sampled shards";
}

static void est_print(const est_opts_t *o, const nq_shards_t *sh, size_t k, int probes, int extra,
                      const est_result_t *r)
{
    const double h = 3600;
    size_t s = shards_count(sh);
    if (o->json) {
        printf("{\"n\":%d,\"depth\":%d,\"shards\":%zu,\"sampled\":%zu,\"seed\":%llu,\"mean_shard_s\":%.6g,"
               "\"sd_shard_s\":%.6g,\"core_hours\":%.6g,\"ci95_low\":%.6g,\"ci95_high\":%.6g,"
               "\"nodes\":%.0f,\"nodes_ci95_low\":%.0f,\"nodes_ci95_high\":%.0f,"
               "\"method\":\"%s\",\"probe_levels\":%d,\"core_years\":%.6g,",
               (int)o->n, shards_depth(sh), s, k, (unsigned long long)o->seed, r->mean_s, r->sd_s,
               r->secs.v / h, r->secs.lo / h, r->secs.hi / h, r->node.v, r->node.lo, r->node.hi,
               probes ? "probes" : "shards", extra, r->secs.v / h / (24 * 365.25));
        printf("\"nodes_per_s\":%.6g,\"nodes_per_s_ci95_low\":%.6g,\"nodes_per_s_ci95_high\":%.6g,"
               "\"nodes_method\":\"%s\",\"node_sample\":%llu,\"node_paths\":%u}\n", r->rate.v, r->rate.lo,
               r->rate.hi, nodes_method(r), (unsigned long long)r->nodes.shards, r->nodes.paths);
        return;
    }
    printf("count N=%d  depth %d  shards %zu  %s %zu (seed %llu)\n", (int)o->n, shards_depth(sh), s,
           probes ? "probes" : "sampled", k, (unsigned long long)o->seed);
    printf("nodes %.4g  95%% interval %.4g .. %.4g  (%s", r->node.v, r->node.lo, r->node.hi, nodes_method(r));
    if (!r->counted)
        printf(": %llu shards, %u paths each", (unsigned long long)r->nodes.shards, r->nodes.paths);
    printf("; the same on any machine)\n");
    printf("rate %.4g nodes/s  95%% interval %.4g .. %.4g  (%zu %s counted whole, CPU time, this "
           "machine now)\n",
           r->rate.v, r->rate.lo, r->rate.hi, k, probes ? "probes" : "shards");
    char one[48], many[48];
    printf("core-hours %.4g  95%% interval %.4g .. %.4g  (on one core %s; on 1000 cores %s)\n",
           r->secs.v / h, r->secs.lo / h, r->secs.hi / h, render_span(r->secs.v, one, sizeof one),
           render_span(r->secs.v / 1000, many, sizeof many));
    printf("shard CPU seconds: mean %.4g  sd %.4g%s\n", r->mean_s, r->sd_s,
           probes ? "  (probes: their choices times their time)" : "");
}

/* The estimate on a GPU: GPU-hours at the rate measured on the sample (device: its name, printed in
   a JSON string too, so quotes, backslashes and control bytes of the driver's words become '?'). */
static void est_print_gpu(const est_opts_t *o, const nq_shards_t *sh, size_t k, int probes, int extra,
                          const est_result_t *r, const char *device)
{
    const double h = 3600, y = h * 24 * 365.25;
    char dev[256], span[48];
    size_t s = shards_count(sh), i = 0;
    for (; device[i] && i + 1 < sizeof dev; i++)
        dev[i] = (unsigned char)device[i] < 32 || device[i] == '"' || device[i] == '\\' ? '?' : device[i];
    dev[i] = 0;
    if (o->json)
        printf("{\"n\":%d,\"depth\":%d,\"shards\":%zu,\"sampled\":%zu,\"seed\":%llu,\"gpu\":\"%s\","
               "\"nodes_per_s\":%.6g,\"gpu_hours\":%.6g,\"ci95_low\":%.6g,\"ci95_high\":%.6g,"
               "\"gpu_years\":%.6g,"
               "\"nodes\":%.0f,\"nodes_ci95_low\":%.0f,\"nodes_ci95_high\":%.0f,\"method\":\"%s\","
               "\"probe_levels\":%d,\"nodes_method\":\"%s\",\"node_sample\":%llu,\"node_paths\":%u}\n",
               (int)o->n, shards_depth(sh), s, k, (unsigned long long)o->seed, dev, r->rate.v, r->secs.v / h,
               r->secs.lo / h, r->secs.hi / h, r->secs.v / y, r->node.v, r->node.lo, r->node.hi,
               probes ? "probes" : "shards", extra, nodes_method(r), (unsigned long long)r->nodes.shards,
               r->nodes.paths);
    else
        printf("count N=%d  depth %d  shards %zu  %s %zu (seed %llu)\n"
               "GPU %s: %.4g nodes/s on the sample\n"
               "GPU-hours %.4g  95%% interval %.4g .. %.4g  (on one GPU %s)\n"
               "nodes %.4g  95%% interval %.4g .. %.4g  (%s; the same on any machine)\n"
               "(GPU time: nodes / the rate measured on the sample%s)\n",
               (int)o->n, shards_depth(sh), s, probes ? "probes" : "sampled", k, (unsigned long long)o->seed,
               dev, r->rate.v, r->secs.v / h, r->secs.lo / h, r->secs.hi / h,
               render_span(r->secs.v, span, sizeof span), r->node.v,
               r->node.lo, r->node.hi, nodes_method(r), probes ? "; Knuth probes, levels below each shard" : "");
}

/* The sample on the GPUs: the same draws as est_time_sample / est_probe_sample make, one batch over
   every device (--gpu all: the rate is theirs together); each sample's time is its nodes over the
   batch's rate. 0, or an exit code (reported). */
static int est_gpu(const est_opts_t *o, const nq_shards_t *sh, int probes, size_t k, double *secs,
                   double *nod, int *extra, nq_gpu_t **gs, uint32_t *ng, double *rate)
{
    char err[512];
    nq_rng_t rng;
    int rc = cli_gpu_open(CMD, &o->sel, o->gpu_kernel, gs, ng);
    if (rc)
        return rc < 0 ? -1 : rc;
    rng_init(&rng, o->seed, probes ? 0x70726f6265 : 0x657374);   /* the streams "probe" and "est" */
    if (probes && (rc = probe_depth(sh, (int)o->n, &rng, extra)) != 0)
        return rc;
    if (estimate_gpu_sample(gs, *ng, sh, probes, *extra, k, &rng, nod, rate, err, sizeof err) != 0)
        return cli_error(CMD, "%s", err);
    for (size_t i = 0; i < k; i++)
        secs[i] = *rate > 0 ? nod[i] / *rate : 0;
    return 0;
}

int cmd_estimate(int argc, char **argv)
{
    est_opts_t o;
    char err[256];
    int rc = est_parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    nq_shards_t *sh = shards_new(NQ_KIND_COUNT, (int)o.n, (int)o.depth, err, sizeof err);
    if (!sh)
        return cli_usage_error(CMD, "%s", err);
    /* whole shards when K of them take at most ~10 s by the model (N <= 20 at the defaults); probes
       otherwise: the rate needs counts of tens of milliseconds, not whole minutes of them */
    double model_s = shard_count_core_seconds((int)o.n) / (double)shards_count(sh) * (double)o.sample;
    int probes = model_s > 10, extra = 0;
    size_t s = shards_count(sh), k = probes || o.sample < s ? (size_t)o.sample : s;
    double *secs = calloc(k ? k : 1, sizeof *secs), *nod = calloc(k ? k : 1, sizeof *nod);
    if (!secs || !nod) {
        free(secs);
        free(nod);
        shards_destroy(&sh);
        return cli_error(CMD, "out of memory");
    }
    nq_gpu_t *gs[NQ_GPU_MAX_DEVICES], *g = NULL;
    uint32_t ng = 0;
    double gpu_rate = 0;
    if (o.gpu) {
        rc = est_gpu(&o, sh, probes, k, secs, nod, &extra, gs, &ng, &gpu_rate);
        g = rc == 0 ? gs[0] : NULL;
    } else if (probes)
        rc = est_probe_sample(sh, (int)o.n, k, o.seed, secs, nod, &extra);
    else
        rc = k ? est_time_sample(sh, k, o.seed, secs, nod) : 0;
    est_result_t r;
    /* the GPU's rate is its batch's: no sampling error of its own is measured */
    if (rc == 0)
        rc = est_combine(&o, sh, probes, k, secs, nod, g ? est_ci(gpu_rate, 0) : est_rate(secs, nod, k), &r);
    char dev[400] = "";                 /* which kernel: the fast one's nodes are its own, not the CPU's */
    if (g)
        snprintf(dev, sizeof dev, "%s%s [%s, %s kernel%s]", gpu_name(g),
                 ng > 1 ? " and the others together" : "", gpu_backend_name(g), gpu_kernel_name(g), gpu_nodes_cpu(g) ? "" : ": nodes of its own");
    if (rc == 0 && g)
        est_print_gpu(&o, sh, k, probes, extra, &r, dev);
    else if (rc == 0)
        est_print(&o, sh, k, probes, extra, &r);
    cli_gpu_close(gs, ng);
    if (rc < 0)                         /* --gpu-device list: printed */
        rc = 0;
    free(secs);
    free(nod);
    shards_destroy(&sh);
    return rc;
}
