#!/usr/bin/env bash
# A job stored with an older shard encoding is served with that encoding's search: its shards
# come back with encoding 3's node counts, which quorums and spot-checks
# compare (encoding 4 adds the kernels' column test, which searches fewer nodes; encoding 5 widens
# it from N=24, and below that searches as encoding 4 does). A job submitted now gets the
# current encoding, and both are exact.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

BROKER_N=0 start_broker old.db
old=$("$NQ" submit count 12) || fail "submit the job to age"
new=$("$NQ" submit count 12) || fail "submit the current job"
kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
# what a DB written by a build of encoding 3 holds: the job's encoding, nothing leased yet
sqlite3 old.db "UPDATE jobs SET encoding = 3 WHERE id = $old" || fail "age the job"
BROKER_N=1 start_broker old.db
start_worker w --threads 2
wait_for 120 job_done "$old" || fail "the encoding 3 job did not finish"
wait_for 120 job_done "$new" || fail "the current job did not finish"
for id in "$old" "$new"; do
    [ "$(job_field "$id" total)" = "$(oeis_total 12)" ] || fail "job $id: total"
    [ "$(job_field "$id" unique)" = "$(oeis_unique 12)" ] || fail "job $id: unique"
done
[ "$(sql old.db "SELECT encoding FROM jobs WHERE id = $old")" = 3 ] || fail "the aged job lost its encoding"
[ "$(sql old.db "SELECT encoding FROM jobs WHERE id = $new")" = 5 ] || fail "a new job is not in encoding 5"
# encoding 3's nodes for N=12 as the kernel searched them before encoding 4 existed (the same
# figure tests/unit/test_count.c pins)
nodes_old=$(sql old.db "SELECT sum(nodes) FROM shards WHERE job = $old")
nodes_new=$(sql old.db "SELECT sum(nodes) FROM shards WHERE job = $new")
[ "$nodes_old" = 129134 ] || fail "the encoding 3 job searched $nodes_old nodes, not encoding 3's 129134"
[ "$nodes_new" -lt "$nodes_old" ] || fail "encoding 5 searched $nodes_new nodes, not fewer than $nodes_old"
ok "a stored encoding 3 job is served in encoding 3 ($nodes_old nodes), a new one in encoding 5 ($nodes_new), both exact"
