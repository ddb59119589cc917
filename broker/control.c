/* The control endpoint: clients' requests, answered from the store. */
#include "broker_impl.h"
#include "errf.h"
#include "nq.h"
#include "control.h"
#include "log.h"
#include "shard.h"
#include "solstore.h"
#include "solve.h"
#include "store_solsize.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

#define NQ_CTL_SOLUTION_MAX 10000000ull   /* larger permutations: read them with --db */

static int get_u64(const nq_ctl_req_t *r, const char *key, uint64_t def, uint64_t max, uint64_t *out,
                   char *err, size_t errlen)
{
    uint64_t v;
    if (proto_param_u64(r, key, &v) != 0) {
        if (proto_param_str(r, key)) {
            return nq_errf(err, errlen, "parameter '%s' must be a number", key);
        }
        v = def;
    }
    if (v > max) {
        return nq_errf(err, errlen, "parameter '%s' must be at most %llu", key, (unsigned long long)max);
    }
    *out = v;
    return 0;
}

int control_spec_parse(const nq_ctl_req_t *req, nq_job_spec_t *s, uint64_t *seconds, char *err, size_t errlen)
{
    uint64_t depth = 0, prio = 0, attempts = 0, quorum = 0, secs = 0, ppm = 0;   /* set by get_u64, or it fails */
    memset(s, 0, sizeof *s);
    const char *kind = proto_param_str(req, "kind");
    s->kind = kind ? store_kind_parse(kind) : -1;
    if (s->kind < 0)
        return snprintf(err, errlen, "kind must be count, solve or enumerate"), NQ_EXIT_USAGE;
    const char *algo = proto_param_str(req, "algo");
    snprintf(s->algo, sizeof s->algo, "%s", algo ? algo : (s->kind == NQ_KIND_SOLVE ? "qs4" : ""));
    if (get_u64(req, "n", 0, NQ_SOLVE_MAX_N, &s->n, err, errlen) ||
        get_u64(req, "depth", 0, NQ_SHARD_MAX_N, &depth, err, errlen) ||
        get_u64(req, "seed", 0, UINT64_MAX, &s->seed0, err, errlen) ||
        get_u64(req, "restarts", s->kind == NQ_KIND_SOLVE ? 1 : 0, UINT64_MAX, &s->restarts, err, errlen) ||
        get_u64(req, "solutions", 1, UINT64_MAX, &s->solutions, err, errlen) ||
        get_u64(req, "max_steps", 0, UINT64_MAX, &s->max_steps, err, errlen) ||
        get_u64(req, "priority", 0, NQ_JOB_MAX_PRIORITY, &prio, err, errlen) ||
        get_u64(req, "max_attempts", 5, NQ_JOB_MAX_ATTEMPTS, &attempts, err, errlen) ||
        get_u64(req, "quorum", 1, NQ_JOB_MAX_QUORUM, &quorum, err, errlen) ||
        get_u64(req, "shard_seconds", 0, 7 * 86400, &secs, err, errlen) ||
        get_u64(req, "verify_ppm", 0, NQ_JOB_PPM, &ppm, err, errlen))
        return NQ_EXIT_USAGE;
    if (s->n == 0)
        return snprintf(err, errlen, "n is required"), NQ_EXIT_USAGE;
    uint64_t all = 0;
    if (get_u64(req, "all", 0, 1, &all, err, errlen))
        return NQ_EXIT_USAGE;
    if (all)
        s->solutions = 0;               /* a study: every seed, not the first K */
    if (secs > 0 && depth > 0)
        return snprintf(err, errlen, "give --depth or --shard-seconds, not both"), NQ_EXIT_USAGE;
    if (secs > 0 && shard_seconds_check(s->kind, (int)s->n, err, errlen) != 0)
        return NQ_EXIT_USAGE;
    *seconds = secs;
    s->depth = (uint32_t)depth;
    s->priority = (int)prio;
    s->max_attempts = (uint32_t)attempts;
    s->quorum = (uint32_t)quorum;
    s->verify_ppm = (uint32_t)ppm;
    return 0;
}

int control_spec_from_params(const nq_ctl_req_t *req, nq_job_spec_t *s, char *err, size_t errlen)
{
    uint64_t secs = 0;
    int rc = control_spec_parse(req, s, &secs, err, errlen);
    if (rc != 0 || secs == 0)
        return rc;
    int d = shard_depth_for_seconds(s->kind, (int)s->n, (double)secs, err, errlen);
    if (d < 0)
        return NQ_EXIT_USAGE;
    s->depth = (uint32_t)d;
    return 0;
}

