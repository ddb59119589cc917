# Shared helpers for integration tests: a scratch folder, processes that are
# always cleaned up, free ports, waiting with a deadline, OEIS lookups.
# Source it first: `. "$(dirname "$0")/lib.sh"`.
set -u

NQ=${NQ:-nq}
SRC=${NQ_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$(mktemp -d "${TMPDIR:-/tmp}/nq-test.XXXXXX")
PIDS=()
# The suite writes only in its temporary folders: a DB path too long for a unix socket gets its
# control socket in $XDG_RUNTIME_DIR (else /tmp), where a broker the cleanup kills with -9 left it
# behind. A folder of its own, beside $T (tests list $T's files), gone with it.
XDG_RUNTIME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/nq-run.XXXXXX") && export XDG_RUNTIME_DIR

cleanup() {
    local p
    trap '' USR1                        # ignored first: killing its sleep lets it fire
    pkill -P "$WATCHDOG" 2>/dev/null; kill "$WATCHDOG" 2>/dev/null
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    if [ "${KEEP_TMP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
    rm -rf "$XDG_RUNTIME_DIR"
}
trap cleanup EXIT INT TERM

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last 20 lines)"; tail -20 "$f"; } >&2
    done
    stacks_of_brokers >&2
    exit 1
}

# Where each live broker is, thread by thread, when a test fails (gdb, where installed): a broker
# that stopped answering once in test_spotcheck left only its silent log behind.
stacks_of_brokers() {
    command -v gdb >/dev/null || return 0
    local p
    for p in "${PIDS[@]:-}"; do
        if [ -z "$p" ] || ! grep -qa broker "/proc/$p/cmdline" 2>/dev/null; then continue; fi
        echo "--- broker pid $p: threads"
        timeout 30 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null | grep -E "^(Thread|#)" | head -80
    done
}

ok() { echo "ok: $*"; }

# A test that hangs must still say where. ctest kills a test at its TIMEOUT (tests/CMakeLists.txt)
# with SIGKILL, so no trap runs and the logs and broker stacks that fail() prints are lost; the
# watchdog fails the test itself a little before that (NQ_TEST_BUDGET: ctest's timeout less 20 s).
# Its output goes to /dev/null: a child left holding the test's stdout would keep ctest waiting.
TEST_BUDGET=${NQ_TEST_BUDGET:-280}
( sleep "$TEST_BUDGET"; kill -USR1 $$ ) >/dev/null 2>&1 &
WATCHDOG=$!
trap 'fail "the test ran past its budget of $TEST_BUDGET s (ctest kills it 20 s later)"' USR1

# shellcheck source=tests/tools/free_port.sh
. "$SRC/tests/tools/free_port.sh"   # free_port

# start NAME CMD...: runs CMD in the background, logs to $T/NAME.log; its pid is in $LAST_PID
# and in PIDS for the cleanup trap. Never call it inside $(...): the subshell would keep the pid.
start() {
    local name=$1; shift
    "$@" >"$T/$name.log" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds or time runs out.
wait_for() {
    local limit=$1; shift
    local end=$((SECONDS + limit))
    while [ $SECONDS -lt $end ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

oeis_total() { awk -v n="$1" '$1 == n { print $2 }' "$SRC/tests/data/oeis-counts.tsv"; }
oeis_unique() { awk -v n="$1" '$1 == n { print $3 }' "$SRC/tests/data/oeis-counts.tsv"; }

# The smallest N from 15 to 18 whose count takes this build about 3 s or more on
# one thread, so a test can act on the job while it runs. It depends on the
# kernel (AVX-512: N=18 takes 4 s; scalar: N=17 takes 7 s) and on the build
# (sanitizers are 5-10x slower): timed from N=15, about 6.5x per N.
long_count_n() {
    local s
    s=$("$NQ" bench count 15 --json | sed -n 's/.*"seconds":\([0-9.e-]*\).*/\1/p')
    awk -v s="${s:-1}" 'BEGIN { n = 15; t = s; while (n < 18 && t < 3) { n++; t *= 6.5 } print n }'
}

# grouped N: N with its digits grouped by three, as nq writes counts for people (4,968,057,848).
grouped() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }

# json_get KEY < one JSON object: a top-level scalar (numbers and plain strings).
json_get() { grep -o "\"$1\":[^,}]*" | head -1 | cut -d: -f2- | tr -d '"'; }

# Starts a broker on fresh ports: sets BROKER_PID, WEP (workers), CEP (control); exports NQ_BROKER.
# An argument @MPORT@ becomes a fresh port too (then in $MPORT), e.g. --http 127.0.0.1:@MPORT@.
# Ports already set in WPORT/CPORT (a restart on the same endpoints) are kept; fresh ones are
# drawn again when the broker could not bind them (another test may have taken one meanwhile).
start_broker() {
    local db=$1; shift
    local fixed=${WPORT:+yes} try
    for try in 1 2 3 4 5; do
        [ -n "$fixed" ] || { WPORT=$(free_port); CPORT=$(free_port); }
        MPORT=$(free_port)
        WEP=tcp://127.0.0.1:$WPORT
        CEP=tcp://127.0.0.1:$CPORT
        export NQ_BROKER=$CEP
        local args=() a
        for a in "$@"; do args+=("${a//@MPORT@/$MPORT}"); done
        start "broker${BROKER_N:-}" "$NQ" broker --db "$db" --bind "$WEP" --control "$CEP" \
            --heartbeat-ms 200 --liveness 3 "${args[@]}"
        BROKER_PID=$LAST_PID
        local end=$((SECONDS + 20))
        while [ $SECONDS -lt $end ]; do
            "$NQ" list --timeout 1 >/dev/null 2>&1 && return 0
            kill -0 "$BROKER_PID" 2>/dev/null || break
            sleep 0.1
        done
        if [ -z "$fixed" ] && grep -q "already in use" "$T/broker${BROKER_N:-}.log"; then
            continue                    # lost a port race: new ports
        fi
        break
    done
    fail "broker did not come up"
}

# start_worker NAME [options]: its pid is in $LAST_PID.
start_worker() {
    local name=$1; shift
    start "$name" "$NQ" worker --connect "$WEP" "$@"
}

# job_field JOB KEY: a field of `nq status JOB --json`.
job_field() { "$NQ" status "$1" --json --timeout 5 | json_get "$2"; }
job_done() { [ "$(job_field "$1" state)" = done ]; }

# sqlite3 one-liners on a DB (read-only).
sql() { sqlite3 -readonly "$1" "$2"; }

# need_wire_python: sets PY to a python3 that has zmq and msgpack (Debian's python3-zmq and
# python3-msgpack, which tests/install-deps.sh installs; a pyenv python3 earlier on PATH lacks
# them). Hostile-peer tests cannot run without one, and a missing one is a failure, not a skip.
need_wire_python() {
    local p
    PY=
    for p in python3 /usr/bin/python3; do
        "$p" -c 'import zmq, msgpack' 2>/dev/null && { PY=$p; return 0; }
    done
    fail "no python3 with zmq and msgpack: run tests/install-deps.sh"
}
