/*
 * Jobs in memory: for every active job, the shards waiting for a worker, in
 * the order they will be handed out (largest estimated cost first, so the
 * last shards of a campaign are short ones), and its progress counters.
 * The store is the truth; this is a view rebuilt from it at every start, in
 * O(returned shards + leases) per job: never-leased shards are a frontier in
 * the job's lease order (shards_at for count/enumerate, idx for solve).
 */
#include "broker_impl.h"
#include "errf.h"
#include "log.h"
#include "shard.h"
#include "solve.h"
#include "store_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void job_free(nq_job_t *j);

/* Out of memory for good: its sweeps end, nothing of it stays queued or due. */
static void jobs_unlink(nq_broker_t *b, nq_job_t *j)
{
    jobq_unlink(b, j);
    spotcheck_forget_job(b, j->id);
    job_free(j);
}

typedef struct { uint64_t idx; double cost; } cost_idx_t;
typedef struct {
    nq_broker_t *b;
    nq_job_t *j;
    cost_idx_t *v;
    size_t n, cap;
    double now;
    char why[320];                     /* a refused row: what is wrong with it */
} load_ctx_t;

#define LOAD_REFUSED 1                 /* load_shard: the row is not one of this job's shards */
#define LOAD_STOPPED 2                 /* load_shard: a stop was asked for */

