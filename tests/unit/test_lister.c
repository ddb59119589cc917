/*
 * The lister (broker/lister.h): shard lists built on a thread of their own, answered in the
 * order asked, each followed by a poke of the asker's wake socket; the limits a submit puts on
 * a list (the cap, the steps) refuse with their reason; and stopping it ends a list that would
 * search for minutes, dropping what was asked and not taken (ASan: nothing leaks).
 */
#include "t.h"

#include "lister.h"
#include "shard.h"

#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define WAKE_EP "inproc://test-lister-wake"

static void *ctx, *wake;

static nq_lister_t *start(void)
{
    char err[256] = "";
    ctx = zmq_ctx_new();
    wake = zmq_socket(ctx, ZMQ_PULL);
    T_CHECK(zmq_bind(wake, WAKE_EP) == 0);
    nq_lister_t *l = lister_new(ctx, WAKE_EP, err, sizeof err);
    T_CHECK(l != NULL);
    return l;
}

static void finish(nq_lister_t **l)
{
    lister_destroy(l);
    T_CHECK(*l == NULL);
    zmq_close(wake);
    zmq_ctx_term(ctx);
}

/* The next answer, after the poke that announces it (60 s: a sanitizer build is slow). */
static int next_answer(nq_lister_t *l, nq_lister_done_t *d)
{
    zmq_pollitem_t it = { wake, 0, ZMQ_POLLIN, 0 };
    if (zmq_poll(&it, 1, 60000) != 1)
        return -1;
    char c;
    zmq_recv(wake, &c, 1, 0);
    return lister_take(l, d) ? 0 : -1;
}

static nq_lister_req_t req(uint64_t ticket, int kind, int n, int depth)
{
    return (nq_lister_req_t){ .ticket = ticket, .kind = kind, .n = n, .depth = depth,
                              .encoding = NQ_SHARD_ENCODING, .max_shards = NQ_SHARD_MAX_LIST,
                              .max_steps = UINT64_MAX };
}

static uint64_t count_of(int kind, int n, int depth)
{
    char err[256];
    nq_shards_t *s = shards_new(kind, n, depth, err, sizeof err);
    uint64_t c = s ? shards_count(s) : 0;
    shards_destroy(&s);
    return c;
}

/* Three asks: the same lists shards_new builds, in the order asked; a bad depth says why. */
T_TEST(test_lister_answers_in_order)
{
    nq_lister_t *l = start();
    nq_lister_req_t a = req(7, NQ_KIND_COUNT, 12, 3), b = req(8, NQ_KIND_ENUMERATE, 8, 2);
    nq_lister_req_t bad = req(9, NQ_KIND_COUNT, 10, 9);
    T_EQ_U64(lister_ask(l, &a), 0);
    T_EQ_U64(lister_ask(l, &b), 0);
    T_EQ_U64(lister_ask(l, &bad), 0);
    nq_lister_done_t d;
    T_EQ_U64(next_answer(l, &d), 0);
    T_EQ_U64(d.ticket, 7);
    T_CHECK(d.list != NULL && shards_count(d.list) == count_of(NQ_KIND_COUNT, 12, 3));
    shards_destroy(&d.list);
    T_EQ_U64(next_answer(l, &d), 0);
    T_EQ_U64(d.ticket, 8);
    T_CHECK(d.list != NULL && shards_count(d.list) == count_of(NQ_KIND_ENUMERATE, 8, 2));
    shards_destroy(&d.list);
    T_EQ_U64(next_answer(l, &d), 0);
    T_EQ_U64(d.ticket, 9);
    T_CHECK(d.list == NULL && d.why == NQ_SHARDS_REFUSED && strstr(d.err, "depth") != NULL);
    T_EQ_U64(lister_take(l, &d), 0);
    finish(&l);
}

/* A submit's limits: past the cap (count 18 at depth 10 passes 1000 shards at once), past the
   steps (count 32 at depth 30 never finds a shard); --shard-seconds picks the depth. */
