/*
 * The connected workers (peers): found by routing id, filed by identity, paused on the jobs
 * they fail, quarantined with their identity, and dropped when they die, say BYE or stop making
 * progress (the liveness rules), their leases going back.
 */
#include "broker_impl.h"
#include "log.h"
#include "siphash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

double peer_rtt(const nq_peer_t *p)
{
    return p->link.srtt;
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
            hungry_update(b, p);
        }
    if (leases)
        nq_log(NQ_LOG_INFO, "worker.quarantined.leases", "identity=%s leases=%u", ident_name(r), leases);
}

/* Quarantines that ended: their connections may want work again. */
void peers_wake(nq_broker_t *b)
{
    for (nq_peer_t *p = b->peers; p; p = p->next)
        hungry_update(b, p);
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
    hungry_update(b, p);
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
    free(p->devices);
    free(p);
}

void peers_devices(nq_peer_t *p, const nq_heartbeat_t *hb)
{
    if (hb->ndevices && !p->devices && !(p->devices = malloc(NQ_MAX_HB_DEVICES * sizeof *p->devices)))
        return;                         /* out of memory: shown without its devices */
    p->ndevices = hb->ndevices <= NQ_MAX_HB_DEVICES ? hb->ndevices : 0;
    if (p->ndevices)
        memcpy(p->devices, hb->devices, p->ndevices * sizeof *p->devices);
}

