/*
 * The broker: owns the store, cuts jobs into shards, leases shards to workers
 * over a ZeroMQ ROUTER socket, takes results (commit, then ACK), and answers
 * clients on a second ROUTER socket (the control endpoint).
 *
 * It is single-threaded by design: one loop (broker_run) owns the sockets,
 * the in-memory job/lease/peer tables and the one SQLite writer, so no locks
 * are needed and the order of events is the order of the loop. The one other
 * thread builds shard lists (seconds of CPU for a large job) from parameters
 * and hands them back (lister.h): it shares nothing else, and the loop never
 * waits for it.
 */
#ifndef NQ_BROKER_H
#define NQ_BROKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct {
    const char *bind;            /* worker endpoint, e.g. tcp://127.0.0.1:7555 */
    const char *control;         /* client endpoint; NULL: beside the DB (control_ep.h) */
    const char *db_path;
    void *zmq_ctx;               /* NULL: the broker makes its own; else shared (inproc for `nq run`) */
    uint32_t heartbeat_ms;       /* default 1000 */
    uint32_t liveness;           /* missed heartbeats before a worker is dead; default 4 */
    uint32_t stall_s;            /* a lease whose progress does not move for this long is lost; 0 = off */
    uint32_t grace_s;            /* after a restart, leased shards wait this long for their worker */
    uint32_t group_max;          /* results per commit, at most */
    uint32_t group_ms;           /* a result waits at most this long for its commit */
    const char *key_file;        /* CURVE secret key of the broker (see docs/security.md) */
    const char *authorized;      /* allow-list of worker public keys */
    const char *control_keys;    /* allow-list of client public keys (a control endpoint off loopback) */
    const char *metrics;         /* host:port for the HTTP listener (/metrics, the web view), or NULL */
    const char *http_token;      /* its token (read from --http-token-file); needed off loopback */
    int insecure;                /* allow a non-loopback bind without keys */
    uint64_t max_job_shards;     /* a submit creating more shards is refused; 0 = default (20M, submit.c) */
    uint64_t max_store_shards;   /* ... or taking the active jobs' shards past this; 0 = default (50M) */
    int local;                   /* `nq run`: its workers live and die with it (see store_set_local) */
    double (*clock)(void);       /* monotonic seconds; NULL = the real clock (tests pass a fake one) */
    const atomic_int *stop;      /* a stop asked for while broker_new loads the jobs ends it (NULL
                                    with err); NULL = none. broker_run's own flag replaces it */
} nq_broker_cfg_t;

typedef struct nq_broker nq_broker_t;

void broker_cfg_defaults(nq_broker_cfg_t *cfg);
/* From another thread, after setting broker_run's *stop: it sees it now, not at its next 50 ms wake-up. */
void broker_wake(nq_broker_t *b);
/* Opens the store (resuming every job) and binds. NULL with a reason in err (also when cfg->stop
   was set while the jobs loaded). */
nq_broker_t *broker_new(const nq_broker_cfg_t *cfg, char *err, size_t errlen);
/* Serves until *stop becomes non-zero; then stops leasing, flushes results, returns 0. -1 when it
   stopped because its DB file was removed or replaced (broker_error says how): nothing was
   acknowledged after that, so workers keep those results for the next broker. */
int broker_run(nq_broker_t *b, const atomic_int *stop);
/* Why broker_run returned -1. */
const char *broker_error(const nq_broker_t *b);
void broker_destroy(nq_broker_t **b);
/* Takes the DB's lock file (<db>.lock): returns its fd, or -1 with err. *created says the file
   did not exist before, so a caller that then gives up on the DB can take it away again. */
int broker_db_lock(const char *db_path, int *created, char *err, size_t errlen);
/* Releases the lock; `remove` also deletes the lock file (a refused command and a broker that
   ends leave none behind; broker_db_lock tries again when its file was removed as it opened it). */
void broker_db_unlock(int fd, const char *db_path, int remove);
/* The endpoint really bound (resolves tcp://HOST:* to its port): which = 0 workers, 1 control. */
int broker_endpoint(nq_broker_t *b, int which, char *buf, size_t len);

/* Where to point a browser: http://HOST:PORT/ of the HTTP listener (--http), with the port really
   bound (its ADDR may say 0), into buf; returns buf. Only for a broker with --http. */
const char *broker_metrics_url(const nq_broker_t *b, char *buf, size_t len);

/* Checks a job request, cuts it into shards and stores it, in one transaction
   (submit.c; also used by `nq run` before the broker starts). 0, or -1 with err. */
int submit_create(nq_store_t *st, nq_job_spec_t *spec, uint64_t *id, char *err, size_t errlen);
/* What submit_create would refuse in the request itself, said without a store (`nq run` asks
   before it makes a DB). 0, or -1 with err. */
int submit_check(const nq_job_spec_t *spec, char *err, size_t errlen);

#endif
