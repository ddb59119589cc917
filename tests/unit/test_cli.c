/* Strict number parsing: the base of every refused CLI input. */
#include "t.h"
#include "cli.h"
#include "audit.h"

T_TEST(test_parse_ok)
{
    uint64_t v = 0;
    T_CHECK(nq_parse_u64("17", 1, 32, &v) == 0); T_EQ_U64(v, 17);
    T_CHECK(nq_parse_u64("1e9", 4, 1000000000, &v) == 0); T_EQ_U64(v, 1000000000);
    T_CHECK(nq_parse_u64("18446744073709551615", 0, UINT64_MAX, &v) == 0); T_EQ_U64(v, UINT64_MAX);
}

T_TEST(test_parse_refused)
{
    uint64_t v = 0;
    const char *bad[] = { "", "abc", "-1", "+1", " 1", "1 ", "0x10", "1.5", "12a", "1e", "e9",
                          "18446744073709551616", "1e20", "99999999999999999999999", NULL };
    for (int i = 0; bad[i]; i++) {
        if (nq_parse_u64(bad[i], 0, UINT64_MAX, &v) == 0)
            fprintf(stderr, "  accepted '%s'\n", bad[i]);
        T_CHECK(nq_parse_u64(bad[i], 0, UINT64_MAX, &v) == -1);
    }
    T_CHECK(nq_parse_u64("0", 1, 32, &v) == -1);
    T_CHECK(nq_parse_u64("33", 1, 32, &v) == -1);
    T_CHECK(nq_parse_u64(NULL, 1, 32, &v) == -1);
}

/* 459 lines catch 1 % wrong with probability 0.99, and 458 do not; the share and the sample are
   each other's inverse. */
T_TEST(test_audit_power)
{
    T_EQ_U64(audit_power_sample(0.01), 459);
    T_CHECK(audit_power_share(459) <= 0.01 && audit_power_share(458) > 0.01);
    T_EQ_U64(audit_power_sample(0.5), 7);
    for (uint64_t k = 1; k < 5000; k += 37)
        T_EQ_U64(audit_power_sample(audit_power_share(k)), k);
    T_CHECK(audit_power_share(0) == 1.0);
}

T_RUN_ALL()
