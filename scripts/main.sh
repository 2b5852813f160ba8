#!/usr/bin/env bash
# scripts/main.sh - the README's main job: from the bundled traces to a ranked
# answer and a report.
#
#   scripts/main.sh            reduced design-space grid (a few minutes on 2 cores)
#   scripts/main.sh --full     the full grid (every valid policy combination)
#   scripts/main.sh --fresh    ignore the cache of deterministic figures
#
# Steps
#   1. scripts/setup.sh: the main job's apt packages (compilers, cmake,
#      valgrind, jemalloc, mimalloc, tcmalloc, tbbmalloc, python3-venv, GNU
#      time; not the test-only ones: scripts/setup.sh --tests) and .venv with
#      the front end; nothing when present
#   2. the front end in .venv (checked; pip install -e ./python if missing)
#   3. release build of the native tools, the recorder and libdmm.so (the
#      drop-in malloc that `dmmkit advise`'s end-to-end check runs)
#   4. dmmkit explore on the seed-001 kernel traces (the P2012-shaped
#      workloads: integral, gaussian, fast, matmul and their randomised-free
#      variants), objective speed; with --pools every heap is also tried
#      behind size-class pools sized from each trace (pool:auto;heap=X), so
#      the ranking shows whether pools pay off on these workloads
#   5. dmmkit explore on the seed-000 program traces (rbtree, dijkstra, fft,
#      fft_inv, stringsearch, dfs, mst), objective balanced
#   6. dmmkit compare on every bundled trace (also larson and fast with 4
#      threads: synthetic and multi-threaded stress, compared but not used to
#      rank designs): dmm presets, the best explored configurations, glibc,
#      jemalloc, mimalloc, tcmalloc, tbbmalloc
#   7. dmmkit advise --from out/compare.json out/explore-*.json: the answer,
#      one sentence per goal (speed, memory, worst case) against glibc
#   8. dmmkit report -> out/report/index.html (its summary card: the answer)
# Results: out/explore-kernels.json, out/explore-programs.json,
# out/compare.json, out/report/, out/advise.json.  The output of steps 1-3
# (apt, pip, cmake) goes to out/setup.log, shown only when a step fails; each
# table is printed once, and the terms they use are explained at the start.
# Deterministic figures are cached in .dmmkit-cache/, so a second run only
# re-measures the timings.
# Environment: DMM_JOBS (parallel jobs, default: CPUs), PYTHON (default python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
T0=$(date +%s)
say() { printf '\n[main %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

GRID=default
CACHE=()
while [ $# -gt 0 ]; do
    case "$1" in
        --full) GRID=full; shift ;;
        --fresh) CACHE=(--no-cache); shift ;;
        -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "main: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
JOBS=${DMM_JOBS:-$(nproc 2>/dev/null || echo 2)}
PY=${PYTHON:-python3}

mkdir -p out
LOG=out/setup.log
: > "$LOG"
# quiet: a setup step's output goes to the log, shown (its end) only on failure
quiet() {
    if ! "$@" >>"$LOG" 2>&1; then
        echo "main: '$*' failed; the end of $LOG:" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
}

