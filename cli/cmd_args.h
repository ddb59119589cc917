/* Options shared by the client commands and `nq run`, parsed once, strictly. */
#ifndef NQ_CMD_ARGS_H
#define NQ_CMD_ARGS_H

#include "bench_gpu.h"
#include "client.h"
#include "proto.h"


typedef struct {
    nq_client_opts_t client;
    nq_ctl_req_t req;            /* op, job, and the job parameters (submit/run) */
    const char *out, *format;    /* result --out/--format, export --format */
    const char *manifest;        /* export --manifest FILE */
    int watch, fresh, board, unique;
    uint32_t workers;            /* run: local worker threads, 0 = all cores */
    int gpu;                     /* run: count on GPUs (--gpu [all], --gpu-device I[,J...]|list) */
    cli_gpu_sel_t gpu_sel;       /* which */
    int gpu_kernel;              /* run: --gpu-kernel fast|parity (NQ_GPU_KERNEL_*; 0 the default) */
    int gpu_only;                /* run: --gpu-only, the threads only feed the GPU */
    const char *http, *http_token_file;   /* run: the web view's address and token file */
    int npos;
    char *pos[4];                /* positional arguments */
} nq_cmd_args_t;

/*
 * Parses argv for command `cmd`; `allowed` lists the long options it takes
 * (e.g. "broker,db,json"). Job parameters (n, depth, algo, ...) go into
 * req.params, checked for range here so bad values never reach the broker.
 * Returns 0 or an NQ_EXIT_USAGE already reported.
 */
int cmd_args_parse(const char *cmd, const char *allowed, int argc, char **argv, nq_cmd_args_t *a);
/* "count|solve|enumerate N" from the positionals into req params; 0 or NQ_EXIT_USAGE reported. */
int cmd_args_job(const char *cmd, nq_cmd_args_t *a);
/* Positional JOB id into req.job; 0 or NQ_EXIT_USAGE reported. */
int cmd_args_jobid(const char *cmd, nq_cmd_args_t *a, int required);

#endif
