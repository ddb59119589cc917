/*
 * The broker's private state, shared by its files. Each file calls only files below it in this
 * list (the loop on top), so no two files call each other, however indirectly:
 *
 *   broker.c          the loop: sockets, message dispatch, who a peer is, the timers' order
 *   control.c         the client endpoint's operations
 *   submit.c          turning a submit request into a job and its shards
 *   results.c         taking a result: group commit, then ACK
 *   solutions.c       a solve result's solution: assembled from SOLPARTs, big ones to the verifier
 *   result_check.c    checking a result against its job and shard before it may be stored
 *   dispatch.c        the scheduler: which shard each worker with credit gets next
 *   sched_rules.c     ... its rules as pure functions of numbers (sched_rules.h)
 *   broker_metrics.c  the snapshot it hands the HTTP listener (broker/http/) once a second
 *   jobs.c            a job's life: load, list, settle (done or failed), cancel, retry, grace
 *   job_wait.c        why a job waits, when no connected worker may take its shards
 *   spotcheck.c       adaptive spot-checks under --verify-rate: the rate rule, disputes, flags
 *   quorum.c          votes of independent workers under --quorum
 *   verdict.c         the one vote: a pure decide() over a shard's votes (verdict.h)
 *   peers.c           the connected workers: identity, pauses, quarantine's effect, liveness
 *   leases.c          who holds which shard: leases, their cost, heartbeats' inventories
 *   hungry.c          the peers with credit left, the only ones the scheduler walks
 *   idents.c          what is held against an identity across its connections
 *   jobq.c            jobs in memory as queues: what goes out next, and which jobs are due to settle
 *   listings.c        the lists the loop has asked the lister for, and whom each one is for
 *   lister.c          shard lists built on a thread of their own (lister.h): the loop never waits
 *   verifier.c        big solutions checked and stored on a thread of their own (verifier.h)
 *   offload.c         the thread and queues under the lister and the verifier (offload.h)
 *   lease_id.c        lease ids and proofs that only this broker can make
 *   txn.c             the group transaction, a client's write of its own, the DB file's check
 *   outbox.c          every message out, queued and sent when the loop drains it
 *   ratelog.c         log lines for hostile frames at a bounded rate
 *
 * What the files below the job lifecycle change never ends a job there and then: they mark it
 * due (jobq_due), and the loop settles due jobs (jobs_settle_due) before it waits.
 */
#ifndef NQ_BROKER_IMPL_H
#define NQ_BROKER_IMPL_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "broker.h"
#include "link.h"
#include "lister.h"
#include "verifier.h"
#include "proto.h"
#include "store.h"

typedef struct nq_peer nq_peer_t;
typedef struct nq_ident nq_ident_t;

/* A spot-check copy waiting for a worker, with the identities that may not take it (the shard's
   voters so far: looked up once, when it is first offered, so that offering it to 10^4 idle
   workers reads memory, not the store). */
typedef struct {
    uint64_t shard;
    int64_t voters[4];
    int nvoters;                       /* -1: not looked up yet */
} nq_check_copy_t;

/*
 * A job in memory. Shards waiting for a worker are of two kinds: those never leased, from
 * order position `frontier` on (a pure function of the job: no memory, no row), and those
 * that came back (a lost lease, a restart, quorum copies), in `pending`, popped from the
 * end and leased first. So a 10^8-shard job costs its returned shards, not its size.
 */
typedef struct nq_job {
    uint64_t id;
    nq_job_spec_t spec;
    nq_job_state_t state;
    uint64_t shards_total, shards_done, shards_failed, shards_conflict;
    uint64_t leases_out;               /* its leases on workers, spot-check and tail copies included */
    uint64_t solutions_found;          /* solve: distinct verified solutions */
    struct nq_shards *list;            /* count/enumerate: descriptors and the lease order */
    uint64_t list_ticket;              /* non-zero while the lister builds it: nothing is leased */
    uint64_t frontier;                 /* next never-leased order position from the front (004) */
    uint64_t back;                     /* ... and the end of them: [frontier, back) never leased (009) */
    /* What is left, in the list's cost units (jobq.c): returned shards and shards out; and what a
       cost unit is in nodes, learnt from results (cal_nodes / cal_cost over cal_n results) */
    double pending_cost, leased_cost;
    double cal_nodes, cal_cost;
    uint32_t cal_n;
    /* This run of the broker's pace (control.c): when it began (the job loaded, or its list came),
       the work then left in cost units, and the shards then done. An ETA from the estimated work
       this run has done, so a resume counts nothing done before it and the largest shards going
       first do not swing it (it went 6 min, 1 h, 3 h 50, 46 min within 6 s by shard counts). */
    double run_t0, run_left0;
    uint64_t run_done0;
    /* The last point of its progress chart written (progress.c): when (monotonic), its value */
    double chart_at, chart_done;
    uint64_t *pending;                 /* returned shard indexes; the next is pending[npending-1] */
    size_t npending, cap;
    uint64_t *grace;                   /* after a restart: leased shards waiting for their worker */
    size_t ngrace;
    double grace_until;                /* monotonic seconds */
    /* spot-checks (spotcheck.c): check copies waiting for a worker, leased before anything else;
       shards whose check is not decided (their verify <> 0); flagged identities being swept */
    nq_check_copy_t *checks;
    size_t nchecks, checks_cap;
    uint64_t checks_open;
    uint32_t sweeps;
    struct nq_job *next;               /* in priority order */
    int due;                           /* its counters moved: the loop settles it (jobq_due) */
    struct nq_job *due_next;
} nq_job_t;

