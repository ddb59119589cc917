#!/usr/bin/env bash
# Only authorised machines join: nq keygen, a CURVE broker with a ZAP
# allow-list, workers with the right key, a key not on the list, the wrong
# broker key, no key; the refusal to bind a public address without keys; the
# client commands over CURVE when the control endpoint is not loopback, with an
# allow-list of their own: a worker's key cannot control the broker, nor a
# client's key join as a worker.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_faults.sh"
cd "$T" || exit 1

BUG_DB=''

# ---- keygen ----
"$NQ" keygen w1 >/dev/null || fail "keygen w1"
[ "$(stat -c %a w1.key)" = 600 ] || fail "w1.key mode is $(stat -c %a w1.key), expected 600"
[ -f w1.pub ] || fail "no w1.pub"
pub=$(cat w1.pub)
[ ${#pub} = 40 ] || fail "w1.pub does not hold one 40-character Z85 key: '$pub'"
grep -qF "public = $pub" w1.key || fail "w1.key does not hold the public key of w1.pub"
sum=$(sha256sum w1.key w1.pub)
"$NQ" keygen w1 >out.txt 2>err.txt; rc=$?
[ "$rc" != 0 ] || fail "keygen overwrote an existing key pair"
grep -qi "w1.key" err.txt || fail "keygen refusal does not name the file: $(cat err.txt)"
[ "$sum" = "$(sha256sum w1.key w1.pub)" ] || fail "the refused keygen changed the files"
"$NQ" keygen >/dev/null 2>&1; [ $? = 2 ] || fail "keygen without a name should exit 2"
ok "keygen: NAME.key 0600 + NAME.pub; refuses to overwrite (exit $rc, files unchanged)"

# A broker key whose Z85 text contains '=' (a Z85 digit): about 1 in 3 keys does.
for i in $(seq 100); do
    "$NQ" keygen "b$i" >/dev/null || fail "keygen b$i"
    if grep -q = "b$i.pub"; then cp "b$i.key" b.key; cp "b$i.pub" b.pub; break; fi
done
[ -f b.pub ] || fail "no key with '=' in 100 tries"
for k in w2 ops other att; do "$NQ" keygen $k >/dev/null || fail "keygen $k"; done
mkdir allowed clients && cp w1.pub att.pub allowed/ && cp ops.pub clients/

# ---- refusals at start ----
P=$(free_port); C=$(free_port)
"$NQ" broker --db x.db --bind tcp://0.0.0.0:$P --control tcp://127.0.0.1:$C >out.txt 2>err.txt; rc=$?
[ "$rc" != 0 ] || fail "broker bound 0.0.0.0 without keys"
grep -q -- "--insecure" err.txt || fail "refusal does not mention --insecure: $(cat err.txt)"
ok "bind tcp://0.0.0.0 without keys: refused (exit $rc): $(cat err.txt)"
"$NQ" broker --db x.db --authorized-keys allowed >/dev/null 2>err.txt; rc=$?
[ "$rc" = 2 ] || fail "--authorized-keys without --key: exit $rc, expected 2"
"$NQ" broker --db x.db --key b.key --bind tcp://127.0.0.1:$P --control tcp://127.0.0.1:$C >/dev/null 2>err.txt; rc=$?
[ "$rc" != 0 ] && grep -q -- "--authorized-keys" err.txt || fail "--key without an allow-list: exit $rc: $(cat err.txt)"
echo "not a key" >bad.list
"$NQ" broker --db x.db --key b.key --authorized-keys bad.list --bind tcp://127.0.0.1:$P \
    --control tcp://127.0.0.1:$C >/dev/null 2>err.txt; rc=$?
[ "$rc" = 3 ] && grep -q "bad.list:1" err.txt || fail "bad allow-list line: exit $rc: $(cat err.txt)"
"$NQ" broker --db x.db --key w1.pub --authorized-keys allowed --bind tcp://127.0.0.1:$P \
    --control tcp://127.0.0.1:$C >/dev/null 2>err.txt; rc=$?
[ "$rc" = 3 ] && grep -qi "secret" err.txt || fail "broker given a .pub as --key: exit $rc: $(cat err.txt)"
ok "--authorized-keys without --key (exit 2), --key without a list, a bad list line, a .pub as --key: all refused"
"$NQ" broker --db x.db --key b.key --authorized-keys allowed --bind tcp://127.0.0.1:$P \
    --control tcp://0.0.0.0:$C >/dev/null 2>err.txt; rc=$?
[ "$rc" = 3 ] && grep -q -- "--control-keys" err.txt || fail "control off loopback without --control-keys: exit $rc: $(cat err.txt)"
mkdir both && cp ops.pub w1.pub both/
"$NQ" broker --db x.db --key b.key --authorized-keys allowed --control-keys both --bind tcp://127.0.0.1:$P \
    --control tcp://0.0.0.0:$C >/dev/null 2>err.txt; rc=$?
[ "$rc" = 3 ] && grep -qF "key $(cat w1.pub) is in both" err.txt || fail "a key in both lists: exit $rc: $(cat err.txt)"
"$NQ" broker --db x.db --control-keys clients >/dev/null 2>err.txt; rc=$?
[ "$rc" = 2 ] || fail "--control-keys without --key: exit $rc, expected 2"
ok "control off loopback without --control-keys, a key in both lists, --control-keys without --key: refused"
# A refused start must change nothing: no database file left behind.
if [ -e x.db ]; then
    BUG_DB="a refused broker start (bad bind/keys) still created its --db file x.db ($(stat -c %s x.db) bytes)"
    echo "BUG: $BUG_DB" >&2
fi

for try in 1 2 3 4 5; do                # new ports if a parallel test took ours meanwhile
    spawn insecure "$NQ" broker --db ins.db --bind tcp://0.0.0.0:$P --control tcp://127.0.0.1:$C --insecure
    ins=$LAST
    wait_for 20 bash -c "kill -0 $ins 2>/dev/null || exit 0; $NQ list --broker tcp://127.0.0.1:$C --timeout 1" || true
    grep -q "already in use" "$T/insecure.log" 2>/dev/null || break
    P=$(free_port); C=$(free_port)
done
"$NQ" list --broker tcp://127.0.0.1:$C --timeout 1 >/dev/null 2>&1 || fail "--insecure broker did not start"
stop_pid "$ins"
ok "bind tcp://0.0.0.0 with --insecure: starts"

# ---- a CURVE broker; its control endpoint is not loopback, so clients need keys too ----
CLIENT_KEYS=(--key ops.key --broker-key b.pub)
for try in 1 2 3 4 5; do                # new ports if a parallel test took ours meanwhile
    WEP=tcp://127.0.0.1:$(free_port)
    CP=$(free_port)
    export NQ_BROKER=tcp://127.0.0.1:$CP
    spawn broker "$NQ" broker --db a.db --bind "$WEP" --control "tcp://0.0.0.0:$CP" --key b.key \
        --authorized-keys allowed --control-keys clients --heartbeat-ms 200 --liveness 3
    BROKER_PID=$LAST
    wait_for 30 bash -c "kill -0 $BROKER_PID 2>/dev/null || exit 0; $NQ list --timeout 1 ${CLIENT_KEYS[*]}" || true
    grep -q "already in use" "$T/broker.log" 2>/dev/null || break
    wait "$BROKER_PID" 2>/dev/null
done
"$NQ" list --timeout 2 "${CLIENT_KEYS[@]}" >/dev/null 2>&1 || fail "CURVE broker did not come up: $(cat broker.log)"
"$NQ" list --timeout 2 >out.txt 2>err.txt; rc=$?
[ "$rc" = 3 ] || fail "a client without keys got an answer from a CURVE control endpoint (exit $rc)"
ok "client without keys on the CURVE control endpoint: exit 3: $(head -1 err.txt)"
"$NQ" list --timeout 5 --key w2.key --broker-key b.pub >out.txt 2>err.txt; rc=$?
[ "$rc" = 3 ] && grep -qiE "key|authori" err.txt || fail "client with a key not on the list: exit $rc: $(cat err.txt)"
ok "client with a key not on the list: exit 3: $(head -1 err.txt)"

worker_up good --threads 1 --key w1.key --broker-key b.pub
good=$LAST
id=$("$NQ" submit count 10 "${CLIENT_KEYS[@]}") || fail "submit over CURVE"
wait_for 60 bash -c "$NQ status $id --json ${CLIENT_KEYS[*]} | grep -q '\"state\":\"done\"'" || fail "count 10 over CURVE did not finish"
js=$("$NQ" status "$id" --json "${CLIENT_KEYS[@]}")
[ "$(echo "$js" | json_get total)" = "$(oeis_total 10)" ] || fail "count 10 over CURVE: $js"
ok "worker with an allowed key joins; submit/status over CURVE control; count 10 exact"

# A worker's key on the control endpoint: refused, whatever it asks (it once cancelled jobs,
# submitted priority-10^6 jobs and retried).
for op in list "submit count 10 --priority 1000000" "cancel $id" "retry $id"; do
    # shellcheck disable=SC2086
    "$NQ" $op --timeout 3 --key w1.key --broker-key b.pub >out.txt 2>err.txt; rc=$?
    [ "$rc" = 3 ] || fail "a worker's key: nq $op exited $rc: $(cat out.txt err.txt)"
done
grep -qF "auth.refused key=$(cat w1.pub) endpoint=control" broker.log || fail "no auth.refused for the worker's key on control"
[ "$("$NQ" list --json "${CLIENT_KEYS[@]}" | grep -o '"id":' | wc -l)" = 1 ] || fail "a worker's key submitted a job"
[ "$("$NQ" status "$id" --json "${CLIENT_KEYS[@]}" | json_get state)" = done ] || fail "a worker's key changed job $id"
ok "a worker's key on the control endpoint: list, submit, cancel, retry all refused (exit 3)"
"$NQ" workers --json "${CLIENT_KEYS[@]}" | grep -qF "$(cat w1.pub)" || fail "nq workers does not show w1's public key"
ok "nq workers shows the public key that delivered ($(cat w1.pub))"

# expect_refused_worker LABEL WORDS [worker options]: exits 3 within 20 s, saying WORDS.
expect_refused_worker() {
    local label=$1 words=$2 t0=$SECONDS rc; shift 2
    timeout 20 "$NQ" worker --connect "$WEP" --threads 1 "$@" >"$label.log" 2>&1; rc=$?
    [ "$rc" = 3 ] || fail "$label: worker exited $rc after $((SECONDS - t0)) s, expected 3: $(tail -3 "$label.log")"
    grep -qiE "$words" "$label.log" || fail "$label: unclear message: $(tail -3 "$label.log")"
    ok "$label: exit 3 after $((SECONDS - t0)) s: $(grep -a 'nq worker:' "$label.log" | head -1)"
}
expect_refused_worker "worker with a key not on the list" "authorized-keys|not allowed|refused our key" \
    --key w2.key --broker-key b.pub
grep -qF "auth.refused key=$(cat w2.pub)" broker.log || fail "broker did not log auth.refused for w2"
expect_refused_worker "worker with the wrong broker key" "broker-key|handshake" --key w1.key --broker-key other.pub
expect_refused_worker "a client's key as a worker" "authorized-keys|not allowed|refused our key" \
    --key ops.key --broker-key b.pub

# No keys at all: CURVE never starts, so there is no refusal to see; it must not join, and after
# a few silent rounds it says that the broker may want keys.
t0=$SECONDS
spawn nokey "$NQ" worker --connect "$WEP" --threads 1
nokey=$LAST
wait_for 60 grep -q 'event=worker.no_answer.*--key F and --broker-key F' nokey.log ||
    fail "keyless worker: no hint about keys in 60 s: $(cat nokey.log)"
"$NQ" workers --json "${CLIENT_KEYS[@]}" | grep -o '"alive":true' | wc -l | grep -qx 1 || fail "a keyless worker joined"
kill "$nokey"; wait "$nokey" 2>/dev/null
[ "$(grep -c 'event=worker.no_answer' nokey.log)" = 1 ] || fail "the hint came more than once: $(cat nokey.log)"
ok "worker without keys: not admitted; after $((SECONDS - t0)) s it says: $(grep -a 'worker.no_answer' nokey.log | sed 's/.*hint=//')"

# Session takeover: another allowed key on the victim's routing id, and on the victim's worker id.
# The honest worker leaves first: the scripted victim must find the job's shards still there (the
# worker once finished the job before the script's victim joined, and it held nothing), and comes
# back after to finish it.
need_wire_python
stop_pid "$good"
id=$("$NQ" submit count 13 --depth 2 "${CLIENT_KEYS[@]}") || fail "submit"
out=$($PY "$SRC/tests/tools/hostile.py" takeover "$WEP" b.pub w1.key att.key) || fail "takeover script: $out"
echo "$out"
worker_up good2 --threads 1 --key w1.key --broker-key b.pub
grep -q "victim held 2, attacker got 0 tasks and 0 acks" <<<"$out" || fail "takeover: $out"
grep -q 'event=message.refused worker=victim-w reason="sent with another key"' broker.log ||
    fail "results sent with another key on the victim's session were not refused"
grep -q 'event=hello.refused worker=victim-w reason="worker id belongs to another key"' broker.log ||
    fail "the victim's worker id was taken by another key"
if grep -q 'worker=victim-w.*reason="holder restarted"\|reason="holder restarted".*victim' broker.log; then
    fail "the attacker's re-HELLO dropped the victim's leases"
fi
wait_for 120 bash -c "$NQ status $id --json ${CLIENT_KEYS[*]} | grep -q '\"state\":\"done\"'" || fail "count 13 did not finish"
[ "$("$NQ" status "$id" --json "${CLIENT_KEYS[@]}" | json_get total)" = "$(oeis_total 13)" ] || fail "count 13 total wrong"
ok "takeover: results and re-HELLO under another key refused, the victim's name kept, count 13 exact"

[ -z "${BUG_DB:-}" ] || fail "$BUG_DB"
