/*
 * The scheduler: which shard each worker with credit gets next, and the TASK that carries it.
 *
 * A campaign mixes machines of every speed, and adding a slow one must never make a job slower:
 *   - each worker is kept supplied with about DISPATCH_AHEAD_S and its round trip of estimated
 *     work (its measured rate times the shards' cost estimates), within the credit it asked for,
 *     and never fewer leases than its threads and one more;
 *   - the never-leased shards of a job are taken from both ends of its lease order (largest
 *     first): a worker takes from the front only when it is among the fastest, or when it would
 *     finish the shard well before the job's projected end; otherwise from the back, the
 *     smallest, so a slow machine never sits on a job's largest shards;
 *   - at the tail, when nothing is pending anywhere, an idle worker gets a copy of a lease that
 *     would finish late, when it would finish it sooner (a bounded tail); the search looks past
 *     leases not worth a copy. When the holder delivers first the copy is cancelled (a per-lease
 *     CANCEL). When the copy does, its result is stored marked as a copy's and wanting a check,
 *     which the holder's own result (it goes on) or a third identity gives (results.c): arriving
 *     first decides nothing. A copy never goes to the holder's identity or to one that voted on
 *     the shard, and a lost copy charges nothing.
 *   - speeds are what the broker sees (leases.c, results.c): a worker's reported times can make
 *     it look slower, never faster, and a lease whose progress falls far behind its holder's lane
 *     brings that lane down, so the lease is projected to end late and is copied first.
 * Shards come from the job queues (jobq.c); under quorum a worker never gets a shard it holds or
 * voted on, and a spot-check copy goes to another identity than the shard's voters (spotcheck.c).
 */
#include "broker_impl.h"
#include "sched_rules.h"
#include "log.h"
#include "store_spotcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHED_REFRESH_S 0.25        /* how often the workers' rates and the tail are looked at */
#define TAIL_MAX 256                /* leases worth a copy, kept at each refresh */
#define UNKNOWN_S 1e12              /* the time left of a lease whose holder has no measured speed */

typedef struct tail_cand {
    uint64_t lease;
    double left_s;                  /* when its holder would finish it */
} tail_cand_t;

/*
 * What a task for the shard carries: its attempts from its row when it has one (a shard that
 * came back), its descriptor, seed and method from the job.
 * 0 ready, 1 nothing to send (decided meanwhile, e.g. a spare quorum copy; or a row at a fresh
 * order position after a restart), -1 failed.
 */
static int task_shard(nq_broker_t *b, nq_job_t *j, uint64_t shard, int fresh, int check, nq_shard_row_t *row)
{
    int rc = store_shard_get(b->store, j->id, shard, row);
    if (rc < 0)
        return -1;
    if (check && (rc != 0 || row->state != NQ_SHARD_DONE))
        return 1;                       /* a check copy of a shard that is no longer done: moot */
    if (!check && rc == 0 && (fresh || (row->state != NQ_SHARD_PENDING && row->state != NQ_SHARD_LEASED)))
        return 1;
    if (rc == 1) {
        memset(row, 0, sizeof *row);
        row->state = NQ_SHARD_PENDING;
    }
    if (jobq_shard_task(j, shard, row->spec, &row->spec_len, &row->seed, row->algo, sizeof row->algo) != 0) {
        nq_log(NQ_LOG_ERROR, "lease.no_shard", "job=%llu shard=%llu", (unsigned long long)j->id,
               (unsigned long long)shard);
        return -1;
    }
    return 0;
}

/* The TASK for a lease of shard (row) of job j to p, queued; the lease, or NULL. */
static nq_lease_t *task_out(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, uint64_t shard, const nq_shard_row_t *row,
                           nq_lease_kind_t kind)
{
    nq_msg_t m = { .type = NQ_MSG_TASK };
    nq_task_t *t = &m.u.task;
    t->job = j->id;
    t->shard = shard;
    t->lease = lease_id_new(b, j->id, shard);
    t->proof = lease_id_proof(b, j->id, shard, t->lease, p->ident_hash);
    t->attempt = row->attempts;
    t->kind = (uint8_t)j->spec.kind;
    t->n = j->spec.n;
    t->spec = row->spec;
    t->spec_len = row->spec_len;
    t->seed = row->seed;
    snprintf(t->algo, sizeof t->algo, "%s", row->algo);
    t->max_steps = j->spec.max_steps;
    if (outbox_send(b, p, &m) != 0)
        return NULL;
    return leases_add(b, p, j, shard, row->attempts, t->lease, kind);
}

