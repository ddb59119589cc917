/* `nq bench count N`: count the whole board in-process with K threads pulling shards. */
#include "bench_gpu.h"
#include "cli.h"
#include "count.h"
#include "proto.h"
#include "shard.h"
#include "u128.h"

#include <ctype.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench"   /* messages read "nq bench: ..." and point to 'nq help bench' */

/*
 * Threads take runs of the list in index order (a list without its lease order: the order's cost
 * estimates took 13 us a shard, 2.0x the count's time at N=17, depth 3, for a one-pass count that
 * needs none; runs of at most 64 small shards keep the end balanced), or with NQ_ORDER=1|2 of
 * that lease order (shards_at: the largest shards first by their estimates), and count each
 * shard as shards_each_at encodes it: O(1) a shard, and nothing per shard kept in memory. (Until 2026-11-23 every descriptor
 * was first copied into one arena with an index and an order array: ~40 bytes a shard, 0.5 GB
 * at N=27, depth 4, and at N=16, depth 4 a seventh of the run in copies and page faults.)
 */
typedef struct {
    const nq_shards_t *list;
    uint64_t nshards, run;             /* shards in the list; lease positions a thread takes at once */
    atomic_uint_fast64_t next;         /* the next lease position to take */
    atomic_int stop;                   /* set on the first error */
    pthread_mutex_t lock;              /* guards the sums and err */
    nq_u128 total, unique;
    uint64_t nodes;
    char err[256];
} bench_t;

/* One thread's sums, and what its shards need. */
typedef struct {
    bench_t *b;
    nq_kernel_ctl_t ctl;
    nq_u128 total, unique;
    uint64_t nodes;
} bench_worker_t;

static void bench_fail(bench_t *b, const char *msg, uint64_t i)
{
    pthread_mutex_lock(&b->lock);
    if (!b->err[0])
        snprintf(b->err, sizeof b->err, "shard %llu: %s", (unsigned long long)i, msg);
    pthread_mutex_unlock(&b->lock);
    atomic_store(&b->stop, 1);
}

/* shards_each_at's callback: counts shard i. Nonzero stops the run (cancelled or failed). */
static int bench_shard(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    bench_worker_t *w = ud;
    nq_count_result_t r;
    char err[200];
    int rc = count_shard(spec, len, &r, &w->ctl, err, sizeof err);
    if (rc == 2)
        return 2;
    if (rc != 0) {
        bench_fail(w->b, err, i);
        return -1;
    }
    /* the residues are the kernel's independent check of its own total */
    if (r.res13 != r.total % 13 || r.res15 != r.total % 15) {
        bench_fail(w->b, "residues disagree with the total", i);
        return -1;
    }
    w->total += r.total;     /* cannot overflow 128 bits: at most 2^28 shards of < 2^64 */
    w->unique += r.unique;
    w->nodes += r.nodes;
    return 0;
}

static void *bench_thread(void *arg)
{
    bench_t *b = arg;
    bench_worker_t w = { .b = b, .ctl = { .cancel = &b->stop, .progress = NULL } };
    for (;;) {
        uint64_t pos = atomic_fetch_add(&b->next, b->run);
        if (pos >= b->nshards || atomic_load(&b->stop))
            break;
        if (shards_each_at(b->list, pos, b->run, bench_shard, &w) != 0)
            break;
    }
    pthread_mutex_lock(&b->lock);
    b->total += w.total;
    b->unique += w.unique;
    b->nodes += w.nodes;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* NQ_ORDER=2: the threads take shards in the lease order (a benchmark knob: docs/benchmarks.md
   compares it with index order); unset, index order, with no estimates built (0). */
static int bench_order(void)
{
    const char *e = getenv("NQ_ORDER");
    return e && strcmp(e, "2") == 0 ? NQ_ORDER_COST : 0;
}

/* Runs of up to 64 shards, enough of them that the last runs (the smallest shards) balance. */
static uint64_t bench_run_len(uint64_t nshards, uint64_t threads)
{
    uint64_t run = nshards / (threads * 256);
    return run < 1 ? 1 : run > 64 ? 64 : run;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs the threads; 0 ok, else an exit code (after printing the reason). */
static int bench_run(bench_t *b, int threads)
{
    pthread_t tid[1024];
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tid[started], NULL, bench_thread, b) != 0)
            break;
    if (started == 0)
        return cli_error(CMD, "cannot start threads");
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (b->err[0])
        return cli_error(CMD, "%s", b->err);
    return 0;
}

