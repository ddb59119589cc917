/*
 * What a submit may create, checked before anything is written:
 * an N a solve method refuses is refused with the method's own message, for
 * every method of a study; the shard caps per job and over the active jobs
 * refuse with a message naming the cap and the option that raises it; and the
 * control op `solution` refuses a permutation too large to send from the
 * row's size, before loading it.
 */
#include "t.h"

#include "broker.h"
#include "broker_impl.h"
#include "cli.h"
#include "control.h"
#include "proto.h"
#include "shard.h"
#include "solve.h"
#include "store.h"
#include "store_solsize.h"

#include <unistd.h>
#include <zmq.h>

static char db_path[512];

static nq_store_t *fresh_store(const char *name)
{
    char err[256];
    snprintf(db_path, sizeof db_path, "%s/submit-%s-%d.db", t_tmpdir(), name, (int)getpid());
    unlink(db_path);
    nq_store_t *st = store_open(db_path, 0, err, sizeof err);
    T_CHECK(st != NULL);
    return st;
}

static void drop_store(nq_store_t **st)
{
    store_destroy(st);
    unlink(db_path);
}

static uint64_t rows(nq_store_t *st, const char *sql)
{
    sqlite3_stmt *q = NULL;
    uint64_t v = UINT64_MAX;
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = (uint64_t)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

static nq_job_spec_t solve_spec(uint64_t n, const char *algo, uint64_t restarts)
{
    nq_job_spec_t s = { .kind = NQ_KIND_SOLVE, .n = n, .restarts = restarts, .solutions = 1,
                        .max_attempts = 5, .quorum = 1 };
    snprintf(s.algo, sizeof s.algo, "%s", algo);
    return s;
}

/* `solve 8 --algo divide` (8 is one of the N the construction leaves out): refused, divide's words. */
T_TEST(test_submit_refuses_what_the_method_refuses)
{
    nq_store_t *st = fresh_store("method");
    char err[512] = "", want[512] = "";
    uint64_t id = 0;
    T_EQ_U64(solver_check(&nq_solver_divide, 8, want, sizeof want), (uint64_t)-1);
    nq_job_spec_t s = solve_spec(8, "divide", 10);
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), (uint64_t)-1);
    T_EQ_STR(err, want);
    fprintf(stderr, "  solve 8 --algo divide: %s\n", err);
    /* a study: every method is asked, the refusing one's message wins */
    s = solve_spec(8, "qs4,construct,divide", 10);
    err[0] = 0;
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), (uint64_t)-1);
    T_EQ_STR(err, want);
    /* out of a method's range: solve_run's words too */
    s = solve_spec(2000000, "minconflicts", 1);
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), (uint64_t)-1);
    T_CHECK(strstr(err, "minconflicts solves 4 <= N <= 1000000") != NULL);
    T_EQ_U64(rows(st, "SELECT COUNT(*) FROM jobs"), 0);
    T_EQ_U64(rows(st, "SELECT coalesce(SUM(shards_total), 0) FROM jobs"), 0);
    /* what the methods do solve goes through */
    s = solve_spec(8, "qs4,construct", 10);
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), 0);
    s = solve_spec(10, "divide", 3);
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), 0);
    T_EQ_U64(rows(st, "SELECT coalesce(SUM(shards_total), 0) FROM jobs"), 23);
    drop_store(&st);
}

/* Over the per-job cap: refused, naming the cap and --max-job-shards, and no row written. */
T_TEST(test_job_shard_cap)
{
    nq_store_t *st = fresh_store("jobcap");
    char err[512] = "";
    uint64_t id = 0;
    nq_shard_caps_t caps = { .max_job_shards = 1000 };
    nq_job_spec_t s = solve_spec(50, "qs4,qs1", 501);           /* 1002 shards */
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), (uint64_t)-1);
    fprintf(stderr, "  %s\n", err);
    T_CHECK(strstr(err, "1002 shards") != NULL);
    T_CHECK(strstr(err, "cap of 1000 shards per job") != NULL);
    T_CHECK(strstr(err, "nq broker' with --max-job-shards") != NULL);
    /* a count job is capped the same way (count 12 at depth 3: more than 100 shards) */
    nq_shard_caps_t small = { .max_job_shards = 100 };
    nq_job_spec_t c = { .kind = NQ_KIND_COUNT, .n = 12, .depth = 3, .max_attempts = 5, .quorum = 1 };
    T_EQ_U64(submit_create_capped(st, &c, &small, &id, err, sizeof err), (uint64_t)-1);
    T_CHECK(strstr(err, "cap of 100 shards per job") != NULL);
    T_EQ_U64(rows(st, "SELECT COUNT(*) FROM jobs"), 0);
    T_EQ_U64(rows(st, "SELECT coalesce(SUM(shards_total), 0) FROM jobs"), 0);
    s = solve_spec(50, "qs4,qs1", 500);                           /* exactly the cap */
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), 0);
    T_EQ_U64(rows(st, "SELECT coalesce(SUM(shards_total), 0) FROM jobs"), 1000);
    /* the defaults: `nq run` (submit_create) says where the cap can be raised */
    s = solve_spec(50, "qs4", NQ_DEFAULT_MAX_JOB_SHARDS + 1);
    T_EQ_U64(submit_create(st, &s, &id, err, sizeof err), (uint64_t)-1);
    T_CHECK(strstr(err, "cap of 20000000 shards per job") != NULL);
    T_CHECK(strstr(err, "--max-job-shards") != NULL);
    T_EQ_U64(rows(st, "SELECT COUNT(*) FROM jobs"), 1);
    drop_store(&st);
}

