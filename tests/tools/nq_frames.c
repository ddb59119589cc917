/*
 * nq_frames: a hostile client for the broker's endpoints (a test tool).
 *
 * Connects one DEALER (optionally with CURVE keys) and sends frames that a
 * broker must survive: real messages built with proto_encode and then
 * mutated (bit flips, interesting bytes, huge length headers, truncation,
 * insertion, junk appended), untouched real messages, random bytes, empty
 * and multi-part frames. It never reads what the broker answers.
 *
 * Two targeted modes check semantics rather than parsing:
 *   --forge results   HELLO, then a well-formed count RESULT (total 0, residues
 *                     consistent) for every shard 0..--shards-1 of --job, none
 *                     of which this client was ever leased;
 *   --forge solparts  HELLO, then one 4-byte SOLPART per invented lease for
 *                     --job (a solve job): each names a buffer the broker
 *                     would have to allocate for the whole permutation.
 *
 * The base messages name job --job (default 424242, which no test creates),
 * so mutated-but-valid RESULTs exercise the broker's checks without being
 * forgeries of a running job; --forge is where forgery is tested on purpose.
 */
#include "cli.h"
#include "proto.h"
#include "rng.h"
#include "security.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

typedef struct {
    const char *connect, *key, *broker_key, *target, *forge;
    uint64_t count, seed, job, shards, linger_ms;
    void *ctx, *sock;
    nq_rng_t rng;
    uint64_t n_random, n_mutated, n_valid, n_multi, n_empty;
} frames_t;

static uint64_t pick(frames_t *f, uint64_t bound) { return rng_below(&f->rng, bound); }

/* Integers a decoder gets wrong: edges of every msgpack width, and small ones. */
static uint64_t some_u64(frames_t *f)
{
    static const uint64_t edge[] = { 0, 1, 2, 127, 128, 255, 256, 65535, 65536, 4294967295u,
                                     4294967296ull, UINT64_MAX, UINT64_MAX - 1, 1ull << 63 };
    switch (pick(f, 3)) {
    case 0: return edge[pick(f, sizeof edge / sizeof edge[0])];
    case 1: return pick(f, 64);
    default: return rng_next(&f->rng);
    }
}

static void some_str(frames_t *f, char *out, size_t cap)
{
    size_t len = pick(f, cap < 40 ? cap : 40);
    for (size_t i = 0; i < len; i++)
        out[i] = (char)(' ' + pick(f, 95));
    out[len] = 0;
}

/* ---- base messages: valid, with plausible or edge-case fields ---- */

static void base_hello(frames_t *f, nq_msg_t *m)
{
    m->type = NQ_MSG_HELLO;
    snprintf(m->u.hello.worker_id, sizeof m->u.hello.worker_id, "fuzz-%llu", (unsigned long long)pick(f, 4));
    m->u.hello.nonce = pick(f, 4);
    some_str(f, m->u.hello.host, sizeof m->u.hello.host);
    m->u.hello.threads = 1 + (uint32_t)pick(f, 4096);
    some_str(f, m->u.hello.build, sizeof m->u.hello.build);
}

static void base_result(frames_t *f, nq_msg_t *m, uint8_t *payload, size_t cap)
{
    nq_result_t *r = &m->u.result;
    m->type = NQ_MSG_RESULT;
    r->job = pick(f, 4) ? f->job : some_u64(f);
    r->shard = pick(f, 2000);
    r->lease = some_u64(f);
    r->kind = (uint8_t)(1 + pick(f, 3));
    r->status = (uint8_t)pick(f, 3);
    r->total = some_u64(f);
    r->unique = some_u64(f);
    r->nodes = some_u64(f);
    r->res13 = (uint8_t)(r->total % 13);  /* consistent: the broker's next check must catch it */
    r->res15 = (uint8_t)(r->total % 15);
    r->elapsed_us = some_u64(f);
    r->sol_n = pick(f, 100);
    r->payload_len = pick(f, cap);
    for (size_t i = 0; i < r->payload_len; i++)
        payload[i] = (uint8_t)rng_next(&f->rng);
    r->payload = payload;
}

