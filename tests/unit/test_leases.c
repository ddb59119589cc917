/*
 * Leases, jobs and quorum on a fake clock: the broker is driven one round at a time
 * (broker_round) from this thread, with b->clock replaced, and scripted workers on loopback.
 * Liveness expiry, stalled progress, grace after a restart, quorum's duplicate, late and
 * dissenting votes, and spot-check copies made moot across a restart are checked through the
 * store, without sleeping through real timeouts.
 */
#include "t.h"

#include "broker.h"
#include "broker_impl.h"
#include "count.h"
#include "store_spotcheck.h"

#include <unistd.h>
#include <zmq.h>

static double fake_now;
static double fake_clock(void) { return fake_now; }

static char db_path[512];
static void *ctx;
static nq_broker_t *b;

/* Broker rounds in real time, fake time standing still, until no job waits for its list from the
   lister thread (at most a minute): the fake steps that follow then start with leasable jobs
   (on a loaded machine the lister had not answered within the first steps, and workers got none). */
static void lists_settle(nq_broker_t *nb)
{
    for (int i = 0; i < 60000; i++) {
        int waiting = 0;
        for (nq_job_t *j = nb->jobs; j; j = j->next)
            waiting |= j->list_ticket != 0;
        if (!waiting)
            return;
        broker_round(nb, 1);
    }
}

static nq_broker_t *broker_start(void)
{
    nq_broker_cfg_t cfg;
    broker_cfg_defaults(&cfg);
    cfg.bind = "tcp://127.0.0.1:*";
    cfg.control = "tcp://127.0.0.1:*";
    cfg.db_path = db_path;
    cfg.heartbeat_ms = 200;
    cfg.liveness = 3;
    cfg.stall_s = 5;
    cfg.grace_s = 2;
    cfg.clock = fake_clock;
    char err[256];
    nq_broker_t *nb = broker_new(&cfg, err, sizeof err);
    T_CHECK(nb != NULL);
    if (nb)
        lists_settle(nb);
    return nb;
}

static uint64_t submit(int n, uint32_t quorum)
{
    nq_job_spec_t spec = { .kind = NQ_KIND_COUNT, .n = (uint64_t)n, .max_attempts = 5, .quorum = quorum };
    uint64_t id = 0;
    char err[256];
    T_CHECK(submit_sync(b, &spec, &id, err, sizeof err) == 0);
    lists_settle(b);
    return id;
}

static void setup(void)
{
    snprintf(db_path, sizeof db_path, "%s/leases-test-%d.db", t_tmpdir(), (int)getpid());
    unlink(db_path);
    fake_now = 1000;
    ctx = zmq_ctx_new();
    b = broker_start();
}

static void teardown(void)
{
    broker_destroy(&b);
    zmq_ctx_term(ctx);
    unlink(db_path);
}

/* A scripted worker: a DEALER that has said HELLO with its own nonce (its identity). */
typedef struct {
    void *s;
    char id[32];
    uint64_t nonce;
    nq_task_t tasks[16];
    uint64_t task_sync[16];             /* the broker's last token when each TASK was read */
    int ntasks, acks;
    uint64_t sync;                      /* the broker's last HEARTBEAT token */
    int echo;                           /* heartbeats echo it (an honest worker's inventory) */
    int welcomed;                       /* the broker's WELCOME came */
} fake_t;

static void fake_send(fake_t *w, const nq_msg_t *m)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(m, &sb) == 0);
    zmq_send(w->s, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
}

static void fake_credit(fake_t *w, uint32_t credit)
{
    nq_msg_t c = { .type = NQ_MSG_CREDIT };
    c.u.credit.credit = credit;
    fake_send(w, &c);
}

static void fake_read(fake_t *w);

static void fake_hello(fake_t *w, const char *id, uint64_t nonce, uint32_t credit)
{
    char ep[256];
    broker_endpoint(b, 0, ep, sizeof ep);
    memset(w, 0, sizeof *w);
    w->s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(w->s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(w->s, ep);
    snprintf(w->id, sizeof w->id, "%s", id);
    w->nonce = nonce;
    nq_msg_t h = { .type = NQ_MSG_HELLO };
    snprintf(h.u.hello.worker_id, sizeof h.u.hello.worker_id, "%s", id);
    h.u.hello.nonce = nonce;
    h.u.hello.threads = 1;
    fake_send(w, &h);
    fake_credit(w, credit);
    for (int i = 0; i < 60000 && !w->welcomed; i++) {   /* joined in real time, fake time still: a */
        broker_round(b, 1);                              /* loaded machine's loopback took longer */
        fake_read(w);                                    /* than the first fake steps */
    }
    T_CHECK(w->welcomed);
}

/* What an honest count of each (job, shard) gives, learnt from the TASKs' descriptors: the
   broker refuses a result that no count of its shard can give (count_bounds.h). */
#define TRUTH_JOBS 8
#define TRUTH_SHARDS 512
static nq_count_result_t truth[TRUTH_JOBS][TRUTH_SHARDS];

static void learn_truth(const nq_task_t *t)
{
    char err[200];
    if (t->kind == NQ_KIND_COUNT && t->job < TRUTH_JOBS && t->shard < TRUTH_SHARDS)
        T_CHECK(count_shard(t->spec, t->spec_len, &truth[t->job][t->shard], NULL, err, sizeof err) == 0);
}

/* Reads what the broker sent: TASKs are kept (spec copied into the frame's place is not needed). */
static void fake_read(fake_t *w)
{
    zmq_msg_t f;
    for (;;) {
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, w->s, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f);
            return;
        }
        nq_msg_t m;
        char err[200];
        if (proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &m, err, sizeof err) == 0) {
            if (m.type == NQ_MSG_TASK && w->ntasks < 16) {
                learn_truth(&m.u.task);
                w->tasks[w->ntasks] = m.u.task;
                w->tasks[w->ntasks].spec = NULL;
                w->task_sync[w->ntasks] = w->sync;
                w->ntasks++;
            } else if (m.type == NQ_MSG_ACK) {
                w->acks++;
            } else if (m.type == NQ_MSG_HEARTBEAT) {
                w->sync = m.u.heartbeat.sync;
            } else if (m.type == NQ_MSG_WELCOME) {
                w->welcomed = 1;
            }
            proto_msg_free(&m);
        }
        zmq_msg_close(&f);
    }
}

