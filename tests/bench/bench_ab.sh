#!/usr/bin/env bash
# Two nq binaries on the same count, at the same time: which is faster?
#
# Sequential A/B timings on a shared 2-vCPU machine drift with whatever else
# the host runs, and the two vCPUs need not be equally fast (one ran N=18 in
# 4.4 s while the other took 3.6 s, the same minutes). So each round runs A and
# B together, one pinned to each vCPU, and the next round swaps the vCPUs:
# both see the same minutes and both vCPUs equally. Prints every round, then
# whole-process medians and B's time as a ratio of A's (the baseline), over all
# rounds and on each vCPU alone (when one vCPU is the slow one, and which one
# changes by the minute, the per-vCPU medians are the ones to read).
#   tests/bench/bench_ab.sh --a PATH --b PATH [--runs R] -- COUNT-ARGS...
# e.g. tests/bench/bench_ab.sh --a /tmp/nq_old --b build-rel/nq --runs 6 -- 18 --depth 2 --threads 1
set -euo pipefail
A=; B=; R=4
while [ $# -gt 0 ]; do
    case $1 in --a) A=$2; shift 2 ;; --b) B=$2; shift 2 ;; --runs) R=$2; shift 2 ;; --) shift; break ;;
               *) echo "usage: $0 --a P --b P [--runs R] -- COUNT-ARGS..." >&2; exit 2 ;; esac
done
if [ ! -x "$A" ] || [ ! -x "$B" ]; then echo "bench_ab: give --a and --b, two executables" >&2; exit 2; fi
[ $# -gt 0 ] || { echo "bench_ab: give the count's arguments after --" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "bench_ab: needs two CPUs" >&2; exit 2; }
command -v taskset >/dev/null || { echo "bench_ab: needs taskset (util-linux)" >&2; exit 2; }
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# one timed run: CPU, binary, output file; wall seconds of the whole process go to stdout
timed() {
    local t0 t1
    t0=$(date +%s.%N)
    taskset -c "$1" "$2" bench count "${@:4}" >"$3"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

printf '| round | A on vCPU | A seconds | B seconds | B / A |\n|---|---|---|---|---|\n'
for i in $(seq "$R"); do
    ca=$(( (i + 1) % 2 )); cb=$(( i % 2 ))
    timed "$ca" "$A" "$tmp/a.$i" "$@" >"$tmp/ta.$i" &
    timed "$cb" "$B" "$tmp/b.$i" "$@" >"$tmp/tb.$i" &
    wait
    # the counts must agree, or the comparison means nothing
    if ! cmp -s <(grep -E '^n ' "$tmp/a.$i") <(grep -E '^n ' "$tmp/b.$i"); then
        echo "bench_ab: A and B disagree:" >&2; cat "$tmp/a.$i" "$tmp/b.$i" >&2; exit 1
    fi
    ta=$(cat "$tmp/ta.$i"); tb=$(cat "$tmp/tb.$i")
    cat "$tmp/ta.$i" >>"$tmp/all_a"; cat "$tmp/tb.$i" >>"$tmp/all_b"
    cat "$tmp/ta.$i" >>"$tmp/cpu$ca.a"; cat "$tmp/tb.$i" >>"$tmp/cpu$cb.b"
    printf '| %s | %s | %.3f | %.3f | %.3f |\n' "$i" "$ca" "$ta" "$tb" "$(echo "$tb / $ta" | bc -l)"
done
ma=$(median <"$tmp/all_a"); mb=$(median <"$tmp/all_b")
printf '| median of %s | | %.3f | %.3f | %.3f |\n' "$R" "$ma" "$mb" "$(echo "$mb / $ma" | bc -l)"
for c in 0 1; do
    if [ ! -s "$tmp/cpu$c.a" ] || [ ! -s "$tmp/cpu$c.b" ]; then continue; fi
    ma=$(median <"$tmp/cpu$c.a"); mb=$(median <"$tmp/cpu$c.b")
    printf '| median on vCPU %s | | %.3f | %.3f | %.3f |\n' "$c" "$ma" "$mb" "$(echo "$mb / $ma" | bc -l)"
done