/* 0 sent, 1 nothing to send (see task_shard), -1 failed. A spot-check copy (check) is leased in
   memory only: the shard's row stays done, and a lost copy is simply queued again. */
static int send_task(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, const jobq_taken_t *tk, int check)
{
    nq_shard_row_t row;
    int fresh = tk->frontier > 0 || tk->back != UINT64_MAX;
    int rc = task_shard(b, j, tk->shard, fresh, check, &row);
    if (rc != 0)
        return rc;
    if (check && j->spec.kind == NQ_KIND_COUNT && spotcheck_wants_cpu(b, j, tk->shard))
        snprintf(row.algo, sizeof row.algo, "%s", NQ_TASK_CPU);
    nq_lease_t *l = task_out(b, p, j, tk->shard, &row, check ? NQ_LEASE_CHECK : NQ_LEASE_FIRST);
    if (!l)
        return -1;
    leases_price(b, l, jobq_cost(j, tk->shard));
    if (!check)
        store_shard_lease_at(b->store, j->id, tk->shard, l->id, p->hello.worker_id, tk->frontier, tk->back);
    return 0;
}

/* Under quorum a worker never gets a shard it holds or has voted on: votes must be independent. */
static int quorum_excludes(nq_broker_t *b, nq_peer_t *p, const nq_job_t *j, uint64_t shard)
{
    if (j->spec.quorum < 2)
        return 0;
    return peers_ident_holds(b, p, j->id, shard) || quorum_voted(b, j->id, shard, idents_who(b, p));
}

/* NQ_FAULT_SCHED_PLAIN=1 (test builds only): the scheduler as it was, for a benchmark's baseline
   in the same invocation: shard counts for credit, the front of the order for everyone, no copies. */
static int sched_plain(void)
{
#ifdef NQ_TEST_FAULTS
    static int plain = -1;
    if (plain < 0) {
        const char *v = getenv("NQ_FAULT_SCHED_PLAIN");
        plain = v && strcmp(v, "1") == 0;
    }
    return plain;
#else
    return 0;
#endif
}

/* ---- the workers' speeds ---- */

/* Every quarter second: the summed rate of the workers that may take work, and the fastest lane. */
static void sched_refresh(nq_broker_t *b)
{
    if (b->now - b->sched_at < SCHED_REFRESH_S && b->sched_at > 0)
        return;
    b->sched_at = b->now;
    double total = 0, best = 0;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        if (!peer_quarantined(b, p)) {
            total += p->rate;
            best = p->lane > best ? p->lane : best;
        }
    b->rate_total = total;
    b->lane_best = best;
}

static sched_worker_t sched_worker(const nq_peer_t *p)
{
    return (sched_worker_t){ p->hello.threads, p->credit, p->outstanding, p->lane, p->rate, p->out_cost,
                             peer_rtt(p) };
}

/* Whether p should get one more lease (sched_wants_more); the plain scheduler: within its credit. */
static int wants_more(const nq_peer_t *p)
{
    if (sched_plain())
        return p->outstanding < p->credit;
    sched_worker_t w = sched_worker(p);
    return sched_wants_more(&w);
}

/* From which end of j's never-leased shards p takes (sched_from_back). With no cost estimates
   (every shard 1) the ends differ only in order, and the front is kept. */
static int from_back(const nq_broker_t *b, const nq_peer_t *p, const nq_job_t *j)
{
    if (j->frontier >= j->back || !j->list || sched_plain())
        return 0;
    sched_worker_t w = sched_worker(p);
    return sched_from_back(&w, b->lane_best, b->rate_total, jobq_cost_at(j, j->frontier), jobq_work_left(j));
}

/* ---- the tail: copies of the leases that would finish last ---- */