/* What a lease is, set when it is made (leases_add) and changed only by leases_set_kind: its kind
   says whether it holds its shard's row, so whether it counts in its job's work left (leases.c). */
typedef enum {
    NQ_LEASE_FIRST,                    /* the shard's own lease: the row is leased to it */
    NQ_LEASE_CHECK,                    /* a spot-check copy: the shard's row stays done */
    NQ_LEASE_COPY,                     /* a tail copy of another lease (dispatch.c): the row is not its */
    NQ_LEASE_COPIED                    /* a shard's own lease whose copy delivered first: its own
                                          result is a check vote, and it gets no further copy */
} nq_lease_kind_t;

/* A shard out on a worker. */
typedef struct nq_lease {
    uint64_t id, job, shard;
    uint32_t attempt;
    nq_lease_kind_t kind;
    struct nq_lease *twin;             /* the other lease of a tail copy pair while both are out */
    double cost;                       /* its shard's cost estimate (jobq_cost), in the job's units */
    nq_peer_t *peer;                   /* NULL: re-armed after restart, owner not yet back */
    uint64_t progress;
    double progress_at;                /* when progress last moved */
    double copied_at;                  /* NQ_LEASE_COPIED: when its copy's result came */
    double sent_at, started_at;        /* when it was sent; when the broker first saw it move (0: not
                                          yet): its holder's speed as the broker sees it (leases.c) */
    uint64_t sync;                     /* its peer's sync_sent when it was sent (see leases_heartbeat) */
    uint32_t listed;                   /* the hb_stamp of the last heartbeat that listed it */
    struct nq_lease *next_in_peer;
    struct nq_lease *hnext;            /* hash chain */
} nq_lease_t;

/* An identity that sends this many messages no honest worker sends (results failing the
   broker's checks, forged leases, malformed frames, evidence) is quarantined (idents.c). */
#define QUARANTINE_AFTER 3

/*
 * A worker that reports a failure on a job's shard gets none of that job's shards for a while:
 * 1 s after its first error, doubling with each error after the pause, up to PAUSE_MAX_S. Errors
 * on leases sent before the pause cost their shards nothing. So a worker that fails everything
 * (a build older than the job's shard encoding, a broken machine, a hostile peer) costs a job
 * one attempt per pause instead of wearing every shard it is offered down to FAILED in a
 * second, while a shard that fails on every worker still ends FAILED after max-attempts.
 */
#define PAUSED_JOBS 4
#define PAUSE_MAX_S 600.0

/* Restarts (a HELLO with a new nonce on the same connection) allowed per window before they
   count as misbehaviour: an honest worker restarts rarely, a hostile one to shed its leases. */
#define RESTARTS_PER_WINDOW 2
#define RESTART_WINDOW_S 60.0

/*
 * A connected worker. Messages find it by its ZeroMQ routing id (random, chosen by the worker),
 * but that is only an address: who it IS is `ident`, its CURVE public key when keys are on, or
 * its session (worker id and the secret nonce of its HELLO) otherwise. Lease proofs, quorum votes
 * and the per-message key check all use the identity, never the routing id or the worker id.
 */
struct nq_peer {
    char rid[256];
    size_t rid_len;
    nq_hello_t hello;
    char pubkey[64];                   /* CURVE key that authenticated it, when keys are on */
    char ident[64];                    /* the pubkey, or "session:" + a hash of (worker id, nonce) */
    uint64_t ident_hash;               /* keyed hash of ident: what lease proofs bind to */
    nq_ident_t *rec;                   /* what is held against its identity (idents.c) */
    int64_t who;                       /* its identities row in the store, 0 until needed */
    int outvoted;                      /* ... which lost a dispute: it checks nobody */
    uint32_t restarts;                 /* on this connection, in the window that began at restart_window */
    double restart_window;
    uint64_t dropped;                  /* frames dropped since quarantine, logged as a rate */
    double dropped_logged;
    nq_peer_t *hnext;                  /* chain in the broker's peer table (by routing id) */
    nq_peer_t *ihnext;                 /* chain in its identity table (by ident_hash) */
    uint32_t credit;                   /* shards it wants outstanding, at most NQ_CREDIT_MAX */
    uint32_t outstanding;
    uint64_t sync_sent;                /* the last sync token sent to it in a HEARTBEAT */
    double sync_at;                    /* when */
    uint64_t sync_timed;               /* a token whose echo is awaited (0: none): a round trip's sample */
    double sync_timed_at;              /* when it was sent */
    nq_link_t link;                    /* its round trip, from those echoes (link.h): every wait on it */
    int link_far;                      /* logged as far slower than the others (peers.c) */
    uint32_t hb_stamp;                 /* heartbeats read from it */
    double last_recv, last_sent;       /* monotonic seconds */
    nq_lease_t *leases;
    uint64_t nodes_done;               /* for nodes/s */
    nq_hb_device_t *devices;           /* a GPU worker's devices, as its last HEARTBEAT said (NULL: none) */
    uint32_t ndevices;
    /* How fast it counts, in the shards' cost units a second (leases.c, results.c), so that GPU and
       CPU workers, whose node counts differ, compare: rate, all it does, from its results and its
       heartbeats' progress; lane, on one shard, from its results' elapsed times. 0: not measured
       yet. out_cost: the cost of the leases it holds (dispatch's budget). */
    double rate, rate_at, rate_cum;
    double lane;
    double lane_shown;                 /* its lane from its results alone, never lowered by progress */
    double cost_done;
    double out_cost;
    struct {                           /* jobs it reported failures on (see PAUSED_JOBS) */
        uint64_t job;                  /* 0: a free slot */
        double until, pause;           /* monotonic seconds; the last pause's length */
    } paused[PAUSED_JOBS];
    double first_seen;
    nq_peer_t *next;
    /* in the broker's `hungry` list while it has credit left and may get work: dispatch walks
       only these, so 10^4 busy workers cost nothing per round */
    nq_peer_t *hungry_next, *hungry_prev;
    int hungry;
};

