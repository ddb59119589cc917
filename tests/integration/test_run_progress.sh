#!/usr/bin/env bash
# nq run says how it goes on every kind of stderr: where it is not a terminal (a log, `| tee`) a
# plain line at once and then every few seconds, not a carriage-returned bar (nothing at all was
# written for 31 s). A resumed run's rate counts this run's shards only: the shards done before
# it are in "done", not in the rate (a resume once showed 52,741 shards/s).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
N=$(long_count_n)
line_re='^nq run: [0-9,]*/[0-9,]* shards done [(][0-9.]*%[)], [0-9.]*/s this run, ETA '

start run "$NQ" run count "$N" --workers 1
RUN=$LAST_PID
a_line() { grep -qE "$line_re" "$T/run.log"; }
wait_for 120 a_line || fail "no plain progress line on a non-terminal stderr: $(cat "$T/run.log")"
# stop it once some shards are stored (read from the DB, as a second terminal would)
some_done() { [ "$("$NQ" status 1 --db nq.db --json 2>/dev/null | json_get shards_done)" -gt 0 ]; }
wait_for 120 some_done || fail "no shard done: $(cat "$T/run.log")"
kill -INT "$RUN"; wait "$RUN" 2>/dev/null
grep -E "$line_re" "$T/run.log" | head -2
ok "a plain progress line on a non-terminal stderr"

"$NQ" run count "$N" --workers 1 >out.txt 2>err.txt || fail "the resumed run failed: $(cat err.txt)"
grep -qE "resuming job 1 \([1-9][0-9,]* of" err.txt || fail "no resume of a started job: $(head -3 err.txt)"
first=$(grep -E "$line_re" err.txt | head -1)
[ -n "$first" ] || fail "the resumed run wrote no progress line: $(cat err.txt)"
echo "$first" | grep -qE '^nq run: [1-9][0-9,]*/' || fail "the resumed run's first line shows none done: $first"
echo "$first" | grep -qF ' 0.00/s this run' || fail "the resumed run's first rate counts the shards done before it: $first"
grep -q "N=$N: $(grouped "$(oeis_total "$N")") solutions" out.txt || fail "resumed count: $(cat out.txt)"
ok "resumed: the first line shows the shards done before, at a rate of 0 for this run; the count is exact"
