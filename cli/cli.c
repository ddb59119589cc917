/* Argument helpers shared by every command: strict numbers, uniform refusals. */
#include "cli.h"
#include "errf.h"
#include "http.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A command whose answer could not be written has failed, whatever it returns:
 * `nq status >/dev/full` must not exit 0. So stdout is checked once for every
 * command, at exit: flushed, then its error flag read; a failure turns the exit
 * status into NQ_EXIT_ERROR with the reason. It is registered before main runs,
 * so no command (and no new one) can forget it.
 */
static int stdout_errno;                /* why stdout first failed, for the message at exit */

int cli_flush_stdout(void)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 0;
    if (!stdout_errno)
        stdout_errno = errno;
    return -1;
}

int cli_temp_beside(const char *path, char **tmp)
{
    size_t len = strlen(path);
    *tmp = malloc(len + 8);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(*tmp, path, len);
    memcpy(*tmp + len, ".XXXXXX", 8);
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        int why = errno;
        free(*tmp);
        *tmp = NULL;
        errno = why;
    }
    return fd;
}

static void cli_check_stdout(void)
{
    if (cli_flush_stdout() == 0)
        return;
    fprintf(stderr, "nq: cannot write the output: %s\n", stdout_errno ? strerror(stdout_errno) : "write error");
    _exit(NQ_EXIT_ERROR);               /* exit() may not be called again from an atexit handler */
}

__attribute__((constructor)) static void cli_register_stdout_check(void)
{
    atexit(cli_check_stdout);
}

int cli_log_option(const char *cmd, const char *opt, const char *val)
{
    if (strcmp(opt, "log-format") == 0 && nq_log_set_format(val) != 0)
        return cli_usage_error(cmd, "--log-format is text or json");
    if (strcmp(opt, "log-level") == 0 && nq_log_set_level_name(val) != 0)
        return cli_usage_error(cmd, "--log-level is debug, info, warn, error or off");
    return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nq %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'nq help %s')\n", cmd);
    return NQ_EXIT_USAGE;
}

int cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "nq %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return NQ_EXIT_ERROR;
}

int cli_help(const char *cmd)
{
    for (const nq_cmd_t *c = nq_commands; c->name; c++) {
        if (strcmp(c->name, cmd) == 0) {
            fputs(c->usage, stdout);
            return NQ_EXIT_OK;
        }
    }
    fprintf(stderr, "nq help: no such command '%s' (see 'nq --help')\n", cmd);
    return NQ_EXIT_USAGE;
}

int cli_count_n(const char *cmd, int argc, char **argv, uint64_t *n)
{
    if (optind != argc - 1)
        return cli_usage_error(cmd, optind >= argc ? "missing N (1 to 32)" : "expected one N (1 to 32)");
    return cli_parse_u64(cmd, "N", argv[optind], 1, 32, n);
}

int cli_count_bad_option(const char *cmd, char **argv, uint64_t *n)
{
    const char *arg = argv[optind - 1];
    if (arg[0] == '-' && isdigit((unsigned char)arg[1]))
        return cli_parse_u64(cmd, "N", arg, 1, 32, n);
    return cli_usage_error(cmd, "unknown or incomplete option '%s'", arg);
}

int cli_parse_u64(const char *cmd, const char *what, const char *s,
                  uint64_t min, uint64_t max, uint64_t *out)
{
    if (nq_parse_u64(s, min, max, out) == 0)
        return 0;
    return cli_usage_error(cmd, "%s must be an integer from %llu to %llu (got '%s')", what,
                           (unsigned long long)min, (unsigned long long)max, s ? s : "");
}

int cli_http_options(const char *cmd, const char *addr, const char *token_file, char *token, size_t len)
{
    char err[512];
    token[0] = '\0';
    if (token_file && !addr)
        return cli_usage_error(cmd, "--http-token-file needs --http ADDR");
    if (token_file && http_token_load(token_file, token, len, err, sizeof err) != 0)
        return cli_usage_error(cmd, "--http-token-file: %s", err);
    if (addr && http_addr_check(addr, token[0] != '\0', err, sizeof err) != 0)
        return cli_usage_error(cmd, "--http: %s", err);
    return 0;
}
