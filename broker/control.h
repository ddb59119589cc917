/*
 * The operations clients ask for. Read-only ones (status, list, workers,
 * result, export, solution) run on any DB connection, so `nq result --db`
 * with the broker down runs exactly the code the broker runs for a client.
 */
#ifndef NQ_CONTROL_H
#define NQ_CONTROL_H

#include <msgpack.h>
#include <sqlite3.h>

#include "proto.h"
#include "query.h"
#include "store.h"

/* Packs the reply document for a read-only op into pk. Returns an NQ_EXIT_* code; err on failure. */
int control_query(sqlite3 *db, const char *db_path, const query_live_t *live, const nq_ctl_req_t *req,
                  msgpack_packer *pk, char *err, size_t errlen);

/* Fills a job spec from a submit request's parameters; NQ_EXIT_USAGE with err when a value is off.
   --shard-seconds chooses the depth by building lists (shard_depth_for_seconds: seconds of CPU). */
int control_spec_from_params(const nq_ctl_req_t *req, nq_job_spec_t *spec, char *err, size_t errlen);
/* The same, cheap: the depth of --shard-seconds is left to choose (0), and *seconds says it was
   asked for (0: it was not). */
int control_spec_parse(const nq_ctl_req_t *req, nq_job_spec_t *spec, uint64_t *seconds, char *err,
                       size_t errlen);

/*
 * Shard caps, checked before a row is written. Creating a job costs about
 * 3.6 us and 140 bytes of DB per shard, in one transaction during which the
 * broker answers nobody (a study of 800,000 shards: 2.9 s, +110 MB).
 * Per job: the largest count job at its default depth is N=28 at depth 4,
 * 17,539,516 shards (N=27: 13.2M; every other N: under 2.5M; enumerate: under
 * 2,300), so 20M never refuses a count or enumerate job at its default depth
 * and still bounds one request to about a minute and 3 GB. Per store: the
 * shards of every pending or running job, 50M (N=27 and N=28 queued together
 * are 30.8M). `nq broker --max-job-shards / --max-store-shards` raise them;
 * a cfg value of 0 means these defaults.
 */
#define NQ_DEFAULT_MAX_JOB_SHARDS   20000000ull
#define NQ_DEFAULT_MAX_STORE_SHARDS 50000000ull

/*
 * Caps on the shards a submit may create (submit.c), checked before any row is
 * written: max_job_shards for the job itself, max_store_shards for the job plus
 * every pending or running job of the store. 0 = the defaults above; how
 * completes the message's "or ... --max-job-shards N" (NULL: "start 'nq broker' with").
 */
typedef struct {
    uint64_t max_job_shards, max_store_shards;
    const char *how;
} nq_shard_caps_t;

/* submit_create (broker.h) with these caps; submit_create itself uses the defaults. 0, or -1 with err. */
int submit_create_capped(nq_store_t *st, nq_job_spec_t *spec, const nq_shard_caps_t *caps, uint64_t *id,
                       char *err, size_t errlen);

#endif
