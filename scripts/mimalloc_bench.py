#!/usr/bin/env python3
"""scripts/mimalloc_bench.py - libdmm on mimalloc-bench's programs, side by
side with glibc and the peers installed as Debian packages.

  scripts/mimalloc_bench.py --bench-dir DIR [--allocs libdmm,glibc,mimalloc,jemalloc,tcmalloc]
                            [--reps 5] [--tests cfrac,espresso,...] [--out DIR] [--timeout 300]

DIR is the build directory of mimalloc-bench's bench/ CMake project (the
programs cfrac, espresso, barnes, larson, ... side by side), built by the
user; nothing of mimalloc-bench is in this repository.  docs/malloc.md
("mimalloc-bench") says how to build it.  The input files of espresso and
barnes are taken from the source directory the build was configured from
(its CMakeCache.txt), or --bench-src.

Each repetition runs every test once with every allocator, round-robin
(test by test, allocators in turn), so drift on a shared machine hits all
allocators alike.  A run is the program started with LD_PRELOAD set to the
allocator's library (none for glibc); its wall time, user+sys CPU time and
peak RSS come from wait4's rusage.  A run that exits non-zero, is killed, or
times out is a failure and is listed; cfrac's and espresso's output must be
the same as glibc's.  The time figure of each test is the one
mimalloc-bench's bench.sh reports: CPU time here (user+sys; bench.sh uses
elapsed time, which a loaded 2-core machine blurs), and for the programs that
run for a fixed time the "relative time" bench.sh derives from their own
throughput (larson: its printed relative time; xmalloc-test: its rtime;
rptest: 2e6 / memory ops per CPU second; glibc-thread: 1e9 / iterations).

Writes OUT/NAME.{json,md} (OUT: bench/results, NAME: libdmm_mimalloc_bench)
after every repetition, so a stopped run leaves the repetitions it finished.
--render JSON rewrites the .md from a run's .json, with --analysis's text.
"""
import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from dmmkit.allocators import SYSTEM_ALLOCATORS, find_system_library  # noqa: E402
from dmmkit.stats import geomean, summarize  # noqa: E402
import provenance  # noqa: E402

PROCS = os.cpu_count() or 1
DEFAULT_ALLOCS = "libdmm,glibc,mimalloc,jemalloc,tcmalloc"
# libdmm's library under another name, with the environment that selects a
# mode (docs/malloc.md): libdmm-secure is its documented secure mode
LIBDMM_MODES = {"libdmm": {}, "libdmm-secure": {"DMM_SECURE": "1"}}


def _larson(out):
    m = re.search(r"relative time: ([0-9.]+)s", out)
    return float(m.group(1)) if m else None


def _xmalloc(out):
    m = re.search(r"^rtime: ([0-9.]+)", out, re.M)
    return float(m.group(1)) if m else None


def _rptest(out):
    m = re.search(r"\.\.\.(\d+) memory ops", out)
    return 2e6 / int(m.group(1)) if m and int(m.group(1)) > 0 else None


def _glibc_thread(out):
    m = re.match(r"\s*([0-9.]+)", out)
    return 1e9 / float(m.group(1)) if m and float(m.group(1)) > 0 else None


