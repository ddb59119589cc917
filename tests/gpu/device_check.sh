#!/usr/bin/env bash
# The GPU device check: one prepared run (BUDGET seconds, default 480) on a machine with an NVIDIA
# GPU where nothing can be installed. Carry .gpu/ (tests/gpu/pack.sh: nq, its libraries, nq's CUDA
# libraries and the fastest public counter, ygch/n_queens, built for sm_90) and run, from the
# repository root:
#   tests/gpu/device_check.sh             (logs and summary.txt in $OUT when set, else .gpu-check/)
# In order, each step as the time left allows:
#  1. probes the machine (nvidia-smi, the card's architecture, OpenCL through an ICD file of its own,
#     nvcc); rebuilds the CUDA libraries and the peer for the card where they were built for another;
#  2. N=16..19 exact (the totals of tests/gpu/cpu-figures.tsv), and the parity kernel's nodes the CPU's;
#  3. N=20 and 21: the peer (config3 with 5 rows, its best at N <= 22; config2 with 6 rows at 20) and
#     nq's fast kernel through CUDA (loop in inline PTX) and OpenCL, in the same run: seconds, ratio;
#  4. a GPU worker keeping its GPU busy, at N=21 with the faster backend (tests/gpu/feed_check.sh):
#     a broker-fed `nq worker --gpu --gpu-only` against `nq bench count 21 --gpu`, one `nq worker
#     --gpu` on all cores (GPU and CPU) against the GPU alone and 1/(1/T_gpu + 1/T_cpu) (T_cpu from
#     `nq bench count 20` on all cores), `nq estimate count 21 --gpu` against the real time;
#  5. `nq run count 21 --gpu` (GPU and CPU) against `nq bench count 21 --gpu`;
#  6. `nq estimate count 28 --gpu` (GPU-years);
#  7. N=22 with nq's faster backend when the time left fits it (about 9 x N=21's), then the peer's
#     N=22 (about 250 s) only with BUDGET to spare;
#  8. the sweep at N=20 (SWEEP_N): CUDA's three loops, rows 13/14/15, blocks of 64/128/256, launch
#     lengths, persistent groups; OpenCL fast rows 13/15 and work-groups 64/256; parity on both;
#  9. summary.txt: the tables, and results.tsv (one line a run) and the logs beside it.
# Without an OpenCL platform it measures CUDA only; without CUDA (nvcc failed, no library), OpenCL
# only; without either, it says so. A dry run without a GPU (pocl, small N, the peer and CUDA fail
# gracefully):
#   NQ_CHECK_ANY_DEVICE=1 N_EXACT="10 11" N_RACE="12 13" N_BIG=14 N_RUN=13 SWEEP_N=12 EST_N=16 \
#   BUDGET=240 tests/gpu/device_check.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 3
G=${NQ_GPU_PACK:-$ROOT/.gpu}
LOG=${OUT:-$ROOT/.gpu-check}
BUDGET=${BUDGET:-480}
N_EXACT=${N_EXACT:-16 17 18 19}
N_RACE=${N_RACE:-20 21}
N_BIG=${N_BIG:-22}
N_RUN=${N_RUN:-21}
SWEEP_N=${SWEEP_N:-20}
EST_N=${EST_N:-28}
FIG=$ROOT/tests/gpu/cpu-figures.tsv
START=$SECONDS
mkdir -p "$LOG"
: >"$LOG/results.tsv"
left() { echo $((BUDGET - (SECONDS - START))); }
say() { echo "$*" | tee -a "$LOG/check.log"; }
fig() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$FIG"; }
num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$2" | head -1; }

[ -x "$G/nq" ] || { say "no $G/nq: run tests/gpu/pack.sh here and carry .gpu"; exit 3; }
export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6' || LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$G/fallback
NQ=$G/nq

# ---- 1. the machine ----
{
    echo "== nvidia-smi"; nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv 2>&1
    echo "== kernel $(uname -r), $(nproc) cores; NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-}"
    echo "== ldconfig"; ldconfig -p 2>/dev/null | grep -Ei 'opencl|nvidia-compiler|nvvm|libcuda'
    echo "== vendors"; ls -l /etc/OpenCL/vendors 2>&1
} >"$LOG/probe.txt" 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ocl=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 / { print $NF; exit }')
for c in /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
         /usr/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1; do
    [ -n "$ocl" ] || { [ -e "$c" ] && ocl=$c; }
