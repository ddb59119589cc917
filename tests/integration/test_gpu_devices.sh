#!/usr/bin/env bash
# One worker, several GPUs (pocl's POCL_DEVICES="pthread pthread": two CPU OpenCL devices, named
# by index as --gpu-device 0,1): --gpu refuses CPU devices it was not given by index (exit 3, one
# line naming them); nq bench and a broker-fed worker count exact with both devices taking work;
# a device lost mid-job (the test-only NQ_FAULT_GPU_LOST_DEVICE) has its shards counted again by
# the other or the CPU: exact, nothing counted twice, the worker names the device and goes on.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
export POCL_DEVICES="pthread pthread"
. "$(dirname "$0")/lib_gpu.sh"
[ "$(grep -c '' "$T/devices.txt")" -ge 2 ] || { echo "skipped: pocl shows one device here"; exit 77; }
TWO="--gpu-device 0,1"

if ! grep -Eq ', (GPU|accelerator)\)' "$T/devices.txt"; then
    for cmd in "bench count 10" "estimate count 10 --sample 4" "run count 10 --db refused.db"; do
        "$NQ" $cmd --gpu >out 2>err; rc=$?
        [ "$rc" = 3 ] && [ "$(wc -l <err)" = 1 ] && [ ! -s out ] \
            && grep -q "no GPU among the OpenCL devices here (0: .*, CPU); 1: " err \
            && grep -q -- "--gpu-device 0" err || fail "nq $cmd --gpu on CPU devices only: exit $rc $(cat err)"
    done
    [ ! -e refused.db ] || fail "a refused nq run left a DB behind"
    "$NQ" worker --gpu all --connect tcp://127.0.0.1:9 >out 2>err; rc=$?
    [ "$rc" = 3 ] && grep -q "nq worker: no GPU among the OpenCL devices" err \
        || fail "worker --gpu all on CPU devices only: exit $rc $(cat err)"
    "$NQ" bench count 10 --gpu-device 1 >out 2>err || fail "--gpu-device 1: $(cat err)"
    grep -q "device 1 (.*) is a CPU" err || fail "a CPU device named by index is not said: $(cat err)"
    ok "--gpu and --gpu all refuse CPU OpenCL devices in one line naming them (exit 3); an index takes one, said"
fi
"$NQ" bench count 10 --gpu=some >/dev/null 2>err; rc=$?
[ "$rc" = 2 ] || fail "--gpu=some: exit $rc"
"$NQ" bench count 10 --gpu-device 0,0 >/dev/null 2>err; rc=$?
[ "$rc" = 2 ] && grep -q "device 0 twice" err || fail "--gpu-device 0,0: exit $rc $(cat err)"

"$NQ" bench count 13 $TWO --json >two.json 2>err || fail "bench 13 on two devices: $(cat err)"
[ "$(json_num two.json total)" = "$(oeis_total 13)" ] || fail "bench on two devices: $(cat two.json)"
shards=$(grep -o '"device_shards":\[[0-9]*,[0-9]*\]' two.json | grep -o '[0-9,]*\]' | tr -d ']')
[ "${shards%,*}" -gt 0 ] && [ "${shards#*,}" -gt 0 ] || fail "a device took no shard: $(cat two.json)"
"$NQ" run count 12 $TWO --db run2.db --json --log-level info >run2.json 2>run2.err \
    || fail "nq run on two devices: $(tail -3 run2.err)"
[ "$(json_get total <run2.json)" = "$(oeis_total 12)" ] || fail "nq run on two devices: $(cat run2.json)"
grep -q 'event=worker.stop .*devices=0:[0-9]*/[0-9]*,1:[0-9]*/[0-9]*' run2.err \
    || fail "nq run's worker did not drive both devices: $(grep worker.stop run2.err)"
"$NQ" estimate count 12 --sample 8 $TWO --json >est2.json 2>err || fail "estimate on two devices: $(cat err)"
grep -Eq '"gpu_hours":[0-9.e+-]+,' est2.json && grep -q 'and the others together' est2.json \
    || fail "estimate on two devices: $(cat est2.json)"
ok "bench count 13 on two devices: exact, shards $shards; nq run and nq estimate on both"

# dev_shards LOG I: the shards device I counted, from the worker's stop line (devices=I:SHARDS/NODES)
dev_shards() { sed -n "s/.*event=worker.stop .*devices=\([^ ]*\).*/\1/p" "$1" | tr ',' '\n' \
    | sed -n "s/^$2:\([0-9]*\)\/.*/\1/p"; }

