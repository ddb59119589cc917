#!/usr/bin/env bash
# The store at campaign scale, from the outside: a count job keeps its
# counts and 128-bit sums in its own row and shard rows only for shards that were
# leased; `nq check` recomputes every aggregate from the rows (and catches a
# changed sum, a changed residue, a damaged page); `nq backup` copies the store
# while the broker writes, and the copy checks. Bad arguments: exit 2, nothing written.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

"$NQ" run count 11 --db a.db --workers 2 >out 2>&1 || fail "nq run count 11: $(cat out)"
grep -q "$(grouped "$(oeis_total 11)")" out || fail "wrong count: $(cat out)"
total=$(sql a.db "SELECT count(*) FROM shards")
[ "$(sql a.db "SELECT shards_total FROM jobs")" = "$total" ] || fail "a finished job lacks shard rows"
"$NQ" check --db a.db >out 2>&1 || fail "check of a good store: $(cat out)"
grep -q "job 1: ok ($(grouped "$total") done shards, total $(grouped "$(oeis_total 11)"))" out || fail "check said: $(cat out)"
ok "nq check on a finished job: $(cat out)"
cp a.db kinds.db
"$NQ" run solve 8 --restarts 20 --all --db kinds.db >/dev/null 2>&1 && "$NQ" run enumerate 8 --db kinds.db >/dev/null 2>&1 ||
    fail "solve and enumerate jobs"
"$NQ" check --db kinds.db >out 2>&1 || fail "check of a store with solve and enumerate jobs: exit $?: $(cat out)"
[ "$(grep -c ': ok (' out)" = 3 ] || fail "check said: $(cat out)"
ok "nq check on count, solve and enumerate jobs: 3 ok (only a count's shards have residues)"

cp a.db b.db
sqlite3 b.db "UPDATE jobs SET total_lo = total_lo + 1"
"$NQ" check --db b.db >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "job 1: total: job row" out || fail "a changed sum: exit $rc: $(cat out)"
ok "a changed sum in the job row: exit 1, $(head -1 out)"
cp a.db c.db
sqlite3 c.db "UPDATE shards SET res13 = (res13 + 1) % 13 WHERE idx = 3"
"$NQ" check --db c.db >out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "1 done shard(s) whose residues disagree" out || fail "a changed residue: exit $rc: $(cat out)"
ok "a changed residue in a shard row: nq check counts it"
sqlite3 c.db "UPDATE jobs SET res13_sum = res13_sum + 1"
"$NQ" result 1 --db c.db >out2 2>&1
grep -q "DISAGREES" out2 || fail "nq result does not see the residue sum disagree: $(cat out2)"
ok "a job row whose residue sum disagrees with its total: nq result says so (O(1))"
cp a.db d.db
page=$(sql d.db "SELECT rootpage FROM sqlite_schema WHERE name = 'shards'")
psize=$(sql d.db "PRAGMA page_size")
# the shards table's root page: its b-tree header (type, cell count, offsets) becomes garbage
printf '\x0d\xff\xff\xff\xff\xff\xff\xff' | dd of=d.db bs=1 seek=$(((page - 1) * psize)) conv=notrunc 2>/dev/null
"$NQ" check --db d.db >out 2>&1; rc=$?
[ $rc = 1 ] || [ $rc = 3 ] || fail "a damaged page: exit $rc: $(cat out)"
ok "a damaged page: exit $rc: $(head -c 200 out)"

"$NQ" check --db missing.db >out 2>&1; rc=$?
[ $rc = 3 ] || fail "missing store: exit $rc: $(cat out)"
"$NQ" check 7 --db a.db >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q "no job 7" out || fail "unknown job: exit $rc: $(cat out)"
"$NQ" check >out 2>&1; rc=$?
[ $rc = 2 ] || fail "no --db: exit $rc"
"$NQ" backup --db a.db b.db >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q "exists" out || fail "backup over a file: exit $rc: $(cat out)"
ok "bad arguments: exit 2 or 3 with a reason, nothing written"

# a job running: its pending shards have no rows; a backup while the broker writes
start_broker e.db
n=$(long_count_n)
"$NQ" submit count "$n" --depth 3 >/dev/null || fail "submit"
rows=$(sql e.db "SELECT count(*) FROM shards")
[ "$rows" = 0 ] || fail "a submit wrote $rows shard rows"
start_worker w1 --threads 1
progressed() { [ "$(job_field 1 shards_done)" -gt 10 ]; }
wait_for 30 progressed || fail "no progress"
"$NQ" backup --db e.db e-copy.db >out 2>&1 || fail "backup while running: $(cat out)"
"$NQ" check --db e-copy.db >out 2>&1 || fail "the backup does not check: $(cat out)"
[ "$(sql e-copy.db "SELECT count(*) FROM shards")" -lt "$(sql e-copy.db "SELECT shards_total FROM jobs")" ] ||
    fail "every shard had a row mid-run"
ok "backup while the broker runs: $(cat out)"