typedef struct {
    uint64_t n, threads, depth;
    int json, gpu, gpu_kernel;
    cli_gpu_sel_t sel;
} bench_opts_t;

static int bench_parse(int argc, char **argv, bench_opts_t *o)
{
    static const struct option longopts[] = {
        { "threads", required_argument, NULL, 't' }, { "depth", required_argument, NULL, 'd' },
        { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
        { "gpu", optional_argument, NULL, 'g' }, { "gpu-device", required_argument, NULL, 'G' },
        { "gpu-kernel", required_argument, NULL, 'K' }, { 0, 0, 0, 0 } };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int c, rc;
    o->threads = cores > 0 ? (uint64_t)(cores > 1024 ? 1024 : cores) : 1;
    o->depth = 0;
    o->json = o->gpu = o->gpu_kernel = 0;
    cli_gpu_sel_init(&o->sel);
    argc = cli_gpu_argv(argc, argv);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 't': if ((rc = cli_parse_u64(CMD, "--threads", optarg, 1, 1024, &o->threads))) return rc; break;
        case 'd': if ((rc = cli_parse_u64(CMD, "--depth", optarg, 0, NQ_SHARD_MAX_N, &o->depth))) return rc; break;
        case 'j': o->json = 1; break;
        case 'g': if ((rc = cli_gpu_option(CMD, optarg, &o->sel))) return rc;
                  o->gpu = 1; break;
        case 'G': if ((rc = cli_gpu_device_option(CMD, optarg, &o->sel))) return rc;
                  o->gpu = 1; break;
        case 'K': if ((rc = cli_gpu_kernel_option(CMD, optarg, &o->gpu_kernel))) return rc;
                  o->gpu = 1; break;
        case 'h': cli_help("bench"); return -1;
        default: return cli_count_bad_option(CMD, argv, &o->n);
        }
    }
    return cli_count_n(CMD, argc, argv, &o->n);
}

/* Each device's share of the work, on one line; "" for a single device. */
static void bench_shares(nq_gpu_t *const *gs, uint32_t n, const bench_gpu_share_t *sh, char *out, size_t len)
{
    size_t off = 0;
    out[0] = 0;
    for (uint32_t i = 0; n > 1 && i < n && off < len; i++) {
        nq_gpu_stats_t st;
        gpu_stats(gs[i], &st);
        off += (size_t)snprintf(out + off, len - off, "%sdevice %u: %llu shards, %llu nodes, %llu launches",
                                i ? "; " : "", (unsigned)i, (unsigned long long)sh[i].shards,
                                (unsigned long long)sh[i].nodes, (unsigned long long)st.launches);
    }
}

/* The sums through the GPUs; the devices' names, backend and parameters (and with several, each
   one's share) go to kernel, the JSON fields naming the backend and the kernel to gjson, the
   seconds it took to open the devices and build the kernel for them to *setup. 0, or an exit code. */