done
[ -n "$ocl" ] || ocl=$(timeout 20 find / -xdev -name 'libnvidia-opencl.so.1*' 2>/dev/null | head -1)
echo "== libnvidia-opencl: ${ocl:-not found}" >>"$LOG/probe.txt"
if [ -n "$ocl" ]; then                  # our own ICD file: the image may have none, /etc may be read-only
    VENDORS=$(mktemp -d)
    echo "$ocl" >"$VENDORS/nvidia.icd"
    export OCL_ICD_VENDORS=$VENDORS
fi
{
    echo "== clinfo -l (OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-unset})"
    [ -x "$G/clinfo" ] && timeout 30 "$G/clinfo" -l 2>&1
    echo "== nq's OpenCL devices"; timeout 30 "$NQ" bench count 4 --gpu --gpu-device list 2>&1
} >>"$LOG/probe.txt" 2>&1
want='(.*GPU)$'
# --gpu takes GPUs only: the dry run on pocl's CPU device names it by index (feed_check.sh too)
export GPU_OPT=--gpu
[ "${NQ_CHECK_ANY_DEVICE:-0}" = 1 ] && want='^0: ' && GPU_OPT="--gpu-device 0"
OCL_OK=0
grep -q "$want" "$LOG/probe.txt" && OCL_OK=1

nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
CUDA=$G/cuda
PEER=$G/peer
if [ -n "$arch" ] && [ "$(cat "$CUDA/arch" 2>/dev/null)" != "$arch" ]; then
    if [ -n "$nvcc" ]; then
        say "building nq's CUDA libraries for sm_$arch (carried: $(cat "$CUDA/arch" 2>/dev/null || echo no))"
        CUDA=$LOG/cuda
        NVCC=$nvcc timeout 200 tests/gpu/build_cuda.sh "$CUDA" "$arch" >>"$LOG/check.log" 2>&1
    else
        say "no nvcc and no CUDA libraries for sm_$arch: nq's CUDA path is not measured"
    fi
fi
if [ -n "$arch" ] && [ "$(cat "$PEER/arch" 2>/dev/null)" != "$arch" ]; then
    PEER=$LOG/peer
    if [ -n "$nvcc" ] && [ -x "$G/peer-src/build.sh" ]; then
        say "building the peer for sm_$arch"
        NVCC=$nvcc ARCH=$arch timeout 200 "$G/peer-src/build.sh" "$PEER" >>"$LOG/check.log" 2>&1 \
            || say "the peer did not build (check.log)"
    else
        say "no peer built for sm_$arch and no nvcc (or no source) to build it: the peer is not measured"
    fi
fi
FAST_LIB=$CUDA/fast-ptx-wg128-r14.so
CUDA_OK=0
if [ -f "$FAST_LIB" ]; then
    # shellcheck disable=SC2086  # GPU_OPT is one option or two words
    if NQ_GPU_CUDA=$FAST_LIB timeout 60 "$NQ" bench count 8 $GPU_OPT --json >"$LOG/cuda-probe.json" \
            2>"$LOG/cuda-probe.err"; then
        CUDA_OK=1
    else
        say "CUDA: not usable here: $(head -1 "$LOG/cuda-probe.err")"
    fi
fi
say "card: ${card:-none} (sm_${arch:-?}); OpenCL: $([ $OCL_OK = 1 ] && echo yes || echo no); CUDA: \
$([ $CUDA_OK = 1 ] && echo yes || echo no); peer: $([ -x "$PEER/n_queens_c3" ] && echo yes || echo no); \
$(nproc) host cores"

# ---- how to run each variant: a label, then the environment it runs with ----
declare -A VENV
VENV[cuda-fast-ptx]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r14.so"
VENV[cuda-fast-vote]="NQ_GPU_CUDA=$CUDA/fast-vote-wg128-r14.so"
VENV[cuda-fast-portable]="NQ_GPU_CUDA=$CUDA/fast-portable-wg128-r14.so"
VENV[cuda-fast-ptx-rows13]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r13.so NQ_GPU_ROWS=13"
VENV[cuda-fast-ptx-rows15]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r15.so NQ_GPU_ROWS=15"
VENV[cuda-fast-ptx-wg64]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg64-r14.so NQ_GPU_WG=64"
VENV[cuda-fast-ptx-wg256]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg256-r14.so NQ_GPU_WG=256"
VENV[cuda-fast-ptx-launch250]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r14.so NQ_GPU_LAUNCH_MS=250"
VENV[cuda-fast-ptx-launch1000]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r14.so NQ_GPU_LAUNCH_MS=1000"
VENV[cuda-fast-ptx-groups4]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r14.so NQ_GPU_GROUPS=4"
VENV[cuda-fast-ptx-unsorted]="NQ_GPU_CUDA=$CUDA/fast-ptx-wg128-r14.so NQ_GPU_SORT=0"
VENV[cuda-parity]="NQ_GPU_CUDA=$CUDA/parity-wg128-r13.so NQ_GPU_KERNEL=parity"
VENV[opencl-fast]="NQ_GPU_KERNEL=fast"
VENV[opencl-fast-rows13]="NQ_GPU_ROWS=13"
VENV[opencl-fast-rows15]="NQ_GPU_ROWS=15"
VENV[opencl-fast-wg64]="NQ_GPU_WG=64"
VENV[opencl-fast-wg256]="NQ_GPU_WG=256"
VENV[opencl-fast-launch1000]="NQ_GPU_LAUNCH_MS=1000"
VENV[opencl-parity]="NQ_GPU_KERNEL=parity"
usable() {   # usable LABEL: its backend runs here
    case "$1" in cuda-*) [ $CUDA_OK = 1 ] ;; opencl-*) [ $OCL_OK = 1 ] ;; *) return 1 ;; esac
}

