/*
 * Turning a job request into a job: checking what it asks for and how many
 * shards it cuts into (board prefixes for count/enumerate, seeds for solve),
 * then storing the job's row. Shards get rows only when leased (004_campaign.sql),
 * so a submit costs the same for 10 shards or 10^8: the list is a pure function
 * of the job's parameters. In the broker a client's submit is checked in the
 * loop, its list is built by the lister (lister.h) without its lease order, and
 * the client is answered when that comes: the job's row needs only the count.
 * The order's cost estimates, most of a large list's time (N=27: seconds), are
 * built next, as after a restart (jobs.c): the job leases nothing until then.
 * The loop never waits.
 */
#include "broker_impl.h"
#include "errf.h"
#include "control.h"
#include "log.h"
#include "shard.h"
#include "solve.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const nq_job_spec_t *spec;
    char algos[NQ_JOB_MAX_METHODS][NQ_JOB_METHOD_MAX + 1];   /* solve */
    int nalgos;
} submit_iter_t;

/* Splits "a,b,c" into known method names; each must be able to solve n (solver_check: its own reason).
   An empty name ("a,,b", "a,") is refused: the stored list names method k of shard idx by its
   position (store_solve_method), so it must be exactly the methods the shards were cut for. */
static int parse_algos(submit_iter_t *it, const char *list, uint64_t n, char *err, size_t errlen)
{
    char buf[sizeof it->spec->algo];
    snprintf(buf, sizeof buf, "%s", list[0] ? list : "qs4");
    it->nalgos = 0;
    if (buf[0] == ',' || strstr(buf, ",,") || buf[strlen(buf) - 1] == ',')
        return nq_errf(err, errlen, "empty method name in '%s'", buf);
    for (char *save = NULL, *a = strtok_r(buf, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        const nq_solver_t *s = solver_find(a);
        if (!s) {
            return nq_errf(err, errlen, "unknown method '%s' (see 'nq bench solve --algo list')", a);
        }
        if (solver_check(s, n, err, errlen) != 0)
            return -1;
        if (it->nalgos == NQ_JOB_MAX_METHODS) {
            return nq_errf(err, errlen, "at most %d methods in one study", NQ_JOB_MAX_METHODS);
        }
        snprintf(it->algos[it->nalgos++], sizeof it->algos[0], "%s", a);
    }
    return it->nalgos ? 0 : (snprintf(err, errlen, "no method given"), -1);
}

static int check_spec(const nq_job_spec_t *s, char *err, size_t errlen)
{
    if (s->kind == NQ_KIND_COUNT && (s->n < 1 || s->n > NQ_SHARD_MAX_N))
        return nq_errf(err, errlen, "count takes N from 1 to %d (got %llu)", NQ_SHARD_MAX_N,
                       (unsigned long long)s->n);
    if (s->kind == NQ_KIND_ENUMERATE && (s->n < 1 || s->n > NQ_ENUM_MAX_N))
        return nq_errf(err, errlen, "enumerate takes N from 1 to %d (got %llu)", NQ_ENUM_MAX_N,
                       (unsigned long long)s->n);
    if (s->kind == NQ_KIND_SOLVE && (s->n < 1 || s->n > NQ_SOLVE_MAX_N))
        return nq_errf(err, errlen, "solve takes N from 1 to %llu (got %llu)", NQ_SOLVE_MAX_N,
                       (unsigned long long)s->n);
    if (s->kind == NQ_KIND_SOLVE && (s->restarts < 1 || s->restarts > NQ_JOB_MAX_SEEDS))
        return nq_errf(err, errlen, "restarts must be from 1 to %llu", NQ_JOB_MAX_SEEDS);
    if (s->kind == NQ_KIND_SOLVE && s->solutions > s->restarts)
        return nq_errf(err, errlen, "--solutions %llu cannot exceed --restarts %llu",
                       (unsigned long long)s->solutions, (unsigned long long)s->restarts);
    if (s->max_attempts < 1 || s->max_attempts > NQ_JOB_MAX_ATTEMPTS)
        return nq_errf(err, errlen, "max attempts must be from 1 to %d", NQ_JOB_MAX_ATTEMPTS);
    if (s->quorum < 1 || s->quorum > NQ_JOB_MAX_QUORUM)
        return nq_errf(err, errlen, "quorum must be 1, 2 or 3");
    if (s->verify_ppm > NQ_JOB_PPM)
        return nq_errf(err, errlen, "--verify-rate is a probability from 0 to 1");
    if (s->verify_ppm > 0 && s->kind != NQ_KIND_COUNT)
        return nq_errf(err, errlen, "--verify-rate is for count jobs (a solve result is verified by the "
                       "broker itself; an enumerate job can use --quorum)");
    if (s->verify_ppm > 0 && s->quorum > 1)
        return nq_errf(err, errlen, "give --verify-rate or --quorum, not both: quorum already checks "
                       "every result");
    return 0;
}

static int sum_active(void *ud, const nq_job_row_t *j)
{
    uint64_t *sum = ud;
    *sum += j->shards_total;
    return 0;
}

/* Outside a broker (`nq run`): the defaults, and where to go past them. */
static const nq_shard_caps_t LOCAL_CAPS = { 0, 0, "submit it to an 'nq broker' started with" };

static uint64_t cap_job(const nq_shard_caps_t *caps)
{
    return caps && caps->max_job_shards ? caps->max_job_shards : NQ_DEFAULT_MAX_JOB_SHARDS;
}

static const char *cap_how(const nq_shard_caps_t *caps)
{
    return caps && caps->how ? caps->how : "start 'nq broker' with";
}

/* The shard caps (control.h), before anything is written; the message names the cap and its option. */
static int check_caps(nq_store_t *st, uint64_t nshards, const nq_shard_caps_t *caps, char *err, size_t errlen)
{
    uint64_t max_job = cap_job(caps);
    uint64_t max_store = caps && caps->max_store_shards ? caps->max_store_shards : NQ_DEFAULT_MAX_STORE_SHARDS;
    const char *how = cap_how(caps);
    if (nshards > max_job) {
        return nq_errf(err, errlen, "the job would have %llu shards, more than the cap of %llu shards per job "
                       "(fewer --restarts or methods, a smaller --depth; or %s --max-job-shards N)",
                       (unsigned long long)nshards, (unsigned long long)max_job, how);
    }
    uint64_t active = 0;
    if (store_jobs_active(st, sum_active, NULL, &active) != 0) {
        return nq_errf(err, errlen, "cannot read the active jobs from %s", store_path(st));
    }
    if (active > max_store || nshards > max_store - active) {
        return nq_errf(err, errlen, "the job's %llu shards and the %llu shards of the active jobs would pass "
                       "the cap of %llu shards over active jobs (wait for jobs to end or cancel some; or %s "
                       "--max-store-shards N)", (unsigned long long)nshards, (unsigned long long)active,
                       (unsigned long long)max_store, how);
    }
    return 0;
}

/*
 * A count or enumerate list, with a bound on its cost: the depth is the client's choice. Real
 * lists need few steps of search (N=27 at depth 5, 191 million shards: under 2^20, 0.9 s), but a
 * deep one can search for minutes before it finds out that it is too long (N=18 at depth 10: 78 s)
 * or its first shard (N=32 at depth 30). 2^22 steps take 0.2 s (N=32) to 0.9 s (N=18, each step
 * walking the last two levels) on one core; past them the list is refused with a reason: use a
 * smaller depth. From N=19 a list reads each root's search direction from a table
 * (common/kernel/shard_flip.c): its probes, 1.3 s at N=27, would otherwise come before the answer.
 * The lister builds it (never the loop), and stops at the per-job cap: a list of 46 million
 * shards is refused when it passes 20 million, not after it was built.
 */
#define SUBMIT_LIST_STEPS NQ_JOB_LIST_STEPS   /* store.h: a stored job's list is made within it too */

/* How many clients' submits may wait for their lists; the next is refused as busy. Each waits for
   the lists asked before its own, one at a time (each at most ~1 s of steps): 8 bound a client's
   wait to about ten seconds, under the 60 s that `nq submit` waits, while nobody scripting
   submits one after another ever meets the bound. */
#define SUBMIT_MAX_WAITING 8

static void list_request(const nq_job_spec_t *spec, const nq_shard_caps_t *caps, nq_lister_req_t *r)
{
    *r = (nq_lister_req_t){ .kind = spec->kind, .n = (int)spec->n, .depth = (int)spec->depth,
                            .encoding = NQ_SHARD_ENCODING, .max_shards = cap_job(caps),
                            .max_steps = SUBMIT_LIST_STEPS, .order = NQ_ORDER_CURRENT, .unordered = 1 };
}

/* A list refused: over the per-job cap says so in check_caps' words (the list stopped at the cap,
   so the count is "more than"); anything else in the list's own. */
static int list_refused(int why, const char *why_text, const nq_shard_caps_t *caps, char *err, size_t errlen)
{
    if (why == NQ_SHARDS_TOO_MANY && cap_job(caps) < NQ_SHARD_MAX_LIST)
        return nq_errf(err, errlen, "the job would have more than the cap of %llu shards per job (a smaller "
                       "--depth or --shard-seconds; or %s --max-job-shards N)",
                       (unsigned long long)cap_job(caps), cap_how(caps));
    return nq_errf(err, errlen, "%s", why_text);
}

/* The list of a count or enumerate spec, built here: for callers outside the loop. */
static nq_shards_t *submit_list(const nq_job_spec_t *spec, const nq_shard_caps_t *caps, char *err,
                                size_t errlen)
{
    nq_lister_req_t r;
    list_request(spec, caps, &r);
    nq_shards_limits_t lim = { .max_shards = r.max_shards, .max_steps = r.max_steps, .order = r.order,
                               .unordered = r.unordered };
    char why[256];
    nq_shards_t *list = shards_new_limited(r.kind, r.n, r.depth, r.encoding, &lim, why, sizeof why);
    if (!list)
        list_refused(lim.why, why, caps, err, errlen);
    return list;
}

/* What a spec asks for, said without its list: the parameters, and a solve job's methods. */
static int check_request(const nq_job_spec_t *spec, submit_iter_t *it, char *err, size_t errlen)
{
    if (check_spec(spec, err, errlen) != 0)
        return -1;
    return spec->kind == NQ_KIND_SOLVE ? parse_algos(it, spec->algo, spec->n, err, errlen) : 0;
}

int submit_check(const nq_job_spec_t *spec, char *err, size_t errlen)
{
    submit_iter_t it = { .spec = spec };
    if (check_request(spec, &it, err, errlen) != 0)
        return -1;
    if (spec->kind == NQ_KIND_SOLVE || spec->depth == 0)
        return 0;                       /* the automatic depth always gives a valid list */
    nq_shards_t *sh = submit_list(spec, &LOCAL_CAPS, err, errlen);
    if (!sh)
        return -1;
    shards_destroy(&sh);
    return 0;
}

/* The job's row, once its shards are known: a solve job's from its seeds and methods, a count or
   enumerate job's from its list. The spec has passed check_request. */
static int store_listed(nq_store_t *st, nq_job_spec_t *spec, const nq_shards_t *list,
                        const nq_shard_caps_t *caps, uint64_t *id, char *err, size_t errlen)
{
    uint64_t nshards;
    if (spec->kind == NQ_KIND_SOLVE) {
        submit_iter_t it = { .spec = spec };
        if (parse_algos(&it, spec->algo, spec->n, err, errlen) != 0)
            return -1;
        nshards = spec->restarts * (uint64_t)it.nalgos;
    } else {
        spec->depth = (uint32_t)shards_depth(list);
        spec->encoding = NQ_SHARD_ENCODING;
        spec->lease_order = (uint32_t)shards_order(list);   /* its positions are in this order for life */
        nshards = shards_count(list);
    }
    if (check_caps(st, nshards, caps, err, errlen) != 0)
        return -1;
    return store_job_create(st, spec, nshards, NULL, NULL, id, err, errlen);
}

int submit_create_capped(nq_store_t *st, nq_job_spec_t *spec, const nq_shard_caps_t *caps, uint64_t *id,
                       char *err, size_t errlen)
{
    submit_iter_t it = { .spec = spec };
    nq_shards_t *list = NULL;
    if (check_request(spec, &it, err, errlen) != 0)
        return -1;
    if (spec->kind != NQ_KIND_SOLVE && !(list = submit_list(spec, caps, err, errlen)))
        return -1;
    int rc = store_listed(st, spec, list, caps, id, err, errlen);
    shards_destroy(&list);
    return rc;
}

int submit_create(nq_store_t *st, nq_job_spec_t *spec, uint64_t *id, char *err, size_t errlen)
{
    return submit_create_capped(st, spec, &LOCAL_CAPS, id, err, errlen);
}

/* The broker's caps: its --max-job-shards and --max-store-shards, or the defaults. */
static nq_shard_caps_t broker_caps(const nq_broker_t *b)
{
    return (nq_shard_caps_t){ b->cfg.max_job_shards, b->cfg.max_store_shards, NULL };
}

/* A checked spec and its list (NULL for solve) become a job in the store and in memory; the list
   goes to the job, or is freed. */
static int submit_accept(nq_broker_t *b, nq_job_spec_t *spec, nq_shards_t *list, uint64_t *id, char *err,
                         size_t errlen)
{
    nq_shard_caps_t caps = broker_caps(b);
    if (b->txn_open)
        results_flush(b);               /* job creation is its own transaction */
    if (txn_db_check(b) != 0) {
        shards_destroy(&list);
        return nq_errf(err, errlen, "%s; no job was created", b->db_lost_why);
    }
    if (store_listed(b->store, spec, list, &caps, id, err, errlen) != 0) {
        shards_destroy(&list);
        return -1;
    }
    nq_job_row_t row;
    char why[320] = "";
    if (list && !shards_ordered(list))
        shards_destroy(&list);          /* the job asks the lister for its ordered list */
    if (jobs_load_id(b, *id, list, &row, why, sizeof why) != 0)   /* the list goes to the job */
        return nq_errf(err, errlen, "job %llu stored but could not be loaded%s%s", (unsigned long long)*id,
                       why[0] ? ": " : "", why);
    nq_log(NQ_LOG_INFO, "job.submit", "job=%llu kind=%s n=%llu shards=%llu", (unsigned long long)*id,
           store_kind_name(spec->kind), (unsigned long long)spec->n, (unsigned long long)row.shards_total);
    return 0;
}

int submit_sync(nq_broker_t *b, const nq_job_spec_t *spec_in, uint64_t *id, char *err, size_t errlen)
{
    nq_job_spec_t spec = *spec_in;
    nq_shard_caps_t caps = broker_caps(b);
    submit_iter_t it = { .spec = &spec };
    nq_shards_t *list = NULL;
    if (check_request(&spec, &it, err, errlen) != 0 ||
        (spec.kind != NQ_KIND_SOLVE && !(list = submit_list(&spec, &caps, err, errlen))))
        return -1;
    return submit_accept(b, &spec, list, id, err, errlen);
}

void submit_begin(nq_broker_t *b, const void *rid, size_t rid_len, const nq_job_spec_t *spec_in,
                  double seconds)
{
    char err[NQ_STR_MAX] = "";
    nq_job_spec_t spec = *spec_in;
    submit_iter_t it = { .spec = &spec };
    uint64_t id = 0;
    int code = NQ_EXIT_USAGE;
    if (check_request(&spec, &it, err, sizeof err) != 0) {
        /* refused as it stands */
    } else if (spec.kind == NQ_KIND_SOLVE) {
        code = submit_accept(b, &spec, NULL, &id, err, sizeof err) == 0 ? NQ_EXIT_OK : NQ_EXIT_USAGE;
    } else if (b->listing_submits >= SUBMIT_MAX_WAITING) {
        code = NQ_EXIT_ERROR;
        nq_errf(err, sizeof err, "the broker is busy listing the shards of %d submits: submit again in a "
                "few seconds", SUBMIT_MAX_WAITING);
    } else {
        nq_shard_caps_t caps = broker_caps(b);
        nq_lister_req_t r;
        nq_listing_t x = { .spec = spec, .rid_len = rid_len < sizeof x.rid ? rid_len : sizeof x.rid };
        memcpy(x.rid, rid, x.rid_len);  /* ZeroMQ's routing ids are at most 255 bytes */
        list_request(&spec, &caps, &r);
        r.seconds = seconds;
        if (listings_ask(b, &r, &x) != 0)
            return;                     /* answered by submit_listed */
        code = NQ_EXIT_ERROR;
        nq_errf(err, sizeof err, "out of memory");
    }
    outbox_answer_job(b, rid, rid_len, code, err, id);
}

void submit_listed(nq_broker_t *b, const nq_listing_t *x, nq_shards_t **list, int why, const char *why_text)
{
    char err[NQ_STR_MAX] = "";
    nq_job_spec_t spec = x->spec;
    nq_shard_caps_t caps = broker_caps(b);
    uint64_t id = 0;
    int code = NQ_EXIT_USAGE;
    if (!*list) {
        list_refused(why, why_text, &caps, err, sizeof err);
    } else {
        nq_shards_t *l = *list;
        *list = NULL;
        code = submit_accept(b, &spec, l, &id, err, sizeof err) == 0 ? NQ_EXIT_OK : NQ_EXIT_USAGE;
    }
    outbox_answer_job(b, x->rid, x->rid_len, code, err, id);
}