/* The sum over pending and running jobs: refused past it, accepted again once a job ends. */
T_TEST(test_store_shard_cap)
{
    nq_store_t *st = fresh_store("storecap");
    char err[512] = "";
    uint64_t a = 0, id = 0;
    nq_shard_caps_t caps = { .max_store_shards = 1500 };
    nq_job_spec_t s = solve_spec(40, "qs4", 1000);
    T_EQ_U64(submit_create_capped(st, &s, &caps, &a, err, sizeof err), 0);
    s = solve_spec(40, "qs4", 501);
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), (uint64_t)-1);
    fprintf(stderr, "  %s\n", err);
    T_CHECK(strstr(err, "501 shards and the 1000 shards of the active jobs") != NULL);
    T_CHECK(strstr(err, "cap of 1500 shards over active jobs") != NULL);
    T_CHECK(strstr(err, "--max-store-shards") != NULL);
    T_EQ_U64(rows(st, "SELECT COUNT(*) FROM jobs"), 1);
    T_EQ_U64(rows(st, "SELECT coalesce(SUM(shards_total), 0) FROM jobs"), 1000);
    s = solve_spec(40, "qs4", 500);
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), 0);
    /* full; the first job ends (cancelled): its shards no longer count */
    s = solve_spec(40, "qs4", 1);
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), (uint64_t)-1);
    T_EQ_U64(store_job_set_state(st, a, NQ_JOB_CANCELLED), 0);
    s = solve_spec(40, "qs4", 1000);
    T_EQ_U64(submit_create_capped(st, &s, &caps, &id, err, sizeof err), 0);
    drop_store(&st);
}

/* The default per-job cap holds every count job at its default depth (N=28 is the largest). */
T_TEST(test_default_cap_fits_every_count_job)
{
    char err[256];
    for (int n = 1; n <= NQ_SHARD_MAX_N; n++) {
        if (n == 27 || n > 28)
            continue;                   /* 13.2M, and 1.3M..2.4M at depth 3: keep the test short */
        nq_shards_t *sh = shards_new(NQ_KIND_COUNT, n, 0, err, sizeof err);
        T_CHECK(sh != NULL);
        if (!sh)
            continue;
        T_CHECK(shards_count(sh) <= NQ_DEFAULT_MAX_JOB_SHARDS);
        T_CHECK(shards_count(sh) <= NQ_DEFAULT_MAX_STORE_SHARDS / 2);
        if (n == 28)
            fprintf(stderr, "  count 28 at depth %d: %zu shards (cap %llu)\n", shards_depth(sh),
                    shards_count(sh), NQ_DEFAULT_MAX_JOB_SHARDS);
        shards_destroy(&sh);
    }
}

static void add_solution(nq_store_t *st, uint64_t job, const char *hash, uint64_t n, const void *cols,
                         size_t len, const char *path, double at)
{
    sqlite3_stmt *q = NULL;
    T_CHECK(sqlite3_prepare_v2(store_db(st), "INSERT INTO solutions (job, hash, shard, seed, n, cols, path,"
                               " found_at) VALUES (?, ?, 0, 0, ?, ?, ?, ?)", -1, &q, NULL) == SQLITE_OK);
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    sqlite3_bind_text(q, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)n);
    if (cols)
        sqlite3_bind_blob(q, 4, cols, (int)len, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 4);
    if (path)
        sqlite3_bind_text(q, 5, path, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 5);
    sqlite3_bind_double(q, 6, at);
    T_CHECK(sqlite3_step(q) == SQLITE_DONE);
    sqlite3_finalize(q);
}

