#!/usr/bin/env bash
# The broker's /metrics endpoint scraped during a run; its counters checked
# against the store once the job is done, when its shards still count and its
# series stay, in their final state.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

start_broker m.db --http "127.0.0.1:@MPORT@"
start_worker w1 --threads 2
grep -q "event=http.listen url=http://127.0.0.1:$MPORT/" "$T/broker.log" || fail "the broker did not log its URL: $(head -5 "$T/broker.log")"

scrape() {
    exec 3<>"/dev/tcp/127.0.0.1/$MPORT" || return 1
    printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
    cat <&3
    exec 3<&-
}
metric() { grep -E "^$1(\{[^}]*\})? " | awk '{print $2}' | head -1; }

wait_for 30 bash -c "'$NQ' workers | grep -Eq 'nq-[0-9.]+ (avx512|scalar)'" || fail "nq workers does not name the worker's CPU kernel: $("$NQ" workers)"
id=$("$NQ" submit count 15) || fail "submit"
scrape >during.txt || fail "scrape during the run"
grep -q "200 OK" during.txt || fail "no 200 from /metrics"
grep -q "^# TYPE" during.txt || fail "not Prometheus text"
wait_for 120 job_done "$id" || fail "count did not finish"
sleep 1.5                                # the broker refreshes its figures once a second
scrape >after.txt || fail "scrape after"
done_db=$(sql m.db "SELECT count(*) FROM shards WHERE job=$id AND state='done'")
results=$(metric nq_results_total <after.txt)
[ -n "$results" ] || fail "no nq_results_total: $(head -40 after.txt)"
[ "${results%.*}" -ge "$done_db" ] || fail "results_total $results < done shards $done_db"
alive=$(metric nq_workers_alive <after.txt)
[ "${alive%.*}" = 1 ] || fail "workers_alive $alive"
grep -q 'nq_store_commit' after.txt || fail "no commit latency"
ok "the broker logs its URL; /metrics during and after a run: results_total $results >= $done_db done shards in the store, 1 worker alive"
total=$(sql m.db "SELECT shards_total FROM jobs WHERE id=$id")
[ "$(metric 'nq_shards\{state="done"\}' <after.txt)" = "$total" ] ||
    fail "nq_shards{state=done} is $(metric 'nq_shards\{state="done"\}' <after.txt) after $total done shards"
[ "$(metric "nq_job_shards_done\\{job_id=\"$id\"\\}" <after.txt)" = "$total" ] ||
    fail "the done job's nq_job_shards_done: $(grep nq_job_shards_done after.txt)"
grep -q "^nq_job_info{job_id=\"$id\",kind=\"count\",n=\"15\",state=\"done\"} 1" after.txt ||
    fail "the done job's nq_job_info: $(grep nq_job_info after.txt)"
[ "$(metric nq_jobs_active <after.txt)" = 0 ] || fail "nq_jobs_active after the job: $(metric nq_jobs_active <after.txt)"
ok "after the job: nq_shards{state=done} $total, its series kept in state done, 0 active jobs"
