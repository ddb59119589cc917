/* CURVE keys (load, generate, set up sockets) and handshake monitoring; the ZAP allow-list
   handler is security_zap.c. */
#include "security.h"
#include "errf.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int security_endpoint_is_local(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) == 0 || strncmp(ep, "inproc://", 9) == 0)
        return 1;
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    const char *h = ep + 6;
    return strncmp(h, "127.", 4) == 0 || strncmp(h, "localhost:", 10) == 0 || strncmp(h, "[::1]:", 6) == 0;
}

static int is_z85_key(const char *s)
{
    uint8_t raw[32];
    return strlen(s) == 40 && zmq_z85_decode(raw, s) != NULL;
}

/* Trims spaces and a trailing newline in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = 0;
    return s;
}

int security_load_key(const char *path, char pub[41], char sec[41], char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return nq_errf(err, errlen, "cannot read key file %s: %s", path, strerror(errno));
    char line[256];
    pub[0] = sec[0] = 0;
    while (fgets(line, sizeof line, f)) {
        char *l = trim(line), *eq = strchr(l, '=');
        if (is_z85_key(l)) {            /* a bare key (.pub): '=' and '#' are Z85 digits too */
            snprintf(pub, 41, "%s", l);
            continue;
        }
        if (*l == '#' || *l == 0 || !eq)
            continue;
        *eq = 0;
        char *k = trim(l), *v = trim(eq + 1);
        if (strcmp(k, "public") == 0 && is_z85_key(v)) snprintf(pub, 41, "%s", v);
        if (strcmp(k, "secret") == 0 && is_z85_key(v)) snprintf(sec, 41, "%s", v);
    }
    fclose(f);
    if (!pub[0])
        return nq_errf(err, errlen, "%s holds no valid public key (40 Z85 characters)", path);
    return 0;
}

/* Writes text to a new temporary file beside final (mkstemp: a fresh name, never an
   existing file or a planted link). 0, or -1 with err; tmp is "" when nothing is left. */
static int keygen_temp(const char *final, const char *text, mode_t mode, char *tmp, size_t tlen,
                       char *err, size_t errlen)
{
    snprintf(tmp, tlen, "%s.tmp.XXXXXX", final);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tmp[0] = 0;
        return nq_errf(err, errlen, "cannot create %s: %s", final, strerror(errno));
    }
    size_t len = strlen(text);
    int ok = fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len;
    int why = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        why = errno;
    }
    if (ok)
        return 0;
    unlink(tmp);
    tmp[0] = 0;
    return nq_errf(err, errlen, "cannot write %s: %s", final, strerror(why));
}

/* Puts tmp in place as final, never over an existing file (link fails with EEXIST). */
static int keygen_commit(const char *tmp, const char *final, char *err, size_t errlen)
{
    if (link(tmp, final) == 0)
        return 0;
    if (errno == EEXIST)
        return nq_errf(err, errlen, "%s already exists: not overwritten", final);
    return nq_errf(err, errlen, "cannot create %s: %s", final, strerror(errno));
}

/*
 * Both files or neither: each is written to a temporary file first, then
 * linked into place; if the second cannot be placed the first is taken back.
 * An existing NAME.key or NAME.pub is never touched.
 */
int security_keygen(const char *name, char *err, size_t errlen)
{
    char pub[41], sec[41], key_path[4096], pub_path[4096], text[256];
    char key_tmp[4096 + 16] = "", pub_tmp[4096 + 16] = "";
    if (snprintf(key_path, sizeof key_path, "%s.key", name) >= (int)sizeof key_path ||
        snprintf(pub_path, sizeof pub_path, "%s.pub", name) >= (int)sizeof pub_path)
        return nq_errf(err, errlen, "name too long");
    struct stat st;
    if (lstat(key_path, &st) == 0 || lstat(pub_path, &st) == 0)
        return nq_errf(err, errlen, "%s already exists: not overwritten",
                       lstat(key_path, &st) == 0 ? key_path : pub_path);
    if (zmq_curve_keypair(pub, sec) != 0)
        return nq_errf(err, errlen, "this libzmq has no CURVE support");
    mode_t mask = umask(0);             /* the .pub is a plain new file: 0644 less the umask */
    umask(mask);
    snprintf(text, sizeof text, "# nq CURVE key pair: keep this file secret\npublic = %s\nsecret = %s\n", pub, sec);
    int rc = keygen_temp(key_path, text, 0600, key_tmp, sizeof key_tmp, err, errlen);
    snprintf(text, sizeof text, "%s\n", pub);
    if (rc == 0)
        rc = keygen_temp(pub_path, text, 0644 & ~mask, pub_tmp, sizeof pub_tmp, err, errlen);
    if (rc == 0)
        rc = keygen_commit(key_tmp, key_path, err, errlen);
    if (rc == 0 && (rc = keygen_commit(pub_tmp, pub_path, err, errlen)) != 0)
        unlink(key_path);               /* ours: linked a moment ago */
    if (key_tmp[0])
        unlink(key_tmp);
    if (pub_tmp[0])
        unlink(pub_tmp);
    return rc;
}

