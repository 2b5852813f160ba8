#!/usr/bin/env bash
# scripts/spm_bench.sh - the scratchpad heap's experiments (seed 000, section
# 8; docs/spm.md): builds the managed programs (bench/spm) in the release
# preset and runs scripts/spm_bench.py, which writes
# bench/results/spm_{fig8,fig9,table2,fig10,table3,fig11,swc,rewrite}.{json,md}.
#
#   scripts/spm_bench.sh                 every experiment (a few minutes)
#   scripts/spm_bench.sh --quick         few points, one repetition (a smoke run)
#   scripts/spm_bench.sh --only table2   some experiments (comma-separated)
#
# Other options go to spm_bench.py (--reps N, --out DIR).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${DMM_JOBS:-2}
cmake --preset release >/dev/null
targets=()
for p in rbtree dijkstra fft fft_inv stringsearch dfs mst; do
    for b in raw spm swc; do targets+=("spm_${p}_${b}"); done
done
# the unmanaged programs as dmm-spmcc rewrites them (experiment "rewrite")
for p in rbtree dijkstra fft fft_inv stringsearch dfs mst; do targets+=("spmcc_seed_${p}_spm"); done
cmake --build build/release -j"$JOBS" --target "${targets[@]}" >/dev/null
args=("$@")
for a in "$@"; do [ "$a" = --quick ] && args+=(--reps 1); done
exec python3 scripts/spm_bench.py --bindir build/release/bench/spm --spmcc-dir build/release/tools/spmcc --commit "$(git rev-parse --short HEAD)" "${args[@]}"
