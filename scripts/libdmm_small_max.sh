#!/usr/bin/env bash
# scripts/libdmm_small_max.sh - where libdmm's size classes should stop
# (DMM_MALLOC_SMALL_MAX, src/malloc/malloc.c): four release builds of libdmm
# that differ only in that limit (1, 2, 4 and 8 KiB; 2 KiB is the default)
# into build/small-max-<bytes>/, then one interleaved `dmmkit study`
# (scripts/study.sh) of the four beside glibc, then a summary of it.
#
#   scripts/libdmm_small_max.sh [-o DIR] [study options...]   (-o first)
#
# Writes DIR (default bench/results/libdmm_small_max/): study.json, study.md
# and the plots from the study, and summary.{json,md}: per build, the
# geometric means over the cells of peak RSS and time relative to glibc, and
# the per-cell table.  Every file carries scripts/provenance.py's record
# (command, commit, compiler and each build's flags, CPU, load).  Other
# options go to `dmmkit study` after the defaults below (a later option
# wins): 1 and 4 threads, 3 repetitions, no request-pattern analysis, the
# real programs and four mt programs.  A few minutes on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS=${DMM_JOBS:-2}
OUT="$ROOT/bench/results/libdmm_small_max"
CMDLINE="scripts/libdmm_small_max.sh${*:+ $*}"
case "${1:-}" in
    -o|--output)
        [ $# -ge 2 ] || { echo "libdmm_small_max: $1 needs a directory" >&2; exit 2; }
        OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

SIZES=(1024 2048 4096 8192)
PEERS=()
for v in "${SIZES[@]}"; do
    b="build/small-max-$v"
    echo "libdmm_small_max: building libdmm with DMM_MALLOC_SMALL_MAX=${v}u in $b"
    nice -n 10 cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=-DDMM_MALLOC_SMALL_MAX=${v}u" \
        -DDMM_BUILD_TESTS=OFF -DDMM_BUILD_BENCH=OFF >/dev/null
    nice -n 10 cmake --build "$b" -j "$JOBS" --target dmm_malloc_shared >/dev/null
    PEERS+=(--peer "dmm$((v / 1024))k=$ROOT/$b/lib/libdmm.so")
done

mkdir -p "$OUT"
DMMKIT_STUDY_SCRIPT="$CMDLINE" scripts/study.sh -o "$OUT" --alloc glibc "${PEERS[@]}" --threads 1,4 --reps 3 \
    --no-analyse --workloads sqlite3,python3,cc,git,larson,mstress,dedup,rptest "$@"

python3 - "$OUT" <<'PY'
import json
import math
import os
import sys

sys.path.insert(0, "scripts")
from provenance import markdown  # noqa: E402

out = sys.argv[1]
doc = json.load(open(os.path.join(out, "study.json")))
labels = [a["label"] for a in doc["allocators"]]
builds = [x for x in labels if x != "glibc"]
cells, ratios = [], {b: {"rss": [], "time": []} for b in builds}
for wl, by_t in doc["summary"].items():
    for t, figs in sorted(by_t.items(), key=lambda kv: int(kv[0])):
        g = figs.get("glibc")
        row = {"workload": wl, "threads": int(t), "figures": {}}
        for a in labels:
            f = figs.get(a)
            rss = f["rss_kb"]["mean"] if f else None
            tm = f["time"]["mean"] if f else None
            row["figures"][a] = {"rss_mib": None if rss is None else rss / 1024, "time_s": tm}
            if a != "glibc" and g and None not in (rss, tm, g["rss_kb"]["mean"], g["time"]["mean"]):
                ratios[a]["rss"].append(rss / g["rss_kb"]["mean"])
                ratios[a]["time"].append(tm / g["time"]["mean"])
        cells.append(row)


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


summary = {b: {"rss_vs_glibc": gm(r["rss"]), "time_vs_glibc": gm(r["time"]), "cells": len(r["rss"])}
           for b, r in ratios.items()}
res = {"schema": "dmm-small-max-summary/1", "provenance": doc["provenance"], "from": "study.json",
       "geomean": summary, "cells": cells}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(res, f, indent=1)
    f.write("\n")


def num(x, fmt):
    return "-" if x is None else format(x, fmt)


s = doc["settings"]
L = ["# libdmm: where the size classes stop (DMM_MALLOC_SMALL_MAX)", "", markdown(doc["provenance"]), "",
     f"Four release builds of libdmm that differ only in `DMM_MALLOC_SMALL_MAX` (`dmm1k` ... `dmm8k`; 2 KiB is "
     f"the default), beside glibc in one interleaved `dmmkit study` ({s['reps']} repetitions, threads "
     f"{', '.join(map(str, s['threads']))}; the study's own tables and intervals are in `study.md`).", "",
     "Geometric means over the cells of each build's mean against glibc's mean:", "",
     "| build | cells | peak RSS / glibc | time / glibc |", "|---|---:|---:|---:|"]
for b in builds:
    v = summary[b]
    L.append(f"| {b} | {v['cells']} | {num(v['rss_vs_glibc'], '.3f')} | {num(v['time_vs_glibc'], '.3f')} |")
L += ["", f"Per cell, peak RSS (MiB) / time (s), means of {s['reps']}:", "",
      "| workload | threads | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
for c in cells:
    L.append(f"| {c['workload']} | {c['threads']} | " + " | ".join(
        f"{num(c['figures'][a]['rss_mib'], '.1f')} / {num(c['figures'][a]['time_s'], '.3f')}" for a in labels) + " |")
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(L) + "\n")
print(f"libdmm_small_max: wrote {out}/summary.md")
PY
