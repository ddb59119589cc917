#!/usr/bin/env bash
# Where no broker is named (no --broker, no NQ_BROKER) and none runs for ./nq.db (nothing listens
# on the socket beside it), the read-only commands (list, status, workers, result, export) read
# ./nq.db, the DB nq run leaves, and say so on stderr; the broker of ./nq.db is asked instead when
# it runs, and a named endpoint is never replaced by a file.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
unset NQ_BROKER
NOTE="read nq.db (no broker runs for it)"

"$NQ" run count 10 >/dev/null 2>&1 || fail "nq run count 10"
"$NQ" run solve 8 --restarts 3 >/dev/null 2>&1 || fail "nq run solve 8"
# Asked to wait 600 s for a broker, it must not wait at all: stopped at 60 s it would fail (a hang
# bound, not a speed: a loaded machine cannot make an instant fallback take a minute).
timeout 60 "$NQ" result 1 --timeout 600 >out.txt 2>err.txt || fail "nq result 1 without a broker: exit $? ($(cat err.txt))"
grep -q "N=10: 724 solutions" out.txt || fail "nq result 1: $(head -2 out.txt)"
grep -qF "nq result: $NOTE" err.txt || fail "nq result 1 did not say it read ./nq.db: $(cat err.txt)"
"$NQ" result 2 --board >out.txt 2>err.txt || fail "nq result 2 --board: exit $? ($(cat err.txt))"
[ "$(grep -c Q out.txt)" = 8 ] || fail "nq result 2 --board drew no 8 queens: $(cat out.txt)"
for cmd in "list" "status" "status 1" "workers" "export 1 --format csv"; do
    # shellcheck disable=SC2086
    "$NQ" $cmd >out.txt 2>err.txt || fail "nq $cmd without a broker: exit $? ($(cat err.txt))"
    grep -qF "nq ${cmd%% *}: $NOTE" err.txt || fail "nq $cmd did not say it read ./nq.db: $(cat err.txt)"
done
[ "$("$NQ" export 1 --format csv 2>/dev/null | wc -l)" -gt 2 ] || fail "nq export 1 read no rows"
ok "no broker named, none listening: result, result --board, list, status, workers, export read ./nq.db at once and say so"

# Another DB's broker in this folder is not asked; the broker of ./nq.db is, and says so.
start broker "$NQ" broker --db other.db --bind tcp://127.0.0.1:0
wait_for 20 "$NQ" list --db other.db || fail "the broker of other.db did not come up"
"$NQ" list >out.txt 2>err.txt || fail "nq list beside other.db's broker: exit $? ($(cat err.txt))"
grep -q count out.txt && grep -qF "nq list: $NOTE" err.txt || fail "nq list asked other.db's broker: $(cat err.txt)"
kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null
[ ! -e other.db.ctl ] || fail "a broker that stopped left its socket other.db.ctl behind"
start broker "$NQ" broker --bind tcp://127.0.0.1:0
wait_for 20 "$NQ" workers --timeout 1 || fail "the broker of ./nq.db did not come up"
"$NQ" list >out.txt 2>err.txt || fail "nq list with the broker of ./nq.db: exit $? ($(cat err.txt))"
grep -q count out.txt || fail "nq list from the broker of ./nq.db: $(cat out.txt)"
grep -qF "nq list: answered by the broker of nq.db (ipc://$T/nq.db.ctl)" err.txt ||
    fail "nq list did not name the broker of ./nq.db: $(cat err.txt)"
kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null
ok "the broker of ./nq.db answers instead of the file, another DB's broker never does"

# A named endpoint is never replaced by a file, nor is a missing ./nq.db invented.
NQ_BROKER=tcp://127.0.0.1:$(free_port) "$NQ" list --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] && grep -q "nothing accepts connections there" err.txt || fail "NQ_BROKER named a dead endpoint: exit $rc ($(cat err.txt))"
"$NQ" list --broker "tcp://127.0.0.1:$(free_port)" --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] || fail "--broker named a dead endpoint: exit $rc ($(cat err.txt))"
mkdir empty && cd empty || exit 1
"$NQ" list --timeout 1 >out.txt 2>err.txt; rc=$?
[ $rc = 3 ] && grep -q "no broker runs for nq.db" err.txt || fail "no broker and no ./nq.db: exit $rc ($(cat err.txt))"
[ ! -e nq.db ] || fail "nq list created ./nq.db"
ok "a named endpoint (NQ_BROKER, --broker) that is down, or no ./nq.db: the broker's error, exit 3, no file made"
