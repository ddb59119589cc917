#!/usr/bin/env bash
# A final answer stays final. Scripted hostile workers (tests/tools/hostile.py) try to rewrite a
# done count: a former lease holder sends 0 for the shards it once held, with their proofs
# (quorum 1 and quorum 2); a spot-check liar that lost its disputes resends its lies; one CURVE
# key sends the same made-up result under five worker ids to confirm itself. Each time the job
# stays done with the exact total, the late results are kept as evidence and shown, and one
# identity confirms nothing. Then variations: the attacks across kill -9 restarts of the broker,
# as stale votes before a quorum decides, from a session that outlived a broker restart, and with
# a running job's leases sent under the done job's id.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
H="$PY $SRC/tests/tools/hostile.py"
total8=$(oeis_total 8)

# stays_final JOB: done, total 92, `nq result` says so (exit 0, final), evidence shown.
stays_final() {
    local id=$1 what=$2
    [ "$(job_field "$id" state)" = done ] || fail "$what: the job left done: $("$NQ" status "$id" --json)"
    [ "$(job_field "$id" total)" = "$total8" ] || fail "$what: total rewritten: $("$NQ" status "$id" --json)"
    [ "$(job_field "$id" shards_conflict)" = 0 ] || fail "$what: conflicts on a done job"
    "$NQ" result "$id" >res.txt || fail "$what: nq result exited $?"
    grep -q "$total8" res.txt || fail "$what: nq result: $(cat res.txt)"
    local ev
    ev=$(job_field "$id" evidence)
    [ "${ev:-0}" -ge 1 ] || fail "$what: no evidence recorded: $("$NQ" status "$id" --json)"
    "$NQ" status "$id" | grep -q "evidence.*the answer stands" || fail "$what: nq status does not show the evidence"
    "$NQ" check --db "$DB" >/dev/null || fail "$what: nq check fails"
}

# 1. A former lease holder rewrites a done job: it takes every lease, leaves with BYE, honest
# workers finish, then it comes back as the same session and sends 0 for its old leases.
for q in 1 2; do
    DB=r$q.db
    start_broker "$DB"
    id=$("$NQ" submit count 8 --quorum $q) || fail "submit"
    out=$($H grab_and_bye "$WEP" lease$q.json) || fail "grab_and_bye"
    grep -q "grab_and_bye: 31 leases" <<<"$out" || [ $q = 2 ] || fail "the attacker took too few leases: $out"
    start_worker h1; h1=$LAST_PID
    [ $q = 1 ] || { start_worker h2; h2=$LAST_PID; }
    wait_for 60 job_done "$id" || fail "honest workers did not finish (quorum $q)"
    kill "$h1" ${h2:-}; wait "$h1" ${h2:-} 2>/dev/null; h2=
    out=$($H resend_saved "$WEP" lease$q.json 0) || fail "resend_saved"
    wait_for 30 grep -q "event=result.evidence.*worker=hostile-rewriter" "$T/broker.log" || fail "no evidence logged"
    stays_final "$id" "former holder, quorum $q"
    "$NQ" workers | grep "hostile-rewriter" | grep -q FLAGGED || fail "the rewriter is not flagged: $("$NQ" workers)"
    "$NQ" export "$id" --manifest ev$q.txt --db "$DB" >/dev/null || fail "export --manifest"
    marked=$(awk 'NR > 1 && NF == 12 && $10 > 0' ev$q.txt | wc -l)
    [ "$marked" -ge 1 ] || fail "the manifest does not mark the shards with evidence"
    "$NQ" audit ev$q.txt --sample 3 >audit.txt || fail "audit of the manifest: $(cat audit.txt)"
    grep -q "0 of 0 line(s) refuted by the checks and 3 of [0-9]* with evidence against a late result, on top of 3 drawn" audit.txt \
        || fail "the audit did not count shards with evidence on top of its draw: $(cat audit.txt)"
    ok "former lease holder after the job was done (quorum $q): $out; total stays $total8, evidence $(job_field "$id" evidence)"
    kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
done

