#!/usr/bin/env bash
# What a submit may create, from the outside: an N the solve method
# refuses (`solve 8 --algo divide`) is refused at submit with the method's own
# words, through the broker and through `nq run`, instead of becoming a job
# whose every seed errs; the broker's shard caps (--max-job-shards,
# --max-store-shards) refuse a job too large before writing a row, with a
# message naming the cap and its option. No worker runs: nothing here computes.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

divide_msg="divide (Abramson-Yung) covers every N >= 1 except 2, 3, 8, 9, 14, 15, 26, 27, 38, 39 (got N=8); use --algo construct"

# expect CODE PATTERN CMD...: exit code CODE and PATTERN (fixed string) in stdout+stderr
expect() {
    local code=$1 pat=$2; shift 2
    "$@" >"$T/out" 2>&1
    local rc=$?
    [ "$rc" = "$code" ] || fail "$* exited $rc, expected $code: $(head -c 400 "$T/out")"
    grep -qF -- "$pat" "$T/out" || fail "$*: no '$pat' in: $(head -c 400 "$T/out")"
}

jobs_in() { sql "$1" "SELECT COUNT(*) FROM jobs"; }

# nq run: refused before the job is created (it was created, and every seed erred)
expect 2 "$divide_msg" timeout 20 "$NQ" run solve 8 --algo divide --db run.db
[ ! -e run.db ] || [ "$(jobs_in run.db)" = 0 ] || fail "nq run stored a job the method refuses"
ok "nq run solve 8 --algo divide: exit 2, \"$(grep -o 'divide (Abramson.*' "$T/out" | head -1)\""

expect 2 "unknown or incomplete option" "$NQ" broker --db x.db --max-job-shards
expect 2 "--max-store-shards" "$NQ" broker --db x.db --max-store-shards 0

start_broker b.db --max-job-shards 1000 --max-store-shards 1500

expect 2 "$divide_msg" "$NQ" submit solve 8 --algo divide
expect 2 "$divide_msg" "$NQ" submit solve 8 --algo qs4,construct,divide --restarts 5 --all
ok "nq submit solve 8 --algo divide (alone or in a study): exit 2 with the method's message"

# a depth whose list the broker would search for minutes (n=32 at depth 30 never finds its first
# shard; n=18 at depth 10 takes 78 s to learn it is too long): refused with a reason, and the
# broker keeps answering. The step bound makes the refusal take about a second; what shows it
# is each client's --timeout, not a stopwatch: on a loaded machine (CI runs two tests at once,
# one of them a browser) a second can become ten, but never the minutes of an unbounded search.
# The list stops at the per-job cap too: n=18 at depth 10 passes 1000 shards long before its
# steps run out, and says so.
t0=$SECONDS
expect 2 "steps of search: use a smaller depth" "$NQ" submit count 32 --depth 30 --timeout 30
expect 2 "more than the cap of 1000 shards per job" "$NQ" submit count 18 --depth 10 --timeout 30
"$NQ" list --timeout 10 >/dev/null || fail "the broker stopped answering after a deep --depth"
ok "count 32 --depth 30, count 18 --depth 10: refused in $((SECONDS - t0)) s: $(cat "$T/out")"

expect 2 "the job would have 1002 shards, more than the cap of 1000 shards per job" \
    "$NQ" submit solve 100 --algo qs4,qs1 --restarts 501 --all
grep -qF -- "--max-job-shards N" "$T/out" || fail "the per-job refusal does not name --max-job-shards"
ok "per-job cap: $(cat "$T/out")"
id=$("$NQ" submit solve 100 --algo qs4,qs1 --restarts 500 --all) || fail "a job of exactly the cap was refused"
expect 2 "the job's 501 shards and the 1000 shards of the active jobs would pass the cap of 1500" \
    "$NQ" submit solve 100 --restarts 501 --all
grep -qF -- "--max-store-shards N" "$T/out" || fail "the per-store refusal does not name --max-store-shards"
ok "per-store cap: $(cat "$T/out")"
"$NQ" cancel "$id" >/dev/null || fail "cancel"
"$NQ" submit solve 100 --restarts 1000 --all >/dev/null || fail "no room after the active job was cancelled"
[ "$("$NQ" list --json | grep -o '"id":' | wc -l)" = 2 ] || fail "refused submits left jobs: $("$NQ" list)"
kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
[ "$(sql b.db "SELECT COUNT(*) FROM jobs")" = 2 ] || fail "refused submits wrote job rows"
[ "$(sql b.db "SELECT SUM(shards_total) FROM jobs")" = 2000 ] || fail "the two jobs do not hold 2000 shards"
[ "$(sql b.db "SELECT COUNT(*) FROM shards")" = 0 ] || fail "a submit wrote shard rows (they come with leases)"
ok "refused submits wrote nothing: 2 jobs of 2000 shards, no shard row before a lease"