/* A heartbeat listing the first `count` tasks held, with token `sync`. */
static void fake_inventory(fake_t *w, int count, uint64_t progress, uint64_t sync)
{
    nq_hb_item_t items[16];
    for (int i = 0; i < count; i++)
        items[i] = (nq_hb_item_t){ w->tasks[i].lease, progress };
    nq_msg_t m = { .type = NQ_MSG_HEARTBEAT };
    m.u.heartbeat.count = (uint32_t)count;
    m.u.heartbeat.items = items;
    m.u.heartbeat.sync = sync;
    fake_send(w, &m);
}

static void fake_heartbeat(fake_t *w, uint64_t progress)
{
    fake_inventory(w, w->ntasks, progress, w->echo ? w->sync : 0);
}

/* A vote: the shard's true count, its nodes off by `extra` (a wrong vote the bounds let pass). */
static void fake_result(fake_t *w, const nq_task_t *t, uint64_t extra)
{
    T_CHECK(t->job < TRUTH_JOBS && t->shard < TRUTH_SHARDS);
    const nq_count_result_t *c = &truth[t->job % TRUTH_JOBS][t->shard % TRUTH_SHARDS];
    nq_msg_t m = { .type = NQ_MSG_RESULT };
    m.u.result = (nq_result_t){ .job = t->job, .shard = t->shard, .lease = t->lease, .kind = NQ_KIND_COUNT,
                                .total = c->total, .unique = c->unique, .nodes = c->nodes + extra,
                                .res13 = c->res13, .res15 = c->res15, .proof = t->proof };
    fake_send(w, &m);
}

static void fake_close(fake_t *w)
{
    zmq_close(w->s);
}

/* Broker rounds over `seconds` of fake time, in steps of dt (< the heartbeat: see peers_tick's
   stall excuse); the workers in `beat` (NULL-terminated) heartbeat, progress moving, and read
   what the broker sent them. */
static void run_with(double seconds, double dt, fake_t **beat)
{
    for (double t = 0; t < seconds; t += dt) {
        fake_now += dt;
        for (fake_t **w = beat; w && *w; w++)
            fake_heartbeat(*w, 1 + (uint64_t)(t * 1000));
        usleep(2000);                   /* loopback delivery */
        broker_round(b, 5);
        for (fake_t **w = beat; w && *w; w++)
            fake_read(*w);
    }
}

static void run_for(double seconds, double dt, fake_t *beat, fake_t *other)
{
    fake_t *list[3] = { beat, beat ? other : NULL, NULL };
    run_with(seconds, dt, list);
    if (!beat && other)
        fake_read(other);
}

static int shard_attempts(uint64_t job, uint64_t shard)
{
    nq_shard_row_t row;
    return store_shard_get(b->store, job, shard, &row) == 0 ? (int)row.attempts : -1;
}

static nq_shard_state_t shard_state(uint64_t job, uint64_t shard)
{
    nq_shard_row_t row;
    return store_shard_get(b->store, job, shard, &row) == 0 ? row.state : (nq_shard_state_t)-1;
}

/* A worker silent past heartbeat x liveness (0.6 s) and its round trip (echoed tokens: a few fake
   steps) loses its leases, each charged an attempt. */
T_TEST(test_liveness_expiry)
{
    setup();
    uint64_t job = submit(8, 1);
    fake_t w;
    fake_hello(&w, "w-silent", 11, 2);
    w.echo = 1;
    run_for(0.3, 0.05, &w, NULL);       /* joined, heartbeating, holds two leases */
    T_EQ_U64(w.ntasks, 2);
    T_CHECK(shard_state(job, w.tasks[0].shard) == NQ_SHARD_LEASED);
    run_for(3.0, 0.05, NULL, &w);       /* silent for 3 s of fake time: past the window and any round
                                           trip a loaded machine made of its echoes (fake steps go on
                                           while a message waits) */
    broker_round(b, 0);
    results_flush(b);
    T_CHECK(b->peers == NULL);
    T_EQ_U64(shard_attempts(job, w.tasks[0].shard), 1);
    T_CHECK(shard_state(job, w.tasks[0].shard) == NQ_SHARD_PENDING);
    fake_close(&w);
    teardown();
}

