/*
 * libFuzzer target over the broker's checks of an enumerate RESULT, the payload that the
 * broker unpacks itself (see tests/fuzz/README.md). Input: byte 0 picks n (1..16), bytes
 * 1..8 are the claimed total (little-endian), the rest is the payload. A total that does
 * not match the payload's length must be refused before any solution is unpacked: a claim
 * of 2^62+1 solutions with a 4-byte payload once made total * per wrap around and the
 * unpacker read past the payload (ASan catches a repeat at once).
 */
#include "fuzz.h"
#include "broker_impl.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    nq_log_set_level(NQ_LOG_OFF);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9)
        return 0;
    nq_result_t r;
    memset(&r, 0, sizeof r);
    uint64_t n = 1 + data[0] % 16;
    for (int i = 0; i < 8; i++)
        r.total |= (uint64_t)data[1 + i] << (8 * i);
    r.kind = NQ_KIND_ENUMERATE;
    r.payload_len = size - 9;
    uint8_t *copy = malloc(r.payload_len ? r.payload_len : 1);   /* exact size: ASan sees overreads */
    memcpy(copy, data + 9, r.payload_len);
    r.payload = copy;
    char why[200] = "";
    int rc = result_check_enumerate(&r, n, why, sizeof why);
    if (rc != 0 && why[0] == '\0') {
        fprintf(stderr, "fuzz_result: refused without a reason\n");
        abort();
    }
    if (rc == 0 && r.total * ((n + 1) / 2) != r.payload_len) {
        fprintf(stderr, "fuzz_result: accepted %llu solutions in %zu bytes\n", (unsigned long long)r.total,
                r.payload_len);
        abort();
    }
    free(copy);
    return 0;
}
