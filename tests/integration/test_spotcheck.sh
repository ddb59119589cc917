#!/usr/bin/env bash
# Adaptive spot-checks (--verify-rate): a worker that corrupts 1 % of its count results with
# matching residues (test-only fault switch), so only a second opinion can catch it. With
# --verify-rate 0.05 the job ends exact, the liar is flagged, and every result it delivered
# is checked by another identity; without it, the same run ends wrong. An honest campaign
# under the same rate flags nobody. Bad --verify-rate values are refused.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

"$NQ" help worker >/dev/null || fail "no nq"
if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped: this nq was built without -DNQ_TEST_FAULTS=ON (tests/run.sh turns it on)"
    exit 77
fi
N=14 DEPTH=4                            # 52,118 shards: the liar delivers thousands of them

# refusals first: they need no worker
start_broker s.db --http 127.0.0.1:@MPORT@
for bad in -0.1 1.5 abc 0.0000001 nan 1e-3 ''; do
    if "$NQ" submit count 8 --verify-rate "$bad" >/dev/null 2>"$T/err"; then
        fail "--verify-rate '$bad' accepted"
    fi
    grep -q "verify-rate" "$T/err" || fail "--verify-rate '$bad': unclear error: $(cat "$T/err")"
done
"$NQ" submit solve 8 --verify-rate 0.1 >/dev/null 2>"$T/err" && fail "solve with --verify-rate accepted"
grep -q "count jobs" "$T/err" || fail "solve refusal unclear: $(cat "$T/err")"
"$NQ" submit count 8 --verify-rate 0.1 --quorum 2 >/dev/null 2>"$T/err" && fail "--quorum with --verify-rate"
"$NQ" run count 8 --db "$T/run.db" --verify-rate 0.1 >/dev/null 2>"$T/err" && fail "nq run took --verify-rate"
grep -q "independent workers" "$T/err" || fail "nq run refusal unclear: $(cat "$T/err")"
[ ! -e "$T/run.db" ] || fail "a refused nq run left a DB behind"
ok "bad --verify-rate values, solve, --quorum with it, and nq run: refused with a reason"

liar() { NQ_FAULT_CORRUPT=0.01 NQ_FAULT_CORRUPT_MODE=consistent start_worker "$@"; }
workers() {
    start_worker good1 --threads 1 --id good1
    start_worker good2 --threads 1 --id good2
    start_worker good3 --threads 1 --id good3
    liar liar --threads 1 --id liar
}
workers
id=$("$NQ" submit count $N --depth $DEPTH --verify-rate 0.05) || fail "submit"
wait_for 240 job_done "$id" || fail "job did not finish: $("$NQ" status "$id")"
st=$("$NQ" status "$id" --json)
[ "$(echo "$st" | json_get total)" = "$(oeis_total $N)" ] || fail "total wrong: $st"
[ "$(echo "$st" | json_get unique)" = "$(oeis_unique $N)" ] || fail "unique wrong: $st"
echo "$st" | grep -q '"flagged":\["liar"\]' || fail "the liar is not the one flagged: $st"
[ "$(echo "$st" | json_get checks_open)" = 0 ] || fail "checks left open: $st"
"$NQ" status "$id" | grep -q "flagged.*liar" || fail "nq status does not name the liar"
"$NQ" workers | grep liar | grep -q FLAGGED || fail "nq workers does not flag the liar"
curl -s "http://127.0.0.1:$MPORT/jobs/$id" | grep -q 'id="flagged">liar<' \
    || fail "the web page does not flag the liar"
# every result the liar delivered was checked by another identity: no done shard of the job is
# the liar's without a check row that agrees with it (a lost dispute replaced its result)
liar_id=$(sql s.db "SELECT id FROM identities WHERE worker = 'liar'")
unchecked=$(sql s.db "SELECT count(*) FROM shards s
                      WHERE s.job = $id AND s.who = $liar_id AND s.state = 'done'
                      AND NOT EXISTS (SELECT 1 FROM checks c WHERE c.job = s.job AND c.idx = s.idx
                                      AND c.who <> $liar_id AND c.agreed = 1)")
delivered=$(sql s.db "SELECT results FROM identities WHERE id = $liar_id")
[ "$unchecked" = 0 ] || fail "$unchecked of the liar's results were never checked"
honest=$(sql s.db "SELECT count(*) FROM job_flagged WHERE job = $id AND who <> $liar_id")
[ "$honest" = 0 ] || fail "$honest honest identities flagged"
ok "liar at 1 %, --verify-rate 0.05: exact; liar flagged; all $delivered of its results checked" \
   "($(echo "$st" | json_get checks) checks, $(echo "$st" | json_get checks_disagreed) disagreed)"

# the same run without the check ends wrong: the check is what saved it
pkill -f -- "--connect $WEP" 2>/dev/null
sleep 0.5
workers
id2=$("$NQ" submit count $N --depth $DEPTH --priority 1) || fail "submit without verify"
wait_for 240 job_done "$id2" || fail "job without verify did not finish"
[ "$(job_field "$id2" total)" != "$(oeis_total $N)" ] || fail "the liar's corruption did not show"
ok "without --verify-rate the same workers end with a wrong total: $(job_field "$id2" total)"

# an honest campaign under spot-checks flags nobody, across a kill -9 of the broker: the open
# checks and who delivered what are in the store, so the restarted broker finishes them
pkill -f -- "--connect $WEP" 2>/dev/null
sleep 0.5
start_worker h1 --threads 1 --id h1
start_worker h2 --threads 1 --id h2
h2=$LAST_PID
id3=$("$NQ" submit count 12 --depth 4 --verify-rate 0.05 --priority 2) || fail "submit honest"
wait_for 60 bash -c "[ \$(sqlite3 -readonly s.db 'SELECT checks FROM jobs WHERE id = $id3') -gt 20 ]" \
    || fail "no checks before the kill"
kill -STOP "$h2"                        # h1's results now wait for h2, the only other identity
open_sql="SELECT count(*) FROM shards WHERE job = $id3 AND verify <> 0"
wait_for 60 bash -c "[ \$(sqlite3 -readonly s.db \"$open_sql\") -ge 5 ]" \
    || fail "no checks open before the kill"
kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
open=$(sql s.db "SELECT count(*) FROM shards WHERE job = $id3 AND verify <> 0")
kill -CONT "$h2"
BROKER_N=2 start_broker s.db --grace 1
wait_for 120 job_done "$id3" || fail "honest job did not finish after the restart: $("$NQ" status "$id3")"
st=$("$NQ" status "$id3" --json)
[ "$(echo "$st" | json_get total)" = "$(oeis_total 12)" ] || fail "honest total: $st"
[ "$(echo "$st" | json_get flagged_count)" = 0 ] || fail "an honest worker was flagged: $st"
[ "$(echo "$st" | json_get checks_disagreed)" = 0 ] || fail "honest workers disagreed: $st"
[ "$(echo "$st" | json_get checks_open)" = 0 ] || fail "checks left open: $st"
never=$(sql s.db "SELECT count(*) FROM shards WHERE job = $id3 AND state = 'done' AND who IS NULL")
[ "$never" = 0 ] || fail "$never done shards without the identity that delivered them"
ok "honest campaign, --verify-rate 0.05, broker killed with $open checks open: exact," \
   "$(echo "$st" | json_get checks) checks, none disagreed, nobody flagged"
