/* SIGINT/SIGTERM set one flag that every long-running loop polls. */
#ifndef NQ_SIGNALS_H
#define NQ_SIGNALS_H

#include <stdatomic.h>

extern atomic_int nq_stop;        /* non-zero once a stop signal arrived */
extern atomic_int nq_stop_signal; /* which one */
void signals_install(void);

#endif
