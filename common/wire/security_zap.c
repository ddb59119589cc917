/*
 * The ZAP handler (ZeroMQ RFC 27): libzmq asks it, for every CURVE
 * handshake on a socket with a ZAP domain, whether the client's public key
 * may connect. Without it CURVE admits any key pair.
 *
 * Two allow-lists, one per ZAP domain: workers' keys (--authorized-keys) on
 * the workers' endpoint (SECURITY_ZAP_WORKERS) and clients' keys
 * (--control-keys) on the control endpoint (SECURITY_ZAP_CONTROL). With one
 * list for both, a worker's key could cancel jobs, submit priority-10^6 jobs
 * and retry; no key may be in both lists.
 */
#include "log.h"
#include "errf.h"
#include "security.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZAP_MAX_KEYS 100000

typedef struct {
    char (*keys)[41];           /* sorted once loaded: a handshake is a binary search */
    size_t nkeys;
} keylist_t;

typedef struct {
    void *ctx;
    pthread_t thread;
    atomic_int stop;
    void *ready_sock;           /* bound before the thread starts, so no handshake is ever unanswered */
    keylist_t workers, clients;
} zap_t;

static zap_t *zap_running;      /* one broker per process */

static int keys_add(keylist_t *z, const char *k)
{
    uint8_t raw[32];
    if (strlen(k) != 40 || !zmq_z85_decode(raw, k) || z->nkeys == ZAP_MAX_KEYS)
        return -1;
    char (*nk)[41] = realloc(z->keys, (z->nkeys + 1) * sizeof *nk);
    if (!nk)
        return -1;
    z->keys = nk;
    snprintf(z->keys[z->nkeys++], 41, "%s", k);
    return 0;
}

static int keys_load_file(keylist_t *z, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return nq_errf(err, errlen, "cannot read %s", path);
    char line[256];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *l = line;
        while (*l == ' ' || *l == '\t') l++;
        l[strcspn(l, "\r\n")] = 0;
        size_t len = strlen(l);
        while (len && (l[len - 1] == ' ' || l[len - 1] == '\t'))
            l[--len] = 0;
        if (len == 40 && keys_add(z, l) == 0)   /* a key first: Z85 keys may start with '#' */
            continue;
        if (*l == '#' || *l == 0)
            continue;
        {
            snprintf(err, errlen, "%s:%d: not a Z85 public key (40 characters)", path, lineno);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

static int keys_load(keylist_t *z, const char *path, char *err, size_t errlen)
{
    DIR *d = opendir(path);
    if (!d)
        return keys_load_file(z, path, err, errlen);
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".pub") != 0)
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        rc = keys_load_file(z, full, err, errlen);
    }
    closedir(d);
    return rc;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static int key_allowed(const keylist_t *z, const char *k)
{
    return z->nkeys && bsearch(k, z->keys, z->nkeys, sizeof *z->keys, key_cmp) != NULL;
}

/* The list for a handshake's ZAP domain; NULL for a domain nq never sets. */
static const keylist_t *domain_list(const zap_t *z, zmq_msg_t *domain)
{
    size_t n = zmq_msg_size(domain);
    const char *d = zmq_msg_data(domain);
    if (n == strlen(SECURITY_ZAP_WORKERS) && memcmp(d, SECURITY_ZAP_WORKERS, n) == 0)
        return &z->workers;
    if (n == strlen(SECURITY_ZAP_CONTROL) && memcmp(d, SECURITY_ZAP_CONTROL, n) == 0)
        return &z->clients;
    return NULL;
}

