/*
 * The GPU engine (common/gpu) on its host backend, the kernels compiled as C: shards split
 * between host and GPU, expanded into tasks, spread over many launches and chunks, folded back
 * per shard, must give count_shard's result exactly (total, unique, residues; nodes too with the
 * parity kernel); cancels, a lost device and the test fault switches end
 * shards as they should.
 */
#include "t.h"
#include "count.h"
#include "gpu_expand.h"
#include "gpu_impl.h"
#include "gpu_shard.h"
#include "shard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    size_t done, n;
    nq_count_result_t *r;
    int *rc;
    char err[256];
} sink_t;

typedef struct { sink_t *s; size_t i; } slot_ud_t;

static void on_done(void *ud, int rc, const nq_count_result_t *r, const char *err)
{
    slot_ud_t *u = ud;
    sink_t *s = u->s;
    pthread_mutex_lock(&s->lock);
    s->r[u->i] = *r;
    s->rc[u->i] = rc;
    if (rc == -1 && !s->err[0])
        snprintf(s->err, sizeof s->err, "%s", err);
    s->done++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    free(u);
}

static void sink_init(sink_t *s, size_t n)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->n = n;
    s->r = calloc(n ? n : 1, sizeof *s->r);
    s->rc = calloc(n ? n : 1, sizeof *s->rc);
}

static void sink_wait(sink_t *s, size_t n)
{
    pthread_mutex_lock(&s->lock);
    while (s->done < n)
        pthread_cond_wait(&s->cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static void sink_free(sink_t *s)
{
    free(s->r);
    free(s->rc);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cv);
}

/* How an engine of the tests runs: the parity kernel taking tasks one by one (in order of their
   estimated cost) or in chunks of one shard, or the fast kernel (the default). */
enum { PARITY = 0, PARITY_CHUNKED = 1, FAST = 2 };

/* An engine on the host backend: small launches and chunks, so shards span many of each. */
static nq_gpu_t *host_engine_as(int rows_left, uint32_t max_tasks, int mode)
{
    nq_gpu_cfg_t cfg;
    char err[256];
    gpu_cfg_defaults(&cfg);
    cfg.rows_left = rows_left;
    cfg.max_tasks = max_tasks;
    cfg.chunk = 3;
    cfg.chunked = mode == PARITY_CHUNKED;
    cfg.kernel = mode == FAST ? NQ_GPU_KERNEL_FAST : NQ_GPU_KERNEL_PARITY;
    gpu_cfg_resolve(&cfg);
    gpu_backend_t *b = gpu_host_open(&cfg, err, sizeof err);
    T_CHECK(b != NULL);
    nq_gpu_t *g = b ? gpu_open_backend(b, &cfg, err, sizeof err) : NULL;
    T_CHECK(g != NULL);
    return g;
}

static nq_gpu_t *host_engine(int rows_left, uint32_t max_tasks)
{
    return host_engine_as(rows_left, max_tasks, FAST);
}

static void submit(nq_gpu_t *g, sink_t *s, size_t i, const uint8_t *spec, size_t len,
                   const nq_kernel_ctl_t *ctl)
{
    slot_ud_t *u = malloc(sizeof *u);
    *u = (slot_ud_t){ s, i };
    T_EQ_U64(gpu_count_shard(g, spec, len, ctl, on_done, u), 0);
}

/* Every shard of (n, depth) through the engine against count_shard (nodes too where the
   engine's are the CPU's); returns the shards compared. */
static size_t compare_list(nq_gpu_t *g, int n, int depth)
{
    char err[256];
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
    T_CHECK(l != NULL);
    if (!l)
        return 0;
    size_t cnt = shards_count(l);
    sink_t s;
    sink_init(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        submit(g, &s, i, b, len, NULL);
    }
    sink_wait(&s, cnt);
    int nodes = gpu_nodes_cpu(g);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        nq_count_result_t want;
        T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
        const nq_count_result_t *got = &s.r[i];
        if (!nodes)
            want.nodes = got->nodes;    /* the fast kernel's are its own */
        if (s.rc[i] != 0 || got->total != want.total || got->unique != want.unique ||
            got->nodes != want.nodes || got->res13 != want.res13 || got->res15 != want.res15)
            fprintf(stderr, "  n=%d depth %d shard %zu: rc %d, %llu/%llu/%llu nodes, want "
                    "%llu/%llu/%llu\n", n, depth, i, s.rc[i], (unsigned long long)got->total,
                    (unsigned long long)got->unique, (unsigned long long)got->nodes,
                    (unsigned long long)want.total, (unsigned long long)want.unique,
                    (unsigned long long)want.nodes);
        T_EQ_U64(s.rc[i], 0);
        T_EQ_U64(got->total, want.total);
        T_EQ_U64(got->unique, want.unique);
        T_EQ_U64(got->nodes, want.nodes);
        T_EQ_U64(got->res13, want.res13);
        T_EQ_U64(got->res15, want.res15);
    }
    sink_free(&s);
    shards_destroy(&l);
    return cnt;
}

