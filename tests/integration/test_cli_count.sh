#!/usr/bin/env bash
# `nq bench count` and `nq estimate count`: refusals exit 2 with a message; small counts are exact.
set -u
NQ=${NQ:?path of the nq binary}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check DESCRIPTION CONDITION...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

for bad in 0 33 abc -1 '' 1.5 ' 7'; do
    "$NQ" bench count "$bad" >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "bench count '$bad' exits 2" test "$rc" -eq 2
    check "bench count '$bad' says 1 to 32" grep -q "1 to 32" "$tmp/err"
    check "bench count '$bad' prints nothing on stdout" test ! -s "$tmp/out"
done
"$NQ" bench count >/dev/null 2>"$tmp/err"; check "bench count without N exits 2" test $? -eq 2
"$NQ" bench count 10 --threads 0 >/dev/null 2>"$tmp/err"; check "--threads 0 exits 2" test $? -eq 2
"$NQ" bench count 10 --depth 9 >/dev/null 2>"$tmp/err"; rc=$?
check "--depth 9 for N=10 exits 2" test "$rc" -eq 2
check "--depth 9 says the range" grep -q "depth must be from 1 to 8" "$tmp/err"
"$NQ" bench count 10 --bogus >/dev/null 2>&1; check "unknown option exits 2" test $? -eq 2
"$NQ" estimate count 0 >/dev/null 2>"$tmp/err"; check "estimate count 0 exits 2" test $? -eq 2
"$NQ" estimate count 12 --sample 1 >/dev/null 2>&1; check "estimate --sample 1 exits 2" test $? -eq 2
"$NQ" estimate solve 12 >/dev/null 2>&1; check "estimate solve exits 2" test $? -eq 2

"$NQ" bench count 10 --json >"$tmp/json"; rc=$?
check "bench count 10 --json exits 0" test "$rc" -eq 0
check "bench count 10 --json is one line" test "$(wc -l <"$tmp/json")" -eq 1
check "bench count 10 total 724" grep -q '"total":724,' "$tmp/json"
check "bench count 10 unique 92" grep -q '"unique":92,' "$tmp/json"
check "bench count 10 has nodes and seconds" grep -Eq '"nodes":[0-9]+,.*"seconds":[0-9.]+' "$tmp/json"
if command -v python3 >/dev/null; then
    check "bench count --json parses" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["n"]==10' "$tmp/json"
fi
"$NQ" bench count 12 --threads 2 --depth 3 >"$tmp/text"; rc=$?
check "bench count 12 --threads 2 --depth 3" test "$rc" -eq 0
check "bench count 12 total 14,200 unique 1,787" grep -q "total 14,200  unique 1,787" "$tmp/text"
for n in 1 2 3; do
    "$NQ" bench count $n --threads 1 >"$tmp/text"
    check "bench count $n runs" test $? -eq 0
done
check "bench count 3 total 0" grep -q "total 0  unique 0" "$tmp/text"

"$NQ" estimate count 12 --sample 8 >"$tmp/est"; rc=$?
check "estimate count 12 --sample 8 exits 0" test "$rc" -eq 0
check "estimate prints shards and sample" grep -q "sampled 8" "$tmp/est"
check "estimate prints an interval" grep -Eq "95% interval [0-9.e+-]+ \.\. [0-9.e+-]+" "$tmp/est"
"$NQ" estimate count 12 --sample 8 --seed 5 --json >"$tmp/estj"
check "estimate --json has the interval" grep -q '"ci95_low":.*"ci95_high":' "$tmp/estj"
check "estimate --json has a node interval" grep -q '"nodes_ci95_low":.*"nodes_ci95_high":' "$tmp/estj"
# a sample of every shard: the node estimate is the search's own node count, a point
"$NQ" bench count 12 --threads 1 --depth 2 >"$tmp/text"
want=$(sed -n 's/^nodes \([0-9,]*\) .*/\1/p' "$tmp/text" | tr -d ,)   # grouped for people
check "bench count printed its nodes" test -n "$want"
"$NQ" estimate count 12 --depth 2 --sample 1000 --json >"$tmp/estj"
check "estimate of every shard: nodes $want" grep -q "\"nodes\":$want,\"nodes_ci95_low\":$want,\"nodes_ci95_high\":$want," "$tmp/estj"
# the node estimate by paths, of every shard and of a sample of them: the count's nodes inside
# each interval (fixed seeds); the rate and the method are reported
"$NQ" bench count 14 --threads 1 >"$tmp/text"
want=$(sed -n 's/^nodes \([0-9,]*\) .*/\1/p' "$tmp/text" | tr -d ,)
for args in "--sample 8" "--sample 8 --node-sample 60 --seed 2"; do
    "$NQ" estimate count 14 $args --json >"$tmp/estj"
    lo=$(sed -n 's/.*"nodes_ci95_low":\([0-9]*\).*/\1/p' "$tmp/estj")
    hi=$(sed -n 's/.*"nodes_ci95_high":\([0-9]*\).*/\1/p' "$tmp/estj")
    check "estimate count 14 $args: $want nodes in $lo .. $hi" test -n "$lo" -a "$lo" -le "$want" -a "$want" -le "$hi"
    check "estimate count 14 $args: a rate" grep -Eq '"nodes_per_s":[0-9.e+]+,' "$tmp/estj"
done
check "a sample of 60 shards says so" grep -q '"nodes_method":"sampled shards","node_sample":60,' "$tmp/estj"

exit $fail
