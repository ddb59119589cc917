/* A plan's table for the GPU search, and the walk that places its first levels on the host. */
#include "gpu_expand.h"

#include <string.h>

_Static_assert(sizeof(nq_gpu_table_t) == NQ_GPU_TABLE_WORDS * sizeof(nq_u32), "a table is u32 words only");

void gpu_table_build(const nq_plan_t *pl, nq_gpu_table_t *tb)
{
    int m = pl->m;
    memset(tb, 0, sizeof *tb);
    tb->m = (nq_u32)m;
    tb->full = pl->full;
    tb->leaf8 = pl->leaf8;
    tb->wide = pl->cover == NQ_COVER_LEFT_5;
    for (int L = 0; L < m; L++)
        tb->open_of[L] = plan_open(pl, L);
    for (int L = 0; L + 1 < m; L++) {
        nq_u32 d1 = (nq_u32)(pl->row[L + 1] - pl->row[L]);
        nq_u32 d2 = L + 2 < m ? (nq_u32)(pl->row[L + 2] - pl->row[L]) : 0;
        nq_u32 dz = (nq_u32)(pl->row[m - 1] - pl->row[L]);
        nq_u32 kind = L + 4 <= m ? NQ_GPU_MAIN : L + 3 == m ? NQ_GPU_M3 : NQ_GPU_M2;
        /* levels_init's rule: from level m-3 up, while the rows left are within the rule */
        nq_u32 cover = L + 2 < m && m - L <= pl->cover ? (nq_u32)(m - L) : 0;
        tb->geo[L] = d1 | d2 << 5 | dz << 10 | kind << 15 | cover << 17;
        for (int j = 3; j <= 5 && L + j < m; j++)
            tb->gx[L] |= (nq_u32)(pl->row[L + j] - pl->row[L]) << (5 * (j - 3));
    }
}

int gpu_task_level(int m, int rows_left)
{
    int level = m - rows_left;
    if (level > m - 2)
        level = m - 2;
    return level < 0 ? 0 : level;
}

int gpu_fast_fits(const nq_gpu_table_t *tb)
{
    nq_u32 n = NQ_POPC(tb->full);
    for (nq_u32 L = tb->level; L + 1 < tb->m; L++)
        if (n >= 32 || NQ_GEO_D1(tb->geo[L]) >> (32 - n))
            return 0;
    return 1;
}

static unsigned bit_length(unsigned x) { return x ? 32u - (unsigned)__builtin_clz(x) : 0; }

unsigned gpu_task_cost(const nq_gpu_table_t *tb, const nq_gpu_task_t *t)
{
    unsigned cost = bit_length(NQ_POPC(t->open)), k = 0;
    for (nq_u32 L = tb->level + 1; L < tb->m; L++) {
        k += NQ_GEO_D1(tb->geo[L - 1]);   /* row distance from the task's level */
        cost += bit_length(NQ_POPC(gpu_row(tb->open_of[L], t->col, t->dl, t->dr, k)));
    }
    return cost > 255 ? 255 : cost;
}

void gpu_expand_init(nq_gpu_expand_t *e, const nq_gpu_table_t *tb, nq_u32 colfix, int level)
{
    memset(e, 0, sizeof *e);
    e->tb = tb;
    e->level = level;
    nq_u32 raw = tb->open_of[0] & ~colfix;
    e->nodes = NQ_POPC(raw);
    nq_u32 open = gpu_filter(tb, 0, raw, colfix, 0, 0);
    e->L = -1;
    if (level == 0) {
        e->first = (nq_gpu_task_t){ open, colfix, 0, 0 };
        e->first_left = open != 0;
    } else if (open) {
        e->L = 0;
        e->open[0] = open;
        e->col[0] = colfix;
    }
}

size_t gpu_expand_next(nq_gpu_expand_t *e, nq_gpu_task_t *out, size_t max)
{
    const nq_gpu_table_t *tb = e->tb;
    size_t n = 0;
    if (e->first_left && max > 0) {
        out[n++] = e->first;
        e->first_left = 0;
    }
    while (n < max && e->L >= 0) {
        int L = e->L;
        nq_u32 open = e->open[L];
        if (!open) {
            e->L--;
            continue;
        }
        nq_u32 bit = open & (0u - open);
        e->open[L] = open ^ bit;
        nq_u32 s = NQ_GEO_D1(tb->geo[L]);
        nq_u32 col = e->col[L] | bit, dl = (e->dl[L] | bit) << s, dr = (e->dr[L] | bit) >> s;
        nq_u32 raw = tb->open_of[L + 1] & ~(col | dl | dr);
        e->nodes += NQ_POPC(raw);       /* the level is entered: all its open cells are nodes */
        nq_u32 next = gpu_filter(tb, (nq_u32)L + 1, raw, col, dl, dr);
        if (!next)
            continue;
        if (L + 1 == e->level) {
            out[n++] = (nq_gpu_task_t){ next, col, dl, dr };
        } else {
            e->L = L + 1;
            e->open[L + 1] = next;
            e->col[L + 1] = col;
            e->dl[L + 1] = dl;
            e->dr[L + 1] = dr;
        }
    }
    e->tasks += n;
    return n;
}