T_TEST(test_gpu_engine_matches_count_shard_at_every_depth)
{
    static const char *how[3] = { "parity, largest first", "parity, chunked", "fast" };
    for (int mode = PARITY; mode <= FAST; mode++) {
        nq_gpu_t *g = host_engine_as(5, 100, mode);   /* tasks of 5 rows, launches of <= 100 tasks */
        size_t shards = 0;
        for (int n = 1; n <= 12; n++)
            for (int depth = 1; depth <= 3 && depth <= (n < 4 ? 1 : n - 2); depth++)
                shards += compare_list(g, n, n < 4 ? 0 : depth);
        nq_gpu_stats_t st;
        gpu_stats(g, &st);
        fprintf(stderr, "  %s: %zu shards, %llu launches, %llu tasks\n", how[mode], shards,
                (unsigned long long)st.launches, (unsigned long long)st.tasks);
        T_CHECK(strcmp(gpu_kernel_name(g), mode == FAST ? "fast" : "parity") == 0);
        T_EQ_U64(gpu_nodes_cpu(g), mode != FAST);
        T_CHECK(strcmp(gpu_backend_name(g), "host") == 0);
        T_CHECK(st.launches > 100);
        gpu_close(&g);
        T_CHECK(g == NULL);
    }
}

/* The cost that orders a launch: larger for the bigger of two tasks of a shard, most of the time
   (N=14, tasks of 8 rows: the search's nodes against the estimate, pair by pair). */
T_TEST(test_gpu_task_cost_ranks_tasks)
{
    char err[256];
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, 14, 1, err, sizeof err);
    uint64_t agree = 0, pairs = 0;
    for (size_t i = 0; l && i < shards_count(l); i += 7) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        nq_gpu_split_t sp;
        T_EQ_U64(gpu_split_shard(b, len, &sp, NULL, err, sizeof err), 0);
        if (!sp.gpu)
            continue;
        nq_gpu_table_t tb;
        nq_gpu_expand_t e;
        nq_gpu_task_t t[256];
        nq_u32 stk[4 * NQ_STACK];
        uint64_t nodes[256];
        gpu_table_build(&sp.plan, &tb);
        tb.level = (nq_u32)gpu_task_level(sp.plan.m, 8);
        gpu_expand_init(&e, &tb, sp.plan.colfix, (int)tb.level);
        size_t n = gpu_expand_next(&e, t, 256);
        for (size_t k = 0; k < n; k++) {
            uint64_t sols = 0;
            nodes[k] = 0;
            gpu_task_search(&tb, tb.level, t[k], stk, 1, &nodes[k], &sols);
        }
        for (size_t k = 1; k < n; k++) {
            unsigned c0 = gpu_task_cost(&tb, &t[k - 1]), c1 = gpu_task_cost(&tb, &t[k]);
            if (c0 == c1 || nodes[k - 1] == nodes[k])
                continue;
            pairs++;
            agree += (c0 < c1) == (nodes[k - 1] < nodes[k]);
        }
    }
    shards_destroy(&l);
    fprintf(stderr, "  the estimate ranks %llu of %llu pairs of tasks as their nodes do\n",
            (unsigned long long)agree, (unsigned long long)pairs);
    T_CHECK(pairs > 1000 && agree * 10 > pairs * 7);
}

