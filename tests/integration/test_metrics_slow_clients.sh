#!/usr/bin/env bash
# Slow or hostile HTTP clients must not starve a /metrics scraper.
# 20 connections from the scraper's own address (127.0.0.1) and 40 from another loopback
# address (127.0.0.2) each send part of a request head and then trickle one byte a second
# (fast enough to defeat an inactivity timeout). Meanwhile curl must get /metrics within
# 2 s, every time; the per-address cap refuses the surplus from 127.0.0.2 at once, and the
# request deadline closes every trickler within a few seconds. Bounded: the clients stop
# by themselves after 12 s.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }

start_broker m.db --http "127.0.0.1:@MPORT@"

cat >slow.py <<'EOF'
import json, os, select, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
socks = []                                    # [sock, source, opened_at, closed_after, bytes_sent]
for i in range(60):
    src = "127.0.0.1" if i < 20 else "127.0.0.2"
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    socks.append([s, src, time.monotonic(), None, 0])
open(out + ".ready", "w").close()
start = time.monotonic()
next_tick = start + 1.0
while time.monotonic() - start < 12 and any(c[3] is None for c in socks):
    live = [c for c in socks if c[3] is None]
    r, _, _ = select.select([c[0] for c in live], [], [], 0.05)
    for c in live:
        if c[0] in r:
            try:
                data = c[0].recv(4096)
            except OSError:
                data = b""
            if not data:                      # the server closed it
                c[3] = time.monotonic() - c[2]
    if time.monotonic() >= next_tick:         # one more header byte from each live client
        next_tick += 1.0
        for c in socks:
            if c[3] is None:
                try:
                    c[0].send(b"a")
                    c[4] += 1
                except OSError:
                    c[3] = time.monotonic() - c[2]
res = [{"src": c[1], "closed_after": c[3], "sent": c[4]} for c in socks]
json.dump(res, open(out + ".tmp", "w"))
os.rename(out + ".tmp", out)
EOF

start slow python3 slow.py "$MPORT" slow.json
wait_for 10 test -e slow.json.ready || fail "slow clients did not start"

# Scrape while the slow clients hold their connections (before any deadline can help).
for i in 1 2 3; do
    t0=$(date +%s.%N)
    code=$(curl -s -m 2 -o "scrape$i.txt" -w '%{http_code}' "http://127.0.0.1:$MPORT/metrics")
    rc=$?
    t1=$(date +%s.%N)
    [ "$rc" = 0 ] && [ "$code" = 200 ] ||
        fail "scrape $i under 60 slow clients: curl rc $rc, HTTP $code"
    grep -q '^nq_workers_alive ' "scrape$i.txt" || fail "scrape $i: not the exposition"
    secs[i]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    sleep 0.4
done
ok "3 scrapes under 60 slow clients (20 on the scraper's address): HTTP 200 in ${secs[1]} s, ${secs[2]} s, ${secs[3]} s"

wait_for 20 test -e slow.json || fail "slow clients did not finish"
read -r refused max_close max_sent open_left < <(python3 - slow.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
refused = sum(1 for c in r if c["closed_after"] is not None and c["closed_after"] < 0.5)
held = [c for c in r if c["closed_after"] is not None and c["closed_after"] >= 0.5]
left = sum(1 for c in r if c["closed_after"] is None)
print(refused, "%.1f" % max((c["closed_after"] for c in held), default=0),
      max((c["sent"] for c in held), default=0), left)
EOF
)
[ "$open_left" = 0 ] || fail "$open_left slow clients were never closed (trickling kept them alive)"
[ "$refused" -ge 8 ] || fail "only $refused of 40 connections from 127.0.0.2 refused (per-address cap)"
awk -v m="$max_close" 'BEGIN { exit !(m <= 6) }' || fail "slow clients held up to $max_close s"
kill -0 "$BROKER_PID" || fail "broker died"
grep -q 'event=http.slow_client' "$T/broker.log" || fail "no http.slow_client in the broker log"
ok "surplus from 127.0.0.2 refused at once ($refused); every trickler closed within $max_close s though it sent a byte a second ($max_sent sent); broker logged http.slow_client"