static void base_heartbeat(frames_t *f, nq_msg_t *m, nq_hb_item_t *items, uint32_t cap)
{
    m->type = NQ_MSG_HEARTBEAT;
    m->u.heartbeat.count = (uint32_t)pick(f, cap);
    for (uint32_t i = 0; i < m->u.heartbeat.count; i++)
        items[i] = (nq_hb_item_t){ some_u64(f), some_u64(f) };
    m->u.heartbeat.items = items;
    m->u.heartbeat.sync = some_u64(f);
}

static void base_ctl(frames_t *f, nq_msg_t *m)
{
    /* read-only operations: a mutation cannot plausibly turn one into submit or cancel */
    static const char *ops[] = { "status", "list", "workers", "result", "export", "solution", "nosuch" };
    static const char *keys[] = { "format", "kind", "n", "depth", "limit", "offset", "x" };
    nq_ctl_req_t *c = &m->u.ctl_req;
    m->type = NQ_MSG_CTL_REQ;
    snprintf(c->op, sizeof c->op, "%s", ops[pick(f, sizeof ops / sizeof ops[0])]);
    c->job = pick(f, 2) ? pick(f, 4) : some_u64(f);
    for (uint64_t i = pick(f, 6); i > 0; i--) {
        const char *k = keys[pick(f, sizeof keys / sizeof keys[0])];
        char v[64];
        some_str(f, v, sizeof v);
        if (pick(f, 2))
            proto_param_add_str(c, k, v);
        else
            proto_param_add_u64(c, k, some_u64(f));
    }
}

static void base_other(frames_t *f, nq_msg_t *m, uint8_t *payload)
{
    switch (pick(f, 7)) {
    case 0: m->type = NQ_MSG_CREDIT; m->u.credit.credit = (uint32_t)pick(f, 65537); break;
    case 1: m->type = NQ_MSG_BYE; break;
    case 2: m->type = NQ_MSG_ACK; m->u.ack = (nq_ack_t){ f->job, pick(f, 100), some_u64(f) }; break;
    case 3: m->type = NQ_MSG_CANCEL; m->u.cancel.job = pick(f, 4); break;
    case 4:
        m->type = NQ_MSG_WELCOME;
        m->u.welcome = (nq_welcome_t){ 100 + (uint32_t)pick(f, 1000), 1 + (uint32_t)pick(f, 100), some_u64(f) };
        break;
    case 5:
        m->type = NQ_MSG_SOLPART;
        m->u.solpart = (nq_solpart_t){ f->job, pick(f, 100), some_u64(f), pick(f, 1000), payload, 4 * pick(f, 64), some_u64(f) };
        break;
    default:
        m->type = NQ_MSG_TASK;
        m->u.task = (nq_task_t){ .job = f->job, .shard = pick(f, 100), .lease = some_u64(f), .kind = 1,
                                 .n = 1 + pick(f, 30), .spec = payload, .spec_len = pick(f, NQ_MAX_SPEC) };
        break;
    }
}

/* One real message, encoded. Returns 0, or -1 if the encoder refused it. */
static int encode_base(frames_t *f, msgpack_sbuffer *sb)
{
    static uint8_t payload[4096];
    static nq_hb_item_t items[64];
    nq_msg_t m;
    memset(&m, 0, sizeof m);
    int worker = strcmp(f->target, "control") != 0;
    uint64_t k = pick(f, 10);
    if (!worker && k < 7)
        base_ctl(f, &m);
    else if (k < 2)
        base_hello(f, &m);
    else if (k < 5)
        base_result(f, &m, payload, sizeof payload);
    else if (k < 6)
        base_heartbeat(f, &m, items, 64);
    else if (k < 7)
        base_ctl(f, &m);
    else
        base_other(f, &m, payload);
    return proto_encode(&m, sb);
}

/* ---- mutations ---- */

