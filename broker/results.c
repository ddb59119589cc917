/*
 * Results: take what a worker sent (checked by result_check.c, its solution assembled and
 * verified by solutions.c), store it inside the loop's open transaction, and acknowledge only
 * after that transaction has committed (invariant 2: commit, then acknowledge). Many results
 * share one commit, so a thousand workers do not become a thousand fsyncs a second.
 *
 * If a commit fails (disk full, I/O error), nothing of the group is in the
 * DB: the broker keeps the group in memory, stops leasing and acknowledging,
 * says so, and tries the same group again every second.
 */
#include "broker_impl.h"
#include "clock.h"
#include "log.h"
#include "solstore.h"
#include "verifier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int results_due(nq_broker_t *b, double now)
{
    if (!b->store_ok)
        return now >= b->store_retry_at;
    if (!txn_dirty(b))
        return 0;
    return b->ngroup >= b->cfg.group_max || now - b->txn_since >= b->cfg.group_ms / 1000.0;
}

/* A worker's error message, from the wire: printable ASCII only (anything else as '?'), so it
   can go into a log line, the store and `nq status` as it is. */
const char *results_error_text(const nq_result_t *r, char *buf, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < r->payload_len && n + 1 < len; i++) {
        unsigned char c = r->payload[i];
        buf[n++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
    }
    buf[n] = '\0';
    return buf;
}

static void reject(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, const char *why)
{
    b->stats.results_rejected++;
    nq_log(NQ_LOG_WARN, "result.rejected", "job=%llu shard=%llu worker=%s reason=\"%s\"",
           (unsigned long long)r->job, (unsigned long long)r->shard, p->hello.worker_id, why);
    store_worker_flag(b->store, p->hello.worker_id);
    peer_misbehaved(b, p, why);
}

static void send_ack(nq_broker_t *b, const char *rid, size_t rid_len, const nq_result_t *r)
{
    nq_peer_t *p = rid_len ? peers_find(b, rid, rid_len) : NULL;
    if (!p)
        return;                         /* gone: it resends from its outbox after reconnecting */
    nq_msg_t m = { .type = NQ_MSG_ACK };
    m.u.ack.job = r->job;
    m.u.ack.shard = r->shard;
    m.u.ack.lease = r->lease;
    outbox_send(b, p, &m);
}

static int group_put(nq_broker_t *b, nq_pending_result_t *e)
{
    const char *hash = e->sol_hash[0] ? e->sol_hash : NULL;
    const char *path = e->sol_path[0] ? e->sol_path : NULL;
    if (e->spot_vote)
        e->outcome = spotcheck_stage(b, e);
    else if (e->dispute || e->quorum_vote)
        e->outcome = quorum_stage(b, e);
    else
        e->outcome = store_result_put_by(b->store, &e->r, e->worker, hash, path, &e->by);
    return e->outcome < 0 ? -1 : 0;
}

static nq_pending_result_t *group_append(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r)
{
    if (b->ngroup == b->group_cap) {
        size_t cap = b->group_cap ? b->group_cap * 2 : 256;
        nq_pending_result_t *g = realloc(b->group, cap * sizeof *g);
        if (!g)
            return NULL;
        b->group = g;
        b->group_cap = cap;
    }
    nq_pending_result_t *e = &b->group[b->ngroup];
    memset(e, 0, sizeof *e);
    e->r = *r;
    if (r->payload_len) {
        e->payload = malloc(r->payload_len);
        if (!e->payload)
            return NULL;
        memcpy(e->payload, r->payload, r->payload_len);
        e->r.payload = e->payload;
    }
    snprintf(e->worker, sizeof e->worker, "%s", p->hello.worker_id);
    snprintf(e->ident, sizeof e->ident, "%s", p->ident);
    memcpy(e->rid, p->rid, p->rid_len);
    e->rid_len = p->rid_len;
    return e;
}

/*
 * Under quorum a result is a vote: only a decided shard goes on to the store as a result.
 * Returns 0 when e should be stored now, 1 when it was taken otherwise: into the group as a vote
 * or a dispute (acknowledged after the commit), acknowledged as a resend, or dropped unanswered.
 */
