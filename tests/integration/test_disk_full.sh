#!/usr/bin/env bash
# Disk full under a running job: the DB lives on a small tmpfs; while a count
# runs, a filler file takes every free byte. The broker must log
# store.commit_failed, stop leasing, stay up and keep answering `nq status`;
# a cancel it cannot commit is refused (exit 3), never answered "cancelled" and
# lost; once the filler is removed the held results commit, the count is exact
# and a cancel sticks across a restart.
# Needs root (mount); otherwise skipped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_faults.sh"
cd "$T" || exit 1
if [ "$(id -u)" != 0 ] || ! command -v mount >/dev/null; then
    echo "skipped: needs root to mount a tmpfs"
    exit 77
fi
mkdir disk
mount -t tmpfs -o size=6m nqt-disk "$T/disk" 2>err.txt || { echo "skipped: cannot mount a tmpfs: $(cat err.txt)"; exit 77; }
CLEANUP_HOOKS+=("umount -l '$T/disk'")
N=$(long_count_n)   # a count that lasts seconds on this build, so the fault lands mid-run
DB=disk/d.db

leases() { "$NQ" workers --json --timeout 5 | grep -o '"leases":[0-9]*' | cut -d: -f2 | paste -sd+ | bc; }
done_now() { job_field "$1" shards_done; }

broker_up broker $DB
worker_up w1 --threads 1
id=$("$NQ" submit count $N --priority 5) || fail "submit"
other=$("$NQ" submit count $N) || fail "submit"          # waits behind it: to be cancelled
total=$(job_field "$id" shards_total)
wait_for 120 bash -c "[ \$($NQ status $id --json | grep -o '\"shards_done\":[0-9]*' | cut -d: -f2) -ge 20 ]" \
    || fail "no progress before filling the disk"

dd if=/dev/zero of=disk/filler bs=64k status=none 2>/dev/null   # until ENOSPC
[ "$(df --output=avail disk | tail -1)" -lt 64 ] || fail "the filler did not fill the tmpfs"
wait_for 60 grep -q 'store.commit_failed' broker.log || fail "no store.commit_failed with the disk full"
ok "disk full: broker logged $(grep -m1 -o 'event=store.commit_failed.*' broker.log | cut -c1-120)"

# Held shards finish, no new ones go out; the broker stays up and answers.
wait_for 30 bash -c "[ \"\$($(declare -f leases); leases)\" = 0 ]" || fail "still leasing with the disk full (leases=$(leases))"
d1=$(done_now "$id")
sleep 3
kill -0 "$BROKER_PID" 2>/dev/null || fail "the broker died with the disk full"
"$NQ" status "$id" --timeout 5 >/dev/null || fail "nq status does not answer with the disk full"
[ "$(leases)" = 0 ] || fail "the broker leased again with the disk full"
[ "$(done_now "$id")" = "$d1" ] || fail "shards_done moved ($d1 -> $(done_now "$id")) with nothing committed"
grep -q 'store.retry' broker.log || fail "the broker does not retry the commit"
ok "disk full: no leases out, broker alive, nq status answers (done stays $d1 of $total), retrying"
"$NQ" cancel "$other" >out.txt 2>err.txt; rc=$?
[ "$rc" = 3 ] || fail "a cancel on a full disk exited $rc: $(cat out.txt err.txt)"
grep -q "cannot commit" err.txt || fail "the refused cancel does not say why: $(cat err.txt)"
[ "$(job_field "$other" state)" != cancelled ] || fail "the refused cancel shows the job cancelled"
ok "disk full: nq cancel refused with exit 3 ($(head -1 err.txt | cut -c1-100))"

rm -f disk/filler
wait_for 180 job_done "$id" || fail "count $N did not finish after freeing space: $("$NQ" status "$id" --json)"
exact "$id" $N || fail "count $N not exact after the disk-full episode: $("$NQ" status "$id" --json)"
"$NQ" cancel "$other" >/dev/null || fail "cancel after freeing space"
stop_pid "$BROKER_PID"
shards_done_once $DB "$id" || fail "not every shard done exactly once"
ok "space freed: the held results committed, count $N exact, every shard done once"
broker_up broker2 $DB
[ "$(job_field "$other" state)" = cancelled ] || fail "the cancel was lost across a restart: $("$NQ" status "$other" --json)"
stop_pid "$BROKER_PID"
ok "a cancel answered after the disk had room is durable: still cancelled after a restart"
