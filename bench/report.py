#!/usr/bin/env python3
"""bench/report.py - turns dmm-replay's JSON documents from the workload
benchmark (scripts/bench.sh) into results.  Standard library only.

  collect --runs DIR --list FILE --out workloads.json [--commit C] [--arena A]
          [--overrides S]
        DIR holds one dmm-replay --json document per run, named
        r<rep>__<target>__<workload>.json; FILE is `gen-workloads --list`.
        Medians over the repetitions -> schema dmmkit.workloads/1
  callgrind --manifest M --gen-log G --out workloads_callgrind.json
        M: tab separated kind (bench|frozen), build (runtime|frozen), target,
        workload, callgrind profile; G: gen-workloads' output (op counts).
        -> schema dmmkit.workloads_callgrind/1
  markdown --timing workloads.json [--callgrind workloads_callgrind.json]
           [--commands F] [--size embedded_size.json] --out workloads.md
  table    --timing workloads.json      console tables (scripts/demo.sh)
  headline --timing workloads.json [--callgrind workloads_callgrind.json]

A missing, damaged or foreign input file gives one line naming the file and
what is wrong (exit 2), never a traceback.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

PRESETS = ["dlmalloc", "tlsf", "halffit", "firstfit", "p2012"]
P2012_KERNELS = ["integral", "gaussian", "fast", "matmul"]
KINDS = ["malloc", "free", "realloc"]
TIMING_SCHEMA = "dmmkit.workloads"
CALLGRIND_SCHEMA = "dmmkit.workloads_callgrind"
REPLAY_SCHEMA = "dmm-replay/"

# Seed 001, tables 1-4: "Avg. Diff." of the custom P2012 allocator against the
# dlmalloc variant (cycles per event, RTL simulation of one P2012 cluster).
SEED_AVG_DIFF = {
    "integral": {"malloc": -62.54, "free": -52.91},
    "gaussian": {"malloc": -62.86, "free": -52.57},
    "fast": {"malloc": -55.5, "free": -38.69},
    "matmul": {"malloc": -67.85, "free": -51.92},
    "fast-rf": {"malloc": -29.14, "free": -38.69},
    "matmul-rf": {"malloc": -6.0, "free": -34.28},
}

RUN_RE = re.compile(r"^r(\d+)__([A-Za-z0-9_.+-]+)__([A-Za-z0-9_.+-]+)\.json$")
GEN_RE = re.compile(r"^gen-workloads: (?:.*/)?([^/\s]+)\.(?:dmmt|txt): (\d+) operations \((\d+) mallocs, "
                    r"(\d+) reallocs, (\d+) frees\), peak live (\d+) B, hash ([0-9a-f]+)")
ANNOT_RE = re.compile(r"^\s*([\d,]+)\s.*?[:\s]a_(malloc|free|realloc|calloc|aligned)\b")


class ReportError(Exception):
    """An input that cannot be used; the message is one sentence."""


def fail(msg):
    print(f"report.py: {msg}", file=sys.stderr)
    return 2


def load_json(path, schema_prefix=None, required=True):
    """The document at path, checked to be a JSON object whose schema starts
    with schema_prefix.  None when not required and absent."""
    if not path:
        if required:
            raise ReportError("no input file given")
        return None
    if not os.path.exists(path):
        if required:
            raise ReportError(f"{path}: no such file")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportError(f"{path}: cannot read it ({e.strerror or e})")
    except (ValueError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not valid JSON ({e})")
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    if schema_prefix is not None:
        s = doc.get("schema")
        if not isinstance(s, str) or not s.startswith(schema_prefix):
            raise ReportError(f"{path}: schema is {s!r}, expected {schema_prefix}...")
    return doc


def dig(d, *keys):
    """d[k0][k1]... or None when any level is missing or not a dict."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def median(vals):
    vals = [v for v in vals if num(v) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, nd=0):
    if num(v) is None:
        return "-"
    return f"{v:,.{nd}f}"


def ratio(a, b):
    if num(a) is None or num(b) is None or not b:
        return None
    return a / b


