#!/usr/bin/env bash
# What is held against a worker belongs to its identity (its CURVE key), not to a connection:
# one key that takes every shard and goes silent, round after round on fresh connections, must
# not burn a job. Its first loss charges the shards an attempt (a crash may be the shard's
# fault); later losses charge nothing, and the third quarantines the key.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
H="$PY $SRC/tests/tools/hostile.py"

"$NQ" keygen broker >/dev/null && "$NQ" keygen burner >/dev/null && "$NQ" keygen honest >/dev/null || fail "keygen"
mkdir allowed && cp burner.pub honest.pub allowed/
start_broker b.db --key broker.key --authorized-keys allowed
id=$("$NQ" submit count 9 --max-attempts 3) || fail "submit"
out=$($H burn_rounds "$WEP" broker.pub burner.key 4) || fail "burn_rounds: $out"
sleep 1
failed=$(job_field "$id" shards_failed)
[ "$failed" = 0 ] || fail "one key failed $failed shards in 4 rounds ($out)"
attempts=$(sql b.db "SELECT coalesce(max(attempts), 0) FROM shards WHERE job = $id")
[ "$attempts" -le 1 ] || fail "one key charged a shard $attempts attempts"
grep -q "event=worker.quarantined.*lost its leases" "$T/broker.log" || fail "the key was not quarantined"
start_worker h --key honest.key --broker-key broker.pub; h=$LAST_PID
wait_for 60 job_done "$id" || fail "an honest key did not finish the job: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$(oeis_total 9)" ] || fail "wrong total"
ok "one key, 4 rounds of take-everything-and-vanish: $out; 0 failed, at most $attempts attempt a shard, key quarantined, job exact"
kill "$h" "$BROKER_PID"; wait "$h" "$BROKER_PID" 2>/dev/null

# A quorum job with one identity connected says what it waits for, in nq status, its --json and
# the web page, and its lease figure agrees with what the workers hold.
start_broker q.db --http 127.0.0.1:@MPORT@
id=$("$NQ" submit count 10 --quorum 2) || fail "submit"
start_worker w1 --threads 1; w1=$LAST_PID
waits() { "$NQ" status "$id" --json | grep -q '"waiting":"for a second identity: quorum 2, 1 connected"'; }
wait_for 30 waits || fail "no waiting reason: $("$NQ" status "$id" --json)"
"$NQ" status "$id" | grep -q "waiting   for a second identity: quorum 2, 1 connected" || fail "nq status: $("$NQ" status "$id")"
# Two questions, two moments: while the worker still counts the first votes, its leases change
# between them; the figures must agree once they hold still.
held() { "$NQ" workers --json | grep -o '"leases":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'; }
agree() { leased=$(job_field "$id" shards_leased); held=$(held); [ -n "$leased" ] && [ "$leased" = "$held" ]; }
wait_for 30 agree || fail "status says $leased leased, the workers hold $held"
in_db=$(sql q.db "SELECT count(*) FROM shards WHERE job = $id AND state = 'leased'")
[ "$in_db" -le "$held" ] || fail "the store still counts $in_db shards leased that wait for votes ($held held)"
web_waits() { curl -sf "http://127.0.0.1:$MPORT/jobs/$id" | grep -q "for a second identity: quorum 2, 1 connected"; }
wait_for 30 web_waits || fail "the web page does not say why the job waits"   # its snapshot: once a second
start_worker w2 --threads 1; w2=$LAST_PID
wait_for 60 job_done "$id" || fail "the quorum job did not finish with a second worker"
[ "$(job_field "$id" total)" = "$(oeis_total 10)" ] || fail "wrong total"
ok "quorum 2 with one worker: 'waiting for a second identity: quorum 2, 1 connected' (status, json, web); $leased leased = $held held; exact with a second"
