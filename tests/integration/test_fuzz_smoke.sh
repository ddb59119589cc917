#!/usr/bin/env bash
# Fuzz smoke test: every libFuzzer target for 10 s over its seed corpus, when clang
# is installed (otherwise skipped). Builds in its own directory under the build tree.
set -euo pipefail
: "${NQ_SOURCE_DIR:?set by ctest}" "${NQ_BUILD_DIR:?set by ctest}"
if ! command -v clang >/dev/null; then
    echo "skipped: clang not installed"
    exit 0
fi
FUZZ_SECONDS=10 FUZZ_BUILD_DIR="$NQ_BUILD_DIR/fuzz-smoke" exec bash "$NQ_SOURCE_DIR/tests/fuzz/run.sh"
