/*
 * `nq run`: one command, one machine. An embedded broker and local workers in
 * one process, talking over inproc:// — the very broker and worker code of the
 * distributed path, only the transport differs. Re-running the same command
 * resumes the stored job, or prints its stored result at once.
 */
#include "bench_gpu.h"
#include "broker.h"
#include "cli.h"
#include "clock.h"
#include "cmd_args.h"
#include "control.h"
#include "http.h"
#include "log.h"
#include "render.h"
#include "signals.h"
#include "store.h"
#include "u128.h"
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define RUN_WORKERS_EP "inproc://nq-run-workers"
#define RUN_CONTROL_EP "inproc://nq-run-control"
/* The local workers' id, the same in every run: a job resumed four times was counted by one
   worker, not by four (a worker's default id names its process). */
#define RUN_WORKER_ID "local"

typedef struct { nq_broker_t *b; atomic_int stop, ended; int rc; } broker_thread_t;
typedef struct { nq_worker_t *w; atomic_int stop, ended; int rc; char err[512]; } worker_thread_t;

static void *broker_main(void *arg)
{
    broker_thread_t *t = arg;
    t->rc = broker_run(t->b, &t->stop);
    atomic_store(&t->ended, 1);         /* before being told to: its DB file went away */
    return NULL;
}

static void *worker_main(void *arg)
{
    worker_thread_t *t = arg;
    t->rc = worker_run(t->w, &t->stop, t->err, sizeof t->err);
    atomic_store(&t->ended, 1);         /* before being told to: its GPU failed */
    return NULL;
}

/*
 * What job creation would refuse, checked before any file is touched: a refused
 * `nq run` must leave no DB and no lock behind. submit_create checks it all again.
 */
static int run_check_spec(const nq_job_spec_t *s)
{
    char err[512];
    if (s->quorum > 1)
        return cli_usage_error("run", "--quorum needs independent workers: use nq broker and several nq workers");
    if (s->verify_ppm > 0)
        return cli_usage_error("run", "--verify-rate needs independent workers to check each other: use nq "
                               "broker and several nq workers");
    return submit_check(s, err, sizeof err) == 0 ? 0 : cli_usage_error("run", "%s", err);
}

static int path_missing(const char *path)
{
    struct stat st;
    return lstat(path, &st) != 0 && errno == ENOENT;
}

/*
 * Takes away the DB that this command created for a job it then refused, so a
 * refused command leaves nothing behind (its lock file goes with broker_db_unlock).
 * Only called while holding the lock: no other nq process is using it.
 */
static void run_unmake(const char *db)
{
    static const char *const files[] = { "", "-wal", "-shm", "-journal", NULL };
    char p[4200];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s%s", db, files[i]);
        unlink(p);
    }
}

/* Resumes the stored job this command means, or creates it. 0, or an exit code (reported). */
static int run_find_or_create(nq_store_t *st, nq_job_spec_t *spec, int fresh, uint64_t *id, int *done)
{
    char err[512];
    nq_job_row_t row;
    *done = 0;
    if (fresh || store_job_find_same(st, spec, id) != 0)
        return submit_create(st, spec, id, err, sizeof err) == 0 ? 0 : cli_usage_error("run", "%s", err);
    if (store_job_load(st, *id, &row, err, sizeof err) != 0)
        return cli_error("run", "%s", err);   /* the job to resume holds what nq never wrote */
    if (row.state == NQ_JOB_DONE) {
        *done = 1;
        return 0;
    }
    if (row.state != NQ_JOB_RUNNING && row.state != NQ_JOB_PENDING) {
        store_shards_retry(st, *id);    /* failed or cancelled earlier: try again */
        store_job_set_state(st, *id, NQ_JOB_RUNNING);
    }
    fprintf(stderr, "nq run: resuming job %llu (%llu of %llu shards done)\n", (unsigned long long)*id,
            (unsigned long long)row.shards_done, (unsigned long long)row.shards_total);
    return 0;
}

