#!/usr/bin/env bash
# A broker that stalls past its workers' liveness window while they work (SIGSTOP 1.5 s, ten
# times, against a window of 0.6 s): each worker gives up on it and reconnects, and TASKs queued
# on the connection it dropped are lost. The broker must take those leases back (the workers'
# heartbeats list what they hold under the broker's sync token) and the job must end exact, with
# no shard failed and none charged more than once per identity (only an identity's first loss of
# leases charges: on a loaded machine a worker may miss the broker's window on its own, which is
# such a loss, so "none charged" was a wager on the machine's speed). Before the fix, the lost leases filled both workers' credit and
# the job sat forever with nothing running; a loaded CI host hit this in test_spotcheck.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

N=14 DEPTH=4                            # 52,118 small shards: TASKs are always on the wire
start_broker s.db
start_worker w1 --threads 1 --id w1
start_worker w2 --threads 1 --id w2
id=$("$NQ" submit count $N --depth $DEPTH) || fail "submit"
under_way() { [ "$(job_field "$id" shards_done)" -gt 100 ]; }
wait_for 30 under_way || fail "no results before the stalls"
for _ in $(seq 10); do
    kill -STOP "$BROKER_PID"; sleep 1.5; kill -CONT "$BROKER_PID"; sleep 0.7
done
job_done "$id" && fail "the job ended before the stalls did: make it longer"
wait_for 120 job_done "$id" || fail "the job did not finish after the stalls: $("$NQ" status "$id")"
[ "$(job_field "$id" total)" = "$(oeis_total $N)" ] || fail "total wrong: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" shards_failed)" = 0 ] || fail "shards failed"
attempts=$(sql s.db "SELECT max(attempts) FROM shards WHERE job = $id")
[ "$attempts" -le 2 ] || fail "a shard was charged $attempts attempts by 2 identities over 10 stalls"
silent=$(cat w1.log w2.log | grep -c "worker.broker_silent")
[ "$silent" -ge 10 ] || fail "the workers gave up on the broker only $silent times: the test did not test"
lost=$(sed -n 's/.*event=lease.lost .*leases=\([0-9]*\).*/\1/p' broker.log | awk '{ s += $1 } END { print s + 0 }')
ok "broker stalled 10 x 1.5 s: workers reconnected $silent times, $lost lost TASKs taken back," \
   "count $N exact, at most one attempt per identity ($attempts)"
