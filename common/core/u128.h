/*
 * 128-bit unsigned job totals: A000170 passes 2^64 somewhere past N=27, so a
 * job sums its 64-bit shard results into a 128-bit counter. printf has no
 * conversion for __int128, hence these two helpers.
 */
#ifndef NQ_U128_H
#define NQ_U128_H

#include <stddef.h>
#include <string.h>

typedef unsigned __int128 nq_u128;

#define NQ_U128_MAX (~(nq_u128)0)

/* Decimal text of v into buf (39 digits at most + NUL); returns buf. */
static inline char *u128_to_str(nq_u128 v, char buf[40])
{
    char tmp[40];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (int j = 0; j < i; j++)
        buf[j] = tmp[i - 1 - j];
    buf[i] = '\0';
    return buf;
}

/* Room for u128_group's text: 39 digits, 12 commas and the NUL. */
#define NQ_U128_GROUPED 52

/* Decimal text of v with its digits grouped by three for people (4,968,057,848) into buf;
   returns buf. Text for programs (JSON, CSV, /metrics) stays plain: u128_to_str. */
static inline char *u128_group(nq_u128 v, char buf[NQ_U128_GROUPED])
{
    char d[40];
    size_t n = strlen(u128_to_str(v, d)), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            buf[k++] = ',';
        buf[k++] = d[i];
    }
    buf[k] = '\0';
    return buf;
}

/* Strict parse: decimal digits only, no sign or spaces, no overflow. 0 ok, -1 bad. */
static inline int u128_parse(const char *s, nq_u128 *out)
{
    nq_u128 v = 0;
    size_t len = s ? strlen(s) : 0;
    if (len == 0 || len > 39)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (NQ_U128_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* a += b; returns -1 (a unchanged) on overflow. */
static inline int u128_add_checked(nq_u128 *a, nq_u128 b)
{
    if (b > NQ_U128_MAX - *a)
        return -1;
    *a += b;
    return 0;
}

#endif
