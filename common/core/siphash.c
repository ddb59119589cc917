/* SipHash-2-4 through libsodium (crypto_shorthash_siphash24), with nq's key and result as 64-bit
   words: the bytes are little-endian, as the specification reads them. */
#include "siphash.h"

#include <sodium.h>

static void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

uint64_t siphash24(const uint64_t key[2], const void *data, size_t len)
{
    uint8_t k[crypto_shorthash_siphash24_KEYBYTES], out[crypto_shorthash_siphash24_BYTES];
    store_le64(k, key[0]);
    store_le64(k + 8, key[1]);
    crypto_shorthash_siphash24(out, data, len, k);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | out[i];
    return v;
}
