#!/usr/bin/env python3
"""scripts/seed001_bench.py - seed 001's headline against dlmalloc 2.8.6 itself.

Seed 001_181cefa610c4dac1.txt reports a custom P2012 allocator that spends
62 % fewer cycles in allocation than a dlmalloc variant.  This benchmark puts
dmmkit's answer to that beside the real dlmalloc, in instructions (callgrind:
exact and deterministic, the proxy for cycles spent in allocation):

 1. `dmmkit explore` on the seed's four kernel traces and their
    randomised-free variants (bench/traces: integral, gaussian, fast,
    fast-rf, matmul, matmul-rf; --no-timing, objective speed) finds the
    configuration with the fewest allocation instructions per call
    (explore's figure: instructions inside the allocator's entry points per
    trace operation, re-measured on dmm-replay built frozen to the
    candidate, geometric mean over the traces).  Its ratio to explore's
    dlmalloc *preset* is the comparison made so far.  Then the same grid
    points again at the seed's terms, harden=off (the seed's allocators
    check nothing): explore --grid none with one --config per point, the
    dlmalloc preset so its reference.  Counters stay on in explore
    (dmm-replay reads the footprint from them and turns stats=off into
    counters); the harness runs the chosen policy with stats=off too.
 2. Both best configurations and the dlmalloc preset (as shipped and lean)
    are built frozen at
    `-O2 -DNDEBUG` (build/seed001) into the Heap v2 harness
    (bench/anchors/heap_v2.c + adapter_dmm.c), and measured with
    scripts/bench_heap_v2.py beside dlmalloc 2.8.6 built by hand into the same
    harness (bench/README.md, "Anchors": ONLY_MSPACES=1 USE_LOCKS=0
    HAVE_MMAP=0, -O2), on the eight one-kernel workloads (each kernel alone
    on a fresh heap, and with its frees redrawn, -rf; their geometric mean
    is the headline) and the `kernels` workload (the four back to back on
    one heap): instructions per malloc or free call and minimum arena.  Nothing of dlmalloc is in the
    repository: its harness binary is an argument.
 3. Code size: the linked init+malloc+free path on Cortex-M4 (-Os) of the
    best configuration frozen against the dlmalloc preset
    (scripts/size_report.sh NAME=HEADER).

  scripts/seed001_bench.py --dlmalloc /tmp/anchors/bin/heap_v2_dlmalloc_O2
  scripts/seed001_bench.py --dlmalloc PATH --out DIR      (default bench/results)

Writes seed001.json and seed001.md.  About 10 minutes on 2 cores (two
explores: 23 configs x 6 traces under callgrind, 6 frozen builds each; 4
more frozen libraries; 4 size builds).  Environment: DMM_PYTHON (the Python with the
dmmkit front end; default .venv/bin/python), DMM_JOBS (default 2).
"""
import argparse
import json
import math
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from provenance import cmake_build, markdown, provenance  # noqa: E402

TRACES = ["integral", "gaussian", "fast", "fast-rf", "matmul", "matmul-rf"]
HARNESS = ["integral", "gaussian", "fast", "matmul", "integral-rf", "gaussian-rf", "fast-rf", "matmul-rf"]
SEED_RATIO = 0.38   # the seed's "62 % fewer cycles in allocation"
CFLAGS = "-std=c11 -O2 -DNDEBUG"


# The seed's terms in explore: hardening off.  Counters stay on there: dmm-replay reads the footprint from
# them and turns stats=off into counters (tools/replay/backends.c), so a build frozen to stats=off refuses the
# config it is handed.  The harness (which reads no statistics) then runs the chosen policy at stats=off.
LEAN = ",stats=counters,harden=off"
LEAN_REF = "preset=dlmalloc" + LEAN


def lean_spec(spec):
    """A grid point's spec with hardening off (a bare preset name becomes preset=NAME)."""
    return (spec if "=" in spec else "preset=" + spec) + LEAN


def stats_off(config):
    """A normalised config with stats=off and harden=off."""
    kv = [x for x in config.split(",") if not x.startswith(("stats=", "harden="))]
    return ",".join(kv + ["stats=off", "harden=off"])


