#!/usr/bin/env bash
# The web view against hostile requests. Bad job ids and paths are 404s (parsed
# strictly, never echoed raw), a huge request head is refused, only GET and HEAD are
# answered, a trickling client is cut off while others are served, and a non-loopback
# --http is refused without a token; with one, a request without it or with a wrong one
# gets 401, and the right one works as a Bearer header, once in the URL, then as a cookie.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_web.sh"
cd "$T" || exit 1
command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }

start_broker h.db --http "127.0.0.1:@MPORT@"
HPORT=$MPORT
id=$("$NQ" submit count 8) || fail "submit"

[ "$(status /)" = 200 ] || fail "/ is not 200"
[ "$(status "/jobs/$id")" = 200 ] || fail "/jobs/$id is not 200"
for p in /jobs/abc /jobs/99999999999999999999 /jobs/18446744073709551616 /jobs/0 /jobs/01 \
         /jobs/-1 /jobs/+1 /jobs/1e3 "/jobs/1%00" "/jobs/1%2F" /jobs/ /jobs/1/x /api/jobs/abc \
         /api/jobs/99999999999999999999 /api/jobs/1/resultx /api/nope /nope /index.html; do
    [ "$(status "$p")" = 404 ] || fail "$p: $(status "$p"), want 404"
done
curl -s "http://127.0.0.1:$HPORT/api/jobs/abc" | grep -q '^{"error":' || fail "an /api 404 is not JSON"
ok "bad ids and paths: 404"

long=$(head -c 12000 /dev/zero | tr '\0' a)
code=$(status "/jobs/$long")
[ "$code" = 404 ] || [ "$code" = 414 ] || [ "$code" = 431 ] || fail "a 12 KB path: $code"
curl -s "http://127.0.0.1:$HPORT/<script>x" | grep -q '&lt;script&gt;x' || fail "the 404 page echoes a path unescaped"
[ "$(status / -X POST)" = 405 ] || fail "POST / is not 405"
[ "$(status / -X DELETE)" = 405 ] || fail "DELETE / is not 405"
[ "$(status / -I)" = 200 ] || fail "HEAD / is not 200"
big=$(head -c 20000 /dev/zero | tr '\0' b)
[ "$(status / -H "X-Big: $big")" = 431 ] || fail "a 20 KB request head was not refused with 431"
[ "$(status /)" = 200 ] || fail "/ not served after a 431"
# The 405 and 401 bodies are exactly their length (no heap bytes past them), and a connection
# after a 431 is answered, not cut (000 in curl).
for i in 1 2 3 4 5 6 7 8; do
    [ "$(status / -H "X-Big: $big")" = 431 ] || fail "431 (round $i)"
    [ "$(status / -X POST)" = 405 ] && [ "$(status / -X DELETE)" = 405 ] || fail "405 after a 431 (round $i)"
done
ok "long paths, a 20 KB head (431), other methods (405)"

# A client that trickles its request head is cut off; another is served meanwhile.
cat >slow.py <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
t0 = time.monotonic()
s.settimeout(0.5)
while time.monotonic() - t0 < 10:
    try:
        if s.recv(4096) == b"":
            break
    except socket.timeout:
        pass
    try:
        s.send(b"a")
    except OSError:
        break
print(f"{time.monotonic() - t0:.1f}")
PY
start slow python3 slow.py "$HPORT"
slow_pid=$LAST_PID
sleep 0.5
[ "$(status /)" = 200 ] || fail "/ not served while a client trickles"
wait "$slow_pid"
cut=$(cat "$T/slow.log")
awk -v c="$cut" 'BEGIN { exit !(c < 6) }' || fail "a trickling client was held ${cut}s"
ok "a trickling client was cut after ${cut}s; / was served meanwhile"

# Off loopback: refused without a token (and with a short one), before anything is bound.
out=$("$NQ" broker --db r.db --http "0.0.0.0:$(free_port)" 2>&1)
[ $? = 2 ] || fail "a non-loopback --http without a token was not a usage error: $out"
echo "$out" | grep -q "without a token" || fail "no reason given: $out"
[ ! -e r.db ] || fail "the refused broker created its DB"
echo short >short.tok
"$NQ" broker --db r.db --http "0.0.0.0:0" --http-token-file short.tok >/dev/null 2>&1
[ $? = 2 ] || fail "a 5-character token was taken"
ok "non-loopback --http: refused without a token, and with a short one"

kill "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
tok=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
printf '%s\n' "$tok" >good.tok
start_broker h.db --http "0.0.0.0:@MPORT@" --http-token-file good.tok
HPORT=$MPORT
for p in / /metrics /api/jobs "/jobs/$id"; do
    [ "$(status "$p")" = 401 ] || fail "$p without a token: $(status "$p")"
    [ "$(status "$p" -H "Authorization: Bearer x$tok")" = 401 ] || fail "$p with a wrong token"
    [ "$(status "$p" -H "Authorization: Bearer ${tok%?}")" = 401 ] || fail "$p with a token cut short"
    [ "$(status "$p" -H "Authorization: Bearer $tok")" = 200 ] || fail "$p with the token"
done
[ "$(status "/?token=wrong$tok")" = 401 ] || fail "a wrong ?token="
curl -s -D hdr.txt -o /dev/null "http://127.0.0.1:$HPORT/?token=$tok"
grep -qi "^set-cookie: nq_token=$tok; .*HttpOnly" hdr.txt || fail "?token= set no cookie: $(cat hdr.txt)"
[ "$(status /workers -H "Cookie: nq_token=$tok")" = 200 ] || fail "the cookie does not let a browser in"
[ "$(status /workers -H "Cookie: nq_token=x")" = 401 ] || fail "a wrong cookie lets a browser in"
ok "with --http-token-file: 401 without it or with a wrong one; Bearer, ?token= then cookie work"
