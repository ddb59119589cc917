/* Filling a caller's error buffer, and strict numbers: used by every layer. */
#include "errf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int nq_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Digits only, overflow-checked. */
int nq_parse_digits(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 20)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int nq_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v, e;
    if (!s)
        return -1;
    const char *x = strpbrk(s, "eE");
    if (x) {
        if (nq_parse_digits(s, (size_t)(x - s), &v) || nq_parse_digits(x + 1, strlen(x + 1), &e) || e > 19)
            return -1;
        while (e--) {
            if (v > UINT64_MAX / 10)
                return -1;
            v *= 10;
        }
    } else if (nq_parse_digits(s, strlen(s), &v)) {
        return -1;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
