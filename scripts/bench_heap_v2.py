#!/usr/bin/env python3
"""scripts/bench_heap_v2.py - the "Heap v2" benchmark: instructions per
malloc/free (callgrind, exact and repeatable) and minimum arena over peak live
bytes, for dmm's heap presets in four forms and for outside anchors.

  scripts/bench_heap_v2.py [BINARY ...] [--peer NAME=PATH ...]
                           [--build DIR] [--no-build] [--out DIR]
                           [--workloads kernels,frag,rbtree] [--jobs N]

BINARY   heap_v2 harness binaries built from this repository (bench/anchors);
         default: every heap_v2_dmm_* under the build tree (the five presets x
         runtime, runtime-lean, frozen, frozen-checked, frozen-lean), after building them with
         `cmake --build DIR --target heap_v2_all` (--no-build skips that; a
         missing build tree is configured with `cmake --preset release`).
--peer   an anchor binary built by hand (bench/README.md, "Anchors"), e.g.
         --peer tlsf-O2=/tmp/anchors/bin/heap_v2_tlsf_O2.  Repeatable.
--jobs   concurrent runs (default 2; the figures do not depend on it).

For every (binary, workload):
  1. valgrind --tool=callgrind --toggle-collect='bench_op_*' BINARY
     --workload W --no-prefault: the collected total / (mallocs + frees) is
     the instructions per operation; callgrind_annotate --inclusive=yes splits
     it into bench_op_malloc and bench_op_free.  The entry points add the same
     few instructions for every target; their self cost (bench_op_* and the
     adapter's anchor_*, callgrind_annotate) taken out gives ir_alloc_per_op,
     the instructions inside the allocator alone.
  2. the minimum arena: bisection on BINARY --workload W --arena N (exit 0 =
     the replay fits), to 16 bytes, between the peak live bytes and the first
     doubling of the callgrind run's high-water mark that fits.
Writes bench/results/heap_v2.json (schema dmmkit.heap_v2, version 1) and
bench/results/heap_v2.md.  Takes a few minutes on 2 cores.
"""
import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = ["dlmalloc", "tlsf", "halffit", "firstfit", "p2012"]
FORMS = ["runtime", "runtime_lean", "frozen", "frozen_checked", "frozen_lean"]
WORKLOADS = ["kernels", "frag", "rbtree"]
RESOLUTION = 16
CG_ARENA = 64 << 20
ANNOT_RE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+\S*:(bench_op_(malloc|free))\b")
# the harness's own call wrapper (bench_op_* -> anchor_* -> the allocator): its
# self cost is the same few instructions for every target
WRAP_RE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+\S*:((bench_op|anchor)_(malloc|free))\b")


def rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p


def die(msg):
    sys.exit(f"bench_heap_v2.py: {msg}")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def parse_line(out, prefix):
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == prefix:
            return dict(x.split("=", 1) for x in f[1:] if "=" in x)
    return None


def harness(binary, *args):
    r = run([binary, *args])
    return r.returncode, parse_line(r.stdout, "heap_v2"), r


# ---- targets -------------------------------------------------------------------

def find_dmm_binaries(build):
    d = os.path.join(build, "bench", "anchors")
    found = []
    for p in PRESETS:
        for f in FORMS:
            b = os.path.join(d, f"heap_v2_dmm_{p}_{f}")
            if os.access(b, os.X_OK):
                found.append(b)
    return found


def describe_target(name, binary, kind):
    r = run([binary, "--info"])
    info = parse_line(r.stdout, "heap_v2-info")
    if r.returncode != 0 or info is None:
        die(f"{binary} --info failed: {r.stderr.strip()}")
    t = {"name": name or info["adapter"], "kind": kind, "binary": rel(binary),
         "adapter": info["adapter"], "describe": info["describe"],
         "compiler": info["compiler"], "cflags": info["cflags"]}
    m = re.match(r"dmm-([a-z0-9]+)-(.*)$", info["adapter"])
    if kind == "dmm" and m:
        t["preset"], t["form"] = m.group(1), m.group(2)
    return t


# ---- measurements ----------------------------------------------------------------

