#!/usr/bin/env bash
# scripts/spm_hitpath.sh - instructions per call of the scratchpad heap's
# p2s, p2s_ro, s2p, pin and unpin when they hit (docs/spm.md, "The hit
# path"), exact (valgrind --tool=callgrind).  Builds scripts/spm_hitpath.c
# against the release preset's library and runs it with N and 2N rounds,
# counting only inside the function (--toggle-collect: its instructions and
# its callees', not the caller's call), so one-time costs cancel:
# per call = (Ir(2N) - Ir(N)) / N.  Writes bench/results/spm_hitpath.md (or
# to DIR given as $1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${1:-$ROOT/bench/results}
N=${N:-10000}
command -v valgrind >/dev/null || { echo "spm_hitpath: valgrind not installed (scripts/setup.sh)" >&2; exit 2; }
cd "$ROOT"
cmake --preset release >/dev/null
cmake --build --preset release -j 2 --target dmm_heap >/dev/null
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CC=${CC:-cc}
FLAGS="-O2"
"$CC" $FLAGS -std=c11 -I include scripts/spm_hitpath.c build/release/lib/libdmm_heap.a -lpthread -o "$TMP/hitpath"
"$TMP/hitpath" "$N" >/dev/null
ir() { # ir FUNCTION ROUNDS -> instructions inside FUNCTION
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="$1" "$TMP/hitpath" "$2" \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
mkdir -p "$OUT"
{
    echo "# Scratchpad heap: instructions per hit"
    echo
    python3 scripts/provenance.py --md --command "scripts/spm_hitpath.sh" --compiler "$("$CC" --version | head -1)" \
        --flags="$FLAGS (the harness); the library as the release preset builds it ($(sed -n 's/^CMAKE_C_FLAGS_RELEASE:[^=]*=//p' build/release/CMakeCache.txt))"
    echo
    echo "scripts/spm_hitpath.c (one resident 64-byte object; each round one p2s, p2s_ro, s2p, pin and unpin inside it, all hits; default config, harden=checked), built with flags \`$FLAGS\` against build/release/lib/libdmm_heap.a; $(valgrind --version). Per call = (Ir(2N) - Ir(N)) / N with N = $N, counted inside the function (callgrind --toggle-collect), the caller's call instruction not included."
    echo
    echo "| function | instructions per hit |"
    echo "|---|---:|"
    for f in dmm_spm_p2s dmm_spm_p2s_ro dmm_spm_s2p dmm_spm_pin dmm_spm_unpin; do
        a=$(ir "$f" "$N"); b=$(ir "$f" $((2 * N)))
        echo "| $f | $(python3 -c "print(f'{($b - $a) / $N:.2f}')") |"
    done
} > "$OUT/spm_hitpath.md"
cat "$OUT/spm_hitpath.md"
