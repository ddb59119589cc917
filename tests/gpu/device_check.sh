#!/usr/bin/env bash
# The GPU worker's device check: one short script (about 8 minutes at most) for a machine with an
# NVIDIA GPU where nothing can be installed. Carry .gpu/ (tests/gpu/pack.sh) and run, from the
# repository root:
#   tests/gpu/device_check.sh              (logs to $OUT when set, else .gpu-check/)
# 1. probes the machine: nvidia-smi, where libnvidia-opencl.so.1 is, the OpenCL platforms seen
#    through an ICD file of our own (OCL_ICD_VENDORS), nq's device list;
# 2. counts N=16..21 with `nq bench count N --gpu`, each exact and with the CPU kernels' node
#    count (tests/gpu/cpu-figures.tsv), then N=22 if the time left allows;
# 3. runs `nq estimate count 28 --gpu`;
# 4. prints one table.
# Where NVIDIA's OpenCL cannot run (no platform, or no GPU in it), it builds the same kernel with
# nvcc (common/gpu/gpu_cuda.cu -> libnq_cuda.so, loaded through NQ_GPU_CUDA) and measures that,
# and says so in the table. Tuning: NQ_GPU_WG, NQ_GPU_ROWS, NQ_GPU_STACK, NQ_GPU_GROUPS,
# NQ_GPU_CHUNK, NQ_GPU_LAUNCH_MS pass through; SWEEP=1 also times a few settings at N=20.
# A dry run without a GPU (pocl): NQ_CHECK_ANY_DEVICE=1 NS="12 13" BUDGET=120 tests/gpu/device_check.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 3
G=${NQ_GPU_PACK:-$ROOT/.gpu}
LOG=${OUT:-$ROOT/.gpu-check}
BUDGET=${BUDGET:-460}                   # seconds for the whole script
FIG=$ROOT/tests/gpu/cpu-figures.tsv
START=$SECONDS
mkdir -p "$LOG"
: >"$LOG/bench.jsonl"
left() { echo $((BUDGET - (SECONDS - START))); }
say() { echo "$*" | tee -a "$LOG/check.log"; }

[ -x "$G/nq" ] || { say "no $G/nq: run tests/gpu/pack.sh here and carry .gpu"; exit 3; }
export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6' || LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$G/fallback
NQ=$G/nq

# ---- 1. the machine ----
{
    echo "== nvidia-smi"; nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    echo "== kernel $(uname -r), $(nproc) cores; NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-}"
    echo "== ldconfig"; ldconfig -p 2>/dev/null | grep -Ei 'opencl|nvidia-compiler|nvvm'
    echo "== vendors"; ls -l /etc/OpenCL/vendors 2>&1
} >"$LOG/probe.txt" 2>&1
ocl=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 / { print $NF; exit }')
for c in /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so.1 \
         /usr/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1; do
    [ -n "$ocl" ] || { [ -e "$c" ] && ocl=$c; }
done
[ -n "$ocl" ] || ocl=$(timeout 30 find / -xdev -name 'libnvidia-opencl.so.1*' 2>/dev/null | head -1)
echo "== libnvidia-opencl: ${ocl:-not found}" >>"$LOG/probe.txt"
if [ -n "$ocl" ]; then                  # our own ICD file: the image may have none, /etc may be read-only
    VENDORS=$(mktemp -d)
    echo "$ocl" >"$VENDORS/nvidia.icd"
    export OCL_ICD_VENDORS=$VENDORS
fi
{
    echo "== clinfo -l (OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-unset})"
    [ -x "$G/clinfo" ] && timeout 60 "$G/clinfo" -l 2>&1
    echo "== nq's devices"; timeout 60 "$NQ" bench count 4 --gpu --gpu-device list 2>&1
} >>"$LOG/probe.txt" 2>&1
MODE=opencl
want='(.*GPU)$'
[ "${NQ_CHECK_ANY_DEVICE:-0}" = 1 ] && want='^0: '
if ! grep -q "$want" "$LOG/probe.txt"; then
    MODE=cuda
    say "no OpenCL GPU here (see probe.txt): building the kernel with nvcc instead"
    B=$(mktemp -d)
    rows=${NQ_GPU_ROWS:-13}
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
    if timeout 240 nvcc -O3 -arch="sm_${arch:-90}" -shared -Xcompiler -fPIC -DNQ_WG="${NQ_GPU_WG:-128}" \
            -DNQ_STACK=14 -DNQ_STACK_LOCAL=1 -DNQ_CHUNKED="${NQ_GPU_CHUNKED:-0}" \
            -DNQ_PAIRS="${NQ_GPU_PAIRS:-0}" -Icommon/gpu \
            -o "$B/libnq_cuda.so" common/gpu/gpu_cuda.cu \
            >>"$LOG/check.log" 2>&1 && [ "$rows" -le 16 ]; then
        export NQ_GPU_CUDA=$B/libnq_cuda.so
    else
        MODE=none
        say "nvcc could not build the kernel (check.log): nothing to measure"
    fi
