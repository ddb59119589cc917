/* The streaming hash tree of manifests (see merkle.h for the definition). */
#include "merkle.h"

#include <sodium.h>
#include <string.h>

/* Domain prefixes: a leaf's input can never equal a node's. */
enum { LEAF_PREFIX = 0x00, NODE_PREFIX = 0x01 };

void merkle_init(nq_merkle_t *m)
{
    memset(m, 0, sizeof *m);
}

void merkle_leaf_hash(const void *bytes, size_t len, uint8_t out[NQ_MERKLE_BYTES])
{
    crypto_generichash_state st;
    const uint8_t prefix = LEAF_PREFIX;
    crypto_generichash_init(&st, NULL, 0, NQ_MERKLE_BYTES);
    crypto_generichash_update(&st, &prefix, 1);
    crypto_generichash_update(&st, bytes, len);
    crypto_generichash_final(&st, out, NQ_MERKLE_BYTES);
}

void merkle_node_hash(const uint8_t left[NQ_MERKLE_BYTES], const uint8_t right[NQ_MERKLE_BYTES],
                      uint8_t out[NQ_MERKLE_BYTES])
{
    uint8_t in[1 + 2 * NQ_MERKLE_BYTES];
    in[0] = NODE_PREFIX;
    memcpy(in + 1, left, NQ_MERKLE_BYTES);
    memcpy(in + 1 + NQ_MERKLE_BYTES, right, NQ_MERKLE_BYTES);
    crypto_generichash(out, NQ_MERKLE_BYTES, in, sizeof in, NULL, 0);
}

/* Two complete trees of the same level become one of the next: the stack then holds at most one
   tree per level, in decreasing level order, as the binary digits of the leaf count. */
void merkle_add(nq_merkle_t *m, const void *bytes, size_t len)
{
    uint8_t h[NQ_MERKLE_BYTES];
    merkle_leaf_hash(bytes, len, h);
    int level = 0;
    while (m->depth > 0 && m->level[m->depth - 1] == level) {
        merkle_node_hash(m->hash[m->depth - 1], h, h);
        m->depth--;
        level++;
    }
    memcpy(m->hash[m->depth], h, NQ_MERKLE_BYTES);
    m->level[m->depth] = (uint8_t)level;
    m->depth++;
    m->leaves++;
}

/* Folding from the right is the promotion rule: the smaller trees on the right are the odd
   nodes that the level-by-level definition carries up until they meet a partner. */
int merkle_root(const nq_merkle_t *m, uint8_t out[NQ_MERKLE_BYTES])
{
    if (m->depth == 0)
        return -1;
    uint8_t h[NQ_MERKLE_BYTES];
    memcpy(h, m->hash[m->depth - 1], NQ_MERKLE_BYTES);
    for (int i = m->depth - 2; i >= 0; i--)
        merkle_node_hash(m->hash[i], h, h);
    memcpy(out, h, NQ_MERKLE_BYTES);
    return 0;
}

void merkle_hex(const uint8_t h[NQ_MERKLE_BYTES], char out[NQ_MERKLE_HEX + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < NQ_MERKLE_BYTES; i++) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    out[NQ_MERKLE_HEX] = '\0';
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int merkle_parse_hex(const char *s, size_t len, uint8_t out[NQ_MERKLE_BYTES])
{
    if (len != NQ_MERKLE_HEX)
        return -1;
    for (int i = 0; i < NQ_MERKLE_BYTES; i++) {
        int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}
