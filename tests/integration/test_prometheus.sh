#!/usr/bin/env bash
# The broker's /metrics against a real Prometheus (Debian's `prometheus`). It
# scrapes a broker every second during a count, with deploy/prometheus/nq-alerts.yml
# loaded (a bad rule stops it from starting). Then, through Prometheus's own HTTP API:
# every panel query of deploy/grafana/dashboards/nq.json returns data (a renamed metric
# breaks this test, not the dashboard), and once the worker has stopped (the figures hold
# still), the nq_* series equal what `nq status --json` says. `promtool check metrics` on
# the exposition. Says "skipped" (77) where prometheus or promtool is not installed.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
for tool in prometheus promtool curl python3; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed (tests/install-deps.sh)"; exit 77; }
done

# --liveness 50 (10 s of silence, not lib.sh's 0.6 s): this test compares nq_results_total with the
# shards done, and a worker that a loaded machine left without a core for 0.6 s was dropped, its
# two leases given again, and its results counted twice (8 results, 6 shards done)
start_broker p.db --http "127.0.0.1:@MPORT@" --liveness 50
HPORT=$MPORT
PPORT=$(free_port)
cp "$SRC/deploy/prometheus/nq-alerts.yml" .
printf '%s\n' "global: {scrape_interval: 1s, evaluation_interval: 1s}" "rule_files: [nq-alerts.yml]" \
    "scrape_configs:" "  - job_name: nq" "    static_configs: [{targets: [\"127.0.0.1:$HPORT\"]}]" >prom.yml
promtool check config prom.yml >promtool-config.txt 2>&1 || fail "promtool check config: $(cat promtool-config.txt)"
start prometheus prometheus --config.file=prom.yml --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" --log.level=warn
API=http://127.0.0.1:$PPORT/api/v1

# query EXPR: the JSON of an instant query into q.json (exit 1 unless Prometheus says success).
query() { curl -sf --max-time 5 "$API/query" --data-urlencode "query=$1" >q.json && grep -q '"status":"success"' q.json; }
# value EXPR: the value of the first sample of an instant query ("" when there is none).
value() {
    query "$1" && python3 -c 'import json; r = json.load(open("q.json"))["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
up() { [ "$(value 'up{job="nq"}')" = 1 ]; }
wait_for 30 up || fail "Prometheus never scraped the broker: $(tail -5 "$T/prometheus.log")"
ok "Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') scrapes the broker"

start_worker w1 --threads 1
worker=$LAST_PID
n=$(long_count_n)
n=$((n < 19 ? n + 1 : 19))
id=$("$NQ" submit count "$n") || fail "submit"
wait_for 60 sh -c "[ \$(\"$NQ\" status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -ge 3 ]" \
    || fail "no shard done"
sleep 4                                      # a few scrapes of a running job, for rate() windows

curl -s "http://127.0.0.1:$HPORT/metrics" >metrics.txt
promtool check metrics <metrics.txt >lint.txt 2>&1 || fail "promtool check metrics: $(cat lint.txt)"
ok "promtool check metrics: clean"

python3 - "$SRC/deploy/grafana/dashboards/nq.json" >panels.txt <<'PY' || fail "reading the dashboard"
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        print(p["title"] + "\t" + t["expr"].replace("$__rate_interval", "10s").replace("$__interval", "2s"))
PY
panels=0
while IFS=$'\t' read -r title expr; do
    query "$expr" || fail "panel '$title': Prometheus refused '$expr': $(cat q.json)"
    grep -q '"result":\[{' q.json || fail "panel '$title': no data for '$expr'"
    panels=$((panels + 1))
done <panels.txt
[ "$panels" -ge 10 ] || fail "only $panels panel queries in the dashboard"
ok "every dashboard query ($panels) returns data"

curl -sf "$API/rules" | grep -q '"name":"NqJobStalled"' || fail "the alert rules are not loaded"
ok "alert rules loaded"

kill -TERM "$worker"; wait "$worker" 2>/dev/null   # the job stays running, its figures hold still
st() { job_field "$id" "$1"; }
settled() {
    [ "$(value nq_workers_alive)" = 0 ] &&
    [ "$(value "nq_job_shards_done{job_id=\"$id\"}")" = "$(st shards_done)" ] &&
    [ "$(value "nq_job_shards_leased{job_id=\"$id\"}")" = 0 ]
}
wait_for 20 settled || fail "Prometheus never agreed with nq status: $(value "nq_job_shards_done{job_id=\"$id\"}") vs $(st shards_done)"
done_=$(st shards_done)
[ "$(value "nq_job_shards{job_id=\"$id\"}")" = "$(st shards_total)" ] || fail "nq_job_shards"
[ "$(value "nq_job_shards_failed{job_id=\"$id\"}")" = "$(st shards_failed)" ] || fail "nq_job_shards_failed"
[ "$(value "nq_job_info{job_id=\"$id\",kind=\"count\",n=\"$n\",state=\"$(st state)\"}")" = 1 ] || fail "nq_job_info"
[ "$(value nq_jobs_active)" = 1 ] || fail "nq_jobs_active"
[ "$(value nq_results_total)" = "$done_" ] || fail "nq_results_total $(value nq_results_total) != $done_ done"
[ "$(value 'nq_shards{state="done"}')" = "$done_" ] || fail "nq_shards{state=done}"
[ "$(value nq_store_writable)" = 1 ] || fail "nq_store_writable"
free=$(value nq_store_disk_free_bytes)
[ -n "$free" ] && [ "${free%%.*}" -gt 0 ] 2>/dev/null || fail "nq_store_disk_free_bytes: '$free'"
ok "Prometheus's nq_* series equal nq status: job $id $done_/$(st shards_total) shards done, 1 active job"
