/*
 * The SQLite store: the broker's checkpoint and the answer to every query.
 *
 * One writer (the broker), any number of readers (clients with --db, while the
 * broker runs or not). WAL, busy_timeout, parameterised statements only.
 * The schema is the numbered migrations in schema/ (embedded at build time),
 * applied at open and recorded in schema_version.
 *
 * Opening refuses, with a reason and without writing a byte, a file that is
 * not an nq DB (application_id), one from a newer nq (schema_version above
 * what this build knows), or a damaged one (quick_check fails; run at open
 * up to 64 MiB, see store_check_file).
 *
 * Results follow the first invariant of docs/architecture.md: the first result per shard decides
 * it (under quorum, the broker stores a shard only once its votes agree). A
 * decided shard never changes and a done job never goes back: a later result
 * is compared, and an equal one from another identity confirms, a differing
 * one is kept as evidence against its sender (table evidence). Only the
 * broker's explicit dispute (store_result_dispute) makes a shard CONFLICT, and
 * the job cannot finish while a conflict stands.
 */
#ifndef NQ_STORE_H
#define NQ_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "proto.h"
#include "shard.h"

typedef struct nq_store nq_store_t;

typedef enum {
    NQ_SHARD_PENDING = 0, NQ_SHARD_LEASED, NQ_SHARD_DONE, NQ_SHARD_FAILED,
    NQ_SHARD_CONFLICT, NQ_SHARD_CANCELLED
} nq_shard_state_t;

typedef enum {
    NQ_JOB_PENDING = 0, NQ_JOB_RUNNING, NQ_JOB_DONE, NQ_JOB_FAILED, NQ_JOB_CANCELLED
} nq_job_state_t;

const char *store_shard_state_name(nq_shard_state_t s);   /* "pending", ... */
const char *store_job_state_name(nq_job_state_t s);       /* "pending", ... */
const char *store_kind_name(int kind);                    /* "count", "solve", "enumerate" */
int store_kind_parse(const char *s);                      /* NQ_KIND_* or -1 */

/*
 * What a job row can hold: the limits a submit is held to (broker/submit.c, broker/control.c), and
 * the store holds every row it reads back to them again (store_check.h): a value outside them was
 * not written by nq, and one used as a loop bound or a size would run the broker away.
 */
#define NQ_JOB_MAX_PRIORITY 1000000
#define NQ_JOB_MAX_ATTEMPTS 100
#define NQ_JOB_MAX_QUORUM   3
#define NQ_JOB_PPM          1000000          /* verify_ppm is a probability in parts per million */
#define NQ_JOB_MAX_SEEDS    100000000ull     /* seeds (restarts) of one solve job */
#define NQ_JOB_MAX_METHODS  8                /* methods of one solve study */
#define NQ_JOB_METHOD_MAX   31               /* bytes of one method name (a TASK's algo is 32) */
/* Steps of the search a count or enumerate list may take to be listed, at submit and whenever a
   stored job's list is made again: 0.2 s (N=32) to 0.9 s (N=18) on one core (see submit.c). */
#define NQ_JOB_LIST_STEPS   (1ull << 22)

/* The one lease order a stored job may name and a new job gets (shard.h's NQ_ORDER_COST); the
   version stays in the row so that a release can migrate it. */
#define NQ_LEASE_ORDER NQ_ORDER_CURRENT

/* What a job asks for (the jobs row's parameters). */
typedef struct {
    int kind;                  /* NQ_KIND_* */
    uint64_t n;
    int priority;              /* higher first; then older first */
    uint32_t depth;            /* count/enumerate: shard depth used (0 = auto was resolved before insert) */
    uint32_t encoding;         /* count/enumerate: shard encoding version */
    char algo[128];            /* solve: method name(s), comma-separated for a study */
    uint64_t seed0;            /* solve: first seed */
    uint64_t restarts;         /* solve: number of seeds (shards) */
    uint64_t solutions;        /* solve: stop after this many distinct solutions (0 = all seeds, a study) */
    uint64_t max_steps;        /* solve: per-seed step limit, 0 = method default */
    uint32_t max_attempts;     /* shard fails this many times -> FAILED */
    uint32_t quorum;           /* results per shard that must agree (1 or 2) */
    uint32_t verify_ppm;       /* count: spot-check rate P in parts per million (0 = off) */
    uint32_t lease_order;      /* count/enumerate: the version of its lease order (NQ_ORDER_* in
                                  shard.h; 0 = the current one, resolved when it is stored) */
} nq_job_spec_t;

