#!/bin/bash
# The Slurm scripts, run for real on this machine: a stub `srun` (first in
# PATH) starts each task as a local background process and forwards SIGTERM,
# a stub `scontrol show hostnames` expands a comma list, SLURM_* variables are
# set by hand. nq-count.sbatch must start one broker and one worker per "node",
# count N=10 (total 724) and leave no process behind; nq-workers-array.sbatch
# tasks must join a separate broker, count, and exit 0 on SIGTERM. Refusals
# (no N, not in a job, no NQ_CONNECT, missing key) are checked first.
set -u
SRC=${NQ_SOURCE_DIR:?NQ_SOURCE_DIR not set}
NQ=${NQ:?NQ not set}
COUNT=$SRC/deploy/slurm/nq-count.sbatch
ARRAY=$SRC/deploy/slurm/nq-workers-array.sbatch
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
bg=()   # every process this test started itself
cleanup() {
    # The stubs log every task they start: none may survive the test.
    local p
    for p in "${bg[@]}" $(cut -d' ' -f1 "$tmp/tasks" 2>/dev/null); do
        kill -KILL "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

# ---- stubs ------------------------------------------------------------------------------
mkdir -p "$tmp/bin"
cat > "$tmp/bin/srun" <<'STUB'
#!/bin/bash
# srun stub: [options] CMD ARGS...; starts nodes x ntasks-per-node (or --ntasks)
# copies of CMD locally, logs "PID NODELIST CMD..." to $STUB_TASKS, forwards TERM.
nodes=1 per=1 ntasks='' nodelist=''
while [[ $# -gt 0 && $1 == -* ]]; do
    case $1 in
        --nodes=*) nodes=${1#*=} ;;         -N) nodes=$2; shift ;;
        --ntasks=*) ntasks=${1#*=} ;;       -n) ntasks=$2; shift ;;
        --ntasks-per-node=*) per=${1#*=} ;;
        --nodelist=*) nodelist=${1#*=} ;;   -w) nodelist=$2; shift ;;
        --*=*|--overlap|--exclusive) ;;
        *) echo "srun stub: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[[ $# -gt 0 ]] || { echo "srun stub: no command" >&2; exit 2; }
total=${ntasks:-$((nodes * per))}
pids=()
for ((i = 0; i < total; i++)); do
    SLURM_PROCID=$i SLURM_NODEID=$i SLURM_STEP_ID=0 "$@" &
    pids+=($!)
    echo "$! ${nodelist:-any} $*" >> "$STUB_TASKS"
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM INT
rc=0
for p in "${pids[@]}"; do
    while :; do
        wait "$p"; r=$?
        kill -0 "$p" 2>/dev/null || break   # wait returned for a trapped signal: wait again
    done
    ((r > rc)) && rc=$r
done
exit "$rc"
STUB
cat > "$tmp/bin/scontrol" <<'STUB'
#!/bin/bash
# scontrol stub: only 'show hostnames A,B,C'.
[[ $1 == show && $2 == hostnames ]] || { echo "scontrol stub: only 'show hostnames'" >&2; exit 1; }
tr ',' '\n' <<<"$3"
STUB
chmod +x "$tmp/bin/srun" "$tmp/bin/scontrol"
export STUB_TASKS=$tmp/tasks
: > "$STUB_TASKS"
export PATH=$tmp/bin:$PATH NQ TMPDIR=$tmp NQ_POLL=0.2

# A free loopback port (the kernel picks it).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits (30 s at most) until the broker PID answers on $NQ_BROKER.
wait_broker() {
    SECONDS=0
    until "$NQ" list --timeout 1 >/dev/null 2>&1; do
        kill -0 "$1" 2>/dev/null || { fail "the broker exited during start-up"; return 1; }
        ((SECONDS < 30)) || { fail "the broker did not answer within 30 s"; return 1; }
        sleep 0.1
    done
}

# ---- refusals (no broker needed) --------------------------------------------------------
out=$(env -u SLURM_JOB_ID bash "$COUNT" 2>&1); rc=$?
[[ $rc == 2 && $out == *usage* ]] || fail "count without N: rc=$rc '$out'"
out=$(env -u SLURM_JOB_ID bash "$COUNT" 10 2>&1); rc=$?
[[ $rc != 0 && $out == *"not inside a Slurm job"* ]] || fail "count outside a job: rc=$rc '$out'"
out=$(env -u NQ_CONNECT bash "$ARRAY" 2>&1); rc=$?
[[ $rc == 2 && $out == *NQ_CONNECT* ]] || fail "array without NQ_CONNECT: rc=$rc '$out'"
out=$(NQ_CONNECT=tcp://127.0.0.1:1 NQ_KEY_FILE=$tmp/none.key bash "$ARRAY" 2>&1); rc=$?
[[ $rc == 2 && $out == *"cannot read the worker key"* ]] || fail "array with a missing key: rc=$rc '$out'"
[[ ! -s $STUB_TASKS ]] || fail "a refused script started tasks: $(cat "$STUB_TASKS")"
# nq-gpu-workers.sbatch: refusals as the array's; the worker it starts drives every GPU, which on a
# machine without one (pocl's CPU devices at most) nq refuses in one line, exit 3
GPUS=$SRC/deploy/slurm/nq-gpu-workers.sbatch
out=$(env -u NQ_CONNECT bash "$GPUS" 2>&1); rc=$?
[[ $rc == 2 && $out == *NQ_CONNECT* ]] || fail "GPU workers without NQ_CONNECT: rc=$rc '$out'"
if ! "$NQ" bench count 4 --gpu >/dev/null 2>&1; then   # a machine with a GPU would count here
    out=$(HOME=$tmp NQ_CONNECT=tcp://127.0.0.1:1 timeout 60 bash "$GPUS" 2>&1); rc=$?
    grep -q " worker --connect tcp://127.0.0.1:1 --gpu all$" "$STUB_TASKS" \
        || fail "GPU workers: srun did not start 'nq worker ... --gpu all': $(cat "$STUB_TASKS")"
    [[ $rc == 3 && $out == *"nq worker: no "* ]] || fail "GPU workers on a machine without a GPU: rc=$rc '$out'"
    : > "$STUB_TASKS"
fi

if ! "$NQ" help broker >/dev/null 2>&1; then
    ((fails)) && { echo "$fails check(s) failed"; exit 1; }
    echo "skipped: nq broker not built yet (refusals checked)"
    exit 0
fi

# ---- nq-count.sbatch: 1 broker + 2 workers, count 10 ------------------------------------
export SLURM_JOB_ID=$$ SLURM_JOB_NODELIST=localhost,127.0.0.1 SLURM_JOB_NUM_NODES=2
NQ_PORT=$(free_port)
export SLURM_SUBMIT_DIR=$tmp NQ_DIR=$tmp NQ_BIND_HOST=127.0.0.1 NQ_PORT
timeout -k 5 120 bash "$COUNT" 10 >"$tmp/count.out" 2>"$tmp/count.err"
rc=$?
[[ $rc == 0 ]] || fail "nq-count.sbatch 10 exited $rc: $(tail -20 "$tmp/count.err")"
grep -qw 724 "$tmp/count.out" || fail "nq-count.sbatch printed no total 724: $(cat "$tmp/count.out")"
[[ $(grep -c ' broker ' "$STUB_TASKS") == 1 ]] || fail "expected 1 broker task: $(cat "$STUB_TASKS")"
grep ' broker ' "$STUB_TASKS" | grep -q '^[0-9]* localhost ' || fail "the broker did not run on the first node"
[[ $(grep -c ' worker ' "$STUB_TASKS") == 2 ]] || fail "expected 2 worker tasks: $(cat "$STUB_TASKS")"
sleep 0.5
while read -r pid _; do
    kill -0 "$pid" 2>/dev/null && fail "task $pid still running after the script ended"
done < "$STUB_TASKS"
[[ -f $tmp/nq-$$.db ]] || fail "the database nq-$$.db is not kept"
[[ ! -e $tmp/nq-$$ ]] || fail "the job's key directory was not removed"

# ---- nq-workers-array.sbatch: two array tasks join a standalone broker ------------------
: > "$STUB_TASKS"
port=$(free_port)
"$NQ" broker --bind "tcp://127.0.0.1:$port" --db "$tmp/array.db" --control "ipc://$tmp/array.ctl" \
    2>"$tmp/array-broker.err" &
bg+=($!)
broker=$!
export NQ_BROKER=ipc://$tmp/array.ctl
wait_broker "$broker"
for t in 0 1; do
    HOME=$tmp SLURM_ARRAY_TASK_ID=$t NQ_CONNECT=tcp://127.0.0.1:$port \
        bash "$ARRAY" >"$tmp/array-$t.out" 2>&1 &
    bg+=($!)
done
job=$("$NQ" submit count 10)
state=''
SECONDS=0
while ((SECONDS < 120)); do
    state=$("$NQ" status "$job" --json --timeout 2 2>/dev/null | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p')
    case $state in done | failed | cancelled) break ;; esac
    kill -0 "${bg[1]}" 2>/dev/null || { fail "array task 0 exited: $(tail -3 "$tmp/array-0.out")"; break; }
    sleep 0.2
done
[[ $state == "done" ]] || fail "array: job $job ended '$state'"
"$NQ" result "$job" | grep -qw 724 || fail "array: result of job $job is not 724"
for _ in $(seq 50); do [[ $(grep -c ' worker ' "$STUB_TASKS") == 2 ]] && break; sleep 0.2; done
[[ $(grep -c ' worker ' "$STUB_TASKS") == 2 ]] || fail "array: expected 2 worker tasks: $(cat "$STUB_TASKS")"
# Slurm's time-limit signal: SIGTERM to the task; the worker hands back and exits 0.
while read -r pid _; do kill -TERM "$pid"; done < "$STUB_TASKS"
for t in 1 2; do
    wait "${bg[$t]}"; rc=$?
    [[ $rc == 0 ]] || fail "array task $((t - 1)) exited $rc after SIGTERM: $(tail -5 "$tmp/array-$((t - 1)).out")"
done
kill -TERM "$broker"; wait "$broker"; rc=$?
[[ $rc == 0 ]] || fail "broker exited $rc after SIGTERM"

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "slurm scripts: all checks passed"
