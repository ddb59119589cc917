#!/usr/bin/env bash
# A job that waits says why, and shows no ETA, wherever its progress is shown: nq status (and its
# --json), nq result --json (which said "waiting":null where status named the reason), nq list
# --json and the web home page (which showed an ETA and no word of waiting).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
need_web() { command -v curl >/dev/null || { echo "skipped: no curl"; exit 77; }; }
need_web
start_broker w.db --http 127.0.0.1:@MPORT@
id=$("$NQ" submit count 10 2>/dev/null) || fail "submit"
want="for a worker: none is connected"
"$NQ" status "$id" --json >st.json 2>/dev/null || fail "status"
grep -qF "\"waiting\":\"$want\"" st.json || fail "status --json names no reason: $(cat st.json)"
grep -q '"eta":null' st.json || fail "status --json has an ETA while the job waits: $(cat st.json)"
"$NQ" result "$id" --json >res.json 2>/dev/null; rc=$?
grep -qF "\"waiting\":\"$want\"" res.json || fail "result --json (exit $rc) names no reason: $(cat res.json)"
"$NQ" list --json >list.json 2>/dev/null || fail "list"
grep -qF "\"waiting\":\"$want\"" list.json || fail "list --json names no reason: $(cat list.json)"
ok "status, result --json and list --json say why the job waits, and status has no ETA"

page() { curl -s "http://127.0.0.1:$MPORT/" >home.html && grep -q "waiting" home.html; }
wait_for 20 page || fail "the home page says nothing of waiting: $(grep -A3 'id="jobs"' home.html | head -5)"
grep -qF "waiting $want" home.html || fail "the home page's job row does not say why: $(grep waiting home.html | head -3)"
ok "the web home page says why the job waits instead of an ETA"