/* A lease whose progress stops moving for stall_s (5 s) goes back, charged; the worker stays. */
T_TEST(test_stalled_progress)
{
    setup();
    uint64_t job = submit(8, 1);
    fake_t w;
    fake_hello(&w, "w-stuck", 12, 1);
    w.echo = 1;                          /* its round trip measured: the stall timer adds only that */
    run_for(0.3, 0.05, &w, NULL);
    T_EQ_U64(w.ntasks, 1);
    uint64_t shard = w.tasks[0].shard;
    for (int i = 0; i < 160; i++) {      /* 8 s of heartbeats that report the same progress (the stall
                                            timer adds the round trip, in fake steps) */
        fake_now += 0.05;
        fake_heartbeat(&w, 42);
        usleep(1000);
        broker_round(b, 2);
        fake_read(&w);
    }
    results_flush(b);
    T_CHECK(b->peers != NULL);           /* alive: only its lease was taken back */
    T_EQ_U64(shard_attempts(job, shard), 1);
    fake_close(&w);
    teardown();
}

/*
 * A TASK lost on its way (the worker's connection was replaced with it queued) is taken back,
 * uncharged, once the worker echoes a token sent after it without listing it. A heartbeat whose
 * token predates the TASK (it crossed the TASK on the wire), one with a token never sent, and one
 * with no token take nothing back.
 */
T_TEST(test_lost_task_taken_back)
{
    setup();
    uint64_t job = submit(8, 1);
    fake_t w;
    fake_hello(&w, "w-lossy", 13, 2);
    w.echo = 1;
    run_for(0.5, 0.05, &w, NULL);       /* holds two leases, lists them, echoes every token */
    T_EQ_U64(w.ntasks, 2);
    T_CHECK(w.sync > 0);
    T_EQ_U64(b->peers->outstanding, 2);
    nq_task_t lost = w.tasks[1];
    uint64_t before = w.task_sync[1];   /* its token: sent before the TASK */
    w.ntasks = 1;                       /* the second TASK never arrived */
    fake_inventory(&w, 1, 1, before);
    fake_inventory(&w, 1, 1, UINT64_MAX);
    fake_inventory(&w, 1, 1, 0);
    usleep(2000);
    broker_round(b, 5);
    T_CHECK(leases_find(b, lost.lease) != NULL);
    T_CHECK(shard_state(job, lost.shard) == NQ_SHARD_LEASED);
    run_for(0.5, 0.05, &w, NULL);       /* a later token, echoed without it: taken back */
    results_flush(b);
    T_CHECK(leases_find(b, lost.lease) == NULL);
    T_EQ_U64(shard_attempts(job, lost.shard), 0);
    T_EQ_U64(w.ntasks, 2);              /* its credit came back: the worker got new work */
    T_CHECK(w.tasks[1].lease != lost.lease);
    T_CHECK(leases_find(b, w.tasks[0].lease) != NULL);   /* the one it holds stays its own */
    T_EQ_U64(b->peers->outstanding, 2);
    fake_close(&w);
    teardown();
}

/* After a restart, a leased shard waits grace_s (2 s) for its holder, then goes back uncharged. */
T_TEST(test_grace_after_restart)
{
    setup();
    uint64_t job = submit(8, 1);
    fake_t w;
    fake_hello(&w, "w-gone", 13, 1);
    for (int i = 0; i < 100 && w.ntasks < 1; i++)   /* a loaded machine delivers late: wait for it */
        run_for(0.05, 0.05, &w, NULL);
    T_EQ_U64(w.ntasks, 1);
    uint64_t shard = w.tasks[0].shard;
    results_flush(b);
    broker_destroy(&b);                  /* the broker goes down with the shard leased */
    fake_close(&w);
    b = broker_start();
    nq_job_t *j = jobq_find(b, job);
    T_CHECK(j != NULL && j->ngrace == 1);
    run_for(1.0, 0.05, NULL, NULL);
    T_CHECK(shard_state(job, shard) == NQ_SHARD_LEASED);   /* still waiting for its holder */
    run_for(1.5, 0.05, NULL, NULL);
    results_flush(b);
    T_CHECK(shard_state(job, shard) == NQ_SHARD_PENDING);
    T_EQ_U64(shard_attempts(job, shard), 0);
    teardown();
}

static uint64_t shard_confirmations(uint64_t job, uint64_t shard)
{
    sqlite3_stmt *q;
    uint64_t n = UINT64_MAX;
    if (sqlite3_prepare_v2(store_db(b->store), "SELECT confirmations FROM shards WHERE job = ?1 AND idx = ?2",
                           -1, &q, NULL) != SQLITE_OK)
        return n;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)shard);
    if (sqlite3_step(q) == SQLITE_ROW)
        n = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

static void vote_all(fake_t *w, int twice)
{
    for (int i = 0; i < w->ntasks; i++) {
        fake_result(w, &w->tasks[i], 0);
        if (twice)
            fake_result(w, &w->tasks[i], 0);   /* a duplicate: one identity, one vote */
    }
}

