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
    uint64_t fresh = j->shards_total > j->frontier ? j->shards_total - j->frontier : 0;
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

int jobq_next(nq_broker_t *b, const nq_peer_t *for_peer, nq_job_t **job, uint64_t *shard,
                    uint64_t *frontier, nq_check_copy_t *check, int allow_checks)
{
    for (nq_job_t *j = b->jobs; j; j = j->next) {
        int checks = allow_checks && j->nchecks > 0;
        if ((!checks && j->npending == 0 && j->frontier >= j->shards_total) || j->list_ticket ||
            (j->state != NQ_JOB_PENDING && j->state != NQ_JOB_RUNNING) ||
            jobq_paused_for(for_peer, j->id, b->now))
            continue;
        if (j->state == NQ_JOB_PENDING) {
            j->state = NQ_JOB_RUNNING;
            store_job_set_state(b->store, j->id, NQ_JOB_RUNNING);
        }
        *job = j;
        *frontier = 0;
        check->nvoters = -2;
        if (checks) {                    /* spot-check copies first: a job ends when they do */
            *check = j->checks[--j->nchecks];
            *shard = check->shard;
            return 0;
        }
        if (j->npending > 0) {           /* returned shards first: they are the oldest work */
            *shard = j->pending[--j->npending];
            return 0;
        }
        uint64_t pos = j->frontier++;
        *shard = j->list ? shards_at(j->list, pos) : pos;
        *frontier = j->frontier;
        for (uint32_t q = 1; q < j->spec.quorum; q++)
            jobq_push(j, *shard);   /* under quorum: one copy per vote needed */
        return 0;
    }
    return -1;
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
