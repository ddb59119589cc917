/* One way to fill a caller's error buffer and fail (`return nq_errf(err, errlen, "...", ...);`),
   and strict number parsing, for every layer. */
#ifndef NQ_ERRF_H
#define NQ_ERRF_H

#include <stddef.h>
#include <stdint.h>

/* Formats into err (when err and errlen are set) and returns -1. */
int nq_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Exactly len decimal digits (1..20, no sign, no space) that fit 64 bits: 0 ok, -1 bad. */
int nq_parse_digits(const char *s, size_t len, uint64_t *out);
/* A decimal number (or digits followed by eK, e.g. 1e9) from min to max: 0 ok, -1 bad. */
int nq_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
