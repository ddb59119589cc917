#!/usr/bin/env bash
# The scheduler with workers of mixed speeds: one broker and paced workers (NQ_FAULT_PACE: a
# task takes at least its nodes / R seconds, so the figures hold on a busy machine) counting N:
# F alone, F with S (250x slower), F with M (half F's speed), each against the same broker with
# NQ_FAULT_SCHED_PLAIN=1 (the scheduler as it was: shard-count credit, every worker from the front
# of the order, no tail copies), round-robin, medians of R rounds. Needs a build with
# -DNQ_TEST_FAULTS=ON (tests/run.sh makes build-test/).
#   tests/bench/bench_sched.sh [--nq PATH] [--n N] [--runs R] [--pace NODES_PER_S]
# Targets: F with S <= 1.2 x F alone + 0.5 s; F with M <= 0.8 x F alone.
set -euo pipefail
NQ=${NQ:-build-test/nq}; N=16; R=3; P=18000000
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --n) N=$2; shift 2 ;; --runs) R=$2; shift 2 ;; --pace) P=$2; shift 2 ;;
               *) echo "usage: $0 [--nq PATH] [--n N] [--runs R] [--pace NODES_PER_S]" >&2; exit 2 ;; esac
done
"$NQ" --version | grep -q "fault switches" || { echo "$NQ was built without -DNQ_TEST_FAULTS=ON" >&2; exit 2; }
tmp=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median, free_port

# one PLAIN WORKERS...: seconds from submit to done; each worker NAME:PACE:THREADS
one() {
    local plain=$1; shift
    rm -f "$tmp"/s.db*
    local wp cp t0 id w
    local tries=0
    while :; do                         # a random port may be taken: another pair then
        wp=$(free_port); cp=$((wp + 1)); pids=()
        NQ_FAULT_SCHED_PLAIN=$plain "$NQ" broker --db "$tmp/s.db" --bind "tcp://127.0.0.1:$wp" \
            --control "tcp://127.0.0.1:$cp" --heartbeat-ms 200 --liveness 3 --log-level warn 2>>"$tmp/broker.log" &
        pids+=($!)
        export NQ_BROKER=tcp://127.0.0.1:$cp
        until "$NQ" list --timeout 1 >/dev/null 2>&1 || ! kill -0 "${pids[0]}" 2>/dev/null; do sleep 0.1; done
        kill -0 "${pids[0]}" 2>/dev/null && break
        tries=$((tries + 1))
        [ "$tries" -lt 5 ] || { echo "the broker did not start: $(tail -1 "$tmp/broker.log")" >&2; exit 1; }
    done
    for w in "$@"; do
        IFS=: read -r name pace threads <<<"$w"
        NQ_FAULT_PACE=$pace "$NQ" worker --connect "tcp://127.0.0.1:$wp" --threads "$threads" --id "$name" \
            --log-level warn 2>>"$tmp/workers.log" &
        pids+=($!)
    done
    until [ "$("$NQ" workers --json | grep -o '"alive":true' | wc -l)" = $# ]; do sleep 0.1; done
    t0=$(date +%s.%N)
    id=$("$NQ" submit count "$N")
    until "$NQ" status "$id" --json | grep -q '"state":"done"'; do sleep 0.05; done
    echo "$(date +%s.%N) - $t0" | bc -l
    "$NQ" status "$id" --json | grep -q "\"total\":$(awk -v n="$N" '$1 == n { print $2 }' "$(dirname "$0")/../data/oeis-counts.tsv")," \
        || { echo "count $N not exact" >&2; exit 1; }
    kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=()
}

F="F:$P:2"; S="S:$((P / 250)):1"; M="M:$((P / 2)):2"
for _ in $(seq "$R"); do
    for plain in 0 1; do
        one $plain "$F" >>"$tmp/f.$plain"
        one $plain "$F" "$S" >>"$tmp/fs.$plain"
        one $plain "$F" "$M" >>"$tmp/fm.$plain"
    done
done
printf '| N=%s, pace %s nodes/s a thread, median of %s | scheduler | plain (as it was) |\n|---|---|---|\n' "$N" "$P" "$R"
for c in f fs fm; do
    new=$(median <"$tmp/$c.0"); old=$(median <"$tmp/$c.1"); f0=$(median <"$tmp/f.0"); f1=$(median <"$tmp/f.1")
    case $c in f) label="F alone (2 threads)" ;; fs) label="F with S (250x slower, 1 thread)" ;; fm) label="F with M (half F's speed, 2 threads)" ;; esac
    printf '| %s | %.2f s (%.2f x F) | %.2f s (%.2f x F) |\n' "$label" "$new" "$(echo "$new / $f0" | bc -l)" "$old" "$(echo "$old / $f1" | bc -l)"
done
