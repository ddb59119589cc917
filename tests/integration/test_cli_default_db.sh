#!/usr/bin/env bash
# Where no broker is named (no --broker, no NQ_BROKER) and nothing listens on the default control
# endpoint, the read-only commands (list, status, workers, result, export) read ./nq.db, the DB
# nq run leaves, and say so on stderr; a broker that does listen there is asked instead, and a
# named endpoint is never replaced by a file. It runs in a network namespace of its own, so the
# default port is ours alone (another test's or person's broker on this machine cannot answer).
if [ -z "${NQ_OWN_NETNS:-}" ]; then
    if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
        echo "skipped: needs root for a network namespace (unshare -n)"
        exit 77
    fi
    NQ_OWN_NETNS=1 exec unshare -n bash "$0" "$@"
fi
ip link set lo up 2>/dev/null || { echo "FAIL: cannot bring up lo in the namespace"; exit 1; }
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
unset NQ_BROKER
NOTE="no broker at tcp://127.0.0.1:7556; reading ./nq.db"

"$NQ" run count 10 >/dev/null 2>&1 || fail "nq run count 10"
"$NQ" run solve 8 --restarts 3 >/dev/null 2>&1 || fail "nq run solve 8"
t0=$(date +%s.%N)
"$NQ" result 1 >out.txt 2>err.txt || fail "nq result 1 without a broker: exit $? ($(cat err.txt))"
t1=$(date +%s.%N)
grep -q "N=10: 724 solutions" out.txt || fail "nq result 1: $(head -2 out.txt)"
grep -qF "nq result: $NOTE" err.txt || fail "nq result 1 did not say it read ./nq.db: $(cat err.txt)"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' || fail "nq result 1 took $t0..$t1 s: it waited for a broker"
"$NQ" result 2 --board >out.txt 2>err.txt || fail "nq result 2 --board: exit $? ($(cat err.txt))"
[ "$(grep -c Q out.txt)" = 8 ] || fail "nq result 2 --board drew no 8 queens: $(cat out.txt)"
for cmd in "list" "status" "status 1" "workers" "export 1 --format csv"; do
    # shellcheck disable=SC2086
    "$NQ" $cmd >out.txt 2>err.txt || fail "nq $cmd without a broker: exit $? ($(cat err.txt))"
    grep -qF "nq ${cmd%% *}: $NOTE" err.txt || fail "nq $cmd did not say it read ./nq.db: $(cat err.txt)"
done
[ "$("$NQ" export 1 --format csv 2>/dev/null | wc -l)" -gt 2 ] || fail "nq export 1 read no rows"
ok "no broker named, none listening: result, result --board, list, status, workers, export read ./nq.db at once and say so"

# A broker on the default endpoints is asked, not the file beside it.
start broker "$NQ" broker --db other.db
wait_for 20 "$NQ" list --broker tcp://127.0.0.1:7556 --timeout 1 || fail "a broker on the default endpoint did not come up"
"$NQ" list >out.txt 2>err.txt || fail "nq list with a broker listening: exit $? ($(cat err.txt))"
grep -q count out.txt && fail "nq list read ./nq.db although a broker listens: $(cat out.txt)"
[ -s err.txt ] && fail "nq list said something with a broker listening: $(cat err.txt)"
"$NQ" result 1 >out.txt 2>err.txt; rc=$?
[ $rc = 1 ] || fail "nq result 1 asked of an empty broker: exit $rc, want 1 ($(cat err.txt))"
kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null
ok "a broker listening on the default endpoint answers instead of ./nq.db"

# A named endpoint is never replaced by a file, nor is a missing ./nq.db invented.
NQ_BROKER=tcp://127.0.0.1:$(free_port) "$NQ" list --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] && grep -q "no answer from the broker" err.txt || fail "NQ_BROKER named a dead endpoint: exit $rc ($(cat err.txt))"
"$NQ" list --broker "tcp://127.0.0.1:$(free_port)" --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] || fail "--broker named a dead endpoint: exit $rc ($(cat err.txt))"
mkdir empty && cd empty || exit 1
"$NQ" list --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] && grep -q "no answer from the broker" err.txt || fail "no broker and no ./nq.db: exit $rc ($(cat err.txt))"
[ ! -e nq.db ] || fail "nq list created ./nq.db"
ok "a named endpoint (NQ_BROKER, --broker) that is down, or no ./nq.db: the broker's error, exit 3, no file made"
