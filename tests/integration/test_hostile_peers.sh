#!/usr/bin/env bash
# Hostile workers, scripted in Python (tests/tools/hostile.py: pyzmq + msgpack, no nq code),
# against a real broker. Each block is one attack and checks that the broker
# answered it: no forged vote counts, restarts cost the peer not the shards, an erring worker
# can neither make a job spin nor fail it alone, every quorum schedule ends, forgeries are
# dropped cheaply and quietly, ids that would forge log fields are refused, and a HELLO flood
# leaves no rows behind.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_wire_python
H="$PY $SRC/tests/tools/hostile.py"

total8=$(oeis_total 8)

# 1. Quorum bypass: A takes every shard, A and B (never a holder) both vote 0.
start_broker q.db
id=$("$NQ" submit count 8 --quorum 2) || fail "submit"
out=$($H quorum_bypass "$WEP") || fail "quorum_bypass script"
echo "$out"
sleep 0.5
[ "$(job_field "$id" state)" != done ] || fail "quorum bypass: the job ended on forged votes: $("$NQ" status "$id" --json)"
grep -q "B acked 0" <<<"$out" || fail "B's copies of A's results were acknowledged: $out"
start_worker h1; h1=$LAST_PID
start_worker h2; h2=$LAST_PID
wait_for 60 job_done "$id" || fail "honest workers did not finish the quorum job"
got=$(job_field "$id" total)
[ "$got" = "$total8" ] || fail "quorum job total $got, expected $total8"
grep -q "quorum.outvoted.*worker=hostile-a" "$T/broker.log" || fail "the liar was not outvoted"
ok "quorum bypass: B's copies refused as forged, A outvoted by two honest workers, total $got"
kill "$h1" "$h2" "$BROKER_PID"; wait "$h1" "$h2" "$BROKER_PID" 2>/dev/null

# 2. Re-HELLO: six new sessions on one connection, each grabbing every shard.
start_broker r.db
id=$("$NQ" submit count 8 --depth 2) || fail "submit"
$H rehello_burn "$WEP" || fail "rehello_burn script"
failed=$(job_field "$id" shards_failed)
[ "$failed" = 0 ] || fail "re-HELLO burnt $failed shards"
grep -q "worker.quarantined.*hostile-restarter" "$T/broker.log" || fail "the restarter was not quarantined"
start_worker h3; h3=$LAST_PID
wait_for 60 job_done "$id" || fail "job did not finish after the restarts"
[ "$(job_field "$id" total)" = "$total8" ] || fail "wrong total after the restarts"
ok "re-HELLO x6: no shard charged, restarter quarantined, job exact"

# 3. A worker that only returns errors. An error still counts against its shard (with
# --max-attempts 1 the shard fails at once) and the message shows...
kill "$h3"; wait "$h3" 2>/dev/null
id=$("$NQ" submit count 9 --max-attempts 1) || fail "submit"
$H error_results "$WEP" || fail "error_results script"
shard_failed() { [ "$(job_field "$1" shards_failed)" -ge 1 ]; }
wait_for 60 shard_failed "$id" || fail "erring worker: no shard failed: $("$NQ" status "$id" --json)"
"$NQ" status "$id" | grep -q "kernel exploded" || fail "nq status does not show the worker's message"
n=$(grep -c "event=result.error" "$T/broker.log")
[ "$n" -le 400 ] || fail "$n error results processed: the shards kept coming back"
if grep -q $'\x1b' "$T/broker.log" || grep -q "^ts=x" "$T/broker.log"; then fail "forged text in the log"; fi
ok "erring worker: a shard failed after $n error results, message in nq status, log clean"
"$NQ" cancel "$id" >/dev/null || fail "cancel"
# ... but one worker cannot fail a job: its first error pauses the job for it (1 s, doubling)
# and the errors of tasks already out cost nothing; only its identity's first error in an hour
# charges a shard, and its third quarantines it. What this stands for: a worker built before
# the job's shard encoding, which once failed a 261-shard job in half a second (1,305 errors).
id=$("$NQ" submit count 9) || fail "submit"
before=$(grep -c "event=result.error.*charged=1" "$T/broker.log")
$H error_results "$WEP" || fail "error_results script"
[ "$(job_field "$id" state)" = running ] || fail "one erring worker ended the job: $("$NQ" status "$id" --json)"
charged=$(( $(grep -c "event=result.error.*charged=1" "$T/broker.log") - before ))
[ "$charged" = 1 ] || fail "$charged errors charged in 6 s (want its first only)"
grep -q "event=worker.quarantined worker=hostile-erring.*reported errors 3 times" "$T/broker.log" \
    || fail "the erring worker was not quarantined after its third error"
