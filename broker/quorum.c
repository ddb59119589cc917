/*
 * Quorum (--quorum Q): a shard counts only when Q different identities agree on it (CURVE keys
 * when keys are on, sessions otherwise; see nq_peer), never different self-chosen worker ids: so
 * with keys, Q votes need Q keys. Quorum is a policy of the one vote (verdict.h): Q identities
 * must agree, and Q + 2 may be asked. Every vote is a row of the store's checks table
 * (store_votes.c) until the shard is decided, so a broker restart loses none: the votes already
 * cast still count and their identities still may not vote again. When the verdict is in, the
 * winning answer goes to the store as the shard's first result and the identities it flags are
 * marked (`nq workers`); a disagreement asks one more worker; a dispute (Q + 2 votes without a
 * verdict) is stored as a CONFLICT, visible and retryable.
 */
#include "broker_impl.h"
#include "log.h"
#include "store_spotcheck.h"
#include "verdict.h"

#include <string.h>

int quorum_voted(nq_broker_t *b, uint64_t job, uint64_t shard, int64_t who)
{
    return who <= 0 || store_voted(b->store, job, shard, who) != 0;   /* unknown, or a DB error: no */
}

static void flag_losers(nq_broker_t *b, const nq_pending_result_t *e, const nq_vote_t *v, const verdict_t *d)
{
    for (int i = 0; i < d->nflag; i++) {
        char name[NQ_STR_MAX];
        store_identity_name(b->store, v[d->flag[i]].who, name, sizeof name);
        store_worker_flag(b->store, name);
        nq_log(NQ_LOG_WARN, "quorum.outvoted", "job=%llu shard=%llu worker=%s identity=%lld",
               (unsigned long long)e->r.job, (unsigned long long)e->r.shard, name,
               (long long)v[d->flag[i]].who);
    }
}

/*
 * Weighs e as a vote, with the shard's votes so far, without writing it. Returns 1 when the shard
 * is decided and e (whose arrival decided it: it gives the winning answer) should be stored; 0 when more votes are needed
 * (quorum_stage writes e as a vote in the group); -1 when its identity voted already (a resend);
 * -2 when the votes cannot be read (not acknowledged: it comes again); 2 when the votes never
 * agreed, and e goes to the store as a dispute (quorum_stage).
 */
int quorum_vote(nq_broker_t *b, nq_job_t *j, nq_pending_result_t *e)
{
    nq_vote_t v[VERDICT_MAX_VOTES + 1];
    verdict_vote_t vv[VERDICT_MAX_VOTES + 1];
    int n = e->by.who > 0 ? store_votes_get(b->store, e->r.job, e->r.shard, v, VERDICT_MAX_VOTES) : -1;
    if (n < 0)
        return -2;
    for (int i = 0; i < n; i++) {
        vv[i].who = v[i].who;
        store_vote_answer(&v[i], j->spec.kind, &vv[i].a);
    }
    if (verdict_voted(vv, n, e->by.who))
        return -1;
    v[n] = store_vote_of(&e->r, e->sol_hash, e->by.who);
    vv[n].who = v[n].who;
    store_vote_answer(&v[n], j->spec.kind, &vv[n].a);
    n++;
    verdict_policy_t policy = { (int)j->spec.quorum, (int)j->spec.quorum + 2 };
    verdict_t d;
    verdict_decide(vv, n, &policy, &d);
    if (d.kind == VERDICT_DECIDED) {     /* e completed it, so it is of the winning answer */
        flag_losers(b, e, v, &d);
        return 1;
    }
    if (d.kind == VERDICT_DISPUTE) {
        e->dispute = 1;
        return 2;
    }
    e->quorum_vote = 1;
    if (d.voters >= (int)j->spec.quorum)
        jobq_push(j, e->r.shard);       /* they disagree: ask one more worker */
    return 0;
}

/* Inside the group: a vote that waits for others is written (the shard's row is not leased now);
   a dispute becomes the shard's CONFLICT and its votes are forgotten, so that `nq retry` starts
   it afresh. The outcome (NQ_PUT_*), or -1. */
int quorum_stage(nq_broker_t *b, nq_pending_result_t *e)
{
    if (e->dispute) {
        int rc = store_result_dispute(b->store, &e->r, e->worker, &e->by, "quorum-dissent");
        return rc < 0 || store_votes_drop(b->store, e->r.job, e->r.shard) != 0 ? -1 : rc;
    }
    nq_vote_t v = store_vote_of(&e->r, e->sol_hash, e->by.who);
    if (store_vote_put(b->store, e->r.job, e->r.shard, &v) != 0 ||
        store_shard_voted(b->store, e->r.job, e->r.shard, e->r.lease) != 0)
        return -1;
    return NQ_PUT_IGNORED;
}
