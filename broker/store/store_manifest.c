/*
 * Writing a done count job's manifest from the store, and keeping its root
 * (store_manifest.h). The job's row gives the header, its shard rows the lines, by the
 * primary key (job, idx) in index order: one range scan, nothing held but one row.
 */
#include "store_manifest.h"
#include "errf.h"
#include "store_check.h"
#include "manifest.h"
#include "clock.h"
#include "shard.h"

#include <string.h>

_Static_assert(NQ_MANIFEST_NODES_CPU == NQ_NODES_CPU && NQ_MANIFEST_NODES_GPU_FAST == NQ_NODES_GPU_FAST,
               "a manifest line's NODES_KIND is the wire's and the store's nodes_kind");

/* The header from the job's row, checked (store_check.h): 0, -1 refused as asked (no such job, not
   count, not done), -2 a DB error or a row nq could not have written. */
static int job_head(sqlite3 *db, uint64_t job, nq_job_row_t *row, nq_manifest_head_t *h, char *err,
                    size_t errlen)
{
    int rc = store_job_read(db, job, row, err, errlen);
    if (rc != 0)
        return rc == 1 ? -1 : -2;
    if (row->spec.kind != NQ_KIND_COUNT)
        return nq_errf(err, errlen, "manifest: count jobs only (job %llu is a %s job)",
                       (unsigned long long)job, store_kind_name(row->spec.kind));
    if (row->state != NQ_JOB_DONE)
        return nq_errf(err, errlen, "job not done: job %llu is %s, %llu of %llu shards done",
                       (unsigned long long)job, store_job_state_name(row->state),
                       (unsigned long long)row->shards_done, (unsigned long long)row->shards_total);
    h->n = (int)row->spec.n;
    h->depth = (int)row->spec.depth;
    h->encoding = (int)row->spec.encoding;
    h->shards = row->shards_total;
    return 0;
}

/* The claimed sums: what `nq result` prints, from the job's row (nodes: the CPU kernels', as the
   header's are). */
static int job_claims(sqlite3 *db, uint64_t job, nq_manifest_head_t *h, char *err, size_t errlen)
{
    nq_job_totals_t t;
    memset(&t, 0, sizeof t);
    if (store_job_sums(db, job, &t) != SQLITE_DONE)
        return nq_errf(err, errlen, "jobs: %s", sqlite3_errmsg(db)), -2;
    h->total = t.total;
    h->unique = t.unique;
    h->nodes = t.nodes;
    return 0;
}

static int put_line(FILE *f, const char *line, size_t len, nq_merkle_t *tree, char *err, size_t errlen)
{
    merkle_add(tree, line, len);
    if (fwrite(line, 1, len, f) != len || putc('\n', f) == EOF)
        return nq_errf(err, errlen, "write error"), -2;
    return 0;
}

/* One done row as a manifest line; its descriptor from the list (a row that has one, from an
   older store, must agree). 0, -1 the job is not done after all, -2 damaged. */
