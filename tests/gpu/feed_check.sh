#!/usr/bin/env bash
# How well a GPU worker keeps its GPU busy, on a machine with a GPU: a step of the device check
# (tests/gpu/device_check.sh runs it after its race, with the faster backend's environment), or
# alone. Within LIMIT seconds (default 240), at FEED_N (default 21), each step only where the time
# left fits it:
#  1. the GPU alone: `nq bench count N --gpu` (BENCH_T, when the caller has just timed it);
#  2. a broker (loopback TCP, a DB of its own) and one `nq worker --gpu --gpu-only`: every core
#     feeds the GPU, none counts; its job's seconds against bench (target: bench/worker >= 0.95);
#  3. a broker and one `nq worker --gpu`, all cores: feeders and CPU counting in one process; its
#     seconds against the GPU alone (never slower) and against 1/(1/T_gpu + 1/T_cpu) (target
#     <= 1.1x), with the shards each engine counted and the GPU's copies of CPU counts;
#  4. `nq estimate count N --gpu`: its GPU-hours against the GPU's real time (target: within 25 %);
#  5. the CPU's rate: `nq bench count FEED_CPU_N` on all cores (default 20; 19 when time is short),
#     giving T_cpu = N's CPU nodes (tests/gpu/cpu-figures.tsv) / that rate.
# Every job is checked exact against cpu-figures.tsv. Writes feed.txt (the table) and results.tsv
# lines into LOG, logs beside them. Alone, from the repository root, with .gpu/ carried:
#   OUT=/tmp/x tests/gpu/feed_check.sh                 (OpenCL; NQ_GPU_CUDA=... for CUDA)
# Dry run on pocl (small N, the CPU as the device):
#   FEED_N=14 FEED_CPU_N=13 LIMIT=120 tests/gpu/feed_check.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 3
G=${NQ_GPU_PACK:-$ROOT/.gpu}
LOG=${LOG:-${OUT:-$ROOT/.gpu-check}}
LIMIT=${LIMIT:-240}
FEED_N=${FEED_N:-21}
FEED_CPU_N=${FEED_CPU_N:-20}
GPU_OPT=${GPU_OPT:---gpu}               # device_check.sh's dry run on pocl: --gpu-device 0
FIG=$ROOT/tests/gpu/cpu-figures.tsv
PORT=${FEED_PORT:-27555}
START=$SECONDS
mkdir -p "$LOG"
touch "$LOG/results.tsv"
left() { echo $((LIMIT - (SECONDS - START))); }
say() { echo "$*" | tee -a "$LOG/feed.log"; }
fig() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$FIG"; }
num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$2" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "-" }'; }
if [ -z "${NQ:-}" ]; then
    [ -x "$G/nq" ] || { say "no $G/nq: run tests/gpu/pack.sh here and carry .gpu"; exit 3; }
    export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    NQ=$G/nq
fi
WEP=tcp://127.0.0.1:$PORT
CEP=tcp://127.0.0.1:$((PORT + 1))