static int quorum_gate(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, nq_pending_result_t *e)
{
    int rc = quorum_vote(b, j, e);
    if (rc == 1)
        return 0;
    if (rc == 0 || rc == 2) {
        b->ngroup++;
        if (b->store_ok)
            group_put(b, e);
        return 1;
    }
    if (rc == -1)
        send_ack(b, p->rid, p->rid_len, &e->r);   /* a resend of a vote: it is in already */
    free(e->payload);
    return 1;
}

/* A decided quorum shard's late vote is compared with the stored result like any later result:
   it confirms or is evidence (store.h), never a vote. */
static int shard_decided(nq_broker_t *b, uint64_t job, uint64_t shard)
{
    nq_shard_row_t row;
    return store_shard_get(b->store, job, shard, &row) == 0 &&
           (row.state == NQ_SHARD_DONE || row.state == NQ_SHARD_CONFLICT);
}

/* A worker that says it failed: the shard may be charged an attempt (so a shard that fails on
   every worker ends FAILED instead of circling for ever), but only for an error the connection
   sent before it paused the job (PAUSED_JOBS: one worker that fails everything must not fail the
   job), only for its identity's first error in an hour, and only once per shard and identity
   (the store): a shard fails when distinct identities failed it. The job keeps the message. */
static void result_error(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, nq_lease_t *l)
{
    char text[200];
    results_error_text(r, text, sizeof text);
    b->stats.results_rejected++;
    uint64_t lease = l ? l->id : 0;
    int quarantined = 0;
    int charged = peer_job_failed(p, r->job, b->now) &&
                  ident_failed(b, p->rec, p->hello.worker_id, text, &quarantined);
    if (quarantined)
        peers_quarantine(b, p->rec);
    l = lease ? leases_find(b, lease) : NULL;   /* a quarantine gave back all it held, uncharged */
    charged = charged && l != NULL;
    nq_log(NQ_LOG_WARN, "result.error", "job=%llu shard=%llu worker=%s charged=%d error=\"%s\"",
           (unsigned long long)r->job, (unsigned long long)r->shard, p->hello.worker_id, charged, text);
    store_job_note_error(b->store, r->job, r->shard, text);
    send_ack(b, p->rid, p->rid_len, r);
    if (l)
        leases_release(b, l, charged, "worker error");
}

/*
 * What a result teaches the scheduler (dispatch.c): the sender's lane (cost units a second on one
 * shard), what it delivered, and, from results whose nodes are the CPU kernels' (the unit a job's
 * costs estimate), the job's nodes per cost unit. The time is the longer of the elapsed time it
 * reports and the time the broker saw the lease run (from its first progress to its result): its
 * own word can make it look slower, never faster than the broker saw it. Both ends of that time are
 * messages from the worker, so its link's delay (nq_link_t) is in neither, and a lease's wait in the
 * worker's queue (no progress yet) is not counted against it.
 */
#define LANE_WEIGHT 0.3

static void results_learn(nq_broker_t *b, nq_peer_t *p, const nq_lease_t *l, const nq_result_t *r)
{
    double s = (double)r->elapsed_us / 1e6, seen = l->started_at > 0 ? b->now - l->started_at : 0;
    if (seen > s)
        s = seen;
    if (l->cost <= 0)
        return;
    if (s >= 1e-3) {
        double lane = l->cost / s;
        p->lane = p->lane > 0 ? p->lane + LANE_WEIGHT * (lane - p->lane) : lane;
        p->lane_shown = p->lane_shown > 0 ? p->lane_shown + LANE_WEIGHT * (lane - p->lane_shown) : lane;
    }
    p->cost_done += l->cost;
    nq_job_t *j = jobq_find(b, r->job);
    if (j && r->nodes_kind == NQ_NODES_CPU)
        jobq_calibrate(j, l->cost, r->nodes);
}

static void result_accept(nq_broker_t *b, nq_peer_t *p, nq_pending_result_t *e, nq_lease_t *l);

