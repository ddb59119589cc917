#!/usr/bin/env bash
# Broker throughput: durable results per second with many simulated workers on
# loopback returning tiny shards at once (tests/bench/loadgen.c), against a
# baseline measured in the same invocation: plain SQLite (WAL, synchronous=FULL)
# inserting rows in 100-row transactions. And the broker's peak memory with
# 10^6 pending shards.
#   tests/bench/bench_broker.sh [--nq PATH] [--loadgen PATH] [--shards K] [--runs R]
#                               [--base PATH --base-loadgen PATH]
# --base: an older build's nq (with its own loadgen, which speaks its protocol) runs too, run by
# run alternating with --nq, and the table gives the new build's results/s against it: a change
# to the broker's loop shows whether it made the broker slower, on the same machine at the same time.
# WEB=1: the broker also serves --http, and a loop fetches /, /jobs/1 and /metrics once a
# second during each run (a browser refreshing the web view), to see what the page costs.
# WEB=ab: three arms, alternating run by run in this invocation: without --http; with it and a
# client fetching a missing page (/x, a 404) three times a second, which is what the client
# costs the two shared cores; and with the real pages. The last two differ only in what the
# broker renders, so their ratio is the page's own cost. The HTTP threads' CPU seconds are read
# from /proc at the end of each run with pages.
# STATUS=ab: two arms, alternating run by run: quiet, and with a client running `nq status 1` in a
# loop (what a user watching a campaign does), to see what a status costs the broker's loop.
set -euo pipefail
NQ=${NQ:-build/nq}; LOADGEN=${LOADGEN:-build/tests/nq_loadgen}; K=200000; R=3; WORKERS=16; CREDIT=256
BASE=""; BASE_LOADGEN=""
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --loadgen) LOADGEN=$2; shift 2 ;; --shards) K=$2; shift 2 ;;
               --runs) R=$2; shift 2 ;; --base) BASE=$2; shift 2 ;; --base-loadgen) BASE_LOADGEN=$2; shift 2 ;;
               *) echo "usage: $0 [--nq P] [--loadgen P] [--shards K] [--runs R] [--base P --base-loadgen P]" >&2
                  exit 2 ;; esac
done
if [ -n "$BASE" ] && [ -z "$BASE_LOADGEN" ]; then echo "$0: --base needs --base-loadgen" >&2; exit 2; fi
tmp=$(mktemp -d); bp=""; lp=""
trap '[ -n "$bp" ] && kill -9 "$bp" 2>/dev/null; [ -n "$lp" ] && kill "$lp" 2>/dev/null; rm -rf "$tmp"' EXIT
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median, free_port, wait_broker

sqlite_baseline() {   # rows/s, 100-row transactions, WAL + FULL, like a careful hand-written store
    rm -f "$tmp"/base.db*
    local t0 t1
    { echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
      echo "CREATE TABLE r(job INT, idx INT, total INT, PRIMARY KEY(job, idx)) WITHOUT ROWID;"
      for ((i = 0; i < 20000; i += 100)); do
          echo "BEGIN;"; for ((j = i; j < i + 100; j++)); do echo "INSERT INTO r VALUES (1, $j, $j);"; done; echo "COMMIT;"
      done; } >"$tmp/base.sql"
    t0=$(date +%s.%N); sqlite3 "$tmp/base.db" <"$tmp/base.sql" >/dev/null; t1=$(date +%s.%N)
    echo "20000 / ($t1 - $t0)" | bc -l
}

