/* `nq verify FILE [--n N]`: is this file a valid N-Queens solution? */
#include "cli.h"
#include "solfile.h"
#include "verify.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = { { "n", required_argument, 0, 'n' }, { 0, 0, 0, 0 } };
    uint64_t want_n = 0;
    int ch, rc;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch != 'n')
            return cli_usage_error("verify", "unknown or incomplete option '%s'", argv[optind - 1]);
        if ((rc = cli_parse_u64("verify", "--n", optarg, 1, SOLFILE_MAX_N, &want_n)))
            return rc;
    }
    if (optind != argc - 1)
        return cli_usage_error("verify", optind == argc ? "missing FILE" : "expected one FILE");
    const char *path = argv[optind];
    uint32_t *cols = NULL;
    uint64_t n = 0;
    char err[256];
    rc = solfile_read(path, &cols, &n, err, sizeof err);
    if (rc == SOLFILE_EIO) {
        fprintf(stderr, "nq verify: %s: %s\n", path, err);
        return NQ_EXIT_ERROR;
    }
    if (rc != SOLFILE_OK) {
        printf("invalid file %s: %s\n", path, err);
        return NQ_EXIT_NO;
    }
    if (want_n && n != want_n) {
        printf("invalid: %s holds N=%llu, expected N=%llu\n", path, (unsigned long long)n,
               (unsigned long long)want_n);
        free(cols);
        return NQ_EXIT_NO;
    }
    nq_clash_t clash;
    int v = verify_perm(cols, n, &clash);
    free(cols);
    if (v < 0) {
        fprintf(stderr, "nq verify: out of memory checking N=%llu\n", (unsigned long long)n);
        return NQ_EXIT_ERROR;
    }
    if (v > 0 && clash.row_a == clash.row_b) {
        printf("invalid solution for N=%llu: row %llu has a column out of range\n",
               (unsigned long long)n, (unsigned long long)clash.row_a);
        return NQ_EXIT_NO;
    }
    if (v > 0) {
        printf("invalid solution for N=%llu: rows %llu and %llu share a%s %s\n", (unsigned long long)n,
               (unsigned long long)clash.row_a, (unsigned long long)clash.row_b,
               clash.what[0] == 'a' ? "n" : "", clash.what);
        return NQ_EXIT_NO;
    }
    printf("valid solution for N=%llu\n", (unsigned long long)n);
    return NQ_EXIT_OK;
}
