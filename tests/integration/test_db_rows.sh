#!/usr/bin/env bash
# Values in the DB that nq could not have written, planted with sqlite3 in a DB a real broker made:
# each is refused with the job (and shard) and the column named. The broker leaves that job out
# and serves the others; `nq status/result/export --db` refuse it with exit 3; `nq list` still
# lists the others; `nq check` reports it. Before, a quorum of -1 (read back as 2^32-1) made the
# broker grow without bound at load, and 2^63-1 shards made `nq export` write without end.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
CHANGED="the DB was changed outside nq"
# Before, these rows made the broker grow by 170 MB/s: a cap keeps a regression from taking the
# machine with it (ASan reserves terabytes of address space, so it gets its own kind of cap).
if grep -qa __asan_init "$NQ"; then
    export ASAN_OPTIONS="$ASAN_OPTIONS:hard_rss_limit_mb=3000"
else
    ulimit -v 4000000
fi

# The DB: job 1 counts N=10 (75 shards, every one with a pending row, as after a restart that
# returned them), job 2 solves N=20 with 5 seeds. The broker and a worker finish both on it as it
# is: the planted rows below are the only thing wrong.
unset WPORT CPORT
start_broker made.db
"$NQ" submit count 10 >/dev/null || fail "submit count"
"$NQ" submit solve 20 --restarts 5 --all >/dev/null || fail "submit solve"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
sqlite3 made.db "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 74)
                 INSERT INTO shards (job, idx, state, attempts) SELECT 1, i, 'pending', 1 FROM c;
                 UPDATE jobs SET frontier = shards_total WHERE id = 1;" || fail "planting the pending rows"
cp made.db good.db
unset WPORT CPORT
start_broker good.db
start_worker w0 --threads 1
wait_for 60 job_done 1 && wait_for 60 job_done 2 || fail "the DB as nq made it does not run"
[ "$(job_field 1 total)" = "$(oeis_total 10)" ] || fail "job 1 counted $(job_field 1 total)"
kill "$BROKER_PID" "$LAST_PID"; wait "$BROKER_PID" "$LAST_PID" 2>/dev/null
ok "the DB as a broker made it: both jobs run, N=10 counts $(oeis_total 10)"

# plant FILE SQL: a copy of made.db with SQL applied (CHECK constraints off: the schema's checks
# are in the file too, and whoever edits it can turn them off)
plant() { cp made.db "$1" && sqlite3 "$1" "PRAGMA ignore_check_constraints = 1; $2" || fail "planting $2"; }

# refused_db CMD JOB WORDS: `nq CMD JOB --db` exits 3 with a message holding WORDS, within 10 s
refused_db() {
    local cmd=$1 job=$2 words=$3 rc
    timeout 10 "$NQ" "$cmd" "$job" --db "$DB" >out.txt 2>err.txt; rc=$?
    [ "$rc" = 3 ] || fail "$DB: nq $cmd $job --db exited $rc, expected 3 ($(head -c 300 err.txt); \
$(stat -c %s out.txt) bytes out)"
    grep -qF -- "$words" err.txt || fail "$DB: nq $cmd $job: message lacks '$words': $(head -c 300 err.txt)"
    grep -qF "$CHANGED" err.txt || fail "$DB: nq $cmd $job: message lacks '$CHANGED': $(cat err.txt)"
}

# 1. A quorum of -1: every read path refuses job 1 and names the column; the list keeps job 2.
DB=quorum.db
plant $DB "UPDATE jobs SET quorum = -1 WHERE id = 1"
msg="job 1: column quorum holds -1 (allowed 1..3)"
for c in status result export; do refused_db $c 1 "$msg"; done
"$NQ" list --db $DB >out.txt 2>&1 || fail "list with a refused job: $(cat out.txt)"
grep -qE '^ +2 +solve' out.txt || fail "list lost job 2: $(cat out.txt)"
grep -E '^ +1 ' out.txt | grep -q "refused.*column quorum" ||
    fail "list does not say job 1 is refused: $(cat out.txt)"
"$NQ" check --db $DB >out.txt 2>&1; rc=$?
[ $rc = 1 ] && grep -qF "$msg" out.txt || fail "nq check: exit $rc: $(cat out.txt)"
ok "quorum -1: status, result, export --db exit 3 naming the column; list and check say so"

# ... and a broker on it leaves job 1 out, says why, and finishes job 2 (before: it grew without
# bound loading job 1's 75 pending rows 2^32-1 times each, and never answered)
unset WPORT CPORT
start_broker $DB
grep -q "event=job.refused job=1 reason=\"$msg" "$T/broker.log" ||
    fail "no job.refused line: $(cat "$T/broker.log")"
"$NQ" status 1 >out.txt 2>&1; rc=$?
[ $rc = 3 ] && grep -qF "$msg" out.txt || fail "nq status 1 through the broker: exit $rc: $(cat out.txt)"
"$NQ" cancel 1 >out.txt 2>&1; rc=$?
[ $rc = 3 ] && grep -qF "$msg" out.txt || fail "nq cancel 1 through the broker: exit $rc: $(cat out.txt)"
start_worker w1 --threads 1
wait_for 60 job_done 2 || fail "job 2 was not served: $(job_field 2 state)"
kill "$BROKER_PID" "$LAST_PID"; wait "$BROKER_PID" "$LAST_PID" 2>/dev/null
ok "quorum -1 under a broker: job 1 refused (logged, nq status/cancel say why, exit 3), job 2 done"

