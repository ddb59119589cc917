/*
 * The GPU engine (gpu.h): shards in from any thread, launches out from one thread of its own.
 *
 * A shard's GPU part is a job: its table, and the walk that places its first levels (gpu_expand.c).
 * The engine thread fills a launch with the tasks of the jobs in arrival order, a chunk at a
 * time, until the launch holds what the device runs in cfg.launch_s by the rate measured so far;
 * a job whose walk outlasts a launch goes on in the next. Where work-items take tasks one by one
 * (cfg.chunked 0), the launch's tasks are then put in order of their estimated cost, largest
 * first, so that the launch does not end waiting for a big task taken last. Two launches are in
 * flight (the host fills one while the device runs the other). When a launch ends, each task's
 * output is added to its job (checked, 64 bits); a job whose walk is over and whose launches have
 * all ended is finished: its result goes to the caller's callback.
 *
 * A shard has two parts, the GPU's and the host's (gpu_shard.h). gpu_count_shard queues the GPU's
 * part first and then runs the host's on the caller's thread, so the device never waits for it;
 * whichever part ends last finishes the shard (an atomic count of the parts left).
 */
#include "clock.h"
#include "errf.h"
#include "gpu_expand.h"
#include "gpu_impl.h"
#include "gpu_shard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TABLES 16384u       /* shards in one launch (a table is 400 bytes) */
#define MAX_WAITING 16384u      /* shards submitted and not yet placed in a launch */
#define FIRST_BUDGET 16384u     /* tasks of the first launch, before there is a rate */
#define FILL_TASKS_A_LANE 8u    /* a launch's tasks a lane: ~half a second at N=21 on an H100 (docs/gpu.md) */
#define SHARD_S_BLOCK 16u       /* shards a measure of the device's seconds a shard spans, at least */

typedef struct gpu_job {
    nq_gpu_split_t split;
    nq_gpu_table_t tb;
    nq_gpu_expand_t ex;
    uint64_t nodes, sols;       /* the tasks' sums so far */
    uint32_t inflight;          /* launches holding tasks of this job */
    uint64_t ntasks;            /* tasks its walk placed so far */
    int walking;                /* its walk is not over (it is on the engine's list) */
    int overflow, cancelled;
    atomic_int parts;           /* parts not over: the GPU's and the host's; the last finishes the job */
    char gpu_fail[256];         /* the GPU part's end: "" or why it failed (the engine's thread writes it) */
    int host_rc;                /* the host part's end: 0, 2 cancelled, -1 with host_err */
    char host_err[256];
    uint64_t spec_hash;         /* picks the shards a test fault hits */
    nq_kernel_ctl_t ctl;
    const atomic_int *cancel;
    nq_gpu_done_fn done;
    void *ud;
    struct gpu_job *next;
} gpu_job_t;

typedef struct {
    nq_gpu_table_t *tables;
    gpu_job_t **jobs;           /* the job of each table */
    nq_gpu_chunk_t *chunks;
    nq_gpu_task_t *tasks, *tasks2;          /* tasks2, tab2: where sorting puts them */
    uint32_t *task_tab, *tab2;  /* each task's table */
    uint8_t *cost;
    nq_gpu_out_t *out;
    uint32_t ntables, nchunks, ntasks;
    int busy;
    double t0;                  /* when it was queued */
} gpu_slot_t;

struct nq_gpu {
    gpu_backend_t *be;
    nq_gpu_cfg_t cfg;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;       /* guards what follows up to the engine thread's own */
    pthread_cond_t wake, room;
    gpu_job_t *in_head, *in_tail;
    uint32_t waiting;           /* jobs submitted whose walk is not over */
    uint32_t live;              /* jobs submitted and not finished (a host part may still run) */
    uint32_t held;              /* jobs whose GPU part is not over */
    int stop, failing, failed;  /* failing: no more jobs taken; failed: every job taken has ended */
    pthread_cond_t gone;        /* live went down while failing */
    char err[256];
    nq_gpu_stats_t st;
    double shard_s;             /* device seconds a shard (measured, smoothed; 0 before) */
    double tasks_a_shard;       /* tasks a shard's walk places (smoothed; 0 before) */
    uint32_t budget_seen;       /* the tasks a launch holds, as the engine last sized it */
    void (*host_hook)(void *ud);   /* tests: called before a host part runs (gpu_impl.h) */
    void *host_hook_ud;
    /* the engine thread's own */
    gpu_job_t *walk_head, *walk_tail;
    gpu_slot_t slot[NQ_GPU_SLOTS];
    int next;                   /* the slot to fill next */
    uint32_t budget, max_chunks;
    double sec_per_task, last_done;
    double block_s;             /* launch seconds since shard_s was last measured */
    uint32_t block_shards;      /* and the GPU parts that ended in them */
    double fault_wrong;         /* test builds: share of shards whose count is made wrong */
    uint64_t fault_lost;        /* test builds: the launch at which the device is "lost" */
    double fault_slow;          /* test builds: the seconds a launch lasts at least */
};

