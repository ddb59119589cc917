#!/usr/bin/env bash
# Manifest export and audit times, whole process, median of R runs (default 5):
#   tests/bench/bench_audit.sh [BUILD_DIR] [N] [DEPTH]   (default build-rel, N=14, depth 5)
# Makes a done count job of N at DEPTH with `nq run` (not timed), then times
# `nq export --manifest` and `nq audit --sample 100 --threads 2`. Shard counts: N=14 d5 170130,
# N=16 d5 873342, N=15 d6 1172631 (nq estimate count N --depth D prints them).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-rel}; n=${2:-14}; depth=${3:-5}; R=${R:-5}
[ -x "$build/nq" ] || { cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$build" -j2 >/dev/null; }
nq=$build/nq
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$nq" run count "$n" --depth "$depth" --db "$tmp/a.db" >/dev/null 2>&1
shards=$(sqlite3 -readonly "$tmp/a.db" "SELECT shards_total FROM jobs WHERE id = 1")
# shellcheck source=tests/bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"   # median
timed() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
for _ in $(seq "$R"); do timed "$nq" export 1 --db "$tmp/a.db" --manifest "$tmp/m.txt"; done | median >"$tmp/exp"
for _ in $(seq "$R"); do timed "$nq" audit "$tmp/m.txt" --sample 100 --threads 2; done | median >"$tmp/aud"
for _ in $(seq "$R"); do timed "$nq" audit "$tmp/m.txt" --sample 0; done | median >"$tmp/aud0"
printf '| N | depth | shards | manifest bytes | export s | audit --sample 100 s | audit --sample 0 s |\n'
printf '|---|---|---|---|---|---|---|\n'
printf '| %s | %s | %s | %s | %.2f | %.2f | %.2f |\n' "$n" "$depth" "$shards" "$(stat -c %s "$tmp/m.txt")" \
    "$(cat "$tmp/exp")" "$(cat "$tmp/aud")" "$(cat "$tmp/aud0")"