int peers_ident_holds(nq_broker_t *b, const nq_peer_t *p, uint64_t job, uint64_t shard)
{
    for (nq_peer_t *q = *ident_chain(b, p->ident_hash); q; q = q->ihnext)
        if (strcmp(q->ident, p->ident) == 0)    /* every connection of p's identity */
            for (nq_lease_t *l = q->leases; l; l = l->next_in_peer)
                if (l->job == job && l->shard == shard)
                    return 1;
    return 0;
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
/*
 * A holder whose copy delivered first has stall_s (and its link) to deliver too, and longer when
 * the speed its own results showed (lane_shown) says the shard takes it longer: OUTRUN_PACE times
 * its time for the shard from when the lease began to move. Past that its lease goes, uncharged
 * (being slower than a copy is no fault), and the copy's result stands alone as when a holder is
 * lost (leases_release): a holder that moved its progress a node a heartbeat and never delivered
 * held the shard undecided for ever, and with no third identity the job never ended. The shown
 * lane, not the lane its crawling progress brought down: a hoarder that answered three shards at
 * once has shown a fast one and gets stall_s, while an honest slow holder working at the pace it
 * has shown is never dropped for a copy's answer (a lying copy would then stand alone).
 */
#define OUTRUN_PACE 4.0

static int outrun_over(const nq_peer_t *p, const nq_lease_t *l, double now, double stall_s)
{
    if (now - l->copied_at <= stall_s)
        return 0;
    return p->lane_shown <= 0 || l->started_at <= 0 ||
           now - l->started_at > OUTRUN_PACE * l->cost / p->lane_shown + stall_s;
}

static void peer_release_outrun(nq_broker_t *b, nq_peer_t *p, double now, double stall_s)
{
    for (nq_lease_t *l = p->leases, *next; l; l = next) {
        next = l->next_in_peer;
        if (l->kind == NQ_LEASE_COPIED && outrun_over(p, l, now, stall_s)) {
            leases_release(b, l, 0, "its copy delivered long ago");
            return;                     /* one a tick: the list may have changed under us */
        }
    }
}

static void peer_release_stalled(nq_broker_t *b, nq_peer_t *p, double now)
{
    enum { BATCH = 64 };
    uint64_t stalled[BATCH];
    size_t n = 0;
    uint32_t moving = 0, threads = p->hello.threads ? p->hello.threads : 1;
    double stall_s = b->cfg.stall_s + link_allowance(&p->link);   /* progress crosses its link */
    peer_release_outrun(b, p, now, stall_s);
    for (nq_lease_t *l = p->leases; l; l = l->next_in_peer)
        moving += l->progress > 0 && now - l->progress_at <= stall_s;
    uint32_t excused = moving > 0 ? threads : 0;
    for (nq_lease_t *l = p->leases; l && n < BATCH; l = l->next_in_peer) {
        if (now - l->progress_at <= stall_s)
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

/*
 * An operator wants to know when one worker's link is far slower than the others' (a worker on
 * another continent, a congested uplink): its shards take a round trip longer to come back, and
 * it is the first to look lost. Logged once when its round trip passes LINK_FAR_FACTOR times the
 * others' mean (and LINK_FAR_MIN_S: on a LAN, 1 ms against 0.1 ms is noise), and again only after
 * it came back under half that. The others' mean is the previous sweep's: no second walk.
 */
#define LINK_FAR_FACTOR 4.0
#define LINK_FAR_MIN_S 0.05
#define LINK_FAR_SAMPLES 3              /* samples before a round trip is trusted */

static void link_far_check(nq_broker_t *b, nq_peer_t *p, double *sum, uint32_t *n)
{
    if (p->link.samples < LINK_FAR_SAMPLES)
        return;
    double rtt = p->link.srtt, others = b->rtt_n > 1 ? (b->rtt_sum - rtt) / (b->rtt_n - 1) : 0;
    *sum += rtt;
    ++*n;
    if (others <= 0)
        return;
    if (!p->link_far && rtt > LINK_FAR_MIN_S && rtt > LINK_FAR_FACTOR * others) {
        p->link_far = 1;
        nq_log(NQ_LOG_WARN, "worker.link_far", "worker=%s rtt_ms=%.0f others_ms=%.0f", p->hello.worker_id,
               rtt * 1000, others * 1000);
    } else if (p->link_far && rtt < LINK_FAR_FACTOR / 2 * others) {
        p->link_far = 0;
        nq_log(NQ_LOG_INFO, "worker.link_near", "worker=%s rtt_ms=%.0f others_ms=%.0f", p->hello.worker_id,
               rtt * 1000, others * 1000);
    }
}

/* A new token for p's inventory; the first one whose echo is awaited times p's link (one at a time:
   a link slower than the heartbeat still echoes the token it is timed by). */
static void peer_send_token(nq_broker_t *b, nq_peer_t *p, double now)
{
    nq_msg_t m = { .type = NQ_MSG_HEARTBEAT };
    m.u.heartbeat.sync = p->sync_sent + 1;
    if (outbox_send(b, p, &m) != 0)
        return;
    p->sync_sent++;
    p->sync_at = now;
    if (!p->sync_timed) {
        p->sync_timed = p->sync_sent;
        p->sync_timed_at = now;
    }
}

void peers_tick(nq_broker_t *b, double now)
{
    double hb = b->cfg.heartbeat_ms / 1000.0;
    double stall = b->last_round > 0 ? now - b->last_round : 0;
    b->last_round = now;
    if (stall > hb)                     /* we were busy (a big submit): nobody was heard, not their fault */
        for (nq_peer_t *p = b->peers; p; p = p->next) {
            p->last_recv += stall;
            p->sync_at += stall;        /* nor is its echo late: the round trip is the link's */
            p->sync_timed_at += stall;
            for (nq_lease_t *l = p->leases; l; l = l->next_in_peer)
                l->progress_at += stall;
        }
    /* the timers are seconds long: a sweep every quarter heartbeat, not every round (at 10^4
       workers and their leases a sweep is ~1 ms; rounds come thousands of times a second) */
    if (now - b->last_sweep < hb / 4)
        return;
    b->last_sweep = now;
    double rtt_sum = 0;
    uint32_t rtt_n = 0;
    for (nq_peer_t *p = b->peers, *next; p; p = next) {
        next = p->next;
        link_far_check(b, p, &rtt_sum, &rtt_n);
        /* a far worker's heartbeats arrive as often as a near one's, but a gap in them (a
           reconnect, a burst of results ahead of them) lasts its round trip longer */
        double dead = link_window(&p->link, hb, b->cfg.liveness);
        if (now - p->last_recv > dead) {
            peers_drop(b, p, 1, "silent past its liveness window");
            continue;
        }
        if (b->cfg.stall_s > 0)
            peer_release_stalled(b, p, now);
        if (now - p->last_sent > hb || now - p->sync_at > dead)
            peer_send_token(b, p, now);  /* a busy worker gets a token too */
    }
    b->rtt_sum = rtt_sum;
    b->rtt_n = rtt_n;
}

void peers_free_all(nq_broker_t *b)
{
    while (b->peers) {
        nq_peer_t *p = b->peers;
        b->peers = p->next;
        free(p->devices);
        free(p);
    }
    free(b->peer_tab);                  /* and ident_tab, the same block */
    b->peer_tab = b->ident_tab = NULL;
}
