/* HOST:PORT of the --http listener: parsed strictly, and refused off loopback without a token. */
#include "http_addr.h"

#include "errf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static int addr_is_loopback(const http_addr_t *a)
{
    if (a->family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&a->sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->sa;
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
        return 1;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
}

/* Splits "HOST:PORT" / "[V6]:PORT" into host and port; -1 when the shape is wrong. */
static int addr_split(const char *addr, char *host, size_t hostlen, const char **port)
{
    const char *h = addr, *end;
    if (*addr == '[') {
        h = addr + 1;
        end = strchr(h, ']');
        if (!end || end[1] != ':')
            return -1;
        *port = end + 2;
    } else {
        end = strrchr(addr, ':');
        if (!end || memchr(addr, ':', (size_t)(end - addr)))
            return -1;   /* no port, or an IPv6 address without brackets */
        *port = end + 1;
    }
    size_t n = (size_t)(end - h);
    if (n == 0 || n >= hostlen)
        return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    return 0;
}

int http_addr_parse(const char *addr, int has_token, http_addr_t *out, char *err, size_t errlen)
{
    char host[64];
    const char *port_s;
    uint64_t port;
    memset(out, 0, sizeof *out);
    if (!addr || addr_split(addr, host, sizeof host, &port_s) != 0 ||
        nq_parse_u64(port_s, 0, 65535, &port) != 0) {
        return nq_errf(err, errlen, "the address must be HOST:PORT, e.g. 127.0.0.1:9555 or "
                       "[::1]:9555, with PORT from 0 to 65535 (got '%s')", addr ? addr : "");
    }
    struct sockaddr_in *in = (struct sockaddr_in *)&out->sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->sa;
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
        out->family = in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        out->family = in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
    } else {
        return nq_errf(err, errlen, "the host must be an IP address or 'localhost' (got '%s')",
                       host);
    }
    if (!has_token && !addr_is_loopback(out)) {
        return nq_errf(err, errlen, "refusing to serve http on %s without a token: it is not "
                       "loopback, so anyone who reaches it could read every job; give "
                       "--http-token-file, or bind 127.0.0.1 or [::1] (an SSH tunnel reaches it)",
                       addr);
    }
    return 0;
}


int http_addr_check(const char *addr, int has_token, char *err, size_t errlen)
{
    http_addr_t a;
    return http_addr_parse(addr, has_token, &a, err, errlen);
}
