/* The worker's socket loop: hello, credit, tasks, results, acks, heartbeats, reconnects. */
#include "clock.h"
#include "errf.h"
#include "count.h"
#include "link.h"
#include "log.h"
#include "rng.h"
#include "resolve.h"
#include "security.h"
#include "wake.h"
#include "worker_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* A solution goes up in parts of SOLPART_ROWS, and only a window of them unacknowledged: the
   link's bytes a second times its round trip and UPLOAD_QUEUE_S, at least UPLOAD_WINDOW_MIN rows.
   All of a 10^7-queen solution sent at once (40 MB) sat for 320 s in front of the heartbeats on a
   1 Mbit/s link, and the broker took the worker for dead; a window keeps what a heartbeat waits
   behind to about UPLOAD_QUEUE_S. */
#define SOLPART_ROWS (16u << 10)          /* 64 KiB of columns: half a second at 1 Mbit/s */
#define UPLOAD_WINDOW_MIN (4 * SOLPART_ROWS)
#define UPLOAD_QUEUE_S 0.5
#define SILENT_ROUNDS_HINT 2              /* silent connections before saying what may be missing */

struct nq_worker {
    nq_worker_cfg_t cfg;
    int prefetch_auto;                 /* no --prefetch: the default, grown to cover the round trip */
    void *ctx, *sock, *pull, *mon;
    int own_ctx;
    nq_pool_t *pool;
    char id[200], host[128];
    char rid[33];                      /* routing id: random, so nobody can guess and take our session */
    uint64_t nonce, broker_nonce;
    uint32_t hb_ms, liveness, credit;
    double last_recv, last_sent, backoff, next_connect;
    int heard;                         /* the broker has said something on this connection */
    nq_link_t link;                    /* the round trip, from RESULT to ACK (link.h): kept across
                                          reconnects, since the link is the same */
    uint32_t silent_rounds;            /* connections in a row the broker never answered */
    double hello_at;                   /* when we last introduced ourselves */
    uint64_t sync, sync_echoed;        /* the broker's last sync token, and the last we echoed */
    nq_wtask_t *outbox;
    nq_rng_t rng;
    double rate_at;                    /* when the shard rate was last measured */
    uint64_t rate_shards;              /* results since then */
    double rate;                       /* shards a second, smoothed (0: not yet) */
    double shard_s;                    /* a shard's seconds on its thread, smoothed (0: not yet) */
    double upload_rate;                /* rows a second the broker acknowledged in the last upload */
    int draining;                      /* its GPUs failed: finishing what the CPU counts, taking nothing */
    char fail[256];                    /* why */
    uint32_t gpus_failed;              /* devices seen failed and logged */
    uint8_t gpu_said[NQ_GPU_MAX_DEVICES];   /* device i's failure logged */
    nq_dev_rates_t dev_rates;          /* each device's shards a second, for heartbeats */
    char refused[NQ_STR_MAX + 128];    /* the broker told us this is not its workers' endpoint */
};

/* What this worker counts with: its GPUs' names (the first, and how many more), or the CPU kernel's. */
static void worker_kernel(const nq_worker_t *w, char *out, size_t len)
{
    if (!w->cfg.ngpu)
        snprintf(out, len, "%s", count_kernel_name());
    else if (w->cfg.ngpu == 1)
        snprintf(out, len, "gpu: %s", gpu_name(w->cfg.gpus[0]));
    else
        snprintf(out, len, "gpu: %s +%u more", gpu_name(w->cfg.gpus[0]), (unsigned)w->cfg.ngpu - 1);
}

static double now_s(void) { return nq_mono(); }

void worker_cfg_defaults(nq_worker_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->connect = "tcp://127.0.0.1:7555";
    cfg->prefetch = NQ_PREFETCH_AUTO;
}

static int send_msg(nq_worker_t *w, const nq_msg_t *m)
{
    if (!w->sock)
        return -1;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int rc = proto_encode(m, &sb) == 0 && zmq_send(w->sock, sb.data, sb.size, ZMQ_DONTWAIT) >= 0 ? 0 : -1;
    msgpack_sbuffer_destroy(&sb);
    if (rc == 0)
        w->last_sent = now_s();
    return rc;
}

