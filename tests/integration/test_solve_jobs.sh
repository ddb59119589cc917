#!/usr/bin/env bash
# Solve jobs through the broker: --solutions 3 gives three distinct verified
# solutions and cancels the remaining seeds; a solution too large for the DB
# row (N > 10^5) is stored in a file beside the DB named by its hash, and comes
# back verified through `nq result --out`, with the broker up or down; such a
# solution is checked off the broker's loop, and a clashing one is refused.
# Nothing here depends on the machine's speed: no clock or CPU time is compared.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

start_broker s.db
start_worker w1 --threads 1
id=$("$NQ" submit solve 2000000 --restarts 40 --solutions 3) || fail "submit"
wait_for 180 job_done "$id" || fail "solve job did not finish: $("$NQ" status "$id" --json)"
res=$("$NQ" result "$id" --json)
found=$(echo "$res" | json_get solutions_found)
cancelled=$(echo "$res" | json_get shards_cancelled)
[ "$found" -ge 3 ] || fail "found $found solutions"
[ "$cancelled" -gt 0 ] || fail "no seed was cancelled: $res"
hashes=$(echo "$res" | grep -o '"hash":"[0-9a-f]*"' | sort -u | wc -l)
[ "$hashes" = "$found" ] || fail "$found solutions but $hashes distinct hashes"
ok "solve --solutions 3: $found distinct solutions, $cancelled seeds cancelled"

ls s.db.solutions/*.nqsol >/dev/null 2>&1 || fail "no solution file beside the DB"
"$NQ" result "$id" --out sol.bin --format bin || fail "result --out through the broker"
"$NQ" verify sol.bin --n 2000000 || fail "binary solution from the broker does not verify"
kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
"$NQ" result "$id" --db s.db --out sol.txt || fail "result --out with --db"
"$NQ" verify sol.txt --n 2000000 || fail "stored large solution does not verify"
ok "a large solution is stored beside the DB by hash and verifies after the round trip"

# A big solution is checked off the broker's loop: while the verifier holds one (a test-build gate,
# NQ_FAULT_VERIFY_GATE, so no clock decides), the loop answers `nq status` and the job waits for the
# verdict; once the gate opens the solution is stored and comes back verified. A hostile worker's
# clashing 300,000-row permutation (sent twice) is refused once and stored nowhere.
need_wire_python
NQ_FAULT_VERIFY_GATE=$T/gate BROKER_N=2 start_broker s2.db --heartbeat-ms 1000 --liveness 10
start_worker w2 --threads 1
id=$("$NQ" submit solve 1000000) || fail "submit"
wait_for 120 test -e "$T/gate.held" || fail "no solution reached the verifier: $("$NQ" status "$id" --json)"
st=$("$NQ" status "$id" --json --timeout 10) || fail "the loop did not answer while a solution was checked"
[ "$(echo "$st" | json_get solutions_found)" = 0 ] || fail "stored before its verdict: $st"
touch "$T/gate"
wait_for 120 job_done "$id" || fail "solve 10^6 did not finish once checked: $("$NQ" status "$id" --json)"
"$NQ" result "$id" --db s2.db --out big.bin --format bin >/dev/null && "$NQ" verify big.bin --n 1000000 >/dev/null \
    || fail "the 10^6 solution does not come back verified"
ok "solve 10^6 through the broker: the loop answered while the verifier held the solution; it verifies"
pkill -f -- "--connect $WEP" 2>/dev/null     # the hostile worker alone takes the next task
sleep 0.5
id=$("$NQ" submit solve 300000) || fail "submit"
out=$("$PY" "$SRC/tests/tools/hostile.py" bad_solution "$WEP" 300000) || fail "bad_solution: $out"
n=$(grep -c "event=result.rejected.*worker=hostile-solver.*solution fails verification" "$T/broker2.log")
[ "$n" = 1 ] || fail "$n refusals of the clashing solution: $(grep hostile-solver "$T/broker2.log")"
[ "$(job_field "$id" solutions_found)" = 0 ] || fail "a clashing solution was stored"
ok "a clashing 300,000-queen solution, sent twice: checked off the loop, refused once ($out)"

# An honest resend that crossed its ACK (its parts were dropped while the first copy was checked):
# the RESULT alone comes after the shard is decided. It is acknowledged, not refused as a solution
# "missing or incomplete" (which struck the worker, and warned in the README's solve of 10^8).
id=$("$NQ" submit solve 100002) || fail "submit"
out=$("$PY" "$SRC/tests/tools/hostile.py" resend_after_ack "$WEP" 100002) || fail "resend_after_ack: $out"
[ "$out" = "resend_after_ack: 2 acked" ] || fail "the resend was not acknowledged: $out"
grep -q "event=result.rejected.*worker=resender" "$T/broker2.log" && fail "a resend was refused: $(grep resender "$T/broker2.log")"
[ "$(job_field "$id" solutions_found)" = 1 ] || fail "the resent solution: $("$NQ" status "$id" --json)"
ok "a RESULT resent after its ACK, without its parts: acknowledged, not refused"