static int pack_solution(sqlite3 *db, const char *db_path, uint64_t job, uint64_t index, msgpack_packer *pk,
                         char *err, size_t errlen)
{
    uint32_t *cols = NULL;
    uint64_t n = 0;
    /* The size first, from the row: a solution of 10^9 queens is 4 GB to load. */
    int rc = store_solution_n(db, job, index, &n, err, errlen);
    if (rc < 0)
        return NQ_EXIT_ERROR;
    if (rc == 0 && n > NQ_CTL_SOLUTION_MAX) {
        snprintf(err, errlen, "solution of N=%llu is too large to send; read it from the DB with --db",
                 (unsigned long long)n);
        return NQ_EXIT_ERROR;
    }
    rc = query_solution(db, db_path, job, index, &cols, &n, err, errlen);
    if (rc != 0)
        return rc == -1 ? NQ_EXIT_NO : NQ_EXIT_ERROR;
    if (n > NQ_CTL_SOLUTION_MAX) {      /* the row changed in between: still never send it */
        free(cols);
        snprintf(err, errlen, "solution of N=%llu is too large to send; read it from the DB with --db",
                 (unsigned long long)n);
        return NQ_EXIT_ERROR;
    }
    uint8_t *packed = solstore_pack(cols, n);
    free(cols);
    if (!packed)
        return snprintf(err, errlen, "out of memory"), NQ_EXIT_ERROR;
    msgpack_pack_map(pk, 2);
    msgpack_pack_str_with_body(pk, "n", 1);
    msgpack_pack_uint64(pk, n);
    msgpack_pack_str_with_body(pk, "cols", 4);
    msgpack_pack_bin_with_body(pk, packed, n * 4);
    free(packed);
    return NQ_EXIT_OK;
}

int control_query(sqlite3 *db, const char *db_path, const query_live_t *live, const nq_ctl_req_t *req,
                  msgpack_packer *pk, char *err, size_t errlen)
{
    const char *op = req->op;
    int rc;
    if (strcmp(op, "status") == 0)
        rc = req->job ? query_job(db, req->job, live, pk, err, errlen) : query_list(db, live, pk, err, errlen);
    else if (strcmp(op, "list") == 0)
        rc = query_list(db, live, pk, err, errlen);
    else if (strcmp(op, "workers") == 0)
        rc = query_workers(db, live, pk, err, errlen);
    else if (strcmp(op, "result") == 0)
        rc = query_result(db, req->job, live, pk, err, errlen);
    else if (strcmp(op, "export") == 0) {
        uint64_t cursor = 0, rows = 10000, unique = 0;
        if (get_u64(req, "cursor", 0, UINT64_MAX, &cursor, err, errlen) ||
            get_u64(req, "rows", 10000, QUERY_EXPORT_MAX_ROWS, &rows, err, errlen) ||
            get_u64(req, "unique", 0, 1, &unique, err, errlen))
            return NQ_EXIT_USAGE;
        rc = query_export(db, req->job, cursor, (uint32_t)rows, (int)unique, pk, err, errlen);
    } else if (strcmp(op, "solution") == 0) {
        uint64_t index = 0;
        if (get_u64(req, "index", 0, UINT64_MAX, &index, err, errlen))
            return NQ_EXIT_USAGE;
        return pack_solution(db, db_path, req->job, index, pk, err, errlen);
    } else {
        snprintf(err, errlen, "unknown operation '%s'", op);
        return NQ_EXIT_USAGE;
    }
    return rc == 0 ? NQ_EXIT_OK : rc == -1 ? NQ_EXIT_NO : rc == QUERY_REFUSED ? NQ_EXIT_USAGE : NQ_EXIT_ERROR;
}

/* Live figures for `nq workers`: who is connected right now and what it holds. */
static int live_lookup(void *ud, const char *worker_id, query_worker_live_t *w)
{
    nq_broker_t *b = ud;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        if (strcmp(p->hello.worker_id, worker_id) == 0) {
            w->alive = 1;
            w->leases = p->outstanding;
            double up = b->now - p->first_seen;
            w->nodes_per_s = up > 0 ? (double)p->nodes_done / up : 0;
            snprintf(w->kernel, sizeof w->kernel, "%s", p->hello.build);
            w->rtt_s = peer_rtt(p);
            return 0;
        }
    w->alive = 0;
    w->leases = 0;
    return 0;
}

/* A live GPU worker's devices for `nq workers`. */
static uint32_t live_devices(void *ud, const char *worker_id, nq_hb_device_t *out, uint32_t max)
{
    nq_broker_t *b = ud;
    for (nq_peer_t *p = b->peers; p; p = p->next)
        if (strcmp(p->hello.worker_id, worker_id) == 0) {
            uint32_t n = p->ndevices < max ? p->ndevices : max;
            if (n)
                memcpy(out, p->devices, n * sizeof *out);
            return n;
        }
    return 0;
}

