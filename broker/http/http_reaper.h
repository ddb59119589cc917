/* Connection deadlines for the HTTP listener (http_reaper.c). */
#ifndef NQ_HTTP_REAPER_H
#define NQ_HTTP_REAPER_H

#include <stdint.h>

/* Connections in all (MHD's limit too): the reaper tracks every one. */
#define HX_CONN_LIMIT 128u
/* A connection's whole request head must arrive within this (see http_reaper.c). */
#define HX_REQUEST_MS 3000
/* ... and its response must be taken within this once the head is in. */
#define HX_RESPONSE_MS 30000

typedef struct http_reaper http_reaper_t;

http_reaper_t *http_reaper_new(void);
int http_reaper_start(http_reaper_t *r);           /* the thread; -1 (logged) when it cannot start */
void http_reaper_open(http_reaper_t *r, const void *conn, int fd);
void http_reaper_close(http_reaper_t *r, const void *conn);
void http_reaper_deadline(http_reaper_t *r, const void *conn, int64_t ms_from_now);
/* Joins the thread: no socket is cut after this, and the tracking calls still work. */
void http_reaper_stop(http_reaper_t *r);
void http_reaper_destroy(http_reaper_t **r);

#endif
