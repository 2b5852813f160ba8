#!/usr/bin/env bash
# bench/malloc/exited_thread.sh - peak RSS and the in-use count left after
# every block was freed, for memory freed after its owner thread exited
# (bench/malloc/exited_thread.c, cases "exited" and "churn"), under glibc,
# libdmm (release build) and the peers installed.  RUNS runs per cell
# (default 3), the median peak RSS reported.  Writes
# bench/results/libdmm_exited_thread.{json,md} (or to DIR given as $1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT=${1:-$ROOT/bench/results}
RUNS=${RUNS:-3}
cmake --preset release >/dev/null
nice -n 10 cmake --build --preset release -j2 --target dmm_malloc_shared >/dev/null
LIBDMM="$ROOT/build/release/lib/libdmm.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CFLAGS="-O2 -pthread"
cc $CFLAGS -o "$work/exited_thread" "$ROOT/bench/malloc/exited_thread.c"
L=/usr/lib/$(uname -m)-linux-gnu
declare -a NAMES=(glibc libdmm jemalloc mimalloc tcmalloc)
declare -A LIB=([glibc]="" [libdmm]=$LIBDMM [jemalloc]=$L/libjemalloc.so.2 [mimalloc]=$L/libmimalloc.so.2
                [tcmalloc]=$L/libtcmalloc_minimal.so.4)
# the provenance record (command, commit, date, compiler and flags, CPU,
# load) is scripts/provenance.py's, written once the runs are done
ccv=$(cc --version | head -1)
load0=$(python3 "$ROOT/scripts/provenance.py" --load)
json="{\"schema\":\"dmm-malloc-exited/1\",\"cores\":$(nproc),\"runs\":$RUNS,\"results\":["
md="# Memory freed after its owner thread exited\n\nMeasured on"
md+=" \`bench/malloc/exited_thread.c\` built with \`cc $CFLAGS\` ($ccv); the record at the end names the command, commit"
md+=" and CPU. libdmm is the release build of \`libdmm.so\`. Median of $RUNS runs of peak RSS (getrusage);"
md+=" *left* is mallinfo2().uordblks after every block was freed minus its value at the start (what the C library"
md+=" itself allocated during the run and kept, for an allocator that counts exactly; meaningless for one without mallinfo2).\n\n"
md+="* **exited**: a thread allocates 120 MB (half 2-5 KB blocks, half 16-1024 B, all written) and exits;"
md+=" main frees it all, then allocates and frees 120 MB of the same mix three times.\n"
md+="* **churn**: 12 waves of 4 producer threads (6 MB each) that exit, then 4 consumer threads free every block.\n\n"
md+="| allocator | case | peak RSS (KiB) | ratio to glibc | left (B) |\n|---|---|---:|---:|---:|\n"
sep=""
declare -A GL
for c in exited churn; do
    for a in "${NAMES[@]}"; do
        lib=${LIB[$a]}
        if [ -n "$lib" ] && [ ! -f "$lib" ]; then echo "skip $a: $lib missing"; continue; fi
        rss=(); left=0
        for r in $(seq "$RUNS"); do
            line=$(LD_PRELOAD=$lib "$work/exited_thread" "$c")
            rss+=("$(echo "$line" | awk '{print $3}')"); left=$(echo "$line" | awk '{print $5}')
        done
        med=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
        [ "$a" = glibc ] && GL[$c]=$med
        ratio=$(awk -v a="$med" -v b="${GL[$c]}" 'BEGIN{printf "%.2f", a/b}')
        echo "$c $a: peak $med KiB (${ratio}x glibc), left $left B"
        json+="$sep{\"case\":\"$c\",\"allocator\":\"$a\",\"lib\":\"$lib\",\"peak_rss_kib\":[$(IFS=,; echo "${rss[*]}")],\"median_kib\":$med,\"ratio_glibc\":$ratio,\"uordblks_left\":$left}"
        sep=","
        md+="| $a | $c | $med | $ratio | $left |\n"
    done
done
json+="]}"
PROV=(--command "bench/malloc/exited_thread.sh" --compiler "$ccv" --flags="$CFLAGS (exited_thread.c; libdmm.so: the release preset)"
      --impl "libdmm.so of build/release; peers from $L" --load-before "$load0")
mkdir -p "$OUT"
python3 - "$OUT/libdmm_exited_thread.json" "$json" "$(python3 "$ROOT/scripts/provenance.py" --json "${PROV[@]}")" <<'PY'
import json, sys
doc = {"provenance": json.loads(sys.argv[3]), **json.loads(sys.argv[2])}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
    f.write("\n")
PY
printf '%b\n%s\n' "$md" "$(python3 "$ROOT/scripts/provenance.py" --md "${PROV[@]}")" > "$OUT/libdmm_exited_thread.md"
echo "wrote $OUT/libdmm_exited_thread.json and .md"