int security_server_setup(void *sock, const char *key_file, const char *domain, char *err, size_t errlen)
{
    char pub[41], sec[41];
    int one = 1;
    if (security_load_key(key_file, pub, sec, err, errlen) != 0)
        return -1;
    if (!sec[0])
        return nq_errf(err, errlen, "%s has no secret key: give the broker its .key file", key_file);
    zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec, 40);
    zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, domain, strlen(domain));
    return 0;
}

int security_client_setup(void *sock, const char *key_file, const char *broker_key_file, char *err, size_t errlen)
{
    char pub[41], sec[41], bpub[41], bsec[41];
    if (!key_file && !broker_key_file)
        return 0;
    if (!key_file || !broker_key_file)
        return nq_errf(err, errlen, "--key and --broker-key go together");
    if (security_load_key(key_file, pub, sec, err, errlen) != 0 ||
        security_load_key(broker_key_file, bpub, bsec, err, errlen) != 0)
        return -1;
    if (!sec[0])
        return nq_errf(err, errlen, "%s has no secret key: give your own .key file", key_file);
    zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, bpub, 40);
    zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, pub, 40);
    zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, sec, 40);
    return 0;
}

void security_msg_key(zmq_msg_t *msg, char *out, size_t outlen)
{
    const char *uid = zmq_msg_gets(msg, "User-Id");
    snprintf(out, outlen, "%s", uid ? uid : "");
}

/* ---- handshake monitoring: a refused key is an error, never a silent hang ---- */

typedef struct {
    void *sock;
    int role;                           /* SECURITY_ROLE_* */
    int connected;                      /* a handshake succeeded once */
} monitor_t;

void *security_monitor_new(void *ctx, void *sock, int role)
{
    char ep[128];
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (role == SECURITY_ROLE_CLIENT)
        events |= ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
    snprintf(ep, sizeof ep, "inproc://nq-monitor-%d-%p", role, sock);
    if (zmq_socket_monitor(sock, ep, events) != 0)
        return NULL;
    monitor_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->role = role;
    m->sock = zmq_socket(ctx, ZMQ_PAIR);
    int linger = 0;
    zmq_setsockopt(m->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(m->sock, ep) != 0) {
        zmq_close(m->sock);
        free(m);
        return NULL;
    }
    return m;
}

/* What one event means for the peer we are: 1 and why when it ends our try, else 0. */
static int monitor_event(monitor_t *m, uint16_t event, uint32_t value, char *why, size_t whylen)
{
    int client = m->role == SECURITY_ROLE_CLIENT;
    switch (event) {
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        m->connected = 1;
        return 0;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        /* One ZAP domain per endpoint: a key in the other list is refused like an unknown one. */
        snprintf(why, whylen, "the broker refused our key (status %u): is our public key in its %s? (each "
                 "endpoint has its own list: a worker connects to the broker's --bind with a key in its "
                 "--authorized-keys, a client to its --control with a key in its --control-keys)", value,
                 client ? "--control-keys" : "--authorized-keys");
        return 1;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        snprintf(why, whylen, "handshake with the broker failed: wrong --broker-key, keys on one side "
                 "only, or the wrong endpoint (a worker connects to the broker's --bind, a client to its "
                 "--control)");
        return 1;
    case ZMQ_EVENT_CONNECT_RETRIED:     /* only a client watches it: a worker waits for its broker */
        snprintf(why, whylen, m->connected ? "the broker closed the connection" :
                 "nothing accepts connections there (refused): is 'nq broker' running there?");
        return 1;
    default:
        return 0;
    }
}

int security_monitor_check(void *mon, char *why, size_t whylen)
{
    monitor_t *m = mon;
    if (!m)
        return 0;
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, m->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return 0;
        }
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&value, (char *)zmq_msg_data(&ev) + 2, 4);
        }
        zmq_msg_close(&ev);
        zmq_msg_init(&addr);
        zmq_msg_recv(&addr, m->sock, 0);
        zmq_msg_close(&addr);
        if (monitor_event(m, event, value, why, whylen))
            return 1;
    }
}

void security_monitor_destroy(void **mon)
{
    monitor_t *m = *mon;
    if (!m)
        return;
    zmq_close(m->sock);
    free(m);
    *mon = NULL;
}
