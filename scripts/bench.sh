#!/usr/bin/env bash
# scripts/bench.sh - the workload benchmark, end to end, through the one
# replay engine (dmm-replay).
#
#   scripts/bench.sh [--reps N] [--quick] [--build DIR] [--out DIR]
#                    [--workloads A,B,..] [--presets A,B,..] [--no-system]
#                    [--no-timing] [--no-callgrind] [--no-frozen] [--no-build]
#
# 1. builds the release configuration: dmm-replay and gen-workloads;
# 2. gen-workloads writes every bundled synthetic workload as a dmm trace
#    (seeded, deterministic; the trace hashes are in the results);
# 3. timing: N repetitions (default 11; --quick: 3); in each, every workload is
#    replayed by dmm-replay (one process per run, --reps 1: a cold and a warm
#    pass) on every preset in the benchmark configuration (lock=none,
#    stats=counters, harden=off, poison=off, one 64 MiB arena) and on the
#    system allocator, the allocators' order rotating from one repetition to
#    the next  -> workloads.json (medians), workloads.txt (console tables);
# 4. instructions per operation (callgrind, exact): per workload, one valgrind
#    run of dmm-replay --count-sweep over the presets; with frozen builds (the
#    default), per preset a dmm-replay built frozen to configs/frozen/<P>.h
#    (build/bench-frozen-<P>) against the runtime dmm-replay running the same
#    configuration  -> workloads_callgrind.json;
# 5. workloads.md: tables, the exact commands, the machine.
# Results go to bench/results/ (or --out).  About 5 minutes of measurement on
# 2 cores, plus ~1-2 minutes per frozen build the first time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=""
OUT="$ROOT/bench/results"
REPS=11
DO_TIMING=1
DO_CALLGRIND=1
DO_FROZEN=1
DO_SYSTEM=1
DO_BUILD=1
WL_SEL="all"
PRESETS=(dlmalloc tlsf halffit firstfit p2012)
ARENA_BYTES=67108864   # 64 MiB: every preset runs every workload without a failed allocation
OVR="lock=none,stats=counters,harden=off,poison=off"
SCRIPT_LINE="scripts/bench.sh"

die() { echo "bench.sh: $1" >&2; exit "${2:-1}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) [ $# -ge 2 ] || die "--reps needs a value" 2
                [[ "$2" =~ ^[1-9][0-9]{0,2}$ ]] || die "--reps: expected 1..999, got '$2'" 2
                REPS="$2"; SCRIPT_LINE+=" --reps $2"; shift 2 ;;
        --quick) REPS=3; SCRIPT_LINE+=" --quick"; shift ;;
        --build) [ $# -ge 2 ] || die "--build needs a value" 2; BUILD="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a value" 2; OUT="$2"; shift 2 ;;
        --workloads) [ $# -ge 2 ] || die "--workloads needs a value" 2; WL_SEL="$2"; SCRIPT_LINE+=" --workloads $2"; shift 2 ;;
        --presets) [ $# -ge 2 ] || die "--presets needs a value" 2
                   IFS=, read -r -a PRESETS <<< "$2"; SCRIPT_LINE+=" --presets $2"; shift 2 ;;
        --no-system) DO_SYSTEM=0; SCRIPT_LINE+=" --no-system"; shift ;;
        --no-timing) DO_TIMING=0; SCRIPT_LINE+=" --no-timing"; shift ;;
        --no-callgrind) DO_CALLGRIND=0; SCRIPT_LINE+=" --no-callgrind"; shift ;;
        --no-frozen) DO_FROZEN=0; SCRIPT_LINE+=" --no-frozen"; shift ;;
        --no-build) DO_BUILD=0; shift ;;   # use the binaries already built in the build directory
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" 2 ;;
    esac
done
for p in "${PRESETS[@]}"; do
    case "$p" in dlmalloc|tlsf|halffit|firstfit|p2012) ;; *) die "--presets: unknown preset '$p'" 2 ;; esac
done
[ "${#PRESETS[@]}" -gt 0 ] || die "--presets: no preset given" 2