# queue_run LABEL WORKER-OPTIONS...: a fresh broker, one worker with those options, count FEED_N;
# sets Q_T (the job's seconds, empty when it failed), Q_OK, Q_STOP (the worker's worker.stop line).
queue_run() {
    local label=$1 db id state t0 bp wp lim; shift
    Q_T='' Q_OK=no Q_STOP=''
    db=$LOG/feed-$label.db
    rm -f "$db" "$db".* "$db"-*
    "$NQ" broker --db "$db" --bind "$WEP" --control "$CEP" 2>"$LOG/feed-$label-broker.log" &
    bp=$!
    "$NQ" worker --connect "$WEP" --id "$label" "$@" 2>"$LOG/feed-$label-worker.log" &
    wp=$!
    for _ in $(seq 300); do
        grep -q "worker.join worker=$label" "$LOG/feed-$label-broker.log" 2>/dev/null && break
        kill -0 "$wp" 2>/dev/null || break
        sleep 0.1
    done
    id=$("$NQ" submit count "$FEED_N" --broker "$CEP" 2>>"$LOG/feed.log")
    t0=$SECONDS
    lim=$((2 * need)); [ "$lim" -lt "$(left)" ] || lim=$(left)   # a stuck run leaves time to the rest
    while [ -n "$id" ] && [ $((SECONDS - t0)) -lt "$lim" ]; do
        state=$("$NQ" status "$id" --broker "$CEP" --json 2>/dev/null)
        grep -q '"state":"\(done\|failed\|cancelled\)"' <<<"$state" && break
        sleep 0.2
    done
    if grep -q '"state":"done"' <<<"${state:-}"; then
        Q_T=$(awk -v t="$(num elapsed "$state")" 'BEGIN { printf "%.3f", t }')
        [ "$(num total "$state")" = "$(fig "$FEED_N" 4)" ] \
            && [ "$(num unique "$state")" = "$(fig "$FEED_N" 5)" ] && Q_OK=yes
    fi
    kill -TERM "$wp" 2>/dev/null; wait "$wp" 2>/dev/null
    kill -TERM "$bp" 2>/dev/null; wait "$bp" 2>/dev/null
    Q_STOP=$(grep 'event=worker.stop' "$LOG/feed-$label-worker.log" | tail -1 | sed 's/.*worker.stop //')
    printf 'feed-%s\t%s\t%s\t%s\t-\t-\t-\n' "$label" "$FEED_N" "${Q_T:-FAILED}" "$Q_OK" >>"$LOG/results.tsv"
    say "N=$FEED_N $label: ${Q_T:-failed}s exact $Q_OK; worker: ${Q_STOP:-no stop line}"
    rm -f "$db" "$db".* "$db"-*
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# 1. the GPU alone
T_GPU=${BENCH_T:-}
if [ -z "$T_GPU" ] && [ "$(left)" -gt 30 ]; then
    # shellcheck disable=SC2086  # GPU_OPT is one option or two words
    out=$(timeout $(($(left) - 10)) "$NQ" bench count "$FEED_N" $GPU_OPT --json 2>>"$LOG/feed.log")
    T_GPU=$(num seconds "$out")
    say "N=$FEED_N nq bench --gpu: ${T_GPU:-failed}s"
fi
[ -n "$T_GPU" ] || { say "no time for the GPU alone at N=$FEED_N: nothing to compare with"; exit 1; }
need=$(awk -v t="$T_GPU" 'BEGIN { printf "%d", t * 1.4 + 15 }')   # a worker's run, with room to be slow

# 2. the GPU alone, through the queue
T_ONLY=
if [ "$(left)" -gt "$need" ]; then
    # shellcheck disable=SC2086  # GPU_OPT is one option or two words
    queue_run gpu-only $GPU_OPT --gpu-only
    T_ONLY=$Q_T OK_ONLY=$Q_OK
else
    say "skipped the --gpu-only worker: $(left)s left, it wants $need"
fi

# 3. GPU and CPU in one worker
T_BOTH=
if [ "$(left)" -gt "$need" ]; then
    # shellcheck disable=SC2086  # GPU_OPT is one option or two words
    queue_run both $GPU_OPT
    T_BOTH=$Q_T OK_BOTH=$Q_OK STOP_BOTH=$Q_STOP
else
    say "skipped the GPU+CPU worker: $(left)s left, it wants $need"
fi

# 4. the estimate
T_EST=
if [ "$(left)" -gt 40 ]; then
    # shellcheck disable=SC2086  # GPU_OPT is one option or two words
    out=$(timeout $(($(left) - 20)) "$NQ" estimate count "$FEED_N" $GPU_OPT --json 2>>"$LOG/feed.log")
    h=$(num gpu_hours "$out")
    [ -n "$h" ] && T_EST=$(awk -v h="$h" 'BEGIN { printf "%.3f", h * 3600 }')
    say "nq estimate count $FEED_N --gpu: ${T_EST:-failed}s"
fi

# 5. the CPU's rate on every core
T_CPU='' CPU_N=$FEED_CPU_N
[ "$(left)" -lt 45 ] && CPU_N=$((FEED_CPU_N - 1))
if [ "$(left)" -gt 12 ] && [ "$(fig "$FEED_N" 6)" != "-" ]; then
    out=$(timeout $(($(left) - 5)) "$NQ" bench count "$CPU_N" --json 2>>"$LOG/feed.log")
    rate=$(num nodes_per_s "$out")
    [ -n "$rate" ] && T_CPU=$(awk -v n="$(fig "$FEED_N" 6)" -v r="$rate" 'BEGIN { printf "%.3f", n / r }')
    say "CPU, all $(nproc) cores: N=$CPU_N at ${rate:-?} nodes/s: N=$FEED_N would take ${T_CPU:-?}s"
fi

IDEAL=
[ -n "$T_CPU" ] && IDEAL=$(awk -v g="$T_GPU" -v c="$T_CPU" 'BEGIN { printf "%.3f", 1 / (1 / g + 1 / c) }')
{
    echo "A GPU worker keeping its GPU busy, N=$FEED_N, $(nproc) host cores (seconds):"
    echo "  GPU alone, nq bench --gpu:                 $T_GPU"
    echo "  broker + nq worker --gpu --gpu-only:       ${T_ONLY:--}  exact ${OK_ONLY:--};" \
         "bench/worker $(ratio "$T_GPU" "${T_ONLY:-0}") (target >= 0.95)"
    echo "  broker + nq worker --gpu (all cores):      ${T_BOTH:--}  exact ${OK_BOTH:--};" \
         "GPU alone/worker $(ratio "$T_GPU" "${T_BOTH:-0}") (target >= 1)"
    if [ -n "${STOP_BOTH:-}" ]; then
        echo "      shards: GPU $(field gpu_shards "$STOP_BOTH"), CPU $(field cpu_shards "$STOP_BOTH");" \
             "GPU copies of CPU counts $(field copies "$STOP_BOTH")" \
             "($(field copies_won "$STOP_BOTH") ended first); device busy $(field gpu_busy_s "$STOP_BOTH")s"
    fi
    echo "      1/(1/T_gpu + 1/T_cpu) = ${IDEAL:--} (T_cpu ${T_CPU:--}: N=$FEED_N's CPU nodes at N=$CPU_N's" \
         "rate); worker/that $(ratio "${T_BOTH:-0}" "${IDEAL:-0}") (target <= 1.1)"
    echo "  nq estimate count $FEED_N --gpu:            ${T_EST:--}; estimate/GPU alone" \
         "$(ratio "${T_EST:-0}" "$T_GPU") (target 0.75 .. 1.25)"
} | tee "$LOG/feed.txt"
