/*
 * What the files of the query documents share (query.c defines it): a private packing buffer,
 * the helpers that pack columns, one read snapshot per document, and a job as the documents
 * show it. Nothing outside broker/store/ includes this.
 *   query.c           the shared parts, the job document and the list
 *   query_workers.c   the workers document
 *   query_result.c    a job's result (residues, workers, solutions, a study's table) and one
 *                     solve solution
 *   query_export.c    a job's rows, page by page
 */
#ifndef NQ_QUERY_IMPL_H
#define NQ_QUERY_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>
#include <sqlite3.h>

#include "query.h"
#include "store.h"

/* A private buffer that records a failed write, so running out of memory cannot go unnoticed. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int failed;
} qbuf_t;
void query_buf_init(qbuf_t *b);
void query_buf_destroy(qbuf_t *b);
void query_buf_append(msgpack_packer *pk, const qbuf_t *b);   /* a finished sub-document */

void query_pack_str(msgpack_packer *pk, const char *s);
void query_pack_col_u64(msgpack_packer *pk, sqlite3_stmt *st, int i);
void query_pack_col_double(msgpack_packer *pk, sqlite3_stmt *st, int i);
void query_pack_col_text(msgpack_packer *pk, sqlite3_stmt *st, int i);
void query_col_copy(sqlite3_stmt *st, int i, char *out, size_t outlen);

/* err gets "database error (what): ..."; returns -2. */
int query_db_fail(sqlite3 *db, const char *what, char *err, size_t errlen);
sqlite3_stmt *query_prep(sqlite3 *db, const char *sql, char *err, size_t errlen);   /* NULL: err */
/* Runs fn in one read transaction (unless the caller already has one open) into a private
   buffer, and appends the document to out only when fn succeeded. */
typedef int (*doc_fn)(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen);
int query_doc_run(sqlite3 *db, doc_fn fn, void *args, msgpack_packer *out, char *err, size_t errlen);
int query_count_rows(sqlite3 *db, const char *sql, uint64_t id, uint64_t *out, char *err, size_t errlen);

/* A job as the documents show it: its row, its shards per state and its sums, in O(1). */
#define QJOB_FLAGGED_MAX 8                  /* names kept of the flagged workers, and of evidence */
#define ST_COUNT (NQ_SHARD_CANCELLED + 1)   /* shard states, named by store_shard_state_name */

typedef struct {
    uint64_t id, n, seed0, restarts, quorum;
    char kind[16], state[16], algo[128];
    int64_t priority;
    uint64_t shards_total, shards[ST_COUNT];
    double created, started, finished;
    int has_started, has_finished;
    unsigned __int128 total, unique, nodes;   /* sums over done shards (nodes: the CPU kernels') */
    unsigned __int128 fast_nodes;             /* the fast GPU kernel's own nodes, over fast_shards */
    uint64_t fast_shards;
    double core_seconds;
    unsigned res13, res15;                    /* the done shards' residues, summed */
    uint64_t solutions_found;
    char last_error[300];                     /* the last worker error, "" when none */
    /* spot-checks (006_spotcheck.sql): rate, checks compared, disagreeing, not decided, and the
       workers flagged in this job (the first QJOB_FLAGGED_MAX names, and how many in all) */
    uint64_t verify_ppm, checks, disagreed, checks_open, nflagged;
    char flagged[QJOB_FLAGGED_MAX][64];
    /* results that disagreed with a decided shard (007_decided.sql): how many, and the first
       QJOB_FLAGGED_MAX senders by name */
    uint64_t evidence, nevidence_by;
    char evidence_by[QJOB_FLAGGED_MAX][64];
    char waiting[160];                        /* from the broker (query_live_t), "" when not waiting */
    int has_pace;                             /* from the broker: ETA and rate of this run */
    double pace_eta, pace_rate;
    uint64_t copies;                          /* from the broker: copies beyond one a shard (quorum
                                                 votes, spot-checks) waiting or out */
    int refused;                              /* its row holds what nq could not have written */
} qjob_t;

/* The job's row alone (its parameters, checked), or its row, shard counts and sums: 0; -1 no
   such job; -2 an error or a refused row (j->refused), err says which. */
int query_job_read_row(sqlite3 *db, uint64_t id, qjob_t *j, char *err, size_t errlen);
/* live (NULL: none) gives a solve job's solution count instead of counting its rows. */
int query_job_load(sqlite3 *db, uint64_t id, const query_live_t *live, qjob_t *j, char *err, size_t errlen);
/* The broker's live figures of an active job (live NULL: none): pending and leased copies, and why
   it waits (status and result say it alike). */
void query_job_live(qjob_t *j, const query_live_t *live);
uint32_t query_job_npairs(const qjob_t *j);
void query_pack_job(msgpack_packer *pk, const qjob_t *j);   /* the job document's pairs */

#endif
