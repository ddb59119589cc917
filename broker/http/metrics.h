/*
 * The broker's figures as the HTTP thread sees them: a snapshot the broker hands over
 * once a second (http_update in http.h), and its Prometheus text exposition (/metrics).
 *
 * The broker owns the numbers; the HTTP thread renders the last snapshot it was given,
 * so a scrape never touches the broker's sockets or its store.
 *
 * Per-job series (nq_job_*{job_id="ID"}: not "job", which Prometheus gives the scrape
 * job) cover the jobs the snapshot lists, which the broker fills with its active
 * (pending or running) jobs, and the jobs that ended in the last METRICS_ENDED_KEEP_S
 * (at most METRICS_ENDED_MAX), in their final state, read from the DB at each scrape: a
 * job's series do not vanish as it ends, and a campaign's history does not grow the label
 * set. nq_shards counts the shards of every job, ended ones too. Worker ids come from the
 * wire and are escaped.
 */
#ifndef NQ_METRICS_H
#define NQ_METRICS_H

#include "proto.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *id;
    double nodes_per_s;
    uint32_t leases;
    int flagged;                   /* quarantined: results failed the broker's checks */
    char kernel[64];               /* the build its HELLO named (from the wire: escape it) */
    const nq_hb_device_t *devices; /* a GPU worker's, as its last heartbeat said (names: escape) */
    uint32_t ndevices;
    double rtt_s;                  /* its link's round trip, seconds; 0 before it is measured */
} nq_metrics_worker_t;

typedef struct {
    uint64_t id, n;
    char kind[12], state[12];      /* "count", "running", ...: names of the README and --json */
    uint64_t shards_total, shards_done, shards_failed, shards_conflict, shards_leased, shards_pending;
    char waiting[160];             /* why its pending work is not taken, "" when it is */
    /* this run's pace, as `nq status` gives it (the broker's jobs_pace: its estimated work left over
       the rate this run has done it): ETA seconds (-1: none yet) and shards a second */
    double eta, rate;
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

#define METRICS_ENDED_KEEP_S 86400.0
#define METRICS_ENDED_MAX 100

/* The jobs that ended, from the DB (query_jobs_ended): the shards of them all by state
   (done, failed, conflict, and cancelled: those still open when the job ended), and the
   latest of them as jobs for the per-job series. */
typedef struct {
    uint64_t shards_by_state[6];   /* as the snapshot's; pending and leased stay 0 */
    size_t njobs;
    nq_metrics_job_t jobs[METRICS_ENDED_MAX];
} nq_metrics_ended_t;

/* Adds one ended job (the latest first): to the sums, and to jobs while it ended less than
   METRICS_ENDED_KEEP_S before now and there is room. */
void metrics_ended_add(nq_metrics_ended_t *e, const nq_metrics_job_t *j, double finished, double now);

/*
 * Renders a snapshot, and the jobs that ended (NULL: none known), in the Prometheus text
 * exposition format (version 0.0.4) into a malloc'd string (the caller frees it); NULL when
 * out of memory. A job both in the snapshot and among the ended (it ended since the snapshot)
 * counts once, as the ended one.
 */
char *metrics_render(const nq_metrics_snapshot_t *s, const nq_metrics_ended_t *ended);

/* Deep copy (worker ids and arrays); -1 when out of memory, dst then untouched. */
int metrics_snapshot_copy(nq_metrics_snapshot_t *dst, const nq_metrics_snapshot_t *src);
void metrics_snapshot_free(nq_metrics_snapshot_t *s);

#endif
