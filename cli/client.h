/*
 * How `nq` commands reach the answer to a request: through the broker's
 * control endpoint, or (read-only, with --db) straight from the DB file by
 * the same query code the broker runs.
 */
#ifndef NQ_CLIENT_H
#define NQ_CLIENT_H

#include <msgpack.h>

#include "proto.h"

/*
 * Which broker answers: --broker EP; else the broker of --db PATH; else $NQ_BROKER; else the
 * broker of ./nq.db. A DB's broker listens beside it (control_ep.h), so a client reaches the
 * broker of the DB it names and no other; where none runs, the read-only commands read the DB
 * file itself.
 */
typedef struct {
    const char *broker;          /* --broker: this control endpoint */
    const char *db;              /* --db: this DB's broker, or with none running the file (read-only ops) */
    const char *key_file, *broker_key_file;
    void *zmq_ctx;               /* NULL: own */
    int timeout_ms;              /* default 10000 */
    int json;
    int quiet;                   /* do not say which broker or DB answered */
    /* set by client_resolve */
    int resolved, local;         /* local: read db here */
    char ep[NQ_STR_MAX];         /* the endpoint asked (remote) */
} nq_client_opts_t;

typedef struct {
    int code;                    /* NQ_EXIT_* */
    char error[4 * NQ_STR_MAX];  /* room for two endpoints and a DB path */
    msgpack_object doc;          /* valid until client_reply_free */
    msgpack_zone *zone;
    char *buf;                   /* the packed document doc points into (offline path) */
    int answered;                /* a broker or the DB answered (code may still say no) */
} nq_client_reply_t;

/* Decides which broker (or DB file) answers, once (see nq_client_opts_t): 0, or an exit code
   with the reason in rep->error. */
int client_resolve(nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep);
/* Sends req and waits for the reply; a transport failure is code NQ_EXIT_ERROR with error set. */
void client_call(nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep);
void client_reply_free(nq_client_reply_t *rep);
/* client_call for a command: on failure prints "nq CMD: reason", frees rep and returns the exit code.
   The first answer also says on stderr which broker or DB gave it (unless o->quiet). */
int client_call_cmd(const char *cmd, nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep);

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