/* The paths of the split (gpu_shard.c), each taken by some shard at n = 9..12: top-down, the GPU
   part alone or with a rare pass on the host; bottom-up on the GPU; the host alone. (The lists
   never search a root with a symmetric b bottom-up, so count_flipped's leaves of rare b beside
   a GPU part, mirrored in split_flipped, are not reached.) */
T_TEST(test_gpu_split_takes_every_path)
{
    char err[256];
    int gpu_only = 0, gpu_rare = 0, gpu_flip = 0, host_only = 0;
    for (int n = 9; n <= 12; n++)
        for (int depth = 1; depth <= n - 2; depth++) {
            nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, depth, err, sizeof err);
            for (size_t i = 0; l && i < shards_count(l); i++) {
                uint8_t b[NQ_MAX_SPEC];
                size_t len = shards_get(l, i, b);
                nq_shard_desc_t d;
                nq_gpu_split_t sp;
                T_CHECK(shard_decode(b, len, &d, err, sizeof err) == 0);
                T_EQ_U64(gpu_split_shard(b, len, &sp, NULL, err, sizeof err), 0);
                int host = sp.tally.total != 0 || sp.nodes != 0;
                gpu_only += sp.gpu && !host && !sp.plan.flipped;
                gpu_rare += sp.gpu && host && !sp.plan.flipped;
                gpu_flip += sp.gpu && sp.plan.flipped;
                host_only += !sp.gpu;
            }
            shards_destroy(&l);
        }
    fprintf(stderr, "  top-down: gpu alone %d, with a rare pass %d; bottom-up %d; host alone %d\n", gpu_only,
            gpu_rare, gpu_flip, host_only);
    T_CHECK(gpu_only > 1000 && gpu_rare > 10 && gpu_flip > 1000 && host_only > 10);
}

/* The GPU's part of a shard counted on the host instead (what the engine does with a plan the fast
   search's table cannot hold): count_shard's result, nodes and all, at n = 9..12. */
T_TEST(test_gpu_split_host_rest_matches_count_shard)
{
    char err[256];
    int moved = 0;
    for (int n = 9; n <= 12; n++) {
        nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, 2, err, sizeof err);
        for (size_t i = 0; l && i < shards_count(l); i++) {
            uint8_t b[NQ_MAX_SPEC];
            size_t len = shards_get(l, i, b);
            nq_gpu_split_t sp;
            nq_count_result_t want, got;
            T_EQ_U64(gpu_split_shard(b, len, &sp, NULL, err, sizeof err), 0);
            if (!sp.gpu)
                continue;
            T_EQ_U64(gpu_split_host_rest(&sp, NULL, err, sizeof err), 0);
            T_EQ_U64(sp.gpu, 0);
            T_EQ_U64(gpu_split_finish(&sp, 0, 0, &got, err, sizeof err), 0);
            T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
            T_EQ_U64(got.total, want.total);
            T_EQ_U64(got.unique, want.unique);
            T_EQ_U64(got.nodes, want.nodes);
            T_EQ_U64(got.res13, want.res13);
            moved++;
        }
        shards_destroy(&l);
    }
    T_CHECK(moved > 100);
}

/* Which table the fast search takes: up to n = 27 any; past that only rows close enough for the
   distance to fit above the cells; never n = 32. */
