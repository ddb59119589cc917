/*
 * The `nq` program's command table and the helpers every command uses to
 * parse its arguments strictly and to refuse bad input the same way.
 *
 * Exit codes (documented in README.md):
 *   0  success
 *   1  the answer is "no" / the job failed (invalid solution, failed or conflicting job)
 *   2  bad usage: a one-line reason on stderr
 *   3  runtime error: I/O, database, network
 */
#ifndef NQ_CLI_H
#define NQ_CLI_H

#include "errf.h"
#include "nq.h"

#include <stddef.h>
#include <stdint.h>


typedef int (*nq_cmd_fn)(int argc, char **argv);   /* argv[0] is the command name */

typedef struct {
    const char *name;
    nq_cmd_fn fn;
    const char *summary;   /* one line for `nq --help` */
    const char *usage;     /* full text for `nq help CMD` and `nq CMD --help` */
} nq_cmd_t;

/* Prints "nq CMD: <reason>" and returns NQ_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "nq CMD: <reason>" and returns NQ_EXIT_ERROR. */
int cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --log-format / --log-level (opt without dashes): sets it, or reports a bad value (NQ_EXIT_USAGE). */
int cli_log_option(const char *cmd, const char *opt, const char *val);
/*
 * Flushes stdout: 0, or -1 when it cannot be written (the reason is kept). Every
 * command's stdout is checked this way at exit: when it failed, the program prints
 * "nq: cannot write the output: <reason>" and exits NQ_EXIT_ERROR, whatever the
 * command returned. A command that prints in a loop calls it to stop early.
 */
int cli_flush_stdout(void);
/* A new file beside path (same folder, so a rename or link into place is atomic), named
   path.XXXXXX by mkstemp: its descriptor, and *tmp its name (malloc'd; the caller frees it).
   -1 with errno, *tmp NULL. */
int cli_temp_beside(const char *path, char **tmp);
/* Prints the usage text of a command to stdout; returns 0. */
int cli_help(const char *cmd);

/*
 * Strict unsigned parse: decimal digits only (or "AeB" meaning A*10^B, e.g. 1e9),
 * no sign, no spaces, no trailing junk, within [min, max]. Returns 0 on success;
 * on failure prints "nq CMD: WHAT must be an integer from MIN to MAX (got 'S')"
 * and returns NQ_EXIT_USAGE, so callers can `return` it directly.
 */
int cli_parse_u64(const char *cmd, const char *what, const char *s,
                  uint64_t min, uint64_t max, uint64_t *out);
/* For `count N` commands, after getopt_long: the single N (1..32) at argv[optind]; and the
   unknown-option case, where "-1" is reported as the bad N it is. Both return 0 or an exit code. */
int cli_count_n(const char *cmd, int argc, char **argv, uint64_t *n);
int cli_count_bad_option(const char *cmd, char **argv, uint64_t *n);

/* --http ADDR and --http-token-file F (both may be NULL): reads the token into token (""
   without a file) and checks the address against it, before any file is touched. A
   non-loopback ADDR without a token is refused. 0, or NQ_EXIT_USAGE (reported). */
int cli_http_options(const char *cmd, const char *addr, const char *token_file, char *token, size_t len);

/* Every command of the program, for dispatch and help (defined in commands.c). */
extern const nq_cmd_t nq_commands[];

/* The commands, one file each (here, in cli/). */
int cmd_bench(int argc, char **argv);      /* cmd_bench.c: bench count | bench solve */
int cmd_bench_count(int argc, char **argv);   /* bench_count.c */
int cmd_bench_solve(int argc, char **argv);   /* bench_solve.c */
int cmd_estimate(int argc, char **argv);   /* cmd_estimate.c */
int cmd_verify(int argc, char **argv);     /* cmd_verify.c */
int cmd_keygen(int argc, char **argv);     /* cmd_keygen.c */
int cmd_check(int argc, char **argv);      /* cmd_store.c */
int cmd_backup(int argc, char **argv);     /* cmd_store.c */
int cmd_run(int argc, char **argv);        /* cmd_run.c */
int cmd_broker(int argc, char **argv);     /* cmd_broker.c */
int cmd_worker(int argc, char **argv);     /* cmd_worker.c */
int cmd_submit(int argc, char **argv);     /* cmd_client.c, with status ... retry */
int cmd_status(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_workers(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_result(int argc, char **argv);     /* cmd_result.c, with export */
int cmd_export(int argc, char **argv);
int cmd_audit(int argc, char **argv);      /* cmd_audit.c */

#endif
