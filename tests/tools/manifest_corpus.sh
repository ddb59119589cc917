#!/usr/bin/env bash
# Writes the manifest seed corpus (tests/fuzz/corpus/manifest/, described in tests/fuzz/README.md):
# real manifests of count 1, 5 and 8 from `nq run` and `nq export --manifest`, and edits of them
# made consistent by tests/tools/manifest_edit.py up to the one check each must trip.
#   tests/tools/manifest_corpus.sh NQ_BINARY
# Run it after a change to the manifest or shard format; test_manifest replays what it writes.
set -euo pipefail
NQ=$(realpath "$1")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$SRC/tests/fuzz/corpus/manifest
ED="python3 $SRC/tests/tools/manifest_edit.py"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

real() {   # real NAME N [DEPTH]
    "$NQ" run count "$2" ${3:+--depth "$3"} --db "$W/$1.db" --workers 1 >"$W/out" 2>&1 ||
        { cat "$W/out"; exit 1; }
    "$NQ" export 1 --db "$W/$1.db" --manifest "$OUT/$1" >"$W/out" 2>&1 || { cat "$W/out"; exit 1; }
}
field() { sed -n "$(($2 + 2))p" "$1" | cut -d' ' -f"$3"; }   # field FILE SHARD COLUMN
first_counted() { awk 'NR > 1 && $3 > 0 { print $1; exit }' "$1"; }   # a shard with solutions

rm -f "$OUT"/ok-* "$OUT"/bad-*
real ok-n1 1
real ok-n5 5 1
real ok-n8 8 1

# every third line carries the fast GPU kernel's own nodes, which the header does not sum
cp "$OUT/ok-n8" "$W/v"
for i in $(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $1 % 3 == 1 { print $1 }' "$OUT/ok-n8"); do
    $ED edit "$W/v" "$W/v" "$i" nodes $(($(field "$W/v" "$i" 5) * 3 + 1)) nodes_kind 1 --header --reroot
done
cp "$W/v" "$OUT/ok-fast"
# every fourth line decided by a tail copy: the mark is part of the line, so of the root
cp "$OUT/ok-n8" "$W/c"
for i in $(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $1 % 4 == 2 { print $1 }' "$OUT/ok-n8"); do
    $ED edit "$W/c" "$W/c" "$i" by_copy 1 --reroot
done
cp "$W/c" "$OUT/ok-copy"

n5=$OUT/ok-n5 n8=$OUT/ok-n8 fast=$OUT/ok-fast c8=$OUT/ok-copy
s8=$(first_counted "$n8") s5=$(first_counted "$n5") s3=$(first_counted "$fast")
# a total no count of its shard gives (8 more: its weights' multiple), residues and sums agreeing
$ED edit "$n8" "$OUT/bad-bounds" "$s8" total $(($(field "$n8" "$s8" 3) + 8)) --residues --header --reroot
$ED edit "$fast" "$OUT/bad-fast-total" "$s3" total $(($(field "$fast" "$s3" 3) + 8)) \
    --residues --header --reroot
sed '1s/shards=[0-9]*/shards=268435456/' "$n8" >"$OUT/bad-claim-2e28"
$ED edit "$n8" "$OUT/bad-descriptor" 3 spec "$(field "$n8" 5 2)" --reroot      # another shard's
head -1 "$n5" >"$OUT/bad-header-only"
head -c -20 "$n5" >"$OUT/bad-no-newline"
{ head -1 "$n5"; printf '0 %s 0 0 0 0 0 w 0\n' "$(printf 'a%.0s' $(seq 1 1024))"; } >"$OUT/bad-overlong"
$ED edit "$n5" "$OUT/bad-residue" "$s5" res13 $((($(field "$n5" "$s5" 6) + 1) % 13)) --reroot
sed '$s/^\(root .\{10\}\)./\1G/' "$n5" >"$OUT/bad-root-hex"
$ED edit "$n5" "$OUT/bad-root-stale" "$s5" nodes $(($(field "$n5" "$s5" 5) + 1))
sed '$s/^root \(.*\)/root \U\1/' "$n5" >"$OUT/bad-root-upper"
# 195 more: the same residues mod 13 and 15, so only the header's sum can tell
$ED edit "$n5" "$OUT/bad-sum" "$s5" total $(($(field "$n5" "$s5" 3) + 195)) --reroot
head -3 "$n5" >"$OUT/bad-truncated"
# a copy mark cleared and one set, the root left as it was
$ED edit "$c8" "$W/c" 2 by_copy 0
$ED edit "$W/c" "$OUT/bad-copy-flipped" 3 by_copy 1
# the same lines under the version before the copy mark
sed '1s/^nq-manifest 4 /nq-manifest 3 /; 2,$s/ [01]$//' "$n5" >"$OUT/bad-version-3"
# a header whose nodes add the fast lines' too
nodes=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ { s += $5 } END { print s }' "$fast")
sed "1s/nodes=[0-9]*/nodes=$nodes/" "$fast" >"$W/h"
$ED edit "$W/h" "$OUT/bad-sum-fast-nodes" 0 total "$(field "$W/h" 0 3)" --reroot
ls "$OUT"
