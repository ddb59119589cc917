/* `nq result` and `nq export`: the answers, for people and for programs. */
#include "board.h"
#include "cli.h"
#include "cmd_args.h"
#include "render.h"
#include "solfile.h"
#include "solstore.h"
#include "query.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONN "broker,key,broker-key,timeout,log-level"

/* Offline: straight from the DB and the solution files beside it, whatever the size. */
static int read_solution_local(const char *db, uint64_t job, uint32_t **cols, uint64_t *n)
{
    char err[512], dir[4096];
    nq_store_t *st = store_open(db, 1, err, sizeof err);
    if (!st)
        return cli_error("result", "%s", err);
    solstore_dir(db, dir, sizeof dir);
    int rc = query_solution(store_db(st), dir, job, 0, cols, n, err, sizeof err);
    store_destroy(&st);
    if (rc == -1) {
        fprintf(stderr, "nq result: %s\n", err);
        return NQ_EXIT_NO;
    }
    return rc == 0 ? 0 : cli_error("result", "%s", err);
}

/* The first stored solution of a solve job, as a malloc'd permutation. */
static int fetch_solution(nq_cmd_args_t *a, uint32_t **cols, uint64_t *n)
{
    if (a->client.db)
        return read_solution_local(a->client.db, a->req.job, cols, n);
    nq_client_reply_t rep;
    nq_cmd_args_t s = *a;
    snprintf(s.req.op, sizeof s.req.op, "solution");
    s.req.nparams = 0;
    proto_param_add_u64(&s.req, "index", 0);
    int rc = client_call_cmd("result", &s.client, &s.req, &rep);
    if (rc)
        return rc;
    const msgpack_object *on = render_get(&rep.doc, "n"), *oc = render_get(&rep.doc, "cols");
    if (!on || !oc || oc->type != MSGPACK_OBJECT_BIN || oc->via.bin.size != on->via.u64 * 4) {
        client_reply_free(&rep);
        return cli_error("result", "malformed solution from the broker");
    }
    *n = on->via.u64;
    *cols = malloc(*n * sizeof **cols);
    const uint8_t *p = (const uint8_t *)oc->via.bin.ptr;
    for (uint64_t i = 0; *cols && i < *n; i++)
        (*cols)[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                     (uint32_t)p[4 * i + 3] << 24;
    client_reply_free(&rep);
    return *cols ? 0 : cli_error("result", "out of memory");
}

static int result_extras(nq_cmd_args_t *a)
{
    uint32_t *cols = NULL;
    uint64_t n = 0;
    int rc = fetch_solution(a, &cols, &n);
    if (rc)
        return rc;
    char err[512];
    if (a->out && solfile_write(a->out, cols, n, a->format && !strcmp(a->format, "bin"), err, sizeof err) != 0)
        rc = cli_error("result", "%s", err);
    else if (a->out)
        fprintf(stderr, "solution of N=%llu written to %s\n", (unsigned long long)n, a->out);
    if (rc == 0 && a->board && board_print(stdout, cols, n) != 0)
        rc = cli_usage_error("result", "boards are drawn up to N=64 (this one is N=%llu); use --out FILE",
                             (unsigned long long)n);
    free(cols);
    return rc;
}

int cmd_result(int argc, char **argv)
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse("result", CONN ",db,json,out,format,board", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid("result", &a, 1)))
        return rc;
    if (a.format && strcmp(a.format, "text") && strcmp(a.format, "bin"))
        return cli_usage_error("result", "--format for --out is text or bin");
    snprintf(a.req.op, sizeof a.req.op, "result");
    if ((rc = client_call_cmd("result", &a.client, &a.req, &rep)))
        return rc;
    if (a.client.json)
        render_json(stdout, &rep.doc);
    else
        render_result(stdout, &rep.doc);
    const msgpack_object *st = render_get(&rep.doc, "state"), *kind = render_get(&rep.doc, "kind");
    int failed = st && st->type == MSGPACK_OBJECT_STR && st->via.str.size == 6 &&
                 !memcmp(st->via.str.ptr, "failed", 6);
    int solve = kind && kind->type == MSGPACK_OBJECT_STR && kind->via.str.size == 5 &&
                !memcmp(kind->via.str.ptr, "solve", 5);
    client_reply_free(&rep);
    if ((a.out || a.board) && !solve)
        return cli_usage_error("result", "--out and --board are for solve jobs");
    if (a.out || a.board)
        rc = result_extras(&a);
    return rc ? rc : (failed ? NQ_EXIT_NO : NQ_EXIT_OK);
}

int cmd_export(int argc, char **argv)
{
    nq_cmd_args_t a;
    int rc = cmd_args_parse("export", CONN ",db,format,unique", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid("export", &a, 1)))
        return rc;
    int csv = !a.format || !strcmp(a.format, "csv");
    if (a.format && strcmp(a.format, "csv") && strcmp(a.format, "json"))
        return cli_usage_error("export", "--format is csv or json");
    snprintf(a.req.op, sizeof a.req.op, "export");
    uint64_t cursor = 0;
    for (int first = 1;; first = 0) {
        nq_client_reply_t rep;
        a.req.nparams = 0;
        proto_param_add_u64(&a.req, "cursor", cursor);
        proto_param_add_u64(&a.req, "unique", (uint64_t)a.unique);
        if ((rc = client_call_cmd("export", &a.client, &a.req, &rep)))
            return rc;
        const msgpack_object *next = render_get(&rep.doc, "next");
        int last = !next || next->type != MSGPACK_OBJECT_POSITIVE_INTEGER;
        if (render_export(stdout, &rep.doc, csv, first, last) < 0) {
            client_reply_free(&rep);
            return cli_error("export", "malformed page from the broker");
        }
        if (!last)
            cursor = next->via.u64;
        client_reply_free(&rep);
        if (last)
            return ferror(stdout) ? cli_error("export", "write error") : 0;
    }
}
