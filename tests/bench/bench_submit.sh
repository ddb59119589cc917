#!/usr/bin/env bash
# How long `nq submit count N` takes to answer, against how long the broker then spends on the
# job's lease order (its cost estimates: job.listed's seconds, the job leasing nothing until then).
# Each round starts a fresh broker on a fresh DB and submits twice: the first of the process and a
# second of the same N. The first used to pay every root's direction probes (a list's length needs
# them); lists read them from a table now (common/kernel/shard_flip_table.c), so both rows should
# agree. Medians of R rounds; the ratios say what share of the order's time a client waits.
# The machine may be shared: compare the ratios, which come from one invocation.
#   tests/bench/bench_submit.sh [--nq PATH] [--n N] [--runs R]
set -euo pipefail
NQ=${NQ:-build/nq}; N=27; R=3
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --n) N=$2; shift 2 ;; --runs) R=$2; shift 2 ;;
               *) echo "usage: $0 [--nq P] [--n N] [--runs R]" >&2; exit 2 ;; esac
done
[ -x "$NQ" ] || { echo "bench_submit: $NQ is not executable" >&2; exit 2; }
NQ=$(cd "$(dirname "$NQ")" && pwd)/$(basename "$NQ")
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
tmp=$(mktemp -d); broker=
trap '[ -n "$broker" ] && kill "$broker" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }

for i in $(seq "$R"); do
    d=$tmp/r$i; mkdir "$d"
    "$NQ" broker --db "$d/nq.db" --bind tcp://127.0.0.1:0 2>"$d/log" & broker=$!
    for _ in $(seq 200); do "$NQ" list --db "$d/nq.db" >/dev/null 2>&1 && break; sleep 0.05; done
    secs "$NQ" submit count "$N" --db "$d/nq.db" >>"$tmp/first"
    secs "$NQ" submit count "$N" --db "$d/nq.db" >>"$tmp/second"
    for _ in $(seq 1200); do [ "$(grep -c event=job.listed "$d/log")" = 2 ] && break; sleep 0.1; done
    sed -n 's/.*event=job.listed .* seconds=\([0-9.]*\).*/\1/p' "$d/log" | head -1 >>"$tmp/order"
    kill "$broker"; wait "$broker" 2>/dev/null || true; broker=
done
first=$(median <"$tmp/first"); second=$(median <"$tmp/second"); order=$(median <"$tmp/order")
echo "nq submit count $N: answer against the job's lease order (medians of $R rounds; $(nproc) cores, maybe shared)"
printf '| submit | answer s | lease order s (job.listed) | answer / order |\n|---|---|---|---|\n'
printf '| first of the process | %.3f | %.3f | %.3f |\n' "$first" "$order" "$(echo "$first / $order" | bc -l)"
printf '| second | %.3f | %.3f | %.3f |\n' "$second" "$order" "$(echo "$second / $order" | bc -l)"
