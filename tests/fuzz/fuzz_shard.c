/*
 * libFuzzer target over the shard descriptor decoder: descriptors arrive from
 * the network inside TASK messages and from the DB, so shard_decode must
 * refuse every malformed one with a reason, and whatever it accepts must
 * re-encode to the very same bytes (it is canonical) and be countable.
 */
#include "fuzz.h"
#include "count.h"
#include "log.h"
#include "shard.h"

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
    nq_shard_desc_t d;
    char err[256] = "";
    if (shard_decode(data, size, &d, err, sizeof err) != 0) {
        if (!err[0]) {
            fprintf(stderr, "fuzz_shard: refused without a reason\n");
            abort();
        }
        return 0;
    }
    uint8_t again[512];
    size_t n = shard_encode(&d, again);
    if (n != size || memcmp(again, data, size) != 0) {
        fprintf(stderr, "fuzz_shard: accepted a descriptor that does not re-encode to itself\n");
        abort();
    }
    if (d.n <= 12) {                    /* small boards: counting it must work too */
        nq_count_result_t r;
        if (d.kind == 1 && count_shard(data, size, &r, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "fuzz_shard: accepted but not countable: %s\n", err);
            abort();
        }
    }
    return 0;
}
