#!/usr/bin/env bash
# scripts/mh_bench.sh - the multi-heap on real threads (issue 12): builds the
# release preset's mh_threads and writes bench/results/mh_threads.{json,md}.
#   scripts/mh_bench.sh [--threads 1,2,4,8] [--steps N] [--reps R]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release --target mh_threads >/dev/null
out=bench/results/mh_threads
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--threads 1,2,4,8 --steps 300000 --reps 9)
{
    build/release/bench/mh_threads "${args[@]}" --json "$out.json"
    printf '\nMade by `scripts/mh_bench.sh %s` at commit %s.\n' "${args[*]}" "$(git rev-parse --short HEAD)"
} > "$out.md"
cat "$out.md"
