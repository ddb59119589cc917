/*
 * How long would W identical workers take over a count's shards in each lease order? The
 * shards' durations are their true nodes (count_shard, on this machine's cores: 1-2 threads),
 * plus NQ_SHARD_COST_FLOOR each; each worker takes the next position of the order when it is
 * free, as a broker's workers and `nq bench count`'s threads do. Load-free, where wall-clock
 * runs on a shared 2-vCPU host are not: it prints each order's makespan over the bound
 * max(total / W, largest shard), and the lease order's (2) over the list's index order.
 *
 *   nq_order_sim N [DEPTH] [THREADS]
 */
#include "count.h"
#include "shard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct { const nq_shards_t *s; double *nodes; uint64_t next, count; pthread_mutex_t mu; } job_t;

static void *count_some(void *arg)
{
    job_t *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        uint64_t i = j->next++;
        pthread_mutex_unlock(&j->mu);
        if (i >= j->count)
            return NULL;
        uint8_t spec[NQ_MAX_SPEC];
        nq_count_result_t r;
        char err[256];
        size_t len = shards_get(j->s, i, spec);
        if (count_shard(spec, len, &r, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "nq_order_sim: shard %llu: %s\n", (unsigned long long)i, err);
            exit(3);
        }
        j->nodes[i] = (double)r.nodes + NQ_SHARD_COST_FLOOR;
    }
}

/* Greedy list scheduling: position by position to the worker free first. */
static double makespan(const nq_shards_t *s, const double *dur, int workers, double *free_at)
{
    double end = 0;
    for (int w = 0; w < workers; w++)
        free_at[w] = 0;
    for (uint64_t p = 0; p < shards_count(s); p++) {
        int first = 0;
        for (int w = 1; w < workers; w++)
            if (free_at[w] < free_at[first])
                first = w;
        free_at[first] += dur[shards_at(s, p)];
        end = free_at[first] > end ? free_at[first] : end;
    }
    return end;
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc < 2) {
        fprintf(stderr, "usage: nq_order_sim N [DEPTH] [THREADS]\n");
        return 2;
    }
    int n = atoi(argv[1]), depth = argc > 2 ? atoi(argv[2]) : 0, threads = argc > 3 ? atoi(argv[3]) : 1;
    nq_shards_limits_t lim = { .max_shards = NQ_SHARD_MAX_LIST, .max_steps = UINT64_MAX, .unordered = 1 };
    nq_shards_t *o1 = shards_new_limited(NQ_KIND_COUNT, n, depth, NQ_SHARD_ENCODING, &lim, err, sizeof err);
    nq_shards_t *o2 = shards_new_ordered(NQ_KIND_COUNT, n, depth, NQ_SHARD_ENCODING, NQ_ORDER_COST, err,
                                         sizeof err);
    if (!o1 || !o2 || threads < 1 || threads > 64) {
        fprintf(stderr, "nq_order_sim: %s\n", o1 && o2 ? "threads: 1..64" : err);
        return 2;
    }
    uint64_t count = shards_count(o1);
    job_t j = { o1, calloc(count, sizeof(double)), 0, count, PTHREAD_MUTEX_INITIALIZER };
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, count_some, &j);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    double total = 0, largest = 0, free_at[4096];
    for (uint64_t i = 0; i < count; i++) {
        total += j.nodes[i];
        largest = j.nodes[i] > largest ? j.nodes[i] : largest;
    }
    printf("| N | depth | shards | workers | index order / bound | order 2 / bound | order 2 / index order |\n");
    printf("|---|---|---|---|---|---|---|\n");
    int ws[] = { 2, 4, 16, 64, 256, 1024 };
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
        double bound = total / ws[k] > largest ? total / ws[k] : largest;
        double m1 = makespan(o1, j.nodes, ws[k], free_at), m2 = makespan(o2, j.nodes, ws[k], free_at);
        printf("| %d | %d | %llu | %d | %.3f | %.3f | %.3f |\n", n, shards_depth(o1),
               (unsigned long long)count, ws[k], m1 / bound, m2 / bound, m2 / m1);
    }
    free(j.nodes);
    shards_destroy(&o1);
    shards_destroy(&o2);
    return 0;
}
