/*
 * `nq estimate count N`: times a seeded uniform random sample of K shards
 * (without replacement) and extrapolates the core-hours of the whole count.
 *
 * When shards are too long to time K of them (N >= 20 at the default depth:
 * seconds to minutes each), each sample is a Knuth probe instead: a uniform
 * random shard, then E more levels each chosen uniformly among its open cells
 * (shard_probe), timed; that time times the number of choices on the path is
 * an unbiased estimate of the shard's time (Knuth 1975). E is the smallest
 * that brings a probe to ~20 ms, so the default K = 1000 probes take 10-80 s at any N.
 *
 * Interval: with S shards, sample mean m and sample standard deviation sd of
 * the K per-shard CPU times, the total is S*m and its 95% interval is
 * S * (m +- 1.96 * sd/sqrt(K) * sqrt((S-K)/(S-1))) (normal approximation with
 * the finite-population correction; exact when K = S). Shard times are very
 * skewed, so a small K gives a wide interval: that is the honest answer.
 *
 * The same sample also estimates the nodes the count searches (nodes, or weight
 * x nodes for a probe), the same way. Unlike CPU time, that figure does not
 * depend on the machine or on what else it runs: two seeds' node estimates
 * differ only by sampling, so a planner can tell the tree's spread from the
 * host's, and scale nodes by the nodes/s of the machines a campaign will use.
 */
#include "bench_gpu.h"
#include "cli.h"
#include "count.h"
#include "proto.h"
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
    uint64_t n, sample, seed, depth;
    int json, gpu, gpu_device, gpu_list, gpu_kernel;
} est_opts_t;