def md_table(header, rows, align=None):
    out = ["| " + " | ".join(header) + " |"]
    al = align or (["l"] + ["r"] * (len(header) - 1))
    out.append("| " + " | ".join("---:" if x == "r" else "---" for x in al) + " |")
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def read_list(path):
    """gen-workloads --list: name, group, one-line shape, in the bundled order."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split(None, 2)
                if len(parts) >= 2:
                    out.append({"name": parts[0], "group": parts[1],
                                "summary": parts[2].strip() if len(parts) > 2 else ""})
    except OSError as e:
        raise ReportError(f"{path}: cannot read it ({e.strerror or e})")
    if not out:
        raise ReportError(f"{path}: no workload listed (expected the output of gen-workloads --list)")
    return out


def read_gen_log(path):
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = GEN_RE.match(line)
                if m:
                    out[m.group(1)] = {"ops": int(m.group(2)), "malloc": int(m.group(3)),
                                       "realloc": int(m.group(4)), "free": int(m.group(5)),
                                       "peak_live": int(m.group(6)), "hash": m.group(7)}
    except OSError as e:
        raise ReportError(f"{path}: cannot read it ({e.strerror or e})")
    if not out:
        raise ReportError(f"{path}: no gen-workloads summary line in it")
    return out


# ---------------------------------------------------------------------------
# collect: dmm-replay documents -> medians over repetitions

def kind_stats(docs, pass_, kind):
    ks = [dig(d, "timing", pass_, "kinds", kind) for d in docs]
    ks = [k for k in ks if isinstance(k, dict)]
    if not ks:
        return None
    maxes = [k.get("max") for k in ks if num(k.get("max")) is not None]
    return {
        "count": ks[0].get("count"),
        "avg": median(k.get("avg") for k in ks),
        "p50": median(k.get("p50") for k in ks),
        "p99": median(k.get("p99") for k in ks),
        "max": median(maxes),
        "max_min": min(maxes) if maxes else None,
        "max_worst": max(maxes) if maxes else None,
    }


def cmd_collect(a):
    listed = read_list(a.list)
    runs = {}
    try:
        names = sorted(os.listdir(a.runs))
    except OSError as e:
        raise ReportError(f"{a.runs}: cannot list it ({e.strerror or e})")
    for fn in names:
        m = RUN_RE.match(fn)
        if not m:
            continue
        doc = load_json(os.path.join(a.runs, fn), REPLAY_SCHEMA)
        runs.setdefault((m.group(3), m.group(2)), []).append((int(m.group(1)), doc))
    if not runs:
        raise ReportError(f"{a.runs}: no dmm-replay document named r<rep>__<target>__<workload>.json")

    order = [w["name"] for w in listed]
    wl_names = sorted({w for w, _ in runs}, key=lambda n: (order.index(n) if n in order else len(order), n))
    tg_names = sorted({t for _, t in runs}, key=lambda n: (PRESETS.index(n) if n in PRESETS else len(PRESETS), n))
    first = next(iter(runs.values()))[0][1]
    workloads, targets, results = [], [], []
    by_name = {w["name"]: w for w in listed}
    for w in wl_names:
        docs = [d for t in tg_names for _, d in runs.get((w, t), [])]
        tr = docs[0].get("trace") or {}
        oc = tr.get("op_counts") or {}
        workloads.append({
            "name": w, "group": by_name.get(w, {}).get("group"), "summary": by_name.get(w, {}).get("summary"),
            "ops": tr.get("ops"), "allocs": oc.get("malloc"), "frees": oc.get("free"), "reallocs": oc.get("realloc"),
            "peak_live_requested": tr.get("peak_live"), "hash": tr.get("hash"),
        })
    for t in tg_names:
        d = next(doc for (w, tt), lst in runs.items() if tt == t for _, doc in lst)
        al = d.get("allocator") or {}
        targets.append({"name": t, "kind": al.get("kind"), "config": al.get("config"),
                        "detected": al.get("detected"), "variant": al.get("variant"),
                        "malloc_object": al.get("malloc_object")})
    for w in wl_names:
        for t in tg_names:
            lst = sorted(runs.get((w, t), []), key=lambda x: x[0])
            if not lst:
                continue
            docs = [d for _, d in lst]
            d0 = docs[0]
            is_dmm = dig(d0, "allocator", "kind") == "dmm"
            fr = d0.get("fragmentation") or {}
            mem = d0.get("memory") or {}
            peak_live = num(mem.get("peak_live_requested"))
            rec = {
                "workload": w, "target": t, "reps": len(docs),
                "failed": max((num(d.get("failed")) or 0) for d in docs),
                "heap_errors": max((num(dig(d, "allocator", "heap_errors")) or 0) for d in docs),
                "involuntary_ctx_switches": sum((num(dig(d, "timing", p, "involuntary_ctx_switches")) or 0)
                                                for d in docs for p in ("cold", "warm")),
                "passes": {p: {k: kind_stats(docs, p, k) for k in KINDS + ["all"]} for p in ("cold", "warm")},
                # Memory figures of the first cold pass (deterministic for dmm);
                # for system allocators not comparable, so not reported here.
                "footprint": None,
            }
            if is_dmm:
                rec["footprint"] = {
                    "peak_footprint": num(mem.get("peak_footprint")),
                    "peak_live_requested": peak_live,
                    "frag4": num(fr.get("frag4")),
                    "frag3": num(fr.get("frag3")),
                    "block_over_peak_live": ratio(num(mem.get("peak_block_bytes")), peak_live),
                    "source": mem.get("footprint_source"),
                }
            results.append(rec)

    tim = first.get("timing") or {}
    doc = {
        "schema": TIMING_SCHEMA,
        "schema_version": 1,
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "engine": "dmm-replay (one process per run: --reps 1, a cold and a warm pass)",
            "machine": first.get("machine"),
            "build": first.get("build"),
            "git_commit": a.commit,
            "reps": max(len(v) for v in runs.values()),
            "arena": a.arena,
            "bench_config_overrides": a.overrides,
            "timer": {"clock": tim.get("clock"), "bracket": tim.get("bracket"), "unit": tim.get("unit"),
                      "ticks_per_sec": median(dig(d, "timing", "ticks_per_sec") for v in runs.values()
                                              for _, d in v),
                      "bracket_cost": median(dig(d, "timing", "bracket_cost") for v in runs.values()
                                             for _, d in v)},
            "statistic": "per figure, the median over the repetitions of each run's figure; max_min and "
                         "max_worst are the smallest and largest per-repetition maximum",
        },
        "workloads": workloads,
        "targets": targets,
        "results": results,
    }
    write_json(a.out, doc)


def write_json(path, doc):
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise ReportError(f"{path}: cannot write it ({e.strerror or e})")
    print(f"report.py: wrote {path}")


# ---------------------------------------------------------------------------
# callgrind: dmm-replay --count-sweep profiles -> instructions per operation

def read_totals(cg_file):
    total = None
    try:
        with open(cg_file, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    total = int(line.split()[1])
    except OSError as e:
        raise ReportError(f"{cg_file}: cannot read it ({e.strerror or e})")
    except (ValueError, IndexError):
        raise ReportError(f"{cg_file}: a damaged totals line")
    if total is None:
        raise ReportError(f"{cg_file}: no totals line (not a callgrind profile)")
    return total


def read_inclusive(cg_file):
    """Inclusive Ir of the heap's dmm_allocator entry points a_<kind>."""
    try:
        out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", cg_file],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ReportError(f"{cg_file}: callgrind_annotate failed ({e})")
    inc = {}
    for line in out.splitlines():
        m = ANNOT_RE.match(line)
        if m:
            inc[m.group(2)] = max(inc.get(m.group(2), 0), int(m.group(1).replace(",", "")))
    return inc