static int job_cancelled(const gpu_job_t *j)
{
    return j->cancel && atomic_load_explicit(j->cancel, memory_order_relaxed);
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The job's result, from its split and its parts' ends; calls done and frees the job. On whichever
   thread ended the last part. */
static void job_finish(nq_gpu_t *g, gpu_job_t *j)
{
    nq_count_result_t r;
    char err[256] = "";
    int rc = 0;
    memset(&r, 0, sizeof r);
    if (j->cancelled || job_cancelled(j) || j->host_rc == 2) {
        rc = 2;                         /* cancelled, or the engine stopped: nothing to report */
    } else if (j->gpu_fail[0]) {
        rc = -1;
        snprintf(err, sizeof err, "%s", j->gpu_fail);
    } else if (j->host_rc != 0) {
        rc = -1;
        snprintf(err, sizeof err, "%s", j->host_err);
    } else if (j->overflow) {
        rc = nq_errf(err, sizeof err, "64-bit overflow counting the shard");
    } else {
        uint64_t sols = j->sols;
        if (g->fault_wrong > 0 && (double)(j->spec_hash >> 11) / 9007199254740992.0 < g->fault_wrong)
            sols++;                     /* test builds: a device that miscounts, residues and all */
        rc = gpu_split_finish(&j->split, j->nodes + j->ex.nodes, sols, &r, err, sizeof err);
    }
    if (rc == 0 && j->ctl.progress)
        atomic_store_explicit(j->ctl.progress, r.nodes, memory_order_relaxed);
    j->done(j->ud, rc, &r, err);
    free(j);
    pthread_mutex_lock(&g->lock);       /* last: engine_fail waits for every job to end */
    g->st.shards += rc == 0;
    if (--g->live == 0 || g->failing)
        pthread_cond_broadcast(&g->gone);
    pthread_mutex_unlock(&g->lock);
}

/* One of j's parts is over; the last finishes it (acq_rel: the other part's writes are seen). */
static void job_part_over(nq_gpu_t *g, gpu_job_t *j)
{
    if (atomic_fetch_sub_explicit(&j->parts, 1, memory_order_acq_rel) == 1)
        job_finish(g, j);
}

/* Ends j's GPU part once its walk is over and no launch holds it: fail says why it failed. */
static void job_settle(nq_gpu_t *g, gpu_job_t *j, const char *fail)
{
    if (j->walking || j->inflight > 0)
        return;
    if (fail)
        snprintf(j->gpu_fail, sizeof j->gpu_fail, "%s", fail);
    pthread_mutex_lock(&g->lock);
    g->held--;
    g->block_shards++;
    pthread_mutex_unlock(&g->lock);
    job_part_over(g, j);
}

/* j's walk is over (or abandoned): off the list, and room for another submission. */
static void walk_pop(nq_gpu_t *g)
{
    gpu_job_t *j = g->walk_head;
    g->walk_head = j->next;
    if (!g->walk_head)
        g->walk_tail = NULL;
    j->walking = 0;
    pthread_mutex_lock(&g->lock);
    g->waiting--;
    if (j->ntasks > 0)                  /* the tasks a shard makes, for the shards that fill a device */
        g->tasks_a_shard = g->tasks_a_shard > 0 ? 0.9 * g->tasks_a_shard + 0.1 * (double)j->ntasks
                                                : (double)j->ntasks;
    pthread_cond_broadcast(&g->room);
    pthread_mutex_unlock(&g->lock);
}

/* Places the tasks of j's walk in s up to the budget; 1 when the launch is full. */
static int slot_take(nq_gpu_t *g, gpu_slot_t *s, gpu_job_t *j)
{
    uint32_t t = s->ntables, before = s->ntasks;
    int full = 0;
    while (!gpu_expand_done(&j->ex)) {
        uint32_t room = g->budget - s->ntasks, want = room < g->cfg.chunk ? room : g->cfg.chunk;
        if (want == 0 || s->nchunks == g->max_chunks) {
            full = 1;
            break;
        }
        size_t n = gpu_expand_next(&j->ex, s->tasks + s->ntasks, want);
        if (n)
            s->chunks[s->nchunks++] = (nq_gpu_chunk_t){ t, s->ntasks, (nq_u32)n, (nq_u32)j->ex.level };
        for (size_t i = 0; i < n; i++)
            s->task_tab[s->ntasks + i] = t;
        s->ntasks += (uint32_t)n;
        j->ntasks += n;
    }
    if (s->ntasks > before) {
        s->tables[t] = j->tb;
        s->jobs[t] = j;
        s->ntables++;
        j->inflight++;
    }
    return full;
}

/* Fills slot s from the jobs' walks, in order. */
static void slot_fill(nq_gpu_t *g, gpu_slot_t *s)
{
    s->ntables = s->nchunks = s->ntasks = 0;
    while (g->walk_head && s->ntables < MAX_TABLES) {
        gpu_job_t *j = g->walk_head;
        if (job_cancelled(j)) {
            j->cancelled = 1;
            walk_pop(g);
            job_settle(g, j, NULL);
            continue;
        }
        if (slot_take(g, s, j))
            break;
        walk_pop(g);
        job_settle(g, j, NULL);         /* a walk that placed nothing more: maybe done now */
    }
}

/* Puts s's tasks in order of their estimated cost, largest first (a counting sort: O(tasks)). */
static void slot_sort(gpu_slot_t *s)
{
    uint32_t start[257] = { 0 };
    for (uint32_t i = 0; i < s->ntasks; i++) {
        s->cost[i] = (uint8_t)(255 - gpu_task_cost(&s->tables[s->task_tab[i]], &s->tasks[i]));
        start[s->cost[i] + 1]++;
    }
    for (int b = 0; b < 256; b++)
        start[b + 1] += start[b];
    for (uint32_t i = 0; i < s->ntasks; i++) {
        uint32_t to = start[s->cost[i]]++;
        s->tasks2[to] = s->tasks[i];
        s->tab2[to] = s->task_tab[i];
    }
    nq_gpu_task_t *t = s->tasks;
    uint32_t *tt = s->task_tab;
    s->tasks = s->tasks2;
    s->tasks2 = t;
    s->task_tab = s->tab2;
    s->tab2 = tt;
    s->nchunks = 0;                     /* the chunks no longer hold: work-items take tasks one by one */
}

/* Adds s's outputs to their jobs and finishes those that are complete. */
static void slot_fold(nq_gpu_t *g, gpu_slot_t *s)
{
    for (uint32_t k = 0; k < s->ntasks; k++) {
        gpu_job_t *j = s->jobs[s->task_tab[k]];
        j->overflow |= __builtin_add_overflow(j->nodes, s->out[k].nodes, &j->nodes) |
                       __builtin_add_overflow(j->sols, s->out[k].sols, &j->sols);
    }
    for (uint32_t t = 0; t < s->ntables; t++) {
        gpu_job_t *j = s->jobs[t];
        j->inflight--;
        if (j->ctl.progress)            /* the GPU part's nodes: the host's may still be counting */
            atomic_store_explicit(j->ctl.progress, j->ex.nodes + j->nodes, memory_order_relaxed);
        job_settle(g, j, NULL);
    }
    s->busy = 0;
}

/* Jobs submitted meanwhile onto the walk list; 1 when the engine is to stop (idle: wait for some). */
static int engine_take_input(nq_gpu_t *g, int idle);

/* Ends j's GPU part with err, as cancelled where the engine stops. */
static void fail_job(nq_gpu_t *g, gpu_job_t *j, const char *err, int stopping)
{
    j->cancelled |= stopping;
    job_settle(g, j, err);
}

/*
 * The device failed (or the engine stops): every job ends with the error (as cancelled when
 * stopping), once; later submissions too (gpu_failed). The jobs end before the engine says it
 * failed, host parts included (it waits for them): a worker that sees the failure stops and
 * cancels what it holds, and a job cancelled before its error was delivered would be handed
 * back without a word instead of reported.
 */
static void engine_fail(nq_gpu_t *g, const char *why, int stopping)
{
    char err[256];
    snprintf(err, sizeof err, "%s", why);
    pthread_mutex_lock(&g->lock);
    snprintf(g->err, sizeof g->err, "%s", err);
    g->failing = 1;                     /* engine_enqueue takes no more jobs */
    pthread_cond_broadcast(&g->room);
    pthread_mutex_unlock(&g->lock);
    for (int k = 0; k < NQ_GPU_SLOTS; k++) {
        gpu_slot_t *s = &g->slot[k];
        char ignored[256];
        if (!s->busy)
            continue;
        g->be->wait(g->be, k, ignored, sizeof ignored);   /* the device lets go of our memory */
        for (uint32_t t = 0; t < s->ntables; t++) {
            s->jobs[t]->inflight--;
            fail_job(g, s->jobs[t], err, stopping);
        }
        s->busy = 0;
    }
    engine_take_input(g, 0);            /* those taken before engine_enqueue refused */
    while (g->walk_head) {
        gpu_job_t *j = g->walk_head;
        walk_pop(g);
        fail_job(g, j, err, stopping);
    }
    pthread_mutex_lock(&g->lock);
    while (g->live > 0)                 /* host parts still running finish their jobs */
        pthread_cond_wait(&g->gone, &g->lock);
    g->failed = 1;
    pthread_mutex_unlock(&g->lock);
}

/* Queues slot s on the device. */
static int slot_launch(nq_gpu_t *g, int k, char *err, size_t errlen)
{
    gpu_slot_t *s = &g->slot[k];
    gpu_launch_t l = { s->tables, s->ntables, s->chunks, s->nchunks, s->tasks, s->task_tab, s->ntasks,
                       s->out };
    s->t0 = nq_mono();
    if (g->be->launch(g->be, k, &l, err, errlen) != 0)
        return -1;
    s->busy = 1;
    return 0;
}

static void sleep_until(double t)
{
    for (double now = nq_mono(); now < t; now = nq_mono()) {
        double left = t - now;
        struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* The device's seconds a shard, over blocks of launches in which SHARD_S_BLOCK GPU parts ended or
   more (a shard may span launches): what a worker sizes its feeders and its credit by. */
static void shard_rate(nq_gpu_t *g, double launch_s)
{
    g->block_s += launch_s;
    pthread_mutex_lock(&g->lock);
    if (g->block_shards >= SHARD_S_BLOCK) {
        double per = g->block_s / g->block_shards;
        g->shard_s = g->shard_s > 0 ? 0.5 * g->shard_s + 0.5 * per : per;
        g->block_s = 0;
        g->block_shards = 0;
    }
    g->budget_seen = g->budget;
    pthread_mutex_unlock(&g->lock);
}

/* Waits for slot k, learns the rate from it and sizes the next launches by it. */
static int slot_wait(nq_gpu_t *g, int k, char *err, size_t errlen)
{
    gpu_slot_t *s = &g->slot[k];
    int rc = g->be->wait(g->be, k, err, errlen);
    if (g->fault_slow > 0)              /* test builds: a slow device, whatever the machine */
        sleep_until(s->t0 + g->fault_slow);
    double now = nq_mono(), start = s->t0 > g->last_done ? s->t0 : g->last_done;
    pthread_mutex_lock(&g->lock);
    uint64_t launches = ++g->st.launches;
    g->st.tasks += s->ntasks;
    g->st.launch_s += now - start;
    pthread_mutex_unlock(&g->lock);
    if (rc == 0 && g->fault_lost && launches >= g->fault_lost)
        rc = nq_errf(err, errlen, "GPU launch failed: device lost (CL_DEVICE_NOT_AVAILABLE, injected by "
                     "NQ_FAULT_GPU_LOST)");
    if (rc != 0)
        return -1;
    g->last_done = now;
    if (s->ntasks >= 1024) {            /* too few tasks time the launch overhead, not the tasks */
        double per = (now - start) / s->ntasks;
        g->sec_per_task = g->sec_per_task > 0 ? 0.7 * g->sec_per_task + 0.3 * per : per;
        double b = g->cfg.launch_s / g->sec_per_task;
        g->budget = b > g->cfg.max_tasks ? g->cfg.max_tasks : b < 1024 ? 1024 : (uint32_t)b;
    }
    slot_fold(g, s);
    shard_rate(g, now - start);
    return 0;
}

static int engine_take_input(nq_gpu_t *g, int idle)
{
    pthread_mutex_lock(&g->lock);
    while (idle && !g->in_head && !g->stop)
        pthread_cond_wait(&g->wake, &g->lock);
    gpu_job_t *in = g->in_head;
    g->in_head = g->in_tail = NULL;
    int stop = g->stop;
    pthread_mutex_unlock(&g->lock);
    if (in) {
        if (g->walk_tail)
            g->walk_tail->next = in;
        else
            g->walk_head = in;
        while (in->next)
            in = in->next;
        g->walk_tail = in;
    }
    return stop;
}

static void *engine_main(void *arg)
{
    nq_gpu_t *g = arg;
    char err[256];
    int idle = 0;
    while (!engine_take_input(g, idle)) {
        gpu_slot_t *s = &g->slot[g->next];
        idle = 0;
        if (!s->busy && g->walk_head) {
            slot_fill(g, s);
            if (s->ntasks == 0)
                continue;
            if (!g->cfg.chunked && g->cfg.sort)
                slot_sort(s);
            if (slot_launch(g, g->next, err, sizeof err) != 0)
                break;
            g->next ^= 1;
            continue;
        }
        int k = g->slot[g->next].busy ? g->next : g->slot[g->next ^ 1].busy ? (g->next ^ 1) : -1;
        if (k < 0) {
            idle = 1;
            continue;
        }
        if (slot_wait(g, k, err, sizeof err) != 0)
            break;
    }
    pthread_mutex_lock(&g->lock);
    int stopping = g->stop;
    pthread_mutex_unlock(&g->lock);
    /* stopping: what is not finished ends as cancelled */
    engine_fail(g, stopping ? "the GPU engine stopped" : err, stopping);
    return NULL;
}

static void engine_free(nq_gpu_t *g)
{
    for (int k = 0; k < NQ_GPU_SLOTS; k++) {
        gpu_slot_t *s = &g->slot[k];
        free(s->tables);
        free(s->jobs);
        free(s->chunks);
        free(s->tasks);
        free(s->tasks2);
        free(s->task_tab);
        free(s->tab2);
        free(s->cost);
        free(s->out);
    }
    if (g->be)
        g->be->destroy(g->be);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->wake);
    pthread_cond_destroy(&g->room);
    pthread_cond_destroy(&g->gone);
    free(g);
}

#ifdef NQ_TEST_FAULTS
/* Test-only fault switches (builds with -DNQ_TEST_FAULTS=ON, never packages): NQ_FAULT_GPU_WRONG=P
   makes that share of shards (picked by their descriptor) count one weight-8 solution too many,
   with residues to match, as a miscounting device would; NQ_FAULT_GPU_LOST=K fails the K-th
   launch as a lost device, on every device or, with NQ_FAULT_GPU_LOST_DEVICE=I, on device I alone
   (a multi-GPU worker's others go on); NQ_FAULT_GPU_SLOW=S makes each launch last S seconds at
   least (a slow device: a worker's CPU counting beside it, on a busy test machine). */
static void engine_faults(nq_gpu_t *g)
{
    const char *w = getenv("NQ_FAULT_GPU_WRONG"), *l = getenv("NQ_FAULT_GPU_LOST");
    const char *slow = getenv("NQ_FAULT_GPU_SLOW"), *ld = getenv("NQ_FAULT_GPU_LOST_DEVICE");
    g->fault_wrong = w ? atof(w) : 0;
    g->fault_lost = l && (!ld || atoi(ld) == g->cfg.device) ? strtoull(l, NULL, 10) : 0;
    g->fault_slow = slow ? atof(slow) : 0;
}
#endif

nq_gpu_t *gpu_open_backend(gpu_backend_t *b, const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    nq_gpu_t *g = calloc(1, sizeof *g);
    if (!g) {
        b->destroy(b);
        return nq_errf(err, errlen, "out of memory"), NULL;
    }
    g->be = b;
    g->cfg = *cfg;
    gpu_cfg_resolve(&g->cfg);
    g->budget = FIRST_BUDGET < g->cfg.max_tasks ? FIRST_BUDGET : g->cfg.max_tasks;
    g->max_chunks = MAX_TABLES + g->cfg.max_tasks / g->cfg.chunk + 1;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    pthread_cond_init(&g->room, NULL);
    pthread_cond_init(&g->gone, NULL);
    g->budget_seen = g->budget;
#ifdef NQ_TEST_FAULTS
    engine_faults(g);
#endif
    for (int k = 0; k < NQ_GPU_SLOTS; k++) {
        gpu_slot_t *s = &g->slot[k];
        s->tables = malloc(MAX_TABLES * sizeof *s->tables);
        s->jobs = malloc(MAX_TABLES * sizeof *s->jobs);
        s->chunks = malloc(g->max_chunks * sizeof *s->chunks);
        size_t mt = g->cfg.max_tasks;
        s->tasks = malloc(mt * sizeof *s->tasks);
        s->tasks2 = malloc(mt * sizeof *s->tasks2);
        s->task_tab = malloc(mt * sizeof *s->task_tab);
        s->tab2 = malloc(mt * sizeof *s->tab2);
        s->cost = malloc(mt);
        s->out = malloc(mt * sizeof *s->out);
        if (!s->tables || !s->jobs || !s->chunks || !s->tasks || !s->tasks2 || !s->task_tab || !s->tab2 ||
            !s->cost || !s->out) {
            engine_free(g);
            return nq_errf(err, errlen, "out of memory for the GPU's launch buffers"), NULL;
        }
    }
    if (pthread_create(&g->thread, NULL, engine_main, g) != 0) {
        engine_free(g);
        return nq_errf(err, errlen, "cannot start the GPU engine's thread"), NULL;
    }
    g->started = 1;
    return g;
}

nq_gpu_t *gpu_open(const nq_gpu_cfg_t *cfg, char *err, size_t errlen)
{
    nq_gpu_cfg_t c = *cfg;
    gpu_cfg_resolve(&c);
    if (gpu_cfg_check(&c, err, errlen) != 0)
        return NULL;
    const char *cuda = getenv("NQ_GPU_CUDA");   /* the measurement fallback (gpu_cuda.c) */
    gpu_backend_t *b = cuda && *cuda ? gpu_cuda_open(cuda, &c, err, errlen) : gpu_cl_open(&c, err, errlen);
    return b ? gpu_open_backend(b, &c, err, errlen) : NULL;
}

void gpu_close(nq_gpu_t **gp)
{
    nq_gpu_t *g = *gp;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_broadcast(&g->wake);
    pthread_cond_broadcast(&g->room);
    pthread_mutex_unlock(&g->lock);
    if (g->started)
        pthread_join(g->thread, NULL);
    engine_free(g);
    *gp = NULL;
}

const char *gpu_name(const nq_gpu_t *g) { return g->be->name; }
const char *gpu_params(const nq_gpu_t *g) { return g->be->params; }
const char *gpu_backend_name(const nq_gpu_t *g) { return g->be->backend; }
int gpu_is_cpu(const nq_gpu_t *g) { return g->be->cpu; }
int gpu_nodes_cpu(const nq_gpu_t *g) { return g->cfg.kernel == NQ_GPU_KERNEL_PARITY; }

const char *gpu_kernel_name(const nq_gpu_t *g)
{
    return g->cfg.kernel == NQ_GPU_KERNEL_PARITY ? "parity" : "fast";
}

int gpu_failed(nq_gpu_t *g, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->lock);
    int failed = g->failed && !g->stop;
    if (failed)
        snprintf(err, errlen, "%s", g->err);
    pthread_mutex_unlock(&g->lock);
    return failed;
}

void gpu_stats(nq_gpu_t *g, nq_gpu_stats_t *st)
{
    pthread_mutex_lock(&g->lock);
    *st = g->st;
    pthread_mutex_unlock(&g->lock);
}

/* A shard's end without the engine: done now, on this thread. */
static int done_now(nq_gpu_done_fn done, void *ud, int rc, const nq_count_result_t *r, const char *err)
{
    nq_count_result_t zero;
    if (!r) {
        memset(&zero, 0, sizeof zero);
        r = &zero;
    }
    done(ud, rc, r, err ? err : "");
    return 0;
}

/* Hands j to the engine thread, once there is room; 0, or -1 (j not taken) when it stops or failed. */
static int engine_enqueue(nq_gpu_t *g, gpu_job_t *j, int *stopped, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->lock);
    while (g->waiting >= MAX_WAITING && !g->stop && !g->failing)
        pthread_cond_wait(&g->room, &g->lock);
    int rc = g->stop || g->failing ? -1 : 0;
    *stopped = g->stop;
    if (rc == 0) {
        j->next = NULL;
        if (g->in_tail)
            g->in_tail->next = j;
        else
            g->in_head = j;
        g->in_tail = j;
        g->waiting++;
        g->live++;
        g->held++;
        pthread_cond_signal(&g->wake);
    } else {
        snprintf(err, errlen, "%s", g->err);
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

/* A shard the host counts alone (no GPU part, or one the fast search cannot hold), on this thread. */
static int count_on_host(gpu_job_t *j, const nq_kernel_ctl_t *ctl, nq_gpu_done_fn done, void *ud)
{
    char err[256] = "";
    nq_count_result_t r;
    int rc = 0;
    if (j->split.gpu)                   /* the GPU's part too */
        rc = gpu_split_host_rest(&j->split, ctl, err, sizeof err);
    if (rc == 0)
        rc = gpu_split_host(&j->split, ctl, err, sizeof err);
    if (rc == 0)
        rc = gpu_split_finish(&j->split, 0, 0, &r, err, sizeof err);
    free(j);
    return done_now(done, ud, rc, rc == 0 ? &r : NULL, err);
}

int gpu_count_shard(nq_gpu_t *g, const uint8_t *spec, size_t len, const nq_kernel_ctl_t *ctl,
                    nq_gpu_done_fn done, void *ud)
{
    char err[256] = "";
    if (gpu_failed(g, err, sizeof err))
        return done_now(done, ud, -1, NULL, err);
    if (ctl && ctl->cancel && atomic_load(ctl->cancel))
        return done_now(done, ud, 2, NULL, NULL);
    gpu_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return done_now(done, ud, -1, NULL, "out of memory");
    if (gpu_split_plan(spec, len, &j->split, err, sizeof err) != 0) {
        free(j);
        return done_now(done, ud, -1, NULL, err);
    }
    if (j->split.gpu) {
        gpu_table_build(&j->split.plan, &j->tb);
        j->tb.level = (nq_u32)gpu_task_level(j->split.plan.m, g->cfg.rows_left);
    }
    /* a table the fast search cannot hold (n > 28, or rows far apart): the host counts it */
    if (!j->split.gpu || (g->cfg.kernel == NQ_GPU_KERNEL_FAST && !gpu_fast_fits(&j->tb)))
        return count_on_host(j, ctl, done, ud);
    nq_kernel_ctl_t host = { ctl ? ctl->cancel : NULL, NULL };   /* progress: the engine's */
    if (ctl) {
        j->ctl = *ctl;
        j->cancel = ctl->cancel;
    }
    j->done = done;
    j->ud = ud;
    j->walking = 1;
    atomic_init(&j->parts, 2);
    j->spec_hash = hash_bytes(spec, len);
    gpu_expand_init(&j->ex, &j->tb, j->split.plan.colfix, (int)j->tb.level);
    int stopped;
    if (engine_enqueue(g, j, &stopped, err, sizeof err) != 0) {
        free(j);
        return done_now(done, ud, stopped ? 2 : -1, NULL, err);
    }
    /* the GPU part is queued: now the host's, here, while the device counts */
    if (g->host_hook)
        g->host_hook(g->host_hook_ud);
    j->host_rc = gpu_split_host(&j->split, &host, j->host_err, sizeof j->host_err);
    job_part_over(g, j);
    return 0;
}

void gpu_load(nq_gpu_t *g, nq_gpu_load_t *l)
{
    pthread_mutex_lock(&g->lock);
    l->held = g->held;
    l->failing = g->failing || g->stop;
    l->shard_s = g->shard_s;
    l->held_s = g->held * g->shard_s;
    /* NQ_GPU_SLOTS launches of the larger of the engine's budget and FILL_TASKS_A_LANE a lane */
    double launch = (double)g->be->lanes * FILL_TASKS_A_LANE, fill = 0;
    if (launch < g->budget_seen)
        launch = g->budget_seen;
    if (launch > g->cfg.max_tasks)
        launch = g->cfg.max_tasks;
    if (g->tasks_a_shard > 0)
        fill = NQ_GPU_SLOTS * launch / g->tasks_a_shard;
    if (fill > NQ_GPU_SLOTS * MAX_TABLES)
        fill = NQ_GPU_SLOTS * MAX_TABLES;
    l->fill = g->tasks_a_shard > 0 && fill < 1 ? 1 : (uint64_t)fill;
    pthread_mutex_unlock(&g->lock);
}

void gpu_set_host_hook(nq_gpu_t *g, void (*fn)(void *ud), void *ud)
{
    g->host_hook = fn;
    g->host_hook_ud = ud;
}
