/* One task through its kernel: count, enumerate or solve, into a RESULT. */
#include "clock.h"
#include "count.h"
#include "count_bounds.h"
#include "enumerate.h"
#include "solve.h"
#include "verify.h"
#include "worker_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef NQ_TEST_FAULTS
/* Test-only fault switch (compiled in only with -DNQ_TEST_FAULTS=ON; release packages are built
   without it): NQ_FAULT_CORRUPT=P corrupts that share of count results — the total alone, so the
   residues catch it, or with NQ_FAULT_CORRUPT_MODE=consistent a plausible wrong count with its
   residues, so only a quorum or a spot-check can; NQ_FAULT_CRASH_SHARD=I aborts the process on
   shard I (a poison shard). */

/* A wrong count that the broker's per-shard bounds (count_bounds.h) let through, so that only a
   quorum or a spot-check can catch it: one more solution of the heaviest weight the shard can
   reach where its rows admit one, else one more node. */
static void fault_plausible(nq_wtask_t *t)
{
    nq_count_bounds_t b;
    nq_count_result_t lie = { t->r.total, t->r.unique, t->r.nodes + 1, 0, 0 };
    char err[200];
    if (count_bounds(t->t.spec, t->t.spec_len, &b, err, sizeof err) != 0)
        return;
    lie.total += b.wmax;
    lie.unique += 1;
    if (b.wmax == 0 || count_bounds_check(&b, &lie, err, sizeof err) != 0) {
        lie.total = t->r.total;
        lie.unique = t->r.unique;
    }
    t->r.total = lie.total;
    t->r.unique = lie.unique;
    t->r.nodes = lie.nodes;
}

static void fault_inject(nq_wtask_t *t)
{
    const char *crash = getenv("NQ_FAULT_CRASH_SHARD");
    if (crash && strtoull(crash, NULL, 10) == t->t.shard)
        abort();
    const char *p = getenv("NQ_FAULT_CORRUPT");
    if (p && t->r.kind == NQ_KIND_COUNT) {
        uint64_t x = t->t.shard * 0x9e3779b97f4a7c15ull + t->t.lease;
        if ((double)(x >> 11) / 9007199254740992.0 < atof(p)) {
            const char *mode = getenv("NQ_FAULT_CORRUPT_MODE");
            if (mode && strcmp(mode, "consistent") == 0) {
                fault_plausible(t);
                t->r.res13 = (uint8_t)(t->r.total % 13);
                t->r.res15 = (uint8_t)(t->r.total % 15);
            } else {
                t->r.total += 2;        /* residues left as they were: caught by them */
            }
        }
    }
}
#endif

static double mono(void) { return nq_mono(); }

static void set_error(nq_wtask_t *t, const char *msg)
{
    t->r.status = NQ_RES_ERROR;
    size_t len = strlen(msg);
    t->payload = malloc(len + 1);
    if (t->payload) {
        memcpy(t->payload, msg, len + 1);
        t->r.payload = t->payload;
        t->r.payload_len = len;
    }
}

/* A count's outcome, from the CPU kernel or the GPU engine, into the RESULT: its figures, an
   error (the shard goes to another worker; never a partial count) or a cancel (rc 2). */
static void count_outcome(nq_wtask_t *t, int rc, const nq_count_result_t *cr, const char *err)
{
    if (rc == 2) { t->cancelled = 1; return; }
    if (rc != 0) { set_error(t, err); return; }
    t->r.total = cr->total;
    t->r.unique = cr->unique;
    t->r.nodes = cr->nodes;
    t->r.res13 = cr->res13;
    t->r.res15 = cr->res15;
}

static void run_count(nq_wtask_t *t, const nq_kernel_ctl_t *ctl, char *err, size_t errlen)
{
    nq_count_result_t cr;
    int rc = count_shard(t->t.spec, t->t.spec_len, &cr, ctl, err, errlen);
    count_outcome(t, rc, &cr, err);
}

typedef struct { uint8_t *buf; size_t len, cap; uint64_t count; int n; } enum_sink_t;

static int enum_emit(void *ud, const uint8_t *cols, int n)
{
    enum_sink_t *s = ud;
    size_t per = (size_t)(n + 1) / 2;
    if (s->len + per > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        if (cap > NQ_MAX_PAYLOAD)
            return -1;                  /* shard too big for one message: depth too small */
        uint8_t *b = realloc(s->buf, cap);
        if (!b)
            return -1;
        s->buf = b;
        s->cap = cap;
    }
    s->len += enumerate_pack(cols, n, s->buf + s->len);
    s->count++;
    return 0;
}

static void run_enumerate(nq_wtask_t *t, const nq_kernel_ctl_t *ctl, char *err, size_t errlen)
{
    enum_sink_t s = { .n = (int)t->t.n };
    int rc = enumerate_shard(t->t.spec, t->t.spec_len, enum_emit, &s, ctl, err, errlen);
    if (rc == 2) { free(s.buf); t->cancelled = 1; return; }
    if (rc != 0) { free(s.buf); set_error(t, err); return; }
    t->payload = s.buf;
    t->r.payload = s.buf;
    t->r.payload_len = s.len;
    t->r.total = s.count;
    t->r.nodes = s.count;
}

