#!/usr/bin/env bash
# Forged manifests that nq audit once passed or ran away on, and output files that failed commands
# once left behind; each case fails on the code before its fix:
#   - a manifest of N=11 whose shard 0 claims 197,680 (residues, header and root made to match)
#     passed nq audit with its default sample and with another seed: the seed was always 1, so
#     a forger knew which shards were safe, and nothing checked numbers that no count gives;
#   - a 72-byte header that claims 2^28 shards set nq audit listing them (44 s, 3 GB) before it
#     read a line: now a file's size, and a pipe's lines, back a claim before it costs anything;
#   - a command that failed left its output file behind (export --manifest beside a broker that
#     held the DB's write lock, a backup that ran out of room, result --out with a board too big).
# And the checks that need no recount never refuse an honest manifest (N=4..12, several depths).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
ED="python3 $SRC/tests/tools/manifest_edit.py"

"$NQ" run count 11 --db a.db --workers 2 >out 2>&1 || fail "nq run count 11: $(cat out)"
"$NQ" export 1 --db a.db --manifest m.txt >out 2>&1 || fail "export --manifest: $(cat out)"
shards=$(sql a.db "SELECT shards_total FROM jobs WHERE id = 1")

$ED edit m.txt f.txt 0 total 197680 --residues --header --reroot
for args in "" "--seed 2"; do
    "$NQ" audit f.txt $args >out 2>&1; rc=$?
    [ $rc = 1 ] && grep -q "^line 2: shard 0: no count of it gives this: total 197680 is not 8 x unique" out \
        && grep -q "^line 1: header: total=[0-9]* is more than 8 x unique=341" out \
        && grep -q "^line 2: shard 0: DISAGREES: the manifest says total 197680" out \
        || fail "shard 0 forged to 197680, nq audit f.txt $args: exit $rc: $(cat out)"
done
"$NQ" audit f.txt --sample 0 >out 2>&1; rc=$?
[ $rc = 1 ] && ! grep -q "DISAGREES\|agrees" out || fail "the same with nothing counted again: exit $rc: $(cat out)"
ok "shard 0 forged to 197680: refuted without a recount (exit 1 even with --sample 0), then counted first"

# The shard line's numbers changed by hand (the root left: each bound's own line is what counts).
forge() {   # forge TOTAL UNIQUE NODES PATTERN: shard 0 so, audit names PATTERN on line 2
    awk -v t="$1" -v u="$2" -v x="$3" 'NR == 2 { $3 = t; $4 = u; $5 = x; $6 = t % 13; $7 = t % 15 } { print }' \
        m.txt >g.txt
    "$NQ" audit g.txt --sample 0 >out 2>&1; local rc=$?
    [ $rc = 1 ] && grep -q "^line 2: shard 0: no count of it gives this: $4" out \
        || fail "shard 0 as total $1 unique $2 nodes $3: exit $rc (want 1, '$4'): $(cat out)"
}
forge 197680 24710 135 "nodes 135 are fewer than the 24718 that 24710 solutions in 9 free rows need"
forge 3200000 400000 100000000 "total 3200000 and unique 400000 need at least 400000 solutions, and its 9 free rows admit at most"
forge 0 0 1000000000000 "nodes 1000000000000 are more than the"
forge 16 1 135 "total 16 is not 8 x unique 1"
ok "a shard's numbers that no search of it gives, each named: too few nodes, too many solutions, too many nodes, total != 8 x unique"