def per_op(ir, n):
    return round(ir / n, 2) if n else None


def cmd_callgrind(a):
    counts = read_gen_log(a.gen_log)
    frozen_cfg = {}
    if a.frozen_configs and os.path.exists(a.frozen_configs):
        with open(a.frozen_configs, encoding="utf-8") as f:
            for line in f:
                if "\t" in line:
                    p, cfg = line.rstrip("\n").split("\t", 1)
                    frozen_cfg[p] = cfg
    runs = []
    try:
        with open(a.manifest, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 5:
                    raise ReportError(f"{a.manifest}: line {n}: expected 5 tab-separated fields")
                runs.append(parts)
    except OSError as e:
        raise ReportError(f"{a.manifest}: cannot read it ({e.strerror or e})")

    def measure(wl, cg):
        c = counts.get(wl)
        if not c:
            raise ReportError(f"{a.gen_log}: no op counts for workload {wl}")
        total = read_totals(cg)
        inc = read_inclusive(cg)
        rec = {k: {"count": c[k], "ir": inc.get(k, 0), "per_op": per_op(inc.get(k, 0), c[k])} for k in KINDS}
        n = sum(c[k] for k in KINDS)
        rec["all"] = {"count": n, "ir": total, "per_op": per_op(total, n)}
        return rec

    bench_rows, frozen_rows = [], {}
    for kind, build, target, wl, cg in runs:
        if kind == "bench":
            row = {"target": target, "workload": wl, "build": build}
            row.update(measure(wl, cg))
            bench_rows.append(row)
        elif kind == "frozen":
            row = frozen_rows.setdefault((target, wl), {"preset": target, "workload": wl,
                                                        "config": frozen_cfg.get(target)})
            row[build] = measure(wl, cg)
    fr = []
    for (p, wl), row in sorted(frozen_rows.items(),
                               key=lambda kv: (PRESETS.index(kv[0][0]) if kv[0][0] in PRESETS else 99, kv[0][1])):
        if "runtime" in row and "frozen" in row:
            r, z = row["runtime"]["all"]["per_op"], row["frozen"]["all"]["per_op"]
            row["frozen_over_runtime"] = round(z / r, 4) if r and z else None
        fr.append(row)

    def weighted(rows, key, pick):
        agg = {}
        for row in rows:
            rec = pick(row)
            if rec is None:
                continue
            t = agg.setdefault(row[key], {k: [0, 0] for k in KINDS + ["all"]})
            for k in KINDS + ["all"]:
                t[k][0] += rec[k]["ir"]
                t[k][1] += rec[k]["count"]
        return {name: {k: per_op(v[0], v[1]) for k, v in t.items()} for name, t in agg.items()}

    s_bench = weighted(bench_rows, "target", lambda r: r)
    s_frozen = {}
    for build in ("runtime", "frozen"):
        for p, v in weighted(fr, "preset", lambda r, b=build: r.get(b)).items():
            s_frozen.setdefault(p, {})[build] = v
    for p, v in s_frozen.items():
        if dig(v, "runtime", "all") and dig(v, "frozen", "all"):
            v["frozen_over_runtime"] = round(v["frozen"]["all"] / v["runtime"]["all"], 4)

    doc = {
        "schema": CALLGRIND_SCHEMA,
        "schema_version": 1,
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": a.commit,
            "valgrind": a.valgrind,
            "method": "valgrind --tool=callgrind --toggle-collect=a_<kind> --dump-after=rpx_sweep_mark "
                      "dmm-replay TRACE --count-sweep FILE: one profile per configuration, collecting only "
                      "inside the heap's dmm_allocator entry points; instructions per op = collected Ir / "
                      "operations (per kind: inclusive Ir of a_<kind>, callgrind_annotate --inclusive=yes)",
            "bench_config": "preset + " + (a.overrides or "?"),
            "frozen_config": "the configs/frozen/<preset>.h configuration, run by dmm-replay built frozen to "
                             "it and by the runtime dmm-replay, so the two differ only in frozen policy reads",
            "system_allocator": "not counted: the replayer's own trace loading goes through the same malloc",
        },
        "bench_config": bench_rows,
        "frozen_vs_runtime": fr,
        "summary": {"bench_config_per_op": s_bench, "frozen_vs_runtime_per_op": s_frozen},
    }
    write_json(a.out, doc)


