/*
 * nq: one program, many roles (like git). This file only dispatches: every
 * command lives in a file of its own and owns its options and usage text.
 */
#include "cli.h"
#include "store.h"

#include <stdio.h>
#include <string.h>

static void print_overview(FILE *f)
{
    fputs("nq " NQ_VERSION " - count and solve N-Queens at scale\n\n"
          "usage: nq COMMAND [ARGS...]\n\ncommands:\n", f);
    for (const nq_cmd_t *c = nq_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fputs("\n'nq help COMMAND' or 'nq COMMAND --help' shows a command's options.\n"
          "Exit codes: 0 ok, 1 no (invalid/failed), 2 bad usage, 3 runtime error,\n"
          "130 interrupted (nq run: run the same command again to resume).\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return NQ_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        print_overview(stdout);
        return NQ_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
#if defined(NQ_TEST_FAULTS) && defined(__SANITIZE_ADDRESS__)
        printf("nq %s (test build: fault switches compiled in, sanitizers)\n", NQ_VERSION);
#elif defined(NQ_TEST_FAULTS)
        printf("nq %s (test build: fault switches compiled in)\n", NQ_VERSION);
#else
        printf("nq %s\n", NQ_VERSION);
#endif
        return NQ_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc == 2) {
            print_overview(stdout);
            return NQ_EXIT_OK;
        }
        return cli_help(argv[2]);
    }
    for (const nq_cmd_t *c = nq_commands; c->name; c++) {
        if (strcmp(c->name, cmd) != 0)
            continue;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--") == 0)
                break;
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                return cli_help(cmd);
        }
        return c->fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "nq: unknown command '%s' (see 'nq --help')\n", cmd);
    if (store_kind_parse(cmd) >= 0) {     /* `nq count 8`: a job's kind, not a command */
        fprintf(stderr, "nq: a %s job runs here with 'nq run", cmd);
        for (int i = 1; i < argc; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "', or goes to a broker with 'nq submit %s ...'\n", cmd);
    }
    return NQ_EXIT_USAGE;
}
