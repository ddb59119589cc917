/*
 * `nq bench solve N`: one solve in-process (solve_run), then its O(N)
 * verification, each timed on its own, with the peak RSS of the process.
 * Optionally writes the solution (--out, --format) or draws it (--board).
 */
#include "board.h"
#include "cli.h"
#include "u128.h"
#include "solfile.h"
#include "solve.h"
#include "verify.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CMD "bench solve"

typedef struct {
    uint64_t n, seed;
    const nq_solver_t *algo;
    const char *out;
    int binary, board, json;
} bs_args_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_maxrss * 1024;   /* Linux reports KB */
}

static void list_methods(void)
{
    printf("%-18s %-16s %s\n", "method", "N range", "summary");
    for (int i = 0; nq_solvers[i]; i++) {
        const nq_solver_t *s = nq_solvers[i];
        char range[48];
        snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)s->n_min,
                 (unsigned long long)s->n_max);
        printf("%-18s %-16s %s\n", s->name, range, s->summary);   /* the default's says so */
    }
}

/* Options first, then N (whose range depends on --algo). -1: listed, exit 0. */
static int parse_args(int argc, char **argv, bs_args_t *a)
{
    static const struct option opts[] = {
        { "seed", required_argument, 0, 's' }, { "algo", required_argument, 0, 'a' },
        { "out", required_argument, 0, 'o' },  { "format", required_argument, 0, 'f' },
        { "board", no_argument, 0, 'b' },      { "json", no_argument, 0, 'j' },
        { 0, 0, 0, 0 },
    };
    const char *format = NULL;
    int ch, rc;
    memset(a, 0, sizeof *a);
    a->seed = 1;
    a->algo = nq_solvers[0];
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 's':
            if ((rc = cli_parse_u64(CMD, "--seed", optarg, 0, UINT64_MAX, &a->seed)))
                return rc;
            break;
        case 'a':
            if (strcmp(optarg, "list") == 0) {
                list_methods();
                return -1;
            }
            if (!(a->algo = solver_find(optarg)))
                return cli_usage_error(CMD, "unknown --algo '%s' ('--algo list' shows the methods)", optarg);
            break;
        case 'o': a->out = optarg; break;
        case 'f': format = optarg; break;
        case 'b': a->board = 1; break;
        case 'j': a->json = 1; break;
        default:
            /* getopt takes "-1" for an option; say what N may be instead. */
            if (argv[optind - 1][0] == '-' && argv[optind - 1][1] >= '0' && argv[optind - 1][1] <= '9')
                return cli_usage_error(CMD, "N must be an integer from %llu to %llu (got '%s')",
                                       (unsigned long long)a->algo->n_min,
                                       (unsigned long long)a->algo->n_max, argv[optind - 1]);
            return cli_usage_error(CMD, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (format && strcmp(format, "text") != 0 && strcmp(format, "bin") != 0)
        return cli_usage_error(CMD, "--format must be 'text' or 'bin' (got '%s')", format);
    if (format && !a->out)
        return cli_usage_error(CMD, "--format needs --out FILE");
    a->binary = format && strcmp(format, "bin") == 0;
    if (optind != argc - 1)
        return cli_usage_error(CMD, optind == argc ? "missing N" : "expected one N, got extra '%s'",
                               optind == argc ? "" : argv[optind + 1]);
    if ((rc = cli_parse_u64(CMD, "N", argv[optind], a->algo->n_min, a->algo->n_max, &a->n)))
        return rc;
    if (a->board && a->n > BOARD_MAX_N)
        return cli_usage_error(CMD, "--board: boards are drawn up to N=%d", BOARD_MAX_N);
    return 0;
}

static void report(const bs_args_t *a, const nq_solve_stats_t *st, double solve_s,
                   double verify_s, double write_s, int ok)
{
    uint64_t rss = peak_rss_bytes();
    if (a->json) {
        printf("{\"n\":%llu,\"seed\":%llu,\"algo\":\"%s\",\"seconds\":%.6f,\"verify_seconds\":%.6f,"
               "\"write_seconds\":%.6f,\"steps\":%llu,\"restarts\":%llu,\"peak_rss_bytes\":%llu,"
               "\"ok\":%s}\n",
               (unsigned long long)a->n, (unsigned long long)a->seed, a->algo->name, solve_s,
               verify_s, write_s, (unsigned long long)st->steps, (unsigned long long)st->restarts,
               (unsigned long long)rss, ok ? "true" : "false");
        return;
    }
    char gn[NQ_U128_GROUPED], gs[NQ_U128_GROUPED], gr[NQ_U128_GROUPED];
    printf("algo      %s\nn         %s\nseed      %llu\nsteps     %s\nrestarts  %s\n"
           "solve_s   %.3f\nverify_s  %.3f\n", a->algo->name, u128_group(a->n, gn),
           (unsigned long long)a->seed, u128_group(st->steps, gs), u128_group(st->restarts, gr), solve_s,
           verify_s);
    if (a->out)
        printf("write_s   %.3f\n", write_s);
    printf("peak_rss  %.1f MB (%.2f bytes/queen)\nok        %s\n", rss / 1e6, (double)rss / a->n,
           ok ? "yes" : "NO");
}

int cmd_bench_solve(int argc, char **argv)
{
    bs_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? NQ_EXIT_OK : rc;
    uint32_t *cols = NULL;
    nq_solve_stats_t st;
    char err[256] = "";
    double t0 = now_s();
    rc = solve_run(a.algo, a.n, a.seed, NULL, &cols, &st, err, sizeof err);
    double solve_s = now_s() - t0;
    if (rc == NQ_SOLVE_FAILED) {
        fprintf(stderr, "nq %s: %s found no solution for N=%llu with seed %llu within its limits "
                "(%llu steps, %llu restarts); try another --seed\n", CMD, a.algo->name,
                (unsigned long long)a.n, (unsigned long long)a.seed,
                (unsigned long long)st.steps, (unsigned long long)st.restarts);
        return NQ_EXIT_NO;
    }
    if (rc != NQ_SOLVE_OK)
        return cli_error(CMD, "%s", err[0] ? err : "solver error");
    nq_clash_t clash;
    t0 = now_s();
    int v = verify_perm(cols, a.n, &clash);
    double verify_s = now_s() - t0, write_s = 0;
    if (v < 0) {
        free(cols);
        return cli_error(CMD, "out of memory while verifying");
    }
    if (v > 0)
        fprintf(stderr, "nq %s: %s returned an INVALID board: rows %llu and %llu share a %s\n", CMD,
                a.algo->name, (unsigned long long)clash.row_a, (unsigned long long)clash.row_b,
                clash.what);
    if (a.out && v == 0) {
        t0 = now_s();
        if (solfile_write(a.out, cols, a.n, a.binary, err, sizeof err) != SOLFILE_OK) {
            free(cols);
            return cli_error(CMD, "--out %s", err);
        }
        write_s = now_s() - t0;
    }
    if (a.board && v == 0)
        board_print(stdout, cols, a.n);
    report(&a, &st, solve_s, verify_s, write_s, v == 0);
    free(cols);
    return v == 0 ? NQ_EXIT_OK : NQ_EXIT_NO;
}
