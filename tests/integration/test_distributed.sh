#!/usr/bin/env bash
# One broker, two workers on loopback: an exact count, the client commands
# (status, list, workers, result, cancel, retry), and offline reads with the
# broker down.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
# A job whose lease order is built (job.listed), so its shards can go out.
listed() { grep -q "event=job.listed job=$1 " "$T/broker.log"; }

start_broker d.db
start_worker w1 --threads 1; W1=$LAST_PID
start_worker w2 --threads 1; W2=$LAST_PID

id=$("$NQ" submit count 13) || fail "submit"
[ "$id" = 1 ] || fail "first job id is '$id'"
wait_for 120 job_done "$id" || fail "count 13 did not finish"
res=$("$NQ" result "$id" --json)
[ "$(echo "$res" | json_get total)" = "$(oeis_total 13)" ] || fail "total: $res"
[ "$(echo "$res" | json_get unique)" = "$(oeis_unique 13)" ] || fail "unique: $res"
ok "one broker + two workers: count 13 exact"

"$NQ" broker --db d.db --bind "tcp://127.0.0.1:$(free_port)" --control "tcp://127.0.0.1:$(free_port)" \
    >second.log 2>&1 &
second=$!
PIDS+=("$second")
wait "$second"; rc=$?
[ $rc = 3 ] || fail "a second broker on the same DB exited $rc, want 3"
grep -q "another broker" second.log || fail "second broker message: $(cat second.log)"
"$NQ" run count 8 --db d.db 2>err.txt; [ $? = 3 ] || fail "nq run on a DB a broker uses should exit 3"
ok "a second broker, or nq run, on a DB in use is refused"

"$NQ" workers --json | grep -o '"alive":true' | wc -l | grep -qx 2 || fail "nq workers does not show 2 alive"
"$NQ" workers | grep -q THREADS || fail "nq workers table"
[ "$("$NQ" submit count 12 --json | json_get id)" = 2 ] || fail "submit --json"
"$NQ" status | grep -q count || fail "nq status (all)"
wait_for 60 job_done 2 || fail "count 12 did not finish"
ok "status, list, workers, submit --json"

# Several jobs at once: the higher priority one is served first, even when submitted later.
# Both are listed before a worker joins, so the older one cannot take the workers while the newer
# one's lease order is still being built.
N=$(long_count_n)   # a count that takes seconds on this build
kill "$W1" "$W2"; wait "$W1" "$W2" 2>/dev/null
low=$("$NQ" submit count "$N") || fail "submit low"
high=$("$NQ" submit count 12 --priority 5) || fail "submit high"
wait_for 60 listed "$low" || fail "the low-priority job was not listed"
wait_for 60 listed "$high" || fail "the high-priority job was not listed"
start_worker w3 --threads 1
start_worker w4 --threads 1
wait_for 120 job_done "$high" || fail "high-priority job did not finish"
[ "$(job_field "$low" state)" != done ] ||
    fail "the low-priority job finished first: $("$NQ" status --json) $("$NQ" workers --json)"
wait_for 240 job_done "$low" || fail "low-priority job did not finish"
[ "$(job_field "$low" total)" = "$(oeis_total "$N")" ] || fail "low-priority total"
ok "two jobs at once: --priority 5 served before an older job, both exact"

# A job big enough to cancel while it runs; then retry makes it run again.
id3=$("$NQ" submit count "$N" --depth 3) || fail "submit $N"
"$NQ" cancel "$id3" | grep -q cancelled || fail "cancel"
[ "$(job_field "$id3" state)" = cancelled ] || fail "state after cancel"
"$NQ" cancel "$id3" 2>err.txt; [ $? = 1 ] || fail "second cancel should say no"
grep -q "already cancelled" err.txt || fail "second cancel message: $(cat err.txt)"
"$NQ" retry "$id3" >/dev/null || fail "retry"
state=$(job_field "$id3" state)
case "$state" in running|pending|done) ;; *) fail "state after retry: $state" ;; esac
"$NQ" cancel "$id3" >/dev/null || fail "cancel again"
"$NQ" result 999 2>err.txt; [ $? = 1 ] || fail "result of a missing job should exit 1"
grep -q "999" err.txt || fail "missing job message"
ok "cancel, retry, missing job"

kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
"$NQ" result "$id" --db d.db --json | json_get total | grep -qx "$(oeis_total 13)" || fail "offline result"
"$NQ" list --db d.db | grep -q count || fail "offline list"
"$NQ" status "$id" --timeout 1 2>err.txt; [ $? = 3 ] || fail "status with the broker down should exit 3"
grep -q "nothing accepts connections there" err.txt || fail "broker-down message: $(cat err.txt)"
ok "offline reads with --db while the broker is down; clear error without it"
