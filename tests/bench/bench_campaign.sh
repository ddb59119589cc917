#!/usr/bin/env bash
# A record-size campaign on one machine: the broker with N=27 and N=28
# count jobs (13.5M and 17.8M shards at the default depth 4), 10^6 of the N=27
# shards done through the broker's real result path (tests/bench/loadgen.c:
# simulated workers that answer each task at once), then what a person running
# it would do: status, list, result, a restart, a backup, a check; and the
# broker's throughput with and without a `nq status` loop, in one invocation.
# Whole-process timings; medians of R runs where a row says so.
#
#   tests/bench/bench_campaign.sh [--nq PATH] [--loadgen PATH] [--done K] [--workers W] [--runs R]
#
# Run it on a quiet machine. Needs ~1 GB of disk under $TMPDIR.
set -euo pipefail
NQ=${NQ:-build/nq}; LOADGEN=${LOADGEN:-build/tests/nq_loadgen}
DONE=1000000; IDLE_WORKERS=10000; R=5; TPUT=200000
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --loadgen) LOADGEN=$2; shift 2 ;; --done) DONE=$2; shift 2 ;;
               --workers) IDLE_WORKERS=$2; shift 2 ;; --runs) R=$2; shift 2 ;;
               *) echo "usage: $0 [--nq P] [--loadgen P] [--done K] [--workers W] [--runs R]" >&2; exit 2 ;; esac
