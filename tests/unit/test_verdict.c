/*
 * The one vote (broker/verdict.c) as a table: each row is a shard's votes in arrival order, a
 * policy, and the outcome it must give. The three scenarios of a hostile review and the earlier
 * hostile ones are rows. Answers: T the true count, W a wrong total, Z a total of 0; CPU(n) and
 * GPU carry the CPU kernels' nodes n or the fast GPU kernel's own.
 */
#include "t.h"
#include "verdict.h"

#define TRUE_TOTAL 724                  /* N=10 */
#define TRUE_NODES 35539

#define ANSWER(t, cpu, n) { .kind = NQ_KIND_COUNT, .total = (t), .unique = (t) / 8, .res13 = (t) % 13, \
                           .res15 = (t) % 15, .cpu_nodes = (cpu), .nodes = (n) }

#define T(id)        { .who = (id), .a = ANSWER(TRUE_TOTAL, 1, TRUE_NODES) }
#define T_NODES1(id) { .who = (id), .a = ANSWER(TRUE_TOTAL, 1, TRUE_NODES + 1) }
#define T_GPU(id)    { .who = (id), .a = ANSWER(TRUE_TOTAL, 0, 12345) }
#define T_GPU2(id)   { .who = (id), .a = ANSWER(TRUE_TOTAL, 0, 999) }
#define W(id)        { .who = (id), .a = ANSWER(TRUE_TOTAL + 13 * 15, 1, TRUE_NODES) }
#define W2(id)       { .who = (id), .a = ANSWER(TRUE_TOTAL + 2 * 13 * 15, 1, TRUE_NODES) }
#define Z_GPU(id)    { .who = (id), .a = ANSWER(468, 0, 1) }

enum { MORE = VERDICT_MORE, DECIDED = VERDICT_DECIDED, DISPUTE = VERDICT_DISPUTE };

typedef struct {
    const char *name;
    verdict_vote_t v[VERDICT_MAX_VOTES];
    int n;
    verdict_policy_t p;
    int kind, winner, want_cpu;
    int flags[VERDICT_MAX_VOTES];      /* the flagged vote indexes, in order; -1 ends */
} row_t;

#define CHECK2 { 2, 4 }                 /* a spot-check or a tail copy: two identities agree */
#define QUORUM(q) { q, (q) + 2 }
#define NONE { -1 }

static const row_t ROWS[] = {
    { "one vote waits for a second identity", { T(1) }, 1, CHECK2, MORE, -1, 0, NONE },
    { "two identities agree", { T(1), T(2) }, 2, CHECK2, DECIDED, 0, 0, NONE },
    { "quorum 1: the first result decides", { W(1) }, 1, QUORUM(1), DECIDED, 0, 0, NONE },
    { "two identities differ: another vote", { T(1), W(2) }, 2, CHECK2, MORE, -1, 0, NONE },
    { "a third identity settles it for the check", { W(1), T(2), T(3) }, 3, CHECK2, DECIDED, 1, 0,
      { 0, -1 } },
    { "a third identity settles it for the first", { T(1), W(2), T(3) }, 3, CHECK2, DECIDED, 0, 0,
      { 1, -1 } },
    { "four answers: a dispute, nobody flagged", { T(1), W(2), W2(3), Z_GPU(4) }, 4, CHECK2, DISPUTE, -1, 0,
      NONE },
    { "two against two: a dispute, never arrival order", { T(1), W(2), T(3), W(4) }, 4, CHECK2, DISPUTE, -1,
      0, NONE },
    /* rule 1: an identity votes once, whatever it sends and under whatever worker id */
    { "one identity twice is one vote", { W(1), W(1) }, 2, CHECK2, MORE, -1, 0, NONE },
    { "one identity's second vote does not break a tie", { T(1), W(2), W(2) }, 3, CHECK2, MORE, -1, 0, NONE },
    { "one key, many worker ids, under quorum 3", { W(7), W(7), W(7), T(1), T(2) }, 5, QUORUM(3), MORE, -1, 0,
      NONE },
    { "quorum 3 reached past a dissent", { T(1), W(2), T(3), T(4) }, 4, QUORUM(3), DECIDED, 0, 0, { 1, -1 } },
    { "quorum 2 at Q+2 votes without agreement: a dispute", { T(1), W(2), W2(3), Z_GPU(4) }, 4, QUORUM(2),
      DISPUTE, -1, 0, NONE },
    /* scenario 3: a liar with the true totals and CPU nodes + 1, an honest CPU checker, an honest
       fast-GPU worker. The GPU vote agrees with both on the answer and cannot compare nodes: it
       must never pair with the liar against the checker. */
    { "nodes differ between CPU votes: a dispute that wants a CPU vote", { T_NODES1(1), T(2) }, 2, CHECK2,
      MORE, -1, 1, NONE },
    { "a GPU vote never settles a nodes dispute", { T_NODES1(1), T(2), T_GPU(3) }, 3, CHECK2, MORE, -1, 1,
      NONE },
    { "a GPU vote never outvotes the honest CPU checker", { T(2), T_NODES1(1), T_GPU(3) }, 3, CHECK2, MORE,
      -1, 1, NONE },
    { "a second CPU vote settles nodes: the liar is flagged", { T_NODES1(1), T(2), T_GPU(3), T(4) }, 4,
      CHECK2, DECIDED, 1, 0, { 0, -1 } },
    { "a CPU vote on the checker's side, in any order", { T(2), T_NODES1(1), T(4) }, 3, CHECK2, DECIDED, 0, 0,
      { 1, -1 } },
    { "an unsettled nodes dispute at the limit: nobody flagged",
      { T_NODES1(1), T(2), T_GPU(3), T_GPU2(4) }, 4, CHECK2, DISPUTE, -1, 0, NONE },
    { "a GPU vote agrees with a CPU one on the answer", { T(1), T_GPU(2) }, 2, CHECK2, DECIDED, 0, 0, NONE },
    { "two GPU votes agree whatever their nodes", { T_GPU(1), T_GPU2(2) }, 2, CHECK2, DECIDED, 0, 0, NONE },
    { "quorum 2 with a CPU liar and a GPU vote: not decided", { T_NODES1(1), T_GPU(2), T(3) }, 3, QUORUM(2),
      MORE, -1, 1, NONE },
    /* scenario 2: a tail copy that answers at once with total 0 and GPU nodes; the honest holder */
    { "a copy's lie against the holder: another vote, nobody flagged", { Z_GPU(9), T(1) }, 2, CHECK2, MORE,
      -1, 0, NONE },
    { "a third identity sides with the holder: the copy is flagged", { Z_GPU(9), T(1), T(3) }, 3, CHECK2,
      DECIDED, 1, 0, { 0, -1 } },
    { "the copy liar answering twice is still one vote", { Z_GPU(9), T(1), Z_GPU(9) }, 3, CHECK2, MORE, -1, 0,
      NONE },
};

