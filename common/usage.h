/*
 * Usage texts of every command, in one place so `nq --help`, `nq help CMD`
 * and the README stay in step. One entry per command: name, function,
 * summary, full usage.
 */
#ifndef NQ_USAGE_H
#define NQ_USAGE_H

#define NQ_COMMAND_TABLE \
    { "bench", cmd_bench, "run a kernel in-process and time it", \
      "usage: nq bench count N [--threads K] [--depth D] [--json]\n" \
      "       nq bench solve N [--seed S] [--algo NAME] [--out FILE] [--format text|bin] [--board] [--json]\n" \
      "\n" \
      "count: count all solutions of the N x N board (1 <= N <= 32) with K threads\n" \
      "       (default: all cores) pulling shards; prints total, unique, nodes, seconds, nodes/s.\n" \
      "solve: find one solution by local search (4 <= N <= 1e9 for qs4), verify it,\n" \
      "       print seconds and peak memory; --out writes it (text: one 0-based column per\n" \
      "       line; bin: compact binary). 'nq bench solve --algo list' lists the methods.\n" }, \
    { "estimate", cmd_estimate, "estimate the core-hours a count needs", \
      "usage: nq estimate count N [--sample K] [--seed S] [--depth D] [--json]\n" \
      "\n" \
      "Times a uniform random sample of K shards (default 64) on this machine and\n" \
      "extrapolates the core-hours the whole count of N needs, with a 95% interval.\n" }, \
    { "verify", cmd_verify, "check a solution file", \
      "usage: nq verify FILE [--n N]\n" \
      "\n" \
      "Checks a solution file (text: one 0-based column per row; or nq's binary form).\n" \
      "Exit 0 when it is a valid N-Queens solution, 1 with the first clash otherwise.\n" \
      "--n N also requires the board size to be N.\n" }, \
    NQ_COMMAND_TABLE_DIST

/* Commands of the distributed system (broker/, worker/); filled in by that part. */
#ifndef NQ_COMMAND_TABLE_DIST
#define NQ_COMMAND_TABLE_DIST
#endif

#endif
