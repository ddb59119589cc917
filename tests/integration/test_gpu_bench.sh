#!/usr/bin/env bash
# `nq bench count N --gpu` through OpenCL (pocl in CI), with both kernels: the fast one (the
# default) exact, the parity one exact with the CPU kernels' nodes, with tasks spread over many
# launches, tasks of 2 to 16 rows, chunks and both stack layouts; `nq estimate count --gpu` on the
# CPU's sample; and the one-line errors with their exit codes when there is no platform, no such
# device, a bad tuning value or kernel, or a kernel that does not build.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.sh"

cpu_vs_gpu 12
[ "$(json_num "$T/gpu.json" total)" = "$(oeis_total 12)" ] || fail "N=12 total"
grep -q '"kernel":"gpu: .*\[OpenCL; fast kernel, .*tasks largest first, 2 queue' "$T/gpu.json" \
    || fail "the kernel field names the GPU, the backend, the kernel and the defaults: $(cat "$T/gpu.json")"
grep -q '"gpu_backend":"OpenCL","gpu_kernel":"fast","gpu_nodes_cpu":false' "$T/gpu.json" \
    || fail "the backend and kernel fields: $(cat "$T/gpu.json")"
NQ_GPU_KERNEL=parity cpu_vs_gpu 12
grep -q '"gpu_kernel":"parity","gpu_nodes_cpu":true' "$T/gpu.json" || fail "parity: $(cat "$T/gpu.json")"
"$NQ" bench count 12 $GPU --gpu-kernel parity --json >"$T/par.json" || fail "--gpu-kernel parity"
[ "$(json_num "$T/par.json" nodes)" = "$(json_num "$T/cpu.json" nodes)" ] || fail "--gpu-kernel parity nodes"
ok "bench count 12 --gpu: exact with the fast kernel; with the parity kernel, the CPU's nodes too"

# tasks of 6 rows, launches of at most 2000 tasks: dozens of launches, shards over several; tasks in
# the order the walk makes them, on one queue; both kernels
for k in fast parity; do
    NQ_GPU_KERNEL=$k NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=2000 NQ_GPU_SORT=0 NQ_GPU_QUEUES=1 cpu_vs_gpu 13
    grep -q "$k kernel, .*tasks in order, 1 queue" "$T/gpu.json" \
        || fail "unsorted, one queue: $(cat "$T/gpu.json")"
    grep -Eq '; [0-9]{2,} launches, [0-9]{5,} tasks' "$T/gpu.json" \
        || fail "want many launches: $(cat "$T/gpu.json")"
done
# the fast kernel's nodes are its own, and the same whatever the work-groups and the tasks' order
"$NQ" bench count 13 $GPU --json >"$T/f1.json" || fail "bench 13 --gpu"
NQ_GPU_WG=32 NQ_GPU_SORT=0 "$NQ" bench count 13 $GPU --json >"$T/f2.json" || fail "bench 13 --gpu, wg 32"
[ "$(json_num "$T/f1.json" nodes)" = "$(json_num "$T/f2.json" nodes)" ] \
    || fail "fast nodes differ between runs: $(cat "$T/f1.json" "$T/f2.json")"
# the fast kernel with tasks of 2 rows (the last two only), 3 and 16 (the whole board); work-groups of 32
NQ_GPU_ROWS=2 cpu_vs_gpu 13 --depth 3
NQ_GPU_ROWS=3 NQ_GPU_WG=32 cpu_vs_gpu 13
NQ_GPU_ROWS=16 cpu_vs_gpu 13 --depth 2
# parity: chunks of 5 tasks of one shard for work-groups of 32, the stack private
NQ_GPU_KERNEL=parity NQ_GPU_ROWS=7 NQ_GPU_STACK=private NQ_GPU_WG=32 NQ_GPU_CHUNKED=1 NQ_GPU_CHUNK=5 \
    cpu_vs_gpu 13 --depth 2
grep -q 'stack private, groups [0-9]*, chunked' "$T/gpu.json" \
    || fail "private and chunked: $(cat "$T/gpu.json")"
