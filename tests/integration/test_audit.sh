#!/usr/bin/env bash
# Manifests and nq audit, from the outside: a done count job's manifest, its root
# kept by the store and shown by nq result and equal to the root an independent hasher
# (tests/tools/manifest_edit.py, hashlib.blake2b) computes; nq audit passes it; then forged
# manifests, each made consistent with one more check than the last, are each caught by the
# check that remains; hostile bytes are refused with line numbers; exit codes 0/1/2/3.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
ED="python3 $SRC/tests/tools/manifest_edit.py"

"$NQ" run count 10 --db a.db --workers 2 >out 2>&1 || fail "nq run count 10: $(cat out)"
"$NQ" export 1 --db a.db --manifest m.txt >out 2>&1 || fail "export --manifest: $(cat out)"
shards=$(sql a.db "SELECT shards_total FROM jobs WHERE id = 1")
encoding=$(sql a.db "SELECT encoding FROM jobs WHERE id = 1")   # the job's, whatever is current
[ "$(wc -l <m.txt)" = $((shards + 2)) ] || fail "manifest has $(wc -l <m.txt) lines for $shards shards"
head -1 m.txt | grep -qx "nq-manifest 4 count n=10 depth=[0-9]* encoding=$encoding shards=$shards total=$(oeis_total 10) unique=92 nodes=[0-9]*" \
    || fail "header: $(head -1 m.txt)"
root=$(tail -1 m.txt | sed -n 's/^root \([0-9a-f]\{64\}\)$/\1/p')
[ -n "$root" ] || fail "root line: $(tail -1 m.txt)"
[ "$($ED root m.txt)" = "$root" ] || fail "an independent hasher gets $($ED root m.txt), the file says $root"
grep -q "root $root" out || fail "export did not print the root: $(cat out)"
"$NQ" result 1 --db a.db >out 2>&1 || fail "result: $(cat out)"
grep -q "manifest  root $root" out || fail "nq result does not show the root: $(cat out)"
[ "$(sql a.db "SELECT root FROM manifests WHERE job = 1")" = "$root" ] || fail "the store does not keep the root"
ok "export: $shards shard lines, root $root, kept in the store, shown by nq result, equal to hashlib's"

"$NQ" audit m.txt --sample 20 --seed 1 --threads 2 >out 2>&1 || fail "audit of a good manifest: $(cat out)"
[ "$(grep -c ': agrees' out)" = 20 ] && grep -q "^audit: OK: N=10, $shards shards, total $(oeis_total 10)" out \
    || fail "audit said: $(cat out)"
"$NQ" audit m.txt --sample 20 --seed 1 --threads 1 >out2 2>&1
[ "$(grep agrees out)" = "$(grep agrees out2)" ] || fail "the same seed drew other shards"
"$NQ" audit m.txt --shards 0-$((shards - 1)) >out 2>&1 || fail "audit of every shard: $(cat out)"
ok "audit: 20 sampled shards agree (the same 20 for the same seed, any threads); every shard agrees"

# What a sample proves: 20 lines catch 20.6 % wrong with probability 0.99; --catch 50% draws 7.
"$NQ" audit m.txt --sample 20 --seed 1 >out 2>&1 || fail "audit: $(cat out)"
grep -q "^audit: power: a manifest with 20.6 % of its lines wrong would fail this audit with probability 0.99 at --sample 20" out \
    || fail "no power line for --sample 20: $(cat out)"
"$NQ" audit m.txt --catch 50% --seed 1 >out 2>&1 || fail "audit --catch: $(cat out)"
[ "$(grep -c ': agrees' out)" = 7 ] && grep -q "48.2 % of its lines wrong .* at --sample 7 " out \
    || fail "--catch 50% did not draw 7 lines: $(cat out)"
"$NQ" audit m.txt --catch 0.5 --seed 1 >out2 2>&1 && [ "$(grep agrees out)" = "$(grep agrees out2)" ] \
    || fail "--catch 0.5 and --catch 50% drew differently"
"$NQ" audit m.txt --catch 1% >out 2>&1 || fail "audit --catch 1%: $(cat out)"
grep -q "every line is counted again" out || fail "--catch 1% of $shards lines (459 > $shards): $(cat out)"
for bad in 0 0% 100% 1 abc -1% 1%% nan 5e-1x ''; do
    "$NQ" audit m.txt --catch "$bad" >out 2>&1; rc=$?
    [ $rc = 2 ] && grep -q -- "--catch" out || fail "--catch '$bad': exit $rc, $(cat out)"
done
"$NQ" audit m.txt --catch 1% --sample 5 >out 2>&1; [ $? = 2 ] || fail "--catch with --sample accepted"
ok "audit prints the share of wrong lines its sample catches at 0.99; --catch P% draws for it; bad ones refused"

