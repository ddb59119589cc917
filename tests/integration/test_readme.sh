#!/usr/bin/env bash
# A newcomer's first hour, literally: the README's code blocks for one machine, run as written,
# line by line, on a fresh copy of this tree's tracked files (what a clone holds: no build, and no
# copy.db or other file a user's own run of the README left in the checkout), as a non-root user
# whose shell has no nq (root runs them as nobody; without setpriv it skips): the main command
# (install, Release build, count N=18), the step that puts nq on the PATH, "One machine" and
# "Results". So an install step that writes outside its prefix fails here, and the suite never
# writes outside its temporary folders. Any line that fails fails the test. The README's test command is
# not run (it is this suite) but must be what .ci/run calls, and it must leave build/ alone:
# tests/run.sh is run with cmake and ctest stubbed to see which folders it would build in.
# It runs in a network namespace of its own where it can (root), so no other broker's tcp endpoint
# is in reach; the client commands ask the broker of ./nq.db (its socket beside it) or read the file.
# The Release build is the same whatever the build around it, so the sanitizer suite skips it.
if [ "${NQ_SANITIZED:-0}" = 1 ]; then
    echo "skipped: the README's Release build is built and run by the normal suite"
    exit 77
fi
if [ -z "${NQ_OWN_NETNS:-}" ] && [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    NQ_OWN_NETNS=1 exec unshare -n bash "$0" "$@"
fi
[ -n "${NQ_OWN_NETNS:-}" ] && ip link set lo up 2>/dev/null
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1

# ---- the README's blocks: ```sh ... ``` under a section's heading ----
# blocks SECTION: the sh blocks of "## SECTION", one after the other.
blocks() {
    awk -v want="## $1" '
        /^## / { in_sec = ($0 == want) }
        in_sec && /^```sh$/ { in_code = 1; next }
        in_code && /^```$/ { in_code = 0; print "# --- end of block"; next }
        in_sec && in_code { print }' "$SRC/README.md"
}
blocks "On a fresh Debian machine" >fresh.sh
grep -q 'cmake --build build' fresh.sh && grep -q 'cmake --install build' fresh.sh ||
    fail "the README's main command or its install step is gone: $(cat fresh.sh)"
test_cmd=$(grep 'tests/run.sh' fresh.sh)
[ -n "$test_cmd" ] || fail "the README has no test command"
grep -qxF "$test_cmd" "$SRC/.ci/run" || fail "the README's test command '$test_cmd' is not what .ci/run calls"
grep -v 'tests/run.sh' fresh.sh >first.sh           # the suite itself is not run again from here
{ blocks "One machine"; blocks "Results"; } >machine.sh
[ "$(grep -c '^nq ' machine.sh)" -ge 10 ] || fail "the README's one-machine blocks are short: $(cat machine.sh)"
ok "README: the main command, the install step, $(grep -c '^nq ' machine.sh) one-machine lines; its test command is .ci/run's"

# ---- a fresh tree, a non-root user without nq ----
AS_USER=()
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 || {
        echo "skipped: root, and no setpriv or no user nobody to run the README as a user"; exit 77; }
    AS_USER=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups)
