/*
 * Votes in the store (store_spotcheck.h): a quorum shard's votes until it is decided, rows of the
 * checks table like a spot-check's, so that they survive a restart and "who voted" is one index
 * lookup. Each statement reads or writes one shard's rows by the primary key's prefix.
 */
#include "store_spotcheck.h"
#include "store_impl.h"
#include "clock.h"

#include <string.h>

enum { V_PUT, V_GET, V_VOTED, V_DROP, V_COUNT };

static const char *const votes_sql[V_COUNT] = {
    [V_PUT] =
        "INSERT INTO checks (job, idx, seq, who, status, total, uniq, nodes, res13, res15, elapsed,"
        " nodes_kind, digest, agreed, at) VALUES (?1, ?2, (SELECT coalesce(max(seq) + 1, 0) FROM checks"
        " WHERE job = ?1 AND idx = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0, ?13)",
    [V_GET] =
        "SELECT who, status, total, uniq, nodes, res13, res15, elapsed, nodes_kind, digest FROM checks"
        " WHERE job = ?1 AND idx = ?2 ORDER BY seq",
    [V_VOTED] = "SELECT 1 FROM checks WHERE job = ?1 AND idx = ?2 AND who = ?3 LIMIT 1",
    [V_DROP] = "DELETE FROM checks WHERE job = ?1 AND idx = ?2",
};

static sqlite3_stmt *vstmt(nq_store_t *s, int id, uint64_t job, uint64_t idx)
{
    _Static_assert(V_COUNT <= STORE_MOD_STMTS, "more statements than the module's slots");
    sqlite3_stmt *q = store_stmt_cached(s, &s->st[STORE_MOD_VOTES][id], votes_sql[id]);
    if (q) {
        sqlite3_bind_int64(q, 1, i64(job));
        sqlite3_bind_int64(q, 2, i64(idx));
    }
    return q;
}

nq_vote_t store_vote_of(const nq_result_t *r, const char *sol_hash, int64_t who)
{
    nq_answer_t a;
    nq_answer_of(r, sol_hash, &a);
    nq_vote_t v = { who, r->status, r->total, r->unique, r->nodes, r->res13, r->res15,
                    r->elapsed_us / 1e6, r->nodes_kind, { 0 } };
    memcpy(v.digest, a.digest, sizeof v.digest);
    return v;
}

void store_vote_answer(const nq_vote_t *v, int kind, nq_answer_t *a)
{
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->status = (uint8_t)v->status;
    a->total = v->total;
    a->unique = v->unique;
    a->nodes = v->nodes;
    a->res13 = (uint8_t)v->res13;
    a->res15 = (uint8_t)v->res15;
    a->cpu_nodes = kind == NQ_KIND_COUNT && v->nodes_kind == NQ_NODES_CPU;
    memcpy(a->digest, v->digest, sizeof a->digest);
}

static int digest_zero(const uint8_t *d)
{
    for (int i = 0; i < NQ_ANSWER_DIGEST; i++)
        if (d[i])
            return 0;
    return 1;
}

int store_vote_put(nq_store_t *s, uint64_t job, uint64_t idx, const nq_vote_t *v)
{
    sqlite3_stmt *q = vstmt(s, V_PUT, job, idx);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 3, v->who);
    sqlite3_bind_int(q, 4, v->status);
    sqlite3_bind_int64(q, 5, i64(v->total));
    sqlite3_bind_int64(q, 6, i64(v->unique));
    sqlite3_bind_int64(q, 7, i64(v->nodes));
    sqlite3_bind_int(q, 8, v->res13);
    sqlite3_bind_int(q, 9, v->res15);
    sqlite3_bind_double(q, 10, v->elapsed);
    sqlite3_bind_int(q, 11, v->nodes_kind);
    if (!digest_zero(v->digest))
        sqlite3_bind_blob(q, 12, v->digest, NQ_ANSWER_DIGEST, SQLITE_STATIC);
    sqlite3_bind_double(q, 13, nq_wall());
    int rc = store_step_done(q);
    return rc ? store_fail(s, "vote.put", rc) : 0;
}

int store_votes_get(nq_store_t *s, uint64_t job, uint64_t idx, nq_vote_t *out, int max)
{
    sqlite3_stmt *q = vstmt(s, V_GET, job, idx);
    if (!q)
        return -1;
    int n = 0, e;
    while ((e = sqlite3_step(q)) == SQLITE_ROW && n < max) {
        nq_vote_t *v = &out[n++];
        memset(v, 0, sizeof *v);
        v->who = sqlite3_column_int64(q, 0);
        v->status = sqlite3_column_int(q, 1);
        v->total = col_u64(q, 2);
        v->unique = col_u64(q, 3);
        v->nodes = col_u64(q, 4);
        v->res13 = sqlite3_column_int(q, 5);
        v->res15 = sqlite3_column_int(q, 6);
        v->elapsed = sqlite3_column_double(q, 7);
        v->nodes_kind = sqlite3_column_int(q, 8);
        if (sqlite3_column_bytes(q, 9) == NQ_ANSWER_DIGEST)
            memcpy(v->digest, sqlite3_column_blob(q, 9), NQ_ANSWER_DIGEST);
    }
    sqlite3_reset(q);
    return e == SQLITE_ROW || e == SQLITE_DONE ? n : store_fail(s, "votes.get", e);
}

int store_voted(nq_store_t *s, uint64_t job, uint64_t idx, int64_t who)
{
    sqlite3_stmt *q = vstmt(s, V_VOTED, job, idx);
    if (!q)
        return -1;
    sqlite3_bind_int64(q, 3, who);
    int e = sqlite3_step(q);
    sqlite3_reset(q);
    return e == SQLITE_ROW ? 1 : e == SQLITE_DONE ? 0 : store_fail(s, "votes.voted", e);
}

int store_votes_drop(nq_store_t *s, uint64_t job, uint64_t idx)
{
    sqlite3_stmt *q = vstmt(s, V_DROP, job, idx);
    if (!q)
        return -1;
    int rc = store_step_done(q);
    return rc ? store_fail(s, "votes.drop", rc) : 0;
}
