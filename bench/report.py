#!/usr/bin/env python3
"""bench/report.py - turns the heap benchmark's raw output into results.

Subcommands (called by scripts/bench.sh; standard library only):

  callgrind --manifest M --frozen-configs F --out heap_callgrind.json
        parse the callgrind runs listed in M (tab separated: kind, build,
        target, workload, file prefix; <prefix>.cg is the callgrind output,
        <prefix>.ops the OPCOUNT lines heap_bench printed)
  markdown --timing heap_bench.json --callgrind heap_callgrind.json
           --commands commands.txt --out heap.md [--size cortex_m4_size.json]
        write the markdown report
  headline --timing heap_bench.json --callgrind heap_callgrind.json
        print the numbers the issue's closing note asks for
"""
import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys

PRESETS = ["dlmalloc", "tlsf", "halffit", "firstfit", "p2012"]
P2012_KERNELS = ["integral", "gaussian", "fast", "matmul"]
KINDS = ["malloc", "free", "realloc"]

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

ANNOT_RE = re.compile(r"^\s*([\d,]+)\s.*?[:\s](bench_op_(?:malloc|free|realloc))\b")
OPCOUNT_RE = re.compile(r"^OPCOUNT (\S+) (\S+) malloc=(\d+) free=(\d+) realloc=(\d+) failed=(\d+)")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def read_totals(cg_file):
    """Whole-run collected Ir from a callgrind output file."""
    total = None
    with open(cg_file) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    if total is None:
        raise SystemExit(f"report.py: no totals in {cg_file}")
    return total


