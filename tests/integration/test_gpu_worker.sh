#!/usr/bin/env bash
# GPU workers through OpenCL (pocl in CI): `nq run count --gpu` with either kernel; a broker with a
# GPU worker on the default (fast) kernel and a CPU worker on a --quorum 2 job (exact, no conflict,
# no evidence: they agree on total, unique and residues, and their nodes, each kernel's own, are
# not compared), then the same with a --gpu-kernel parity worker (nodes compared and equal: the
# job's nodes are the CPU's); `nq workers` naming the device; a GPU that miscounts (test fault
# switch) caught by the quorum; a GPU lost mid-job (its shards reported as errors, recounted
# elsewhere, the worker exits 3); and no platform: one line, exit 3, nothing left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.sh"
cd "$T" || exit 1

nodes12=$("$NQ" bench count 12 --json | json_get nodes)
"$NQ" run count 12 --gpu --db run.db --json >run.json 2>run.err || fail "run count 12 --gpu: $(cat run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 12)" ] || fail "run --gpu total: $(cat run.json)"
[ "$(json_get unique <run.json)" = "$(oeis_unique 12)" ] || fail "run --gpu unique: $(cat run.json)"
"$NQ" run count 12 --gpu-kernel parity --db runp.db --json >run.json 2>run.err \
    || fail "run count 12 --gpu-kernel parity: $(cat run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 12)" ] || fail "run --gpu parity total: $(cat run.json)"
[ "$(json_get nodes <run.json)" = "$nodes12" ] \
    || fail "run --gpu parity nodes, want $nodes12: $(cat run.json)"
ok "nq run count 12 --gpu: exact; with --gpu-kernel parity, the CPU's nodes"

mkdir -p no-vendors
OCL_ICD_VENDORS=$T/no-vendors "$NQ" run count 10 --gpu --db none.db >out 2>err; rc=$?
[ "$rc" = 3 ] && grep -q "no OpenCL platform" err && [ "$(wc -l <err)" = 1 ] \
    || fail "run without platform: $rc $(cat err)"
[ ! -e none.db ] || fail "run without a platform left a DB behind"
OCL_ICD_VENDORS=$T/no-vendors "$NQ" worker --gpu --connect tcp://127.0.0.1:9 >out 2>err; rc=$?
[ "$rc" = 3 ] && grep -q "nq worker: no OpenCL platform" err || fail "worker without platform: $rc $(cat err)"
ok "no OpenCL platform: nq run and nq worker say so in one line, exit 3, no DB made"

# one GPU worker (the fast kernel, the default) and one CPU worker, every shard counted by both:
# quorum needs them to agree, on what both count alike
start_broker q.db
NQ_GPU_ROWS=6 start_worker gpu --gpu --threads 2 --id gpu1
gpu_pid=$LAST_PID
start_worker cpu --threads 1 --id cpu1
cpu1_pid=$LAST_PID
id=$("$NQ" submit count 13 --quorum 2) || fail "submit quorum"
wait_for 120 job_done "$id" || fail "quorum job with a GPU worker did not finish: $("$NQ" status "$id")"
[ "$(job_field "$id" total)" = "$(oeis_total 13)" ] || fail "quorum total"
[ "$(job_field "$id" unique)" = "$(oeis_unique 13)" ] || fail "quorum unique"
[ "$(job_field "$id" shards_conflict)" = 0 ] || fail "conflicts between the fast GPU and the CPU worker"
[ "$(job_field "$id" evidence)" = 0 ] || fail "evidence between the fast GPU and the CPU worker"
"$NQ" workers --json | grep -o '{[^{}]*"id":"gpu1"[^{}]*}' | grep -q '"kernel":"nq-[^"]* gpu: ' \
    || fail "nq workers --json does not name the GPU: $("$NQ" workers --json)"
"$NQ" workers | grep '^gpu1 ' | grep -q 'gpu: ' \
    || fail "nq workers does not show the device: $("$NQ" workers)"
"$NQ" workers --json | grep -o '{[^{}]*"id":"gpu1"[^{}]*}' | grep -Eq '"shards_done":[1-9]' \
    || fail "the GPU worker did no shard"
