/* `nq bench count|solve`: run a kernel in-process and time it. */
#include "cli.h"

#include <string.h>


int cmd_bench(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("bench", "missing what to bench: 'count' or 'solve'");
    if (strcmp(argv[1], "count") == 0)
        return cmd_bench_count(argc - 1, argv + 1);
    if (strcmp(argv[1], "solve") == 0)
        return cmd_bench_solve(argc - 1, argv + 1);
    return cli_usage_error("bench", "unknown kind '%s': expected 'count' or 'solve'", argv[1]);
}
