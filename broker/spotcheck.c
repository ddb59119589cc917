/*
 * Adaptive spot-checks (nq submit count N --verify-rate P): trust most results, check some,
 * and make a worker that lies pay for it with all of its work in the job.
 *
 * After a result is accepted, the same shard goes to a worker of another identity (another
 * CURVE key, or another session when keys are off) with probability
 *
 *     rate = P x m, where m starts at 1 and is
 *            x 3   while the identity has fewer than SPOT_NEW_RESULTS stored results (new),
 *            x 2   while its nodes/s per thread is over twice the median peer's (fast),
 *            x 1/2 once SPOT_GOOD_RECORD of its results were confirmed by others,
 *            x 1/4 once SPOT_GREAT_RECORD were,
 *     rate = 1  for an identity that ever lost a dispute (every result checked),
 *
 * capped at 1. This is BOINC's adaptive replication in miniature: replication is raised where
 * trust is not yet earned and lowered as a record of independently confirmed results grows.
 * The draw is a keyed hash of (job, shard, identity) under the broker's secret: workers cannot
 * tell which results will be checked, and a resend draws the same.
 *
 * A check is a policy of the one vote (verdict.h): two identities must agree, and up to four may
 * be asked. A check that agrees confirms both. One that disagrees opens a dispute: the result keeps
 * counting while a third identity computes the shard; the answer two identities agree on wins
 * (a fourth is asked when all three differ; then the shard is CONFLICT, visible and retryable).
 * Two CPU counts that differ only in nodes are a nodes dispute: its tie-break asks for the CPU
 * kernels' count (TASK.algo "cpu"), since a fast GPU count's nodes settle nothing. A tail copy's
 * result is checked the same way (results.c).
 * If the check wins, the shard's row and the job's sums take its result in one transaction.
 * Every identity that voted against the winner is flagged (`nq status`, `nq workers`), and a
 * sweep marks every other result it delivered in the job for a check of its own; the job ends
 * only when every check is decided. So the answer is exact whenever honest identities outnumber
 * the faulty in every dispute, at an expected cost of about P of the job.
 *
 * Durable state: the shard row (who delivered it, verify), the checks table, job_flagged with
 * each sweep's progress (schema/011_store.sql). In memory: only the queue of check copies,
 * rebuilt at load from the partial index of shards under check.
 */
#include "broker_impl.h"
#include "log.h"
#include "siphash.h"
#include "store_spotcheck.h"
#include "verdict.h"

#include <stdlib.h>
#include <string.h>

#define SPOT_NEW_RESULTS   10
#define SPOT_GOOD_RECORD   100
#define SPOT_GREAT_RECORD  1000
#define SPOT_SWEEP_SPAN    16384      /* shard indexes a sweep reads per loop round */
#define SPOT_CHECKERS_MAX  3          /* identities asked after the first: check + 2 tie-breaks */

typedef struct spot_sweep {
    uint64_t job;
    int64_t who;
    uint64_t next, total;
    struct spot_sweep *link;
} spot_sweep_t;

/* ---- the rate ---- */