# The seed: secure and random unless given, printed, and given back it draws the same shards.
"$NQ" audit m.txt >o1 2>&1 || fail "audit of a true manifest: $(cat o1)"
"$NQ" audit m.txt >o2 2>&1 || fail "audit of a true manifest: $(cat o2)"
s1=$(sed -n 's/.* drawn with seed \([0-9]*\) (--seed \1 draws the same)$/\1/p' o1)
s2=$(sed -n 's/.* drawn with seed \([0-9]*\) (--seed \1 draws the same)$/\1/p' o2)
[ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" != "$s2" ] || fail "the seed is not printed, or not drawn anew: '$s1' '$s2'"
"$NQ" audit m.txt --seed "$s1" >o3 2>&1 || fail "audit --seed $s1: $(cat o3)"
[ "$(grep agrees o1)" = "$(grep agrees o3)" ] && [ "$(grep -c agrees o1)" = 10 ] || fail "--seed $s1 drew other shards"
ok "two audits drew seeds $s1 and $s2, printed; --seed $s1 draws the same 10 shards again"

# Evidence marks do not buy a forger the draw's places. Seed 7 draws some shards of the true
# manifest; one of them is forged within every bound (one more solution of weight 8, the sums and
# the root made to match), and five lines the draw does not take are marked with evidence. The
# marked lines are counted on top of the draw, never instead of it: the forgery is found. (The
# code before counted the five marked lines in the draw's five places, and the audit passed.)
"$NQ" audit m.txt --seed 7 --sample 5 >o 2>&1 || fail "audit of a true manifest: $(cat o)"
drawn=$(sed -n 's/^shard \([0-9]*\): agrees.*/\1/p' o | sort -n)
[ "$(wc -l <<<"$drawn")" = 5 ] || fail "seed 7 did not draw 5 shards: $(cat o)"
x=
for d in $drawn; do
    line=$(sed -n "$((d + 2))p" m.txt)
    read -r _ _ t u n _ <<<"$line"
    $ED edit m.txt f5.txt "$d" total $((t + 8)) unique $((u + 1)) nodes $((n + 9)) --residues --header --reroot
    "$NQ" audit f5.txt --sample 0 >out 2>&1 && { x=$d; break; }
done
[ -n "$x" ] || fail "no drawn shard could be forged within its bounds"
marked=0
for i in $(seq 0 $((shards - 1))); do
    grep -qx "$i" <<<"$drawn" && continue
    $ED edit f5.txt f6.txt "$i" evidence 1 --reroot && mv f6.txt f5.txt
    marked=$((marked + 1))
    [ $marked = 5 ] && break
done
"$NQ" audit f5.txt --seed 7 --sample 5 >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^line $((x + 2)): shard $x: DISAGREES" out || fail "evidence marks hid the forgery: exit $rc: $(cat out)"
grep -q "0 of 0 line(s) refuted by the checks and 5 of 5 with evidence against a late result, on top of 5 drawn with seed 7" out \
    || fail "the audit does not count the kinds apart: $(cat out)"
[ "$(grep -c 'agrees (.*) (with evidence)$' out)" = 5 ] || fail "the marked lines were not counted on top: $(cat out)"
grep -q "(5 drawn with seed 7, 5 with evidence) counted again" out || fail "summary: $(tail -1 out)"
ok "a forged line among the drawn and evidence on 5 others: found, the marked lines counted on top of the draw"

# A header that claims 2^28 shards costs nothing until lines back it: a file's size refuses it at
# once; a pipe is read to its end first. (`timeout`: the code before took 44 s here.)
echo "nq-manifest 4 count n=18 depth=12 encoding=5 shards=268435456 total=0 unique=0 nodes=0" >h.txt
timeout 60 "$NQ" audit h.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "^h.txt: line 1: shards=268435456, but the 0 bytes after it hold 0 shard lines at most" out \
    || fail "a 72-byte header of 2^28 shards: exit $rc: $(cat out)"
timeout 60 "$NQ" audit /dev/stdin <h.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "line 1: shards=268435456, but the 0 bytes after it" out || fail "the same on stdin: exit $rc: $(cat out)"
cat h.txt | timeout 60 "$NQ" audit /dev/stdin >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "line 2: the file ends where a shard line should be" out || fail "the same through a pipe: exit $rc: $(cat out)"
sed '1s/shards=[0-9]*/shards=268435456/' m.txt >big.txt
timeout 60 "$NQ" audit big.txt >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "line 1: shards=268435456, but the [0-9]* bytes after it hold [0-9]* shard lines at most" out \
    || fail "a true manifest that claims 2^28 shards: exit $rc: $(cat out)"
cat big.txt | timeout 60 "$NQ" audit /dev/stdin >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "line $((shards + 2)): the root line comes after $shards of 268435456 shard lines" out \
    || fail "the same through a pipe: exit $rc: $(cat out)"
cat m.txt | "$NQ" audit /dev/stdin >out 2>&1 || fail "a true manifest through a pipe: $(cat out)"
ok "2^28 shards claimed by a header alone or by a true manifest's: refused by the file's size, or through a pipe by its lines"

# Honest manifests of N=4..12 at several depths: the checks without a recount find nothing.
for nd in "4 1" "4 2" "5 3" "6 4" "7 2" "7 5" "8 1" "8 6" "9 3" "9 7" "10 4" "10 8" "11 9" "12 3"; do
    set -- $nd
    "$NQ" run count "$1" --depth "$2" --db "h$1-$2.db" --workers 2 >out 2>&1 || fail "nq run count $1 --depth $2: $(cat out)"
    "$NQ" export 1 --db "h$1-$2.db" --manifest "h$1-$2.txt" >out 2>&1 || fail "export of N=$1 depth $2: $(cat out)"
    "$NQ" audit "h$1-$2.txt" --sample 3 >out 2>&1 && ! grep -q "^line " out \
        || fail "an honest manifest of N=$1 depth $2 refused: $(cat out)"
done
ok "honest manifests of N=4..12 at depths 1 to N-2: no problem"

# Export beside a broker that holds the DB's write lock: the root cannot be kept, exit 3, no file.
start locker python3 -c "
import sqlite3, time
c = sqlite3.connect('a.db', isolation_level=None)
c.execute('BEGIN IMMEDIATE')
print('locked', flush=True)
time.sleep(120)"
wait_for 30 grep -q locked "$T/locker.log" || fail "the lock was not taken: $(cat "$T/locker.log")"
"$NQ" export 1 --db a.db --manifest held.txt >out 2>&1; rc=$?
kill "$LAST_PID"
[ $rc = 3 ] && grep -q "keeping the manifest's root: database is locked" out || fail "export under a held lock: exit $rc: $(cat out)"
ls held.txt* >/dev/null 2>&1 && fail "a failed export left $(ls held.txt*)"
ok "export while the DB's write lock is held: exit 3, $(cut -c1-80 out)..., and no file"

# A backup that runs out of room (a file size limit; SIGXFSZ ignored, so writes fail with EFBIG).
bash -c 'trap "" XFSZ; ulimit -f 64; exec "$0" backup --db a.db copy.db' "$NQ" >out 2>&1; rc=$?
[ $rc = 3 ] || fail "a backup past the size limit: exit $rc: $(cat out)"
ls copy.db* >/dev/null 2>&1 && fail "a failed backup left $(ls copy.db*)"
"$NQ" backup --db a.db copy.db >out 2>&1 && "$NQ" check --db copy.db >/dev/null || fail "backup: $(cat out)"
ok "a backup that fails leaves nothing; one that succeeds checks"

# result --out with --board past 64 columns: refused (exit 2) before the file is written.
"$NQ" run solve 100 --db s.db --workers 1 >out 2>&1 || fail "nq run solve 100: $(cat out)"
"$NQ" result 1 --db s.db --out sol.txt --board >out 2>&1; rc=$?
[ $rc = 2 ] && [ ! -e sol.txt ] || fail "result --out --board at N=100: exit $rc, file: $(ls sol.txt* 2>&1)"
"$NQ" result 1 --db s.db --board >out 2>err; rc=$?
[ $rc = 2 ] && [ ! -s out ] && grep -q "up to N=64" err || fail "result --board at N=100: exit $rc, printed $(wc -c <out) bytes: $(cat err)"
"$NQ" result 1 --db s.db --out sol.txt >out 2>&1 && "$NQ" verify sol.txt >/dev/null || fail "result --out: $(cat out)"
ok "result --board at N=100: exit 2 before anything is printed; --out with it: no file; without --board the file verifies"