/* A list the lister is building (listings.c), and whom it is for: a job in memory (job > 0), or a
   client's submit, which gets its answer when the list comes (submit.c). */
typedef struct nq_listing {
    uint64_t ticket;
    uint64_t job;                      /* 0: a submit */
    nq_job_spec_t spec;                /* a submit's job, checked but for its list */
    char rid[256];                     /* a submit's client */
    size_t rid_len;
    struct nq_listing *next;
} nq_listing_t;

/* A result waiting for its group commit. */
typedef struct nq_pending_result {
    nq_result_t r;
    uint8_t *payload;                  /* owned copy */
    char worker[NQ_STR_MAX];
    char ident[64];                    /* the sender's identity (a quorum voter) */
    char sol_hash[80], sol_path[512];
    int outcome;                       /* NQ_PUT_* of the put inside the open transaction */
    nq_put_by_t by;                    /* spot-checks: who delivered it, is a check wanted */
    int spot_vote;                     /* a check of a stored result, not a first result */
    int dispute;                       /* quorum votes that never agreed: stored as a CONFLICT */
    int quorum_vote;                   /* a quorum vote that waits for others: written as a vote */
    int spot_push, spot_closed;        /* after the commit: one more copy; the check decided */
    int64_t spot_flagged[3];           /* identities that lost the dispute it decided */
    int nflagged;
    char rid[256];
    size_t rid_len;
} nq_pending_result_t;

/* A solve result's permutation being assembled from SOLPARTs. */
typedef struct nq_solbuf {
    uint64_t job, shard, lease;
    uint64_t n, received;              /* received: the rows from 0 on that have come, in order */
    uint32_t *cols;
    double started, last_at;           /* last_at: its last part */
    uint32_t tenths_logged;            /* upload progress logged (solutions.c) */
    struct nq_solbuf *next;
} nq_solbuf_t;

typedef struct {
    uint64_t results_total, results_duplicate, results_conflict, results_rejected;
    uint64_t results_evidence;         /* results that disagreed with a decided shard */
    uint64_t results_undecidable;      /* first results for jobs not running: kept nowhere */
    uint64_t results_deferred;         /* not checkable while the job's list was built: resent */
    uint64_t sends_dropped;            /* messages the outbox could not deliver (outbox.c) */
    uint64_t messages_bad, commits;
    uint64_t leases_lost;              /* TASKs a worker's inventory showed it never got */
    double commit_seconds_sum, commit_seconds_max;
} nq_broker_stats_t;

struct nq_broker {
    nq_broker_cfg_t cfg;
    char control_ep[PATH_MAX + 16];    /* cfg.control when none was named: beside the DB */
    nq_store_t *store;
    sqlite3 *query_db;                 /* read-only, for control queries: the last committed state,
                                          so a `nq status` never forces a commit (control.c) */
    void *ctx;
    int own_ctx;
    void *workers_sock, *control_sock;
    void *wake_sock;                   /* inproc PULL: broker_wake ends a poll early */
    uint64_t nonce;
    int lock_fd;                       /* flock on <db>.lock: one broker per DB */
    int store_ok;                      /* 0 after a failed commit (disk full): no leasing, no ACKs */
    int txn_open;                      /* the loop's writes ride in one transaction per group */
    double txn_since;
    int64_t txn_changes;               /* sqlite3_total_changes at BEGIN: nothing written, nothing to commit */
    double store_retry_at;
    int stopping;
    const atomic_int *stop;            /* cfg.stop, then broker_run's: checked inside long loops */

