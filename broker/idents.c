/*
 * Identities: what the broker holds against a worker across all its connections.
 *
 * A worker is who its CURVE key says (its session when keys are off: see nq_peer), and one
 * identity may open any number of connections. Whatever is counted per connection resets
 * with a new one, so a key that takes every shard, goes silent and reconnects could charge
 * each shard an attempt per round and fail a job in max-attempts rounds. So the counts that
 * decide what a worker may do live here, one record per identity:
 *
 *   strikes   messages no honest worker sends (forged leases, results that fail the broker's
 *             checks, malformed frames, evidence against a decided shard); at QUARANTINE_AFTER
 *             the identity is quarantined;
 *   losses    times its connections lost leases by dying or stalling, in a window: only the
 *             first charges the shards an attempt (a crash can be the shard's fault, so a
 *             shard that kills every worker still ends FAILED), and at LOSSES_QUARANTINE the
 *             identity is quarantined;
 *   errors    error RESULTs it sent, in a window, like losses: only the first charges its shard
 *             an attempt, and at ERRORS_QUARANTINE the identity is quarantined (one key that
 *             erred from five fresh connections once failed a shard at --max-attempts 5);
 *   restarts  new sessions on a connection (a worker sheds its leases by restarting).
 *
 * What a shard is charged also counts each identity once per shard (the store's failures
 * table), so a shard fails only when max-attempts distinct identities have failed it.
 * A quarantined identity gets no work and its frames are dropped unread, on every connection,
 * until the quarantine ends: 10 minutes the first time, doubling up to a day. Records live in
 * memory: a broker restart forgives (the spot-check record in the store does not).
 */
#include "broker_impl.h"
#include "log.h"
#include "store_spotcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDENT_BUCKETS (1u << 14)
#define LOSS_WINDOW_S 3600.0            /* losses are counted over this long */
#define LOSSES_CHARGED 1                /* losses in the window that charge the shards an attempt */
#define LOSSES_QUARANTINE 3             /* ... at which the identity is quarantined */
#define ERRORS_CHARGED 1                /* error results in the window that charge their shard */
#define ERRORS_QUARANTINE 3             /* ... at which the identity is quarantined */
#define QUARANTINE_FIRST_S 600.0
#define QUARANTINE_MAX_S 86400.0
#define IDENT_IDLE_S 3600.0             /* a record with no connection is kept this long (losses) */
#define IDENT_MAX 200000                /* past this, idle records go first (a flood of sessions) */
#define IDENT_TICK_S 1.0

struct nq_ident {
    char ident[64];
    uint64_t hash;
    uint32_t peers;                     /* connections filed under it now */
    uint32_t strikes, losses, errors, restarts;
    double losses_since, errors_since, restarts_since;
    double quarantined_until, quarantine_s;
    char why[80];                       /* why it was last quarantined */
    double last_seen;
    uint32_t mark;                      /* idents_connected's visit stamp */
    nq_ident_t *next;                   /* hash chain */
};

static void idents_forget(nq_broker_t *b, double horizon);

static nq_ident_t **ident_slot(nq_broker_t *b, uint64_t hash)
{
    return &b->idents[hash & (IDENT_BUCKETS - 1)];
}

nq_ident_t *idents_take(nq_broker_t *b, const char *ident, uint64_t hash)
{
    if (!b->idents && !(b->idents = calloc(IDENT_BUCKETS, sizeof *b->idents)))
        return NULL;
    nq_ident_t **slot = ident_slot(b, hash);
    for (nq_ident_t *r = *slot; r; r = r->next)
        if (r->hash == hash && strcmp(r->ident, ident) == 0) {
            r->peers++;
            r->last_seen = b->now;
            return r;
        }
    if (b->nidents >= IDENT_MAX)
        idents_forget(b, b->now + IDENT_IDLE_S);  /* every record without a connection goes */
    nq_ident_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->ident, sizeof r->ident, "%s", ident);
    r->hash = hash;
    r->peers = 1;
    r->last_seen = b->now;
    r->next = *slot;
    *slot = r;
    b->nidents++;
    return r;
}

