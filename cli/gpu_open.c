/* Which devices a command counts on (--gpu [all], --gpu-device I[,J...]|list, --gpu-kernel) and
   the engines opened for them, one a device. */
#include "bench_gpu.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_gpu_sel_init(cli_gpu_sel_t *s) { memset(s, 0, sizeof *s); }

int cli_gpu_option(const char *cmd, const char *arg, cli_gpu_sel_t *sel)
{
    if (!arg)
        return 0;
    if (strcmp(arg, "all") == 0) {
        sel->all = 1;
        return 0;
    }
    return cli_usage_error(cmd, "--gpu takes nothing or 'all' (got '%.32s'); --gpu-device I[,J...] names "
                           "devices", arg);
}

int cli_gpu_argv(int argc, char **argv)
{
    static char all[] = "--gpu=all";
    int o = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {   /* what follows is not an option */
            while (i < argc)
                argv[o++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--gpu") == 0 && i + 1 < argc && strcmp(argv[i + 1], "all") == 0) {
            argv[o++] = all;
            i++;
            continue;
        }
        argv[o++] = argv[i];
    }
    argv[o] = NULL;
    return o;
}

int cli_gpu_device_option(const char *cmd, const char *arg, cli_gpu_sel_t *sel)
{
    if (strcmp(arg, "list") == 0) {
        sel->list = 1;
        return 0;
    }
    char buf[256], *save = NULL;
    if (strlen(arg) >= sizeof buf)
        return cli_usage_error(cmd, "--gpu-device: too long a list");
    snprintf(buf, sizeof buf, "%s", arg);
    sel->n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        int rc = cli_parse_u64(cmd, "--gpu-device", tok, 0, 63, &v);
        if (rc)
            return rc;
        if (sel->n == NQ_GPU_MAX_DEVICES)
            return cli_usage_error(cmd, "--gpu-device: at most %d devices a worker", NQ_GPU_MAX_DEVICES);
        for (int i = 0; i < sel->n; i++)
            if (sel->idx[i] == (int)v)
                return cli_usage_error(cmd, "--gpu-device: device %d twice", (int)v);
        sel->idx[sel->n++] = (int)v;
    }
    if (sel->n == 0)
        return cli_usage_error(cmd, "--gpu-device takes I[,J...] or list (got '%.32s')", arg);
    return 0;
}

int cli_gpu_kernel_option(const char *cmd, const char *arg, int *kernel)
{
    nq_gpu_cfg_t cfg;
    char err[128];
    gpu_cfg_defaults(&cfg);
    if (gpu_cfg_kernel(&cfg, arg, err, sizeof err) != 0)
        return cli_usage_error(cmd, "--gpu-kernel is fast or parity (got '%.32s')", arg);
    *kernel = cfg.kernel;
    return 0;
}

/* The device indices sel means: those named; every GPU (all); or -1, the engine's first GPU. */
static int gpu_indices(const char *cmd, const cli_gpu_sel_t *sel, int *idx, int *n)
{
    char err[1024];
    if (sel->n) {
        memcpy(idx, sel->idx, (size_t)sel->n * sizeof *idx);
        *n = sel->n;
        return 0;
    }
    *n = 1;
    idx[0] = -1;
    if (!sel->all)
        return 0;
    const char *cuda = getenv("NQ_GPU_CUDA");
    if (cuda && *cuda)                  /* CUDA's indices are not OpenCL's: no guessing which is which */
        return cli_usage_error(cmd, "--gpu all finds devices through OpenCL; with NQ_GPU_CUDA name them: "
                               "--gpu-device 0,1,...");
    if (gpu_find_devices(1, idx, NQ_GPU_MAX_DEVICES, n, err, sizeof err) != 0)
        return cli_error(cmd, "%s", err);
    return 0;
}

int cli_gpu_open(const char *cmd, const cli_gpu_sel_t *sel, int kernel, nq_gpu_t **gs, uint32_t *n)
{
    nq_gpu_cfg_t cfg;
    char err[1024], buf[8192];
    int idx[NQ_GPU_MAX_DEVICES], nidx, rc;
    *n = 0;
    if (sel->list) {
        if (gpu_list_devices(buf, sizeof buf, err, sizeof err) != 0)
            return cli_error(cmd, "%s", err);
        fputs(buf, stdout);
        return -1;
    }
    gpu_cfg_defaults(&cfg);
    if (gpu_cfg_from_env(&cfg, err, sizeof err) != 0)
        return cli_usage_error(cmd, "%s", err);
    if (kernel)                         /* --gpu-kernel over NQ_GPU_KERNEL */
        cfg.kernel = kernel;
    if ((rc = gpu_indices(cmd, sel, idx, &nidx)))
        return rc;
    for (int i = 0; i < nidx; i++) {
        cfg.device = idx[i];
        if (!(gs[i] = gpu_open(&cfg, err, sizeof err))) {
            cli_gpu_close(gs, *n);
            return cli_error(cmd, "%s", err);
        }
        *n = (uint32_t)i + 1;
        if (gpu_is_cpu(gs[i]))          /* only an index takes one: say what it is */
            fprintf(stderr, "nq %s: device %d (%s) is a CPU: the GPU kernel runs on it through OpenCL, as "
                    "--gpu-device asked\n", cmd, idx[i], gpu_name(gs[i]));
    }
    return 0;
}

void cli_gpu_close(nq_gpu_t **gs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        gpu_close(&gs[i]);
}

int cli_gpu_hungriest(nq_gpu_t *const *gs, uint32_t n)
{
    nq_gpu_load_t l[NQ_GPU_MAX_DEVICES];
    for (uint32_t i = 0; i < n && i < NQ_GPU_MAX_DEVICES; i++)
        gpu_load(gs[i], &l[i]);
    return gpu_load_hungriest(l, n < NQ_GPU_MAX_DEVICES ? n : NQ_GPU_MAX_DEVICES);
}
