/*
 * Turning a job request into a job: checking what it asks for and how many
 * shards it cuts into (board prefixes for count/enumerate, seeds for solve),
 * then storing the job's row. Shards get rows only when leased (004_campaign.sql),
 * so a submit costs the same for 10 shards or 10^8: the list is a pure function
 * of the job's parameters.
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

/* The shard caps (control.h), before anything is written; the message names the cap and its option. */
static int check_caps(nq_store_t *st, uint64_t nshards, const nq_shard_caps_t *caps, char *err, size_t errlen)
{
    uint64_t max_job = caps && caps->max_job_shards ? caps->max_job_shards : NQ_DEFAULT_MAX_JOB_SHARDS;
    uint64_t max_store = caps && caps->max_store_shards ? caps->max_store_shards : NQ_DEFAULT_MAX_STORE_SHARDS;
    const char *how = caps && caps->how ? caps->how : "start 'nq broker' with";
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
 * A count or enumerate list, with a bound on its cost: the depth is the client's choice, and
 * the list is built inside the broker's loop. Real lists need few steps of search (N=27 at
 * depth 5, 191 million shards: under 2^20, 0.9 s), but a deep one can search for minutes before
 * it finds out that it is too long (N=18 at depth 10: 78 s) or its first shard (N=32 at depth
 * 30). 2^22 steps take 0.2 s (N=32) to 0.9 s (N=18, each step walking the last two levels) on
 * one core; past them the list is refused with a reason: use a smaller depth. From N=19 a list
 * also estimates each root's search direction (common/kernel/shard_flip.c), 1.6 s at N=28 and
 * 3 s at N=32, but only the first time this process lists that N. The bound is NQ_JOB_LIST_STEPS
 * (store.h): a stored job's list is made again within the same bound when it is loaded.
 */
static nq_shards_t *submit_list(const nq_job_spec_t *spec, char *err, size_t errlen)
{
    /* the shard caps are checked after (check_caps), with a message that names their option */
    return shards_new_bounded(spec->kind, (int)spec->n, (int)spec->depth, NQ_SHARD_ENCODING,
                              NQ_SHARD_MAX_LIST, NQ_JOB_LIST_STEPS, err, errlen);
}

int jobs_check(const nq_job_spec_t *spec, char *err, size_t errlen)
{
    submit_iter_t it = { .spec = spec };
    if (check_spec(spec, err, errlen) != 0)
        return -1;
    if (spec->kind == NQ_KIND_SOLVE)
        return parse_algos(&it, spec->algo, spec->n, err, errlen);
    if (spec->depth == 0)
        return 0;                       /* the automatic depth always gives a valid list */
    nq_shards_t *sh = submit_list(spec, err, errlen);
    if (!sh)
        return -1;
    shards_destroy(&sh);
    return 0;
}

int jobs_create_capped(nq_store_t *st, nq_job_spec_t *spec, const nq_shard_caps_t *caps, uint64_t *id,
                       char *err, size_t errlen)
{
    submit_iter_t it = { .spec = spec };
    uint64_t nshards;
    if (check_spec(spec, err, errlen) != 0)
        return -1;
    if (spec->kind == NQ_KIND_SOLVE) {
        if (parse_algos(&it, spec->algo, spec->n, err, errlen) != 0)
            return -1;
        nshards = spec->restarts * (uint64_t)it.nalgos;
    } else {
        nq_shards_t *list = submit_list(spec, err, errlen);
        if (!list)
            return -1;
        spec->depth = (uint32_t)shards_depth(list);
        spec->encoding = NQ_SHARD_ENCODING;
        nshards = shards_count(list);
        shards_destroy(&list);
    }
    int rc = check_caps(st, nshards, caps, err, errlen);
    if (rc == 0)
        rc = store_job_create(st, spec, nshards, NULL, NULL, id, err, errlen);
    return rc;
}

int jobs_create(nq_store_t *st, nq_job_spec_t *spec, uint64_t *id, char *err, size_t errlen)
{
    nq_shard_caps_t caps = { 0, 0, "submit it to an 'nq broker' started with" };
    return jobs_create_capped(st, spec, &caps, id, err, errlen);
}

int jobs_submit(nq_broker_t *b, const nq_job_spec_t *spec_in, uint64_t *id, char *err, size_t errlen)
{
    nq_job_spec_t spec = *spec_in;
    if (b->txn_open)
        results_flush(b);               /* job creation is its own transaction */
    nq_shard_caps_t caps = { b->cfg.max_job_shards, b->cfg.max_store_shards, NULL };
    if (jobs_create_capped(b->store, &spec, &caps, id, err, errlen) != 0)
        return -1;
    nq_job_row_t row;
    char why[320] = "";
    if (store_job_load(b->store, *id, &row, why, sizeof why) != 0 ||
        jobs_load_one(b, &row, why, sizeof why) != 0) {
        return nq_errf(err, errlen, "job %llu stored but could not be loaded%s%s", (unsigned long long)*id,
                       why[0] ? ": " : "", why);
    }
    nq_log(NQ_LOG_INFO, "job.submit", "job=%llu kind=%s n=%llu shards=%llu", (unsigned long long)*id,
           store_kind_name(spec.kind), (unsigned long long)spec.n, (unsigned long long)row.shards_total);
    return 0;
}
