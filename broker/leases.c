/*
 * Who holds what: the shards out on workers (leases), by lease id and by holder, what each
 * costs its holder and its job, and the workers' inventories (heartbeats) that show which
 * leases were lost on the way.
 */
#include "broker_impl.h"
#include "log.h"
#include "store_spotcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the lease table: a chained hash by lease id ---- */

static size_t lease_bucket(nq_broker_t *b, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (b->lease_buckets - 1);
}

nq_lease_t *leases_find(nq_broker_t *b, uint64_t id)
{
    for (nq_lease_t *l = b->lease_tab[lease_bucket(b, id)]; l; l = l->hnext)
        if (l->id == id)
            return l;
    return NULL;
}

/* Whether a lease of this kind holds its shard's row, so counts in its job's work left. */
static int lease_holds_row(nq_lease_kind_t kind)
{
    return kind == NQ_LEASE_FIRST || kind == NQ_LEASE_COPIED;
}

/*
 * The one place a lease's cost is counted (sign 1 counts l in, -1 takes it out): in its holder p
 * (leases outstanding and their cost, dispatch's budget) and in its job j (leases out; and, for a
 * lease that holds its shard's row, the job's work left: a spot-check or tail copy adds no work).
 * A sum whose last term goes is set to 0, so the additions and subtractions leave no drift.
 */
static void lease_count(const nq_lease_t *l, nq_peer_t *p, nq_job_t *j, int sign)
{
    if (p) {
        p->outstanding += sign;
        p->out_cost = p->outstanding == 0 ? 0 : p->out_cost + sign * l->cost;
    }
    if (!j)
        return;
    if (lease_holds_row(l->kind))
        j->leased_cost = sign < 0 && j->leases_out <= 1 ? 0 : j->leased_cost + sign * l->cost;
    if (sign > 0 || j->leases_out > 0)
        j->leases_out += sign;
}

static void peer_unlink_lease(nq_lease_t *l)
{
    nq_peer_t *p = l->peer;
    if (!p)
        return;
    for (nq_lease_t **pp = &p->leases; *pp; pp = &(*pp)->next_in_peer)
        if (*pp == l) {
            *pp = l->next_in_peer;
            break;
        }
    lease_count(l, p, NULL, -1);
    l->peer = NULL;
}

void leases_attach(nq_broker_t *b, nq_lease_t *l, nq_peer_t *p)
{
    nq_peer_t *old = l->peer;
    peer_unlink_lease(l);
    if (old && old != p)
        hungry_update(b, old);
    l->peer = p;
    l->next_in_peer = p->leases;
    p->leases = l;
    lease_count(l, p, NULL, 1);
    l->progress_at = b->now;
    l->sync = p->sync_sent;             /* only a later token can prove it lost */
    hungry_update(b, p);
}

nq_lease_t *leases_add(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, uint64_t shard, uint32_t attempt, uint64_t id,
                       nq_lease_kind_t kind)
{
    nq_lease_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->id = id;
    l->job = j->id;
    l->shard = shard;
    l->attempt = attempt;
    l->kind = kind;
    l->progress_at = l->sent_at = b->now;
    size_t h = lease_bucket(b, id);
    l->hnext = b->lease_tab[h];
    b->lease_tab[h] = l;
    b->nleases++;
    lease_count(l, NULL, j, 1);
    if (p)
        leases_attach(b, l, p);
    return l;
}

void leases_price(nq_broker_t *b, nq_lease_t *l, double cost)
{
    nq_job_t *j = jobq_find(b, l->job);
    lease_count(l, l->peer, j, -1);
    l->cost = cost;
    lease_count(l, l->peer, j, 1);
}

void leases_set_kind(nq_broker_t *b, nq_lease_t *l, nq_lease_kind_t kind)
{
    if (kind == NQ_LEASE_COPIED)
        l->copied_at = b->now;
    if (lease_holds_row(kind) == lease_holds_row(l->kind)) {
        l->kind = kind;                 /* costs the same */
        return;
    }
    nq_job_t *j = jobq_find(b, l->job);
    lease_count(l, NULL, j, -1);
    l->kind = kind;
    lease_count(l, NULL, j, 1);
}

