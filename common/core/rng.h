/*
 * The project's PRNG: splitmix64 to seed, xoshiro256** to draw. Deterministic
 * on every platform, so (n, seed) names the same run everywhere.
 */
#ifndef NQ_RNG_H
#define NQ_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } nq_rng_t;

static inline uint64_t rng_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seeds from (seed, stream) so different uses of one seed do not share draws. */
static inline void rng_init(nq_rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix64(&x);
}

static inline uint64_t rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(nq_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, bound) without modulo bias (Lemire's method). bound > 0. */
static inline uint64_t rng_below(nq_rng_t *r, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)rng_next(r) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t t = -bound % bound;
        while (lo < t) {
            m = (unsigned __int128)rng_next(r) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* a = a uniform random permutation of 0..n-1 (Fisher-Yates from the top: the draws that
   fix every solver's board for a seed, so their order must not change). */
static inline void rng_permutation(nq_rng_t *r, uint32_t *a, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        a[i] = (uint32_t)i;
    for (uint64_t i = n; i-- > 1;) {
        uint64_t j = rng_below(r, i + 1);
        uint32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

#endif
