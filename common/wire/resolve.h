/*
 * Whether the host of a tcp:// endpoint resolves. libzmq retries an unresolvable host for ever
 * without a word (its monitor shows only "retried"), so a worker given the README's
 * placeholder tcp://BROKER:7555 looked like one whose broker was silent.
 */
#ifndef NQ_RESOLVE_H
#define NQ_RESOLVE_H

#include <stddef.h>

/* 0 when ep is not tcp://, or its host is an address or a name that resolves now; else -1 with
   err saying which host did not resolve and why. */
int resolve_check(const char *ep, char *err, size_t errlen);

#endif