# Shards a tail copy decided (shards.by_copy, set here as broker/results.c stores it) are marked in
# the manifest, under its root, and nq audit counts them before its draw, chosen for the mark: all
# of them when its budget (the sample's size, per mark) allows, and it says when it does not.
cp a.db c.db
sqlite3 c.db "UPDATE shards SET by_copy = 1 WHERE job = 1 AND idx IN (2, 5, 7)"
"$NQ" export 1 --db c.db --manifest c.txt >out 2>&1 || fail "export of a job with copies: $(cat out)"
marks=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $12 == 1 { printf "%s ", $1 }' c.txt)
[ "$marks" = "2 5 7 " ] || fail "the manifest marks shards '$marks' as decided by a copy, not '2 5 7 '"
[ "$(tail -1 c.txt)" != "$(tail -1 m.txt)" ] && [ "root $($ED root c.txt)" = "$(tail -1 c.txt)" ] \
    || fail "the copy marks are not under the root"
miss_seed() {   # a seed whose draw of $1 lines takes none of the marked shards
    for s in $(seq 1 100); do
        "$NQ" audit m.txt --sample "$1" --seed "$s" | grep -q '^shard [257]: agrees' || { echo "$s"; return; }
    done
}
s3=$(miss_seed 3) s2=$(miss_seed 2)
[ -n "$s3" ] && [ -n "$s2" ] || fail "no seed of 1..100 draws around shards 2, 5 and 7"
"$NQ" audit c.txt --sample 3 --seed "$s3" >out 2>&1 || fail "audit of a true manifest with copies: $(cat out)"
[ "$(sed -n 's/^shard \([0-9]*\): agrees.*/\1/p' out | head -3 | tr '\n' ' ')" = "2 5 7 " ] \
    && [ "$(grep -c '^shard [257]: agrees (.*) (decided by a copy)$' out)" = 3 ] \
    || fail "the copies' shards were not counted first, named for their mark: $(cat out)"
grep -q "^audit: copies: all 3 line(s) decided by a tail copy without its holder are counted again: 3 first, chosen because a copy decided them, 0 drawn in the sample$" out \
    && grep -q "^audit: power: .* at --sample 3 (.*); the 3 marked line(s) counted first are not part of the draw" out \
    && grep -q "(3 drawn with seed $s3, 3 decided by a copy) counted again, all agree" out \
    || fail "the audit does not say what it counted for the copies: $(cat out)"
"$NQ" audit c.txt --sample 2 --seed "$s2" >out 2>&1 || fail "audit with a budget of 2: $(cat out)"
grep -q "^audit: copies: 2 of the 3 line(s) decided by a tail copy without its holder are counted first, chosen because a copy decided them (at random among them: at most 2 of each mark, the sample's size), 0 drawn in the sample, 1 not counted again$" out \
    && [ "$(grep -c ': agrees (.*) (decided by a copy)$' out)" = 2 ] || fail "a budget of 2 for 3 copies: $(cat out)"
# a line forged within every bound (one more solution of weight 8, residues, sums and root made
# to match) where a copy decided it: found by the mark though the draw misses it; unmarked, not
x=
for d in 2 5 7; do
    read -r _ _ t u n _ <<<"$(sed -n "$((d + 2))p" c.txt)"
    $ED edit c.txt fc.txt "$d" total $((t + 8)) unique $((u + 1)) nodes $((n + 9)) --residues --header --reroot
    "$NQ" audit fc.txt --sample 0 >out 2>&1 && { x=$d; break; }
done
[ -n "$x" ] || fail "no marked shard could be forged within its bounds"
"$NQ" audit fc.txt --sample 3 --seed "$s3" >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line $((x + 2)): shard $x: DISAGREES: .* (decided by a copy)$" out \
    || fail "a forged line a copy decided was not found: exit $rc: $(cat out)"
$ED edit fc.txt fu.txt "$x" by_copy 0 --reroot
"$NQ" audit fu.txt --sample 3 --seed "$s3" >out 2>&1 || fail "unmarked, the draw of seed $s3 was to miss shard $x: $(cat out)"
ok "copies' shards (2, 5, 7) marked under the root, counted first (all at --sample 3, 2 of 3 at --sample 2), a forgery on one found"

# Shard 1 of N=10 depth 1 has a total; +195 keeps both residues (195 = 13 * 15).
t1=$(sed -n 3p m.txt | cut -d' ' -f3)
forged=$((t1 + 195))
$ED edit m.txt f1.txt 1 total $forged
"$NQ" audit f1.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "root: the lines hash to" out || fail "a changed subtotal under the old root: exit $rc: $(cat out)"
ok "a changed subtotal, root left: exit 1, $(grep 'root:' out | cut -c1-60)..."

