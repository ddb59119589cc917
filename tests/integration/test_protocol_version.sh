#!/usr/bin/env bash
# One protocol version: a worker or a client of another nq release (protocol 4 or 6, scripted in
# tests/tools/hostile.py) is refused, and told so by an answer in ours: a worker gets a WELCOME
# that its own decoder refuses as "wrong version", a client a refusal saying which version the
# broker speaks. The broker says why in its log and serves this release's workers as before.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
H="$PY $SRC/tests/tools/hostile.py"

start_broker v.db
out=$($H other_versions "$WEP" "$CEP") || fail "other_versions script: $out"
echo "$out"
for v in 4 6; do
    grep -qx "worker v$v: 5 2 " <<<"$out" || fail "a protocol $v HELLO got no WELCOME in protocol 5: $out"
    grep -q "^client v$v: 5 12 this broker speaks protocol 5 only" <<<"$out" \
        || fail "a protocol $v request got no refusal in protocol 5: $out"
done
[ "$(grep -c 'message.bad.*wrong version' "$T/broker.log")" -ge 4 ] \
    || fail "the broker did not log the wrong versions: $(grep message.bad "$T/broker.log")"
"$NQ" workers --json | grep -q '"old-' && fail "a HELLO in another version made a worker row"
id=$("$NQ" submit count 6) || fail "submit"
start_worker w1
wait_for 60 job_done "$id" || fail "job $id did not finish after the refusals"
[ "$(job_field "$id" total)" = "$(oeis_total 6)" ] || fail "job $id total $(job_field "$id" total)"
ok "protocol 4 and 6 peers refused and told in protocol 5; a protocol 5 worker counted N=6"
