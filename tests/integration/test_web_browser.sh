#!/usr/bin/env bash
# The broker's web view in a real browser (headless Chromium). A broker with a
# running count job and a worker; / and /jobs/ID are loaded, their DOM checked (the job's
# row, its progress bar against the job's shards, the figures an operator looks at first,
# the charts with a legend, axis titles and round UTC ticks, a finished job's chart ending
# at its end, counts with grouped digits; a job's chart in shares of its work, kept across a
# restart and after it ends) and screenshots taken at 1280x900 and at a
# phone's 390x844, saved under the build folder, in which both charts' lines must show. A job that does not exist gives the 404 page;
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
W1=$LAST_PID
cat >peer.py <<'PY'
import os, sys, time, msgpack, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.LINGER, 0)
s.connect(sys.argv[1])
pack = lambda *f: s.send(msgpack.packb([5, *f], use_bin_type=True))
pack(1, "html-peer", int.from_bytes(os.urandom(8), "little"), "<img src=x onerror=alert(2)>", 1,
     "<script>alert(3)</script>")
pack(3, 0)                                   # CREDIT 0: it takes no work, it only stays alive
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    # HEARTBEAT: holds nothing, echoes no token; one "GPU" named in markup
    pack(5, [], 0, [["<img src=x onerror=alert(4)>", 0, 3, 12, 2500]])
    time.sleep(0.1)
PY
start peer "$PY" peer.py "$WEP" 900         # for the whole test: the cleanup ends it
n=$(long_count_n)
n=$((n < 19 ? n + 1 : 19))                   # still running while the pages are looked at
id=$("$NQ" submit count "$n") || fail "submit count $n"
[ "$id" = 2 ] || fail "expected job 2, got $id"
total=$(job_field "$id" shards_total)
wait_for 60 sh -c "[ \$(\"$NQ\" status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -ge 3 ]" \
    || fail "no shard of job $id done"
sleep 2.5                                    # two more samples for the chart (one a second)

dom / >index.html || fail "chromium could not load /"
grep -q '<tr id="job-2">' index.html || fail "/ has no row for job 2: $(head -c 600 index.html)"
grep -q '<a href="/jobs/2">2</a>' index.html || fail "/ does not link to /jobs/2"
grep -Eq "<progress value=\"[0-9]+\" max=\"$total\">" index.html || fail "/ has no progress bar over $total shards"
alive=$(sed -n 's/.*<span id="workers-alive">\([0-9]*\)<.*/\1/p' index.html)
[ "${alive:-0}" -ge 2 ] || fail "/ shows $alive workers alive, want the worker and the peer"
running=$(grep -c '<td class="l">running</td>' index.html)
grep -q "<b id=\"card-running\">$running</b>" index.html || fail "/ does not show its $running running job(s) first"
grep -q '<svg id="throughput-chart"' index.html || fail "/ has no throughput chart"
grep -q 'results/s (left axis)' index.html && grep -q 'workers alive (right axis)' index.html ||
    fail "the throughput chart has no legend"
ok "/: the running jobs, workers, rates and store first; job row, progress bar of $total shards; throughput over time; $alive workers alive"

dom /jobs/2 >job.html || fail "chromium could not load /jobs/2"
grep -q '<svg id="progress-chart" class="chart"[^>]* viewBox="0 0 720 270"' job.html || fail "/jobs/2 has no sized chart"
pts=$(grep -o '<polyline id="chart-done"[^>]*points="[^"]*"' job.html | sed 's/.*points="//' | wc -w)
[ "$pts" -ge 2 ] || fail "the chart has $pts points"
grep -q 'work done (%) (left axis)' job.html && grep -q '% an hour (right axis)' job.html || fail "the chart has no legend"
[ "$(grep -o 'class="axis-title"' job.html | wc -l)" = 2 ] || fail "the chart's axes have no titles"
ticks=$(grep -o '<text class="tick"[^>]*>[0-9][0-9]:[0-9][0-9]:[0-9][0-9]</text>' job.html | wc -l)
[ "$ticks" -ge 2 ] || fail "the time axis has $ticks round UTC ticks"
if grep -q 'id="f-state">running<' job.html; then    # as the page says: it may have ended meanwhile
    grep -q 'time (UTC), up to now' job.html || fail "a running job's chart does not end at now"
else
    grep -q 'time (UTC), to the end at' job.html || fail "an ended job's chart does not end at its end"
fi
grep -q "<span id=\"done-total\">[0-9,]*/$(grouped "$total")</span>" job.html || fail "/jobs/2 has no done/total"
grep -q "id=\"f-nodes\">[0-9]\{1,3\}\(,[0-9]\{3\}\)\+</td>" job.html || fail "/jobs/2's nodes are not grouped by three"
grep -q '<table id="share">' job.html || fail "/jobs/2 has no per-worker share"
ok "/jobs/2: chart of $pts points with a legend, axis titles and $ticks UTC ticks, ending where the job is; shards done/total and nodes grouped; per-worker share"