static void send_hello(nq_worker_t *w)
{
    nq_msg_t m = { .type = NQ_MSG_HELLO };
    snprintf(m.u.hello.worker_id, sizeof m.u.hello.worker_id, "%s", w->id);
    snprintf(m.u.hello.host, sizeof m.u.hello.host, "%s", w->host);
    /* what it counts with (its GPUs, or the CPU kernel: avx512, scalar): `nq workers` and the web
       view show it beside its rate */
    char kern[NQ_STR_MAX - 32];   /* room for "nq-VERSION " */
    worker_kernel(w, kern, sizeof kern);
    snprintf(m.u.hello.build, sizeof m.u.hello.build, "nq-%s %s", NQ_VERSION, kern);
    m.u.hello.nonce = w->nonce;
    m.u.hello.threads = w->cfg.threads;
    send_msg(w, &m);
    nq_msg_t c = { .type = NQ_MSG_CREDIT };
    c.u.credit.credit = w->credit;
    send_msg(w, &c);
    w->hello_at = now_s();
}

/* Everything we hold, with the broker's last token: a lease it sent before that token and does
   not find here never reached us, and it takes it back (leases_heartbeat). So the list must be
   whole: queued, running, finished, and sent but not acknowledged. */
static void send_heartbeat(nq_worker_t *w)
{
    static nq_hb_item_t items[NQ_MAX_HEARTBEAT_ITEMS];
    nq_msg_t m = { .type = NQ_MSG_HEARTBEAT };
    uint32_t n = w->pool ? pool_progress(w->pool, items, NQ_MAX_HEARTBEAT_ITEMS) : 0;
    m.u.heartbeat.items = items;
    m.u.heartbeat.count = task_items(w->outbox, items, n, NQ_MAX_HEARTBEAT_ITEMS);
    m.u.heartbeat.sync = w->sync;
    if (w->pool)
        devices_heartbeat(&w->dev_rates, w->pool, w->cfg.gpus, w->cfg.ngpu, &m.u.heartbeat);
    if (send_msg(w, &m) == 0)
        w->sync_echoed = w->sync;
}

static void send_part(nq_worker_t *w, nq_wtask_t *t)
{
    static uint8_t chunk[SOLPART_ROWS * 4];
    uint64_t off = t->sol_sent, rows = t->r.sol_n - off < SOLPART_ROWS ? t->r.sol_n - off : SOLPART_ROWS;
    for (uint64_t i = 0; i < rows; i++) {
        uint32_t c = t->cols[off + i];
        chunk[4 * i] = (uint8_t)c;
        chunk[4 * i + 1] = (uint8_t)(c >> 8);
        chunk[4 * i + 2] = (uint8_t)(c >> 16);
        chunk[4 * i + 3] = (uint8_t)(c >> 24);
    }
    nq_msg_t p = { .type = NQ_MSG_SOLPART };
    p.u.solpart = (nq_solpart_t){ t->r.job, t->r.shard, t->r.lease, off, chunk, rows * 4, t->r.proof };
    if (send_msg(w, &p) == 0)
        t->sol_sent += rows;
}

/* The parts the window allows, then (after the last) the RESULT that refers to them. */
static void upload_pump(nq_worker_t *w, nq_wtask_t *t)
{
    double window = w->upload_rate * (w->link.srtt + UPLOAD_QUEUE_S);
    uint64_t ahead = window > UPLOAD_WINDOW_MIN ? (uint64_t)window : UPLOAD_WINDOW_MIN;
    uint64_t sent = t->sol_sent;
    while (t->cols && t->sol_sent < t->r.sol_n && t->sol_sent - t->sol_acked < ahead && w->sock) {
        send_part(w, t);
        if (t->sol_sent == sent)
            break;                      /* not sent (no connection): a resend starts it again */
        sent = t->sol_sent;
    }
    if (t->result_sent || (t->cols && t->sol_sent < t->r.sol_n))
        return;
    nq_msg_t m = { .type = NQ_MSG_RESULT };
    m.u.result = t->r;
    if (send_msg(w, &m) == 0)
        t->result_sent = 1;
    t->sends++;
}

/* A result, or a solution's parts and then its RESULT: from the start, or from where the broker
   says it is (the first acknowledgement moves it on). */