# nqrun LABEL N [LIMIT]: `nq bench count N --gpu` under that variant; a results.tsv line; sets LAST_T
# (seconds, empty when it failed). Exact: the total and unique of cpu-figures.tsv; for parity, nodes too.
LAST_T=
nqrun() {
    local label=$1 n=$2 limit=${3:-$(($(left) - 10))} out t ok nodes
    LAST_T=
    usable "$label" || return 1
    [ "$limit" -gt 5 ] || return 1
    # shellcheck disable=SC2086
    out=$(env ${VENV[$label]} timeout "$limit" "$NQ" bench count "$n" $GPU_OPT --json 2>>"$LOG/check.log")
    echo "{\"label\":\"$label\",\"result\":${out:-null}}" >>"$LOG/bench.jsonl"
    t=$(num seconds "$out")
    if [ -z "$t" ]; then
        printf '%s\t%s\tFAILED\t-\t-\t-\t-\n' "$label" "$n" >>"$LOG/results.tsv"
        say "N=$n $label: failed or timed out (${limit}s)"
        return 1
    fi
    ok=no
    [ "$(num total "$out")" = "$(fig "$n" 4)" ] && [ "$(num unique "$out")" = "$(fig "$n" 5)" ] && ok=yes
    nodes=-
    if grep -q '"gpu_nodes_cpu":true' <<<"$out"; then
        nodes=n/a
        [ "$(fig "$n" 6)" != "-" ] && [ -n "$(fig "$n" 6)" ] && nodes=DIFFER
        [ "$(num nodes "$out")" = "$(fig "$n" 6)" ] && nodes=same
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$n" "$t" "$ok" "$nodes" "$(num setup_seconds "$out")" \
        "$(num nodes_per_s "$out")" >>"$LOG/results.tsv"
    say "N=$n $label: ${t}s exact $ok$([ "$nodes" != - ] && echo ", nodes $nodes")"
    LAST_T=$t
}

# peerrun CONFIG ROWS N: the peer's count and time (its own clock, around its whole count).
peerrun() {
    local c=$1 rows=$2 n=$3 limit=$(($(left) - 10)) out ms res ok
    [ -x "$PEER/n_queens_c$c" ] && [ "$limit" -gt 5 ] || return 1
    out=$(LD_LIBRARY_PATH=$PEER:$LD_LIBRARY_PATH timeout "$limit" "$PEER/n_queens_c$c" "$n" "$rows" 2>&1)
    echo "== peer c$c rows $rows N=$n" >>"$LOG/peer.log"
    echo "$out" >>"$LOG/peer.log"
    ms=$(sed -n 's/.*calc time: \[\([0-9.]*\)ms\].*/\1/p' <<<"$out" | tail -1)
    res=$(sed -n 's/.*queens result \([0-9]*\),.*/\1/p' <<<"$out" | tail -1)
    if [ -z "$ms" ] || [ -z "$res" ]; then      # "result -1": it found no GPU
        printf 'peer-c%s-rows%s\t%s\tFAILED\t-\t-\t-\t-\n' "$c" "$rows" "$n" >>"$LOG/results.tsv"
        say "N=$n peer config$c rows $rows: failed (peer.log)"
        return 1
    fi
    ok=no; [ "$res" = "$(fig "$n" 4)" ] && ok=yes
    local s; s=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')
    printf 'peer-c%s-rows%s\t%s\t%s\t%s\t-\t-\t-\n' "$c" "$rows" "$n" "$s" "$ok" >>"$LOG/results.tsv"
    say "N=$n peer config$c rows $rows: ${s}s exact $ok"
}
secs() { awk -F'\t' -v l="$1" -v n="$2" '$1 == l && $2 == n && $3 != "FAILED" { t = $3 } END { print t }' \
         "$LOG/results.tsv"; }