# 2. A spot-check liar answers every shard with 0, loses every dispute to two honest workers,
# and then resends its original frames.
DB=s.db
start_broker "$DB"
id=$("$NQ" submit count 8 --verify-rate 1) || fail "submit"
$H lie_first "$WEP" liar.json >liar.out 2>&1 &
liar=$!
wait_for 60 test -s liar.json || fail "the liar took no leases: $(cat liar.out)"   # it took them all
start_worker h1; h1=$LAST_PID
start_worker h2; h2=$LAST_PID
wait "$liar" || fail "lie_first: $(cat liar.out)"
wait_for 60 job_done "$id" || fail "the spot-checked job did not finish: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$total8" ] || fail "the liar won: $("$NQ" status "$id" --json)"
grep -q "spotcheck.outvoted.*worker=hostile-liar" "$T/broker.log" || fail "the liar was not outvoted"
kill "$h1" "$h2"; wait "$h1" "$h2" 2>/dev/null
out=$($H resend_saved "$WEP" liar.json 0) || fail "resend_saved"
sleep 0.5
stays_final "$id" "outvoted liar resending"
ok "outvoted spot-check liar resends its frames: $out; total stays $total8"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null

# 3. One key under five worker ids: a resend is known by its identity, not the name it gives.
"$NQ" keygen broker >/dev/null && "$NQ" keygen liar >/dev/null || fail "keygen"
mkdir allowed && cp liar.pub allowed/
DB=k.db
start_broker "$DB" --key broker.key --authorized-keys allowed
id=$("$NQ" submit count 8) || fail "submit"
out=$($H one_key_many_ids "$WEP" broker.pub liar.key ids.json 5) || fail "one_key_many_ids: $out"
wait_for 10 job_done "$id" || fail "the job did not end on the liar's results: $("$NQ" status "$id" --json)"
conf=$(sql "$DB" "SELECT coalesce(max(confirmations), 0) FROM shards")
[ "$conf" = 0 ] || fail "one key confirmed itself: up to $conf confirmations a shard ($out)"
credited=$(sql "$DB" "SELECT count(*) FROM workers WHERE id LIKE 'liar-%' AND shards_done > 0")
[ "$credited" = 1 ] || fail "$credited worker ids credited for one key's results: $(sql "$DB" "SELECT id, shards_done FROM workers")"
# The broker is idle now and must not hold SQLite's write lock: the manifest's root is written
# beside it, and so can anyone with sqlite3.
sleep 0.5
"$NQ" export "$id" --manifest m.txt --db "$DB" >out.txt 2>&1 || fail "export --manifest beside an idle broker: $(cat out.txt)"
sqlite3 "$DB" ".timeout 3000" "CREATE TABLE probe (x); DROP TABLE probe;" || fail "sqlite3 cannot write beside an idle broker"
awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $9 != 0 { bad = 1 } END { exit bad }' m.txt || fail "the manifest counts confirmations"
ok "one key, five worker ids: $out; 0 confirmations, 1 worker credited"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null

# 4. Variations: the broker is killed (-9) and restarted between the end of the job and the
# attack (lease proofs survive restarts: the key is in the DB), and again after it; and under
# quorum 2, the former holder's stale votes arrive while the shards are still undecided: each is
# one vote of its identity, the disagreement holds the job open, and a second honest worker
# decides it.
DB=v.db
start_broker "$DB"
id=$("$NQ" submit count 8) || fail "submit"
$H grab_and_bye "$WEP" v.json >/dev/null || fail "grab_and_bye"
start_worker h1; h1=$LAST_PID
wait_for 60 job_done "$id" || fail "honest worker did not finish"
kill "$h1"; wait "$h1" 2>/dev/null
kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
start_broker "$DB"
out=$($H resend_saved "$WEP" v.json 0) || fail "resend_saved after a restart"
sleep 0.5
stays_final "$id" "former holder after a broker restart"
ev=$(job_field "$id" evidence)
kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
start_broker "$DB"
[ "$(job_field "$id" total)" = "$total8" ] && [ "$(job_field "$id" evidence)" = "$ev" ] \
    || fail "after a second restart: $("$NQ" status "$id" --json)"
