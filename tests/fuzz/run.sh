#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.c) with clang and runs each for
# FUZZ_SECONDS (default 30) over its seed corpus tests/fuzz/corpus/<name>/ (fuzz_NAME.c).
# Exits non-zero if a target crashes, leaks, trips a sanitizer or an assertion.
#
#   tests/fuzz/run.sh [TARGET...]      e.g. tests/fuzz/run.sh fuzz_proto
#   FUZZ_SECONDS=600 tests/fuzz/run.sh
#   FUZZ_BUILD_DIR=/path  build there instead of <repo>/build-fuzz
#
# New inputs the fuzzer finds go to $FUZZ_BUILD_DIR/corpus/<name>/ (never into the
# repository); a crashing input is written to $FUZZ_BUILD_DIR/artifacts/<name>/.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
secs=${FUZZ_SECONDS:-30}
jobs=${FUZZ_BUILD_JOBS:-2}

if ! [[ $secs =~ ^[0-9]+$ ]] || (( secs < 1 || secs > 86400 )); then
    echo "run.sh: FUZZ_SECONDS must be an integer from 1 to 86400 (got '$secs')" >&2
    exit 2
fi
if ! command -v clang >/dev/null; then
    echo "run.sh: clang is needed for libFuzzer targets" >&2
    exit 2
fi

targets=()
if (( $# )); then
    for t in "$@"; do
        t=${t%.c}; t=${t##*/}
        if [[ ! -f $src/tests/fuzz/$t.c ]]; then
            echo "run.sh: no fuzz target $src/tests/fuzz/$t.c" >&2
            exit 2
        fi
        targets+=("$t")
    done
else
    for f in "$src"/tests/fuzz/fuzz_*.c; do
        [[ -e $f ]] && targets+=("$(basename "$f" .c)")
    done
fi
if (( ${#targets[@]} == 0 )); then
    echo "run.sh: no tests/fuzz/fuzz_*.c targets" >&2
    exit 2
fi

# The library is instrumented for coverage too (fuzzer-no-link), or libFuzzer
# would only see the few lines of the target itself.
CC=clang cmake -S "$src" -B "$build" -DNQ_FUZZ=ON -DNQ_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

failed=()
for t in "${targets[@]}"; do
    name=${t#fuzz_}
    seeds=$src/tests/fuzz/corpus/$name
    work=$build/corpus/$name
    art=$build/artifacts/$name
    mkdir -p "$work" "$art"
    dirs=("$work")
    [[ -d $seeds ]] && dirs+=("$seeds")
    echo "== $t: ${secs}s over ${dirs[*]}"
    if ! "$build/tests/$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
            -artifact_prefix="$art/" "${dirs[@]}"; then
        echo "run.sh: $t FAILED; crashing input(s) in $art/ (see tests/fuzz/README.md)" >&2
        failed+=("$t")
    fi
done

if (( ${#failed[@]} )); then
    echo "run.sh: failed: ${failed[*]}" >&2
    exit 1
fi
echo "run.sh: all ${#targets[@]} target(s) ran ${secs}s without a finding"
