#!/usr/bin/env bash
# scripts/trace_study.sh - issue 3's end-to-end check, rerunnable by anyone:
# records three real programs from Debian (python3, sqlite3, gcc) with the
# LD_PRELOAD recorder, then replays them and every bundled trace in
# bench/traces/ against dmm presets and the system allocators (glibc,
# jemalloc, mimalloc, tcmalloc when installed), all with --verify, and finds
# the minimum arena of each dmm preset.  Writes
#   bench/results/trace_study.json   every replay's JSON, gathered
#   bench/results/trace_study.md     the tables
#
#   scripts/trace_study.sh [--reps N] [--out DIR] [--no-record]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
REPS=3
OUT=out/trace_study
RECORD=1
while [ $# -gt 0 ]; do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --no-record) RECORD=0; shift ;;
        *) echo "usage: $0 [--reps N] [--out DIR] [--no-record]" >&2; exit 2 ;;
    esac
done

[ -x scripts/setup.sh ] && scripts/setup.sh
echo "== building (release preset)"
cmake --preset release >/dev/null
cmake --build --preset release -j"${DMM_JOBS:-2}" --target dmm-replay dmmrec >/dev/null
REPLAY=build/release/tools/dmm-replay
LIBDIR=/usr/lib/x86_64-linux-gnu
mkdir -p "$OUT/traces" "$OUT/json"
LOAD0=$(python3 scripts/provenance.py --load)

if [ "$RECORD" = 1 ]; then
    echo "== recording three real programs"
    cat > "$OUT/churn.py" <<'PY'
import json, random
random.seed(7)
d = {}
for i in range(20000):
    d[str(i)] = [random.random() for _ in range(i % 17)]
    if i % 3 == 0:
        d.pop(str(i // 2), None)
print(len(json.dumps(d)))
PY
    DMM_REC_LIB=build/release/lib/libdmmrec.so scripts/record.sh -o "$OUT/traces/python3.trace" -- \
        env PYTHONMALLOC=malloc python3 "$OUT/churn.py" >/dev/null
    cat > "$OUT/script.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t(name, v) SELECT printf('name-%d', x), x * 0.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v) FROM t WHERE name LIKE 'name-1%';
DELETE FROM t WHERE id % 3 = 0;
SELECT count(*) FROM t;
SQL
    DMM_REC_LIB=build/release/lib/libdmmrec.so scripts/record.sh -o "$OUT/traces/sqlite3.trace" -- \
        sqlite3 :memory: ".read $OUT/script.sql" >/dev/null
    rm -f "$OUT"/traces/gcc.trace*
    DMM_REC_LIB=build/release/lib/libdmmrec.so scripts/record.sh -o "$OUT/traces/gcc.trace" -- \
        gcc -O2 -Iinclude -c src/heap/heap.c -o "$OUT/heap.o" >/dev/null
    # the driver forks cc1 and as; cc1's trace (the largest) is the compiler's
    big=$(ls -S "$OUT"/traces/gcc.trace.* 2>/dev/null | head -n 1 || true)
    if [ -n "$big" ]; then mv "$big" "$OUT/traces/gcc-cc1.trace"; fi
    rm -f "$OUT"/traces/gcc.trace "$OUT"/traces/gcc.trace.*
fi

ALLOCS=("dmm:tlsf" "dmm:p2012" "dmm:dlmalloc" "glibc" "jemalloc" "mimalloc" "tcmalloc")
preload_of() {
    case $1 in
        jemalloc) ls $LIBDIR/libjemalloc.so.2 2>/dev/null ;;
        mimalloc) ls $LIBDIR/libmimalloc.so.2* 2>/dev/null | head -n 1 ;;
        tcmalloc) ls $LIBDIR/libtcmalloc_minimal.so.4 2>/dev/null ;;
    esac
}

traces=("$OUT"/traces/*.trace bench/traces/*.trace)
n=0
total=$(( ${#traces[@]} * ${#ALLOCS[@]} ))
for t in "${traces[@]}"; do
    name=$(basename "$t" .trace)
    for a in "${ALLOCS[@]}"; do
        n=$((n + 1))
        js="$OUT/json/$name--${a//:/_}.json"
        printf '[%3d/%d] %-14s %-13s ' "$n" "$total" "$name" "$a"
        case $a in
            dmm:*)
                "$REPLAY" "$t" --alloc "$a" --verify --reps "$REPS" --json "$js" --quiet
                "$REPLAY" "$t" --alloc "$a" --min-arena --json "${js%.json}.min.json" --quiet ;;
            glibc)
                "$REPLAY" "$t" --alloc system --expect glibc --verify --reps "$REPS" --json "$js" --quiet ;;
            *)
                lib=$(preload_of "$a")
                if [ -z "$lib" ]; then echo "skipped (not installed)"; continue; fi
                LD_PRELOAD=$lib "$REPLAY" "$t" --alloc system --expect "$a" --verify --reps "$REPS" \
                    --json "$js" --quiet ;;
        esac
        echo ok
    done
done
DMM_LOAD0=$LOAD0 python3 scripts/trace_study_report.py "$OUT/json" bench/results/trace_study.json bench/results/trace_study.md \
    "scripts/trace_study.sh --reps $REPS"
echo "== wrote bench/results/trace_study.md and .json"
