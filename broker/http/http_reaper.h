/* Connection deadlines and which connection gives up its slot (http_reaper.c). */
#ifndef NQ_HTTP_REAPER_H
#define NQ_HTTP_REAPER_H

#include <stdint.h>
#include <sys/socket.h>

/* Connections in all (MHD's limit too): the reaper tracks every one. */
#define HX_CONN_LIMIT 128u
/* Slots kept for newcomers: past HX_CONN_LIMIT - HX_CONN_SPARE open connections, each new one
   costs an idle connection that never authenticated its slot (http_reaper.c). The spare covers the
   connections being closed meanwhile, so MHD's own limit (which refuses the newcomer) is
   reached only when nearly every connection has authenticated or is being answered. */
#define HX_CONN_SPARE 16u
/* A connection's whole request head must arrive within this (see http_reaper.c). */
#define HX_REQUEST_MS 3000
/* ... and its response must be taken within this once the head is in. */
#define HX_RESPONSE_MS 30000

typedef struct http_reaper http_reaper_t;

http_reaper_t *http_reaper_new(void);
int http_reaper_start(http_reaper_t *r);           /* the thread; -1 (logged) when it cannot start */
/* A new connection (MHD's NOTIFY_STARTED) from client (NULL: unknown): it has HX_REQUEST_MS for
   its request head, and when the listener is near full another connection is cut to keep a
   slot free. */
void http_reaper_open(http_reaper_t *r, const void *conn, int fd, const struct sockaddr *client);
void http_reaper_close(http_reaper_t *r, const void *conn);
/* A request head is in: its response has HX_RESPONSE_MS, and the connection is not idle. */
void http_reaper_busy(http_reaper_t *r, const void *conn);
/* The request passed the token check (any complete request, when there is no token). */
void http_reaper_trust(http_reaper_t *r, const void *conn);
/* A response went out: a keep-alive connection has HX_REQUEST_MS for its next request head. */
void http_reaper_idle(http_reaper_t *r, const void *conn);
/* Connections cut so far: past their deadline, and to make room. */
void http_reaper_counts(http_reaper_t *r, uint64_t *slow, uint64_t *evicted);
/* Joins the thread: no socket is cut by a deadline after this, and the tracking calls still work. */
void http_reaper_stop(http_reaper_t *r);
void http_reaper_destroy(http_reaper_t **r);

#endif