def tests_for(procs):
    """name -> (program, arguments, stdin file relative to the source dir or
    None, throughput parser or None, output must match glibc's).  The
    arguments are bench.sh's with procs = the machine's CPUs."""
    p, p2 = str(procs), str(min(procs, 16))
    return {
        "cfrac": ("cfrac", ["17545186520507317056371138836327483792789528"], None, None, True),
        "espresso": ("espresso", ["@espresso/largest.espresso"], None, None, True),
        "barnes": ("barnes", [], "barnes/input", None, False),
        "alloc-test1": ("alloc-test", ["1"], None, None, False),
        "alloc-testN": ("alloc-test", [p2], None, None, False),
        "larsonN": ("larson", ["5", "8", "1000", "5000", "100", "4141", p], None, _larson, False),
        "larsonN-sized": ("larson-sized", ["5", "8", "1000", "5000", "100", "4141", p], None, _larson, False),
        "xmalloc-testN": ("xmalloc-test", ["-w", p, "-t", "5", "-s", "64"], None, _xmalloc, False),
        "cache-scratch1": ("cache-scratch", ["1", "1000", "1", "2000000", p], None, None, False),
        "cache-scratchN": ("cache-scratch", [p, "1000", "1", "2000000", p], None, None, False),
        "cache-thrash1": ("cache-thrash", ["1", "1000", "1", "2000000", p], None, None, False),
        "cache-thrashN": ("cache-thrash", [p, "1000", "1", "2000000", p], None, None, False),
        "mstressN": ("mstress", [p, "50", "25"], None, None, False),
        "rptestN": ("rptest", [p, "0", "1", "2", "500", "1000", "100", "8", "16000"], None, _rptest, False),
        "glibc-simple": ("glibc-simple", [], None, None, False),
        "glibc-thread": ("glibc-thread", [p], None, _glibc_thread, False),
        "malloc-large": ("malloc-large", [], None, None, False),
        "mleak10": ("mleak", ["5"], None, None, False),
        "mleak100": ("mleak", ["50"], None, None, False),
    }


def die(msg):
    print(f"mimalloc_bench.py: {msg}", file=sys.stderr)
    sys.exit(2)