T_TEST(test_gpu_fast_fits_by_board_and_distance)
{
    nq_gpu_table_t tb;
    memset(&tb, 0, sizeof tb);
    tb.m = 6;
    tb.level = 1;
    for (int n = 20; n <= 32; n++) {
        tb.full = n == 32 ? ~0u : (1u << n) - 1;
        for (nq_u32 L = 0; L < tb.m; L++)
            tb.geo[L] = 1;
        tb.geo[2] = 7;                  /* six fixed rows between two free ones */
        T_EQ_U64(gpu_fast_fits(&tb), n <= 29);
        tb.geo[2] = 31;
        T_EQ_U64(gpu_fast_fits(&tb), n <= 27);
        tb.geo[0] = 31;                 /* above the tasks' level: not in the table */
        tb.geo[2] = 1;
        T_EQ_U64(gpu_fast_fits(&tb), n <= 31);
    }
}

/* The kernel's settings: fast by default with its own rows, launches and tasks; parity's settings
   refused with it; NQ_GPU_KERNEL and its bad values. */
T_TEST(test_gpu_cfg_kernel_defaults_and_checks)
{
    nq_gpu_cfg_t c;
    char err[256];
    gpu_cfg_defaults(&c);
    gpu_cfg_resolve(&c);
    T_EQ_U64(c.kernel, NQ_GPU_KERNEL_FAST);
    T_EQ_U64(c.rows_left, NQ_GPU_ROWS_FAST);
    T_EQ_U64(gpu_cfg_check(&c, err, sizeof err), 0);
    c.chunked = 1;
    T_CHECK(gpu_cfg_check(&c, err, sizeof err) != 0 && strstr(err, "parity") != NULL);
    gpu_cfg_defaults(&c);
    T_EQ_U64(gpu_cfg_kernel(&c, "parity", err, sizeof err), 0);
    c.chunked = 1;
    gpu_cfg_resolve(&c);
    T_EQ_U64(c.rows_left, NQ_GPU_ROWS_LEFT);
    T_EQ_U64(gpu_cfg_check(&c, err, sizeof err), 0);
    gpu_cfg_defaults(&c);
    setenv("NQ_GPU_KERNEL", "parity", 1);
    T_EQ_U64(gpu_cfg_from_env(&c, err, sizeof err), 0);
    T_EQ_U64(c.kernel, NQ_GPU_KERNEL_PARITY);
    setenv("NQ_GPU_KERNEL", "quick", 1);
    T_CHECK(gpu_cfg_from_env(&c, err, sizeof err) != 0 && strstr(err, "NQ_GPU_KERNEL=quick") != NULL);
    unsetenv("NQ_GPU_KERNEL");
    T_CHECK(gpu_cfg_kernel(&c, "", err, sizeof err) != 0);
}

/* A shard of n whose split has both a GPU part and a host part (a rare pass): its descriptor. */
static size_t shard_with_host_part(int n, uint8_t *b)
{
    char err[256];
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, n, 1, err, sizeof err);
    size_t len = 0;
    for (size_t i = 0; l && i < shards_count(l) && !len; i++) {
        nq_gpu_split_t sp;
        size_t k = shards_get(l, i, b);
        T_EQ_U64(gpu_split_plan(b, k, &sp, err, sizeof err), 0);
        if (sp.gpu && sp.host != NQ_GPU_HOST_NONE)
            len = k;
    }
    shards_destroy(&l);
    T_CHECK(len > 0);
    return len;
}

typedef struct { nq_gpu_t *g; int launched, failed_early; } hook_t;

/* Before the host part: wait (10 s at most) until a launch has ended, which it can only when the
   shard's GPU part was queued first. */
