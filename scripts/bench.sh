#!/usr/bin/env bash
# scripts/bench.sh - the native heap benchmark, end to end.
#
#   scripts/bench.sh [--reps N] [--quick] [--build DIR] [--out DIR]
#                    [--no-timing] [--no-callgrind]
#
# --reps: timing repetitions (default 11: the timing run takes ~20 s, and
# more repetitions make the medians steadier on a shared machine)
#
# 1. builds the release configuration (heap_bench and heap_bench_frozen_*),
# 2. runs the timing benchmark: every bundled workload x every preset (+ glibc
#    as a reference), interleaved, N repetitions  -> heap_bench.json / .txt
# 3. counts instructions per operation with callgrind (exact, repeatable):
#    a. each preset in the benchmark config (lock=none, stats=counters,
#       harden=off) and glibc, runtime build;
#    b. runtime vs frozen: each preset's configs/frozen/<preset>.h build
#       against the runtime library running the very same config;
#    c. a cross-check by subtraction (--ops-only minus --dry, whole program)
#    -> heap_callgrind.json
# 4. writes heap.md: tables, the exact commands, the machine.
# Results go to bench/results/ (or --out).  Takes ~5-10 minutes on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=""
OUT="$ROOT/bench/results"
REPS=11
QUICK=0
DO_TIMING=1
DO_CALLGRIND=1

while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --quick) QUICK=1; REPS=3; shift ;;
        --build) BUILD="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --no-timing) DO_TIMING=0; shift ;;
        --no-callgrind) DO_CALLGRIND=0; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "bench.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