static void run_solve(nq_wtask_t *t, char *err, size_t errlen)
{
    const nq_solver_t *s = solver_find(t->t.algo);
    if (!s) {
        snprintf(err, errlen, "this worker has no method '%.64s'", t->t.algo);
        set_error(t, err);
        return;
    }
    nq_solve_opts_t o = { .max_steps = t->t.max_steps, .cancel = &t->cancel, .progress = &t->progress };
    nq_solve_stats_t st;
    uint32_t *cols = NULL;
    int rc = solve_run(s, t->t.n, t->t.seed, &o, &cols, &st, err, errlen);
    t->r.nodes = st.steps;
    if (rc == NQ_SOLVE_CANCELLED) { t->cancelled = 1; return; }
    if (rc == NQ_SOLVE_ERROR) { set_error(t, err); return; }
    if (rc == NQ_SOLVE_FAILED) { t->r.status = NQ_RES_NOTFOUND; return; }
    nq_clash_t c;
    if (verify_perm(cols, t->t.n, &c) != 0) {   /* never send what we would not sign */
        free(cols);
        set_error(t, "solver returned an invalid permutation");
        return;
    }
    t->cols = cols;
    t->r.sol_n = t->t.n;
    t->r.total = 1;
}

/* The RESULT's header, from the task. */
static void task_begin(nq_wtask_t *t)
{
    t->started = mono();
    memset(&t->r, 0, sizeof t->r);
    t->r.job = t->t.job;
    t->r.shard = t->t.shard;
    t->r.lease = t->t.lease;
    t->r.proof = t->t.proof;
    t->r.kind = t->t.kind;
}

#ifdef NQ_TEST_FAULTS
/* NQ_FAULT_PACE=R (test builds only): a count or enumerate task takes at least nodes / R seconds,
   its progress moving at R nodes/s meanwhile and a cancel still heard, so that a test can run
   workers of chosen speeds whatever the load of the machine (the real count, far faster, is done
   first). */
static void fault_pace(nq_wtask_t *t)
{
    const char *v = getenv("NQ_FAULT_PACE");
    double rate = v ? atof(v) : 0;
    if (rate <= 0 || t->t.kind == NQ_KIND_SOLVE || t->r.status != NQ_RES_OK || t->cancelled || t->gpu_done)
        return;                         /* CPU tasks only: a GPU engine's thread must not sleep */
    double until = t->started + (double)t->r.nodes / rate;
    for (double now = mono(); now < until; now = mono()) {
        if (atomic_load(&t->cancel)) {
            t->cancelled = 1;
            return;
        }
        uint64_t done = (uint64_t)((now - t->started) * rate);
        atomic_store_explicit(&t->progress, done > 0 ? done : 1, memory_order_relaxed);
        double left = until - now;
        struct timespec ts = { 0, (long)((left < 0.01 ? left : 0.01) * 1e9) };
        nanosleep(&ts, NULL);
    }
}
#endif

static void task_end(nq_wtask_t *t)
{
#ifdef NQ_TEST_FAULTS
    fault_inject(t);
    fault_pace(t);
#endif
    t->r.elapsed_us = (uint64_t)((mono() - t->started) * 1e6);
}

void task_run(nq_wtask_t *t)
{
    char err[256] = "";
    nq_kernel_ctl_t ctl = { .cancel = &t->cancel, .progress = &t->progress };
    task_begin(t);
    if (t->t.kind == NQ_KIND_COUNT)
        run_count(t, &ctl, err, sizeof err);
    else if (t->t.kind == NQ_KIND_ENUMERATE)
        run_enumerate(t, &ctl, err, sizeof err);
    else
        run_solve(t, err, sizeof err);
    task_end(t);
}

/* The GPU engine's callback: the shard's result, an error (the device failed) or a cancel. */
static void gpu_task_done(void *ud, int rc, const nq_count_result_t *cr, const char *err)
{
    nq_wtask_t *t = ud;
    count_outcome(t, rc, cr, err);
    task_end(t);
    t->gpu_done(t->gpu_ud, t);
}

void task_run_gpu(nq_wtask_t *t, nq_gpu_t *g, void (*done)(void *ud, nq_wtask_t *t), void *ud)
{
    nq_kernel_ctl_t ctl = { .cancel = &t->cancel, .progress = &t->progress };
    task_begin(t);
    t->r.nodes_kind = gpu_nodes_cpu(g) ? NQ_NODES_CPU : NQ_NODES_GPU_FAST;   /* whose nodes it counts */
    t->gpu_done = done;
    t->gpu_ud = ud;
    gpu_count_shard(g, t->t.spec, t->t.spec_len, &ctl, gpu_task_done, t);
}

void task_free(nq_wtask_t *t)
{
    free(t->payload);
    free(t->cols);
    free(t);
}
