#!/usr/bin/env bash
# Far workers, through tests/tools/link_proxy.py (a user-space link that delays every byte, keeps
# order and loses nothing): a worker 2 s away (a satellite hop) joins once and stays, never lost
# nor quarantined, and its job ends exact; two workers 0.3 s away (Europe to Australia) end a
# job exact. The broker runs lib.sh's short timers (a 0.2 s heartbeat, a 0.6 s liveness window),
# so the round trip is many times the window: only timers that follow the link keep these
# workers. No timing is asserted here: tests/bench/bench_far.sh has the figures.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

# link NAME DELAY_MS [RATE]: a proxy to the broker's worker endpoint; its port in $LPORT
link() {
    start "$1" python3 "$SRC/tests/tools/link_proxy.py" --to "127.0.0.1:$WPORT" --delay-ms "$2" \
        --rate "${3:-0}" --port-file "$T/$1.port"
    wait_for 20 test -s "$T/$1.port" || fail "the link proxy $1 did not start"
    LPORT=$(cat "$T/$1.port")
}

# never_lost WORKER_LOG...: the broker never found a worker silent nor quarantined one, no worker
# gave up on it (a worker that said BYE is not lost)
never_lost() {
    ! grep -E "event=worker.lost.*reason=silent|quarantine" "$T/broker.log" ||
        fail "the broker lost or quarantined a worker"
    local f
    for f in "$@"; do
        ! grep -E "event=worker.broker_silent" "$T/$f" || fail "$f gave up on the broker"
    done
}

start_broker far.db
link sat 1000
start far "$NQ" worker --connect "tcp://127.0.0.1:$LPORT" --threads 1 --id far-1
far=$LAST_PID
id=$("$NQ" submit count 10) || fail "submit"
wait_for 120 job_done "$id" || fail "count 10 through a 2 s round trip did not finish"
[ "$(job_field "$id" total)" = "$(oeis_total 10)" ] || fail "count 10 total through a 2 s round trip"
sleep 3                                 # five liveness windows more: it stays
[ "$(grep -c "event=worker.join" broker.log)" = 1 ] || fail "the far worker joined more than once"
"$NQ" workers --json | grep -q '"alive":true' || fail "the far worker is not alive: $("$NQ" workers)"
# the round trip it shows can be no shorter than the link's 2 s of delay
rtt=$("$NQ" workers --json | grep -o '"rtt_s":[0-9.e+-]*' | head -1 | cut -d: -f2)
awk -v r="${rtt:-0}" 'BEGIN { exit !(r >= 2.0) }' ||
    fail "nq workers shows a round trip of '$rtt' s: $("$NQ" workers)"
"$NQ" workers | grep -Eq "far-1 .* [0-9]{4,} ms " || fail "the RTT column: $("$NQ" workers)"
never_lost far.log
ok "a worker 2 s away joins once and stays (never lost, never quarantined), nq workers shows its" \
   "${rtt} s round trip; count 10 exact"

link near 150
start w1 "$NQ" worker --connect "tcp://127.0.0.1:$LPORT" --threads 1 --id near-1
w1=$LAST_PID
start w2 "$NQ" worker --connect "tcp://127.0.0.1:$LPORT" --threads 1 --id near-2
w2=$LAST_PID
id=$("$NQ" submit count 13) || fail "submit"
wait_for 120 job_done "$id" || fail "count 13 through a 0.3 s round trip did not finish"
[ "$(job_field "$id" total)" = "$(oeis_total 13)" ] || fail "count 13 total through a 0.3 s round trip"
never_lost far.log w1.log w2.log
# the far one's link (2 s) is more than four times the others' (0.3 s): the broker says so
wait_for 30 grep -q "event=worker.link_far worker=far-1 " broker.log || fail "no worker.link_far for far-1"
ok "three workers 0.3 s and 2 s away: count 13 exact, none lost; the far link logged"

# A large solution over a slow link (100 KB/s: its 1.2 MB take 12 s, twenty liveness windows):
# the worker sends it a window at a time, its heartbeats pass between the parts, and the broker
# shows the upload moving.
kill -TERM "$far" "$w1" "$w2"; wait "$far" "$w1" "$w2" 2>/dev/null
link slow 50 100000
start slow "$NQ" worker --connect "tcp://127.0.0.1:$LPORT" --threads 1 --id slow-1
id=$("$NQ" submit solve 300000) || fail "submit solve"
wait_for 200 job_done "$id" || fail "solve 300000 through 100 KB/s did not finish"
[ "$(job_field "$id" solutions_found)" = 1 ] || fail "the solve found no solution: $("$NQ" status "$id")"
grep -q "event=result.upload.*worker=slow-1 rows=[0-9]* of=300000" broker.log ||
    fail "no upload progress in the broker's log"
never_lost far.log w1.log w2.log slow.log
ok "a 300,000-queen solution through 100 KB/s: its worker never lost, the upload's progress logged"