ok "former holder after kill -9 and restart: $out; total stays $total8, evidence $ev kept across restarts"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null


DB=w.db
start_broker "$DB"
id=$("$NQ" submit count 8 --quorum 2) || fail "submit"
$H grab_and_bye "$WEP" w.json >/dev/null || fail "grab_and_bye"
start_worker h1; h1=$LAST_PID
one_vote_each() { [ "$(sql "$DB" "SELECT count(*) FROM shards WHERE job = $id AND state = 'leased'")" = 0 ] \
                  && [ "$(job_field "$id" shards_leased)" = 0 ]; }
wait_for 30 one_vote_each || fail "the honest worker did not vote: $("$NQ" status "$id" --json)"
out=$($H resend_saved "$WEP" w.json 0) || fail "resend_saved"
sleep 0.5
[ "$(job_field "$id" state)" = running ] || fail "stale votes decided the job: $("$NQ" status "$id" --json)"
start_worker h2; h2=$LAST_PID
wait_for 60 job_done "$id" || fail "a second honest worker did not decide the job: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$total8" ] || fail "stale votes changed the answer"
grep -q "quorum.outvoted.*worker=hostile-rewriter" "$T/broker.log" || fail "the stale voter was not outvoted"
ok "quorum 2, stale votes of 0 before the decision: $out; job held open, then $total8 with a second worker"
kill "$h1" "$h2" "$BROKER_PID"; wait "$h1" "$h2" "$BROKER_PID" 2>/dev/null

# 5. A session that outlives a kill -9 of the broker: its socket reconnects to the new broker on
# the same port by itself. Its results without a HELLO come from a peer the new broker does not
# know and are dropped; after a HELLO as the same session they are late results of a done job:
# evidence, never a change.
DB=x.db
WPORT=$(free_port); CPORT=$(free_port)
start_broker "$DB"
id=$("$NQ" submit count 8) || fail "submit"
rm -f flag
$H outlive_restart "$WEP" "$T/flag" >x.out 2>&1 &
survivor=$!
all_leased() { [ "$(job_field "$id" shards_leased)" = 31 ]; }
wait_for 10 all_leased || fail "the survivor took no leases: $("$NQ" status "$id" --json)"
sleep 1                                 # its take_all ends after 0.7 s without a new TASK
kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
start_broker "$DB"
start_worker h1; h1=$LAST_PID
wait_for 60 job_done "$id" || fail "the job did not finish after the restart: $("$NQ" status "$id" --json)"
touch flag
wait "$survivor" || fail "outlive_restart: $(cat x.out)"
grep -q "31 leases, 0 acked without HELLO, 31 after it" x.out || fail "outlive_restart: $(cat x.out)"
sleep 0.3
stays_final "$id" "a session that outlived a broker restart"
ok "a session that outlived kill -9 of the broker: $(cat x.out); total stays $total8"
kill "$h1" "$BROKER_PID"; wait "$h1" "$BROKER_PID" 2>/dev/null
WPORT=; CPORT=

# 6. A lease of a running job sent under a done job's id: the proof binds the lease to its job
# and shard, so each is a forgery, dropped without an ACK, and the done job is untouched.
DB=y.db
start_broker "$DB"
done_id=$("$NQ" submit count 8) || fail "submit"
start_worker h1; h1=$LAST_PID
wait_for 60 job_done "$done_id" || fail "the first job did not finish"
kill "$h1"; wait "$h1" 2>/dev/null
"$NQ" submit count 9 >/dev/null || fail "submit"
out=$($H cross_job "$WEP" "$done_id") || fail "cross_job: $out"
grep -q "leases sent as job $done_id, 0 acked" <<<"$out" || fail "cross_job: $out"
grep -q "event=result.forged job=$done_id" "$T/broker.log" || fail "no forgery logged"
[ "$(job_field "$done_id" total)" = "$total8" ] && [ "$(job_field "$done_id" evidence)" = 0 ] \
    || fail "a lease of another job touched the done one: $("$NQ" status "$done_id" --json)"
ok "leases of a running job sent as the done job's: $out; refused as forgeries, the done job untouched"
