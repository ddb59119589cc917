/* Where a DB's broker listens for clients by default (control_ep.h). */
#include "control_ep.h"
#include "errf.h"
#include "siphash.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define IPC_PREFIX "ipc://"
#define CTL_SUFFIX ".ctl"

/* The DB's absolute path: its folder resolved (symlinks, "..", "./"), then its name, so that
   `--db nq.db`, `--db ./nq.db` and `--db /abs/nq.db` name one socket. */
static int db_abspath(const char *db_path, char *out, size_t len, char *err, size_t errlen)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(db_path, '/');
    const char *base = slash ? slash + 1 : db_path;
    if (!base[0])
        return nq_errf(err, errlen, "%s: a DB path names a file, not a folder", db_path);
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == db_path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - db_path), db_path);
    if (!realpath(dir, real))
        return nq_errf(err, errlen, "%s: its folder %s does not exist", db_path, dir);
    if ((size_t)snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "", base) >= len)
        return nq_errf(err, errlen, "%s: path too long", db_path);
    return 0;
}

int control_ep_for_db(const char *db_path, char *out, size_t len, char *err, size_t errlen)
{
    char abs[PATH_MAX];
    if (db_abspath(db_path, abs, sizeof abs, err, errlen) != 0)
        return -1;
    struct sockaddr_un sa;
    if (strlen(abs) + strlen(CTL_SUFFIX) < sizeof sa.sun_path) {
        if ((size_t)snprintf(out, len, IPC_PREFIX "%s" CTL_SUFFIX, abs) >= len)
            return nq_errf(err, errlen, "%s: path too long", db_path);
        return 0;
    }
    /* A fixed key: the name only has to be the same for the broker and its clients, and differ
       between DBs. */
    static const uint64_t key[2] = { 0x6e712d636f6e7472ull, 0x6f6c2d736f636b65ull };
    const char *run = getenv("XDG_RUNTIME_DIR");
    if (!run || run[0] != '/' || strlen(run) > 64)
        run = "/tmp";
    if ((size_t)snprintf(out, len, IPC_PREFIX "%s/nq-%016llx" CTL_SUFFIX, run,
                         (unsigned long long)siphash24(key, abs, strlen(abs))) >= len)
        return nq_errf(err, errlen, "%s: path too long", db_path);
    return 0;
}

int control_ep_listens(const char *ep)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t n = strlen(IPC_PREFIX);
    if (strncmp(ep, IPC_PREFIX, n) != 0)
        return -1;
    if (strlen(ep + n) >= sizeof sa.sun_path)
        return 0;
    memcpy(sa.sun_path, ep + n, strlen(ep + n) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 1 : -1;
    if (up < 0 && (errno == ENOENT || errno == ECONNREFUSED))
        up = 0;                         /* any other error (EACCES): only a try tells */
    close(fd);
    return up;
}
