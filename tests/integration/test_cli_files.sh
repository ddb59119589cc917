#!/usr/bin/env bash
# What the commands do to files and to stdout when something is wrong:
# `--out` never follows a planted link and keeps the mode of the file it
# replaces; a refused `nq run` or `nq keygen` creates nothing (keygen writes
# both files or neither); a command whose stdout cannot be written exits 3
# with the reason instead of 0.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 1
umask 022

# ---- nq run: a refused command touches no file ----
mkdir refused && cd refused || exit 1
for args in "solve 8 --solutions 10 --restarts 5" "count 8 --depth 30" "enumerate 8 --depth 9" \
            "solve 8 --algo qs4,nosuch" "solve 8 --algo qs4,qs4,qs4,qs4,qs4,qs4,qs4,qs4,qs4"; do
    for db in "" "--db x.db"; do
        # shellcheck disable=SC2086
        "$NQ" run $args $db >../out.txt 2>../err.txt </dev/null; rc=$?
        [ $rc = 2 ] || fail "nq run $args $db: exit $rc, want 2 ($(cat ../err.txt))"
        [ "$(wc -l <../err.txt)" = 1 ] || fail "nq run $args $db: not one line: $(cat ../err.txt)"
        [ -z "$(ls -A)" ] || fail "nq run $args $db left files: $(ls -A | tr '\n' ' ')"
    done
done
cd .. || exit 1
ok "nq run: 5 refused job specs (solutions > restarts, depth 30, depth 9 for enumerate 8, an unknown method in a list, 9 methods), each with and without --db: exit 2, one line, the folder stays empty"

# ---- nq keygen: a valid name, both files or neither ----
mkdir keys && cd keys || exit 1
for name in "" "sub/" "." ".." "sub/.."; do
    "$NQ" keygen "$name" >../out.txt 2>../err.txt; rc=$?
    [ $rc = 2 ] || fail "keygen '$name': exit $rc, want 2 ($(cat ../err.txt))"
    [ -z "$(ls -A)" ] || fail "keygen '$name' wrote $(ls -A | tr '\n' ' ')"
done
echo "someone's public key" >kk.pub
"$NQ" keygen kk >../out.txt 2>../err.txt; rc=$?
[ $rc = 3 ] || fail "keygen kk over an existing kk.pub: exit $rc, want 3"
grep -q "kk.pub already exists" ../err.txt || fail "keygen kk: the refusal does not name kk.pub: $(cat ../err.txt)"
[ "$(ls -A)" = kk.pub ] || fail "keygen kk left files beside kk.pub: $(ls -A | tr '\n' ' ')"
[ "$(cat kk.pub)" = "someone's public key" ] || fail "keygen kk changed kk.pub"
"$NQ" keygen nodir/w >../out.txt 2>../err.txt; rc=$?
[ $rc = 3 ] && grep -q "nodir/w.key" ../err.txt || fail "keygen nodir/w: exit $rc ($(cat ../err.txt))"
"$NQ" keygen w1 >/dev/null || fail "keygen w1"
[ "$(stat -c %a w1.key) $(stat -c %a w1.pub)" = "600 644" ] || fail "modes $(stat -c '%a' w1.key w1.pub)"
[ "$(ls -A | tr '\n' ' ')" = "kk.pub w1.key w1.pub " ] || fail "keygen w1 left $(ls -A | tr '\n' ' ')"
cd .. || exit 1
ok "keygen: '', 'sub/', '.', '..', 'sub/..' refused (exit 2, no hidden .key/.pub); over an existing kk.pub: exit 3 naming it, no orphan kk.key; w1: 0600 + 0644, no temporary left"

# ---- --out: no planted link is followed, the mode is kept ----
"$NQ" run solve 8 --db run.db >/dev/null 2>&1 || fail "run solve 8"
echo precious >precious
# The old temporary name was "<out>.tmp.<pid>": plant it for the very pid nq will have (exec).
sh -c 'ln -s precious victim.txt.tmp.$$ && exec "$@"' sh "$NQ" result 1 --db run.db --out victim.txt \
    >/dev/null 2>err.txt || fail "result --out victim.txt: $(cat err.txt)"
[ "$(cat precious)" = precious ] || fail "--out followed the planted link: precious now holds $(head -c 40 precious)"
[ -f victim.txt ] && [ ! -L victim.txt ] && [ "$(wc -l <victim.txt)" = 8 ] || fail "victim.txt is not the solution"
"$NQ" verify victim.txt >/dev/null 2>&1 || fail "victim.txt does not verify"
echo secret >private.txt && chmod 600 private.txt
"$NQ" result 1 --db run.db --out private.txt >/dev/null 2>&1 || fail "result --out private.txt"
[ "$(stat -c %a private.txt)" = 600 ] || fail "--out over a 0600 file made it $(stat -c %a private.txt)"
(umask 002 && "$NQ" result 1 --db run.db --out new.txt --format bin >/dev/null 2>&1) || fail "result --out new.txt"
[ "$(stat -c %a new.txt)" = 664 ] || fail "a new --out file under umask 002 is $(stat -c %a new.txt), want 664"
ls | grep -q '\.tmp\.[0-9a-f]\{12\}$' && fail "temporary files left: $(ls | grep tmp)"
ok "--out: a link planted at the old temporary name is not followed (precious unchanged); over a 0600 file stays 0600; a new file is 0666 less the umask (002: 0664, was 0644); no temporary left"

# ---- a DB is private (it holds the lease key), also in an empty file made beforehand ----
"$NQ" run count 6 --db fresh.db >/dev/null 2>&1 || fail "run count 6 --db fresh.db"
touch made.db && chmod 644 made.db
"$NQ" run count 6 --db made.db >/dev/null 2>&1 || fail "run count 6 --db made.db"
[ "$(stat -c %a fresh.db) $(stat -c %a made.db)" = "600 600" ] ||
    fail "DB modes: new $(stat -c %a fresh.db), an empty 0644 file made before $(stat -c %a made.db); want 600"
ok "a new DB is 0600, and so is an empty 0644 file nq made its DB"

# ---- stdout that cannot be written: exit 3, never 0 ----
[ -w /dev/full ] || fail "no /dev/full"
"$NQ" run enumerate 6 --db e.db >/dev/null 2>&1 || fail "run enumerate 6"
n=0
for cmd in "status --db run.db" "status 1 --db run.db" "list --db run.db" "workers --db run.db" \
           "result 1 --db run.db" "result 1 --db run.db --json" "result 1 --db run.db --board" \
           "export 1 --db e.db" "export 1 --db e.db --format json" "--help" "help status" "version" \
           "verify victim.txt"; do
    # shellcheck disable=SC2086
    timeout 10 "$NQ" $cmd >/dev/full 2>err.txt; rc=$?
    [ $rc = 3 ] || fail "nq $cmd >/dev/full: exit $rc, want 3 ($(cat err.txt))"
    grep -q "cannot write the output: No space left on device" err.txt || fail "nq $cmd >/dev/full: $(cat err.txt)"
    n=$((n + 1))
done
ok "stdout on /dev/full: $n commands (status, list, workers, result, export, help, version, verify) exit 3 with 'cannot write the output: No space left on device'"
