/*
 * Who holds what: the connected workers (peers), the shards they hold
 * (leases), credit-based dispatch, and the liveness rules that take shards
 * back from workers that died, disconnected or stopped making progress.
 */
#include "broker_impl.h"
#include "log.h"
#include "siphash.h"
#include "store_spotcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- peers ---- */

#define PEER_BUCKETS (1u << 14)   /* chains of ~1 at 10^4 workers; 128 KB of table */

/*
 * Every message finds its peer by routing id, so the lookup is a hash, not a walk over 10^4
 * peers. The hash is keyed (SipHash under the broker's secret): routing ids are chosen by the
 * peers, and an unkeyed hash would let a hostile one pile every peer into one chain.
 */
static size_t peer_bucket(const nq_broker_t *b, const void *rid, size_t len)
{
    return (size_t)siphash24(b->lease_key, rid, len) & (PEER_BUCKETS - 1);
}

/* The chain of peers whose identity hashes like ident_hash (a keyed hash: see peer_bucket). */
static nq_peer_t **ident_chain(nq_broker_t *b, uint64_t ident_hash)
{
    return &b->ident_tab[ident_hash & (PEER_BUCKETS - 1)];
}

static void ident_unlink(nq_broker_t *b, nq_peer_t *p)
{
    if (!p->ident[0])
        return;                         /* not filed yet */
    for (nq_peer_t **pp = ident_chain(b, p->ident_hash); *pp; pp = &(*pp)->ihnext)
        if (*pp == p) {
            *pp = p->ihnext;
            break;
        }
}

void peers_identify(nq_broker_t *b, nq_peer_t *p, const nq_hello_t *h, const char *key)
{
    ident_unlink(b, p);
    nq_ident_t *old = p->rec;
    p->rec = NULL;
    p->who = 0;                         /* a new session is a new identity without keys */
    p->outvoted = 0;
    p->hello = *h;
    snprintf(p->pubkey, sizeof p->pubkey, "%s", key);
    if (key[0]) {
        snprintf(p->ident, sizeof p->ident, "%s", key);
    } else {                            /* no keys: the session is who it is */
        char sess[NQ_STR_MAX + 24];
        snprintf(sess, sizeof sess, "%016llx %s", (unsigned long long)h->nonce, h->worker_id);
        snprintf(p->ident, sizeof p->ident, "session:%016llx",
                 (unsigned long long)lease_id_ident_hash(b, sess));
    }
    p->ident_hash = lease_id_ident_hash(b, p->ident);
    nq_peer_t **c = ident_chain(b, p->ident_hash);
    p->ihnext = *c;
    *c = p;
    p->rec = idents_take(b, p->ident, p->ident_hash);
    idents_inherit(p->rec, old);
    idents_release(b, old);
}

int64_t peers_who(nq_broker_t *b, nq_peer_t *p)
{
    nq_identity_t rec;
    if (p->who == 0 && store_identity(b->store, p->ident, p->hello.worker_id, &rec) == 0) {
        p->who = rec.id;
        p->outvoted = rec.outvoted > 0;
    }
    return p->who;
}

nq_peer_t *peers_find(nq_broker_t *b, const void *rid, size_t len)
{
    if (!b->peer_tab)
        return NULL;
    for (nq_peer_t *p = b->peer_tab[peer_bucket(b, rid, len)]; p; p = p->hnext)
        if (p->rid_len == len && memcmp(p->rid, rid, len) == 0)
            return p;
    return NULL;
}

nq_peer_t *peers_add(nq_broker_t *b, const void *rid, size_t len, const nq_hello_t *h)
{
    if (len > sizeof ((nq_peer_t *)0)->rid)
        return NULL;
    nq_peer_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->rid, rid, len);
    p->rid_len = len;
    p->hello = *h;
    p->last_recv = p->first_seen = b->now;
    if (!b->peer_tab) {                 /* both tables in one block */
        if (!(b->peer_tab = calloc(2 * (size_t)PEER_BUCKETS, sizeof *b->peer_tab))) {
            free(p);
            return NULL;
        }
        b->ident_tab = b->peer_tab + PEER_BUCKETS;
    }
    size_t k = peer_bucket(b, rid, len);
    p->hnext = b->peer_tab[k];
    b->peer_tab[k] = p;
    p->next = b->peers;
    b->peers = p;
    return p;
}

/*
 * A peer that sends what no honest worker sends (malformed frames, results that fail our checks)
 * is counted against its identity; at QUARANTINE_AFTER every connection of that identity gets no
 * more work, and what they hold goes back to pending without costing those shards an attempt
 * (idents.c): a hostile client must not be able to wear a shard down to FAILED by taking it and
 * dying, again and again, nor start afresh by connecting again.
 */
