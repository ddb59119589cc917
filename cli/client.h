/*
 * How `nq` commands reach the answer to a request: through the broker's
 * control endpoint, or (read-only, with --db) straight from the DB file by
 * the same query code the broker runs.
 */
#ifndef NQ_CLIENT_H
#define NQ_CLIENT_H

#include <msgpack.h>

#include "proto.h"

typedef struct {
    const char *broker;          /* control endpoint; NULL: $NQ_BROKER, else tcp://127.0.0.1:7556 */
    const char *db;              /* read the DB directly instead (read-only ops) */
    const char *key_file, *broker_key_file;
    void *zmq_ctx;               /* NULL: own */
    int timeout_ms;              /* default 10000 */
    int json;
} nq_client_opts_t;

typedef struct {
    int code;                    /* NQ_EXIT_* */
    char error[NQ_STR_MAX];
    msgpack_object doc;          /* valid until client_reply_free */
    msgpack_zone *zone;
    char *buf;                   /* the packed document doc points into (offline path) */
} nq_client_reply_t;

/* Sends req and waits for the reply; a transport failure is code NQ_EXIT_ERROR with error set. */
void client_call(const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep);
void client_reply_free(nq_client_reply_t *rep);
/* client_call for a command: on failure prints "nq CMD: reason", frees rep and returns the exit code. */
int client_call_cmd(const char *cmd, const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep);
const char *client_endpoint(const nq_client_opts_t *o);
/*
 * For a read-only command where no broker is named (no --broker, no $NQ_BROKER) and no --db: when
 * nothing listens on the default control endpoint and ./nq.db exists (nq run's store), sets
 * o->db to it, says so on stderr ("nq CMD: no broker at ...; reading ./nq.db") and returns 1;
 * otherwise changes nothing and returns 0.
 */
int client_default_db(const char *cmd, nq_client_opts_t *o);

/*
 * Reading a reply document. The broker's answers are as untrusted as any input
 * (a broken or hostile peer can sit on the control endpoint): a field is used
 * only after its type and range are checked.
 */
/* doc[key] as a uint in [min, max]: 0, or -1 when missing, of another type or out of range. */
int client_doc_u64(const msgpack_object *doc, const char *key, uint64_t min, uint64_t max, uint64_t *out);
/* 1 when doc[key] is the string s, else 0. */
int client_doc_str_is(const msgpack_object *doc, const char *key, const char *s);

#endif
