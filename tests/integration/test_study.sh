#!/usr/bin/env bash
# Issue "every search method": a study of 200 seeds of hillclimb on N=8 runs
# end to end through the broker; its success rate is stored, shown and
# exported; a study of several methods gives one row each; every enumerate
# job's --unique export has A002562 rows for N = 1..12.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

start_broker s.db
start_worker w1 --threads 2
id=$("$NQ" submit solve 8 --algo hillclimb --restarts 200 --all) || fail "submit study"
wait_for 120 job_done "$id" || fail "study did not finish"
res=$("$NQ" result "$id" --json)
echo "$res" | grep -q '"study":\[{' || fail "no study summary: $res"
seeds=$(echo "$res" | grep -o '"seeds":[0-9]*' | head -1 | cut -d: -f2)
solved=$(echo "$res" | grep -o '"solved":[0-9]*' | head -1 | cut -d: -f2)
[ "$seeds" = 200 ] || fail "study seeds $seeds"
[ "$solved" -gt 100 ] && [ "$solved" -lt 200 ] || fail "hillclimb solved $solved of 200 on N=8"
echo "$res" | grep -q '"ci_low":0\.[0-9]' || fail "no confidence interval"
"$NQ" result "$id" | grep -q "hillclimb" || fail "human result has no study row"
rows=$("$NQ" export "$id" --format csv | tail -n +2 | wc -l)
[ "$rows" = 200 ] || fail "export has $rows rows"
exp_solved=$("$NQ" export "$id" --format csv | grep -c ",solved,")
[ "$exp_solved" = "$solved" ] || fail "export says $exp_solved solved, result says $solved"
ok "study of 200 hillclimb seeds on N=8: $solved solved, stored, shown with a 95% interval, exported"

id2=$("$NQ" submit solve 30 --algo hillclimb,qs1,minconflicts-sweep --restarts 20 --all) || fail "submit multi"
wait_for 120 job_done "$id2" || fail "multi-method study did not finish"
n=$("$NQ" result "$id2" --json | grep -o '"algo":"[a-z0-9-]*","seeds"' | sort -u | wc -l)
[ "$n" = 3 ] || fail "multi-method study has $n rows"
ok "a study of three methods gives one row each"

kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
for n in 1 2 3 4 5 6 7 8 9 10 11 12; do
    "$NQ" run enumerate "$n" --db e.db >/dev/null || fail "enumerate $n"
    eid=$("$NQ" list --db e.db --json | grep -o "\"id\":[0-9]*,\"kind\":\"enumerate\",\"n\":$n," | grep -o '[0-9]*' | head -1)
    u=$("$NQ" export "$eid" --db e.db --format csv --unique | tail -n +2 | wc -l)
    [ "$u" = "$(oeis_unique "$n")" ] || fail "enumerate $n --unique: $u rows"
done
ok "export --unique gives A002562 classes for N = 1..12"
