#!/bin/bash
# The seed methods side by side: for each method and each N it is meant for
# (its n_min..n_max from `nq bench solve --algo list`), run
# `nq bench solve N --algo A --seed S --json` for seeds 0..K-1 and report the
# success rate (a FAILED seed is a real outcome: exit 1) and the median
# whole-process wall seconds (date around the process), over all runs and
# over the successful ones, with the ratio against the baseline method
# (default qs4) at the same N, measured in the same invocation.
# Output: a markdown table on stdout, methods.csv and methods.svg (gnuplot,
# tests/bench/methods.gp) in OUTDIR.
#
#   NQ=build/nq tests/bench/bench_methods.sh                 # the full study
#   SIZES="8 100" SEEDS_SMALL=20 NQ=build/nq tests/bench/bench_methods.sh   # a quick try
# Knobs (defaults): SIZES ("8 100 1000 1e4 1e5 1e6"), METHODS (the seed methods),
# BASELINE (qs4), SEEDS_SMALL (100, for N <= 1000), SEEDS_1E4 (20), SEEDS_1E5 (10),
# SEEDS_BIG (5, N > 1e5), SEEDLESS_RUNS (5: divide ignores the seed, so its
# "seeds" are repeats), TIMEOUT (600 s per process: past it the run counts as
# timed out), OUTDIR (./bench-methods).
# Run the full one on a quiet machine: other load makes the timings meaningless.
set -eu
NQ=${NQ:-build/nq}
SIZES=${SIZES:-"8 100 1000 1e4 1e5 1e6"}
METHODS=${METHODS:-"hillclimb minconflicts-sweep qs1 qs4-classic divide"}
BASELINE=${BASELINE:-qs4}
SEEDS_SMALL=${SEEDS_SMALL:-100}
SEEDS_1E4=${SEEDS_1E4:-20}
SEEDS_1E5=${SEEDS_1E5:-10}
SEEDS_BIG=${SEEDS_BIG:-5}
SEEDLESS_RUNS=${SEEDLESS_RUNS:-5}
TIMEOUT=${TIMEOUT:-600}
OUTDIR=${OUTDIR:-bench-methods}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$NQ" ] || { echo "bench_methods: NQ=$NQ is not executable" >&2; exit 2; }
mkdir -p "$OUTDIR"
CSV=$OUTDIR/methods.csv

median() {
    awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
        else if (NR % 2) printf "%.4f\n", v[(NR + 1) / 2];
        else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
to_int() { awk -v x="$1" 'BEGIN { if (x ~ /e/) { split(x, p, "e"); printf "%.0f", p[1] * 10 ^ p[2] } else print x }'; }
now() { date +%s.%N; }

# range METHOD: "n_min n_max" from the method list; empty if the method is unknown
range() {
    "$NQ" bench solve --algo list | awk -v m="$1" '$1 == m { split($2, r, /\.\./); print r[1], r[2] }'
}

seeds_for() {
    local n=$1 m=$2
    if [ "$m" = divide ]; then echo "$SEEDLESS_RUNS"
    elif [ "$n" -le 1000 ]; then echo "$SEEDS_SMALL"
    elif [ "$n" -le 10000 ]; then echo "$SEEDS_1E4"
    elif [ "$n" -le 100000 ]; then echo "$SEEDS_1E5"
    else echo "$SEEDS_BIG"; fi
}

# measure METHOD N K: K runs (seeds 0..K-1); sets OK FAIL ERR TOUT MED MED_OK
measure() {
    local m=$1 n=$2 k=$3 s t0 t1 rc out
    local all="" good=""
    OK=0 FAIL=0 ERR=0 TOUT=0
    for s in $(seq 0 $((k - 1))); do
        t0=$(now)
        rc=0
        out=$(timeout "$TIMEOUT" "$NQ" bench solve "$n" --algo "$m" --seed "$s" --json 2>/dev/null) || rc=$?
        t1=$(now)
        local w
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
        case $rc in
        0) if echo "$out" | grep -q '"ok":true'; then OK=$((OK + 1)); good="$good $w"; else ERR=$((ERR + 1)); fi ;;
        1) FAIL=$((FAIL + 1)) ;;                         # no solution for this seed
        124) TOUT=$((TOUT + 1)) ;;
        *) ERR=$((ERR + 1)) ;;
        esac
        all="$all $w"
    done
    MED=$(echo $all | tr ' ' '\n' | median)
    MED_OK=$(echo $good | tr ' ' '\n' | median)
}

echo "# nq seed methods: $(nproc) cores, $(date -u +%FT%TZ), baseline $BASELINE"
echo
echo "| N | method | runs | solved | failed | timeout/error | success | median s (all) | median s (solved) | vs $BASELINE |"
echo "|---|---|---|---|---|---|---|---|---|---|"
echo "method,n,runs,solved,failed,timeout,error,success_rate,median_s,median_solved_s,ratio_vs_baseline" > "$CSV"

for size in $SIZES; do
    n=$(to_int "$size")
    base=""
    for m in "$BASELINE" $METHODS; do
        read -r lo hi <<<"$(range "$m")" || true
        if [ -z "${lo:-}" ]; then echo "bench_methods: unknown method '$m'" >&2; exit 2; fi
        [ "$n" -ge "$lo" ] && [ "$n" -le "$hi" ] || continue
        [ "$m" = "$BASELINE" ] && [ -n "$base" ] && continue
        k=$(seeds_for "$n" "$m")
        measure "$m" "$n" "$k"
        [ "$m" = "$BASELINE" ] && base=$MED_OK
        ratio=$(awk -v a="$MED_OK" -v b="$base" 'BEGIN { if (a == "nan" || b == "" || b == "nan" || b == 0) print "-"; else printf "%.2f", a / b }')
        rate=$(awk -v o="$OK" -v k="$k" 'BEGIN { printf "%.3f", o / k }')
        label=$m; [ "$m" = "$BASELINE" ] && label="$m (baseline)"
        echo "| $n | $label | $k | $OK | $FAIL | $TOUT/$ERR | $(awk -v r="$rate" 'BEGIN { printf "%.1f%%", 100 * r }') | $MED | $MED_OK | $ratio |"
        echo "$m,$n,$k,$OK,$FAIL,$TOUT,$ERR,$rate,$MED,$MED_OK,$ratio" >> "$CSV"
    done
done

echo
echo "CSV: $CSV"
if command -v gnuplot >/dev/null; then
    present=$(awk -F, 'NR > 1 && !seen[$1]++ { printf "%s ", $1 }' "$CSV")   # methods with rows
    gnuplot -e "csv='$CSV'; out='$OUTDIR/methods.svg'; methods='$present'" "$HERE/methods.gp" &&
        echo "chart: $OUTDIR/methods.svg"
else
    echo "gnuplot not found: no chart" >&2
fi
