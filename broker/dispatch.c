/*
 * The scheduler: which shard each worker with credit gets next, and the TASK that carries it.
 * Shards come from the job queues (jobq.c) in their order; under quorum a worker never gets a
 * shard it holds or voted on, and a spot-check copy goes to another identity than the shard's
 * voters (spotcheck.c).
 */
#include "broker_impl.h"
#include "log.h"
#include "store_spotcheck.h"

#include <stdio.h>
#include <string.h>


/*
 * What a task for the shard carries: from its row when it has one (a shard that came back
 * keeps its attempts; a job stored before 004 keeps its descriptors), else from the job.
 * 0 ready, 1 nothing to send (decided meanwhile, e.g. a spare quorum copy; or a row beyond
 * the frontier after a restart), -1 failed.
 */
static int task_shard(nq_broker_t *b, nq_job_t *j, uint64_t shard, uint64_t frontier, int check,
                      nq_shard_row_t *row)
{
    int rc = store_shard_get(b->store, j->id, shard, row);
    if (rc < 0)
        return -1;
    if (check && (rc != 0 || row->state != NQ_SHARD_DONE))
        return 1;                       /* a check copy of a shard that is no longer done: moot */
    if (!check && rc == 0 && (frontier > 0 || (row->state != NQ_SHARD_PENDING && row->state != NQ_SHARD_LEASED)))
        return 1;
    if (rc == 1) {
        memset(row, 0, sizeof *row);
        row->state = NQ_SHARD_PENDING;
    }
    if ((j->spec.kind == NQ_KIND_SOLVE || row->spec_len == 0) &&
        jobq_shard_task(j, shard, row->spec, &row->spec_len, &row->seed, row->algo, sizeof row->algo) != 0) {
        nq_log(NQ_LOG_ERROR, "lease.no_shard", "job=%llu shard=%llu", (unsigned long long)j->id,
               (unsigned long long)shard);
        return -1;
    }
    return 0;
}

/* 0 sent, 1 nothing to send (see task_shard), -1 failed. A spot-check copy (check) is leased in
   memory only: the shard's row stays done, and a lost copy is simply queued again. */
static int send_task(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, uint64_t shard, uint64_t frontier, int check)
{
    nq_shard_row_t row;
    int rc = task_shard(b, j, shard, frontier, check, &row);
    if (rc != 0)
        return rc;
    nq_msg_t m = { .type = NQ_MSG_TASK };
    nq_task_t *t = &m.u.task;
    t->job = j->id;
    t->shard = shard;
    t->lease = lease_id_new(b, j->id, shard);
    t->proof = lease_id_proof(b, j->id, shard, t->lease, p->ident_hash);
    t->attempt = row.attempts;
    t->kind = (uint8_t)j->spec.kind;
    t->n = j->spec.n;
    t->spec = row.spec;
    t->spec_len = row.spec_len;
    t->seed = row.seed;
    snprintf(t->algo, sizeof t->algo, "%s", row.algo);
    t->max_steps = j->spec.max_steps;
    if (outbox_send(b, p, &m) != 0)
        return -1;
    nq_lease_t *l = leases_add(b, p, j->id, shard, row.attempts, t->lease);
    j->shards_leased++;
    if (l)
        l->check = check;
    if (!check)
        store_shard_lease(b->store, j->id, shard, t->lease, p->hello.worker_id, frontier);
    return 0;
}

/* Under quorum a worker never gets a shard it holds or has voted on: votes must be independent. */
static int quorum_excludes(nq_broker_t *b, nq_peer_t *p, const nq_job_t *j, uint64_t shard)
{
    if (j->spec.quorum < 2)
        return 0;
    return leases_ident_holds(b, p, j->id, shard) || quorum_voted(b, j->id, shard, p->ident);
}

typedef struct { nq_job_t *j; uint64_t shard; nq_check_copy_t copy; } deferred_t;

/* A shard taken for p and not sent: back to the job's returned shards. Taken from the frontier,
   it has no row yet and the stored frontier never moved past it, so a restart still finds it. */
static void dispatch_undo(nq_job_t *j, uint64_t shard)
{
    jobq_push(j, shard);
}

/* A spot-check copy goes to another identity than the shard's earlier voters; after this many
   such copies in a row that p may not take, p gets ordinary work this round. */
#define CHECKS_SKIPPED_MAX 8

static void dispatch_peer(nq_broker_t *b, nq_peer_t *p)
{
    deferred_t skipped[64];
    int nskipped = 0, checks_skipped = 0;
    if (peer_quarantined(b, p))
        return;                         /* quarantined: its results failed our checks */
    while (p->outstanding < p->credit) {
        nq_job_t *j;
        uint64_t shard, frontier;
        nq_check_copy_t copy;
        if (jobq_next(b, p, &j, &shard, &frontier, &copy, checks_skipped < CHECKS_SKIPPED_MAX) != 0)
            break;                      /* nothing pending anywhere */
        int check = copy.nvoters > -2;
        if (check ? spotcheck_excludes(b, p, j, &copy) : quorum_excludes(b, p, j, shard)) {
            checks_skipped += check;
            skipped[nskipped++] = (deferred_t){ j, shard, copy };
            if (nskipped == 64)
                break;
            continue;
        }
        int rc = send_task(b, p, j, shard, frontier, check);
        if (rc < 0) {
            if (check)
                jobq_push_check_copy(j, &copy);
            else
                dispatch_undo(j, shard);
            break;                      /* this peer cannot take messages now */
        }
        if (rc > 0)                     /* a spare copy of a decided shard: gone, and it may have */
            jobq_due(b, j);             /* been the last thing pending */
    }
    while (nskipped > 0) {              /* for the next worker, in their old order */
        deferred_t *d = &skipped[--nskipped];
        if (d->copy.nvoters > -2)
            jobq_push_check_copy(d->j, &d->copy);
        else
            jobq_push(d->j, d->shard);
    }
}

void dispatch_run(nq_broker_t *b)
{
    if (!b->store_ok || b->stopping || !jobq_any_pending(b))
        return;
    for (nq_peer_t *p = b->hungry, *next; p; p = next) {
        next = p->hungry_next;
        dispatch_peer(b, p);
    }
}

