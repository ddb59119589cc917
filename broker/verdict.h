/*
 * The one vote: every result a shard got (its first result, quorum votes, spot-checks, tail
 * copies) goes through verdict_decide, a pure function of the votes and a policy, with no store,
 * no sockets and no clock, so that its rules are tested as a table (tests/unit/test_verdict.c).
 * Quorum, spot-checks and tail copies are policies: how many identities must agree, and how many
 * may be asked before the shard is given up as a dispute.
 *
 * The rules, in order:
 *   1. An identity votes once: its later votes on the shard are not counted (a resend, or a key
 *      that reconnected under another worker id).
 *   2. Votes fall into classes of the same answer (agree.h: an equivalence, nodes aside).
 *   3. Inside a class, CPU node counts that differ are a nodes dispute. A nodes value held by at
 *      least two CPU votes and by more than any other value settles it; a vote without CPU nodes
 *      (the fast GPU kernel's) never does. While it is unsettled the class decides nothing.
 *   4. A class decides when its support (its votes, less the losers of a settled nodes dispute)
 *      reaches the policy's `agree` and is larger than every other class's. Every counted vote
 *      outside it, and every loser of its nodes dispute, is flagged.
 *   5. Otherwise: another vote is wanted (a CPU one, when a nodes dispute holds it up), until
 *      `max_votes` identities voted; then the shard is a dispute (CONFLICT, visible, retryable)
 *      and nobody is flagged: nothing showed who was wrong.
 * Arrival order decides nothing: the earliest vote of the winning class (with CPU nodes, when it has
 * any) is only whose row is kept.
 */
#ifndef NQ_VERDICT_H
#define NQ_VERDICT_H

#include <stdint.h>

#include "agree.h"

#define VERDICT_MAX_VOTES 8            /* more than any policy asks: a quorum of at most 3 and 2 more */

typedef struct {
    int64_t who;                       /* the voter's identity (a key, or a session) */
    nq_answer_t a;
} verdict_vote_t;

typedef struct {
    int agree;                         /* identities that must agree: the quorum; 2 for a check */
    int max_votes;                     /* identities asked at most before it is a dispute */
} verdict_policy_t;

typedef enum { VERDICT_MORE = 0, VERDICT_DECIDED, VERDICT_DISPUTE } verdict_kind_t;

typedef struct {
    verdict_kind_t kind;
    int winner;                        /* DECIDED: the vote whose row is kept (see above) */
    int voters;                        /* distinct identities counted */
    int want_cpu;                      /* MORE: a nodes dispute holds it up: only CPU nodes settle it */
    int flag[VERDICT_MAX_VOTES];       /* DECIDED: the votes (indexes) that lost */
    int nflag;
} verdict_t;

void verdict_decide(const verdict_vote_t *v, int n, const verdict_policy_t *p, verdict_t *out);
/* 1 when identity who has a vote among v[0..n). */
int verdict_voted(const verdict_vote_t *v, int n, int64_t who);

#endif