# 2. 2^63-1 shards: export refuses at once (before: 437 MB in 20 s, and on)
DB=total.db
plant $DB "UPDATE jobs SET shards_total = 9223372036854775807 WHERE id = 1"
msg="job 1: column shards_total holds 9223372036854775807 (allowed 1..1000 for count N=10 at depth 1)"
for c in export status result; do refused_db $c 1 "$msg"; done
[ "$(stat -c %s out.txt)" -lt 100 ] || fail "export wrote $(stat -c %s out.txt) bytes before refusing"
ok "shards_total 2^63-1: export, status, result --db exit 3 at once, nothing written"

# 3. A shard count the list of (n, depth, encoding) does not have, though within the bound: the
# broker makes the list, refuses the job, and serves job 2; nq check names it too. (Before: the
# broker refused to start at all, and leaked the list it made: LeakSanitizer, under ASan.)
DB=count.db
plant $DB "UPDATE jobs SET shards_total = 76, frontier = 76 WHERE id = 1"
msg="job 1: column shards_total holds 76 (allowed 75: its list of count N=10 at depth 1, encoding 5)"
unset WPORT CPORT
start_broker $DB
wait_for 30 grep -qF "$msg" "$T/broker.log" || fail "no refusal naming the count: $(cat "$T/broker.log")"
start_worker w2 --threads 1
wait_for 60 job_done 2 || fail "job 2 was not served"
kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null
kill -TERM "$BROKER_PID"; wait "$BROKER_PID"; rc=$?
[ $rc = 0 ] || fail "the broker exited $rc after SIGTERM: $(tail -30 "$T/broker.log")"
! grep -q "LeakSanitizer" "$T/broker.log" ||
    fail "the broker leaked: $(grep -A20 LeakSanitizer "$T/broker.log")"
"$NQ" check --db $DB >out.txt 2>&1; rc=$?
[ $rc = 1 ] && grep -qF "$msg" out.txt || fail "nq check: exit $rc: $(cat out.txt)"
ok "76 shards where the list has 75: the broker refuses job 1 and serves job 2, exits 0 without a leak"

# 4. Shard rows: values used as sizes, bounds and states
shard_refused() {   # shard_refused SQL WORDS: the broker refuses job 1 for it, and says so
    DB=shard.db
    plant $DB "$1"
    unset WPORT CPORT
    BROKER_N=s start_broker $DB
    grep -qF "$2" "$T/brokers.log" && grep -q "event=job.refused job=1 " "$T/brokers.log" ||
        fail "$1: the broker did not refuse job 1 with '$2': $(cat "$T/brokers.log")"
    kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
    rm -f $DB $DB.lock $DB-wal $DB-shm
}
shard_refused "UPDATE shards SET attempts = 4294967297 WHERE job = 1 AND idx = 7" \
    "job 1 shard 7: column attempts holds 4294967297 (allowed 0..100)"
shard_refused "UPDATE shards SET spec = zeroblob(300) WHERE job = 1 AND idx = 7" \
    "job 1 shard 7: column spec holds a blob of 300 bytes (allowed NULL or a blob of at most 256 bytes)"
shard_refused "UPDATE shards SET lease = 'x' WHERE job = 1 AND idx = 7" \
    "job 1 shard 7: column lease holds 'x' (allowed an integer or NULL)"
shard_refused "INSERT INTO shards (job, idx, state) VALUES (1, 75, 'pending')" \
    "job 1 shard 75: column idx holds 75 (allowed 0..74)"
# a state nq has no name for is in no state's range, so a load never reads it: nq check does
plant state.db "UPDATE shards SET state = 'zzz' WHERE job = 1 AND idx = 7"
"$NQ" check --db state.db >out.txt 2>&1; rc=$?
[ $rc = 1 ] && grep -qF "job 1 shard 7: column state holds 'zzz'" out.txt ||
    fail "nq check: exit $rc: $(cat out.txt)"
ok "shard rows with attempts past 2^32, a 300-byte descriptor, a text lease, an idx past the job: refused;
    a state nq does not know: nq check names it"

# 5. The lease key: what lease_id.c writes (32 hex digits), or the broker does not start. Before,
# "1 2" became the key (1, 2) and one it could not read was quietly replaced.
for key in "1 2" "zz" "0123456789abcdef0123456789abcdefff"; do
    DB=key.db
    plant $DB "UPDATE meta SET value = '$key' WHERE key = 'lease_key'"
    timeout 20 "$NQ" broker --db $DB --bind "tcp://127.0.0.1:$(free_port)" \
        --control "tcp://127.0.0.1:$(free_port)" >out.txt 2>&1; rc=$?
    [ $rc = 3 ] && grep -q "lease key (table meta, key lease_key) is not 32 hex digits: $CHANGED" out.txt ||
        fail "lease key '$key': exit $rc: $(cat out.txt)"
    [ "$(sqlite3 $DB "SELECT value FROM meta WHERE key = 'lease_key'")" = "$key" ] ||
        fail "the key was replaced"
    rm -f $DB $DB.lock $DB-wal $DB-shm
done
ok "a lease key that is not 32 hex digits: the broker refuses to start (exit 3) and keeps the row as it is"