static int load_shard(void *ud, const nq_shard_row_t *r)
{
    load_ctx_t *c = ud;
    if ((c->n & 4095) == 0 && broker_stop_asked(c->b))
        return LOAD_STOPPED;            /* 10^8 pending rows take minutes: SIGTERM must not wait */
    if (store_shard_in_job(r, c->j->shards_total, c->why, sizeof c->why) != 0)
        return LOAD_REFUSED;
    if (r->state == NQ_SHARD_LEASED && c->j->spec.quorum < 2) {
        /* Re-armed: the worker that held it may still deliver, so wait a grace window. */
        leases_add(c->b, NULL, c->j, r->idx, r->attempts, r->lease, NQ_LEASE_FIRST);
        uint64_t *g = realloc(c->j->grace, (c->j->ngrace + 1) * sizeof *g);
        if (!g)
            return -1;
        c->j->grace = g;
        c->j->grace[c->j->ngrace++] = r->lease;
        return 0;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        cost_idx_t *v = realloc(c->v, c->cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v;
    }
    c->v[c->n].idx = r->idx;
    c->v[c->n].cost = r->cost;
    c->n++;
    return 0;
}

/* Ascending cost, then descending idx: popping from the end gives largest cost, lowest idx. */
static int cost_cmp(const void *a, const void *b)
{
    const cost_idx_t *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->idx < y->idx ? 1 : (x->idx > y->idx ? -1 : 0);
}

/* Logs why a job is not loaded; 1. */
static int job_refused(uint64_t id, const char *reason, char *why, size_t whylen)
{
    char q[NQ_LOG_QLEN];
    nq_log(NQ_LOG_ERROR, "job.refused", "job=%llu reason=%s", (unsigned long long)id,
           nq_log_qs(q, sizeof q, reason));
    if (why)
        snprintf(why, whylen, "%s", reason);
    return 1;
}

/*
 * count/enumerate: the job's list, which must be the one its shards were counted from. A submit
 * hands over the list it just built; otherwise the lister builds it (seconds for a large job, so
 * never in the loop) and the job leases nothing until jobs_listed. The rest of the job (its
 * counters, returned shards, re-armed leases, checks) is in memory at once: progress, results of
 * re-armed leases and cancels need no list.
 */
static int job_list(nq_broker_t *b, nq_job_t *j, const nq_job_row_t *row, nq_shards_t *list)
{
    if (row->spec.kind == NQ_KIND_SOLVE) {
        shards_destroy(&list);
        return 0;                       /* solve shards are seeds */
    }
    if (list) {
        j->list = list;
        return 0;
    }
    nq_lister_req_t r = { .kind = row->spec.kind, .n = (int)row->spec.n, .depth = (int)row->spec.depth,
                          .encoding = (int)row->spec.encoding, .max_shards = NQ_SHARD_MAX_LIST,
                          .max_steps = UINT64_MAX };
    r.order = (int)row->spec.lease_order;   /* its positions are in the order it was made with */
    nq_listing_t x = { .job = row->id };
    j->list_ticket = listings_ask(b, &r, &x);
    return j->list_ticket ? 0 : -1;
}

void jobs_pace_start(nq_broker_t *b, nq_job_t *j)
{
    j->run_t0 = b->now;
    j->run_left0 = jobq_work_left(j);
    j->run_done0 = j->shards_done;
}

void jobs_pace(const nq_broker_t *b, const nq_job_t *j, double *eta, double *rate)
{
    double el = b->now - j->run_t0, left = jobq_work_left(j), done = j->run_left0 - left;
    *rate = el > 0 ? (double)(j->shards_done - j->run_done0) / el : 0;
    *eta = el > 0 && done > 0 && !j->list_ticket ? left / (done / el) : -1;   /* -1: none done yet */
}

void jobs_listed(nq_broker_t *b, uint64_t id, uint64_t ticket, nq_shards_t **list, const char *why,
                 double seconds)
{
    nq_job_t *j = jobq_find(b, id);
    if (!j || j->list_ticket != ticket)
        return;                         /* it ended, or was reloaded and asked again */
    j->list_ticket = 0;
    char reason[400];
    if (store_list_matches(id, &j->spec, j->shards_total, *list, why, reason, sizeof reason) != 0) {
        job_refused(id, reason, NULL, 0);
        leases_cancel_job(b, id);       /* re-armed ones: nobody may deliver into a job not served */
        jobs_unlink(b, j);
        return;
    }
    j->list = *list;
    *list = NULL;
    j->pending_cost = 0;                /* the shards returned before it came cost 1 each: now their estimate */
    for (size_t i = 0; i < j->npending; i++)
        j->pending_cost += jobq_cost(j, j->pending[i]);
    jobs_pace_start(b, j);              /* in cost units from now on */
    nq_log(NQ_LOG_INFO, "job.listed", "job=%llu shards=%llu seconds=%.3f", (unsigned long long)id,
           (unsigned long long)j->shards_total, seconds);
}

static void job_free(nq_job_t *j)
{
    free(j->pending);
    free(j->checks);
    free(j->grace);
    shards_destroy(&j->list);
    free(j);
}

/* The job's pending and leased rows: returned shards, and leases to wait for. 0, 1 refused
   (logged), -1 error or stopped. */
static int job_rows(nq_broker_t *b, nq_job_t *j, char *why, size_t whylen)
{
    load_ctx_t c = { .b = b, .j = j, .now = b->now };
    /* one state at a time: each is a range of the open-state index, not a walk of the job */
    int rc = store_shards_each(b->store, j->id, 1u << NQ_SHARD_PENDING, load_shard, &c);
    if (rc == 0)
        rc = store_shards_each(b->store, j->id, 1u << NQ_SHARD_LEASED, load_shard, &c);
    if (rc == -2 || rc == LOAD_REFUSED) {
        free(c.v);
        return job_refused(j->id, rc == -2 ? store_refusal(b->store) : c.why, why, whylen);
    }
    if (rc != 0) {
        free(c.v);
        return -1;
    }
    if (c.n > 0)
        qsort(c.v, c.n, sizeof *c.v, cost_cmp);
    for (size_t i = 0; i < c.n; i++)
        for (uint32_t q = 0; q < (j->spec.quorum > 1 ? j->spec.quorum : 1); q++)
            jobq_push(j, c.v[i].idx);   /* under quorum: one copy per vote needed */
    free(c.v);
    return 0;
}

int jobs_load_one(nq_broker_t *b, const nq_job_row_t *row, nq_shards_t *list, char *why, size_t whylen)
{
    nq_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        shards_destroy(&list);
        return -1;
    }
    j->id = row->id;
    if (job_list(b, j, row, list) != 0) {
        free(j);
        return -1;
    }
    j->frontier = row->frontier;
    j->back = row->back;
    j->spec = row->spec;
    j->state = row->state;
    j->shards_total = row->shards_total;
    j->shards_done = row->shards_done;
    j->shards_failed = row->shards_failed;
    j->shards_conflict = row->shards_conflict;
    int rc;
    if ((rc = job_rows(b, j, why, whylen)) != 0 || (rc = spotcheck_load(b, j)) != 0) {
        leases_cancel_job(b, j->id);    /* re-armed leases and sweeps of a job that is not loaded */
        spotcheck_forget_job(b, j->id);
        job_free(j);
        return rc;
    }
    j->grace_until = b->now + b->cfg.grace_s;
    nq_job_totals_t t;
    if (row->spec.kind == NQ_KIND_SOLVE && store_job_totals(b->store, j->id, &t) == 0)
        j->solutions_found = t.solutions;
    jobq_insert(b, j);
    jobs_pace_start(b, j);
    nq_log(NQ_LOG_INFO, "job.loaded", "job=%llu kind=%s n=%llu returned=%zu frontier=%llu regrace=%zu done=%llu/%llu",
           (unsigned long long)j->id, store_kind_name(j->spec.kind), (unsigned long long)j->spec.n,
           j->npending, (unsigned long long)j->frontier, j->ngrace, (unsigned long long)j->shards_done,
           (unsigned long long)j->shards_total);
    jobs_check_done(b, j);
    return 0;
}

