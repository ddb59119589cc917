/*
 * The outbox: every message the broker sends, to a worker or as a reply to a client, is
 * encoded and queued here, and the loop drains the queue once a round (outbox_flush). So no
 * module below the loop touches a socket, and the order of what one peer is sent is the order
 * it was queued in: a lease's TASK always goes before the HEARTBEAT token that can prove it lost
 * (leases_heartbeat).
 *
 * A message that cannot be delivered when drained (the peer went away, or its queue in ZeroMQ
 * is full) is dropped and counted. Nothing depends on its arrival: a TASK that never arrives is
 * missing from the worker's next inventory and goes back uncharged, an ACK that never arrives
 * makes the worker send its result again, a lost reply makes the client time out.
 */
#include "broker_impl.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

/* One queued frame: which socket, the routing id, the encoded message. */
typedef struct {
    uint8_t control;                  /* 1: the control socket, 0: the workers' */
    uint8_t rid_len;
    char rid[255];
    size_t len;
    char *bytes;
} outbox_item_t;

struct nq_outbox {
    outbox_item_t *items;
    size_t n, cap;
};

static int outbox_push(nq_broker_t *b, int control, const void *rid, size_t rid_len, const msgpack_sbuffer *sb)
{
    if (rid_len > 255)
        return -1;
    if (!b->outbox && !(b->outbox = calloc(1, sizeof *b->outbox)))
        return -1;
    struct nq_outbox *o = b->outbox;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 256;
        outbox_item_t *items = realloc(o->items, cap * sizeof *items);
        if (!items)
            return -1;
        o->items = items;
        o->cap = cap;
    }
    outbox_item_t *it = &o->items[o->n];
    if (!(it->bytes = malloc(sb->size ? sb->size : 1)))
        return -1;
    memcpy(it->bytes, sb->data, sb->size);
    it->len = sb->size;
    it->control = (uint8_t)control;
    it->rid_len = (uint8_t)rid_len;
    memcpy(it->rid, rid, rid_len);
    o->n++;
    return 0;
}

int outbox_send(nq_broker_t *b, nq_peer_t *p, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int rc = proto_encode(m, &sb) == 0 ? outbox_push(b, 0, p->rid, p->rid_len, &sb) : -1;
    msgpack_sbuffer_destroy(&sb);
    if (rc == 0)
        p->last_sent = b->now;
    return rc;
}

int outbox_send_rid(nq_broker_t *b, const void *rid, size_t rid_len, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int rc = proto_encode(m, &sb) == 0 ? outbox_push(b, 0, rid, rid_len, &sb) : -1;
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

void outbox_reply(nq_broker_t *b, const void *rid, size_t rid_len, int code, const char *error,
                  const msgpack_sbuffer *doc)
{
    nq_msg_t m = { .type = NQ_MSG_CTL_REP };
    m.u.ctl_rep.code = code;
    snprintf(m.u.ctl_rep.error, sizeof m.u.ctl_rep.error, "%s", error ? error : "");
    for (char *p = m.u.ctl_rep.error; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';                   /* the protocol refuses control bytes in strings */
    m.u.ctl_rep.doc_bytes = doc ? doc->data : NULL;
    m.u.ctl_rep.doc_len = doc ? doc->size : 0;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    if (proto_encode(&m, &sb) != 0) {   /* too big or too deep to send: say so, never go silent */
        nq_msg_t fb = { .type = NQ_MSG_CTL_REP };
        fb.u.ctl_rep.code = NQ_EXIT_ERROR;
        snprintf(fb.u.ctl_rep.error, sizeof fb.u.ctl_rep.error,
                 "the reply does not fit in one message; use --db PATH to read the DB directly");
        msgpack_sbuffer_clear(&sb);
        proto_encode(&fb, &sb);
    }
    if (sb.size > 0)
        outbox_push(b, 1, rid, rid_len, &sb);
    msgpack_sbuffer_destroy(&sb);
}

void outbox_answer_job(nq_broker_t *b, const void *rid, size_t rid_len, int code, const char *err, uint64_t id)
{
    msgpack_sbuffer doc;
    msgpack_sbuffer_init(&doc);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &doc, msgpack_sbuffer_write);
    if (code == NQ_EXIT_OK) {
        msgpack_pack_map(&pk, 1);
        msgpack_pack_str_with_body(&pk, "id", 2);
        msgpack_pack_uint64(&pk, id);
    }
    outbox_reply(b, rid, rid_len, code, code ? err : NULL, code ? NULL : &doc);
    msgpack_sbuffer_destroy(&doc);
}

void outbox_flush(nq_broker_t *b)
{
    struct nq_outbox *o = b->outbox;
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        outbox_item_t *it = &o->items[i];
        void *sock = it->control ? b->control_sock : b->workers_sock;
        if (!sock || zmq_send(sock, it->rid, it->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
            zmq_send(sock, it->bytes, it->len, ZMQ_DONTWAIT) < 0)
            b->stats.sends_dropped++;
        free(it->bytes);
    }
    o->n = 0;
    if (o->cap > 65536) {               /* a burst's worth of memory goes back */
        free(o->items);
        o->items = NULL;
        o->cap = 0;
    }
}

void outbox_free(nq_broker_t *b)
{
    if (!b->outbox)
        return;
    for (size_t i = 0; i < b->outbox->n; i++)
        free(b->outbox->items[i].bytes);
    free(b->outbox->items);
    free(b->outbox);
    b->outbox = NULL;
}
