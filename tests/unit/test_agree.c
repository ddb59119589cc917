/*
 * The agreement relation (common/wire/agree.c): an equivalence on the answer, with CPU nodes a
 * dispute apart; enumerate payloads and solve solutions compared by BLAKE2b, not a short hash.
 */
#include "t.h"
#include "agree.h"

static nq_result_t count(uint64_t total, uint64_t nodes, int kind)
{
    nq_result_t r;
    memset(&r, 0, sizeof r);
    r.kind = NQ_KIND_COUNT;
    r.total = total;
    r.unique = total / 8;
    r.res13 = (uint8_t)(total % 13);
    r.res15 = (uint8_t)(total % 15);
    r.nodes = nodes;
    r.nodes_kind = (uint8_t)kind;
    return r;
}

static int cmp(const nq_result_t *x, const nq_result_t *y)
{
    nq_answer_t a, b;
    nq_answer_of(x, NULL, &a);
    nq_answer_of(y, NULL, &b);
    return nq_answer_compare(&a, &b);
}

T_TEST(test_counts_and_nodes)
{
    nq_result_t cpu = count(724, 100, NQ_NODES_CPU), cpu1 = count(724, 101, NQ_NODES_CPU);
    nq_result_t gpu = count(724, 7, NQ_NODES_GPU_FAST), gpu2 = count(724, 8, NQ_NODES_GPU_FAST);
    nq_result_t wrong = count(725, 100, NQ_NODES_CPU);
    T_CHECK(cmp(&cpu, &cpu) == NQ_AGREE);
    T_CHECK(cmp(&cpu, &cpu1) == NQ_AGREE_NODES);
    T_CHECK(cmp(&cpu, &gpu) == NQ_AGREE);
    T_CHECK(cmp(&gpu, &gpu2) == NQ_AGREE);
    T_CHECK(cmp(&cpu, &wrong) == NQ_AGREE_NOT);
    wrong = cpu;
    wrong.unique++;
    T_CHECK(cmp(&cpu, &wrong) == NQ_AGREE_NOT);
    wrong = cpu;
    wrong.status = NQ_RES_NOTFOUND;
    T_CHECK(cmp(&cpu, &wrong) == NQ_AGREE_NOT);
}

/* "same" is an equivalence, and the case that broke transitivity (a CPU liar, a GPU vote, an
   honest CPU count) is the same answer with a nodes dispute, never a chain of agreements. */
T_TEST(test_same_is_transitive_where_nodes_were_not)
{
    nq_result_t liar = count(724, 101, NQ_NODES_CPU), gpu = count(724, 7, NQ_NODES_GPU_FAST);
    nq_result_t honest = count(724, 100, NQ_NODES_CPU);
    nq_answer_t a, b, c;
    nq_answer_of(&liar, NULL, &a);
    nq_answer_of(&gpu, NULL, &b);
    nq_answer_of(&honest, NULL, &c);
    T_CHECK(nq_answer_same(&a, &b) && nq_answer_same(&b, &c) && nq_answer_same(&a, &c));
    T_CHECK(nq_answer_compare(&a, &c) == NQ_AGREE_NODES);
    T_CHECK(!nq_answer_nodes_comparable(&a, &b));
}

/* Two payloads that a 64-bit FNV-1a could be made to collide on differ here in any byte. */
T_TEST(test_enumerate_payload_by_digest)
{
    uint8_t p1[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, p2[10];
    memcpy(p2, p1, sizeof p2);
    nq_result_t x, y;
    memset(&x, 0, sizeof x);
    x.kind = NQ_KIND_ENUMERATE;
    x.total = 2;
    x.payload = p1;
    x.payload_len = sizeof p1;
    y = x;
    y.payload = p2;
    T_CHECK(cmp(&x, &y) == NQ_AGREE);
    for (size_t i = 0; i < sizeof p2; i++) {
        p2[i] ^= 0x80;
        T_CHECK(cmp(&x, &y) == NQ_AGREE_NOT);
        p2[i] ^= 0x80;
    }
    y.payload_len = 0;                  /* no solutions is an answer too, unlike a missing one */
    y.total = 2;
    T_CHECK(cmp(&x, &y) == NQ_AGREE_NOT);
}

T_TEST(test_solve_by_solution_hash)
{
    nq_result_t r;
    memset(&r, 0, sizeof r);
    r.kind = NQ_KIND_SOLVE;
    const char *h1 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const char *h2 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefe";
    nq_answer_t a, b;
    nq_answer_of(&r, h1, &a);
    nq_answer_of(&r, h1, &b);
    T_CHECK(nq_answer_compare(&a, &b) == NQ_AGREE);
    nq_answer_of(&r, h2, &b);
    T_CHECK(nq_answer_compare(&a, &b) == NQ_AGREE_NOT);
    nq_answer_of(&r, "", &b);
    T_CHECK(nq_answer_compare(&a, &b) == NQ_AGREE_NOT);
}

T_RUN_ALL()
