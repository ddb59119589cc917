#!/usr/bin/env bash
# What `nq broker` refuses before it touches anything: a control endpoint open to the network
# without keys (anyone could submit and cancel), a bad --metrics address, a --db path that is
# not a database. Each is refused with one line, and the folder stays as it was.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

refused() {   # refused WHAT EXPECT_RC PATTERN ARGS...: runs nq broker, checks rc, message, files
    local what=$1 want=$2 pat=$3; shift 3
    local before after rc
    before=$(ls -A | sort)
    timeout 10 "$NQ" broker "$@" >out.txt 2>&1; rc=$?
    after=$(ls -A | grep -v '^out.txt$' | sort)
    [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want: $(cat out.txt)"
    grep -q -- "$pat" out.txt || fail "$what: message does not say '$pat': $(cat out.txt)"
    [ "$before" = "$after" ] || fail "$what: left files behind: $(comm -13 <(echo "$before") <(echo "$after"))"
    rm -f out.txt
}
p1=$(free_port); p2=$(free_port)
refused "control on 0.0.0.0 without keys" 3 "control endpoint" \
    --bind "tcp://127.0.0.1:$p1" --control "tcp://0.0.0.0:$p2" --db a.db
refused "bad --metrics" 2 "metrics" --bind "tcp://127.0.0.1:$p1" --control "tcp://127.0.0.1:$p2" \
    --metrics "not-an-address" --db b.db
mkdir adir
refused "--db a folder" 3 "not a regular file" --bind "tcp://127.0.0.1:$p1" --control "tcp://127.0.0.1:$p2" \
    --db adir
ok "control bind without keys, bad --metrics, a folder as --db: refused, nothing created"
