#!/usr/bin/env bash
# Solve jobs through the broker: --solutions 3 gives three distinct verified
# solutions and cancels the remaining seeds; a solution too large for the DB
# row (N > 10^5) is stored in a file beside the DB named by its hash, and comes
# back verified through `nq result --out`, with the broker up or down.
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
