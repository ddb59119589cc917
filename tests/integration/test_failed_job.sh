#!/usr/bin/env bash
# No wrong final answer through a failed job or error results. Scripted hostile workers
# (tests/tools/hostile.py):
#  1. fail a shard with an error RESULT, let the job end FAILED (it then leaves the broker's
#     memory), send a made-up result for that shard with the lease's real proof, and wait for
#     `nq retry`: the late result decides nothing, and the retried job runs its quorum again;
#     with keys, with spot-checks, and with a broker restart between the failure and the lie;
#  2. one CURVE key reports an error on the same shard from five fresh connections: only its
#     first error charges the shard, the third quarantines the key, and the shard never fails.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
H="$PY $SRC/tests/tools/hostile.py"
total6=$(oeis_total 6)
total8=$(oeis_total 8)

state_is() { [ "$(job_field "$1" state)" = "$2" ]; }
shard_failed() { [ "$(job_field "$1" shards_failed)" -ge 1 ]; }

"$NQ" keygen broker >/dev/null && "$NQ" keygen erring >/dev/null || fail "keygen"
for w in h1 h2 h3; do "$NQ" keygen "$w" >/dev/null || fail "keygen"; done
mkdir allowed && cp erring.pub h1.pub h2.pub h3.pub allowed/

# late_lie NAME RESTART KEYS SUBMIT-ARGS...: the attack of 1; RESTART=1 kills the broker (-9) after
# the job failed and before the lie, KEYS=1 runs everything keyed.
late_lie() {
    local name=$1 restart=$2 keyed=$3; shift 3
    local bargs=() hargs=() wk=() w
    if [ "$keyed" = 1 ]; then
        bargs=(--key broker.key --authorized-keys allowed)
        hargs=(broker.pub erring.key)
    fi
    DB=$name.db
    start_broker "$DB" "${bargs[@]}"
    id=$("$NQ" submit count 6 "$@") || fail "$name: submit"
    out=$($H error_rounds "$WEP" 1 "$name.json" "${hargs[@]}") || fail "$name: error_rounds: $out"
    wait_for 60 shard_failed "$id" || fail "$name: the error did not fail a shard: $("$NQ" status "$id" --json)"
    local pids=()
    for w in h1 h2 h3; do
        [ "$keyed" = 1 ] && wk=(--key "$w.key" --broker-key broker.pub)
        start_worker "$name-$w" --threads 1 --id "$name-$w" "${wk[@]}"; pids+=("$LAST_PID")
    done
    wait_for 60 state_is "$id" failed || fail "$name: the job did not end failed: $("$NQ" status "$id" --json)"
    if [ "$restart" = 1 ]; then
        kill -9 "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
        start_broker "$DB" "${bargs[@]}"
    fi
    out=$($H resend_saved "$WEP" "$name.json" 4680 "${hargs[@]}") || fail "$name: resend_saved: $out"
    sleep 0.5
    state_is "$id" failed || fail "$name: a late result moved the failed job: $("$NQ" status "$id" --json)"
    [ "$(job_field "$id" shards_failed)" = 1 ] || fail "$name: the late result decided the failed shard"
    grep -q "event=result.undecidable.*worker=hostile-erring-0" "$T/broker.log" \
        || fail "$name: the late result was not refused as undecidable"
    "$NQ" retry "$id" >/dev/null || fail "$name: retry"
    wait_for 60 job_done "$id" || fail "$name: the retried job did not finish: $("$NQ" status "$id" --json)"
    [ "$(job_field "$id" total)" = "$total6" ] || fail "$name: wrong final answer: $("$NQ" status "$id" --json)"
    "$NQ" check --db "$DB" >/dev/null || fail "$name: nq check fails"
    ok "$name: a late result for a failed job's shard decides nothing; retried, total $total6"
    kill "${pids[@]}" "$BROKER_PID"; wait "${pids[@]}" "$BROKER_PID" 2>/dev/null
}

late_lie quorum3 0 0 --quorum 3 --max-attempts 1
late_lie quorum3-restart 1 0 --quorum 3 --max-attempts 1
late_lie quorum3-keys 0 1 --quorum 3 --max-attempts 1
late_lie verify-keys-restart 1 1 --verify-rate 1 --max-attempts 1

# 2. One key, five fresh connections, one error each on the same shard (--max-attempts 5).
DB=errors.db
start_broker "$DB" --key broker.key --authorized-keys allowed
id=$("$NQ" submit count 8) || fail "submit"
out=$($H error_rounds "$WEP" 5 e.json broker.pub erring.key) || fail "error_rounds: $out"
grep -Eq "shards ([0-9]+) \1 \1 - -" <<<"$out" || fail "rounds 1-3 should get the same shard and 4-5 nothing: $out"
[ "$(job_field "$id" shards_failed)" = 0 ] || fail "one key failed a shard: $("$NQ" status "$id" --json)"
[ "$(grep -c 'event=result.error.*charged=1' "$T/broker.log")" = 1 ] || fail "more than one error charged"
grep -q 'event=worker.quarantined.*reported errors 3 times' "$T/broker.log" || fail "the key was not quarantined"
start_worker honest --key h1.key --broker-key broker.pub; hp=$LAST_PID
wait_for 60 job_done "$id" || fail "an honest worker did not finish: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$total8" ] || fail "wrong total"
ok "one key erring from five connections: $out; 1 attempt charged, quarantined, total $total8"
kill "$hp" "$BROKER_PID"; wait "$hp" "$BROKER_PID" 2>/dev/null
