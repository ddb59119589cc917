#!/usr/bin/env bash
# What `nq broker` refuses: bad flags, a control endpoint open to the network without keys (anyone
# could submit and cancel), a bad --http address, a --db path that is not a database, key files
# it cannot use, a DB that is not nq's or is from a newer nq, a DB another broker holds, ports that
# are taken, a lease key it did not write. Each is refused with one line and its exit code, the
# folder stays as it was, and nothing leaks: under ASan (the CI runs the suite with it) LeakSanitizer
# checks each refusal at exit, and this test fails on its report. A job's list made and then
# refused at load once leaked that way (a refused job no longer stops the broker: test_db_rows.sh).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"

refused() {   # refused WHAT EXPECT_RC PATTERN ARGS...: runs nq broker, checks rc, message, leaks, files
    local what=$1 want=$2 pat=$3; shift 3
    local before after rc
    before=$(ls -A | sort)
    timeout 20 "$NQ" broker "$@" >out.txt 2>&1; rc=$?
    after=$(ls -A | grep -v '^out.txt$' | sort)
    ! grep -q "LeakSanitizer" out.txt || fail "$what: leaks: $(grep -A30 LeakSanitizer out.txt)"
    [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want: $(cat out.txt)"
    grep -q -- "$pat" out.txt || fail "$what: message does not say '$pat': $(cat out.txt)"
    [ "$before" = "$after" ] || fail "$what: left files behind: $(comm -13 <(echo "$before") <(echo "$after"))"
    rm -f out.txt
}
p1=$(free_port); p2=$(free_port)
local_eps=(--bind "tcp://127.0.0.1:$p1" --control "tcp://127.0.0.1:$p2")
refused "control on 0.0.0.0 without keys" 3 "control endpoint" \
    --bind "tcp://127.0.0.1:$p1" --control "tcp://0.0.0.0:$p2" --db a.db
refused "bind on 0.0.0.0 without keys" 3 "refusing to bind tcp://0.0.0.0" \
    --bind "tcp://0.0.0.0:$p1" --control "tcp://127.0.0.1:$p2" --db a.db
refused "bad --http" 2 "--http: " "${local_eps[@]}" --http "not-an-address" --db b.db
refused "--http off loopback without a token" 2 "without a token" "${local_eps[@]}" --http "0.0.0.0:$p1" \
    --db b.db
refused "a missing --http-token-file" 2 "cannot read the http token file" "${local_eps[@]}" \
    --http "127.0.0.1:$(free_port)" --http-token-file nothing.txt --db b.db
mkdir adir
refused "--db a folder" 3 "not a regular file" "${local_eps[@]}" --db adir
refused "--db in a missing folder" 3 "nodir/x.db: its folder does not exist" "${local_eps[@]}" --db nodir/x.db
refused "an unknown flag" 2 "unknown or incomplete option '--bogus'" --bogus
refused "an extra argument" 2 "unexpected argument 'extra'" "${local_eps[@]}" extra
refused "--authorized-keys without --key" 2 "needs --key" "${local_eps[@]}" --authorized-keys x.pub
ok "flags, endpoints without keys, bad --http, a folder as --db: refused, nothing created"

"$NQ" keygen broker >/dev/null && "$NQ" keygen worker >/dev/null || fail "keygen"
echo "not a key" >garbage.pub
refused "a missing key file" 3 "cannot read key file" "${local_eps[@]}" --key none.key \
    --authorized-keys worker.pub --db c.db
refused "a public key as --key" 3 "has no secret key" "${local_eps[@]}" --key broker.pub \
    --authorized-keys worker.pub --db c.db
refused "a garbage allow-list" 3 "not a Z85 public key" "${local_eps[@]}" --key broker.key \
    --authorized-keys garbage.pub --db c.db
refused "a missing allow-list" 3 "cannot read" "${local_eps[@]}" --key broker.key --authorized-keys none.pub \
    --db c.db
ok "key files it cannot use: refused before the DB is touched"

# DBs it must not run on (test_damaged_db.sh has the damaged ones)
sqlite3 foreign.db "CREATE TABLE customers (id INTEGER PRIMARY KEY)"
refused "a foreign SQLite DB" 3 "not an nq database" "${local_eps[@]}" --db foreign.db
start_broker made.db --http "127.0.0.1:@MPORT@"     # made.db; ports taken
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
[ -e made.db.lock ] && fail "a broker that ended left made.db.lock behind"
cp made.db newer.db
sqlite3 newer.db "UPDATE schema_version SET version = 99
                  WHERE version = (SELECT max(version) FROM schema_version)"
refused "a DB from a newer nq" 3 "created by a newer nq" "${local_eps[@]}" --db newer.db
cp made.db key.db
sqlite3 key.db "UPDATE meta SET value = 'zz' WHERE key = 'lease_key'"
refused "a lease key it did not write" 3 "not 32 hex digits" "${local_eps[@]}" --db key.db
ok "a foreign DB, one from a newer nq, one with a lease key nq did not write: refused, unchanged"

unset WPORT CPORT
start_broker made.db --http "127.0.0.1:@MPORT@"     # holds made.db and three ports
cp made.db other.db && cp made.db.lock other.db.lock
refused "a DB another broker holds" 3 "another broker" "${local_eps[@]}" --db made.db
refused "the worker port taken" 3 "cannot bind tcp://127.0.0.1:$WPORT" --bind "tcp://127.0.0.1:$WPORT" \
    --control "tcp://127.0.0.1:$p2" --db other.db
refused "the control port taken" 3 "cannot bind tcp://127.0.0.1:$CPORT" --bind "tcp://127.0.0.1:$p1" \
    --control "tcp://127.0.0.1:$CPORT" --db other.db
refused "the http port taken" 3 "cannot serve http on 127.0.0.1:$MPORT" "${local_eps[@]}" \
    --http "127.0.0.1:$MPORT" --db other.db
refused "the http port taken, with keys" 3 "cannot serve http" "${local_eps[@]}" --key broker.key \
    --authorized-keys worker.pub --http "127.0.0.1:$MPORT" --db other.db
refused "a held DB, with keys" 3 "another broker" "${local_eps[@]}" --key broker.key \
    --authorized-keys worker.pub --db made.db
ok "a DB another broker holds, ports taken (with and without keys): refused, exit 3, no leak"
