# Helpers for the GPU tests: source after lib.sh. Where no OpenCL platform exists the test is
# skipped (77); CI installs pocl (pocl-opencl-icd), which runs the very same kernel and host code
# on the CPU, so there they run. pocl compiles a kernel with LLVM in seconds: its cache is kept
# in the build folder, so each kernel is compiled once for all the tests.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-${NQ_BUILD_DIR:-$T}/pocl-cache}
# under ASan: what pocl and LLVM keep is theirs (see the file)
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/integration/lsan-opencl.supp
mkdir -p "$POCL_CACHE_DIR"
# --gpu takes GPUs only; pocl's devices are CPUs, which only an index names (docs/gpu.md)
GPU="--gpu-device ${NQ_TEST_GPU_DEVICE:-0}"

if ! "$NQ" bench count 4 --gpu-device list >"$T/devices.txt" 2>"$T/devices.err"; then
    echo "skipped: no OpenCL platform here ($(cat "$T/devices.err")); install pocl-opencl-icd"
    exit 77
fi
echo "OpenCL devices: $(tr '\n' ';' <"$T/devices.txt")"

# cpu_vs_gpu N [bench options]: the CPU bench's and the GPU bench's total and unique agree, and their
# nodes where the GPU's kernel counts the CPU's (parity; NQ_GPU_KERNEL picks it).
cpu_vs_gpu() {
    local n=$1; shift
    "$NQ" bench count "$n" --json "$@" >"$T/cpu.json" || fail "cpu bench $n"
    "$NQ" bench count "$n" $GPU --json "$@" >"$T/gpu.json" 2>"$T/gpu.err" \
        || fail "gpu bench $n: $(cat "$T/gpu.err")"
    local k keys="total unique"
    grep -q '"gpu_nodes_cpu":true' "$T/gpu.json" && keys="$keys nodes"
    for k in $keys; do
        [ "$(json_num "$T/cpu.json" "$k")" = "$(json_num "$T/gpu.json" "$k")" ] \
            || fail "N=$n $*: $k differs: cpu $(cat "$T/cpu.json") gpu $(cat "$T/gpu.json")"
    done
}

json_num() { grep -o "\"$2\":[0-9]*" "$1" | head -1 | cut -d: -f2; }
