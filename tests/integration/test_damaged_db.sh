#!/usr/bin/env bash
# Damaged databases: garbage, a foreign SQLite DB, an nq DB with a page
# overwritten, an nq DB cut short, an nq DB from a newer schema. Every command that opens a DB
# (broker, run, list, result) refuses with a clear message and exit 3, and
# leaves the file's bytes exactly as they were.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_faults.sh"
cd "$T" || exit 1

# A real nq DB with a finished job, big enough that page 3 (offset 8192) is in use.
"$NQ" run count 9 --db good.db >/dev/null 2>&1 || fail "could not make a good DB"
"$NQ" result 1 --db good.db >/dev/null || fail "the good DB does not answer"
[ "$(stat -c %s good.db)" -gt 12288 ] || fail "good DB too small to overwrite page 3 ($(stat -c %s good.db) bytes)"

head -c 65536 /dev/urandom >garbage.db
sqlite3 foreign.db "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'x');"
cp good.db page.db
head -c 4096 /dev/urandom | dd of=page.db bs=4096 seek=2 conv=notrunc status=none   # offset 8192
cp good.db trunc.db
truncate -s 10000 trunc.db                                                         # cut mid-page
cp good.db newer.db
sqlite3 newer.db "UPDATE schema_version SET version = 99 WHERE version = (SELECT max(version) FROM schema_version);"

# expect_refused LABEL FILE WORDS CMD...: exit 3, a message on stderr matching WORDS, file unchanged.
expect_refused() {
    local label=$1 file=$2 words=$3; shift 3
    local before after rc
    before=$(sha256sum "$file" | cut -d' ' -f1)
    timeout 30 "$@" >out.txt 2>err.txt
    rc=$?
    after=$(sha256sum "$file" | cut -d' ' -f1)
    [ "$rc" = 3 ] || fail "$label: $* exited $rc, expected 3 (stderr: $(head -c 300 err.txt))"
    grep -Eqi "$words" err.txt || fail "$label: unclear message for $*: $(head -c 300 err.txt)"
    [ "$before" = "$after" ] || fail "$label: $* changed the file's bytes"
    for side in "$file-wal" "$file-shm" "$file-journal"; do
        [ -s "$side" ] && fail "$label: $* left $side behind"
    done
    [ -e "$file.lock" ] && fail "$label: $* left $file.lock behind (a refused command creates nothing)"
    echo "    $label: $(head -1 err.txt)"
}

for kind in garbage foreign page trunc newer; do
    f=$kind.db
    case $kind in
        garbage) words='not an nq|not a database|not a SQLite|file is not' ;;
        foreign) words='not an nq|no nq schema|schema_version|foreign' ;;
        page|trunc) words='corrupt|malformed|damaged|integrity|not a database|truncated' ;;
        newer)   words='newer|schema 99|version 99' ;;
    esac
    P=$(free_port); C=$(free_port)
    expect_refused "$kind/broker" "$f" "$words" "$NQ" broker --db "$f" --bind tcp://127.0.0.1:$P --control tcp://127.0.0.1:$C
    expect_refused "$kind/run" "$f" "$words" "$NQ" run count 8 --db "$f"
    expect_refused "$kind/list" "$f" "$words" "$NQ" list --db "$f"
    expect_refused "$kind/result" "$f" "$words" "$NQ" result 1 --db "$f"
    ok "$kind DB: broker, run, list and result refuse (exit 3, clear message), bytes unchanged"
done