PRIMARY=opencl-fast
[ $CUDA_OK = 1 ] && PRIMARY=cuda-fast-ptx
if [ $OCL_OK = 0 ] && [ $CUDA_OK = 0 ]; then
    say "neither OpenCL nor CUDA counts here: nothing to measure (probe.txt, check.log)"
fi

# ---- 2. exact at small N, and parity's nodes ----
for n in $N_EXACT; do nqrun "$PRIMARY" "$n" 60; done
[ $OCL_OK = 1 ] && [ $CUDA_OK = 1 ] && nqrun opencl-fast "$(echo $N_EXACT | awk '{ print $NF }')" 60
par=opencl-parity; [ $OCL_OK = 1 ] || par=cuda-parity
nqrun "$par" "$(echo $N_EXACT | awk '{ print $NF }')" 60

# ---- 3. the race at N=20 and 21, same run, same card ----
BEST=$PRIMARY
for n in $N_RACE; do
    [ "$n" = "$(echo $N_RACE | awk '{ print $1 }')" ] && peerrun 2 6 "$n"
    peerrun 3 5 "$n"
    nqrun cuda-fast-ptx "$n" 120
    nqrun opencl-fast "$n" 120
    if [ "$n" = "$(echo $N_RACE | awk '{ print $1 }')" ]; then   # the faster backend goes on alone
        a=$(secs cuda-fast-ptx "$n"); b=$(secs opencl-fast "$n")
        [ -n "$a" ] && [ -n "$b" ] && BEST=$(awk -v a="$a" -v b="$b" \
            'BEGIN { print (a <= b ? "cuda-fast-ptx" : "opencl-fast") }')
        [ -z "$a" ] && [ -n "$b" ] && BEST=opencl-fast
        [ -n "$a$b" ] && say "faster at N=$n: $BEST"
    fi
done

# ---- 4. a GPU worker keeping its GPU busy (feed_check.sh: the issue's targets) ----
if usable "$BEST" && [ -n "$(secs "$BEST" "$N_RUN")" ] && [ "$(left)" -gt 60 ]; then
    # shellcheck disable=SC2086
    env ${VENV[$BEST]} NQ="$NQ" LOG="$LOG" BENCH_T="$(secs "$BEST" "$N_RUN")" FEED_N="$N_RUN" \
        FEED_CPU_N=$((N_RUN - 1)) LIMIT=$(($(left) - 15)) tests/gpu/feed_check.sh >/dev/null \
        2>>"$LOG/check.log"
    cat "$LOG/feed.log" >>"$LOG/check.log" 2>/dev/null
fi

# ---- 5. through the queue: nq run against nq bench ----
RUN_T=
bench_t=$(secs "$BEST" "$N_RUN")
if usable "$BEST" && [ -n "$bench_t" ] && [ "$(left)" -gt 60 ]; then
    db=$(mktemp -u "$LOG/run-XXXX.db")
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    env ${VENV[$BEST]} timeout $(($(left) - 30)) "$NQ" run count "$N_RUN" $GPU_OPT --db "$db" --json \
        >"$LOG/run.json" 2>>"$LOG/check.log"
    rc=$?
    RUN_T=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    rok=no; [ "$(num total "$(cat "$LOG/run.json")")" = "$(fig "$N_RUN" 4)" ] && rok=yes
    [ $rc = 0 ] || RUN_T="FAILED(rc $rc)"
    printf 'run-%s\t%s\t%s\t%s\t-\t-\t-\n' "$BEST" "$N_RUN" "$RUN_T" "$rok" >>"$LOG/results.tsv"
    say "nq run count $N_RUN --gpu ($BEST): ${RUN_T}s exact $rok; nq bench: ${bench_t}s"
    rm -f "$db" "$db"-*
fi

# ---- 6. the N=28 projection ----
EST=-
if usable "$BEST" && [ "$(left)" -gt 60 ]; then
    lim=$(($(left) - 40)); [ "$lim" -gt 120 ] && lim=120
    # shellcheck disable=SC2086
    env ${VENV[$BEST]} timeout "$lim" "$NQ" estimate count "$EST_N" $GPU_OPT --json >"$LOG/estimate.json" \
        2>>"$LOG/check.log"
    EST=$(num gpu_years "$(cat "$LOG/estimate.json")")
    say "nq estimate count $EST_N --gpu ($BEST): ${EST:-failed} GPU-years"
