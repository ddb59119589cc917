#!/usr/bin/env bash
# Does splitting a count into more, smaller shards add work? For each N, one
# thread, depths 1..4 in rounds (depth 1 is the baseline of the same round):
# summed node counts (exact) and whole-process seconds (medians), each as a
# ratio against depth 1.
#   tests/bench/bench_depth.sh [--nq PATH] [--from N] [--to N] [--runs R]
set -euo pipefail
NQ=${NQ:-build/nq}; FROM=16; TO=18; R=3
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --from) FROM=$2; shift 2 ;; --to) TO=$2; shift 2 ;; --runs) R=$2; shift 2 ;;
               *) echo "usage: $0 [--nq P] [--from N] [--to N] [--runs R]" >&2; exit 2 ;; esac
done
[ -x "$NQ" ] || { echo "bench_depth: $NQ is not executable" >&2; exit 2; }
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

printf '| N | depth | shards | nodes | vs depth 1 | seconds (median of %s) | vs depth 1 |\n' "$R"
printf '|---|---|---|---|---|---|---|\n'
for n in $(seq "$FROM" "$TO"); do
    for i in $(seq "$R"); do            # rounds: every depth once per round
        for d in 1 2 3 4; do
            t0=$(date +%s.%N)
            "$NQ" bench count "$n" --threads 1 --depth "$d" --json >"$tmp/$n.$d.$i"
            t1=$(date +%s.%N)
            echo "$t1 - $t0" | bc -l >>"$tmp/$n.$d.secs"
        done
    done
    base_nodes=$(field nodes <"$tmp/$n.1.1"); base_s=$(median <"$tmp/$n.1.secs")
    for d in 1 2 3 4; do
        nodes=$(field nodes <"$tmp/$n.$d.1"); s=$(median <"$tmp/$n.$d.secs")
        printf '| %s | %s | %s | %s | %.4f | %.3f | %.3f |\n' "$n" "$d" "$(field shards <"$tmp/$n.$d.1")" "$nodes" \
            "$(echo "$nodes / $base_nodes" | bc -l)" "$s" "$(echo "$s / $base_s" | bc -l)"
    done
done
