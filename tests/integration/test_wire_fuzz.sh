#!/usr/bin/env bash
# Hostile frames on the wire: while two workers count, nq_frames sends tens of
# thousands of random and mutated frames to the worker endpoint and thousands
# to the control endpoint, without keys and (CURVE variant) from an allowed key.
# The broker must finish the count exactly, keep answering, and count what it
# dropped (message.bad). Then two targeted forgeries from a client that was
# never leased anything: results for every shard of a job, and SOLPARTs that
# each ask the broker for a whole permutation's buffer.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_faults.sh"
cd "$T" || exit 1
FRAMES=${NQ_FRAMES:-${NQ_BUILD_DIR:-.}/tests/nq_frames}
[ -x "$FRAMES" ] || fail "nq_frames not found (NQ_FRAMES=$FRAMES)"
N=$(long_count_n)   # a count that lasts seconds on this build, so the frames arrive while it runs
BAD=()     # wrong answers (findings), reported together at the end

bad_total() { grep -ao 'bad_total=[0-9]*' "$T/$1.log" | tail -1 | cut -d= -f2; }
# The broker's own count of bad frames, from its last line (hostile-frame log lines are
# rate-limited to 10 a second, so the per-frame lines no longer carry every count).
bad_count() { grep -ao 'event=broker.stop.*bad_messages=[0-9]*' "$T/$1.log" | tail -1 | sed 's/.*bad_messages=//'; }
# fuzz_run NAME EP COUNT SEED [nq_frames options]: nq_frames in the background; pid in $LAST.
fuzz_run() {
    local name=$1 ep=$2 count=$3 seed=$4; shift 4
    spawn "$name" timeout 120 "$FRAMES" --connect "$ep" --count "$count" --seed "$seed" "$@"
}
# Settled: nothing pending or leased any more (a job can end, or be stuck with a conflict).
job_settled() {
    local js
    js=$("$NQ" status "$1" --json --timeout 5) || return 1
    echo "$js" | grep -Eq '"state":"(done|failed|cancelled)"' && return 0
    echo "$js" | grep -q '"shards_pending":0,"shards_leased":0'
}
# fuzz_while_counting LABEL WPID CPID: the count runs while the frames arrive and nq status
# must answer throughout; sets JOB. A wrong answer is recorded in BAD (a finding), not fatal,
# so the later parts still run.
fuzz_while_counting() {
    local label=$1 wpid=$2 cpid=$3
    JOB=$("$NQ" submit count $N) || fail "$label: submit while fuzzing"
    while kill -0 "$wpid" 2>/dev/null || kill -0 "$cpid" 2>/dev/null; do
        "$NQ" status "$JOB" --timeout 10 >/dev/null || fail "$label: nq status did not answer during the fuzz"
        sleep 0.3
    done
    wait "$wpid" || fail "$label: nq_frames (worker endpoint) failed: $(cat "$T/${label}_w.log")"
    wait "$cpid" || fail "$label: nq_frames (control endpoint) failed: $(cat "$T/${label}_c.log")"
    kill -0 "$BROKER_PID" 2>/dev/null || fail "$label: the broker died"
    wait_for 240 job_settled "$JOB" || fail "$label: count $N did not settle: $("$NQ" status "$JOB" --json)"
    sleep 1
    if job_done "$JOB" && exact "$JOB" $N && shards_done_once "$DB" "$JOB"; then
        ok "$label: count $N during the fuzz is exact, every shard done once"
    else
        echo "BUG (details at the end): $label: count $N not exact or not finished" >&2
        BAD+=("$label: count $N during the fuzz ended state=$(job_field "$JOB" state) total=$(job_field "$JOB" total) (expected $(oeis_total $N)); conflicting shards, first result from: $(sql "$DB" "SELECT idx || ' by ' || worker || ' (' || conflict_with || ')' FROM shards WHERE job=$JOB AND state='conflict'" | tr '\n' ' ')")
    fi
}

# ---- 1. no keys: 20000 frames to the worker endpoint, 5000 to control ----
DB=fz.db
broker_up broker $DB
worker_up w1 --threads 1
worker_up w2 --threads 1
fuzz_run plain_w "$WEP" 20000 11; wp=$LAST
fuzz_run plain_c "$CEP" 5000 12 --target control; cp=$LAST
fuzz_while_counting plain "$wp" "$cp"
"$NQ" status --timeout 5 >/dev/null || fail "nq status after the fuzz"

