#!/usr/bin/env bash
# bench/malloc/security.sh - misuse caught: mimalloc-bench's security
# programs (bench/security, 116 of them: double/invalid/unaligned frees,
# overflows and underflows of 1 B, 32 B and 1 MiB, reads and writes after
# free, reuse, zero-size blocks) run under glibc, the peers installed, and
# libdmm (release build) in its default mode and with DMM_SECURE=1.
#
#   bench/malloc/security.sh DIR [OUT]
#
# DIR holds the programs, built by the user (nothing of mimalloc-bench is in
# this repository): e.g. from a clone of https://github.com/daanx/mimalloc-bench,
#   cmake -S bench/security -B /tmp/msec && make -C /tmp/msec
# then DIR=/tmp/msec.  Writes bench/results/libdmm_security.{json,md} (or to
# OUT).  A program counts as caught as mimalloc-bench's bench.sh counts it:
# run with a 1 s timeout, caught unless it printed NOT_CAUGHT (a crash, an
# abort or a report that stops it before that line are catches; a timeout
# is listed apart and not counted).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR=${1:?usage: bench/malloc/security.sh DIR [OUT] (DIR: the built programs of mimalloc-bench bench/security)}
OUT=${2:-$ROOT/bench/results}
DIR=$(cd "$DIR" && pwd)
cmake --preset release >/dev/null
nice -n 10 cmake --build --preset release -j2 --target dmm_malloc_shared >/dev/null
LIBDMM="$ROOT/build/release/lib/libdmm.so"
L=/usr/lib/$(uname -m)-linux-gnu
declare -a NAMES=(glibc jemalloc mimalloc tcmalloc libdmm libdmm-secure)
declare -A ENVS=([glibc]="" [jemalloc]="LD_PRELOAD=$L/libjemalloc.so.2" [mimalloc]="LD_PRELOAD=$L/libmimalloc.so.2"
                 [tcmalloc]="LD_PRELOAD=$L/libtcmalloc_minimal.so.4" [libdmm]="LD_PRELOAD=$LIBDMM"
                 [libdmm-secure]="DMM_SECURE=1 LD_PRELOAD=$LIBDMM")
mapfile -t PROGS < <(find "$DIR" -maxdepth 1 -type f -perm -u+x -printf '%f\n' | sort)
[ "${#PROGS[@]}" -gt 0 ] || { echo "security.sh: no programs in $DIR" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -a RUN=()
for a in "${NAMES[@]}"; do
    lib=${ENVS[$a]##*LD_PRELOAD=}
    if [ -n "$lib" ] && [ ! -f "$lib" ]; then echo "skip $a: $lib missing"; continue; fi
    RUN+=("$a")
    for p in "${PROGS[@]}"; do
        # bench.sh's rule: NOT_CAUGHT printed = not caught
        ( (cd "$work" && timeout 1s bash -c "/usr/bin/env ${ENVS[$a]} $DIR/$p || echo CRASHED") || echo TIMEOUT ) \
            > "$work/out" 2>/dev/null || true
        if grep -aq NOT_CAUGHT "$work/out"; then r=-; elif grep -aq TIMEOUT "$work/out"; then r=T; else r=+; fi
        echo "$a $p $r" >> "$work/all"
    done
    echo "$a: $(grep -c "^$a .* +$" "$work/all") of ${#PROGS[@]} caught"
done
PROV=(--command "bench/malloc/security.sh DIR${2:+ $2}" --cmake-build "$ROOT/build/release"
      --impl "libdmm from build/release; mimalloc-bench security programs built by the user in DIR")
pj=$(python3 "$ROOT/scripts/provenance.py" --json "${PROV[@]}")
pm=$(python3 "$ROOT/scripts/provenance.py" --md "${PROV[@]}")
cat > "$work/report.py" <<'PY'
import json, os, sys
path, out, nprog, prov, provmd, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
res = {}
for line in open(path):
    a, p, r = line.split()
    res.setdefault(a, {})[p] = r
progs = sorted(next(iter(res.values())))
caught = {a: sum(r == "+" for r in res[a].values()) for a in names}
timeouts = {a: sum(r == "T" for r in res[a].values()) for a in names}
doc = {"schema": "dmm-malloc-security/1", "provenance": json.loads(prov), "programs": nprog,
       "results": [{"allocator": a, "caught": caught[a], "timeouts": timeouts[a], "per_program": res[a]} for a in names]}
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "libdmm_security.json"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
md = ["# Misuse caught: mimalloc-bench's security programs", "",
      "Made by `bench/malloc/security.sh DIR`, DIR holding mimalloc-bench's `bench/security` programs built by the user"
      f" ({nprog} programs; nothing of mimalloc-bench is in this repository). Each program runs once per allocator"
      " with a 1 s timeout; it counts as caught unless it printed NOT_CAUGHT (mimalloc-bench's bench.sh rule: a crash,"
      " an abort or a fault before that line is a catch). *libdmm* is the default mode (a detected misuse aborts),"
      " *libdmm-secure* `DMM_SECURE=1`. Goals (issue 27): default >= 68 (glibc's count in the issue), secure >= 100.",
      "", provmd, "", "| allocator | caught | timeouts |", "|---|---:|---:|"]
md += [f"| {a} | {caught[a]} | {timeouts[a]} |" for a in names]
md += ["", "## Per program", "", "`+` caught, `-` not caught, `T` timeout.", "",
       "| program | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
md += [f"| {p} | " + " | ".join(res[a].get(p, "?") for a in names) + " |" for p in progs]
with open(os.path.join(out, "libdmm_security.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print(f"wrote {out}/libdmm_security.json and .md")
PY
python3 "$work/report.py" "$work/all" "$OUT" "${#PROGS[@]}" "$pj" "$pm" "${RUN[@]}"
