/*
 * Rows read back as hostile input (store_check.c).
 *
 * The DB is a file: whoever can write it can put there what nq never would (a quorum of
 * 2^32-1, 2^63 shards, a state nq has no name for), and a value used as a loop bound or a size
 * would run the broker away. So every value of a jobs or shards row is checked, before anything
 * uses it, against what nq itself could have written (the submit-time limits in store.h), and a
 * row that fails is refused whole with one line naming the job, the column and the value:
 *   job 3: column quorum holds -1 (allowed 1..3): the DB was changed outside nq
 *
 * A count or enumerate job's shard count is a function of (n, depth, encoding). Reading a row
 * holds it to store_list_bound (O(1): roots times the choices of each level), which keeps a
 * changed row to the size of a real list of its parameters; the exact count needs the list
 * itself, which store_job_list makes (bounded) where the list is made anyway: when the broker
 * loads the job, `nq check`, and a manifest.
 */
#ifndef NQ_STORE_CHECK_H
#define NQ_STORE_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "shard.h"
#include "store.h"

/* The columns store_job_row_read reads, in its order: SELECT STORE_JOB_COLUMNS FROM jobs ... */
#define STORE_JOB_COLUMNS \
    "id, kind, n, state, priority, depth, encoding, algo, seed0, restarts, solutions, max_steps," \
    " max_attempts, quorum, shards_total, shards_done, created_at, started_at, finished_at," \
    " shards_failed, shards_conflict, frontier, verify_ppm, checks, disagreed, evidence," \
    " coalesce(back, shards_total), lease_order, fast_shards"
#define STORE_JOB_NCOLS 29                /* a caller may select more columns after these */
#define STORE_SHARD_COLUMNS "job, idx, state, attempts, lease, spec, seed, algo, cost"

/* The current row of q (selected with STORE_JOB_COLUMNS) into *out: 0, or -1 with the reason. */
int store_job_row_read(sqlite3_stmt *q, nq_job_row_t *out, char *err, size_t errlen);
/* The current row of q (selected with STORE_SHARD_COLUMNS) into *out: 0, or -1 with the reason. */
int store_shard_row_read(sqlite3_stmt *q, nq_shard_row_t *out, char *err, size_t errlen);
/* A shard row read back is one of its job's `shards`: 0, or -1 with the reason. */
int store_shard_in_job(const nq_shard_row_t *r, uint64_t shards, char *err, size_t errlen);
/* Job `id` read and checked on any connection (the broker's, or a client's read-only one):
   0, 1 no such job (err says so), -1 the row is refused (err), -2 a DB error (err). */
int store_job_read(sqlite3 *db, uint64_t id, nq_job_row_t *out, char *err, size_t errlen);

/* What a job asks for, held to the limits of store.h (store_job_create checks it the same way). */
int store_spec_check(const nq_job_spec_t *spec, uint64_t nshards, char *err, size_t errlen);
/* The most shards a count or enumerate list of (n, depth) can have, at most NQ_SHARD_MAX_LIST. */
uint64_t store_list_bound(int kind, uint64_t n, uint32_t depth);
/* The methods of a solve job's algo ("" is qs4 alone): 1..NQ_JOB_MAX_METHODS, or 0 when the list
   is not one nq writes (an empty name, a name too long or with other than [a-z0-9_-]). */
int store_solve_methods(const char *algos);
/* A count or enumerate job's list, made again from its row (within NQ_JOB_LIST_STEPS), which
   must have the row's number of shards: the list, or NULL with the reason. */
nq_shards_t *store_job_list(const nq_job_row_t *row, char *err, size_t errlen);
/* Whether list is job id's (spec s, `shards` shards in its row): 0, or -1 with err naming the
   column, or (list NULL) saying why it could not be made. Wherever a job's list is made. */
int store_list_matches(uint64_t id, const nq_job_spec_t *s, uint64_t shards, const nq_shards_t *list,
                       const char *why, char *err, size_t errlen);

#endif