typedef struct {
    uint64_t id;
    nq_job_spec_t spec;
    nq_job_state_t state;
    uint64_t shards_total, shards_done, shards_failed, shards_conflict;
    uint64_t frontier;         /* order positions below it have a shard row (schema/011_store.sql) */
    uint64_t back;             /* ... and those at or above it (schema/011_store.sql) */
    uint64_t checks, disagreed;   /* spot-check results compared, and those that disagreed (006) */
    uint64_t evidence;         /* results that disagreed with a decided shard (007) */
    uint64_t fast_shards;      /* done shards whose nodes are the fast GPU kernel's own (010) */
    double created_at, started_at, finished_at;   /* unix seconds, 0 = not yet */
} nq_job_row_t;

/* One shard as the job creator describes it. */
typedef struct {
    const uint8_t *spec;       /* count/enumerate descriptor (<= NQ_MAX_SPEC bytes), else NULL */
    size_t spec_len;
    uint64_t seed;             /* solve */
    char algo[32];             /* solve: the method of this shard (a study may mix methods) */
    double cost;               /* relative cost estimate, bigger first; 0 = unknown */
} nq_shard_spec_t;

/* A shard as the broker leases it. */
typedef struct {
    uint64_t job, idx;
    nq_shard_state_t state;
    uint32_t attempts;
    uint64_t lease;
    uint8_t spec[NQ_MAX_SPEC];
    size_t spec_len;
    uint64_t seed;
    char algo[32];
    double cost;
} nq_shard_row_t;

typedef enum {
    NQ_PUT_NEW = 0,            /* first result for the shard: stored, shard DONE */
    NQ_PUT_CONFIRMED,          /* equal to the stored one, from another identity: confirmations + 1 */
    NQ_PUT_CONFLICT,           /* differs from an undecided (CONFLICT) shard's: it stays CONFLICT */
    NQ_PUT_IGNORED,            /* job cancelled/unknown shard: nothing stored */
    NQ_PUT_CHECKED,            /* a spot-check vote, recorded by the broker (store_spotcheck.h) */
    NQ_PUT_RESENT,             /* equal, from the stored sender or an identity that confirmed: nothing */
    NQ_PUT_EVIDENCE,           /* differs from a decided shard's: kept as evidence, nothing else moves */
    NQ_PUT_UNDECIDABLE,        /* a first result for a job that is not running: it decides nothing */
} nq_put_t;

/* Open (creating and migrating when !readonly). NULL with a reason in err on refusal. */
nq_store_t *store_open(const char *path, int readonly, char *err, size_t errlen);
void store_destroy(nq_store_t **s);
/* The full page check (quick_check) that store_open runs only on stores up to 64 MiB, at any
   size, without writing a byte: 0 ok, -1 with the first complaint in err. */
int store_check_file(const char *path, char *err, size_t errlen);
sqlite3 *store_db(nq_store_t *s);
/* 0 while the path still names the file that was opened; -1 with err when it was removed or
   replaced (an unlinked DB takes commits that no restart will see). */
int store_file_check(nq_store_t *s, char *err, size_t errlen);
const char *store_path(nq_store_t *s);
int store_schema_version(nq_store_t *s);

/*
 * For `nq run`, whose workers are threads of the same process: commits without an fsync each
 * (WAL, synchronous = NORMAL). A killed process loses nothing it committed (the OS has it); a
 * power loss may roll back the last commits, whose shards are then computed again on resume,
 * and the store stays consistent. The broker proper keeps FULL: a worker drops a result once
 * it is ACKed, and an ACK promises the result survives a power loss. 0, or -1.
 */
int store_set_local(nq_store_t *s);

/* Transactions, for group commit. commit returns 0, or -1 with err (e.g. disk full: nothing changed). */
int store_begin(nq_store_t *s);
int store_commit(nq_store_t *s, char *err, size_t errlen);
void store_rollback(nq_store_t *s);

/* A job's progress for the web view's chart (store_progress.c): the share of its estimated work
   done at unix time t, in the open group. The rows stay at most STORE_PROGRESS_CAP a job: the
   newest point moves until it is a step (the job's span over the cap, at least period seconds)
   past the one before it, and a job grown past the cap loses every other point but its newest.
   0, or -1 (logged; the group is poisoned, as for any write). */
#define STORE_PROGRESS_CAP 240
int store_progress_add(nq_store_t *s, uint64_t job, double t, double done, double period);

/* Jobs. create inserts the job, and with an iterator all its shards, in one transaction (frontier
   at the end); without one (next = NULL) no shard has a row yet (frontier 0): the broker derives
   each from the job's parameters when it leases it. *id gets the new id. */
