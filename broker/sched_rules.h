/*
 * The scheduler's rules (dispatch.c) as numbers in, a decision out: no broker, no socket, no
 * store, so each is tested table by table (tests/unit/test_sched_rules.c). Speeds are in the
 * shards' cost units a second: lane, one shard's; rate, everything a worker does.
 */
#ifndef NQ_SCHED_RULES_H
#define NQ_SCHED_RULES_H

#include <stdint.h>

#define DISPATCH_AHEAD_S 2.0        /* estimated work each worker is kept supplied with */
#define FAR_RTT_S 0.05              /* a round trip beyond a LAN's (Europe to Australia is 0.3 s) */
#define FAST_ENOUGH 0.5             /* a lane at least this share of the fastest takes from the front */
#define WELL_BEFORE 0.5             /* ... or one that finishes the shard in this share of the time left */
#define COPY_GAIN 0.7               /* a copy when it would finish in this share of the holder's time */

/* What the rules know of a worker. */
typedef struct {
    uint32_t threads;               /* from its HELLO; 0 counts as 1 */
    uint32_t credit, outstanding;   /* leases it asked for, and holds */
    double lane, rate;              /* 0: not measured yet */
    double out_cost;                /* the cost of the leases it holds */
    double rtt;                     /* its link's round trip, seconds */
} sched_worker_t;

/* Whether the worker should get one more lease (see sched_rules.c). */
int sched_wants_more(const sched_worker_t *w);
/* 1 when it takes from the back of a job's never-leased shards (the smallest), 0 the front (the
   largest): lane_best is the fastest lane, rate_total the workers' summed rate, front_cost the
   front shard's cost and work_left the job's. */
int sched_from_back(const sched_worker_t *w, double lane_best, double rate_total, double front_cost,
                    double work_left);
/* Whether a copy of a lease is worth making: the copier would finish in copy_s, the holder in
   holder_left_s. */
int sched_copy_worth(double copy_s, double holder_left_s);

#endif
