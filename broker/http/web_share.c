/*
 * Who did a job's work, and which shards failed: one pass over the job's export rows
 * (query_export, the rows of `nq export`), page by page. count rows name the worker,
 * nodes and seconds of each done shard and its state; solve rows the worker, steps and
 * seconds of each seed and its status (the shard state while not done).
 */
#include "http_impl.h"


#include <string.h>

/* Rows per export page read here: a page is unpacked whole, and 50,000 rows of 7 columns
   came to about 15 MB of the broker's peak memory (bench_broker.sh WEB=1); 5,000 keep it
   small at the same total cost. */
#define SHARE_PAGE_ROWS 5000u

typedef struct {
    int worker, work, seconds, state, idx;   /* column indexes, -1 when absent */
} share_cols_t;

static int col_index(const msgpack_object *cols, const char *name)
{
    size_t n = strlen(name);
    for (uint32_t i = 0; cols && cols->type == MSGPACK_OBJECT_ARRAY && i < cols->via.array.size; i++) {
        const msgpack_object *c = &cols->via.array.ptr[i];
        if (c->type == MSGPACK_OBJECT_STR && c->via.str.size == n && memcmp(c->via.str.ptr, name, n) == 0)
            return (int)i;
    }
    return -1;
}

static share_cols_t share_cols(const msgpack_object *cols)
{
    share_cols_t c = { col_index(cols, "worker"), col_index(cols, "nodes"), col_index(cols, "seconds"),
                       col_index(cols, "state"), col_index(cols, "idx") };
    if (c.work < 0)
        c.work = col_index(cols, "steps");
    if (c.state < 0)
        c.state = col_index(cols, "status");
    return c;
}

static const msgpack_object *cell(const msgpack_object *row, int i)
{
    return i >= 0 && (uint32_t)i < row->via.array.size ? &row->via.array.ptr[i] : NULL;
}

static int str_is(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}

static double num(const msgpack_object *o)
{
    if (!o) return 0;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)o->via.u64;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) return o->via.f64;
    return 0;
}

/* The entry of worker id; past SHARE_WORKERS distinct ids, the "others" entry. */
static share_worker_t *worker_entry(web_share_t *s, const msgpack_object *id)
{
    for (size_t i = 0; i < s->nworkers && i < SHARE_WORKERS; i++)
        if (strlen(s->w[i].id) == id->via.str.size &&
            memcmp(s->w[i].id, id->via.str.ptr, id->via.str.size) == 0)
            return &s->w[i];
    if (s->nworkers < SHARE_WORKERS && id->via.str.size < sizeof s->w[0].id) {
        share_worker_t *w = &s->w[s->nworkers++];
        memcpy(w->id, id->via.str.ptr, id->via.str.size);
        w->id[id->via.str.size] = '\0';
        return w;
    }
    snprintf(s->w[SHARE_WORKERS].id, sizeof s->w[0].id, "(others)");   /* long or many ids */
    return &s->w[SHARE_WORKERS];
}

static void share_row(web_share_t *s, const share_cols_t *c, const msgpack_object *row)
{
    const msgpack_object *state = cell(row, c->state), *worker = cell(row, c->worker);
    uint64_t idx = (uint64_t)num(cell(row, c->idx));
    if (str_is(state, "failed") && s->nfailed < SHARE_SHARDS_LISTED)
        s->failed[s->nfailed++] = idx;
    if (str_is(state, "conflict") && s->nconflict < SHARE_SHARDS_LISTED)
        s->conflict[s->nconflict++] = idx;
    int done = str_is(state, "done") || str_is(state, "solved") || str_is(state, "not found") ||
               str_is(state, "error");
    if (!done || !worker || worker->type != MSGPACK_OBJECT_STR)
        return;
    share_worker_t *w = worker_entry(s, worker);
    w->shards++;
    w->nodes += num(cell(row, c->work));
    w->seconds += num(cell(row, c->seconds));
}

/* Adds one export page; *next gets its cursor (0: the last page). 0, or -2 malformed. */
static int share_page(web_share_t *s, const msgpack_object *page, uint64_t *next)
{
    const msgpack_object *rows = doc_get(page, "rows"), *nx = doc_get(page, "next");
    if (!rows || rows->type != MSGPACK_OBJECT_ARRAY)
        return -2;
    share_cols_t c = share_cols(doc_get(page, "columns"));
    for (uint32_t i = 0; i < rows->via.array.size; i++)
        if (rows->via.array.ptr[i].type == MSGPACK_OBJECT_ARRAY)
            share_row(s, &c, &rows->via.array.ptr[i]);
    *next = nx && nx->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? nx->via.u64 : 0;
    return 0;
}

int web_share_get(nq_http_t *h, uint64_t job, int enumerate, web_share_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->job = job;
    if (enumerate)
        return 0;
    out->have_workers = 1;
    uint64_t cursor = 0;
    do {
        web_doc_t d;
        int rc = web_doc_export(h, job, cursor, SHARE_PAGE_ROWS, &d, err, errlen);
        if (rc == 0 && share_page(out, d.doc, &cursor) != 0) {
            snprintf(err, errlen, "an export page of job %llu is malformed", (unsigned long long)job);
            rc = -2;
        }
        web_doc_free(&d);
        if (rc != 0)
            return rc;
    } while (cursor != 0);
    return 0;
}
