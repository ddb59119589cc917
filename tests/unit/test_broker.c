/*
 * The broker against a scripted worker on loopback: duplicate results count
 * once, a later different result for a decided shard is kept as evidence and
 * changes nothing, and malformed frames on both endpoints
 * (garbage, truncated msgpack, huge declared lengths, wrong types, trailing
 * bytes, extra frames) are dropped and counted while the job still finishes
 * exactly.
 */
#include "t.h"

#include "broker.h"
#include "broker_impl.h"
#include "count.h"

#include <pthread.h>
#include <unistd.h>
#include <zmq.h>

typedef struct { nq_broker_t *b; atomic_int stop; } bthread_t;

static void *broker_thread(void *arg)
{
    bthread_t *t = arg;
    broker_run(t->b, &t->stop);
    return NULL;
}

static char db_path[512];
static bthread_t bt;
static pthread_t bth;
static char wep[256], cep[256];
static void *ctx;

static uint64_t make_job(int n)
{
    char err[256];
    nq_store_t *st = store_open(db_path, 0, err, sizeof err);
    T_CHECK(st != NULL);
    nq_job_spec_t spec = { .kind = NQ_KIND_COUNT, .n = (uint64_t)n, .max_attempts = 5, .quorum = 1 };
    uint64_t id = 0;
    T_CHECK(submit_create(st, &spec, &id, err, sizeof err) == 0);
    store_destroy(&st);
    return id;
}

static void start_broker(void)
{
    snprintf(db_path, sizeof db_path, "%s/broker-test-%d.db", t_tmpdir(), (int)getpid());
    unlink(db_path);
    make_job(8);
    make_job(6);
    nq_broker_cfg_t cfg;
    broker_cfg_defaults(&cfg);
    cfg.bind = "tcp://127.0.0.1:*";
    cfg.control = "tcp://127.0.0.1:*";
    cfg.db_path = db_path;
    char err[256];
    bt.b = broker_new(&cfg, err, sizeof err);
    T_CHECK(bt.b != NULL);
    broker_endpoint(bt.b, 0, wep, sizeof wep);
    broker_endpoint(bt.b, 1, cep, sizeof cep);
    pthread_create(&bth, NULL, broker_thread, &bt);
    ctx = zmq_ctx_new();
}

static void stop_broker(void)
{
    atomic_store(&bt.stop, 1);
    pthread_join(bth, NULL);
    broker_destroy(&bt.b);
    zmq_ctx_term(ctx);
}

static void *dealer(const char *ep, const char *id)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (id)
        zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    zmq_connect(s, ep);
    return s;
}

static void send_msg(void *s, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(m, &sb) == 0);
    zmq_send(s, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
}

/* Next message of the wanted type within 5 s (others are skipped); 0 or -1. */
static int recv_type(void *s, int type, nq_msg_t *out, zmq_msg_t *frame)
{
    for (int i = 0; i < 500; i++) {
        zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 10) <= 0)
            continue;
        zmq_msg_init(frame);
        zmq_msg_recv(frame, s, 0);
        char err[200];
        if (proto_decode(zmq_msg_data(frame), zmq_msg_size(frame), out, err, sizeof err) == 0) {
            if ((int)out->type == type)
                return 0;
            proto_msg_free(out);
        }
        zmq_msg_close(frame);
    }
    return -1;
}

static void hello(void *w, const char *id)
{
    nq_msg_t m = { .type = NQ_MSG_HELLO };
    snprintf(m.u.hello.worker_id, sizeof m.u.hello.worker_id, "%s", id);
    snprintf(m.u.hello.host, sizeof m.u.hello.host, "test");
    snprintf(m.u.hello.build, sizeof m.u.hello.build, "test");
    m.u.hello.threads = 1;
    m.u.hello.nonce = 42;
    send_msg(w, &m);
    nq_msg_t c = { .type = NQ_MSG_CREDIT };
    c.u.credit.credit = 1;
    send_msg(w, &c);
}

static void send_raw_frames(void *s)
{
    static const uint8_t garbage[] = { 0xc1, 0xff, 0x00, 0x13, 0x37 };
    static const uint8_t truncated[] = { 0x93, 0x01, 0x03 };                 /* array of 3, two given */
    static const uint8_t huge_str[] = { 0x93, 0x01, 0x01, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'x' };
    static const uint8_t huge_arr[] = { 0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01 };
    static const uint8_t wrong_type[] = { 0x93, 0x01, 0x03, 0xa3, 'a', 'b', 'c' }; /* CREDIT "abc" */
    static const uint8_t trailing[] = { 0x93, 0x01, 0x03, 0x01, 0x00 };       /* CREDIT 1 + junk */
    const struct { const uint8_t *p; size_t n; } frames[] = {
        { garbage, sizeof garbage }, { truncated, sizeof truncated }, { huge_str, sizeof huge_str },
        { huge_arr, sizeof huge_arr }, { wrong_type, sizeof wrong_type }, { trailing, sizeof trailing },
        { garbage, 0 },
    };
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++)
        zmq_send(s, frames[i].p, frames[i].n, 0);
    zmq_send(s, garbage, 2, ZMQ_SNDMORE);                                     /* two frames */
    zmq_send(s, garbage, 2, 0);
}

static nq_result_t result_for(const nq_task_t *t)
{
    nq_result_t r = { .job = t->job, .shard = t->shard, .lease = t->lease, .kind = NQ_KIND_COUNT,
                      .proof = t->proof };
    nq_count_result_t c;
    char err[200];
    T_CHECK(count_shard(t->spec, t->spec_len, &c, NULL, err, sizeof err) == 0);
    r.total = c.total;
    r.unique = c.unique;
    r.nodes = c.nodes;
    r.res13 = c.res13;
    r.res15 = c.res15;
    return r;
}

