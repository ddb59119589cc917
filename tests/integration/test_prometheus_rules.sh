#!/usr/bin/env bash
# Deploy/prometheus's alert rules under `promtool test rules` (each alert fires on
# the series that should fire it and stays quiet on healthy ones), every alert has a test,
# the scrape configs pass `promtool check config`, and the Grafana files parse.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "skipped: promtool is not installed (tests/install-deps.sh)"; exit 77; }
D=$SRC/deploy
cd "$D/prometheus" || fail "no deploy/prometheus"
promtool check rules nq-alerts.yml >"$T/check.txt" 2>&1 || fail "promtool check rules: $(cat "$T/check.txt")"
promtool test rules nq-alerts.test.yml >"$T/test.txt" 2>&1 || fail "promtool test rules: $(cat "$T/test.txt")"
alerts=$(sed -n 's/^ *- alert: *//p' nq-alerts.yml | sort -u)
[ "$(echo "$alerts" | wc -w)" -ge 7 ] || fail "expected at least 7 alerts, got: $alerts"
for a in $alerts; do
    grep -q "alertname: $a\$" nq-alerts.test.yml || fail "alert $a has no test in nq-alerts.test.yml"
done
ok "promtool test rules: $(echo "$alerts" | wc -w) alerts, each tested"

cp prometheus.yml nq-alerts.yml "$T/"
promtool check config "$T/prometheus.yml" >"$T/config.txt" 2>&1 || fail "promtool check config: $(cat "$T/config.txt")"
# The compose one reads its token from a container secret: check it with a token file here.
echo 0123456789abcdef0123 >"$T/http.token"
sed "s#/run/secrets/http.token#$T/http.token#" prometheus-compose.yml >"$T/prometheus-compose.yml"
promtool check config "$T/prometheus-compose.yml" >"$T/config.txt" 2>&1 \
    || fail "promtool check config (compose): $(cat "$T/config.txt")"
ok "promtool check config: prometheus.yml and prometheus-compose.yml"

python3 - "$D/grafana" <<'PY' || fail "the Grafana files"
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "dashboards", "nq.json")))
assert d["uid"] and d["panels"], "no panels"
for p in d["panels"]:
    assert p["targets"] and all(t["expr"] for t in p["targets"]), p["title"]
    assert p["datasource"]["uid"] == "nq-prometheus", p["title"]
ds = open(os.path.join(sys.argv[1], "provisioning", "datasources", "prometheus.yaml")).read()
assert "uid: nq-prometheus" in ds, "the datasource uid the panels name"
PY
ok "the Grafana dashboard parses; every panel has a query and the provisioned datasource"