T0=$(date +%s)
step() { printf '[bench %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
rel() { echo "${1#"$ROOT"/}"; }

command -v cmake >/dev/null || die "cmake not found (run scripts/setup.sh)"
PY="$(command -v python3 || true)"
[ -n "$PY" ] || die "python3 not found (run scripts/setup.sh)"
JOBS="${DMM_JOBS:-$(nproc 2>/dev/null || echo 2)}"
GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi

# ---- 1. build ----------------------------------------------------------------
if [ -z "$BUILD" ]; then
    BUILD="$ROOT/build/release"
    CONFIGURE=(cmake --preset release)
else
    CONFIGURE=(cmake -S "$ROOT" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release)
fi
if [ "$DO_BUILD" -eq 1 ]; then
    step "configure: ${CONFIGURE[*]}"
    (cd "$ROOT" && "${CONFIGURE[@]}" >/dev/null)
    step "build: cmake --build $(rel "$BUILD") --target dmm-replay gen-workloads"
    cmake --build "$BUILD" --target dmm-replay gen-workloads -j "$JOBS" >/dev/null
fi

REPLAY="$(find "$BUILD" -type f -name dmm-replay -perm -u+x | head -n 1)"
GEN="$(find "$BUILD" -type f -name gen-workloads -perm -u+x | head -n 1)"
[ -n "$REPLAY" ] || die "dmm-replay not found under $BUILD"
[ -n "$GEN" ] || die "gen-workloads not found under $BUILD"

COMMIT="$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$COMMIT" != unknown ] && [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    COMMIT="$COMMIT-dirty"
fi
export DMM_COMMIT="$COMMIT"   # dmm-replay's build.commit

mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/dmm-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# ---- 2. traces -------------------------------------------------------------------
"$GEN" --self-test >/dev/null || die "gen-workloads --self-test failed (run it for the reason)"
"$GEN" --list > "$WORK/workloads.list"
if [ "$WL_SEL" = all ]; then
    mapfile -t WORKLOADS < <(awk '{print $1}' "$WORK/workloads.list")
else
    IFS=, read -r -a WORKLOADS <<< "$WL_SEL"
fi
[ "${#WORKLOADS[@]}" -gt 0 ] || die "--workloads: no workload given" 2
"$GEN" -o "$WORK/traces" "${WORKLOADS[@]}" > "$WORK/gen.log" || die "gen-workloads failed" 2
step "traces: $(wc -l < "$WORK/gen.log") workloads written by $(rel "$GEN")"

GR="$(rel "$GEN")"
RR="$(rel "$REPLAY")"
COMMANDS="$WORK/commands.txt"
{
    echo "# everything: $SCRIPT_LINE"
    echo "${CONFIGURE[*]} && cmake --build $(rel "$BUILD") --target dmm-replay gen-workloads"
    echo "$GR -o TRACES    # each workload W as TRACES/W.dmmt (seed 0x5eed2012)"
    echo "# timing, for each repetition r, workload W and target T (allocators rotating):"
    echo "$RR TRACES/W.dmmt --alloc dmm:preset=P,$OVR --arena $ARENA_BYTES --reps 1 --json rR__P__W.json --quiet"
    echo "$RR TRACES/W.dmmt --alloc system --reps 1 --json rR__system__W.json --quiet"
    echo "bench/report.py collect --runs RUNS --list <($GR --list) --out $(rel "$OUT")/workloads.json"
    echo "# instructions per op, one profile per line 'ARENA CONFIG' of SWEEP:"
    echo "valgrind --tool=callgrind --toggle-collect=a_malloc --toggle-collect=a_free --toggle-collect=a_realloc \\"
    echo "    --toggle-collect=a_calloc --toggle-collect=a_aligned --dump-after=rpx_sweep_mark \\"
    echo "    --callgrind-out-file=F $RR TRACES/W.dmmt --count-sweep SWEEP"
    echo "callgrind_annotate --inclusive=yes --threshold=100 F.N   # Ir of a_malloc / a_free / a_realloc"
    echo "# frozen builds: dmm-replay built with -DDMM_FROZEN_CONFIG=configs/frozen/P.h (build/bench-frozen-P),"
    echo "# the same sweep with the header's configuration, against the runtime build running it"
} > "$COMMANDS"

# ---- 3. timing -----------------------------------------------------------------
TNAMES=()
TSPECS=()
for p in "${PRESETS[@]}"; do
    TNAMES+=("$p")
    TSPECS+=("dmm:preset=$p,$OVR")
done
if [ "$DO_SYSTEM" -eq 1 ]; then
    TNAMES+=(system)
    TSPECS+=(system)
fi
NT=${#TNAMES[@]}
if [ "$DO_TIMING" -eq 1 ]; then
    RUNS="$WORK/runs"
    mkdir -p "$RUNS"
    step "timing: $REPS repetition(s) x ${#WORKLOADS[@]} workload(s) x $NT allocator(s), one dmm-replay run each"
    for ((r = 1; r <= REPS; r++)); do
        for w in "${WORKLOADS[@]}"; do
            for ((k = 0; k < NT; k++)); do
                i=$(( (k + r - 1) % NT ))
                args=("$WORK/traces/$w.dmmt" --alloc "${TSPECS[$i]}" --reps 1 --quiet
                      --json "$RUNS/r${r}__${TNAMES[$i]}__$w.json")
                if [ "${TSPECS[$i]}" != system ]; then args+=(--arena "$ARENA_BYTES"); fi
                if ! "$REPLAY" "${args[@]}" > /dev/null 2> "$WORK/replay.err"; then
                    die "dmm-replay failed on $w with ${TSPECS[$i]}: $(tail -n 3 "$WORK/replay.err")"
                fi
            done
        done
        step "timing: repetition $r/$REPS done"
    done
    "$PY" "$ROOT/bench/report.py" collect --runs "$RUNS" --list "$WORK/workloads.list" \
        --out "$OUT/workloads.json" --commit "$COMMIT" --arena "$ARENA_BYTES" --overrides "$OVR"
    "$PY" "$ROOT/bench/report.py" table --timing "$OUT/workloads.json" > "$OUT/workloads.txt"
    step "timing done: $(rel "$OUT")/workloads.json, workloads.txt"
fi

# ---- 4. callgrind ----------------------------------------------------------------
# The frozen header's configuration, from its "config:" comment.
frozen_config() {
    awk '/config:/ { on = 1; sub(/.*config:[ \t]*/, "") }
         on { line = $0; sub(/^[ \t]*\*[ \t]*/, "", line); last = sub(/[ \t]*\*\/.*$/, "", line)
              gsub(/[ \t]/, "", line); printf "%s", line; if (last) exit }' "$1"
}
if [ "$DO_CALLGRIND" -eq 1 ]; then
    command -v valgrind >/dev/null || die "valgrind not found (run scripts/setup.sh)"
    command -v callgrind_annotate >/dev/null || die "callgrind_annotate not found (part of valgrind)"
    CG=(valgrind --tool=callgrind --toggle-collect=a_malloc --toggle-collect=a_free --toggle-collect=a_realloc
        --toggle-collect=a_calloc --toggle-collect=a_aligned --dump-after=rpx_sweep_mark)
    MANIFEST="$WORK/manifest.tsv"
    : > "$MANIFEST"
    : > "$WORK/frozen_configs.tsv"
    SWEEP="$WORK/sweep.runtime"
    : > "$SWEEP"
    LINE_KIND=()    # per sweep line: "bench P" or "frozen P"
    for p in "${PRESETS[@]}"; do
        echo "$ARENA_BYTES preset=$p,$OVR" >> "$SWEEP"
        LINE_KIND+=("bench $p")
    done
    declare -A FROZEN_REPLAY=()
    if [ "$DO_FROZEN" -eq 1 ]; then
        for p in "${PRESETS[@]}"; do
            hdr="$ROOT/configs/frozen/$p.h"
            [ -f "$hdr" ] || die "$(rel "$hdr") missing"
            cfg="$(frozen_config "$hdr")"
            [ -n "$cfg" ] || die "cannot read the configuration of $(rel "$hdr")"
            fdir="$ROOT/build/bench-frozen-$p"
            step "frozen build: $(rel "$fdir") (-DDMM_FROZEN_CONFIG=$(rel "$hdr"))"
            if [ ! -f "$fdir/CMakeCache.txt" ]; then
                cmake -S "$ROOT" -B "$fdir" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DDMM_BUILD_TESTS=OFF \
                    -DDMM_BUILD_BENCH=OFF -DDMM_BUILD_SHARED=OFF -DDMM_FROZEN_CONFIG="$hdr" > "$WORK/frozen-$p.log" 2>&1 \
                    || { tail -n 20 "$WORK/frozen-$p.log" >&2; die "configure of the frozen build $p failed"; }
            fi
            cmake --build "$fdir" --target dmm-replay -j "$JOBS" >> "$WORK/frozen-$p.log" 2>&1 \
                || { tail -n 20 "$WORK/frozen-$p.log" >&2; die "frozen build $p failed"; }
            FROZEN_REPLAY[$p]="$(find "$fdir" -type f -name dmm-replay -perm -u+x | head -n 1)"
            [ -n "${FROZEN_REPLAY[$p]}" ] || die "no dmm-replay in $fdir"
            printf '%s\t%s\n' "$p" "$cfg" >> "$WORK/frozen_configs.tsv"
            echo "$ARENA_BYTES $cfg" >> "$SWEEP"
            LINE_KIND+=("frozen $p")
            echo "$ARENA_BYTES $cfg" > "$WORK/sweep.frozen.$p"
        done
    fi
    # one valgrind run per workload for the runtime build, one per workload
    # and preset for the frozen builds
    sweep() { # binary sweepfile outprefix workload
        local bin="$1" file="$2" out="$3" w="$4" n
        n=$(wc -l < "$file")
        "${CG[@]}" --callgrind-out-file="$out" "$bin" "$WORK/traces/$w.dmmt" --count-sweep "$file" \
            > "$out.status" 2> "$out.log" || { tail -n 5 "$out.log" >&2; die "callgrind run failed on $w"; }
        for ((i = 1; i <= n; i++)); do
            grep -q "^ok $i 0\$" "$out.status" \
                || die "$w, sweep line $i: $(grep "^[a-z]* $i " "$out.status" || echo 'no answer') (expected 'ok $i 0')"
            [ -f "$out.$i" ] || die "callgrind wrote no profile $out.$i"
        done
    }
    mkdir -p "$WORK/cg"
    nw=${#WORKLOADS[@]}
    j=0
    for w in "${WORKLOADS[@]}"; do
        j=$((j + 1))
        step "callgrind $j/$nw: $w (runtime build, $(wc -l < "$SWEEP") configurations)"
        sweep "$REPLAY" "$SWEEP" "$WORK/cg/rt.$w" "$w"
        for ((i = 1; i <= ${#LINE_KIND[@]}; i++)); do
            read -r kind p <<< "${LINE_KIND[$((i - 1))]}"
            printf '%s\truntime\t%s\t%s\t%s\n' "$kind" "$p" "$w" "$WORK/cg/rt.$w.$i" >> "$MANIFEST"
        done
        if [ "$DO_FROZEN" -eq 1 ]; then
            for p in "${PRESETS[@]}"; do
                sweep "${FROZEN_REPLAY[$p]}" "$WORK/sweep.frozen.$p" "$WORK/cg/fz.$p.$w" "$w"
                printf 'frozen\tfrozen\t%s\t%s\t%s\n' "$p" "$w" "$WORK/cg/fz.$p.$w.1" >> "$MANIFEST"
            done
        fi
    done
    step "parsing callgrind output"
    "$PY" "$ROOT/bench/report.py" callgrind --manifest "$MANIFEST" --gen-log "$WORK/gen.log" \
        --frozen-configs "$WORK/frozen_configs.tsv" --out "$OUT/workloads_callgrind.json" \
        --commit "$COMMIT" --valgrind "$(valgrind --version)" --overrides "$OVR"
fi

# ---- 5. report -------------------------------------------------------------------
if [ -f "$OUT/workloads.json" ]; then
    step "writing $(rel "$OUT")/workloads.md"
    MD_ARGS=(--timing "$OUT/workloads.json" --commands "$COMMANDS" --out "$OUT/workloads.md" --script "$SCRIPT_LINE")
    if [ -f "$OUT/workloads_callgrind.json" ]; then MD_ARGS+=(--callgrind "$OUT/workloads_callgrind.json"); fi
    if [ -f "$OUT/embedded_size.json" ]; then MD_ARGS+=(--size "$OUT/embedded_size.json"); fi
    "$PY" "$ROOT/bench/report.py" markdown "${MD_ARGS[@]}"
    H_ARGS=(--timing "$OUT/workloads.json")
    if [ -f "$OUT/workloads_callgrind.json" ]; then H_ARGS+=(--callgrind "$OUT/workloads_callgrind.json"); fi
    "$PY" "$ROOT/bench/report.py" headline "${H_ARGS[@]}"
else
    step "no $(rel "$OUT")/workloads.json (timing not run): no workloads.md"
fi
step "done"