/* A verdict: refused like any result that fails the checks, or on into the group. */
static void on_verified(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, nq_verify_t *d)
{
    nq_lease_t *l = leases_find(b, r->lease);
    if (l && (l->job != r->job || l->shard != r->shard))
        l = NULL;
    if (!d->ok) {
        send_ack(b, p->rid, p->rid_len, r);
        if (l)
            leases_release(b, l, 0, "result rejected");
        reject(b, p, r, d->why);
        return;
    }
    nq_pending_result_t *e = group_append(b, p, r);
    if (!e)
        return;
    snprintf(e->sol_hash, sizeof e->sol_hash, "%s", d->hash);
    snprintf(e->sol_path, sizeof e->sol_path, "%s", d->path);
    if (!d->path[0] && (e->payload = solstore_pack(d->cols, d->n)) != NULL) {   /* small: inline */
        e->r.payload = e->payload;
        e->r.payload_len = d->n * 4;
    }
    result_accept(b, p, e, l);
}

/* A sender gone meanwhile (or a new session on its connection) gets nothing: it sends the result
   again. */
void results_collect_verified(nq_broker_t *b)
{
    nq_verify_t d;
    nq_result_t r;
    nq_peer_t *p;
    int rc;
    while ((rc = solutions_verdict(b, &d, &r, &p)) != 0) {
        if (rc == 1) {
            txn_begin(b);
            if (p)
                on_verified(b, p, &r, &d);
        }
        free(d.cols);
    }
}

void results_on_result(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r)
{
    if (!lease_id_authentic(b, r->job, r->shard, r->lease, r->proof, p->ident_hash)) {
        b->stats.messages_bad++;        /* not issued by us to this identity: not even a wrong result */
        if (ratelog_allow(b))
            nq_log(NQ_LOG_WARN, "result.forged", "job=%llu shard=%llu worker=%s", (unsigned long long)r->job,
                   (unsigned long long)r->shard, p->hello.worker_id);
        peer_misbehaved(b, p, "forged lease");
        return;
    }
    nq_lease_t *l = leases_find(b, r->lease);
    if (l && (l->job != r->job || l->shard != r->shard))
        l = NULL;
    if (r->status == NQ_RES_ERROR) {
        result_error(b, p, r, l);
        return;
    }
    if (r->kind == NQ_KIND_SOLVE && solutions_verifying(b, r->lease))
        return;                         /* a resend while its solution is being checked: that answers it */
    nq_solbuf_t *sol = solutions_take(b, r);
    if (!sol && !l && r->kind == NQ_KIND_SOLVE && r->status == NQ_RES_OK &&
        shard_decided(b, r->job, r->shard)) {
        /* A resend that crossed its ACK: its parts came while the first copy was checked and were
           dropped, and that copy decided the shard. Nothing to judge (without parts it can store
           nothing); refusing it struck an honest worker and warned in `nq run solve 100000000`. */
        send_ack(b, p->rid, p->rid_len, r);
        return;
    }
    if (sol && solutions_verify_off_loop(b, p, r, sol))
        return;                         /* its verdict comes back through results_collect_verified */
    nq_pending_result_t *e = group_append(b, p, r);
    if (!e) {
        solutions_free(b, sol);
        nq_log(NQ_LOG_ERROR, "result.oom", "job=%llu shard=%llu", (unsigned long long)r->job,
               (unsigned long long)r->shard);
        return;                         /* not ACKed: the worker will send it again */
    }
    char why[300];
    int ok = result_check(b, e, sol, why, sizeof why);
    solutions_free(b, sol);
    if (ok == 1) {                      /* not checkable yet: unacknowledged, the worker resends */
        free(e->payload);
        b->stats.results_deferred++;
        return;
    }
    if (ok != 0) {
        free(e->payload);
        send_ack(b, p->rid, p->rid_len, r);   /* taken and refused: it must not come back */
        if (l)                          /* before reject(): quarantine releases what the peer holds */
            leases_release(b, l, 0, "result rejected");   /* the worker was wrong, not the shard */
        reject(b, p, r, why);
        return;
    }
    result_accept(b, p, e, l);
}

/*
 * A tail copy that delivers before its holder decides nothing by arriving first: its result is
 * stored (so the job's tail does not wait on a slow holder) but marked as a copy's and wanting a
 * check, which the holder's own result (its lease is not cancelled) or a third identity's check
 * copy gives, whichever comes first; a disagreement is a dispute that a third identity settles
 * (spotcheck.c, the one vote). So a liar with a claimed speed cannot decide a shard by copying it,
 * and an honest holder is never cancelled unheard, nor made evidence against itself. Under a
 * quorum every result is a vote already. Returns 1 for such a copy's result.
 */