/* Live figures for `nq status JOB`: copies pending and out, and why it waits (job_wait.c). */
static int live_job(void *ud, uint64_t id, uint64_t *pending, uint64_t *leased, char *waiting, size_t len)
{
    nq_broker_t *b = ud;
    nq_job_t *j = jobq_find(b, id);
    if (!j)
        return -1;
    *pending = jobq_pending(j);
    *leased = j->leases_out;
    job_wait_why(b, j, waiting, len);
    return 0;
}

/* A loaded solve job's solutions, kept by results.c: O(1) for every status, never its rows counted. */
static int live_solutions(void *ud, uint64_t id, uint64_t *n)
{
    nq_job_t *j = jobq_find(ud, id);
    if (!j || j->spec.kind != NQ_KIND_SOLVE)
        return -1;
    *n = j->solutions_found;
    return 0;
}

/* A job's ETA and rate from this run's estimated work (jobs_pace). */
static int live_pace(void *ud, uint64_t id, double *eta, double *rate)
{
    nq_job_t *j = jobq_find(ud, id);
    if (!j)
        return -1;
    jobs_pace(ud, j, eta, rate);
    return 0;
}

/* submit, cancel, retry. A submit is answered by submit.c: at once, or when its list is built. */
static void write_op(nq_broker_t *b, const void *rid, size_t rid_len, const nq_ctl_req_t *req)
{
    char err[NQ_STR_MAX] = "";
    uint64_t id = req->job;
    int code = NQ_EXIT_OK;
    if (strcmp(req->op, "submit") == 0) {
        nq_job_spec_t spec;
        uint64_t secs = 0;
        if ((code = control_spec_parse(req, &spec, &secs, err, sizeof err)) == 0) {
            submit_begin(b, rid, rid_len, &spec, (double)secs);   /* the depth for secs: off the loop */
            return;
        }
    } else {
        if (b->txn_open || !b->store_ok)
            results_flush(b);           /* the group first: its results came before the write */
        int rc = strcmp(req->op, "cancel") == 0 ? jobs_cancel(b, id, err, sizeof err)
                                                : jobs_retry(b, id, err, sizeof err);
        if (rc != 0)
            code = rc == -2 ? NQ_EXIT_ERROR : NQ_EXIT_NO;   /* -2: its row is refused, or not durable */
    }
    outbox_answer_job(b, rid, rid_len, code, err, id);
}

/* A job's progress from memory: no DB scan and no forced commit, so it can be asked often. */
static int progress_op(nq_broker_t *b, uint64_t id, msgpack_packer *pk, char *err, size_t errlen)
{
    nq_job_row_t row;
    nq_job_t *j = jobq_find(b, id);
    const char *state;
    uint64_t done, total;
    int rc;
    if (j) {
        state = store_job_state_name(j->state);
        done = j->shards_done;
        total = j->shards_total;
    } else if ((rc = store_job_load(b->store, id, &row, err, errlen)) == 0) {
        state = store_job_state_name(row.state);
        done = row.shards_done;
        total = row.shards_total;
    } else {
        return rc == 1 ? NQ_EXIT_NO : NQ_EXIT_ERROR;   /* err: no such job, or what is wrong with it */
    }
    msgpack_pack_map(pk, 4);
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_uint64(pk, id);
    msgpack_pack_str_with_body(pk, "state", 5);
    msgpack_pack_str_with_body(pk, state, strlen(state));
    msgpack_pack_str_with_body(pk, "shards_done", 11);
    msgpack_pack_uint64(pk, done);
    msgpack_pack_str_with_body(pk, "shards_total", 12);
    msgpack_pack_uint64(pk, total);
    return NQ_EXIT_OK;
}

void control_on_request(nq_broker_t *b, const void *rid, size_t rid_len, const nq_ctl_req_t *req)
{
    if (strcmp(req->op, "submit") == 0 || strcmp(req->op, "cancel") == 0 || strcmp(req->op, "retry") == 0) {
        write_op(b, rid, rid_len, req);
        return;
    }
    msgpack_sbuffer doc;
    msgpack_sbuffer_init(&doc);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &doc, msgpack_sbuffer_write);
    char err[NQ_STR_MAX] = "";
    int code;
    if (strcmp(req->op, "progress") == 0) {
        code = progress_op(b, req->job, &pk, err, sizeof err);
    } else {
        /* answers come from what is committed: read through the broker's read-only connection
           (WAL: the open group's writes are invisible to it, and it never waits for them), so a
           status loop costs no commits; without one, commit the group first */
        sqlite3 *db = b->query_db;
        if (!db) {
            if (b->txn_open)
                results_flush(b);
            db = store_db(b->store);
        }
        query_live_t live = { live_lookup, b, live_job, live_devices, live_solutions, live_pace };
        code = control_query(db, store_path(b->store), &live, req, &pk, err, sizeof err);
    }
    outbox_reply(b, rid, rid_len, code, code ? err : NULL, code ? NULL : &doc);
    msgpack_sbuffer_destroy(&doc);
}
