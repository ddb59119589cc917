#!/usr/bin/env bash
# GPU workers through OpenCL (pocl in CI): `nq run count --gpu` with either kernel; a broker with a
# GPU worker on the default (fast) kernel and a CPU worker on a --quorum 2 job (exact, no conflict,
# no evidence: they agree on total, unique and residues, and their nodes, each kernel's own, are
# not compared), then the same with a --gpu-kernel parity worker (nodes compared and equal: the
# job's nodes are the CPU's); `nq workers` naming the device; a GPU that miscounts (test fault
# switch) caught by the quorum; one worker (and nq run) counting on the GPU and the CPU at once, its
# device slowed by a test switch, exact; a GPU lost mid-job (its shards reported as errors,
# recounted elsewhere, the worker exits 3), also while the worker counts on the CPU (those shards
# finish); and no platform: one line, exit 3, nothing left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.sh"
cd "$T" || exit 1

nodes12=$("$NQ" bench count 12 --json | json_get nodes)
"$NQ" run count 12 $GPU --db run.db --json >run.json 2>run.err || fail "run count 12 --gpu: $(cat run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 12)" ] || fail "run --gpu total: $(cat run.json)"
[ "$(json_get unique <run.json)" = "$(oeis_unique 12)" ] || fail "run --gpu unique: $(cat run.json)"
"$NQ" run count 12 $GPU --gpu-kernel parity --db runp.db --json >run.json 2>run.err \
    || fail "run count 12 --gpu-kernel parity: $(cat run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 12)" ] || fail "run --gpu parity total: $(cat run.json)"
[ "$(json_get nodes <run.json)" = "$nodes12" ] \
    || fail "run --gpu parity nodes, want $nodes12: $(cat run.json)"
ok "nq run count 12 --gpu: exact; with --gpu-kernel parity, the CPU's nodes"

mkdir -p no-vendors
OCL_ICD_VENDORS=$T/no-vendors "$NQ" run count 10 $GPU --db none.db >out 2>err; rc=$?
[ "$rc" = 3 ] && grep -q "no OpenCL platform" err && [ "$(wc -l <err)" = 1 ] \
    || fail "run without platform: $rc $(cat err)"
[ ! -e none.db ] || fail "run without a platform left a DB behind"
OCL_ICD_VENDORS=$T/no-vendors "$NQ" worker $GPU --connect tcp://127.0.0.1:9 >out 2>err; rc=$?
[ "$rc" = 3 ] && grep -q "nq worker: no OpenCL platform" err || fail "worker without platform: $rc $(cat err)"
ok "no OpenCL platform: nq run and nq worker say so in one line, exit 3, no DB made"

# one GPU worker (the fast kernel, the default; --gpu-only: its shards all on the device) and one
# CPU worker, every shard counted by both: quorum needs them to agree, on what both count alike
start_broker q.db
NQ_GPU_ROWS=6 start_worker gpu $GPU --gpu-only --threads 2 --id gpu1
gpu_pid=$LAST_PID
start_worker cpu --threads 1 --id cpu1
cpu1_pid=$LAST_PID
id=$("$NQ" submit count 13 --quorum 2) || fail "submit quorum"
wait_for 120 job_done "$id" || fail "quorum job with a GPU worker did not finish: $("$NQ" status "$id")"
[ "$(job_field "$id" total)" = "$(oeis_total 13)" ] || fail "quorum total"
[ "$(job_field "$id" unique)" = "$(oeis_unique 13)" ] || fail "quorum unique"
[ "$(job_field "$id" shards_conflict)" = 0 ] || fail "conflicts between the fast GPU and the CPU worker"
[ "$(job_field "$id" evidence)" = 0 ] || fail "evidence between the fast GPU and the CPU worker"
# a worker's fields up to its devices (an array of objects): '"id":"gpu1"' and what follows it
"$NQ" workers --json | grep -o '"id":"gpu1"[^[]*' | grep -q '"kernel":"nq-[^"]* gpu: ' \
    || fail "nq workers --json does not name the GPU: $("$NQ" workers --json)"