static void wait_for_launch(void *ud)
{
    hook_t *h = ud;
    for (int i = 0; i < 10000 && !h->launched; i++) {
        nq_gpu_stats_t st;
        gpu_stats(h->g, &st);
        h->launched = st.launches > 0;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    char err[256];
    struct timespec ts = { 0, 50000000 };
    nanosleep(&ts, NULL);
    h->failed_early = gpu_failed(h->g, err, sizeof err);   /* never while a shard has not ended */
}

/* The GPU part is queued before the host part runs: the device counts while the host does its
   part, and the shard, whose GPU part ends first, is finished by the host's thread, exact. */
T_TEST(test_gpu_engine_queues_gpu_part_before_host_part)
{
    char err[256];
    uint8_t b[NQ_MAX_SPEC];
    size_t len = shard_with_host_part(12, b);
    nq_gpu_t *g = host_engine(6, 1000);
    hook_t h = { g, 0, 0 };
    gpu_set_host_hook(g, wait_for_launch, &h);
    sink_t s;
    sink_init(&s, 1);
    submit(g, &s, 0, b, len, NULL);
    T_EQ_U64(s.done, 1);                /* ended by the time gpu_count_shard returned */
    T_CHECK(h.launched);
    nq_count_result_t want;
    T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
    T_EQ_U64(s.rc[0], 0);
    T_EQ_U64(s.r[0].total, want.total);
    T_EQ_U64(s.r[0].unique, want.unique);
    T_EQ_U64(s.r[0].res13, want.res13);
    nq_gpu_load_t ld;
    gpu_load(g, &ld);
    T_EQ_U64(ld.held, 0);
    sink_free(&s);
    gpu_close(&g);
}

/* What a worker sizes its feeders and credit by: the device's seconds a shard once enough shards
   ended, the shards that fill the device, and nothing held once all ended. */
T_TEST(test_gpu_engine_load_measures_shards)
{
    nq_gpu_t *g = host_engine(6, 1000);
    nq_gpu_load_t ld;
    gpu_load(g, &ld);
    T_CHECK(ld.held == 0 && ld.shard_s == 0 && ld.fill == 0);
    compare_list(g, 12, 2);
    gpu_load(g, &ld);
    T_EQ_U64(ld.held, 0);
    T_CHECK(ld.shard_s > 0 && ld.held_s == 0);
    T_CHECK(ld.fill >= 1);
    gpu_close(&g);
}

T_TEST(test_gpu_engine_cancel_ends_shards_cancelled)
{
    char err[256];
    nq_gpu_t *g = host_engine(6, 64);
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, 12, 1, err, sizeof err);
    atomic_int cancel = 1;
    nq_kernel_ctl_t ctl = { &cancel, NULL };
    sink_t s;
    size_t cnt = shards_count(l);
    sink_init(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        submit(g, &s, i, b, len, &ctl);
    }
    sink_wait(&s, cnt);
    for (size_t i = 0; i < cnt; i++)
        T_EQ_U64(s.rc[i], 2);
    sink_free(&s);
    shards_destroy(&l);
    gpu_close(&g);
}

/* Closing an engine that holds shards: each ends once, as cancelled. */
T_TEST(test_gpu_engine_close_cancels_what_it_holds)
{
    char err[256];
    nq_gpu_t *g = host_engine(8, 50);
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, 15, 1, err, sizeof err);
    sink_t s;
    size_t cnt = shards_count(l);
    sink_init(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        submit(g, &s, i, b, len, NULL);
    }
    gpu_close(&g);
    T_EQ_U64(s.done, cnt);
    size_t cancelled = 0;
    for (size_t i = 0; i < cnt; i++) {
        T_CHECK(s.rc[i] == 0 || s.rc[i] == 2);
        cancelled += s.rc[i] == 2;
    }
    T_CHECK(cancelled > 0);
    sink_free(&s);
    shards_destroy(&l);
}

#ifdef NQ_TEST_FAULTS
/* A device lost at the 3rd launch: every shard it held ends with the error, never a partial
   count, and so does every later one. */
