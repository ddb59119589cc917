/* The client commands: submit, status, list, workers, result, cancel, retry, export. */
#include "board.h"
#include "cli.h"
#include "cmd_args.h"
#include "render.h"
#include "signals.h"
#include "solfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONN "broker,db,key,broker-key,timeout,log-level"
/* A submit is answered once its shard list is built, which the broker does for one submit at a
   time (a large list: seconds; a few submits may be ahead of this one): longer than a status. */
#define SUBMIT_TIMEOUT_MS 60000

static const char *doc_str(const msgpack_object *doc, const char *key)
{
    const msgpack_object *o = render_get(doc, key);
    static char buf[64];
    if (!o || o->type != MSGPACK_OBJECT_STR)
        return "";
    snprintf(buf, sizeof buf, "%.*s", (int)o->via.str.size, o->via.str.ptr);
    return buf;
}

int cmd_submit(int argc, char **argv)
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse("submit", CONN ",json,algo,all,depth,priority,max-attempts,quorum,solutions,"
                            "restarts,seed,max-steps,shard-seconds,verify-rate", argc, argv, &a);
    if (rc || (rc = cmd_args_job("submit", &a)))
        return rc;
    snprintf(a.req.op, sizeof a.req.op, "submit");
    if (a.client.timeout_ms == 0)
        a.client.timeout_ms = SUBMIT_TIMEOUT_MS;
    if ((rc = client_call_cmd("submit", &a.client, &a.req, &rep)))
        return rc;
    uint64_t id;
    if (client_doc_u64(&rep.doc, "id", 1, INT64_MAX, &id) != 0) {
        client_reply_free(&rep);
        return cli_error("submit", "bad reply from the broker: no job id");
    }
    if (a.client.json)
        render_json(stdout, &rep.doc);
    else
        printf("%llu\n", (unsigned long long)id);
    client_reply_free(&rep);
    return 0;
}

static int is_final(const char *state)
{
    return !strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "cancelled");
}

int cmd_status(int argc, char **argv)
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse("status", CONN ",json,watch", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid("status", &a, 0)))
        return rc;
    snprintf(a.req.op, sizeof a.req.op, "status");
    signals_install();
    for (;;) {
        if ((rc = client_call_cmd("status", &a.client, &a.req, &rep)))
            return rc;
        if (a.client.json)
            render_json(stdout, &rep.doc);
        else if (a.req.job)
            render_job(stdout, &rep.doc);
        else
            render_list(stdout, &rep.doc);
        if (cli_flush_stdout() != 0) {
            client_reply_free(&rep);
            return NQ_EXIT_ERROR;       /* the reason is printed at exit, where stdout is checked */
        }
        int final = a.req.job && is_final(doc_str(&rep.doc, "state"));
        client_reply_free(&rep);
        if (!a.watch || final)
            return 0;
        for (int i = 0; i < 10 && !nq_stop; i++)
            usleep(100000);
        if (nq_stop)
            return 0;
        if (!a.client.json && isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout);
    }
}

static int simple_query(const char *cmd, const char *op, int argc, char **argv,
                        void (*human)(FILE *, const msgpack_object *))
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse(cmd, CONN ",json", argc, argv, &a);
    if (rc)
        return rc;
    if (a.npos)
        return cli_usage_error(cmd, "unexpected argument '%s'", a.pos[0]);
    snprintf(a.req.op, sizeof a.req.op, "%s", op);
    if ((rc = client_call_cmd(cmd, &a.client, &a.req, &rep)))
        return rc;
    if (a.client.json)
        render_json(stdout, &rep.doc);
    else
        human(stdout, &rep.doc);
    client_reply_free(&rep);
    return 0;
}

int cmd_list(int argc, char **argv) { return simple_query("list", "list", argc, argv, render_list); }
int cmd_workers(int argc, char **argv) { return simple_query("workers", "workers", argc, argv, render_workers); }

static int job_op(const char *cmd, int argc, char **argv, const char *done_word)
{
    nq_cmd_args_t a;
    nq_client_reply_t rep;
    int rc = cmd_args_parse(cmd, CONN ",json", argc, argv, &a);
    if (rc || (rc = cmd_args_jobid(cmd, &a, 1)))
        return rc;
    snprintf(a.req.op, sizeof a.req.op, "%s", cmd);
    if ((rc = client_call_cmd(cmd, &a.client, &a.req, &rep)))
        return rc;
    if (a.client.json)
        render_json(stdout, &rep.doc);
    else
        printf("job %llu %s\n", (unsigned long long)a.req.job, done_word);
    client_reply_free(&rep);
    return 0;
}

int cmd_cancel(int argc, char **argv) { return job_op("cancel", argc, argv, "cancelled"); }
int cmd_retry(int argc, char **argv) { return job_op("retry", argc, argv, "is pending again"); }