int peer_quarantined(const nq_broker_t *b, const nq_peer_t *p)
{
    return ident_quarantined(b, p->rec);
}

/*
 * p reported a failure on one of the job's shards. 1: the shard is charged an attempt, and p
 * pauses the job (twice as long as its last pause there, if any). 0: p was already pausing it,
 * so this lease went out before the first failure and costs its shard nothing.
 */
int peer_job_failed(nq_peer_t *p, uint64_t job, double now)
{
    int slot = 0;
    for (int i = 0; i < PAUSED_JOBS; i++) {
        if (p->paused[i].job == job) {
            slot = i;
            break;
        }
        if (p->paused[i].until < p->paused[slot].until)
            slot = i;                   /* else the slot whose pause ended first (or a free one) */
    }
    if (p->paused[slot].job == job && now < p->paused[slot].until)
        return 0;
    double pause = p->paused[slot].job == job ? p->paused[slot].pause * 2 : 1;
    p->paused[slot].job = job;
    p->paused[slot].pause = pause < PAUSE_MAX_S ? pause : PAUSE_MAX_S;
    p->paused[slot].until = now + p->paused[slot].pause;
    return 1;
}

/* A quarantined peer's frames are read and dropped: nothing is decoded into work, stored or
   logged one by one, so a flood costs the broker a counter. */
void peer_dropped_frame(nq_broker_t *b, nq_peer_t *p)
{
    double now = b->now;
    p->dropped++;
    b->stats.messages_bad++;
    if (now - p->dropped_logged >= 10) {
        nq_log(NQ_LOG_WARN, "worker.quarantined.frames", "worker=%s dropped=%llu", p->hello.worker_id,
               (unsigned long long)p->dropped);
        p->dropped_logged = now;
    }
}

/* r was just quarantined: every connection of it gives back what it holds, uncharged (the
   identity is the suspect, not its shards), and asks for nothing until the quarantine ends. */
void peers_quarantine(nq_broker_t *b, nq_ident_t *r)
{
    uint32_t leases = 0;
    for (nq_peer_t *p = b->peers; p; p = p->next)   /* rare: a walk of the peers is fine */
        if (p->rec == r) {
            leases += p->outstanding;
            p->dropped_logged = b->now;
            while (p->leases)
                leases_release(b, p->leases, 0, "holder quarantined");
            peer_hunger(b, p);
        }
    if (leases)
        nq_log(NQ_LOG_INFO, "worker.quarantined.leases", "identity=%s leases=%u", ident_name(r), leases);
}

/* Quarantines that ended: their connections may want work again. */
void peers_wake(nq_broker_t *b)
{
    for (nq_peer_t *p = b->peers; p; p = p->next)
        peer_hunger(b, p);
}

void peer_misbehaved(nq_broker_t *b, nq_peer_t *p, const char *why)
{
    if (peer_quarantined(b, p))
        return;
    if (ident_strike(b, p->rec, p->hello.worker_id, why)) {
        peers_quarantine(b, p->rec);
        store_worker_flag(b->store, p->hello.worker_id);
    }
}

/* Forgets a worker; its shards go back to pending. An attempt counts when it died holding them,
   unless its identity has lost leases before (idents.c: one identity cannot burn a job). */
