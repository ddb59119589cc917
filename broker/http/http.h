/*
 * The broker's HTTP listener (libmicrohttpd, its own threads): Prometheus text on
 * /metrics, and a read-only web view of jobs and workers (/, /jobs/ID, /workers)
 * with the same documents as the --json outputs under /api/ (web_*.c).
 *
 * It never touches the broker's sockets or its SQLite connection. It serves from
 * two things only: the snapshot the broker hands over with http_update() (once a
 * second), and its own read-only connection to the DB (WAL: readers never block the
 * broker's writer).
 *
 * Slow or hostile clients cannot starve it (HX_* in http.c): a bounded number of
 * connections, per client address too, a cap on the request head, an idle timeout, and
 * a deadline for the whole request head that trickling a byte at a time does not reset.
 *
 * Access: a loopback address needs nothing. Any other address needs a token (from
 * --http-token-file), or it is refused, as `--bind` without keys is. With a token,
 * every request must carry it: "Authorization: Bearer TOKEN", or ?token=TOKEN once (the
 * answer then sets a cookie, so a browser's next pages need no token in the URL).
 *
 * Built without libmicrohttpd (NQ_HAVE_MHD undefined), http_new() fails with "built
 * without libmicrohttpd" and the rest are harmless no-ops.
 */
#ifndef NQ_HTTP_H
#define NQ_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

/* A token shorter than this is refused: it guards a port that may face a network. */
#define HTTP_TOKEN_MIN 16
#define HTTP_TOKEN_MAX 256

typedef struct {
    const char *addr;          /* HOST:PORT: an IPv4 address, "localhost" or "[V6]"; port 0 picks one */
    const char *token;         /* NULL or "": none (then only a loopback address is taken) */
    const char *db_path;       /* the pages read it, read-only; NULL: /metrics only */
} nq_http_cfg_t;

typedef struct nq_http nq_http_t;

/* Starts serving. NULL with a reason in err on a bad address, a non-loopback address
   without a token, or a port that cannot be bound. */
nq_http_t *http_new(const nq_http_cfg_t *cfg, char *err, size_t errlen);

/* 0 when ADDR is an address http_new would take (with a token or not); nothing is bound. */
int http_addr_check(const char *addr, int has_token, char *err, size_t errlen);

/* Reads a token file: one line of HTTP_TOKEN_MIN..HTTP_TOKEN_MAX printable characters (a
   trailing newline is allowed). 0, or -1 with a reason. */
int http_token_load(const char *path, char *token, size_t len, char *err, size_t errlen);

/* The TCP port actually bound (useful after asking for port 0). */
uint16_t http_port(const nq_http_t *h);

/* Copies the snapshot and adds a sample to each listed job's history; thread-safe;
   NULL h is a no-op. */
void http_update(nq_http_t *h, const nq_metrics_snapshot_t *s);

/* Stops the HTTP threads and frees everything; sets *h to NULL. */
void http_destroy(nq_http_t **h);

#endif
