/* One way to fill a caller's error buffer and fail: `return nq_errf(err, errlen, "...", ...);` */
#ifndef NQ_ERRF_H
#define NQ_ERRF_H

#include <stddef.h>

/* Formats into err (when err and errlen are set) and returns -1. */
int nq_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