/* When l's holder would finish it, from its lane and the lease's progress (its nodes over the
   job's learnt nodes per cost unit). A lease still out after its lane's time since it started is
   late by the difference, whatever progress it reports: progress past the shard's estimate says
   "done any moment" for ever, so a worker creeping its progress would never be copied. */
static double lease_left_s(nq_broker_t *b, const nq_lease_t *l)
{
    const nq_job_t *j = jobq_find(b, l->job);
    if (!l->peer || l->peer->lane <= 0 || !j)
        return UNKNOWN_S;
    double scale = jobq_scale(j), left = l->cost - (scale > 0 ? (double)l->progress / scale : 0);
    double left_s = (left > 0 ? left : 0) / l->peer->lane;
    double late_s = l->started_at > 0 ? b->now - l->started_at - l->cost / l->peer->lane : 0;
    return late_s > left_s ? late_s : left_s;
}

static int cand_cmp(const void *x, const void *y)
{
    double a = ((const tail_cand_t *)x)->left_s, c = ((const tail_cand_t *)y)->left_s;
    return a < c ? 1 : a > c ? -1 : 0;
}

/* Whether lease l may get a copy at all: an ordinary lease of a loaded count or enumerate job,
   none made yet, its holder connected. */
static int copyable(nq_broker_t *b, const nq_lease_t *l)
{
    const nq_job_t *j;
    return l->kind == NQ_LEASE_FIRST && !l->twin && l->peer &&
           (j = jobq_find(b, l->job)) != NULL &&
           j->spec.kind != NQ_KIND_SOLVE;
}

/* The leases that would finish last, TAIL_MAX at most: O(leases), once a refresh, and only when
   nothing is pending anywhere (the tail of the last jobs). */
static void tail_refresh(nq_broker_t *b)
{
    if (b->now - b->tail_at < SCHED_REFRESH_S && b->tail_at > 0)
        return;
    b->tail_at = b->now;
    if (!b->tail && !(b->tail = malloc(TAIL_MAX * sizeof *b->tail)))
        return;
    b->ntail = 0;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        for (nq_lease_t *l = p->leases; l; l = l->next_in_peer) {
            if (!copyable(b, l))
                continue;
            tail_cand_t c = { l->id, lease_left_s(b, l) };
            if (b->ntail < TAIL_MAX) {
                b->tail[b->ntail++] = c;
            } else {
                size_t least = 0;       /* replace the one that finishes first */
                for (size_t i = 1; i < b->ntail; i++)
                    if (b->tail[i].left_s < b->tail[least].left_s)
                        least = i;
                if (c.left_s > b->tail[least].left_s)
                    b->tail[least] = c;
            }
        }
    qsort(b->tail, b->ntail, sizeof *b->tail, cand_cmp);
}

/* Sends p a copy of the lease that would finish last, when p would finish it sooner: 1 sent. A p
   whose speed is not known yet is taken to be as fast as the holder says it is: so it copies only a
   lease late past its holder's own time, and a hoarder that took every lease before any honest
   worker delivered (none of them measured) cannot stall the job for want of a measured copier. */
static int tail_copy(nq_broker_t *b, nq_peer_t *p)
{
    if (sched_plain())
        return 0;
    tail_refresh(b);
    for (size_t i = 0; i < b->ntail; i++) {
        nq_lease_t *l = leases_find(b, b->tail[i].lease);
        if (!l || !copyable(b, l) || l->peer == p)
            continue;
        double lane = p->lane > 0 ? p->lane : l->peer->lane;
        if (lane <= 0)
            continue;                   /* neither speed is known */
        nq_job_t *j = jobq_find(b, l->job);
        double mine = l->cost / lane;
        if (!sched_copy_worth(mine, lease_left_s(b, l)))
            continue;                   /* not worth it; one further down may be (its holder slower) */
        if (peers_ident_holds(b, p, l->job, l->shard) ||
            (j->spec.quorum > 1 && quorum_voted(b, l->job, l->shard, idents_who(b, p))))
            continue;
        nq_shard_row_t row;
        if (task_shard(b, j, l->shard, 0, 0, &row) != 0 || row.state != NQ_SHARD_LEASED)
            continue;
        nq_lease_t *c = task_out(b, p, j, l->shard, &row, NQ_LEASE_COPY);
        if (!c)
            return 0;
        c->twin = l;
        l->twin = c;
        leases_price(b, c, l->cost);
        nq_log(NQ_LOG_INFO, "lease.copy", "job=%llu shard=%llu holder=%s copy=%s holder_s=%.1f copy_s=%.1f",
               (unsigned long long)j->id, (unsigned long long)l->shard, l->peer->hello.worker_id,
               p->hello.worker_id, b->tail[i].left_s, mine);
        b->tail[i].left_s = 0;          /* taken: the next idle worker looks further down */
        return 1;
    }
    return 0;
}