T0=$(date +%s)
step() { printf '[bench %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

command -v cmake >/dev/null || { echo "bench.sh: cmake not found (run scripts/setup.sh)" >&2; exit 1; }
PY="$(command -v python3 || true)"
[ -n "$PY" ] || { echo "bench.sh: python3 not found (run scripts/setup.sh)" >&2; exit 1; }

# ---- 1. build ----------------------------------------------------------------
CONFIGURE_CMD=""
if [ -z "$BUILD" ]; then
    BUILD="$ROOT/build/release"
    if [ -f "$ROOT/CMakePresets.json" ] && grep -q '"name": "release"' "$ROOT/CMakePresets.json"; then
        CONFIGURE_CMD="cmake --preset release"
    fi
fi
if [ -z "$CONFIGURE_CMD" ]; then
    GEN=()
    if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
    CONFIGURE_CMD="cmake -S $ROOT -B $BUILD ${GEN[*]} -DCMAKE_BUILD_TYPE=Release"
fi
step "configure: $CONFIGURE_CMD"
(cd "$ROOT" && $CONFIGURE_CMD >/dev/null)
step "build: cmake --build $BUILD --target bench_all"
cmake --build "$BUILD" --target bench_all -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

HB="$(find "$BUILD" -type f -name heap_bench -perm -u+x | head -n 1)"
[ -n "$HB" ] || { echo "bench.sh: heap_bench not found under $BUILD" >&2; exit 1; }
BINDIR="$(dirname "$HB")"
PRESETS=(dlmalloc tlsf halffit firstfit p2012)
mapfile -t WORKLOADS < <("$HB" --list | awk '{print $1}')

COMMIT="$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$COMMIT" != unknown ] && [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT-dirty"
fi
export DMM_GIT_COMMIT="$COMMIT"

mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/dmm-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
MANIFEST="$WORK/manifest.tsv"
: > "$MANIFEST"
COMMANDS="$WORK/commands.txt"
: > "$COMMANDS"
rel() { echo "${1#$ROOT/}"; }

"$HB" --self-test >/dev/null || { echo "bench.sh: workload self-test failed" >&2; exit 1; }

# What produced the results (for heap.md), whichever steps run this time.
HBR="$(rel "$HB")"
{
    echo "# everything: scripts/bench.sh --reps $REPS$( [ "$QUICK" -eq 1 ] && echo " --quick" || true )"
    echo "$CONFIGURE_CMD && cmake --build $(rel "$BUILD") --target bench_all"
    echo "$HBR --reps $REPS$( [ "$QUICK" -eq 1 ] && echo " --quick" || true ) --json $(rel "$OUT")/heap_bench.json"
    echo "# instructions per op, for each target T and workload W (bench config; T=glibc: --preset glibc):"
    echo "valgrind --tool=callgrind --toggle-collect='bench_op_*' --callgrind-out-file=F $HBR --ops-only --workload W --preset T --no-glibc"
    echo "callgrind_annotate --inclusive=yes --threshold=100 F   # Ir of bench_op_{malloc,free,realloc} / op count"
    echo "# runtime vs frozen, for each preset P and workload W, same config (the frozen header's):"
    echo "valgrind --tool=callgrind --toggle-collect='bench_op_*' $(rel "$BINDIR")/heap_bench_frozen_P --ops-only --workload W --preset P"
    echo "valgrind --tool=callgrind --toggle-collect='bench_op_*' $HBR --ops-only --workload W --preset none --no-glibc --config \"\$($(rel "$BINDIR")/heap_bench_frozen_P --print-config | cut -f2)\" --config-name P"
    echo "# cross-check: whole-program Ir of --ops-only minus --dry"
    echo "valgrind --tool=callgrind $HBR --ops-only --preset P --no-glibc ; valgrind --tool=callgrind $HBR --dry --preset P --no-glibc"
} > "$COMMANDS"

# ---- 2. timing -----------------------------------------------------------------
if [ "$DO_TIMING" -eq 1 ]; then
    TARGS=(--reps "$REPS")
    if [ "$QUICK" -eq 1 ]; then TARGS+=(--quick); fi
    TARGS+=(--json "$OUT/heap_bench.json")
    CMD="$(rel "$HB") ${TARGS[*]}"
    CMD="${CMD//$ROOT\//}"
    step "timing benchmark: $CMD"
    "$HB" "${TARGS[@]}" > "$OUT/heap_bench.txt"
    step "timing done: $(rel "$OUT")/heap_bench.txt"
fi

# ---- 3. callgrind ----------------------------------------------------------------
if [ "$DO_CALLGRIND" -eq 1 ]; then
    command -v valgrind >/dev/null || { echo "bench.sh: valgrind not found (run scripts/setup.sh)" >&2; exit 1; }
    CG=(valgrind --tool=callgrind --toggle-collect='bench_op_*')
    n=0
    total=$(( (${#PRESETS[@]} + 1) * ${#WORKLOADS[@]} + ${#PRESETS[@]} * ${#WORKLOADS[@]} * 2 + ${#PRESETS[@]} * 2 ))

    run_cg() { # kind build target workload out binary args...
        local kind="$1" build="$2" target="$3" wl="$4" out="$5"; shift 5
        n=$((n + 1))
        printf '[bench %4ds] callgrind %3d/%d  %-9s %-8s %-9s %s\n' "$(( $(date +%s) - T0 ))" "$n" "$total" \
            "$kind" "$build" "$target" "$wl"
        "$@" > "$out.ops" 2> "$out.log" || { echo "bench.sh: failed: $*" >&2; tail -5 "$out.log" >&2; exit 1; }
        printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$build" "$target" "$wl" "$out" >> "$MANIFEST"
    }

    # a. presets in the benchmark config (+ glibc), runtime build
    for t in "${PRESETS[@]}" glibc; do
        for w in "${WORKLOADS[@]}"; do
            f="$WORK/bench.$t.$w"
            if [ "$t" = glibc ]; then sel=(--preset glibc); else sel=(--preset "$t" --no-glibc); fi
            run_cg bench runtime "$t" "$w" "$f" "${CG[@]}" --callgrind-out-file="$f.cg" \
                "$HB" --ops-only --workload "$w" "${sel[@]}"
        done
    done
    # b. runtime vs frozen, same config (the frozen header's)
    for p in "${PRESETS[@]}"; do
        FB="$BINDIR/heap_bench_frozen_$p"
        [ -x "$FB" ] || { echo "bench.sh: $FB missing" >&2; exit 1; }
        FCFG="$("$FB" --print-config | awk -F'\t' -v p="$p" '$1 == p {print $2}')"
        [ -n "$FCFG" ] || { echo "bench.sh: cannot read the frozen config of $p" >&2; exit 1; }
        printf '%s\t%s\n' "$p" "$FCFG" >> "$WORK/frozen_configs.tsv"
        for w in "${WORKLOADS[@]}"; do
            f="$WORK/frozen.$p.$w"
            run_cg frozen frozen "$p" "$w" "$f" "${CG[@]}" --callgrind-out-file="$f.cg" \
                "$FB" --ops-only --workload "$w" --preset "$p"
            f="$WORK/runtime.$p.$w"
            run_cg frozen runtime "$p" "$w" "$f" "${CG[@]}" --callgrind-out-file="$f.cg" \
                "$HB" --ops-only --workload "$w" --preset none --no-glibc --config "$FCFG" --config-name "$p"
        done
    done
    # c. cross-check by subtraction: whole-program Ir of --ops-only minus --dry
    for p in "${PRESETS[@]}"; do
        f="$WORK/sub.$p.ops"
        run_cg subtract ops "$p" all "$f" valgrind --tool=callgrind --callgrind-out-file="$f.cg" \
            "$HB" --ops-only --preset "$p" --no-glibc
        f="$WORK/sub.$p.dry"
        run_cg subtract dry "$p" all "$f" valgrind --tool=callgrind --callgrind-out-file="$f.cg" \
            "$HB" --dry --preset "$p" --no-glibc
    done
    step "parsing callgrind output"
    "$PY" "$ROOT/bench/report.py" callgrind --manifest "$MANIFEST" \
        --frozen-configs "$WORK/frozen_configs.tsv" --out "$OUT/heap_callgrind.json" \
        --commit "$COMMIT" --valgrind "$(valgrind --version)"
fi

# ---- 4. report -------------------------------------------------------------------
step "writing $(rel "$OUT")/heap.md"
SCRIPT_LINE="scripts/bench.sh --reps $REPS"
if [ "$QUICK" -eq 1 ]; then SCRIPT_LINE="$SCRIPT_LINE --quick"; fi
MD_ARGS=(--timing "$OUT/heap_bench.json" --callgrind "$OUT/heap_callgrind.json" --commands "$COMMANDS"
         --out "$OUT/heap.md" --script "$SCRIPT_LINE")
if [ -f "$OUT/cortex_m4_size.json" ]; then MD_ARGS+=(--size "$OUT/cortex_m4_size.json"); fi
"$PY" "$ROOT/bench/report.py" markdown "${MD_ARGS[@]}"
step "done: $(rel "$OUT")/heap_bench.json heap_callgrind.json heap.md"
"$PY" "$ROOT/bench/report.py" headline --timing "$OUT/heap_bench.json" --callgrind "$OUT/heap_callgrind.json"
