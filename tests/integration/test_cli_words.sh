#!/usr/bin/env bash
# What nq says to a newcomer is true and readable: a job's kind given as a command points to
# `nq run`; `nq run --workers 2` reports its 2 threads; `nq estimate` speaks in seconds, minutes
# or days, not "2.03e-06 days"; a study's answer line agrees with its SOLVED column; a big
# solution's file is shown with its size; `nq retry`'s help says it resumes a cancelled job;
# log values with spaces stay one value and auth.start names each key once; a broker that
# cannot bind leaves no DB behind; every command of `nq --help` has an entry in the man page;
# docs/campaign.md's planning table holds what `nq estimate` prints.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
unset NQ_BROKER

"$NQ" count 8 >out 2>&1; rc=$?
[ $rc = 2 ] && grep -q "nq run count 8" out || fail "nq count 8: exit $rc: $(cat out)"
ok "nq count 8: exit 2, $(tail -1 out)"

"$NQ" run count 9 --workers 2 --db w.db >out 2>/dev/null || fail "nq run count 9 --workers 2"
grep -q "1 worker(s), 2 thread(s)" out || fail "--workers 2 reported as: $(grep worker out)"
ok "nq run --workers 2: $(grep -o '[0-9]* worker(s), [0-9]* thread(s)' out)"

"$NQ" estimate count 10 >out 2>&1 || fail "nq estimate count 10: $(cat out)"
grep -Eq "on one core [0-9.]+ (seconds|minutes|hours|days|years); on 1000 cores [0-9.e+-]+ (seconds|minutes)" out ||
    fail "estimate's time is not in human units: $(grep core-hours out)"
ok "nq estimate: $(grep -o '(on one core.*' out)"

"$NQ" run solve 8 --algo hillclimb --restarts 60 --all --db s.db >out 2>/dev/null || fail "the study"
solved=$(awk '$1 == "hillclimb" && $2 == 60 { print $3 }' out)
distinct=$(sql s.db "SELECT count(*) FROM solutions")
grep -q "^N=8: $distinct distinct solution(s) found by $solved solved seeds, 60/60 seeds done" out ||
    fail "the study's answer ($distinct distinct, SOLVED $solved): $(head -1 out)"
ok "a study: $(head -1 out)"

"$NQ" run solve 100001 --db s.db >out 2>err || fail "nq run solve 100001: $(cat err)"
size=$(stat -c %s s.db.solutions/*.nqsol)
grep -q "s.db.solutions/.*\.nqsol ($(grouped "$size") bytes)" out || fail "the solution file is not shown with its size ($size): $(cat out)"
! grep -q "level=warn" err || fail "a normal big solve warned: $(grep level=warn err)"
ok "a 100,001-queen solution: its file shown with its size ($size bytes), no warning"

"$NQ" help retry | grep -q "a cancelled one resumes" || fail "nq help retry does not say it resumes a cancelled job"
"$NQ" help cancel | grep -q "nq retry" || fail "nq help cancel does not point to nq retry"
ok "retry's help says it resumes a cancelled job; cancel's points to it"

"$NQ" keygen broker >/dev/null && "$NQ" keygen w1 >/dev/null && "$NQ" keygen c1 >/dev/null || fail "keygen"
start_broker "c d.db" --key broker.key --authorized-keys w1.pub --control-keys c1.pub --log-level info
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
grep -q 'event=broker.start .* db="c d.db"' broker.log || fail "a DB path with a space: $(grep broker.start broker.log)"
line=$(grep "event=auth.start" broker.log) || fail "no auth.start: $(cat broker.log)"
keys=$(grep -o ' [a-z_]*=' <<<"$line" | sort | uniq -d)
[ -z "$keys" ] || fail "auth.start repeats $keys: $line"
ok "logfmt: db=\"c d.db\" one value; auth.start keys once each: ${line#*event=}"

port=$(free_port)
python3 -c "import socket, time, sys
s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); open('bound', 'w').close(); time.sleep(60)" \
    "$port" &
PIDS+=($!)
wait_for 60 test -e bound || fail "could not hold a port"
"$NQ" broker --db busy.db --bind "tcp://127.0.0.1:$port" >out 2>&1; rc=$?
[ $rc = 3 ] && grep -q "already in use" out || fail "a busy port: exit $rc: $(cat out)"
ls busy.db* >/dev/null 2>&1 && fail "a broker that could not bind left $(ls busy.db*)"
"$NQ" run count 8 --db run.db --http "127.0.0.1:$port" >out 2>&1; rc=$?
[ $rc = 3 ] && grep -q "already in use" out || fail "nq run on a busy --http port: exit $rc: $(cat out)"
ls run.db* >/dev/null 2>&1 && fail "nq run that could not serve http left $(ls run.db*)"
ok "a busy port: exit 3, no DB left behind (nq broker, and nq run --http)"

man=$SRC/deploy/nq.1
cmds=$("$NQ" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ "$(wc -w <<<"$cmds")" -ge 15 ] || fail "nq --help lists only: $cmds"
entries=$(sed -n '/^\.SH COMMANDS/,/^\.SH OPTIONS/p' "$man" | awk 'prev == ".TP" { print } { prev = $0 }' |
          sed -E 's/^\.B[IR]? +"?//; s/^([a-z]+).*/\1/')
for c in $cmds; do
    grep -qx "$c" <<<"$entries" || fail "nq.1 has no entry for '$c' under COMMANDS (it has: $(echo $entries))"
done
ok "nq.1 has an entry for each of the $(wc -w <<<"$cmds") commands of nq --help"

# docs/campaign.md's planning table is the tool's own output: its N=22 row (the cheapest one not
# counted whole) holds what `nq estimate count 22` prints, and its timed sample is the help's.
camp=$SRC/docs/campaign.md
row=$(grep '^| 22 |' "$camp") || fail "campaign.md has no N=22 row"
read -r v lo hi < <(sed -E 's/^\| 22 \| [0-9,]+ \| ([0-9.]+)·10\^13 \(([0-9.]+)-([0-9.]+)\).*/\1 \2 \3/' <<<"$row")
json=$("$NQ" estimate count 22 --sample 2 --json) || fail "nq estimate count 22"
nodes=$(grep -o '"nodes":[0-9]*' <<<"$json" | cut -d: -f2)
awk -v n="$nodes" -v v="$v" -v lo="$lo" -v hi="$hi" 'BEGIN { n /= 1e13; exit !(lo <= n && n <= hi && v >= lo && v <= hi) }' ||
    fail "campaign.md says N=22 has ${v}e13 (${lo}-${hi}) nodes; nq estimate says $nodes"
probes=$("$NQ" help estimate | grep -o 'timed counts (default [0-9]*)' | grep -o '[0-9]*')
grep -q "the timed sample, $probes probes by" "$camp" || fail "campaign.md's timed sample is not the help's default ($probes)"
ok "campaign.md's N=22 row holds nq estimate's $nodes nodes; its timed sample is the help's $probes probes"
