#!/usr/bin/env bash
# Builds nq's CUDA libraries (common/gpu/gpu_cuda.cu -> libnq_cuda.so, loaded where NQ_GPU_CUDA names
# one) for one GPU architecture, one per variant, into DEST/VARIANT.so, the CUDA runtime linked in
# statically (the library then needs only the driver). A variant's name says what it was built with:
#   fast-LOOP-wgW-rR   the fast kernel, its loop ptx|vote|portable (gpu_cuda.h), W threads a block,
#                      a stack for tasks of R rows (run it with NQ_GPU_WG=W NQ_GPU_ROWS=R or fewer)
#   parity-wgW-rR      the parity kernel (tasks one by one, the stack in shared memory)
# usage: tests/gpu/build_cuda.sh DEST ARCH [VARIANT...]   (ARCH 90: H100/H200; no VARIANT: the list
# the device check compares). Prints one line per variant built or failed; exit 1 if any failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:?usage: build_cuda.sh DEST ARCH [VARIANT...]}
ARCH=${2:?usage: build_cuda.sh DEST ARCH [VARIANT...]}
shift 2
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
DEFAULT_VARIANTS="fast-ptx-wg128-r14 fast-ptx-wg128-r13 fast-ptx-wg128-r15 fast-ptx-wg64-r14
                  fast-ptx-wg256-r14 fast-vote-wg128-r14 fast-portable-wg128-r14 parity-wg128-r13"
VARIANTS=${*:-$DEFAULT_VARIANTS}
mkdir -p "$DEST"

# The -D flags of a variant's name; nothing (and 1) for a name it does not know.
defs() {
    local kind loop wg rows
    IFS=- read -r kind loop wg rows <<<"$1"
    if [ "$kind" = parity ]; then
        rows=$wg; wg=$loop
    fi
    wg=${wg#wg}; rows=${rows#r}
    case "$wg$rows" in *[!0-9]*|'') return 1 ;; esac
    case "$kind-$loop" in
        fast-ptx) echo "-DNQ_FAST=1 -DNQ_CUDA_LOOP=2 -DNQ_WG=$wg -DNQ_FAST_STACK=$((rows - 1))" ;;
        fast-vote) echo "-DNQ_FAST=1 -DNQ_CUDA_LOOP=1 -DNQ_WG=$wg -DNQ_FAST_STACK=$((rows - 1))" ;;
        fast-portable) echo "-DNQ_FAST=1 -DNQ_CUDA_LOOP=0 -DNQ_WG=$wg -DNQ_FAST_STACK=$((rows - 1))" ;;
        parity-*) echo "-DNQ_FAST=0 -DNQ_WG=$wg -DNQ_STACK=$((rows - 2)) -DNQ_STACK_LOCAL=1" \
                       "-DNQ_CHUNKED=0 -DNQ_PAIRS=0" ;;
        *) return 1 ;;
    esac
}

build() {   # build VARIANT: one line, 0 on success
    local v=$1 d
    d=$(defs "$v") || { echo "cuda: $v: not a variant name"; return 1; }
    # shellcheck disable=SC2086
    if "$NVCC" -O3 -arch="sm_$ARCH" -shared -Xcompiler -fPIC -cudart static $d -I"$ROOT/common/gpu" \
           -o "$DEST/$v.so" "$ROOT/common/gpu/gpu_cuda.cu" >"$DEST/$v.log" 2>&1; then
        echo "cuda: built $v for sm_$ARCH"
    else
        echo "cuda: $v did not build (sm_$ARCH): $(grep -m1 -i error "$DEST/$v.log")"
        return 1
    fi
}

rc=0
pids=()
for v in $VARIANTS; do
    build "$v" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "$ARCH" >"$DEST/arch"
exit $rc