void peers_drop(nq_broker_t *b, nq_peer_t *p, int count_attempt, const char *why)
{
    if (peer_quarantined(b, p))
        count_attempt = 0;              /* not evidence against the shard */
    int quarantined = 0;
    if (count_attempt && p->leases)
        count_attempt = ident_lost(b, p->rec, p->hello.worker_id, why, &quarantined);
    if (quarantined)
        peers_quarantine(b, p->rec);    /* its other connections too; this one's go back uncharged */
    nq_log(NQ_LOG_INFO, "worker.lost", "worker=%s reason=%s leases=%u", p->hello.worker_id, why,
           p->outstanding);
    while (p->leases)
        leases_release(b, p->leases, count_attempt, why);
    p->credit = 0;
    peer_hunger(b, p);
    store_worker_forget_idle(b->store, p->hello.worker_id);   /* a HELLO alone leaves no row behind */
    for (nq_peer_t **pp = &b->peers; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    for (nq_peer_t **pp = &b->peer_tab[peer_bucket(b, p->rid, p->rid_len)]; *pp; pp = &(*pp)->hnext)
        if (*pp == p) {
            *pp = p->hnext;
            break;
        }
    ident_unlink(b, p);
    idents_release(b, p->rec);
    free(p);
}

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

void peer_hunger(nq_broker_t *b, nq_peer_t *p)
{
    int want = p->outstanding < p->credit && !peer_quarantined(b, p);
    if (want == p->hungry)
        return;
    if (want) {
        p->hungry_prev = NULL;
        p->hungry_next = b->hungry;
        if (b->hungry)
            b->hungry->hungry_prev = p;
        b->hungry = p;
    } else {
        if (p->hungry_prev) p->hungry_prev->hungry_next = p->hungry_next;
        else b->hungry = p->hungry_next;
        if (p->hungry_next) p->hungry_next->hungry_prev = p->hungry_prev;
        p->hungry_next = p->hungry_prev = NULL;
    }
    p->hungry = want;
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
    p->outstanding--;
    p->out_cost -= l->cost;
    if (p->outstanding == 0)
        p->out_cost = 0;                /* no drift from the additions and subtractions */
    l->peer = NULL;
}

void leases_attach(nq_broker_t *b, nq_lease_t *l, nq_peer_t *p)
{
    nq_peer_t *old = l->peer;
    peer_unlink_lease(l);
    if (old && old != p)
        peer_hunger(b, old);
    l->peer = p;
    l->next_in_peer = p->leases;
    p->leases = l;
    p->outstanding++;
    p->out_cost += l->cost;
    l->progress_at = b->now;
    l->sync = p->sync_sent;             /* only a later token can prove it lost */
    peer_hunger(b, p);
}

nq_lease_t *leases_add(nq_broker_t *b, nq_peer_t *p, uint64_t job, uint64_t shard, uint32_t attempt, uint64_t id)
{
    nq_lease_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->id = id;
    l->job = job;
    l->shard = shard;
    l->attempt = attempt;
    l->progress_at = l->sent_at = b->now;
    size_t h = lease_bucket(b, id);
    l->hnext = b->lease_tab[h];
    b->lease_tab[h] = l;
    b->nleases++;
    if (p)
        leases_attach(b, l, p);
    return l;
}

void leases_price(nq_broker_t *b, nq_lease_t *l, double cost)
{
    nq_peer_t *p = l->peer;
    if (p)
        p->out_cost += cost - l->cost;
    nq_job_t *j = jobq_find(b, l->job);
    if (j && !l->copy && !l->check)
        j->leased_cost += cost - l->cost;
    l->cost = cost;
}

void leases_remove(nq_broker_t *b, nq_lease_t *l)
{
    nq_peer_t *holder = l->peer;
    peer_unlink_lease(l);
    if (holder)
        peer_hunger(b, holder);
    for (nq_lease_t **pp = &b->lease_tab[lease_bucket(b, l->id)]; *pp; pp = &(*pp)->hnext)
        if (*pp == l) {
            *pp = l->hnext;
            break;
        }
    nq_job_t *j = jobq_find(b, l->job);
    if (j && !l->copy && !l->check)
        j->leased_cost = j->shards_leased > 1 ? j->leased_cost - l->cost : 0;
    if (l->twin) {                      /* the copy carries on alone: it is the shard's lease now */
        l->twin->twin = NULL;
        if (l->twin->copy && !l->copy && j)
            j->leased_cost += l->twin->cost;
        l->twin->copy = 0;
    }
    if (j && j->shards_leased > 0)
        j->shards_leased--;
    b->nleases--;
    free(l);
}

void leases_cancel(nq_broker_t *b, nq_lease_t *l, const char *why)
{
    nq_peer_t *p = l->peer;
    if (p && p->version >= 4) {         /* an older worker cannot stop one lease: it finishes it, and
                                           its result is compared with the decided one */
        nq_msg_t m = { .type = NQ_MSG_CANCEL };
        m.u.cancel.job = l->job;
        m.u.cancel.lease = l->id;
        outbox_send(b, p, &m);
    }
    nq_log(NQ_LOG_INFO, "lease.cancel", "job=%llu shard=%llu worker=%s reason=\"%s\"", (unsigned long long)l->job,
           (unsigned long long)l->shard, p ? p->hello.worker_id : "-", why);
    leases_remove(b, l);
}

/* The shard goes back to pending, or to FAILED when it has used up its attempts; but while the
   other lease of a tail copy pair is out, that one carries the shard on: nothing is charged (a
   lost copy costs its shard nothing) and nothing goes back. */
void leases_release(nq_broker_t *b, nq_lease_t *l, int count_attempt, const char *why)
{
    uint64_t job = l->job, shard = l->shard;
    int check = l->check;
    if (l->twin) {
        if (why)
            nq_log(NQ_LOG_INFO, "lease.release", "job=%llu shard=%llu reason=\"%s\" twin=out",
                   (unsigned long long)job, (unsigned long long)shard, why);
        leases_remove(b, l);
        return;
    }
    int64_t who = count_attempt && l->peer ? peers_who(b, l->peer) : 0;   /* charged once per identity */
    int copied = l->copied;
    leases_remove(b, l);
    if (copied) {                       /* a copy's result holds the shard: it stands alone now */
        spotcheck_copy_alone(b, job, shard);
        return;
    }
    if (check) {                        /* a spot-check copy: the shard is done, the copy waits again */
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

int leases_ident_holds(nq_broker_t *b, const nq_peer_t *p, uint64_t job, uint64_t shard)
{
    for (nq_peer_t *q = *ident_chain(b, p->ident_hash); q; q = q->ihnext)
        if (strcmp(q->ident, p->ident) == 0)    /* every connection of p's identity */
            for (nq_lease_t *l = q->leases; l; l = l->next_in_peer)
                if (l->job == job && l->shard == shard)
                    return 1;
    return 0;
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
    if (hb->sync == 0 || hb->sync > p->sync_sent || hb->count == NQ_MAX_HEARTBEAT_ITEMS)
        return;                         /* no token echoed, one we never sent, or a list cut short */
    release_unlisted(b, p, stamp, hb->sync);
}

/* ---- liveness ---- */

/*
 * Stalled: a lease whose progress has not moved for stall_s since it was sent or last moved.
 * A worker's queued shards report no progress until they start, and an honest one queues at
 * most one per thread behind the running ones (its prefetch): so a worker that is making
 * progress is excused as many unstarted leases as it has threads, and no more, whatever it asked
 * for. Excusing its whole credit let a worker that says threads=1, asks 2,048 and moves one
 * lease sit on 48 idle ones for ever. One stall of a sweep is one loss of its identity.
 */
static void peer_release_stalled(nq_broker_t *b, nq_peer_t *p, double now)
{
    enum { BATCH = 64 };
    uint64_t stalled[BATCH];
    size_t n = 0;
    uint32_t moving = 0, threads = p->hello.threads ? p->hello.threads : 1;
    for (nq_lease_t *l = p->leases; l; l = l->next_in_peer)
        moving += l->progress > 0 && now - l->progress_at <= b->cfg.stall_s;
    uint32_t excused = moving > 0 ? threads : 0;
    for (nq_lease_t *l = p->leases; l && n < BATCH; l = l->next_in_peer) {
        if (now - l->progress_at <= b->cfg.stall_s)
            continue;
        if (l->progress == 0 && excused > 0) {
            excused--;
            continue;
        }
        stalled[n++] = l->id;
    }
    if (n == 0)
        return;
    int quarantined;
    int charge = ident_lost(b, p->rec, p->hello.worker_id, "progress stalled", &quarantined);
    if (quarantined)
        peers_quarantine(b, p->rec);    /* then all went back, uncharged */
    for (size_t i = 0; i < n; i++) {
        nq_lease_t *l = leases_find(b, stalled[i]);
        if (l && l->peer == p)
            leases_release(b, l, charge, "progress stalled");
    }
}

void leases_tick(nq_broker_t *b, double now)
{
    double hb = b->cfg.heartbeat_ms / 1000.0, dead = hb * b->cfg.liveness;
    double stall = b->last_round > 0 ? now - b->last_round : 0;
    b->last_round = now;
    if (stall > hb)                     /* we were busy (a big submit): nobody was heard, not their fault */
        for (nq_peer_t *p = b->peers; p; p = p->next) {
            p->last_recv += stall;
            for (nq_lease_t *l = p->leases; l; l = l->next_in_peer)
                l->progress_at += stall;
        }
    /* the timers are seconds long: a sweep every quarter heartbeat, not every round (at 10^4
       workers and their leases a sweep is ~1 ms; rounds come thousands of times a second) */
    if (now - b->last_sweep < hb / 4)
        return;
    b->last_sweep = now;
    for (nq_peer_t *p = b->peers, *next; p; p = next) {
        next = p->next;
        if (now - p->last_recv > dead) {
            peers_drop(b, p, 1, "silent past its liveness window");
            continue;
        }
        if (b->cfg.stall_s > 0)
            peer_release_stalled(b, p, now);
        if (now - p->last_sent > hb || now - p->sync_at > dead) {
            nq_msg_t m = { .type = NQ_MSG_HEARTBEAT };   /* a busy worker gets a token too */
            m.u.heartbeat.sync = p->sync_sent + 1;
            if (outbox_send(b, p, &m) == 0) {
                p->sync_sent++;
                p->sync_at = now;
            }
        }
    }
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
    while (b->peers) {
        nq_peer_t *p = b->peers;
        b->peers = p->next;
        free(p);
    }
    free(b->peer_tab);                  /* and ident_tab, the same block */
    b->peer_tab = b->ident_tab = NULL;
    if (!b->lease_tab)
        return;
    for (size_t h = 0; h < b->lease_buckets; h++)
        while (b->lease_tab[h]) {
            nq_lease_t *l = b->lease_tab[h];
            b->lease_tab[h] = l->hnext;
            free(l);
        }
}
