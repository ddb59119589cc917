/* The broker's loop: sockets, message dispatch, timers. */
#include "broker_impl.h"
#include "errf.h"
#include "clock.h"
#include "control_ep.h"
#include "log.h"
#include "http.h"
#include "security.h"
#include "verifier.h"
#include "shard.h"
#include "wake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <zmq.h>

double broker_now(void) { return nq_mono(); }

void broker_cfg_defaults(nq_broker_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->bind = "tcp://127.0.0.1:7555";
    cfg->control = NULL;                /* beside the DB (control_ep.h) */
    cfg->db_path = "nq.db";
    cfg->heartbeat_ms = 1000;
    cfg->liveness = 4;
    cfg->stall_s = 120;
    cfg->grace_s = 10;
    cfg->group_max = 1000;
    cfg->group_ms = 2;
}

/* Socket limits. Workers send results up to NQ_MAX_FRAME and may have thousands of messages in
   flight; clients send one small request at a time, so the control endpoint takes little of
   either: a flood of junk there cannot grow the broker by more than CTL_HWM * CTL_MAX_FRAME
   per connection. LINGER: how long a stopping broker still tries to deliver its last ACKs. */
#define WORKER_HWM 200000
#define CTL_HWM 64
#define CTL_MAX_FRAME (64 << 10)        /* a CTL_REQ is at most ~17 KiB (32 params of 255 bytes) */
#define LINGER_MS 2000
/* Lease table buckets (chains): 64 Ki, a chain of ~2 at 10^4 workers x 16 leases. */
#define LEASE_BUCKETS (1u << 16)