    nq_job_t *jobs;                    /* active jobs, priority desc then id asc */
    nq_lister_t *lister;               /* builds shard lists off the loop (lister.h): a submit's shape */
    nq_lister_t *orderer;              /* ... and a job's lease order, seconds each: apart, so a submit
                                          never waits behind another job's estimates */
    nq_listing_t *listings;            /* what it builds, for whom (listings.c) */
    uint32_t listing_submits;          /* ... of them, clients' submits waiting for an answer */
    uint64_t listing_ticket;           /* the last ticket handed out */
    nq_peer_t *peers;                  /* every peer, for the liveness sweep */
    nq_peer_t *hungry;                 /* peers with credit left (see nq_peer_t) */
    double last_sweep;                 /* when peers_tick last walked every peer */
    nq_peer_t **peer_tab;              /* the same, hashed by routing id: one lookup per message */
    nq_peer_t **ident_tab;             /* ... and by identity: every connection of one key */
    nq_ident_t **idents;               /* identity records (idents.c), hashed like ident_tab */
    size_t nidents;
    double idents_at;                  /* when idents_tick last walked them */
    uint32_t idents_stamp;
    nq_lease_t **lease_tab;            /* hash by lease id */
    size_t lease_buckets, nleases;
    uint32_t lease_counter;            /* high half of the next lease id */
    uint64_t lease_key[2];             /* SipHash key: lease ids are unforgeable (kept in meta) */
    size_t solbuf_bytes;               /* memory held by solutions being assembled */

    nq_pending_result_t *group;
    size_t ngroup, group_cap;

    nq_solbuf_t *solbufs;
    struct nq_verifier *verifier;      /* big solutions checked off the loop (verifier.h, solutions.c) */
    struct verifying *verifying;       /* ... the results waiting for its verdict */
    uint64_t verify_ticket;
    struct spot_sweep *sweeps;         /* spotcheck.c: flagged identities' results being marked */
    double peer_speed_median;          /* nodes/s per thread of the median peer (spotcheck.c) */
    double peer_speed_at;
    double log_quiet_until;            /* hostile-frame log lines: at most one burst a second */
    uint32_t log_burst;
    uint64_t log_suppressed;
    nq_broker_stats_t stats;
    void *metrics;
    double last_metrics;
    double last_round;                 /* when the loop last came round: to excuse our own stalls */
    double rtt_sum;                    /* the peers' round trips at the last liveness sweep, and how */
    uint32_t rtt_n;                    /* many had one: a far slower link is logged (peers.c) */
    struct nq_outbox *outbox;          /* messages queued until the loop drains them (outbox.c) */
    /* The scheduler's view of the workers (dispatch.c), refreshed every quarter second: their
       summed rate and the fastest lane; at the tail, the leases worth a copy, latest finish first */
    double rate_total, lane_best, sched_at;
    struct tail_cand *tail;
    size_t ntail;
    double tail_at;
    nq_job_t *due;                     /* jobs to settle (jobq.c) */
    int db_lost;                       /* the DB file was removed or replaced: no commit, no ACK, exit */
    char db_lost_why[400];
    double db_checked_at;
    /* The clock, read once per loop round (as Redis keeps server.unixtime): every timer of the
       round (liveness, grace, stalls, rates) sees the same `now`, and tests replace `clock`
       with a fake one to drive expiry and grace without sleeping. */
    double now;
    double (*clock)(void);             /* monotonic seconds; broker_now unless a test sets it */
};

/* ---- broker.c: the loop ---- */
double broker_now(void);                           /* monotonic seconds: the real clock */
/* One round of the loop: waits up to timeout_ms for messages, handles them, runs the timers
   at b->clock(). broker_run calls it until told to stop; tests call it directly. -1: the
   poll failed. */
int broker_round(nq_broker_t *b, long timeout_ms);
double broker_wall(void);                          /* unix seconds */
/* A stop was asked for (SIGTERM): a loop that can run long checks it and gives up. */
static inline int broker_stop_asked(const nq_broker_t *b)
{
    return b->stop && atomic_load(b->stop);
}

/* ---- control.c ---- */
void control_on_request(nq_broker_t *b, const void *rid, size_t rid_len, const nq_ctl_req_t *req);

/* ---- submit.c: a client's submit, answered now (a solve job, a refusal, busy) or once the
   lister has built its list (submit_listed); seconds > 0: --shard-seconds, whose depth the
   lister chooses. ---- */
void submit_begin(nq_broker_t *b, const void *rid, size_t rid_len, const nq_job_spec_t *spec, double seconds);
/* A submit's list has come: the job is created and its client answered. *list is taken when the
   job is; why says what refused a missing list (NQ_SHARDS_*), err how. */
void submit_listed(nq_broker_t *b, const nq_listing_t *x, struct nq_shards **list, int why, const char *err);
/* Creates a job from a spec and loads it, building its list on this thread: for tests and for
   callers outside the loop. The control endpoint uses submit_begin, which never waits for a list. */
int submit_sync(nq_broker_t *b, const nq_job_spec_t *spec, uint64_t *id, char *err, size_t errlen);