def best_of(ex):
    """The feasible config with the fewest allocation instructions per call (explore's frozen figure)."""
    feasible = [c for c in ex["configs"] if c.get("feasible") and c["aggregate"].get("instr_per_op_ranked")]
    best = min(feasible, key=lambda c: c["aggregate"]["instr_per_op_ranked"])
    if best["aggregate"].get("instr_source") != "frozen":
        die(f"the best config {best['id']} has no frozen figure (explore --frozen-max too small?)")
    return best


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def die(msg):
    print(f"seed001_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def sh(cmd, log=None, **kw):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    if log:
        with open(log, "w") as f:
            r = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, **kw)
        if r.returncode != 0:
            with open(log) as f:
                sys.stderr.write("".join(f.readlines()[-20:]))
            die(f"failed ({r.returncode}): {' '.join(cmd)}; log {log}")
        return r
    r = subprocess.run(cmd, cwd=ROOT, **kw)
    if r.returncode != 0:
        die(f"failed ({r.returncode}): {' '.join(cmd)}")
    return r


def frozen_harness(name, header, work, jobs):
    """heap_v2 + adapter_dmm against a dmm_heap library frozen to HEADER, -O2."""
    lib_dir = os.path.join(ROOT, "build", "seed001", "lib-" + name)
    sh(["cmake", "-S", ROOT, "-B", lib_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_C_FLAGS_RELEASE={CFLAGS.replace('-std=c11 ', '')}", f"-DDMM_FROZEN_CONFIG={header}",
        "-DDMM_BUILD_TESTS=OFF", "-DDMM_BUILD_BENCH=OFF", "-DDMM_BUILD_SHARED=OFF", "-DDMM_BUILD_FUZZ=OFF"],
       log=os.path.join(work, f"cmake-{name}.log"))
    sh(["cmake", "--build", lib_dir, "--target", "dmm_heap", "-j", str(jobs)],
       log=os.path.join(work, f"build-{name}.log"))
    exe = os.path.join(ROOT, "build", "seed001", f"heap_v2_dmm_{name}")
    a = os.path.join(ROOT, "bench", "anchors")
    w = os.path.join(ROOT, "bench", "workloads")
    sh(["gcc", *CFLAGS.split(), f'-DHEAP_V2_CFLAGS="{CFLAGS}"', f'-DANCHOR_DMM_NAME="dmm-{name}-frozen-O2"',
        os.path.join(a, "heap_v2.c"), os.path.join(w, "workload.c"), os.path.join(a, "adapter_dmm.c"),
        "-I" + a, "-I" + w, "-I" + os.path.join(ROOT, "include"), os.path.join(lib_dir, "lib", "libdmm_heap.a"),
        "-o", exe])
    return exe


