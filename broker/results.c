/*
 * Results: check what a worker sent, store it inside the loop's open
 * transaction, and acknowledge only after that transaction has committed
 * (invariant 2: commit, then acknowledge). Many results share one commit,
 * so a thousand workers do not become a thousand fsyncs a second.
 *
 * If a commit fails (disk full, I/O error), nothing of the group is in the
 * DB: the broker keeps the group in memory, stops leasing and acknowledging,
 * says so, and tries the same group again every second.
 */
#include "broker_impl.h"
#include "clock.h"
#include "count_bounds.h"
#include "errf.h"
#include "enumerate.h"
#include "log.h"
#include "solstore.h"
#include "verify.h"
#include "verifier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memory for solutions being assembled, at most: beyond it SOLPARTs are dropped (the RESULT is
   then refused as incomplete and the seed is computed again). */
#define NQ_SOLBUF_MAX_BYTES (4ull << 30)
#define NQ_SOLBUF_IDLE_S 300.0

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

/* Enumerate payload: every solution valid, strictly increasing (canonical order). */
int results_check_enumerate(const nq_result_t *r, uint64_t n, char *why, size_t whylen)
{
    size_t per = (size_t)(n + 1) / 2;
    if (n < 1 || n > 16)
        return nq_errf(why, whylen, "enumerate result for n=%llu", (unsigned long long)n);
    /* total comes from the wire: compare by division, so total * per cannot wrap around */
    if (r->payload_len % per != 0 || r->total != r->payload_len / per)
        return nq_errf(why, whylen, "payload of %zu bytes for %llu solutions", r->payload_len,
                       (unsigned long long)r->total);
    uint8_t prev[16] = {0}, cols[16];
    uint32_t perm[16];
    for (uint64_t i = 0; i < r->total; i++) {
        enumerate_unpack(r->payload + i * per, (int)n, cols);
        for (uint64_t k = 0; k < n; k++)
            perm[k] = cols[k];
        nq_clash_t c;
        if (verify_perm(perm, n, &c) != 0)
            return nq_errf(why, whylen, "solution %llu is not valid", (unsigned long long)i);
        if (i > 0 && memcmp(prev, cols, n) >= 0)
            return nq_errf(why, whylen, "solutions out of canonical order");
        memcpy(prev, cols, n);
    }
    return 0;
}

/*
 * A count result against what a count of its shard can give (count_bounds.h, the audit's
 * per-line check): residues alone let totals of 2^64-1, unique above total and nodes below
 * total become final. Nodes are held to their bounds only where they are the CPU kernels' (the
 * search those bounds describe); the fast GPU kernel's own are not. The descriptor comes from the
 * job's list. 0 within them, -1 outside (why), 1 not known yet: the list is being built after a
 * restart (the caller leaves the result unacknowledged, and the worker sends it again).
 */
static int check_bounds(nq_broker_t *b, const nq_job_t *j, const nq_result_t *r, char *why, size_t whylen)
{
    uint8_t spec[NQ_MAX_SPEC];
    size_t len = 0;
    uint64_t seed;
    char algo[32];
    nq_shard_row_t row;
    if (j->list_ticket)
        return 1;
    if (jobq_shard_task(j, r->shard, spec, &len, &seed, algo, sizeof algo) != 0) {
        /* a job stored before 004 keeps its descriptors in its rows */
        if (store_shard_get(b->store, j->id, r->shard, &row) != 0 || row.spec_len == 0)
            return nq_errf(why, whylen, "no descriptor for the shard");
        memcpy(spec, row.spec, row.spec_len);
        len = row.spec_len;
    }
    nq_count_bounds_t cb;
    nq_count_result_t cr = { r->total, r->unique, r->nodes, (uint8_t)r->res13, (uint8_t)r->res15 };
    char text[200];
    if (count_bounds(spec, len, &cb, text, sizeof text) != 0)
        return nq_errf(why, whylen, "the shard's descriptor does not decode: %s", text);
    int off = r->nodes_kind == NQ_NODES_CPU ? count_bounds_check(&cb, &cr, text, sizeof text)
                                            : count_bounds_check_counts(&cb, &cr, text, sizeof text);
    if (off != 0)
        return nq_errf(why, whylen, "no count of the shard can give it: %s", text);
    return 0;
}