$ED edit m.txt f2.txt 1 total $forged --reroot
"$NQ" audit f2.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "header: total=$(oeis_total 10), but the shard lines sum to $(($(oeis_total 10) + 195))" out \
    && ! grep -q "root:" out || fail "re-rooted, header left: exit $rc: $(cat out)"
ok "the same with the root recomputed: the sum check catches it"

$ED edit m.txt f3.txt 1 total $forged --header --reroot
"$NQ" audit f3.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line 3: shard 1: no count of it gives this: total $forged" out || fail "header and root made consistent, unique and nodes left: exit $rc: $(cat out)"
"$NQ" audit f3.txt --sample 1 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line 3: shard 1: DISAGREES: the manifest says total $forged" out \
    || fail "the refuted shard is not the one counted again: exit $rc: $(cat out)"
ok "header and root made consistent too: no count of shard 1 gives its numbers, and it is counted first"

# The same forgery with unique and nodes raised to match (8 x 195 keeps both residues): every
# check that needs no count passes, and only counting shard 1 catches it.
u1=$(sed -n 3p m.txt | cut -d' ' -f4); x1=$(sed -n 3p m.txt | cut -d' ' -f5)
forged=$((t1 + 8 * 195))
$ED edit m.txt f3b.txt 1 total $forged unique $((u1 + 195)) nodes $((x1 + 8 * 195)) --header --reroot
"$NQ" audit f3b.txt --shards 2-9 >out 2>&1 || fail "a consistent forgery away from the counted shards should pass: $(cat out)"
"$NQ" audit f3b.txt --shards 1-1 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line 3: shard 1: DISAGREES: the manifest says total $forged" out \
    || fail "a consistent forgery of shard 1, counted: exit $rc: $(cat out)"
hit=
for seed in 1 2 3 4 5 6 7 8; do
    "$NQ" audit f3b.txt --sample 20 --seed $seed >out 2>&1 && continue
    grep -q "shard 1: DISAGREES" out && hit=$seed && break
done
[ -n "$hit" ] || fail "20 of $shards shards with 8 seeds never drew shard 1"
ok "unique and nodes forged to match: only counting shard 1 catches it (--shards 1-1, --sample 20 --seed $hit)"

$ED edit m.txt f4.txt 4 res13 $(( ($(sed -n 6p m.txt | cut -d' ' -f6) + 1) % 13 )) --reroot
"$NQ" audit f4.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line 6: shard 4: residues .* disagree with total" out || fail "a changed residue: exit $rc: $(cat out)"
$ED edit m.txt f5.txt 5 spec "$(sed -n 8p m.txt | cut -d' ' -f2)" --reroot
"$NQ" audit f5.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line 7: shard 5: the descriptor is not shard 5 of the job's list" out \
    || fail "shard 6's descriptor on shard 5's line: exit $rc: $(cat out)"
ok "a residue or a descriptor changed (re-rooted): named by line and shard"

bad() {   # bad NAME EXPECTED-RC PATTERN: audit of NAME must exit so, saying PATTERN
    "$NQ" audit "$1" --sample 3 >out 2>&1; local rc=$?
    [ $rc = "$2" ] && grep -q "$3" out || fail "$1: exit $rc (want $2, '$3'): $(cat out)"
}
head -n 40 m.txt >trunc.txt;                      bad trunc.txt 1 "line 41: the file ends where a shard line should be"
head -n 10 m.txt >short10.txt;  bad short10.txt 1 "line 1: shards=$shards, but the [0-9]* bytes after it hold [0-9]* shard lines at most"
head -c -30 m.txt >cut.txt;                        bad cut.txt 1 "the last line has no newline"
sed -E '5s/ 0([0-9])01/ 0\1A1/' m.txt >hex.txt; bad hex.txt 1 "line 5: the descriptor has a character that is not lowercase hex"
sed '6s/^\([0-9]*\) \([0-9a-f]*\) \([0-9]*\)/\1 \2 1x\3/' m.txt >digit.txt; bad digit.txt 1 "line 6: total is not a decimal"
sed '4{h;d};5{G}' m.txt >order.txt;               bad order.txt 1 "line 4: shard 3 where shard 2 should be"
sed '7s/^\([0-9]*\) \([0-9a-f]*\) /\1 \2 0/' m.txt >zero.txt; bad zero.txt 1 "line 7: total is not a decimal number from 0 to [0-9]* without leading zeros"
sed '8s/ /  /' m.txt >space.txt;                   bad space.txt 1 "line 8: empty field"
printf 'x\0y\n' >nul.txt;                           bad nul.txt 1 "line 1: control byte 0x00"
{ cat m.txt; echo extra; } >after.txt;             bad after.txt 1 "text after the root line"
head -c 5000 /dev/zero | tr '\0' 7 >long.txt; echo >>long.txt; bad long.txt 1 "line 1: longer than"
sed '1s/count/solve/' m.txt >solve.txt;            bad solve.txt 1 "manifest: count jobs only"
sed '1s/shards=[0-9]*/shards=7/' m.txt >nshards.txt
bad nshards.txt 1 "line 9: a shard line where the root line should be, after the header's shards=7"
sed "1s/shards=[0-9]*/shards=$((shards + 1))/" m.txt >mshards.txt
bad mshards.txt 1 "line $((shards + 2)): the root line comes after $shards of $((shards + 1)) shard lines"
# lines of the right form but a header whose list is shorter, or is one whose search never ends
# (it ran for minutes): refused once the lines are read, by the list's length or its cost
{ sed '1s/shards=[0-9]*/shards=7/' m.txt | head -8; tail -1 m.txt; } >short.txt
bad short.txt 1 "line 1: shards=7, but no list of n=10 .* has that many: more than 7 shards"
{ sed "1s/shards=[0-9]*/shards=$((shards + 1))/" m.txt | head -n $((shards + 1)); echo "$shards 00 0 0 0 0 0 - 0 0 0 0"
  tail -1 m.txt; } >lshards.txt
