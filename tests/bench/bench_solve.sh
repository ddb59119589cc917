#!/bin/bash
# Whole-process timings of `nq bench solve`: for each N, R runs of the method
# under test and of a baseline method in the same invocation; prints medians
# of wall seconds (whole process, via date) and of the solver's own seconds,
# peak RSS, and the ratio against the baseline. The 1e7 row is repeated with
# --out to a file to show what writing the answer costs.
#
#   NQ=build/nq tests/bench/bench_solve.sh                   # N = 1e6 1e7 1e8, R = 5
#   SIZES="1e6 1e7" R=3 NQ=build/nq tests/bench/bench_solve.sh
#   SIZES="1e8 1e9" R=3 R_BIG=1 BASELINE=construct ...      # N >= 1e9 runs R_BIG times (~50 s each)
#   ALGO=qs4 BASELINE=qs4-classic SEED=1 OUTDIR=/tmp         # the defaults
# Run it on a quiet machine: other load makes the numbers meaningless.
set -eu
NQ=${NQ:-build/nq}
SIZES=${SIZES:-"1e6 1e7 1e8"}
R=${R:-5}
R_BIG=${R_BIG:-1}
ALGO=${ALGO:-qs4}
BASELINE=${BASELINE:-qs4-classic}
SEED=${SEED:-1}
OUTDIR=${OUTDIR:-${TMPDIR:-/tmp}}
[ -x "$NQ" ] || { echo "bench_solve: NQ=$NQ is not executable" >&2; exit 2; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }

to_int() { awk -v x="$1" 'BEGIN { if (x ~ /e/) { split(x, p, "e"); printf "%d", p[1] * 10 ^ p[2] } else print x }'; }

# run ALGO N [extra args]: REPS runs; sets WALL SOLVE (median seconds) and RSS (median MB); 1 if one failed
run() {
    local algo=$1 n=$2; shift 2
    local walls="" solves="" rsss="" i t0 t1 out
    for i in $(seq "$REPS"); do
        t0=$(date +%s.%N)
        out=$("$NQ" bench solve "$n" --algo "$algo" --seed "$SEED" --json "$@" 2>/dev/null) || return 1
        t1=$(date +%s.%N)
        walls="$walls $(echo "$t1 - $t0" | bc -l)"
        solves="$solves $(echo "$out" | field seconds)"
        rsss="$rsss $(echo "$out" | field peak_rss_bytes)"
    done
    WALL=$(echo $walls | tr ' ' '\n' | median)
    SOLVE=$(echo $solves | tr ' ' '\n' | median)
    RSS=$(echo $rsss | tr ' ' '\n' | median | awk '{ printf "%.0f", $1 / 1e6 }')
}

# row N METHOD LABEL [extra args]: runs and prints one line; the baseline line sets BASE
row() {
    local n=$1 m=$2 label=$3; shift 3
    if ! run "$m" "$n" "$@"; then
        printf '%-8s %-13s %-10s %s\n' "$n" "$m" "$label" "failed or refused (try it by hand)"
        [ "$label" = baseline ] && BASE=""
        return 0
    fi
    [ "$label" = baseline ] && BASE=$WALL
    local ratio="-"
    [ -n "$BASE" ] && ratio=$(echo "$WALL / $BASE" | bc -l | awk '{ printf "%.3f", $1 }')
    printf '%-8s %-13s %-10s %9.3f %9.3f %8s %8.2f %10s\n' "$n" "$m" "$label" "$WALL" "$SOLVE" "$RSS" \
        "$(echo "$RSS * 1000000 / $(to_int "$n")" | bc -l)" "$ratio"
}

echo "nq bench solve: median of R=$R runs (R_BIG=$R_BIG from N=1e9), seed $SEED, $(nproc) cores, $(date -u +%FT%TZ)"
printf '%-8s %-13s %-10s %9s %9s %8s %8s %10s\n' N method run wall_s solve_s rss_MB B/queen vs_base
for n in $SIZES; do
    REPS=$R
    [ "$(to_int "$n")" -ge 1000000000 ] && REPS=$R_BIG
    BASE=""
    row "$n" "$BASELINE" baseline
    row "$n" "$ALGO" solve
    if [ "$(to_int "$n")" = 10000000 ]; then
        row "$n" "$ALGO" "--out txt" --out "$OUTDIR/nq-bench-$$.txt"
        row "$n" "$ALGO" "--out bin" --out "$OUTDIR/nq-bench-$$.bin" --format bin
        rm -f "$OUTDIR/nq-bench-$$.txt" "$OUTDIR/nq-bench-$$.bin"
    fi
done
