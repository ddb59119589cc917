/* Which of several devices to feed next: the one whose queued work runs out first (pure). */
#include "gpu.h"

/* Seconds where every live device has measured its rate (a device measured fast beside one not
   yet measured would otherwise compare seconds with shards); before that, the shards each holds,
   as even a share as any guess (a share of each one's fill starved a device whose first walk had
   not ended: its fill was still unknown). */
int gpu_load_hungriest(const nq_gpu_load_t *l, uint32_t n)
{
    int timed = 1, best = -1;
    for (uint32_t i = 0; i < n; i++)
        if (!l[i].failing && l[i].shard_s <= 0)
            timed = 0;
    double best_key = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (l[i].failing)
            continue;
        double key = timed ? l[i].held_s : (double)l[i].held;
        if (best < 0 || key < best_key) {
            best = (int)i;
            best_key = key;
        }
    }
    return best;
}
