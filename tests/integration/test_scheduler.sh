#!/usr/bin/env bash
# Every worker busy, and a slow one never holds a job up. Workers paced to chosen speeds
# (NQ_FAULT_PACE, test builds only: a task takes at least its nodes / R seconds) count N=16 alone
# and together: F with S (250x slower) ends with F holding tail copies of what S still has; F with
# M (half F's speed) shares the job, both doing shards. How fast (at most 1.2 x F alone + 0.5 s
# and 0.8 x F alone) is a figure for tests/bench/bench_sched.sh, not a bound here: on a loaded
# machine the pace is a floor, not the time. Then, exact with no conflict and no evidence: S killed while F holds a copy of its lease, F
# killed while it holds a copy, a --quorum 2 job with three workers, a --verify-rate job.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped: this nq was built without -DNQ_TEST_FAULTS=ON (tests/run.sh turns it on)"
    exit 77
fi
N=16
P=18000000                          # F's pace, nodes/s a thread: N=16 in about 4 s on 2 threads
total=$(oeis_total $N)

now() { date +%s.%N; }
state_of() { job_field "$1" state; }
# exact ID WHAT: done, the OEIS total, no conflict, no evidence
exact() {
    local js
    js=$("$NQ" status "$1" --json)
    [ "$(json_get state <<<"$js")" = done ] && [ "$(json_get total <<<"$js")" = "$total" ] \
        && [ "$(json_get shards_conflict <<<"$js")" = 0 ] && [ "$(json_get evidence <<<"$js")" = 0 ] \
        || fail "$2: not exact, or conflicts or evidence: $js"
}
# timed_run ARGS...: submits count N, waits for it, prints the seconds from submit to done
timed_run() {
    local id t0
    t0=$(now)
    id=$("$NQ" submit count $N "$@") || fail "submit"
    while [ "$(state_of "$id")" != done ]; do
        [ "$(echo "$(now) - $t0 > 200" | bc)" = 1 ] && fail "count $N $* did not finish: $("$NQ" status "$id" --json)"
        sleep 0.05
    done
    echo "$(echo "$(now) - $t0" | bc) $id"
}
worker() {   # worker NAME PACE THREADS
    NQ_FAULT_PACE=$2 start_worker "$1" --threads "$3" --id "$1"
    eval "$1=\$LAST_PID"
}
stop() { kill "$@" 2>/dev/null; wait "$@" 2>/dev/null; }
joined() { "$NQ" workers --json | grep -o "\"id\":\"$1\"[^}]*\"alive\":true" >/dev/null; }

start_broker s.db --stall-timeout 30
worker F $P 2
wait_for 60 joined F || fail "F did not join"
read -r tf id <<<"$(timed_run)"
exact "$id" "F alone"
ok "F alone: count $N in $tf s"

worker S $((P / 250)) 1
wait_for 60 joined S || fail "S did not join"
read -r tfs id <<<"$(timed_run)"
exact "$id" "F with S"
copies=$(grep -c "event=lease.copy" "$T/broker.log")
[ "$copies" -gt 0 ] || fail "F with a 250x slower S: F got no tail copy of S's leases"
ok "F with S (250x slower): $tfs s (F alone $tf s); $copies tail copies"
stop "$S"

worker M $((P / 2)) 2
wait_for 60 joined M || fail "M did not join"
read -r tfm id <<<"$(timed_run)"
exact "$id" "F with M"
shares=$(sql s.db "SELECT group_concat(shards, ' ') FROM job_workers WHERE job = $id AND shards > 0")
[ "$(wc -w <<<"$shares")" = 2 ] || fail "F with M at half F's speed: want both doing shards, got '$shares'"
ok "F with M (half F's speed): $tfm s (F alone $tf s); shards $shares"
stop "$M" "$F"

# S holds the last shards and F copies them; S is killed: the copies finish the job, uncharged.
worker F $P 2
worker S $((P / 250)) 1
wait_for 60 joined F && wait_for 60 joined S || fail "F and S did not join"
before=$(grep -c "event=lease.copy.*holder=S" "$T/broker.log")
id=$("$NQ" submit count $N) || fail "submit"
wait_for 60 bash -c "[ \$(grep -c 'event=lease.copy.*holder=S' '$T/broker.log') -gt $before ]" \
    || fail "F got no copy of S's lease: $("$NQ" status "$id" --json)"
stop "$S"
wait_for 60 bash -c "[ \"\$($NQ status $id --json | grep -o '\"state\":\"[a-z]*\"')\" = '\"state\":\"done\"' ]" \
    || fail "the job did not finish after S was killed: $("$NQ" status "$id" --json)"
exact "$id" "S killed holding a copied lease"
[ "$(sql s.db "SELECT coalesce(max(attempts), 0) FROM shards WHERE job = $id")" = 0 ] \
    || fail "S's copied lease charged its shard an attempt"
ok "S killed while F held a copy of its lease: exact, no attempt charged"

# F holds a copy and is killed: the copy is lost uncharged, and a new fast worker finishes.
worker S $((P / 250)) 1
wait_for 60 joined S || fail "S did not join"
before=$(grep -c "event=lease.copy.*copy=F" "$T/broker.log")
id=$("$NQ" submit count $N) || fail "submit"
wait_for 60 bash -c "[ \$(grep -c 'event=lease.copy.*copy=F' '$T/broker.log') -gt $before ]" \
    || fail "F got no copy: $("$NQ" status "$id" --json)"
stop "$F"
worker F2 $P 2
wait_for 120 bash -c "[ \"\$($NQ status $id --json | grep -o '\"state\":\"[a-z]*\"')\" = '\"state\":\"done\"' ]" \
    || fail "the job did not finish after F was killed holding a copy: $("$NQ" status "$id" --json)"
exact "$id" "F killed holding a copy"
[ "$(sql s.db "SELECT coalesce(max(attempts), 0) FROM shards WHERE job = $id")" = 0 ] \
    || fail "F's lost copy charged its shard an attempt"
ok "F killed while it held a copy: exact, no attempt charged"

# A quorum job and a spot-checked job with three workers of three speeds.
worker M $((P / 2)) 2
read -r tq id <<<"$(timed_run --quorum 2)"
exact "$id" "quorum 2"
ok "--quorum 2 with F2, M and S: exact in $tq s, no conflict, no evidence"
read -r tv id <<<"$(timed_run --verify-rate 0.2)"
exact "$id" "verify-rate"
ok "--verify-rate 0.2 with F2, M and S: exact in $tv s"
stop "$F2" "$M" "$S" "$BROKER_PID"
