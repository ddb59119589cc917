/*
 * A hash tree built in one pass over its leaves, for manifests that are too big
 * to hold (10^7 lines): O(log n) memory.
 *
 * Hash: BLAKE2b with 32-byte output (libsodium's crypto_generichash).
 *   leaf  = H(0x00 || bytes)
 *   node  = H(0x01 || left || right)
 * The prefixes keep a leaf from ever being read as a node (second-preimage
 * attacks on the tree shape). Leaves are paired left to right at every level;
 * an odd last node is promoted to the next level unchanged, not duplicated (a
 * duplicate would let two lists, [a b c] and [a b c c], share a root).
 *
 * Streaming: the tree over n leaves is the complete trees of the powers of two
 * in n's binary form, largest first, folded from the right. The builder keeps
 * those as a stack of (level, hash), merges equal levels as leaves arrive, and
 * folds the stack at the end; tests/unit/test_merkle.c checks that this equals
 * the level-by-level definition above.
 */
#ifndef NQ_MERKLE_H
#define NQ_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#define NQ_MERKLE_BYTES 32
#define NQ_MERKLE_HEX (2 * NQ_MERKLE_BYTES)
#define NQ_MERKLE_MAX_LEVELS 64        /* one entry per bit of the 64-bit leaf count */

typedef struct {
    uint8_t hash[NQ_MERKLE_MAX_LEVELS][NQ_MERKLE_BYTES];
    uint8_t level[NQ_MERKLE_MAX_LEVELS];
    int depth;                         /* entries on the stack */
    uint64_t leaves;
} nq_merkle_t;

void merkle_init(nq_merkle_t *m);
void merkle_leaf_hash(const void *bytes, size_t len, uint8_t out[NQ_MERKLE_BYTES]);
void merkle_node_hash(const uint8_t left[NQ_MERKLE_BYTES], const uint8_t right[NQ_MERKLE_BYTES],
                      uint8_t out[NQ_MERKLE_BYTES]);
/* Adds H(0x00 || bytes) as the next leaf. */
void merkle_add(nq_merkle_t *m, const void *bytes, size_t len);
/* The root over the leaves so far (the builder may go on); -1 when there are none. */
int merkle_root(const nq_merkle_t *m, uint8_t out[NQ_MERKLE_BYTES]);

/* Lowercase hex of a hash into out (NQ_MERKLE_HEX + 1 bytes); parse takes exactly that form. */
void merkle_hex(const uint8_t h[NQ_MERKLE_BYTES], char out[NQ_MERKLE_HEX + 1]);
int merkle_parse_hex(const char *s, size_t len, uint8_t out[NQ_MERKLE_BYTES]);

#endif
