/*
 * The link's round trip and the waits derived from it (common/wire/link.c): a far link widens
 * every wait by its round trip, a near one by almost nothing, no link by more than the ceiling,
 * and an unmeasured one by the round trip assumed.
 */
#include "t.h"
#include "link.h"

#include <math.h>

static int near(double a, double b) { return fabs(a - b) < 1e-9; }

T_TEST(test_link_unmeasured_assumes_a_far_link)
{
    nq_link_t l = { 0 };
    T_CHECK(near(link_allowance(&l), LINK_RTT_ASSUMED_S));
    T_CHECK(near(link_window(&l, 0.2, 3), 0.6 + LINK_RTT_ASSUMED_S));
    T_CHECK(near(link_handshake_wait(&l, 1.0, 4), 4 + LINK_HANDSHAKE_RTTS * LINK_RTT_ASSUMED_S));
}

T_TEST(test_link_steady_round_trip_converges)
{
    nq_link_t l = { 0 };
    for (int i = 0; i < 200; i++)
        link_sample(&l, 2.0);
    T_CHECK(near(l.srtt, 2.0));
    T_CHECK(l.rttvar < 1e-6);
    T_CHECK(fabs(link_window(&l, 0.2, 3) - 2.6) < 1e-5);   /* the window plus the round trip */
    T_CHECK(fabs(link_handshake_wait(&l, 1.0, 4) - (4 + LINK_HANDSHAKE_RTTS * 2.0)) < 1e-5);
}

T_TEST(test_link_first_sample_leaves_room_for_jitter)
{
    nq_link_t l = { 0 };
    link_sample(&l, 0.3);
    T_CHECK(near(link_allowance(&l), 0.3 + 4 * 0.15));     /* srtt and four deviations of half of it */
}

T_TEST(test_link_lan_adds_almost_nothing)
{
    nq_link_t l = { 0 };
    for (int i = 0; i < 50; i++)
        link_sample(&l, 0.0002);
    T_CHECK(link_allowance(&l) < 0.001);
}

T_TEST(test_link_ceiling_bounds_every_wait)
{
    nq_link_t l = { 0 };
    for (int i = 0; i < 50; i++)
        link_sample(&l, 250.0);                 /* a hostile peer that echoes late */
    T_CHECK(near(link_allowance(&l), LINK_RTT_CEIL_S));
    T_CHECK(near(link_handshake_wait(&l, 1.0, 4), 4 + LINK_RTT_CEIL_S));
}

T_TEST(test_link_ignores_impossible_samples)
{
    nq_link_t l = { 0 };
    link_sample(&l, -1.0);
    link_sample(&l, NAN);
    link_sample(&l, 1e9);
    T_EQ_U64(l.samples, 0);
    link_sample(&l, 0.5);
    T_EQ_U64(l.samples, 1);
    T_CHECK(near(l.srtt, 0.5));
}

T_RUN_ALL()
