#!/usr/bin/env bash
# A client or a worker that cannot reach a broker is told why at once, in words it can act on:
# nothing listens there (refused), the host does not resolve (the README's tcp://BROKER:7555
# placeholder), it reached the other endpoint of a broker (a worker at the control endpoint, a
# client at the workers'), or its key is not in the list of the endpoint it reached. Before, a
# client waited for its timeout and asked "is 'nq broker' running there?", and a worker logged
# broker_silent for ever. Each command gets a long --timeout and an outer `timeout` as a hang
# guard: a command that waited for its timeout instead of failing fails by its message.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
unset NQ_BROKER

# expect WANT_RC PATTERN CMD...: runs CMD (killed after 60 s), wants exit WANT_RC and PATTERN on stderr.
expect() {
    local want=$1 pattern=$2; shift 2
    timeout 60 "$@" >out.txt 2>err.txt </dev/null
    local rc=$?
    [ $rc = "$want" ] && grep -q -- "$pattern" err.txt || fail "$*: exit $rc, want $want and '$pattern': $(cat err.txt)"
}

dead=tcp://127.0.0.1:$(free_port)
expect 3 "nothing accepts connections there" "$NQ" list --broker "$dead" --timeout 3600
expect 3 "nothing accepts connections there" "$NQ" submit count 8 --broker "$dead" --timeout 3600
expect 3 "no broker listens on ipc://$T/none.ctl" "$NQ" status --broker "ipc://$T/none.ctl" --timeout 3600
ok "no broker at a named endpoint (tcp, ipc): said at once, not at the timeout"

expect 3 "cannot resolve the host 'nq-no-such-host.invalid'" "$NQ" status --broker tcp://nq-no-such-host.invalid:7556
expect 3 "cannot resolve the host 'nq-no-such-host.invalid'" "$NQ" worker --connect tcp://nq-no-such-host.invalid:7555
ok "an unresolvable host: client and worker say which host, and exit 3"

start_broker b.db
expect 2 "this is the broker's workers' endpoint" "$NQ" list --broker "$WEP" --timeout 3600
expect 3 "this is the broker's control endpoint" "$NQ" worker --connect "$CEP" --threads 1
grep -q "event=broker.start" "$T/broker.log" && kill -0 "$BROKER_PID" || fail "the broker did not stay up"
"$NQ" list >/dev/null 2>&1 || fail "the broker stopped answering after the wrong peers"
ok "a client at the workers' endpoint and a worker at the control endpoint are told exactly that"

"$NQ" keygen broker >/dev/null && "$NQ" keygen c1 >/dev/null && "$NQ" keygen c2 >/dev/null &&
    "$NQ" keygen w1 >/dev/null || fail "keygen"
P=$(free_port); C=$(free_port)
start keyed "$NQ" broker --db k.db --bind "tcp://127.0.0.1:$P" --control "tcp://0.0.0.0:$C" --key broker.key \
    --authorized-keys w1.pub --control-keys c1.pub
wait_for 20 "$NQ" list --broker "tcp://127.0.0.1:$C" --key c1.key --broker-key broker.pub ||
    fail "the keyed broker did not come up"
expect 3 "refused our key.*is our public key in its --control-keys" \
    "$NQ" list --broker "tcp://127.0.0.1:$C" --key c2.key --broker-key broker.pub --timeout 3600
expect 3 "refused our key.*is our public key in its --control-keys" \
    "$NQ" list --broker "tcp://127.0.0.1:$C" --key w1.key --broker-key broker.pub --timeout 3600
expect 3 "handshake with the broker failed" "$NQ" list --broker "tcp://127.0.0.1:$C" --timeout 3600
expect 3 "refused our key.*is our public key in its --authorized-keys" \
    "$NQ" worker --connect "tcp://127.0.0.1:$P" --key c1.key --broker-key broker.pub --threads 1
ok "a key not in --control-keys (a stranger's, a worker's) is told its key was refused, naming the list"
