/*
 * SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit MAC for short inputs, from libsodium.
 * The broker uses it to make lease ids unforgeable: a lease id carries a tag
 * over (job, shard, counter) under a secret only the broker knows.
 */
#ifndef NQ_SIPHASH_H
#define NQ_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const uint64_t key[2], const void *data, size_t len);

#endif