/* The DB this command created, taken away again when its embedded broker could not start (a busy
   --http port), under the DB's lock like run_prepare. */
static void run_unmake_locked(const char *db)
{
    char err[512];
    int lock_was_new, lock = broker_db_lock(db, &lock_was_new, err, sizeof err);
    if (lock < 0)
        return;                         /* another nq took it meanwhile: it is theirs now */
    run_unmake(db);
    broker_db_unlock(lock, db, lock_was_new);
}

/* Finds the job this command means (resume) or creates it, holding the DB's lock; *db_new: the DB
   did not exist before. */
static int run_prepare(const char *db, nq_job_spec_t *spec, int fresh, uint64_t *id, int *done, int *db_new)
{
    char err[512];
    int db_was_new = *db_new = path_missing(db), lock_was_new;
    int lock = broker_db_lock(db, &lock_was_new, err, sizeof err);   /* no job in a DB a broker owns */
    if (lock < 0)
        return cli_error("run", "%s", err);
    nq_store_t *st = store_open(db, 0, err, sizeof err);
    int rc = st ? run_find_or_create(st, spec, fresh, id, done) : cli_error("run", "%s", err);
    store_destroy(&st);
    if (rc && db_was_new)
        run_unmake(db);
    broker_db_unlock(lock, db, rc == 0 || lock_was_new);   /* the embedded broker takes it again; a
                                                             refused run leaves the folder as it was */
    return rc;
}

/* This run's pace: when it began, and the shards done before it (a resume's, which this run's
   rate must not count: a resumed N=19 once showed 52,741 shards/s). */
typedef struct {
    double started;
    uint64_t done0;
    int have0;
} run_pace_t;

/* Shards done and total of a progress reply, this run's rate and the ETA it gives: 0, or -1 if
   unknown (nothing done in this run yet). */
static int job_pace(const msgpack_object *job, run_pace_t *p, uint64_t *done, uint64_t *total, double *rate,
                    double *eta)
{
    double el = nq_mono() - p->started;
    if (client_doc_u64(job, "shards_total", 1, UINT64_MAX, total) != 0 ||
        client_doc_u64(job, "shards_done", 0, *total, done) != 0)
        return -1;
    if (!p->have0) {
        p->done0 = *done;
        p->have0 = 1;
    }
    if (el <= 0 || *done <= p->done0)
        return -1;
    *rate = (double)(*done - p->done0) / el;
    *eta = (double)(*total - *done) / *rate;
    return 0;
}

/* Seconds as the bar shows them: 25s, 3m05s, 2h10m. */
static const char *eta_str(double s, char *buf, size_t len)
{
    unsigned long long t = s >= 0 && s < 1e9 ? (unsigned long long)(s + 0.5) : 0;
    if (!(s >= 0 && s < 1e9)) snprintf(buf, len, "-");
    else if (t < 60) snprintf(buf, len, "%llus", t);
    else if (t < 3600) snprintf(buf, len, "%llum%02llus", t / 60, t % 60);
    else snprintf(buf, len, "%lluh%02llum", t / 3600, t / 60 % 60);
    return buf;
}

/* The bar; eta: the broker's estimate (nq status's, which weighs a count's work by its nodes), or
   below 0 to take the shards' pace. */
static void progress_bar(const msgpack_object *job, run_pace_t *pace, double eta_known)
{
    uint64_t done, total;
    double rate, eta;
    if (job_pace(job, pace, &done, &total, &rate, &eta) != 0)
        return;
    int width = 30, fill = (int)((double)done / (double)total * width);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    char d[NQ_U128_GROUPED], t[NQ_U128_GROUPED], e[32];
    fprintf(stderr, "\r[%s] %s/%s shards  %.*f/s  ETA %s   ", bar, u128_group(done, d),
            u128_group(total, t), rate < 10 ? 2 : rate < 1000 ? 1 : 0, rate,
            eta_str(eta_known >= 0 ? eta_known : eta, e, sizeof e));
}

