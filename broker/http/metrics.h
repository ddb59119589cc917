/*
 * The broker's figures as the HTTP thread sees them: a snapshot the broker hands over
 * once a second (http_update in http.h), and its Prometheus text exposition (/metrics).
 *
 * The broker owns the numbers; the HTTP thread renders the last snapshot it was given,
 * so a scrape never touches the broker's sockets or its store.
 *
 * Per-job series (nq_job_*{job_id="ID"}: not "job", which Prometheus gives the scrape
 * job) cover only the jobs the snapshot lists, which the broker fills with its active
 * (pending or running) jobs: a campaign's history does not grow the label set. Worker
 * ids come from the wire and are escaped.
 */
#ifndef NQ_METRICS_H
#define NQ_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *id;
    double nodes_per_s;
    uint32_t leases;
    int flagged;                   /* quarantined: results failed the broker's checks */
    char kernel[64];               /* the build its HELLO named (from the wire: escape it) */
} nq_metrics_worker_t;

typedef struct {
    uint64_t id, n;
    char kind[12], state[12];      /* "count", "running", ...: names of the README and --json */
    uint64_t shards_total, shards_done, shards_failed, shards_conflict, shards_leased, shards_pending;
    char waiting[160];             /* why its pending work is not taken, "" when it is */
} nq_metrics_job_t;

typedef struct {
    double wall;                   /* unix seconds when the broker took it (the charts' time axis) */
    uint64_t shards_by_state[6];   /* pending, leased, done, failed, conflict, cancelled (active jobs) */
    uint64_t results_total, results_duplicate, results_conflict, results_rejected, messages_bad;
    uint64_t results_evidence;     /* results that disagreed with a decided shard */
    uint64_t leases_lost;
    double results_per_s;
    uint32_t workers_alive, jobs_active;
    uint64_t commits;
    double commit_seconds_sum, commit_seconds_max;   /* store commit latency */
    int store_ok;                  /* 0 after a failed commit (disk full): no leasing, no ACKs */
    uint64_t disk_free_bytes, disk_size_bytes;       /* the DB's file system; 0 size: unknown */
    size_t nworkers;
    const nq_metrics_worker_t *workers;
    size_t njobs;
    const nq_metrics_job_t *jobs;
} nq_metrics_snapshot_t;

/*
 * Renders a snapshot in the Prometheus text exposition format (version 0.0.4)
 * into a malloc'd string (the caller frees it); NULL when out of memory.
 */
char *metrics_render(const nq_metrics_snapshot_t *s);

/* Deep copy (worker ids and arrays); -1 when out of memory, dst then untouched. */
int metrics_snapshot_copy(nq_metrics_snapshot_t *dst, const nq_metrics_snapshot_t *src);
void metrics_snapshot_free(nq_metrics_snapshot_t *s);

#endif
