/*
 * The jobs in memory as queues: the list of active jobs (priority first, then the oldest), and for
 * each the shards waiting for a worker in the order they go out (spot-check copies first, then
 * returned shards, then the never-leased frontier of the job's lease order), counted in O(1).
 * Jobs whose counters moved are marked due, and the loop settles them (jobs_settle_due in jobs.c)
 * before it waits: the modules below the job lifecycle never end a job themselves.
 */
#include "broker_impl.h"
#include "log.h"
#include "shard.h"
#include "solve.h"

#include <stdlib.h>
#include <string.h>

nq_job_t *jobq_find(nq_broker_t *b, uint64_t id)
{
    for (nq_job_t *j = b->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

void jobq_push(nq_job_t *j, uint64_t shard)
{
    j->pending_cost += jobq_cost(j, shard);
    if (j->npending == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        uint64_t *p = realloc(j->pending, cap * sizeof *p);
        if (!p)
            abort();                    /* 8 bytes a shard: failing here means the machine is gone */
        j->pending = p;
        j->cap = cap;
    }
    j->pending[j->npending++] = shard;
}

/* Priority desc, then id asc (older first). */
void jobq_insert(nq_broker_t *b, nq_job_t *j)
{
    nq_job_t **pp = &b->jobs;
    while (*pp && ((*pp)->spec.priority > j->spec.priority ||
                   ((*pp)->spec.priority == j->spec.priority && (*pp)->id < j->id)))
        pp = &(*pp)->next;
    j->next = *pp;
    *pp = j;
}

uint64_t jobq_pending(const nq_job_t *j)
{
    uint64_t fresh = j->back > j->frontier ? j->back - j->frontier : 0;
    return j->npending + j->nchecks + fresh * (j->spec.quorum > 1 ? j->spec.quorum : 1);
}

int jobq_shard_task(const nq_job_t *j, uint64_t idx, uint8_t *spec, size_t *spec_len, uint64_t *seed,
                    char *algo, size_t algolen)
{
    *spec_len = 0;
    *seed = 0;
    algo[0] = '\0';
    if (idx >= j->shards_total)
        return -1;
    if (j->spec.kind == NQ_KIND_SOLVE) {
        *seed = store_solve_seed(j->spec.seed0, j->spec.restarts, idx);
        store_solve_method(j->spec.algo, j->spec.restarts, idx, algo, algolen);
        return 0;
    }
    return j->list && (*spec_len = shards_get(j->list, idx, spec)) > 0 ? 0 : -1;
}

int jobq_any_pending(const nq_broker_t *b)
{
    for (const nq_job_t *j = b->jobs; j; j = j->next)
        if ((j->state == NQ_JOB_PENDING || j->state == NQ_JOB_RUNNING) && !j->list_ticket &&
            jobq_pending(j) > 0)
            return 1;
    return 0;
}

/* ---- what shards cost ---- */

/* A shard's cost in the list's estimate (shard.h: expected nodes of the CPU kernels, from random
   paths down the shard's search tree); a solve job's shards
   cost 1 each. */
static double list_cost(const nq_shards_t *l, uint64_t idx) { return shards_cost(l, idx); }
static double list_cost_at(const nq_shards_t *l, uint64_t pos) { return shards_cost_at(l, pos); }
static double list_cost_span(const nq_shards_t *l, uint64_t a, uint64_t b)
{
    return shards_cost_before(l, b) - shards_cost_before(l, a);
}

double jobq_cost(const nq_job_t *j, uint64_t idx)
{
    return j->list ? list_cost(j->list, idx) : 1;
}

double jobq_cost_at(const nq_job_t *j, uint64_t pos)
{
    return j->list ? list_cost_at(j->list, pos) : 1;
}

/* Work not yet done, in cost units: never leased, returned, and out (copies not twice). */
double jobq_work_left(const nq_job_t *j)
{
    double fresh = j->back > j->frontier ? (j->list ? list_cost_span(j->list, j->frontier, j->back)
                                                    : (double)(j->back - j->frontier)) : 0;
    double q = j->spec.quorum > 1 ? j->spec.quorum : 1;
    return fresh * q + j->pending_cost + j->leased_cost;
}

/* The share of the job's estimated work done, 0..1: its work left against all of it (every shard,
   each copy a quorum needs). The same figures as its ETA (jobs_pace), not its shard counts,
   which lag while the largest shards go first. */
double jobq_work_done(const nq_job_t *j)
{
    double q = j->spec.quorum > 1 ? j->spec.quorum : 1;
    double all = q * (j->list ? shards_cost_total(j->list) : (double)j->shards_total);
    double done = all > 0 ? 1 - jobq_work_left(j) / all : 0;
    return done < 0 ? 0 : done > 1 ? 1 : done;
}

/* Nodes per cost unit, learnt from this job's results; 0 until a few have come. */
double jobq_scale(const nq_job_t *j)
{
    return j->cal_n >= JOBQ_CAL_MIN && j->cal_cost > 0 ? j->cal_nodes / j->cal_cost : 0;
}

void jobq_calibrate(nq_job_t *j, double cost, uint64_t nodes)
{
    if (cost <= 0)
        return;
    j->cal_cost += cost;
    j->cal_nodes += (double)nodes;
    j->cal_n++;
}

/* ---- taking work ---- */

/* Whether j has anything for a worker now: check copies (when allowed), returned shards, or
   order positions never leased. */
static int job_has_work(const nq_job_t *j, int checks)
{
    return (checks && j->nchecks > 0) || j->npending > 0 || j->frontier < j->back;
}

nq_job_t *jobq_for(nq_broker_t *b, const nq_peer_t *for_peer, int allow_checks)
{
    for (nq_job_t *j = b->jobs; j; j = j->next) {
        if (!job_has_work(j, allow_checks) || j->list_ticket ||
            (j->state != NQ_JOB_PENDING && j->state != NQ_JOB_RUNNING) ||
            jobq_paused_for(for_peer, j->id, b->now))
            continue;
        if (j->state == NQ_JOB_PENDING) {
            j->state = NQ_JOB_RUNNING;
            store_job_set_state(b->store, j->id, NQ_JOB_RUNNING);
        }
        return j;
    }
    return NULL;
}

void jobq_take(nq_job_t *j, int from_back, int allow_checks, jobq_taken_t *t)
{
    memset(t, 0, sizeof *t);
    t->back = UINT64_MAX;
    t->check.nvoters = -2;
    if (allow_checks && j->nchecks > 0) {    /* spot-check copies first: a job ends when they do */
        t->check = j->checks[--j->nchecks];
        t->shard = t->check.shard;
        return;
    }
    if (j->npending > 0) {                   /* returned shards first: they are the oldest work */
        t->shard = j->pending[--j->npending];
        j->pending_cost -= jobq_cost(j, t->shard);
        if (j->npending == 0)
            j->pending_cost = 0;             /* no drift from the additions and subtractions */
        return;
    }
    uint64_t pos;
    if (from_back) {
        pos = --j->back;
        t->back = pos;                       /* the store's back moves down to it with the lease */
    } else {
        pos = j->frontier++;
        t->frontier = j->frontier;
    }
    t->shard = j->list ? shards_at(j->list, pos) : pos;
    for (uint32_t q = 1; q < j->spec.quorum; q++)
        jobq_push(j, t->shard);              /* under quorum: one copy per vote needed */
}

void jobq_push_check_copy(nq_job_t *j, const nq_check_copy_t *c)
{
    if (j->nchecks == j->checks_cap) {
        size_t cap = j->checks_cap ? j->checks_cap * 2 : 64;
        nq_check_copy_t *v = realloc(j->checks, cap * sizeof *v);
        if (!v)
            abort();                    /* as jobs_push_pending: the machine is gone */
        j->checks = v;
        j->checks_cap = cap;
    }
    j->checks[j->nchecks++] = *c;
}

void jobq_push_check(nq_job_t *j, uint64_t shard)
{
    nq_check_copy_t c = { .shard = shard, .nvoters = -1 };
    jobq_push_check_copy(j, &c);
}


/* Whether p gets none of the job's shards now (PAUSED_JOBS). */
int jobq_paused_for(const nq_peer_t *p, uint64_t job, double now)
{
    for (int i = 0; i < PAUSED_JOBS; i++)
        if (p->paused[i].job == job)
            return now < p->paused[i].until;
    return 0;
}

void jobq_due(nq_broker_t *b, nq_job_t *j)
{
    if (j->due)
        return;
    j->due = 1;
    j->due_next = b->due;
    b->due = j;
}

nq_job_t *jobq_take_due(nq_broker_t *b)
{
    nq_job_t *j = b->due;
    if (j) {
        b->due = j->due_next;
        j->due = 0;
        j->due_next = NULL;
    }
    return j;
}

void jobq_unlink(nq_broker_t *b, nq_job_t *j)
{
    for (nq_job_t **pp = &b->jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (j->due)
        for (nq_job_t **pp = &b->due; *pp; pp = &(*pp)->due_next)
            if (*pp == j) {
                *pp = j->due_next;
                j->due = 0;
                break;
            }
}
