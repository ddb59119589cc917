#!/bin/bash
# The container entrypoint, run directly on this machine (no Docker engine
# needed): refusals of bad settings, pass-through of other nq commands, and a
# real broker + worker started through it with keys taken from "secret" files
# (the /run/secrets layout), counting N=10 (total 724) on loopback; both must
# be nq itself after exec (SIGTERM reaches nq and it exits 0).
set -u
SRC=${NQ_SOURCE_DIR:?NQ_SOURCE_DIR not set}
NQ=${NQ:?NQ not set}
EP=$SRC/deploy/container/entrypoint.sh
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
export NQ_BIN=$NQ NQ_SECRETS_DIR=$tmp/no-secrets
unset NQ_ROLE NQ_CONNECT NQ_KEY_FILE NQ_BROKER_KEY_FILE NQ_AUTHORIZED_KEYS NQ_CONTROL_KEYS NQ_INSECURE NQ_GPU

# Waits (30 s at most) until the broker PID answers on $NQ_BROKER.
wait_broker() {
    SECONDS=0
    until "$NQ" list --timeout 1 >/dev/null 2>&1; do
        kill -0 "$1" 2>/dev/null || { fail "the broker exited during start-up"; return 1; }
        ((SECONDS < 30)) || { fail "the broker did not answer within 30 s"; return 1; }
        sleep 0.1
    done
}

# expect RC PATTERN -- ENV/ARGS...: runs the entrypoint, checks exit code and message.
expect() {
    local want=$1 pat=$2 out rc
    shift 3
    out=$(env "$@" 2>&1); rc=$?
    [[ $rc == "$want" && $out == *$pat* ]] || fail "entrypoint $*: rc=$rc (want $want) '$out'"
}
touch "$tmp/some.key"
expect 2 "no role"            -- sh "$EP"
expect 2 "NQ_ROLE must be"    -- NQ_ROLE=sorter sh "$EP"
expect 2 "set NQ_CONNECT"     -- sh "$EP" worker
expect 2 "does not exist"     -- NQ_CONNECT=tcp://127.0.0.1:1 NQ_KEY_FILE="$tmp/none.key" sh "$EP" worker
expect 2 "or neither"         -- NQ_CONNECT=tcp://127.0.0.1:1 NQ_KEY_FILE="$tmp/some.key" sh "$EP" worker
expect 2 "NQ_GPU is all or"   -- NQ_CONNECT=tcp://127.0.0.1:1 NQ_GPU=first sh "$EP" worker
# --gpu all reaches nq: here no GPU (pocl's CPU devices are refused) or no OpenCL platform, exit 3
expect 3 "nq worker: no "     -- NQ_CONNECT=tcp://127.0.0.1:1 NQ_GPU=all sh "$EP" worker
expect 2 "no NQ_AUTHORIZED_KEYS" -- NQ_KEY_FILE="$tmp/some.key" sh "$EP" broker
expect 2 "NQ_INSECURE must be" -- NQ_INSECURE=maybe NQ_DB="$tmp/x.db" sh "$EP" broker
expect 2 "NQ_CONTROL_KEYS '$tmp/none' does not exist" -- NQ_CONTROL_KEYS="$tmp/none" NQ_DB="$tmp/x.db" sh "$EP" broker
[[ ! -e $tmp/x.db ]] || fail "a refused broker created its database"
ver=$("$NQ" --version)
[[ $(sh "$EP" --version) == "$ver" ]] || fail "entrypoint --version does not reach nq"
[[ $(sh "$EP" nq version) == "$ver" ]] || fail "entrypoint nq version does not reach nq"
[[ $(NQ_ROLE=worker sh "$EP" version) == "$ver" ]] || fail "an nq command must win over NQ_ROLE"

if ! "$NQ" help broker >/dev/null 2>&1; then
    ((fails)) && { echo "$fails check(s) failed"; exit 1; }
    echo "skipped: nq broker not built yet (refusals checked)"
    exit 0
fi

# ---- keys as container secrets: broker and worker directories like /run/secrets ----
mkdir -p "$tmp/keys" "$tmp/broker-secrets" "$tmp/worker-secrets"
(cd "$tmp/keys" && sh "$EP" keygen broker >/dev/null && sh "$EP" keygen worker >/dev/null) \
    || fail "keygen through the entrypoint"
cp "$tmp/keys/broker.key" "$tmp/broker-secrets/nq.key"
cp "$tmp/keys/worker.pub" "$tmp/broker-secrets/authorized_keys"
cp "$tmp/keys/worker.key" "$tmp/worker-secrets/nq.key"
cp "$tmp/keys/broker.pub" "$tmp/worker-secrets/broker.pub"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export NQ_BROKER=ipc://$tmp/nq.db.ctl
NQ_SECRETS_DIR=$tmp/broker-secrets NQ_BIND=tcp://127.0.0.1:$port NQ_DB=$tmp/nq.db \
    sh "$EP" broker 2>"$tmp/broker.err" &
broker=$!; pids+=("$broker")
wait_broker "$broker"
NQ_SECRETS_DIR=$tmp/worker-secrets NQ_CONNECT=tcp://127.0.0.1:$port NQ_THREADS=2 \
    sh "$EP" worker 2>"$tmp/worker.err" &
worker=$!; pids+=("$worker")

job=$(sh "$EP" submit count 10)
state=''
SECONDS=0
while ((SECONDS < 120)); do
    state=$("$NQ" status "$job" --json --timeout 2 2>/dev/null | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p')
    case $state in done | failed | cancelled) break ;; esac
    kill -0 "$worker" 2>/dev/null || { fail "the worker exited: $(tail -3 "$tmp/worker.err")"; break; }
    sleep 0.2
done
[[ $state == "done" ]] || fail "job '$job' ended '$state': $(tail -5 "$tmp/broker.err")"
sh "$EP" result "$job" | grep -qw 724 || fail "result of job $job is not 724"
# exec: the processes we started are nq itself, not a shell around it.
for p in "$broker" "$worker"; do
    [[ $(tr '\0' ' ' < "/proc/$p/cmdline") == "$NQ "* ]] || fail "pid $p is not nq after exec"
done
grep -q '^{' "$tmp/broker.err" || fail "broker logs are not JSON by default"
grep -q -- '--key' <(tr '\0' ' ' < "/proc/$broker/cmdline") || fail "broker did not get its key"
grep -q -- '--broker-key' <(tr '\0' ' ' < "/proc/$worker/cmdline") || fail "worker did not get the broker key"
kill -TERM "$worker"; wait "$worker"; rc=$?
[[ $rc == 0 ]] || fail "worker exited $rc on SIGTERM"
kill -TERM "$broker"; wait "$broker"; rc=$?
[[ $rc == 0 ]] || fail "broker exited $rc on SIGTERM"

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "entrypoint: all checks passed"
