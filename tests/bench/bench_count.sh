#!/usr/bin/env bash
# Whole-process timings of `nq bench count N` with 1 and 2 threads: median of R runs,
# the 2-thread speed-up (1T median / 2T median), and the baseline measured in the same
# invocation: the portable scalar kernel on 1 thread (NQ_COUNT_KERNEL=scalar) and the
# ratio scalar / default. Run it on a quiet machine.
#   tests/bench/bench_count.sh [--nq PATH] [--runs R] [--from N] [--to N] [--with-18] [--no-baseline]
set -eu
NQ=${NQ:-}
runs=3; from=14; to=17; baseline=1
while [ $# -gt 0 ]; do
    case $1 in
    --nq) NQ=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --to) to=$2; shift 2 ;;
    --with-18) to=18; shift ;;
    --no-baseline) baseline=0; shift ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "bench_count.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
if [ -z "$NQ" ]; then
    for c in build/nq build-release/nq; do [ -x "$c" ] && NQ=$c && break; done
fi
[ -n "$NQ" ] && [ -x "$NQ" ] || { echo "bench_count.sh: give --nq PATH (or NQ=...)" >&2; exit 2; }
case $runs in ''|*[!0-9]*|0) echo "bench_count.sh: --runs must be a positive integer" >&2; exit 2 ;; esac

# median wall seconds of R whole-process runs of: nq bench count N --threads T (kernel K)
median_run() {
    local n=$1 t=$2 k=$3 _ s e
    for _ in $(seq "$runs"); do
        s=$(date +%s.%N)
        NQ_COUNT_KERNEL=$k "$NQ" bench count "$n" --threads "$t" --json >/dev/null ||
            { echo "nq failed: N=$n T=$t kernel=$k" >&2; exit 3; }
        e=$(date +%s.%N)
        awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", e - s }'
    done | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

kernel=$("$NQ" bench count 4 --json | sed -n 's/.*"kernel":"\([a-z0-9]*\)".*/\1/p')
echo "nq bench count: whole-process wall seconds, median of $runs runs ($NQ, kernel ${kernel:-?}, $(nproc) cores)"
printf "%4s %12s %12s %10s %16s %12s\n" N "1 thread" "2 threads" "speed-up" "scalar 1 thread" "vs scalar"
for n in $(seq "$from" "$to"); do
    t1=$(median_run "$n" 1 default)
    t2=$(median_run "$n" 2 default)
    if [ "$baseline" = 1 ]; then
        ts=$(median_run "$n" 1 scalar)
        printf "%4d %12.3f %12.3f %9.2fx %16.3f %11.2fx\n" "$n" "$t1" "$t2" \
            "$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')" "$ts" "$(awk -v a="$ts" -v b="$t1" 'BEGIN { print a / b }')"
    else
        printf "%4d %12.3f %12.3f %9.2fx %16s %12s\n" "$n" "$t1" "$t2" "$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')" - -
    fi
done
