/* Does a tcp:// endpoint's host resolve (resolve.h). */
#include "resolve.h"
#include "errf.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int resolve_check(const char *ep, char *err, size_t errlen)
{
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    const char *h = ep + 6, *semi = strchr(h, ';');
    if (semi)
        h = semi + 1;                   /* "tcp://SOURCE;HOST:PORT": the host is after the ';' */
    const char *colon = strrchr(h, ':');
    char host[256];
    if (!colon || (size_t)(colon - h) >= sizeof host)
        return nq_errf(err, errlen, "%s: expected tcp://HOST:PORT", ep);
    snprintf(host, sizeof host, "%.*s", (int)(colon - h), h);
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);  /* [::1] */
        host[n - 2] = 0;
    }
    if (!host[0] || !strcmp(host, "*"))
        return 0;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (res)
        freeaddrinfo(res);
    if (rc == 0)
        return 0;
    return nq_errf(err, errlen, "cannot resolve the host '%s' of %s (%s): give the broker machine's name "
                   "or address", host, ep, gai_strerror(rc));
}
