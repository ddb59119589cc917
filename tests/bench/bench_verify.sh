#!/usr/bin/env bash
# What adaptive spot-checks cost: a broker and two `nq worker` processes on loopback count N
# with --verify-rate P and without, alternating (A, B, A, B, ...) in one invocation, whole-job
# wall time from submit to done, median of R runs each. Every run uses a fresh DB, so every
# worker identity is new (the "new" boost of the rate rule applies to its first results).
#   tests/bench/bench_verify.sh [--nq PATH] [--n N] [--depth D] [--rate P] [--runs R] [--prefetch K]
# Workers run with --prefetch K (default 8): with shards of a millisecond, a worker that waits
# for each next task measures the round trip, not the work.
# Target: overhead within 2 percentage points of P.
set -euo pipefail
NQ=${NQ:-build/nq}; N=18; D=2; P=0.05; R=3; PREFETCH=8
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --n) N=$2; shift 2 ;; --depth) D=$2; shift 2 ;;
               --rate) P=$2; shift 2 ;; --runs) R=$2; shift 2 ;; --prefetch) PREFETCH=$2; shift 2 ;;
               *) echo "usage: $0 [--nq PATH] [--n N] [--depth D] [--rate P] [--runs R] [--prefetch K]" >&2
                  exit 2 ;; esac
done
NQ=$(cd "$(dirname "$NQ")" && pwd)/$(basename "$NQ")
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median, free_port

# one_run EXTRA...: seconds from submit to done, and the job's checks on fd 3
one_run() {
    rm -f "$tmp"/b.db*
    local w=tcp://127.0.0.1:$(free_port) c=tcp://127.0.0.1:$(free_port)
    "$NQ" broker --db "$tmp/b.db" --bind "$w" --control "$c" >"$tmp/broker.log" 2>&1 & pids+=($!)
    until "$NQ" list --broker "$c" --timeout 1 >/dev/null 2>&1; do sleep 0.05; done
    "$NQ" worker --connect "$w" --threads 1 --prefetch "$PREFETCH" >/dev/null 2>&1 & pids+=($!)
    "$NQ" worker --connect "$w" --threads 1 --prefetch "$PREFETCH" >/dev/null 2>&1 & pids+=($!)
    sleep 0.3                           # both connected before the clock starts
    local t0 t1 id
    t0=$(date +%s.%N)
    id=$("$NQ" submit count "$N" --depth "$D" --broker "$c" "$@")
    # the broker's own "job.finish" line ends the clock: polling with `nq status` (a process a
    # time, ~25 ms of CPU) would take a share of the two cores from the run it measures
    until grep -q "event=job.finish job=$id " "$tmp/broker.log"; do sleep 0.02; done
    t1=$(date +%s.%N)
    "$NQ" status "$id" --broker "$c" --json | grep -o '"checks":[0-9]*' | cut -d: -f2 >&3 || echo 0 >&3
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null; pids=()
    echo "$t1 - $t0" | bc -l
}

shards=$("$NQ" estimate count "$N" --depth "$D" --sample 2 |
         awk '{for (i = 1; i < NF; i++) if ($i == "shards") print $(i+1); exit}')
for _ in $(seq "$R"); do
    one_run 3>/dev/null >>"$tmp/off"
    one_run --verify-rate "$P" 3>>"$tmp/checks" >>"$tmp/on"
done
off=$(median <"$tmp/off"); on=$(median <"$tmp/on"); checks=$(median <"$tmp/checks")
over=$(echo "($on / $off - 1) * 100" | bc -l)
printf '| N=%s depth %s (%s shards), broker + 2 workers (prefetch %s), median of %s, alternating ' \
    "$N" "$D" "$shards" "$PREFETCH" "$R"
printf '| seconds | checks | overhead |\n'
printf '|---|---|---|---|\n'
printf '| without --verify-rate (baseline) | %.2f | 0 | |\n' "$off"
fmt='| --verify-rate %s | %.2f | %s (%.1f %% of shards) | %+.1f %% (target: within 2 points of %.0f %%) |\n'
printf "$fmt" "$P" "$on" "$checks" "$(echo "100 * $checks / $shards" | bc -l)" "$over" "$(echo "100 * $P" | bc -l)"
