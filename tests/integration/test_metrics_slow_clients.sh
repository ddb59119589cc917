#!/usr/bin/env bash
# Slow or hostile HTTP clients must not starve a /metrics scraper.
# 20 connections from the scraper's own address (127.0.0.1) and 40 from another loopback
# address (127.0.0.2) each send part of a request head and then trickle one byte a second
# (fast enough to defeat an inactivity timeout).
#  1. With the request deadline off (NQ_FAULT_HTTP_REQUEST_MS, test builds), so that nothing a
#     clock decides can free a slot: three scrapes get HTTP 200 while the tricklers still hold
#     their connections (the clients run until told to stop, and report afterwards), and the
#     per-address cap has refused the surplus from 127.0.0.2.
#  2. With the deadline on (3 s): every trickler is closed by the broker before the clients end by
#     themselves (12 s), and the broker logs http.slow_client.
# No speed is asserted: a loaded machine may take its time, and curl's limit only catches a hang.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }

cat >slow.py <<'EOF'
import json, os, select, socket, sys, time
port, out, life = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
stop = out + ".stop"                          # also ends when this file appears
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
while time.monotonic() - start < life and not os.path.exists(stop) and any(c[3] is None for c in socks):
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
# closed SRC JSON: how many of SRC's connections the broker closed
closed() { python3 -c 'import json, sys
print(sum(1 for c in json.load(open(sys.argv[2])) if c["src"] == sys.argv[1] and c["closed_after"] is not None))' "$1" "$2"; }

# ---- 1. the deadline off: only the cap and eviction can close a trickler ----
NQ_FAULT_HTTP_REQUEST_MS=3600000 start_broker m.db --http "127.0.0.1:@MPORT@"
start slow python3 slow.py "$MPORT" slow.json 600
wait_for 30 test -e slow.json.ready || fail "slow clients did not start"
for i in 1 2 3; do
    code=$(curl -s -m 120 -o "scrape$i.txt" -w '%{http_code}' "http://127.0.0.1:$MPORT/metrics"); rc=$?
    [ "$rc" = 0 ] && [ "$code" = 200 ] || fail "scrape $i under 60 slow clients: curl rc $rc, HTTP $code"
    grep -q '^nq_workers_alive ' "scrape$i.txt" || fail "scrape $i: not the exposition"
done
[ ! -e slow.json ] || fail "the slow clients ended before the scrapes were answered"
touch slow.json.stop
wait_for 60 test -e slow.json || fail "slow clients did not finish"
refused=$(closed 127.0.0.2 slow.json)
held=$((20 - $(closed 127.0.0.1 slow.json)))
[ "$refused" -ge 8 ] || fail "only $refused of 40 connections from 127.0.0.2 refused (per-address cap)"
ok "3 scrapes: HTTP 200 while $held of the 20 tricklers from the scraper's address were held;" \
   "$refused of 40 from 127.0.0.2 refused by the cap"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null

# ---- 2. the deadline on: it closes every trickler, though each sends a byte a second ----
BROKER_N=2 start_broker m2.db --http "127.0.0.1:@MPORT@"
start slow2 python3 slow.py "$MPORT" slow2.json 12
wait_for 30 test -e slow2.json.ready || fail "slow clients did not start"
wait_for 60 test -e slow2.json || fail "slow clients did not finish"
read -r open_left max_close max_sent < <(python3 - slow2.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
closed = [c for c in r if c["closed_after"] is not None]
print(len(r) - len(closed), "%.1f" % max((c["closed_after"] for c in closed), default=0),
      max((c["sent"] for c in closed), default=0))
EOF
)
[ "$open_left" = 0 ] || fail "$open_left slow clients were never closed in 12 s (trickling kept them alive)"
kill -0 "$BROKER_PID" || fail "broker died"
grep -q 'event=http.slow_client' "$T/broker2.log" || fail "no http.slow_client in the broker log"
ok "every trickler closed (the last after $max_close s) though it sent a byte a second ($max_sent sent);" \
   "the broker logged http.slow_client"