/*
 * Quorum 2 with a late, a duplicate and a silent voter. `late` holds one copy of shard X;
 * `a` holds a copy of every shard and votes twice; `c` the other copies. Every shard but X
 * is decided by a and c. `late` goes silent: its copy of X goes back and c decides X with a.
 * Then `late` comes back (same session) and delivers: a vote for a decided shard, compared
 * with the stored result (a confirmation), and the job is done.
 */
T_TEST(test_quorum_votes)
{
    setup();
    uint64_t job = submit(6, 2);
    nq_job_t *j = jobq_find(b, job);
    T_CHECK(j != NULL);
    uint64_t nshards = j ? j->shards_total : 0;
    fake_t a, c, late;
    fake_hello(&late, "voter-late", 23, 1);
    late.echo = 1;
    run_with(0.2, 0.05, (fake_t *[]){ &late, NULL });
    fake_hello(&a, "voter-a", 21, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &late, &a, NULL });
    fake_hello(&c, "voter-c", 22, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &late, &a, &c, NULL });
    T_EQ_U64(late.ntasks, 1);
    T_EQ_U64(a.ntasks, nshards);
    T_EQ_U64(c.ntasks, nshards - 1);
    uint64_t x = late.tasks[0].shard;
    vote_all(&a, 1);
    run_with(0.2, 0.05, (fake_t *[]){ &late, &a, &c, NULL });
    results_flush(b);
    T_EQ_U64(j->shards_done, 0);         /* one identity, even voting twice, is not a quorum */
    vote_all(&c, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &late, &a, &c, NULL });
    results_flush(b);
    T_EQ_U64(j->shards_done, nshards - 1);
    T_CHECK(shard_state(job, x) != NQ_SHARD_DONE);    /* late holds X and says nothing */
    c.ntasks = 0;
    run_with(3.0, 0.05, (fake_t *[]){ &a, &c, NULL });   /* late silent past 0.6 s and its round trip: X to c */
    T_EQ_U64(c.ntasks, 1);
    T_EQ_U64(c.tasks[0].shard, x);
    vote_all(&c, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &c, NULL });
    results_flush(b);
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_EQ_U64(row.shards_done, nshards);
    T_CHECK(row.state == NQ_JOB_DONE);
    fake_close(&late);                   /* it comes back, same session, and delivers late */
    nq_task_t held = late.tasks[0];
    fake_hello(&late, "voter-late", 23, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &late, NULL });
    fake_result(&late, &held, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &late, NULL });
    results_flush(b);
    T_EQ_U64(shard_confirmations(job, x), 1);
    T_CHECK(late.acks >= 1);
    fake_close(&a);
    fake_close(&c);
    fake_close(&late);
    teardown();
}

/*
 * Quorum votes are durable: `a` votes on every shard of a quorum-2 job and the broker goes down
 * before any shard is decided. The restarted broker still holds a's votes: a (same session, so
 * the same identity) is given none of the shards again, and one vote of `c` each decides them.
 * (Votes kept in memory were lost here: a got every shard again and c's votes decided nothing.)
 */
T_TEST(test_quorum_votes_survive_a_restart)
{
    setup();
    uint64_t job = submit(6, 2);
    nq_job_t *j = jobq_find(b, job);
    T_CHECK(j != NULL);
    uint64_t nshards = j ? j->shards_total : 0;
    fake_t a, c;
    fake_hello(&a, "durable-a", 41, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &a, NULL });
    T_EQ_U64(a.ntasks, nshards);
    fake_credit(&a, 0);
    vote_all(&a, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, NULL });
    results_flush(b);
    T_EQ_U64(j->shards_done, 0);
    broker_destroy(&b);
    fake_close(&a);
    b = broker_start();
    j = jobq_find(b, job);
    T_CHECK(j != NULL);
    a.ntasks = 0;
    fake_hello(&a, "durable-a", 41, 16);
    run_with(3.0, 0.05, (fake_t *[]){ &a, NULL });   /* past the grace: every shard is pending */
    T_EQ_U64(a.ntasks, 0);                           /* it voted on all of them */
    fake_hello(&c, "durable-c", 42, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &c, NULL });
    T_EQ_U64(c.ntasks, nshards);
    vote_all(&c, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &c, NULL });
    results_flush(b);
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_EQ_U64(row.shards_done, nshards);
    T_CHECK(row.state == NQ_JOB_DONE);
    fake_close(&a);
    fake_close(&c);
    teardown();
}