static void zap_answer(zap_t *z, void *sock)
{
    zmq_msg_t f[7];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, 0) < 0) { zmq_msg_close(&m); break; }
        more = zmq_msg_more(&m);
        if (n < 7) f[n++] = m; else zmq_msg_close(&m);
    }
    if (n < 6)
        goto out;
    char key[41] = "", status[4] = "400", *text = "key not allowed";
    const keylist_t *list = domain_list(z, &f[2]);
    if (n == 7 && zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0 &&
        zmq_msg_size(&f[6]) == 32) {
        zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
        if (list && key_allowed(list, key)) {
            snprintf(status, sizeof status, "200");
            text = "OK";
        }
    }
    if (status[0] != '2')
        nq_log(NQ_LOG_WARN, "auth.refused", "key=%s endpoint=%s", key[0] ? key : "(none)",
               list == &z->clients ? "control" : "workers");
    zmq_send(sock, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(sock, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), ZMQ_SNDMORE);
    zmq_send(sock, status, 3, ZMQ_SNDMORE);
    zmq_send(sock, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(sock, key, status[0] == '2' ? 40 : 0, ZMQ_SNDMORE);   /* user id = the key */
    zmq_send(sock, "", 0, 0);
out:
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

static void *zap_main(void *arg)
{
    zap_t *z = arg;
    zmq_pollitem_t it = { z->ready_sock, 0, ZMQ_POLLIN, 0 };
    while (!atomic_load(&z->stop)) {
        if (zmq_poll(&it, 1, 200) > 0 && (it.revents & ZMQ_POLLIN))
            zap_answer(z, z->ready_sock);
    }
    return NULL;
}

/* Loads one allow-list, sorted; -1 with err when it cannot be read or lists no key. */
static int list_load(keylist_t *l, const char *path, const char *who, char *err, size_t errlen)
{
    if (keys_load(l, path, err, errlen) != 0)
        return -1;
    if (l->nkeys == 0)
        return nq_errf(err, errlen, "%s lists no public keys: no %s could connect", path, who);
    qsort(l->keys, l->nkeys, sizeof *l->keys, key_cmp);
    return 0;
}

/* A key in both lists would let a worker's machine control the broker: refused. */
static int lists_apart(const zap_t *z, const char *authorized, const char *control, char *err, size_t errlen)
{
    for (size_t i = 0; i < z->clients.nkeys; i++)
        if (key_allowed(&z->workers, z->clients.keys[i]))
            return nq_errf(err, errlen, "key %s is in both %s (workers) and %s (clients): give clients keys of"
                           " their own", z->clients.keys[i], authorized, control);
    return 0;
}

static void zap_free(zap_t *z)
{
    free(z->workers.keys);
    free(z->clients.keys);
    free(z);
}

int security_zap_start(void *ctx, const char *authorized, const char *control, char *err, size_t errlen)
{
    if (!authorized)
        return nq_errf(err, errlen, "--key needs --authorized-keys (CURVE without an allow-list admits "
                       "any key pair)");
    zap_t *z = calloc(1, sizeof *z);
    if (!z)
        return nq_errf(err, errlen, "out of memory");
    z->ctx = ctx;
    if (list_load(&z->workers, authorized, "worker", err, errlen) != 0 ||
        (control && (list_load(&z->clients, control, "client", err, errlen) != 0 ||
                     lists_apart(z, authorized, control, err, errlen) != 0)))
        goto fail;
    z->ready_sock = zmq_socket(ctx, ZMQ_REP);
    int linger = 0;
    zmq_setsockopt(z->ready_sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(z->ready_sock, "inproc://zeromq.zap.01") != 0) {
        snprintf(err, errlen, "cannot start the ZAP handler: %s", zmq_strerror(zmq_errno()));
        zmq_close(z->ready_sock);
        goto fail;
    }
    if (pthread_create(&z->thread, NULL, zap_main, z) != 0) {
        zmq_close(z->ready_sock);
        snprintf(err, errlen, "cannot start the ZAP thread");
        goto fail;
    }
    char qw[NQ_LOG_QLEN], qc[NQ_LOG_QLEN];
    nq_log(NQ_LOG_INFO, "auth.start", "worker_keys=%zu worker_keys_from=%s client_keys=%zu client_keys_from=%s",
           z->workers.nkeys, nq_log_v(qw, sizeof qw, authorized), z->clients.nkeys,
           nq_log_v(qc, sizeof qc, control ? control : "-"));
    zap_running = z;
    return 0;
fail:
    zap_free(z);
    return -1;
}

void security_zap_stop(void *ctx)
{
    zap_t *z = zap_running;
    if (!z || z->ctx != ctx)
        return;
    atomic_store(&z->stop, 1);
    pthread_join(z->thread, NULL);
    zmq_close(z->ready_sock);
    zap_free(z);
    zap_running = NULL;
}
