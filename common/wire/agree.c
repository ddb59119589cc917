/*
 * The agreement relation between results (agree.h).
 */
#include "agree.h"

#include <sodium.h>
#include <string.h>

/* 64 hex digits into 32 bytes; anything else leaves the digest zero (no solution). */
static void digest_hex(const char *hex, uint8_t out[NQ_ANSWER_DIGEST])
{
    memset(out, 0, NQ_ANSWER_DIGEST);
    size_t got = 0;
    if (!hex || strlen(hex) != 2 * NQ_ANSWER_DIGEST ||
        sodium_hex2bin(out, NQ_ANSWER_DIGEST, hex, strlen(hex), NULL, &got, NULL) != 0 ||
        got != NQ_ANSWER_DIGEST)
        memset(out, 0, NQ_ANSWER_DIGEST);
}

void nq_answer_of(const nq_result_t *r, const char *sol_hash, nq_answer_t *a)
{
    memset(a, 0, sizeof *a);
    a->kind = r->kind;
    a->status = r->status;
    a->res13 = r->res13;
    a->res15 = r->res15;
    a->total = r->total;
    a->unique = r->unique;
    a->nodes = r->nodes;
    a->cpu_nodes = r->kind == NQ_KIND_COUNT && r->nodes_kind == NQ_NODES_CPU;
    if (r->kind == NQ_KIND_ENUMERATE)   /* an empty payload (no solutions) hashes too: not "none" */
        crypto_generichash(a->digest, NQ_ANSWER_DIGEST, r->payload, r->payload_len, NULL, 0);
    else if (r->kind == NQ_KIND_SOLVE)
        digest_hex(sol_hash, a->digest);
}

int nq_answer_same(const nq_answer_t *a, const nq_answer_t *b)
{
    return a->kind == b->kind && a->status == b->status && a->total == b->total &&
           a->unique == b->unique && a->res13 == b->res13 && a->res15 == b->res15 &&
           memcmp(a->digest, b->digest, NQ_ANSWER_DIGEST) == 0;
}

int nq_answer_nodes_comparable(const nq_answer_t *a, const nq_answer_t *b)
{
    return a->cpu_nodes && b->cpu_nodes;
}

int nq_answer_compare(const nq_answer_t *a, const nq_answer_t *b)
{
    if (!nq_answer_same(a, b))
        return NQ_AGREE_NOT;
    return nq_answer_nodes_comparable(a, b) && a->nodes != b->nodes ? NQ_AGREE_NODES : NQ_AGREE;
}
