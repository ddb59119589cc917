#!/usr/bin/env bash
# The one vote against a real broker: the ways around quorum, spot-checks and tail copies that a
# hostile review found, played by scripted peers (tests/tools/one_vote.py) beside real workers paced
# by NQ_FAULT_PACE, so the broker measures real speeds: a hoarder that claims 1 ms a shard and creeps
# its progress cannot stall the job; a liar measured fast that answers tail copies of an honest
# holder's leases with wrong totals decides nothing, and the holder is never flagged; a liar whose
# nodes are off by one cannot pair with a fast-GPU vote to outvote an honest CPU checker.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
if ! "$NQ" --version | grep -q "fault switches"; then
    echo "skipped: this nq was built without -DNQ_TEST_FAULTS=ON (tests/run.sh turns it on)"
    exit 77
fi
need_wire_python
V="env PYTHONPATH=$SRC/tests/tools $PY $SRC/tests/tools/one_vote.py"
N=10                                    # 75 shards, 5,467 nodes
"$NQ" run count $N --db ref.db >/dev/null 2>&1 || fail "reference run"
total=$(oeis_total $N)

honest() { NQ_FAULT_PACE=$2 start_worker "$1" --threads 1 --id "$1" "${@:3}"; }
stop() { kill "$@" 2>/dev/null; wait "$@" 2>/dev/null; }
flagged() { "$NQ" workers --json 2>/dev/null | grep -o "\"id\":\"$1\"[^}]*\"flagged\":true" >/dev/null; }
# never_against WHO LOG: no line of the broker's that outvotes, quarantines or holds evidence against WHO
never_against() {
    ! grep -E "event=(quorum\.outvoted|spotcheck\.outvoted|worker\.quarantined|result\.evidence).* worker=$1( |\$)" "$2"
}

# The hoarder: three true answers at 1 ms each, then every lease it can take, each moved one
# node a heartbeat. The honest workers start with it, so the broker has seen them deliver.
BROKER_N=_a start_broker a.db
id=$("$NQ" submit count $N) || fail "submit"
honest h1 500; h1=$LAST_PID
honest h2 500; h2=$LAST_PID
$V hoarder "$WEP" ref.db 120 >hoarder.out 2>&1 &
hoarder=$!
wait_for 90 job_done "$id" || fail "the hoarder stalled the job: $("$NQ" status "$id" --json)"
kill -0 "$hoarder" 2>/dev/null || fail "the hoarder left before the job ended: $(cat hoarder.out)"
[ "$(job_field "$id" total)" = "$total" ] || fail "hoarder: total $(job_field "$id" total), expected $total"
ok "a hoarder claiming 1 ms a shard and creeping its progress: the job ends exact ($total)," \
   "$(grep -c 'event=lease.copy' broker_a.log) tail copies"
stop "$hoarder" "$h1" "$h2" "$BROKER_PID"

# The copy liar: an honest holder, slow (2 nodes/s: its back-of-the-order shards take seconds),
# takes its leases first; the liar, answering everything else truly and at once, is measured fast,
# and idle at the tail it is sent copies of the holder's leases, which it answers at once with a
# wrong total. A third honest worker, started once a copy went to the liar, settles the disputes
# beside the holder; once they are settled the holder leaves (SIGTERM: what it holds goes back),
# and the third does the checks of the liar's other results that its loss calls for.
BROKER_N=_b start_broker b.db
id=$("$NQ" submit count $N) || fail "submit"
honest holder 2; holder=$LAST_PID
leased() { [ "$(sql b.db "SELECT count(*) FROM shards WHERE job = $id AND state = 'leased' AND worker = 'holder'")" -ge 2 ]; }
wait_for 30 leased || fail "the holder took no leases: $("$NQ" workers --json)"
held=$(sql b.db "SELECT group_concat(idx) FROM shards WHERE job = $id AND state = 'leased' AND worker = 'holder'")
$V copy_liar "$WEP" ref.db 120 "$held" >liar.out 2>&1 &
liar=$!
wait_for 30 grep -q "event=lease.copy .* copy=copy-liar" broker_b.log \
    || fail "no tail copy went to the liar (holder's shards $held): $(cat liar.out)"