/* One integer a query on the test's DB gives (-1: none). */
static int64_t sql_int(const char *sql, const char *text)
{
    sqlite3_stmt *q;
    int64_t n = -1;
    if (sqlite3_prepare_v2(store_db(b->store), sql, -1, &q, NULL) != SQLITE_OK)
        return n;
    if (text)
        sqlite3_bind_text(q, 1, text, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

static int worker_flagged(const char *id)
{
    return sql_int("SELECT flagged + conflicts FROM workers WHERE id = ?1", id) > 0;
}

/* A lie a count's bounds let pass: total 0, nodes tagged as the fast GPU kernel's, answered at once
   with a tiny elapsed time. */
static void fake_lie(fake_t *w, const nq_task_t *t)
{
    nq_msg_t m = { .type = NQ_MSG_RESULT };
    m.u.result = (nq_result_t){ .job = t->job, .shard = t->shard, .lease = t->lease, .kind = NQ_KIND_COUNT,
                                .nodes = 1, .elapsed_us = 1000, .proof = t->proof,
                                .nodes_kind = NQ_NODES_GPU_FAST };
    fake_send(w, &m);
}

/* Answers every task it holds truthfully and forgets them. */
static void answer_all(fake_t *w)
{
    vote_all(w, 0);
    w->ntasks = 0;
}

/* `liar` joins, answers truly until it is given a copy of `held` (it is measured fast and idle at
   the tail), answers that copy with a lie and asks for nothing more. */
static void copy_lied(fake_t *holder, fake_t *liar, const char *id, uint64_t nonce, const nq_task_t *held)
{
    fake_hello(liar, id, nonce, 4);
    nq_task_t copy = { 0 };
    for (int round = 0; round < 200 && copy.lease == 0; round++) {
        run_with(0.2, 0.05, (fake_t *[]){ holder, liar, NULL });
        for (int i = 0; i < liar->ntasks; i++)
            if (liar->tasks[i].shard == held->shard)
                copy = liar->tasks[i];
        if (copy.lease == 0)
            answer_all(liar);
    }
    T_CHECK(copy.lease != 0);
    fake_lie(liar, &copy);
    liar->ntasks = 0;
}

/* A third identity answers truly until the job ends; it ends done with `total`, the holder
   unflagged and the liar flagged. */
static void third_settles(fake_t *holder, fake_t *liar, uint64_t nonce, uint64_t job, uint64_t total,
                          const char *holder_id, const char *liar_id)
{
    fake_t third;
    fake_credit(holder, 0);
    fake_credit(liar, 0);
    fake_hello(&third, "third", nonce, 4);
    for (int round = 0; round < 200 && jobq_find(b, job); round++) {
        run_with(0.2, 0.05, (fake_t *[]){ holder, liar, &third, NULL });
        answer_all(&third);
        results_flush(b);
    }
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_CHECK(row.state == NQ_JOB_DONE);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT total_hi * 4294967296 + total_lo FROM jobs WHERE id = %llu",
             (unsigned long long)job);
    T_EQ_U64(sql_int(sql, NULL), total);
    T_CHECK(!worker_flagged(holder_id));
    T_CHECK(worker_flagged(liar_id));
    fake_close(&third);
}

/*
 * A tail copy turned against its holder (a hostile review's second scenario): `liar` does its
 * share honestly, so it is measured fast, and is then given a copy of the lease the honest `holder`
 * is still working on; it answers the copy at once with total 0. The copy decides nothing by
 * arriving first: the holder is not cancelled, its result disagrees, a third identity settles the
 * dispute for the holder, the liar is flagged, and the job ends exact with the holder unflagged.
 * (Before: the copy's result decided the shard, the holder was cancelled, and N=10 ended wrong.)
 */
T_TEST(test_tail_copy_cannot_outvote_its_holder)
{
    setup();
    uint64_t job = submit(10, 1);
    T_CHECK(jobq_find(b, job) != NULL);
    fake_t holder, liar;
    fake_hello(&holder, "holder", 51, 1);
    run_with(0.2, 0.05, (fake_t *[]){ &holder, NULL });
    for (int i = 0; i < 50 && holder.ntasks == 1 && truth[job][holder.tasks[0].shard].total == 0; i++) {
        answer_all(&holder);            /* hold a shard with solutions, so that total 0 is a lie */
        run_with(0.2, 0.05, (fake_t *[]){ &holder, NULL });
    }
    T_EQ_U64(holder.ntasks, 1);
    nq_task_t held = holder.tasks[0];
    T_CHECK(truth[job][held.shard].total > 0);
    copy_lied(&holder, &liar, "copy-liar", 52, &held);
    run_with(0.3, 0.05, (fake_t *[]){ &holder, &liar, NULL });
    results_flush(b);
    T_CHECK(jobq_find(b, job) != NULL);  /* not decided by the copy */
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT by_copy FROM shards WHERE job = %llu AND idx = %llu",
             (unsigned long long)job, (unsigned long long)held.shard);
    T_EQ_U64(sql_int(sql, NULL), 1);
    fake_result(&holder, &held, 0);      /* the holder was not cancelled: it delivers */
    holder.ntasks = 0;
    run_with(0.3, 0.05, (fake_t *[]){ &holder, &liar, NULL });
    results_flush(b);
    T_CHECK(jobq_find(b, job) != NULL);  /* one against one: a dispute, not arrival order */
    third_settles(&holder, &liar, 53, job, 724, "holder", "copy-liar");   /* N=10 */
    fake_close(&holder);
    fake_close(&liar);
    teardown();
}

/* A true result sent at once with a tiny elapsed time: what a worker that knows the answers of small
   shards in advance can do to be measured the fastest. */
static void fake_fast(fake_t *w, const nq_task_t *t)
{
    const nq_count_result_t *c = &truth[t->job % TRUTH_JOBS][t->shard % TRUTH_SHARDS];
    nq_msg_t m = { .type = NQ_MSG_RESULT };
    m.u.result = (nq_result_t){ .job = t->job, .shard = t->shard, .lease = t->lease, .kind = NQ_KIND_COUNT,
                                .total = c->total, .unique = c->unique, .nodes = c->nodes, .res13 = c->res13,
                                .res15 = c->res15, .elapsed_us = 1000, .proof = t->proof };
    fake_send(w, &m);
}

