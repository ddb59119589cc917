/*
 * Log lines for what hostile peers send, at a bounded rate: one line per hostile frame would let
 * a flood fill the disk. At most 10 lines a second, then one line with the number left out.
 */
#include "broker_impl.h"
#include "log.h"

int ratelog_allow(nq_broker_t *b)
{
    double now = b->now;
    if (now >= b->log_quiet_until) {
        if (b->log_suppressed)
            nq_log(NQ_LOG_WARN, "log.suppressed", "lines=%llu reason=\"hostile frames past 10 lines a "
                   "second\"", (unsigned long long)b->log_suppressed);
        b->log_quiet_until = now + 1;
        b->log_burst = 0;
        b->log_suppressed = 0;
    }
    if (b->log_burst < 10) {
        b->log_burst++;
        return 1;
    }
    b->log_suppressed++;
    return 0;
}