def trace_rows(ex, preset):
    """An explore step's table rows: per trace, the best config's instructions
    per call beside the reference preset's (ex[preset]), then their means."""
    rows = []
    for t in TRACES:
        b, p = ex["best"]["per_trace"][t], ex[preset]["per_trace"][t]
        rows.append(f"| {t} | {b['ops']} | {b['instructions_per_call']:.1f} | {p['instructions_per_call']:.1f} | "
                    f"{b['instructions_per_call'] / p['instructions_per_call']:.3f} |")
    rows += [f"| geometric mean | | {ex['best']['instructions_per_call']:.1f} | "
             f"{ex[preset]['instructions_per_call']:.1f} | {ex['ratio_best_over_preset']:.3f} |", ""]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dlmalloc", required=True, metavar="PATH",
                    help="heap_v2 built with adapter_dlmalloc.c and dlmalloc 2.8.6 (bench/README.md, Anchors)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--grid", default="default", choices=["default", "full", "presets"])
    a = ap.parse_args()
    jobs = int(os.environ.get("DMM_JOBS", "2"))
    py = os.environ.get("DMM_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
    command = "scripts/seed001_bench.py --dlmalloc " + a.dlmalloc + \
        ("" if a.grid == "default" else f" --grid {a.grid}")

    if not os.access(a.dlmalloc, os.X_OK):
        die(f"--dlmalloc {a.dlmalloc}: not an executable (build it as bench/README.md's anchors block says)")
    info = subprocess.run([a.dlmalloc, "--info"], capture_output=True, text=True).stdout
    if "adapter=dlmalloc" not in info or "2.8.6" not in info:
        die(f"--dlmalloc {a.dlmalloc}: not the heap_v2 harness over dlmalloc 2.8.6 (--info: {info.strip()!r})")
    if subprocess.run([py, "-c", "import dmmkit"], capture_output=True).returncode != 0:
        die(f"{py} cannot import dmmkit (python/run_tests.sh makes .venv; or set DMM_PYTHON)")

    work = os.path.join(ROOT, "build", "seed001")
    os.makedirs(work, exist_ok=True)
    sh(["cmake", "--preset", "release"], log=os.path.join(work, "cmake-release.log"))
    sh(["cmake", "--build", "--preset", "release", "-j", str(jobs), "--target",
        "dmm-replay", "dmm-analyse", "dmm-trace", "dmm-config"], log=os.path.join(work, "build-release.log"))

    # 1. explore
    traces = [os.path.join(ROOT, "bench", "traces", t + ".trace") for t in TRACES]
    ej = os.path.join(work, "explore.json")
    sh([py, "-m", "dmmkit", "--root", ROOT, "explore", *traces, "--grid", a.grid, "--no-timing",
        "--objective", "speed", "--no-pictures", "--results", ej, "--cache", os.path.join(work, "cache"),
        "-j", str(jobs)], log=os.path.join(work, "explore.log"))
    ex = json.load(open(ej))
    best = best_of(ex)
    pre = next(c for c in ex["configs"] if c["id"] == "dlmalloc")

    # 1b. the same grid at the seed's terms: every point with hardening off (the seed's allocators check
    # nothing; counters stay on in explore, see LEAN); the dlmalloc preset so first, explore's reference
    lean_specs = [LEAN_REF] + [s for s in (lean_spec(c["spec"]) for c in ex["configs"]) if s != LEAN_REF]
    ejl = os.path.join(work, "explore_lean.json")
    sh([py, "-m", "dmmkit", "--root", ROOT, "explore", *traces, "--grid", "none",
        *[x for s in lean_specs for x in ("--config", s)], "--no-timing", "--objective", "speed", "--no-pictures",
        "--results", ejl, "--cache", os.path.join(work, "cache"), "-j", str(jobs)],
       log=os.path.join(work, "explore_lean.log"))
    exl = json.load(open(ejl))
    best_l = best_of(exl)
    name_l = best_l["name"][:-len(LEAN)] if best_l["name"].endswith(LEAN) else best_l["name"]
    pre_l = next(c for c in exl["configs"] if c["spec"] == LEAN_REF)

    def per_trace(c):
        return {t: {"ops": v["ops"], "instructions_per_call": v.get("instr_per_op_frozen", v.get("instr_per_op")),
                    "instructions_per_call_runtime": v.get("instr_per_op")}
                for t, v in c["per_trace"].items()}

    # 2. head to head on the harness
    hdr_best = os.path.join(work, "best.h")
    with open(hdr_best, "w") as f:
        f.write(subprocess.run([os.path.join(ROOT, "build", "release", "tools", "dmm-config"), "header",
                                best["config"]], capture_output=True, text=True, check=True).stdout)
    # the best config of the explore at the seed's terms, with stats off too (the seed's allocator keeps
    # no counters; the harness reads none)
    lean_cfg = stats_off(best_l["config"])
    hdr_lean = os.path.join(work, "best_lean.h")
    with open(hdr_lean, "w") as f:
        f.write(subprocess.run([os.path.join(ROOT, "build", "release", "tools", "dmm-config"), "header",
                                lean_cfg], capture_output=True, text=True, check=True).stdout)
    hdr_pre = os.path.join(ROOT, "configs", "frozen", "dlmalloc.h")
    hdr_pre_l = os.path.join(ROOT, "configs", "frozen", "lean", "dlmalloc.h")
    bin_best = frozen_harness("best", hdr_best, work, jobs)
    bin_pre = frozen_harness("dlmalloc-preset", hdr_pre, work, jobs)
    bin_lean = frozen_harness("best-lean", hdr_lean, work, jobs)
    bin_pre_l = frozen_harness("dlmalloc-preset-lean", hdr_pre_l, work, jobs)
    hv2 = os.path.join(work, "hv2")
    lst = subprocess.run([a.dlmalloc, "--list"], capture_output=True, text=True).stdout
    missing = [w for w in HARNESS if not any(l.startswith(w + "\t") for l in lst.splitlines())]
    if missing:
        die(f"--dlmalloc {a.dlmalloc}: its heap_v2 has no workload {', '.join(missing)} (rebuild it from this "
            "tree's bench/anchors/heap_v2.c)")
    sh([sys.executable, os.path.join(ROOT, "scripts", "bench_heap_v2.py"), "--no-build",
        "--workloads", ",".join(HARNESS + ["kernels"]),
        "--out", hv2, "--jobs", str(jobs), "--peer", "dlmalloc-2.8.6=" + os.path.abspath(a.dlmalloc),
        bin_best, bin_pre, bin_lean, bin_pre_l], log=os.path.join(work, "heap_v2.log"))
    h = json.load(open(os.path.join(hv2, "heap_v2.json")))
    names = {os.path.abspath(os.path.join(ROOT, t["binary"])): t["name"] for t in h["targets"]}
    res = {(r["target"], r["workload"]): r for r in h["results"]}
    subjects = [("dlmalloc 2.8.6 (mspace, -O2)", "dlmalloc-2.8.6"),
                (f"dmm best ({best['name']}), frozen -O2", names[bin_best]),
                ("dmm dlmalloc preset, frozen -O2", names[bin_pre]),
                (f"dmm best at the seed's terms ({name_l}, stats and hardening off), frozen -O2", names[bin_lean]),
                ("dmm dlmalloc preset, lean, frozen -O2", names[bin_pre_l])]

    def hrow(label, target, w):
        r = res[(target, w)]
        return {"subject": label, "workload": w, "instructions_per_call": r["ir_alloc_per_op"],
                "instructions_per_call_with_wrapper": r["ir_per_op"],
                "instructions_per_malloc": r["ir_alloc_per_malloc"], "instructions_per_free": r["ir_alloc_per_free"],
                "min_arena_over_peak_live": r["min_arena_over_peak_live"]}

    hrows = [hrow(label, t, w) for w in HARNESS + ["kernels"] for label, t in subjects]
    # the seed's figure is the cycles spent in allocation: instructions inside the allocator, the
    # harness's own call wrapper (bench_op_* and the adapter, the same few for every allocator) taken out;
    # the figures with it (heap_v3's tables count it) are kept beside
    gm = {label: geomean([res[(t, w)]["ir_alloc_per_op"] for w in HARNESS]) for label, t in subjects}
    gm_w = {label: geomean([res[(t, w)]["ir_per_op"] for w in HARNESS]) for label, t in subjects}
    wrapper = sorted({res[(t, w)]["ir_wrapper_per_op"] for w in HARNESS for _, t in subjects})
    lab_dl, lab_best, lab_pre, lab_lean, lab_pre_l = (s[0] for s in subjects)

    # 3. code size, Cortex-M4 -Os, linked init+malloc+free
    size_dir = os.path.join(work, "size")
    env = dict(os.environ, DMM_SIZE_TARGETS="cortex-m4")
    sh([os.path.join(ROOT, "scripts", "size_report.sh"), "--out", size_dir, f"best={hdr_best}",
        f"best_lean={hdr_lean}", "dlmalloc", "lean/dlmalloc"], log=os.path.join(work, "size.log"), env=env)
    sz = {v["name"]: v for v in json.load(open(os.path.join(size_dir, "embedded_size.json")))["variants"]}

    def size_row(label, v):
        return {"subject": label, "text_bytes": v["probes"]["heap_min"]["text"],
                "heap_component_text_bytes": v["components"]["heap"]["text"]}

    ratio_dl = gm[lab_best] / gm[lab_dl]
    ratio_pre_h = gm[lab_best] / gm[lab_pre]
    ratio_pre_x = best["aggregate"]["instr_per_op_ranked"] / pre["aggregate"]["instr_per_op_ranked"]
    cc, _ = cmake_build(os.path.join(ROOT, "build", "release"))
    prov = provenance(command, cc, f"dmm forms in the harness: {CFLAGS} (frozen libraries, build/seed001); "
                      f"explore's dmm-replay: release preset -O3; dlmalloc harness: {info.split('cflags=')[-1].strip()}",
                      f"best config frozen ({best['id']})")
    doc = {
        "schema": "dmmkit.seed001/1",
        "provenance": prov,
        "seed": {"file": "001_181cefa610c4dac1.txt", "claim": "62 % fewer cycles in allocation than a dlmalloc "
                 "variant", "ratio": SEED_RATIO},
        "explore": {
            "traces": TRACES, "grid": a.grid, "configs": len(ex["configs"]),
            "figure": "instructions in the allocator's entry points per trace operation, dmm-replay built frozen "
                      "to the config, geometric mean over the traces",
            "best_config": best["config"], "best_id": best["id"], "best_name": best["name"],
            "best": {"instructions_per_call": best["aggregate"]["instr_per_op_ranked"],
                     "per_trace": per_trace(best)},
            "dlmalloc_preset": {"instructions_per_call": pre["aggregate"]["instr_per_op_ranked"],
                                "per_trace": per_trace(pre)},
            "ratio_best_over_preset": ratio_pre_x,
        },
        "explore_seed_terms": {
            "what": "the same grid points with harden=off (the seed's allocators check nothing); explore "
                    "--grid none with one --config per point, the dlmalloc preset so first (explore's reference). "
                    "Counters stay on here: dmm-replay reads the footprint from them (it turns stats=off into "
                    "counters); the harness runs the chosen policy with stats=off too",
            "configs": len(exl["configs"]), "specs": lean_specs,
            "best_config": best_l["config"], "best_id": best_l["id"], "best_name": best_l["name"],
            "best": {"instructions_per_call": best_l["aggregate"]["instr_per_op_ranked"],
                     "per_trace": per_trace(best_l)},
            "dlmalloc_preset_harden_off": {"instructions_per_call": pre_l["aggregate"]["instr_per_op_ranked"],
                                     "per_trace": per_trace(pre_l)},
            "ratio_best_over_preset": best_l["aggregate"]["instr_per_op_ranked"]
            / pre_l["aggregate"]["instr_per_op_ranked"],
        },
        "harness": {
            "workloads": HARNESS,
            "aggregate": "geometric mean over the workloads of instructions inside the allocator per malloc or "
                         "free call (the harness's call wrapper taken out; with it: instructions_per_call_with_wrapper)",
            "wrapper_instructions_per_call": wrapper,
            "geomean": [{"subject": k, "instructions_per_call": v, "instructions_per_call_with_wrapper": gm_w[k]}
                        for k, v in gm.items()],
            "ratio_best_over_dlmalloc_with_wrapper": gm_w[lab_best] / gm_w[lab_dl],
            "ratio_best_lean_over_dlmalloc_with_wrapper": gm_w[lab_lean] / gm_w[lab_dl],
            "rows": hrows,
            "ratio_best_over_dlmalloc": ratio_dl,
            "ratio_best_over_preset": ratio_pre_h,
            "ratio_best_lean_over_dlmalloc": gm[lab_lean] / gm[lab_dl],
            "ratio_best_lean_over_preset_lean": gm[lab_lean] / gm[lab_pre_l],
            "best_lean_config": lean_cfg,
            "goal_met": ratio_dl <= SEED_RATIO,
            "goal_met_seed_terms": gm[lab_lean] / gm[lab_dl] <= SEED_RATIO,
            "also": "kernels: the four kernels back to back on one heap (not in the mean)",
        },
        "size": {"target": "cortex-m4", "flags": sz["best"]["flags"], "probe": "heap init+malloc+free, linked",
                 "rows": [size_row(f"dmm best ({best['name']}), frozen", sz["best"]),
                          size_row(f"dmm best at the seed's terms ({name_l}, stats and hardening off), frozen", sz["best_lean"]),
                          size_row("dmm dlmalloc preset (as shipped)", sz["dlmalloc"]),
                          size_row("dmm dlmalloc preset, lean", sz["lean/dlmalloc"])],
                 "ratio_best_over_preset": sz["best"]["probes"]["heap_min"]["text"]
                 / sz["dlmalloc"]["probes"]["heap_min"]["text"]},
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "seed001.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")

    e, hh, s = doc["explore"], doc["harness"], doc["size"]
    L = ["# Seed 001's headline against dlmalloc 2.8.6", "", markdown(prov), "",
         "Seed `001_181cefa610c4dac1.txt`: a custom P2012 allocator spends **62 % fewer cycles in allocation** "
         "than a dlmalloc variant (ratio 0.38). Here the deterministic proxy: callgrind instructions inside the "
         "allocator per malloc or free call (x86-64, gcc 12), exact and repeatable. Goal: the best explored "
         f"configuration at most {SEED_RATIO}x dlmalloc 2.8.6.", "",
         f"## 1. `dmmkit explore` on the kernel traces ({', '.join(TRACES)})", "",
         f"{e['configs']} configurations of the {a.grid} grid (explore's defaults: `stats=counters,harden=checked`), "
         f"{e['figure']}. Best: **{e['best_name']}** (`{e['best_config']}`).", "",
         "| trace | ops | best: instructions per call | dlmalloc preset | best / preset |",
         "|---|---:|---:|---:|---:|"]
    L += trace_rows(e, "dlmalloc_preset")
    el = doc["explore_seed_terms"]
    L += ["### At the seed's terms (hardening off)", "",
          f"The same {el['configs']} grid points with `harden=off` (the seed's allocators check nothing), the "
          f"same figure. Counters stay on in this step: dmm-replay reads the footprint from them and turns "
          f"`stats=off` into counters; section 2 runs the chosen policy with `stats=off` too. Best: "
          f"**{el['best_name']}** (`{el['best_config']}`).", "",
          "| trace | ops | best: instructions per call | dlmalloc preset, harden=off | best / preset |",
          "|---|---:|---:|---:|---:|"]
    L += trace_rows(el, "dlmalloc_preset_harden_off")
    L += [
          "## 2. Against dlmalloc 2.8.6 itself (Heap v2 harness, one kernel per heap)", "",
          "Each kernel (bench/workloads' generator of it; the bundled traces were recorded from the kernel "
          "programs, whose operation counts differ, so explore's figures and these are not the same runs) "
          "replayed alone on a fresh heap, as the seed "
          "measures each application, and with its frees redrawn (`-rf`, wl_randomize_frees); every allocator in "
          "the same harness and caller buffer, built `-O2`: dlmalloc 2.8.6 by hand (bench/README.md, Anchors), "
          "the dmm forms frozen (`build/seed001`). Instructions inside the allocator per malloc or free call "
          "(callgrind; the harness's own call wrapper, `bench_op_*` and the adapter's `anchor_*`, "
          f"{'/'.join(f'{x:.1f}' for x in wrapper)} instructions per call for every allocator, taken out).", "",
          "| workload | " + " | ".join(lbl for lbl, _ in subjects) + " | best / dlmalloc 2.8.6 |",
          "|---|" + "---:|" * (len(subjects) + 1)]
    for w in HARNESS + ["kernels"]:
        v = [res[(t, w)]["ir_alloc_per_op"] for _, t in subjects]
        L.append(f"| {w}{' (all four back to back, one heap; not in the mean)' if w == 'kernels' else ''} | "
                 + " | ".join(f"{x:.1f}" for x in v) + f" | {v[1] / v[0]:.3f} |")
    L.append("| geometric mean over the eight one-kernel workloads | " + " | ".join(f"{gm[lbl]:.1f}" for lbl, _ in subjects)
             + f" | {hh['ratio_best_over_dlmalloc']:.3f} |")
    L += ["", "Per malloc / per free and minimum arena over peak live bytes:", "",
          "| workload | allocator | per malloc | per free | min arena / peak live |", "|---|---|---:|---:|---:|"]
    for r in hh["rows"]:
        L.append(f"| {r['workload']} | {r['subject']} | {r['instructions_per_malloc']:.1f} | "
                 f"{r['instructions_per_free']:.1f} | {r['min_arena_over_peak_live']:.3f} |")
    pct = (1 - hh["ratio_best_over_dlmalloc"]) * 100
    pct_l = (1 - hh["ratio_best_lean_over_dlmalloc"]) * 100
    L += ["", f"At explore's defaults (counters and `checked` hardening), best / dlmalloc 2.8.6: "
          f"**{hh['ratio_best_over_dlmalloc']:.3f}** "
          f"({abs(pct):.0f} % {'fewer' if pct >= 0 else 'more'} allocation instructions; the seed: 62 % fewer, "
          f"0.38). Goal (<= {SEED_RATIO}x): **{'met' if hh['goal_met'] else 'missed'}**. "
          f"Best / the dlmalloc preset on the same harness: {hh['ratio_best_over_preset']:.3f} (explore's "
          f"comparison, on the traces: {e['ratio_best_over_preset']:.3f}).", "",
          f"At the seed's terms (stats and hardening off, as the seed's allocators; dlmalloc 2.8.6 keeps its own "
          f"cheap checks), best (`{hh['best_lean_config']}`) / dlmalloc 2.8.6: "
          f"**{hh['ratio_best_lean_over_dlmalloc']:.3f}** ({abs(pct_l):.0f} % "
          f"{'fewer' if pct_l >= 0 else 'more'} allocation instructions). Goal (<= {SEED_RATIO}x): "
          f"**{'met' if hh['goal_met_seed_terms'] else 'missed'}**. Best / the lean dlmalloc preset on the same "
          f"harness: {hh['ratio_best_lean_over_preset_lean']:.3f}.", "",
          f"With the harness's call wrapper counted (as `bench/results/heap_v3*.md` count it), the same ratios "
          f"are {hh['ratio_best_over_dlmalloc_with_wrapper']:.3f} (explore's defaults) and "
          f"{hh['ratio_best_lean_over_dlmalloc_with_wrapper']:.3f} (the seed's terms).", "",
          "## 3. Code size (Cortex-M4, linked init+malloc+free)", "",
          f"`{s['flags']}`, scripts/size_report.sh.", "",
          "| heap | linked .text+.rodata (B) | heap component .text (B) |", "|---|---:|---:|"]
    for r in s["rows"]:
        L.append(f"| {r['subject']} | {r['text_bytes']} | {r['heap_component_text_bytes']} |")
    L += ["", f"Best / dlmalloc preset: {s['ratio_best_over_preset']:.2f}x the bytes.", "",
          "## What differs from the seed", "",
          "- Instructions, not cycles: the seed counts cycles on the P2012 platform; callgrind instructions on "
          "x86-64 are the deterministic proxy (no cache or pipeline effects).",
          "- The seed's baseline is \"a dlmalloc variant\" on its platform; here it is dlmalloc 2.8.6 unchanged "
          "(mspace on a caller buffer, no locks, no mmap), at -O2.",
          "- The workloads are re-implementations of the seed's four kernels (bench/workloads), not its traces; "
          "explore chooses on the recorded traces (and their randomised-free variants), the harness replays the "
          "generators' kernels, each on its own heap.",
          "- Hardening and counters: the first figure keeps explore's defaults, counters and `checked` hardening "
          "(dlmalloc 2.8.6 checks far less: its own cheap checks on free and unlink), and their cost is part of "
          "it; the second turns both off, as in the seed's allocators, while dlmalloc 2.8.6 keeps its checks.",
          "- The figures are the instructions inside the allocator: the harness's `bench_op_*` and the adapter's "
          "call (bench/anchors/heap_v2.c), the same few per call for every allocator, are taken out (their "
          "callgrind self cost); the ratios with them counted are given after the table.", ""]
    with open(os.path.join(a.out, "seed001.md"), "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