/*
 * The hoarder of a hostile review's first scenario: it answers its first 3 (small) shards at once,
 * reporting 1 ms each, so it is measured the fastest and given the largest shards; then it moves
 * each lease's progress by one node per heartbeat and never delivers. What the broker sees of
 * that progress brings its lane down, its leases become the tail's first copies, the honest
 * workers copy and check them, and the job ends exact. (Before: its leases were projected to end
 * at once, no copy was made, and the job never ended.)
 */
T_TEST(test_hoarder_cannot_stall_the_job)
{
    setup();
    uint64_t job = submit(10, 1);
    T_CHECK(jobq_find(b, job) != NULL);
    fake_t hoarder, h1, h2;
    fake_hello(&hoarder, "hoarder", 61, 8);
    fake_hello(&h1, "honest-1", 62, 2);
    fake_hello(&h2, "honest-2", 63, 2);
    fake_t *all[] = { &hoarder, &h1, &h2 };
    int answered = 0;
    uint64_t step = 0;
    for (; step < 2400 && jobq_find(b, job); step++) {   /* 120 s of fake time at most */
        fake_now += 0.05;
        fake_heartbeat(&hoarder, 1 + step / 20);         /* one node a second */
        fake_heartbeat(&h1, 1 + step * 1000);
        fake_heartbeat(&h2, 1 + step * 1000);
        usleep(2000);
        broker_round(b, 5);
        for (int i = 0; i < 3; i++)
            fake_read(all[i]);
        while (answered < 3 && hoarder.ntasks > 0) {      /* the first three, at once, then it hoards */
            fake_fast(&hoarder, &hoarder.tasks[hoarder.ntasks - 1]);
            hoarder.ntasks--;
            answered++;
        }
        if (step % 4 == 3) {                              /* the honest ones take 0.2 s a round */
            answer_all(&h1);
            answer_all(&h2);
        }
        results_flush(b);
    }
    T_EQ_U64(answered, 3);
    T_CHECK(hoarder.ntasks > 0);                          /* it held leases to the end */
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_CHECK(row.state == NQ_JOB_DONE);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT total_hi * 4294967296 + total_lo FROM jobs WHERE id = %llu",
             (unsigned long long)job);
    T_EQ_U64(sql_int(sql, NULL), 724);                    /* N=10 */
    for (int i = 0; i < 3; i++)
        fake_close(all[i]);
    teardown();
}

/*
 * The same hoarder, first to join: it takes every shard of the job before an honest worker delivers
 * anything, so no honest worker has a measured speed. The idle honest worker copies the leases once
 * they are late past the hoarder's own claimed time, and the job ends exact. (Before: a worker with
 * no measured speed never got a copy, and the job never ended.)
 */
T_TEST(test_hoarder_first_cannot_stall_the_job)
{
    setup();
    uint64_t job = submit(6, 1);
    nq_job_t *j = jobq_find(b, job);
    T_CHECK(j != NULL && j->shards_total > 3 && j->shards_total <= 16);
    uint64_t nshards = j ? j->shards_total : 0;
    fake_t hoarder, h1;
    fake_hello(&hoarder, "hoarder", 71, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &hoarder, NULL });
    T_EQ_U64(hoarder.ntasks, nshards);                  /* every shard */
    for (int answered = 0; answered < 3; answered++) {
        fake_fast(&hoarder, &hoarder.tasks[hoarder.ntasks - 1]);
        hoarder.ntasks--;
    }
    fake_hello(&h1, "honest-1", 72, 2);
    fake_t *all[] = { &hoarder, &h1 };
    for (uint64_t step = 0; step < 2400 && jobq_find(b, job); step++) {   /* 120 s of fake time at most */
        fake_now += 0.05;
        fake_heartbeat(&hoarder, 1 + step / 20);         /* one node a second */
        fake_heartbeat(&h1, 1 + step * 1000);
        usleep(2000);
        broker_round(b, 5);
        for (int i = 0; i < 2; i++)
            fake_read(all[i]);
        if (step % 4 == 3)
            answer_all(&h1);
        results_flush(b);
    }
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_CHECK(row.state == NQ_JOB_DONE);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT total_hi * 4294967296 + total_lo FROM jobs WHERE id = %llu",
             (unsigned long long)job);
    T_EQ_U64(sql_int(sql, NULL), 4);                      /* N=6 */
    for (int i = 0; i < 2; i++)
        fake_close(all[i]);
    teardown();
}

/*
 * A slow honest holder outrun by a lying copy, in a job without spot-checks: its results showed
 * it takes seconds a shard, so it keeps its lease past the stall window after the copy's answer
 * (a lie), delivers, and the dispute goes to a third identity: the job ends exact. (Before: its
 * lease went stall_s after the copy's answer, the lie stood alone, and N=10 could end wrong.)
 */