/* ---- results.c: take, commit, then ACK ---- */
void results_on_result(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r);
void results_flush(nq_broker_t *b);                /* group commit, then ACKs */
int results_due(nq_broker_t *b, double now);
void results_collect_verified(nq_broker_t *b);     /* each round: the verifier's verdicts */
void results_free_all(nq_broker_t *b);
const char *results_error_text(const nq_result_t *r, char *buf, size_t len);

/* ---- solutions.c: a solve result's solution, assembled from SOLPARTs; big ones checked on the
   verifier's thread ---- */
void solutions_on_part(nq_broker_t *b, nq_peer_t *p, const nq_solpart_t *s);
/* The solution assembled for r's lease, taken out of the table (NULL: none); solutions_free. */
nq_solbuf_t *solutions_take(nq_broker_t *b, const nq_result_t *r);
void solutions_free(nq_broker_t *b, nq_solbuf_t *s);
int solutions_verifying(nq_broker_t *b, uint64_t lease);   /* 1: its solution is with the verifier */
/* Hands a big solution to the verifier: 1 taken (sol freed, its memory still counted until the
   verdict), 0 to be checked here (small, incomplete, or no verifier). */
int solutions_verify_off_loop(nq_broker_t *b, nq_peer_t *p, const nq_result_t *r, nq_solbuf_t *sol);
/* The verifier's next verdict: 0 none; 1 with it in *d (the caller frees d->cols), the result it
   is for in *r and its sender in *p (NULL: gone, or a new session on its connection); 2 a
   verdict nobody waits for (d->cols to free all the same). */
int solutions_verdict(nq_broker_t *b, nq_verify_t *d, nq_result_t *r, nq_peer_t **p);
void solutions_tick(nq_broker_t *b, double now);   /* gives up solutions whose RESULT never came */
void solutions_free_all(nq_broker_t *b);

/* ---- result_check.c ---- */
/* Checks a result against its job before it may reach the store (a solve result's solution is
   verified and saved): 0 fine, -1 refused (why), 1 not checkable yet (its job's list is being
   built: left unacknowledged, the worker sends it again). */
int result_check(nq_broker_t *b, nq_pending_result_t *e, nq_solbuf_t *sol, char *why, size_t whylen);
/* The checks of an enumerate payload (exposed for the fuzz target): 0 valid, else -1 and why. */
int result_check_enumerate(const nq_result_t *r, uint64_t n, char *why, size_t whylen);

/* ---- dispatch.c ---- */
void dispatch_run(nq_broker_t *b);                 /* hand out work while credit allows */
void dispatch_free(nq_broker_t *b);

/* ---- broker_metrics.c: the HTTP listener (/metrics, the web view) and its snapshot ---- */
int broker_metrics_start(nq_broker_t *b, char *err, size_t errlen);
void broker_metrics_tick(nq_broker_t *b, double now);
void broker_metrics_stop(nq_broker_t *b);

/* ---- jobs.c: a job's life ---- */
/* Every active job; a job whose rows are refused (store_check.h) is logged and left out, the
   others load. 0, or -1 with err (a DB error, or a stop asked for meanwhile). */
int jobs_load(nq_broker_t *b, char *err, size_t errlen);
/* Job row into memory. A count or enumerate job takes `list` (the one a submit just built), or
   asks the lister when it is NULL and leases nothing until jobs_listed gives it one. 0 loaded;
   1 refused, with the reason logged (job.refused) and in why when given; -1 out of memory, a DB
   error, or a stop asked for (list freed either way). */
int jobs_load_one(nq_broker_t *b, const nq_job_row_t *row, struct nq_shards *list, char *why, size_t whylen);
/* Job id's row read from the store (into *row), then jobs_load_one with `list` (taken, or freed):
   0, or -1 with why when the row cannot be read or the job not loaded. */
int jobs_load_id(nq_broker_t *b, uint64_t id, struct nq_shards *list, nq_job_row_t *row, char *why,
                 size_t whylen);
/* A job's list has come: the job leases from now on. A list that is missing or does not have the
   stored number of shards takes the job out of memory (job.refused). */
/* This run's pace of a job (broker_impl.h: run_t0): start it now (load, list in); its ETA from the
   estimated work done since (-1 before any is), and its shards a second since. */
void jobs_pace_start(nq_broker_t *b, nq_job_t *j);
void jobs_pace(const nq_broker_t *b, const nq_job_t *j, double *eta, double *rate);
void jobs_listed(nq_broker_t *b, uint64_t id, uint64_t ticket, struct nq_shards **list, const char *why,
                 double seconds);
/* Cancel and retry, each durable before it returns 0 (txn_write_*: the caller has committed the
   group first); -1 with err (no such job, already finished, ...); -2 with err when its row is
   refused or the change could not be committed. */
int jobs_cancel(nq_broker_t *b, uint64_t id, char *err, size_t errlen);
int jobs_retry(nq_broker_t *b, uint64_t id, char *err, size_t errlen);
void jobs_check_done(nq_broker_t *b, nq_job_t *j); /* settles j now; may free it */
void jobs_settle_due(nq_broker_t *b);              /* every job marked due since the last call */
void jobs_tick(nq_broker_t *b, double now);
/* Every PROGRESS_PERIOD_S, each running job's share of its estimated work done into the store's
   job_progress, in the open group (progress.c). */
