/*
 * The wire protocol between broker, workers and clients: one msgpack array per
 * ZeroMQ frame,  [version, type, field1, field2, ...]  with a fixed field list
 * per type (schema/protocol.md is the specification; keep the two in step).
 *
 * Decoding never trusts the frame: the size is capped, every declared length
 * and container count is checked against the bytes that are really there and
 * against per-field caps BEFORE msgpack-c allocates anything, every field's
 * type and range is checked, and trailing bytes are an error. A frame that
 * fails any check is rejected with a reason; it never reaches the store.
 */
#ifndef NQ_PROTO_H
#define NQ_PROTO_H

#include "nq.h"

#include <stddef.h>
#include <stdint.h>
#include <msgpack.h>

#define NQ_PROTO_VERSION      5            /* the one version spoken: a frame of any other is
                                              refused (proto_decode: NQ_PROTO_WRONG_VERSION) */
#define NQ_MAX_FRAME          (64u << 20)  /* bytes; also ZMQ_MAXMSGSIZE on every socket */
#define NQ_MAX_PAYLOAD        (48u << 20)  /* RESULT payload / SOLPART data bytes */
#define NQ_MAX_HEARTBEAT_ITEMS 4096        /* leases reported in one HEARTBEAT */
/* A worker's heartbeat lists every lease it holds, queued and unacknowledged ones too: the broker
   grants credit up to half of NQ_MAX_HEARTBEAT_ITEMS and ignores the rest, so the list always
   fits (a reply held back while the store is down can double what a worker holds). */
#define NQ_CREDIT_MAX (NQ_MAX_HEARTBEAT_ITEMS / 2)
#define NQ_MAX_CTL_PARAMS     32           /* key/value pairs in a control request */
#define NQ_MAX_DOC_DEPTH      8            /* nesting of a control reply document */
#define NQ_MAX_DOC_ITEMS      (1u << 20)   /* total objects in a control reply document */

typedef enum {
    NQ_MSG_HELLO = 1,     /* worker -> broker */
    NQ_MSG_WELCOME,       /* broker -> worker */
    NQ_MSG_CREDIT,        /* worker -> broker */
    NQ_MSG_TASK,          /* broker -> worker */
    NQ_MSG_HEARTBEAT,     /* both ways */
    NQ_MSG_RESULT,        /* worker -> broker */
    NQ_MSG_SOLPART,       /* worker -> broker: a chunk of a solve result's permutation */
    NQ_MSG_ACK,           /* broker -> worker */
    NQ_MSG_CANCEL,        /* broker -> worker */
    NQ_MSG_BYE,           /* worker -> broker */
    NQ_MSG_CTL_REQ,       /* client -> broker (control endpoint) */
    NQ_MSG_CTL_REP,       /* broker -> client */
    NQ_MSG_TYPE_MAX
} nq_msg_type_t;


/* RESULT status. */
enum { NQ_RES_OK = 0, NQ_RES_NOTFOUND = 1, NQ_RES_ERROR = 2 };

typedef struct {
    char worker_id[NQ_STR_MAX];   /* stable id of the worker process (host:pid:start) */
    uint64_t nonce;               /* random per session: tells a restarted worker apart */
    char host[NQ_STR_MAX];
    uint32_t threads;             /* 1..NQ_THREADS_MAX */
    char build[NQ_STR_MAX];       /* kernel build id */
} nq_hello_t;

typedef struct {
    uint32_t heartbeat_ms;        /* 100..60000 */
    uint32_t liveness;            /* missed heartbeats before a peer is dead, 1..100 */
    uint64_t broker_nonce;        /* changes when the broker restarts */
} nq_welcome_t;

typedef struct { uint32_t credit; } nq_credit_t;   /* 0..65536: shards the worker wants outstanding */

typedef struct {
    uint64_t job, shard, lease;
    uint32_t attempt;
    uint8_t kind;                 /* nq_kind_t */
    uint64_t n;                   /* 1..1e9 */
    const uint8_t *spec;          /* count/enumerate: shard descriptor; points into the frame */
    size_t spec_len;              /* 0..NQ_MAX_SPEC */
    uint64_t seed;                /* solve */
    char algo[NQ_STR_MAX];        /* solve: method name */
    uint64_t max_steps;           /* solve: 0 = default */
    uint64_t proof;               /* MAC binding the lease to the worker it was issued to: echoed back */
} nq_task_t;

typedef struct { uint64_t lease, progress; } nq_hb_item_t;
/* A GPU worker's devices, one figure set each (a worker drives at most NQ_GPU_MAX_DEVICES):
   the name is the driver's words, text but hostile like every string from a peer. */
#define NQ_MAX_HB_DEVICES   16
#define NQ_DEVICE_NAME_MAX  64            /* bytes with the NUL: a name is cut to 63 */
#define NQ_DEVICE_OK        0
#define NQ_DEVICE_FAILED    1
typedef struct {
    char name[NQ_DEVICE_NAME_MAX];
    uint8_t state;                /* NQ_DEVICE_OK or NQ_DEVICE_FAILED */
    uint32_t queued;              /* shards it holds now */
    uint64_t shards;              /* shards it counted since the worker started */
    uint64_t rate_milli;          /* shards a second it counts lately, times 1000 */
} nq_hb_device_t;
typedef struct {
    uint32_t count;               /* 0..NQ_MAX_HEARTBEAT_ITEMS */
    nq_hb_item_t *items;          /* decode: malloc'd by proto_decode, freed by proto_msg_free */
    uint64_t sync;                /* broker -> worker: a new token; worker -> broker: the last token
                                     it read (0: none), so every lease sent before it is in items */
    uint32_t ndevices;            /* 0..NQ_MAX_HB_DEVICES: a GPU worker's devices; 0 otherwise */
    nq_hb_device_t devices[NQ_MAX_HB_DEVICES];
} nq_heartbeat_t;

