/*
 * Waking a loop that sleeps in zmq_poll, from another thread. The broker and
 * the worker stop when a flag is set; a signal interrupts their poll at once,
 * but `nq run` stops its threads with the flag alone, and a poll that only
 * wakes every 50 ms to look made each local run 50-100 ms longer. Each loop
 * polls an inproc PULL socket; wake_poke sends it one empty message.
 */
#ifndef NQ_WAKE_H
#define NQ_WAKE_H

/* Sends one empty message to the inproc PULL socket bound at ep (ZeroMQ context ctx). */
void wake_poke(void *ctx, const char *ep);

#endif