start_worker h4; h4=$LAST_PID
wait_for 60 job_done "$id" || fail "a real worker did not finish the job: $("$NQ" status "$id" --json)"
[ "$(job_field "$id" total)" = "$(oeis_total 9)" ] || fail "wrong total after the erring worker"
[ "$(job_field "$id" shards_failed)" = 0 ] || fail "shards failed"
ok "erring worker alone for 6 s: $charged attempt charged, quarantined, then exact with a real worker"
kill "$h4" "$BROKER_PID"; wait "$h4" "$BROKER_PID" 2>/dev/null

# 3b. Tasks that never arrive: a worker whose TASKs are lost on the wire (here it drops them) says
# so in its heartbeats, which list nothing under the broker's token. Each lease comes back
# without costing its shard an attempt, and nothing waits for the worker to die.
start_broker d.db
id=$("$NQ" submit count 8 --depth 2) || fail "submit"
out=$($H drop_tasks "$WEP" 3) || fail "drop_tasks script"
dropped=$(sed -n 's/^drop_tasks: \([0-9]*\) dropped$/\1/p' <<<"$out")
lost=$(sed -n 's/.*event=lease.lost .*leases=\([0-9]*\).*/\1/p' "$T/broker.log" | awk '{ s += $1 } END { print s + 0 }')
[ "${dropped:-0}" -ge 1 ] || fail "the dropper took no task: $out"
[ "$lost" = "$dropped" ] || fail "$dropped tasks dropped, $lost leases taken back"
attempts=$(sql d.db "SELECT coalesce(max(attempts), 0) FROM shards WHERE job = $id")
[ "$attempts" = 0 ] || fail "a lost task cost its shard an attempt ($attempts)"
start_worker h4; h4=$LAST_PID
wait_for 60 job_done "$id" || fail "job did not finish after the dropped tasks"
[ "$(job_field "$id" total)" = "$total8" ] || fail "wrong total after the dropped tasks"
ok "tasks lost on the wire: $dropped dropped, $lost leases taken back uncharged, total exact"
kill "$h4" "$BROKER_PID"; wait "$h4" "$BROKER_PID" 2>/dev/null

# 4. Quorum with a late, a duplicate and a silent voter: the job must end.
start_broker v.db
id=$("$NQ" submit count 8 --depth 2 --quorum 2) || fail "submit"
$H quorum_voters "$WEP" || fail "quorum_voters script"
wait_for 60 job_done "$id" || fail "quorum job stuck: $("$NQ" status "$id" --json)"
ok "quorum with late, duplicate and silent voters: done"

# 9. Forged results: refused cheaply, a bounded number of log lines, DB private.
before=$(wc -l <"$T/broker.log")
$H forge_flood "$WEP" 20000 || fail "forge_flood script"
wait_for 30 grep -q "worker.quarantined.*hostile-forger" "$T/broker.log" || fail "the forger was not quarantined"
lines=$(( $(wc -l <"$T/broker.log") - before ))
[ "$lines" -le 40 ] || fail "20000 forged results wrote $lines log lines"
mode=$(stat -c %a v.db)
[ "$mode" = 600 ] || fail "the DB (holding the lease key) has mode $mode"
[ ! -e v.db-wal ] || [ "$(stat -c %a v.db-wal)" = 600 ] || fail "the WAL has mode $(stat -c %a v.db-wal)"
ok "20000 forged results: $lines log lines, forger quarantined, DB mode $mode"