# parity: level m-2 and the last row in closed form
NQ_GPU_KERNEL=parity NQ_GPU_PAIRS=1 NQ_GPU_ROWS=8 cpu_vs_gpu 13
grep -q ', pairs' "$T/gpu.json" || fail "pairs: $(cat "$T/gpu.json")"
ok "bench count 13 --gpu over many launches, both kernels: tasks sorted or not, of 2 to 16 rows; parity" \
   "chunked or not, local or private stacks, level m-2 in closed form or not: exact, parity's nodes the CPU's"

NQ_GPU_CHUNKED=1 "$NQ" bench count 10 $GPU >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 3 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "parity kernel's settings" "$T/err" \
    || fail "a parity setting with the fast kernel: exit $rc $(cat "$T/err")"
"$NQ" bench count 10 $GPU --gpu-kernel quick >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "fast or parity" "$T/err" || fail "--gpu-kernel quick: exit $rc $(cat "$T/err")"
NQ_GPU_KERNEL=quick "$NQ" bench count 10 $GPU >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "NQ_GPU_KERNEL=quick" "$T/err" \
    || fail "NQ_GPU_KERNEL=quick: exit $rc $(cat "$T/err")"
ok "a parity setting with the fast kernel (exit 3), a bad kernel name (exit 2): one line each"

# estimate --gpu: the same sample as on the CPU (same seed), so the same node estimate with the parity
# kernel; GPU-hours with either
"$NQ" estimate count 12 --sample 8 --seed 3 --json >"$T/est.json" || fail "estimate 12"
"$NQ" estimate count 12 --sample 8 --seed 3 $GPU --gpu-kernel parity --json >"$T/estg.json" 2>"$T/err" \
    || fail "estimate --gpu: $(cat "$T/err")"
[ "$(json_num "$T/est.json" nodes)" = "$(json_num "$T/estg.json" nodes)" ] \
    || fail "estimate --gpu nodes: cpu $(cat "$T/est.json") gpu $(cat "$T/estg.json")"
grep -Eq '"gpu_hours":[0-9.e+-]+,' "$T/estg.json" && grep -q '"gpu":"' "$T/estg.json" \
    || fail "estimate --gpu: $(cat "$T/estg.json")"
"$NQ" estimate count 12 --sample 8 --seed 3 $GPU --json >"$T/estf.json" 2>"$T/err" \
    || fail "estimate --gpu (fast): $(cat "$T/err")"
grep -Eq '"gpu_hours":[0-9.e+-]+,' "$T/estf.json" || fail "estimate --gpu (fast): $(cat "$T/estf.json")"
ok "estimate count 12 --gpu: the CPU's sample (its node estimate with the parity kernel), in GPU-hours"

mkdir -p "$T/no-vendors"
OCL_ICD_VENDORS=$T/no-vendors "$NQ" bench count 10 $GPU >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" = 3 ] || fail "no platform: exit $rc, want 3"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "no OpenCL platform: install ocl-icd-libopencl1" "$T/err" \
    || fail "no platform: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "no platform: printed a result"
ok "no OpenCL platform: one line, exit 3"

"$NQ" bench count 10 --gpu-device 63 >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 3 ] && grep -q "there are [0-9]* OpenCL device" "$T/err" \
    || fail "device 63: exit $rc $(cat "$T/err")"
"$NQ" bench count 10 --gpu-device x >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] || fail "--gpu-device x: exit $rc"
NQ_GPU_WG=0 "$NQ" bench count 10 $GPU >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "NQ_GPU_WG=0" "$T/err" || fail "NQ_GPU_WG=0: exit $rc $(cat "$T/err")"
ok "no such device (exit 3), a bad --gpu-device or tuning value (exit 2)"

if "$NQ" --version | grep -q "fault switches"; then
    NQ_FAULT_GPU_BUILD=1 "$NQ" bench count 10 $GPU >/dev/null 2>"$T/err"; rc=$?
    [ "$rc" = 3 ] && grep -q "the kernel did not build" "$T/err" && [ "$(grep -c 'nq bench' "$T/err")" = 1 ] \
        || fail "build failure: exit $rc $(cat "$T/err")"
    NQ_FAULT_GPU_LOST=2 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=2000 "$NQ" bench count 13 $GPU >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" = 3 ] && grep -q "device lost" "$T/err" && [ ! -s "$T/out" ] \
        || fail "lost device: exit $rc $(cat "$T/err")"
    ok "a kernel that does not build, a device lost mid-run: one line, exit 3, no count"
fi
