/*
 * A done count job's manifest, written from the store (format: common/kernel/manifest.h),
 * and its root kept in the store (schema/005_manifest.sql) for `nq result`.
 */
#ifndef NQ_STORE_MANIFEST_H
#define NQ_STORE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "merkle.h"
#include "store.h"

/*
 * Streams the manifest of job `job` to f in one read transaction: the job's rows by index,
 * each descriptor from the job's list (rows of new jobs carry none). O(1) memory apart from
 * the list and the tree's stack. *root and *shards get the root and the shard count.
 * 0; -1 refused as asked (no such job, not a count job: "manifest: count jobs only", the job
 * not done) with err; -2 a DB error, damaged data (a row that disagrees with the job's list,
 * sums that disagree with the rows) or a write error, with err. On failure f holds a part.
 */
int store_manifest_write(sqlite3 *db, uint64_t job, FILE *f, uint8_t root[NQ_MERKLE_BYTES], uint64_t *shards,
                         char *err, size_t errlen);

/* Keeps the root of job's manifest (replacing an earlier one). *was gets the earlier root's
   hex, "" when there was none. 0, or -1 with err. */
int store_manifest_keep(nq_store_t *s, uint64_t job, const uint8_t root[NQ_MERKLE_BYTES], uint64_t shards,
                        char was[NQ_MERKLE_HEX + 1], char *err, size_t errlen);

#endif
