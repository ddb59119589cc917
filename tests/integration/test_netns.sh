#!/usr/bin/env bash
# A real network between machines, made of namespaces: the broker in one,
# a worker in each of two others, joined by veth pairs to a bridge in a
# fourth (addresses in 10.213.77.0/24, used only inside these namespaces).
#   1. cut w1's link for longer than the liveness window: its shards are
#      re-leased (worker.lost); heal it: its late results are compared, not
#      counted twice; the count is exact.
#   2. kill -9 random workers repeatedly (and restart them), SIGSTOP one then
#      SIGCONT it: the count is exact.
# Needs root and `ip netns`; otherwise skipped. Everything is deleted in the trap.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_faults.sh"
cd "$T" || exit 1
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
    echo "skipped: needs root and ip netns"
    exit 77
fi
S=$(( $$ % 10000 ))                       # unique names: several runs may share the machine
NS_BR=nqt-br-$S NS_B=nqt-b-$S NS_W1=nqt-w1-$S NS_W2=nqt-w2-$S
NET=10.213.77
N=$(long_count_n)   # a count that lasts seconds on this build, so the fault lands mid-run

net_down() {
    local ns
    for ns in $NS_B $NS_W1 $NS_W2 $NS_BR; do ip netns del "$ns" 2>/dev/null; done   # takes its veths along
}
CLEANUP_HOOKS+=("net_down")

# link NS HOSTNUM SHORT: a veth from namespace NS (address $NET.HOSTNUM) to the bridge.
link() {
    local ns=$1 num=$2 short=$3
    ip netns add "$ns" || return 1
    ip link add "nq${S}${short}h" type veth peer name "nq${S}${short}p" || return 1
    ip link set "nq${S}${short}h" netns "$NS_BR" && ip -n "$NS_BR" link set "nq${S}${short}h" master br0 up &&
    ip link set "nq${S}${short}p" netns "$ns" && ip -n "$ns" link set "nq${S}${short}p" name eth0 &&
    ip -n "$ns" addr add "$NET.$num/24" dev eth0 && ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up
}
ip netns add "$NS_BR" && ip -n "$NS_BR" link add br0 type bridge && ip -n "$NS_BR" link set br0 up ||
    { echo "skipped: cannot create namespaces or a bridge here"; exit 77; }
link "$NS_B" 1 b && link "$NS_W1" 11 w1 && link "$NS_W2" 12 w2 || fail "could not build the namespace network"

# Client commands run inside the broker's namespace (its control endpoint is its loopback).
REAL_NQ=$NQ
printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$NS_B" "$REAL_NQ" >nqb && chmod +x nqb
NQ=$T/nqb
WEP=tcp://$NET.1:7555
spawn broker ip netns exec "$NS_B" "$REAL_NQ" broker --db "$T/n.db" --bind "$WEP" --control tcp://127.0.0.1:7556 \
    --insecure --heartbeat-ms 200 --liveness 3
BROKER_PID=$LAST
export NQ_BROKER=tcp://127.0.0.1:7556
wait_for 30 "$NQ" list --timeout 1 || fail "broker did not come up in $NS_B"

# wk NAME NS: a worker in namespace NS; pid in $LAST.
wk() { spawn "$1" ip netns exec "$2" "$REAL_NQ" worker --connect "$WEP" --threads 1 --id "$1"; }
wk w1 "$NS_W1"; W1=$LAST
wk w2 "$NS_W2"; W2=$LAST
wait_for 30 bash -c "[ \$(grep -c worker.join '$T/broker.log') -ge 2 ]" || fail "the workers did not reach the broker across the bridge"
progress() { local d; d=$(job_field "$1" shards_done); [ "${d:-0}" -ge "$2" ]; }

# ---- 1. a partition longer than the liveness window, then healed ----
id=$("$NQ" submit count $N) || fail "submit"
total=$(job_field "$id" shards_total)
wait_for 120 progress "$id" 10 || fail "no progress before the cut"
ip -n "$NS_BR" link set "nq${S}w1h" down
wait_for 30 grep -q 'worker.lost worker=w1' broker.log || fail "w1 cut off but not declared lost"
sleep 2
ip -n "$NS_BR" link set "nq${S}w1h" up
ok "w1's link cut: broker logged $(grep -m1 -o 'worker.lost worker=w1.*' broker.log)"
rejoined() { awk '/worker.lost worker=w1 /{l=1} l && /worker.join worker=w1 /{f=1} END{exit !f}' "$T/broker.log"; }
wait_for 120 rejoined ||
    fail "w1 did not come back after the link healed"
wait_for 240 job_done "$id" || fail "count $N did not finish after the partition: $("$NQ" status "$id" --json)"
exact "$id" $N || fail "count $N not exact after the partition: $("$NQ" status "$id" --json)"
shards_done_once n.db "$id" || fail "not every shard done exactly once"
conf=$(sql n.db "SELECT coalesce(sum(confirmations), 0) FROM shards WHERE job=$id")
ok "partition healed: w1 rejoined, count $N exact, $total shards done once ($conf late duplicate(s) compared and confirmed)"

# ---- 2. kill -9 random workers (restarting them), SIGSTOP and SIGCONT one ----
id2=$("$NQ" submit count $N) || fail "submit 2"
wait_for 120 progress "$id2" 5 || fail "no progress on job $id2"
for round in 1 2 3 4; do
    if [ $((RANDOM % 2)) = 0 ]; then { kill -9 "$W1"; wait "$W1"; } 2>/dev/null; wk "w1r$round" "$NS_W1"; W1=$LAST
    else { kill -9 "$W2"; wait "$W2"; } 2>/dev/null; wk "w2r$round" "$NS_W2"; W2=$LAST; fi
    sleep 1
done
kill -STOP "$W2"
sleep 2
kill -CONT "$W2"
wait_for 240 job_done "$id2" || fail "count $N did not finish under kill -9 / SIGSTOP: $("$NQ" status "$id2" --json)"
exact "$id2" $N || fail "count $N not exact under kill -9 / SIGSTOP"
shards_done_once n.db "$id2" || fail "job $id2: not every shard done exactly once"
ok "4 kill -9 + restarts and a SIGSTOP/SIGCONT across namespaces: count $N exact ($(grep -c worker.lost broker.log) worker.lost events)"