# ---------------------------------------------------------------------------
# markdown, table, headline

def index_results(timing):
    res = {}
    for r in timing.get("results") or []:
        if isinstance(r, dict):
            res[(r.get("workload"), r.get("target"))] = r
    return res


def check_timing(timing, path):
    for key in ("context", "workloads", "targets", "results"):
        if key not in timing:
            raise ReportError(f"{path}: no '{key}' (not written by report.py collect)")
    if not isinstance(timing["results"], list) or not isinstance(timing["workloads"], list):
        raise ReportError(f"{path}: 'results' and 'workloads' must be lists")


def check_callgrind(cg, path):
    if cg is None:
        return
    if not isinstance(dig(cg, "summary", "bench_config_per_op"), dict):
        raise ReportError(f"{path}: no summary.bench_config_per_op (not written by report.py callgrind)")


def kstat(r, pass_, kind, field):
    return dig(r, "passes", pass_, kind, field) if r else None


def headline_numbers(timing, cg):
    out = {}
    cgi = {}
    for row in (cg or {}).get("bench_config") or []:
        cgi[(row.get("workload"), row.get("target"))] = row
    res = index_results(timing)
    rows = []
    for w in P2012_KERNELS + [k + "-rf" for k in P2012_KERNELS]:
        p, d = res.get((w, "p2012")), res.get((w, "dlmalloc"))
        if not p or not d:
            continue
        row = {"workload": w, "failed_p2012": p.get("failed")}
        for pas in ("warm", "cold"):
            for k in ("malloc", "free"):
                row[f"{pas}_{k}_p2012"] = kstat(p, pas, k, "avg")
                row[f"{pas}_{k}_dlmalloc"] = kstat(d, pas, k, "avg")
                row[f"{pas}_{k}_ratio"] = ratio(row[f"{pas}_{k}_p2012"], row[f"{pas}_{k}_dlmalloc"])
            row[f"{pas}_malloc_maxmin_ratio"] = ratio(kstat(p, pas, "malloc", "max_min"),
                                                      kstat(d, pas, "malloc", "max_min"))
        cp, cd = cgi.get((w, "p2012")), cgi.get((w, "dlmalloc"))
        for k in ("malloc", "free"):
            row[f"ir_{k}_p2012"] = dig(cp, k, "per_op")
            row[f"ir_{k}_dlmalloc"] = dig(cd, k, "per_op")
            row[f"ir_{k}_ratio"] = ratio(row[f"ir_{k}_p2012"], row[f"ir_{k}_dlmalloc"])
        rows.append(row)
    out["p2012_vs_dlmalloc"] = rows
    frag = {}
    for t in [x.get("name") for x in timing.get("targets") or []]:
        r = res.get(("fragment", t))
        if not r:
            continue
        frag[t] = {pas: {f: kstat(r, pas, "malloc", f) for f in ("avg", "p99", "max", "max_min", "max_worst")}
                   for pas in ("warm", "cold")}
        frag[t]["free_max_min"] = kstat(r, "warm", "free", "max_min")
        frag[t]["ir_malloc"] = dig(cgi.get(("fragment", t)), "malloc", "per_op")
    out["fragment_max"] = frag
    fp = {}
    for t in PRESETS:
        vals = {w.get("name"): dig(res.get((w.get("name"), t)), "footprint", "frag4")
                for w in timing.get("workloads") or []}
        vals = {k: v for k, v in vals.items() if num(v) is not None}
        if vals:
            fp[t] = {"frag4_median": statistics.median(vals.values()), "frag4_max": max(vals.values()),
                     "per_workload": vals}
    out["footprint"] = fp
    if cg:
        out["frozen_vs_runtime"] = dig(cg, "summary", "frozen_vs_runtime_per_op") or {}
        out["instructions_bench_config"] = dig(cg, "summary", "bench_config_per_op") or {}
    return out


