#!/usr/bin/env bash
# Fuzz smoke test: every libFuzzer target for 10 s over its seed corpus, when clang
# is installed (otherwise skipped). Builds in its own directory under the build tree:
# a whole clang tree with ASan first, minutes on a busy 2-core machine (its ctest timeout
# is sized for that: tests/CMakeLists.txt). That tree is the same whatever the build
# around it, so the sanitizer suite leaves it to the normal one.
set -euo pipefail
: "${NQ_SOURCE_DIR:?set by ctest}" "${NQ_BUILD_DIR:?set by ctest}"
if ! command -v clang >/dev/null; then
    echo "skipped: clang not installed"
    exit 77
fi
if [ "${NQ_SANITIZED:-0}" = 1 ]; then
    echo "skipped: the fuzzers' clang tree is built and run by the normal suite"
    exit 77
fi
FUZZ_SECONDS=10 FUZZ_BUILD_DIR="$NQ_BUILD_DIR/fuzz-smoke" exec bash "$NQ_SOURCE_DIR/tests/fuzz/run.sh"