void leases_remove(nq_broker_t *b, nq_lease_t *l)
{
    nq_peer_t *holder = l->peer;
    peer_unlink_lease(l);
    if (holder)
        hungry_update(b, holder);
    for (nq_lease_t **pp = &b->lease_tab[lease_bucket(b, l->id)]; *pp; pp = &(*pp)->hnext)
        if (*pp == l) {
            *pp = l->hnext;
            break;
        }
    lease_count(l, NULL, jobq_find(b, l->job), -1);
    if (l->twin) {                      /* the copy carries on alone: it is the shard's lease now */
        l->twin->twin = NULL;
        if (l->twin->kind == NQ_LEASE_COPY)
            leases_set_kind(b, l->twin, NQ_LEASE_FIRST);
    }
    b->nleases--;
    free(l);
}

void leases_cancel(nq_broker_t *b, nq_lease_t *l, const char *why)
{
    nq_peer_t *p = l->peer;
    if (p) {
        nq_msg_t m = { .type = NQ_MSG_CANCEL };
        m.u.cancel.job = l->job;
        m.u.cancel.lease = l->id;
        outbox_send(b, p, &m);
    }
    nq_log(NQ_LOG_INFO, "lease.cancel", "job=%llu shard=%llu worker=%s reason=\"%s\"", (unsigned long long)l->job,
           (unsigned long long)l->shard, p ? p->hello.worker_id : "-", why);
    leases_remove(b, l);
}

/* The check a tail copy's result waited for was its holder's result, or a third identity's. A
   holder gone unheard (it died, stalled, or lost its lease) is no threat the check guards against:
   without spot-checks the result stands as any first result does, so a job whose last other
   identity went away does not wait for ever. A dispute already open stays open. */
static void copy_alone(nq_broker_t *b, uint64_t job, uint64_t shard)
{
    nq_job_t *j = jobq_find(b, job);
    if (!j || j->spec.verify_ppm > 0 || !b->store_ok)
        return;
    txn_begin(b);
    if (store_shard_copy_alone(b->store, job, shard) == 1 && j->checks_open > 0) {
        j->checks_open--;
        jobq_due(b, j);
    }
}

/* The shard goes back to pending, or to FAILED when it has used up its attempts; but while the
   other lease of a tail copy pair is out, that one carries the shard on: nothing is charged (a
   lost copy costs its shard nothing) and nothing goes back. */
void leases_release(nq_broker_t *b, nq_lease_t *l, int count_attempt, const char *why)
{
    uint64_t job = l->job, shard = l->shard;
    nq_lease_kind_t kind = l->kind;
    if (l->twin) {
        if (why)
            nq_log(NQ_LOG_INFO, "lease.release", "job=%llu shard=%llu reason=\"%s\" twin=out",
                   (unsigned long long)job, (unsigned long long)shard, why);
        leases_remove(b, l);
        return;
    }
    int64_t who = count_attempt && l->peer ? idents_who(b, l->peer) : 0;   /* charged once per identity */
    leases_remove(b, l);
    if (kind == NQ_LEASE_COPIED) {                       /* a copy's result holds the shard: it stands alone now */
        if (why)
            nq_log(NQ_LOG_INFO, "lease.release", "job=%llu shard=%llu reason=\"%s\" copy=stands",
                   (unsigned long long)job, (unsigned long long)shard, why);
        copy_alone(b, job, shard);
        return;
    }
    if (kind == NQ_LEASE_CHECK) {       /* a spot-check copy: the shard is done, the copy waits again */
        nq_job_t *j = jobq_find(b, job);
        if (j)
            jobq_push_check(j, shard);
        return;
    }
    int failed = 0;
    store_shard_release_by(b->store, job, shard, count_attempt, who, &failed);
    nq_job_t *j = jobq_find(b, job);
    if (why)                            /* NULL: the caller logs one line for many */
        nq_log(NQ_LOG_INFO, "lease.release", "job=%llu shard=%llu reason=\"%s\" failed=%d",
               (unsigned long long)job, (unsigned long long)shard, why, failed);
    if (!j)
        return;
    if (failed)
        j->shards_failed++;
    else
        jobq_push(j, shard);
    jobq_due(b, j);                     /* the loop settles it: its last shard may have failed */
}

