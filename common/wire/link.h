/*
 * The link between a worker and its broker: the round trip each side measures, and the timing
 * rules derived from it. A worker may be a rack away or on another continent (a 0.3 s round trip)
 * or behind a satellite hop (2 s); every wait that a reply must cross the link for is the
 * heartbeat's own rule plus what the link adds, with a floor (the rule as on a LAN) and a ceiling
 * (a link this slow is a dead one).
 */
#ifndef NQ_LINK_H
#define NQ_LINK_H

#include <stdint.h>

#define LINK_RTT_CEIL_S 30.0       /* the most a measured round trip adds to any wait */
#define LINK_RTT_ASSUMED_S 2.0     /* a round trip assumed before the first sample: the far links nq
                                      promises to keep (a satellite hop) */
/* Round trips a new connection takes before its first message: TCP (1), the ZMTP greeting and
   READY (2), CURVE's HELLO/WELCOME/INITIATE (1 more), our HELLO and its WELCOME (1). */
#define LINK_HANDSHAKE_RTTS 5

/* Smoothed as TCP does (RFC 6298): srtt and its mean deviation. */
typedef struct {
    double srtt, rttvar;           /* seconds; srtt 0: no sample yet */
    uint64_t samples;
} nq_link_t;

/* One round trip measured (seconds; a negative or absurd one is ignored). */
void link_sample(nq_link_t *l, double rtt);
/* What the link adds to a wait for a reply: srtt and four deviations, at most LINK_RTT_CEIL_S;
   LINK_RTT_ASSUMED_S before the first sample (a new peer's first echo is a round trip away). */
double link_allowance(const nq_link_t *l);
/* A liveness window: heartbeats of hb_s, `liveness` of them missed, plus the link's allowance. */
double link_window(const nq_link_t *l, double hb_s, uint32_t liveness);
/* How long a new connection may stay silent: a liveness window and LINK_HANDSHAKE_RTTS round trips
   (the one measured, else LINK_RTT_ASSUMED_S), at most the window plus LINK_RTT_CEIL_S. */
double link_handshake_wait(const nq_link_t *l, double hb_s, uint32_t liveness);

#endif
