/* Strict parsing of the client commands' options. */
#include "cmd_args.h"
#include "bench_gpu.h"
#include "cli.h"
#include "log.h"
#include "solve.h"
#include "store.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

typedef struct { const char *name; int has_arg; uint64_t min, max; const char *param; } arg_spec_t;

/* Numeric job parameters: name, range, and the request key they travel under. */
static const arg_spec_t job_params[] = {
    { "depth", 1, 1, 32, "depth" },          { "priority", 1, 0, 1000000, "priority" },
    { "max-attempts", 1, 1, 100, "max_attempts" }, { "quorum", 1, 1, 3, "quorum" },
    { "solutions", 1, 1, 100000000, "solutions" }, { "restarts", 1, 1, 100000000, "restarts" },
    { "seed", 1, 0, UINT64_MAX, "seed" },    { "max-steps", 1, 1, UINT64_MAX, "max_steps" },
    { "shard-seconds", 1, 1, 7 * 86400, "shard_seconds" },
    { NULL, 0, 0, 0, NULL },
};

static const struct option long_opts[] = {
    { "broker", 1, 0, 0 }, { "db", 1, 0, 0 }, { "json", 0, 0, 0 }, { "key", 1, 0, 0 },
    { "broker-key", 1, 0, 0 }, { "timeout", 1, 0, 0 }, { "watch", 0, 0, 0 }, { "out", 1, 0, 0 },
    { "format", 1, 0, 0 }, { "unique", 0, 0, 0 }, { "board", 0, 0, 0 }, { "fresh", 0, 0, 0 },
    { "workers", 1, 0, 0 }, { "algo", 1, 0, 0 }, { "all", 0, 0, 0 }, { "log-level", 1, 0, 0 },
    { "gpu", 2, 0, 0 }, { "gpu-device", 1, 0, 0 }, { "gpu-kernel", 1, 0, 0 }, { "gpu-only", 0, 0, 0 },
    { "depth", 1, 0, 0 }, { "priority", 1, 0, 0 }, { "max-attempts", 1, 0, 0 }, { "quorum", 1, 0, 0 },
    { "solutions", 1, 0, 0 }, { "restarts", 1, 0, 0 }, { "seed", 1, 0, 0 }, { "max-steps", 1, 0, 0 },
    { "shard-seconds", 1, 0, 0 }, { "http", 1, 0, 0 }, { "http-token-file", 1, 0, 0 }, { "manifest", 1, 0, 0 },
    { "verify-rate", 1, 0, 0 },
    { 0, 0, 0, 0 },
};

