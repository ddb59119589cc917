/* `nq broker`: the long-running broker. */
#include "broker.h"
#include "cli.h"
#include "http.h"
#include "log.h"
#include "signals.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int cmd_broker(int argc, char **argv)
{
    nq_broker_cfg_t cfg;
    static char http_token[HTTP_TOKEN_MAX + 1];
    broker_cfg_defaults(&cfg);
    static const struct option opts[] = {
        { "bind", required_argument, 0, 'b' }, { "control", required_argument, 0, 'c' },
        { "db", required_argument, 0, 'd' }, { "key", required_argument, 0, 'k' },
        { "authorized-keys", required_argument, 0, 'a' }, { "insecure", no_argument, 0, 'I' },
        { "http", required_argument, 0, 'm' },
        { "http-token-file", required_argument, 0, 'K' }, { "heartbeat-ms", required_argument, 0, 'H' },
        { "liveness", required_argument, 0, 'L' }, { "stall-timeout", required_argument, 0, 'S' },
        { "grace", required_argument, 0, 'G' }, { "log-format", required_argument, 0, 'F' },
        { "log-level", required_argument, 0, 'V' }, { "max-job-shards", required_argument, 0, 'J' },
        { "max-store-shards", required_argument, 0, 'T' }, { "control-keys", required_argument, 0, 'C' },
        { 0, 0, 0, 0 },
    };
    uint64_t v;
    int c, rc;
    const char *token_file = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'b': cfg.bind = optarg; break;
        case 'c': cfg.control = optarg; break;
        case 'd': cfg.db_path = optarg; break;
        case 'k': cfg.key_file = optarg; break;
        case 'a': cfg.authorized = optarg; break;
        case 'C': cfg.control_keys = optarg; break;
        case 'I': cfg.insecure = 1; break;
        case 'm': cfg.metrics = optarg; break;
        case 'K': token_file = optarg; break;
        case 'H': if ((rc = cli_parse_u64("broker", "--heartbeat-ms", optarg, 100, 60000, &v))) return rc;
                  cfg.heartbeat_ms = (uint32_t)v; break;
        case 'L': if ((rc = cli_parse_u64("broker", "--liveness", optarg, 1, 100, &v))) return rc;
                  cfg.liveness = (uint32_t)v; break;
        case 'S': if ((rc = cli_parse_u64("broker", "--stall-timeout", optarg, 0, 86400, &v))) return rc;
                  cfg.stall_s = (uint32_t)v; break;
        case 'G': if ((rc = cli_parse_u64("broker", "--grace", optarg, 0, 3600, &v))) return rc;
                  cfg.grace_s = (uint32_t)v; break;
        case 'J': if ((rc = cli_parse_u64("broker", "--max-job-shards", optarg, 1, UINT64_MAX, &v))) return rc;
                  cfg.max_job_shards = v; break;
        case 'T': if ((rc = cli_parse_u64("broker", "--max-store-shards", optarg, 1, UINT64_MAX, &v))) return rc;
                  cfg.max_store_shards = v; break;
        case 'F': if ((rc = cli_log_option("broker", "log-format", optarg))) return rc; break;
        case 'V': if ((rc = cli_log_option("broker", "log-level", optarg))) return rc; break;
        default: return cli_usage_error("broker", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("broker", "unexpected argument '%s'", argv[optind]);
    if (cfg.authorized && !cfg.key_file)
        return cli_usage_error("broker", "--authorized-keys needs --key (the broker's own key pair)");
    if (cfg.control_keys && !cfg.key_file)
        return cli_usage_error("broker", "--control-keys needs --key (the broker's own key pair)");
    char err[512] = "";
    if ((rc = cli_http_options("broker", cfg.metrics, token_file, http_token, sizeof http_token)))
        return rc;                      /* before any file is touched */
    cfg.http_token = http_token;
    cfg.stop = &nq_stop;                /* SIGTERM while the jobs load: stop there, not after */
    signals_install();
    nq_broker_t *b = broker_new(&cfg, err, sizeof err);
    if (!b && atomic_load(&nq_stop)) {
        nq_log(NQ_LOG_INFO, "broker.stop", "reason=\"%s\"", err);
        return NQ_EXIT_OK;              /* asked to stop, and stopped */
    }
    if (!b)
        return cli_error("broker", "%s", err);
    rc = broker_run(b, &nq_stop) == 0 ? NQ_EXIT_OK : cli_error("broker", "%s", broker_error(b));
    broker_destroy(&b);
    return rc;
}
