#!/usr/bin/env bash
# Wrong answers: a worker that corrupts its results (test-only fault switch).
# With --quorum 2 the answer is exact and the faulty worker is flagged; without
# quorum the residue check catches a corrupted total. A poison shard (crashes
# its worker every time) ends FAILED after --max-attempts, never loops, and
# `nq retry` finishes the job once the fault is gone.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
ulimit -c 0

"$NQ" help worker >/dev/null || fail "no nq"
if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped: this nq was built without -DNQ_TEST_FAULTS=ON (tests/run.sh turns it on)"
    exit 77
fi
start_broker w.db
start_worker good1 --threads 1 --id good1
start_worker good2 --threads 1 --id good2
NQ_FAULT_CORRUPT=0.5 NQ_FAULT_CORRUPT_MODE=consistent start_worker bad --threads 1 --id bad
id=$("$NQ" submit count 13 --quorum 2) || fail "submit quorum"
wait_for 120 job_done "$id" || fail "quorum job did not finish"
[ "$(job_field "$id" total)" = "$(oeis_total 13)" ] || fail "quorum total"
[ "$(job_field "$id" unique)" = "$(oeis_unique 13)" ] || fail "quorum unique"
"$NQ" workers --json | grep -o '{[^{}]*"id":"bad"[^{}]*}' | grep -q '"flagged":true' \
    || fail "faulty worker not flagged: $("$NQ" workers --json)"
"$NQ" workers --json | grep -o '{[^{}]*"id":"good1"[^{}]*}' | grep -q '"flagged":false' \
    || fail "good worker flagged"
"$NQ" workers | grep bad | grep -q FLAGGED || fail "nq workers table does not name the faulty worker"
ok "quorum 2 with a worker corrupting half its results: exact, and the faulty worker is flagged"

# Without quorum, a corrupted total with stale residues is refused and recomputed. The corrupting
# worker runs alone until its first result is refused (with the good ones beside it, a loaded
# machine let them finish the job before it sent one), then the good ones come back to finish.
pkill -f -- "--id bad" 2>/dev/null
pkill -f -- "--id good" 2>/dev/null
NQ_FAULT_CORRUPT=0.5 start_worker bad2 --threads 1 --id bad2
id2=$("$NQ" submit count 13) || fail "submit"
rejected() { grep -q 'result.rejected.*residues do not match' "$T/broker.log"; }
wait_for 120 rejected || fail "no residue rejection logged"
start_worker good1 --threads 1 --id good1
start_worker good2 --threads 1 --id good2
wait_for 120 job_done "$id2" || fail "job without quorum did not finish"
[ "$(job_field "$id2" total)" = "$(oeis_total 13)" ] || fail "total with residue checks"
grep -q 'result.rejected.*residues do not match' "$T/broker.log" || fail "no residue rejection logged"
ok "without quorum: corrupted totals caught by the residues, refused, recomputed; exact"

# Results no count of their shard can give, with residues to match: refused before they count
# (the bounds `nq audit` checks a manifest's lines with), the sender struck, the answer exact.
need_wire_python
pkill -f -- "--connect $WEP" 2>/dev/null
sleep 0.5
id4=$("$NQ" submit count 10) || fail "submit"
out=$("$PY" "$SRC/tests/tools/hostile.py" impossible "$WEP") || fail "impossible: $out"
start_worker good3 --threads 1 --id good3
wait_for 120 job_done "$id4" || fail "the job did not finish after impossible results"
[ "$(job_field "$id4" total)" = "$(oeis_total 10)" ] || fail "an impossible result counted: $("$NQ" status "$id4" --json)"
n=$(grep -c 'event=result.rejected.*worker=hostile-impossible.*no count of the shard can give it' "$T/broker.log")
[ "$n" = 3 ] || fail "$n of 3 impossible results refused: $(grep hostile-impossible "$T/broker.log")"
"$NQ" workers | grep hostile-impossible | grep -q FLAGGED || fail "the sender is not flagged"
"$NQ" check --db w.db >/dev/null || fail "nq check"
ok "results no count can give (2^64-1, unique > total, nodes < total): refused, sender flagged; exact"

# A poison shard: every worker that takes shard 3 of the next job crashes.
pkill -f -- "--connect $WEP" 2>/dev/null
sleep 0.5
(while :; do NQ_FAULT_CRASH_SHARD=3 "$NQ" worker --connect "$WEP" --threads 1 --prefetch 0 >>"$T/poison.log" 2>&1; sleep 0.2; done) &
PIDS+=($!)
id3=$("$NQ" submit count 10 --max-attempts 3) || fail "submit poison"
wait_for 120 bash -c "[ \"\$($NQ status $id3 --json | grep -o '\"state\":\"[a-z]*\"')\" = '\"state\":\"failed\"' ]" \
    || fail "poison job did not end failed: $("$NQ" status "$id3" --json)"
[ "$(job_field "$id3" shards_failed)" = 1 ] || fail "want exactly one failed shard"
kill "${PIDS[-1]}"; pkill -f -- "--connect $WEP" 2>/dev/null
ok "poison shard: FAILED after 3 attempts, job failed and visible"

start_worker healthy --threads 2
"$NQ" retry "$id3" >/dev/null || fail "retry"
wait_for 60 job_done "$id3" || fail "retry did not finish"
[ "$(job_field "$id3" total)" = "$(oeis_total 10)" ] || fail "total after retry"
ok "nq retry after the fault is gone: exact"
