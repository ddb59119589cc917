#!/usr/bin/env bash
# The DB file removed or replaced under a running broker: it kept acknowledging results into the
# unlinked file and reported the job done, and after a restart the job did not exist. Now it
# notices within a round, acknowledges nothing more, logs store.lost and exits 3, so the workers
# keep what was not acknowledged:
#  1. removed (rm) mid-count: the broker exits 3 at once, nq run too;
#  2. replaced (a backup moved over it) mid-count: the broker exits 3; a broker restarted on the
#     file now there finishes the job exact, the worker resending what it still held.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=$(long_count_n)

done_count() { job_field "$1" shards_done; }
some_done() { [ "$(done_count "$1")" -ge "$2" ]; }
exited() { ! kill -0 "$1" 2>/dev/null; }

# 1. Removed.
start_broker gone.db
start_worker w1 --threads 1; w1=$LAST_PID
id=$("$NQ" submit count "$N") || fail "submit"
wait_for 60 some_done "$id" 10 || fail "no progress"
rm gone.db
wait_for 60 exited "$BROKER_PID" || fail "the broker kept running with its DB removed"
wait "$BROKER_PID"; rc=$?
[ "$rc" = 3 ] || fail "the broker exited $rc with its DB removed, want 3"
grep -q "event=store.lost.*was removed" "$T/broker.log" || fail "no store.lost logged: $(tail -3 "$T/broker.log")"
tail -1 "$T/broker.log" | grep -q "nq broker: .*gone.db was removed" || fail "no one-line reason: $(tail -1 "$T/broker.log")"
ok "DB removed under a running broker: store.lost logged, exit 3"
kill "$w1"; wait "$w1" 2>/dev/null

"$NQ" run count "$N" --db run.db >run.out 2>run.err &
run=$!
PIDS+=("$run")
wait_for 60 test -s run.db || fail "nq run made no DB"
sleep 1
rm run.db
wait_for 60 exited "$run" || fail "nq run kept running with its DB removed"
wait "$run"; rc=$?
[ "$rc" = 3 ] && grep -q "run.db was removed" run.err || fail "nq run exited $rc: $(cat run.err)"
ok "nq run with its DB removed: exit 3, $(tail -1 run.err | cut -c1-80)"

# 2. Replaced by a backup.
start_broker swap.db
start_worker w2 --threads 1; w2=$LAST_PID
id=$("$NQ" submit count "$N") || fail "submit"
wait_for 60 some_done "$id" 10 || fail "no progress"
"$NQ" backup --db swap.db copy.db >/dev/null || fail "backup"
wait_for 60 some_done "$id" "$(( $(sql copy.db "SELECT shards_done FROM jobs WHERE id = $id") + 5 ))" \
    || fail "no progress after the backup"
mv copy.db swap.db
wait_for 60 exited "$BROKER_PID" || fail "the broker kept running on a replaced DB"
wait "$BROKER_PID"; rc=$?
[ "$rc" = 3 ] && grep -q "event=store.lost.*replaced" "$T/broker.log" || fail "replaced DB: exit $rc, $(tail -2 "$T/broker.log")"
kill -0 "$w2" 2>/dev/null || fail "the worker left with the broker"
BROKER_N=2 start_broker swap.db
wait_for 120 job_done "$id" || fail "the job did not finish on the restored DB: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$(oeis_total "$N")" ] || fail "not exact after the swap: $("$NQ" status "$id" --json)"
"$NQ" check --db swap.db >/dev/null || fail "nq check"
ok "DB replaced by a backup mid-count: exit 3; restarted on the file there, count $N exact"
kill "$w2" "$BROKER_PID"; wait "$w2" "$BROKER_PID" 2>/dev/null