fi
dev=$(NQ_GPU_CUDA=${NQ_GPU_CUDA:-} "$NQ" bench count 8 --gpu --json 2>>"$LOG/check.log" \
      | sed -n 's/.*"kernel":"gpu: \([^"]*\)".*/\1/p')
[ -n "$dev" ] || { say "the device does not count (check.log): nothing to measure"; MODE=none; }
say "mode: $MODE; device: ${dev:-none}"

# ---- 2. counts against the CPU's figures ----
fig() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$FIG"; }
num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$2"; }
ROWS_OUT=()
bench() {   # bench N TARGET_SECONDS
    local n=$1 target=$2 out t ok nodes
    local limit=$(($(left) - 20))
    [ "$limit" -gt 0 ] || return 1
    out=$(timeout "$limit" "$NQ" bench count "$n" --gpu --json 2>>"$LOG/check.log")
    echo "$out" >>"$LOG/bench.jsonl"
    t=$(num seconds "$out")
    if [ -z "$t" ]; then
        ROWS_OUT+=("$(printf '%-4s %-9s %-9s %10s %8s %12s %9s' "$n" "FAILED" "-" "-" "-" "-" "$target")")
        return 1
    fi
    ok=no
    [ "$(num total "$out")" = "$(fig "$n" 4)" ] && [ "$(num unique "$out")" = "$(fig "$n" 5)" ] && ok=yes
    nodes=$(fig "$n" 6)
    if [ "$nodes" = "-" ] || [ -z "$nodes" ]; then nodes="n/a"
    elif [ "$(num nodes "$out")" = "$nodes" ]; then nodes=same
    else nodes=DIFFER; fi
    ROWS_OUT+=("$(printf '%-4s %-9s %-9s %10.2f %8.2f %12.3g %9s' "$n" "$ok" "$nodes" "$t" \
                  "$(num setup_seconds "$out")" "$(num nodes_per_s "$out")" "$target")")
    LAST_T=$t
}
LAST_T=0
if [ "$MODE" != none ]; then
    for n in ${NS:-16 17 18 19 20 21}; do
        target=-; [ "$n" = 20 ] && target=4; [ "$n" = 21 ] && target=29
        # N=21 takes about 8x N=20: skip it when that cannot end in the time left
        if [ "$n" = 21 ] && [ "$(awk -v t="$LAST_T" -v l="$(left)" 'BEGIN { print (t * 9 + 120 > l) }')" = 1 ]
        then
            ROWS_OUT+=("21   skipped: N=20 took ${LAST_T}s, too long for the time left"); continue
        fi
        bench "$n" "$target" || break
    done
    if [ -n "${NS:-}" ]; then
        :                               # a chosen list: nothing more
    elif [ "$(awk -v t="$LAST_T" -v l="$(left)" 'BEGIN { print (t > 0 && t * 9 + 100 < l) }')" = 1 ]; then
        bench 22 "250/125"
    else
        ROWS_OUT+=("22   not run: N=21 took ${LAST_T}s, about 9x that is over the time left")
    fi
fi

# ---- optional: a few settings at N=20 ----
if [ "${SWEEP:-0}" = 1 ] && [ "$MODE" = opencl ]; then
    for s in "NQ_GPU_WG=64" "NQ_GPU_WG=256" "NQ_GPU_STACK=private" "NQ_GPU_ROWS=12" "NQ_GPU_ROWS=14" \
             "NQ_GPU_GROUPS=4" "NQ_GPU_GROUPS=16" "NQ_GPU_SORT=0" "NQ_GPU_QUEUES=1" "NQ_GPU_CHUNKED=1" \
             "NQ_GPU_LAUNCH_MS=1000" "NQ_GPU_PAIRS=1"; do
        [ "$(left)" -gt 120 ] || break
        out=$(env "$s" timeout 60 "$NQ" bench count 20 --gpu --json 2>>"$LOG/check.log")
        echo "{\"sweep\":\"$s\",\"result\":$out}" >>"$LOG/bench.jsonl"
        ROWS_OUT+=("$(printf '20   %-20s %10s s' "$s" "$(num seconds "$out")")")
    done
fi

# ---- 3. the N=28 projection ----
est=-
if [ "$MODE" != none ] && [ "$(left)" -gt 60 ]; then
    timeout "$(($(left) - 15))" "$NQ" estimate count "${EST_N:-28}" --gpu --json >"$LOG/estimate.json" \
        2>>"$LOG/check.log"
    est=$(num gpu_years "$(cat "$LOG/estimate.json")")
fi

# ---- 4. the table ----
{
    how=OpenCL
    [ "$MODE" = cuda ] && how="NVIDIA OpenCL could not run: the CUDA build of the same kernel"
    [ "$MODE" = none ] && how="nothing ran"
    echo "GPU device check: mode $MODE ($how), device ${dev:-none}"
    printf '%-4s %-9s %-9s %10s %8s %12s %9s\n' N exact nodes seconds "(setup)" nodes/s target
    for r in "${ROWS_OUT[@]}"; do echo "$r"; done
    echo "N=${EST_N:-28} projected: ${est:-?} GPU-years (target at N=28: <= 5)"
    echo "total $((SECONDS - START)) s; logs in $LOG"
} | tee "$LOG/table.txt"
