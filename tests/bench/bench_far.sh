#!/usr/bin/env bash
# Far workers: one broker and two one-thread workers counting N, direct and through
# tests/tools/link_proxy.py at 0.15 s and 1.0 s each way (a 0.3 s round trip, Europe to
# Australia; a 2 s one, a satellite hop), round-robin, medians of R rounds; then a solve of S
# queens through a link of B bytes a second (about 1 Mbit/s) and 0.05 s each way: how long it
# took, how much of that the upload was, and whether its worker was ever lost. Workers may be
# paced (NQ_FAULT_PACE: a task takes at least its nodes / P seconds, so the figures hold on a
# busy machine; needs -DNQ_TEST_FAULTS=ON). Every run checks its count against OEIS and fails
# on a worker lost, quarantined or giving up on the broker.
#   tests/bench/bench_far.sh [--nq PATH] [--n N] [--runs R] [--pace NODES_PER_S] [--solve S] [--rate B]
#   defaults: --n 18 --runs 3 --pace 0 (unpaced) --solve 10000000 --rate 125000; --runs 0: the solve
#   alone, --solve 0: the counts alone
# Targets: 0.3 s <= 1.2 x direct + 4 round trips; 2 s ends within 60 s (N=16); nothing lost.
set -euo pipefail
NQ=${NQ:-build-test/nq}; N=18; R=3; P=0; S=10000000; B=125000
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --n) N=$2; shift 2 ;; --runs) R=$2; shift 2 ;; --pace) P=$2; shift 2 ;;
               --solve) S=$2; shift 2 ;; --rate) B=$2; shift 2 ;;
               *) echo "usage: $0 [--nq PATH] [--n N] [--runs R] [--pace NODES_PER_S] [--solve S] [--rate B]" >&2
                  exit 2 ;; esac
done
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
# shellcheck source=tests/bench/bench_lib.sh
. "$here/bench_lib.sh"   # median, free_port

# up DELAY_MS RATE: a broker (its workers' endpoint in $wep) and, with a delay or a rate, a link
up() {
    local wp cp
    rm -f "$tmp"/f.db* "$tmp/port"
    wp=$(free_port); cp=$(free_port); pids=()
    "$NQ" broker --db "$tmp/f.db" --bind "tcp://127.0.0.1:$wp" --control "tcp://127.0.0.1:$cp" \
        >"$tmp/broker.log" 2>&1 &
    pids+=($!)
    export NQ_BROKER=tcp://127.0.0.1:$cp
    until "$NQ" list --timeout 1 >/dev/null 2>&1; do
        kill -0 "${pids[0]}" 2>/dev/null || { echo "the broker did not start: $(tail -1 "$tmp/broker.log")" >&2; exit 1; }
        sleep 0.1
    done
    wep=tcp://127.0.0.1:$wp
    if [ "$1" != 0 ] || [ "$2" != 0 ]; then
        python3 "$here/../tools/link_proxy.py" --to "127.0.0.1:$wp" --delay-ms "$1" --rate "$2" \
            --port-file "$tmp/port" >/dev/null 2>&1 &
        pids+=($!)
        until [ -s "$tmp/port" ]; do sleep 0.05; done
        wep=tcp://127.0.0.1:$(cat "$tmp/port")
    fi
}

# workers K: K one-thread workers on $wep, logs in $tmp/wI.log
workers() {
    local i
    for i in $(seq "$1"); do
        NQ_FAULT_PACE=$P "$NQ" worker --connect "$wep" --threads 1 --id "far-$i" >"$tmp/w$i.log" 2>&1 &
        pids+=($!)
    done
}

# down: stops everything; fails on a worker found silent, quarantined, or giving up on the broker
# (a worker stopped here says BYE: the broker logs it as lost for reason=bye)
down() {
    kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; pids=()
    if grep -E "event=worker.lost.*reason=silent|quarantine" "$tmp/broker.log" >&2 ||
       grep -h "event=worker.broker_silent" "$tmp"/w*.log >&2
    then echo "a worker was lost" >&2; exit 1; fi
    rm -f "$tmp"/w*.log
}

# count DELAY_MS: seconds from submit to done (the workers started first)
count() {
    local t0 id
    up "$1" 0
    workers 2
    t0=$(date +%s.%N)
    id=$("$NQ" submit count "$N" 2>/dev/null)
    until "$NQ" status "$id" --json 2>/dev/null | grep -q '"state":"done"'; do sleep 0.05; done
    echo "$(date +%s.%N) - $t0" | bc -l
    local want
    want=$(awk -v n="$N" '$1 == n { print $2 }' "$here/../data/oeis-counts.tsv")
    "$NQ" status "$id" --json 2>/dev/null | grep -q "\"total\":$want," || { echo "count $N not exact" >&2; exit 1; }
    down
}

if [ "$R" -gt 0 ]; then                 # --runs 0: the solve alone
    for _ in $(seq "$R"); do
        for d in 0 150 1000; do count "$d" >>"$tmp/c.$d"; done
    done
    d0=$(median <"$tmp/c.0"); d1=$(median <"$tmp/c.150"); d2=$(median <"$tmp/c.1000")
    printf '| count %s, two one-thread workers%s, median of %s | direct | 0.3 s round trip | 2 s round trip |\n' \
        "$N" "$([ "$P" = 0 ] || echo ", paced to $P nodes/s")" "$R"
    printf '|---|---|---|---|\n| seconds | %.2f | %.2f (%.2f x direct; target %.2f) | %.2f (%.2f x direct) |\n' \
        "$d0" "$d1" "$(echo "$d1 / $d0" | bc -l)" "$(echo "1.2 * $d0 + 4 * 0.3" | bc -l)" "$d2" \
        "$(echo "$d2 / $d0" | bc -l)"
fi

# A large solve through a slow link: the solution is S x 4 bytes of columns.
[ "$S" -gt 0 ] || exit 0
up 50 "$B"
workers 1
t0=$(date +%s.%N)
id=$("$NQ" submit solve "$S" 2>/dev/null)
until "$NQ" status "$id" --json 2>/dev/null | grep -q '"state":"done"'; do sleep 0.5; done
t=$(echo "$(date +%s.%N) - $t0" | bc -l)
ups=$(grep -c "event=result.upload" "$tmp/broker.log" || true)
down
printf '\n| solve %s through %s bytes/s, 0.05 s each way | seconds | upload progress lines | worker lost |\n|---|---|---|---|\n' "$S" "$B"
printf '| one one-thread worker | %.1f (the columns alone: %.0f s at that rate) | %s | no |\n' "$t" \
    "$(echo "$S * 4 / $B" | bc -l)" "$ups"
