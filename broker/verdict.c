/*
 * The one vote over a shard's results (verdict.h): pure, so its rules are a table of tests.
 */
#include "verdict.h"

#include <string.h>

int verdict_voted(const verdict_vote_t *v, int n, int64_t who)
{
    for (int i = 0; i < n; i++)
        if (v[i].who == who)
            return 1;
    return 0;
}

/* One class of the same answer: its members (vote indexes, first vote of each identity), and how
   its CPU nodes stand. */
typedef struct {
    int member[VERDICT_MAX_VOTES], n;
    int support;                       /* -1: an unsettled nodes dispute */
    uint64_t nodes;                    /* the settled CPU nodes value, when cpu_values > 0 */
    int cpu_values;                    /* distinct CPU nodes values among its members */
} klass_t;

/* How many of c's members carry CPU nodes equal to nodes. */
static int cpu_holding(const verdict_vote_t *v, const klass_t *c, uint64_t nodes)
{
    int k = 0;
    for (int i = 0; i < c->n; i++)
        k += v[c->member[i]].a.cpu_nodes && v[c->member[i]].a.nodes == nodes;
    return k;
}

/* Rule 3: the class's support, and its nodes value when its CPU votes settle one. */
static void klass_nodes(const verdict_vote_t *v, klass_t *c)
{
    int best = 0, second = 0, cpu = 0;
    c->cpu_values = 0;
    for (int i = 0; i < c->n; i++) {
        const nq_answer_t *a = &v[c->member[i]].a;
        if (!a->cpu_nodes)
            continue;
        cpu++;
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = v[c->member[k]].a.cpu_nodes && v[c->member[k]].a.nodes == a->nodes;
        if (seen)
            continue;
        c->cpu_values++;
        int h = cpu_holding(v, c, a->nodes);
        if (h > best) {
            second = best;
            best = h;
            c->nodes = a->nodes;
        } else if (h > second) {
            second = h;
        }
    }
    if (c->cpu_values <= 1)
        c->support = c->n;
    else if (best >= 2 && best > second)
        c->support = c->n - (cpu - best);
    else
        c->support = -1;
}

/* A member that loses inside its own class: CPU nodes other than the settled value. */
static int nodes_loser(const klass_t *c, const nq_answer_t *a)
{
    return c->cpu_values > 1 && a->cpu_nodes && a->nodes != c->nodes;
}

/* Rules 1 and 2: the first vote of each identity, in classes; the number of classes. */
static int classify(const verdict_vote_t *v, int n, klass_t *cls, int *voters)
{
    int ncls = 0;
    *voters = 0;
    for (int i = 0; i < n && *voters < VERDICT_MAX_VOTES; i++) {
        if (verdict_voted(v, i, v[i].who))
            continue;                   /* rule 1 */
        (*voters)++;
        int k = 0;
        while (k < ncls && !nq_answer_same(&v[cls[k].member[0]].a, &v[i].a))
            k++;
        if (k == ncls) {
            memset(&cls[k], 0, sizeof cls[k]);
            ncls++;
        }
        cls[k].member[cls[k].n++] = i;
    }
    return ncls;
}

void verdict_decide(const verdict_vote_t *v, int n, const verdict_policy_t *p, verdict_t *out)
{
    klass_t cls[VERDICT_MAX_VOTES];
    memset(out, 0, sizeof *out);
    out->winner = -1;
    int ncls = classify(v, n, cls, &out->voters);
    int lead = -1, lead_size = 0;
    for (int k = 0; k < ncls; k++) {
        klass_t *c = &cls[k];
        klass_nodes(v, c);
        int size = c->support < 0 ? c->n : c->support;   /* a disputed class still weighs its size */
        if (lead < 0 || size > lead_size) {
            lead = k;
            lead_size = size;
        }
    }
    int unique_lead = lead >= 0;
    for (int k = 0; k < ncls && unique_lead; k++) {
        int size = cls[k].support < 0 ? cls[k].n : cls[k].support;
        unique_lead = k == lead || size < lead_size;
    }
    if (unique_lead && cls[lead].support >= p->agree) {        /* rule 4 */
        const klass_t *w = &cls[lead];
        out->kind = VERDICT_DECIDED;
        for (int i = 0; i < w->n && out->winner < 0; i++)     /* CPU nodes, when it has them */
            if (v[w->member[i]].a.cpu_nodes && !nodes_loser(w, &v[w->member[i]].a))
                out->winner = w->member[i];
        if (out->winner < 0)
            out->winner = w->member[0];
        for (int k = 0; k < ncls; k++)
            for (int i = 0; i < cls[k].n; i++)
                if (k != lead || nodes_loser(w, &v[cls[k].member[i]].a))
                    out->flag[out->nflag++] = cls[k].member[i];
        return;
    }
    if (out->voters >= p->max_votes) {                         /* rule 5 */
        out->kind = VERDICT_DISPUTE;
        return;
    }
    out->kind = VERDICT_MORE;
    out->want_cpu = lead >= 0 && cls[lead].support < 0;
}
