#!/usr/bin/env bash
# The one vote against a real broker: a way around tail copies that a hostile review found,
# played by a scripted peer (tests/tools/one_vote.py) beside real workers paced by NQ_FAULT_PACE,
# so the broker measures real speeds: a hoarder that claims 1 ms a shard and creeps its progress
# cannot stall the job.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped: this nq was built without -DNQ_TEST_FAULTS=ON (tests/run.sh turns it on)"
    exit 77
fi
need_wire_python
V="env PYTHONPATH=$SRC/tests/tools $PY $SRC/tests/tools/one_vote.py"
N=10                                    # 75 shards, 5,467 nodes
"$NQ" run count $N --db ref.db >/dev/null 2>&1 || fail "reference run"
total=$(oeis_total $N)

honest() { NQ_FAULT_PACE=$2 start_worker "$1" --threads 1 --id "$1" "${@:3}"; }
stop() { kill "$@" 2>/dev/null; wait "$@" 2>/dev/null; }

# The hoarder: three true answers at 1 ms each, then every lease it can take, each moved one
# node a heartbeat. The honest workers start with it, so the broker has seen them deliver.
BROKER_N=_a start_broker a.db
id=$("$NQ" submit count $N) || fail "submit"
honest h1 500; h1=$LAST_PID
honest h2 500; h2=$LAST_PID
$V hoarder "$WEP" ref.db 120 >hoarder.out 2>&1 &
hoarder=$!
wait_for 90 job_done "$id" || fail "the hoarder stalled the job: $("$NQ" status "$id" --json)"
kill -0 "$hoarder" 2>/dev/null || fail "the hoarder left before the job ended: $(cat hoarder.out)"
[ "$(job_field "$id" total)" = "$total" ] || fail "hoarder: total $(job_field "$id" total), expected $total"
ok "a hoarder claiming 1 ms a shard and creeping its progress: the job ends exact ($total)," \
   "$(grep -c 'event=lease.copy' broker_a.log) tail copies"
stop "$hoarder" "$h1" "$h2" "$BROKER_PID"
