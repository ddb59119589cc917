#!/usr/bin/env bash
# Does the lease order by estimated cost (order 2) end a count sooner than the list's index
# order? For each N, rounds of `nq bench count N --threads T` with NQ_ORDER=0 (index order) and
# NQ_ORDER=2 alternating (the knob of cli/bench_count.c): wall seconds (the list included)
# and the list's own seconds, medians, and order 2's ratio. With --run-nq PATH, the same
# rounds of `PATH run count N --fresh` (a build whose broker lists new jobs in NQ_ORDER's
# order), wall seconds. With --sim PATH (build/tests/nq_order_sim), no timing at all: each
# order's makespan for 2 to 1,024 identical workers over the shards' true nodes, against the
# bound max(total / workers, largest shard): what a shared host's load cannot blur.
#   tests/bench/bench_order.sh [--nq PATH] [--ns "18 19"] [--threads T] [--runs R] [--run-nq PATH]
#                              [--sim PATH]
set -euo pipefail
NQ=${NQ:-build/nq}; NS="18 19"; T=$(nproc); R=3; RUN_NQ=; SIM=
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --ns) NS=$2; shift 2 ;; --threads) T=$2; shift 2 ;;
               --runs) R=$2; shift 2 ;; --run-nq) RUN_NQ=$2; shift 2 ;; --sim) SIM=$2; shift 2 ;;
               *) echo "usage: $0 [--nq P] [--ns \"N..\"] [--threads T] [--runs R] [--run-nq P] [--sim P]" >&2
                  exit 2 ;; esac
done
if [ -n "$SIM" ]; then
    for n in $NS; do "$SIM" "$n" 0 "$T" | { [ "$n" = "${NS%% *}" ] && cat || tail -n +3; }; done
    exit 0
fi
[ -x "$NQ" ] || { echo "bench_order: $NQ is not executable" >&2; exit 2; }
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

printf '| N | command | threads | index order: s (list s) | order 2: s (list s) | order 2 / index order |\n'
printf '|---|---|---|---|---|---|\n'
for n in $NS; do
    for i in $(seq "$R"); do
        for o in 0 2; do
            NQ_ORDER=$o "$NQ" bench count "$n" --threads "$T" --json >"$tmp/b"
            field seconds <"$tmp/b" >>"$tmp/b.$n.$o"
            field list_seconds <"$tmp/b" >>"$tmp/l.$n.$o"
            if [ -n "$RUN_NQ" ]; then
                t0=$(date +%s.%N)
                NQ_ORDER=$o "$RUN_NQ" run count "$n" --workers "$T" --db "$tmp/db" --fresh --json >/dev/null
                t1=$(date +%s.%N)
                echo "$t1 - $t0" | bc -l >>"$tmp/r.$n.$o"
            fi
        done
    done
    b1=$(median <"$tmp/b.$n.1"); b2=$(median <"$tmp/b.$n.2")
    printf '| %s | bench count | %s | %.3f (%.3f) | %.3f (%.3f) | %.3f |\n' "$n" "$T" "$b1" "$(median <"$tmp/l.$n.1")" \
        "$b2" "$(median <"$tmp/l.$n.2")" "$(echo "$b2 / $b1" | bc -l)"
    if [ -n "$RUN_NQ" ]; then
        r1=$(median <"$tmp/r.$n.1"); r2=$(median <"$tmp/r.$n.2")
        printf '| %s | run count | %s | %.3f | %.3f | %.3f |\n' "$n" "$T" "$r1" "$r2" "$(echo "$r2 / $r1" | bc -l)"
    fi
done
