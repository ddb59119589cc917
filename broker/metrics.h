/*
 * The broker's Prometheus endpoint: GET /metrics on a small HTTP server
 * (libmicrohttpd, its own threads), everything else 404.
 *
 * Slow or hostile clients cannot starve a scraper (see MX_* in metrics.c): 128
 * connections at most, 32 per client address, a request head larger than 16 KiB
 * is refused (431), a connection idle for 5 s is closed, and one that has not sent a
 * complete request head 3 s after connecting (trickling a byte at a time does not
 * help) is closed by a reaper thread (logged as metrics.slow_client).
 *
 * The broker owns the numbers; it hands a snapshot over with metrics_update()
 * whenever it likes (e.g. once a second) and the HTTP thread renders the last
 * snapshot it was given. A scrape therefore never touches the broker's
 * sockets or the store, and costs the broker one copy per update.
 *
 * The endpoint has no authentication, so by default it only binds loopback
 * addresses; metrics_new_ex(..., allow_remote=1, ...) lifts that for setups
 * where something else guards the port (a container network, a firewall).
 *
 * Built without libmicrohttpd (NQ_HAVE_MHD undefined), metrics_new() fails
 * with "built without libmicrohttpd" and the rest are harmless no-ops.
 */
#ifndef NQ_METRICS_H
#define NQ_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *id;
    double nodes_per_s;
    uint32_t leases;
} nq_metrics_worker_t;

typedef struct {
    uint64_t shards_by_state[6];   /* pending, leased, done, failed, conflict, cancelled (all jobs) */
    uint64_t results_total, results_duplicate, results_conflict, messages_bad;
    double results_per_s;
    uint32_t workers_alive, jobs_active;
    uint64_t commits;
    double commit_seconds_sum, commit_seconds_max;   /* store commit latency */
    size_t nworkers;
    const nq_metrics_worker_t *workers;
} nq_metrics_snapshot_t;

typedef struct nq_metrics nq_metrics_t;

/*
 * Starts serving on ADDR = "HOST:PORT": HOST is an IPv4 address, "localhost"
 * or a bracketed IPv6 address ("[::1]:9555"); PORT 0 picks a free port (see
 * metrics_port). Refuses a non-loopback HOST. Returns NULL with a reason in
 * err on a bad address or when the port cannot be bound.
 */
nq_metrics_t *metrics_new(const char *addr, char *err, size_t errlen);
/* The same; allow_remote != 0 also accepts non-loopback addresses (0.0.0.0, ::). */
nq_metrics_t *metrics_new_ex(const char *addr, int allow_remote, char *err, size_t errlen);

/* 0 when ADDR is an address metrics_new would take (nothing is bound), else -1 and why. */
int metrics_addr_check(const char *addr, char *err, size_t errlen);

/* The TCP port actually bound (useful after asking for port 0). */
uint16_t metrics_port(const nq_metrics_t *m);

/* Copies the snapshot (worker ids included); thread-safe; NULL m is a no-op. */
void metrics_update(nq_metrics_t *m, const nq_metrics_snapshot_t *s);

/*
 * Renders a snapshot in the Prometheus text exposition format (version 0.0.4)
 * into a malloc'd string (the caller frees it); NULL when out of memory.
 * Exposed for tests and for a future `nq status --metrics`.
 */
char *metrics_render(const nq_metrics_snapshot_t *s);

/* Stops the HTTP thread and frees everything; sets *m to NULL. */
void metrics_destroy(nq_metrics_t **m);

#endif