done
for f in "$NQ" "$LOADGEN"; do [ -x "$f" ] || { echo "bench_campaign: $f is not executable" >&2; exit 2; }; done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
tmp=$(mktemp -d); bp=""; lp=""; sp=""
cleanup() { for p in $bp $lp $sp; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median, free_port
now() { date +%s.%N; }
ms() { echo "($2 - $1) * 1000" | bc -l; }
db=$tmp/c.db; WP=$(free_port); CP=$(free_port); export NQ_BROKER=tcp://127.0.0.1:$CP
bytes() { local t=0 f; for f in "$db" "$db-wal"; do [ -f "$f" ] && t=$((t + $(stat -c %s "$f"))); done; echo $t; }

broker_start() {    # on the same ports; a first start may draw new ones if another process took them
    local try
    for try in 1 2 3 4 5; do
        "$NQ" broker --db "$db" --bind "tcp://127.0.0.1:$WP" --control "tcp://127.0.0.1:$CP" --log-level warn \
            --max-job-shards 100000000 --max-store-shards 100000000 2>>"$tmp/broker.log" &
        bp=$!
        sleep 0.2
        kill -0 "$bp" 2>/dev/null && wait_broker "$NQ" "$NQ_BROKER" && return 0
        [ "${1:-}" = fixed ] && break
        WP=$(free_port); CP=$(free_port); export NQ_BROKER=tcp://127.0.0.1:$CP
    done
    echo "bench_campaign: the broker did not start: $(tail -1 "$tmp/broker.log")" >&2; exit 1
}
until_answers() {   # waits until `nq status 1` answers; prints the seconds it took from $1
    local t0=$1
    until "$NQ" status 1 --timeout 1 >/dev/null 2>&1; do sleep 0.02; done
    echo "$(now) - $t0" | bc -l
}
time_cmd() {        # median milliseconds of R runs of "$@"
    local i t0 t1
    for i in $(seq "$R"); do t0=$(now); "$@" >/dev/null; t1=$(now); ms "$t0" "$t1"; done | median
}
rss_mb() { echo "$(grep "$1" "/proc/$bp/status" | awk '{print $2}') / 1024" | bc -l; }
row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3"; }

printf '| measure | value | target |\n|---|---|---|\n'
broker_start
until "$NQ" list --timeout 1 >/dev/null 2>&1; do sleep 0.05; done
t0=$(now); "$NQ" submit count 27 --priority 1 --timeout 60 >/dev/null; t1=$(now)
row "nq submit count 27 ($("$NQ" status 1 --json | sed -n 's/.*"shards_total":\([0-9]*\).*/\1/p') shards)" \
    "$(printf '%.0f ms' "$(ms "$t0" "$t1")")" "<= 1000 ms"
t0=$(now); "$NQ" submit count 28 --timeout 60 >/dev/null; t1=$(now)
row "nq submit count 28 ($("$NQ" status 2 --json | sed -n 's/.*"shards_total":\([0-9]*\).*/\1/p') shards)" \
    "$(printf '%.0f ms' "$(ms "$t0" "$t1")")" "<= 1000 ms"
row "store right after both submits (DB + WAL)" "$(printf '%.2f MB' "$(echo "$(bytes) / 1048576" | bc -l)")" "<= 10 MB"
before=$(bytes)

# 10^6 shards of job 1 done through the real result path
t0=$(now)
"$LOADGEN" "tcp://127.0.0.1:$WP" 64 16 "$DONE" >"$tmp/lg1" || true
t1=$(now)
row "$DONE results delivered (64 simulated workers x 16 credit)" \
    "$(printf '%.1f s, %s/s' "$(echo "$t1 - $t0" | bc -l)" "$(awk '{print $6}' "$tmp/lg1")")" ""
sleep 1.5   # heartbeats miss: the loadgen's leases come back
"$NQ" status 1 --json >"$tmp/s1"
row "job 1 shards done" "$(sed -n 's/.*"shards_done":\([0-9]*\).*/\1/p' "$tmp/s1")" "$DONE"
row "store growth per done shard" \
    "$(printf '%.0f bytes' "$(echo "($(bytes) - $before) / $DONE" | bc -l)")" "<= 100 bytes"
row "nq --help: the floor of any nq process here (median of $R)" "$(printf '%.1f ms' "$(time_cmd "$NQ" --help)")" ""
row "nq status 1 (median of $R)" "$(printf '%.1f ms' "$(time_cmd "$NQ" status 1)")" "<= 20 ms"
row "nq list (median of $R)" "$(printf '%.1f ms' "$(time_cmd "$NQ" list)")" "<= 20 ms"
row "nq result 1 (median of $R)" "$(printf '%.1f ms' "$(time_cmd "$NQ" result 1)")" "<= 20 ms"
if /usr/bin/python3 -c 'import zmq, msgpack' 2>/dev/null; then   # the broker's part, without process start
    /usr/bin/python3 "$(dirname "$0")/../tools/ctl_latency.py" "$NQ_BROKER" 50 status:1 list result:1 >"$tmp/lat"
    while read -r op med p95; do
        row "  $op round trip on one connection (median of 50; p95)" "$(printf '%.2f ms (%.2f ms)' "$med" "$p95")" "<= 20 ms"
    done <"$tmp/lat"
fi
row "nq status 1 --db (broker's store read directly, median of $R)" \
    "$(printf '%.1f ms' "$(time_cmd "$NQ" status 1 --db "$db")")" ""

# 10^4 workers connected, heartbeats on, each holding one shard
"$LOADGEN" "tcp://127.0.0.1:$WP" "$IDLE_WORKERS" 1 0 12 >"$tmp/lg2" 2>&1 &
lp=$!
sleep 10
row "broker RSS with $IDLE_WORKERS simulated workers connected" "$(printf '%.0f MB (peak %.0f MB)' \
    "$(rss_mb VmRSS)" "$(rss_mb VmHWM)")" "<= 100 MB"
wait "$lp" || true; lp=""
row "  ... their results during those 12 s" "$(awk '{print $2}' "$tmp/lg2") results" ""

# restart: kill -9, start, first status answered
kill -9 "$bp"; wait "$bp" 2>/dev/null || true
t0=$(now); broker_start fixed
row "restart: kill -9, start, first nq status answered" "$(printf '%.2f s' "$(until_answers "$t0")")" "<= 2 s"
row "broker RSS after the restart" "$(printf '%.0f MB' "$(rss_mb VmRSS)")" "<= 100 MB"

# throughput with and without a status loop, alternating, medians
plain=(); loaded=()
for i in $(seq 3); do
    plain+=("$("$LOADGEN" "tcp://127.0.0.1:$WP" 64 16 "$TPUT" | awk '{print $6}')")
    ( while true; do "$NQ" status 1 >/dev/null 2>&1; sleep 0.05; done ) &   # ~15 status a second
    sp=$!
    loaded+=("$("$LOADGEN" "tcp://127.0.0.1:$WP" 64 16 "$TPUT" | awk '{print $6}')")
    kill "$sp"; wait "$sp" 2>/dev/null || true; sp=""
done
p=$(printf '%s\n' "${plain[@]}" | median); l=$(printf '%s\n' "${loaded[@]}" | median)
row "durable results/s, $TPUT results, 64 x 16 (median of 3)" "$(printf '%.0f/s' "$p")" ">= 50000/s"
row "the same with a 'nq status' loop running" "$(printf '%.0f/s (%.0f%%)' "$l" "$(echo "100 * $l / $p" | bc -l)")" \
    ">= 90%"

# a backup while the broker runs, and the auditor's check of the copy
t0=$(now); "$NQ" backup --db "$db" "$tmp/backup.db" >/dev/null; t1=$(now)
row "nq backup while the broker runs" "$(printf '%.1f s, %.0f MB' "$(echo "$t1 - $t0" | bc -l)" \
    "$(echo "$(stat -c %s "$tmp/backup.db") / 1048576" | bc -l)")" ""
t0=$(now); "$NQ" check --db "$tmp/backup.db" >"$tmp/check" && ok=agree || ok=DISAGREE; t1=$(now)
row "nq check of the backup (every page, every aggregate)" "$(printf '%.1f s, %s' "$(echo "$t1 - $t0" | bc -l)" "$ok")" ""
row "WAL after the run" "$(printf '%.1f MB' "$(echo "$(stat -c %s "$db-wal" 2>/dev/null || echo 0) / 1048576" | bc -l)")" \
    "bounded (64 MB)"
kill "$bp"; wait "$bp" 2>/dev/null || true; bp=""