T_TEST(test_lister_limits_and_seconds)
{
    nq_lister_t *l = start();
    nq_lister_req_t cap = req(1, NQ_KIND_COUNT, 18, 10), steps = req(2, NQ_KIND_COUNT, 32, 30);
    nq_lister_req_t secs = req(3, NQ_KIND_COUNT, 16, 0);
    char err[256];
    cap.max_shards = 1000;
    steps.max_steps = 1 << 16;
    secs.seconds = 1e-6;
    T_EQ_U64(lister_ask(l, &cap), 0);
    T_EQ_U64(lister_ask(l, &steps), 0);
    T_EQ_U64(lister_ask(l, &secs), 0);
    nq_lister_done_t d;
    T_EQ_U64(next_answer(l, &d), 0);
    T_CHECK(d.list == NULL && d.why == NQ_SHARDS_TOO_MANY && strstr(d.err, "more than 1000 shards"));
    T_EQ_U64(next_answer(l, &d), 0);
    T_CHECK(d.list == NULL && d.why == NQ_SHARDS_TOO_SLOW && strstr(d.err, "steps of search"));
    T_EQ_U64(next_answer(l, &d), 0);
    T_CHECK(d.list != NULL && shards_depth(d.list) == shard_depth_for_seconds(NQ_KIND_COUNT, 16, 1e-6, err,
                                                                              sizeof err));
    fprintf(stderr, "  count 16 --shard-seconds 1e-6: depth %d, %llu shards\n",
            d.list ? shards_depth(d.list) : -1, d.list ? (unsigned long long)shards_count(d.list) : 0ull);
    shards_destroy(&d.list);
    finish(&l);
}

/* The order asked for is the list's, for a depth and for --shard-seconds: order 2's positions then
   run from the largest estimate down, and order 0 is the same; another order (1, deleted) says why. */
T_TEST(test_lister_passes_the_order)
{
    nq_lister_t *l = start();
    nq_lister_req_t cost = req(1, NQ_KIND_COUNT, 12, 2), secs = req(2, NQ_KIND_COUNT, 12, 0);
    nq_lister_req_t old = req(3, NQ_KIND_COUNT, 12, 2), bad = req(4, NQ_KIND_COUNT, 12, 2);
    cost.order = secs.order = NQ_ORDER_COST;
    secs.seconds = 1e-6;
    bad.order = NQ_ORDER_COST - 1;
    nq_lister_req_t *asks[] = { &cost, &secs, &old, &bad };
    for (int i = 0; i < 4; i++)
        T_EQ_U64(lister_ask(l, asks[i]), 0);
    nq_lister_done_t d;
    for (int i = 0; i < 2; i++) {
        T_EQ_U64(next_answer(l, &d), 0);
        T_CHECK(d.list != NULL && shards_order(d.list) == NQ_ORDER_COST);
        for (uint64_t p = 1; d.list && p < shards_count(d.list); p++)
            T_CHECK(shards_cost_at(d.list, p - 1) >= shards_cost_at(d.list, p));
        shards_destroy(&d.list);
    }
    T_EQ_U64(next_answer(l, &d), 0);
    T_CHECK(d.list != NULL && shards_order(d.list) == NQ_ORDER_COST);
    shards_destroy(&d.list);
    T_EQ_U64(next_answer(l, &d), 0);
    T_CHECK(d.list == NULL && d.why == NQ_SHARDS_REFUSED && strstr(d.err, "lease order") != NULL);
    finish(&l);
}

/*
 * Stopping while a list searches for minutes (count 32 at depth 30 with no step bound) and two
 * more wait behind it: the search gives up at its next step, stop returns, and what was asked is
 * dropped (a leak here is an ASan failure). The bound is far above a step and far below the
 * minutes the search would take; before the stop flag, stop waited for the whole search.
 */
T_TEST(test_lister_stop_ends_a_long_search)
{
    nq_lister_t *l = start();
    nq_lister_req_t forever = req(1, NQ_KIND_COUNT, 32, 30), next = req(2, NQ_KIND_COUNT, 10, 2);
    T_EQ_U64(lister_ask(l, &forever), 0);
    T_EQ_U64(lister_ask(l, &next), 0);
    next.ticket = 3;
    T_EQ_U64(lister_ask(l, &next), 0);
    usleep(200000);                     /* it is searching */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lister_stop(l);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    fprintf(stderr, "  stopped a search of minutes in %.3f s\n", took);
    T_CHECK(took < 60);                 /* a hang, not a speed: the search runs for minutes */
    nq_lister_done_t d;
    T_EQ_U64(lister_take(l, &d), 0);
    T_CHECK(lister_ask(l, &next) == -1);   /* stopped: asks are refused, not queued forever */
    lister_stop(l);                        /* again: nothing to do */
    finish(&l);
}

T_RUN_ALL()
