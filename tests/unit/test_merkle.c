/*
 * The manifest hash tree: known roots (computed independently with Python's hashlib.blake2b over
 * the definition in merkle.h), the streaming builder against the level-by-level definition, and
 * the tree's sensitivity to every leaf and to the leaf order.
 */
#include "t.h"
#include "merkle.h"

/* The definition, level by level, over leaves "0", "1", ... or given strings. */
static void batch_root(const char *const *leaves, size_t n, uint8_t out[NQ_MERKLE_BYTES])
{
    uint8_t (*lvl)[NQ_MERKLE_BYTES] = malloc(n * sizeof *lvl);
    for (size_t i = 0; i < n; i++)
        merkle_leaf_hash(leaves[i], strlen(leaves[i]), lvl[i]);
    while (n > 1) {
        size_t k = 0;
        for (size_t i = 0; i + 1 < n; i += 2)
            merkle_node_hash(lvl[i], lvl[i + 1], lvl[k++]);
        if (n % 2)
            memcpy(lvl[k++], lvl[n - 1], NQ_MERKLE_BYTES);   /* odd node promoted */
        n = k;
    }
    memcpy(out, lvl[0], NQ_MERKLE_BYTES);
    free(lvl);
}

static void stream_root(const char *const *leaves, size_t n, char hex[NQ_MERKLE_HEX + 1])
{
    nq_merkle_t m;
    uint8_t r[NQ_MERKLE_BYTES];
    merkle_init(&m);
    for (size_t i = 0; i < n; i++)
        merkle_add(&m, leaves[i], strlen(leaves[i]));
    T_CHECK(merkle_root(&m, r) == 0);
    merkle_hex(r, hex);
}

static const char *const ABCDE[] = { "a", "b", "c", "d", "e" };

T_TEST(test_known_roots_1_2_3_5_leaves)
{
    char hex[NQ_MERKLE_HEX + 1];
    stream_root(ABCDE, 1, hex);
    T_EQ_STR(hex, "7234082e1dd0b5ec0acd71875d61c9f374af30c100bc4de7aa4eb3f15bbed686");
    stream_root(ABCDE, 2, hex);
    T_EQ_STR(hex, "ee616625a590167bc4b3dc703ab4f3f2ddecbee6b9d05fee9281f02046e6082e");
    stream_root(ABCDE, 3, hex);
    T_EQ_STR(hex, "17321db51c1ef3ec1f77e271aa300b4e5c6091708bcba37e46025774a26142ee");
    stream_root(ABCDE, 5, hex);
    T_EQ_STR(hex, "57d36622e3f900dadd327fb108b62e282cb8f65225ff24749df78d09176c1d0d");
}

T_TEST(test_no_leaves_has_no_root)
{
    nq_merkle_t m;
    uint8_t r[NQ_MERKLE_BYTES];
    merkle_init(&m);
    T_CHECK(merkle_root(&m, r) == -1);
}

static char **numbered(size_t n)
{
    char **v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = malloc(32);
        snprintf(v[i], 24, "%zu", i);
    }
    return v;
}

static void numbered_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

T_TEST(test_streaming_equals_level_by_level_for_1_to_300_leaves)
{
    char **v = numbered(300);
    for (size_t n = 1; n <= 300; n++) {
        uint8_t b[NQ_MERKLE_BYTES];
        char bh[NQ_MERKLE_HEX + 1], sh[NQ_MERKLE_HEX + 1];
        batch_root((const char *const *)v, n, b);
        merkle_hex(b, bh);
        stream_root((const char *const *)v, n, sh);
        T_EQ_STR(sh, bh);
    }
    numbered_free(v, 300);
}

T_TEST(test_changing_any_leaf_changes_the_root)
{
    enum { N = 37 };
    char **v = numbered(N), ref[NQ_MERKLE_HEX + 1], hex[NQ_MERKLE_HEX + 1];
    stream_root((const char *const *)v, N, ref);
    for (size_t i = 0; i < N; i++) {
        char keep[24];
        memcpy(keep, v[i], sizeof keep);
        snprintf(v[i], 32, "x%s", keep);
        stream_root((const char *const *)v, N, hex);
        T_CHECK(strcmp(hex, ref) != 0);
        memcpy(v[i], keep, sizeof keep);
    }
    stream_root((const char *const *)v, N, hex);
    T_EQ_STR(hex, ref);
    numbered_free(v, N);
}

T_TEST(test_order_duplicates_and_a_dropped_leaf_change_the_root)
{
    static const char *const swapped[] = { "b", "a", "c" }, *const dup[] = { "a", "b", "c", "c" };
    char ref[NQ_MERKLE_HEX + 1], hex[NQ_MERKLE_HEX + 1];
    stream_root(ABCDE, 3, ref);
    stream_root(swapped, 3, hex);
    T_CHECK(strcmp(hex, ref) != 0);
    stream_root(dup, 4, hex);          /* duplicating the odd node would have made these equal */
    T_CHECK(strcmp(hex, ref) != 0);
    stream_root(ABCDE, 2, hex);
    T_CHECK(strcmp(hex, ref) != 0);
}

T_TEST(test_hex_round_trip_and_strict_parse)
{
    uint8_t h[NQ_MERKLE_BYTES], back[NQ_MERKLE_BYTES];
    char hex[NQ_MERKLE_HEX + 1];
    for (int i = 0; i < NQ_MERKLE_BYTES; i++)
        h[i] = (uint8_t)(i * 37 + 5);
    merkle_hex(h, hex);
    T_CHECK(merkle_parse_hex(hex, strlen(hex), back) == 0 && memcmp(h, back, sizeof h) == 0);
    T_CHECK(merkle_parse_hex(hex, strlen(hex) - 1, back) == -1);
    hex[10] = 'A';                     /* uppercase is not the canonical form */
    T_CHECK(merkle_parse_hex(hex, strlen(hex), back) == -1);
    hex[10] = 'g';
    T_CHECK(merkle_parse_hex(hex, strlen(hex), back) == -1);
}

T_RUN_ALL()
