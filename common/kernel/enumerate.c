/* Enumeration of all solutions, shard by shard, in canonical order. See enumerate.h. */
#include "enumerate.h"
#include "count_d4.h"
#include "count_search.h"
#include "nq.h"

#include <stdio.h>
#include <string.h>

int enumerate_shard(const uint8_t *spec, size_t len, int (*emit)(void *ud, const uint8_t *cols, int n),
                    void *ud, const nq_kernel_ctl_t *ctl, char *err, size_t errlen)
{
    nq_shard_desc_t d;
    nq_plan_t pl;
    uint64_t nodes;
    if (shard_decode(spec, len, &d, err, errlen))
        return -1;
    if (d.kind != NQ_KIND_ENUMERATE) {
        if (err && errlen)
            snprintf(err, errlen, "not an enumerate shard (kind %d)", d.kind);
        return -1;
    }
    plan_init(&pl, &d, 0);
    int rc = search_leaves(&pl, emit, ud, ctl, &nodes);
    if (rc == 0 || rc == 2)
        return rc;
    if (err && errlen)
        snprintf(err, errlen, "enumeration stopped by the consumer (%d)", rc);
    return -1;
}

size_t enumerate_pack(const uint8_t *cols, int n, uint8_t *out)
{
    size_t len = (size_t)(n + 1) / 2;
    memset(out, 0, len);
    for (int r = 0; r < n; r++)
        out[r / 2] |= (uint8_t)((cols[r] & 0x0f) << (r % 2 ? 4 : 0));
    return len;
}

void enumerate_unpack(const uint8_t *in, int n, uint8_t *cols)
{
    for (int r = 0; r < n; r++)
        cols[r] = (uint8_t)((in[r / 2] >> (r % 2 ? 4 : 0)) & 0x0f);
}

void enumerate_canonical(const uint8_t *cols, int n, uint8_t *out)
{
    uint8_t img[32];
    memcpy(out, cols, (size_t)n);
    for (int g = 1; g < NQ_D4_SIZE; g++) {
        d4_perm(g, n, cols, img);
        if (d4_cmp(img, out, n) < 0)
            memcpy(out, img, (size_t)n);
    }
}
