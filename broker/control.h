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

/* Fills a job spec from a submit request's parameters; NQ_EXIT_USAGE with err when a value is off. */
int control_spec_from_params(const nq_ctl_req_t *req, nq_job_spec_t *spec, char *err, size_t errlen);

#endif
