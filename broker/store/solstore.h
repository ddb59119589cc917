/*
 * Where verified solve solutions live: small permutations inline in the DB
 * (as uint32 little-endian), large ones in a file beside the DB
 * (<db>.solutions/<hash>.nqsol, nq's binary solution format), named by a
 * content hash so the same solution found twice is stored once.
 */
#ifndef NQ_SOLSTORE_H
#define NQ_SOLSTORE_H

#include <stddef.h>
#include <stdint.h>

#define NQ_SOL_INLINE_MAX 100000ull    /* n up to this: inline in the DB */

/* 128-bit content hash of a permutation, as 32 hex digits. */
void solstore_hash(const uint32_t *cols, uint64_t n, char out[33]);
/* Hashes; for large n writes the file (unless already there) and sets path (relative to the DB's
   folder); for small n sets path to "". 0, or -1 with why. */
int solstore_save(const char *db_path, const uint32_t *cols, uint64_t n, char *hash, size_t hashlen,
                  char *path, size_t pathlen, char *why, size_t whylen);
/* malloc'd uint32 little-endian copy (4n bytes). */
uint8_t *solstore_pack(const uint32_t *cols, uint64_t n);
/* The folder of the DB file, for resolving stored paths. */
void solstore_dir(const char *db_path, char *out, size_t outlen);

#endif