"$NQ" workers | grep -q FLAGGED && fail "a worker was flagged: $("$NQ" workers)"
ok "quorum 2 with a fast GPU worker and a CPU worker: exact, no conflict, no evidence;" \
   "nq workers names the device"

# the parity kernel beside the CPU: nodes compared too, and the job's nodes are the CPU's
kill "$gpu_pid"
NQ_GPU_ROWS=6 start_worker gpup --gpu-kernel parity --threads 2 --id gpup
gpu_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=gpup' "$T/broker.log" || fail "the parity GPU worker did not join"
idp=$("$NQ" submit count 12 --quorum 2) || fail "submit quorum parity"
wait_for 120 job_done "$idp" \
    || fail "quorum job with a parity GPU worker did not finish: $("$NQ" status "$idp")"
[ "$(job_field "$idp" total)" = "$(oeis_total 12)" ] || fail "parity quorum total"
[ "$(job_field "$idp" shards_conflict)" = 0 ] || fail "conflicts between the parity GPU and the CPU worker"
[ "$(job_field "$idp" nodes)" = "$nodes12" ] \
    || fail "parity quorum nodes, want $nodes12: $("$NQ" status "$idp" --json)"
[ "$(job_field "$idp" fast_shards)" = 0 ] || fail "a parity result stored as the fast kernel's"
ok "quorum 2 with a parity GPU worker and a CPU worker: exact, no conflict, the CPU's nodes"

if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped the fault cases: this nq was built without -DNQ_TEST_FAULTS=ON"
    exit 0
fi
kill "$gpu_pid"
# all three connected before the job, so the GPU worker takes its share of the shards
NQ_FAULT_GPU_WRONG=0.5 NQ_GPU_ROWS=6 start_worker bad --gpu-kernel parity --threads 2 --id badgpu
bad_pid=$LAST_PID
start_worker cpu2 --threads 1 --id cpu2
cpu2_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=badgpu' "$T/broker.log" || fail "the GPU worker did not join"
wait_for 30 grep -q 'worker.join worker=cpu2' "$T/broker.log" || fail "cpu2 did not join"
id2=$("$NQ" submit count 14 --quorum 2) || fail "submit quorum 2"
wait_for 120 job_done "$id2" || fail "quorum job with a miscounting GPU did not finish"
[ "$(job_field "$id2" total)" = "$(oeis_total 14)" ] || fail "quorum total with a miscounting GPU"
[ "$(job_field "$id2" unique)" = "$(oeis_unique 14)" ] || fail "quorum unique with a miscounting GPU"
"$NQ" workers --json | grep -o '{[^{}]*"id":"badgpu"[^{}]*}' | grep -q '"flagged":true' \
    || fail "the miscounting GPU worker is not flagged: $("$NQ" workers --json)"
ok "a GPU that miscounts (residues and all): caught by the quorum, flagged; the answer exact"

kill "$bad_pid" "$cpu2_pid" "$cpu1_pid"
# the GPU worker alone first, so that it holds shards when its device goes
NQ_FAULT_GPU_LOST=3 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=2000 \
    "$NQ" worker --connect "$WEP" --gpu --threads 2 --id lost >lost.log 2>lost.err &
lost=$!
PIDS+=("$lost")
wait_for 30 grep -q 'worker.join worker=lost' "$T/broker.log" || fail "the GPU worker did not join"
id3=$("$NQ" submit count 13) || fail "submit"
wait "$lost"; rc=$?
[ "$rc" = 3 ] || fail "a worker that lost its GPU exits $rc, want 3: $(cat lost.err)"
tail -1 lost.err | grep -q "^nq worker: GPU launch failed: device lost" \
    || fail "lost device message: $(cat lost.err)"
grep -q 'event=worker.gpu_failed' lost.err || fail "no worker.gpu_failed log line: $(cat lost.err)"
wait_for 30 grep -q 'result.error.*worker=lost.*device lost' "$T/broker.log" \
    || fail "the broker did not hear of the lost shards as errors"
start_worker cpu3 --threads 1 --id cpu3
wait_for 120 job_done "$id3" || fail "the job did not finish on a CPU worker"
[ "$(job_field "$id3" total)" = "$(oeis_total 13)" ] || fail "total after a lost GPU"
ok "a GPU lost mid-job: its shards come back as errors, the worker exits 3, the job is exact"