static void mutate_once(frames_t *f, uint8_t *buf, size_t *len, size_t cap)
{
    static const uint8_t interesting[] = { 0x00, 0xff, 0x7f, 0x80, 0xc0, 0xc1, 0xc4, 0xc6, 0xcf,
                                           0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0x9f, 0x90, 0xe0 };
    size_t n = *len, at = n ? pick(f, n) : 0;
    switch (pick(f, 7)) {
    case 0: if (n) buf[at] ^= (uint8_t)(1u << pick(f, 8)); break;
    case 1: if (n) buf[at] = interesting[pick(f, sizeof interesting)]; break;
    case 2: *len = n ? pick(f, n) : 0; break;                               /* truncate */
    case 3:                                                                 /* insert a byte */
        if (n < cap) {
            memmove(buf + at + 1, buf + at, n - at);
            buf[at] = (uint8_t)rng_next(&f->rng);
            *len = n + 1;
        }
        break;
    case 4:                                                                 /* delete a byte */
        if (n) {
            memmove(buf + at, buf + at + 1, n - at - 1);
            *len = n - 1;
        }
        break;
    case 5:                                                                 /* a huge declared length */
        if (n + 5 <= cap) {
            memmove(buf + at + 5, buf + at, n - at);
            static const uint8_t hdr[][5] = { { 0xdd, 0xff, 0xff, 0xff, 0xff }, { 0xdb, 0x7f, 0xff, 0xff, 0xff },
                                               { 0xc6, 0xff, 0xff, 0xff, 0xf0 }, { 0xdf, 0x10, 0, 0, 0 } };
            memcpy(buf + at, hdr[pick(f, 4)], 5);
            *len = n + 5;
        }
        break;
    default:                                                                /* junk after the end */
        for (uint64_t i = 1 + pick(f, 8); i > 0 && *len < cap; i--)
            buf[(*len)++] = (uint8_t)rng_next(&f->rng);
        break;
    }
}

/* ---- sending ---- */

static int send_frame(frames_t *f, const void *data, size_t len, int more)
{
    if (zmq_send(f->sock, data, len, more ? ZMQ_SNDMORE : 0) < 0) {
        fprintf(stderr, "nq_frames: send to %s failed: %s\n", f->connect, zmq_strerror(zmq_errno()));
        return -1;
    }
    return 0;
}

static int send_one(frames_t *f)
{
    static uint8_t buf[1 << 16];
    size_t len = 0;
    uint64_t k = pick(f, 100);
    if (k < 10) {                                   /* random bytes, often msgpack-looking */
        len = pick(f, 600);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rng_next(&f->rng);
        if (len && pick(f, 2))
            buf[0] = (uint8_t)(0x90 | pick(f, 16));
        f->n_random++;
    } else if (k < 12) {                            /* empty frame */
        f->n_empty++;
    } else {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        if (encode_base(f, &sb) == 0 && sb.size <= sizeof buf - 64) {
            memcpy(buf, sb.data, sb.size);
            len = sb.size;
        }
        msgpack_sbuffer_destroy(&sb);
        if (k < 24)
            f->n_valid++;                           /* sent as encoded */
        else {
            for (uint64_t i = 1 + pick(f, 4); i > 0; i--)
                mutate_once(f, buf, &len, sizeof buf - 8);
            f->n_mutated++;
        }
    }
    if (pick(f, 50) == 0) {                         /* two or three parts where one is expected */
        f->n_multi++;
        if (send_frame(f, buf, len, 1) != 0 || (pick(f, 2) && send_frame(f, "x", 1, 1) != 0))
            return -1;
    }
    return send_frame(f, buf, len, 0);
}

/* ---- targeted forgeries ---- */

