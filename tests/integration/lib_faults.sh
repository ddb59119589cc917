# Helpers for the fault and attack tests (test_auth, test_netns, test_disk_full,
# test_damaged_db, test_wire_fuzz). Source it after lib.sh.
#
# Why not lib.sh's start/start_broker: they are called as $(start ...), so the
# background process is a child of that subshell; its pid never reaches the
# parent's PIDS and lib.sh's cleanup cannot kill it, nor can the test `wait`
# for its exit status. spawn runs in the test's own shell and also records the
# pid in a file, so the trap below ends every process even on failure.

FPIDS=$T/.pids
: >"$FPIDS"
CLEANUP_HOOKS=()     # shell commands run first in the trap (unmount, delete namespaces, ...)

faults_cleanup() {
    local h p
    for p in $(cat "$FPIDS" 2>/dev/null); do
        kill -CONT "$p" 2>/dev/null     # a SIGSTOPped process must not survive the test
        kill -9 "$p" 2>/dev/null
    done
    for h in "${CLEANUP_HOOKS[@]:-}"; do
        [ -n "$h" ] && eval "$h" >/dev/null 2>&1
    done
    cleanup
}
trap faults_cleanup EXIT INT TERM

# spawn NAME CMD...: runs CMD in the background, logs to $T/NAME.log; its pid is in $LAST.
spawn() {
    local name=$1; shift
    "$@" >"$T/$name.log" 2>&1 &
    LAST=$!
    echo "$LAST" >>"$FPIDS"
}

# broker_up LOGNAME DB [options]: a broker on fresh loopback ports (sets BROKER_PID, WEP, CEP, NQ_BROKER).
broker_up() {
    local name=$1 db=$2 try; shift 2
    for try in 1 2 3 4 5; do            # new ports when another test took one meanwhile
        WEP=tcp://127.0.0.1:$(free_port)
        CEP=tcp://127.0.0.1:$(free_port)
        export NQ_BROKER=$CEP
        spawn "$name" "$NQ" broker --db "$db" --bind "$WEP" --control "$CEP" --heartbeat-ms 200 --liveness 3 "$@"
        BROKER_PID=$LAST
        local end=$((SECONDS + 30))
        while [ $SECONDS -lt $end ]; do
            "$NQ" list --timeout 1 ${CLIENT_KEYS[@]+"${CLIENT_KEYS[@]}"} >/dev/null 2>&1 && return 0
            kill -0 "$BROKER_PID" 2>/dev/null || break
            sleep 0.1
        done
        grep -q "already in use" "$T/$name.log" 2>/dev/null || break
    done
    fail "broker $name did not come up"
}

# worker_up NAME [options]: a worker for $WEP; pid in $LAST.
worker_up() {
    local name=$1; shift
    spawn "$name" "$NQ" worker --connect "$WEP" "$@"
}

# stop_pid PID: SIGTERM, then wait for it (at most 15 s), then SIGKILL.
stop_pid() {
    kill -TERM "$1" 2>/dev/null
    local end=$((SECONDS + 15))
    while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

exact() {
    [ "$(job_field "$1" total)" = "$(oeis_total "$2")" ] && [ "$(job_field "$1" unique)" = "$(oeis_unique "$2")" ]
}

# shards_done_once DB JOB: every shard of JOB is done, and exactly once (one row each).
shards_done_once() {
    local done total
    done=$(sql "$1" "SELECT count(*) FROM shards WHERE job=$2 AND state='done'")
    total=$(sql "$1" "SELECT shards_total FROM jobs WHERE id=$2")
    [ "$done" = "$total" ]
}