static int est_parse(int argc, char **argv, est_opts_t *o)
{
    static const struct option longopts[] = {
        { "sample", required_argument, NULL, 'k' }, { "seed", required_argument, NULL, 's' },
        { "depth", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' }, { "gpu", no_argument, NULL, 'g' },
        { "gpu-device", required_argument, NULL, 'G' }, { "gpu-kernel", required_argument, NULL, 'K' },
        { 0, 0, 0, 0 } };
    int c, rc;
    /* 1000: smaller samples often miss the long tail of shard sizes, and their intervals the count
       (N=21: two seeds of three at 200; docs/benchmarks.md) */
    o->sample = 1000; o->seed = 1; o->depth = 0; o->json = 0;
    o->gpu = o->gpu_list = o->gpu_kernel = 0; o->gpu_device = -1;
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
        case 'j': o->json = 1; break;
        case 'g': o->gpu = 1; break;
        case 'G': if ((rc = cli_gpu_device_option(CMD, optarg, &o->gpu_device, &o->gpu_list))) return rc;
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
    for (int pass = 0; pass < 3; pass++) {
        double t[6], est, est_nodes;
        for (int i = 0; i < 6; i++)
            if (probe_once(sh, e, rng, &est, &est_nodes, &t[i]) != 0)
                return NQ_EXIT_ERROR;
        double worst = 0;
        for (int i = 0; i < 6; i++)
            worst = t[i] > worst ? t[i] : worst;
        if (worst > 10 * target && e < room) e++;
        else if (worst < target / 20 && e > 0) e--;
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

/* A total over all S shards from K sampled values, with its 95% interval (see the top of the file).
   Whole shards (not probes): never below what the sample alone adds up to. */
typedef struct { double mean, sd, total, lo, hi; } est_total_t;

static est_total_t est_total(const double *x, size_t k, size_t s, int probes)
{
    est_total_t e = { 0, 0, 0, 0, 0 };
    double sum = 0, ss = 0;
    for (size_t i = 0; i < k; i++)
        sum += x[i];
    e.mean = k ? sum / (double)k : 0;
    for (size_t i = 0; i < k; i++)
        ss += (x[i] - e.mean) * (x[i] - e.mean);
    e.sd = k > 1 ? sqrt(ss / (double)(k - 1)) : 0;
    double fpc = probes ? 1 : s > 1 ? sqrt((double)(s - k) / (double)(s - 1)) : 0;   /* probes: with replacement */
    double half = 1.96 * e.sd / sqrt(k ? (double)k : 1) * fpc;
    /* sum * (s / k), not s * mean: exact when every shard was sampled */
    e.total = k ? sum * ((double)s / (double)k) : 0;
    e.lo = (double)s * (e.mean - half);
    e.hi = (double)s * (e.mean + half);
    if (!probes && e.lo < sum)
        e.lo = sum;
    if (e.lo < 0)
        e.lo = 0;
    if (e.lo > e.total)   /* rounding, when the interval is a point */
        e.lo = e.total;
    if (e.hi < e.total)
        e.hi = e.total;
    return e;
}

static void est_print(const est_opts_t *o, const nq_shards_t *sh, size_t k, int probes, int extra,
                      const est_total_t *t, const est_total_t *nd)
{
    const double h = 3600;
    size_t s = shards_count(sh);
    if (o->json)
        printf("{\"n\":%d,\"depth\":%d,\"shards\":%zu,\"sampled\":%zu,\"seed\":%llu,\"mean_shard_s\":%.6g,"
               "\"sd_shard_s\":%.6g,\"core_hours\":%.6g,\"ci95_low\":%.6g,\"ci95_high\":%.6g,"
               "\"nodes\":%.0f,\"nodes_ci95_low\":%.0f,\"nodes_ci95_high\":%.0f,"
               "\"method\":\"%s\",\"probe_levels\":%d,\"core_years\":%.6g}\n",
               (int)o->n, shards_depth(sh), s, k, (unsigned long long)o->seed, t->mean, t->sd, t->total / h,
               t->lo / h, t->hi / h, nd->total, nd->lo, nd->hi, probes ? "probes" : "shards", extra,
               t->total / h / (24 * 365.25));
    else
        printf("count N=%d  depth %d  shards %zu  %s %zu (seed %llu)\n"
               "shard CPU seconds: mean %.4g  sd %.4g\n"
               "core-hours %.4g  95%% interval %.4g .. %.4g  (%.3g core-years; on 1000 cores %.3g days)\n"
               "nodes %.4g  95%% interval %.4g .. %.4g  (the same on any machine; %.3g nodes/s here)\n"
               "(interval: shards x (mean +- 1.96 sd/sqrt(sampled)%s))\n",
               (int)o->n, shards_depth(sh), s, probes ? "probes" : "sampled", k, (unsigned long long)o->seed,
               t->mean, t->sd, t->total / h, t->lo / h, t->hi / h, t->total / h / (24 * 365.25),
               t->total / h / 1000 / 24, nd->total, nd->lo, nd->hi, t->total > 0 ? nd->total / t->total : 0,
               probes ? "; Knuth probes, levels below each shard" : " x finite-population correction");
}

/* The estimate on a GPU: GPU-hours at the rate measured on the sample (device: its name, printed in
   a JSON string too, so quotes, backslashes and control bytes of the driver's words become '?'). */
static void est_print_gpu(const est_opts_t *o, const nq_shards_t *sh, size_t k, int probes, int extra,
                          const est_total_t *t, const est_total_t *nd, const char *device, double rate)
{
    const double h = 3600, y = h * 24 * 365.25;
    char dev[256];
    size_t s = shards_count(sh), i = 0;
    for (; device[i] && i + 1 < sizeof dev; i++)
        dev[i] = (unsigned char)device[i] < 32 || device[i] == '"' || device[i] == '\\' ? '?' : device[i];
    dev[i] = 0;
    if (o->json)
        printf("{\"n\":%d,\"depth\":%d,\"shards\":%zu,\"sampled\":%zu,\"seed\":%llu,\"gpu\":\"%s\","
               "\"nodes_per_s\":%.6g,\"gpu_hours\":%.6g,\"ci95_low\":%.6g,\"ci95_high\":%.6g,"
               "\"gpu_years\":%.6g,"
               "\"nodes\":%.0f,\"nodes_ci95_low\":%.0f,\"nodes_ci95_high\":%.0f,\"method\":\"%s\","
               "\"probe_levels\":%d}\n", (int)o->n, shards_depth(sh), s, k, (unsigned long long)o->seed, dev,
               rate, t->total / h, t->lo / h, t->hi / h, t->total / y, nd->total, nd->lo, nd->hi,
               probes ? "probes" : "shards", extra);
    else
        printf("count N=%d  depth %d  shards %zu  %s %zu (seed %llu)\n"
               "GPU %s: %.4g nodes/s on the sample\n"
               "GPU-hours %.4g  95%% interval %.4g .. %.4g  (%.3g GPU-years)\n"
               "nodes %.4g  95%% interval %.4g .. %.4g  (the same on any machine)\n"
               "(GPU time: nodes / the rate measured on the sample%s)\n",
               (int)o->n, shards_depth(sh), s, probes ? "probes" : "sampled", k, (unsigned long long)o->seed,
               dev, rate, t->total / h, t->lo / h, t->hi / h, t->total / y, nd->total, nd->lo, nd->hi,
               probes ? "; Knuth probes, levels below each shard" : "");
}

/* The sample on the GPU: the same draws as est_time_sample / est_probe_sample make, one batch; each
   sample's time is its nodes over the batch's rate. 0, or an exit code (reported). */
static int est_gpu(const est_opts_t *o, const nq_shards_t *sh, int probes, size_t k, double *secs,
                   double *nod, int *extra, nq_gpu_t **g, double *rate)
{
    char err[512];
    nq_rng_t rng;
    int rc = cli_gpu_open(CMD, o->gpu_device, o->gpu_list, o->gpu_kernel, g);
    if (rc)
        return rc < 0 ? -1 : rc;
    rng_init(&rng, o->seed, probes ? 0x70726f6265 : 0x657374);   /* the streams "probe" and "est" */
    if (probes && (rc = probe_depth(sh, (int)o->n, &rng, extra)) != 0)
        return rc;
    if (estimate_gpu_sample(*g, sh, probes, *extra, k, &rng, nod, rate, err, sizeof err) != 0)
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
    /* whole shards when K of them take seconds by the model; probes otherwise */
    int probes = shard_count_core_seconds((int)o.n) / (double)shards_count(sh) * (double)o.sample > 30, extra = 0;
    size_t s = shards_count(sh), k = probes || o.sample < s ? (size_t)o.sample : s;
    double *secs = calloc(k ? k : 1, sizeof *secs), *nod = calloc(k ? k : 1, sizeof *nod);
    if (!secs || !nod) {
        free(secs);
        free(nod);
        shards_destroy(&sh);
        return cli_error(CMD, "out of memory");
    }
    nq_gpu_t *g = NULL;
    double rate = 0;
    if (o.gpu)
        rc = est_gpu(&o, sh, probes, k, secs, nod, &extra, &g, &rate);
    else if (probes)
        rc = est_probe_sample(sh, (int)o.n, k, o.seed, secs, nod, &extra);
    else
        rc = k ? est_time_sample(sh, k, o.seed, secs, nod) : 0;
    if (rc == 0) {
        est_total_t t = est_total(secs, k, s, probes), nd = est_total(nod, k, s, probes);
        char dev[400];                  /* which kernel: the fast one's nodes are its own, not the CPU's */
        if (g)
            snprintf(dev, sizeof dev, "%s [%s, %s kernel%s]", gpu_name(g), gpu_backend_name(g),
                     gpu_kernel_name(g), gpu_nodes_cpu(g) ? "" : ": nodes of its own");
        if (g)
            est_print_gpu(&o, sh, k, probes, extra, &t, &nd, dev, rate);
        else
            est_print(&o, sh, k, probes, extra, &t, &nd);
    }
    gpu_close(&g);
    if (rc < 0)                         /* --gpu-device list: printed */
        rc = 0;
    free(secs);
    free(nod);
    shards_destroy(&sh);
    return rc;
}