"$NQ" workers | grep '^gpu1 ' | grep -q 'gpu: ' \
    || fail "nq workers does not show the device: $("$NQ" workers)"
"$NQ" workers --json | grep -o '"id":"gpu1"[^[]*' | grep -Eq '"shards_done":[1-9]' \
    || fail "the GPU worker did no shard"
"$NQ" workers | grep -q FLAGGED && fail "a worker was flagged: $("$NQ" workers)"
ok "quorum 2 with a fast GPU worker and a CPU worker: exact, no conflict, no evidence;" \
   "nq workers names the device"

# the parity kernel beside the CPU: nodes compared too, and the job's nodes are the CPU's
kill "$gpu_pid"
NQ_GPU_ROWS=6 start_worker gpup $GPU --gpu-kernel parity --gpu-only --threads 2 --id gpup
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
# all three connected before the job, so the GPU worker takes its share of the shards (all on its
# miscounting device: --gpu-only)
NQ_FAULT_GPU_WRONG=0.5 NQ_GPU_ROWS=6 start_worker bad $GPU --gpu-kernel parity --gpu-only --threads 2 --id badgpu
bad_pid=$LAST_PID
start_worker cpu2 --threads 1 --id cpu2
cpu2_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=badgpu' "$T/broker.log" || fail "the GPU worker did not join"
wait_for 30 grep -q 'worker.join worker=cpu2' "$T/broker.log" || fail "cpu2 did not join"
id2=$("$NQ" submit count 14 --quorum 2) || fail "submit quorum 2"
wait_for 120 job_done "$id2" || fail "quorum job with a miscounting GPU did not finish"
[ "$(job_field "$id2" total)" = "$(oeis_total 14)" ] || fail "quorum total with a miscounting GPU"
[ "$(job_field "$id2" unique)" = "$(oeis_unique 14)" ] || fail "quorum unique with a miscounting GPU"
"$NQ" workers --json | grep -o '"id":"badgpu"[^[]*' | grep -q '"flagged":true' \
    || fail "the miscounting GPU worker is not flagged: $("$NQ" workers --json)"
ok "a GPU that miscounts (residues and all): caught by the quorum, flagged; the answer exact"

kill "$bad_pid" "$cpu2_pid" "$cpu1_pid"
# stop_count LOG KEY: a count from a GPU worker's worker.stop line
stop_count() { sed -n "s/.*event=worker.stop .*$2=\([0-9]*\).*/\1/p" "$1" | tail -1; }

# a GPU worker that counts on the CPU beside its device, slowed by a test switch so that it holds
# more than a second of work: exact, and both engines counted shards. Each launch lasts a second at
# least, so the two launches that fill the device are two seconds of work whatever the machine's
# speed (at 0.1 s a launch, a busy machine's nq run once left the CPU nothing: gpu=199 cpu=0)
NQ_FAULT_GPU_SLOW=1 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=1024 start_worker both $GPU --threads 4 --id both
both_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=both' "$T/broker.log" || fail "the CPU+GPU worker did not join"
id4=$("$NQ" submit count 13) || fail "submit count 13"
wait_for 120 job_done "$id4" || fail "count 13 on one CPU+GPU worker did not finish"
[ "$(job_field "$id4" total)" = "$(oeis_total 13)" ] || fail "CPU+GPU worker: total"
[ "$(job_field "$id4" unique)" = "$(oeis_unique 13)" ] || fail "CPU+GPU worker: unique"
kill -TERM "$both_pid"
wait "$both_pid" || fail "the CPU+GPU worker did not stop cleanly"
g=$(stop_count "$T/both.log" gpu_shards); c=$(stop_count "$T/both.log" cpu_shards)
[ "${g:-0}" -gt 0 ] && [ "${c:-0}" -gt 0 ] \
    || fail "one worker, GPU and CPU: want shards on both, got gpu=$g cpu=$c: $(grep stop "$T/both.log")"