static void check_row(const row_t *r)
{
    verdict_t out;
    verdict_decide(r->v, r->n, &r->p, &out);
    int nflags = 0;
    while (nflags < VERDICT_MAX_VOTES && r->flags[nflags] >= 0)
        nflags++;
    int ok = (int)out.kind == r->kind && out.want_cpu == r->want_cpu && out.nflag == nflags &&
             (r->kind != DECIDED || out.winner == r->winner);
    for (int i = 0; ok && i < nflags; i++)
        ok = out.flag[i] == r->flags[i];
    if (!ok)
        fprintf(stderr, "row \"%s\": kind %d winner %d want_cpu %d flags %d (want %d %d %d %d)\n", r->name,
                out.kind, out.winner, out.want_cpu, out.nflag, r->kind, r->winner, r->want_cpu, nflags);
    T_CHECK(ok);
}

T_TEST(test_every_row_of_the_table)
{
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
        check_row(&ROWS[i]);
}

/* Whatever the order the same votes arrive in, the outcome is the same answer and the same voters
   flagged: arrival order decides nothing. */
T_TEST(test_order_does_not_change_the_outcome)
{
    verdict_vote_t v[4] = { T_NODES1(1), T(2), T_GPU(3), T(4) };
    verdict_policy_t p = CHECK2;
    int perm[24][4], np = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                for (int d = 0; d < 4; d++)
                    if (a != b && a != c && a != d && b != c && b != d && c != d) {
                        perm[np][0] = a, perm[np][1] = b, perm[np][2] = c, perm[np][3] = d;
                        np++;
                    }
    for (int k = 0; k < np; k++) {
        verdict_vote_t w[4];
        for (int i = 0; i < 4; i++)
            w[i] = v[perm[k][i]];
        verdict_t out;
        verdict_decide(w, 4, &p, &out);
        T_CHECK(out.kind == VERDICT_DECIDED);
        T_CHECK(out.nflag == 1 && w[out.flag[0]].who == 1);
        T_CHECK(w[out.winner].a.nodes == TRUE_NODES);
    }
}

T_TEST(test_voted_finds_an_identity)
{
    verdict_vote_t v[2] = { T(5), W(6) };
    T_CHECK(verdict_voted(v, 2, 6));
    T_CHECK(!verdict_voted(v, 2, 7));
    T_CHECK(!verdict_voted(v, 1, 6));
}

T_RUN_ALL()
