/*
 * Spot-checks in the store (schema/011_store.sql): who delivered a shard's result, the
 * check results that followed it, the identities' records, and the flagged identities of a job
 * with the progress of the check of their other results. broker/spotcheck.c decides; this
 * file only reads and writes, inside the broker's open group like every other write.
 */
#ifndef NQ_STORE_SPOTCHECK_H
#define NQ_STORE_SPOTCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "agree.h"
#include "store.h"

/* An identity's record, across jobs. */
typedef struct {
    int64_t id;
    uint64_t results, confirmed, outvoted;
} nq_identity_t;

/* The row of identity `ident` (a CURVE key or a session), made on first use; worker is the name
   it gives now. 0, or -1 on a DB error. */
int store_identity(nq_store_t *s, const char *ident, const char *worker, nq_identity_t *out);
int store_identity_get(nq_store_t *s, int64_t id, nq_identity_t *out);   /* 0, 1 none, -1 */
int store_identity_stored(nq_store_t *s, int64_t id);                    /* results + 1 */
int store_identity_confirmed(nq_store_t *s, int64_t id);                 /* confirmed + 1 */
int store_identity_outvoted(nq_store_t *s, int64_t id);                  /* outvoted + 1 */
/* The worker id an identity last gave: for logs and `nq status`. */
int store_identity_name(nq_store_t *s, int64_t id, char *out, size_t outlen);

/* One result of a shard: the stored first one (seq 0) or a check (seq 1..). */
typedef struct {
    int64_t who;
    int status;
    uint64_t total, unique, nodes;
    int res13, res15;
    double elapsed;
    int nodes_kind;            /* NQ_NODES_*: nodes compare only between two of the CPU's */
    uint8_t digest[NQ_ANSWER_DIGEST];   /* agree.h: an enumerate's or solve's; zero for a count */
} nq_vote_t;

/* A result as a vote of identity who, and a vote as the answer it gives for a job of kind. */
nq_vote_t store_vote_of(const nq_result_t *r, const char *sol_hash, int64_t who);
void store_vote_answer(const nq_vote_t *v, int kind, nq_answer_t *a);

/* ---- store_votes.c: the votes of a shard not decided yet (quorum), in table checks ---- */
/* Appends v to the shard's votes (seq: the next). 0, or -1. */
int store_vote_put(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *v);
/* The shard's votes in arrival order, at most max: their number, or -1. */
int store_votes_get(nq_store_t *s, uint64_t job, uint64_t idx, nq_vote_t *out, int max);
/* 1 when identity who voted on the shard, 0 not, -1 error: one index lookup. */
int store_voted(nq_store_t *s, uint64_t job, uint64_t idx, int64_t who);
/* Forgets the shard's votes: a dispute ends them, and `nq retry` starts it afresh. 0, or -1. */
int store_votes_drop(nq_store_t *s, uint64_t job, uint64_t idx);

#define NQ_SPOT_MAX_VOTES 4    /* the first result, the check and two tie-breakers */

/* shards.verify: 0 nothing to check, 1 a check wanted, 2 disputed, 3 a nodes dispute between CPU
   counts, which only another CPU count settles (its tie-break copy asks for one) */
enum { NQ_VERIFY_NONE = 0, NQ_VERIFY_WANTED = 1, NQ_VERIFY_DISPUTED = 2, NQ_VERIFY_CPU = 3 };

typedef struct {
    int state;                 /* NQ_SHARD_*, or -1: no row */
    int verify;                /* NQ_VERIFY_* */
    int nvotes;                /* votes[0] is the stored result when state is done */
    nq_vote_t votes[NQ_SPOT_MAX_VOTES];
} nq_shard_votes_t;

int store_shard_votes(nq_store_t *s, uint64_t job, uint64_t idx, nq_shard_votes_t *out);   /* 0, -1 */

/* Adds check seq (1..) to the shard's record and counts it in the job (checks, disagreed). */
int store_check_put(nq_store_t *s, uint64_t job, uint64_t idx, int seq, const nq_vote_t *v, int agreed);
int store_shard_set_verify(nq_store_t *s, uint64_t job, uint64_t idx, int verify);
/* A tail copy's result whose check is still wanted (verify 1, by_copy) wants none now: 1 it did, 0
   it was not such a shard, -1 error. */
int store_shard_copy_alone(nq_store_t *s, uint64_t job, uint64_t idx);
/* A dispute decided for a check: the shard's result becomes v, in its row and in the job's sums
   (the old result's contribution leaves them in the same step). verify goes to 0. */
int store_shard_replace(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *old, const nq_vote_t *v);
/* No majority: the shard becomes CONFLICT, out of the job's sums, visible and retryable. */
int store_shard_dispute_lost(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *stored);

/* Flags identity who in job (it lost the dispute over shard); 1 when it was flagged already. */
int store_job_flag(nq_store_t *s, uint64_t job, int64_t who, uint64_t shard);
/* The check of a flagged identity's other results: marks its done, unchecked shards with idx in
   [from, to) as wanting a check, calls fn for each, and records `to` as how far it has come. */
int store_flag_sweep(nq_store_t *s, uint64_t job, int64_t who, uint64_t from, uint64_t to,
                     void (*fn)(void *ud, uint64_t idx), void *ud);

/* How many shards of the job want a check (verify <> 0). 0, or -1. */
int store_spot_open(nq_store_t *s, uint64_t job, uint64_t *n);
/* At load: every shard of the job that wants a check, and every sweep not finished. */
int store_spot_load(nq_store_t *s, uint64_t job, void (*shard_fn)(void *ud, uint64_t idx),
                    void (*sweep_fn)(void *ud, int64_t who, uint64_t next), void *ud);

#endif