static void send_result(nq_worker_t *w, nq_wtask_t *t)
{
    t->sol_sent = t->sol_acked = 0;
    t->result_sent = 0;
    t->sent_at = t->upload_at = now_s();
    upload_pump(w, t);
}

/* The broker holds `rows` of lease's solution (a HEARTBEAT item from it): the window moves on. */
static void upload_acked(nq_worker_t *w, uint64_t lease, uint64_t rows)
{
    for (nq_wtask_t *t = w->outbox; t; t = t->next) {
        if (t->r.lease != lease || !t->cols || rows <= t->sol_acked || rows > t->r.sol_n)
            continue;
        double now = now_s();
        t->sol_acked = rows;
        if (t->sol_sent < rows)
            t->sol_sent = rows;         /* a resend: it had these already */
        t->sent_at = now;               /* moving: no resend */
        if (now > t->upload_at)
            w->upload_rate = (double)rows / (now - t->upload_at);
        upload_pump(w, t);
        return;
    }
}

static void outbox_resend(nq_worker_t *w, double older_than)
{
    for (nq_wtask_t *t = w->outbox; t; t = t->next)
        if (t->sent_at <= older_than)
            send_result(w, t);
}

static void outbox_ack(nq_worker_t *w, const nq_ack_t *a)
{
    for (nq_wtask_t **pp = &w->outbox; *pp; pp = &(*pp)->next) {
        nq_wtask_t *t = *pp;
        if (t->r.job == a->job && t->r.shard == a->shard && t->r.lease == a->lease) {
            /* a result sent once and small: its ACK came a round trip (and a group commit, ~2 ms)
               after it; a solution's parts took their upload time too */
            if (t->sends == 1 && !t->cols)
                link_sample(&w->link, now_s() - t->sent_at);
            *pp = t->next;
            task_free(t);
            return;
        }
    }
}

static void on_task(nq_worker_t *w, const nq_task_t *task)
{
    nq_wtask_t *t = w->draining ? NULL : calloc(1, sizeof *t);
    if (!t)
        return;                         /* the broker takes it back: the next heartbeat lacks it */
    t->t = *task;
    memcpy(t->spec, task->spec, task->spec_len);
    t->t.spec = t->spec;
    pool_submit(w->pool, t);
}

static void on_message(nq_worker_t *w, const nq_msg_t *m)
{
    switch (m->type) {
    case NQ_MSG_WELCOME:
        w->hb_ms = m->u.welcome.heartbeat_ms;
        w->liveness = m->u.welcome.liveness;
        if (m->u.welcome.broker_nonce != w->broker_nonce) {
            /* A broker we have not introduced ourselves to (first contact or a restart). */
            w->broker_nonce = m->u.welcome.broker_nonce;
            w->sync = w->sync_echoed = 0;   /* its tokens, not an earlier session's */
            send_hello(w);
            outbox_resend(w, now_s());
            send_heartbeat(w);
            char qk[NQ_LOG_QLEN], qb[NQ_LOG_QLEN], kern[300];
            worker_kernel(w, kern, sizeof kern);
            nq_log(NQ_LOG_INFO, "worker.connected", "broker=%s outbox=%s kernel=%s",
                   nq_log_v(qb, sizeof qb, w->cfg.connect),
                   w->outbox ? "resent" : "empty", nq_log_qs(qk, sizeof qk, kern));
        } else if (now_s() - w->hello_at > w->hb_ms / 1000.0 + link_allowance(&w->link)) {
            /* Not the answer to a HELLO: the broker forgot us (we were silent past its liveness
               window, busy or cut off) and asks who we are. At most once a heartbeat and a round
               trip, so the two sides cannot start a HELLO/WELCOME loop (on a far link the answer
               to our last HELLO comes a round trip later). */
            send_hello(w);
            char qb[NQ_LOG_QLEN];
            nq_log(NQ_LOG_INFO, "worker.reintroduced", "broker=%s", nq_log_v(qb, sizeof qb, w->cfg.connect));
        }
        break;
    case NQ_MSG_CTL_REP:                /* a broker's answer to a client: we reached its control endpoint */
        snprintf(w->refused, sizeof w->refused, "%s: %s", w->cfg.connect,
                 m->u.ctl_rep.error[0] ? m->u.ctl_rep.error : "not a workers' endpoint");
        break;
    case NQ_MSG_TASK: on_task(w, &m->u.task); break;
    case NQ_MSG_ACK: outbox_ack(w, &m->u.ack); break;
    case NQ_MSG_CANCEL: pool_cancel(w->pool, m->u.cancel.job, m->u.cancel.lease); break;
    case NQ_MSG_HEARTBEAT:
        if (m->u.heartbeat.sync)        /* echoed by tick(); 0: only acknowledgements */
            w->sync = m->u.heartbeat.sync;
        for (uint32_t i = 0; i < m->u.heartbeat.count; i++)
            upload_acked(w, m->u.heartbeat.items[i].lease, m->u.heartbeat.items[i].progress);
        break;
    default:
        nq_log(NQ_LOG_WARN, "message.bad", "from=broker reason=\"unexpected %s\"", proto_type_name(m->type));
    }
}

