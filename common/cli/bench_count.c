/* `nq bench count N`: count the whole board in-process with K threads pulling shards. */
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

/* Every shard's descriptor, walked out of the list once (shards_each) and packed in one arena,
   counted in the broker's lease order (shards_at: the largest roots first, so no thread is left
   with a big shard at the end). A worker gets its descriptors on the wire; the bench should not
   pay a random-access walk of the list per shard for them, nor a decode for a cost estimate
   (at N = 18, depth 4 those cost more than many shards' search). */
typedef struct { uint64_t off; uint32_t len; } spec_ref_t;

typedef struct {
    spec_ref_t *ref;                   /* by shard index */
    uint64_t *order;                   /* lease position -> shard index */
    uint8_t *arena;
    size_t n, used, cap;
} bench_specs_t;

typedef struct {
    const bench_specs_t *specs;
    atomic_size_t next;        /* the next shard to take */
    atomic_int stop;           /* set on the first error */
    pthread_mutex_t lock;      /* guards the sums and err */
    nq_u128 total, unique;
    uint64_t nodes;
    char err[256];
} bench_t;

static void bench_fail(bench_t *b, const char *msg, size_t i)
{
    pthread_mutex_lock(&b->lock);
    if (!b->err[0])
        snprintf(b->err, sizeof b->err, "shard %zu: %s", i, msg);
    pthread_mutex_unlock(&b->lock);
    atomic_store(&b->stop, 1);
}

static void *bench_thread(void *arg)
{
    bench_t *b = arg;
    nq_u128 total = 0, unique = 0;
    uint64_t nodes = 0;
    nq_kernel_ctl_t ctl = { .cancel = &b->stop, .progress = NULL };
    char err[200];
    for (;;) {
        size_t k = atomic_fetch_add(&b->next, 1), len;
        if (k >= b->specs->n || atomic_load(&b->stop))
            break;
        size_t i = b->specs->order[k];
        const spec_ref_t *sh = &b->specs->ref[i];
        len = sh->len;
        nq_count_result_t r;
        int rc = count_shard(b->specs->arena + sh->off, len, &r, &ctl, err, sizeof err);
        if (rc == 2)
            break;
        if (rc != 0) {
            bench_fail(b, err, i);
            break;
        }
        /* the residues are the kernel's independent check of its own total */
        if (r.res13 != r.total % 13 || r.res15 != r.total % 15) {
            bench_fail(b, "residues disagree with the total", i);
            break;
        }
        total += r.total;     /* cannot overflow 128 bits: at most 2^26 shards of < 2^64 */
        unique += r.unique;
        nodes += r.nodes;
    }
    pthread_mutex_lock(&b->lock);
    b->total += total;
    b->unique += unique;
    b->nodes += nodes;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static int spec_keep(void *ud, uint64_t i, const uint8_t *spec, size_t len)
{
    bench_specs_t *b = ud;
    if (b->used + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        uint8_t *a = realloc(b->arena, cap);
        if (!a)
            return -1;
        b->arena = a;
        b->cap = cap;
    }
    memcpy(b->arena + b->used, spec, len);
    b->ref[i] = (spec_ref_t){ b->used, (uint32_t)len };
    b->used += len;
    return 0;
}

static void bench_specs_free(bench_specs_t *b)
{
    free(b->ref);
    free(b->order);
    free(b->arena);
}

static int bench_prepare(const nq_shards_t *s, bench_specs_t *b)
{
    memset(b, 0, sizeof *b);
    b->n = shards_count(s);
    b->ref = malloc((b->n ? b->n : 1) * sizeof *b->ref);
    b->order = malloc((b->n ? b->n : 1) * sizeof *b->order);
    if (!b->ref || !b->order || shards_each(s, spec_keep, b) != 0) {
        bench_specs_free(b);
        return -1;
    }
    for (size_t k = 0; k < b->n; k++)
        b->order[k] = shards_at(s, k);
    return 0;
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

typedef struct { uint64_t n, threads, depth; int json; } bench_opts_t;

static int bench_parse(int argc, char **argv, bench_opts_t *o)
{
    static const struct option longopts[] = {
        { "threads", required_argument, NULL, 't' }, { "depth", required_argument, NULL, 'd' },
        { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { 0, 0, 0, 0 } };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int c, rc;
    o->threads = cores > 0 ? (uint64_t)(cores > 1024 ? 1024 : cores) : 1;
    o->depth = 0;
    o->json = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 't': if ((rc = cli_parse_u64(CMD, "--threads", optarg, 1, 1024, &o->threads))) return rc; break;
        case 'd': if ((rc = cli_parse_u64(CMD, "--depth", optarg, 0, NQ_SHARD_MAX_N, &o->depth))) return rc; break;
        case 'j': o->json = 1; break;
        case 'h': cli_help("bench"); return -1;
        default: return cli_count_bad_option(CMD, argv, &o->n);
        }
    }
    return cli_count_n(CMD, argc, argv, &o->n);
}

int cmd_bench_count(int argc, char **argv)
{
    bench_opts_t o;
    char err[256], t1[40], t2[40];
    int rc = bench_parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    double t0 = now_s();
    nq_shards_t *shards = shards_new(NQ_KIND_COUNT, (int)o.n, (int)o.depth, err, sizeof err);
    if (!shards)
        return cli_usage_error(CMD, "%s", err);
    bench_specs_t specs;
    if (bench_prepare(shards, &specs) != 0) {
        shards_destroy(&shards);
        return cli_error(CMD, "out of memory");
    }
    bench_t b = { .specs = &specs };
    double listed = now_s() - t0;      /* the list and its descriptors: a broker's work, reported apart */
    pthread_mutex_init(&b.lock, NULL);
    rc = bench_run(&b, (int)o.threads);
    double secs = now_s() - t0;
    if (rc == 0) {
        double rate = secs > 0 ? (double)b.nodes / secs : 0;
        u128_to_str(b.total, t1);
        u128_to_str(b.unique, t2);
        if (o.json)
            printf("{\"n\":%d,\"total\":%s,\"unique\":%s,\"nodes\":%llu,\"seconds\":%.6f,"
                   "\"nodes_per_s\":%.0f,\"shards\":%zu,\"depth\":%d,\"threads\":%d,\"kernel\":\"%s\","
                   "\"list_seconds\":%.6f}\n", (int)o.n, t1, t2, (unsigned long long)b.nodes, secs, rate,
                   shards_count(shards), shards_depth(shards), (int)o.threads, count_kernel_name(), listed);
        else
            printf("n %d  total %s  unique %s\nnodes %llu  seconds %.3f  nodes/s %.3g\n"
                   "shards %zu  depth %d  threads %d  kernel %s\n", (int)o.n, t1, t2, (unsigned long long)b.nodes,
                   secs, rate, shards_count(shards), shards_depth(shards), (int)o.threads, count_kernel_name());
    }
    pthread_mutex_destroy(&b.lock);
    bench_specs_free(&specs);
    shards_destroy(&shards);
    return rc;
}