static int allowed_has(const char *allowed, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = allowed; (p = strstr(p, name)) != NULL; p += n)
        if ((p == allowed || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

/* --verify-rate P: a decimal from 0 to 1 (at most 6 places), as parts per million. Parsed as
   digits, not with strtod: "0.05" must be 50000 exactly, and "nan" or "1e-3" are refused. */
static int parse_rate(const char *cmd, const char *val, uint64_t *ppm)
{
    const char *p = val;
    uint64_t whole = 0, frac = 0, scale = 1000000;
    if (*p < '0' || *p > '9')
        return cli_usage_error(cmd, "--verify-rate takes a probability from 0 to 1, like 0.05 (got '%s')", val);
    for (; *p >= '0' && *p <= '9' && whole <= 1; p++)
        whole = whole * 10 + (uint64_t)(*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9' && scale > 1; p++) {
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;
        }
    if (*p != '\0' || whole > 1 || (whole == 1 && frac > 0))
        return cli_usage_error(cmd, "--verify-rate takes a probability from 0 to 1 with at most 6 decimals, "
                               "like 0.05 (got '%s')", val);
    *ppm = whole * 1000000 + frac;
    return 0;
}

static int set_option(const char *cmd, const char *name, const char *val, nq_cmd_args_t *a)
{
    uint64_t v;
    int rc;
    for (const arg_spec_t *s = job_params; s->name; s++) {
        if (strcmp(s->name, name) != 0)
            continue;
        char what[40];
        snprintf(what, sizeof what, "--%s", name);
        if ((rc = cli_parse_u64(cmd, what, val, s->min, s->max, &v)))
            return rc;
        proto_param_add_u64(&a->req, s->param, v);
        return 0;
    }
    if (!strcmp(name, "broker")) a->client.broker = val;
    else if (!strcmp(name, "db")) a->client.db = val;
    else if (!strcmp(name, "json")) a->client.json = 1;
    else if (!strcmp(name, "key")) a->client.key_file = val;
    else if (!strcmp(name, "broker-key")) a->client.broker_key_file = val;
    else if (!strcmp(name, "watch")) a->watch = 1;
    else if (!strcmp(name, "out")) a->out = val;
    else if (!strcmp(name, "manifest")) a->manifest = val;
    else if (!strcmp(name, "unique")) a->unique = 1;
    else if (!strcmp(name, "board")) a->board = 1;
    else if (!strcmp(name, "fresh")) a->fresh = 1;
    else if (!strcmp(name, "gpu")) {
        if ((rc = cli_gpu_option(cmd, val, &a->gpu_sel))) return rc;
        a->gpu = 1;
    }
    else if (!strcmp(name, "gpu-only")) a->gpu = a->gpu_only = 1;
    else if (!strcmp(name, "gpu-device")) {
        if ((rc = cli_gpu_device_option(cmd, val, &a->gpu_sel))) return rc;
        a->gpu = 1;
    }
    else if (!strcmp(name, "gpu-kernel")) {
        if ((rc = cli_gpu_kernel_option(cmd, val, &a->gpu_kernel))) return rc;
        a->gpu = 1;
    }
    else if (!strcmp(name, "http")) a->http = val;
    else if (!strcmp(name, "http-token-file")) a->http_token_file = val;
    else if (!strcmp(name, "all")) proto_param_add_u64(&a->req, "all", 1);
    else if (!strcmp(name, "verify-rate")) {
        if ((rc = parse_rate(cmd, val, &v))) return rc;
        proto_param_add_u64(&a->req, "verify_ppm", v);
    }
    else if (!strcmp(name, "timeout")) {
        if ((rc = cli_parse_u64(cmd, "--timeout", val, 1, 3600, &v))) return rc;
        a->client.timeout_ms = (int)(v * 1000);
    } else if (!strcmp(name, "workers")) {
        if ((rc = cli_parse_u64(cmd, "--workers", val, 1, NQ_THREADS_MAX, &v))) return rc;
        a->workers = (uint32_t)v;
    } else if (!strcmp(name, "format")) {
        if (strcmp(val, "csv") && strcmp(val, "json") && strcmp(val, "text") && strcmp(val, "bin"))
            return cli_usage_error(cmd, "--format is csv or json (export), text or bin (result --out)");
        a->format = val;
    } else if (!strcmp(name, "algo")) {
        if (strlen(val) >= sizeof ((nq_job_spec_t *)0)->algo)
            return cli_usage_error(cmd, "--algo list too long");
        proto_param_add_str(&a->req, "algo", val);
    } else if (!strcmp(name, "log-level")) {
        return cli_log_option(cmd, name, val);
    }
    return 0;
}

int cmd_args_parse(const char *cmd, const char *allowed, int argc, char **argv, nq_cmd_args_t *a)
{
    memset(a, 0, sizeof *a);
    argc = cli_gpu_argv(argc, argv);
    int c, idx, rc;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", long_opts, &idx)) != -1) {
        if (c != 0)
            return cli_usage_error(cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
        const char *name = long_opts[idx].name;
        if (!allowed_has(allowed, name))
            return cli_usage_error(cmd, "option --%s does not apply here", name);
        if ((rc = set_option(cmd, name, optarg, a)))
            return rc;
    }
    for (; optind < argc; optind++) {
        if (a->npos == 4)
            return cli_usage_error(cmd, "too many arguments");
        a->pos[a->npos++] = argv[optind];
    }
    return 0;
}

int cmd_args_job(const char *cmd, nq_cmd_args_t *a)
{
    if (a->npos < 2)
        return cli_usage_error(cmd, "expected KIND N (count N, solve N or enumerate N)");
    if (a->npos > 2)
        return cli_usage_error(cmd, "unexpected argument '%s'", a->pos[2]);
    int kind = store_kind_parse(a->pos[0]);
    if (kind < 0)
        return cli_usage_error(cmd, "unknown kind '%s': count, solve or enumerate", a->pos[0]);
    uint64_t n, max = kind == NQ_KIND_COUNT ? NQ_SHARD_MAX_N : kind == NQ_KIND_ENUMERATE ? NQ_ENUM_MAX_N : NQ_SOLVE_MAX_N;
    uint64_t min = kind == NQ_KIND_SOLVE ? 4 : 1;
    char what[32];
    snprintf(what, sizeof what, "N for %s", a->pos[0]);
    int rc = cli_parse_u64(cmd, what, a->pos[1], min, max, &n);
    if (rc)
        return rc;
    if (kind != NQ_KIND_SOLVE) {
        static const char *solve_only[] = { "algo", "solutions", "restarts", "seed", "max_steps", "all", NULL };
        for (int i = 0; solve_only[i]; i++)
            if (proto_param_str(&a->req, solve_only[i]) || proto_param_u64(&a->req, solve_only[i], &(uint64_t){0}) == 0)
                return cli_usage_error(cmd, "--%s is for solve jobs", solve_only[i]);
    } else {
        const char *algo = proto_param_str(&a->req, "algo");
        if (algo && !strchr(algo, ',') && !solver_find(algo))
            return cli_usage_error(cmd, "unknown method '%s' (see 'nq bench solve --algo list')", algo);
    }
    proto_param_add_str(&a->req, "kind", a->pos[0]);
    proto_param_add_u64(&a->req, "n", n);
    return 0;
}

int cmd_args_jobid(const char *cmd, nq_cmd_args_t *a, int required)
{
    if (a->npos == 0) {
        if (required)
            return cli_usage_error(cmd, "expected a JOB id");
        return 0;
    }
    if (a->npos > 1)
        return cli_usage_error(cmd, "unexpected argument '%s'", a->pos[1]);
    return cli_parse_u64(cmd, "JOB", a->pos[0], 1, INT64_MAX, &a->req.job);
}
