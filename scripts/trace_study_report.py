#!/usr/bin/env python3
"""Gathers the dmm-replay JSON files of scripts/trace_study.sh into one JSON
document and a markdown table (standard library only).

usage: trace_study_report.py JSON_DIR OUT.json OUT.md COMMAND
"""
import datetime
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if digits else f"{v:.0f}"
    return str(v)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    jdir, out_json, out_md, command = sys.argv[1:]
    runs, mins = {}, {}
    for p in sorted(glob.glob(os.path.join(jdir, "*.json"))):
        base = os.path.basename(p)[:-5]
        if base.endswith(".min"):
            trace, alloc = base[:-4].split("--", 1)
            mins[(trace, alloc)] = load(p)
        else:
            trace, alloc = base.split("--", 1)
            runs[(trace, alloc)] = load(p)
    if not runs:
        sys.exit(f"trace_study_report: no replay JSON in {jdir}")
    traces = sorted({t for t, _ in runs})
    allocs = []
    for _, a in runs:
        if a not in allocs:
            allocs.append(a)
    order = ["dmm_tlsf", "dmm_p2012", "dmm_dlmalloc", "glibc", "jemalloc", "mimalloc", "tcmalloc"]
    allocs.sort(key=lambda a: order.index(a) if a in order else len(order))

    # keep the figures, drop what every run repeats (machine, build) and the
    # per-thread breakdown (merged figures are kept)
    for r in runs.values():
        for k in ("machine", "build"):
            r.pop(k, None)
        for p in ((r.get("timing") or {}).get("cold"), (r.get("timing") or {}).get("warm")):
            if isinstance(p, dict):
                p.pop("threads", None)
    any_run = load(next(iter(sorted(glob.glob(os.path.join(jdir, "*.json"))))))
    doc = {
        "schema": "dmm-trace-study/1",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "machine": any_run.get("machine"),
        "build": any_run.get("build"),
        "runs": [
            {"trace": t, "allocator": a, "replay": r, "min_arena": mins.get((t, a), {}).get("min_arena")}
            for (t, a), r in sorted(runs.items())
        ],
    }
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from provenance import markdown, provenance
    b = doc.get("build") or {}
    load0 = os.environ.get("DMM_LOAD0")
    doc["provenance"] = provenance(command, b.get("compiler"), b.get("flags") or b.get("cflags"),
                                   "dmm-replay (release build); system allocators by LD_PRELOAD, checked with --expect",
                                   float(load0) if load0 else None)
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=1)

    def warm_all(r):
        tm = r.get("timing") or {}
        p = tm.get("warm") or tm.get("cold") or {}
        return (p.get("kinds") or {}).get("all") or {}

    lines = [
        "# Trace study: recorded programs and bundled traces, replayed everywhere",
        "",
        markdown(doc["provenance"]),
        "",
        f"Made by `{command}` on {doc['date']}.",
        f"Machine: {json.dumps(doc['machine'])}",
        "",
        "Every replay ran with `--verify` (each block filled with a pattern and checked before",
        "free/realloc). System allocators were loaded with LD_PRELOAD and the replayer's",
        "`--expect` confirmed which allocator served the calls. Cycles are TSC ticks per",
        "operation, warm pass, median over repetitions; the machine is a shared 2-core VM,",
        "so compare within a row.",
        "",
        "## Trace summary",
        "",
        "| trace | ops | threads | peak live bytes |",
        "|---|---:|---:|---:|",
    ]
    for t in traces:
        r = next(v for (tt, _), v in runs.items() if tt == t)
        tr = r["trace"]
        lines.append(f"| {t} | {tr['ops']} | {tr['threads']} | {tr['peak_live']} |")

    lines += ["", "## Verify and failed allocations", "",
              "| trace | " + " | ".join(allocs) + " |", "|---|" + "---|" * len(allocs)]
    for t in traces:
        cells = []
        for a in allocs:
            r = runs.get((t, a))
            cells.append("-" if r is None else f"{r['verify']}, {r['failed']} failed")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")

    lines += ["", "## Average ticks per operation (all kinds; warm pass)", "",
              "| trace | " + " | ".join(allocs) + " |", "|---|" + "---:|" * len(allocs)]
    for t in traces:
        cells = [fmt(warm_all(runs[(t, a)]).get("avg"), 1) if (t, a) in runs else "-" for a in allocs]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")

    lines += ["", "## Fragmentation #4 (peak footprint / peak live)", "",
              "dmm heaps: exact (peak extent of the heap). System allocators: what they expose",
              "(mallinfo2, jemalloc stats, or RSS growth), measured from a baseline taken just",
              "before the replay; see docs/replay.md.", "",
              "| trace | " + " | ".join(allocs) + " |", "|---|" + "---:|" * len(allocs)]
    for t in traces:
        cells = []
        for a in allocs:
            r = runs.get((t, a))
            fr = (r or {}).get("fragmentation") or {}
            cells.append(fmt(fr.get("frag4"), 3))
        lines.append(f"| {t} | " + " | ".join(cells) + " |")

    dmm_allocs = [a for a in allocs if a.startswith("dmm_")]
    lines += ["", "## Minimum arena (bytes; bisection, no failed allocation)", "",
              "| trace | peak live | " + " | ".join(dmm_allocs) + " |",
              "|---|---:|" + "---:|" * len(dmm_allocs)]
    for t in traces:
        r0 = next(v for (tt, _), v in runs.items() if tt == t)
        cells = []
        for a in dmm_allocs:
            m = (mins.get((t, a)) or {}).get("min_arena") or {}
            cells.append(fmt(m.get("bytes")) if m.get("found") else "-")
        lines.append(f"| {t} | {r0['trace']['peak_live']} | " + " | ".join(cells) + " |")
    lines.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
