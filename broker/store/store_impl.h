/*
 * What the store's own files share (store.c defines it): the open store, its cached
 * statements and its transaction rules. Nothing outside broker/store/ includes this.
 */
#ifndef NQ_STORE_IMPL_H
#define NQ_STORE_IMPL_H

#include <stdint.h>
#include <sqlite3.h>

#include "store.h"

/* Statement slots for store_spotcheck.c, cached like store.c's own. */
#define STORE_SPOT_STMTS 24

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
/* A shard state as the shards table spells it (nq_shard_state_t), or -1. */
int store_shard_state_parse(const unsigned char *s);

/* One done shard's contribution to its job's row (004_campaign.sql). */
typedef struct {
    uint64_t total, unique, nodes;
    int res13, res15;
    double seconds;
} store_sums_t;
/* Moves a done shard into (dir = 1) or out of (dir = -1) its job's sums and done count; the
   conflict and failed counts move by dconflict and dfailed. */
int store_job_move(nq_store_t *s, uint64_t job, int dir, const store_sums_t *d, int dconflict, int dfailed);

#endif