def cmd_headline(a):
    timing = load_json(a.timing, TIMING_SCHEMA)
    check_timing(timing, a.timing)
    cg = load_json(a.callgrind, CALLGRIND_SCHEMA, required=False)
    check_callgrind(cg, a.callgrind)
    h = headline_numbers(timing, cg)
    unit = dig(timing, "context", "timer", "unit") or "?"
    print("\n== headline numbers ==")
    for r in h["p2012_vs_dlmalloc"]:
        print(f"p2012/dlmalloc {r['workload']:<12} avg {unit}: malloc {fmt(r['warm_malloc_ratio'], 2)} "
              f"free {fmt(r['warm_free_ratio'], 2)} (warm; cold {fmt(r['cold_malloc_ratio'], 2)} / "
              f"{fmt(r['cold_free_ratio'], 2)}); instructions: malloc {fmt(r['ir_malloc_ratio'], 2)} "
              f"free {fmt(r['ir_free_ratio'], 2)}" + ("  [p2012 had FAILED allocations]" if r["failed_p2012"] else ""))
    fm = h["fragment_max"]
    if "tlsf" in fm and "firstfit" in fm:
        t, f = fm["tlsf"]["warm"], fm["firstfit"]["warm"]
        print(f"fragment worst malloc ({unit}, warm, smallest per-rep max): tlsf {fmt(t['max_min'])} vs firstfit "
              f"{fmt(f['max_min'])} (ratio {fmt(ratio(t['max_min'], f['max_min']), 3)}); median max "
              f"{fmt(t['max'])} vs {fmt(f['max'])}")
    for p, v in (h.get("frozen_vs_runtime") or {}).items():
        r, z = v.get("runtime", {}), v.get("frozen", {})
        print(f"instructions/op {p:<9} runtime / frozen: malloc {fmt(r.get('malloc'), 1)} / {fmt(z.get('malloc'), 1)}"
              f"  free {fmt(r.get('free'), 1)} / {fmt(z.get('free'), 1)}  all {fmt(r.get('all'), 1)} / "
              f"{fmt(z.get('all'), 1)}  frozen/runtime {fmt(v.get('frozen_over_runtime'), 3)}")
    for p, v in h["footprint"].items():
        print(f"footprint {p:<9} J&W #4 (peak extent / peak live) median {fmt(v['frag4_median'], 2)} "
              f"max {fmt(v['frag4_max'], 2)}")


