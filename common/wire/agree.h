/*
 * Whether two results say the same thing: the one relation every path that compares results uses
 * (quorum votes, spot-checks, tail copies, the store's later results), so that "agrees" cannot
 * mean three things in three places.
 *
 * nq_answer_same is an equivalence (equality of the fields it compares): status, kind, total,
 * unique, residues and a BLAKE2b digest of what a payload carries (an enumerate's solutions, a
 * solve's permutation). Node counts are not in it, since only the CPU kernels' compare (a fast GPU
 * count's are its own): two answers that are the same but whose nodes both are the CPU kernels'
 * and differ are a nodes dispute (NQ_AGREE_NODES), which only another CPU count can settle
 * (broker/verdict.c). Folding nodes into "same" made it intransitive: a liar's CPU nodes + 1 and
 * an honest CPU count each "agreed" with a GPU vote, and the majority paired the liar with it.
 */
#ifndef NQ_AGREE_H
#define NQ_AGREE_H

#include <stdint.h>

#include "proto.h"

#define NQ_ANSWER_DIGEST 32            /* BLAKE2b-256 */

typedef struct {
    uint8_t kind, status, res13, res15;
    uint8_t cpu_nodes;                 /* 1: nodes are the CPU kernels' count of a count shard */
    uint64_t total, unique, nodes;
    uint8_t digest[NQ_ANSWER_DIGEST];  /* of the payload's meaning; all zero: it carries none */
} nq_answer_t;

enum { NQ_AGREE = 0, NQ_AGREE_NOT = 1, NQ_AGREE_NODES = 2 };

/* r's answer. An enumerate's digest is over its payload; a solve's is its solution's hash
   (solstore.h, 64 hex digits: sol_hash), or none when it found nothing. */
void nq_answer_of(const nq_result_t *r, const char *sol_hash, nq_answer_t *a);
/* The same answer: the equivalence above. */
int nq_answer_same(const nq_answer_t *a, const nq_answer_t *b);
/* 1 when both carry CPU nodes: their node counts must then be equal too. */
int nq_answer_nodes_comparable(const nq_answer_t *a, const nq_answer_t *b);
/* NQ_AGREE, NQ_AGREE_NOT (different answers), or NQ_AGREE_NODES (the same answer, differing
   comparable nodes: a dispute, never a tie-break). */
int nq_answer_compare(const nq_answer_t *a, const nq_answer_t *b);

#endif
