/*
 * The workers document (query.h): every worker row, with the broker's live figures where it
 * knows the worker.
 */
#include "query_impl.h"
#include "errf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- workers ---- */

/* A live GPU worker's devices (its names are its own words: renderers escape them). */
static void pk_devices(msgpack_packer *pk, const query_live_t *live, const char *id)
{
    nq_hb_device_t d[NQ_MAX_HB_DEVICES];
    uint32_t n = live && live->devices ? live->devices(live->ud, id, d, NQ_MAX_HB_DEVICES) : 0;
    query_pack_str(pk, "devices");
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_map(pk, 6);
        query_pack_str(pk, "device"); msgpack_pack_uint32(pk, i);
        query_pack_str(pk, "name"); query_pack_str(pk, d[i].name);
        query_pack_str(pk, "state");
        query_pack_str(pk, d[i].state == NQ_DEVICE_FAILED ? "failed" : "counting");
        query_pack_str(pk, "queued"); msgpack_pack_uint32(pk, d[i].queued);
        query_pack_str(pk, "shards"); msgpack_pack_uint64(pk, d[i].shards);
        query_pack_str(pk, "shards_per_s"); msgpack_pack_double(pk, (double)d[i].rate_milli / 1000);
    }
}

static void pk_worker(msgpack_packer *pk, sqlite3_stmt *st, const query_live_t *live)
{
    static const char *const keys[11] = {
        "id", "host", "pubkey", "threads", "first_seen", "last_seen",
        "shards_done", "nodes", "seconds", "conflicts", "flagged"
    };
    double seconds = sqlite3_column_double(st, 8);
    double nps = seconds > 0 ? (double)(uint64_t)sqlite3_column_int64(st, 7) / seconds : 0;
    msgpack_pack_map(pk, 17);
    for (int i = 0; i < 11; i++) {
        query_pack_str(pk, keys[i]);
        if (i <= 2) query_pack_col_text(pk, st, i);
        else if (i == 4 || i == 5 || i == 8) query_pack_col_double(pk, st, i);
        else if (i == 10) {
            if (sqlite3_column_int64(st, i)) msgpack_pack_true(pk);
            else msgpack_pack_false(pk);
        } else query_pack_col_u64(pk, st, i);
    }
    query_worker_live_t w = { 0 };
    const char *id = (const char *)sqlite3_column_text(st, 0);
    int known = live && live->lookup && id && live->lookup(live->ud, id, &w) == 0;
    query_pack_str(pk, "nodes_per_s"); msgpack_pack_double(pk, known ? w.nodes_per_s : nps);
    query_pack_str(pk, "alive");
    if (!live) msgpack_pack_nil(pk);
    else if (known && w.alive) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
    query_pack_str(pk, "leases");
    if (!live) msgpack_pack_nil(pk);
    else msgpack_pack_uint32(pk, known ? w.leases : 0);
    query_pack_str(pk, "kernel");               /* the worker's own words: renderers escape them */
    if (known && w.alive && w.kernel[0]) query_pack_str(pk, w.kernel);
    else msgpack_pack_nil(pk);
    query_pack_str(pk, "rtt_s");                /* its link's round trip, as the broker measured it */
    if (known && w.alive && w.rtt_s > 0) msgpack_pack_double(pk, w.rtt_s);
    else msgpack_pack_nil(pk);
    pk_devices(pk, known && w.alive ? live : NULL, id);
}

static int workers_doc(sqlite3 *db, void *args, msgpack_packer *pk, char *err, size_t errlen)
{
    const query_live_t *live = args;
    uint64_t count;
    int rc = query_count_rows(db, "SELECT COUNT(*) FROM workers", 0, &count, err, errlen);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st = query_prep(db, "SELECT id, host, pubkey, threads, first_seen, last_seen, shards_done,"
                                " nodes, seconds, conflicts, flagged FROM workers ORDER BY id",
                            err, errlen);
    if (!st)
        return -2;
    msgpack_pack_array(pk, (uint32_t)count);
    uint64_t seen = 0;
    while (seen < count && sqlite3_step(st) == SQLITE_ROW) {
        pk_worker(pk, st, live);
        seen++;
    }
    sqlite3_finalize(st);
    if (seen == count)
        return 0;
    return query_db_fail(db, "workers", err, errlen);
}

int query_workers(sqlite3 *db, const query_live_t *live, msgpack_packer *pk, char *err, size_t errlen)
{
    return query_doc_run(db, workers_doc, (void *)live, pk, err, errlen);
}