dom /jobs/1 >done.html || fail "chromium could not load /jobs/1"
end=$(sqlite3 -readonly web.db "SELECT strftime('%H:%M:%S', finished_at, 'unixepoch') FROM jobs WHERE id = 1")
grep -q "time (UTC), to the end at $end" done.html || fail "job 1's chart does not end at its end ($end)"
[ "$(grep -o '<polyline id="chart-done"[^>]*points="[^"]*"' done.html | sed 's/.*points="//' | wc -w)" -ge 2 ] ||
    fail "job 1, done before this broker, has no line from its start to its end"
ok "/jobs/1, done before the broker started: its chart runs from its start to its end at $end"


dom /jobs/99999 >missing.html
grep -q 'id="not-found"' missing.html || fail "/jobs/99999 is not the 404 page"
[ "$(status /jobs/99999)" = 404 ] || fail "/jobs/99999 is not a 404"
ok "/jobs/99999: the 404 page"

dom /workers >workers.html || fail "chromium could not load /workers"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' workers.html || fail "the hostile worker id is not shown as text"
grep -q '&lt;img src=x onerror=alert(2)&gt;' workers.html || fail "the hostile host is not shown as text"
grep -q '&lt;script&gt;alert(3)&lt;/script&gt;' workers.html || fail "the hostile kernel is not shown as text"
grep -q '0: &lt;img src=x onerror=alert(4)&gt;, counting, 3 queued, 12 shards, 2.5 shards/s' workers.html \
    || fail "the hostile peer's device is not shown as text with its figures"
if grep -qi '<script\|<img' workers.html index.html job.html; then
    fail "markup from the DB or the wire became an element"
fi
grep -Eq '<td class="l">nq-[0-9.]+ (avx512|scalar)</td>' workers.html || fail "/workers does not name w1's CPU kernel"
ok "/workers: a worker id, host, kernel and device name full of markup show as text; w1's kernel named"
# One worker showed three nodes/s figures with no window named: each table says which it shows.
grep -q '<th[^>]*>nodes/s since connected</th>' index.html && grep -q '<th>nodes/s since connected</th>' workers.html &&
    grep -q '<th[^>]*>nodes per thread-second</th>' job.html || fail "a nodes/s column without its window named"
ok "every nodes/s column names its window: since connected (/, /workers), per thread-second on the job"

# Screenshots, wide and narrow: each shows its chart's two lines (the chart's blue and orange,
# counted by tests/tools/png_colors.py), not cut off or left out at a phone's width.
for size in 1280,900 390,844; do
    for page in index:/ job:/jobs/2 done:/jobs/1; do
        png="$SHOTS/${page%%:*}-${size%%,*}.png"
        chrome --screenshot="$png" --hide-scrollbars --window-size=$size "http://127.0.0.1:$HPORT${page#*:}" >/dev/null
        read -r w h blue orange < <("$PY" "$SRC/tests/tools/png_colors.py" "$png" 1f5fbf c15800) ||
            fail "$png is not a PNG chromium wrote"
        [ "$w,$h" = "$size" ] || fail "$png is $w x $h, not $size"
        [ "${page%%:*}" = done ] || { [ "$blue" -ge 100 ] && [ "$orange" -ge 50 ]; } ||
            fail "$png shows too little of its chart: $blue blue and $orange orange pixels"
    done
done
ok "screenshots at 1280x900 and 390x844 of /, /jobs/2 and /jobs/1, the charts' lines in those of / and /jobs/2, in $SHOTS"

# At a phone's width the page lays out within it: a copy of each page (its style and chart are
# inline) with a script that measures the layout, loaded from a file (no CSP there), says whether
# the page, the jobs table with its ETA and total columns, and each chart fit in 390 px. A chart
# with a min-width of 480 px had its right axis cut, and the jobs table scrolled its ETA and total
# out of sight.
FIT='<script>var w=innerWidth,bad=[];function chk(n,e){var r=e.getBoundingClientRect();
if(r.width<=0||r.right>w+1)bad.push(n+" "+Math.round(r.left)+".."+Math.round(r.right));}
if(document.documentElement.scrollWidth>w)bad.push("page "+document.documentElement.scrollWidth);
document.querySelectorAll("svg.chart").forEach(function(s){chk("chart",s);});
var t=document.getElementById("jobs");if(t){chk("jobs",t);t.querySelectorAll("th").forEach(function(h){
if(/^(ETA|total)$/.test(h.textContent))chk(h.textContent,h);});}
document.title="FIT:"+(bad.join(",")||"ok");</script>'
for page in index:/ job:/jobs/2; do
    curl -s "http://127.0.0.1:$HPORT${page#*:}" >"$T/${page%%:*}.fit.html" && echo "$FIT" >>"$T/${page%%:*}.fit.html" ||
        fail "cannot fetch ${page#*:}"
    for try in 1 2; do                  # a second try only when chromium wrote no page at all
        chrome --dump-dom --window-size=390,844 "file://$T/${page%%:*}.fit.html" >fit.html
        grep -q "<title>FIT:" fit.html && break
    done
    grep -q "<title>FIT:ok</title>" fit.html ||
        fail "${page#*:} does not fit 390 px: $(grep -o '<title>[^<]*</title>' fit.html)"
