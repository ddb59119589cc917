/*
 * Lease ids and proofs that only this broker can make. A lease id is a 32-bit
 * counter followed by a 32-bit SipHash tag over (job, shard, counter); the TASK
 * also carries a 64-bit proof, a SipHash over (job, shard, lease, identity of
 * the worker it was issued to). Both use a secret key kept in the DB's meta
 * table (the DB is created 0600), so they survive restarts: a late result from
 * before a restart or an expiry still verifies, when its sender is the identity
 * the lease was issued to. A RESULT or SOLPART for a lease this broker never
 * issued, or sent by anyone else, is refused before it can win the first-result
 * race, cast a vote or make us allocate.
 *
 * Guessing: 96 bits of MAC (tag and proof). At a million forged frames a second
 * for a year (2^45 tries) the chance of one hit is 2^-51; and a peer is
 * quarantined after its third forgery anyway.
 */
#include "broker_impl.h"
#include "errf.h"
#include "siphash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* The key as this file writes it: exactly 32 hex digits. sscanf alone took "1 2" for the key
   (1, 2), one anybody can guess, and quietly replaced a key it could not read. */
static int key_parse(const char *hex, uint64_t key[2])
{
    if (strlen(hex) != 32 || strspn(hex, "0123456789abcdefABCDEF") != 32)
        return -1;
    char half[17];
    for (int i = 0; i < 2; i++) {
        memcpy(half, hex + 16 * i, 16);
        half[16] = '\0';
        key[i] = strtoull(half, NULL, 16);
    }
    return 0;
}

int lease_id_init(nq_broker_t *b, char *err, size_t errlen)
{
    char hex[64];
    int rc = store_meta_get(b->store, "lease_key", hex, sizeof hex);
    if (rc == 0 && key_parse(hex, b->lease_key) == 0)
        goto counter;
    if (rc == 0 || rc == 2)
        return nq_errf(err, errlen, "%s: the lease key (table meta, key lease_key) is not 32 hex digits: "
                       "the DB was changed outside nq (delete that row to make a new key; leases out now are "
                       "then refused)", store_path(b->store));
    if (rc < 0)
        return nq_errf(err, errlen, "cannot read the lease key from the DB");
    if (getrandom(b->lease_key, sizeof b->lease_key, 0) != sizeof b->lease_key)
        return nq_errf(err, errlen, "no randomness for the lease key");
    snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, b->lease_key[0], b->lease_key[1]);
    if (store_meta_set(b->store, "lease_key", hex) != 0)
        return nq_errf(err, errlen, "cannot store the lease key in the DB");
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

uint64_t lease_id_ident_hash(const nq_broker_t *b, const char *ident)
{
    return siphash24(b->lease_key, ident, strlen(ident));
}

uint64_t lease_id_proof(const nq_broker_t *b, uint64_t job, uint64_t shard, uint64_t lease, uint64_t ident_hash)
{
    uint64_t in[5] = { job, shard, lease, ident_hash, 0x70726f6f66ull /* "proof": apart from tags */ };
    return siphash24(b->lease_key, in, sizeof in);
}

int lease_id_authentic(const nq_broker_t *b, uint64_t job, uint64_t shard, uint64_t lease, uint64_t proof,
                       uint64_t ident_hash)
{
    return (uint32_t)lease == tag(b, job, shard, (uint32_t)(lease >> 32)) &&
           proof == lease_id_proof(b, job, shard, lease, ident_hash);
}