# 11/13. Worker ids that would forge log fields or are not UTF-8 are refused at HELLO.
out=$($H bad_ids "$WEP") || fail "bad_ids script"
grep -q "welcomed 1 of 4" <<<"$out" || fail "bad worker ids: $out"
if grep -q "event=auth.refused" "$T/broker.log"; then fail "a forged event in the log"; fi
ok "worker ids with spaces, quotes or bad UTF-8 refused: $out"

# A HELLO flood leaves no worker rows behind.
rows0=$(sql v.db "SELECT count(*) FROM workers")
$H hello_flood "$WEP" 300 || fail "hello_flood script"
few_rows() { [ $(($(sql v.db "SELECT count(*) FROM workers") - rows0)) -le 5 ]; }
wait_for 30 few_rows ||                 # past the liveness window: the silent sessions are dropped
    fail "300 HELLOs added $(($(sql v.db "SELECT count(*) FROM workers") - rows0)) worker rows"
rows1=$(sql v.db "SELECT count(*) FROM workers")
ok "300 HELLO-and-vanish sessions: worker rows $rows0 -> $rows1"

# Export usage errors are usage errors (exit 2), raw or from the CLI.
out=$($H export_rows0 "$CEP" "$id") || fail "export_rows0 script"
grep -q "code 2" <<<"$out" || fail "export with rows=0: $out"
"$NQ" export "$id" --unique >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "export --unique of a count job exited $rc"
ok "export rows=0 and --unique on a count job: usage errors (2)"

# Hoarding: a worker takes every shard and heartbeats each at progress 0. Stalled means no
# progress since the lease was sent, so with --stall-timeout 2 its shards go to a real worker.
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
start_broker h.db --stall-timeout 2
id=$("$NQ" submit count 8) || fail "submit"
$H hoard "$WEP" 120 >hoard.out 2>&1 &
hoarder=$!
# all leased, to it alone: no never-leased position left between the two ends of the lease order
took_all() { [ "$(sql h.db "SELECT frontier >= coalesce(back, shards_total) FROM jobs WHERE id = $id")" = 1 ]; }
wait_for 60 took_all || fail "the hoarder did not take the job's 31 shards: $("$NQ" status "$id" --json)"
start_worker h5; h5=$LAST_PID
wait_for 100 job_done "$id" || fail "the hoarder kept the job past its stall timeout: $("$NQ" status "$id" --json)"
kill -0 "$hoarder" 2>/dev/null || fail "the hoarder ended before the job did: $(cat hoard.out)"
[ "$(job_field "$id" total)" = "$total8" ] || fail "wrong total after the hoarder"
grep -q "event=lease.release.*progress stalled" "$T/broker.log" || fail "no lease released as stalled"
ok "a hoarder heartbeating 31 leases at progress 0 loses them after --stall-timeout 2; total exact"
kill "$h5" "$hoarder"; wait "$h5" "$hoarder" 2>/dev/null
# ... and one that moves one lease's progress (threads=1, credit 2,048) is excused one idle
# lease, its thread's prefetch, not its whole credit.
id=$("$NQ" submit count 8) || fail "submit"
$H hoard "$WEP" 12 1 >hoard.out 2>&1 &
hoarder=$!
sleep 1.5
start_worker h6; h6=$LAST_PID
wait_for 9 bash -c "[ \$(\"$NQ\" status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -ge 29 ]" \
    || fail "one moving lease excused the hoard: $("$NQ" status "$id" --json)"
kill -0 "$hoarder" 2>/dev/null || fail "the hoarder ended before the job did: $(cat hoard.out)"
ok "a hoarder moving one of 31 leases keeps at most 2 past --stall-timeout 2: $(cat hoard.out)"
kill "$h6" "$hoarder" "$BROKER_PID"; wait "$h6" "$hoarder" "$BROKER_PID" 2>/dev/null
