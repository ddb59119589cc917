# Helpers for the web view's tests: headless Chromium (Debian's `chromium`) and curl.
# Source after lib.sh. A test that cannot run Chromium says "skipped" and exits 77.

# need_chromium: sets CHROME, or skips the test when no Chromium can run here.
need_chromium() {
    CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
    [ -n "$CHROME" ] || { echo "skipped: chromium is not installed (tests/install-deps.sh installs it)"; exit 77; }
    chrome --dump-dom "data:text/html,<p id=alive>x</p>" >"$T/chrome-probe.html" 2>/dev/null
    grep -q 'id="alive"' "$T/chrome-probe.html" || {
        echo "skipped: chromium cannot run here: $(tail -3 "$T/chrome.err" 2>/dev/null)"; exit 77; }
}

# chrome ARGS... URL: one headless Chromium run with a fresh profile under $T. It runs in a
# session of its own, and the whole session (zygote, renderers) is killed when it returns.
chrome() {
    setsid timeout -k 5 60 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-extensions --user-data-dir="$T/chrome-profile" "$@" 2>>"$T/chrome.err" &
    local pid=$! rc
    PIDS+=("$pid")
    wait "$pid"
    rc=$?
    kill -9 -- "-$pid" 2>/dev/null
    return $rc
}

# dom PATH: the DOM after Chromium loaded http://127.0.0.1:$HPORT/PATH.
dom() { chrome --dump-dom "http://127.0.0.1:$HPORT$1"; }

# status PATH [curl args]: the HTTP status code of a GET.
status() { local p=$1; shift; curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "http://127.0.0.1:$HPORT$p"; }