int jobs_load_id(nq_broker_t *b, uint64_t id, nq_shards_t *list, nq_job_row_t *row, char *why, size_t whylen)
{
    if (store_job_load(b->store, id, row, why, whylen) != 0) {
        shards_destroy(&list);
        return -1;
    }
    return jobs_load_one(b, row, list, why, whylen) == 0 ? 0 : -1;
}

/* A job refused is left out; the others load. A stop asked for ends the walk between jobs. */
static int load_cb(void *ud, const nq_job_row_t *row)
{
    nq_broker_t *b = ud;
    if (broker_stop_asked(b))
        return -1;
    int rc = jobs_load_one(b, row, NULL, NULL, 0);
    return rc == 1 ? 0 : rc;
}

static int refused_cb(void *ud, uint64_t id, const char *why)
{
    (void)ud;
    job_refused(id, why, NULL, 0);
    return 0;
}

int jobs_load(nq_broker_t *b, char *err, size_t errlen)
{
    if (store_jobs_active(b->store, load_cb, refused_cb, b) != 0) {
        if (broker_stop_asked(b))
            return nq_errf(err, errlen, "stopped while loading the jobs from %s", store_path(b->store));
        return nq_errf(err, errlen, "cannot load the jobs from %s", store_path(b->store));
    }
    return 0;
}

static void job_finish(nq_broker_t *b, nq_job_t *j, nq_job_state_t st)
{
    j->state = st;
    store_job_set_state(b->store, j->id, st);
    nq_log(NQ_LOG_INFO, "job.finish", "job=%llu state=%s done=%llu failed=%llu conflict=%llu",
           (unsigned long long)j->id, store_job_state_name(st), (unsigned long long)j->shards_done,
           (unsigned long long)j->shards_failed, (unsigned long long)j->shards_conflict);
    jobs_unlink(b, j);
}

/*
 * Every shard looks decided, yet copies are still queued or out: spare quorum copies, a
 * re-lease whose first holder delivered late, or spot-check copies of checks already decided
 * (after a restart, a check is queued again from the store while the identity that held it
 * delivers it; every live identity may then have voted, so nobody could ever take the copy).
 * The store's counts decide (the in-memory ones could count a shard that failed and later got
 * a result twice); if they agree, the copies are moot and are dropped, so every honest
 * schedule ends. The caller has asked spotcheck_holds first: no check is open.
 */
static void job_settle(nq_broker_t *b, nq_job_t *j)
{
    nq_job_row_t row;
    if (store_job_get(b->store, j->id, &row) != 0)
        return;
    j->shards_done = row.shards_done;
    j->shards_failed = row.shards_failed;
    j->shards_conflict = row.shards_conflict;
    if (j->shards_done + j->shards_failed + j->shards_conflict < j->shards_total)
        return;
    leases_cancel_job(b, j->id);
    j->npending = 0;
    j->nchecks = 0;
    j->back = j->frontier;
    j->ngrace = 0;
}

/* The jobs marked due (jobq_due) since the last call, settled: each may end and be freed. */
void jobs_settle_due(nq_broker_t *b)
{
    nq_job_t *j;
    while ((j = jobq_take_due(b)) != NULL)
        jobs_check_done(b, j);
}