fi

# ---- 7. N=22, where it fits (about 9 x N=21's time) ----
t21=$(secs "$BEST" "$N_RUN")
want22=$(awk -v t="${t21:-1000}" 'BEGIN { printf "%d", 9 * t + 20 }')
if usable "$BEST" && [ "$(left)" -gt "$want22" ]; then
    nqrun "$BEST" "$N_BIG" $(($(left) - 20))
else
    say "N=$N_BIG skipped: $(left)s left, it wants about ${want22}s"
fi
if [ "$(left)" -gt 330 ]; then peerrun 3 5 "$N_BIG"; fi

# ---- 8. the sweep at SWEEP_N, most telling first, while time is left ----
for v in cuda-fast-vote cuda-fast-portable cuda-fast-ptx-rows13 cuda-fast-ptx-rows15 cuda-fast-ptx-wg64 \
         cuda-fast-ptx-wg256 opencl-fast-rows13 opencl-fast-rows15 cuda-parity opencl-parity \
         cuda-fast-ptx-launch1000 cuda-fast-ptx-launch250 cuda-fast-ptx-groups4 cuda-fast-ptx-unsorted \
         opencl-fast-wg64 opencl-fast-wg256 opencl-fast-launch1000; do
    [ "$(left)" -gt 25 ] || break
    usable "$v" || continue
    [ -n "$(secs "$v" "$SWEEP_N")" ] && continue
    nqrun "$v" "$SWEEP_N" 40
done

# ---- 9. the summary ----
{
    echo "GPU device check, $(date -u +%Y-%m-%d): ${card:-no GPU} (sm_${arch:-?}), $(nproc) host cores;" \
         "OpenCL $([ $OCL_OK = 1 ] && echo yes || echo no), CUDA $([ $CUDA_OK = 1 ] && echo yes || echo no)"
    echo
    echo "The race (seconds; the peer is ygch/n_queens, config3 with 5 rows; ratio = peer / nq's faster," \
         "target >= 2 at N=21):"
    printf '%-4s %10s %14s %14s %8s %8s\n' N peer cuda-fast-ptx opencl-fast ratio exact
    for n in $N_EXACT $N_RACE $N_BIG; do
        p=$(secs peer-c3-rows5 "$n"); a=$(secs cuda-fast-ptx "$n"); b=$(secs opencl-fast "$n")
        best=$(awk -v a="${a:-0}" -v b="${b:-0}" \
               'BEGIN { m = a; if (m == 0 || (b > 0 && b < m)) m = b; print m }')
        r=-
        [ -n "$p" ] && [ "$best" != 0 ] && r=$(awk -v p="$p" -v q="$best" 'BEGIN { printf "%.2fx", p / q }')
        ex=$(awk -F'\t' -v n="$n" '$2 == n && $1 !~ /^peer/ && $3 != "FAILED" { e = e $4 "," }
                                    END { print e }' "$LOG/results.tsv")
        printf '%-4s %10s %14s %14s %8s %8s\n' "$n" "${p:--}" "${a:--}" "${b:--}" "$r" "${ex:--}"
    done
    p2=$(secs peer-c2-rows6 "$(echo $N_RACE | awk '{ print $1 }')")
    [ -n "$p2" ] && echo "(peer config2 with 6 rows at N=$(echo $N_RACE | awk '{ print $1 }'): ${p2}s)"
    echo
    echo
    cat "$LOG/feed.txt" 2>/dev/null || echo "(the GPU worker's feeding was not measured: no time or backend)"
    echo
    echo "nq run count $N_RUN --gpu (GPU and CPU, wall): ${RUN_T:--}s against nq bench ${bench_t:--}s" \
         "($BEST; target: at most 1.05 x bench)"
    echo "nq estimate count $EST_N --gpu: ${EST:--} GPU-years ($BEST; target at N=28: <= 5)"
    echo
    echo "The sweep at N=$SWEEP_N (seconds):"
    awk -F'\t' -v n="$SWEEP_N" '$2 == n { printf "  %-28s %10s  exact %s\n", $1, $3, $4 }' "$LOG/results.tsv"
    echo
    echo "Every run: results.tsv (label, N, seconds, exact, nodes vs CPU, setup s, nodes/s); logs in $LOG;" \
         "total $((SECONDS - START)) s"
} | tee "$LOG/summary.txt"
