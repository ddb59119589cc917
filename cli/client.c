/* The client side of the control endpoint, and its offline twin (--db). */
#include "client.h"
#include "cli.h"
#include "control.h"
#include "control_ep.h"
#include "render.h"
#include "resolve.h"
#include "security.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* The DB a client reads when none is named: nq run's and nq broker's default. */
#define NQ_DEFAULT_DB "nq.db"

static int readonly_op(const char *op)
{
    return strcmp(op, "submit") && strcmp(op, "cancel") && strcmp(op, "retry");
}

static void set_error(nq_client_reply_t *rep, int code, const char *fmt, const char *arg)
{
    rep->code = code;
    snprintf(rep->error, sizeof rep->error, fmt, arg);
}

/* The DB's own broker when one listens beside it; else, for a read-only request, the DB file. */
static int resolve_db(nq_client_opts_t *o, const char *db, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    char err[NQ_STR_MAX];
    o->db = db;
    if (control_ep_for_db(db, o->ep, sizeof o->ep, err, sizeof err) != 0) {
        set_error(rep, NQ_EXIT_ERROR, "%s", err);
        return rep->code;
    }
    if (control_ep_listens(o->ep) != 0)
        return 0;                       /* listening, or only a try tells */
    if (readonly_op(req->op) && access(db, F_OK) == 0) {
        o->local = 1;
        return 0;
    }
    rep->code = NQ_EXIT_ERROR;
    snprintf(rep->error, sizeof rep->error, "no broker runs for %s (nothing listens on %s)%s: start one with "
             "'nq broker --db %s', or name one with --broker EP or NQ_BROKER", db, o->ep,
             readonly_op(req->op) ? " and there is no such file" : "", db);
    return rep->code;
}

int client_resolve(nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    if (o->resolved)
        return 0;
    const char *env = getenv("NQ_BROKER");
    const char *named = o->broker ? o->broker : !o->db && env && env[0] ? env : NULL;
    int rc = 0;
    if (named && strlen(named) >= sizeof o->ep)
        set_error(rep, rc = NQ_EXIT_USAGE, "%s", "the broker's endpoint is too long");
    else if (named)
        snprintf(o->ep, sizeof o->ep, "%s", named);
    else
        rc = resolve_db(o, o->db ? o->db : NQ_DEFAULT_DB, req, rep);
    o->resolved = rc == 0;
    return rc;
}

/* Once a process: which broker, or which DB file, gave the answer. */
static void say_source(const char *cmd, const nq_client_opts_t *o)
{
    static int said;
    if (said++ || o->quiet)
        return;
    if (o->local)
        fprintf(stderr, "nq %s: read %s (no broker runs for it)\n", cmd, o->db);
    else if (o->db)
        fprintf(stderr, "nq %s: answered by the broker of %s (%s)\n", cmd, o->db, o->ep);
    else
        fprintf(stderr, "nq %s: answered by the broker at %s\n", cmd, o->ep);
}

/* The offline path: run the query here, then parse the packed document like a reply. */
static void call_local(const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    char err[NQ_STR_MAX] = "";
    nq_store_t *st = store_open(o->db, 1, err, sizeof err);
    if (!st) {
        set_error(rep, NQ_EXIT_ERROR, "%s", err);
        return;
    }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    rep->code = control_query(store_db(st), o->db, NULL, req, &pk, err, sizeof err);
    rep->answered = 1;
    if (rep->code == 0) {
        rep->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
        size_t off = 0;
        if (!rep->zone || msgpack_unpack(sb.data, sb.size, &off, rep->zone, &rep->doc) != MSGPACK_UNPACK_SUCCESS)
            set_error(rep, NQ_EXIT_ERROR, "%s", "cannot read the query's document");
        rep->buf = msgpack_sbuffer_release(&sb);   /* doc's strings point into it */
    } else {
        snprintf(rep->error, sizeof rep->error, "%s", err);
    }
    msgpack_sbuffer_destroy(&sb);
    store_destroy(&st);
}

/* Waits in short slices: a refused connection or key is said within ~10 ms, not at the timeout. */
static int wait_reply(void *sock, void *mon, const char *ep, int timeout_ms, nq_client_reply_t *rep)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 10) > 0)
            return 0;
        char why[512];
        if (security_monitor_check(mon, why, sizeof why)) {
            rep->code = NQ_EXIT_ERROR;
            snprintf(rep->error, sizeof rep->error, "%s: %s", ep, why);
            return -1;
        }
    }
    set_error(rep, NQ_EXIT_ERROR, "no answer from the broker at %s: is 'nq broker' running there? "
              "(--broker ENDPOINT or NQ_BROKER; --db PATH asks that DB's broker)", ep);
    return -1;
}

