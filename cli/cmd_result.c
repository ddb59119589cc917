/* `nq result` and `nq export`: the answers, for people and for programs. */
#include "board.h"
#include "cli.h"
#include "cmd_args.h"
#include "export_manifest.h"
#include "render.h"
#include "solfile.h"
#include "query.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONN "broker,db,key,broker-key,timeout,log-level"

/* Offline: straight from the DB and the solution files beside it, whatever the size. */
static int read_solution_local(const char *db, uint64_t job, uint32_t **cols, uint64_t *n)
{
    char err[512];
    nq_store_t *st = store_open(db, 1, err, sizeof err);
    if (!st)
        return cli_error("result", "%s", err);
    int rc = query_solution(store_db(st), db, job, 0, cols, n, err, sizeof err);
    store_destroy(&st);
    if (rc == -1) {
        fprintf(stderr, "nq result: %s\n", err);
        return NQ_EXIT_NO;
    }
    return rc == 0 ? 0 : cli_error("result", "%s", err);
}

/*
 * The broker's {n, cols} answer as a malloc'd permutation. Nothing in it is
 * trusted: n is bounded before any arithmetic (so n * 4 cannot wrap and match a
 * short bin), cols must hold exactly n columns, and every column must be < n.
 */
static int solution_decode(const msgpack_object *doc, uint32_t **cols, uint64_t *n)
{
    const msgpack_object *oc = render_get(doc, "cols");
    if (client_doc_u64(doc, "n", 1, NQ_SOLVE_MAX_N, n) != 0)
        return cli_error("result", "bad reply from the broker: the solution's n is missing or not from 1 to %llu",
                         NQ_SOLVE_MAX_N);
    if (!oc || oc->type != MSGPACK_OBJECT_BIN || oc->via.bin.size != *n * 4)
        return cli_error("result", "bad reply from the broker: the solution's cols is not %llu columns of 4 bytes",
                         (unsigned long long)*n);
    *cols = malloc(*n * sizeof **cols);
    if (!*cols)
        return cli_error("result", "out of memory");
    const uint8_t *p = (const uint8_t *)oc->via.bin.ptr;
    for (uint64_t i = 0; i < *n; i++, p += 4) {
        uint32_t c = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (c >= *n) {
            free(*cols);
            *cols = NULL;
            return cli_error("result", "bad reply from the broker: column %u of row %llu is not below N=%llu",
                             c, (unsigned long long)i, (unsigned long long)*n);
        }
        (*cols)[i] = c;
    }
    return 0;
}

/* The first stored solution of a solve job, as a malloc'd permutation. */
static int fetch_solution(nq_cmd_args_t *a, uint32_t **cols, uint64_t *n)
{
    if (a->client.local)               /* resolved by the result asked first */
        return read_solution_local(a->client.db, a->req.job, cols, n);
    nq_client_reply_t rep;
    nq_cmd_args_t s = *a;
    snprintf(s.req.op, sizeof s.req.op, "solution");
    s.req.nparams = 0;
    proto_param_add_u64(&s.req, "index", 0);
    int rc = client_call_cmd("result", &s.client, &s.req, &rep);
    if (rc)
        return rc;
    rc = solution_decode(&rep.doc, cols, n);
    client_reply_free(&rep);
    return rc;
}

static int result_extras(nq_cmd_args_t *a)
{
    uint32_t *cols = NULL;
    uint64_t n = 0;
    int rc = fetch_solution(a, &cols, &n);
    if (rc)
        return rc;
    char err[512];
    /* the board's limit first: a command that fails writes no --out file */
    if (a->board && n > BOARD_MAX_N)
        rc = cli_usage_error("result", "boards are drawn up to N=%d (this one is N=%llu); use --out FILE",
                             BOARD_MAX_N, (unsigned long long)n);
    else if (a->out && solfile_write(a->out, cols, n, a->format && !strcmp(a->format, "bin"), err,
                                     sizeof err) != 0)
        rc = cli_error("result", "%s", err);
    else if (a->out)
        fprintf(stderr, "solution of N=%llu written to %s\n", (unsigned long long)n, a->out);
    if (rc == 0 && a->board && board_print(stdout, cols, n) != 0)
        rc = cli_error("result", "the solution cannot be drawn");   /* columns were checked < n */
    free(cols);
    return rc;
}

int cmd_result(int argc, char **argv)
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse("result", CONN ",json,out,format,board", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid("result", &a, 1)))
        return rc;
    if (a.format && strcmp(a.format, "text") && strcmp(a.format, "bin"))
        return cli_usage_error("result", "--format for --out is text or bin");
    snprintf(a.req.op, sizeof a.req.op, "result");
    if ((rc = client_call_cmd("result", &a.client, &a.req, &rep)))
        return rc;
    /* what --out and --board cannot do is refused before anything is printed */
    int failed = client_doc_str_is(&rep.doc, "state", "failed");
    int solve = client_doc_str_is(&rep.doc, "kind", "solve");
    uint64_t n = 0;
    if ((a.out || a.board) && !solve)
        rc = cli_usage_error("result", "--out and --board are for solve jobs");
    else if (a.board && client_doc_u64(&rep.doc, "n", 0, UINT64_MAX, &n) == 0 && n > BOARD_MAX_N)
        rc = cli_usage_error("result", "boards are drawn up to N=%d (this one is N=%llu); use --out FILE",
                             BOARD_MAX_N, (unsigned long long)n);
    if (rc) {
        client_reply_free(&rep);
        return rc;
    }
    if (a.client.json)
        render_json(stdout, &rep.doc);
    else
        render_result(stdout, &rep.doc);
    client_reply_free(&rep);
    if (a.out || a.board)
        rc = result_extras(&a);
    return rc ? rc : (failed ? NQ_EXIT_NO : NQ_EXIT_OK);
}

int cmd_export(int argc, char **argv)
{
    nq_cmd_args_t a;
    int rc = cmd_args_parse("export", CONN ",format,unique,manifest", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid("export", &a, 1)))
        return rc;
    if (a.manifest)
        return export_manifest(&a);
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
        int rows = render_export(stdout, &rep.doc, csv, first, last);
        /* A page that leads on must have rows and a cursor past ours (the broker's cursors only
           grow): otherwise a broken broker would keep this loop going for ever. */
        int stuck = !last && (rows <= 0 || next->via.u64 <= cursor);
        if (!last)
            cursor = next->via.u64;
        client_reply_free(&rep);
        if (rows < 0)
            return cli_error("export", "bad reply from the broker: malformed page");
        if (stuck)
            return cli_error("export", "bad reply from the broker: the export does not advance");
        if (cli_flush_stdout() != 0)
            return NQ_EXIT_ERROR;       /* the reason is printed at exit, where stdout is checked */
        if (last)
            return 0;
    }
}
