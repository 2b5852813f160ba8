#!/usr/bin/env bash
# scripts/malloc_callgrind.sh - instructions per malloc/free pair, exact
# (valgrind --tool=callgrind), for glibc, jemalloc, mimalloc, tcmalloc and
# libdmm with and without hardening and in secure mode (DMM_SECURE=1), on
# bench/malloc/pairs.c.  Writes
# bench/results/libdmm_callgrind.{json,md} (or to DIR given as $1).
#
# The loop's own instructions are taken off by running it twice, with N
# and 2N pairs: (Ir(2N) - Ir(N)) / N is the cost of one pair (malloc + free
# + the loop's few instructions, the same for every allocator).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT=${1:-$ROOT/bench/results}
N=${N:-100000}
command -v valgrind >/dev/null || { echo "malloc_callgrind: valgrind not installed (scripts/setup.sh)" >&2; exit 2; }
cmake --preset release >/dev/null
cmake --build --preset release --target dmm_malloc_shared >/dev/null
LIBDMM="$ROOT/build/release/lib/libdmm.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/pairs" "$ROOT/bench/malloc/pairs.c"
L=/usr/lib/$(uname -m)-linux-gnu
declare -a NAMES=(glibc jemalloc mimalloc tcmalloc libdmm libdmm-unhardened libdmm-secure)
declare -A LIB=([glibc]="" [jemalloc]=$L/libjemalloc.so.2 [mimalloc]=$L/libmimalloc.so.2
                [tcmalloc]=$L/libtcmalloc_minimal.so.4 [libdmm]=$LIBDMM [libdmm-unhardened]=$LIBDMM
                [libdmm-secure]=$LIBDMM)
ir() { # ir LIB HARDEN COUNT MODE -> instructions of the whole run ($SECURE: DMM_SECURE)
    DMM_SECURE=${SECURE:-0} DMM_HARDEN=$2 LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/pairs" "$3" "$4" \
        2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
PROV=(--command "scripts/malloc_callgrind.sh${1:+ $1}" --cmake-build "$ROOT/build/release"
      --impl "libdmm from build/release; pairs.c built with cc -O2")
json="{\"schema\":\"dmm-malloc-callgrind/1\",\"provenance\":$(python3 "$ROOT/scripts/provenance.py" --json "${PROV[@]}"),\"command\":\"scripts/malloc_callgrind.sh\",\"pairs\":$N,"
commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo "+dirty")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
ccv=$(cc --version | head -1)
json+="\"program\":\"bench/malloc/pairs.c\",\"valgrind\":\"$(valgrind --version)\",\"results\":["
md="# Instructions per malloc/free pair (callgrind)\n\nMade by \`scripts/malloc_callgrind.sh\` (commit $commit; $ccv; pairs.c at -O2,"
md+=" libdmm.so from the release preset; $cpu) on \`bench/malloc/pairs.c\`"
md+=": *pairs*, 1024 slots, each step frees a random one and refills it (random sizes 16..515 B); *batches*, 1000"
md+=" mallocs of random sizes 16..256 B then their 1000 frees. Each figure is (Ir(2N) - Ir(N)) / N with N = $N"
md+=" malloc+free pairs, so start-up and the loop's set-up cancel."
md+=" Each figure still holds the loop's own work per step (a random number, a slot, a store: the same few dozen"
md+=" instructions for every allocator), so differences between rows are the allocators' own."
md+=" Exact counts: scripts/check_results.py compares them (tolerance 2 per pair).\n\n"
md+="$(python3 "$ROOT/scripts/provenance.py" --md "${PROV[@]}" | sed 's/%/%%/g')\n\n"
md+="| allocator | instructions per pair (pairs) | (batches) |\n|---|---:|---:|\n"
sep=""
for a in "${NAMES[@]}"; do
    lib=${LIB[$a]}
    if [ -n "$lib" ] && [ ! -f "$lib" ]; then echo "skip $a: $lib missing"; continue; fi
    h=1; [ "$a" = libdmm-unhardened ] && h=0
    sec=0; [ "$a" = libdmm-secure ] && sec=1
    i1=$(SECURE=$sec ir "$lib" $h "$N" pairs); i2=$(SECURE=$sec ir "$lib" $h $((2 * N)) pairs)
    per=$(( (i2 - i1) / N ))
    b1=$(SECURE=$sec ir "$lib" $h "$N" batch); b2=$(SECURE=$sec ir "$lib" $h $((2 * N)) batch)
    perb=$(( (b2 - b1) / N ))
    echo "$a: $per instructions per pair, $perb in batches"
    json+="$sep{\"allocator\":\"$a\",\"lib\":\"$lib\",\"harden\":$h,\"secure\":$sec,\"ir_n\":$i1,\"ir_2n\":$i2,\"per_pair\":$per,"
    json+="\"batch_ir_n\":$b1,\"batch_ir_2n\":$b2,\"per_pair_batch\":$perb}"
    sep=","
    md+="| $a | $per | $perb |\n"
done
json+="]}"
mkdir -p "$OUT"
printf '%s\n' "$json" > "$OUT/libdmm_callgrind.json"
printf '%b' "$md" > "$OUT/libdmm_callgrind.md"
echo "wrote $OUT/libdmm_callgrind.json and .md"
