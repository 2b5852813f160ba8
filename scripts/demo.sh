#!/usr/bin/env bash
# scripts/demo.sh - a quick comparison of the heap presets on the bundled
# synthetic workloads: install what is needed, build the release
# configuration, write the workloads as traces (gen-workloads) and replay them
# with dmm-replay.
#
#   scripts/demo.sh [--workloads A,B,..] [--presets A,B,..] [--reps N] [--no-system]
#
# Prints, per workload and per allocator (the five presets, plus the system
# allocator as a reference): average / p50 / p99 / maximum cost of malloc and
# free, the footprint ratio (J&W #4: peak footprint / peak live bytes) and the
# ratio to the dlmalloc-like preset.  3 repetitions, no callgrind, no frozen
# builds: about a minute on 2 cores once built.  The full measurement is
# scripts/bench.sh (method: bench/README.md).  Results: build/release/demo/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
T0=$(date +%s)
say() { printf '[demo %3ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

ARGS=(--reps 3)
while [ $# -gt 0 ]; do
    case "$1" in
        --workloads|--presets|--reps)
            [ $# -ge 2 ] || { echo "demo: $1 needs a value" >&2; exit 2; }
            ARGS+=("$1" "$2"); shift 2 ;;
        --no-system) ARGS+=("$1"); shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

if [ -x scripts/setup.sh ]; then
    say "scripts/setup.sh (installs missing packages; a no-op when all are present)"
    scripts/setup.sh
fi

OUT="$ROOT/build/release/demo"
say "scripts/bench.sh ${ARGS[*]} --no-callgrind --out build/release/demo"
scripts/bench.sh "${ARGS[@]}" --no-callgrind --out "$OUT"
python3 bench/report.py table --timing "$OUT/workloads.json"
say "done: build/release/demo/workloads.md (full results with callgrind: scripts/bench.sh; method: bench/README.md)"
