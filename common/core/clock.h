/* Clocks: monotonic seconds for timeouts and rates, wall seconds for what is stored. */
#ifndef NQ_CLOCK_H
#define NQ_CLOCK_H

#include <time.h>

static inline double nq_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline double nq_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
