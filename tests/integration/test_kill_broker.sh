#!/usr/bin/env bash
# kill -9 the broker three times during one count, restart it on the same DB:
# every job resumes, the answer is exact and every shard is done exactly once.
# Also: a worker started before its broker, and a worker that reconnects after
# a broker restart delivers its outbox.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=$(long_count_n)   # long enough (seconds) to kill the broker three times mid-run

WPORT=$(free_port); CPORT=$(free_port)
export WPORT CPORT
WEP=tcp://127.0.0.1:$WPORT
start_worker early --threads 2          # before the broker exists
sleep 0.5
BROKER_N=0 start_broker kb.db
id=$("$NQ" submit count $N ) || fail "submit"
kills=0
for round in 1 2 3; do
    wait_for 60 bash -c "[ \$($NQ status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -gt $((round * 30)) ]" \
        || break
    job_done "$id" && break                        # too late to kill it mid-run
    kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
    kills=$round
    sleep 0.3
    BROKER_N=$round start_broker kb.db --grace 2
done
[ "$kills" = 3 ] || fail "the job ended after $kills of 3 broker kills: it is too small for this test"
wait_for 240 job_done "$id" || fail "count did not finish after broker kills"
[ "$(job_field "$id" total)" = "$(oeis_total $N)" ] || fail "total after broker kills"
[ "$(job_field "$id" unique)" = "$(oeis_unique $N)" ] || fail "unique after broker kills"
done_rows=$(sql kb.db "SELECT count(*) FROM shards WHERE job=$id AND state='done'")
total_rows=$(sql kb.db "SELECT shards_total FROM jobs WHERE id=$id")
[ "$done_rows" = "$total_rows" ] || fail "$done_rows of $total_rows shards done"
grep -q "job.loaded" "$T/broker1.log" || fail "restarted broker did not resume the job"
grep -q "worker.connected" "$T/early.log" || fail "early worker never connected"
ok "broker killed three times: count $N exact, every shard done exactly once; worker started first"

# Outbox: results computed while the broker is away are delivered after it returns.
id2=$("$NQ" submit count 12) || fail "submit 2"
kill -STOP "$BROKER_PID"                           # results pile up in the worker's outbox
sleep 1.5
kill -9 "$BROKER_PID"; kill -CONT "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null
BROKER_N=9 start_broker kb.db --grace 5
wait_for 120 job_done "$id2" || fail "count 12 did not finish after the broker came back"
[ "$(job_field "$id2" total)" = "$(oeis_total 12)" ] || fail "total after outbox redelivery"
ok "worker reconnecting after a broker restart delivers its outbox"