static int send_msg(frames_t *f, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int rc = proto_encode(m, &sb) == 0 ? send_frame(f, sb.data, sb.size, 0) : -1;
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static int forge(frames_t *f)
{
    nq_msg_t m;
    memset(&m, 0, sizeof m);
    m.type = NQ_MSG_HELLO;
    snprintf(m.u.hello.worker_id, sizeof m.u.hello.worker_id, "forger-%llu", (unsigned long long)f->seed);
    snprintf(m.u.hello.host, sizeof m.u.hello.host, "nowhere");
    m.u.hello.nonce = f->seed;
    m.u.hello.threads = 1;
    if (send_msg(f, &m) != 0)
        return -1;
    static uint8_t four[4];
    for (uint64_t i = 0; i < f->shards; i++) {
        memset(&m, 0, sizeof m);
        if (strcmp(f->forge, "results") == 0) {
            m.type = NQ_MSG_RESULT;
            m.u.result = (nq_result_t){ .job = f->job, .shard = i, .lease = rng_next(&f->rng),
                                        .kind = NQ_KIND_COUNT, .status = NQ_RES_OK };
        } else {
            m.type = NQ_MSG_SOLPART;
            m.u.solpart = (nq_solpart_t){ f->job, 0, rng_next(&f->rng), 0, four, 4, rng_next(&f->rng) };
        }
        if (send_msg(f, &m) != 0)
            return -1;
        f->n_valid++;
    }
    return 0;
}

/* ---- setup ---- */

static int frames_connect(frames_t *f)
{
    char err[512];
    int linger = (int)f->linger_ms, timeo = 10000, hwm = 100000;
    int64_t maxmsg = NQ_MAX_FRAME;
    f->ctx = zmq_ctx_new();
    f->sock = zmq_socket(f->ctx, ZMQ_DEALER);
    zmq_setsockopt(f->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(f->sock, ZMQ_SNDTIMEO, &timeo, sizeof timeo);
    zmq_setsockopt(f->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(f->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (security_client_setup(f->sock, f->key, f->broker_key, err, sizeof err) != 0) {
        fprintf(stderr, "nq_frames: %s\n", err);
        return -1;
    }
    if (zmq_connect(f->sock, f->connect) != 0) {
        fprintf(stderr, "nq_frames: cannot connect to %s: %s\n", f->connect, zmq_strerror(zmq_errno()));
        return -1;
    }
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr, "nq_frames: %s\nusage: nq_frames --connect EP [--key F --broker-key F] [--count N] "
            "[--seed S] [--target worker|control] [--job J] [--forge results|solparts --shards K] "
            "[--linger-ms MS]\n", why);
    return 2;
}

static int parse_args(frames_t *f, int argc, char **argv)
{
    static const struct option opts[] = {
        { "connect", required_argument, 0, 'c' }, { "key", required_argument, 0, 'k' },
        { "broker-key", required_argument, 0, 'K' }, { "count", required_argument, 0, 'n' },
        { "seed", required_argument, 0, 's' }, { "target", required_argument, 0, 't' },
        { "job", required_argument, 0, 'j' }, { "forge", required_argument, 0, 'f' },
        { "shards", required_argument, 0, 'S' }, { "linger-ms", required_argument, 0, 'l' },
        { 0, 0, 0, 0 },
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        uint64_t *num = c == 'n' ? &f->count : c == 's' ? &f->seed : c == 'j' ? &f->job : c == 'S' ? &f->shards :
                        c == 'l' ? &f->linger_ms : NULL;
        if (num && nq_parse_u64(optarg, 0, c == 'l' ? 600000 : UINT64_MAX, num) != 0)
            return usage("a number option got a non-number");
        switch (c) {
        case 'c': f->connect = optarg; break;
        case 'k': f->key = optarg; break;
        case 'K': f->broker_key = optarg; break;
        case 't': f->target = optarg; break;
        case 'f': f->forge = optarg; break;
        case 'n': case 's': case 'j': case 'S': case 'l': break;
        default: return usage("unknown option");
        }
    }
    if (!f->connect || optind < argc)
        return usage("--connect EP is required and nothing else may follow");
    if (strcmp(f->target, "worker") != 0 && strcmp(f->target, "control") != 0)
        return usage("--target is worker or control");
    if (f->forge && strcmp(f->forge, "results") != 0 && strcmp(f->forge, "solparts") != 0)
        return usage("--forge is results or solparts");
    return 0;
}

int main(int argc, char **argv)
{
    frames_t f = { .target = "worker", .count = 1000, .seed = 1, .job = 424242, .shards = 1, .linger_ms = 10000 };
    int rc = parse_args(&f, argc, argv);
    if (rc != 0)
        return rc;
    rng_init(&f.rng, f.seed, 0x6672);
    if (frames_connect(&f) != 0)
        rc = 3;
    else if (f.forge)
        rc = forge(&f) == 0 ? 0 : 3;
    else
        for (uint64_t i = 0; i < f.count && rc == 0; i++)
            rc = send_one(&f) == 0 ? 0 : 3;
    if (f.sock)
        zmq_close(f.sock);          /* linger: what was queued still goes out */
    zmq_ctx_term(f.ctx);
    printf("nq_frames: %s to %s: valid=%llu mutated=%llu random=%llu empty=%llu multipart=%llu\n",
           rc == 0 ? "sent" : "FAILED", f.connect, (unsigned long long)f.n_valid, (unsigned long long)f.n_mutated,
           (unsigned long long)f.n_random, (unsigned long long)f.n_empty, (unsigned long long)f.n_multi);
    return rc;
}