static int row_line(sqlite3_stmt *q, const nq_shards_t *list, uint64_t idx, nq_manifest_line_t *l,
                    char *err, size_t errlen)
{
    uint64_t got = (uint64_t)sqlite3_column_int64(q, 0);
    const char *state = (const char *)sqlite3_column_text(q, 1);
    if (got != idx)
        return nq_errf(err, errlen, "job not done: shard %llu has no row", (unsigned long long)idx);
    if (!state || strcmp(state, "done") != 0)
        return nq_errf(err, errlen, "job not done: shard %llu is %s", (unsigned long long)idx, state ? state : "?");
    for (int c = 3; c <= 7; c++)
        if (sqlite3_column_type(q, c) != SQLITE_INTEGER)
            return nq_errf(err, errlen, "damaged store: done shard %llu lacks its result", (unsigned long long)idx), -2;
    l->idx = idx;
    l->spec_len = shards_get(list, idx, l->spec);
    int spec_bytes = sqlite3_column_bytes(q, 2);
    if (sqlite3_column_type(q, 2) == SQLITE_BLOB &&
        ((size_t)spec_bytes != l->spec_len || memcmp(sqlite3_column_blob(q, 2), l->spec, l->spec_len) != 0))
        return nq_errf(err, errlen, "damaged store: shard %llu's descriptor is not the job's list's",
                       (unsigned long long)idx), -2;
    l->total = (uint64_t)sqlite3_column_int64(q, 3);
    l->unique = (uint64_t)sqlite3_column_int64(q, 4);
    l->nodes = (uint64_t)sqlite3_column_int64(q, 5);
    l->res13 = (unsigned)sqlite3_column_int(q, 6);
    l->res15 = (unsigned)sqlite3_column_int(q, 7);
    const char *w = (const char *)sqlite3_column_text(q, 8);
    snprintf(l->worker, sizeof l->worker, "%s", w && *w ? w : "-");
    l->confirmations = (uint64_t)sqlite3_column_int64(q, 9);
    l->evidence = (uint64_t)sqlite3_column_int64(q, 10);
    int64_t kind = sqlite3_column_int64(q, 11);
    if (sqlite3_column_type(q, 11) != SQLITE_INTEGER || kind < NQ_NODES_CPU || kind > NQ_NODES_GPU_FAST)
        return nq_errf(err, errlen, "damaged store: shard %llu's nodes_kind is not %d or %d",
                       (unsigned long long)idx, NQ_NODES_CPU, NQ_NODES_GPU_FAST), -2;
    l->nodes_kind = (unsigned)kind;
    int64_t copy = sqlite3_column_int64(q, 12);
    if (sqlite3_column_type(q, 12) != SQLITE_INTEGER || copy < 0 || copy > 1)
        return nq_errf(err, errlen, "damaged store: shard %llu's by_copy is not 0 or 1",
                       (unsigned long long)idx), -2;
    l->by_copy = (unsigned)copy;
    return 0;
}

/* Every shard line, and the sums of what was written (checked against the job's row; nodes of the
   lines of the CPU kernels' alone). */
static int shard_lines(sqlite3 *db, uint64_t job, const nq_shards_t *list, const nq_manifest_head_t *h, FILE *f,
                       nq_merkle_t *tree, nq_u128 sums[3], char *err, size_t errlen)
{
    sqlite3_stmt *q;
    char buf[NQ_MANIFEST_LINE_MAX];
    nq_manifest_line_t l;
    /* evidence: a range of its primary key per shard, and nearly always empty */
    if (sqlite3_prepare_v2(db, "SELECT idx, state, spec, total, uniq, nodes, res13, res15, worker, confirmations,"
                               " (SELECT count(*) FROM evidence e WHERE e.job = s.job AND e.idx = s.idx),"
                               " nodes_kind, by_copy FROM shards s WHERE job = ?1 ORDER BY idx",
                           -1, &q, NULL) != SQLITE_OK)
        return nq_errf(err, errlen, "shards: %s", sqlite3_errmsg(db)), -2;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    int rc = 0;
    uint64_t idx = 0;
    for (; rc == 0 && idx < h->shards; idx++) {
        int step = sqlite3_step(q);
        if (step == SQLITE_DONE) {
            rc = nq_errf(err, errlen, "job not done: shard %llu has no row", (unsigned long long)idx);
            break;
        }
        if (step != SQLITE_ROW) {
            rc = (nq_errf(err, errlen, "shards: %s", sqlite3_errmsg(db)), -2);
            break;
        }
        if ((rc = row_line(q, list, idx, &l, err, errlen)) != 0)
            break;
        size_t len = manifest_line_format(&l, buf, sizeof buf);
        if (len == 0)
            rc = (nq_errf(err, errlen, "damaged store: shard %llu's row cannot be written (residues out of range,"
                          " or a worker id with spaces or control bytes)", (unsigned long long)idx), -2);
        else if ((rc = put_line(f, buf, len, tree, err, errlen)) == 0) {
            sums[0] += l.total;
            sums[1] += l.unique;
            sums[2] += l.nodes_kind == NQ_NODES_CPU ? l.nodes : 0;
        }
    }
    if (rc == 0 && sqlite3_step(q) == SQLITE_ROW)
        rc = (nq_errf(err, errlen, "damaged store: a shard row past the job's %llu shards",
                      (unsigned long long)h->shards), -2);
    sqlite3_finalize(q);
    return rc;
}