/* Where stderr is not a terminal (a log, `| tee`): a plain line every PLAIN_EVERY_S seconds, which
   a carriage-returned bar would not give (nq run count 19 2>&1 | tee log was silent for 31 s). */
#define PLAIN_EVERY_S 5

static void progress_line(const msgpack_object *job, run_pace_t *pace, double eta_known)
{
    uint64_t done = 0, total = 0;
    double rate = 0, eta = -1;
    char d[NQ_U128_GROUPED], t[NQ_U128_GROUPED], e[32];
    int known = job_pace(job, pace, &done, &total, &rate, &eta) == 0;
    if (!known && total == 0)
        return;
    fprintf(stderr, "nq run: %s/%s shards done (%.1f%%), %.*f/s this run, ETA %s\n", u128_group(done, d),
            u128_group(total, t), total ? 100.0 * (double)done / (double)total : 0.0,
            rate < 10 ? 2 : rate < 1000 ? 1 : 0, rate,
            known || eta_known >= 0 ? eta_str(eta_known >= 0 ? eta_known : eta, e, sizeof e) : "-");
}

/* The job's ETA as nq status gives it, or -1. A query of the committed rows: asked once a second. */
static double status_eta(nq_client_opts_t *co, uint64_t id)
{
    nq_ctl_req_t req = { .job = id };
    nq_client_reply_t rep;
    double eta = -1;
    snprintf(req.op, sizeof req.op, "status");
    client_call(co, &req, &rep);
    const msgpack_object *o = rep.code == 0 ? render_get(&rep.doc, "eta") : NULL;
    if (o && (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32))
        eta = o->via.f64;
    client_reply_free(&rep);
    return eta;
}

/*
 * How long to wait before asking again: a quarter of the ETA, from 5 ms to
 * 200 ms. Each question wakes this thread and the broker's, and on a machine
 * whose cores all count that costs the count (every 10 ms: 6 % at N=18 on two
 * cores); near the end it is short, so the end is still seen within ~5 ms.
 */
static useconds_t poll_interval_us(const msgpack_object *job, run_pace_t *pace)
{
    uint64_t done, total;
    double rate, eta;
    if (job_pace(job, pace, &done, &total, &rate, &eta) != 0)
        return 20000;
    double us = eta * 1e6 / 4;
    return us < 5000 ? 5000 : us > 200000 ? 200000 : (useconds_t)us;
}

/* Waits for the job to end (or a signal, or the worker's or the broker's end); returns its final
   state name, or "" when interrupted. */
static const char *run_wait(void *ctx, uint64_t id, const atomic_int *worker_ended, const atomic_int *broker_ended)
{
    nq_client_opts_t co = { .broker = RUN_CONTROL_EP, .zmq_ctx = ctx, .timeout_ms = 30000 };
    nq_ctl_req_t req = { .job = id };
    snprintf(req.op, sizeof req.op, "progress");   /* from the broker's memory: cheap to ask often */
    int tty = isatty(STDERR_FILENO);
    double eta = -1, eta_asked = 0, said = -PLAIN_EVERY_S;   /* the first line at once */
    run_pace_t pace = { .started = nq_mono() };
    static char state[32];
    while (!nq_stop && !atomic_load(worker_ended) && !atomic_load(broker_ended)) {
        nq_client_reply_t rep;
        useconds_t wait = 20000;
        int plain_due = !tty && nq_mono() - said >= PLAIN_EVERY_S;
        if ((tty && nq_mono() - eta_asked >= 1) || plain_due) {
            eta = status_eta(&co, id);
            eta_asked = nq_mono();
        }
        client_call(&co, &req, &rep);
        if (rep.code == 0) {
            const msgpack_object *s = render_get(&rep.doc, "state");
            int str = s && s->type == MSGPACK_OBJECT_STR && s->via.str.size < sizeof state;
            snprintf(state, sizeof state, "%.*s", str ? (int)s->via.str.size : 0, str ? s->via.str.ptr : "");
            double eta_now = eta >= 0 ? eta - (nq_mono() - eta_asked) : -1;
            if (tty)
                progress_bar(&rep.doc, &pace, eta_now);
            if (plain_due) {
                progress_line(&rep.doc, &pace, eta_now);
                said = nq_mono();
            }
            wait = poll_interval_us(&rep.doc, &pace);
        }
        client_reply_free(&rep);
        if (!strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "cancelled"))
            break;
        usleep(wait);
    }
    if (tty)
        fputc('\n', stderr);
    return nq_stop || atomic_load(worker_ended) || atomic_load(broker_ended) ? "" : state;
}