def source_dir(bench_dir, given):
    if given:
        return os.path.abspath(given)
    try:
        with open(os.path.join(bench_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    guess = os.path.join(bench_dir, "..", "..", "bench")  # mimalloc-bench's own out/bench layout
    return os.path.abspath(guess)


def build_libdmm():
    for cmd in (["cmake", "--preset", "release"],
                ["nice", "-n", "10", "cmake", "--build", "--preset", "release", "-j2", "--target", "dmm_malloc_shared"]):
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            die(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return os.path.join(ROOT, "build", "release", "lib", "libdmm.so")


def preload_of(alloc, libdmm):
    """The library preloaded for an allocator: libdmm's, none for glibc, a
    system allocator's, or NAME=/path/lib.so (any other malloc library)."""
    if "=" in alloc:
        path = alloc.split("=", 1)[1]
        if not os.path.isfile(path):
            die(f"{alloc}: no such file")
        return os.path.abspath(path)
    if alloc in LIBDMM_MODES:
        return libdmm
    if alloc == "glibc":
        return None
    if alloc not in SYSTEM_ALLOCATORS:
        die(f"unknown allocator '{alloc}' (known: libdmm, {', '.join(SYSTEM_ALLOCATORS)})")
    path, looked = find_system_library(alloc)
    if path is None:
        die(f"{alloc}: no library found (looked at {', '.join(looked)}); install {SYSTEM_ALLOCATORS[alloc][1]}")
    return str(path)


def package_versions(allocs):
    out = {}
    for a in allocs:
        pkg = "libc6" if a == "glibc" else SYSTEM_ALLOCATORS.get(a, (None, None))[1]
        if not pkg:
            continue
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
        out[a] = f"{pkg} {r.stdout.strip()}" if r.returncode == 0 else f"{pkg} (version unknown)"
    return out


def run_once(exe, args, stdin_path, preload, timeout, workdir, extra_env=None):
    """One run under GNU time, as bench.sh does (/usr/bin/time ... /usr/bin/env
    LD_PRELOAD=lib prog): the peak RSS is time's %M, the program's own (a
    process forked from this Python interpreter would start from its RSS);
    the CPU time comes from wait4 on time (the program and time, which adds
    about a millisecond)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("DMM_")}
    env.update(extra_env or {})
    out_path, time_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "time")
    cmd = ["/usr/bin/time", "-o", time_path, "-f", "%M %R %x", "/usr/bin/env",
           *([f"LD_PRELOAD={preload}"] if preload else []), exe, *args]
    with open(stdin_path or os.devnull, "rb") as fin, open(out_path, "wb") as fout:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                start_new_session=True)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                _, status, ru = os.wait4(proc.pid, 0)
                status = None
                break
            time.sleep(0.005)
        wall = time.monotonic() - t0
    proc.returncode = 0  # reaped by wait4
    with open(out_path, "rb") as f:
        output = f.read()
    rss = minflt = None
    try:
        with open(time_path) as f:
            last = f.read().strip().splitlines()[-1].split()
        rss, minflt = int(last[0]), int(last[1])
    except (OSError, IndexError, ValueError):
        pass
    if status is None:
        err = f"timed out after {timeout} s"
    elif os.WIFSIGNALED(status):
        err = f"killed by signal {os.WTERMSIG(status)}"
    elif os.WEXITSTATUS(status) != 0:
        code = os.WEXITSTATUS(status)
        err = f"killed by signal {code - 128}" if code > 128 else f"exit status {code}"
    elif rss is None:
        err = "no figures from /usr/bin/time"
    elif preload and b"cannot be preloaded" in output:
        # the dynamic linker skipped the library (and said so): the figures
        # would be glibc's under another name
        err = f"{preload} was not preloaded"
    else:
        err = None
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "user": ru.ru_utime, "sys": ru.ru_stime,
            "rss_kb": rss, "minflt": minflt, "error": err, "output": output.decode("utf-8", "replace")}


def fmt(v, digits=3):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}"
    if v < 1 and round(v, digits) < 1:
        return f"{v:.{digits}g}"
    return f"{v:.{digits - 1}f}" if v < 10 else f"{v:.1f}"


def analyse(tests, allocs, runs):
    """Per test and allocator: summaries of time (the test's figure), cpu,
    wall and rss; failures; ratios of medians to mimalloc's and glibc's."""
    res = {}
    for t in tests:
        row = {}
        for a in allocs:
            rs = [r for r in runs if r["test"] == t and r["alloc"] == a]
            ok = [r for r in rs if not r["error"]]
            row[a] = {
                "runs": len(rs),
                "failures": [f"rep {r['rep']}: {r['error']}" for r in rs if r["error"]],
                "time": summarize(r["time"] for r in ok),
                "cpu": summarize(r["cpu"] for r in ok),
                "wall": summarize(r["wall"] for r in ok),
                "sys": summarize(r.get("sys") for r in ok),
                "minflt": summarize(r.get("minflt") for r in ok),
                "rss_kb": summarize(r["rss_kb"] for r in ok),
                "time_by_rep": {str(r["rep"]): r["time"] for r in ok},
            }
        for base in ("mimalloc", "glibc"):
            if base not in row:
                continue
            for a in allocs:
                for m in ("time", "cpu", "rss_kb"):
                    b, v = row[base][m]["median"], row[a][m]["median"]
                    row[a].setdefault("ratio", {}).setdefault(base, {})[m] = (v / b) if v and b else None
        if "libdmm" in row and "mimalloc" in row:
            d, m = row["libdmm"]["time_by_rep"], row["mimalloc"]["time_by_rep"]
            pairs = [(d[k], m[k]) for k in d if k in m and d[k] is not None and m[k] is not None]
            row["libdmm"]["faster_than_mimalloc"] = [sum(1 for x, y in pairs if x < y), len(pairs)]
        res[t] = row
    geo = {}
    for base in ("mimalloc", "glibc"):
        for a in allocs:
            for m in ("time", "cpu", "rss_kb"):
                vals = [res[t][a].get("ratio", {}).get(base, {}).get(m) for t in tests]
                geo.setdefault(base, {}).setdefault(a, {})[m] = geomean(vals)
    best = {}
    for t in tests:
        meds = {a: res[t][a]["time"]["median"] for a in allocs if res[t][a]["time"]["median"]}
        if meds:
            b = min(meds, key=meds.get)
            best[t] = {"best": b, "libdmm_over_best": (meds["libdmm"] / meds[b]) if "libdmm" in meds else None}
    return res, geo, best


def markdown(doc):
    allocs, tests, res, geo = doc["allocators"], doc["tests"], doc["results"], doc["geomean"]
    L = ["# libdmm on mimalloc-bench", "", provenance.markdown(doc["provenance"]), ""]
    ld = doc["load_during"]
    L.append(f"Load during the run (1-minute average sampled before each program): mean {ld['mean']}, "
             f"min {ld['min']}, max {ld['max']}, on {PROCS} CPUs.  ")
    L.append(f"mimalloc-bench commit {doc['mimalloc_bench_commit']}; programs built with "
             f"{doc['bench_compiler']}.  ")
    L.append("Allocators: " + "; ".join(f"{a} = {doc['libraries'][a] or 'no preload'}"
                                       + (f" ({doc['packages'][a]})" if a in doc["packages"] else "")
                                       for a in allocs) + ".")
    L += ["", f"{doc['reps_done']} repetitions; in each, every test ran once with every allocator in turn "
          "(round-robin). Figures are medians with [min–max] over the repetitions.", ""]
    L += ["## How this differs from mimalloc-bench's own runner", "", doc["differences"], ""]
    L += ["## Geometric means of the ratios of medians", "",
          "| allocator | time / mimalloc | time / glibc | CPU / mimalloc | CPU / glibc | peak RSS / mimalloc | peak RSS / glibc |",
          "|---|---:|---:|---:|---:|---:|---:|"]
    for a in allocs:
        gm, gg = geo.get("mimalloc", {}).get(a, {}), geo.get("glibc", {}).get(a, {})
        L.append(f"| {a} | {fmt(gm.get('time'))} | {fmt(gg.get('time'))} | {fmt(gm.get('cpu'))} | "
                 f"{fmt(gg.get('cpu'))} | {fmt(gm.get('rss_kb'))} | {fmt(gg.get('rss_kb'))} |")
    L += ["", f"Over {len(tests)} tests. Time is each test's figure (see below); CPU is user+sys of the "
          "process, whatever the test.", ""]

    def table(metric, title, unit, scale=1.0):
        out = [f"## {title}", "", unit, "",
               "| test | " + " | ".join(allocs) + " | libdmm / mimalloc | libdmm / glibc |",
               "|---|" + "---:|" * (len(allocs) + 2)]
        for t in tests:
            cells = []
            for a in allocs:
                s = res[t][a][metric]
                if s["median"] is None:
                    cells.append("failed")
                    continue
                cells.append(f"{fmt(s['median'] * scale)} [{fmt(s['min'] * scale)}–{fmt(s['max'] * scale)}]")
            d = res[t].get("libdmm", {}).get("ratio", {})
            rm = d.get("mimalloc", {}).get(metric)
            rg = d.get("glibc", {}).get(metric)
            out.append(f"| {t} | " + " | ".join(cells) + f" | {fmt(rm)} | {fmt(rg)} |")
        return out + [""]

    L += table("time", "Time (s)", "CPU seconds (user+sys), except larsonN, larsonN-sized, xmalloc-testN, rptestN "
               "and glibc-thread: bench.sh's relative time from the program's own throughput (lower is better).")
    L += table("rss_kb", "Peak RSS (MiB)", "ru_maxrss of the program.", scale=1 / 1024)
    L += table("wall", "Wall time (s)", "Elapsed; on a shared machine this carries the other users' load.")
    L += table("sys", "System CPU time (s)", "The kernel's share of the CPU time: mapping, discarding and faulting "
               "pages in.")
    L += table("minflt", "Minor page faults", "ru_minflt of the program (GNU time's %R).")
    L += ["## libdmm against mimalloc, repetition by repetition", "",
          "| test | libdmm time / mimalloc | libdmm faster in | best allocator | libdmm / best |",
          "|---|---:|---:|---|---:|"]
    for t in tests:
        d = res[t].get("libdmm")
        if not d or "mimalloc" not in res[t]:
            continue
        w = d.get("faster_than_mimalloc", [0, 0])
        b = doc["best"].get(t, {})
        L.append(f"| {t} | {fmt(d.get('ratio', {}).get('mimalloc', {}).get('time'))} | {w[0]} of {w[1]} | "
                 f"{b.get('best', '-')} | {fmt(b.get('libdmm_over_best'))} |")
    for other in [x for x in allocs if x.startswith("libdmm") and x != "libdmm" and "libdmm" in allocs]:
        L += ["", f"## libdmm against {other}, repetition by repetition", "",
              f"| test | time / {other} | faster in | minor faults / {other} | fewer faults in |",
              "|---|---:|---:|---:|---:|"]
        for t in tests:
            mine = {r["rep"]: r for r in doc["runs"] if r["test"] == t and r["alloc"] == "libdmm" and not r["error"]}
            base = {r["rep"]: r for r in doc["runs"] if r["test"] == t and r["alloc"] == other and not r["error"]}
            reps = [k for k in mine if k in base]
            ft = sum(1 for k in reps if mine[k]["time"] < base[k]["time"])
            ff = sum(1 for k in reps if (mine[k]["minflt"] or 0) < (base[k]["minflt"] or 0))
            rt = res[t]["libdmm"]["time"]["median"], res[t][other]["time"]["median"]
            rf = res[t]["libdmm"]["minflt"]["median"], res[t][other]["minflt"]["median"]
            L.append(f"| {t} | {fmt(rt[0] / rt[1] if all(rt) else None)} | {ft} of {len(reps)} | "
                     f"{fmt(rf[0] / rf[1] if all(rf) else None)} | {ff} of {len(reps)} |")
        # the other form's cost over libdmm's default, as one figure per measure
        for m, what in (("time", "time"), ("cpu", "CPU time"), ("rss_kb", "peak RSS")):
            rs = [res[t][other][m]["median"] / res[t]["libdmm"][m]["median"] for t in tests
                  if res[t][other][m]["median"] and res[t]["libdmm"][m]["median"]]
            if rs:
                g = math.exp(sum(math.log(x) for x in rs) / len(rs))
                L.append(f"\nGeometric mean of {other}'s {what} over libdmm's (ratios of medians, "
                         f"{len(rs)} tests): **{fmt(g)}**.")
    L += ["", "## Tests and arguments", "", "| test | command | note |", "|---|---|---|"]
    for t in tests:
        spec = doc["commands"][t]
        L.append(f"| {t} | `{spec['command']}` | {spec['note']} |")
    fails = [(t, a, f) for t in tests for a in allocs for f in res[t][a]["failures"]]
    L += ["", "## Failures", ""]
    L += [f"- {t} with {a}: {f}" for t, a, f in fails] or ["None: every run exited with status 0"
                                                           " (and cfrac's and espresso's output matched glibc's)."]
    if doc.get("skipped"):
        L += ["", "## Not run", ""] + [f"- {s}" for s in doc["skipped"]]
    if doc.get("analysis"):
        L += ["", doc["analysis"].rstrip()]
    return "\n".join(L) + "\n"


def render(path, analysis, out, name, bench_commit=None):
    """The .md again from a .json's runs (the figures are recomputed from
    them), with the analysis text attached."""
    with open(path) as f:
        doc = json.load(f)
    doc["results"], doc["geomean"], doc["best"] = analyse(doc["tests"], doc["allocators"], doc["runs"])
    if bench_commit:
        doc["mimalloc_bench_commit"] = f"{bench_commit} (given: the programs were built from a copy of it)"
    if analysis:
        with open(analysis) as f:
            doc["analysis"] = f.read()
        doc["analysis_file"] = os.path.relpath(os.path.abspath(analysis), ROOT)
        cmd = doc["provenance"]["command"].split(" (then: ")[0]
        doc["provenance"]["command"] = (f"{cmd} (then: scripts/mimalloc_bench.py --render "
                                        f"bench/results/{name}.json --analysis {doc['analysis_file']}"
                                        + (f" --bench-commit {bench_commit}" if bench_commit else "") + ")")
    write(doc, out, name)


def write(doc, out, name):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(markdown(doc))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-dir", help="build directory of mimalloc-bench's bench/ (required)")
    ap.add_argument("--bench-src", help="mimalloc-bench's bench/ source directory (default: from CMakeCache.txt)")
    ap.add_argument("--allocs", default=DEFAULT_ALLOCS,
                    help="comma-separated: libdmm, libdmm-secure (libdmm with DMM_SECURE=1), glibc, mimalloc, "
                         "jemalloc, tcmalloc, tbbmalloc, NAME=/path/lib.so")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tests", default="", help="comma-separated test names (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--name", default="libdmm_mimalloc_bench", help="the results files' name (NAME.json, NAME.md)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--analysis", help="a markdown file appended to the .md (the callgrind breakdown)")
    ap.add_argument("--libdmm", help="libdmm.so to use (default: build the release preset's)")
    ap.add_argument("--bench-commit", help="mimalloc-bench's commit, when the source directory is not a git "
                    "checkout (a copy, edited to build)")
    ap.add_argument("--render", metavar="JSON", help="run nothing: rewrite the .md (and the .json's analysis) "
                    "from a results .json this script wrote, with --analysis")
    a = ap.parse_args()
    if a.render:
        render(a.render, a.analysis, a.out, a.name, a.bench_commit)
        return
    if not a.bench_dir:
        die("--bench-dir DIR is required: the build directory of mimalloc-bench's bench/ programs (see docs/malloc.md)")
    bench_dir = os.path.abspath(a.bench_dir)
    if not os.path.isdir(bench_dir):
        die(f"--bench-dir {bench_dir}: not a directory")
    if a.libdmm:
        # absolute: the programs run in a scratch directory, where a relative
        # LD_PRELOAD names nothing and the dynamic linker runs glibc instead
        if not os.path.isfile(a.libdmm):
            die(f"--libdmm {a.libdmm}: no such file")
        a.libdmm = os.path.abspath(a.libdmm)
    if a.reps < 1:
        die("--reps must be at least 1")
    all_tests = tests_for(PROCS)
    tests = [t for t in a.tests.split(",") if t] if a.tests else list(all_tests)
    for t in tests:
        if t not in all_tests:
            die(f"unknown test '{t}' (known: {', '.join(all_tests)})")
    src = source_dir(bench_dir, a.bench_src)
    skipped, runnable = [], []
    for t in tests:
        exe = os.path.join(bench_dir, all_tests[t][0])
        if not os.access(exe, os.X_OK):
            skipped.append(f"{t}: {exe} not built")
        else:
            runnable.append(t)
    if not runnable:
        die(f"none of the tests' programs is in {bench_dir}")
    tests = runnable
    specs = [x for x in a.allocs.split(",") if x]
    wants_libdmm = any(x in LIBDMM_MODES for x in specs)
    libdmm = a.libdmm or (build_libdmm() if wants_libdmm else None)
    if wants_libdmm and not os.path.isfile(libdmm):
        die(f"{libdmm}: no such file")
    libs = {x.split("=", 1)[0]: preload_of(x, libdmm) for x in specs}
    allocs = list(libs)
    commands = {}
    for t in tests:
        prog, args, stdin, parser, _ = all_tests[t]
        args = [os.path.join(src, x[1:]) if x.startswith("@") else x for x in args]
        for x in args + ([os.path.join(src, stdin)] if stdin else []):
            if x.startswith(src) and not os.path.isfile(x):
                die(f"{t}: input {x} missing (give --bench-src)")
        shown = " ".join([f"./{prog}", *[os.path.relpath(x, src) if x.startswith(src) else x for x in args]])
        if stdin:
            shown += f" < {stdin}"
        note = "bench.sh's arguments" + (" (N = " + str(PROCS) + " CPUs)" if t.endswith("N") or "thread" in t else "")
        if parser:
            note += "; time = relative time from its throughput"
        commands[t] = {"command": shown, "argv": [os.path.join(bench_dir, prog), *args],
                       "stdin": os.path.join(src, stdin) if stdin else None, "note": note}
    try:
        mb_commit = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True,
                                   check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        mb_commit = "unknown (source directory is not a git checkout)"
    if a.bench_commit:
        mb_commit = f"{a.bench_commit} (given: the programs were built from a copy of it)"
    bcc, bflags = provenance.cmake_build(bench_dir)
    ccc, cflags = provenance.cmake_build(os.path.join(ROOT, "build", "release"))
    shown_cmd = ("scripts/mimalloc_bench.py --bench-dir DIR" + (f" --allocs {a.allocs}" if a.allocs != DEFAULT_ALLOCS else "")
                 + f" --reps {a.reps}" + (f" --tests {a.tests}" if a.tests else "")
                 + (" --libdmm LIB" if a.libdmm else "")
                 + (f" --name {a.name}" if a.name != "libdmm_mimalloc_bench" else "")
                 + (f" --analysis {os.path.relpath(a.analysis, ROOT)}" if a.analysis else ""))
    load_before = provenance.load()
    differences = (
        f"mimalloc-bench's bench.sh runs each allocator's repetitions back to back and reports elapsed time; "
        f"here the allocators are interleaved within every repetition and the time is CPU time (user+sys), "
        f"because the machine has {PROCS} CPUs shared with other work (load below), so elapsed time mostly "
        f"measures the other users. N = {PROCS} (bench.sh's procs on this machine), so larsonN, xmalloc-testN, "
        f"mstressN, rptestN, alloc-testN, cache-*N and glibc-thread run with {PROCS} threads. The peers are "
        f"Debian's packages (mimalloc 2.0.9 built by Debian, not bench.sh's own build of mimalloc's latest "
        f"release), tcmalloc is gperftools' tcmalloc_minimal. No size was reduced: every test runs with "
        f"bench.sh's arguments. The shbench programs (sources downloaded by bench.sh), z3, gs, lean, redis and "
        f"rocksdb (external programs bench.sh builds) were not run.")
    # taken once, before the first run: edits to the checkout during a long
    # run do not change which commit the figures belong to
    prov = provenance.provenance(
        shown_cmd, compiler=ccc, flags=cflags, load_before=load_before,
        impl=("libdmm from --libdmm (a copy of a build)" if a.libdmm else "libdmm from build/release")
        + " (default mode); peers preloaded from their Debian packages")
    runs, loads = [], []
    work = tempfile.mkdtemp(prefix="mib-")
    doc = None
    for rep in range(1, a.reps + 1):
        for t in tests:
            c = commands[t]
            parser, check = all_tests[t][3], all_tests[t][4]
            for x in allocs:
                loads.append(provenance.load())
                r = run_once(c["argv"][0], c["argv"][1:], c["stdin"], libs[x], a.timeout, work,
                             LIBDMM_MODES.get(x))
                out = r.pop("output")
                if check and not r["error"]:
                    r["out_sha"] = hashlib.sha256(out.encode()).hexdigest()
                r["time"] = r["cpu"]
                if parser and not r["error"]:
                    r["time"] = parser(out)
                    if r["time"] is None:
                        r["error"] = "no throughput figure in its output"
                r.update(test=t, alloc=x, rep=rep)
                runs.append(r)
                print(f"rep {rep} {t:15s} {x:9s} time {fmt(r['time'])} cpu {r['cpu']:.2f} wall {r['wall']:.2f} "
                      f"rss {(r['rss_kb'] or 0) / 1024:.1f} MiB" + (f"  FAILED: {r['error']}" if r["error"] else ""),
                      flush=True)
        # cfrac's and espresso's output must be glibc's (any repetition's)
        ref = {r["test"]: r["out_sha"] for r in runs if r["alloc"] == "glibc" and r.get("out_sha")}
        for r in runs:
            if r.get("out_sha") and r["test"] in ref and r["out_sha"] != ref[r["test"]] and not r["error"]:
                r["error"] = "output differs from glibc's"
        res, geo, best = analyse(tests, allocs, runs)
        lv = [v for v in loads if v is not None]
        doc = {
            "provenance": dict(prov, load={"before": load_before, "after": provenance.load(), "cpus": PROCS}),
            "mimalloc_bench_commit": mb_commit,
            "bench_compiler": f"{bcc}, flags `{bflags.split(' (CMake')[0].strip() or '-O3 -DNDEBUG'}` (CMake Release)"
            if bcc else "unknown",
            "cpus": PROCS,
            "allocators": allocs,
            "libraries": {x: libs[x] and (os.path.relpath(libs[x], ROOT) if libs[x].startswith(ROOT) else libs[x])
                          for x in allocs},
            "packages": package_versions(allocs),
            "tests": tests,
            "commands": {t: {"command": commands[t]["command"], "note": commands[t]["note"]} for t in tests},
            "reps_requested": a.reps,
            "reps_done": rep,
            "load_during": {"mean": round(sum(lv) / len(lv), 2) if lv else None,
                            "min": min(lv) if lv else None, "max": max(lv) if lv else None},
            "differences": differences,
            "skipped": skipped,
            "results": res,
            "geomean": geo,
            "best": best,
            "runs": runs,
        }
        if a.analysis:
            with open(a.analysis) as f:
                doc["analysis"] = f.read()
        write(doc, a.out, a.name)
        print(f"repetition {rep} of {a.reps} written to {a.out}", flush=True)


if __name__ == "__main__":
    main()