def read_inclusive(cg_file):
    """Inclusive Ir of the bench_op_* entry points (callgrind_annotate)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", cg_file],
        check=True, capture_output=True, text=True).stdout
    inc = {}
    for line in out.splitlines():
        m = ANNOT_RE.match(line)
        if m:
            kind = m.group(2)[len("bench_op_"):]
            inc[kind] = max(inc.get(kind, 0), int(m.group(1).replace(",", "")))
    return inc


def read_opcounts(ops_file):
    counts = {"malloc": 0, "free": 0, "realloc": 0, "failed": 0}
    with open(ops_file) as f:
        for line in f:
            m = OPCOUNT_RE.match(line)
            if m:
                for i, k in enumerate(["malloc", "free", "realloc", "failed"]):
                    counts[k] += int(m.group(3 + i))
    return counts


def per_op(ir, n):
    return round(ir / n, 2) if n else None


def cmd_callgrind(a):
    frozen_cfg = {}
    if a.frozen_configs and os.path.exists(a.frozen_configs):
        with open(a.frozen_configs) as f:
            for line in f:
                p, cfg = line.rstrip("\n").split("\t", 1)
                frozen_cfg[p] = cfg
    runs = []
    with open(a.manifest) as f:
        for line in f:
            kind, build, target, wl, prefix = line.rstrip("\n").split("\t")
            runs.append((kind, build, target, wl, prefix))

    def measure(prefix):
        counts = read_opcounts(prefix + ".ops")
        inc = read_inclusive(prefix + ".cg")
        rec = {}
        tot_ir = tot_n = 0
        for k in KINDS:
            ir = inc.get(k, 0)
            n = counts[k]
            rec[k] = {"count": n, "ir": ir, "per_op": per_op(ir, n)}
            tot_ir += ir
            tot_n += n
        rec["all"] = {"count": tot_n, "ir": tot_ir, "per_op": per_op(tot_ir, tot_n)}
        rec["failed"] = counts["failed"]
        return rec

    bench_rows, frozen_rows, sub = [], {}, {}
    for kind, build, target, wl, prefix in runs:
        if kind == "bench":
            row = {"target": target, "workload": wl, "build": build}
            row.update(measure(prefix))
            bench_rows.append(row)
        elif kind == "frozen":
            key = (target, wl)
            frozen_rows.setdefault(key, {"preset": target, "workload": wl,
                                         "config": frozen_cfg.get(target)})
            frozen_rows[key][build] = measure(prefix)
        elif kind == "subtract":
            sub.setdefault(target, {})
            sub[target][build] = {"ir_total": read_totals(prefix + ".cg"),
                                  "counts": read_opcounts(prefix + ".ops")}
    fr = []
    for (p, wl), row in sorted(frozen_rows.items(), key=lambda kv: (PRESETS.index(kv[0][0]), kv[0][1])):
        if "runtime" in row and "frozen" in row:
            r, z = row["runtime"]["all"]["per_op"], row["frozen"]["all"]["per_op"]
            row["frozen_over_runtime"] = round(z / r, 4) if r and z else None
        fr.append(row)
    subtraction = []
    for p in PRESETS:
        if p in sub and "ops" in sub[p] and "dry" in sub[p]:
            c = sub[p]["ops"]["counts"]
            n = c["malloc"] + c["free"] + c["realloc"]
            d = sub[p]["ops"]["ir_total"] - sub[p]["dry"]["ir_total"]
            subtraction.append({"preset": p, "ir_ops_only": sub[p]["ops"]["ir_total"],
                                "ir_dry": sub[p]["dry"]["ir_total"], "ops": n,
                                "per_op": per_op(d, n)})

    # summaries: op-weighted over all workloads
    def weighted(rows, pick):
        agg = {}
        for row in rows:
            rec = pick(row)
            if rec is None:
                continue
            t = agg.setdefault(row["_key"], {k: [0, 0] for k in KINDS + ["all"]})
            for k in KINDS + ["all"]:
                t[k][0] += rec[k]["ir"]
                t[k][1] += rec[k]["count"]
        return {key: {k: per_op(v[0], v[1]) for k, v in t.items()} for key, t in agg.items()}

    for row in bench_rows:
        row["_key"] = row["target"]
    s_bench = weighted(bench_rows, lambda r: r)
    for row in bench_rows:
        del row["_key"]
    s_frozen = {}
    for build in ("runtime", "frozen"):
        for row in fr:
            row["_key"] = row["preset"]
        w = weighted(fr, lambda r, b=build: r.get(b))
        for p, v in w.items():
            s_frozen.setdefault(p, {})[build] = v
        for row in fr:
            del row["_key"]
    for p, v in s_frozen.items():
        if v.get("runtime", {}).get("all") and v.get("frozen", {}).get("all"):
            v["frozen_over_runtime"] = round(v["frozen"]["all"] / v["runtime"]["all"], 4)

    doc = {
        "schema": "dmmkit.heap_callgrind",
        "schema_version": 1,
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": socket.gethostname(),
            "cpu_model": cpu_model(),
            "git_commit": a.commit,
            "valgrind": a.valgrind,
            "method": "valgrind --tool=callgrind --toggle-collect='bench_op_*'; instructions per op = "
                      "inclusive Ir of bench_op_<kind> (callgrind_annotate --inclusive=yes) / number of "
                      "<kind> calls; bench_op_* are heap_bench's out-of-line entry points, so each figure "
                      "includes the same ~5 instructions of wrapper and indirect call for every target",
            "bench_config": "preset + lock=none,stats=counters,harden=off,poison=off (as in the timing run)",
            "frozen_config": "the configs/frozen/<preset>.h config, run by both the frozen build and the "
                             "runtime build (--config), so the builds differ only in frozen policy reads",
        },
        "bench_config": bench_rows,
        "frozen_vs_runtime": fr,
        "subtraction_check": subtraction,
        "summary": {"bench_config_per_op": s_bench, "frozen_vs_runtime_per_op": s_frozen},
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"report.py: wrote {a.out}")


# ---------------------------------------------------------------------------
# markdown

def load(path):
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return None


def fmt(v, nd=0):
    if v is None:
        return "-"
    if isinstance(v, float) and v != v:
        return "-"
    return f"{v:,.{nd}f}"


def ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


def index_results(timing):
    res = {}
    for r in timing["results"]:
        res[(r["workload"], r["target"])] = r
    return res


def cg_bench_index(cg):
    idx = {}
    if cg:
        for row in cg["bench_config"]:
            idx[(row["workload"], row["target"])] = row
    return idx


def headline_numbers(timing, cg):
    """The figures the issue's closing note asks for."""
    out = {}
    cgi = cg_bench_index(cg)
    if timing:
        res = index_results(timing)
        rows = []
        for w in P2012_KERNELS + [k + "-rf" for k in P2012_KERNELS]:
            p, d = res.get((w, "p2012")), res.get((w, "dlmalloc"))
            if not p or not d:
                continue
            row = {"workload": w, "failed_p2012": p["failed"]}
            for pas in ("warm", "cold"):
                for k in ("malloc", "free"):
                    row[f"{pas}_{k}_ratio"] = ratio(p["passes"][pas][k]["avg"], d["passes"][pas][k]["avg"])
                    row[f"{pas}_{k}_p2012"] = p["passes"][pas][k]["avg"]
                    row[f"{pas}_{k}_dlmalloc"] = d["passes"][pas][k]["avg"]
                row[f"{pas}_malloc_max_ratio"] = ratio(p["passes"][pas]["malloc"]["max"],
                                                      d["passes"][pas]["malloc"]["max"])
                row[f"{pas}_malloc_dmax_ratio"] = ratio(p["passes"][pas]["malloc"]["denoised"]["max"],
                                                       d["passes"][pas]["malloc"]["denoised"]["max"])
            cp, cd = cgi.get((w, "p2012")), cgi.get((w, "dlmalloc"))
            for k in ("malloc", "free"):
                row[f"ir_{k}_p2012"] = cp[k]["per_op"] if cp else None
                row[f"ir_{k}_dlmalloc"] = cd[k]["per_op"] if cd else None
                row[f"ir_{k}_ratio"] = ratio(row[f"ir_{k}_p2012"], row[f"ir_{k}_dlmalloc"])
            rows.append(row)
        out["p2012_vs_dlmalloc"] = rows
        frag = {}
        for t in ("tlsf", "firstfit", "dlmalloc", "halffit", "p2012", "glibc"):
            r = res.get(("fragment", t))
            if r:
                frag[t] = {pas: {"malloc_max": r["passes"][pas]["malloc"]["max"],
                                 "malloc_dmax": r["passes"][pas]["malloc"]["denoised"]["max"],
                                 "free_dmax": r["passes"][pas]["free"]["denoised"]["max"],
                                 "malloc_max_raw": r["passes"][pas]["malloc"]["max_raw"],
                                 "malloc_p99": r["passes"][pas]["malloc"]["p99"],
                                 "malloc_avg": r["passes"][pas]["malloc"]["avg"],
                                 "free_max": r["passes"][pas]["free"]["max"]}
                           for pas in ("warm", "cold")}
                if r.get("search"):
                    frag[t]["search_max"] = r["search"]["max"]
                    frag[t]["search_per_alloc"] = r["search"]["per_alloc"]
                c = cgi.get(("fragment", t))
                frag[t]["ir_malloc"] = c["malloc"]["per_op"] if c else None
        out["fragment_max"] = frag
        fp = {}
        for t in PRESETS:
            vals = [res[(w["name"], t)]["footprint"] for w in timing["workloads"] if (w["name"], t) in res]
            vals = [v for v in vals if v and not v.get("failed")]
            if vals:
                fp[t] = {
                    "hwm_over_peak_live_median": statistics.median(v["hwm_over_peak_live"] for v in vals),
                    "hwm_over_peak_live_max": max(v["hwm_over_peak_live"] for v in vals),
                    "block_over_peak_live_median": statistics.median(v["block_over_peak_live"] for v in vals),
                    "per_workload": {w["name"]: res[(w["name"], t)]["footprint"]["hwm_over_peak_live"]
                                     for w in timing["workloads"] if (w["name"], t) in res
                                     and res[(w["name"], t)]["footprint"]},
                }
        out["footprint"] = fp
    if cg:
        out["frozen_vs_runtime"] = cg["summary"]["frozen_vs_runtime_per_op"]
        out["instructions_bench_config"] = cg["summary"]["bench_config_per_op"]
    return out