static void call_remote(const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    const char *ep = o->ep;
    void *ctx = o->zmq_ctx ? o->zmq_ctx : zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_DEALER), *mon = NULL;
    int linger = 0;
    int64_t maxmsg = NQ_MAX_FRAME;
    char err[NQ_STR_MAX] = "";
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (security_client_setup(sock, o->key_file, o->broker_key_file, err, sizeof err) != 0) {
        set_error(rep, NQ_EXIT_USAGE, "%s", err);
        goto out;
    }
    if (resolve_check(ep, err, sizeof err) != 0) {
        set_error(rep, NQ_EXIT_ERROR, "%s", err);
        goto out;
    }
    if (control_ep_listens(ep) == 0) {  /* a unix socket with no broker: refused at once */
        set_error(rep, NQ_EXIT_ERROR, "no broker listens on %s: is 'nq broker' running there?", ep);
        goto out;
    }
    mon = security_monitor_new(ctx, sock, SECURITY_ROLE_CLIENT);
    if (zmq_connect(sock, ep) != 0) {
        set_error(rep, NQ_EXIT_USAGE, "bad broker endpoint '%s' (expected e.g. tcp://HOST:7556)", ep);
        goto out;
    }
    nq_msg_t m = { .type = NQ_MSG_CTL_REQ };
    m.u.ctl_req = *req;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int sent = proto_encode(&m, &sb) == 0 && zmq_send(sock, sb.data, sb.size, 0) >= 0;
    msgpack_sbuffer_destroy(&sb);
    if (!sent) {
        set_error(rep, NQ_EXIT_ERROR, "cannot send to %s", ep);
        goto out;
    }
    if (wait_reply(sock, mon, ep, o->timeout_ms > 0 ? o->timeout_ms : 10000, rep) != 0)
        goto out;
    zmq_msg_t f;
    zmq_msg_init(&f);
    zmq_msg_recv(&f, sock, 0);
    nq_msg_t r;
    if (proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &r, err, sizeof err) != 0) {
        set_error(rep, NQ_EXIT_ERROR, "bad reply from the broker: %s", err);
    } else if (r.type != NQ_MSG_CTL_REP) {
        set_error(rep, NQ_EXIT_ERROR, "bad reply from the broker: %s", proto_type_name(r.type));
        proto_msg_free(&r);
    } else {
        rep->code = r.u.ctl_rep.code;
        rep->answered = 1;
        snprintf(rep->error, sizeof rep->error, "%s", r.u.ctl_rep.error);
        rep->doc = r.u.ctl_rep.doc;
        rep->zone = r.u.ctl_rep.zone;   /* ownership moves to the reply */
    }
    zmq_msg_close(&f);
out:
    security_monitor_destroy(&mon);
    zmq_close(sock);
    if (!o->zmq_ctx)
        zmq_ctx_term(ctx);
}

void client_call(nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    memset(rep, 0, sizeof *rep);
    if (client_resolve(o, req, rep) != 0)
        return;
    if (o->local)
        call_local(o, req, rep);
    else
        call_remote(o, req, rep);
}

int client_call_cmd(const char *cmd, nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    client_call(o, req, rep);
    if (rep->answered)
        say_source(cmd, o);
    if (rep->code == 0)
        return 0;
    fprintf(stderr, "nq %s: %s\n", cmd, rep->error[0] ? rep->error : "failed");
    client_reply_free(rep);
    return rep->code;
}

void client_reply_free(nq_client_reply_t *rep)
{
    if (rep->zone)
        msgpack_zone_free(rep->zone);
    rep->zone = NULL;
    free(rep->buf);
    rep->buf = NULL;
}

int client_doc_u64(const msgpack_object *doc, const char *key, uint64_t min, uint64_t max, uint64_t *out)
{
    const msgpack_object *o = render_get(doc, key);
    if (!o || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 < min || o->via.u64 > max)
        return -1;
    *out = o->via.u64;
    return 0;
}

int client_doc_str_is(const msgpack_object *doc, const char *key, const char *s)
{
    const msgpack_object *o = render_get(doc, key);
    size_t len = strlen(s);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == len && !memcmp(o->via.str.ptr, s, len);
}