def workload_rows(timing, res, w, warm="warm"):
    dl = res.get((w, "dlmalloc"))
    rows = []
    for tg in timing.get("targets") or []:
        name = tg.get("name")
        r = res.get((w, name))
        if not r:
            continue
        fpv = r.get("footprint") or {}
        label = name if tg.get("kind") == "dmm" else f"{name} ({tg.get('detected') or 'system'}, ref)"
        rows.append([
            label,
            fmt(kstat(r, warm, "malloc", "avg"), 1), fmt(kstat(r, warm, "malloc", "p50")),
            fmt(kstat(r, warm, "malloc", "p99")), fmt(kstat(r, warm, "malloc", "max")),
            fmt(kstat(r, warm, "malloc", "max_min")), fmt(kstat(r, "cold", "malloc", "max_min")),
            fmt(kstat(r, warm, "free", "avg"), 1), fmt(kstat(r, warm, "free", "p99")),
            fmt(kstat(r, warm, "free", "max_min")),
            fmt(kstat(r, warm, "realloc", "avg"), 1) if kstat(r, warm, "realloc", "count") else "-",
            fmt(fpv.get("frag4"), 2), fmt(fpv.get("block_over_peak_live"), 2),
            fmt(ratio(kstat(r, warm, "malloc", "avg"), kstat(dl, warm, "malloc", "avg")), 2),
            str(r.get("failed")) if r.get("failed") else "",
        ])
    return rows


WL_HEADER = ["target", "malloc avg", "p50", "p99", "max", "max (min)", "cold max (min)", "free avg", "p99",
             "max (min)", "realloc avg", "#4", "blk", "xdl", "failed"]


def cmd_table(a):
    timing = load_json(a.timing, TIMING_SCHEMA)
    check_timing(timing, a.timing)
    res = index_results(timing)
    unit = dig(timing, "context", "timer", "unit") or "?"
    print(f"\nwarm pass, {unit} per operation, median of {dig(timing, 'context', 'reps')} repetition(s); "
          "max (min) = smallest per-repetition maximum; #4 = peak footprint / peak live (dmm only); "
          "blk = peak used-block bytes / peak live; xdl = malloc avg / dlmalloc's")
    for w in timing["workloads"]:
        name = w.get("name")
        print(f"\n== {name}: {w.get('summary') or ''}")
        print(f"   {fmt(w.get('ops'))} ops, peak live {fmt(w.get('peak_live_requested'))} B")
        rows = [WL_HEADER] + workload_rows(timing, res, name)
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(WL_HEADER))]
        for r in rows:
            print("  " + "  ".join(str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
                                   for i, c in enumerate(r)))