static int sums_agree(const nq_manifest_head_t *h, const nq_u128 sums[3], char *err, size_t errlen)
{
    static const char *const names[3] = { "total", "unique", "nodes" };
    const nq_u128 claims[3] = { h->total, h->unique, h->nodes };
    char a[40], b[40];
    for (int i = 0; i < 3; i++)
        if (claims[i] != sums[i])
            return nq_errf(err, errlen, "damaged store: the job's %s is %s, its rows sum to %s: run 'nq check'",
                           names[i], u128_to_str(claims[i], a), u128_to_str(sums[i], b)), -2;
    return 0;
}

/* Header, lines, root: the part of store_manifest_write inside its read transaction. */
static int write_all(sqlite3 *db, uint64_t job, FILE *f, uint8_t root[NQ_MERKLE_BYTES], uint64_t *shards,
                     char *err, size_t errlen)
{
    nq_manifest_head_t h = { .version = NQ_MANIFEST_VERSION };
    nq_job_row_t row;
    nq_merkle_t tree;
    nq_u128 sums[3] = { 0, 0, 0 };
    char buf[NQ_MANIFEST_LINE_MAX];
    int rc = job_head(db, job, &row, &h, err, errlen);
    if (rc != 0 || (rc = job_claims(db, job, &h, err, errlen)) != 0)
        return rc;
    nq_shards_t *list = store_job_list(&row, err, errlen);   /* bounded, and its count must be the row's */
    if (!list)
        return -2;
    merkle_init(&tree);
    size_t len = manifest_head_format(&h, buf, sizeof buf);
    rc = put_line(f, buf, len, &tree, err, errlen);
    if (rc == 0)
        rc = shard_lines(db, job, list, &h, f, &tree, sums, err, errlen);
    if (rc == 0)
        rc = sums_agree(&h, sums, err, errlen);
    shards_destroy(&list);
    if (rc != 0)
        return rc;
    merkle_root(&tree, root);
    len = manifest_root_format(root, buf, sizeof buf);
    if (fwrite(buf, 1, len, f) != len || putc('\n', f) == EOF)
        return nq_errf(err, errlen, "write error"), -2;
    *shards = h.shards;
    return 0;
}

int store_manifest_write(sqlite3 *db, uint64_t job, FILE *f, uint8_t root[NQ_MERKLE_BYTES], uint64_t *shards,
                         char *err, size_t errlen)
{
    int own = sqlite3_get_autocommit(db);     /* one snapshot, unless the caller has one open */
    if (own && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return nq_errf(err, errlen, "begin: %s", sqlite3_errmsg(db)), -2;
    int rc = write_all(db, job, f, root, shards, err, errlen);
    if (own)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    return rc;
}

static void old_root(sqlite3 *db, uint64_t job, char was[NQ_MERKLE_HEX + 1])
{
    sqlite3_stmt *q;
    was[0] = '\0';
    if (sqlite3_prepare_v2(db, "SELECT root FROM manifests WHERE job = ?1", -1, &q, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(was, NQ_MERKLE_HEX + 1, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
}

int store_manifest_keep(nq_store_t *s, uint64_t job, const uint8_t root[NQ_MERKLE_BYTES], uint64_t shards,
                        char was[NQ_MERKLE_HEX + 1], char *err, size_t errlen)
{
    sqlite3 *db = store_db(s);
    sqlite3_stmt *q;
    char hex[NQ_MERKLE_HEX + 1];
    merkle_hex(root, hex);
    old_root(db, job, was);
    int rc = sqlite3_prepare_v2(db, "INSERT INTO manifests (job, root, shards, created_at) VALUES (?1, ?2, ?3, ?4)"
                                    " ON CONFLICT (job) DO UPDATE SET root = excluded.root,"
                                    " shards = excluded.shards, created_at = excluded.created_at", -1, &q, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, (sqlite3_int64)job);
        sqlite3_bind_text(q, 2, hex, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 3, (sqlite3_int64)shards);
        sqlite3_bind_double(q, 4, nq_wall());
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_finalize(q);
    }
    if (rc != SQLITE_OK)
        return nq_errf(err, errlen, "%s: keeping the manifest's root: %s", store_path(s), sqlite3_errmsg(db));
    return 0;
}
