/* The scheduler's rules as pure functions (sched_rules.h): dispatch.c applies them. */
#include "sched_rules.h"

/* Within its credit, at least a lease per thread and one more, and beyond that while what it
   holds is less than DISPATCH_AHEAD_S of its rate, plus its round trip of what its threads do (a
   result takes that long to come back and its next lease to get there: a far worker kept only
   DISPATCH_AHEAD_S ahead idles for the difference). Its threads times its lane, not its rate,
   count for the round trip: a starved worker's rate is what the link let through, and would keep
   it starved. Before its rate is known its lane stands for it; with neither, a near worker gets
   what it asked for, and a far one (FAR_RTT_S) its threads and one: its credit covers a round
   trip of what its first small shards took. */
int sched_wants_more(const sched_worker_t *w)
{
    uint32_t threads = w->threads ? w->threads : 1;
    if (w->outstanding >= w->credit)
        return 0;
    if (w->outstanding < threads + 1)
        return 1;
    double busy = w->lane * threads > w->rate ? w->lane * threads : w->rate;
    if (busy <= 0)                      /* nothing measured: near, what it asked for; far, no more yet */
        return w->rtt < FAR_RTT_S;
    return w->out_cost < DISPATCH_AHEAD_S * (w->rate > 0 ? w->rate : busy) + w->rtt * busy;
}

/* The front holds the largest shards: a worker takes from it when its lane is among the fastest,
   or when it would finish the front shard well before the job's projected end; any other worker
   (and one not measured yet: it is soon measured on small shards) takes from the back. */
int sched_from_back(const sched_worker_t *w, double lane_best, double rate_total, double front_cost,
                    double work_left)
{
    if (w->lane <= 0)
        return 1;
    if (w->lane >= FAST_ENOUGH * lane_best)
        return 0;
    double rate = rate_total > w->rate ? rate_total : w->rate;
    if (rate <= 0)
        return 1;
    return front_cost / w->lane > WELL_BEFORE * (work_left / rate);
}

int sched_copy_worth(double copy_s, double holder_left_s)
{
    return copy_s < COPY_GAIN * holder_left_s;
}