/* The job a result is for: in memory when active (cheap), else from the store. */
static int result_job(nq_broker_t *b, uint64_t id, nq_job_spec_t *spec, uint64_t *shards_total)
{
    nq_job_t *j = jobq_find(b, id);
    nq_job_row_t row;
    if (j) {
        *spec = j->spec;
        *shards_total = j->shards_total;
        return 0;
    }
    if (store_job_get(b->store, id, &row) != 0)
        return -1;
    *spec = row.spec;
    *shards_total = row.shards_total;
    return 0;
}

/* Checks a result against its job before it may reach the store. */
static int check_result(nq_broker_t *b, nq_pending_result_t *e, nq_solbuf_t *sol, char *why, size_t whylen)
{
    const nq_result_t *r = &e->r;
    struct { nq_job_spec_t spec; } job;
    uint64_t shards_total;
    if (result_job(b, r->job, &job.spec, &shards_total) != 0)
        return nq_errf(why, whylen, "no such job");
    if (r->kind != job.spec.kind)
        return nq_errf(why, whylen, "result kind does not match the job");
    if (r->shard >= shards_total)
        return nq_errf(why, whylen, "no such shard");
    if (r->kind != NQ_KIND_COUNT && r->nodes_kind != NQ_NODES_CPU)   /* steps are the solver's own */
        return nq_errf(why, whylen, "only a count result says whose nodes it carries");
    if (r->kind == NQ_KIND_COUNT) {
        if (r->total % 13 != r->res13 || r->total % 15 != r->res15)
            return nq_errf(why, whylen, "residues do not match the total");
        nq_job_t *j = jobq_find(b, r->job);
        return j ? check_bounds(b, j, r, why, whylen) : 0;   /* not loaded: it can decide nothing */
    }
    if (r->kind == NQ_KIND_ENUMERATE)
        return results_check_enumerate(r, job.spec.n, why, whylen);
    if (r->status != NQ_RES_OK)
        return 0;                       /* solve, not found: a real outcome for the study */
    if (!sol || sol->n != job.spec.n || sol->received != sol->n)
        return nq_errf(why, whylen, "solution missing or incomplete");
    nq_clash_t c;
    if (verify_perm(sol->cols, sol->n, &c) != 0)
        return nq_errf(why, whylen, "solution fails verification: rows %llu and %llu share a %s",
                       (unsigned long long)c.row_a, (unsigned long long)c.row_b, c.what);
    if (solstore_save(store_db(b->store), store_path(b->store), r->job, sol->cols, sol->n,
                      e->sol_hash, sizeof e->sol_hash, e->sol_path, sizeof e->sol_path, why, whylen) != 0)
        return -1;
    if (e->sol_path[0] == 0) {          /* small: the store keeps it inline, from the payload */
        free(e->payload);
        e->payload = solstore_pack(sol->cols, sol->n);
        if (!e->payload)
            return nq_errf(why, whylen, "out of memory");
        e->r.payload = e->payload;
        e->r.payload_len = sol->n * 4;
    }
    return 0;
}

static nq_solbuf_t *solbuf_take(nq_broker_t *b, const nq_result_t *r)
{
    for (nq_solbuf_t **pp = &b->solbufs; *pp; pp = &(*pp)->next)
        if ((*pp)->job == r->job && (*pp)->shard == r->shard && (*pp)->lease == r->lease) {
            nq_solbuf_t *s = *pp;
            *pp = s->next;
            return s;
        }
    return NULL;
}

static void solbuf_free(nq_broker_t *b, nq_solbuf_t *s)
{
    if (s) {
        b->solbuf_bytes -= s->n * 4;
        free(s->cols);
        free(s);
    }
}

/* Solutions whose RESULT never came (the worker died mid-send) are given up. */
void results_tick(nq_broker_t *b, double now)
{
    for (nq_solbuf_t **pp = &b->solbufs; *pp;) {
        nq_solbuf_t *s = *pp;
        if (now - s->started > NQ_SOLBUF_IDLE_S) {
            *pp = s->next;
            solbuf_free(b, s);
        } else {
            pp = &s->next;
        }
    }
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
 * own word can make it look slower, never faster than the broker saw it.
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
    }
    p->cost_done += l->cost;
    nq_job_t *j = jobq_find(b, r->job);
    if (j && r->nodes_kind == NQ_NODES_CPU)
        jobq_calibrate(j, l->cost, r->nodes);
}