static int copy_first(nq_broker_t *b, nq_lease_t *l)
{
    nq_job_t *j = jobq_find(b, l->job);
    nq_lease_t *holder = l->twin;
    if (l->kind != NQ_LEASE_COPY || !holder || !j || j->spec.quorum > 1)
        return 0;
    leases_set_kind(b, holder, NQ_LEASE_COPIED);   /* its result is a check vote now */
    return 1;
}

/* A result that passed every check goes on: its lease ends (and its twin's, unless a copy
   delivered first), then quorum or spot-checks or straight into the group; committed, then
   acknowledged. */
static void result_accept(nq_broker_t *b, nq_peer_t *p, nq_pending_result_t *e, nq_lease_t *l)
{
    const nq_result_t *r = &e->r;
    int by_copy = 0, copied = 0;
    if (l) {
        nq_lease_t *twin = l->twin;
        by_copy = copy_first(b, l);
        copied = l->kind == NQ_LEASE_COPIED;
        results_learn(b, p, l, r);
        leases_remove(b, l);            /* its credit is free again at once */
        if (twin && !by_copy)           /* the holder delivered first: the copy stops */
            leases_cancel(b, twin, "the other lease of its shard delivered first");
    }
    if (__builtin_add_overflow(p->nodes_done, r->nodes, &p->nodes_done))
        p->nodes_done = UINT64_MAX;     /* saturates: a claimed 2^64-1 must not wrap its nodes/s small */
    txn_begin(b);
    e->by.who = idents_who(b, p);        /* the store tells a resend from a confirmation by it */
    nq_job_t *j = jobq_find(b, r->job);
    e->by.unloaded = j == NULL;         /* no quorum or check runs for it: it may decide nothing */
    if (j && j->spec.quorum > 1 && !shard_decided(b, r->job, r->shard) && quorum_gate(b, p, j, e) != 0)
        return;
    txn_begin(b);
    int checked = j && (j->spec.verify_ppm > 0 || j->checks_open > 0 || copied || by_copy);
    if (checked && b->store_ok && spotcheck_classify(b, p, j, e) < 0) {
        send_ack(b, p->rid, p->rid_len, &e->r);   /* its vote is in already: a resend */
        free(e->payload);
        return;
    }
    if (by_copy && !e->spot_vote)
        e->by.verify = e->by.copy = 1;
    b->ngroup++;
    if (b->store_ok && group_put(b, e) != 0)
        nq_log(NQ_LOG_ERROR, "store.put", "job=%llu shard=%llu", (unsigned long long)r->job,
               (unsigned long long)r->shard);
}

/* A conflict or a new solution: the job's counters are re-read from the store once the whole
   group is applied (the committed state already includes every result of the group). */
static int needs_recount(const nq_pending_result_t *e)
{
    return e->outcome == NQ_PUT_CONFLICT || e->outcome == NQ_PUT_CHECKED ||
           (e->r.kind == NQ_KIND_SOLVE && e->outcome == NQ_PUT_NEW && e->r.status == NQ_RES_OK);
}

static void job_recount(nq_broker_t *b, nq_job_t *j)
{
    nq_job_row_t row;
    uint64_t solutions;
    if (store_job_get(b->store, j->id, &row) == 0) {
        j->shards_done = row.shards_done;
        j->shards_conflict = row.shards_conflict;
    }
    if (j->spec.kind == NQ_KIND_SOLVE && store_job_solutions(b->store, j->id, &solutions) == 0)
        j->solutions_found = solutions;
}

/* A result that disagreed with a decided shard: the answer stands, the sender pays. */
static void result_evidence(nq_broker_t *b, const nq_pending_result_t *e)
{
    b->stats.results_evidence++;
    nq_log(NQ_LOG_WARN, "result.evidence", "job=%llu shard=%llu worker=%s reason=\"differs from the "
           "decided result, which stands\"", (unsigned long long)e->r.job, (unsigned long long)e->r.shard,
           e->worker);
    nq_ident_t *rec = idents_find(b, e->ident);
    if (ident_strike(b, rec, e->worker, "a result against a decided shard"))
        peers_quarantine(b, rec);
}

