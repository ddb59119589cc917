#!/bin/bash
# The .deb: builds it with cpack from a release configuration of this source
# tree, checks its files, control fields, conffiles and maintainer scripts, the
# binary in it (runs, stripped, no sanitizer), and the pre-build check that
# refuses test or sanitizer builds. In CI as root ($CI set) it also installs the
# package, counts N=10 with the installed /usr/bin/nq, removes it (conffiles
# stay) and purges it (they go).
set -u
SRC=${NQ_SOURCE_DIR:?NQ_SOURCE_DIR not set}
BUILD=${NQ_BUILD_DIR:?NQ_BUILD_DIR not set}
for tool in cpack dpkg-deb dpkg; do
    command -v "$tool" >/dev/null || { echo "skipped: $tool not installed"; exit 77; }
done
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the pre-build check, alone (cheap): refuses what must never ship ----
check() { cmake -DCPACK_NQ_INSTALL_PREFIX=/usr "$@" -P "$SRC/deploy/check-package.cmake" 2>&1; }
check >/dev/null || fail "check-package.cmake refuses a clean release configuration"
for bad in -DCPACK_NQ_TEST_FAULTS=ON -DCPACK_NQ_SANITIZE=ON -DCPACK_NQ_NATIVE=ON \
           -DCPACK_NQ_INSTALL_PREFIX=/usr/local; do
    out=$(check "$bad") && fail "check-package.cmake accepts $bad"
    grep -q "refusing to build a package" <<<"$out" || fail "no clear refusal for $bad: $out"
done

# ---- build the package (kept under the build dir so a re-run is incremental) ----
pkg=$BUILD/test-package
rm -f "$pkg"/nq_*.deb
cmake -S "$SRC" -B "$pkg" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
      -DNQ_TEST_FAULTS=OFF -DNQ_SANITIZE=OFF -DNQ_NATIVE=OFF \
      -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >"$tmp/configure.log" 2>&1 \
    || { cat "$tmp/configure.log"; echo "FAIL: cmake configure"; exit 1; }
cmake --build "$pkg" --target nq nq_man -j2 >"$tmp/build.log" 2>&1 \
    || { tail -30 "$tmp/build.log"; echo "FAIL: build"; exit 1; }
