/* `nq worker`: runs shards for a broker until told to stop. */
#include "bench_gpu.h"
#include "cli.h"
#include "log.h"
#include "signals.h"
#include "worker.h"

#include <getopt.h>
#include <stdio.h>

int cmd_worker(int argc, char **argv)
{
    nq_worker_cfg_t cfg;
    worker_cfg_defaults(&cfg);
    static const struct option opts[] = {
        { "connect", required_argument, 0, 'c' }, { "threads", required_argument, 0, 't' },
        { "prefetch", required_argument, 0, 'p' }, { "key", required_argument, 0, 'k' },
        { "broker-key", required_argument, 0, 'K' }, { "id", required_argument, 0, 'i' },
        { "log-format", required_argument, 0, 'F' }, { "log-level", required_argument, 0, 'V' },
        { "gpu", optional_argument, 0, 'g' }, { "gpu-device", required_argument, 0, 'G' },
        { "gpu-kernel", required_argument, 0, 'X' }, { "gpu-only", no_argument, 0, 'O' },
        { 0, 0, 0, 0 },
    };
    uint64_t v;
    int c, rc, gpu = 0, kernel = 0;
    cli_gpu_sel_t sel;
    nq_gpu_t *gpus[NQ_GPU_MAX_DEVICES];
    uint32_t ngpu = 0;
    cli_gpu_sel_init(&sel);
    argc = cli_gpu_argv(argc, argv);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': cfg.connect = optarg; break;
        case 't': if ((rc = cli_parse_u64("worker", "--threads", optarg, 1, NQ_THREADS_MAX, &v))) return rc;
                  cfg.threads = (uint32_t)v; break;
        case 'p': if ((rc = cli_parse_u64("worker", "--prefetch", optarg, 0, 1024, &v))) return rc;
                  cfg.prefetch = (uint32_t)v; break;
        case 'k': cfg.key_file = optarg; break;
        case 'K': cfg.broker_key_file = optarg; break;
        case 'i': cfg.id = optarg; break;
        case 'F': if ((rc = cli_log_option("worker", "log-format", optarg))) return rc; break;
        case 'V': if ((rc = cli_log_option("worker", "log-level", optarg))) return rc; break;
        case 'g': if ((rc = cli_gpu_option("worker", optarg, &sel))) return rc;
                  gpu = 1; break;
        case 'G': if ((rc = cli_gpu_device_option("worker", optarg, &sel))) return rc;
                  gpu = 1; break;
        case 'X': if ((rc = cli_gpu_kernel_option("worker", optarg, &kernel))) return rc;
                  gpu = 1; break;
        case 'O': cfg.gpu_only = 1; gpu = 1; break;
        default: return cli_usage_error("worker", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("worker", "unexpected argument '%s'", argv[optind]);
    if (!!cfg.key_file != !!cfg.broker_key_file)
        return cli_usage_error("worker", "--key and --broker-key go together");
    char err[512] = "";
    /* the device first: a worker that cannot count on it says why before it takes any shard */
    if (gpu && (rc = cli_gpu_open("worker", &sel, kernel, gpus, &ngpu)))
        return rc < 0 ? NQ_EXIT_OK : rc;
    cfg.gpus = gpus;                    /* one process, one identity, every device */
    cfg.ngpu = ngpu;
    signals_install();
    nq_worker_t *w = worker_new(&cfg, err, sizeof err);
    if (!w) {
        cli_gpu_close(gpus, ngpu);
        return cli_error("worker", "%s", err);
    }
    rc = worker_run(w, &nq_stop, err, sizeof err);
    worker_destroy(&w);
    cli_gpu_close(gpus, ngpu);
    if (rc != 0)
        return cli_error("worker", "%s", err);
    return NQ_EXIT_OK;
}