# A second job after the storm: the broker is not left in a bad state.
id2=$("$NQ" submit count 12) || fail "submit after the fuzz"
wait_for 120 job_done "$id2" || fail "count 12 after the fuzz did not finish"
exact "$id2" 12 || fail "count 12 after the fuzz not exact"
ok "a new job after the storm runs and is exact"
stop_pid "$BROKER_PID"
grep -q 'event=broker.stop' broker.log || fail "the broker did not stop cleanly after the fuzz"
n=$(bad_count broker)
[ "${n:-0}" -ge 10000 ] || fail "broker counted only ${n:-0} bad messages for 25000 hostile frames"
lines=$(grep -c 'event=message.bad' broker.log)
[ "$lines" -le 2000 ] || fail "$lines message.bad lines for 25000 frames: the log is not rate-limited"
ok "25000 random/mutated frames (no keys): broker alive, status answered throughout, $n bad messages counted in $lines log lines ($(cat plain_w.log))"

# ---- 2. CURVE: the same from a key on the allow-list, and from no key ----
mkdir -p allowed
"$NQ" keygen b >/dev/null && "$NQ" keygen w1 >/dev/null && "$NQ" keygen fz >/dev/null || fail "keygen"
cp w1.pub fz.pub allowed/
DB=fzc.db
broker_up broker2 $DB --key b.key --authorized-keys allowed
worker_up cw1 --threads 1 --key w1.key --broker-key b.pub
worker_up cw2 --threads 1 --key w1.key --broker-key b.pub
wait_for 30 bash -c "[ \$(grep -c worker.join '$T/broker2.log') = 2 ]" || fail "the keyed workers did not join"
fuzz_run nokey_w "$WEP" 2000 21 --linger-ms 2000; nokey=$LAST
wait "$nokey"    # may fail to send at all (no handshake, no pipe): that is the point
sleep 1
[ -z "$(bad_total broker2)" ] && [ "$(grep -c worker.join broker2.log)" = 2 ] ||
    fail "frames without a key reached the CURVE broker: $(grep -a 'message.bad\|worker.join' broker2.log | tail -3)"
ok "2000 frames without a key on the CURVE endpoint: none reached the broker (no message.bad, no join)"
fuzz_run curve_w "$WEP" 20000 22 --key fz.key --broker-key b.pub; wp=$LAST
fuzz_run curve_c "$CEP" 5000 23 --target control; cp=$LAST
fuzz_while_counting curve "$wp" "$cp"
grep -aq "worker.join worker=fuzz-" broker2.log || fail "the allowed fuzzing key never got past CURVE+ZAP"
stop_pid "$BROKER_PID"
n=$(bad_count broker2)
[ "${n:-0}" -ge 10000 ] || fail "CURVE broker counted only ${n:-0} bad messages"
ok "25000 frames over CURVE from an allowed key: broker alive, $n bad messages counted"

# ---- 3. forgeries from a client that was never leased anything ----
DB=forge.db
broker_up broker3 $DB
fid=$("$NQ" submit count 10) || fail "submit for the forgery"
shards=$(job_field "$fid" shards_total)
"$FRAMES" --connect "$WEP" --forge results --job "$fid" --shards "$shards" --seed 5 >forge.out || fail "forge run"
sleep 1
worker_up fw --threads 1; fw=$LAST
wait_for 120 bash -c "$NQ status $fid --json --timeout 5 | grep -Eq '\"state\":\"(done|failed)\"|\"shards_conflict\":[1-9]'" \
    || fail "count 10 with forged results neither finished nor stopped"
if exact "$fid" 10; then
    ok "forged RESULTs for $shards unleased shards: refused, count 10 exact"
else
    BAD+=("forged RESULTs accepted: a client never leased any shard sent total=0 for all $shards shards of job $fid first; job state=$(job_field "$fid" state) total=$(job_field "$fid" total) conflicts=$(job_field "$fid" shards_conflict) (expected total $(oeis_total 10))")
fi

kill -9 "$fw"; wait "$fw" 2>/dev/null                  # nobody solves the next job meanwhile
sid=$("$NQ" submit solve 1000000) || fail "submit solve for the SOLPART forgery"
vm() { awk '/^VmSize/ { print $2 }' "/proc/$BROKER_PID/status"; }
before=$(vm)
"$FRAMES" --connect "$WEP" --forge solparts --job "$sid" --shards 200 --seed 6 >>forge.out || fail "solpart forge run"
sleep 2
after=$(vm)
grow=$(( (after - before) / 1024 ))
kill -0 "$BROKER_PID" 2>/dev/null || fail "the broker died of 200 forged SOLPARTs"
if [ "$grow" -lt 200 ]; then
    ok "200 forged 4-byte SOLPARTs for a solve of N=10^6: broker grew ${grow} MB"
else
    BAD+=("200 forged 4-byte SOLPARTs (no lease) for a solve of N=10^6 grew the broker by ${grow} MB of address space: one N*4-byte buffer each, never freed")
fi

if [ ${#BAD[@]} -gt 0 ]; then
    for b in "${BAD[@]}"; do echo "BUG: $b" >&2; done
    fail "${#BAD[@]} finding(s), see BUG lines"
fi