static void result_accept(nq_broker_t *b, nq_peer_t *p, nq_pending_result_t *e, nq_lease_t *l);

/* ---- solutions checked off the loop (verifier.h) ---- */

/* Solutions up to this many queens are checked in the loop: well under a millisecond (10^8
   queens took 2.8 s there: verify, hash, write). */
#define VERIFY_IN_LOOP_MAX 100000

/* A result whose solution the verifier holds: what the loop needs to go on once it answers. */
typedef struct verifying {
    uint64_t ticket;
    nq_result_t r;                     /* no payload: a solve result's is its error text, and it is OK */
    char rid[256];
    size_t rid_len;
    uint64_t ident_hash;               /* the sender's identity: a new session on its rid is not it */
    uint64_t bytes;                    /* of solution memory it holds (solbuf_bytes) */
    struct verifying *next;
} verifying_t;

static verifying_t *verifying_find(nq_broker_t *b, uint64_t lease)
{
    for (verifying_t *v = b->verifying; v; v = v->next)
        if (v->r.lease == lease)
            return v;
    return NULL;
}

/* Hands a big solution to the verifier: 1 taken (sol freed, its memory still counted until the
   verdict), 0 to be checked here (small, incomplete, or no verifier). */
static int verify_off_loop(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, nq_solbuf_t *sol)
{
    nq_job_t *j = jobq_find(b, r->job);
    if (!b->verifier || r->status != NQ_RES_OK || r->payload_len || sol->n <= VERIFY_IN_LOOP_MAX ||
        sol->received != sol->n || !j || j->spec.kind != NQ_KIND_SOLVE || j->spec.n != sol->n)
        return 0;
    verifying_t *v = calloc(1, sizeof *v);
    if (!v)
        return 0;
    v->ticket = ++b->verify_ticket;
    v->r = *r;
    v->r.payload = NULL;
    memcpy(v->rid, p->rid, p->rid_len);
    v->rid_len = p->rid_len;
    v->ident_hash = p->ident_hash;
    v->bytes = sol->n * 4;
    nq_verify_t req = { .ticket = v->ticket, .job = r->job, .cols = sol->cols, .n = sol->n };
    sol->cols = NULL;                   /* the verifier's now */
    free(sol);
    if (verifier_ask(b->verifier, &req) != 0) {
        b->solbuf_bytes -= v->bytes;
        free(v);
        return 1;                       /* dropped, unacknowledged: the worker sends it again */
    }
    v->next = b->verifying;
    b->verifying = v;
    return 1;
}

static verifying_t *verifying_take(nq_broker_t *b, uint64_t ticket)
{
    for (verifying_t **pp = &b->verifying; *pp; pp = &(*pp)->next)
        if ((*pp)->ticket == ticket) {
            verifying_t *v = *pp;
            *pp = v->next;
            return v;
        }
    return NULL;
}

/* A verdict: refused like any result that fails the checks, or on into the group. A sender gone
   meanwhile (or a new session on its connection) gets nothing: it sends the result again. */