/* Called whenever a job's counters move. May free j. */
void jobs_check_done(nq_broker_t *b, nq_job_t *j)
{
    const nq_job_spec_t *s = &j->spec;
    if (s->kind == NQ_KIND_SOLVE && s->solutions > 0 && j->solutions_found >= s->solutions) {
        /* Enough distinct solutions: the other seeds are not needed, here or on the workers. */
        leases_cancel_job(b, j->id);
        store_shards_cancel_pending(b->store, j->id);
        job_finish(b, j, NQ_JOB_DONE);
        return;
    }
    int settled = j->shards_done + j->shards_failed + j->shards_conflict >= j->shards_total;
    int idle = jobq_pending(j) == 0 && j->leases_out == 0 && j->ngrace == 0;
    if (settled && spotcheck_holds(b, j, idle))
        return;                         /* spot-checks not decided: not done, and no copy is moot */
    if (settled && !idle)
        job_settle(b, j);
    if (jobq_pending(j) > 0 || j->leases_out > 0 || j->ngrace > 0)
        return;
    if (j->shards_done == j->shards_total)
        job_finish(b, j, NQ_JOB_DONE);
    else if (s->kind == NQ_KIND_SOLVE && s->solutions > 0 && j->shards_failed == 0 && j->shards_conflict == 0)
        job_finish(b, j, NQ_JOB_FAILED);   /* every seed tried, too few solutions */
    else if (j->shards_failed + j->shards_conflict > 0)
        job_finish(b, j, NQ_JOB_FAILED);   /* visible and retryable: `nq retry` */
}

int jobs_cancel(nq_broker_t *b, uint64_t id, char *err, size_t errlen)
{
    nq_job_row_t row;
    int rc = store_job_load(b->store, id, &row, err, errlen);
    if (rc != 0)
        return rc == 1 ? -1 : -2;       /* no such job; or its row is refused: nothing runs on it */
    if (row.state == NQ_JOB_DONE || row.state == NQ_JOB_CANCELLED)
        return nq_errf(err, errlen, "job %llu is already %s", (unsigned long long)id,
                       store_job_state_name(row.state));
    if (txn_write_begin(b, err, errlen) != 0)
        return -2;
    rc = store_shards_cancel_pending(b->store, id) == 0 && store_job_set_state(b->store, id, NQ_JOB_CANCELLED) == 0
         ? 0 : -1;
    if (txn_write_end(b, rc, err, errlen) != 0)
        return -2;                      /* not durable: memory and workers untouched */
    leases_cancel_job(b, id);
    nq_job_t *j = jobq_find(b, id);
    if (j)
        jobs_unlink(b, j);
    nq_log(NQ_LOG_INFO, "job.cancel", "job=%llu", (unsigned long long)id);
    return 0;
}

int jobs_retry(nq_broker_t *b, uint64_t id, char *err, size_t errlen)
{
    nq_job_row_t row;
    int rc = store_job_load(b->store, id, &row, err, errlen);
    if (rc != 0)
        return rc == 1 ? -1 : -2;
    if (row.state == NQ_JOB_DONE)
        return nq_errf(err, errlen, "job %llu is done: nothing to retry", (unsigned long long)id);
    if (txn_write_begin(b, err, errlen) != 0)
        return -2;
    rc = store_shards_retry(b->store, id) == 0 && store_job_set_state(b->store, id, NQ_JOB_RUNNING) == 0 ? 0 : -1;
    if (txn_write_end(b, rc, err, errlen) != 0)
        return -2;
    nq_job_t *j = jobq_find(b, id);
    nq_shards_t *list = j ? j->list : NULL;   /* the same job, the same list: not built again */
    if (j) {
        j->list = NULL;
        jobs_unlink(b, j);
    }
    leases_cancel_job(b, id);           /* the reloaded job re-arms nothing: every copy is asked anew */
    char why[320] = "";
    if (jobs_load_id(b, id, list, &row, why, sizeof why) != 0)
        return nq_errf(err, errlen, "job %llu could not be reloaded%s%s", (unsigned long long)id,
                       why[0] ? ": " : "", why);
    nq_log(NQ_LOG_INFO, "job.retry", "job=%llu", (unsigned long long)id);
    return 0;
}

/* Grace windows that ran out: their shards go back to pending. */
void jobs_tick(nq_broker_t *b, double now)
{
    for (nq_job_t *j = b->jobs, *next; j; j = next) {
        next = j->next;
        if (j->ngrace == 0 || now < j->grace_until)
            continue;
        for (size_t i = 0; i < j->ngrace; i++) {
            nq_lease_t *l = leases_find(b, j->grace[i]);
            if (l && l->peer == NULL)
                leases_release(b, l, 0, "grace expired");
        }
        j->ngrace = 0;
        jobs_check_done(b, j);
    }
}

void jobs_free_all(nq_broker_t *b)
{
    while (b->jobs)
        jobs_unlink(b, b->jobs);
}