/* After a commit: counters, ACKs, finished jobs. */
static void group_apply(nq_broker_t *b)
{
    for (size_t i = 0; i < b->ngroup; i++) {
        nq_pending_result_t *e = &b->group[i];
        nq_job_t *j = jobq_find(b, e->r.job);
        b->stats.results_total++;
        if (e->outcome == NQ_PUT_NEW && j)
            j->shards_done++;
        if (e->outcome == NQ_PUT_CONFIRMED || e->outcome == NQ_PUT_RESENT)
            b->stats.results_duplicate++;
        if (e->outcome == NQ_PUT_EVIDENCE)
            result_evidence(b, e);
        if (e->outcome == NQ_PUT_UNDECIDABLE) {
            b->stats.results_undecidable++;
            nq_log(NQ_LOG_INFO, "result.undecidable", "job=%llu shard=%llu worker=%s reason=\"the job is not "
                   "running: a result for an undecided shard is not kept\"", (unsigned long long)e->r.job,
                   (unsigned long long)e->r.shard, e->worker);
        }
        if (j)                          /* checks: spot-checks', and tail copies' */
            spotcheck_after_commit(b, j, e);
        if (e->outcome == NQ_PUT_CONFLICT) {
            b->stats.results_conflict++;
            nq_log(NQ_LOG_WARN, "result.conflict", "job=%llu shard=%llu worker=%s",
                   (unsigned long long)e->r.job, (unsigned long long)e->r.shard, e->worker);
        }
        send_ack(b, e->rid, e->rid_len, &e->r);
        free(e->payload);
    }
    uint64_t last_job = 0;
    for (size_t i = 0; i < b->ngroup; i++)
        if (needs_recount(&b->group[i]) && b->group[i].r.job != last_job) {
            last_job = b->group[i].r.job;
            nq_job_t *j = jobq_find(b, last_job);
            if (j)
                job_recount(b, j);
        }
    last_job = 0;
    for (size_t i = 0; i < b->ngroup; i++) {   /* may free jobs: after all counters moved */
        if (b->group[i].r.job == last_job)
            continue;
        last_job = b->group[i].r.job;
        nq_job_t *j = jobq_find(b, last_job);
        if (j)
            jobs_check_done(b, j);
    }
    b->ngroup = 0;
}

void results_flush(nq_broker_t *b)
{
    char err[300];
    if (!b->store_ok) {                 /* retrying a group that failed to commit */
        b->store_ok = 1;
        txn_begin(b);
        nq_log(NQ_LOG_INFO, "store.retry", "held=%zu", b->ngroup);
        for (size_t i = 0; i < b->ngroup && b->txn_open; i++)
            group_put(b, &b->group[i]);
    }
    if (!b->txn_open) {
        b->store_ok = b->ngroup == 0;
        b->store_retry_at = b->now + 1;
        return;
    }
    if (txn_db_check(b) != 0) {      /* its file is gone: a commit would go nowhere, an ACK lie */
        store_rollback(b->store);
        b->txn_open = 0;
        return;
    }
    double t0 = nq_mono();                 /* commit latency: the real clock, not the round's */
    int rc = store_commit(b->store, err, sizeof err);
    b->txn_open = 0;
    if (rc != 0) {
        if (b->store_ok)
            nq_log(NQ_LOG_ERROR, "store.commit_failed", "reason=\"%s\" held=%zu action=\"no leasing and "
                   "no ACKs until it commits; retrying every second\"", err, b->ngroup);
        b->store_ok = 0;
        b->store_retry_at = b->now + 1;
        return;
    }
    double dt = nq_mono() - t0;
    b->stats.commits++;
    b->stats.commit_seconds_sum += dt;
    if (dt > b->stats.commit_seconds_max)
        b->stats.commit_seconds_max = dt;
    group_apply(b);
}

void results_free_all(nq_broker_t *b)
{
    solutions_free_all(b);
    for (size_t i = 0; i < b->ngroup; i++)
        free(b->group[i].payload);
    free(b->group);
    b->group = NULL;
    b->ngroup = 0;
}
