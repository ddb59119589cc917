#!/usr/bin/env bash
# `cmake --install` puts everything below the prefix it is given, whoever runs it: a user's
# `--prefix ~/.local` once failed because the settings went to /usr/local/etc/nq (a path fixed
# when the build was configured), and root's went there too. The systemd units name the nq and
# the settings of that prefix; prefix /usr (the .deb) keeps its settings in /etc/nq. Installed
# under DESTDIR, so nothing is written outside this test's folder, root or not.
. "$(dirname "$0")/lib.sh"
BUILD=${NQ_BUILD_DIR:?NQ_BUILD_DIR not set}
cd "$T" || exit 1

# install PREFIX: into $T/dest/PREFIX; the list of what it wrote in $T/files
install_to() {
    rm -rf dest && mkdir dest
    DESTDIR=$T/dest cmake --install "$BUILD" --prefix "$1" >install.log 2>&1 || fail "install --prefix $1: $(cat install.log)"
    (cd dest && find . ! -type d | sed 's#^\.##' | sort) >files
}
user=$T/home/u/.local
install_to "$user"
outside=$(grep -v "^$user/" files)
[ -z "$outside" ] || fail "--prefix $user wrote outside it: $outside"
for f in bin/nq share/man/man1/nq.1.gz etc/nq/broker.env etc/nq/worker.env lib/systemd/system/nq-broker.service \
         lib/systemd/system/nq-worker@.service; do
    grep -qx "$user/$f" files || fail "--prefix $user: no $f: $(cat files)"
done
[ -d "dest$user/etc/nq/keys/workers" ] || fail "no keys/workers folder for the units"
unit=dest$user/lib/systemd/system/nq-broker.service
grep -q "^ExecStart=$user/bin/nq broker " "$unit" && grep -q "^EnvironmentFile=$user/etc/nq/broker.env$" "$unit" ||
    fail "the broker unit does not name the prefix's nq and settings: $(grep -E '^(ExecStart|Environment)' "$unit")"
grep -q "@NQ_" "dest$user"/lib/systemd/system/* && fail "a unit kept a placeholder: $(grep "@NQ_" "dest$user"/lib/systemd/system/*)"
ok "--prefix $user: $(wc -l <files) files, all below it; the units run $user/bin/nq with $user/etc/nq"

install_to /usr
outside=$(grep -v -e "^/usr/" -e "^/etc/nq/" files)
[ -z "$outside" ] || fail "--prefix /usr wrote outside /usr and /etc/nq: $outside"
grep -qx /etc/nq/broker.env files || fail "--prefix /usr: the settings are not in /etc/nq: $(cat files)"
unit=dest/usr/lib/systemd/system/nq-worker@.service
grep -q "^ExecStart=/usr/bin/nq worker " "$unit" && grep -q "^EnvironmentFile=/etc/nq/worker.env$" "$unit" ||
    fail "the worker unit for /usr: $(grep -E '^(ExecStart|Environment)' "$unit")"
ok "--prefix /usr: settings in /etc/nq, the units run /usr/bin/nq"
