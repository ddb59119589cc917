/*
 * Lease ids that only this broker can make. A lease id is a 32-bit counter
 * followed by a 32-bit SipHash tag over (job, shard, counter) under a secret
 * key kept in the DB's meta table, so it survives restarts: a late result
 * from before a restart still verifies, while a RESULT or SOLPART for a
 * lease this broker never issued (forged, or garbage that happens to decode)
 * is refused before it can win the first-result race or make us allocate.
 */
#include "broker_impl.h"
#include "siphash.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/random.h>

int lease_id_init(nq_broker_t *b, char *err, size_t errlen)
{
    char hex[64];
    int rc = store_meta_get(b->store, "lease_key", hex, sizeof hex);
    if (rc == 0 && sscanf(hex, "%16" SCNx64 "%16" SCNx64, &b->lease_key[0], &b->lease_key[1]) == 2)
        goto counter;
    if (rc < 0)
        return snprintf(err, errlen, "cannot read the lease key from the DB"), -1;
    if (getrandom(b->lease_key, sizeof b->lease_key, 0) != sizeof b->lease_key)
        return snprintf(err, errlen, "no randomness for the lease key"), -1;
    snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, b->lease_key[0], b->lease_key[1]);
    if (store_meta_set(b->store, "lease_key", hex) != 0)
        return snprintf(err, errlen, "cannot store the lease key in the DB"), -1;
counter:
    b->lease_counter = (uint32_t)(b->nonce >> 32);   /* a fresh range after every start */
    return 0;
}

static uint32_t tag(const nq_broker_t *b, uint64_t job, uint64_t shard, uint32_t counter)
{
    uint64_t in[3] = { job, shard, counter };
    return (uint32_t)siphash24(b->lease_key, in, sizeof in);
}

uint64_t lease_id_new(nq_broker_t *b, uint64_t job, uint64_t shard)
{
    uint32_t c = ++b->lease_counter;
    return (uint64_t)c << 32 | tag(b, job, shard, c);
}

int lease_id_authentic(const nq_broker_t *b, uint64_t job, uint64_t shard, uint64_t lease)
{
    return (uint32_t)lease == tag(b, job, shard, (uint32_t)(lease >> 32));
}
