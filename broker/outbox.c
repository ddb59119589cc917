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

/* One queued frame: which socket, the routing id, where its encoded message lies in the buffer. */
typedef struct {
    uint8_t control;                  /* 1: the control socket, 0: the workers' */
    uint8_t rid_len;
    char rid[255];
    size_t off, len;
} outbox_item_t;

/* Every queued message is encoded straight into one buffer, so queuing costs no allocation of
   its own (a malloc, a copy and a free per message cost the loop 6 % of its results/s). */
struct nq_outbox {
    outbox_item_t *items;
    size_t n, cap;
    msgpack_sbuffer buf;
};

static struct nq_outbox *outbox_get(nq_broker_t *b)
{
    if (!b->outbox && (b->outbox = calloc(1, sizeof *b->outbox)))
        msgpack_sbuffer_init(&b->outbox->buf);
    return b->outbox;
}

/* Files the bytes from off to the buffer's end as one frame for rid; on failure they go. */
static int outbox_file(struct nq_outbox *o, int control, const void *rid, size_t rid_len, size_t off)
{
    if (rid_len > 255 || o->buf.size == off)
        goto undo;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 256;
        outbox_item_t *items = realloc(o->items, cap * sizeof *items);
        if (!items)
            goto undo;
        o->items = items;
        o->cap = cap;
    }
    outbox_item_t *it = &o->items[o->n++];
    it->off = off;
    it->len = o->buf.size - off;
    it->control = (uint8_t)control;
    it->rid_len = (uint8_t)rid_len;
    memcpy(it->rid, rid, rid_len);
    return 0;
undo:
    o->buf.size = off;
    return -1;
}

int outbox_send_rid(nq_broker_t *b, const void *rid, size_t rid_len, const nq_msg_t *m)
{
    struct nq_outbox *o = outbox_get(b);
    if (!o)
        return -1;
    size_t off = o->buf.size;
    if (proto_encode(m, &o->buf) != 0) {
        o->buf.size = off;
        return -1;
    }
    return outbox_file(o, 0, rid, rid_len, off);
}

int outbox_send(nq_broker_t *b, nq_peer_t *p, const nq_msg_t *m)
{
    int rc = outbox_send_rid(b, p->rid, p->rid_len, m);
    if (rc == 0)
        p->last_sent = b->now;
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
    struct nq_outbox *o = outbox_get(b);
    if (!o)
        return;
    size_t off = o->buf.size;
    if (proto_encode(&m, &o->buf) != 0) {   /* too big or too deep to send: say so, never go silent */
        nq_msg_t fb = { .type = NQ_MSG_CTL_REP };
        fb.u.ctl_rep.code = NQ_EXIT_ERROR;
        snprintf(fb.u.ctl_rep.error, sizeof fb.u.ctl_rep.error,
                 "the reply does not fit in one message; use --db PATH to read the DB directly");
        o->buf.size = off;
        if (proto_encode(&fb, &o->buf) != 0)
            o->buf.size = off;
    }
    outbox_file(o, 1, rid, rid_len, off);
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
            zmq_send(sock, o->buf.data + it->off, it->len, ZMQ_DONTWAIT) < 0)
            b->stats.sends_dropped++;
    }
    o->n = 0;
    o->buf.size = 0;
    if (o->cap > 65536) {               /* a burst's worth of memory goes back */
        free(o->items);
        o->items = NULL;
        o->cap = 0;
    }
    if (o->buf.alloc > ((size_t)16 << 20)) {
        msgpack_sbuffer_destroy(&o->buf);
        msgpack_sbuffer_init(&o->buf);
    }
}

void outbox_free(nq_broker_t *b)
{
    if (!b->outbox)
        return;
    msgpack_sbuffer_destroy(&b->outbox->buf);
    free(b->outbox->items);
    free(b->outbox);
    b->outbox = NULL;
}
