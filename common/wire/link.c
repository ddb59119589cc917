/* The round trip each side of a worker's link measures, and the waits derived from it (link.h). */
#include "link.h"

void link_sample(nq_link_t *l, double rtt)
{
    if (!(rtt >= 0) || rtt > 10 * LINK_RTT_CEIL_S)
        return;                         /* a clock step or a token from another session */
    if (l->samples++ == 0) {
        l->srtt = rtt;
        l->rttvar = rtt / 2;
        return;
    }
    double dev = l->srtt > rtt ? l->srtt - rtt : rtt - l->srtt;
    l->rttvar = 0.75 * l->rttvar + 0.25 * dev;
    l->srtt = 0.875 * l->srtt + 0.125 * rtt;
}

double link_allowance(const nq_link_t *l)
{
    if (l->samples == 0)
        return LINK_RTT_ASSUMED_S;
    double a = l->srtt + 4 * l->rttvar;
    return a < LINK_RTT_CEIL_S ? a : LINK_RTT_CEIL_S;
}

double link_window(const nq_link_t *l, double hb_s, uint32_t liveness)
{
    return hb_s * liveness + link_allowance(l);
}

double link_handshake_wait(const nq_link_t *l, double hb_s, uint32_t liveness)
{
    double rtt = l->samples ? l->srtt : LINK_RTT_ASSUMED_S, add = LINK_HANDSHAKE_RTTS * rtt;
    return hb_s * liveness + (add < LINK_RTT_CEIL_S ? add : LINK_RTT_CEIL_S);
}