typedef int (*store_shard_iter_fn)(void *ud, uint64_t idx, nq_shard_spec_t *out);  /* 0 ok, 1 end */
int store_job_create(nq_store_t *s, const nq_job_spec_t *spec, uint64_t nshards,
                     store_shard_iter_fn next, void *ud, uint64_t *id, char *err, size_t errlen);
/* Every row read back is checked like a wire value first (store_check.h): a row holding what nq
   could not have written is refused, never passed on. get: 0, or -1 (no such job, refused, or a
   DB error); load says which: 0, 1 no such job, -1 refused or a DB error, with the reason in err
   ("job 3: column quorum holds -1 (allowed 1..3): the DB was changed outside nq"). */
int store_job_get(nq_store_t *s, uint64_t id, nq_job_row_t *out);
int store_job_load(nq_store_t *s, uint64_t id, nq_job_row_t *out, char *err, size_t errlen);
/* Why the last row this store read was refused ("" when none was). */
const char *store_refusal(nq_store_t *s);
int store_job_set_state(nq_store_t *s, uint64_t id, nq_job_state_t st); /* sets started/finished times */
/* Jobs whose state is pending or running, by priority desc then id; calls fn for each, and
   refused (may be NULL) for each whose row is refused, with the reason. The first nonzero return
   of either stops the walk and is returned; -1 for a DB error. */
int store_jobs_active(nq_store_t *s, int (*fn)(void *ud, const nq_job_row_t *j),
                      int (*refused)(void *ud, uint64_t id, const char *why), void *ud);
/* The most recent job with the same kind/n/params (for `nq run` resume); 0 = found. */
int store_job_find_same(nq_store_t *s, const nq_job_spec_t *spec, uint64_t *id);

/* Shards. get: 0 found, 1 no row (pending beyond the frontier, or no such shard), -1 error or a
   refused row (logged; store_refusal says why). */
int store_shard_get(nq_store_t *s, uint64_t job, uint64_t idx, nq_shard_row_t *out);
/* Calls fn for every shard of the job in one of the given states (bitmask of 1<<state), by idx.
   0; fn's nonzero return; -1 a DB error; -2 a refused row (store_refusal says why). */
int store_shards_each(nq_store_t *s, uint64_t job, unsigned state_mask,
                      int (*fn)(void *ud, const nq_shard_row_t *r), void *ud);
/* Leases a shard (its row made if it had none); frontier > 0 moves the job's frontier there in
   the same step. 0, 1 not leasable, -1 DB error. */
int store_shard_lease(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease, const char *worker,
                      uint64_t frontier);
/* The same from either end of the order: back < UINT64_MAX moves the job's back down to it (the
   row is the one at order position back). */
int store_shard_lease_at(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease, const char *worker,
                         uint64_t frontier, uint64_t back);
/* A quorum vote arrived on `lease`: the row is pending again (no attempt charged) while the
   vote waits in the broker's memory, unless a later lease of it is out. 0, or -1. */
int store_shard_voted(nq_store_t *s, uint64_t job, uint64_t idx, uint64_t lease);
/* Back to pending (lease lost); attempts + 1; FAILED when attempts reach max: *failed = 1. */
int store_shard_release(nq_store_t *s, uint64_t job, uint64_t idx, int count_attempt, int *failed);
/* The same for a holder known by identity (identities.id, > 0): an identity is charged for a
   shard once (table failures, 008), so a shard fails only when distinct identities failed it. */
int store_shard_release_by(nq_store_t *s, uint64_t job, uint64_t idx, int count_attempt, int64_t who,
                           int *failed);
int store_shards_cancel_pending(nq_store_t *s, uint64_t job);           /* pending/leased -> cancelled */
int store_shards_retry(nq_store_t *s, uint64_t job);                    /* failed/conflict/cancelled -> pending, attempts 0 */

/*
 * Records a RESULT (already validated by the broker: count residues checked,
 * solve permutation verified). worker = who sent it. For solve results with a
 * solution, sol_hash/sol_path name the stored permutation (may be NULL).
 * Updates the job's shards_done. Returns the outcome, or -1 on a DB error.
 */
int store_result_put(nq_store_t *s, const nq_result_t *r, const char *worker,
                     const char *sol_hash, const char *sol_path);
/* The same, for a job under spot-checks: a first result records who delivered it (an
   identities row, schema/011_store.sql) and whether a check copy is wanted (verify = 1). */