def callgrind(target, binary, workload, tmp):
    out = os.path.join(tmp, f"{target}.{workload}.cg")
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=bench_op_*", f"--callgrind-out-file={out}",
           binary, "--workload", workload, "--arena", str(CG_ARENA), "--no-prefault"]
    r = run(cmd)
    line = parse_line(r.stdout, "heap_v2")
    if r.returncode != 0 or line is None or line.get("status") != "ok":
        die(f"callgrind run failed ({target}, {workload}): {r.stderr.strip()[-400:]}")
    total = None
    with open(out) as f:
        for l in f:
            if l.startswith("totals:") or l.startswith("summary:"):
                total = int(l.split()[1])
    ann = run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out])
    inc = {}
    for l in ann.stdout.splitlines():
        m = ANNOT_RE.match(l)
        if m:
            inc[m.group(3)] = max(inc.get(m.group(3), 0), int(m.group(1).replace(",", "")))
    ann = run(["callgrind_annotate", "--threshold=100", out])
    wrap = {"malloc": 0, "free": 0}
    for l in ann.stdout.splitlines():
        m = WRAP_RE.match(l)
        if m:
            wrap[m.group(4)] += int(m.group(1).replace(",", ""))
    inc["wrapper"] = wrap["malloc"] + wrap["free"]
    inc["wrapper_malloc"], inc["wrapper_free"] = wrap["malloc"], wrap["free"]
    os.unlink(out)
    return total, inc, line


def fits(binary, workload, n):
    rc, line, r = harness(binary, "--workload", workload, "--arena", str(n))
    if rc == 0 and line and line.get("status") == "ok":
        return True
    if rc == 1 and line and line.get("status") in ("alloc-failed", "init-too-small"):
        return False
    die(f"{binary} --workload {workload} --arena {n}: exit {rc} {r.stderr.strip()[-300:]}")


def min_arena(binary, workload, peak_live, hint):
    runs = 0
    lo = max(peak_live, 1)
    runs += 1
    if fits(binary, workload, lo):
        return lo, runs  # cannot happen for a real allocator; reported as is
    hi = max(hint, lo + RESOLUTION)
    while True:
        runs += 1
        if fits(binary, workload, hi):
            break
        lo = hi
        hi *= 2
        if hi > (1 << 32):
            die(f"{binary} {workload}: no arena up to 4 GiB fits")
    # invariant: lo does not fit, hi fits
    while hi - lo > RESOLUTION:
        mid = (lo + hi) // 2
        runs += 1
        if fits(binary, workload, mid):
            hi = mid
        else:
            lo = mid
    return hi, runs


def measure(t, workload, tmp):
    binary = os.path.join(ROOT, t["binary"]) if not os.path.isabs(t["binary"]) else t["binary"]
    total, inc, line = callgrind(t["name"], binary, workload, tmp)
    mallocs, frees = int(line["mallocs"]), int(line["frees"])
    peak = int(line["peak_live"])
    arena, runs = min_arena(binary, workload, peak, int(line["highest_end"]))
    ops = mallocs + frees
    res = {
        "target": t["name"], "workload": workload,
        "mallocs": mallocs, "frees": frees, "ops": ops,
        "ir_total": total,
        "ir_per_op": round(total / ops, 2),
        # inside the allocator only: the harness wrapper's self cost taken out
        "ir_wrapper_per_op": round(inc["wrapper"] / ops, 2),
        "ir_alloc_per_op": round((total - inc["wrapper"]) / ops, 2),
        "ir_malloc": inc.get("malloc"), "ir_free": inc.get("free"),
        "ir_per_malloc": round(inc["malloc"] / mallocs, 2) if inc.get("malloc") else None,
        "ir_per_free": round(inc["free"] / frees, 2) if inc.get("free") else None,
        "ir_alloc_per_malloc": round((inc["malloc"] - inc["wrapper_malloc"]) / mallocs, 2) if inc.get("malloc") else None,
        "ir_alloc_per_free": round((inc["free"] - inc["wrapper_free"]) / frees, 2) if inc.get("free") else None,
        "peak_live": peak,
        "observed_alignment": int(line["min_align"]),
        "high_water_64MiB": int(line["highest_end"]),
        "min_arena": arena,
        "min_arena_over_peak_live": round(arena / peak, 4),
        "bisection_runs": runs,
    }
    if res["ir_malloc"] is not None and res["ir_free"] is not None:
        res["ir_split_check"] = res["ir_malloc"] + res["ir_free"] - total  # 0 when consistent
    return res