T_TEST(test_slow_holder_outlasts_its_copy)
{
    setup();
    uint64_t job = submit(10, 1);
    T_CHECK(jobq_find(b, job) != NULL);
    fake_t holder, liar;
    fake_hello(&holder, "slow-holder", 81, 1);
    run_with(4.0, 0.05, (fake_t *[]){ &holder, NULL });
    answer_all(&holder);                /* one shard in 4 s: the speed it has shown */
    run_with(0.2, 0.05, (fake_t *[]){ &holder, NULL });
    for (int i = 0; i < 50 && holder.ntasks == 1 && truth[job][holder.tasks[0].shard].total == 0; i++) {
        run_with(4.0, 0.05, (fake_t *[]){ &holder, NULL });
        answer_all(&holder);            /* hold a shard with solutions, so that total 0 is a lie */
        run_with(0.2, 0.05, (fake_t *[]){ &holder, NULL });
    }
    T_EQ_U64(holder.ntasks, 1);
    nq_task_t held = holder.tasks[0];
    T_CHECK(truth[job][held.shard].total > 0);
    copy_lied(&holder, &liar, "copy-liar", 82, &held);
    fake_credit(&liar, 0);
    run_with(8.0, 0.05, (fake_t *[]){ &holder, &liar, NULL });   /* past the stall window (5 s) */
    results_flush(b);
    T_CHECK(leases_find(b, held.lease) != NULL);   /* still its own: not dropped for the copy */
    fake_result(&holder, &held, 0);
    holder.ntasks = 0;
    third_settles(&holder, &liar, 83, job, 724, "slow-holder", "copy-liar");   /* N=10 */
    fake_close(&holder);
    fake_close(&liar);
    teardown();
}

/* How a scripted voter answers: true counts, with CPU nodes off by `extra`, or the fast GPU kernel's. */
typedef enum { VOTE_TRUE, VOTE_NODES1, VOTE_GPU } vote_how_t;

static void fake_answer(fake_t *w, vote_how_t how)
{
    for (int i = 0; i < w->ntasks; i++) {
        const nq_task_t *t = &w->tasks[i];
        const nq_count_result_t *c = &truth[t->job % TRUTH_JOBS][t->shard % TRUTH_SHARDS];
        nq_msg_t m = { .type = NQ_MSG_RESULT };
        int gpu = how == VOTE_GPU && strcmp(t->algo, NQ_TASK_CPU) != 0;   /* it honours a CPU request */
        m.u.result = (nq_result_t){ .job = t->job, .shard = t->shard, .lease = t->lease,
                                    .kind = NQ_KIND_COUNT, .total = c->total, .unique = c->unique,
                                    .nodes = gpu ? 7 : c->nodes + (how == VOTE_NODES1),
                                    .res13 = c->res13, .res15 = c->res15, .proof = t->proof,
                                    .nodes_kind = gpu ? NQ_NODES_GPU_FAST : NQ_NODES_CPU };
        fake_send(w, &m);
    }
    w->ntasks = 0;
}

/* Rounds of 0.05 s for `steps`: every voter heartbeats, and answers what it holds every 4th. */
static void vote_rounds(int steps, fake_t **w, const vote_how_t *how, int n, uint64_t job)
{
    for (int step = 0; step < steps && jobq_find(b, job); step++) {
        fake_now += 0.05;
        for (int i = 0; i < n; i++)
            fake_heartbeat(w[i], 1 + (uint64_t)step * 1000);
        usleep(2000);
        broker_round(b, 5);
        for (int i = 0; i < n; i++) {
            fake_read(w[i]);
            if (step % 4 == 3)
                fake_answer(w[i], how[i]);
        }
        results_flush(b);
    }
}

/*
 * An honest checker outvoted (a hostile review's third scenario), with every result checked and
 * three keys: a liar with the true totals but CPU nodes + 1, an honest CPU worker, and an honest
 * fast-GPU worker, whose nodes compare with nobody's. The GPU vote agrees with both on the answer
 * and must never pair with the liar against the honest CPU count: a nodes dispute's tie-break asks
 * for the CPU kernels' count (TASK.algo "cpu"), which the GPU worker gives on a CPU thread. The
 * liar is flagged, the honest ones never are, and the job ends exact (a GPU vote that ignores the
 * request settles nothing: tests/unit/test_verdict.c). (Before: the majority paired the liar with
 * the GPU vote, and the honest CPU checker was flagged.)
 */
T_TEST(test_gpu_vote_never_outvotes_an_honest_cpu_checker)
{
    setup();
    nq_job_spec_t spec = { .kind = NQ_KIND_COUNT, .n = 8, .max_attempts = 5, .quorum = 1,
                           .verify_ppm = 1000000 };
    uint64_t job = 0;
    char err[256];
    T_CHECK(submit_sync(b, &spec, &job, err, sizeof err) == 0);
    fake_t liar, cpu, gpu;
    fake_hello(&liar, "nodes-liar", 71, 2);
    fake_hello(&cpu, "honest-cpu", 72, 2);
    fake_hello(&gpu, "honest-gpu", 73, 2);
    fake_t *three[] = { &liar, &cpu, &gpu };
    vote_how_t how3[] = { VOTE_NODES1, VOTE_TRUE, VOTE_GPU };
    vote_rounds(2000, three, how3, 3, job);
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_CHECK(row.state == NQ_JOB_DONE);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT total_hi * 4294967296 + total_lo FROM jobs WHERE id = %llu",
             (unsigned long long)job);
    T_EQ_U64(sql_int(sql, NULL), 92);    /* N=8 */
    T_CHECK(worker_flagged("nodes-liar"));
    T_CHECK(!worker_flagged("honest-cpu"));
    T_CHECK(!worker_flagged("honest-gpu"));
    for (int i = 0; i < 3; i++)
        fake_close(three[i]);
    teardown();
}