static void on_verified(nq_broker_t *b, verifying_t *v, nq_verify_t *d)
{
    nq_peer_t *p = peers_find(b, v->rid, v->rid_len);
    if (!p || p->ident_hash != v->ident_hash)
        return;
    nq_lease_t *l = leases_find(b, v->r.lease);
    if (l && (l->job != v->r.job || l->shard != v->r.shard))
        l = NULL;
    if (!d->ok) {
        send_ack(b, p->rid, p->rid_len, &v->r);
        if (l)
            leases_release(b, l, 0, "result rejected");
        reject(b, p, &v->r, d->why);
        return;
    }
    nq_pending_result_t *e = group_append(b, p, &v->r);
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

void results_collect_verified(nq_broker_t *b)
{
    nq_verify_t d;
    while (b->verifier && b->verifying && verifier_take(b->verifier, &d)) {
        verifying_t *v = verifying_take(b, d.ticket);
        if (v) {
            b->solbuf_bytes -= v->bytes;
            txn_begin(b);
            on_verified(b, v, &d);
            free(v);
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
    if (r->kind == NQ_KIND_SOLVE && verifying_find(b, r->lease))
        return;                         /* a resend while its solution is being checked: that answers it */
    nq_solbuf_t *sol = solbuf_take(b, r);
    if (sol && verify_off_loop(b, p, r, sol))
        return;                         /* its verdict comes back through results_collect_verified */
    nq_pending_result_t *e = group_append(b, p, r);
    if (!e) {
        solbuf_free(b, sol);
        nq_log(NQ_LOG_ERROR, "result.oom", "job=%llu shard=%llu", (unsigned long long)r->job,
               (unsigned long long)r->shard);
        return;                         /* not ACKed: the worker will send it again */
    }
    char why[300];
    int ok = check_result(b, e, sol, why, sizeof why);
    solbuf_free(b, sol);
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
    if (!l->copy || !holder || !j || j->spec.quorum > 1)
        return 0;
    holder->copied = 1;                 /* no further copy of it: its result is a check vote now */
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
        copied = l->copied;
        results_learn(b, p, l, r);
        leases_remove(b, l);            /* its credit is free again at once */
        if (twin && !by_copy)           /* the holder delivered first: the copy stops */
            leases_cancel(b, twin, "the other lease of its shard delivered first");
    }
    p->nodes_done += r->nodes;
    txn_begin(b);
    e->by.who = peers_who(b, p);        /* the store tells a resend from a confirmation by it */
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

void results_on_solpart(nq_broker_t *b, nq_peer_t *p, const nq_solpart_t *s)
{
    if (verifying_find(b, s->lease))
        return;                         /* sent again while the first copy is being checked */
    nq_solbuf_t *sb = NULL;
    for (nq_solbuf_t *x = b->solbufs; x; x = x->next)
        if (x->job == s->job && x->shard == s->shard && x->lease == s->lease)
            sb = x;
    if (!lease_id_authentic(b, s->job, s->shard, s->lease, s->proof, p->ident_hash)) {
        b->stats.messages_bad++;        /* only the holder of a real lease may write or make us allocate */
        peer_misbehaved(b, p, "forged lease");
        return;
    }
    if (!sb) {
        nq_job_t *j = jobq_find(b, s->job);
        if (!j || j->spec.kind != NQ_KIND_SOLVE) {
            b->stats.messages_bad++;    /* a real lease of a job that ended: late, not hostile */
            return;
        }
        if (b->solbuf_bytes + j->spec.n * 4 > NQ_SOLBUF_MAX_BYTES) {
            nq_log(NQ_LOG_WARN, "solution.dropped", "job=%llu shard=%llu reason=\"assembly memory full\"",
                   (unsigned long long)s->job, (unsigned long long)s->shard);
            return;
        }
        sb = calloc(1, sizeof *sb);
        if (!sb || !(sb->cols = malloc(j->spec.n * sizeof *sb->cols))) {
            free(sb);
            return;                     /* the RESULT will be refused as incomplete */
        }
        sb->job = s->job;
        sb->shard = s->shard;
        sb->lease = s->lease;
        sb->n = j->spec.n;
        sb->started = b->now;
        b->solbuf_bytes += sb->n * 4;
        sb->next = b->solbufs;
        b->solbufs = sb;
    }
    uint64_t count = s->data_len / 4;
    if (s->offset > sb->n || count > sb->n - s->offset) {
        b->stats.messages_bad++;
        return;
    }
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *d = s->data + 4 * i;
        sb->cols[s->offset + i] = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
    }
    sb->received += count;
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
    verifier_destroy(&b->verifier);
    while (b->verifying) {
        verifying_t *v = b->verifying;
        b->verifying = v->next;
        free(v);
    }
    for (size_t i = 0; i < b->ngroup; i++)
        free(b->group[i].payload);
    free(b->group);
    b->group = NULL;
    b->ngroup = 0;
    while (b->solbufs) {
        nq_solbuf_t *s = b->solbufs;
        b->solbufs = s->next;
        solbuf_free(b, s);
    }
}
