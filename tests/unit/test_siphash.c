/* SipHash-2-4 against the reference vectors of the paper (key 00..0f, input 00..len-1). */
#include "t.h"
#include "siphash.h"

T_TEST(test_reference_vectors)
{
    uint8_t k[16], in[64];
    for (int i = 0; i < 16; i++) k[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++) in[i] = (uint8_t)i;
    uint64_t key[2] = { 0, 0 };
    for (int i = 7; i >= 0; i--) { key[0] = key[0] << 8 | k[i]; key[1] = key[1] << 8 | k[8 + i]; }
    T_EQ_U64(siphash24(key, in, 0), 0x726fdb47dd0e0e31ull);
    T_EQ_U64(siphash24(key, in, 1), 0x74f839c593dc67fdull);
    T_EQ_U64(siphash24(key, in, 8), 0x93f5f5799a932462ull);
    T_EQ_U64(siphash24(key, in, 15), 0xa129ca6149be45e5ull);
}

T_RUN_ALL()
