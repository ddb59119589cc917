#!/usr/bin/env bash
# Every command refuses bad flag values with exit 2 and a one-line reason,
# before it binds, connects or writes anything.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

check() {   # check WORDS... : must exit 2 with a message naming the command
    "$NQ" "$@" >out.txt 2>err.txt </dev/null
    local rc=$?
    [ $rc = 2 ] || fail "nq $*: exit $rc, want 2 ($(cat err.txt))"
    grep -q "^nq " err.txt || fail "nq $*: no message"
    [ "$(wc -l <err.txt)" -le 2 ] || fail "nq $*: more than a line or two: $(cat err.txt)"
}

check broker --heartbeat-ms 5
check broker --heartbeat-ms abc
check broker --liveness 0
check broker --stall-timeout -1
check broker --grace 99999
check broker --log-format xml
check broker --log-level loud
check broker --authorized-keys keys.d
check broker --frobnicate
check broker extra-argument
check worker --threads 0
check worker --threads 5000
check worker --prefetch x
check worker --key w.key
check worker --log-level loud
check submit count 0
check submit count 8 --quorum 9
check submit count 8 --priority -3
check submit count 8 --max-attempts 0
check submit count 8 --restarts 5
check submit solve 3
check submit solve 100 --algo nope
check submit solve 100 --solutions 0
check submit enumerate 17
check submit frob 8
check status abc
check status 0
check result
check result 1 --format xml
check cancel
check retry 1 2
check export 1 --format xml
check export
check list extra
check workers --watch
check keygen
check keygen -x
check run count 8 --quorum 2
check bench count 8 --threads 0
check estimate count 8 --sample 0
check verify
[ ! -e nq.db ] || fail "a refused command created nq.db"
ok "42 bad flag values refused with exit 2 and a one-line reason; nothing created"

# The help names every exit code the commands use, 130 (an interrupted nq run) too.
"$NQ" --help >out.txt || fail "nq --help: exit $?"
for code in "0 ok" "1 no" "2 bad usage" "3 runtime error" "130 interrupted"; do
    tr '\n' ' ' <out.txt | grep -q "$code" || fail "nq --help does not name exit code '$code': $(grep -A1 Exit out.txt)"
done
ok "nq --help names exit codes 0, 1, 2, 3 and 130"
