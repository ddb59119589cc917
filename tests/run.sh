#!/usr/bin/env bash
# Builds nq and runs the whole test suite with ctest, in a folder of its own: the test build has
# fault switches compiled in (never in packages), so it never touches build/, where the README's
# main command keeps the build people run.
#   tests/run.sh              test build in build-test/
#   tests/run.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-test; flags=(-DNQ_TEST_FAULTS=ON)
if [ "${1:-}" = "--sanitize" ]; then
    dir=build-asan; flags=(-DNQ_TEST_FAULTS=ON -DNQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 600
