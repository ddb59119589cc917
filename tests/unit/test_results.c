/* The broker's checks of what a worker sends (broker/results.c), on crafted results. */
#include "broker_impl.h"
#include "enumerate.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

/* total = 2^62 + 1 with a 4-byte payload: total * 4 wraps to 4 in 64 bits. The check must say
   no before one solution is unpacked (it used to read past the payload). */
T_TEST(test_enumerate_total_that_wraps)
{
    uint8_t *payload = malloc(4);               /* exact size: a sanitizer build sees an overread */
    memset(payload, 0x12, 4);
    nq_result_t r = { .kind = NQ_KIND_ENUMERATE, .total = (1ull << 62) + 1, .payload = payload, .payload_len = 4 };
    char why[200] = "";
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == -1);
    T_CHECK(strstr(why, "payload") != NULL);
    r.total = UINT64_MAX;
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == -1);
    r.total = 0;
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == -1);   /* bytes for no solution */
    free(payload);
}

/* The same check accepts an honest payload and refuses an invalid board or a wrong order. */
T_TEST(test_enumerate_payloads)
{
    static const uint8_t sol8[8] = { 0, 4, 7, 5, 2, 6, 1, 3 };   /* a solution of N=8 */
    uint8_t packed[4];
    enumerate_pack(sol8, 8, packed);
    nq_result_t r = { .kind = NQ_KIND_ENUMERATE, .total = 1, .payload = packed, .payload_len = 4 };
    char why[200] = "";
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == 0);
    uint8_t twice[8];
    memcpy(twice, packed, 4);
    memcpy(twice + 4, packed, 4);
    r.payload = twice;
    r.payload_len = 8;
    r.total = 2;
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == -1);   /* not strictly increasing */
    packed[0] ^= 0x11;
    r.payload = packed;
    r.payload_len = 4;
    r.total = 1;
    T_CHECK(result_check_enumerate(&r, 8, why, sizeof why) == -1);   /* not a solution */
    T_CHECK(result_check_enumerate(&r, 17, why, sizeof why) == -1);  /* no such board */
}

T_RUN_ALL()