static int bench_on_gpu(const bench_opts_t *o, bench_t *b, char *kernel, size_t len, char *gjson, size_t glen,
                        double *setup)
{
    nq_gpu_t *gs[NQ_GPU_MAX_DEVICES];
    bench_gpu_share_t share[NQ_GPU_MAX_DEVICES];
    uint32_t n;
    char err[512], shares[400];
    double t0 = now_s();
    int rc = cli_gpu_open(CMD, &o->sel, o->gpu_kernel, gs, &n);
    *setup = now_s() - t0;
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    if (bench_gpu_run(gs, n, b->list, (int)o->threads, b->run, &b->total, &b->unique, &b->nodes, share, err,
                      sizeof err))
        rc = cli_error(CMD, "%s", err);
    nq_gpu_stats_t st = { 0 };
    for (uint32_t i = 0; i < n; i++) {
        nq_gpu_stats_t d;
        gpu_stats(gs[i], &d);
        st.launches += d.launches;
        st.tasks += d.tasks;
        st.launch_s += d.launch_s;
    }
    bench_shares(gs, n, share, shares, sizeof shares);
    nq_gpu_t *g = gs[0];
    /* the seconds the devices had a launch: far below the bench's seconds, the host fed them too slowly */
    snprintf(kernel, len, "gpu: %s%s [%s; %s; %llu launches, %llu tasks, %.2f s busy%s%s]", gpu_name(g),
             n > 1 ? " and more" : "", gpu_backend_name(g), gpu_params(g), (unsigned long long)st.launches,
             (unsigned long long)st.tasks, st.launch_s, n > 1 ? "; " : "", shares);
    snprintf(gjson, glen, ",\"gpu_backend\":\"%s\",\"gpu_kernel\":\"%s\",\"gpu_nodes_cpu\":%s,"
             "\"gpu_devices\":%u",
             gpu_backend_name(g), gpu_kernel_name(g), gpu_nodes_cpu(g) ? "true" : "false", (unsigned)n);
    for (int k = 0; k < 2; k++) {       /* each device's share: "device_shards":[..],"device_nodes":[..] */
        size_t off = strlen(gjson);
        off += (size_t)snprintf(gjson + off, glen - off, ",\"device_%s\":[", k ? "nodes" : "shards");
        for (uint32_t i = 0; i < n && off < glen; i++)
            off += (size_t)snprintf(gjson + off, glen - off, "%s%llu", i ? "," : "",
                                    (unsigned long long)(k ? share[i].nodes : share[i].shards));
        if (off < glen)
            snprintf(gjson + off, glen - off, "]");
    }
    for (char *c = kernel; *c; c++)     /* the driver's words, printed inside a JSON string too */
        if ((unsigned char)*c < 32 || *c == '"' || *c == '\\')
            *c = '?';
    cli_gpu_close(gs, n);
    return rc;
}

int cmd_bench_count(int argc, char **argv)
{
    bench_opts_t o;
    char err[256], t1[40], t2[40], kernel[1100], gjson[800] = "";
    int rc = bench_parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    double t0 = now_s();
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX,
                               .order = bench_order(), .unordered = bench_order() == 0 };
    nq_shards_t *shards = shards_new_limited(NQ_KIND_COUNT, (int)o.n, (int)o.depth, NQ_SHARD_ENCODING,
                                             &lim, err, sizeof err);
    if (!shards)
        return cli_usage_error(CMD, "%s", err);
    bench_t b = { .list = shards, .nshards = shards_count(shards),
                  .run = bench_run_len(shards_count(shards), o.threads) };
    double listed = now_s() - t0;      /* the list: a broker's work, reported apart */
    pthread_mutex_init(&b.lock, NULL);
    snprintf(kernel, sizeof kernel, "%s", count_kernel_name());
    double setup = 0;
    rc = o.gpu ? bench_on_gpu(&o, &b, kernel, sizeof kernel, gjson, sizeof gjson, &setup)
               : bench_run(&b, (int)o.threads);
    double secs = now_s() - t0;
    if (rc == 0 && !o.sel.list) {
        double rate = secs > 0 ? (double)b.nodes / secs : 0;
        u128_to_str(b.total, t1);
        u128_to_str(b.unique, t2);
        if (o.json)
            printf("{\"n\":%d,\"total\":%s,\"unique\":%s,\"nodes\":%llu,\"seconds\":%.6f,"
                   "\"nodes_per_s\":%.0f,\"shards\":%zu,\"depth\":%d,\"threads\":%d,\"kernel\":\"%s\","
                   "\"list_seconds\":%.6f,\"setup_seconds\":%.6f%s}\n", (int)o.n, t1, t2,
                   (unsigned long long)b.nodes, secs, rate, shards_count(shards), shards_depth(shards),
                   (int)o.threads, kernel, listed, setup, gjson);
        else {
            char g1[NQ_U128_GROUPED], g2[NQ_U128_GROUPED], g3[NQ_U128_GROUPED], g4[NQ_U128_GROUPED];
            printf("n %d  total %s  unique %s\nnodes %s  seconds %.3f  nodes/s %s\n"
                   "shards %zu  depth %d  threads %d  kernel %s\n", (int)o.n, u128_group(b.total, g1),
                   u128_group(b.unique, g2), u128_group(b.nodes, g3), secs, u128_group((nq_u128)rate, g4),
                   shards_count(shards), shards_depth(shards), (int)o.threads, kernel);
        }
    }
    pthread_mutex_destroy(&b.lock);
    shards_destroy(&shards);
    return rc;
}
