#!/usr/bin/env bash
# kill -9 a worker mid-run: its shards are re-leased and the count is exact.
# SIGSTOP a worker (alive but silent): detected, re-leased; SIGCONT: its late
# results are compared, not counted twice.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=$(long_count_n)   # long enough (seconds) for the kills to land mid-run

start_broker k.db
start_worker victim --threads 1; victim=$LAST_PID
id=$("$NQ" submit count $N ) || fail "submit"
wait_for 60 bash -c "[ \$($NQ status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -gt 3 ]" \
    || fail "no progress"
kill -9 "$victim"
start_worker rescue --threads 2
wait_for 240 job_done "$id" || fail "count did not finish after kill -9"
[ "$(job_field "$id" total)" = "$(oeis_total $N)" ] || fail "total after kill -9"
grep -q "worker.lost" "$T/broker.log" || fail "broker did not log the lost worker"
ok "kill -9 of a worker: shards re-leased, count $N exact"

id2=$("$NQ" submit count $N ) || fail "submit 2"
start_worker stopped --threads 1; stopped=$LAST_PID
wait_for 60 bash -c "$NQ workers --json | grep -q '\"leases\":[1-9]'" || fail "no lease"
kill -STOP "$stopped"
wait_for 240 job_done "$id2" || fail "count did not finish with a stopped worker"
kill -CONT "$stopped"
sleep 1
[ "$(job_field "$id2" total)" = "$(oeis_total $N)" ] || fail "total with SIGSTOP/SIGCONT"
dup=$(sql k.db "SELECT count(*) FROM shards WHERE job=$id2 AND state='done'")
all=$(sql k.db "SELECT shards_total FROM jobs WHERE id=$id2")
[ "$dup" = "$all" ] || fail "done shards $dup of $all"
ok "SIGSTOP worker detected and re-leased; SIGCONT late results compared; exact"