(cd "$pkg" && cpack -G DEB >"$tmp/cpack.log" 2>&1) \
    || { cat "$tmp/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb=$(find "$pkg" -maxdepth 1 -name 'nq_*.deb' | head -1)
[[ -f $deb ]] || { echo "FAIL: cpack made no nq_*.deb"; exit 1; }
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# ---- contents ----
dpkg-deb -c "$deb" | awk '{print $NF}' > "$tmp/files"
for f in ./usr/bin/nq ./usr/share/man/man1/nq.1.gz \
         ./usr/lib/systemd/system/nq-broker.service ./usr/lib/systemd/system/nq-worker@.service \
         ./etc/nq/broker.env ./etc/nq/worker.env ./etc/nq/keys/workers/ \
         ./usr/share/doc/nq/README.md \
         ./usr/share/doc/nq/examples/slurm/nq-count.sbatch \
         ./usr/share/doc/nq/examples/k8s/broker.yaml \
         ./usr/share/doc/nq/examples/container/compose.yaml; do
    grep -qxF "$f" "$tmp/files" || fail "package lacks $f"
done
grep -E 'test_|\.a$|CMakeFiles|\.o$' "$tmp/files" && fail "package contains build or test files"
dpkg-deb -c "$deb" | grep ' ./usr/bin/nq$' | grep -q '^-rwxr-xr-x root/root' \
    || fail "/usr/bin/nq is not root-owned mode 0755"

# ---- control fields ----
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == nq ]] || fail "Package is '$(field Package)'"
ver=$(sed -n 's/^project(nq VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[[ $(field Version) == "$ver" ]] || fail "Version is '$(field Version)', CMakeLists.txt says '$ver'"
[[ $(field Architecture) == "$(dpkg --print-architecture)" ]] || fail "Architecture is '$(field Architecture)'"
[[ -n $(field Maintainer) ]] || fail "no Maintainer"
[[ -n $(field Description) ]] || fail "no Description"
deps=$(field Depends)
for lib in libzmq5 libsqlite3-0 libmsgpackc2 libsodium23 libc6; do
    grep -q "$lib" <<<"$deps" || fail "Depends lacks $lib: $deps"
done
grep -q "libopencl1" <<<"$deps" || fail "Depends lacks the OpenCL ICD loader (ocl-icd-libopencl1): $deps"
if pkg-config --exists libmicrohttpd; then
    grep -q libmicrohttpd <<<"$deps" || fail "Depends lacks libmicrohttpd: $deps"
fi

# ---- conffiles and maintainer scripts ----
dpkg-deb -e "$deb" "$tmp/control"
[[ $(sort "$tmp/control/conffiles" | tr '\n' ' ') == "/etc/nq/broker.env /etc/nq/worker.env " ]] \
    || fail "conffiles: $(cat "$tmp/control/conffiles")"
for s in postinst prerm postrm; do
    [[ -x $tmp/control/$s ]] || fail "maintainer script $s missing or not executable"
done

# ---- the binary and the man page in the package ----
dpkg-deb -x "$deb" "$tmp/root"
"$tmp/root/usr/bin/nq" --version | grep -qxF "nq $ver" || fail "packaged nq --version"
readelf -S "$tmp/root/usr/bin/nq" | grep -q "\.symtab" && fail "packaged nq is not stripped"
grep -q __asan_init "$tmp/root/usr/bin/nq" && fail "packaged nq is built with ASan"
zcat "$tmp/root/usr/share/man/man1/nq.1.gz" | grep -q "^\.TH NQ 1 .*nq $ver" \
    || fail "man page lacks the version"
out=$(zcat "$tmp/root/usr/share/man/man1/nq.1.gz" | groff -man -ww -z 2>&1) || true
[[ -z $out ]] || fail "man page warnings: $out"

# ---- install, use, remove: CI only, as root, with the broker built ----
if [[ -z ${CI:-} ]]; then
    echo "skipped: dpkg -i / nq run / dpkg -r (only in CI: set CI=1)"
elif [[ $(id -u) != 0 ]]; then
    echo "skipped: dpkg -i / nq run / dpkg -r need root"
elif ! "$NQ" help run >/dev/null 2>&1; then
    echo "skipped: dpkg -i (nq run is not built yet)"
elif dpkg-query -W -f='${Status}' nq 2>/dev/null | grep -q 'ok installed'; then
    echo "skipped: dpkg -i (a package nq is already installed here; not touching it)"
else
    if dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; then
        out=$(/usr/bin/nq run count 10 --db "$tmp/run.db" 2>"$tmp/run.err")
        grep -qw 724 <<<"$out" || fail "installed nq run count 10: '$out' $(cat "$tmp/run.err")"
        man -w nq >/dev/null 2>&1 || fail "man nq not found after install"
        [[ -f /etc/nq/broker.env ]] || fail "/etc/nq/broker.env not installed"
        dpkg -r nq >>"$tmp/dpkg.log" 2>&1 || fail "dpkg -r nq: $(cat "$tmp/dpkg.log")"
        [[ -e /usr/bin/nq ]] && fail "/usr/bin/nq still there after dpkg -r"
        [[ -f /etc/nq/broker.env ]] || fail "dpkg -r removed the conffile /etc/nq/broker.env"
        dpkg -P nq >>"$tmp/dpkg.log" 2>&1 || fail "dpkg -P nq: $(cat "$tmp/dpkg.log")"
        [[ -e /etc/nq/broker.env ]] && fail "/etc/nq/broker.env still there after dpkg -P"
    else
        fail "dpkg -i: $(cat "$tmp/dpkg.log")"
        dpkg -P nq >/dev/null 2>&1
    fi
fi

if ((fails)); then
    echo "$fails check(s) failed"
    exit 1
fi
echo "package: all checks passed"
