/* HOST:PORT for the HTTP listener (http_addr.c); http_addr_check in http.h is the public face. */
#ifndef NQ_HTTP_ADDR_H
#define NQ_HTTP_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

#include "http.h"

typedef struct {
    struct sockaddr_storage sa;
    int family;
} http_addr_t;

/* 0 with *out filled, or -1 and why: a bad shape, a host that is not an IP address or
   "localhost", or a non-loopback address without a token. */
int http_addr_parse(const char *addr, int has_token, http_addr_t *out, char *err, size_t errlen);

#endif