/*
 * Spot-checks across a restart, with every result checked (--verify-rate 1). `a` delivers every
 * shard; `b2` holds every check copy when the broker goes down. The restarted broker queues a
 * check copy for each open check from the store; then b2 comes back and delivers the checks it
 * held, deciding all of them. The queued copies are now moot, and neither a nor b2 may take them
 * (both voted): the job must end anyway, not wait on copies nobody can run (a CI hang, once).
 */
T_TEST(test_spotcheck_moot_copies_after_restart)
{
    setup();
    nq_job_spec_t spec = { .kind = NQ_KIND_COUNT, .n = 6, .max_attempts = 5, .quorum = 1,
                           .verify_ppm = 1000000 };
    uint64_t job = 0;
    char err[256];
    T_CHECK(submit_sync(b, &spec, &job, err, sizeof err) == 0);
    nq_job_t *j = jobq_find(b, job);
    T_CHECK(j != NULL);
    uint64_t nshards = j ? j->shards_total : 0;
    fake_t a, b2;
    fake_hello(&a, "spot-a", 31, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &a, NULL });
    T_EQ_U64(a.ntasks, nshards);
    fake_credit(&a, 0);
    vote_all(&a, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, NULL });
    results_flush(b);
    fake_hello(&b2, "spot-b", 32, 16);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &b2, NULL });
    T_EQ_U64(b2.ntasks, nshards);         /* every result drew a check, and b2 holds them all */
    uint64_t open = 0;
    T_CHECK(store_spot_open(b->store, job, &open) == 0 && open == nshards);
    broker_destroy(&b);                   /* down with every check open */
    fake_close(&a);
    fake_close(&b2);
    b = broker_start();
    j = jobq_find(b, job);
    T_CHECK(j != NULL && j->nchecks == nshards);   /* requeued from the store */
    nq_task_t held[16];
    int nheld = b2.ntasks;
    memcpy(held, b2.tasks, sizeof held);
    fake_hello(&b2, "spot-b", 32, 0);     /* same session, no credit yet: it only delivers */
    fake_hello(&a, "spot-a", 31, 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &b2, NULL });
    for (int i = 0; i < nheld; i++)
        fake_result(&b2, &held[i], 0);
    run_with(0.2, 0.05, (fake_t *[]){ &a, &b2, NULL });
    results_flush(b);
    T_CHECK(store_spot_open(b->store, job, &open) == 0 && open == 0);
    fake_credit(&a, 16);
    fake_credit(&b2, 16);
    run_with(0.5, 0.05, (fake_t *[]){ &a, &b2, NULL });
    results_flush(b);
    nq_job_row_t row;
    T_CHECK(store_job_get(b->store, job, &row) == 0);
    T_EQ_U64(row.shards_done, nshards);
    T_CHECK(row.state == NQ_JOB_DONE);
    T_CHECK(jobq_find(b, job) == NULL);
    fake_close(&a);
    fake_close(&b2);
    teardown();
}

/* A worker's nodes saturate: two fast-kind results of 2^64-1 nodes each (their nodes are the GPU
   kernel's own, never bounded) leave it at 2^64-1, where they wrapped to 2^64-2 and its nodes/s
   fell to a small number. */
T_TEST(test_worker_nodes_do_not_wrap)
{
    setup();
    submit(8, 1);
    fake_t w;
    fake_hello(&w, "w-fast", 21, 2);
    w.echo = 1;
    for (int i = 0; i < 100 && w.ntasks < 2; i++)   /* a loaded machine delivers late: wait for it */
        run_for(0.05, 0.05, &w, NULL);
    T_EQ_U64(w.ntasks, 2);
    for (int i = 0; i < 2; i++) {
        const nq_task_t *t = &w.tasks[i];
        const nq_count_result_t *c = &truth[t->job % TRUTH_JOBS][t->shard % TRUTH_SHARDS];
        nq_msg_t m = { .type = NQ_MSG_RESULT };
        m.u.result = (nq_result_t){ .job = t->job, .shard = t->shard, .lease = t->lease, .kind = NQ_KIND_COUNT,
                                    .total = c->total, .unique = c->unique, .nodes = UINT64_MAX,
                                    .res13 = c->res13, .res15 = c->res15, .elapsed_us = 1000, .proof = t->proof,
                                    .nodes_kind = NQ_NODES_GPU_FAST };
        fake_send(&w, &m);
    }
    for (int i = 0; i < 100 && w.acks < 2; i++) {
        run_for(0.05, 0.05, &w, NULL);
        results_flush(b);
    }
    T_EQ_U64(w.acks, 2);
    T_CHECK(b->peers != NULL);
    T_EQ_U64(b->peers ? b->peers->nodes_done : 0, UINT64_MAX);
    fake_close(&w);
    teardown();
}

T_RUN_ALL()