/* Works every shard offered; returns how many. First result of job 1 sent twice; first of job 2
   followed by a different one (nodes + 1: residues and bounds still pass). */
static nq_result_t dup_result;

static int work_all(void *w, uint64_t *dup_shard, uint64_t *conflict_shard)
{
    int done = 0, dup_sent = 0, conflict_sent = 0;
    nq_msg_t m;
    zmq_msg_t f;
    while (recv_type(w, NQ_MSG_TASK, &m, &f) == 0) {
        nq_msg_t r = { .type = NQ_MSG_RESULT };
        r.u.result = result_for(&m.u.task);
        send_msg(w, &r);
        if (m.u.task.job == 1 && !dup_sent) {
            send_msg(w, &r);            /* a resend: must not count twice, nor as a confirmation */
            dup_result = r.u.result;
            *dup_shard = m.u.task.shard;
            dup_sent = 1;
        }
        if (m.u.task.job == 2 && !conflict_sent) {
            r.u.result.nodes += 1;      /* wrong, but within what a count of the shard can give */
            send_msg(w, &r);
            *conflict_shard = m.u.task.shard;
            conflict_sent = 1;
            send_raw_frames(w);         /* from a known worker too */
        }
        proto_msg_free(&m);
        zmq_msg_close(&f);
        done++;
    }
    return done;
}

T_TEST(test_duplicates_conflicts_and_bad_frames)
{
    start_broker();
    void *bad = dealer(wep, NULL), *badctl = dealer(cep, NULL);
    send_raw_frames(bad);
    send_raw_frames(badctl);
    void *w = dealer(wep, "fake-1");
    hello(w, "fake-1");
    uint64_t dup = UINT64_MAX, conflict = UINT64_MAX;
    int n = work_all(w, &dup, &conflict);
    T_CHECK(n > 0);
    T_CHECK(dup != UINT64_MAX && conflict != UINT64_MAX);

    /* The same result from a worker the lease was not issued to is not a second opinion: only
       the holder's result counts (its proof binds the lease to the holder's identity). */
    void *w2 = dealer(wep, "fake-2");
    hello(w2, "fake-2");
    nq_msg_t again = { .type = NQ_MSG_RESULT }, ack;
    again.u.result = dup_result;
    send_msg(w2, &again);
    zmq_msg_t fa;
    T_CHECK(recv_type(w2, NQ_MSG_ACK, &ack, &fa) != 0);
    zmq_close(w2);

    /* The broker still answers a client, and counted every bad frame. */
    void *c = dealer(cep, NULL);
    nq_msg_t q = { .type = NQ_MSG_CTL_REQ }, rep;
    snprintf(q.u.ctl_req.op, sizeof q.u.ctl_req.op, "list");
    send_msg(c, &q);
    zmq_msg_t f;
    T_CHECK(recv_type(c, NQ_MSG_CTL_REP, &rep, &f) == 0);
    T_EQ_U64(rep.u.ctl_rep.code, 0);
    proto_msg_free(&rep);
    zmq_msg_close(&f);
    zmq_close(c);
    zmq_close(bad);
    zmq_close(badctl);
    zmq_close(w);
    uint64_t bad_count = bt.b->stats.messages_bad;
    stop_broker();
    fprintf(stderr, "  shards worked %d, bad frames counted %llu\n", n, (unsigned long long)bad_count);
    T_CHECK(bad_count >= 24);

    char err[256];
    nq_store_t *st = store_open(db_path, 1, err, sizeof err);
    T_CHECK(st != NULL);
    nq_job_row_t j1, j2;
    nq_job_totals_t t1;
    T_CHECK(store_job_get(st, 1, &j1) == 0 && store_job_get(st, 2, &j2) == 0);
    T_CHECK(store_job_totals(st, 1, &t1) == 0);
    T_EQ_U64(j1.state, NQ_JOB_DONE);
    T_EQ_U64((uint64_t)t1.total, 92);
    T_EQ_U64((uint64_t)t1.unique, 12);
    nq_shard_row_t s;
    sqlite3_stmt *stmt;
    T_CHECK(sqlite3_prepare_v2(store_db(st), "SELECT confirmations FROM shards WHERE job=1 AND idx=?", -1,
                               &stmt, NULL) == SQLITE_OK);
    sqlite3_bind_int64(stmt, 1, (int64_t)dup);
    T_CHECK(sqlite3_step(stmt) == SQLITE_ROW);
    T_EQ_U64(sqlite3_column_int64(stmt, 0), 0);       /* resend not counted; another worker's copy refused */
    sqlite3_finalize(stmt);
    T_CHECK(store_shard_get(st, 2, conflict, &s) == 0);
    T_EQ_U64(s.state, NQ_SHARD_DONE);                 /* the first result decided it: it stands */
    T_EQ_U64(j2.evidence, 1);                         /* the second is evidence against its sender */
    T_CHECK(sqlite3_prepare_v2(store_db(st), "SELECT s.nodes = e.nodes - 1 FROM shards s JOIN evidence e"
                               " ON e.job = s.job AND e.idx = s.idx WHERE s.job = 2 AND s.idx = ?", -1,
                               &stmt, NULL) == SQLITE_OK);
    sqlite3_bind_int64(stmt, 1, (int64_t)conflict);
    T_CHECK(sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int(stmt, 0) == 1);
    sqlite3_finalize(stmt);
    store_destroy(&st);
    if (!t_current_failed)
        unlink(db_path);
}

T_RUN_ALL()
