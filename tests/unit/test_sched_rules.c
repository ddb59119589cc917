/*
 * The scheduler's rules (broker/sched_rules.c), table by table: who gets one more lease (credit,
 * threads, how far ahead, the round trip), who takes from the front of a job, and when a tail
 * copy is worth making. No broker, no socket, no store.
 */
#include "t.h"

#include "sched_rules.h"

T_TEST(test_wants_more)
{
    static const struct { sched_worker_t w; int want; const char *why; } c[] = {
        { { 4, 10, 10, 1, 4, 0, 0 }, 0, "its credit is full" },
        { { 4, 10, 4, 1, 4, 100, 0 }, 1, "fewer than a lease per thread and one" },
        { { 0, 10, 1, 0, 0, 0, 0 }, 1, "threads 0 counts as 1: one lease and one more" },
        { { 1, 10, 2, 0, 0, 0, 0 }, 1, "nothing measured, near: what it asked for" },
        { { 1, 10, 2, 0, 0, 0, 0.1 }, 0, "nothing measured, far: no more yet" },
        { { 4, 100, 10, 1, 4, 7.9, 0 }, 1, "under 2 s of its rate" },
        { { 4, 100, 10, 1, 4, 8, 0 }, 0, "2 s of its rate" },
        { { 4, 100, 10, 1, 0, 7, 0 }, 1, "no rate yet: its lane times its threads stands for it" },
        { { 4, 100, 10, 1, 0, 9, 0 }, 0, "... and bounds it" },
        { { 4, 100, 10, 1, 4, 9.5, 0.5 }, 1, "far: its round trip of work on top (8 + 2)" },
        { { 4, 100, 10, 1, 4, 10.5, 0.5 }, 0, "far: past it" },
        { { 4, 100, 10, 2, 4, 15, 1 }, 1, "the round trip counts its lane's work (8 + 8), not its rate's" },
        { { 4, 100, 10, 2, 4, 17, 1 }, 0, "... past it" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int got = sched_wants_more(&c[i].w);
        if (got != c[i].want)
            fprintf(stderr, "  case %zu (%s): %d, expected %d\n", i, c[i].why, got, c[i].want);
        T_EQ_U64(got, c[i].want);
    }
}

T_TEST(test_from_back)
{
    static const struct { double lane, rate, lane_best, rate_total, front_cost, work_left; int back; const char *why; } c[] = {
        { 0, 0, 10, 100, 10, 1000, 1, "not measured: the small shards first" },
        { 5, 5, 10, 100, 10, 1000, 0, "among the fastest (half the best lane)" },
        { 10, 5, 10, 100, 1000, 10, 0, "the fastest, even for a shard longer than the job's end" },
        { 4, 0, 10, 0, 10, 1000, 1, "slower, and no rate anywhere" },
        { 4, 4, 10, 100, 10, 1000, 0, "slower, but done with the front shard well before the end" },
        { 1, 1, 10, 100, 10, 1000, 1, "slower, and the front shard takes it past half the time left" },
        { 1, 50, 10, 10, 10, 1000, 0, "its own rate over the total's: exactly half the time left" },
        { 1, 50, 10, 10, 10.5, 1000, 1, "... and just past it" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        sched_worker_t w = { 1, 10, 0, c[i].lane, c[i].rate, 0, 0 };
        int got = sched_from_back(&w, c[i].lane_best, c[i].rate_total, c[i].front_cost, c[i].work_left);
        if (got != c[i].back)
            fprintf(stderr, "  case %zu (%s): %d, expected %d\n", i, c[i].why, got, c[i].back);
        T_EQ_U64(got, c[i].back);
    }
}

T_TEST(test_copy_worth)
{
    static const struct { double copy_s, holder_s; int worth; } c[] = {
        { 6.9, 10, 1 }, { 7, 10, 0 }, { 20, 10, 0 }, { 1, 1e12, 1 }, { 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        T_EQ_U64(sched_copy_worth(c[i].copy_s, c[i].holder_s), c[i].worth);
}

T_RUN_ALL()