ok "one GPU worker counting on the CPU beside its device: exact, $g shards on the GPU and $c on the CPU"

# nq run is the same worker: both engines; --gpu-only, the GPU alone
export NQ_FAULT_GPU_SLOW=1 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=1024
"$NQ" run count 13 $GPU --workers 4 --db both.db --json --log-level info >run.json 2>run.err \
    || fail "run count 13 --gpu: $(tail -3 run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 13)" ] || fail "run --gpu on both engines: total"
g=$(stop_count run.err gpu_shards); c=$(stop_count run.err cpu_shards)
[ "${g:-0}" -gt 0 ] && [ "${c:-0}" -gt 0 ] || fail "nq run --gpu: want both engines, got gpu=$g cpu=$c"
unset NQ_FAULT_GPU_SLOW                 # --gpu-only counts nothing on the CPU whatever the device's speed
"$NQ" run count 13 $GPU --gpu-only --workers 4 --db only.db --json --log-level info >run.json 2>run.err \
    || fail "run count 13 --gpu-only: $(tail -3 run.err)"
[ "$(json_get total <run.json)" = "$(oeis_total 13)" ] || fail "run --gpu-only: total"
[ "$(stop_count run.err cpu_shards)" = 0 ] && [ "$(stop_count run.err gpu_shards)" -gt 0 ] \
    || fail "nq run --gpu-only counted on the CPU: $(grep worker.stop run.err)"
unset NQ_GPU_ROWS NQ_GPU_MAX_TASKS
ok "nq run count 13 --gpu: $g shards on the GPU and $c on the CPU, exact; --gpu-only: the GPU alone"

# the GPU worker alone first, so that it holds shards when its device goes
NQ_FAULT_GPU_LOST=3 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=2000 \
    "$NQ" worker --connect "$WEP" $GPU --threads 2 --id lost >lost.log 2>lost.err &
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
cpu3_pid=$LAST_PID
wait_for 120 job_done "$id3" || fail "the job did not finish on a CPU worker"
[ "$(job_field "$id3" total)" = "$(oeis_total 13)" ] || fail "total after a lost GPU"
ok "a GPU lost mid-job: its shards come back as errors, the worker exits 3, the job is exact"

# lost while it counts on the CPU too (CPU shards slowed to ~0.2 s, so some run when the device
# goes): the GPU's shards come back as errors, the CPU's finish before it exits 3, the job is exact
kill "$cpu3_pid"
NQ_FAULT_GPU_SLOW=1 NQ_FAULT_GPU_LOST=5 NQ_FAULT_PACE=20000 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=1024 \
    "$NQ" worker --connect "$WEP" $GPU --threads 4 --id lost2 >lost2.log 2>lost2.err &
lost2=$!
PIDS+=("$lost2")
wait_for 30 grep -q 'worker.join worker=lost2' "$T/broker.log" || fail "lost2 did not join"
id5=$("$NQ" submit count 13) || fail "submit"
wait "$lost2"; rc=$?
[ "$rc" = 3 ] || fail "lost2 exits $rc, want 3: $(tail -3 lost2.err)"
c=$(stop_count lost2.err cpu_shards)
[ "${c:-0}" -gt 0 ] || fail "lost2 counted nothing on the CPU: $(grep -E 'worker.(stop|gpu_fail)' lost2.err)"
wait_for 30 grep -q 'result.error.*worker=lost2.*device lost' "$T/broker.log" \
    || fail "the broker did not hear of lost2's GPU shards as errors"
start_worker cpu4 --threads 1 --id cpu4
wait_for 120 job_done "$id5" || fail "the job did not finish after lost2"
[ "$(job_field "$id5" total)" = "$(oeis_total 13)" ] || fail "total after lost2"
ok "a GPU lost while the worker counts on the CPU too: GPU shards as errors, $c CPU shards sent, exit 3"
