/* Rendered answers kept for a time that grows with their cost (see http_cache.h). */
#include "http_cache.h"

#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char key[CACHE_KEY_MAX];       /* "": free */
    char *body;
    size_t len;
    unsigned status;
    double stored, until;          /* monotonic seconds */
} cache_entry_t;

struct http_cache {
    pthread_mutex_t lock;
    cache_entry_t e[CACHE_ENTRIES];
};

http_cache_t *http_cache_new(void)
{
    http_cache_t *c = calloc(1, sizeof *c);
    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

static cache_entry_t *find(http_cache_t *c, const char *key)
{
    for (size_t i = 0; i < CACHE_ENTRIES; i++)
        if (c->e[i].key[0] && strcmp(c->e[i].key, key) == 0)
            return &c->e[i];
    return NULL;
}

int http_cache_get(http_cache_t *c, const char *key, char **body, size_t *len, unsigned *status)
{
    int rc = -1;
    if (!c || strlen(key) >= CACHE_KEY_MAX)
        return -1;
    pthread_mutex_lock(&c->lock);
    cache_entry_t *e = find(c, key);
    if (e && nq_mono() < e->until && (*body = malloc(e->len + 1))) {
        memcpy(*body, e->body, e->len + 1);
        *len = e->len;
        *status = e->status;
        rc = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The entry for key, else a free one, else the one stored longest ago. */
static cache_entry_t *victim(http_cache_t *c, const char *key)
{
    cache_entry_t *e = find(c, key), *old = &c->e[0];
    if (e)
        return e;
    for (size_t i = 0; i < CACHE_ENTRIES; i++) {
        if (!c->e[i].key[0])
            return &c->e[i];
        if (c->e[i].stored < old->stored)
            old = &c->e[i];
    }
    return old;
}

void http_cache_put(http_cache_t *c, const char *key, const char *body, size_t len, unsigned status,
                    double render_s)
{
    if (!c || strlen(key) >= CACHE_KEY_MAX)
        return;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, body, len);
    copy[len] = '\0';
    double keep = render_s * CACHE_COST_FACTOR, now = nq_mono();
    pthread_mutex_lock(&c->lock);
    cache_entry_t *e = victim(c, key);
    free(e->body);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->body = copy;
    e->len = len;
    e->status = status;
    e->stored = now;
    e->until = now + (keep > CACHE_MIN_S ? keep : CACHE_MIN_S);
    pthread_mutex_unlock(&c->lock);
}

void http_cache_destroy(http_cache_t **cp)
{
    http_cache_t *c = *cp;
    if (!c)
        return;
    for (size_t i = 0; i < CACHE_ENTRIES; i++)
        free(c->e[i].body);
    pthread_mutex_destroy(&c->lock);
    free(c);
    *cp = NULL;
}
