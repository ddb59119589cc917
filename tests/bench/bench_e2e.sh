#!/usr/bin/env bash
# End to end: the whole distributed path (nq run: broker + workers + store)
# against the bare kernel (nq bench count), whole-process wall time, median of
# R runs, in one invocation so the ratios compare like with like.
#   tests/bench/bench_e2e.sh [--nq PATH] [--n N] [--runs R]
# Targets: run --workers 2 vs bench --threads 1: speed-up >= 1.9x;
#          run --workers 1 vs bench --threads 1: overhead <= 3 %.
set -euo pipefail
NQ=${NQ:-build/nq}; N=18; R=3
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --n) N=$2; shift 2 ;; --runs) R=$2; shift 2 ;;
               *) echo "usage: $0 [--nq PATH] [--n N] [--runs R]" >&2; exit 2 ;; esac
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

wall() {   # wall seconds of one command
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median

# Round-robin: each round runs every configuration once, so a drift of the
# shared machine's speed hits them all alike (phases one after the other
# showed 10 % drift between them).
for _ in $(seq "$R"); do
    wall "$NQ" bench count "$N" --threads 1 >>"$tmp/base"
    wall "$NQ" bench count "$N" --threads 2 >>"$tmp/bench2"
    rm -f "$tmp"/run.db*; wall "$NQ" run count "$N" --workers 1 --db "$tmp/run.db" >>"$tmp/run1"
    rm -f "$tmp"/run.db*; wall "$NQ" run count "$N" --workers 2 --db "$tmp/run.db" >>"$tmp/run2"
done
base=$(median <"$tmp/base"); bench2=$(median <"$tmp/bench2")
run1=$(median <"$tmp/run1"); run2=$(median <"$tmp/run2")
printf '| command (N=%s, median of %s, interleaved) | seconds | vs bench --threads 1 |\n|---|---|---|\n' "$N" "$R"
printf '| nq bench count %s --threads 1 (baseline) | %.2f | 1.00 |\n' "$N" "$base"
printf '| nq bench count %s --threads 2 (the kernel alone) | %.2f | speed-up %.2fx |\n' "$N" "$bench2" "$(echo "$base / $bench2" | bc -l)"
printf '| nq run count %s --workers 1 | %.2f | overhead %+.1f %% |\n' "$N" "$run1" "$(echo "($run1 / $base - 1) * 100" | bc -l)"
printf '| nq run count %s --workers 2 | %.2f | speed-up %.2fx |\n' "$N" "$run2" "$(echo "$base / $run2" | bc -l)"