def cmd_headline(a):
    h = headline_numbers(load(a.timing), load(a.callgrind))
    unit = "ticks"
    print("\n== headline numbers ==")
    for r in h.get("p2012_vs_dlmalloc", []):
        print(f"p2012/dlmalloc {r['workload']:<12} avg {unit}: malloc {fmt(r['warm_malloc_ratio'], 2)} "
              f"free {fmt(r['warm_free_ratio'], 2)} (warm; cold {fmt(r['cold_malloc_ratio'], 2)} / "
              f"{fmt(r['cold_free_ratio'], 2)}); instructions: malloc {fmt(r['ir_malloc_ratio'], 2)} "
              f"free {fmt(r['ir_free_ratio'], 2)}" + ("  [p2012 had FAILED allocations]" if r["failed_p2012"] else ""))
    fm = h.get("fragment_max", {})
    if "tlsf" in fm and "firstfit" in fm:
        t, f = fm["tlsf"]["warm"], fm["firstfit"]["warm"]
        print(f"fragment worst malloc ({unit}, warm): denoised max tlsf {fmt(t['malloc_dmax'])} vs firstfit "
              f"{fmt(f['malloc_dmax'])} (ratio {fmt(ratio(t['malloc_dmax'], f['malloc_dmax']), 3)}); median-of-reps "
              f"max {fmt(t['malloc_max'])} vs {fmt(f['malloc_max'])}; search_max tlsf "
              f"{fm['tlsf'].get('search_max')} firstfit {fm['firstfit'].get('search_max')}")
    for p, v in h.get("frozen_vs_runtime", {}).items():
        r, z = v.get("runtime", {}), v.get("frozen", {})
        print(f"instructions/op {p:<9} runtime / frozen: malloc {fmt(r.get('malloc'), 1)} / {fmt(z.get('malloc'), 1)}"
              f"  free {fmt(r.get('free'), 1)} / {fmt(z.get('free'), 1)}  all {fmt(r.get('all'), 1)} / "
              f"{fmt(z.get('all'), 1)}  frozen/runtime {fmt(v.get('frozen_over_runtime'), 3)}")
    for p, v in h.get("footprint", {}).items():
        print(f"footprint {p:<9} hwm/peak-live median {fmt(v['hwm_over_peak_live_median'], 2)} "
              f"max {fmt(v['hwm_over_peak_live_max'], 2)}  blocks/peak-live median "
              f"{fmt(v['block_over_peak_live_median'], 2)}")


