#!/usr/bin/env bash
# Building a job's shard list never stalls the broker's loop. Built in the loop, each big submit
# (`count 32 --shard-seconds 1`, `count 27`: seconds of CPU) held every answer back for 1-6 s,
# and a few in a row made an honest worker give up on the broker. Here the list is held on the
# lister's thread by a test-build gate (NQ_FAULT_LIST_GATE: it waits for a file), so what the test
# sees is behaviour, not a race against the clock: while a list is held, the broker answers
# `status` and `list`, and its worker keeps delivering results; once the gate opens, the submit is
# answered. A restarted broker answers before its jobs' lists are built again, and while they are.
# How long answers take meanwhile is printed, not bounded: on a loaded machine that is the load.
# The caps stay: count 32 --shard-seconds 1 (46 million shards) is refused, count 27 (13 million)
# accepted.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
GATE=$T/gate
export NQ_FAULT_LIST_GATE=$GATE
held() { test -e "$GATE.held"; }
done_shards() { job_field "$1" shards_done; }

touch "$GATE"                           # open: the first job's list goes through
start_broker s.db
start_worker w1 --threads 1 --id w1
job=$("$NQ" submit count 20 --depth 1) || fail "submit"
working() { [ "$(done_shards "$job")" -gt 0 ]; }
wait_for 60 working || fail "the worker delivered nothing: $("$NQ" status "$job" --json)"

# Hold count 27's list on the lister's thread, and ask the loop meanwhile.
rm -f "$GATE" "$GATE.held"
"$NQ" submit count 27 --timeout 600 >big.id 2>big.err &
SUBMIT=$!
PIDS+=("$SUBMIT")
wait_for 60 held || fail "count 27's list never reached the lister"
before=$(done_shards "$job")
start lat "$PY" "$SRC/tests/tools/ctl_latency.py" "$CEP" --until "$T/stop" --every 10 "progress:$job" status
LAT_PID=$LAST_PID
"$NQ" list --timeout 30 >list.txt || fail "the broker did not answer list while a list was built"
more() { [ "$(done_shards "$job")" -gt "$before" ]; }
wait_for 120 more || fail "no result was taken while a list was built ($before done)"
kill -0 "$SUBMIT" 2>/dev/null || fail "the submit was answered before its list was built: $(cat big.id big.err)"
touch stop
wait "$LAT_PID" || fail "the latency client failed: $(cat lat.log)"
read -r _ max asked < <(grep '^all ' lat.log)
[ "${asked:-0}" -gt 0 ] || fail "no answer while the list was held: $(cat lat.log)"
ok "while count 27's list was held: $asked answers (slowest $max ms), results taken ($before -> $(done_shards "$job"))"

touch "$GATE"
wait "$SUBMIT" || fail "count 27 refused: $(cat big.err)"
big=$(cat big.id)
"$NQ" status "$big" --json | grep -q '"shards_total":13063645' || fail "count 27: $("$NQ" status "$big")"
"$NQ" submit count 32 --shard-seconds 1 --timeout 200 >out 2>&1 && fail "count 32 --shard-seconds 1 accepted"
grep -qF "cap of 20000000 shards per job" out || fail "count 32 --shard-seconds 1: $(cat out)"
ok "the gate opened: count 27 answered ($big, 13,063,645 shards); count 32 --shard-seconds 1 refused by the cap"

# A restart loads both jobs and builds their lists again: it answers before they are in.
kill -TERM "$BROKER_PID"; wait "$BROKER_PID"
rm -f "$GATE" "$GATE.held" stop
BROKER_N=2 start_broker s.db
wait_for 60 held || fail "the restarted broker built no list"
"$NQ" status "$big" --json --timeout 30 >st.json || fail "the restarted broker did not answer before its lists"
grep -q "event=job.listed job=$big " broker2.log && fail "count 27's list was in before the gate opened"
touch "$GATE"
listed() { grep -q "event=job.listed job=$big " broker2.log; }
wait_for 300 listed || fail "count 27's list never came after the restart"
ok "restarted: answered status while the lists were held; count 27 listed once the gate opened"
