#!/usr/bin/env bash
# Whole-process timings of `nq bench count N` with 1 and 2 threads: median of R runs,
# and the 2-thread speed-up (1T median / 2T median). Run it on a quiet machine.
#   tests/bench/bench_count.sh [--nq PATH] [--runs R] [--from N] [--to N] [--with-18]
set -eu
NQ=${NQ:-}
runs=3; from=14; to=17
while [ $# -gt 0 ]; do
    case $1 in
    --nq) NQ=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --to) to=$2; shift 2 ;;
    --with-18) to=18; shift ;;
    -h|--help) sed -n 2,4p "$0"; exit 0 ;;
    *) echo "bench_count.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
if [ -z "$NQ" ]; then
    for c in build/nq build-release/nq; do [ -x "$c" ] && NQ=$c && break; done
fi
[ -n "$NQ" ] && [ -x "$NQ" ] || { echo "bench_count.sh: give --nq PATH (or NQ=...)" >&2; exit 2; }
case $runs in ''|*[!0-9]*|0) echo "bench_count.sh: --runs must be a positive integer" >&2; exit 2 ;; esac

# median wall seconds of R whole-process runs of: nq bench count N --threads T
median_run() {
    local n=$1 t=$2 i s e out
    for i in $(seq "$runs"); do
        s=$(date +%s.%N)
        out=$("$NQ" bench count "$n" --threads "$t" --json) || { echo "nq failed: N=$n T=$t" >&2; exit 3; }
        e=$(date +%s.%N)
        awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", e - s }'
    done | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "nq bench count: whole-process wall seconds, median of $runs runs ($NQ, $(nproc) cores)"
printf "%4s %12s %12s %10s\n" N "1 thread" "2 threads" "speed-up"
for n in $(seq "$from" "$to"); do
    t1=$(median_run "$n" 1)
    t2=$(median_run "$n" 2)
    printf "%4d %12.3f %12.3f %9.2fx\n" "$n" "$t1" "$t2" "$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')"
done
