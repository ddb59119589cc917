/*
 * Read-only query documents: what `nq status/list/workers/result/export` show.
 *
 * One code path for both ways a client gets an answer: the broker runs these on
 * its own connection and sends the packed bytes back over the control endpoint,
 * or a client with --db runs them on the DB file directly (broker down). They
 * take a plain sqlite3* and only read; each runs in one read transaction (when
 * the connection has none open) so a document is one consistent snapshot even
 * while the broker writes.
 *
 * Documents are msgpack maps with string keys (cli/render.h prints them).
 * A 128-bit number is a plain uint when it fits 64 bits, else msgpack EXT type
 * QUERY_EXT_U128 with 16 bytes little-endian (query_pack_u128).
 *
 * Every function appends the whole document to pk, or nothing at all:
 * returns 0; -1 with a reason in err for a bad request ("no job 42");
 * -2 with a reason in err for a DB error or damaged data.
 *
 * job document: id, kind, n, state, priority, shards_total, shards_done,
 *   shards_pending, shards_leased, shards_failed, shards_conflict,
 *   shards_cancelled (pending and leased count shards without a decision), copies_open (only when
 *   not 0: copies beyond one a shard, quorum votes and spot-checks, waiting or out), created_at,
 *   started_at, finished_at (float seconds or nil),
 *   elapsed (seconds since start, to finish or now), rate (done shards/s),
 *   eta (seconds; 0 when done; nil when unknown or not running; a count's from its
 *   nodes against the planning model's, as its largest shards go first), and per kind
 *   count: total, unique, nodes (sums over done shards), final (state is done);
 *   solve: algo, solutions_found, seeds_done;  enumerate: solutions.
 */
#ifndef NQ_QUERY_H
#define NQ_QUERY_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>
#include <sqlite3.h>

#define QUERY_EXT_U128 1
/* Rows per export page: keeps a page of 16-column enumerate rows under NQ_MAX_DOC_ITEMS. */
#define QUERY_EXPORT_MAX_ROWS 50000u
/* A query's answer to a request it refuses as asked (rows out of range, a bad cursor, an option
   that does not apply to the job): the client's usage error, apart from -1 "no such thing". */
#define QUERY_REFUSED (-3)
/* Solutions listed in a result document; the rest are counted and reachable by export. */
#define QUERY_RESULT_MAX_SOLUTIONS 1000u

/* Live data the broker adds to documents. lookup returns 0 when it knows the worker (then *w
   holds its current values: kernel is the build its HELLO named, a GPU worker's names its device;
   rtt_s its link's round trip, 0 before it is measured), else -1. job (may be NULL) returns 0 when
   the job is active in the broker: then pending and leased count copies waiting and out on
   workers (quorum and check copies too; the store has one lease per shard row) and waiting says
   why pending work is not taken ("" when it is). */
#define QUERY_KERNEL_MAX NQ_STR_MAX     /* a HELLO's build */
typedef struct {
    int alive;
    double nodes_per_s;
    uint32_t leases;
    char kernel[QUERY_KERNEL_MAX];
    double rtt_s;
} query_worker_live_t;
typedef struct {
    int (*lookup)(void *ud, const char *worker_id, query_worker_live_t *w);
    void *ud;
    int (*job)(void *ud, uint64_t id, uint64_t *pending, uint64_t *leased, char *waiting, size_t len);
    /* (may be NULL) a live GPU worker's devices as its last heartbeat said, into out: how many */
    uint32_t (*devices)(void *ud, const char *worker_id, nq_hb_device_t *out, uint32_t max);
    /* A loaded solve job's solutions found, or -1 (NULL: none known): the broker keeps the count,
       and its loop must not count a job's solution rows for every status (O(solutions) each). */
    int (*solutions)(void *ud, uint64_t id, uint64_t *n);
    /* (may be NULL) an active job's ETA (-1: none yet) and shards a second from the broker's pace
       this run (its cost estimates of the work left and done): 0, or -1 for a job it has not */
    int (*pace)(void *ud, uint64_t id, double *eta, double *rate);
} query_live_t;

/* Packs v as a uint when it fits 64 bits, else as EXT 1 (16 bytes LE). 0 ok. */
int query_pack_u128(msgpack_packer *pk, unsigned __int128 v);

int query_job(sqlite3 *db, uint64_t id, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen);

/* Array of job documents, newest first. */
int query_list(sqlite3 *db, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen);