/* The stored answer, through the same offline path as `nq result --db`. */
static int print_result(const char *db, uint64_t id, int json)
{
    nq_client_opts_t co = { .db = db, .quiet = 1 };
    nq_ctl_req_t req = { .job = id };
    nq_client_reply_t rep;
    snprintf(req.op, sizeof req.op, "result");
    int rc = client_call_cmd("run", &co, &req, &rep);
    if (rc)
        return rc;
    if (json)
        render_json(stdout, &rep.doc);
    else
        render_result(stdout, &rep.doc);
    rc = client_doc_str_is(&rep.doc, "state", "done") ? 0 : NQ_EXIT_NO;
    client_reply_free(&rep);
    return rc;
}

/*
 * The DB alone, as it was before the run: SQLite deletes the -wal and -shm files when the last
 * connection that may write closes, but the stored answer is read through a read-only one, which
 * leaves them. A connection that may write, opened and closed last, takes them away (where
 * another process still uses the DB, it is not the last, and they stay as they must).
 */
static void run_tidy(const char *db)
{
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
        sqlite3_exec(h, "PRAGMA schema_version", NULL, NULL, NULL);   /* opens the WAL */
    sqlite3_close(h);
}

/* Where to watch the run: http://HOST:PORT/jobs/ID, with the port really bound (ADDR may say 0). */
static void print_url(nq_broker_t *b, uint64_t id)
{
    char url[300];
    fprintf(stderr, "nq run: watch it at %sjobs/%llu\n", broker_metrics_url(b, url, sizeof url),
            (unsigned long long)id);
}