static void *socket_router(nq_broker_t *b, const char *ep, int curve, int control, char *err, size_t errlen)
{
    void *s = zmq_socket(b->ctx, ZMQ_ROUTER);
    int one = 1, linger = LINGER_MS, hwm = control ? CTL_HWM : WORKER_HWM;
    int64_t maxmsg = control ? CTL_MAX_FRAME : NQ_MAX_FRAME;
    zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (curve && security_server_setup(s, b->cfg.key_file, control ? SECURITY_ZAP_CONTROL : SECURITY_ZAP_WORKERS,
                                       err, errlen) != 0) {
        zmq_close(s);
        return NULL;
    }
    if (zmq_bind(s, ep) != 0) {
        snprintf(err, errlen, "cannot bind %s: %s", ep, zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

/* What can be refused without touching the DB or the network. */
static int broker_check_config(const nq_broker_cfg_t *c, char *err, size_t errlen)
{
    char pub[41], sec[41];
    if (!c->key_file && !c->insecure && !security_endpoint_is_local(c->bind))
        return nq_errf(err, errlen, "refusing to bind %s without keys: give --key and --authorized-keys "
                       "(see 'nq keygen'), or --insecure to accept any worker", c->bind);
    if (!c->key_file && !c->insecure && !security_endpoint_is_local(c->control))
        return nq_errf(err, errlen, "refusing to bind the control endpoint %s without keys: anyone could "
                       "submit and cancel jobs; give --key and --authorized-keys, or --insecure", c->control);
    if (c->key_file && !c->authorized)
        return nq_errf(err, errlen, "--key needs --authorized-keys (CURVE without an allow-list admits "
                       "any key pair)");
    if (c->control_keys && !c->key_file)
        return nq_errf(err, errlen, "--control-keys needs --key (the broker's own key pair)");
    /* clients have a list of their own: workers' keys must not cancel, submit or retry */
    if (c->key_file && !c->control_keys && !security_endpoint_is_local(c->control))
        return nq_errf(err, errlen, "the control endpoint %s is off loopback: give --control-keys with the "
                       "clients' public keys (never the workers')", c->control);
    if (c->key_file && security_load_key(c->key_file, pub, sec, err, errlen) != 0)
        return -1;
    if (c->key_file && !sec[0])
        return nq_errf(err, errlen, "%s has no secret key: give the broker its .key file", c->key_file);
    if (c->metrics && http_addr_check(c->metrics, c->http_token && c->http_token[0], err, errlen) != 0)
        return -1;
    return 0;
}

static void wake_endpoint(const nq_broker_t *b, char *ep, size_t len)
{
    snprintf(ep, len, "inproc://nq-broker-wake-%p", (const void *)b);
}

static int broker_open_sockets(nq_broker_t *b, char *err, size_t errlen)
{
    const nq_broker_cfg_t *c = &b->cfg;
    int keys = c->key_file != NULL;
    b->workers_sock = socket_router(b, c->bind, keys, 0, err, errlen);
    if (!b->workers_sock)
        return -1;
    int ctl_curve = keys && !security_endpoint_is_local(c->control);
    b->control_sock = socket_router(b, c->control, ctl_curve, 1, err, errlen);
    if (!b->control_sock)
        return -1;
    char ep[128];
    wake_endpoint(b, ep, sizeof ep);
    b->wake_sock = zmq_socket(b->ctx, ZMQ_PULL);
    if (!b->wake_sock || zmq_bind(b->wake_sock, ep) != 0)
        return nq_errf(err, errlen, "cannot bind %s: %s", ep, zmq_strerror(zmq_errno()));
    if (!(b->verifier = verifier_new(b->ctx, ep, c->db_path, err, errlen)))
        return -1;
    return listings_start(b, ep, err, errlen);   /* its answers end the poll through the wake socket */
}

void broker_wake(nq_broker_t *b)
{
    char ep[128];
    wake_endpoint(b, ep, sizeof ep);
    wake_poke(b->ctx, ep);
}

/* One broker per DB: two would lease the same shards (still exact, but every shard done twice). */
static void lock_path(const char *db_path, char *out, size_t len)
{
    snprintf(out, len, "%s.lock", db_path);
}

/* The lock file is removed when its holder ends (broker_db_unlock), so a process that opened it
   just before may hold a lock on a file no longer there: it checks that the path still names the
   file it locked, and tries again when not. */
static int lock_still_there(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int broker_db_lock(const char *db_path, int *created, char *err, size_t errlen)
{
    char path[PATH_MAX + 8];
    lock_path(db_path, path, sizeof path);
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        *created = fd >= 0;
        if (fd < 0 && errno == EEXIST)
            fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            return nq_errf(err, errlen, "%s: its folder does not exist", db_path);
        if (fd < 0)
            return nq_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            close(fd);
            return nq_errf(err, errlen, "another broker (or nq run) is using %s: stop it first, or use "
                           "another --db", db_path);
        }
        if (lock_still_there(fd, path))
            return fd;
        close(fd);                      /* its holder removed it as we opened it: the next one */
    }
}

void broker_db_unlock(int fd, const char *db_path, int remove)
{
    if (remove && fd >= 0) {            /* only while holding it: lockers check it is still there */
        char path[PATH_MAX + 8];
        lock_path(db_path, path, sizeof path);
        unlink(path);
    }
    if (fd >= 0)
        close(fd);                      /* releases the flock */
}

/* A DB this start created, and its SQLite side files: a start that fails (a busy port) leaves none. */
static void broker_db_remove(const char *db_path)
{
    static const char *const side[] = { "", "-wal", "-shm", "-journal" };
    char path[PATH_MAX + 16];
    for (size_t i = 0; i < sizeof side / sizeof *side; i++)
        if (snprintf(path, sizeof path, "%s%s", db_path, side[i]) < (int)sizeof path)
            unlink(path);
}

nq_broker_t *broker_new(const nq_broker_cfg_t *cfg, char *err, size_t errlen)
{
    nq_broker_t *b = calloc(1, sizeof *b);
    int lock_new = 0, db_new = 0, lock_fd;
    struct stat sb;
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    b->cfg = *cfg;
    b->stop = cfg->stop;
    if (!cfg->control && cfg->db_path &&
        control_ep_for_db(cfg->db_path, b->control_ep, sizeof b->control_ep, err, errlen) != 0) {
        free(b);
        return NULL;
    }
    if (!cfg->control)
        b->cfg.control = b->control_ep;
    cfg = &b->cfg;
    b->clock = cfg->clock ? cfg->clock : broker_now;
    b->now = b->clock();
    b->store_ok = 1;
    b->lock_fd = -1;
    if (getrandom(&b->nonce, sizeof b->nonce, 0) != sizeof b->nonce)
        b->nonce = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    b->lease_buckets = LEASE_BUCKETS;
    b->lease_tab = calloc(b->lease_buckets, sizeof *b->lease_tab);
    if (!b->lease_tab || broker_check_config(cfg, err, errlen) != 0)
        goto fail;                      /* refused before the DB is touched: no file appears */
    b->own_ctx = cfg->zmq_ctx == NULL;
    b->ctx = b->own_ctx ? zmq_ctx_new() : cfg->zmq_ctx;
    if (cfg->key_file && security_zap_start(b->ctx, cfg->authorized, cfg->control_keys, err, errlen) != 0)
        goto fail;
    if ((b->lock_fd = broker_db_lock(cfg->db_path, &lock_new, err, errlen)) < 0)
        goto fail;
    db_new = stat(cfg->db_path, &sb) != 0 && errno == ENOENT;   /* under the lock: no other broker's */
    b->store = store_open(cfg->db_path, 0, err, errlen);
    if (!b->store) {
        broker_db_unlock(b->lock_fd, cfg->db_path, lock_new);   /* a refused DB leaves nothing */
        b->lock_fd = -1;
    }
    if (b->store && cfg->local)
        store_set_local(b->store);
    if (b->store && sqlite3_open_v2(cfg->db_path, &b->query_db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(b->query_db);     /* then queries flush and use the store's connection */
        b->query_db = NULL;
    }
    if (b->query_db)
        sqlite3_busy_timeout(b->query_db, 2000);
    if (!b->store || lease_id_init(b, err, errlen) != 0 || broker_open_sockets(b, err, errlen) != 0)
        goto fail;
    if (jobs_load(b, err, errlen) != 0)
        goto fail;
    if (cfg->metrics && broker_metrics_start(b, err, errlen) != 0)
        goto fail;
    char qb[NQ_LOG_QLEN], qc[NQ_LOG_QLEN], qd[NQ_LOG_QLEN];
    nq_log(NQ_LOG_INFO, "broker.start", "bind=%s control=%s db=%s", nq_log_v(qb, sizeof qb, cfg->bind),
           nq_log_v(qc, sizeof qc, cfg->control), nq_log_v(qd, sizeof qd, cfg->db_path));
    return b;
fail:                                   /* a refused start leaves the folder as it was */
    lock_fd = b->lock_fd;
    b->lock_fd = -1;
    const char *db_path = cfg->db_path;  /* the caller's: cfg goes with b */
    broker_destroy(&b);                 /* the DB closed first, then removed while still locked */
    if (lock_fd >= 0 && db_new)
        broker_db_remove(db_path);
    if (lock_fd >= 0)
        broker_db_unlock(lock_fd, db_path, lock_new);
    return NULL;
}

int broker_endpoint(nq_broker_t *b, int which, char *buf, size_t len)
{
    return zmq_getsockopt(which ? b->control_sock : b->workers_sock, ZMQ_LAST_ENDPOINT, buf, &len);
}

/* Reads one [routing id][frame] pair; -1 when nothing is waiting. */
static int recv_routed(void *sock, zmq_msg_t *rid, zmq_msg_t *frame)
{
    if (zmq_msg_recv(rid, sock, ZMQ_DONTWAIT) < 0)
        return -1;
    int more = zmq_msg_more(rid);
    if (!more) {
        zmq_msg_close(frame);
        zmq_msg_init(frame);
        return 1;                       /* a lone frame: malformed */
    }
    zmq_msg_recv(frame, sock, 0);
    int extra = 0;
    while (zmq_msg_more(frame)) {       /* extra frames: drain them, count as malformed */
        zmq_msg_t junk;
        zmq_msg_init(&junk);
        zmq_msg_recv(&junk, sock, 0);
        int m = zmq_msg_more(&junk);
        zmq_msg_close(&junk);
        extra = 1;
        if (!m)
            break;
    }
    return extra;
}

/* A well-formed message refused for who sent it: counted, logged within the hostile-frame rate. */
static void refuse(nq_broker_t *b, const char *event, const char *worker, const char *why)
{
    b->stats.messages_bad++;
    if (ratelog_allow(b))
        nq_log(NQ_LOG_WARN, event, "worker=%s reason=\"%s\"", worker, why);
}

static void bad_message(nq_broker_t *b, const char *from, const char *why)
{
    b->stats.messages_bad++;
    if (ratelog_allow(b))
        nq_log(NQ_LOG_WARN, "message.bad", "from=%s reason=\"%s\" bad_total=%llu", from, why,
               (unsigned long long)b->stats.messages_bad);
}

/* Same connection, new nonce: the worker process restarted (or says so). Its old session's
   shards go back without costing them an attempt; the restart costs the peer instead. */
static void peer_restarted(nq_broker_t *b, nq_peer_t *p)
{
    double now = b->now;
    if (now - p->restart_window > RESTART_WINDOW_S) {
        p->restart_window = now;
        p->restarts = 0;
    }
    while (p->leases)
        leases_release(b, p->leases, 0, "holder restarted");
    /* counted on the connection (a new session is a new identity without keys) and on the
       identity (one key restarting over many connections) */
    if (++p->restarts > RESTARTS_PER_WINDOW || ident_restarted(b, p->rec))
        peer_misbehaved(b, p, "restarted more than twice a minute");
    store_worker_forget_idle(b->store, p->hello.worker_id);
}

static void on_hello(nq_broker_t *b, const void *rid, size_t len, const nq_hello_t *h, const char *key)
{
    nq_peer_t *p = peers_find(b, rid, len);
    if (p && strcmp(p->pubkey, key) != 0) {   /* another key on this routing id: not this peer */
        refuse(b, "hello.refused", p->hello.worker_id, "a different key on a known session");
        return;
    }
    if (key[0] && !store_worker_key_ok(b->store, h->worker_id, key)) {   /* names belong to keys */
        refuse(b, "hello.refused", h->worker_id, "worker id belongs to another key");
        return;
    }
    if (p && p->hello.nonce == h->nonce && strcmp(p->hello.worker_id, h->worker_id) == 0)
        goto welcome;                   /* a repeat (it reconnected): same session */
    if (p)
        peer_restarted(b, p);
    else if (!(p = peers_add(b, rid, len, h)))
        return;
    peers_identify(b, p, h, key);
    store_worker_seen(b->store, h->worker_id, h->host, p->pubkey[0] ? p->pubkey : NULL, h->threads);
    char qhost[NQ_LOG_QLEN], qbuild[NQ_LOG_QLEN];  /* free text from the wire: one quoted token each */
    nq_log(NQ_LOG_INFO, "worker.join", "worker=%s host=%s threads=%u build=%s", h->worker_id,
           nq_log_qs(qhost, sizeof qhost, h->host), h->threads, nq_log_qs(qbuild, sizeof qbuild, h->build));
welcome:;
    nq_msg_t w = { .type = NQ_MSG_WELCOME };
    w.u.welcome.heartbeat_ms = b->cfg.heartbeat_ms;
    w.u.welcome.liveness = b->cfg.liveness;
    w.u.welcome.broker_nonce = b->nonce;
    outbox_send(b, p, &w);
}

/* A message from a routing id we do not know: ask it to introduce itself. */
static void ask_hello(nq_broker_t *b, const void *rid, size_t len)
{
    nq_msg_t w = { .type = NQ_MSG_WELCOME };
    w.u.welcome.heartbeat_ms = b->cfg.heartbeat_ms;
    w.u.welcome.liveness = b->cfg.liveness;
    w.u.welcome.broker_nonce = b->nonce;
    outbox_send_rid(b, rid, len, &w);
}

/* Each endpoint tells a peer that came to the other one where to go, instead of leaving it to
   wait: one short answer per request, like any control reply. */
#define WORKERS_NOT_CONTROL "this is the broker's workers' endpoint (nq broker --bind), where nq worker " \
    "connects; the client commands use its control endpoint (nq broker --control; by default a socket " \
    "beside its DB, found with --db PATH)"
#define CONTROL_NOT_WORKERS "this is the broker's control endpoint, for nq submit, status and the other " \
    "client commands; a worker connects to its workers' endpoint (nq broker --bind)"

static void on_worker_message(nq_broker_t *b, const void *rid, size_t len, const nq_msg_t *m, const char *key)
{
    if (m->type == NQ_MSG_CTL_REQ) {
        nq_msg_t r = { .type = NQ_MSG_CTL_REP };
        r.u.ctl_rep.code = NQ_EXIT_USAGE;
        snprintf(r.u.ctl_rep.error, sizeof r.u.ctl_rep.error, "%s", WORKERS_NOT_CONTROL);
        outbox_send_rid(b, rid, len, &r);
        return;
    }
    if (m->type == NQ_MSG_HELLO) {
        on_hello(b, rid, len, &m->u.hello, key);
        return;
    }
    nq_peer_t *p = peers_find(b, rid, len);
    if (!p) {
        ask_hello(b, rid, len);
        return;
    }
    if (strcmp(key, p->pubkey) != 0) {  /* a routing id is an address, not an identity */
        refuse(b, "message.refused", p->hello.worker_id, "sent with another key");
        return;
    }
    p->last_recv = b->now;
    if (peer_quarantined(b, p) && m->type != NQ_MSG_BYE) {
        peer_dropped_frame(b, p);       /* cheap: no work, no store, a log line every 10 s */
        return;
    }
    switch (m->type) {
    case NQ_MSG_CREDIT:
        p->credit = m->u.credit.credit < NQ_CREDIT_MAX ? m->u.credit.credit : NQ_CREDIT_MAX;
        hungry_update(b, p);
        break;
    case NQ_MSG_HEARTBEAT:
        leases_heartbeat(b, p, &m->u.heartbeat);
        peers_devices(p, &m->u.heartbeat);
        break;
    case NQ_MSG_RESULT: results_on_result(b, p, &m->u.result); break;
    case NQ_MSG_SOLPART: solutions_on_part(b, p, &m->u.solpart); break;
    case NQ_MSG_BYE: peers_drop(b, p, 0, "bye"); break;
    default:
        bad_message(b, p->hello.worker_id, "unexpected message type for a worker");
        peer_misbehaved(b, p, "unexpected message type");
        break;
    }
}

/* A frame in another protocol version from a sender that is not a peer (yet): it is answered in
   ours, so that its own decoder says what is wrong ("wrong version: run the same nq release ...")
   instead of the broker looking dead to it. A worker gets what any unknown sender gets (a
   WELCOME, asking for a HELLO), a client a refusal that says the same in its error text. */
static void answer_wrong_version(nq_broker_t *b, void *sock, zmq_msg_t *rid)
{
    if (sock == b->workers_sock) {
        ask_hello(b, zmq_msg_data(rid), zmq_msg_size(rid));
        return;
    }
    char err[160];
    snprintf(err, sizeof err, "this broker speaks protocol %d only: run the same nq release on the broker, "
             "its workers and its clients", NQ_PROTO_VERSION);
    outbox_reply(b, zmq_msg_data(rid), zmq_msg_size(rid), NQ_EXIT_ERROR, err, NULL);
}

/* A decoded message from one of the two endpoints: rid is the sender, frame its bytes. */
typedef void (*on_msg_fn)(nq_broker_t *b, zmq_msg_t *rid, zmq_msg_t *frame, const nq_msg_t *m);

static void on_worker_frame(nq_broker_t *b, zmq_msg_t *rid, zmq_msg_t *frame, const nq_msg_t *m)
{
    char key[64];
    security_msg_key(frame, key, sizeof key);
    on_worker_message(b, zmq_msg_data(rid), zmq_msg_size(rid), m, key);
}

static void on_control_frame(nq_broker_t *b, zmq_msg_t *rid, zmq_msg_t *frame, const nq_msg_t *m)
{
    (void)frame;
    if (m->type == NQ_MSG_CTL_REQ)
        control_on_request(b, zmq_msg_data(rid), zmq_msg_size(rid), &m->u.ctl_req);
    else if (m->type == NQ_MSG_HELLO)
        outbox_reply(b, zmq_msg_data(rid), zmq_msg_size(rid), NQ_EXIT_USAGE, CONTROL_NOT_WORKERS, NULL);
    else
        bad_message(b, "client", "expected CTL_REQ");
}

/* Reads up to max messages waiting on sock; malformed ones are dropped, logged and counted. */
static void drain(nq_broker_t *b, void *sock, int max, const char *from, on_msg_fn on_msg)
{
    for (int i = 0; i < max; i++) {
        zmq_msg_t rid, frame;
        zmq_msg_init(&rid);
        zmq_msg_init(&frame);
        int rc = recv_routed(sock, &rid, &frame);
        char err[200];
        nq_msg_t m;
        int bad = rc == 0 ? proto_decode(zmq_msg_data(&frame), zmq_msg_size(&frame), &m, err, sizeof err)
                          : 0;
        if (rc > 0 || bad != 0) {
            nq_peer_t *p = sock == b->workers_sock ? peers_find(b, zmq_msg_data(&rid), zmq_msg_size(&rid)) : NULL;
            if (p && peer_quarantined(b, p)) {
                peer_dropped_frame(b, p);
            } else {
                bad_message(b, from, rc > 0 ? "wrong number of frames" : err);
                if (p)
                    peer_misbehaved(b, p, "malformed frame");
                else if (bad == NQ_PROTO_WRONG_VERSION)
                    answer_wrong_version(b, sock, &rid);
            }
        } else if (rc == 0) {
            on_msg(b, &rid, &frame, &m);
            proto_msg_free(&m);
        }
        zmq_msg_close(&rid);
        zmq_msg_close(&frame);
        if (rc < 0)
            return;
    }
}

/* The lists the lister has built: each to the job or the client it is for. */
static void lists_collect(nq_broker_t *b)
{
    nq_lister_done_t d;
    nq_listing_t *x;
    while (listings_take(b, &x, &d)) {
        if (x && x->job)
            jobs_listed(b, x->job, d.ticket, &d.list, d.err, d.seconds);
        else if (x)
            submit_listed(b, x, &d.list, d.why, d.err);
        shards_destroy(&d.list);        /* not taken: its job ended meanwhile, or it was refused */
        free(x);
    }
}

static long poll_timeout_ms(nq_broker_t *b, double now)
{
    double t = b->cfg.heartbeat_ms / 4000.0;
    if (t > 0.05)
        t = 0.05;                       /* a stop flag is noticed within 50 ms (broker_wake: at once) */
    if (txn_dirty(b)) {
        double due = b->txn_since + b->cfg.group_ms / 1000.0 - now;
        if (due < t)
            t = due;
    }
    return t <= 0 ? 0 : (long)(t * 1000) + 1;
}

/* A round that holds the loop for long is a stall every peer and client feels, even when the
   answers stay right: it is logged with where the time went (CPU against wall tells a busy loop
   from one waiting for a core or the disk). Only a round that spent SLOW_ROUND_S of the loop's own
   CPU is a warning (docs/campaign.md: a bug to report); one that waited is the machine's load and
   an info line: `nq run solve 100000000` on a busy 2-core machine warned of rounds of 0.4 s wall
   and 0.05 s CPU, while its 400 MB of columns arrived and the solver held both cores. */
#define SLOW_ROUND_S 0.25
enum { PH_DRAIN, PH_LISTS, PH_COMMIT, PH_TIMERS, PH_N };

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void round_report(const double t[PH_N + 1], double cpu0)
{
    if (t[PH_N] - t[0] < SLOW_ROUND_S)
        return;
    double cpu = thread_cpu() - cpu0;
    nq_log(cpu >= SLOW_ROUND_S ? NQ_LOG_WARN : NQ_LOG_INFO, "broker.slow_round",
           "seconds=%.3f cpu=%.3f drain=%.3f lists=%.3f commit=%.3f timers=%.3f",
           t[PH_N] - t[0], cpu, t[PH_DRAIN + 1] - t[PH_DRAIN], t[PH_LISTS + 1] - t[PH_LISTS],
           t[PH_COMMIT + 1] - t[PH_COMMIT], t[PH_TIMERS + 1] - t[PH_TIMERS]);
}

int broker_round(nq_broker_t *b, long timeout_ms)
{
    double t[PH_N + 1], cpu0;
    zmq_pollitem_t items[3] = {
        { b->workers_sock, 0, ZMQ_POLLIN, 0 },
        { b->control_sock, 0, ZMQ_POLLIN, 0 },
        { b->wake_sock, 0, ZMQ_POLLIN, 0 },
    };
    if (zmq_poll(items, 3, timeout_ms) < 0 && errno != EINTR)
        return -1;
    if (items[2].revents & ZMQ_POLLIN) {
        char c;
        while (zmq_recv(b->wake_sock, &c, 1, ZMQ_DONTWAIT) >= 0)
            ;                           /* only here to end the poll: the caller's loop decides */
    }
    b->now = b->clock();
    t[PH_DRAIN] = nq_mono();
    cpu0 = thread_cpu();
    txn_begin(b);                      /* every write of this round rides the group commit */
    if (items[0].revents & ZMQ_POLLIN)
        drain(b, b->workers_sock, 10000, "worker", on_worker_frame);
    if (items[1].revents & ZMQ_POLLIN)
        drain(b, b->control_sock, 100, "client", on_control_frame);
    t[PH_LISTS] = nq_mono();
    lists_collect(b);                   /* lists built off the loop: submits answered, jobs served */
    results_collect_verified(b);        /* solutions checked off the loop */
    b->now = b->clock();                /* draining 10,000 frames takes time: timers see after it */
    t[PH_COMMIT] = nq_mono();
    if (results_due(b, b->now))
        results_flush(b);
    t[PH_TIMERS] = nq_mono();
    /* dispatch and the timers below must not write in autocommit: a control request (status
       answers from committed data) or the flush above closed the group; an fsync per lease
       took the broker from 48,500 to 2,250 results/s under a `nq status` loop */
    txn_begin(b);
    peers_tick(b, b->now);
    if (idents_tick(b, b->now))
        peers_wake(b);                  /* a quarantine ended */
    jobs_tick(b, b->now);
    progress_tick(b, b->now);
    solutions_tick(b, b->now);
    spotcheck_tick(b, b->now);
    jobs_settle_due(b);                 /* jobs whose counters moved: done, failed, or not yet */
    dispatch_run(b);
    jobs_settle_due(b);
    broker_metrics_tick(b, b->now);
    if (b->txn_open && !txn_dirty(b))
        txn_end_idle(b);         /* nothing to write: the lock goes before the poll waits */
    if (b->now - b->db_checked_at >= 0.25) {   /* an idle broker notices too (a stat: ~1 us) */
        b->db_checked_at = b->now;
        txn_db_check(b);
    }
    outbox_flush(b);
    t[PH_N] = nq_mono();
    round_report(t, cpu0);
    return 0;
}

const char *broker_error(const nq_broker_t *b)
{
    return b->db_lost ? b->db_lost_why : "";
}

int broker_run(nq_broker_t *b, const atomic_int *stop)
{
    b->stop = stop;
    while (!atomic_load(stop) && !b->db_lost) {
        b->now = b->clock();
        if (broker_round(b, poll_timeout_ms(b, b->now)) != 0)
            break;
    }
    b->stopping = 1;
    listings_stop(b);                   /* a list being built gives up; its client hears so */
    if (!b->db_lost)
        results_flush(b);
    outbox_flush(b);                    /* the last ACKs and replies (LINGER gives them time) */
    nq_log(NQ_LOG_INFO, "broker.stop", "results=%llu commits=%llu commit_seconds=%.3f bad_messages=%llu",
           (unsigned long long)b->stats.results_total, (unsigned long long)b->stats.commits,
           b->stats.commit_seconds_sum, (unsigned long long)b->stats.messages_bad);
    return b->db_lost ? -1 : 0;
}

/* libzmq leaves a bound unix socket's file behind; this broker holds the DB's lock, so a file at
   its endpoint is its own (a broker that starts on it later would unlink it anyway). */
static void close_bound(void *sock, const char *ep)
{
    if (!sock)
        return;
    zmq_close(sock);
    if (ep && strncmp(ep, "ipc://", 6) == 0 && strcmp(ep + 6, "*") != 0)
        unlink(ep + 6);
}

void broker_destroy(nq_broker_t **bp)
{
    nq_broker_t *b = *bp;
    if (!b)
        return;
    broker_metrics_stop(b);
    listings_stop(b);                   /* before the sockets it answers on and pokes */
    outbox_flush(b);                    /* ... and its answers go out */
    lister_destroy(&b->lister);
    lister_destroy(&b->orderer);
    results_free_all(b);
    outbox_free(b);
    dispatch_free(b);
    spotcheck_free_all(b);
    peers_free_all(b);
    leases_free_all(b);
    idents_free_all(b);
    jobs_free_all(b);
    close_bound(b->workers_sock, b->cfg.bind);
    close_bound(b->control_sock, b->cfg.control);
    if (b->wake_sock)
        zmq_close(b->wake_sock);
    security_zap_stop(b->ctx);
    if (b->own_ctx && b->ctx)
        zmq_ctx_term(b->ctx);
    sqlite3_close(b->query_db);
    store_destroy(&b->store);
    broker_db_unlock(b->lock_fd, b->cfg.db_path, 1);   /* no .lock left behind */
    free(b->lease_tab);
    free(b);
    *bp = NULL;
}