def cmd_markdown(a):
    timing = load_json(a.timing, TIMING_SCHEMA)
    check_timing(timing, a.timing)
    cg = load_json(a.callgrind, CALLGRIND_SCHEMA, required=False)
    check_callgrind(cg, a.callgrind)
    size = load_json(a.size, None, required=False)
    commands = ""
    if a.commands and os.path.exists(a.commands):
        with open(a.commands, encoding="utf-8") as f:
            commands = f.read().strip()
    c = timing["context"]
    t = c.get("timer") or {}
    unit = t.get("unit") or "?"
    m = c.get("machine") or {}
    b = c.get("build") or {}
    L = ["# Workload benchmark results", "",
         "Generated by `" + a.script + "` (method: `bench/README.md`). The synthetic workloads are written as "
         "traces by `gen-workloads` and replayed by `dmm-replay`. Numbers from one machine on one day: re-run to "
         "compare; read ratios, not absolute values.", "",
         "## Machine and build", "",
         md_table(["", ""], [
             ["date (UTC)", c.get("date")],
             ["host", m.get("hostname")],
             ["CPU", f"{m.get('cpu_model')} ({m.get('cores')} cores)"],
             ["compiler / flags", f"{b.get('compiler')} / `{b.get('flags')}` ({b.get('build_type')})"],
             ["git commit", c.get("git_commit")],
             ["engine", c.get("engine")],
             ["timer", f"{t.get('clock')} ({t.get('bracket')}), unit {unit}, "
                       f"~{(num(t.get('ticks_per_sec')) or 0) / 1e9:.2f} GHz; empty bracket "
                       f"{fmt(t.get('bracket_cost'))} subtracted (median over runs)"],
             ["repetitions", f"{c.get('reps')} (median reported), allocators rotating within each"],
             ["heap config", (f"each preset + `{c.get('bench_config_overrides')}`"
                             if c.get("bench_config_overrides") else "each preset as named")
                            + f", arena {c.get('arena') or 'dmm-replay default'} (prefaulted by dmm-replay)"],
         ], ["l", "l"]), "",
         "## How these numbers were produced", "", "```", commands or a.script, "```", "",
         "## Reading these numbers", "",
         "- The workloads are synthetic shapes of the seed's kernels, not its traces "
         "(bench/workloads/README.md).",
         "- `max (min)`: each run's maximum is one sample; the smallest of those maxima over the repetitions "
         "strips one-off preemptions that hit a single repetition (a slow operation is slow every time).",
         "- Memory figures (`#4`, `blk`) are dmm-replay's, for dmm presets only; the system allocator's are "
         "not comparable to them and are left out.", ""]
    res = index_results(timing)
    h = headline_numbers(timing, cg)
    if h["p2012_vs_dlmalloc"]:
        L += ["## P2012 preset vs dlmalloc-like preset (seed 001, tables 1-4)", "",
              f"Average {unit} per operation, warm pass, median of the repetitions. Ratio = p2012 / dlmalloc; "
              "'seed' is the seed's 'Avg. Diff.' as the equivalent ratio (32-bit P2012 RTL simulation against "
              "a dlmalloc variant; here both are presets of the same library on x86-64).", ""]
        rows = []
        for r in h["p2012_vs_dlmalloc"]:
            s = SEED_AVG_DIFF.get(r["workload"])
            rows.append([r["workload"],
                         fmt(r["warm_malloc_dlmalloc"], 1), fmt(r["warm_malloc_p2012"], 1),
                         fmt(r["warm_malloc_ratio"], 2), fmt(r["ir_malloc_ratio"], 2),
                         fmt(1 + s["malloc"] / 100, 2) if s else "-",
                         fmt(r["warm_free_dlmalloc"], 1), fmt(r["warm_free_p2012"], 1),
                         fmt(r["warm_free_ratio"], 2), fmt(r["ir_free_ratio"], 2),
                         fmt(1 + s["free"] / 100, 2) if s else "-",
                         fmt(r["cold_malloc_ratio"], 2), fmt(r["cold_free_ratio"], 2),
                         "yes" if r["failed_p2012"] else ""])
        L += [md_table(["workload", "malloc dl", "malloc p2012", "ratio", "instr. ratio", "seed", "free dl",
                        "free p2012", "ratio", "instr. ratio", "seed", "cold malloc ratio", "cold free ratio",
                        "p2012 failures"], rows), ""]
    if h["fragment_max"]:
        L += ["## Worst case on the fragmenting workload", "",
              f"`fragment`: worst {unit} of one malloc.", ""]
        rows = [[tn, fmt(v["warm"]["avg"], 1), fmt(v["warm"]["p99"]), fmt(v["warm"]["max_min"]),
                 fmt(v["cold"]["max_min"]), fmt(v["warm"]["max"]), fmt(v["warm"]["max_worst"]),
                 fmt(v["free_max_min"]), fmt(v["ir_malloc"], 0)] for tn, v in h["fragment_max"].items()]
        L += [md_table(["target", "malloc avg", "p99", "max (min, warm)", "max (min, cold)", "max (median)",
                        "max (worst rep)", "free max (min)", "instr./malloc"], rows), ""]
    L += ["## All workloads", "",
          f"Warm pass, {unit} per operation (median of repetitions). #4 = peak footprint / peak live requested "
          "(J&W #4, the heap's exact peak extent); blk = peak used-block bytes / peak live; xdl = malloc "
          "average relative to dlmalloc-like.", ""]
    for w in timing["workloads"]:
        L += [f"### {w.get('name')}", "",
              f"{w.get('summary') or ''}. {fmt(w.get('ops'))} ops ({fmt(w.get('allocs'))} malloc, "
              f"{fmt(w.get('frees'))} free, {fmt(w.get('reallocs'))} realloc), peak live "
              f"{fmt(w.get('peak_live_requested'))} B, trace hash `{w.get('hash')}`.", "",
              md_table(WL_HEADER, workload_rows(timing, res, w.get("name"))), ""]
    if h["footprint"]:
        names = [w.get("name") for w in timing["workloads"]]
        L += ["## Footprint per preset", "",
              "J&W #4 (peak footprint / peak live requested) per workload; lower is better, 1.00 is the ideal.", "",
              md_table(["preset"] + names,
                       [[p] + [fmt(v["per_workload"].get(n), 2) for n in names] for p, v in h["footprint"].items()]),
              ""]
    if cg:
        ctx = cg.get("context") or {}
        L += ["## Instructions per operation (callgrind)", "",
              f"Exact and repeatable ({ctx.get('valgrind')}). {ctx.get('method')}. "
              f"System allocator: {ctx.get('system_allocator')}.", "",
              "### Benchmark configuration, op-weighted over all workloads", ""]
        rows = [[tn, fmt(v.get("malloc"), 1), fmt(v.get("free"), 1), fmt(v.get("realloc"), 1), fmt(v.get("all"), 1)]
                for tn, v in (dig(cg, "summary", "bench_config_per_op") or {}).items()]
        L += [md_table(["target", "malloc", "free", "realloc", "all ops"], rows), ""]
        fz = dig(cg, "summary", "frozen_vs_runtime_per_op") or {}
        if fz:
            L += ["### Runtime vs compile-time frozen configuration", "",
                  "Both builds run the configuration of `configs/frozen/<preset>.h`; the runtime build reads "
                  "every policy from the config struct, the frozen build has them as constants. Op-weighted over "
                  "all workloads.", ""]
            rows = []
            for p, v in fz.items():
                r, z = v.get("runtime", {}), v.get("frozen", {})
                rows.append([p, fmt(r.get("malloc"), 1), fmt(z.get("malloc"), 1), fmt(r.get("free"), 1),
                             fmt(z.get("free"), 1), fmt(r.get("all"), 1), fmt(z.get("all"), 1),
                             fmt(v.get("frozen_over_runtime"), 3)])
            L += [md_table(["preset", "malloc runtime", "malloc frozen", "free runtime", "free frozen",
                            "all runtime", "all frozen", "frozen / runtime"], rows), ""]
    if size:
        L += ["## Cortex-M4 code size", "",
              "From `bench/results/embedded_size.json` (see `embedded_size.md` and docs/embedded-size.md; "
              "other targets there too), bytes:", ""]
        variants = size.get("variants")
        if isinstance(variants, list):
            rows = []
            for v in variants:
                if not isinstance(v, dict) or v.get("target", "cortex-m4") != "cortex-m4":
                    continue
                ar, ln = v.get("archive") or {}, v.get("linked_malloc_free_path") or {}
                rows.append([v.get("name"), v.get("frozen_config") or "runtime", fmt(ar.get("text")),
                             fmt(ar.get("rodata")), fmt(ln.get("text"))])
            L += [md_table(["variant", "config", ".text (library)", ".rodata", "linked malloc/free path"],
                           rows, ["l", "l", "r", "r", "r"]), ""]
        else:
            L += [f"({a.size}: no 'variants' list)", ""]
    tmp = a.out + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(str(x) for x in L).rstrip() + "\n")
        os.replace(tmp, a.out)
    except OSError as e:
        raise ReportError(f"{a.out}: cannot write it ({e.strerror or e})")
    print(f"report.py: wrote {a.out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp = ap.add_subparsers(dest="cmd", required=True)
    c = sp.add_parser("collect")
    c.add_argument("--runs", required=True)
    c.add_argument("--list", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--commit", default="unknown")
    c.add_argument("--arena", default=None)
    c.add_argument("--overrides", default=None)
    g = sp.add_parser("callgrind")
    g.add_argument("--manifest", required=True)
    g.add_argument("--gen-log", required=True)
    g.add_argument("--frozen-configs")
    g.add_argument("--out", required=True)
    g.add_argument("--commit", default="unknown")
    g.add_argument("--valgrind", default="unknown")
    g.add_argument("--overrides", default=None)
    m = sp.add_parser("markdown")
    m.add_argument("--timing", required=True)
    m.add_argument("--callgrind")
    m.add_argument("--commands")
    m.add_argument("--size")
    m.add_argument("--out", required=True)
    m.add_argument("--script", default="scripts/bench.sh")
    t = sp.add_parser("table")
    t.add_argument("--timing", required=True)
    h = sp.add_parser("headline")
    h.add_argument("--timing", required=True)
    h.add_argument("--callgrind")
    a = ap.parse_args(argv)
    try:
        {"collect": cmd_collect, "callgrind": cmd_callgrind, "markdown": cmd_markdown, "table": cmd_table,
         "headline": cmd_headline}[a.cmd](a)
    except ReportError as e:
        return fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
