#!/usr/bin/env bash
# scripts/pool_bench.sh - the pool benchmarks of issue 11 (bench/pool):
# builds the release preset's pool_bench binaries (run-time configured
# library, library frozen lean, frozen checked), runs them ROUNDS times in
# turn (each run interleaves its own subjects over REPS repetitions), and
# merges every sample into bench/results/pool_bench.{json,md} (or DIR given
# as $1) with bench/pool/pool_report.py (medians over all samples).
# Takes well under a minute; the instruction counts are
# scripts/pool_callgrind.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${1:-$ROOT/bench/results}
ROUNDS=${ROUNDS:-5}
REPS=${REPS:-31}
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release -j 2 --target pool_bench_all >/dev/null
BIN="$ROOT/build/release/bench/pool"
[ -x "$BIN/pool_bench" ] || { echo "pool_bench: $BIN/pool_bench not built (src/pool missing?)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
LOAD0=$(python3 scripts/provenance.py --load)
runs=()
for r in $(seq 1 "$ROUNDS"); do
    for b in pool_bench pool_bench_lean pool_bench_checked; do
        "$BIN/$b" --reps "$REPS" -o "$work/$b.$r.json" 2>/dev/null
        runs+=("$work/$b.$r.json")
    done
done
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null)" ] || commit="$commit+dirty"
mkdir -p "$OUT"
# the CPU feature set a dmm_vec routine runs on (its rows are that set's)
vec_needs() {
    case $1 in
        avx512) echo "AVX-512 F+BW" ;; avx2) echo "AVX2" ;; sse2) echo "SSE2" ;; neon) echo "NEON" ;;
        portable) echo "no vector ISA (portable C)" ;; *) echo "an unknown feature set" ;;
    esac
}
vec=$("$BIN/pool_bench" --no-ops --no-space --no-memset | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["vec"]["impl"])')
python3 scripts/provenance.py --json --command "ROUNDS=$ROUNDS REPS=$REPS scripts/pool_bench.sh${1:+ $1}" \
    --cmake-build build/release --impl "dmm_vec $vec (dmm_pool_memset), running on $(vec_needs "$vec")" \
    --load-before "$LOAD0" > "$work/provenance.json"
python3 "$ROOT/bench/pool/pool_report.py" --commit "$commit" --provenance "$work/provenance.json" \
    --command "scripts/pool_bench.sh (ROUNDS=$ROUNDS REPS=$REPS)" \
    --json "$OUT/pool_bench.json" --md "$OUT/pool_bench.md" "${runs[@]}"
echo "wrote $OUT/pool_bench.json and .md"