fi
files=$(git -C "$SRC" ls-files -z 2>/dev/null | tr '\0' '\n' | wc -l)
[ "$files" -gt 0 ] || { echo "skipped: $SRC is not a git checkout: which files a clone holds is unknown"; exit 77; }
mkdir src home
# tracked files as they are in the working tree (one deleted there is left out)
git -C "$SRC" ls-files -z | (cd "$SRC" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
    tar -C src -xf - || fail "cannot copy the tracked files"
[ ! -e src/build ] || fail "the copy has a build/"
if [ ${#AS_USER[@]} -gt 0 ]; then
    chmod 755 "$T" && chown -R nobody: src home "$XDG_RUNTIME_DIR" || fail "cannot hand the copy to nobody"
fi
"${AS_USER[@]}" touch src/.writable 2>/dev/null && rm src/.writable || fail "the README's user cannot write the copy"
export HOME=$T/home
# No nq that the README did not install: a PATH folder that holds one (an installed package's
# /usr/bin, where grep lives too) is replaced by a folder of links to everything else in it.
path=
n=0
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -n "$d" ] || continue
    if [ -e "$d/nq" ]; then
        n=$((n + 1))
        mkdir "path$n" || fail "cannot make path$n"
        for f in "$d"/*; do
            [ "${f##*/}" = nq ] || ln -s "$f" "path$n/" 2>/dev/null
        done
        d=$T/path$n
    fi
    path=${path:+$path:}$d
done
export PATH=$path
unset NQ_BROKER NQ NQ_COUNT_KERNEL
command -v nq >/dev/null && fail "nq is on the PATH before the README installed it: $(command -v nq)"

# as_script FILE: its lines as one bash script that echoes each ("$ LINE"), runs it in this shell
# (an export reaches the lines after it) and stops at the first that fails, && chains included.
as_script() {
    local line
    echo "set -o pipefail"
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        printf 'echo %q\n{ %s\n} </dev/null || { echo "README line failed (exit $?)"; exit 1; }\n' "\$ $line" "$line"
    done <"$1"
}
# run FILE LOG: FILE's lines in the fresh tree.
run() {
    as_script "$1" >"$1.run"
    (cd src && "${AS_USER[@]}" bash "$T/$1.run") >"$2" 2>&1 || fail "$(grep 'README line failed' "$2"): $(grep '^\$ ' "$2" | tail -1); its output: $(tail -15 "$2")"
}
echo 'command -v nq >"$HOME/which.txt"' >>first.sh
run first.sh first.log
[ "$(cat home/which.txt)" = "$HOME/.local/bin/nq" ] || fail "after the install step the shell finds '$(cat home/which.txt)'"
grep -q "N=18: $(grouped "$(oeis_total 18)") solutions, $(grouped "$(oeis_unique 18)") unique" first.log ||
    fail "the main command's count of N=18: $(grep N=18 first.log)"
export PATH="$HOME/.local/bin:$PATH"
ok "as $("${AS_USER[@]}" id -un): the main command built build/ and counted N=18 exactly;" \
   "the install step put nq at $(cat home/which.txt)"

run machine.sh machine.log
grep -q "nq run: job 1 was done before" machine.log || fail "the second count did not say its answer was stored"
[ "$(grep -c 'Q' <(sed -n '/^\$ nq result 3 --board/,/^\$ /p' machine.log))" -ge 8 ] || fail "no board drawn"
grep -qx 'row0,row1,row2,row3,row4,row5,row6,row7' machine.log || fail "the 12 classes have no CSV header"
[ "$(sed -n '/^row0,/,/^\$ /p' machine.log | grep -c '^[0-7],')" = 12 ] || fail "not 12 classes of the 8-queens board"
grep -q "audit: OK" machine.log || fail "the audit of the manifest did not pass"
ls src/copy.db src/n18.manifest src/shards.csv >/dev/null || fail "the Results block left no files"
ok "'One machine' and 'Results': $(grep -c '^\$ ' machine.log) lines, each exit 0 (board, 12 classes, audit OK)"

# ---- the test command leaves build/ alone ----
mkdir stubs
printf '#!/bin/sh\necho "cmake $*" >>%s/calls.txt\n' "$T" >stubs/cmake
printf '#!/bin/sh\necho "ctest $*" >>%s/calls.txt\n' "$T" >stubs/ctest
chmod +x stubs/cmake stubs/ctest
(cd src && PATH=$T/stubs:$PATH tests/run.sh && PATH=$T/stubs:$PATH tests/run.sh --sanitize) >stub.log 2>&1 ||
    fail "tests/run.sh with stubs: $(cat stub.log)"
grep -Eq -- '(-B|--build|--test-dir) build( |$)' calls.txt && fail "tests/run.sh uses build/: $(cat calls.txt)"
grep -q -- '-B build-test ' calls.txt && grep -q -- '--test-dir build-asan ' calls.txt ||
    fail "tests/run.sh does not build in build-test/ and build-asan/: $(cat calls.txt)"
ok "tests/run.sh configures, builds and tests in build-test/ and build-asan/, never build/"
