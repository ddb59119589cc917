/*
 * A solve result's solution: assembled from its SOLPARTs, bounded in memory, and, when it is big,
 * handed to the verifier thread (verifier.h) so that the loop never spends seconds on it; the
 * verdicts come back to results.c through solutions_verdict.
 */
#include "broker_impl.h"
#include "log.h"
#include "verifier.h"

#include <stdlib.h>
#include <string.h>

/* Memory for solutions being assembled, at most: beyond it SOLPARTs are dropped (the RESULT is
   then refused as incomplete and the seed is computed again). A solution whose parts stop coming
   for NQ_SOLBUF_IDLE_S is given up: timed from its last part, since over a slow link (40 MB of a
   10^7-queen solution at 1 Mbit/s) the upload alone takes longer than that. */
#define NQ_SOLBUF_MAX_BYTES (4ull << 30)
#define NQ_SOLBUF_IDLE_S 300.0
#define UPLOAD_LOG_MIN_ROWS (1u << 18)  /* solutions this large (1 MiB) log their upload's progress */

nq_solbuf_t *solutions_take(nq_broker_t *b, const nq_result_t *r)
{
    for (nq_solbuf_t **pp = &b->solbufs; *pp; pp = &(*pp)->next)
        if ((*pp)->job == r->job && (*pp)->shard == r->shard && (*pp)->lease == r->lease) {
            nq_solbuf_t *s = *pp;
            *pp = s->next;
            return s;
        }
    return NULL;
}

void solutions_free(nq_broker_t *b, nq_solbuf_t *s)
{
    if (s) {
        b->solbuf_bytes -= s->n * 4;
        free(s->cols);
        free(s);
    }
}

/* Solutions whose RESULT never came (the worker died mid-send) are given up. */
void solutions_tick(nq_broker_t *b, double now)
{
    for (nq_solbuf_t **pp = &b->solbufs; *pp;) {
        nq_solbuf_t *s = *pp;
        if (now - s->last_at > NQ_SOLBUF_IDLE_S) {
            *pp = s->next;
            solutions_free(b, s);
        } else {
            pp = &s->next;
        }
    }
}

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

int solutions_verifying(nq_broker_t *b, uint64_t lease)
{
    return verifying_find(b, lease) != NULL;
}

/* Hands a big solution to the verifier: 1 taken (sol freed, its memory still counted until the
   verdict), 0 to be checked here (small, incomplete, or no verifier). */
int solutions_verify_off_loop(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, nq_solbuf_t *sol)
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

/*
 * Each part is acknowledged with the rows held from 0 on, in a HEARTBEAT item [lease, rows] (token
 * 0: not an inventory token). The worker keeps only a window of parts unacknowledged (worker.c),
 * so its heartbeats never queue behind a whole solution on a slow link, and a part sent again
 * (a resend after a reconnect) only moves it on to where we are.
 */
static void part_ack(nq_broker_t *b, nq_peer_t *p, uint64_t lease, uint64_t rows)
{
    nq_hb_item_t it = { lease, rows };
    nq_msg_t m = { .type = NQ_MSG_HEARTBEAT };
    m.u.heartbeat.items = &it;
    m.u.heartbeat.count = 1;
    outbox_send(b, p, &m);
}

/* Uploading is its lease's progress (the stall rule), and an operator sees a large one move. */
static void part_progress(nq_broker_t *b, nq_peer_t *p, nq_solbuf_t *sb)
{
    nq_lease_t *l = leases_find(b, sb->lease);
    if (l && l->peer == p)
        l->progress_at = b->now;
    uint32_t tenths = (uint32_t)(sb->received * 10 / sb->n);
    if (sb->n < UPLOAD_LOG_MIN_ROWS || tenths == sb->tenths_logged)
        return;
    sb->tenths_logged = tenths;
    nq_log(NQ_LOG_INFO, "result.upload", "job=%llu shard=%llu worker=%s rows=%llu of=%llu seconds=%.1f",
           (unsigned long long)sb->job, (unsigned long long)sb->shard, p->hello.worker_id,
           (unsigned long long)sb->received, (unsigned long long)sb->n, b->now - sb->started);
}

void solutions_on_part(nq_broker_t *b, nq_peer_t *p, const nq_solpart_t *s)
{
    if (verifying_find(b, s->lease)) {  /* sent again while the first copy is being checked */
        part_ack(b, p, s->lease, s->offset + s->data_len / 4);
        return;
    }
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
    sb->last_at = b->now;
    if (s->offset <= sb->received && s->offset + count > sb->received) {   /* parts come in order: an
                                           earlier one again (a resend) or a gap adds nothing */
        for (uint64_t i = sb->received - s->offset; i < count; i++) {
            const uint8_t *d = s->data + 4 * i;
            sb->cols[s->offset + i] = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                                      (uint32_t)d[3] << 24;
        }
        sb->received = s->offset + count;
        part_progress(b, p, sb);
    }
    part_ack(b, p, s->lease, sb->received);
}

int solutions_verdict(nq_broker_t *b, nq_verify_t *d, nq_result_t *r, nq_peer_t **p)
{
    if (!b->verifier || !b->verifying || !verifier_take(b->verifier, d))
        return 0;
    verifying_t *v = verifying_take(b, d->ticket);
    if (!v)
        return 2;
    b->solbuf_bytes -= v->bytes;
    *r = v->r;
    *p = peers_find(b, v->rid, v->rid_len);
    if (*p && (*p)->ident_hash != v->ident_hash)
        *p = NULL;
    free(v);
    return 1;
}

void solutions_free_all(nq_broker_t *b)
{
    verifier_destroy(&b->verifier);
    while (b->verifying) {
        verifying_t *v = b->verifying;
        b->verifying = v->next;
        free(v);
    }
    while (b->solbufs) {
        nq_solbuf_t *s = b->solbufs;
        b->solbufs = s->next;
        solutions_free(b, s);
    }
}
