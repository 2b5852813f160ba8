#!/usr/bin/env bash
# scripts/demo.sh - the README's main job (for now): install what is needed,
# build the release configuration, and compare the heap presets on the
# bundled synthetic workloads.
#
#   scripts/demo.sh [heap_bench options...]     e.g. --workload fragment
#
# Prints, per workload and per preset (plus glibc malloc as a reference):
# average / p99 / maximum cost of malloc and free, the footprint ratio
# (peak footprint / peak live bytes) and the ratios to the dlmalloc-like
# preset; then a summary matrix.  Takes well under 2 minutes on 2 cores.
# The full measurement (more repetitions, callgrind instruction counts,
# frozen vs runtime configurations) is scripts/bench.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
T0=$(date +%s)
say() { printf '[demo %3ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

if [ -x scripts/setup.sh ]; then
    say "scripts/setup.sh (installs missing packages; a no-op when all are present)"
    scripts/setup.sh
fi

BUILD="$ROOT/build/release"
if [ -f CMakePresets.json ] && grep -q '"name": "release"' CMakePresets.json; then
    say "configure: cmake --preset release"
    cmake --preset release >/dev/null
else
    GEN=()
    if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
    say "configure: cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release"
    cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
say "build: cmake --build build/release --target heap_bench"
cmake --build "$BUILD" --target heap_bench -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

HB="$(find "$BUILD" -type f -name heap_bench -perm -u+x | head -n 1)"
[ -n "$HB" ] || { echo "demo: heap_bench was not built" >&2; exit 1; }

say "run: ${HB#$ROOT/} --quick --json build/release/demo.json $*"
"$HB" --quick --json "$BUILD/demo.json" "$@"
say "done (full results with callgrind: scripts/bench.sh; method: bench/README.md)"
