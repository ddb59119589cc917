#!/usr/bin/env bash
# Results say whose nodes they carry (a GPU worker on the fast kernel counts its own), and only
# like is compared with like: a --verify-rate 1 job checked across a fast GPU worker and a CPU
# worker ends exact with every check agreeing, no evidence and nobody flagged; a job counted on
# the fast GPU alone keeps its nodes apart from the CPU kernels' (nq status, nq check), exports a
# manifest whose lines say kind 1, and nq audit passes it, recounting totals but not
# those nodes, and fails it when a total is forged. Through OpenCL (pocl in CI).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_gpu.sh"
cd "$T" || exit 1
ED="python3 $SRC/tests/tools/manifest_edit.py"

start_broker v.db
NQ_GPU_ROWS=6 start_worker gpu $GPU --threads 2 --id gpu1
gpu_pid=$LAST_PID
start_worker cpu --threads 1 --id cpu1
cpu_pid=$LAST_PID
wait_for 30 grep -q 'worker.join worker=gpu1' "$T/broker.log" || fail "the GPU worker did not join"
wait_for 30 grep -q 'worker.join worker=cpu1' "$T/broker.log" || fail "the CPU worker did not join"

# every result checked by the other identity: a fast GPU result against a CPU one and back
id=$("$NQ" submit count 12 --verify-rate 1) || fail "submit --verify-rate 1"
wait_for 120 job_done "$id" || fail "verify-rate job did not finish: $("$NQ" status "$id")"
st=$("$NQ" status "$id" --json)
[ "$(echo "$st" | json_get total)" = "$(oeis_total 12)" ] || fail "verify-rate total: $st"
[ "$(echo "$st" | json_get unique)" = "$(oeis_unique 12)" ] || fail "verify-rate unique: $st"
[ "$(echo "$st" | json_get checks_disagreed)" = 0 ] \
    || fail "checks disagreed between the fast GPU and the CPU: $st"
[ "$(echo "$st" | json_get checks)" -gt 0 ] || fail "no check ran: $st"
[ "$(echo "$st" | json_get evidence)" = 0 ] || fail "evidence between the fast GPU and the CPU: $st"
[ "$(echo "$st" | json_get shards_conflict)" = 0 ] || fail "conflicts: $st"
echo "$st" | grep -q '"flagged":\[\]' || fail "someone flagged: $st"
"$NQ" workers | grep -q FLAGGED && fail "a worker was flagged: $("$NQ" workers)"
fast=$(sql v.db "SELECT (SELECT count(*) FROM checks WHERE job = $id AND nodes_kind = 1)
                      + (SELECT count(*) FROM shards WHERE job = $id AND nodes_kind = 1)")
[ "$fast" -gt 0 ] || fail "no result of the fast GPU kernel was compared"
"$NQ" check "$id" --db v.db >check.out || fail "nq check: $(cat check.out)"
ok "--verify-rate 1 across a fast GPU worker and a CPU worker: exact," \
   "$(echo "$st" | json_get checks) checks all agree, no evidence"

# the fast GPU alone: its nodes apart from the CPU kernels', in the job and in the manifest
kill "$cpu_pid"
id2=$("$NQ" submit count 12) || fail "submit"
wait_for 120 job_done "$id2" || fail "GPU job did not finish: $("$NQ" status "$id2")"
st=$("$NQ" status "$id2" --json)
shards=$(echo "$st" | json_get shards_total)
[ "$(echo "$st" | json_get total)" = "$(oeis_total 12)" ] || fail "GPU job total: $st"
[ "$(echo "$st" | json_get fast_shards)" = "$shards" ] \
    || fail "not every shard says the fast GPU counted it: $st"
[ "$(echo "$st" | json_get nodes)" = 0 ] || fail "fast GPU nodes summed as the CPU kernels': $st"
[ "$(echo "$st" | json_get fast_nodes)" -gt 0 ] || fail "no fast GPU nodes: $st"
"$NQ" status "$id2" | grep -q "nodes 0 + [0-9,]* of the fast GPU kernel ($shards shards)" \
    || fail "nq status does not show the fast GPU's nodes apart: $("$NQ" status "$id2")"
"$NQ" check "$id2" --db v.db >check.out || fail "nq check: $(cat check.out)"
ok "a job on the fast GPU: nodes 0 of the CPU kernels', $(echo "$st" | json_get fast_nodes) of its own" \
   "over $shards shards; nq check agrees"

"$NQ" export "$id2" --manifest m.txt --db v.db >/dev/null || fail "export --manifest"
head -1 m.txt | grep -q '^nq-manifest 4 count n=12 .* nodes=0$' || fail "manifest header: $(head -1 m.txt)"
lines=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' m.txt | wc -l)
[ "$lines" = "$shards" ] || fail "manifest has $lines shard lines, want $shards"
awk 'NR > 1 && $1 ~ /^[0-9]+$/ && (NF != 12 || $11 != 1) { bad = 1 } END { exit bad }' m.txt \
    || fail "a shard line does not say kind 1: $(sed -n 2p m.txt)"
"$NQ" audit m.txt --shards 0-$((shards - 1)) >audit.out \
    || fail "audit of the fast GPU's manifest: $(cat audit.out)"
grep -q "^audit: $shards of $shards line(s) carry the fast GPU kernel's own nodes" audit.out \
    || fail "audit does not say the nodes are the fast kernel's: $(tail -2 audit.out)"
grep -q "^audit: OK" audit.out || fail "audit: $(tail -1 audit.out)"
ok "manifest version 4, every line of kind 1; nq audit recounts all $shards shards and passes"

# a shard whose solutions are all of weight 8 (total = 8 x unique > 0): its forged count keeps
# every bound (one more solution), so only the recount can catch it
s=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $3 > 0 && $3 == 8 * $4 { print $1; exit }' m.txt)
[ -n "$s" ] || fail "no shard of weight-8 solutions in the manifest"
t=$(awk -v s="$s" 'NR > 1 && $1 == s { print $3 + 8, $4 + 1 }' m.txt)
$ED edit m.txt forged.txt "$s" total "${t% *}" unique "${t#* }" --residues --header --reroot
"$NQ" audit forged.txt --shards "$s-$s" >audit.out && fail "audit passed a forged total: $(cat audit.out)"
grep -q "shard $s: DISAGREES" audit.out || grep -q "shard $s: no count of it gives this" audit.out \
    || fail "audit does not name the forged shard: $(cat audit.out)"
$ED edit m.txt nodes.txt "$s" nodes 1 --header --reroot      # its nodes are its own: not compared
"$NQ" audit nodes.txt --shards "$s-$s" >audit.out \
    || fail "audit compared a fast line's nodes: $(cat audit.out)"
ok "nq audit fails a forged total on a fast GPU line (shard $s) and leaves its nodes alone"
