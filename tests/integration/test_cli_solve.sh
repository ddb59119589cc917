#!/bin/bash
# `nq bench solve` and `nq verify` from the outside: refusals exit 2 with a
# message, --out files verify in both formats, corrupted files exit 1.
set -u
: "${NQ:?NQ must point at the nq binary}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE PATTERN ARGS...: exit code CODE and PATTERN somewhere in stdout+stderr
expect() {
    local code=$1 pat=$2; shift 2
    "$NQ" "$@" >"$TMP/out" 2>&1
    local rc=$?
    [ "$rc" = "$code" ] || fail "nq $* exited $rc, expected $code: $(head -c 300 "$TMP/out")"
    grep -q -- "$pat" "$TMP/out" || fail "nq $*: no '$pat' in: $(head -c 300 "$TMP/out")"
}

# Refused inputs: exit 2 and say what is allowed.
expect 2 "from 4 to 1000000000 (got '3')" bench solve 3
expect 2 "got 'abc'" bench solve abc
expect 2 "from 4 to 1000000000 (got '-1')" bench solve -1
expect 2 "got '2e9'" bench solve 2e9
expect 2 "from 4 to 1000000 (got '2000000')" bench solve --algo minconflicts 2000000
expect 2 "unknown --algo 'nope'" bench solve --algo nope 10
expect 2 "'text' or 'bin'" bench solve 10 --out "$TMP/x" --format xml
expect 2 "needs --out" bench solve 10 --format bin
expect 2 "missing N" bench solve
expect 2 "extra" bench solve 10 11
expect 2 "up to N=64" bench solve 65 --board
expect 2 "--seed must be" bench solve 10 --seed -5
expect 2 "unknown or incomplete option" bench solve 10 --frobnicate
expect 2 "missing FILE" verify
expect 2 "--n must be" verify "$TMP/x" --n 0
[ -e "$TMP/x" ] && fail "a refused command wrote its --out file"

# --algo list names the methods with ranges.
expect 0 "qs4 .*4\.\.1000000000" bench solve --algo list
expect 0 "construct" bench solve --algo list
"$NQ" bench solve --algo list >"$TMP/out" 2>&1
[ "$(grep -o default "$TMP/out" | wc -l)" = 1 ] || fail "--algo list names the default other than once: $(grep default "$TMP/out")"

# Solve, write, verify: both formats, two methods.
expect 0 "ok        yes" bench solve 2000 --seed 3 --out "$TMP/a.txt"
expect 0 "valid solution for N=2000" verify "$TMP/a.txt"
expect 0 "valid solution for N=2000" verify "$TMP/a.txt" --n 2000
expect 1 "expected N=2001" verify "$TMP/a.txt" --n 2001
expect 0 '"ok":true' bench solve 100000 --format bin --out "$TMP/b.bin" --json
expect 0 "valid solution for N=100000" verify "$TMP/b.bin"
expect 0 "ok        yes" bench solve 1001 --algo construct --out "$TMP/c.bin" --format bin
expect 0 "valid solution for N=1001" verify "$TMP/c.bin"
expect 0 "^Q\|^\.*Q" bench solve 8 --board

# Same seed, same file.
"$NQ" bench solve 3000 --seed 9 --out "$TMP/s1.txt" >/dev/null || fail "solve s1"
"$NQ" bench solve 3000 --seed 9 --out "$TMP/s2.txt" >/dev/null || fail "solve s2"
cmp -s "$TMP/s1.txt" "$TMP/s2.txt" || fail "same seed gave different solutions"

# Broken files: exit 1 with the reason.
printf '1\n3\n0\n2\n' >"$TMP/q4.txt"
expect 0 "valid solution for N=4" verify "$TMP/q4.txt"
printf '0\n1\n2\n3\n' >"$TMP/diag.txt"
expect 1 "rows 0 and 1 share a diagonal" verify "$TMP/diag.txt"
printf '1\n3\n1\n2\n' >"$TMP/col.txt"
expect 1 "rows 0 and 2 share a column" verify "$TMP/col.txt"
printf '1\n3\n0\n9\n' >"$TMP/range.txt"
expect 1 "line 4: column 9 out of range" verify "$TMP/range.txt"
printf 'hello\n' >"$TMP/garbage.txt"
expect 1 "line 1: unexpected character" verify "$TMP/garbage.txt"
cp "$TMP/b.bin" "$TMP/flip.bin"
printf '\xff' | dd of="$TMP/flip.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
expect 1 "bad checksum" verify "$TMP/flip.bin"
head -c 5000 "$TMP/b.bin" >"$TMP/short.bin"
expect 1 "truncated" verify "$TMP/short.bin"
expect 3 "No such file" verify "$TMP/missing.sol"

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
