/*
 * Checking a result before it may reach the store: its job, kind and shard, a count against the
 * bounds of its shard, an enumerate payload's solutions, a solve result's permutation (verified
 * here and saved where the store keeps solutions).
 */
#include "broker_impl.h"
#include "count_bounds.h"
#include "enumerate.h"
#include "errf.h"
#include "solstore.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>

/* Enumerate payload: every solution valid, strictly increasing (canonical order). */
int result_check_enumerate(const nq_result_t *r, uint64_t n, char *why, size_t whylen)
{
    size_t per = (size_t)(n + 1) / 2;
    if (n < 1 || n > 16)
        return nq_errf(why, whylen, "enumerate result for n=%llu", (unsigned long long)n);
    /* total comes from the wire: compare by division, so total * per cannot wrap around */
    if (r->payload_len % per != 0 || r->total != r->payload_len / per)
        return nq_errf(why, whylen, "payload of %zu bytes for %llu solutions", r->payload_len,
                       (unsigned long long)r->total);
    uint8_t prev[16] = {0}, cols[16];
    uint32_t perm[16];
    for (uint64_t i = 0; i < r->total; i++) {
        enumerate_unpack(r->payload + i * per, (int)n, cols);
        for (uint64_t k = 0; k < n; k++)
            perm[k] = cols[k];
        nq_clash_t c;
        if (verify_perm(perm, n, &c) != 0)
            return nq_errf(why, whylen, "solution %llu is not valid", (unsigned long long)i);
        if (i > 0 && memcmp(prev, cols, n) >= 0)
            return nq_errf(why, whylen, "solutions out of canonical order");
        memcpy(prev, cols, n);
    }
    return 0;
}

/*
 * A count result against what a count of its shard can give (count_bounds.h, the audit's
 * per-line check): residues alone let totals of 2^64-1, unique above total and nodes below
 * total become final. Nodes are held to their bounds only where they are the CPU kernels' (the
 * search those bounds describe); the fast GPU kernel's own are not. The descriptor comes from the
 * job's list. 0 within them, -1 outside (why), 1 not known yet: the list is being built after a
 * restart (the caller leaves the result unacknowledged, and the worker sends it again).
 */
static int check_bounds(const nq_job_t *j, const nq_result_t *r, char *why, size_t whylen)
{
    uint8_t spec[NQ_MAX_SPEC];
    size_t len = 0;
    uint64_t seed;
    char algo[32];
    if (j->list_ticket)
        return 1;
    if (jobq_shard_task(j, r->shard, spec, &len, &seed, algo, sizeof algo) != 0)
        return nq_errf(why, whylen, "no descriptor for the shard");
    nq_count_bounds_t cb;
    nq_count_result_t cr = { r->total, r->unique, r->nodes, (uint8_t)r->res13, (uint8_t)r->res15 };
    char text[200];
    if (count_bounds(spec, len, &cb, text, sizeof text) != 0)
        return nq_errf(why, whylen, "the shard's descriptor does not decode: %s", text);
    int off = r->nodes_kind == NQ_NODES_CPU ? count_bounds_check(&cb, &cr, text, sizeof text)
                                            : count_bounds_check_counts(&cb, &cr, text, sizeof text);
    if (off != 0)
        return nq_errf(why, whylen, "no count of the shard can give it: %s", text);
    return 0;
}

/* The job a result is for: in memory when active (cheap), else from the store. */
static int result_job(nq_broker_t *b, uint64_t id, nq_job_spec_t *spec, uint64_t *shards_total)
{
    nq_job_t *j = jobq_find(b, id);
    nq_job_row_t row;
    if (j) {
        *spec = j->spec;
        *shards_total = j->shards_total;
        return 0;
    }
    if (store_job_get(b->store, id, &row) != 0)
        return -1;
    *spec = row.spec;
    *shards_total = row.shards_total;
    return 0;
}

/* Checks a result against its job before it may reach the store. */
int result_check(nq_broker_t *b, nq_pending_result_t *e, nq_solbuf_t *sol, char *why, size_t whylen)
{
    const nq_result_t *r = &e->r;
    struct { nq_job_spec_t spec; } job;
    uint64_t shards_total;
    if (result_job(b, r->job, &job.spec, &shards_total) != 0)
        return nq_errf(why, whylen, "no such job");
    if (r->kind != job.spec.kind)
        return nq_errf(why, whylen, "result kind does not match the job");
    if (r->shard >= shards_total)
        return nq_errf(why, whylen, "no such shard");
    if (r->kind != NQ_KIND_COUNT && r->nodes_kind != NQ_NODES_CPU)   /* steps are the solver's own */
        return nq_errf(why, whylen, "only a count result says whose nodes it carries");
    if (r->kind == NQ_KIND_COUNT) {
        if (r->total % 13 != r->res13 || r->total % 15 != r->res15)
            return nq_errf(why, whylen, "residues do not match the total");
        nq_job_t *j = jobq_find(b, r->job);
        return j ? check_bounds(j, r, why, whylen) : 0;   /* not loaded: it can decide nothing */
    }
    if (r->kind == NQ_KIND_ENUMERATE)
        return result_check_enumerate(r, job.spec.n, why, whylen);
    if (r->status != NQ_RES_OK)
        return 0;                       /* solve, not found: a real outcome for the study */
    if (!sol || sol->n != job.spec.n || sol->received != sol->n)
        return nq_errf(why, whylen, "solution missing or incomplete");
    nq_clash_t c;
    if (verify_perm(sol->cols, sol->n, &c) != 0)
        return nq_errf(why, whylen, "solution fails verification: rows %llu and %llu share a %s",
                       (unsigned long long)c.row_a, (unsigned long long)c.row_b, c.what);
    if (solstore_save(store_path(b->store), sol->cols, sol->n, e->sol_hash, sizeof e->sol_hash, e->sol_path,
                      sizeof e->sol_path, why, whylen) != 0)
        return -1;
    if (e->sol_path[0] == 0) {          /* small: the store keeps it inline, from the payload */
        free(e->payload);
        e->payload = solstore_pack(sol->cols, sol->n);
        if (!e->payload)
            return nq_errf(why, whylen, "out of memory");
        e->r.payload = e->payload;
        e->r.payload_len = sol->n * 4;
    }
    return 0;
}