cat <<'TERMS'
Terms used below (explained once):
  instr/op      instructions per allocator call (callgrind: exact, the same on every run)
  cycles/op     TSC cycles per call, measured; "warm" = the second pass over a trace (caches and the heap
                already grown), "cold" = the first pass
  x ref         ratio to the reference config (explore) or to glibc (compare); below 1 is better
  frag #4       fragmentation #4: peak footprint / peak live bytes (1.00 = no overhead); only where exact
  front D/F/T   on the Pareto front of instr/op vs memory (D), frozen instr/op vs memory (F), cycles vs memory (T)
  ≈             a memory figure that is not exact (e.g. a system allocator's RSS growth)
  score         the balanced ranking's key: geometric mean of speed and memory, each relative to the best (1.00)
  95% CI, p     paired over repetitions (bootstrap interval, Wilcoxon test); "=" / a shared group: not told apart
TERMS
echo "setup output (steps 1-3) goes to $LOG"

say "1/8 setup: scripts/setup.sh"
quiet scripts/setup.sh

say "2/8 Python: the front end in .venv"
if [ ! -x .venv/bin/dmmkit ] || ! .venv/bin/python -c 'import dmmkit' 2>/dev/null; then
    [ -x .venv/bin/python ] || quiet "$PY" -m venv .venv
    quiet .venv/bin/python -m pip install -q --disable-pip-version-check -e ./python
fi
DMMKIT=("$ROOT/.venv/bin/dmmkit")

say "3/8 native build: cmake --preset release; tools, recorder and libdmm.so"
quiet cmake --preset release
quiet cmake --build --preset release -j "$JOBS" --target dmm-replay dmm-analyse dmm-trace dmmrec dmm_malloc_shared

T=bench/traces
KERNELS=("$T/integral.trace" "$T/gaussian.trace" "$T/fast.trace" "$T/matmul.trace" "$T/fast-rf.trace"
         "$T/matmul-rf.trace")
PROGRAMS=("$T/rbtree.trace" "$T/dijkstra.trace" "$T/fft.trace" "$T/fft_inv.trace" "$T/stringsearch.trace"
          "$T/dfs.trace" "$T/mst.trace")
STRESS=("$T/larson.trace" "$T/fast-t4.trace")
for f in "${KERNELS[@]}" "${PROGRAMS[@]}" "${STRESS[@]}"; do
    [ -f "$f" ] || { echo "main: bundled trace $f is missing (scripts/make_traces.sh makes them)" >&2; exit 1; }
done

say "4/8 explore ($GRID grid, each heap also behind pools): P2012-shaped kernel traces, objective speed"
"${DMMKIT[@]}" explore "${KERNELS[@]}" --grid "$GRID" --pools --objective speed -j "$JOBS" "${CACHE[@]}" --max-reps 12 \
    --results out/explore-kernels.json

say "5/8 explore ($GRID grid): seed-000 program traces, objective balanced"
"${DMMKIT[@]}" explore "${PROGRAMS[@]}" --grid "$GRID" --objective balanced -j "$JOBS" "${CACHE[@]}" --max-reps 12 \
    --results out/explore-programs.json

# the best explored configurations join the comparison (once each, and not
# when they are presets that are in it already)
EXTRA=()
while IFS= read -r a; do
    [ -n "$a" ] && EXTRA+=("$a")
done < <(.venv/bin/python - <<'PYEOF'
import json
best = {}
for path, name in (("out/explore-kernels.json", "kernels"), ("out/explore-programs.json", "programs")):
    d = json.load(open(path))
    b = {c["id"]: c for c in d["configs"]}.get(d.get("best"))
    if b and b["id"] not in ("p2012", "dlmalloc", "tlsf"):
        best.setdefault(b["config"], []).append(name)
for config, names in best.items():
    print(f"--dmm=best-{'+'.join(names)}={config}")
PYEOF
)

say "6/8 compare on every bundled trace (interleaved; adaptive repetitions: 9 to 15)"
"${DMMKIT[@]}" compare "${KERNELS[@]}" "${PROGRAMS[@]}" "${STRESS[@]}" \
    -a dmm:p2012,dmm:dlmalloc,dmm:tlsf,glibc,jemalloc,mimalloc,tcmalloc,tbbmalloc \
    "${EXTRA[@]}" --max-reps 15 --results out/compare.json

say "7/8 the answer: dmmkit advise --from out/compare.json out/explore-*.json"
"${DMMKIT[@]}" advise --from out/compare.json out/explore-programs.json out/explore-kernels.json -o out

say "8/8 report (summary card = the answer): out/report/index.html"
"${DMMKIT[@]}" report out/advise.json out/explore-kernels.json out/explore-programs.json -o out/report
say "done in $(( $(date +%s) - T0 )) s: the answer above (out/advise.json), the report out/report/index.html"