void progress_tick(nq_broker_t *b, double now);
void jobs_free_all(nq_broker_t *b);

/* ---- job_wait.c: why j has pending work that no connected worker may take, "" when it does not ---- */
void job_wait_why(nq_broker_t *b, const nq_job_t *j, char *buf, size_t len);

/* ---- spotcheck.c: adaptive spot-checks (--verify-rate P), the rule and its flow ---- */
/* A result for job j (verify on) before it is stored: 0 a first result (e->by set: store it),
   1 a check vote (e->spot_vote: group_put stages it), -1 a resend of a vote (ACK, drop). */
int spotcheck_classify(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, nq_pending_result_t *e);
int spotcheck_stage(nq_broker_t *b, nq_pending_result_t *e);     /* writes a vote: NQ_PUT_* */
void spotcheck_after_commit(nq_broker_t *b, nq_job_t *j, const nq_pending_result_t *e);
/* Whether p may not take check copy c: 0 it may, 1 it may not (it voted, holds the shard, or lost a
   dispute), 2 the copy is moot (its check was decided): the caller drops it. */
int spotcheck_excludes(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, nq_check_copy_t *c);
int spotcheck_load(nq_broker_t *b, nq_job_t *j);
/* 1 while job j has checks not decided or a sweep running. When idle (nothing queued or out) the
   store decides, and check copies that went missing are queued again. */
int spotcheck_holds(nq_broker_t *b, nq_job_t *j, int idle);
void spotcheck_tick(nq_broker_t *b, double now);
/* 1 when the shard's check is a nodes dispute that only a count by the CPU kernels can settle:
   its copy asks for one (TASK.algo NQ_TASK_CPU). */
int spotcheck_wants_cpu(nq_broker_t *b, nq_job_t *j, uint64_t shard);
/* The holder of a shard a tail copy decided lost its lease unheard: in a job without spot-checks
   the copy's result stands as a first result does, and waits for no check (spotcheck.c). */
void spotcheck_forget_job(nq_broker_t *b, uint64_t job);
void spotcheck_free_all(nq_broker_t *b);

/* ---- quorum.c: a policy of the one vote (verdict.h), its votes in the store ---- */
int quorum_vote(nq_broker_t *b, nq_job_t *j, nq_pending_result_t *e);
int quorum_stage(nq_broker_t *b, nq_pending_result_t *e);      /* in the group: NQ_PUT_*, or -1 */
/* 1 when identity who (idents_who) voted on the shard, or is not known: it gets no copy of it. */
int quorum_voted(nq_broker_t *b, uint64_t job, uint64_t shard, int64_t who);

/* ---- peers.c ---- */
nq_peer_t *peers_find(nq_broker_t *b, const void *rid, size_t len);
nq_peer_t *peers_add(nq_broker_t *b, const void *rid, size_t len, const nq_hello_t *h);
void peers_drop(nq_broker_t *b, nq_peer_t *p, int count_attempt, const char *why);
/* Sets who p is (from its HELLO and the key it came with) and files it under that identity. */
void peers_identify(nq_broker_t *b, nq_peer_t *p, const nq_hello_t *h, const char *key);
/* Identity r was just quarantined (an ident_* call said so): every connection of it gives back
   what it holds, uncharged. */
void peers_quarantine(nq_broker_t *b, nq_ident_t *r);
void peers_wake(nq_broker_t *b);                   /* quarantines ended: peers may want work again */
void peer_misbehaved(nq_broker_t *b, nq_peer_t *p, const char *why);
int peer_quarantined(const nq_broker_t *b, const nq_peer_t *p);
/* p's round trip (seconds, smoothed; 0 before the first sample): speeds measured from the broker's
   side of the link (lease to result) subtract it, and the scheduler keeps p supplied across it. */
double peer_rtt(const nq_peer_t *p);
int peer_job_failed(nq_peer_t *p, uint64_t job, double now);
void peer_dropped_frame(nq_broker_t *b, nq_peer_t *p);   /* counts it; logs a rate every 10 s */
/* 1 when some connection of p's identity holds a lease of (job, shard) */
int peers_ident_holds(nq_broker_t *b, const nq_peer_t *p, uint64_t job, uint64_t shard);
void peers_tick(nq_broker_t *b, double now);       /* heartbeats, dead peers, stalled leases */
void peers_free_all(nq_broker_t *b);
/* Keeps what p's heartbeat says of its GPUs (at most NQ_MAX_HB_DEVICES, checked on decode). */
void peers_devices(nq_peer_t *p, const nq_heartbeat_t *hb);

/* ---- leases.c ---- */
nq_lease_t *leases_find(nq_broker_t *b, uint64_t id);
/* A new lease of j's shard, counted in j (and in p when p is not NULL: NULL is a lease re-armed
   at start, its holder not yet back). */