nq_ident_t *idents_find(nq_broker_t *b, const char *ident)
{
    if (!b->idents)
        return NULL;
    uint64_t hash = lease_id_ident_hash(b, ident);
    for (nq_ident_t *r = *ident_slot(b, hash); r; r = r->next)
        if (r->hash == hash && strcmp(r->ident, ident) == 0)
            return r;
    return NULL;
}

static int ident_clean(const nq_ident_t *r, double now)
{
    return r->strikes == 0 && r->restarts == 0 && now >= r->quarantined_until &&
           (r->losses == 0 || now - r->losses_since > LOSS_WINDOW_S) &&
           (r->errors == 0 || now - r->errors_since > LOSS_WINDOW_S);
}

static void ident_free(nq_broker_t *b, nq_ident_t *r)
{
    for (nq_ident_t **pp = ident_slot(b, r->hash); *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    b->nidents--;
    free(r);
}

void idents_release(nq_broker_t *b, nq_ident_t *r)
{
    if (!r)
        return;
    r->peers--;
    r->last_seen = b->now;
    if (r->peers == 0 && ident_clean(r, b->now))
        ident_free(b, r);               /* nothing to remember: a HELLO flood leaves no records */
}

void idents_inherit(nq_ident_t *to, const nq_ident_t *from)
{
    if (!to || !from || to == from)
        return;
    to->strikes = to->strikes > from->strikes ? to->strikes : from->strikes;
    to->restarts = to->restarts > from->restarts ? to->restarts : from->restarts;
    to->restarts_since = from->restarts_since;
    if (from->quarantined_until > to->quarantined_until) {
        to->quarantined_until = from->quarantined_until;
        to->quarantine_s = from->quarantine_s;
        snprintf(to->why, sizeof to->why, "%s", from->why);
    }
}

int ident_quarantined(const nq_broker_t *b, const nq_ident_t *r)
{
    return r && b->now < r->quarantined_until;
}

double ident_quarantine_left(const nq_broker_t *b, const nq_ident_t *r)
{
    return ident_quarantined(b, r) ? r->quarantined_until - b->now : 0;
}

/* Starts or doubles r's quarantine. What its connections hold is given back by the caller
   (peers_quarantine in peers.c: records do not know connections). */
static void ident_quarantine(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why)
{
    double len = r->quarantine_s > 0 ? r->quarantine_s * 2 : QUARANTINE_FIRST_S;
    r->quarantine_s = len < QUARANTINE_MAX_S ? len : QUARANTINE_MAX_S;
    r->quarantined_until = b->now + r->quarantine_s;
    snprintf(r->why, sizeof r->why, "%s", why);
    nq_log(NQ_LOG_WARN, "worker.quarantined", "worker=%s identity=%s last=\"%s\" seconds=%.0f", worker, r->ident,
           why, r->quarantine_s);
}

int ident_strike(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why)
{
    if (!r || ident_quarantined(b, r))
        return 0;
    if (++r->strikes < QUARANTINE_AFTER)
        return 0;
    r->strikes = 0;
    ident_quarantine(b, r, worker, why);
    return 1;
}

/* One more event in a window of LOSS_WINDOW_S: 1 when it is among the first `charged`. At
   `quarantine` events the identity is quarantined, with `what` and why as the reason. */
static int ident_count(nq_broker_t *b, nq_ident_t *r, uint32_t *n, double *since, uint32_t charged,
                       uint32_t quarantine, const char *worker, const char *what, const char *why, int *quarantined)
{
    if (*n == 0 || b->now - *since > LOSS_WINDOW_S) {
        *n = 0;
        *since = b->now;
    }
    int charge = ++*n <= charged;
    if (*n >= quarantine && !ident_quarantined(b, r)) {
        char text[sizeof r->why];
        snprintf(text, sizeof text, "%s %u times in an hour (%s)", what, *n, why);
        *n = 0;
        ident_quarantine(b, r, worker, text);
        *quarantined = 1;
    }
    return charge;
}

int ident_lost(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why, int *quarantined)
{
    *quarantined = 0;
    if (!r)
        return 1;
    return ident_count(b, r, &r->losses, &r->losses_since, LOSSES_CHARGED, LOSSES_QUARANTINE, worker,
                       "lost its leases", why, quarantined);
}

int ident_failed(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why, int *quarantined)
{
    *quarantined = 0;
    if (!r)
        return 1;
    return ident_count(b, r, &r->errors, &r->errors_since, ERRORS_CHARGED, ERRORS_QUARANTINE, worker,
                       "reported errors", why, quarantined);
}

int ident_restarted(nq_broker_t *b, nq_ident_t *r)
{
    if (!r)
        return 0;
    if (b->now - r->restarts_since > RESTART_WINDOW_S) {
        r->restarts_since = b->now;
        r->restarts = 0;
    }
    return ++r->restarts > RESTARTS_PER_WINDOW;
}

/* Records without a connection that have nothing against them, or were last seen before
   `horizon` - IDENT_IDLE_S, are forgotten. */
static void idents_forget(nq_broker_t *b, double horizon)
{
    for (size_t h = 0; h < IDENT_BUCKETS; h++)
        for (nq_ident_t *r = b->idents[h], *next; r; r = next) {
            next = r->next;
            if (r->peers == 0 && (ident_clean(r, b->now) || horizon - r->last_seen > IDENT_IDLE_S))
                ident_free(b, r);
        }
}

/* Quarantines that ended are lifted, and idle records are forgotten. Every few seconds:
   O(records), and a record is ~200 bytes per worker. 1 when a quarantine ended (its connections
   may want work again: the caller wakes them). */
int idents_tick(nq_broker_t *b, double now)
{
    int lifted = 0;
    if (!b->idents || now - b->idents_at < IDENT_TICK_S)
        return 0;
    b->idents_at = now;
    for (size_t h = 0; h < IDENT_BUCKETS; h++)
        for (nq_ident_t *r = b->idents[h]; r; r = r->next)
            if (r->quarantined_until > 0 && now >= r->quarantined_until) {
                r->quarantined_until = 0;
                nq_log(NQ_LOG_INFO, "worker.released", "identity=%s", r->ident);
                lifted = 1;
            }
    idents_forget(b, now);
    return lifted;
}

uint32_t idents_connected(nq_broker_t *b)
{
    uint32_t n = 0, stamp = ++b->idents_stamp;
    for (nq_peer_t *p = b->peers; p; p = p->next)   /* O(peers): each identity counted once */
        if (p->rec && p->rec->mark != stamp && !ident_quarantined(b, p->rec)) {
            p->rec->mark = stamp;
            n++;
        }
    return n;
}

const char *ident_name(const nq_ident_t *r)
{
    return r ? r->ident : "";
}

const char *ident_why(const nq_ident_t *r)
{
    return r ? r->why : "";
}

/* p's identities row, read or made once per session: the store knows identities, not
   connections, so a new session (keys off) starts again at 0. */
int64_t idents_who(nq_broker_t *b, nq_peer_t *p)
{
    nq_identity_t rec;
    if (p->who == 0 && store_identity(b->store, p->ident, p->hello.worker_id, &rec) == 0) {
        p->who = rec.id;
        p->outvoted = rec.outvoted > 0;
    }
    return p->who;
}

void idents_free_all(nq_broker_t *b)
{
    if (!b->idents)
        return;
    for (size_t h = 0; h < IDENT_BUCKETS; h++)
        while (b->idents[h]) {
            nq_ident_t *r = b->idents[h];
            b->idents[h] = r->next;
            free(r);
        }
    free(b->idents);
    b->idents = NULL;
    b->nidents = 0;
}