/* ---- handing out ---- */

typedef struct { nq_job_t *j; jobq_taken_t t; } deferred_t;

/* A spot-check copy goes to another identity than the shard's earlier voters; after this many
   such copies in a row that p may not take, p gets ordinary work this round. */
#define CHECKS_SKIPPED_MAX 8

/* Back where it came from: a check copy to the checks, anything else to the returned shards.
   Taken from an end of the order, it has no row yet and the stored frontier (back) never moved
   past it, so a restart still finds it. */
static void dispatch_undo(nq_job_t *j, const jobq_taken_t *t)
{
    if (t->check.nvoters > -2)
        jobq_push_check_copy(j, &t->check);
    else
        jobq_push(j, t->shard);
}

static void dispatch_peer(nq_broker_t *b, nq_peer_t *p)
{
    deferred_t skipped[64];
    int nskipped = 0, checks_skipped = 0;
    if (peer_quarantined(b, p))
        return;                         /* quarantined: its results failed our checks */
    while (wants_more(p)) {
        int allow_checks = checks_skipped < CHECKS_SKIPPED_MAX;
        nq_job_t *j = jobq_for(b, p, allow_checks);
        if (!j)
            break;
        deferred_t d = { j, { 0 } };
        jobq_take(j, from_back(b, p, j), allow_checks, &d.t);
        int check = d.t.check.nvoters > -2;
        int excluded = check ? spotcheck_excludes(b, p, j, &d.t.check) : quorum_excludes(b, p, j, d.t.shard);
        if (excluded == 2) {            /* a moot check copy: dropped, and it may have been the last */
            jobq_due(b, j);
            continue;
        }
        if (excluded) {
            checks_skipped += check;
            skipped[nskipped++] = d;
            if (nskipped == 64)
                break;
            continue;
        }
        int rc = send_task(b, p, j, &d.t, check);
        if (rc < 0) {
            dispatch_undo(j, &d.t);
            break;                      /* this peer cannot take messages now */
        }
        if (rc > 0)                     /* a spare copy of a decided shard: gone, and it may have */
            jobq_due(b, j);             /* been the last thing pending */
    }
    while (nskipped > 0) {              /* for the next worker, in their old order */
        deferred_t *d = &skipped[--nskipped];
        dispatch_undo(d->j, &d->t);
    }
}

/* Nothing pending anywhere: each idle worker may get a copy of a lease that would finish last.
   At most once a refresh, so 10^4 idle workers at a campaign's end cost the loop a few scans a
   second, not one per round. */
static void dispatch_tail(nq_broker_t *b)
{
    if (b->now - b->tail_at < SCHED_REFRESH_S && b->tail_at > 0)
        return;
    for (nq_peer_t *p = b->hungry, *next; p; p = next) {
        next = p->hungry_next;
        if (!peer_quarantined(b, p) && wants_more(p))
            tail_copy(b, p);
    }
}

void dispatch_run(nq_broker_t *b)
{
    if (!b->store_ok || b->stopping || !b->hungry)
        return;
    sched_refresh(b);
    if (!jobq_any_pending(b)) {
        dispatch_tail(b);
        return;
    }
    for (nq_peer_t *p = b->hungry, *next; p; p = next) {
        next = p->hungry_next;
        dispatch_peer(b, p);
    }
}

void dispatch_free(nq_broker_t *b)
{
    free(b->tail);
    b->tail = NULL;
    b->ntail = 0;
}
