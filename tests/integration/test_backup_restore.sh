#!/usr/bin/env bash
# A backup restores: `nq backup` copies the DB and the solution files its rows name (a solve of
# N > 100,000 keeps its answer in DB.solutions/, which a copy of the DB alone lost), and a copy
# moved under another name still finds them. `nq check` verifies every stored solution against
# its hash and names the one that is missing or damaged.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=100003                                # above NQ_SOL_INLINE_MAX: stored in a file

"$NQ" run solve "$N" --db a.db >out 2>&1 || fail "nq run solve $N: $(cat out)"
"$NQ" run solve 8 --db a.db >out 2>&1 || fail "nq run solve 8: $(cat out)"
ls a.db.solutions/*.nqsol >/dev/null 2>&1 || fail "no solution file beside a.db: $(ls)"
"$NQ" check --db a.db >out 2>&1 || fail "check of a good store: $(cat out)"
grep -q "2 stored solution(s) match their hashes (1 in files)" out || fail "check said: $(cat out)"
ok "nq check verifies both solutions: $(tail -1 out)"

"$NQ" backup --db a.db copy.db >out 2>&1 || fail "backup: $(cat out)"
grep -q "copy.db.solutions/: 1 solution file(s)" out || fail "backup said: $(cat out)"
ls copy.db.solutions.* >/dev/null 2>&1 && fail "a temporary folder stayed: $(ls)"
mkdir elsewhere && mv copy.db copy.db.solutions elsewhere/ && rm -rf a.db a.db.solutions a.db-*
"$NQ" check --db elsewhere/copy.db >out 2>&1 || fail "check of the copy: $(cat out)"
"$NQ" result 1 --db elsewhere/copy.db --out sol.txt >out 2>&1 || fail "result from the copy: $(cat out)"
[ "$(wc -l <sol.txt)" = "$N" ] || fail "the restored solution has $(wc -l <sol.txt) rows"
"$NQ" verify sol.txt >out 2>&1 || fail "the restored solution does not verify: $(cat out)"
ok "a backup, moved away from the original, gives the solution back ($N rows, verified)"

mv elsewhere/copy.db restored.db && mv elsewhere/copy.db.solutions restored.db.solutions
"$NQ" result 1 --db restored.db --out sol2.txt >out 2>&1 && cmp -s sol.txt sol2.txt ||
    fail "a backup renamed with its folder: $(cat out)"
ok "restored under another name (DB and its folder renamed together): the same solution"

"$NQ" backup --db restored.db copy2.db >/dev/null 2>&1 || fail "second backup"
"$NQ" backup --db restored.db copy2.db >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q "exists" out || fail "backup over a backup: exit $rc: $(cat out)"
rm copy2.db
"$NQ" backup --db restored.db copy2.db >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q "copy2.db.solutions exists" out || fail "backup over a solutions folder: exit $rc: $(cat out)"
ok "a backup never writes into an existing copy's files"

f=$(ls restored.db.solutions/*.nqsol)
cp "$f" keep.nqsol
printf '\x01' | dd of="$f" bs=1 seek=20 conv=notrunc 2>/dev/null
"$NQ" check --db restored.db >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job 1: solution [0-9a-f]*: damaged" out || fail "a damaged file: exit $rc: $(cat out)"
ok "a damaged solution file: exit 1, $(grep damaged out | cut -c1-120)"
rm "$f"
"$NQ" check --db restored.db >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job 1: solution [0-9a-f]*: missing: .*$(basename "$f")" out ||
    fail "a missing file: exit $rc: $(cat out)"
"$NQ" backup --db restored.db copy3.db >out 2>&1; rc=$?
[ $rc = 3 ] && ! ls copy3.db* >/dev/null 2>&1 || fail "a backup of a store missing a file: exit $rc: $(cat out); $(ls)"
ok "a missing solution file: check names it (exit 1); a backup refuses and leaves nothing"