nq_lease_t *leases_add(nq_broker_t *b, nq_peer_t *p, nq_job_t *j, uint64_t shard, uint32_t attempt, uint64_t id,
                       nq_lease_kind_t kind);
/* A tail copy whose holder is gone becomes the shard's own lease; a holder whose copy delivered
   first becomes NQ_LEASE_COPIED. What l costs is counted anew. */
void leases_set_kind(nq_broker_t *b, nq_lease_t *l, nq_lease_kind_t kind);
void leases_attach(nq_broker_t *b, nq_lease_t *l, nq_peer_t *p);
/* A worker's heartbeat: progress, re-armed leases, and the leases it never received. */
void leases_heartbeat(nq_broker_t *b, nq_peer_t *p, const nq_heartbeat_t *hb);
void leases_remove(nq_broker_t *b, nq_lease_t *l);
/* Sets what l's shard costs (cost units), for its job's work left and its holder's budget. */
void leases_price(nq_broker_t *b, nq_lease_t *l, double cost);
/* Tells l's holder to stop it (a per-lease CANCEL) and forgets it: nothing
   charged, nothing back to pending (its twin decided, or the job ended). */
void leases_cancel(nq_broker_t *b, nq_lease_t *l, const char *why);
/* The shard goes back to pending (or FAILED when it used up its attempts); its job is due. */
void leases_release(nq_broker_t *b, nq_lease_t *l, int count_attempt, const char *why);
void leases_cancel_job(nq_broker_t *b, uint64_t job);
void leases_free_all(nq_broker_t *b);

/* ---- hungry.c: puts p in the hungry list or takes it out, after its credit, its outstanding
   count or its quarantine moved ---- */
void hungry_update(nq_broker_t *b, nq_peer_t *p);

/* ---- idents.c: records by identity. take: the record of ident (made on first use), one more
   connection filed under it; release: one fewer. ---- */
nq_ident_t *idents_take(nq_broker_t *b, const char *ident, uint64_t hash);
void idents_release(nq_broker_t *b, nq_ident_t *r);
nq_ident_t *idents_find(nq_broker_t *b, const char *ident);   /* NULL: none kept */
/* A new session on the same connection (keys off: a new identity) keeps what was held against
   the old one: a connection cannot shed its record by saying it restarted. */
void idents_inherit(nq_ident_t *to, const nq_ident_t *from);
int ident_quarantined(const nq_broker_t *b, const nq_ident_t *r);
double ident_quarantine_left(const nq_broker_t *b, const nq_ident_t *r);
const char *ident_name(const nq_ident_t *r);
const char *ident_why(const nq_ident_t *r);
/* One strike: 1 when that quarantined it (the caller then calls peers_quarantine). */
int ident_strike(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why);
/* One of its connections lost its leases (died, or its progress stalled): 1 when that may
   charge the shards an attempt; *quarantined = 1 when it quarantined the identity. */
int ident_lost(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why, int *quarantined);
/* One of its connections reported an error on a shard (a first one since it paused the job): 1
   when that may charge the shard an attempt; *quarantined as for ident_lost. */
int ident_failed(nq_broker_t *b, nq_ident_t *r, const char *worker, const char *why, int *quarantined);
/* p's identities row in the store (made on first use): a result's sender as the store records
   it. 0 when the store failed. */
int64_t idents_who(nq_broker_t *b, nq_peer_t *p);
int ident_restarted(nq_broker_t *b, nq_ident_t *r);   /* 1: past RESTARTS_PER_WINDOW */
uint32_t idents_connected(nq_broker_t *b);             /* identities with a connection, not quarantined */
int idents_tick(nq_broker_t *b, double now);           /* 1: a quarantine ended */
void idents_free_all(nq_broker_t *b);

/* ---- jobq.c: jobs in memory as queues ---- */
#define JOBQ_CAL_MIN 3                     /* results before a job's cost scale is trusted */
/* What jobq_take took: a check copy (check.nvoters > -2), a returned shard, or an order position
   never leased (frontier > 0: the store's frontier moves to it; back < UINT64_MAX: its back). */
typedef struct {
    uint64_t shard;
    uint64_t frontier, back;
    nq_check_copy_t check;
} jobq_taken_t;
/* The first job (priority order) with something for for_peer: none of a job it pauses; check
   copies count only when allow_checks. A pending job becomes running. NULL: nothing anywhere. */
nq_job_t *jobq_for(nq_broker_t *b, const nq_peer_t *for_peer, int allow_checks);
/* Takes j's next shard: a check copy first (when allowed), then a returned shard, then an order
   position from the front (the largest), or from the back (the smallest) when from_back. */
