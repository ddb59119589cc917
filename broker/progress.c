/*
 * The web view's progress chart, kept in the store so that it spans a job's whole life, across
 * restarts, and stays after the job ends: every few seconds, each running job's share of its
 * estimated work done (jobq_work_done: the figures of its ETA) goes into job_progress, in the
 * open group commit, never in a transaction of its own. A job that did not move is written once a
 * minute only, so an idle broker does not commit every few seconds for nothing.
 */
#include "broker_impl.h"
#include "clock.h"

#define PROGRESS_PERIOD_S 2.0           /* a new point at most this often */
#define PROGRESS_IDLE_S 60.0            /* ... and this often when the job did not move */

void progress_tick(nq_broker_t *b, double now)
{
    if (!b->txn_open)
        return;                         /* no group to ride (a store that cannot write) */
    double wall = nq_wall();
    for (nq_job_t *j = b->jobs; j; j = j->next) {
        if (j->state != NQ_JOB_RUNNING || j->list_ticket || now - j->chart_at < PROGRESS_PERIOD_S)
            continue;                   /* no list yet: its work has no estimate to share */
        double done = jobq_work_done(j);
        if (j->chart_at > 0 && done == j->chart_done && now - j->chart_at < PROGRESS_IDLE_S)
            continue;
        if (store_progress_add(b->store, j->id, wall, done, PROGRESS_PERIOD_S) != 0)
            return;                     /* logged; the group rolls back and says why */
        j->chart_at = now;
        j->chart_done = done;
    }
}