typedef struct {
    uint64_t job, shard, lease;
    uint8_t kind;
    uint8_t status;               /* NQ_RES_* */
    uint64_t total, unique, nodes; /* count: weighted total and unique contribution; solve: steps in nodes */
    uint8_t res13, res15;         /* count: residues of total mod 13 and 15, kept apart from total */
    uint64_t elapsed_us;
    uint64_t sol_n;               /* solve: length of the permutation sent in SOLPARTs (0 if none) */
    const uint8_t *payload;       /* enumerate: packed solutions; solve: error text; into the frame */
    size_t payload_len;
    uint64_t proof;               /* the TASK's proof, unchanged */
    uint8_t nodes_kind;           /* NQ_NODES_CPU, or NQ_NODES_GPU_FAST: nodes are that kernel's own */
} nq_result_t;

/* Whose node count a count RESULT carries: the CPU kernels' (and the GPU's parity kernel, which
   counts the same nodes), or the fast GPU search's own, which quorums and spot-checks do not
   compare with the CPU's. */
enum { NQ_NODES_CPU = 0, NQ_NODES_GPU_FAST = 1 };

/* TASK.algo of a count: "" any kernel, or this: the CPU kernels' count is wanted (a nodes dispute
   between two CPU counts, which no other kernel's nodes can settle). A worker with a GPU runs it on
   a CPU thread, and makes no GPU copy of it. */
#define NQ_TASK_CPU "cpu"

typedef struct {
    uint64_t job, shard, lease;
    uint64_t offset;              /* first row in this chunk */
    const uint8_t *data;          /* uint32 little-endian columns; into the frame */
    size_t data_len;              /* multiple of 4 */
    uint64_t proof;               /* the TASK's proof, unchanged */
} nq_solpart_t;

typedef struct { uint64_t job, shard, lease; } nq_ack_t;
typedef struct {
    uint64_t job;
    uint64_t lease;               /* v4: stop only this lease of the job; 0: every lease of it */
} nq_cancel_t;

typedef struct {
    char key[32];
    int is_str;
    char str[NQ_STR_MAX];
    uint64_t u;
} nq_param_t;

typedef struct {
    char op[32];                  /* submit, status, list, workers, result, cancel, retry, export, ... */
    uint64_t job;                 /* 0 when not about one job */
    uint32_t nparams;
    nq_param_t params[NQ_MAX_CTL_PARAMS];
} nq_ctl_req_t;

typedef struct {
    int32_t code;                 /* 0 ok, else an NQ_EXIT_* code */
    char error[NQ_STR_MAX];
    /* encode: the document already packed (doc_bytes/doc_len; may be empty = nil).
       decode: doc is the parsed document, living in zone, freed by proto_msg_free. */
    const void *doc_bytes;
    size_t doc_len;
    msgpack_object doc;
    msgpack_zone *zone;
} nq_ctl_rep_t;

typedef struct {
    nq_msg_type_t type;
    union {
        nq_hello_t hello;
        nq_welcome_t welcome;
        nq_credit_t credit;
        nq_task_t task;
        nq_heartbeat_t heartbeat;
        nq_result_t result;
        nq_solpart_t solpart;
        nq_ack_t ack;
        nq_cancel_t cancel;
        nq_ctl_req_t ctl_req;
        nq_ctl_rep_t ctl_rep;
    } u;
} nq_msg_t;

/*
 * Encodes m into sb (which the caller has initialised; data appended), in NQ_PROTO_VERSION.
 * Returns 0, or -1 if a field is out of range (a bug in the caller).
 */
int proto_encode(const nq_msg_t *m, msgpack_sbuffer *sb);

/*
 * Decodes one frame. Pointers in *m (spec, payload, data) point into buf and
 * are valid while buf is. Returns 0, or -1 (NQ_PROTO_WRONG_VERSION: -2) with a one-line reason in err.
 * On success call proto_msg_free(m) when done (frees heartbeat items and the
 * ctl reply zone); on failure nothing needs freeing.
 */
int proto_decode(const void *buf, size_t len, nq_msg_t *m, char *err, size_t errlen);
/* proto_decode's answer to a frame of another version (err says which): its sender runs another
   nq release, and is told so by a frame in ours, which its own decoder refuses the same way. */
#define NQ_PROTO_WRONG_VERSION (-2)
void proto_msg_free(nq_msg_t *m);

const char *proto_type_name(int type);   /* "HELLO", ..., or "?" */
/* NULL when id may be a HELLO's worker_id, else why not. */
const char *proto_check_worker_id(const char *id);

/* Control request parameters, by key: NULL / -1 when absent or of the other type. */
const char *proto_param_str(const nq_ctl_req_t *r, const char *key);
int proto_param_u64(const nq_ctl_req_t *r, const char *key, uint64_t *out);
/* Adds a parameter to a request being built; -1 when full or the key is too long. */
int proto_param_add_str(nq_ctl_req_t *r, const char *key, const char *val);
int proto_param_add_u64(nq_ctl_req_t *r, const char *key, uint64_t val);

#endif