static void disconnect(nq_worker_t *w)
{
    security_monitor_destroy(&w->mon);
    if (w->sock) {
        zmq_socket_monitor(w->sock, NULL, 0);
        zmq_close(w->sock);
    }
    w->sock = NULL;
}

static int connect_broker(nq_worker_t *w, char *err, size_t errlen)
{
    if (resolve_check(w->cfg.connect, err, errlen) != 0)
        return -1;                      /* libzmq would retry it for ever without a word */
    w->sock = zmq_socket(w->ctx, ZMQ_DEALER);
    int linger = 0, ivl = 1000, ivl_max = 32000, hwm = 100000;
    int64_t maxmsg = NQ_MAX_FRAME;
    zmq_setsockopt(w->sock, ZMQ_ROUTING_ID, w->rid, strlen(w->rid));
    zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(w->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(w->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(w->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(w->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (security_client_setup(w->sock, w->cfg.key_file, w->cfg.broker_key_file, err, errlen) != 0)
        return -1;
    if (w->cfg.key_file)
        w->mon = security_monitor_new(w->ctx, w->sock, SECURITY_ROLE_WORKER);
    if (zmq_connect(w->sock, w->cfg.connect) != 0) {
        return nq_errf(err, errlen, "cannot connect to %s: %s", w->cfg.connect, zmq_strerror(errno));
    }
    w->broker_nonce = 0;
    w->last_recv = now_s();
    w->heard = 0;
    send_hello(w);
    return 0;
}

/* Where the compute threads say "a task is done" (and worker_wake says "look at *stop"). */
static void done_endpoint(const nq_worker_t *w, char *ep, size_t len)
{
    snprintf(ep, len, "inproc://nq-worker-done-%p", (const void *)w);
}

void worker_wake(nq_worker_t *w)
{
    char ep[128];
    done_endpoint(w, ep, sizeof ep);
    wake_poke(w->ctx, ep);
}

nq_worker_t *worker_new(const nq_worker_cfg_t *cfg, char *err, size_t errlen)
{
    nq_worker_t *w = calloc(1, sizeof *w);
    if (!w)
        return snprintf(err, errlen, "out of memory"), NULL;
    w->cfg = *cfg;
    if (w->cfg.threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        w->cfg.threads = n > 0 ? (uint32_t)n : 1;
    }
    w->prefetch_auto = w->cfg.prefetch == NQ_PREFETCH_AUTO;
    if (w->prefetch_auto)
        w->cfg.prefetch = feed_prefetch(w->cfg.threads);
    nq_feed_t f = { .threads = w->cfg.threads, .prefetch = w->cfg.prefetch, .gpu = w->cfg.ngpu > 0 };
    w->credit = feed_credit(&f);        /* a GPU worker raises it once its engine knows its fill */
    if (getrandom(&w->nonce, sizeof w->nonce, 0) != sizeof w->nonce)
        w->nonce = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
    rng_init(&w->rng, w->nonce, 7);
    uint64_t r[2];
    if (getrandom(r, sizeof r, 0) != sizeof r)
        r[0] = rng_next(&w->rng), r[1] = rng_next(&w->rng);
    snprintf(w->rid, sizeof w->rid, "%016llx%016llx", (unsigned long long)r[0], (unsigned long long)r[1]);
    gethostname(w->host, sizeof w->host - 1);
    for (char *c = w->host; *c; c++)    /* the default id is built from it: keep it one plain token */
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
            *c = '_';
    if (cfg->id)
        snprintf(w->id, sizeof w->id, "%s", cfg->id);
    else
        snprintf(w->id, sizeof w->id, "%s:%d:%04x", w->host, (int)getpid(), (unsigned)(w->nonce & 0xffff));
    const char *why = proto_check_worker_id(w->id);
    if (why) {
        snprintf(err, errlen, "--id '%s': %s", w->id, why);
        free(w);
        return NULL;
    }
    w->hb_ms = 1000;
    w->liveness = 4;
    w->backoff = 1;
    w->own_ctx = cfg->zmq_ctx == NULL;
    w->ctx = w->own_ctx ? zmq_ctx_new() : cfg->zmq_ctx;
    char ep[128];
    done_endpoint(w, ep, sizeof ep);
    w->pull = zmq_socket(w->ctx, ZMQ_PULL);
    if (zmq_bind(w->pull, ep) != 0 ||
        !(w->pool = pool_new(w->ctx, w->cfg.threads, ep, w->cfg.gpus, w->cfg.ngpu, w->cfg.gpu_only, err,
                             errlen)) ||
        connect_broker(w, err, errlen) != 0) {
        if (!err[0])
            snprintf(err, errlen, "cannot start the worker");
        worker_destroy(&w);
        return NULL;
    }
    return w;
}

static void collect_done(nq_worker_t *w)
{
    char buf[8];
    while (zmq_recv(w->pull, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
        ;
    for (nq_wtask_t *t = pool_take_done(w->pool), *n; t; t = n) {
        n = t->next;
        if (t->cancelled) {
            task_free(t);
            continue;
        }
        send_result(w, t);
        t->next = w->outbox;
        w->outbox = t;
        w->rate_shards++;
        double s = t->r.elapsed_us / 1e6;
        w->shard_s = w->shard_s > 0 ? 0.8 * w->shard_s + 0.2 * s : s;
    }
}

static void drain_socket(nq_worker_t *w)
{
    for (int i = 0; w->sock && i < 1000; i++) {
        zmq_msg_t f;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, w->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f);
            return;
        }
        nq_msg_t m;
        char err[200];
        w->last_recv = now_s();
        w->heard = 1;
        w->backoff = 1;
        w->silent_rounds = 0;
        if (proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &m, err, sizeof err) != 0) {
            nq_log(NQ_LOG_WARN, "message.bad", "from=broker reason=\"%s\"", err);
        } else {
            on_message(w, &m);
            proto_msg_free(&m);
        }
        zmq_msg_close(&f);
    }
}

/* The credit feed.c sizes from what the worker measured: its shards a second (over a second or
   more), its GPU's load and its feeders. A new CREDIT only for a change of a fifth or more. */
static void worker_credit(nq_worker_t *w, double now)
{
    if (w->draining)
        return;
    if (now - w->rate_at >= 1.0) {
        if (w->rate_at > 0) {
            double r = (double)w->rate_shards / (now - w->rate_at);
            w->rate = w->rate > 0 ? 0.5 * w->rate + 0.5 * r : r;
        }
        w->rate_at = now;
        w->rate_shards = 0;
    }
    devices_measure(&w->dev_rates, w->pool, w->cfg.ngpu, now);
    nq_feed_t f;
    pool_feed(w->pool, &f);
    f.prefetch = w->cfg.prefetch;
    f.prefetch_auto = w->prefetch_auto;
    f.rate = w->rate;
    f.busy_rate = w->shard_s > 0 ? w->cfg.threads / w->shard_s : 0;
    f.rtt = w->link.srtt;
    uint32_t c = feed_credit(&f);
    if (c < w->credit * 4 / 5 || c > w->credit * 5 / 4) {
        w->credit = c;
        nq_msg_t m = { .type = NQ_MSG_CREDIT };
        m.u.credit.credit = c;
        send_msg(w, &m);
    }
}

/* Heartbeats, resends, and a new connection when the broker has gone quiet. */
static void tick(nq_worker_t *w, double now)
{
    double hb = w->hb_ms / 1000.0;
    if (!w->sock) {
        if (now >= w->next_connect) {
            char err[512], q[NQ_LOG_QLEN];
            if (connect_broker(w, err, sizeof err) != 0) {
                nq_log(NQ_LOG_WARN, "worker.connect_failed", "reason=%s retry_in=%.0fs",
                       nq_log_qs(q, sizeof q, err), w->backoff);
                w->next_connect = now + w->backoff;
                w->backoff = w->backoff * 2 > 32 ? 32 : w->backoff * 2;
            }
        }
        return;
    }
    /* A new connection's first answer takes the handshake's round trips; then the broker's
       heartbeats come every hb however far it is, and a gap lasts the link's round trip longer. */
    double window = link_window(&w->link, hb, w->liveness);
    double silent = w->heard ? window : link_handshake_wait(&w->link, hb, w->liveness);
    if (now - w->last_recv > silent) {
        double jitter = (double)rng_below(&w->rng, 1000) / 1000.0 * w->backoff * 0.25;
        char qb[NQ_LOG_QLEN];
        nq_log(NQ_LOG_WARN, "worker.broker_silent", "broker=%s reconnect_in=%.1fs",
               nq_log_v(qb, sizeof qb, w->cfg.connect), w->backoff + jitter);
        /* A broker with keys never answers a worker without them (CURVE never starts), so the
           worker sees silence, not a refusal: say what may be missing, once. */
        if (++w->silent_rounds == SILENT_ROUNDS_HINT && !w->cfg.key_file && !w->broker_nonce)
            nq_log(NQ_LOG_WARN, "worker.no_answer", "broker=%s rounds=%u hint=\"is the broker running "
                   "there? if it has keys, give this worker --key F and --broker-key F (nq keygen)\"",
                   qb, w->silent_rounds);
        disconnect(w);
        w->next_connect = now + w->backoff + jitter;
        w->backoff = w->backoff * 2 > 32 ? 32 : w->backoff * 2;
        return;
    }
    worker_credit(w, now);
    if (now - w->last_sent >= hb || w->sync != w->sync_echoed)
        send_heartbeat(w);
    outbox_resend(w, now - 2 * window);   /* an unacked result: say it again */
}

/* Credit 0, and the tasks not started dropped: the broker takes their leases back (the next
   heartbeat lacks them), uncharged. */
static void take_no_more(nq_worker_t *w)
{
    nq_msg_t c = { .type = NQ_MSG_CREDIT };
    send_msg(w, &c);
    for (nq_wtask_t *t = pool_take_queued(w->pool), *n; t; t = n) {
        n = t->next;
        task_free(t);
    }
}

/* Which engine counted what (for tests and the device check): shards on the GPUs and the CPU, the
   copies, and each device's shards, nodes and state. */
static void worker_stop_line(nq_worker_t *w)
{
    nq_pool_stats_t st;
    pool_stats(w->pool, &st);
    if (!w->cfg.ngpu) {
        nq_log(NQ_LOG_INFO, "worker.stop", "unacked=%s", w->outbox ? "yes" : "no");
        return;
    }
    char devs[NQ_GPU_MAX_DEVICES * 64] = "";
    uint64_t launches = 0;
    double busy = 0;
    size_t off = 0;
    for (uint32_t i = 0; i < w->cfg.ngpu && off < sizeof devs; i++) {
        nq_gpu_stats_t gs;
        nq_pool_dev_t d;
        gpu_stats(w->cfg.gpus[i], &gs);
        pool_dev_stats(w->pool, i, &d);
        launches += gs.launches;
        busy += gs.launch_s;
        off += (size_t)snprintf(devs + off, sizeof devs - off, "%s%u:%llu/%llu%s", i ? "," : "", (unsigned)i,
                                (unsigned long long)d.shards, (unsigned long long)d.nodes,
                                d.failed ? "/failed" : "");
    }
    nq_log(NQ_LOG_INFO, "worker.stop", "unacked=%s gpu_shards=%llu cpu_shards=%llu copies=%llu "
           "copies_won=%llu recounts=%llu launches=%llu gpu_busy_s=%.3f devices=%s", w->outbox ? "yes" : "no",
           (unsigned long long)st.gpu, (unsigned long long)st.cpu, (unsigned long long)st.copies,
           (unsigned long long)st.copies_won, (unsigned long long)st.recounts, (unsigned long long)launches,
           busy, devs);
}

/* Stop taking work, hand back what has not started, send what is finished, say BYE. acks: wait
   up to 3 s for the ACKs of what was sent (not when the broker is known to be gone: nothing
   would answer, and `nq run` whose DB vanished must exit at once). */
static void shutdown_gracefully(nq_worker_t *w, int acks)
{
    take_no_more(w);
    pool_cancel_all(w->pool);
    collect_done(w);
    double until = now_s() + 3;
    while (now_s() < until && ((acks && w->outbox) || pool_busy(w->pool))) {
        zmq_pollitem_t it[2] = { { w->sock, 0, ZMQ_POLLIN, 0 }, { w->pull, 0, ZMQ_POLLIN, 0 } };
        zmq_poll(it, w->sock ? 2 : 0, 100);
        collect_done(w);
        drain_socket(w);
    }
    nq_msg_t bye = { .type = NQ_MSG_BYE };
    send_msg(w, &bye);
    worker_stop_line(w);
}

/* Its last GPU failed: the shards it held ended as errors (the broker gives them to others). Hand
   back what has not started and take nothing more; what the CPU counts is finished and sent first. */
static void gpu_lost(nq_worker_t *w, const char *why)
{
    snprintf(w->fail, sizeof w->fail, "%s", why);
    w->draining = 1;
    take_no_more(w);
}

/* Each device that failed, said once with why (the others go on: the pool counts its shards
   again); the last one to fail drains the worker. */
static void gpu_check(nq_worker_t *w)
{
    char err[256], q[NQ_LOG_QLEN], qn[NQ_LOG_QLEN];
    for (uint32_t i = 0; i < w->cfg.ngpu && !w->draining; i++) {
        if (w->gpu_said[i] || !gpu_failed(w->cfg.gpus[i], err, sizeof err))
            continue;
        w->gpu_said[i] = 1;
        w->gpus_failed++;
        nq_log(NQ_LOG_ERROR, "worker.gpu_failed", "device=%u name=%s reason=%s devices_left=%u", (unsigned)i,
               nq_log_qs(qn, sizeof qn, gpu_name(w->cfg.gpus[i])), nq_log_qs(q, sizeof q, err),
               (unsigned)(w->cfg.ngpu - w->gpus_failed));
        if (w->gpus_failed == w->cfg.ngpu)
            gpu_lost(w, err);
    }
}

int worker_run(nq_worker_t *w, const atomic_int *stop, char *err, size_t errlen)
{
    while (!atomic_load(stop)) {
        zmq_pollitem_t it[2] = { { w->pull, 0, ZMQ_POLLIN, 0 }, { w->sock, 0, ZMQ_POLLIN, 0 } };
        long timeout = w->hb_ms / 4 > 50 ? 50 : (w->hb_ms / 4 > 0 ? w->hb_ms / 4 : 1);  /* stop seen within 50 ms */
        if (zmq_poll(it, w->sock ? 2 : 1, timeout) < 0 && errno != EINTR)
            break;
        collect_done(w);
        drain_socket(w);
        if (w->refused[0])
            snprintf(err, errlen, "%s", w->refused);
        if (w->refused[0] || (w->mon && security_monitor_check(w->mon, err, errlen))) {
            char q[NQ_LOG_QLEN];
            nq_log(NQ_LOG_ERROR, "worker.refused", "reason=%s", nq_log_qs(q, sizeof q, err));
            return 3;
        }
        gpu_check(w);
        if (w->draining && pool_busy(w->pool) == 0)
            break;
        tick(w, now_s());
    }
    if (w->sock)
        shutdown_gracefully(w, atomic_load(stop) != WORKER_STOP_BROKER_GONE);
    if (w->draining) {                  /* its last GPU failed: exit 3 with why */
        snprintf(err, errlen, "%s", w->fail);
        return 3;
    }
    return 0;
}

void worker_destroy(nq_worker_t **wp)
{
    nq_worker_t *w = *wp;
    if (!w)
        return;
    pool_destroy(&w->pool);
    disconnect(w);
    if (w->pull)
        zmq_close(w->pull);
    while (w->outbox) {
        nq_wtask_t *t = w->outbox;
        w->outbox = t->next;
        task_free(t);
    }
    if (w->own_ctx && w->ctx)
        zmq_ctx_term(w->ctx);
    free(w);
    *wp = NULL;
}
