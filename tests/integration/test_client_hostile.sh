#!/usr/bin/env bash
# The client commands treat the broker's answers as untrusted: a fake control
# endpoint (tests/tools/fake_control.py) sends well-formed CTL_REP frames whose
# documents lie (a solution whose n * 4 wraps to its 4-byte bin, columns out of
# range, fields of the wrong type, an export that never advances, a submit
# without a job id). Every command must end with a clear one-line error (exit
# 3) or print "-" for what it cannot read; none may crash, hang or exit 0.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

need_wire_python
FAKE=$SRC/tests/tools/fake_control.py

# fake SCENARIO: (re)starts the fake broker (on a port it picks); NQ_BROKER points at it.
fake() {
    [ -n "${FAKE_PID:-}" ] && { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }
    start "fake-$1" "$PY" "$FAKE" "$1"
    FAKE_PID=$LAST_PID
    wait_for 60 grep -q "^ready tcp://" "$T/fake-$1.log" || fail "fake broker $1 did not start"
    NQ_BROKER=$(sed -n "s/^ready //p" "$T/fake-$1.log")
    export NQ_BROKER
}

# refused WANT_RC PATTERN CMD...: runs nq CMD (5 s at most), wants exit WANT_RC and PATTERN on stderr.
refused() {
    local want=$1 pattern=$2; shift 2
    timeout 5 "$NQ" "$@" --timeout 3 >out.txt 2>err.txt </dev/null
    local rc=$?
    [ $rc = "$want" ] || fail "nq $* against '$SCENARIO': exit $rc, want $want ($(head -c 300 err.txt))"
    grep -q "$pattern" err.txt || fail "nq $* against '$SCENARIO': no '$pattern' in: $(cat err.txt)"
    # one line of reason, beside the line that names the broker which answered
    [ "$(grep -vc '^nq [a-z]*: answered by the broker' err.txt)" = 1 ] ||
        fail "nq $* against '$SCENARIO': not one line: $(cat err.txt)"
}

for SCENARIO in solution-wrap solution-huge-n solution-n-str solution-not-map; do
    fake $SCENARIO
    refused 3 "bad reply from the broker: the solution's n" result 1 --out sol.txt
    refused 3 "bad reply from the broker" result 1 --board
    [ ! -e sol.txt ] || fail "$SCENARIO: a solution file was written"
done
SCENARIO=solution-short; fake $SCENARIO
refused 3 "cols is not 8 columns of 4 bytes" result 1 --out sol.txt
SCENARIO=solution-col-range; fake $SCENARIO
refused 3 "column 4000000000 of row 7 is not below N=8" result 1 --out sol.txt
[ ! -e sol.txt ] || fail "a solution with a column out of range was written"
ok "result --out/--board: 6 lying solution documents (n*4 wrapping to the bin's size, n 2^40, n a string, short bin, column 4e9, not a map) refused with exit 3, nothing written"

SCENARIO=export-stuck; fake $SCENARIO
refused 3 "the export does not advance" export 1
SCENARIO=export-empty-more; fake $SCENARIO
refused 3 "the export does not advance" export 1
SCENARIO=export-bad-rows; fake $SCENARIO
refused 3 "malformed page" export 1
ok "export: a page that never advances (same cursor, or no rows and a next) stops with exit 3 instead of looping; a malformed page exit 3"

SCENARIO=submit-no-id; fake $SCENARIO
refused 3 "no job id" submit count 8
SCENARIO=submit-str-id; fake $SCENARIO
refused 3 "no job id" submit count 8
ok "submit: a reply without a numeric id is refused (exit 3) instead of printing 0 or a pointer"

SCENARIO=wrong-types; fake $SCENARIO
for c in "status 1" "list" "workers"; do
    # shellcheck disable=SC2086
    timeout 5 "$NQ" $c --timeout 3 >out.txt 2>err.txt </dev/null; rc=$?
    [ $rc = 0 ] || fail "nq $c on a document of wrong types: exit $rc ($(cat err.txt))"
    grep -q -- "-" out.txt || fail "nq $c: no '-' for unreadable fields: $(cat out.txt)"
done
ok "status/list/workers: documents with every field of the wrong type print '-' (exit 0, no crash)"