/* Array of {id, host, pubkey, threads, first_seen, last_seen, shards_done, nodes,
   seconds, nodes_per_s, conflicts, flagged, alive, leases, kernel, devices, rtt_s}, by id; devices:
   a live GPU worker's [{device, name, state ("counting" or "failed"), queued, shards,
   shards_per_s}], else empty. Without live (NULL), alive, leases, kernel and rtt_s are nil and
   nodes_per_s = nodes/seconds from the DB; with live, a worker the broker knows gets its live
   values (rtt_s nil until measured), others alive=false, kernel and rtt_s nil. */
int query_workers(sqlite3 *db, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen);
/* Characters of a worker's public key that tables show (nq workers, the web view): enough to tell
   keys apart (12 Z85 digits, 76 bits) and to find its .pub file; the document has the whole key. */
#define QUERY_KEY_SHOWN 12

/*
 * The job document plus core_seconds, nodes, workers (ids that delivered a
 * first result, from job_workers); count: residues_ok (the job's total agrees
 * mod 13 and mod 15 with the sum of its done shards' residues: O(1); `nq check`
 * finds the shard), manifest_root (hex of the root the last `nq export --manifest` kept, or
 * nil); solve: solutions
 * (the first QUERY_RESULT_MAX_SOLUTIONS by found_at, each {seed, hash, shard, n,
 * steps, seconds, where: "inline" or the file name}), solutions_total, and
 * study: one entry per method {algo, seeds, solved, rate, ci_low, ci_high (95%
 * Wilson score interval), steps_median, steps_p95, seconds_median,
 * seconds_p95} over the done shards of that method (quantiles interpolate
 * linearly between order statistics, like numpy's default).
 */
int query_result(sqlite3 *db, uint64_t id, const query_live_t *live, msgpack_packer *pk, char *err,
                 size_t errlen);
/* A solve study's table from at most the first per_method done seeds of each method (the web
   page's: a bounded read however large the study): {sample_per_method, study: [...]}. */
int query_study_sample(sqlite3 *db, uint64_t id, uint32_t per_method, msgpack_packer *pk, char *err,
                       size_t errlen);

/*
 * One page of a job's rows: {columns: [names], rows: [[...], ...], next}.
 * Start with cursor 0 and pass `next` back until it is nil; the cursor is
 * opaque to the client. 1 <= max_rows <= QUERY_EXPORT_MAX_ROWS.
 *   count: one row per shard, by idx: idx, state, total, unique, nodes, res13,
 *          res15, seconds, worker, confirmations (nil where not done).
 *   solve: one row per seed, by idx: idx, seed, algo, status ("solved",
 *          "not found", "error", or the shard state when not done), steps,
 *          seconds, worker.
 *   enumerate: one row per solution, [cols], in shard order then the order
 *          stored; unique_only keeps the class representatives (a solution
 *          equal to the least of its 8 symmetric images). The cursor is
 *          shard * 2^32 + position within the shard, so a page holds exactly
 *          max_rows rows even when one shard holds more.
 * unique_only on a count or solve job is refused.
 */
int query_export(sqlite3 *db, uint64_t id, uint64_t cursor, uint32_t max_rows, int unique_only,
                 msgpack_packer *pk, char *err, size_t errlen);

/* A job that ended, as query_jobs_ended gives it (kind and state valid during the call only). */
typedef struct {
    uint64_t id, n, shards_total, shards_done, shards_failed, shards_conflict;
    double finished;             /* unix seconds; 0 when unknown */
    const char *kind, *state;    /* "count", "done", ... */
} query_ended_t;
/* Every job that ended (done, failed, cancelled), the latest first: fn(ud, job) for each; a row
   whose counts nq could not have written is left out. 0, or -2 with err (a DB error). O(jobs). */
int query_jobs_ended(sqlite3 *db, void (*fn)(void *ud, const query_ended_t *j), void *ud, char *err,
                     size_t errlen);

/* A point of a job's progress chart: unix seconds, and the share of its estimated work done. */
typedef struct { double t, done; } query_point_t;
/* The job's progress chart (job_progress: at most STORE_PROGRESS_CAP rows), oldest first, up to
   max points into out; *n gets how many. A value nq could not have written is refused. 0, or -2
   with err. */
int query_progress(sqlite3 *db, uint64_t id, query_point_t *out, size_t max, size_t *n, char *err,
                   size_t errlen);

/*
 * The index-th (0-based, by found_at) solution of a solve job: *cols gets a
 * malloc'd permutation of *n entries (caller frees). Inline solutions come from
 * the DB; large ones from the solution file (common/kernel/solfile.h) that the row
 * names, in the .solutions folder beside db_path (solstore_row_file); a path that
 * leads anywhere else is refused as damaged data.
 */
int query_solution(sqlite3 *db, const char *db_path, uint64_t id, uint64_t index,
                   uint32_t **cols, uint64_t *n, char *err, size_t errlen);

#endif