bad lshards.txt 1 "line 1: shards=$((shards + 1)), but the list of n=10 .* has $shards$"
printf '%s\n%s\n%s\n' "nq-manifest 4 count n=32 depth=30 encoding=5 shards=1 total=0 unique=0 nodes=0" \
    "0 00 0 0 0 0 0 - 0 0 0 0" "$(tail -1 m.txt)" >deep.txt
bad deep.txt 1 "line 1: shards=1, but no list of n=32 depth=30 encoding=5 has that many: listing takes"
: >empty.txt;                                       bad empty.txt 1 "line 1: the file ends where the header should be"
bad missing.txt 3 "missing.txt"
ok "truncated, bad hex, non-digits, out of order, leading zero, two spaces, NUL, trailing text, long line, other kind, wrong count either way, a list too short or too dear to search, empty: exit 1 with the line; missing file: exit 3"

for args in "" "m.txt --shards 5-2" "m.txt --sample x" "m.txt --shards 1-2 --sample 3" "m.txt --shards 0-$shards" \
            "m.txt m.txt" "m.txt --bogus" "m.txt --threads 0"; do
    "$NQ" audit $args >out 2>&1; rc=$?
    [ $rc = 2 ] || fail "nq audit $args: exit $rc (want 2): $(cat out)"
done
ok "bad arguments: exit 2"

"$NQ" export 1 --manifest x.txt >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q -- "--db" out || fail "--manifest without --db: exit $rc: $(cat out)"
"$NQ" export 1 --db nosuch.db --manifest x.txt >out 2>&1; rc=$?
[ $rc = 3 ] && [ ! -e nosuch.db ] || fail "a missing DB: exit $rc, or it was created: $(cat out)"
cp a.db b.db
sqlite3 b.db "UPDATE shards SET state = 'failed' WHERE job = 1 AND idx = 3"
"$NQ" export 1 --db b.db --manifest x.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job not done: shard 3 is failed" out && [ ! -e x.txt ] || fail "a shard not done: exit $rc: $(cat out)"
sqlite3 b.db "DELETE FROM shards WHERE job = 1 AND idx = 3"
"$NQ" export 1 --db b.db --manifest x.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job not done: shard 3 has no row" out || fail "a shard without a row: exit $rc: $(cat out)"
sqlite3 b.db "UPDATE jobs SET state = 'running' WHERE id = 1"
"$NQ" export 1 --db b.db --manifest x.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job not done: job 1 is running" out || fail "a running job: exit $rc: $(cat out)"
ls x.txt* >/dev/null 2>&1 && fail "a refused export left a file: $(ls x.txt*)"
"$NQ" run solve 8 --db s.db --workers 1 >out 2>&1 || fail "nq run solve 8: $(cat out)"
"$NQ" export 1 --db s.db --manifest x.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "manifest: count jobs only" out || fail "a solve job: exit $rc: $(cat out)"
ok "export refuses: no --db (2), missing DB (3, not created), a shard not done or missing, a running job, a solve job (1, no file)"

"$NQ" export 1 --db a.db --manifest m2.txt >out 2>&1 && cmp -s m.txt m2.txt || fail "a second export differs: $(cat out)"
ok "a second export of the same store is byte for byte the same"
