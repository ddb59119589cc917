#!/usr/bin/env bash
# SIGTERM stops the broker, whatever it is doing: what shows it is behaviour (the refused job, the
# load's "stopped while loading"), and the clock only catches a hang (how fast it stops is a figure,
# printed, not a bound: a loaded machine makes a second into ten). Two cases that did not stop:
#   a job row with quorum -1 (read back as 2^32-1): loading its pending rows pushed 2^32-1 copies
#   of each, growing by 170 MB/s, and the loop never came back to see the signal; now the row is
#   refused (test_db_rows.sh) and nothing loops on it;
#   a big job being loaded (873,342 pending rows: a second of CPU, several on a busy machine, and
#   a campaign's can be 100 times that): the signal waited for the whole load; now the load looks
#   at the stop flag every 4096 rows and between jobs, and gives up ("stopped while loading").
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
if grep -qa __asan_init "$NQ"; then        # a cap, in case the runaway comes back
    export ASAN_OPTIONS="$ASAN_OPTIONS:hard_rss_limit_mb=3000"
else
    ulimit -v 4000000
fi
LIMIT=60    # seconds from SIGTERM to exit before it counts as a hang (the loop looks every 50 ms)

port_bound() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stop_within LABEL DB: a broker on DB, SIGTERM as soon as its worker port is bound (the jobs load
# right after), and it must be gone within LIMIT seconds, with exit 0 and no leak.
stop_within() {
    local label=$1 db=$2 wp cp pid rc t0 t1
    wp=$(free_port); cp=$(free_port)
    start "broker-$label" "$NQ" broker --db "$db" --bind "tcp://127.0.0.1:$wp" --control "tcp://127.0.0.1:$cp"
    pid=$LAST_PID
    wait_for 30 port_bound "$wp" || fail "$label: the broker never bound its port"
    t0=$(date +%s%N)
    kill -TERM "$pid"
    for _ in $(seq $((LIMIT * 50))); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.02
    done
    t1=$(date +%s%N)
    if kill -0 "$pid" 2>/dev/null; then
        local rss
        rss=$(ps -o rss= -p "$pid" 2>/dev/null)
        stacks_of_brokers >&2
        kill -9 "$pid"
        fail "$label: still running ${LIMIT} s after SIGTERM (resident: ${rss:-?} KiB)"
    fi
    wait "$pid"; rc=$?
    [ "$rc" = 0 ] || fail "$label: exit $rc after SIGTERM: $(tail -20 "$T/broker-$label.log")"
    ! grep -q LeakSanitizer "$T/broker-$label.log" ||
        fail "$label: $(grep -A20 LeakSanitizer "$T/broker-$label.log")"
    STOP_MS=$(((t1 - t0) / 1000000))
}

# The DBs, made by a real broker: count 10 (75 shards) and count 16 at depth 5 (873,342 shards).
start_broker made.db
"$NQ" submit count 10 >/dev/null || fail "submit count 10"
"$NQ" submit count 16 --depth 5 >/dev/null || fail "submit count 16"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
[ "$(sql made.db "SELECT shards_total FROM jobs WHERE id = 2")" = 873342 ] ||
    fail "count 16 at depth 5 is not 873342 shards"
pending_rows() {   # pending_rows DB JOB: a row for every shard, as after a restart that returned them all
    sqlite3 "$1" "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c
                  WHERE i + 1 < (SELECT shards_total FROM jobs WHERE id = $2))
                  INSERT INTO shards (job, idx, state, attempts) SELECT $2, i, 'pending', 1 FROM c;
                  UPDATE jobs SET frontier = shards_total WHERE id = $2;" || fail "pending rows for job $2"
}

cp made.db runaway.db
sqlite3 runaway.db "UPDATE jobs SET state = 'cancelled' WHERE id <> 1;
                    UPDATE jobs SET quorum = -1 WHERE id = 1"
pending_rows runaway.db 1
stop_within runaway runaway.db
grep -q "event=job.refused job=1 " "$T/broker-runaway.log" ||
    fail "job 1 was not refused: $(cat "$T/broker-runaway.log")"
ok "quorum -1 with 75 pending rows: the job refused, SIGTERM to exit in $STOP_MS ms"

cp made.db big.db
sqlite3 big.db "UPDATE jobs SET state = 'cancelled' WHERE id = 1"
pending_rows big.db 2
stop_within big big.db
grep -q "stopped while loading the jobs" "$T/broker-big.log" ||
    fail "the load did not stop for the signal (it went on to the end): $(cat "$T/broker-big.log")"
ok "873,342 pending rows being loaded: the load stops for SIGTERM, exit in $STOP_MS ms"