def md_table(header, rows, align=None):
    out = ["| " + " | ".join(header) + " |"]
    al = align or (["l"] + ["r"] * (len(header) - 1))
    out.append("| " + " | ".join("---:" if x == "r" else "---" for x in al) + " |")
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def cmd_markdown(a):
    timing, cg, size = load(a.timing), load(a.callgrind), load(a.size)
    commands = open(a.commands).read().strip() if a.commands and os.path.exists(a.commands) else ""
    L = []
    L.append("# Heap benchmark results")
    L.append("")
    L.append("Generated by `" + a.script + "` (see `bench/README.md` for the method). "
             "Numbers from one machine on one day: re-run to compare; read ratios, not absolute values.")
    L.append("")
    if timing:
        c = timing["context"]
        t = c["timer"]
        L.append("## Machine and build")
        L.append("")
        L.append(md_table(["", ""], [
            ["date (UTC)", c["date"]],
            ["host", c["host"]],
            ["CPU", f"{c['cpu_model']} ({c['cpus_online']} CPUs online, pinned to CPU {c['pinned_cpu']})"],
            ["compiler / flags", f"{c['compiler']} / `{c['cflags']}` ({c['build_type']})"],
            ["git commit", c["git_commit"]],
            ["timer", f"{t['kind']} ({t['fence']}), unit {t['unit']}, ~{t['ticks_per_second']/1e9:.2f} GHz; "
                      f"empty bracket {t['bracket_overhead']} subtracted; counter step ~{t.get('counter_step', 0):.1f}; "
                      f"samples over {t['outlier_threshold_us']:g} us "
                      f"counted as preemption outliers"],
            ["repetitions", f"{c['reps']} (median reported), presets interleaved within each"],
            ["heap config", f"each preset + `{c['bench_config_overrides']}`, one {c['arena_bytes'] >> 20} MiB "
                            f"prefaulted arena"],
        ], ["l", "l"]))
        L.append("")
        if t["unit"] == "tsc_ticks":
            L.append("TSC ticks count at the constant reference rate, not core clock cycles; under "
                     "frequency scaling the two differ, ratios between allocators are unaffected.")
            L.append("")
    L.append("## How these numbers were produced")
    L.append("")
    L.append("```")
    L.append(commands or a.script)
    L.append("```")
    L.append("")

    h = headline_numbers(timing, cg)
    L.append("## Reading these numbers")
    L.append("")
    L.append("- The workloads are synthetic shapes of the seed's kernels, not its traces "
             "(bench/workloads/README.md). Each P2012 kernel is one application run: every allocation "
             "before the tasks, every free after them, so during the allocation phase every preset "
             "carves fresh memory and the comparison mostly measures each preset's fixed cost per call.")
    L.append("- Single operations last a few tens of TSC ticks here, close to the counter's step "
             "(reported above), so per-op p50/p99 are quantised; averages over hundreds of operations "
             "and the instruction counts resolve the differences. Worst cases: read `dmax`.")
    L.append("- The runtime-vs-frozen comparison uses the frozen headers' configuration "
             "(hardening=checked), the timing tables the benchmark configuration (hardening=off).")
    L.append("")
    if timing:
        res = index_results(timing)
        unit = timing["context"]["timer"]["unit"]
        L.append("## P2012 preset vs dlmalloc-like preset (seed 001, tables 1-4)")
        L.append("")
        L.append(f"Average {unit} per operation, warm pass, median of the repetitions. Ratio = p2012 / dlmalloc "
                 "(the seed reports -62% on allocation overall, i.e. a ratio of about 0.38; per kernel its "
                 "'Avg. Diff.' column is shown as the equivalent ratio). The seed measured 32-bit P2012 "
                 "RTL simulation against a dlmalloc variant; here both are presets of the same library on "
                 "x86-64, on synthetic shapes of the kernels (bench/workloads/README.md).")
        L.append("")
        rows = []
        for r in h["p2012_vs_dlmalloc"]:
            s = SEED_AVG_DIFF.get(r["workload"])
            rows.append([
                r["workload"],
                fmt(r["warm_malloc_dlmalloc"], 1), fmt(r["warm_malloc_p2012"], 1), fmt(r["warm_malloc_ratio"], 2),
                fmt(r["ir_malloc_ratio"], 2),
                fmt(1 + s["malloc"] / 100, 2) if s else "-",
                fmt(r["warm_free_dlmalloc"], 1), fmt(r["warm_free_p2012"], 1), fmt(r["warm_free_ratio"], 2),
                fmt(r["ir_free_ratio"], 2),
                fmt(1 + s["free"] / 100, 2) if s else "-",
                fmt(r["cold_malloc_ratio"], 2), fmt(r["cold_free_ratio"], 2),
                fmt(r["warm_malloc_dmax_ratio"], 2),
                "yes" if r["failed_p2012"] else "",
            ])
        L.append(md_table(["workload", "malloc dl", "malloc p2012", "ratio", "instr. ratio", "seed",
                           "free dl", "free p2012", "ratio", "instr. ratio", "seed", "cold malloc ratio",
                           "cold free ratio", "worst malloc ratio (dmax)", "p2012 failures"], rows))
        L.append("")
        L.append("'instr. ratio' is the same ratio in instructions per operation (callgrind, benchmark "
                 "configuration): exact, and free of the timer's ~25-tick quantisation that dominates "
                 "operations this short.")
        L.append("")

        L.append("## Worst case on the fragmenting workload")
        L.append("")
        L.append(f"`fragment`: sizes log-uniform 16 B..16 KiB, random lifetimes, 500..2500 live objects. "
                 f"Worst {unit} of one malloc, and the most free-list nodes one request visited (exact, from "
                 "the heap's statistics).")
        L.append("")
        rows = []
        for tname, v in h["fragment_max"].items():
            rows.append([tname, fmt(v["warm"]["malloc_avg"], 1), fmt(v["warm"]["malloc_p99"]),
                         fmt(v["warm"]["malloc_dmax"]), fmt(v["cold"]["malloc_dmax"]),
                         fmt(v["warm"]["malloc_max"]), fmt(v["warm"]["malloc_max_raw"]),
                         fmt(v["warm"]["free_dmax"]),
                         str(v.get("search_max", "-")), fmt(v.get("search_per_alloc"), 1),
                         fmt(v.get("ir_malloc"), 0)])
        L.append(md_table(["target", "malloc avg", "p99", "worst (dmax, warm)", "worst (dmax, cold)",
                           "max (median of reps)", "max_raw", "free worst (dmax)", "search max",
                           "steps/alloc", "instr./malloc"], rows))
        L.append("")
        L.append("dmax: the replay is deterministic, so each operation's minimum over the repetitions strips "
                 "one-off interrupts; dmax is the largest of those minima (bench/README.md).")
        L.append("")

        L.append("## All workloads")
        L.append("")
        L.append(f"Warm pass, {unit} per operation (median of repetitions). fp = peak footprint / peak live "
                 "requested bytes (high-water mark of the arena, control block included); blk = peak bytes in "
                 "used blocks / peak live requested; xdl = malloc average relative to dlmalloc-like.")
        L.append("")
        for w in timing["workloads"]:
            L.append(f"### {w['name']}")
            L.append("")
            L.append(f"{w['summary']}. {w['ops']:,} ops ({w['allocs']:,} malloc, {w['frees']:,} free, "
                     f"{w['reallocs']:,} realloc), peak live {w['peak_live_requested']:,} B, "
                     f"largest request {w['max_size']:,} B.")
            L.append("")
            dl = res.get((w["name"], "dlmalloc"))
            rows = []
            for tg in timing["targets"]:
                r = res.get((w["name"], tg["name"]))
                if not r:
                    continue
                m, f, re_ = (r["passes"]["warm"][k] for k in KINDS)
                fpv = r["footprint"]
                xdl = ratio(m["avg"], dl["passes"]["warm"]["malloc"]["avg"]) if dl else None
                rows.append([
                    tg["name"] + (" (ref)" if tg["kind"] != "dmm_heap" else ""),
                    fmt(m["avg"], 1), fmt(m["p50"]), fmt(m["p99"]), fmt(m["max"]), fmt(m["denoised"]["max"]),
                    fmt(r["passes"]["cold"]["malloc"]["max"]),
                    fmt(f["avg"], 1), fmt(f["p99"]), fmt(f["max"]), fmt(f["denoised"]["max"]),
                    fmt(re_["avg"], 1) if re_["count"] else "-",
                    fmt(fpv["hwm_over_peak_live"], 2) if fpv else "-",
                    fmt(fpv["block_over_peak_live"], 2) if fpv else "-",
                    fmt(xdl, 2),
                    fmt(r["search"]["per_alloc"], 1) if r.get("search") else "-",
                    str(r["failed"]) if r["failed"] else "",
                ])
            L.append(md_table(["target", "malloc avg", "p50", "p99", "max", "dmax", "cold max", "free avg", "p99",
                               "max", "dmax", "realloc avg", "fp", "blk", "xdl", "steps/alloc", "failed"], rows))
            L.append("")

        L.append("## Footprint per preset")
        L.append("")
        L.append("Peak footprint / peak live requested bytes (J&W #4 with the arena's high-water mark as "
                 "footprint), per workload; lower is better, 1.00 is the ideal.")
        L.append("")
        names = [w["name"] for w in timing["workloads"]]
        rows = []
        for p in PRESETS:
            row = [p]
            for n in names:
                r = res.get((n, p))
                row.append(fmt(r["footprint"]["hwm_over_peak_live"], 2) if r and r["footprint"] else "-")
            rows.append(row)
        L.append(md_table(["preset"] + names, rows))
        L.append("")

    if cg:
        L.append("## Instructions per operation (callgrind)")
        L.append("")
        L.append("Exact and repeatable (valgrind " + cg["context"]["valgrind"] + "). " + cg["context"]["method"] + ".")
        L.append("")
        L.append("### Benchmark configuration, op-weighted over all workloads")
        L.append("")
        rows = []
        for tname, v in cg["summary"]["bench_config_per_op"].items():
            rows.append([tname, fmt(v["malloc"], 1), fmt(v["free"], 1), fmt(v["realloc"], 1), fmt(v["all"], 1)])
        L.append(md_table(["target", "malloc", "free", "realloc", "all ops"], rows))
        L.append("")
        L.append("### Runtime vs compile-time frozen configuration")
        L.append("")
        L.append("Both builds run the configuration of `configs/frozen/<preset>.h` (hardening=checked there, "
                 "so these counts include pointer validation); the runtime build reads every policy from the "
                 "config struct, the frozen build has them as constants. Op-weighted over all workloads.")
        L.append("")
        rows = []
        for p, v in cg["summary"]["frozen_vs_runtime_per_op"].items():
            r, z = v.get("runtime", {}), v.get("frozen", {})
            rows.append([p, fmt(r.get("malloc"), 1), fmt(z.get("malloc"), 1), fmt(r.get("free"), 1),
                         fmt(z.get("free"), 1), fmt(r.get("all"), 1), fmt(z.get("all"), 1),
                         fmt(v.get("frozen_over_runtime"), 3)])
        L.append(md_table(["preset", "malloc runtime", "malloc frozen", "free runtime", "free frozen",
                           "all runtime", "all frozen", "frozen / runtime"], rows))
        L.append("")
        L.append("Per workload (all ops):")
        L.append("")
        per = {}
        for row in cg["frozen_vs_runtime"]:
            per.setdefault(row["preset"], {})[row["workload"]] = row
        wls = sorted({row["workload"] for row in cg["frozen_vs_runtime"]},
                     key=lambda n: [w["name"] for w in timing["workloads"]].index(n) if timing and
                     n in [w["name"] for w in timing["workloads"]] else 99)
        rows = []
        for p, d in per.items():
            row = [p]
            for n in wls:
                x = d.get(n)
                if x and "runtime" in x and "frozen" in x:
                    row.append(f"{fmt(x['runtime']['all']['per_op'], 0)} / {fmt(x['frozen']['all']['per_op'], 0)}")
                else:
                    row.append("-")
            rows.append(row)
        L.append(md_table(["preset (runtime / frozen)"] + wls, rows))
        L.append("")
        if cg.get("subtraction_check"):
            L.append("Cross-check by subtraction (whole program, `--ops-only` minus `--dry`, all workloads, "
                     "benchmark configuration; includes heap init/destroy and the call wrappers):")
            L.append("")
            rows = [[s["preset"], f"{s['ir_ops_only']:,}", f"{s['ir_dry']:,}", f"{s['ops']:,}",
                     fmt(s["per_op"], 1)] for s in cg["subtraction_check"]]
            L.append(md_table(["preset", "Ir ops-only", "Ir dry", "ops", "Ir / op"], rows))
            L.append("")

    if size:
        L.append("## Cortex-M4 code size")
        L.append("")
        L.append("From `bench/results/cortex_m4_size.json` (written by the build's size report, see "
                 "`cortex_m4_size.md`), bytes:")
        L.append("")
        try:
            ctx = size.get("context", {})
            rows = []
            for v in size["variants"]:
                ar, ln = v.get("archive", {}), v.get("linked_malloc_free_path", {})
                rows.append([v["name"], v.get("frozen_config") or "runtime", fmt(ar.get("text")),
                             fmt(ar.get("rodata")), fmt(ln.get("text"))])
            L.append(f"{ctx.get('compiler', '?')}, `{ctx.get('flags', '?')}`, {ctx.get('date', '?')}.")
            L.append("")
            L.append(md_table(["variant", "config", ".text (library)", ".rodata", "linked malloc/free path"],
                              rows, ["l", "l", "r", "r", "r"]))
        except (KeyError, TypeError, AttributeError):
            L.append("```")
            L.append(json.dumps(size, indent=1)[:4000])
            L.append("```")
        L.append("")

    with open(a.out, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")
    print(f"report.py: wrote {a.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp = ap.add_subparsers(dest="cmd", required=True)
    c = sp.add_parser("callgrind")
    c.add_argument("--manifest", required=True)
    c.add_argument("--frozen-configs")
    c.add_argument("--out", required=True)
    c.add_argument("--commit", default="unknown")
    c.add_argument("--valgrind", default="unknown")
    m = sp.add_parser("markdown")
    m.add_argument("--timing")
    m.add_argument("--callgrind")
    m.add_argument("--commands")
    m.add_argument("--size")
    m.add_argument("--out", required=True)
    m.add_argument("--script", default="scripts/bench.sh")
    h = sp.add_parser("headline")
    h.add_argument("--timing")
    h.add_argument("--callgrind")
    a = ap.parse_args()
    {"callgrind": cmd_callgrind, "markdown": cmd_markdown, "headline": cmd_headline}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
