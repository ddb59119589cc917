#!/usr/bin/env bash
# Each DB has its own broker endpoint (a unix socket beside it), so a client command reaches the
# broker of the DB it names (--db) or of ./nq.db, never another broker on the machine, and says
# on stderr which broker or DB answered. The three ways a client used to reach the wrong broker
# through one shared default port: a cancel from another folder, a status beside nq run's DB,
# and the README's order (nq run's ./nq.db, then a campaign broker in the same folder).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
unset NQ_BROKER
mkdir a b r empty

# start_dir_broker DIR [DB]: a broker on DIR/DB (default nq.db) with its default control endpoint.
start_dir_broker() {
    local dir=$1 db=${2:-nq.db}
    (cd "$dir" && exec "$NQ" broker --db "$db" --bind tcp://127.0.0.1:0) >"$T/broker-$dir.log" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
    (cd "$dir" && wait_for 20 "$NQ" list --db "$db") || fail "the broker in $dir did not come up"
}

# Two brokers in two folders, each on its own ./nq.db, with no worker: jobs stay pending.
start_dir_broker a
start_dir_broker b
(cd a && "$NQ" submit count 10 >../id.txt 2>../err.txt) || fail "submit in a: $(cat err.txt)"
[ "$(cat id.txt)" = 1 ] || fail "submit in a: id $(cat id.txt)"
grep -qF "answered by the broker of nq.db (ipc://$T/a/nq.db.ctl)" err.txt ||
    fail "submit in a did not say which broker answered: $(cat err.txt)"
(cd b && "$NQ" submit count 9 >/dev/null 2>&1) || fail "submit in b"
(cd a && "$NQ" cancel 1 >out.txt 2>../err.txt) || fail "cancel 1 in a: $(cat err.txt)"
[ "$(cd b && "$NQ" status 1 --json 2>/dev/null | json_get state)" = pending ] ||
    fail "cancel 1 in folder a reached b's broker: $(cd b && "$NQ" status 1 2>&1)"
[ "$(cd a && "$NQ" status 1 --json 2>/dev/null | json_get state)" = cancelled ] || fail "a's job 1 not cancelled"
[ "$(cd b && "$NQ" status 1 --json 2>/dev/null | json_get n)" = 9 ] || fail "status 1 in b is not b's job"
(cd empty && "$NQ" cancel 1 >out.txt 2>err.txt); rc=$?
[ $rc = 3 ] && grep -q "no broker runs for nq.db" empty/err.txt ||
    fail "cancel 1 in an empty folder: exit $rc ($(cat empty/err.txt))"
(cd empty && "$NQ" submit count 10 >out.txt 2>err.txt); rc=$?
[ $rc = 3 ] && [ ! -e empty/nq.db ] || fail "submit in an empty folder: exit $rc ($(cat empty/err.txt))"
[ "$(cd b && "$NQ" status 1 --json 2>/dev/null | json_get state)" = pending ] || fail "b's job 1 changed"
"$NQ" status 1 --json --db b/nq.db >out.json 2>err.txt || fail "status --db b/nq.db: $(cat err.txt)"
python3 -c 'import json,sys; d=json.load(open("out.json")); sys.exit(d["n"] != 9)' ||
    fail "status --json --db b/nq.db is not b's job as JSON: $(cat out.json)"
grep -qF "answered by the broker of b/nq.db (ipc://$T/b/nq.db.ctl)" err.txt ||
    fail "status --db b/nq.db did not name b's broker: $(cat err.txt)"
ok "two brokers in two folders: submit, cancel and status reach their folder's broker only, and say which"

# Beside nq run's DB, with another broker running: the file beside us answers, not that broker.
(cd r && "$NQ" run count 8 >/dev/null 2>&1) || fail "nq run count 8"
(cd r && "$NQ" status 1 --json >out.json 2>err.txt) || fail "status 1 beside nq.db: $(cat r/err.txt)"
[ "$(json_get n <r/out.json)" = 8 ] && [ "$(json_get state <r/out.json)" = done ] ||
    fail "status 1 beside nq run's DB answered another job: $(cat r/out.json)"
grep -qF "read nq.db (no broker runs for it)" r/err.txt || fail "status 1 did not say it read nq.db: $(cat r/err.txt)"
ok "status beside nq run's DB reads that DB while other brokers run, and says so"

# The README's order: nq run's ./nq.db, then a campaign broker on campaign.db in the same folder.
start_dir_broker r campaign.db
(cd r && "$NQ" submit count 11 --db campaign.db >/dev/null 2>&1) || fail "submit --db campaign.db"
(cd r && "$NQ" result 1 --json >out.json 2>err.txt) || fail "result 1 --json: $(cat r/err.txt)"
python3 -c 'import json,sys; d=json.load(open("r/out.json")); sys.exit(not (d["n"] == 8 and d["total"] == 92))' ||
    fail "result 1 --json beside nq.db is not nq run's N=8: $(cat r/out.json)"
(cd r && "$NQ" result 1 --json --db campaign.db >out.json 2>err.txt); rc=$?
[ "$(json_get n <r/out.json)" = 11 ] || fail "result 1 --db campaign.db: exit $rc, $(cat r/out.json) $(cat r/err.txt)"
grep -qF "answered by the broker of campaign.db" r/err.txt || fail "result --db campaign.db: $(cat r/err.txt)"
ok "README order: result 1 reads ./nq.db, result 1 --db campaign.db asks campaign.db's broker"

# A DB path too long for a unix socket: the socket lives elsewhere, found the same way.
long=$T/$(printf 'x%.0s' $(seq 1 60))/$(printf 'y%.0s' $(seq 1 60))
mkdir -p "$long"
(cd "$long" && exec "$NQ" broker --bind tcp://127.0.0.1:0) >"$T/broker-long.log" 2>&1 &
PIDS+=("$!")
wait_for 20 "$NQ" list --db "$long/nq.db" || fail "no broker found for a long DB path: $(cat "$T/broker-long.log")"
"$NQ" submit count 6 --db "$long/nq.db" >/dev/null 2>err.txt || fail "submit to the long path's broker"
grep -q "answered by the broker of .*(ipc://.*/nq-[0-9a-f]*.ctl)" err.txt || fail "long path: $(cat err.txt)"
grep -qF "(ipc://$XDG_RUNTIME_DIR/nq-" err.txt || fail "the long path's socket is outside the test's folder: $(cat err.txt)"
ok "a DB path too long for a unix socket still has its own endpoint"