static int ask_solution(nq_store_t *st, uint64_t job, uint64_t index, char *err, size_t errlen)
{
    nq_ctl_req_t req;
    memset(&req, 0, sizeof req);
    snprintf(req.op, sizeof req.op, "solution");
    req.job = job;
    proto_param_add_u64(&req, "index", index);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    err[0] = 0;
    int rc = control_query(store_db(st), db_path, NULL, &req, &pk, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/*
 * `solution`: the size from the row first. A row of N=2*10^7 whose file is not
 * even there is refused as too large (the load was tried first, and would
 * have read 80 MB had the file been there); a small one is still served.
 */
T_TEST(test_solution_size_before_load)
{
    nq_store_t *st = fresh_store("solsize");
    char err[512];
    uint64_t big = 0, small = 0, n = 0;
    nq_job_spec_t s = solve_spec(20000000, "construct", 1);
    T_EQ_U64(submit_create(st, &s, &big, err, sizeof err), 0);
    add_solution(st, big, "aa", 20000000, NULL, 0, "not-there.sol", 1.0);
    s = solve_spec(8, "construct", 1);
    T_EQ_U64(submit_create(st, &s, &small, err, sizeof err), 0);
    static const uint8_t eight[32] = { 1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 7, 0, 0, 0,
                                       2, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 4, 0, 0, 0 };
    add_solution(st, small, "bb", 8, eight, sizeof eight, NULL, 2.0);

    T_EQ_U64(store_solution_n(store_db(st), big, 0, &n, err, sizeof err), 0);
    T_EQ_U64(n, 20000000);
    T_EQ_U64(store_solution_n(store_db(st), big, 1, &n, err, sizeof err), 1);
    T_EQ_U64(store_solution_n(store_db(st), 999, 0, &n, err, sizeof err), 1);

    T_EQ_U64(ask_solution(st, big, 0, err, sizeof err), NQ_EXIT_ERROR);
    fprintf(stderr, "  solution of job %llu: %s\n", (unsigned long long)big, err);
    T_CHECK(strstr(err, "N=20000000 is too large to send") != NULL);
    T_EQ_U64(ask_solution(st, small, 0, err, sizeof err), NQ_EXIT_OK);
    T_EQ_U64(ask_solution(st, small, 1, err, sizeof err), NQ_EXIT_NO);
    T_CHECK(strstr(err, "no solution 1") != NULL);
    drop_store(&st);
}

/* ---- submits through a broker: answered when the list is built, never inside the loop ---- */

static nq_broker_t *sub_broker;

static void *sub_client(void *ctx)
{
    char ep[256];
    broker_endpoint(sub_broker, 1, ep, sizeof ep);
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(s, ep);
    return s;
}

static void sub_ask(void *s, const char *op, const char *kind, uint64_t n, uint64_t depth)
{
    nq_msg_t m = { .type = NQ_MSG_CTL_REQ };
    snprintf(m.u.ctl_req.op, sizeof m.u.ctl_req.op, "%s", op);
    if (kind) {
        proto_param_add_str(&m.u.ctl_req, "kind", kind);
        proto_param_add_u64(&m.u.ctl_req, "n", n);
        proto_param_add_u64(&m.u.ctl_req, "depth", depth);
    }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    T_CHECK(proto_encode(&m, &sb) == 0);
    zmq_send(s, sb.data, sb.size, 0);
    msgpack_sbuffer_destroy(&sb);
}

/* The next answer on s, while the broker turns (when there is one): code and error; id of a
   submit; -1 when none came in 60 s. */
static int sub_answer(void *s, int turn, char *err, size_t errlen, uint64_t *id)
{
    for (int i = 0; i < 6000; i++) {
        if (turn)
            broker_round(sub_broker, 5);
        zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, turn ? 0 : 10) <= 0)
            continue;
        zmq_msg_t f;
        zmq_msg_init(&f);
        zmq_msg_recv(&f, s, 0);
        nq_msg_t m;
        char why[200];
        int code = -1;
        if (proto_decode(zmq_msg_data(&f), zmq_msg_size(&f), &m, why, sizeof why) == 0) {
            code = m.u.ctl_rep.code;
            snprintf(err, errlen, "%s", m.u.ctl_rep.error);
            const msgpack_object *d = &m.u.ctl_rep.doc;
            *id = 0;
            if (code == 0 && d->type == MSGPACK_OBJECT_MAP && d->via.map.size == 1 &&
                d->via.map.ptr[0].val.type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                *id = d->via.map.ptr[0].val.via.u64;
            proto_msg_free(&m);
        }
        zmq_msg_close(&f);
        return code;
    }
    return -1;
}

static void sub_start(const char *name)
{
    char err[256];
    snprintf(db_path, sizeof db_path, "%s/submit-%s-%d.db", t_tmpdir(), name, (int)getpid());
    unlink(db_path);
    nq_broker_cfg_t cfg;
    broker_cfg_defaults(&cfg);
    cfg.bind = "tcp://127.0.0.1:*";
    cfg.control = "tcp://127.0.0.1:*";
    cfg.db_path = db_path;
    sub_broker = broker_new(&cfg, err, sizeof err);
    T_CHECK(sub_broker != NULL);
}

/* A count submit is answered once its list's shape is built (the count its row needs), before the
   cost estimates of its lease order; the job leases nothing until its ordered list comes. */
T_TEST(test_submit_answered_when_listed)
{
    sub_start("listed");
    void *ctx = zmq_ctx_new(), *c = sub_client(ctx);
    char err[NQ_STR_MAX];
    uint64_t id = 0;
#ifdef NQ_TEST_FAULTS
    lister_test_hold(sub_broker->orderer, 1);      /* the order's estimates "take" until released */
#endif
    sub_ask(c, "submit", "count", 12, 3);
    T_EQ_U64(sub_answer(c, 1, err, sizeof err, &id), 0);
    nq_job_t *j = jobq_find(sub_broker, id);
    T_CHECK(id > 0 && j != NULL);
#ifdef NQ_TEST_FAULTS
    T_CHECK(j && j->list == NULL && j->list_ticket != 0);
    T_CHECK(jobq_for(sub_broker, NULL, 1) == NULL);     /* nothing to lease yet */
    char why[200];
    job_wait_why(sub_broker, j, why, sizeof why);
    T_CHECK(strstr(why, "for a worker") != NULL);   /* none connected: said first */
    lister_test_hold(sub_broker->orderer, 0);
#endif
    for (int i = 0; i < 6000 && j->list_ticket; i++)
        broker_round(sub_broker, 5);
    T_CHECK(j->list != NULL && j->list_ticket == 0 && shards_ordered(j->list));
    T_CHECK(j && j->list && shards_count(j->list) == j->shards_total && shards_depth(j->list) == 3);
    sub_ask(c, "submit", "count", 12, 11);   /* too deep: the list's own reason */
    T_EQ_U64(sub_answer(c, 1, err, sizeof err, &id), NQ_EXIT_USAGE);
    T_CHECK(strstr(err, "depth must be from 1 to 10") != NULL);
    zmq_close(c);
    broker_destroy(&sub_broker);
    zmq_ctx_term(ctx);
    unlink(db_path);
}

/*
 * Nine submits whose lists take a while each (count 32 at depth 30 searches its step budget, a
 * fraction of a second) and a status behind them, all in one turn of the loop: the status is
 * answered at once, and so is the ninth submit (busy: eight wait at most). The broker stops with
 * eight waiting: each of their clients hears that nothing was created.
 */
T_TEST(test_submit_busy_and_stopped)
{
    sub_start("busy");
    void *ctx = zmq_ctx_new(), *c = sub_client(ctx);
    char err[NQ_STR_MAX];
    uint64_t id = 0;
    usleep(100000);                     /* connected */
    for (int i = 0; i < 9; i++)
        sub_ask(c, "submit", "count", 32, 30);
    sub_ask(c, "list", NULL, 0, 0);
    usleep(100000);                     /* all ten on the broker's socket */
    broker_round(sub_broker, 100);
    T_EQ_U64(sub_answer(c, 0, err, sizeof err, &id), NQ_EXIT_ERROR);
    fprintf(stderr, "  the ninth: %s\n", err);
    T_CHECK(strstr(err, "busy listing the shards of 8 submits") != NULL);
    T_EQ_U64(sub_answer(c, 0, err, sizeof err, &id), NQ_EXIT_OK);   /* the list, before any list is built */
    T_EQ_U64(sub_broker->listing_submits, 8);
    broker_destroy(&sub_broker);
    for (int i = 0; i < 8; i++) {
        T_EQ_U64(sub_answer(c, 0, err, sizeof err, &id), NQ_EXIT_ERROR);
        T_CHECK(strstr(err, "the broker stopped before the job's shards were listed") != NULL);
    }
    zmq_close(c);
    zmq_ctx_term(ctx);
    unlink(db_path);
}

T_RUN_ALL()
