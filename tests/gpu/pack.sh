#!/usr/bin/env bash
# Builds nq (release, portable, no test fault switches) and gathers it with the shared libraries it
# needs into one folder (default .gpu/, git-ignored), to carry to a bare x86-64 machine where
# nothing can be installed (the GPU device check: tests/gpu/device_check.sh). There it runs as
#   LD_LIBRARY_PATH=.gpu/lib .gpu/nq ...
# The libraries are what ldd names (libzmq, libsodium, msgpack-c, SQLite, libmicrohttpd, the
# OpenCL ICD loader and what they pull in), glibc's own excepted: the binary needs glibc 2.34 or
# later, which that machine's image has (it must, for CUDA 13). libstdc++ and libgcc_s go to
# .gpu/fallback, for an image without them. clinfo comes too, to probe OpenCL there.
# The fastest public counter's source (ygch/n_queens, MIT; measured beside nq, never part of it) is
# copied from shared/peers/ygch-n_queens to .gpu/peer-src; where nvcc is here, nq's CUDA libraries
# (tests/gpu/build_cuda.sh) and the peer are built for NQ_CUDA_ARCH (default 90: H100/H200) into
# .gpu/cuda and .gpu/peer, so the device spends none of its minutes building them (it rebuilds them
# for another architecture where it has nvcc).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$ROOT/.gpu}
BUILD=${NQ_PACK_BUILD:-$ROOT/build-gpu-pack}
MAX_MB=60
ARCH=${NQ_CUDA_ARCH:-90}

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNQ_TEST_FAULTS=OFF -DNQ_SANITIZE=OFF \
      -DNQ_NATIVE=OFF >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
nice cmake --build "$BUILD" --target nq -j"$(nproc)" >"$BUILD.build.log" 2>&1 \
    || { tail -30 "$BUILD.build.log"; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST/lib" "$DEST/fallback"
install -m 0755 "$BUILD/nq" "$DEST/nq"
strip "$DEST/nq"
bins=("$DEST/nq")
if command -v clinfo >/dev/null; then
    install -m 0755 "$(command -v clinfo)" "$DEST/clinfo"
    bins+=("$DEST/clinfo")
fi

# glibc's libraries come from the machine itself: its loader must match its libc
is_glibc() {
    case "$1" in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*) return 0 ;;
        ld-linux*|linux-vdso*) return 0 ;;
        *) return 1 ;;
    esac
}
for b in "${bins[@]}"; do
    ldd "$b" | awk '/=> \// { print $1, $3 }' | while read -r name path; do
        is_glibc "$name" && continue
        case "$name" in
            libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$DEST/fallback/$name" ;;
            *) cp -L "$path" "$DEST/lib/$name" ;;
        esac
    done
done
chmod 0644 "$DEST"/lib/* "$DEST"/fallback/*

# the peer's source, for the device check only (it is not nq's: shared/, never the repository)
peer=""
for p in ${NQ_PEER_SRC:-} "$ROOT/shared/peers/ygch-n_queens" "$ROOT/../shared/peers/ygch-n_queens"; do
    [ -f "$p/n_queens_cuda.cu" ] && { peer=$p; break; }
done
if [ -n "$peer" ]; then
    mkdir -p "$DEST/peer-src"
    cp "$peer"/* "$DEST/peer-src/"
    chmod -R u+w "$DEST/peer-src"
else
    echo "pack: no peer source (shared/peers/ygch-n_queens, or NQ_PEER_SRC): the device check skips it" >&2
fi
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true)
if [ -n "$nvcc" ]; then
    NVCC=$nvcc "$ROOT/tests/gpu/build_cuda.sh" "$DEST/cuda" "$ARCH" >"$BUILD.cuda.log" 2>&1 \
        || echo "pack: some CUDA variants did not build ($BUILD.cuda.log)" >&2
    rm -f "$DEST"/cuda/*.log
    if [ -n "$peer" ]; then
        if NVCC=$nvcc ARCH=$ARCH "$DEST/peer-src/build.sh" "$DEST/peer" >"$BUILD.peer.log" 2>&1; then
            echo "$ARCH" >"$DEST/peer/arch"
        else
            echo "pack: the peer did not build ($BUILD.peer.log)" >&2
        fi
    fi
else
    echo "pack: no nvcc here: the device check builds the CUDA libraries and the peer itself" >&2
fi

# what it needs is all there: nothing but glibc resolves outside the folder
missing=$(LD_LIBRARY_PATH=$DEST/lib:$DEST/fallback ldd "$DEST/nq" | awk '/not found/ { print $1 }')
[ -z "$missing" ] || { echo "pack: not found: $missing" >&2; exit 1; }
LD_LIBRARY_PATH=$DEST/lib "$DEST/nq" --version >/dev/null
mb=$(du -sm "$DEST" | cut -f1)
[ "$mb" -lt "$MAX_MB" ] || { echo "pack: $DEST is $mb MB, over $MAX_MB" >&2; exit 1; }
libs=$(find "$DEST/lib" -type f | wc -l)
echo "pack: $DEST: $mb MB, $libs libraries (+ $(find "$DEST/fallback" -type f | wc -l) fallback)," \
     "$(find "$DEST/cuda" -name '*.so' 2>/dev/null | wc -l) CUDA variants for sm_$ARCH," \
     "peer: $([ -x "$DEST/peer/n_queens_c3" ] && echo built || echo "not built")"
