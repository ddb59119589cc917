/*
 * Load generator for the broker: K simulated workers on one DEALER socket
 * each, every one asking for C shards at a time and answering each TASK at
 * once with a RESULT (a solve seed "not found", or a count shard with no
 * solution: valid to the broker's checks, cheap, durable). It stops after
 * EXPECTED ACKs (or SECONDS, when given) and prints the durable results per
 * second as seen by the broker (an ACK is sent only after the commit).
 *
 *   nq_loadgen ENDPOINT WORKERS CREDIT EXPECTED [SECONDS]
 *
 * WORKERS up to 20000 (a campaign's worker count): raise `ulimit -n` first.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void send_msg(void *s, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    if (proto_encode(m, &sb) == 0)
        zmq_send(s, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
}

/* Each run is new workers, as real worker processes are: ids and nonces of their own. A run
   that reused the last run's session would find its leases still held by "itself". */
static void hello(void *s, int i, uint32_t credit)
{
    nq_msg_t m = { .type = NQ_MSG_HELLO };
    snprintf(m.u.hello.worker_id, sizeof m.u.hello.worker_id, "loadgen-%d-%d", (int)getpid(), i);
    snprintf(m.u.hello.host, sizeof m.u.hello.host, "loadgen");
    snprintf(m.u.hello.build, sizeof m.u.hello.build, "loadgen");
    m.u.hello.threads = credit;
    m.u.hello.nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)now() ^ ((uint64_t)i + 1);
    send_msg(s, &m);
    nq_msg_t c = { .type = NQ_MSG_CREDIT };
    c.u.credit.credit = credit;
    send_msg(s, &c);
}

/* Answers what arrived on one socket; returns ACKs seen. */
static uint64_t serve(void *s)
{
    uint64_t acks = 0;
    for (;;) {
        zmq_msg_t f;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, s, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f);
            return acks;
        }
        nq_msg_t m;
        char err[200];
        if (proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &m, err, sizeof err) == 0) {
            if (m.type == NQ_MSG_TASK) {
                nq_msg_t r = { .type = NQ_MSG_RESULT };
                r.u.result.job = m.u.task.job;
                r.u.result.shard = m.u.task.shard;
                r.u.result.lease = m.u.task.lease;
                r.u.result.proof = m.u.task.proof;
                r.u.result.kind = m.u.task.kind;
                r.u.result.status = m.u.task.kind == NQ_KIND_SOLVE ? NQ_RES_NOTFOUND : NQ_RES_OK;
                r.u.result.nodes = 1;
                r.u.result.elapsed_us = 1;
                send_msg(s, &r);
            } else if (m.type == NQ_MSG_ACK) {
                acks++;
            } else if (m.type == NQ_MSG_HEARTBEAT) {
                nq_msg_t h = { .type = NQ_MSG_HEARTBEAT };
                h.u.heartbeat.sync = m.u.heartbeat.sync;   /* it holds nothing: every TASK is answered at once */
                send_msg(s, &h);
            }
            proto_msg_free(&m);
        }
        zmq_msg_close(&f);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: nq_loadgen ENDPOINT WORKERS CREDIT EXPECTED [SECONDS]\n");
        return 2;
    }
    int k = atoi(argv[2]);
    uint32_t credit = (uint32_t)atoi(argv[3]);
    uint64_t expected = strtoull(argv[4], NULL, 10), acks = 0;
    double seconds = argc == 6 ? atof(argv[5]) : 600;
    if (k < 1 || k > 20000 || seconds <= 0)
        return 2;
    void *ctx = zmq_ctx_new();
    zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, k + 16);
    void **socks = calloc((size_t)k, sizeof *socks);
    zmq_pollitem_t *items = calloc((size_t)k, sizeof *items);
    for (int i = 0; i < k; i++) {
        char id[32];
        snprintf(id, sizeof id, "loadgen-%d-%d", (int)getpid(), i);
        socks[i] = zmq_socket(ctx, ZMQ_DEALER);
        int linger = 0;                 /* at exit, queued frames to a gone broker are dropped */
        zmq_setsockopt(socks[i], ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(socks[i], ZMQ_ROUTING_ID, id, strlen(id));
        zmq_connect(socks[i], argv[1]);
        hello(socks[i], i, credit);
        items[i] = (zmq_pollitem_t){ socks[i], 0, ZMQ_POLLIN, 0 };
    }
    double t0 = 0, last_hb = now(), deadline = now() + seconds;
    while ((expected == 0 || acks < expected) && now() < deadline) {
        zmq_poll(items, k, 100);
        for (int i = 0; i < k; i++) {
            uint64_t a = serve(socks[i]);
            if (a && t0 == 0)
                t0 = now();
            acks += a;
        }
        if (now() - last_hb > 0.5) {    /* stay alive in the broker's eyes */
            nq_msg_t h = { .type = NQ_MSG_HEARTBEAT };
            for (int i = 0; i < k; i++)
                send_msg(socks[i], &h);
            last_hb = now();
        }
    }
    double dt = t0 > 0 ? now() - t0 : 0;
    printf("acks %llu seconds %.3f results_per_s %.0f\n", (unsigned long long)acks, dt, (double)acks / dt);
    for (int i = 0; i < k; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    free(socks);
    free(items);
    return argc == 6 || acks >= expected ? 0 : 1;
}