/* Broker and workers in threads of this process, until the job ends or we are told to stop. */
static int run_embedded(const char *db, uint64_t id, const nq_cmd_args_t *a, const char *token,
                        nq_gpu_t *const *gpus, uint32_t ngpu, const char **state)
{
    uint32_t workers = a->workers;
    char err[512] = "";
    void *ctx = zmq_ctx_new();
    nq_broker_cfg_t bc;
    broker_cfg_defaults(&bc);
    bc.bind = RUN_WORKERS_EP;
    bc.control = RUN_CONTROL_EP;
    bc.db_path = db;
    bc.zmq_ctx = ctx;
    bc.grace_s = 0;                     /* no worker of an earlier run can come back */
    bc.local = 1;                       /* in-process workers: no fsync per commit (store_set_local) */
    bc.metrics = a->http;
    bc.http_token = token;
    bc.stop = &nq_stop;                 /* Ctrl-C while the jobs load */
    broker_thread_t bt = { .b = broker_new(&bc, err, sizeof err) };
    if (!bt.b) {
        zmq_ctx_term(ctx);
        if (atomic_load(&nq_stop))
            return 0;                   /* *state stays "": reported as interrupted */
        *state = "unstarted";
        return cli_error("run", "%s", err);
    }
    nq_worker_cfg_t wc;
    worker_cfg_defaults(&wc);
    wc.connect = RUN_WORKERS_EP;
    wc.zmq_ctx = ctx;
    wc.threads = workers;
    wc.id = RUN_WORKER_ID;
    /* the broker's commit (an fsync) delays the next task by milliseconds: with one shard queued
       per process, threads ran dry between short shards (N=18 at depth 2: 3.9 s on 2 threads
       against 2.8 s at depth 1); a queue of two per thread covers it */
    wc.prefetch = 2 * workers;
    wc.gpus = gpus;                     /* the threads feed them and count on the CPU beside them */
    wc.ngpu = ngpu;
    wc.gpu_only = a->gpu_only;
    worker_thread_t wt = { .w = worker_new(&wc, err, sizeof err) };
    pthread_t bth, wth;
    int rc = 0;
    if (!wt.w) {
        rc = cli_error("run", "%s", err);
        broker_destroy(&bt.b);
        zmq_ctx_term(ctx);
        return rc;
    }
    if (a->http)
        print_url(bt.b, id);
    pthread_create(&bth, NULL, broker_main, &bt);
    pthread_create(&wth, NULL, worker_main, &wt);
    *state = run_wait(ctx, id, &wt.ended, &bt.ended);
    /* workers first: they hand back and say BYE (without waiting for ACKs when the broker ended) */
    atomic_store(&wt.stop, atomic_load(&bt.ended) ? WORKER_STOP_BROKER_GONE : 1);
    worker_wake(wt.w);
    pthread_join(wth, NULL);
    atomic_store(&bt.stop, 1);
    broker_wake(bt.b);
    pthread_join(bth, NULL);
    worker_destroy(&wt.w);
    if (bt.rc != 0)                     /* its DB went away: what was not acknowledged is not stored */
        rc = cli_error("run", "%s", broker_error(bt.b));
    else if (wt.rc != 0)                /* its GPU failed: the job is left to resume */
        rc = cli_error("run", "%s", wt.err);
    broker_destroy(&bt.b);
    zmq_ctx_term(ctx);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    nq_cmd_args_t a;
    nq_log_set_level(NQ_LOG_WARN);      /* a local run talks in its progress bar; --log-level overrides */
    int rc = cmd_args_parse("run", "db,workers,json,fresh,algo,all,depth,priority,max-attempts,quorum,"
                            "solutions,restarts,seed,max-steps,shard-seconds,log-level,http,http-token-file,"
                            "verify-rate,gpu,gpu-device,gpu-kernel,gpu-only", argc, argv, &a);
    if (rc || (rc = cmd_args_job("run", &a)))
        return rc;
    const char *db = a.client.db ? a.client.db : "nq.db";
    nq_job_spec_t spec;
    char err[512];
    if ((rc = control_spec_from_params(&a.req, &spec, err, sizeof err)))
        return cli_usage_error("run", "%s", err);
    if ((rc = run_check_spec(&spec)))
        return rc;
    static char token[HTTP_TOKEN_MAX + 1];
    if ((rc = cli_http_options("run", a.http, a.http_token_file, token, sizeof token)))
        return rc;
    uint64_t id;
    int done = 0, db_new = 0;
    nq_gpu_t *gpus[NQ_GPU_MAX_DEVICES];
    uint32_t ngpu = 0;
    /* the devices before the DB: a run that cannot count on them leaves nothing behind */
    if (a.gpu && (rc = cli_gpu_open("run", &a.gpu_sel, a.gpu_kernel, gpus, &ngpu)))
        return rc < 0 ? NQ_EXIT_OK : rc;
    if ((rc = run_prepare(db, &spec, a.fresh, &id, &done, &db_new))) {
        cli_gpu_close(gpus, ngpu);
        return rc;
    }
    if (!done) {
        const char *state = "";
        signals_install();
        rc = run_embedded(db, id, &a, token, gpus, ngpu, &state);
        cli_gpu_close(gpus, ngpu);
        if (rc && db_new && strcmp(state, "unstarted") == 0)
            run_unmake_locked(db);      /* a command that fails leaves no output file */
        if (rc)
            return rc;
        if (!state[0]) {
            fprintf(stderr, "nq run: interrupted; run the same command again to resume job %llu\n",
                    (unsigned long long)id);
            return 130;
        }
    }
    cli_gpu_close(gpus, ngpu);
    if (done)
        fprintf(stderr, "nq run: job %llu was done before: its stored result (--fresh counts again)\n",
                (unsigned long long)id);
    rc = print_result(db, id, a.client.json);
    run_tidy(db);
    return rc;
}
