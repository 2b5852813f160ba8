#!/usr/bin/env python3
"""scripts/bench_heap_v3.py - the "Heap v3" benchmark (issue 25): the Heap v2
measurements (scripts/bench_heap_v2.py: callgrind instructions per
malloc/free and minimum arena, dmm forms beside the anchors) judged against
the issue's goal table.

  scripts/bench_heap_v3.py --name heap_v3 [--baseline OLD.json]
                           [bench_heap_v2.py arguments ...]

--name      output base name: writes bench/results/NAME.json (schema
            dmmkit.heap_v3) and NAME.md (default heap_v3; heap_v3_O2 for the
            -O2 tree).
--baseline  the heap_v2 result whose minimum arenas the goal "no preset
            worse than today" compares with (same target names): a file, or
            REV:PATH for the file as committed at git revision REV (read
            with `git show`).  The manifest names the heap_v2 results that
            were committed when issue 25 was filed, so a regeneration that
            rewrites bench/results/heap_v2*.json just before this script
            cannot make the goal compare a figure with itself.
--out       the results directory (default bench/results).
Every other argument goes to scripts/bench_heap_v2.py unchanged: the dmm
binaries, --build/--no-build, and the anchors as --peer NAME=PATH, built by
hand as bench/README.md, "Anchors", describes (never by a script).  The
goals read the anchors by name: tlsf-O2, tlsf-O3, dlmalloc-O2, o1heap-O2.

The goal table (issue 25, "Goals"), per workload, from these figures:
  tlsf as shipped (frozen)      <= tlsf-O2, and <= 1.1 x tlsf-O3
  dlmalloc as shipped (frozen)  <= dlmalloc-O2
  halffit as shipped (frozen)   <= o1heap-O2
  every preset lean (frozen)    <= 0.8 x the best -O2 anchor
  firstfit as shipped (frozen)  <= 1.5 x tlsf-O2 on frag and rbtree
  checked over lean             frozen-checked - frozen-lean <= 15 Ir/op
  counters over off             frozen - frozen-checked <= 5 Ir/op
  minimum arena                 <= the baseline's, every frozen form
Goals this harness does not measure (seed 001, Cortex-M4 size) are listed as
such.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = ["dlmalloc", "tlsf", "halffit", "firstfit", "p2012"]


def die(msg):
    sys.exit(f"bench_heap_v3.py: {msg}")


def goals(doc, baseline):
    """Rows (goal, preset, workload, value, limit, met, note) from a heap_v2 document."""
    wls = doc["context"]["workload_names"]
    ir = {(r["target"], r["workload"]): r["ir_per_op"] for r in doc["results"]}
    arena = {(r["target"], r["workload"]): r["min_arena"] for r in doc["results"]}
    rows = []

    def add(goal, preset, w, value, limit, note=""):
        if value is None or limit is None:
            rows.append({"goal": goal, "preset": preset, "workload": w, "value": value, "limit": limit,
                         "met": None, "note": note or "not measured (target or anchor missing)"})
            return
        rows.append({"goal": goal, "preset": preset, "workload": w, "value": round(value, 1),
                     "limit": round(limit, 1), "met": value <= limit, "note": note})

    def get(name, w):
        return ir.get((name, w))

    def scaled(x, k):
        return None if x is None else x * k

    for w in wls:
        add("tlsf shipped <= TLSF -O2", "tlsf", w, get("dmm-tlsf-frozen", w), get("tlsf-O2", w))
        add("tlsf shipped <= 1.1x TLSF -O3", "tlsf", w, get("dmm-tlsf-frozen", w), scaled(get("tlsf-O3", w), 1.1))
        add("dlmalloc shipped <= dlmalloc 2.8.6 -O2", "dlmalloc", w, get("dmm-dlmalloc-frozen", w),
            get("dlmalloc-O2", w))
        add("halffit shipped <= o1heap -O2", "halffit", w, get("dmm-halffit-frozen", w), get("o1heap-O2", w))
        anchors = [get(a, w) for a in ("dlmalloc-O2", "o1heap-O2", "tlsf-O2")]
        best = min(x for x in anchors if x is not None) if any(x is not None for x in anchors) else None
        for p in PRESETS:
            add("lean <= 0.8x best -O2 anchor", p, w, get(f"dmm-{p}-frozen-lean", w), scaled(best, 0.8))
        if w in ("frag", "rbtree"):
            add("firstfit shipped <= 1.5x TLSF -O2", "firstfit", w, get("dmm-firstfit-frozen", w),
                scaled(get("tlsf-O2", w), 1.5))
        for p in PRESETS:
            c, l, s = get(f"dmm-{p}-frozen-checked", w), get(f"dmm-{p}-frozen-lean", w), get(f"dmm-{p}-frozen", w)
            add("checked over lean <= 15 Ir/op", p, w, None if c is None or l is None else c - l, 15.0)
            add("counters over off <= 5 Ir/op", p, w, None if s is None or c is None else s - c, 5.0)
        if baseline:
            old = {(r["target"], r["workload"]): r["min_arena"] for r in baseline["results"]}
            for p in PRESETS:
                for form in ("frozen", "frozen-checked", "frozen-lean"):
                    t = f"dmm-{p}-{form}"
                    if (t, w) in arena and (t, w) in old:
                        add("min arena <= before", p, w, arena[(t, w)], old[(t, w)],
                            f"{form}; bytes, baseline {baseline['_source']}, measured at "
                            f"{baseline['context']['commit']}")
    for g in ("seed 001 headline <= 0.38x dlmalloc 2.8.6", "Cortex-M4 -Os init+malloc+free sizes"):
        rows.append({"goal": g, "preset": "-", "workload": "-", "value": None, "limit": None, "met": None,
                     "note": "not measured by this harness"})
    return rows


def goals_markdown(rows):
    L = ["## Goals (issue 25)", "",
         "Each row: the measured figure, the limit the goal sets, met or missed and by how much "
         "(value - limit; Ir/op unless said).", "",
         "| goal | preset | workload | value | limit | verdict |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["met"] is None:
            verdict = r["note"]
        elif r["met"]:
            verdict = "met" + (f" ({r['note']})" if r["note"] else "")
        else:
            verdict = f"missed by {r['value'] - r['limit']:.1f}" + (
                f" ({r['value'] / r['limit']:.2f}x)" if r["limit"] > 0 else "") + (
                f"; {r['note']}" if r["note"] else "")
        v = "-" if r["value"] is None else f"{r['value']}"
        lim = "-" if r["limit"] is None else f"{r['limit']}"
        L.append(f"| {r['goal']} | {r['preset']} | {r['workload']} | {v} | {lim} | {verdict} |")
    met = sum(1 for r in rows if r["met"] is True)
    missed = sum(1 for r in rows if r["met"] is False)
    L += ["", f"{met} met, {missed} missed, {sum(1 for r in rows if r['met'] is None)} not measured here.", ""]
    return "\n".join(L)


def load_baseline(spec):
    """The baseline document from a path or from REV:PATH (git show), with '_source' naming it."""
    if os.path.exists(spec):
        try:
            with open(spec) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            die(f"cannot read the baseline {spec}: {e}")
        doc["_source"] = os.path.relpath(os.path.abspath(spec), ROOT)
        return doc
    rev, sep, path = spec.partition(":")
    if not sep or not rev or not path:
        die(f"--baseline {spec}: no such file, and not REV:PATH")
    r = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{path}"], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"--baseline {spec}: git show failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        die(f"--baseline {spec}: not JSON: {e}")
    full = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", rev], capture_output=True, text=True)
    doc["_source"] = f"{path} as committed at {full.stdout.strip() or rev}"
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="heap_v3")
    ap.add_argument("--baseline")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a, rest = ap.parse_known_args()
    cmdline = "scripts/bench_heap_v3.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    baseline = load_baseline(a.baseline) if a.baseline else None
    with tempfile.TemporaryDirectory(prefix="heap-v3.") as tmp:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_heap_v2.py"), "--out", tmp,
                            *rest], cwd=ROOT)
        if r.returncode != 0:
            die("scripts/bench_heap_v2.py failed")
        with open(os.path.join(tmp, "heap_v2.json")) as f:
            doc = json.load(f)
        with open(os.path.join(tmp, "heap_v2.md")) as f:
            md = f.read()
    rows = goals(doc, baseline)
    doc["schema"] = "dmmkit.heap_v3"
    doc["version"] = 1
    doc["context"]["measured_by"] = doc["context"]["command_line"]
    doc["context"]["command_line"] = cmdline
    doc["context"]["baseline"] = baseline["_source"] if baseline else None
    doc["goals"] = rows
    lines = md.split("\n")
    lines[0] = "# Heap v3 benchmark (issue 25): instructions per operation and minimum arena, against the goals"
    for i, l in enumerate(lines):
        if l.startswith("Generated by `"):
            lines[i] = (f"Generated by `{cmdline}` on {doc['context']['date']} (commit `{doc['context']['commit']}`), "
                        f"which measured with `{doc['context']['measured_by']}`.")
            break
    lines = [cmdline if l == doc["context"]["measured_by"] else l for l in lines]  # the reproduction block
    at = next((i for i, l in enumerate(lines) if l.startswith("## Targets")), len(lines))
    lines[at:at] = goals_markdown(rows).split("\n")
    os.makedirs(a.out, exist_ok=True)
    jp, mp = os.path.join(a.out, a.name + ".json"), os.path.join(a.out, a.name + ".md")
    with open(jp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(mp, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {os.path.relpath(jp, ROOT)} and {os.path.relpath(mp, ROOT)}")


if __name__ == "__main__":
    main()