/* ---- a worker's inventory ---- */

/* Releases p's leases sent before token `sync` that the heartbeat `stamp` did not list, with one
   log line for all of them (a worker that drops 2,048 TASKs a heartbeat must not flood the log).
   A release may end a job and free other leases with it, so each batch is found again by id. */
static void release_unlisted(nq_broker_t *b, nq_peer_t *p, uint32_t stamp, uint64_t sync)
{
    enum { BATCH = 64 };
    uint64_t lost[BATCH];
    size_t n, released = 0;
    do {
        n = 0;
        for (nq_lease_t *l = p->leases; l && n < BATCH; l = l->next_in_peer)
            if (l->listed != stamp && l->sync < sync)
                lost[n++] = l->id;
        for (size_t i = 0; i < n; i++) {
            nq_lease_t *l = leases_find(b, lost[i]);
            if (l && l->peer == p) {
                leases_release(b, l, 0, NULL);
                released++;
            }
        }
    } while (n == BATCH);
    b->stats.leases_lost += released;
    if (released)
        nq_log(NQ_LOG_INFO, "lease.lost", "worker=%s leases=%zu reason=\"sent before the token it "
               "echoed, missing from its heartbeat\"", p->hello.worker_id, released);
}

/*
 * A worker's HEARTBEAT lists every lease it holds (queued, running, and finished but not yet
 * acknowledged) and echoes the last sync token it read from us.
 *
 * A TASK can be lost on its way. When a worker's connection is replaced (it gave up on us after
 * we were silent past its liveness window, or ZeroMQ reconnected under it), what was queued on
 * the old one is gone while we still count the lease, and the worker's credit with it. Such a
 * lease never reports progress, so the stall timer never takes it back: the worker idles with
 * its credit full of leases it never saw, and the job never ends (test_spotcheck saw this when
 * a loaded CI host stalled the broker for over 0.6 s).
 *
 * Messages on one connection arrive in order. So a lease sent before the token the worker echoes
 * either reached it, and is listed (or its RESULT, sent before this heartbeat, was read before
 * it), or was lost. Lost ones go back to pending without costing the shard an attempt: nobody
 * did anything wrong. No clock is involved, so a slow worker or a stalled broker cannot make an
 * honest lease look lost. O(items + the peer's leases) per heartbeat.
 */
/*
 * p's rate in cost units a second: the cost of what it delivered plus the progress of what it
 * holds (its nodes over the job's learnt nodes per cost unit), sampled at its heartbeats and
 * smoothed over RATE_TAU_S, so a worker whose shards take minutes has a rate long before its
 * first result. Its own word, like its progress: a worker that overstates it only gets more work
 * to answer for (the stall rule and quarantine).
 */
#define RATE_TAU_S 5.0
#define RATE_MIN_DT_S 0.5

static void peer_rate_sample(nq_broker_t *b, nq_peer_t *p, double progress)
{
    double cum = p->cost_done + progress, dt = b->now - p->rate_at;
    if (p->rate_at == 0) {
        p->rate_at = b->now;
        p->rate_cum = cum;
        return;
    }
    if (dt < RATE_MIN_DT_S)
        return;
    double sample = cum > p->rate_cum ? (cum - p->rate_cum) / dt : 0;
    double w = dt / (dt + RATE_TAU_S);
    p->rate = p->rate > 0 ? p->rate + w * (sample - p->rate) : sample;
    p->rate_at = b->now;
    p->rate_cum = cum;
}

/*
 * p's lane as the broker sees it: on each lease it has watched move for LANE_SEEN_MIN_S, the
 * progress (in cost units) over that time; the best of them is how fast p counts one shard now.
 * A lane far above that (a worker that answered small shards at once and reports tiny elapsed
 * times, then crawls through the large ones it was given for it) comes down to what is seen, so
 * its leases are projected to end late and become the tail's first copies. Only ever down: the
 * progress is the worker's word, and its results raise the lane again (results.c).
 */