static double peer_speed(const nq_broker_t *b, const nq_peer_t *p)
{
    double up = b->now - p->first_seen;
    uint32_t threads = p->hello.threads ? p->hello.threads : 1;
    return up > 1 ? (double)p->nodes_done / up / threads : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median peer's speed, every 5 s: O(peers log peers) then, nothing per result. */
static void speed_refresh(nq_broker_t *b)
{
    if (b->now - b->peer_speed_at < 5)
        return;
    b->peer_speed_at = b->now;
    size_t n = 0, cap = 0;
    double *v = NULL;
    for (nq_peer_t *p = b->peers; p; p = p->next) {
        double s = peer_speed(b, p);
        if (s <= 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            double *nv = realloc(v, cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[n++] = s;
    }
    b->peer_speed_median = 0;
    if (n >= 3) {                       /* "beyond its peers" needs peers */
        qsort(v, n, sizeof *v, cmp_double);
        b->peer_speed_median = v[n / 2];
    }
    free(v);
}

static double spot_rate(const nq_broker_t *b, const nq_job_t *j, const nq_peer_t *p, const nq_identity_t *rec)
{
    if (rec->outvoted > 0)
        return 1;
    double m = 1;
    if (rec->results < SPOT_NEW_RESULTS)
        m *= 3;
    if (b->peer_speed_median > 0 && peer_speed(b, p) > 2 * b->peer_speed_median)
        m *= 2;
    if (rec->confirmed >= SPOT_GREAT_RECORD)
        m *= 0.25;
    else if (rec->confirmed >= SPOT_GOOD_RECORD)
        m *= 0.5;
    double r = j->spec.verify_ppm / 1e6 * m;
    return r > 1 ? 1 : r;
}

/* The draw: uniform in [0, 1) from a hash only the broker can compute. */
static double spot_draw(const nq_broker_t *b, uint64_t job, uint64_t shard, int64_t who)
{
    uint64_t in[3] = { job, shard, (uint64_t)who };
    return (double)(siphash24(b->lease_key, in, sizeof in) >> 11) * 0x1p-53;
}

/* ---- classifying a result ---- */

/* p's record: made (with the name it gives) the first time, then only read, since this runs
   for every result of a job under spot-checks. */
static int peer_identity(nq_broker_t *b, nq_peer_t *p, nq_identity_t *rec)
{
    if (p->who == 0 || store_identity_get(b->store, p->who, rec) != 0) {
        if (store_identity(b->store, p->ident, p->hello.worker_id, rec) != 0)
            return -1;
    }
    p->who = rec->id;
    p->outvoted = rec->outvoted > 0;
    return 0;
}

/* The shard's votes as the one vote reads them (verdict.h): a count's answers. */
static int votes_of(const nq_shard_votes_t *sv, verdict_vote_t *out)
{
    for (int i = 0; i < sv->nvotes; i++) {
        out[i].who = sv->votes[i].who;
        store_vote_answer(&sv->votes[i], NQ_KIND_COUNT, &out[i].a);
    }
    return sv->nvotes;
}

static int vote_agrees(const nq_vote_t *a, const nq_vote_t *b)
{
    nq_answer_t x, y;
    store_vote_answer(a, NQ_KIND_COUNT, &x);
    store_vote_answer(b, NQ_KIND_COUNT, &y);
    return nq_answer_compare(&x, &y) == NQ_AGREE;
}

int spotcheck_classify(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, nq_pending_result_t *e)
{
    nq_identity_t rec;
    nq_shard_votes_t sv;
    if (peer_identity(b, p, &rec) != 0 || store_shard_votes(b->store, e->r.job, e->r.shard, &sv) != 0)
        return 0;                       /* the store failed: the put fails too, and is retried */
    e->by.who = rec.id;
    e->by.spot = 1;
    if (sv.nvotes == 0 || sv.state != NQ_SHARD_DONE) {
        double rate = spot_rate(b, j, p, &rec);
        e->by.verify = j->spec.verify_ppm > 0 && spot_draw(b, e->r.job, e->r.shard, rec.id) < rate;
        return 0;                       /* a first result */
    }
    if (sv.votes[0].who == rec.id || sv.verify == NQ_VERIFY_NONE || j->state == NQ_JOB_DONE)
        return 0;                       /* its own resend, or a decided shard: confirms or is evidence */
    verdict_vote_t vv[NQ_SPOT_MAX_VOTES];
    if (verdict_voted(vv, votes_of(&sv, vv), rec.id))
        return -1;                      /* it voted already: a resend */
    e->spot_vote = 1;
    return 1;
}

/* ---- staging a vote ---- */

/* A check is a policy of the one vote: two identities agree, and up to SPOT_CHECKERS_MAX are asked
   after the first. */
static const verdict_policy_t SPOT_POLICY = { 2, 1 + SPOT_CHECKERS_MAX };

/* The verdict's winner becomes the shard's result (when it is not the stored one already), its
   side is confirmed, and every identity the verdict flags is outvoted and swept. */
static int spot_decided(nq_broker_t *b, nq_pending_result_t *e, const nq_shard_votes_t *sv,
                        const verdict_t *d)
{
    nq_store_t *s = b->store;
    uint64_t job = e->r.job, idx = e->r.shard;
    const nq_vote_t *win = &sv->votes[d->winner];
    int rc = vote_agrees(win, &sv->votes[0]) ? store_shard_set_verify(s, job, idx, NQ_VERIFY_NONE)
                                             : store_shard_replace(s, job, idx, &sv->votes[0], win);
    int lost[NQ_SPOT_MAX_VOTES] = { 0 };
    for (int i = 0; i < d->nflag; i++)
        lost[d->flag[i]] = 1;
    for (int i = 0; rc == 0 && i < sv->nvotes; i++) {
        const nq_vote_t *v = &sv->votes[i];
        if (!lost[i]) {
            rc = store_identity_confirmed(s, v->who);
            continue;
        }
        char name[NQ_STR_MAX];
        store_identity_name(s, v->who, name, sizeof name);
        nq_log(NQ_LOG_WARN, "spotcheck.outvoted", "job=%llu shard=%llu worker=%s identity=%lld",
               (unsigned long long)job, (unsigned long long)idx, name, (long long)v->who);
        rc = store_identity_outvoted(s, v->who);
        int again = rc == 0 ? store_job_flag(s, job, v->who, idx) : -1;   /* 1: flagged before */
        if (again == 0 && e->nflagged < 3)
            e->spot_flagged[e->nflagged++] = v->who;
        if (again < 0 || store_worker_flag(s, name) < 0)
            rc = -1;
    }
    e->spot_closed = 1;
    return rc;
}

int spotcheck_stage(nq_broker_t *b, nq_pending_result_t *e)
{
    nq_store_t *s = b->store;
    nq_shard_votes_t sv;
    e->spot_push = e->spot_closed = e->nflagged = 0;
    if (store_shard_votes(s, e->r.job, e->r.shard, &sv) != 0)
        return -1;
    if (sv.state != NQ_SHARD_DONE || sv.verify == NQ_VERIFY_NONE || sv.nvotes >= NQ_SPOT_MAX_VOTES)
        return store_result_put_by(s, &e->r, e->worker, NULL, NULL, &e->by);   /* decided meanwhile */
    nq_vote_t v = store_vote_of(&e->r, NULL, e->by.who);
    int seq = sv.nvotes;
    if (store_check_put(s, e->r.job, e->r.shard, seq, &v, vote_agrees(&v, &sv.votes[0])) != 0)
        return -1;
    sv.votes[sv.nvotes++] = v;
    verdict_vote_t vv[NQ_SPOT_MAX_VOTES];
    verdict_t d;
    verdict_decide(vv, votes_of(&sv, vv), &SPOT_POLICY, &d);
    int rc = 0;
    if (d.kind == VERDICT_DECIDED) {
        rc = spot_decided(b, e, &sv, &d);
    } else if (d.kind == VERDICT_MORE) {
        if (sv.verify == NQ_VERIFY_WANTED)
            nq_log(NQ_LOG_WARN, "spotcheck.disagree", "job=%llu shard=%llu worker=%s nodes=%d",
                   (unsigned long long)e->r.job, (unsigned long long)e->r.shard, e->worker, d.want_cpu);
        int verify = d.want_cpu ? NQ_VERIFY_CPU : NQ_VERIFY_DISPUTED;
        rc = sv.verify == verify ? 0 : store_shard_set_verify(s, e->r.job, e->r.shard, verify);
        e->spot_push = 1;               /* a tie-break */
    } else {
        nq_log(NQ_LOG_WARN, "spotcheck.conflict", "job=%llu shard=%llu votes=%d",
               (unsigned long long)e->r.job, (unsigned long long)e->r.shard, sv.nvotes);
        rc = store_shard_dispute_lost(s, e->r.job, e->r.shard, &sv.votes[0]);
        e->spot_closed = 1;
    }
    return rc == 0 ? NQ_PUT_CHECKED : -1;
}

/* ---- after the commit ---- */

static void sweep_start(nq_broker_t *b, nq_job_t *j, int64_t who, uint64_t next)
{
    for (spot_sweep_t *w = b->sweeps; w; w = w->link)
        if (w->job == j->id && w->who == who)
            return;
    spot_sweep_t *w = calloc(1, sizeof *w);
    if (!w)
        return;                         /* its row stays at sweep < total: the next start resumes */
    w->job = j->id;
    w->who = who;
    w->next = next;
    w->total = j->shards_total;
    w->link = b->sweeps;
    b->sweeps = w;
    j->sweeps++;
}

void spotcheck_after_commit(nq_broker_t *b, nq_job_t *j, const nq_pending_result_t *e)
{
    if (e->outcome == NQ_PUT_NEW && e->by.verify) {
        jobq_push_check(j, e->r.shard);
        j->checks_open++;
    }
    if (e->outcome != NQ_PUT_CHECKED)
        return;
    if (e->spot_push)
        jobq_push_check(j, e->r.shard);
    if (e->spot_closed && j->checks_open > 0)
        j->checks_open--;
    for (int i = 0; i < e->nflagged; i++) {
        sweep_start(b, j, e->spot_flagged[i], 0);
        for (nq_peer_t *p = b->peers; p; p = p->next)   /* rare: a dispute lost */
            if (p->who == e->spot_flagged[i])
                p->outvoted = 1;
    }
}

/* ---- dispatch ---- */

/* The copy's voters from the store: 0, 2 when the copy is moot (its check was decided meanwhile:
   a copy queued at a restart, and the check it waited for came in from a worker's outbox), -1. */
static int copy_voters(nq_broker_t *b, nq_job_t *j, nq_check_copy_t *c)
{
    nq_shard_votes_t sv;
    if (store_shard_votes(b->store, j->id, c->shard, &sv) != 0)
        return -1;
    if (sv.state != NQ_SHARD_DONE || sv.verify == NQ_VERIFY_NONE)
        return 2;
    c->nvoters = 0;
    for (int i = 0; i < sv.nvotes && i < 4; i++)
        c->voters[c->nvoters++] = sv.votes[i].who;
    return 0;
}

int spotcheck_excludes(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, nq_check_copy_t *c)
{
    if (peers_ident_holds(b, p, j->id, c->shard))
        return 1;
    if (p->who == 0) {                  /* once per peer */
        nq_identity_t rec;
        if (peer_identity(b, p, &rec) != 0)
            return 1;
        p->outvoted = rec.outvoted > 0;
    }
    if (p->outvoted)
        return 1;                       /* an identity that lost a dispute checks nobody */
    int fresh = c->nvoters < 0, rc;
    if (fresh && (rc = copy_voters(b, j, c)) != 0)   /* once per copy, and ... */
        return rc < 0 ? 1 : 2;
    for (int i = 0; i < c->nvoters; i++)
        if (c->voters[i] == p->who) {   /* ... again when it excludes p: it may be moot by now, and a
                                           moot copy every identity left voted on held the queue */
            rc = fresh ? 0 : copy_voters(b, j, c);
            return rc == 2 ? 2 : 1;
        }
    return 0;
}

/* ---- sweeps and load ---- */

typedef struct { nq_broker_t *b; nq_job_t *j; } spot_ctx_t;

static void on_marked(void *ud, uint64_t idx)
{
    spot_ctx_t *c = ud;
    jobq_push_check(c->j, idx);
    c->j->checks_open++;
}

static void on_sweep(void *ud, int64_t who, uint64_t next)
{
    spot_ctx_t *c = ud;
    sweep_start(c->b, c->j, who, next);
}

int spotcheck_load(nq_broker_t *b, nq_job_t *j)
{
    spot_ctx_t c = { b, j };
    return store_spot_load(b->store, j->id, on_marked, on_sweep, &c);
}

static void on_requeue(void *ud, uint64_t idx)
{
    spot_ctx_t *c = ud;
    jobq_push_check(c->j, idx);
}

static void on_sweep_known(void *ud, int64_t who, uint64_t next)
{
    (void)ud, (void)who, (void)next;    /* sweeps are in memory already */
}

int spotcheck_holds(nq_broker_t *b, nq_job_t *j, int idle)
{
    if (j->spec.verify_ppm == 0 && j->checks_open == 0 && j->sweeps == 0)
        return 0;                       /* no spot-checks, and no tail copy's result waits for one */
    if (j->sweeps > 0 || (j->checks_open > 0 && !idle))
        return 1;
    /* the counter says none, or nothing moves: ask the store (the partial index: O(open)) */
    uint64_t open = 0;
    if (store_spot_open(b->store, j->id, &open) != 0)
        return 1;
    j->checks_open = open;
    if (open > 0 && idle) {
        nq_log(NQ_LOG_WARN, "spotcheck.requeue", "job=%llu open=%llu", (unsigned long long)j->id,
               (unsigned long long)open);
        spot_ctx_t c = { b, j };
        store_spot_load(b->store, j->id, on_requeue, on_sweep_known, &c);
    }
    return open > 0;
}

/* One span of every sweep per round: a flagged identity's results in a job of 10^8 shards are
   all marked within a few thousand rounds, and no round reads more than a span per sweep. */
void spotcheck_tick(nq_broker_t *b, double now)
{
    (void)now;
    speed_refresh(b);
    for (spot_sweep_t **pp = &b->sweeps; *pp;) {
        spot_sweep_t *w = *pp;
        nq_job_t *j = jobq_find(b, w->job);
        uint64_t to = w->total - w->next > SPOT_SWEEP_SPAN ? w->next + SPOT_SWEEP_SPAN : w->total;
        spot_ctx_t c = { b, j };
        if (j && b->store_ok && store_flag_sweep(b->store, w->job, w->who, w->next, to, on_marked, &c) != 0)
            return;                     /* the store failed: the next round tries again */
        w->next = to;
        if (j && w->next < w->total) {
            pp = &w->link;
            continue;
        }
        *pp = w->link;
        if (j)
            nq_log(NQ_LOG_INFO, "spotcheck.sweep_done", "job=%llu identity=%lld checks_open=%llu",
                   (unsigned long long)j->id, (long long)w->who, (unsigned long long)j->checks_open);
        free(w);
        if (j) {
            j->sweeps--;
            jobq_due(b, j);             /* may end the job: the loop settles it */
            return;
        }
    }
}

int spotcheck_wants_cpu(nq_broker_t *b, nq_job_t *j, uint64_t shard)
{
    nq_shard_votes_t sv;
    return store_shard_votes(b->store, j->id, shard, &sv) == 0 && sv.verify == NQ_VERIFY_CPU;
}

void spotcheck_forget_job(nq_broker_t *b, uint64_t job)
{
    for (spot_sweep_t **pp = &b->sweeps; *pp;) {
        spot_sweep_t *w = *pp;
        if (w->job == job) {
            *pp = w->link;
            free(w);
        } else {
            pp = &w->link;
        }
    }
}

void spotcheck_free_all(nq_broker_t *b)
{
    while (b->sweeps) {
        spot_sweep_t *w = b->sweeps;
        b->sweeps = w->link;
        free(w);
    }
}