T_TEST(test_gpu_engine_lost_device_fails_every_shard)
{
    char err[256];
    setenv("NQ_FAULT_GPU_LOST", "3", 1);
    nq_gpu_t *g = host_engine(6, 64);
    unsetenv("NQ_FAULT_GPU_LOST");
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, 12, 1, err, sizeof err);
    sink_t s;
    size_t cnt = shards_count(l), ok = 0, failed = 0;
    sink_init(&s, cnt + 1);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        submit(g, &s, i, b, len, NULL);
    }
    sink_wait(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        nq_count_result_t want;
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
        T_CHECK(s.rc[i] == 0 || s.rc[i] == -1);
        if (s.rc[i] == 0)               /* a shard that ended before the loss: exact */
            T_CHECK(s.r[i].total == want.total && s.r[i].unique == want.unique);
        else
            T_CHECK(s.r[i].total == 0 && s.r[i].nodes == 0);
        ok += s.rc[i] == 0;
        failed += s.rc[i] == -1;
    }
    T_CHECK(failed > 0);
    T_CHECK(strstr(s.err, "device lost") != NULL);
    T_WAIT_UNTIL(gpu_failed(g, err, sizeof err), 30);  /* said after the last job ended */
    /* after the loss: at once, with the error (a shard with a GPU part) */
    uint8_t b[NQ_MAX_SPEC];
    size_t len = shards_get(l, 0, b);
    submit(g, &s, cnt, b, len, NULL);
    sink_wait(&s, cnt + 1);
    T_EQ_U64(s.rc[cnt], (uint64_t)-1);
    fprintf(stderr, "  %zu exact before the loss, %zu failed\n", ok, failed);
    sink_free(&s);
    shards_destroy(&l);
    gpu_close(&g);
}

/* A device lost while a shard's host part runs: the shard still ends with the error, and nobody
   hears of the failure (gpu_failed) before it ended. */
T_TEST(test_gpu_engine_lost_device_waits_for_host_parts)
{
    char err[256];
    uint8_t b[NQ_MAX_SPEC];
    size_t len = shard_with_host_part(12, b);
    setenv("NQ_FAULT_GPU_LOST", "1", 1);
    nq_gpu_t *g = host_engine(6, 1000);
    unsetenv("NQ_FAULT_GPU_LOST");
    hook_t h = { g, 0, 0 };
    gpu_set_host_hook(g, wait_for_launch, &h);
    sink_t s;
    sink_init(&s, 1);
    submit(g, &s, 0, b, len, NULL);
    sink_wait(&s, 1);
    T_CHECK(h.launched);
    T_EQ_U64(h.failed_early, 0);
    T_EQ_U64(s.rc[0], (uint64_t)-1);
    T_CHECK(strstr(s.err, "device lost") != NULL);
    T_WAIT_UNTIL(gpu_failed(g, err, sizeof err), 30);
    sink_free(&s);
    gpu_close(&g);
}

/* NQ_FAULT_GPU_WRONG=1: each shard with a GPU part is off by one weight-8 solution, with
   residues to match: what only a quorum or a spot-check catches. */
T_TEST(test_gpu_engine_wrong_fault_miscounts_consistently)
{
    char err[256];
    setenv("NQ_FAULT_GPU_WRONG", "1", 1);
    nq_gpu_t *g = host_engine(6, 1000);
    unsetenv("NQ_FAULT_GPU_WRONG");
    nq_shards_t *l = shards_new(NQ_KIND_COUNT, 11, 1, err, sizeof err);
    sink_t s;
    size_t cnt = shards_count(l), wrong = 0;
    sink_init(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        submit(g, &s, i, b, len, NULL);
    }
    sink_wait(&s, cnt);
    for (size_t i = 0; i < cnt; i++) {
        nq_count_result_t want;
        uint8_t b[NQ_MAX_SPEC];
        size_t len = shards_get(l, i, b);
        T_EQ_U64(count_shard(b, len, &want, NULL, err, sizeof err), 0);
        T_EQ_U64(s.rc[i], 0);
        T_CHECK(s.r[i].total == want.total || s.r[i].total == want.total + 8);
        T_EQ_U64(s.r[i].res13, s.r[i].total % 13);
        T_EQ_U64(s.r[i].res15, s.r[i].total % 15);
        wrong += s.r[i].total != want.total;
    }
    T_CHECK(wrong > cnt / 2);
    sink_free(&s);
    shards_destroy(&l);
    gpu_close(&g);
}
#endif

T_RUN_ALL()