void jobq_take(nq_job_t *j, int from_back, int allow_checks, jobq_taken_t *t);
double jobq_cost(const nq_job_t *j, uint64_t idx);     /* a shard's estimate; 1 without one */
double jobq_cost_at(const nq_job_t *j, uint64_t pos);  /* ... of order position pos */
double jobq_work_left(const nq_job_t *j);              /* in cost units */
double jobq_work_done(const nq_job_t *j);              /* share of the estimated work: 0..1 */
double jobq_scale(const nq_job_t *j);                  /* nodes per cost unit; 0: not learnt yet */
void jobq_calibrate(nq_job_t *j, double cost, uint64_t nodes);
nq_job_t *jobq_find(nq_broker_t *b, uint64_t id);
void jobq_insert(nq_broker_t *b, nq_job_t *j);      /* priority desc, then id asc */
void jobq_unlink(nq_broker_t *b, nq_job_t *j);      /* out of the list (and of the due list) */
void jobq_push(nq_job_t *j, uint64_t shard);        /* a returned shard, leased before the frontier */
void jobq_push_check(nq_job_t *j, uint64_t shard);
void jobq_push_check_copy(nq_job_t *j, const nq_check_copy_t *c);   /* one taken and not sent */
/* Whether p gets none of the job's shards now (PAUSED_JOBS). */
int jobq_paused_for(const nq_peer_t *p, uint64_t job, double now);
int jobq_any_pending(const nq_broker_t *b);
/* Shards still to hand out: returned ones plus the never-leased (times the quorum). */
uint64_t jobq_pending(const nq_job_t *j);
/* Shard idx of job j as a worker gets it: count/enumerate descriptor, solve seed and method. */
int jobq_shard_task(const nq_job_t *j, uint64_t idx, uint8_t *spec, size_t *spec_len, uint64_t *seed,
                    char *algo, size_t algolen);
void jobq_due(nq_broker_t *b, nq_job_t *j);         /* its counters moved: settle it this round */
nq_job_t *jobq_take_due(nq_broker_t *b);

/* ---- listings.c ---- */
int listings_start(nq_broker_t *b, const char *wake_ep, char *err, size_t errlen);
/* Asks the lister for a list (r->ticket is set here): for job `job` in memory, or (job 0) for the
   submit x->spec of client x->rid. The ticket, or 0 when it could not ask (out of memory, stopped). */
uint64_t listings_ask(nq_broker_t *b, nq_lister_req_t *r, const nq_listing_t *x);
/* A list that has come: 1 with it in *d and whom it is for in *x (taken; NULL when nobody waits
   for it any more), 0 when none has. */
int listings_take(nq_broker_t *b, nq_listing_t **x, nq_lister_done_t *d);
/* Stops the lister (a list being built gives up at once) and tells the clients still waiting
   that nothing was created. broker_run's end; broker_destroy again. */
void listings_stop(nq_broker_t *b);

/* ---- lease_id.c: lease ids = counter (32 bits) | MAC(job, shard, counter) (32 bits), and a
   64-bit proof = MAC(job, shard, lease, holder identity) that the holder echoes with its
   RESULT ---- */
int lease_id_init(nq_broker_t *b, char *err, size_t errlen);
uint64_t lease_id_new(nq_broker_t *b, uint64_t job, uint64_t shard);
uint64_t lease_id_ident_hash(const nq_broker_t *b, const char *ident);
uint64_t lease_id_proof(const nq_broker_t *b, uint64_t job, uint64_t shard, uint64_t lease, uint64_t ident_hash);
/* 1 when this broker issued `lease` for (job, shard) to the identity whose hash is ident_hash */
int lease_id_authentic(const nq_broker_t *b, uint64_t job, uint64_t shard, uint64_t lease, uint64_t proof,
                       uint64_t ident_hash);

/* ---- txn.c ---- */
void txn_begin(nq_broker_t *b);                    /* opens the group transaction if needed */
int txn_dirty(nq_broker_t *b);
void txn_end_idle(nq_broker_t *b);                 /* closes an open group that wrote nothing */
/* 0 while the DB file is the one opened; else (once) logs it, marks the broker to stop with an
   error, and -1: nothing may be committed or acknowledged any more. */
int txn_db_check(nq_broker_t *b);
/* A client's write in a transaction of its own, durable before it is answered: begin (-1 with
   err when the store cannot commit now; the caller committed the group first), then end (commits
   on rc 0, else rolls back; -1 with err when it is not durable). Memory changes only after end. */
int txn_write_begin(nq_broker_t *b, char *err, size_t errlen);
int txn_write_end(nq_broker_t *b, int rc, char *err, size_t errlen);

/* ---- outbox.c: queued, sent when the loop calls outbox_flush ---- */
int outbox_send(nq_broker_t *b, nq_peer_t *p, const nq_msg_t *m);
int outbox_send_rid(nq_broker_t *b, const void *rid, size_t rid_len, const nq_msg_t *m);
/* A reply to a client: code and error, or code 0 and the document. */
void outbox_reply(nq_broker_t *b, const void *rid, size_t rid_len, int code, const char *error,
                  const msgpack_sbuffer *doc);
/* The answer to a write op: code 0 and the job's id, or code and err. */
void outbox_answer_job(nq_broker_t *b, const void *rid, size_t rid_len, int code, const char *err, uint64_t id);
void outbox_flush(nq_broker_t *b);
void outbox_free(nq_broker_t *b);

/* ---- ratelog.c: whether to log a hostile frame now (at most 10 lines a second, then one line
   with the number left out) ---- */
int ratelog_allow(nq_broker_t *b);

#endif