done
ok "at 390 px, / and /jobs/2 fit: the charts whole (their right axis in view), the jobs table with ETA and total"

# A job's chart draws the share of its estimated work done (the figures of its ETA), kept in the
# store: a restart keeps its earlier points, and a job that ended keeps them all. It once drew
# shards done from memory since the broker's start: flat at 0 against 13,252 shards on a big job,
# starting over at a restart, and a straight line from start to end once the job had ended.
shares() { sed -n 's/.*<desc id="chart-shares">\([^<]*\)<.*/\1/p' "$1"; }
fractions() { echo "$1" | tr ' ' '\n' | awk '$1 < p || $1 > 1 || $1 !~ /^[0-9.]+$/ { exit 1 } { p = $1 }'; }
curl -s "http://127.0.0.1:$HPORT/jobs/2" >before.html || fail "cannot fetch /jobs/2"
grep -q 'work done (%) (left axis)' before.html || fail "/jobs/2's chart is not in shares of its work"
before=$(shares before.html)
nb=$(echo "$before" | wc -w)
[ "$nb" -ge 2 ] && fractions "$before" || fail "/jobs/2's chart is not shares of its work that grow: '$before'"
first=$(sql web.db "SELECT min(t) FROM job_progress WHERE job = 2")
[ -n "$first" ] || fail "job 2's progress is not in the store"
kill "$W1" "$BROKER_PID"                    # no worker after the restart: the job waits
wait "$W1" "$BROKER_PID" 2>/dev/null
BROKER_N=2 start_broker web.db --http "127.0.0.1:@MPORT@" --liveness 25
HPORT=$MPORT
running=$(grep -c 'id="f-state">running<' before.html)
[ "$running" = 0 ] || {
    wait_for 30 sh -c "[ \$(sqlite3 -readonly web.db 'SELECT count(*) FROM job_progress WHERE job = 2') -gt $nb ]" ||
        fail "the restarted broker adds no point to job 2's chart"
}
# The web view's rate and ETA are those of `nq status`: this run's, from its estimated work. It
# once took shards done since the job's first start over the time since (the shards done before
# the restart counted as this run's), and showed an ETA beside the reason it waited.
if [ "$running" != 0 ]; then
    api=$(curl -s "http://127.0.0.1:$HPORT/api/jobs/2")
    cli=$("$NQ" status 2 --json)
    for k in rate eta waiting; do
        [ "$(echo "$api" | json_get $k)" = "$(echo "$cli" | json_get $k)" ] ||
            fail "/api/jobs/2 and nq status differ on $k: $api against $cli"
    done
    [ "$(echo "$api" | json_get rate)" = 0 ] && [ "$(echo "$api" | json_get eta)" = null ] ||
        fail "/api/jobs/2, waiting after a restart, has a rate or an ETA: $api"
    curl -s "http://127.0.0.1:$HPORT/jobs/2" | grep -q '<th class="l">ETA</th><td class="l">-</td>' ||
        fail "/jobs/2 shows an ETA while the job waits"
    ok "/api/jobs/2 and /jobs/2, waiting for a worker after a restart: the rate (0) and no ETA of nq status"
fi
"$NQ" cancel 2 >/dev/null 2>&1 || job_done 2 || fail "cannot cancel job 2"
for try in $(seq 50); do                     # the page cache may answer the running page a moment
    curl -s "http://127.0.0.1:$HPORT/jobs/2" >after.html || fail "cannot fetch /jobs/2 after the restart"
    grep -q 'time (UTC), to the end at' after.html && break
    sleep 0.2
done
after=$(shares after.html)
na=$(echo "$after" | wc -w)
[ "${after%% *}" = "${before%% *}" ] && [ "$na" -ge $((nb + running)) ] && fractions "$after" ||
    fail "after a restart /jobs/2's chart lost its earlier points: '$before' then '$after'"
[ "$(sql web.db "SELECT min(t) FROM job_progress WHERE job = 2")" = "$first" ] || fail "job 2's first point moved"
grep -q 'time (UTC), to the end at' after.html || fail "job 2, ended, has no chart to its end"
ok "/jobs/2: a chart of $nb shares of its work ($before), then $na across a restart and to its end"