wait_for 30 grep -q "^lie " liar.out || fail "the liar answered no copy: $(cat liar.out)"
honest third 2000; third=$LAST_PID
settled() { [ "$(sql b.db "SELECT count(*) FROM shards WHERE job = $id AND idx IN ($held) AND (state <> 'done' OR verify <> 0)")" = 0 ]; }
wait_for 60 settled || fail "the holder's shards were not settled: $(sql b.db "SELECT * FROM shards WHERE idx IN ($held)")"
stop "$holder"
wait_for 90 job_done "$id" || fail "copy liar: the job did not end: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$total" ] || fail "copy liar: total $(job_field "$id" total), expected $total"
never_against holder broker_b.log || fail "the honest holder was outvoted, quarantined or held against"
flagged holder && fail "the honest holder is flagged: $("$NQ" workers --json)"
grep -E "event=lease\.(cancel .* worker=holder |release .*its copy delivered)" broker_b.log \
    && fail "the honest holder's lease was cancelled or released because of a copy"
flagged copy-liar || fail "the copy liar is not flagged: $("$NQ" workers --json)"
ok "a liar measured fast, its lies on copies of the holder's leases ($held): $(grep -c '^lie ' liar.out)," \
   "the job ends exact ($total), the holder is not flagged, the liar is"
stop "$liar" "$third" "$BROKER_PID"

# An honest checker outvoted: every result checked (--verify-rate 1), three identities. The checker
# (CPU, honest) and the fast-GPU peer (honest) first, the GPU peer pausing after 5 answers, so that
# the checker checks those: two honest votes whose nodes are of different kinds, which must agree
# (were nodes compared across kinds, the liar's same nodes would outvote the checker there). Then
# the liar (true counts, CPU nodes + 1), which checks the checker's results: nodes disputes. Then
# the GPU peer again: its own nodes cannot settle those, its CPU count, asked for, does.
BROKER_N=_c start_broker c.db
id=$("$NQ" submit count $N --verify-rate 1) || fail "submit --verify-rate 1"
honest checker 2000; checker=$LAST_PID
$V fast_gpu "$WEP" ref.db 120 5 resume >fast_gpu.out 2>&1 &
gpu=$!
first_votes() {
    [ "$(sql c.db "SELECT count(*) FROM shards WHERE job = $id AND state = 'done'")" = 75 ] &&
    [ "$(sql c.db "SELECT count(*) FROM shards WHERE job = $id AND worker = 'fast-gpu' AND verify = 1")" = 0 ]
}
wait_for 60 first_votes || fail "the checker did not vote on every shard: $(cat fast_gpu.out)"
grep -q "^paused after" fast_gpu.out || fail "the GPU peer did not pause: $(cat fast_gpu.out)"
$V nodes_liar "$WEP" ref.db 120 >nodes_liar.out 2>&1 &
nliar=$!
wait_for 60 grep -q "event=spotcheck.disagree .* worker=nodes-liar nodes=1" broker_c.log \
    || fail "no nodes dispute between the liar and the checker: $("$NQ" status "$id" --json)"
touch resume
wait_for 90 job_done "$id" || fail "outvoted checker: the job did not end: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$total" ] || fail "outvoted checker: total $(job_field "$id" total), expected $total"
grep -q "^cpu " fast_gpu.out || fail "the GPU peer was never asked for a CPU count: $(cat fast_gpu.out)"
never_against checker broker_c.log || fail "the honest CPU checker was outvoted or quarantined"
flagged checker && fail "the honest CPU checker is flagged: $("$NQ" workers --json)"
flagged fast-gpu && fail "the honest GPU peer is flagged: $("$NQ" workers --json)"
flagged nodes-liar || fail "the nodes liar is not flagged: $("$NQ" workers --json)"
ok "a nodes liar beside an honest CPU checker and a fast-GPU peer (--verify-rate 1): the job ends" \
   "exact ($total), $(grep -c '^cpu ' fast_gpu.out) disputes settled by a CPU count, the liar flagged"
stop "$nliar" "$checker" "$gpu" "$BROKER_PID"
