#!/usr/bin/env bash
# scripts/pool_callgrind.sh - instructions per pool operation, exact
# (valgrind --tool=callgrind), for the dmm pool (run-time configured library
# with the lean and the checked config, and the library frozen to
# configs/frozen/pool/lean.h and pool/checked.h), the RT-Thread-style
# baseline (bench/pool/rtpool.c), a dmm heap (tlsf preset) and malloc.
# Writes bench/results/pool_callgrind.{json,md} (or to DIR given as $1).
#
# bench/pool/pool_bench.c --cg OP WHO N runs one operation N times (alloc:
# N blocks taken, then all given back; init: N inits of a 64 KiB buffer).
# Callgrind counts only inside the measured function (--toggle-collect:
# its own instructions and its callees', not the call and the argument
# set-up), and the run is made with N and 2N so one-time costs (glibc's
# first malloc, the buffers) cancel: per op = (Ir(2N) - Ir(N)) / N.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${1:-$ROOT/bench/results}
N=${N:-20000}      # alloc / free
NI=${NI:-20}       # init
command -v valgrind >/dev/null || { echo "pool_callgrind: valgrind not installed (scripts/setup.sh)" >&2; exit 2; }
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release -j 2 --target pool_bench_all >/dev/null
BIN="$ROOT/build/release/bench/pool"
[ -x "$BIN/pool_bench" ] || { echo "pool_callgrind: $BIN/pool_bench not built (src/pool missing?)" >&2; exit 2; }
vec=$("$BIN/pool_bench" --no-ops --no-space --no-memset | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["vec"]["impl"])')
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no -- . ':!bench/results' 2>/dev/null | head -c1 | wc -c)

ir() { # ir BINARY FUNCTION OP WHO COUNT -> instructions inside FUNCTION
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="$2" "$1" --cg "$3" "$4" "$5" \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
# label binary who function-prefix
ROWS=(
  "dmm-pool frozen lean|pool_bench_lean|pool-lean|pool"
  "dmm-pool frozen checked|pool_bench_checked|pool-checked|pool"
  "dmm-pool runtime lean|pool_bench|pool-lean|pool"
  "dmm-pool runtime checked|pool_bench|pool-checked|pool"
  "rtpool|pool_bench|rtpool|rtpool"
  "dmm-heap tlsf (runtime)|pool_bench|heap|heap"
  "malloc (glibc)|pool_bench|malloc|malloc"
)
fn() { # fn KIND OP -> function name
    case "$1:$2" in
      pool:init) echo dmm_pool_init;; pool:alloc) echo dmm_pool_alloc;; pool:free) echo dmm_pool_free;;
      rtpool:*) echo "rtpool_$2";;
      heap:init) echo dmm_heap_init;; heap:alloc) echo dmm_heap_malloc;; heap:free) echo dmm_heap_free;;
      malloc:alloc) echo malloc;; malloc:free) echo free;; *) echo "";;
    esac
}
PROV=(--command "scripts/pool_callgrind.sh${1:+ $1}" --cmake-build build/release --impl "dmm_vec $vec (plays no part in these operations)")
json="{\"schema\":\"dmm-pool-callgrind/1\",\"provenance\":$(python3 scripts/provenance.py --json "${PROV[@]}"),\"command\":\"scripts/pool_callgrind.sh\",\"commit\":\"$commit\",\"dirty\":$([ "$dirty" = 0 ] && echo false || echo true),"
json+="\"program\":\"bench/pool/pool_bench.c --cg\",\"valgrind\":\"$(valgrind --version)\",\"vec\":\"$vec\","
json+="\"block_size\":64,\"align\":32,\"init_buffer\":65536,\"n\":$N,\"n_init\":$NI,\"results\":["
md="# Instructions per pool operation (callgrind)\n\nMade by \`scripts/pool_callgrind.sh\` (commit $commit) on \`bench/pool/pool_bench.c --cg\`:"
md+=" 64 B blocks aligned to 32 B; alloc = N blocks taken from a pool of N, free = the same N given back in"
md+=" allocation order, init = one pool on a 64 KiB buffer (heap: one heap on it)."
md+=" Counted with \`--toggle-collect=<function>\`: the instructions executed inside the function and its callees,"
md+=" not the call itself; (Ir(2N) - Ir(N)) / N with N = $N (init: $NI), so one-time costs cancel."
md+=" Vector implementation in the library: $vec (it plays no part in these operations)."
md+=" Exact counts: scripts/check_results.py compares them (tolerance 0.5 per operation).\n\n"
md+="$(python3 scripts/provenance.py --md "${PROV[@]}" | sed 's/%/%%/g')\n\n"
md+="The issue's goal: at most 10 instructions per alloc and per free in a frozen lean build.\n\n"
md+="| subject | init | alloc | free |\n|---|---:|---:|---:|\n"
sep=""
for row in "${ROWS[@]}"; do
    IFS='|' read -r label bin who kind <<<"$row"
    line="| $label |"
    json+="$sep{\"subject\":\"$label\",\"binary\":\"$bin\",\"who\":\"$who\""
    for op in init alloc free; do
        f=$(fn "$kind" "$op")
        if [ -z "$f" ]; then line+=" - |"; json+=",\"$op\":null"; continue; fi
        n=$N; [ "$op" = init ] && n=$NI
        i1=$(ir "$BIN/$bin" "$f" "$op" "$who" "$n"); i2=$(ir "$BIN/$bin" "$f" "$op" "$who" $((2 * n)))
        per=$(python3 -c "print(f'{($i2 - $i1) / $n:.1f}')")
        json+=",\"$op\":{\"function\":\"$f\",\"ir_n\":$i1,\"ir_2n\":$i2,\"per_op\":$per}"
        line+=" $per |"
    done
    json+="}"; sep=","
    echo "$line"
    md+="$line\n"
    if [ "$label" = "dmm-pool frozen lean" ]; then lean_line="$line"; fi
done
# the goal, read off the frozen lean row: | label | init | alloc | free |
IFS='|' read -r _ _ _ la lf _ <<<"$lean_line"
goal=$(python3 -c "a,f=float('$la'),float('$lf'); print('alloc %.1f, free %.1f instructions: %s' % (a, f, 'goal met' if a <= 10 and f <= 10 else 'goal NOT met (' + ', '.join(n for n, v in (('alloc', a), ('free', f)) if v > 10) + ' above 10)'))")
md+="\nFrozen lean: $goal.\n"
echo "frozen lean: $goal"
json+="]}"
mkdir -p "$OUT"
printf '%s\n' "$json" | python3 -m json.tool > "$OUT/pool_callgrind.json"
printf '%b' "$md" > "$OUT/pool_callgrind.md"
echo "wrote $OUT/pool_callgrind.json and .md"