/* who: the sender's identity (identities.id): stored with a first result, and what tells a
   resend from a confirmation for every job. verify: a check copy is wanted. spot: a job under
   spot-checks, where the identity's record counts its stored results. unloaded: the broker does
   not run the job (failed, or its rows refused), so no quorum or check could see the result: it
   may confirm a decided shard or be evidence against it, and never decides one. */
typedef struct { int64_t who; int verify, spot, unloaded, copy; } nq_put_by_t;   /* copy: by a tail copy */
int store_result_put_by(nq_store_t *s, const nq_result_t *r, const char *worker,
                        const char *sol_hash, const char *sol_path, const nq_put_by_t *by);
/* Votes that never agreed (quorum): r becomes the shard's first result and the shard CONFLICT at
   once, with other_worker named as the dissent. A shard decided meanwhile keeps its result (r is
   then compared as any later result). The outcome, or -1. */
int store_result_dispute(nq_store_t *s, const nq_result_t *r, const char *worker, const nq_put_by_t *by,
                         const char *other_worker);

/* Whether two count results' nodes may be compared (RESULT.nodes_kind, 010_nodes_kind.sql): only
   when both are the CPU kernels'. The fast GPU kernel's nodes are its own, and not even two of them
   compare: their number moves with the worker's settings (N=12: 132,356, 170,435 and 159,206 nodes
   with 4, 6 and 8 rows left to the GPU). Totals, unique counts and residues always compare. */
static inline int store_nodes_comparable(int a, int b)
{
    return a == NQ_NODES_CPU && b == NQ_NODES_CPU;
}

/* Broker settings that survive restarts (table meta). get: 0 found, 1 absent, -1 error, 2 the value
   is not text of fewer than vallen bytes (not one nq wrote: val is ""). */
int store_meta_get(nq_store_t *s, const char *key, char *val, size_t vallen);
int store_meta_set(nq_store_t *s, const char *key, const char *val);

/* Workers. flag: outvoted under quorum (conflicts + 1, flagged). */
int store_worker_flag(nq_store_t *s, const char *id);
int store_worker_seen(nq_store_t *s, const char *id, const char *host, const char *key, uint32_t threads);
int store_worker_forget_idle(nq_store_t *s, const char *id);    /* drops the row if it did nothing */
/* 1 when no row binds the worker id to another CURVE key (names belong to the first key) */
int store_worker_key_ok(nq_store_t *s, const char *id, const char *key);
/* Keeps "shard IDX: text" as the job's last error, shown by `nq status`. */
int store_job_note_error(nq_store_t *s, uint64_t job, uint64_t idx, const char *text);

/* A solve job's shard idx, which has no row until leased (schema/011_store.sql): its seed and its
   method. Shards are algorithm-major: method k of the comma-separated list (empty: qs4) takes
   idx k*restarts .. (k+1)*restarts-1, with seeds seed0 .. seed0+restarts-1 (u64, wrapping). */
uint64_t store_solve_seed(uint64_t seed0, uint64_t restarts, uint64_t idx);
void store_solve_method(const char *algos, uint64_t restarts, uint64_t idx, char *out, size_t outlen);

/* Sums over the job's done shards: 128-bit totals. 0 ok. nodes sums one unit, the CPU kernels'
   nodes, over the done shards whose result carries them; the fast GPU kernel's own nodes are
   summed apart (fast_nodes, over fast_shards shards: 010_nodes_kind.sql). */
typedef struct {
    unsigned __int128 total, unique, nodes, fast_nodes;
    uint64_t fast_shards;
    double core_seconds;
    uint64_t shards_done, shards_failed, shards_conflict, workers, solutions;
    unsigned res13, res15;     /* sum of the done shards' residues, mod 13 and mod 15 */
    uint64_t residues_bad;     /* recount only: done shards whose residues disagree with their total */
} nq_job_totals_t;
int store_job_totals(nq_store_t *s, uint64_t job, nq_job_totals_t *out);
/* The job's running sums, read from its row in O(1) on any connection to the DB (the broker's,
   or a client's read-only one): total, unique, nodes, core seconds, shards_done, residues.
   Adds to *out; SQLite's rc (SQLITE_DONE ok). */
int store_job_sums(sqlite3 *db, uint64_t job, nq_job_totals_t *out);
/* The auditor's way: the same sums (and failed/conflict counts, residues_bad) recomputed from
   every shard row, one pass. Adds to *out; SQLite's rc (SQLITE_DONE ok). */
int store_job_recount(sqlite3 *db, uint64_t job, nq_job_totals_t *out);
/* Distinct solutions stored for a solve job (cheap: no sum over shards). */
int store_job_solutions(nq_store_t *s, uint64_t job, uint64_t *n);

#endif
