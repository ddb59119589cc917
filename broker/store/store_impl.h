/*
 * What the store's own files share (store.c defines it): the open store, its cached
 * statements and its transaction rules. Nothing outside broker/store/ includes this.
 */
#ifndef NQ_STORE_IMPL_H
#define NQ_STORE_IMPL_H

#include <stdint.h>
#include <sqlite3.h>

#include "store.h"

#include <sys/types.h>

/* Each file of the store keeps its statements beside the code that runs it, in a table of its
   own, cached in its own row of the open store's slots. */
typedef enum {
    STORE_MOD_CORE, STORE_MOD_JOBS, STORE_MOD_SHARDS, STORE_MOD_RESULTS, STORE_MOD_WORKERS,
    STORE_MOD_SPOT, STORE_MOD_VOTES, STORE_MOD_PROGRESS, STORE_MODS
} store_mod_t;
#define STORE_MOD_STMTS 24
#define STORE_SPOT_STMTS STORE_MOD_STMTS   /* store_spotcheck.c's */

/* The open store. */
struct nq_store {
    sqlite3 *db;
    char *path;
    int readonly;
    int version;
    int in_tx;                 /* store_begin was called and not yet committed/rolled back */
    int tx_failed;             /* a statement of the open group failed: the group must roll back */
    char tx_err[256];          /* why, for store_commit */
    char refused[320];         /* why the last row read was refused (store_refusal) */
    dev_t dev;                 /* the file opened, to notice it removed or replaced (store_file_check) */
    ino_t ino;
    sqlite3_stmt *st[STORE_MODS][STORE_MOD_STMTS];
};

/* Unsigned 64-bit values are stored as their signed bit pattern and read back as uint64_t. */
static inline sqlite3_int64 i64(uint64_t v) { return (sqlite3_int64)v; }
static inline uint64_t col_u64(sqlite3_stmt *q, int i) { return (uint64_t)sqlite3_column_int64(q, i); }

/* The cached statement `sql` in *slot (prepared once), reset and unbound; NULL, logged, if it
   cannot be prepared. */
sqlite3_stmt *store_stmt_cached(nq_store_t *s, sqlite3_stmt **slot, const char *sql);
sqlite3_stmt **store_spot_slots(nq_store_t *s);
/* Joins the open group or opens a transaction of its own; store_tx_leave ends what it began. */
int store_tx_enter(nq_store_t *s, int *own);
int store_tx_leave(nq_store_t *s, int own, int rc);
/* Logs a failed statement (and poisons an open group). Returns -1. */
int store_fail(nq_store_t *s, const char *op, int rc);
/* Steps a statement that returns nothing we need and resets it: 0, or SQLite's error. */
int store_step_done(sqlite3_stmt *q);
/* A shard state as the shards table spells it (nq_shard_state_t), or -1; a job state the same. */
int store_shard_state_parse(const unsigned char *s);
int store_job_state_parse(const unsigned char *s);
/* sqlite3_exec without callbacks; what an SQLite failure means to an operator, in words. */
int store_exec(sqlite3 *db, const char *sql);
const char *store_db_reason(sqlite3 *db, int rc);
/* workers (store_workers.c): a delivered result credited; a conflict or evidence counted */
int store_worker_credit(nq_store_t *s, const char *worker, uint64_t nodes, double seconds);
int store_worker_conflict(nq_store_t *s, const char *worker);
int store_worker_evidence(nq_store_t *s, const char *worker);

/* One done shard's contribution to its job's row (schema/011_store.sql); its nodes go to the job's
   nodes or, of the fast GPU kernel's own, to fast_nodes (schema/011_store.sql). */
typedef struct {
    uint64_t total, unique, nodes;
    int res13, res15;
    double seconds;
    int nodes_kind;            /* NQ_NODES_* */
} store_sums_t;
/* Moves a done shard into (dir = 1) or out of (dir = -1) its job's sums and done count; the
   conflict and failed counts move by dconflict and dfailed. */
int store_job_move(nq_store_t *s, uint64_t job, int dir, const store_sums_t *d, int dconflict, int dfailed);

#endif
