/*
 * libFuzzer target over the wire protocol decoder (see tests/fuzz/README.md).
 *
 * Properties checked on every input, beyond "no crash, no leak, no UB":
 *   - a rejected frame always comes with a reason;
 *   - a decoded frame re-encodes (the decoder never accepts what the encoder
 *     would refuse, i.e. every decoded field is in range), the re-encoded bytes
 *     decode again, and encoding that gives the same bytes (a fixed point).
 */
#include "fuzz.h"
#include "proto.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, const nq_msg_t *m, const char *err)
{
    fprintf(stderr, "fuzz_proto: %s (type %s): %s\n", what, proto_type_name(m->type), err);
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    nq_log_set_level(NQ_LOG_OFF);   /* an encode refusal aborts below anyway */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nq_msg_t a, b;
    char err[256];
    if (proto_decode(data, size, &a, err, sizeof err) != 0) {
        if (err[0] == '\0')
            fail("rejected without a reason", &a, "");
        return 0;
    }
    msgpack_sbuffer s1, s2;
    msgpack_sbuffer_init(&s1);
    msgpack_sbuffer_init(&s2);
    if (proto_encode(&a, &s1) != 0)
        fail("decoded message does not re-encode", &a, "");
    if (proto_decode(s1.data, s1.size, &b, err, sizeof err) != 0)
        fail("re-encoded message rejected", &a, err);
    if (proto_encode(&b, &s2) != 0 || s1.size != s2.size || memcmp(s1.data, s2.data, s1.size) != 0)
        fail("second encoding differs from the first", &b, "");
    proto_msg_free(&a);
    proto_msg_free(&b);
    msgpack_sbuffer_destroy(&s1);
    msgpack_sbuffer_destroy(&s2);
    return 0;
}
