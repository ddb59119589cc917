#!/usr/bin/env bash
# A job's rate and ETA in nq status are this run's: after a broker restart the shards done before
# it are in "done" but not in the rate (it divided every shard ever done by the time since the job
# first started), and the ETA comes from the estimated work done since, once some is.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=$(long_count_n)
start_broker p.db
start_worker w1 --threads 1 --id w1
W=$LAST_PID
id=$("$NQ" submit count "$N" 2>/dev/null) || fail "submit"
some() { [ "$(job_field "$id" shards_done)" -gt 0 ]; }
wait_for 120 some || fail "no shard done"
kill -9 "$W"; wait "$W" 2>/dev/null
kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
BROKER_N=2 start_broker p.db
"$NQ" status "$id" --json >st.json 2>/dev/null || fail "status after the restart"
[ "$(json_get shards_done <st.json)" -gt 0 ] || fail "the restart lost the shards done: $(cat st.json)"
[ "$(json_get rate <st.json)" = 0 ] || fail "the rate counts shards done before the restart: $(cat st.json)"
[ "$(json_get eta <st.json)" = null ] || fail "an ETA with nothing done this run: $(cat st.json)"
ok "after a restart: $(json_get shards_done <st.json) shards done before, rate 0 and no ETA this run"
start_worker w2 --threads 1 --id w2
paced() { "$NQ" status "$id" --json >st.json 2>/dev/null && [ "$(json_get eta <st.json)" != null ] ||
          [ "$(json_get state <st.json)" = done ]; }
wait_for 120 paced || fail "no ETA once the job moved again: $(cat st.json)"
ok "an ETA once this run has done work: $(json_get eta <st.json) s (state $(json_get state <st.json))"
