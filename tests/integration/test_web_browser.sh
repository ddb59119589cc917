#!/usr/bin/env bash
# The broker's web view in a real browser (headless Chromium). A broker with a
# running count job and a worker; / and /jobs/ID are loaded, their DOM checked (the job's
# row, its progress bar against the job's shards, the chart's SVG present and sized) and
# screenshots saved under the build folder. A job that does not exist gives the 404 page;
# a worker id full of <script> (in the DB, as an older nq could have stored it) and a host
# and kernel full of markup (sent over the wire by a scripted worker) show as text.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_web.sh"
cd "$T" || exit 1
command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }
need_chromium
need_wire_python
SHOTS=${NQ_BUILD_DIR:-$T}/web-screenshots
mkdir -p "$SHOTS"

# A DB that already holds a worker whose id is markup, and a finished job (job 1).
"$NQ" run count 6 --db web.db >/dev/null 2>&1 || fail "nq run count 6"
xss='<script>alert(1)</script>'
sqlite3 web.db "INSERT INTO workers (id, host, threads, first_seen, last_seen) VALUES
                ('$xss', 'old-host', 1, 1.0e9, 1.0e9)" || fail "insert a hostile worker row"

# --liveness 25 (5 s of silence, not 0.6 s): the hostile peer below never says HELLO again, and
# under ASan beside other tests a stall of the peer or the broker dropped it (and its row, which
# holds the host this test looks for) before /workers was read
start_broker web.db --http "127.0.0.1:@MPORT@" --liveness 25
HPORT=$MPORT
start_worker w1 --threads 1
cat >peer.py <<'PY'
import os, sys, time, msgpack, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.LINGER, 0)
s.connect(sys.argv[1])
pack = lambda *f: s.send(msgpack.packb([3, *f], use_bin_type=True))
pack(1, "html-peer", int.from_bytes(os.urandom(8), "little"), "<img src=x onerror=alert(2)>", 1,
     "<script>alert(3)</script>")
pack(3, 0)                                   # CREDIT 0: it takes no work, it only stays alive
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pack(5, [], 0)                           # HEARTBEAT: holds nothing, echoes no token
    time.sleep(0.1)
PY
start peer "$PY" peer.py "$WEP" 60
n=$(long_count_n)
n=$((n < 19 ? n + 1 : 19))                   # still running while the pages are looked at
id=$("$NQ" submit count "$n") || fail "submit count $n"
[ "$id" = 2 ] || fail "expected job 2, got $id"
total=$(job_field "$id" shards_total)
wait_for 60 sh -c "[ \$(\"$NQ\" status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -ge 3 ]" \
    || fail "no shard of job $id done"
sleep 2.5                                    # two more samples for the chart (one a second)

chrome --screenshot="$SHOTS/index.png" --window-size=1200,900 "http://127.0.0.1:$HPORT/" >/dev/null
chrome --screenshot="$SHOTS/job.png" --window-size=1200,900 "http://127.0.0.1:$HPORT/jobs/2" >/dev/null
for f in index job; do
    [ "$(head -c 8 "$SHOTS/$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] \
        || fail "$SHOTS/$f.png is not a PNG"
    [ "$(stat -c %s "$SHOTS/$f.png")" -gt 10000 ] || fail "$SHOTS/$f.png is too small to show a page"
done
ok "screenshots in $SHOTS"

dom / >index.html || fail "chromium could not load /"
grep -q '<tr id="job-2">' index.html || fail "/ has no row for job 2: $(head -c 600 index.html)"
grep -q '<a href="/jobs/2">2</a>' index.html || fail "/ does not link to /jobs/2"
grep -Eq "<progress value=\"[0-9]+\" max=\"$total\">" index.html || fail "/ has no progress bar over $total shards"
alive=$(sed -n 's/.*<span id="workers-alive">\([0-9]*\)<.*/\1/p' index.html)
[ "${alive:-0}" -ge 2 ] || fail "/ shows $alive workers alive, want the worker and the peer"
ok "/: job row, progress bar of $total shards, $alive workers alive"

dom /jobs/2 >job.html || fail "chromium could not load /jobs/2"
grep -q '<svg id="progress-chart"[^>]* width="720" height="240"' job.html || fail "/jobs/2 has no sized chart"
pts=$(grep -o '<polyline id="chart-done"[^>]*points="[^"]*"' job.html | sed 's/.*points="//' | wc -w)
[ "$pts" -ge 2 ] || fail "the chart has $pts points"
grep -q "<span id=\"done-total\">[0-9]*/$total</span>" job.html || fail "/jobs/2 has no done/total"
grep -q '<table id="share">' job.html || fail "/jobs/2 has no per-worker share"
ok "/jobs/2: chart of $pts points, 720x240; shards done/total; per-worker share"


dom /jobs/99999 >missing.html
grep -q 'id="not-found"' missing.html || fail "/jobs/99999 is not the 404 page"
[ "$(status /jobs/99999)" = 404 ] || fail "/jobs/99999 is not a 404"
ok "/jobs/99999: the 404 page"

dom /workers >workers.html || fail "chromium could not load /workers"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' workers.html || fail "the hostile worker id is not shown as text"
grep -q '&lt;img src=x onerror=alert(2)&gt;' workers.html || fail "the hostile host is not shown as text"
grep -q '&lt;script&gt;alert(3)&lt;/script&gt;' workers.html || fail "the hostile kernel is not shown as text"
if grep -qi '<script\|<img' workers.html index.html job.html; then
    fail "markup from the DB or the wire became an element"
fi
ok "/workers: a worker id, host and kernel full of markup show as text"
