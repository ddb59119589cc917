/*
 * Why a job waits: work is pending, yet no connected worker may take it. Said in one line for
 * `nq status`, its --json and the web page, so a campaign that stalls says what it needs
 * instead of showing an ETA of "-" for ever. O(peers) per question, asked per status request
 * and once a second for the web view's snapshot: never per shard.
 */
#include "broker_impl.h"

#include <stdio.h>

static const char *const nth[] = { "a first", "a first", "a second", "a third" };

/* Connected workers of any identity that will take this job's shards now: not quarantined and
   not pausing the job after their errors (PAUSED_JOBS). */
static uint32_t takers(const nq_broker_t *b, const nq_job_t *j, uint32_t *connected)
{
    uint32_t n = 0;
    *connected = 0;
    for (const nq_peer_t *p = b->peers; p; p = p->next) {
        (*connected)++;
        n += !peer_quarantined(b, p) && !jobq_paused_for(p, j->id, b->now);
    }
    return n;
}

void job_wait_why(nq_broker_t *b, const nq_job_t *j, char *buf, size_t len)
{
    buf[0] = '\0';
    if ((j->state != NQ_JOB_PENDING && j->state != NQ_JOB_RUNNING) || jobq_pending(j) == 0)
        return;
    uint32_t connected, ready = takers(b, j, &connected);
    uint32_t idents = idents_connected(b);
    uint32_t need = j->spec.quorum > 1 ? j->spec.quorum : j->nchecks > 0 ? 2 : 1;
    if (!b->store_ok)
        snprintf(buf, len, "for the store: its last commit failed, so nothing is leased until it commits");
    else if (connected == 0)
        snprintf(buf, len, "for a worker: none is connected");
    else if (j->list_ticket)
        snprintf(buf, len, "for its shard list: the cost estimates that order its leases are being "
                 "built (seconds for a large job)");
    else if (ready == 0)
        snprintf(buf, len, "for a worker: all %u connected are quarantined or pause this job after "
                 "their errors", connected);
    else if (idents < need && j->spec.quorum > 1)
        snprintf(buf, len, "for %s identity: quorum %u, %u connected", nth[idents + 1], j->spec.quorum, idents);
    else if (idents < need)
        snprintf(buf, len, "for %s identity: a spot-check needs another worker than the first, %u connected",
                 nth[idents + 1], idents);
}
