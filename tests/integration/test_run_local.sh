#!/usr/bin/env bash
# nq run: exact counts for N = 8..12, stored results on a second run (said so), --fresh,
# solve with verified output, enumerate with export, and refused arguments; a run that ends
# leaves its DB and nothing beside it; a job resumed is one local worker's.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

for n in 8 9 10 11 12; do
    out=$("$NQ" run count "$n" --db run.db --workers 2 --json) || fail "run count $n"
    total=$(echo "$out" | json_get total); unique=$(echo "$out" | json_get unique)
    [ "$total" = "$(oeis_total "$n")" ] || fail "N=$n total $total"
    [ "$unique" = "$(oeis_unique "$n")" ] || fail "N=$n unique $unique"
done
ok "run count 8..12 equals OEIS A000170 and A002562"
[ "$(ls -A)" = run.db ] || fail "nq run left files beside its DB: $(ls -A | tr '\n' ' ')"
ok "after each run only run.db is left (no -wal, -shm or .lock)"

id1=$("$NQ" run count 10 --db run.db --json | json_get id)
id2=$("$NQ" run count 10 --db run.db --json 2>err.txt | json_get id)
[ "$id1" = "$id2" ] || fail "second run made a new job ($id1 vs $id2)"
grep -q "nq run: job $id1 was done before: its stored result" err.txt || fail "the stored answer was not said to be stored: $(cat err.txt)"
[ "$(ls -A | grep -v '\.txt$')" = run.db ] || fail "a stored answer left files beside the DB: $(ls -A | tr '\n' ' ')"
id3=$("$NQ" run count 10 --db run.db --fresh --json | json_get id)
[ "$id3" != "$id1" ] || fail "--fresh did not recompute"
ok "re-running prints the stored job and says so; --fresh recomputes"

"$NQ" run solve 2000 --db run.db --restarts 3 >solve.txt || fail "run solve"
sid=$("$NQ" list --db run.db --json | grep -o '"id":[0-9]*,"kind":"solve"' | head -1 | grep -o '[0-9]*')
"$NQ" result "$sid" --db run.db --out sol.txt || fail "result --out"
"$NQ" verify sol.txt --n 2000 || fail "stored solution does not verify"
"$NQ" run solve 8 --db run.db --json >/dev/null || fail "run solve 8"
sid8=$("$NQ" list --db run.db --json | grep -o '"id":[0-9]*,"kind":"solve","n":8' | grep -o '[0-9]*' | head -1)
"$NQ" result "$sid8" --db run.db --board | grep -c Q | grep -qx 8 || fail "board of N=8"
ok "run solve: stored solutions verify, board drawn"

"$NQ" run enumerate 8 --db run.db >/dev/null || fail "run enumerate 8"
eid=$("$NQ" list --db run.db --json | grep -o '"id":[0-9]*,"kind":"enumerate"' | grep -o '[0-9]*' | head -1)
rows=$("$NQ" export "$eid" --db run.db --format csv | tail -n +2 | wc -l)
[ "$rows" = 92 ] || fail "enumerate 8 exported $rows rows"
uniq=$("$NQ" export "$eid" --db run.db --format csv --unique | tail -n +2 | wc -l)
[ "$uniq" = 12 ] || fail "enumerate 8 --unique exported $uniq rows"
"$NQ" export "$eid" --db run.db --format csv | tail -n +2 | sort -c || fail "not in canonical order"
"$NQ" export "$eid" --db run.db --format csv >enum.csv
[ "$(head -1 enum.csv)" = row0,row1,row2,row3,row4,row5,row6,row7 ] || fail "enumerate CSV header: $(head -1 enum.csv)"
awk -F, 'NR > 1 && NF != 8 { bad = 1 } END { exit bad }' enum.csv || fail "an enumerate CSV row is not 8 cells"
ok "enumerate 8: 92 solutions in order, one CSV column per row's queen, 12 classes"

for bad in "count 0" "count 33" "count abc" "count -1" "solve 3" "enumerate 17" "frob 8" "count" \
           "count 8 --workers 0" "count 8 --algo qs4" "solve 100 --algo nope" "count 8 --depth 99"; do
    # shellcheck disable=SC2086
    "$NQ" run $bad --db run.db >out.txt 2>err.txt
    rc=$?
    [ $rc = 2 ] || fail "nq run $bad: exit $rc, want 2"
    [ -s err.txt ] || fail "nq run $bad: no message"
done
ok "bad arguments refused with exit 2 and a message"
"$NQ" run count 8 --db nodir/x.db >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] && grep -qx "nq run: nodir/x.db: its folder does not exist" err.txt || fail "a DB in a missing folder: exit $rc: $(cat err.txt)"
ok "a DB in a missing folder: exit 3, the DB's path named: $(cat err.txt)"

# Ctrl-C, then the same command again: it resumes where it stopped.
N=$(long_count_n)   # a count that takes seconds on this build
"$NQ" run count "$N" --db int.db --workers 1 >int1.txt 2>int1.err &
runpid=$!
PIDS+=("$runpid")
wait_for 60 bash -c "[ \$(sqlite3 -readonly int.db \"SELECT count(*) FROM shards WHERE state='done'\" 2>/dev/null || echo 0) -gt 20 ]" \
    || fail "no progress before Ctrl-C"
kill -INT "$runpid"
wait "$runpid"; rc=$?
[ $rc = 130 ] || fail "interrupted run exited $rc, want 130"
grep -q "run the same command again to resume" int1.err || fail "no resume hint: $(cat int1.err)"
ls int.db-wal int.db-shm int.db.lock 2>/dev/null && fail "the interrupted run left files beside its DB"
"$NQ" run count "$N" --db int.db --workers 2 --json >int2.txt 2>int2.err || fail "resumed run failed"
grep -q "resuming job 1" int2.err || fail "second run did not resume: $(cat int2.err)"
[ "$(json_get total <int2.txt)" = "$(oeis_total "$N")" ] || fail "resumed total"
"$NQ" run count "$N" --db int.db --workers 2 >int3.txt 2>/dev/null || fail "third run"
grep -q "1 worker(s)" int3.txt || fail "a job run twice on this machine is not one worker's: $(grep 'worker' int3.txt)"
ok "Ctrl-C exits 130 with a hint and leaves only its DB; the same command resumes, the count is exact, 1 worker"