# ---- context and report ------------------------------------------------------------

def git_commit():
    r = run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"])
    if r.returncode != 0:
        return "unknown"
    c = r.stdout.strip()
    d = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    return c + ("-dirty" if d.stdout.strip() else "")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    return l.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cmake_cache(build, key):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for l in f:
                if l.startswith(key + ":"):
                    return l.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def anchor_commands():
    """The hand commands for the anchors, from bench/README.md (one source)."""
    with open(os.path.join(ROOT, "bench", "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- anchors-build:begin -->\n(.*?)<!-- anchors-build:end -->", text, re.S)
    return m.group(1).strip() if m else "(see bench/README.md, Anchors)"


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def markdown(doc):
    ctx, targets, results = doc["context"], doc["targets"], doc["results"]
    by = {(r["target"], r["workload"]): r for r in results}
    wls = ctx["workload_names"]
    L = []
    L.append("# Heap v2 benchmark: instructions per operation and minimum arena")
    L.append("")
    if doc.get("provenance"):
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        from provenance import markdown as prov_md
        L.append(prov_md(doc["provenance"]))
        L.append("")
    L.append(f"Generated by `{ctx['command_line']}` on {ctx['date']} (commit `{ctx['commit']}`).")
    L.append(f"Machine: {ctx['cpu']}, {ctx['host']}. {ctx['valgrind']}. "
             f"dmm forms: CMake {ctx['cmake_build_type']} (`{ctx['dmm_cflags']}`), {ctx['dmm_compiler']}.")
    L.append("")
    L.append("Workloads (single-threaded, `heap_v2 --list`):")
    L.append("")
    L.append("| workload | ops | peak live bytes | largest request | shape |")
    L.append("|---|---|---|---|---|")
    for w in wls:
        i = ctx["workloads"][w]
        L.append(f"| `{w}` | {i['ops']} | {i['peak_live']} | {i['max_size']} | {i['summary']} |")
    L.append("")
    L.append("**Instructions per operation** = callgrind Ir inside `bench_op_malloc` + `bench_op_free` "
             "(inclusive) / (mallocs + frees); includes the same out-of-line call wrapper (harness -> "
             "adapter -> allocator) for every target. **Min arena / peak live** = smallest caller buffer "
             f"(bisection to {RESOLUTION} B; the allocator's control structure lives in it) that replays the "
             "workload without a failed allocation, over the most bytes requested and live at once.")
    L.append("")
    head = "| target | " + " | ".join(f"{w} Ir/op" for w in wls) + " | " + \
        " | ".join(f"{w} arena/peak" for w in wls) + " |"
    L.append(head)
    L.append("|---" * (1 + 2 * len(wls)) + "|")
    for t in targets:
        row = [f"`{t['name']}`"]
        row += [fmt(by[(t["name"], w)]["ir_per_op"]) if (t["name"], w) in by else "-" for w in wls]
        row += [fmt(by[(t["name"], w)]["min_arena_over_peak_live"], 3) if (t["name"], w) in by else "-"
                for w in wls]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("Split per kind (Ir per malloc / Ir per free):")
    L.append("")
    L.append("| target | " + " | ".join(wls) + " | observed alignment |")
    L.append("|---" * (2 + len(wls)) + "|")
    for t in targets:
        row = [f"`{t['name']}`"]
        al = set()
        for w in wls:
            r = by.get((t["name"], w))
            row.append(f"{fmt(r['ir_per_malloc'])} / {fmt(r['ir_per_free'])}" if r else "-")
            if r:
                al.add(r["observed_alignment"])
        row.append(f"{min(al)} B" if al else "-")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    L.append("Observed alignment: the largest power of two (up to 64) dividing every pointer returned on "
             "these workloads (TLSF 3.1 guarantees 8 bytes on 64-bit, dlmalloc and dmm 16, o1heap 32).")
    L.append("")
    L.append("Inside the allocator only (Ir per operation without the harness's own wrapper: the self "
             "instructions of `bench_op_*` and the adapter's `anchor_*`, the same few for every target):")
    L.append("")
    L.append("| target | " + " | ".join(wls) + " | wrapper Ir/op |")
    L.append("|---" * (2 + len(wls)) + "|")
    for t in targets:
        rs = [by.get((t["name"], w)) for w in wls]
        wr = sorted({r["ir_wrapper_per_op"] for r in rs if r and r.get("ir_wrapper_per_op") is not None})
        L.append(f"| `{t['name']}` | " + " | ".join(fmt(r.get("ir_alloc_per_op")) if r else "-" for r in rs)
                 + " | " + (" - ".join(fmt(x) for x in (wr[0], wr[-1])) if wr and wr[0] != wr[-1]
                            else (fmt(wr[0]) if wr else "-")) + " |")
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | binary | compiler | flags | what |")
    L.append("|---|---|---|---|---|")
    for t in targets:
        L.append(f"| `{t['name']}` | `{t['binary']}` | {t['compiler']} | `{t['cflags']}` | {t['describe']} |")
    L.append("")
    L.append("dmm forms: `runtime` = library `dmm_heap`, config `preset=X` (as shipped: stats=counters, "
             "harden=checked); `runtime-lean` = `preset=X,stats=off,harden=off`; `frozen` = library compiled "
             "with `configs/frozen/X.h`; `frozen-checked` = frozen with stats off and hardening as shipped (checked), so `frozen-checked` minus `frozen-lean` is the cost of hardening; `frozen-lean` = library frozen to a copy of that header with "
             "`DMM_FROZEN_STATS DMM_STATS_OFF` and `DMM_FROZEN_HARDEN DMM_HARDEN_OFF`, generated into "
             "`build/.../bench/anchors/frozen_lean/X.h` by `bench/anchors/CMakeLists.txt`.")
    L.append("")
    L.append("## How to reproduce")
    L.append("")
    L.append("The anchors' sources are never part of the repository and no script fetches or builds "
             "them. Fetch them into scratch space and compile them by hand (from `bench/README.md`):")
    L.append("")
    L.append(anchor_commands())
    L.append("")
    L.append("Then, from the repository root (builds the dmm forms in the release preset first):")
    L.append("")
    L.append("```sh")
    L.append(ctx["command_line"])
    L.append("```")
    L.append("")
    L.append("Per binary B and workload W the script runs:")
    L.append("")
    L.append("```sh")
    L.append(f"valgrind --tool=callgrind --toggle-collect='bench_op_*' --callgrind-out-file=F "
             f"B --workload W --arena {CG_ARENA} --no-prefault")
    L.append("callgrind_annotate --inclusive=yes --threshold=100 F   # split into bench_op_malloc / bench_op_free")
    L.append("B --workload W --arena N    # exit 0: fits; exit 1: init refused or an allocation failed (bisection on N)")
    L.append("```")
    L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="*")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    cmdline = "scripts/bench_heap_v2.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    cmdline = cmdline.strip()

    for tool in ("valgrind", "callgrind_annotate"):
        if run(["sh", "-c", f"command -v {tool}"]).returncode != 0:
            die(f"{tool} not found (scripts/setup.sh installs valgrind)")

    build = os.path.abspath(a.build)
    if not a.no_build:
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            r = subprocess.run(["cmake", "--preset", "release"], cwd=ROOT)
            if r.returncode != 0:
                die("cmake --preset release failed")
        r = subprocess.run(["cmake", "--build", build, "--target", "heap_v2_all", "-j2"], cwd=ROOT,
                           stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            die("build of heap_v2_all failed")

    dmm_bins = [os.path.abspath(b) for b in a.binaries] or find_dmm_binaries(build)
    if not dmm_bins:
        die(f"no heap_v2_dmm_* binaries under {build} (build target heap_v2_all)")
    targets = []
    for spec in a.peer:
        if "=" not in spec:
            die(f"--peer wants NAME=PATH, not '{spec}'")
        name, path = spec.split("=", 1)
        if not os.access(path, os.X_OK):
            die(f"--peer {name}: {path} is not an executable")
        targets.append(describe_target(name, os.path.abspath(path), "peer"))
    for b in dmm_bins:
        targets.append(describe_target(None, b, "dmm"))
    names = [t["name"] for t in targets]
    if len(set(names)) != len(names):
        die(f"duplicate target names: {names}")

    wls = [w for w in a.workloads.split(",") if w]
    lst = run([dmm_bins[0], "--list"])
    winfo = {}
    for l in lst.stdout.splitlines():
        f = l.split("\t")
        kv = dict(x.split("=", 1) for x in f[1:-1])
        winfo[f[0]] = {k: int(v) for k, v in kv.items()}
        winfo[f[0]]["summary"] = f[-1]
    for w in wls:
        if w not in winfo:
            die(f"unknown workload {w}")

    jobs = [(t, w) for t in targets for w in wls]
    results = []
    with tempfile.TemporaryDirectory(prefix="heap-v2.") as tmp, \
            cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(measure, t, w, tmp): (t["name"], w) for t, w in jobs}
        done = 0
        for fut in cf.as_completed(futs):
            r = fut.result()
            done += 1
            print(f"[{done:3d}/{len(jobs)}] {r['target']:28s} {r['workload']:8s} "
                  f"{r['ir_per_op']:8.1f} Ir/op  arena/peak {r['min_arena_over_peak_live']:.3f}",
                  flush=True)
            results.append(r)
    order = {(t["name"], w): i for i, (t, w) in enumerate(jobs)}
    results.sort(key=lambda r: order[(r["target"], r["workload"])])

    dmm_t = next(t for t in targets if t["kind"] == "dmm")
    doc = {
        "schema": "dmmkit.heap_v2", "version": 1,
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": f"{platform.system()} {platform.release()} {platform.machine()}",
            "cpu": cpu_model(),
            "commit": git_commit(),
            "command_line": cmdline,
            "valgrind": run(["valgrind", "--version"]).stdout.strip(),
            "cmake_build_type": cmake_cache(build, "CMAKE_BUILD_TYPE"),
            "dmm_compiler": dmm_t["compiler"],
            "dmm_cflags": dmm_t["cflags"],
            "c_compiler": cmake_cache(build, "CMAKE_C_COMPILER"),
            "callgrind_arena": CG_ARENA,
            "bisection_resolution": RESOLUTION,
            "workload_names": wls,
            "workloads": {w: winfo[w] for w in wls},
            "method": {
                "ir_per_op": "callgrind --toggle-collect='bench_op_*' total Ir / (mallocs + frees); "
                             "bench_op_* -> anchor_* (adapter) -> allocator, same wrapper for every target",
                "ir_alloc_per_op": "ir_per_op without the wrapper's own instructions (the self Ir of "
                                   "bench_op_malloc/free and anchor_malloc/free, callgrind_annotate): "
                                   "instructions inside the allocator per call",
                "ir_split": "callgrind_annotate --inclusive=yes: bench_op_malloc, bench_op_free",
                "min_arena": "smallest --arena N (bisection) for which the replay has no failed allocation; "
                             "the arena holds the allocator's control structure too; 64-byte aligned buffer",
            },
        },
        "targets": targets,
        "results": results,
    }
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from provenance import provenance
    doc["provenance"] = provenance(cmdline, f"{dmm_t['compiler']} ({cmake_cache(build, 'CMAKE_C_COMPILER')})",
                                   f"dmm forms: {dmm_t['cflags']}; peers: as each target's cflags say",
                                   "dmm forms as named per target")
    os.makedirs(a.out, exist_ok=True)
    jp = os.path.join(a.out, "heap_v2.json")
    with open(jp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    mp = os.path.join(a.out, "heap_v2.md")
    with open(mp, "w") as f:
        f.write(markdown(doc))
    print(f"wrote {rel(jp)} and {rel(mp)}")


if __name__ == "__main__":
    main()