broker_run() {        # results/s for K shards; also prints the broker's peak RSS (kB) on fd 3
    rm -f "$tmp"/b.db*
    local wp cp hp web=()
    wp=$(free_port); cp=$(free_port); hp=$(free_port)
    local pages="/ /jobs/1 /metrics"
    [ "${1:-}" = web404 ] && pages="/x /x /x"
    [ "${WEB:-0}" = 1 ] || [ "${1:-}" = web ] || [ "${1:-}" = web404 ] && web=(--http "127.0.0.1:$hp")
    "$NQ" broker --db "$tmp/b.db" --bind "tcp://127.0.0.1:$wp" --control "tcp://127.0.0.1:$cp" --log-level warn \
        "${web[@]}" 2>"$tmp/broker.log" &
    bp=$!
    wait_broker "$NQ" "tcp://127.0.0.1:$cp"
    NQ_BROKER=tcp://127.0.0.1:$cp "$NQ" submit solve 1000 --restarts "$K" --all --timeout 300 >/dev/null
    if [ ${#web[@]} -gt 0 ]; then
        (while :; do for p in $pages; do curl -s -o /dev/null "http://127.0.0.1:$hp$p"; done
                     sleep 1; done) &
        lp=$!
    elif [ "${1:-}" = status ]; then
        (while :; do "$NQ" status 1 --broker "tcp://127.0.0.1:$cp" >/dev/null 2>&1; done) &
        lp=$!
    fi
    "$LOADGEN" "tcp://127.0.0.1:$wp" "$WORKERS" "$CREDIT" "$K" | awk '{print $6}'
    [ -n "$lp" ] && { kill "$lp"; wait "$lp" 2>/dev/null || true; lp=""; }
    grep VmHWM "/proc/$bp/status" | awk '{print $2}' >&3
    if [ ${#web[@]} -gt 0 ] && [ -n "${HTTP_CPU:-}" ]; then   # the HTTP threads' CPU seconds
        cat /proc/$bp/task/*/stat 2>/dev/null | awk '/MHD/ { s += ($14 + $15) / 100 } END { print s + 0 }' >>"$HTTP_CPU"
    fi
    kill "$bp"; wait "$bp" 2>/dev/null || true; bp=""
}

if [ "${STATUS:-0}" = ab ]; then    # a status loop's cost: two arms, alternating
    quiet=(); polled=()
    for i in $(seq "$R"); do
        quiet+=("$(broker_run 3>/dev/null)")
        polled+=("$(broker_run status 3>/dev/null)")
    done
    q=$(printf '%s\n' "${quiet[@]}" | median); s=$(printf '%s\n' "${polled[@]}" | median)
    printf '| broker, %s shards, median of %s alternating runs | durable results/s | vs quiet |\n' "$K" "$R"
    printf '|---|---|---|\n| quiet | %.0f | 1.00 |\n' "$q"
    printf '| a client running nq status 1 in a loop | %.0f | %.3f |\n' "$s" "$(echo "$s / $q" | bc -l)"
    exit 0
fi
if [ "${WEB:-0}" = ab ]; then       # the web view's cost: three arms, alternating
    plain=(); c404=(); paged=()
    export HTTP_CPU=$tmp/http_cpu
    for i in $(seq "$R"); do
        plain+=("$(broker_run 3>/dev/null)")
        c404+=("$(HTTP_CPU= broker_run web404 3>/dev/null)")
        paged+=("$(broker_run web 3>/dev/null)")
    done
    p=$(printf '%s\n' "${plain[@]}" | median); n=$(printf '%s\n' "${c404[@]}" | median)
    w=$(printf '%s\n' "${paged[@]}" | median); cpu=$(median <"$HTTP_CPU")
    printf '| broker, %s shards, median of %s alternating runs | durable results/s | vs without | vs 404 client |\n' "$K" "$R"
    printf '|---|---|---|---|\n| without --http | %.0f | 1.00 | |\n' "$p"
    printf '| --http, a client fetching /x (404) 3 times a second | %.0f | %.3f | 1.00 |\n' "$n" "$(echo "$n / $p" | bc -l)"
    printf '| --http, the client fetching /, /jobs/1, /metrics every second | %.0f | %.3f | %.3f |\n' \
        "$w" "$(echo "$w / $p" | bc -l)" "$(echo "$w / $n" | bc -l)"
    printf '| CPU of the broker'"'"'s HTTP threads per run with pages (median) | %.2f s | | |\n' "$cpu"
    range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }'; }
    printf 'runs: without %s; 404 client %s; pages %s results/s\n' "$(range "${plain[@]}")" "$(range "${c404[@]}")" \
        "$(range "${paged[@]}")"
    exit 0
fi
if [ -n "$BASE" ]; then             # an older build against this one, alternating run by run
    old=(); new=(); rss_old=(); rss_new=()
    for i in $(seq "$R"); do
        exec 4>"$tmp/rss"
        old+=("$(NQ=$BASE LOADGEN=$BASE_LOADGEN broker_run 3>&4)"); rss_old+=("$(cat "$tmp/rss")")
        exec 4>"$tmp/rss"
        new+=("$(broker_run 3>&4)"); rss_new+=("$(cat "$tmp/rss")")
    done
    o=$(printf '%s\n' "${old[@]}" | median); n=$(printf '%s\n' "${new[@]}" | median)
    printf '| broker, %s workers x %s credit, %s shards, median of %s alternating runs | durable results/s | peak RSS | vs base |\n' \
        "$WORKERS" "$CREDIT" "$K" "$R"
    printf '|---|---|---|---|\n'
    printf '| base: %s | %.0f | %.1f MB | 1.00 |\n' "$BASE" "$o" "$(printf '%s\n' "${rss_old[@]}" | median | awk '{print $1 / 1024}')"
    printf '| this: %s | %.0f | %.1f MB | %.3f |\n' "$NQ" "$n" "$(printf '%s\n' "${rss_new[@]}" | median | awk '{print $1 / 1024}')" \
        "$(echo "$n / $o" | bc -l)"
    range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }'; }
    printf 'runs: base %s; this %s results/s\n' "$(range "${old[@]}")" "$(range "${new[@]}")"
    exit 0
fi
base=$(for i in $(seq "$R"); do sqlite_baseline; done | median)
rates=(); rss=()
for i in $(seq "$R"); do
    exec 4>"$tmp/rss"
    rates+=("$(broker_run 3>&4)")
    rss+=("$(cat "$tmp/rss")")
done
rate=$(printf '%s\n' "${rates[@]}" | median)
mem=$(printf '%s\n' "${rss[@]}" | median)
printf '| measure (median of %s) | value | vs baseline |\n|---|---|---|\n' "$R"
printf '| SQLite WAL+FULL, 100-row transactions (baseline) | %.0f rows/s | 1.00 |\n' "$base"
printf '| broker, %s simulated workers x %s credit, %s shards | %.0f durable results/s | %.2fx |\n' \
    "$WORKERS" "$CREDIT" "$K" "$rate" "$(echo "$rate / $base" | bc -l)"
printf '| broker peak RSS during that run | %.1f MB | |\n' "$(echo "$mem / 1024" | bc -l)"

# Peak memory with 10^6 pending shards: a job of 10^6 seeds, loaded and waiting.
rm -f "$tmp"/m.db*
wp=$(free_port); cp=$(free_port)
"$NQ" broker --db "$tmp/m.db" --bind "tcp://127.0.0.1:$wp" --control "tcp://127.0.0.1:$cp" --log-level warn 2>/dev/null &
bp=$!
wait_broker "$NQ" "tcp://127.0.0.1:$cp"
t0=$(date +%s.%N)
NQ_BROKER=tcp://127.0.0.1:$cp "$NQ" submit solve 1000 --restarts 1000000 --all --timeout 300 >/dev/null
t1=$(date +%s.%N)
printf '| broker peak RSS with 10^6 pending shards (submit took %.1f s) | %.1f MB | |\n' \
    "$(echo "$t1 - $t0" | bc -l)" "$(echo "$(grep VmHWM /proc/$bp/status | awk '{print $2}') / 1024" | bc -l)"
kill "$bp"; wait "$bp" 2>/dev/null || true; bp=""
