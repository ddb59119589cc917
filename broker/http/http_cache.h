/*
 * Rendered answers kept for a short while (http_cache.c), so that many browsers refreshing
 * the same page cost the broker's machine one render, not one each. An answer is kept for
 * CACHE_COST_FACTOR times what it took to render, at least CACHE_MIN_S: a page that reads
 * a large job's rows (0.5 s) is then rendered at most every 10 s, and the HTTP thread
 * never spends more than about 1/CACHE_COST_FACTOR of a core, however many refresh it.
 */
#ifndef NQ_HTTP_CACHE_H
#define NQ_HTTP_CACHE_H

#include <stddef.h>

#define CACHE_ENTRIES 16
#define CACHE_KEY_MAX 64          /* longer paths are rendered each time (only hostile ones are) */
#define CACHE_MIN_S 1.0
#define CACHE_COST_FACTOR 20.0

typedef struct http_cache http_cache_t;

http_cache_t *http_cache_new(void);
/* A fresh copy of key's answer (*body malloc'd, the caller frees): 0; -1 none or stale. */
int http_cache_get(http_cache_t *c, const char *key, char **body, size_t *len, unsigned *status);
/* Keeps a copy of the answer (the least recently stored entry makes room). */
void http_cache_put(http_cache_t *c, const char *key, const char *body, size_t len, unsigned status,
                    double render_s);
void http_cache_destroy(http_cache_t **c);

#endif