#define LANE_SEEN_MIN_S 2.0            /* two default heartbeats: less says little about a shard */
#define FAR_BEHIND 0.25                /* seen below this share of its lane: it is not that fast */

static void peer_lane_seen(nq_broker_t *b, nq_peer_t *p, double best)
{
    if (best < 0 || p->lane <= 0 || best >= FAR_BEHIND * p->lane)
        return;
    if (ratelog_allow(b))
        nq_log(NQ_LOG_INFO, "peer.behind", "worker=%s lane=%.3g seen=%.3g", p->hello.worker_id, p->lane,
               best);
    p->lane = best;
}

void leases_heartbeat(nq_broker_t *b, nq_peer_t *p, const nq_heartbeat_t *hb)
{
    uint32_t stamp = ++p->hb_stamp;
    double progress = 0, seen = -1;
    for (uint32_t i = 0; i < hb->count; i++) {
        nq_lease_t *l = leases_find(b, hb->items[i].lease);
        if (!l)
            continue;                   /* re-leased elsewhere meanwhile: its result is still compared */
        if (!l->peer)
            leases_attach(b, l, p);     /* re-armed after a broker restart: the owner is back */
        else if (l->peer != p)
            continue;                   /* someone else's: a heartbeat cannot take a lease */
        l->listed = stamp;
        if (hb->items[i].progress != l->progress) {
            l->progress = hb->items[i].progress;
            l->progress_at = b->now;
            if (l->started_at == 0)
                l->started_at = b->now;
        }
        nq_job_t *j = l->progress ? jobq_find(b, l->job) : NULL;
        double scale = j ? jobq_scale(j) : 0;
        if (scale > 0) {
            double done = (double)l->progress / scale;
            done = done < l->cost ? done : l->cost;
            progress += done;
            double ran = b->now - l->started_at;
            if (ran >= LANE_SEEN_MIN_S && done / ran > seen)
                seen = done / ran;
        }
    }
    peer_rate_sample(b, p, progress);
    peer_lane_seen(b, p, seen);
    if (p->sync_timed && hb->sync >= p->sync_timed && hb->sync <= p->sync_sent) {
        if (hb->sync == p->sync_timed)  /* the worker echoes a new token at once */
            link_sample(&p->link, b->now - p->sync_timed_at);
        p->sync_timed = 0;              /* a later one echoed: this one was read late, no sample */
    }
    if (hb->sync == 0 || hb->sync > p->sync_sent || hb->count == NQ_MAX_HEARTBEAT_ITEMS)
        return;                         /* no token echoed, one we never sent, or a list cut short */
    release_unlisted(b, p, stamp, hb->sync);
}

void leases_cancel_job(nq_broker_t *b, uint64_t job)
{
    for (nq_peer_t *p = b->peers; p; p = p->next) {
        int held = 0;
        for (nq_lease_t *l = p->leases, *ln; l; l = ln) {
            ln = l->next_in_peer;
            if (l->job == job) {
                leases_remove(b, l);
                held = 1;
            }
        }
        if (held) {
            nq_msg_t m = { .type = NQ_MSG_CANCEL };
            m.u.cancel.job = job;
            outbox_send(b, p, &m);
        }
    }
    for (size_t h = 0; h < b->lease_buckets; h++)     /* re-armed leases with no owner yet */
        for (nq_lease_t *l = b->lease_tab[h], *ln; l; l = ln) {
            ln = l->hnext;
            if (l->job == job)
                leases_remove(b, l);
        }
}

void leases_free_all(nq_broker_t *b)
{
    if (!b->lease_tab)
        return;
    for (size_t h = 0; h < b->lease_buckets; h++)
        while (b->lease_tab[h]) {
            nq_lease_t *l = b->lease_tab[h];
            b->lease_tab[h] = l->hnext;
            free(l);
        }
}
