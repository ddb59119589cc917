/* The client side of the control endpoint, and its offline twin (--db). */
#include "client.h"
#include "cli.h"
#include "control.h"
#include "render.h"
#include "security.h"
#include "store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

/* The control endpoint a client uses when none is named, and the DB it reads when nothing
   listens there: nq broker's and nq run's defaults. */
#define NQ_DEFAULT_CONTROL_PORT 7556
#define NQ_DEFAULT_CONTROL "tcp://127.0.0.1:7556"
#define NQ_DEFAULT_DB "nq.db"

const char *client_endpoint(const nq_client_opts_t *o)
{
    if (o->broker)
        return o->broker;
    const char *env = getenv("NQ_BROKER");
    return env && env[0] ? env : NQ_DEFAULT_CONTROL;
}

/* 1 when something accepts a TCP connection on the default control endpoint (loopback: a refusal
   comes at once), else 0. */
static int default_endpoint_listens(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(NQ_DEFAULT_CONTROL_PORT),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 1;                       /* cannot tell: ask the broker as before */
    int up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return up;
}

int client_default_db(const char *cmd, nq_client_opts_t *o)
{
    const char *env = getenv("NQ_BROKER");
    if (o->db || o->broker || (env && env[0]) || access(NQ_DEFAULT_DB, F_OK) != 0 ||
        default_endpoint_listens())
        return 0;
    o->db = NQ_DEFAULT_DB;
    fprintf(stderr, "nq %s: no broker at %s; reading ./%s (--broker EP or --db PATH to choose)\n", cmd,
            NQ_DEFAULT_CONTROL, NQ_DEFAULT_DB);
    return 1;
}

static void set_error(nq_client_reply_t *rep, int code, const char *fmt, const char *arg)
{
    rep->code = code;
    snprintf(rep->error, sizeof rep->error, fmt, arg);
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

static int wait_reply(void *sock, void *mon, const char *ep, int timeout_ms, nq_client_reply_t *rep)
{
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        zmq_pollitem_t it = { sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 100) > 0)
            return 0;
        char why[256];
        if (security_monitor_check(mon, why, sizeof why)) {
            set_error(rep, NQ_EXIT_ERROR, "%s", why);
            return -1;
        }
    }
    set_error(rep, NQ_EXIT_ERROR, "no answer from the broker at %s: is 'nq broker' running there? "
              "(--broker ENDPOINT or NQ_BROKER; --db PATH reads the DB directly)", ep);
    return -1;
}

static void call_remote(const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    const char *ep = client_endpoint(o);
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
    if (o->key_file)
        mon = security_monitor_new(ctx, sock, "client");
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

void client_call(const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    memset(rep, 0, sizeof *rep);
    int readonly = strcmp(req->op, "submit") && strcmp(req->op, "cancel") && strcmp(req->op, "retry");
    if (o->db && readonly)
        call_local(o, req, rep);
    else
        call_remote(o, req, rep);
}

int client_call_cmd(const char *cmd, const nq_client_opts_t *o, const nq_ctl_req_t *req, nq_client_reply_t *rep)
{
    client_call(o, req, rep);
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