start_broker devs.db --http "127.0.0.1:@MPORT@"
NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=1024 start_worker two $TWO --gpu-only --threads 2 --id two
two_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=two' "$T/broker.log" || fail "the two-device worker did not join"
id=$("$NQ" submit count 13) || fail "submit"
wait_for 120 job_done "$id" || fail "count 13 on one worker with two devices did not finish"
[ "$(job_field "$id" total)" = "$(oeis_total 13)" ] || fail "two devices: total"
[ "$(job_field "$id" unique)" = "$(oeis_unique 13)" ] || fail "two devices: unique"
# seen per device (protocol 5's HEARTBEAT): nq workers, its --json and /metrics, after a heartbeat
# that followed the last result
sleep 1.5
"$NQ" workers >workers.txt 2>/dev/null || fail "nq workers"
for d in 0 1; do
    grep -Eq "^  device $d  pthread-.*  counting +[0-9]+ queued +[1-9][0-9,]* shards" workers.txt \
        || fail "nq workers does not show device $d with its shards: $(cat workers.txt)"
done
"$NQ" workers --json 2>/dev/null | grep -o '"devices":\[[^]]*\]' | grep -q '"device":1,"name":"pthread-' \
    || fail "nq workers --json has no devices: $("$NQ" workers --json 2>/dev/null)"
if command -v curl >/dev/null; then
    curl -s -m 5 "http://127.0.0.1:$MPORT/metrics" >metrics.txt || fail "no /metrics"
    for d in 0 1; do
        grep -Eq "^nq_worker_device_shards\{worker=\"two\",device=\"$d\",name=\"pthread-[^\"]*\"\} [1-9]" metrics.txt \
            || fail "/metrics has no series for device $d: $(grep device metrics.txt)"
        grep -q "^nq_worker_device_up{worker=\"two\",device=\"$d\",.*} 1$" metrics.txt \
            || fail "/metrics: device $d not up"
    done
fi
kill -TERM "$two_pid"
wait "$two_pid" || fail "the two-device worker did not stop cleanly"
d0=$(dev_shards "$T/two.log" 0); d1=$(dev_shards "$T/two.log" 1)
[ "${d0:-0}" -gt 0 ] && [ "${d1:-0}" -gt 0 ] || fail "want both devices to count: $(grep stop "$T/two.log")"
ok "one worker, two devices (--gpu-only): exact, device 0 $d0 shards and device 1 $d1;" \
   "nq workers, --json and /metrics show each device"

if "$NQ" --version | grep -q "fault switches"; then
    NQ_FAULT_GPU_LOST=3 NQ_FAULT_GPU_LOST_DEVICE=1 NQ_GPU_ROWS=6 NQ_GPU_MAX_TASKS=1024 \
        start_worker half $TWO --threads 2 --id half
    half_pid=$LAST_PID
    wait_for 30 grep -q 'worker.join worker=half' "$T/broker.log" || fail "the worker did not join"
    id2=$("$NQ" submit count 13) || fail "submit"
    wait_for 120 job_done "$id2" || fail "the job did not finish after device 1 was lost: $("$NQ" status "$id2")"
    [ "$(job_field "$id2" total)" = "$(oeis_total 13)" ] || fail "total after device 1 was lost"
    [ "$(job_field "$id2" unique)" = "$(oeis_unique 13)" ] || fail "unique after device 1 was lost"
    [ "$(job_field "$id2" shards_failed)" = 0 ] || fail "shards failed: $("$NQ" status "$id2")"
    grep -q 'event=worker.gpu_failed device=1 .*device lost.*devices_left=1' "$T/half.log" \
        || fail "no worker.gpu_failed line naming device 1: $(grep -i gpu "$T/half.log")"
    grep -q "result.error.*worker=half" "$T/broker.log" && fail "a lost device's shard reached the broker as an error"
    kill -0 "$half_pid" || fail "the worker did not go on with device 0"
    sleep 1.5
    "$NQ" workers 2>/dev/null | grep -Eq "^  device 1  .*  failed " \
        || fail "nq workers does not show device 1 failed: $("$NQ" workers 2>/dev/null)"
    kill -TERM "$half_pid"
    wait "$half_pid" || fail "the worker with one device left did not stop cleanly"
    r=$(sed -n 's/.*event=worker.stop .*recounts=\([0-9]*\).*/\1/p' "$T/half.log")
    [ "${r:-0}" -gt 0 ] || fail "no shard was counted again: $(grep stop "$T/half.log")"
    grep -q 'event=worker.stop .*devices=0:[0-9]*/[0-9]*,1:[0-9]*/[0-9]*/failed' "$T/half.log" \
        || fail "the stop line does not say device 1 failed: $(grep stop "$T/half.log")"
    ok "device 1 lost mid-job: named in the log, its $r shards counted again, exact, none failed, device 0 went on"
fi
