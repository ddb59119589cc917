#!/usr/bin/env bash
# Can a planner trust `nq estimate count N`? Three tables (docs/benchmarks.md, "nq estimate"):
#  1. against whole counts (default N=18 19, R rounds, estimate and count alternating): the
#     counted nodes inside the estimate's interval, and its CPU time against the count's on one
#     thread (user seconds of `nq bench count N --threads 1`), medians and their ratio;
#  2. the node estimate at N=24..28 for several seeds and node samples (default 10^4 and 10^5;
#     the timed sample is 2 so that only the nodes are measured): do the intervals overlap?
#  3. core-hours at N=28 from timed samples of 30 and 300 probes, seeds 1 and 2, in one
#     invocation: do those intervals overlap (they missed each other when time was S x mean)?
#   tests/bench/bench_estimate.sh [--nq PATH] [--check "18 19"] [--big "24 26 28"]
#                                 [--sizes "10000 100000"] [--runs R] [--skip-time | --only-time]
set -euo pipefail
NQ=${NQ:-build/nq}; CHECK="18 19"; BIG="24 26 28"; SIZES="10000 100000"; R=3; TIME=1
while [ $# -gt 0 ]; do
    case $1 in --nq) NQ=$2; shift 2 ;; --check) CHECK=$2; shift 2 ;; --big) BIG=$2; shift 2 ;;
               --sizes) SIZES=$2; shift 2 ;; --runs) R=$2; shift 2 ;; --skip-time) TIME=0; shift ;;
               --only-time) CHECK=; BIG=; shift ;;
               *) echo "usage: $0 [--nq P] [--check \"N..\"] [--big \"N..\"] [--sizes \"M..\"] [--runs R]" \
                       "[--skip-time]" >&2; exit 2 ;; esac
done
[ -x "$NQ" ] || { echo "bench_estimate: $NQ is not executable" >&2; exit 2; }
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
calc() { awk "BEGIN { printf \"%.6g\", $* }"; }   # bc reads no 1e+06
inside() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { print (x >= lo && x <= hi) ? "yes" : "NO" }'; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

echo "## 1. The estimate against whole counts (medians of $R rounds)"
echo
echo "| N | nodes counted | nodes estimated (95 % interval) | inside | CPU s, estimated (interval) | CPU s, counted on 1 thread | estimated / counted |"
echo "|---|---|---|---|---|---|---|"
for n in $CHECK; do
    for i in $(seq "$R"); do
        "$NQ" estimate count "$n" --seed "$i" --json >"$tmp/e.$n.$i"
        /usr/bin/time -f "%U" -o "$tmp/u.$n.$i" "$NQ" bench count "$n" --threads 1 --json >"$tmp/c.$n.$i"
        calc "$(field core_hours <"$tmp/e.$n.$i") * 3600" >>"$tmp/es.$n"; echo >>"$tmp/es.$n"
        tail -1 "$tmp/u.$n.$i" >>"$tmp/cs.$n"
    done
    nodes=$(field nodes <"$tmp/c.$n.1")
    e=$tmp/e.$n.1
    est_s=$(median <"$tmp/es.$n"); cnt_s=$(median <"$tmp/cs.$n")
    printf '| %s | %s | %.4g (%.4g-%.4g) | %s | %.3g (%.3g-%.3g) | %.3g | %.2f |\n' "$n" "$nodes" \
        "$(field nodes <"$e")" "$(field nodes_ci95_low <"$e")" "$(field nodes_ci95_high <"$e")" \
        "$(inside "$nodes" "$(field nodes_ci95_low <"$e")" "$(field nodes_ci95_high <"$e")")" \
        "$est_s" "$(calc "$(field ci95_low <"$e") * 3600")" "$(calc "$(field ci95_high <"$e") * 3600")" \
        "$cnt_s" "$(calc "$est_s / $cnt_s")"
done
echo
echo "## 2. Node estimates: seeds and samples"
echo
echo "| N | node sample | seed | nodes | 95 % interval | all intervals of this N overlap |"
echo "|---|---|---|---|---|---|"
for n in $BIG; do
    : >"$tmp/ci.$n"
    for m in $SIZES; do
        for seed in 1 2 3; do
            "$NQ" estimate count "$n" --sample 2 --node-sample "$m" --seed "$seed" --json >"$tmp/b"
            lo=$(field nodes_ci95_low <"$tmp/b"); hi=$(field nodes_ci95_high <"$tmp/b")
            echo "$lo $hi" >>"$tmp/ci.$n"
            printf '| %s | %s | %s | %.4g | %.4g-%.4g |' "$n" "$m" "$seed" "$(field nodes <"$tmp/b")" "$lo" "$hi"
            echo " |"
        done
    done
    printf '| %s | | | | | %s |\n' "$n" "$(awk 'NR == 1 || $1 > lo { lo = $1 } NR == 1 || $2 < hi { hi = $2 }
        END { print lo <= hi ? "yes" : "NO" }' "$tmp/ci.$n")"
done
[ "$TIME" = 1 ] || exit 0
echo
echo "## 3. Core-hours at N=28 from timed samples of 30 and 300 probes"
echo
echo "| timed probes | seed | nodes/s (interval) | core-years (interval) |"
echo "|---|---|---|---|"
: >"$tmp/ci.t"
for k in 30 300; do
    for seed in 1 2; do
        "$NQ" estimate count 28 --sample "$k" --seed "$seed" --json >"$tmp/t"
        y() { calc "$(field "$1" <"$tmp/t") / 24 / 365.25"; }
        echo "$(y ci95_low) $(y ci95_high)" >>"$tmp/ci.t"
        printf '| %s | %s | %.4g (%.4g-%.4g) | %.4g (%.4g-%.4g) |\n' "$k" "$seed" "$(field nodes_per_s <"$tmp/t")" \
            "$(field nodes_per_s_ci95_low <"$tmp/t")" "$(field nodes_per_s_ci95_high <"$tmp/t")" "$(y core_hours)" \
            "$(y ci95_low)" "$(y ci95_high)"
    done
done
echo
echo "intervals overlap: $(awk 'NR == 1 || $1 > lo { lo = $1 } NR == 1 || $2 < hi { hi = $2 }
    END { print lo <= hi ? "yes" : "NO" }' "$tmp/ci.t")"
