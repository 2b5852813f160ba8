#!/usr/bin/env python3
"""Runtime vs frozen: does the explorer rank heap configs as frozen builds would?

`dmmkit explore` counts instructions per operation with callgrind on
`dmm-replay` linked against the *runtime-configurable* library, but what it
generates is a *frozen* build (the config compiled in). This script measures
both forms of the same configs on the bundled traces, the same way explore
does (`dmmkit.measure.measure_memory` for the arena, then
`dmmkit.measure.count_instructions`: one `valgrind --tool=callgrind` run with
`--toggle-collect` on the heap's allocator entry points and
`dmm-replay --count-sweep`, instructions / trace operations), and reports
per trace the Spearman rank correlation between the two forms across the
configs, the runtime/frozen ratio per config and whether the best config is
the same.

Builds (all under build/rank-*, Release, tests and benchmarks off):
  build/rank-src/            a copy of the sources (git HEAD by default, or
                             the work tree with --source worktree), so edits
                             made while it runs do not mix into some builds;
                             files are rewritten only when their content
                             changes, so rebuilds are incremental
  build/rank-runtime/        dmm-replay (runtime library) and dmm-config
  build/rank-frozen-NAME/    dmm-replay with -DDMM_FROZEN_CONFIG=<header
                             written by `dmm-config header CONFIG`>
A build is skipped when ninja has nothing to do.  The build helpers
(cmake_build, header_text, write_if_changed, slug) are python/dmmkit/frozen.py's,
the module `dmmkit explore` uses to re-measure its candidates as frozen builds.

Limitation: dmm-replay turns stats=off into stats=counters (it needs the
counters), so a config with stats=off has no comparable frozen form here:
the frozen build refuses the forced config ("config differs from the one
this library was frozen to") and the config is reported under "problems".

Outputs bench/results/runtime_vs_frozen.json (schema
dmmkit.runtime_vs_frozen) and .md.

  scripts/bench_rank_frozen.py                  # 10 configs x every bundled trace
  scripts/bench_rank_frozen.py --quick          # 5 configs x 3 traces (smoke run)
  scripts/bench_rank_frozen.py --traces fft,rbtree --configs tlsf,tlsf+fit=best
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import hashlib
import io
import json
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from dmmkit.frozen import FrozenBuildError, cmake_build, header_text, slug, write_if_changed  # noqa: E402
from dmmkit.measure import (CALLGRIND_TOGGLES, MEASURE_VERSION, SWEEP_MARK, TaskError,  # noqa: E402
                            count_instructions, measure_memory)

SCHEMA = "dmmkit.runtime_vs_frozen"
SCHEMA_VERSION = 1
SRC_PATHS = ("CMakeLists.txt", "CMakePresets.json", "cmake", "configs", "include", "src", "tools")

# name -> config text (dmm_heap_config_parse syntax); normalised by the
# runtime dmm-replay --check-configs before use.  The presets plus points of
# the explore grid (python/dmmkit/grid.py: NEIGHBOURS and the full factorial)
# whose shape is none of the presets'.
CONFIGS = {
    "dlmalloc": "preset=dlmalloc,lock=none",
    "tlsf": "preset=tlsf,lock=none",
    "halffit": "preset=halffit,lock=none",
    "firstfit": "preset=firstfit,lock=none",
    "p2012": "preset=p2012,lock=none",
    "tlsf+fit=best": "preset=tlsf,fit=best,lock=none",
    "tlsf+quick_max=64": "preset=tlsf,quick_max=64,lock=none",
    "geometric/first": "org=geometric,sl_bits=0,fit=first,links=doubly,order=lifo,split=on,"
                       "coalesce=immediate,quick_max=0,lock=none",
    "exact/good": "org=exact,exact_max=256,sl_bits=1,fit=good,links=doubly,order=lifo,split=on,"
                  "coalesce=immediate,quick_max=0,lock=none",
    "single/best/size": "org=single,fit=best,links=doubly,order=size,split=on,coalesce=immediate,"
                        "quick_max=0,lock=none",
}
QUICK_CONFIGS = ("dlmalloc", "tlsf", "p2012", "tlsf+fit=best", "geometric/first")
QUICK_TRACES = ("fft", "rbtree", "fast")


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

T0 = time.monotonic()


def log(msg: str) -> None:
    el = time.monotonic() - T0
    print(f"[{int(el) // 60:2d}:{int(el) % 60:02d}] {msg}", flush=True)


class Eta:
    """Progress of N steps with an ETA from the mean duration so far (or a
    prior guess before the first step ends)."""

    def __init__(self, what: str, total: int, guess: float):
        self.what, self.total, self.guess = what, total, guess
        self.done = 0
        self.spent = 0.0

    def start(self, i: int, label: str) -> float:
        left = self.total - i
        per = self.spent / self.done if self.done else self.guess
        log(f"{self.what} {i + 1}/{self.total}: {label} (ETA {fmt_s(per * left)})")
        return time.monotonic()

    def end(self, t: float, counted: bool = True) -> float:
        d = time.monotonic() - t
        if counted:
            self.done += 1
            self.spent += d
        return d


def fmt_s(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# --------------------------------------------------------------------------
# sources and builds
# --------------------------------------------------------------------------

def snapshot_sources(mode: str, dest: Path) -> dict:
    """Copies the library/tool sources into dest (content-compared, so
    unchanged files keep their mtime).  Returns a description."""
    files: dict[str, bytes] = {}
    commit = run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True).stdout.strip()
    if mode == "head":
        p = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, *SRC_PATHS],
                           capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    files[m.name] = tf.extractfile(m).read()
    else:
        out = run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "--", *SRC_PATHS],
                  check=True).stdout
        for rel in out.splitlines():
            f = ROOT / rel
            if f.is_file():
                files[rel] = f.read_bytes()
    changed = 0
    for rel, data in files.items():
        changed += write_if_changed(dest / rel, data)
    keep = set(files)
    removed = 0
    for f in list(dest.rglob("*")):
        if f.is_file() and str(f.relative_to(dest)) not in keep:
            f.unlink()
            removed += 1
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return {"mode": mode, "commit": commit, "files": len(files), "changed": changed, "removed": removed,
            "sha256": h.hexdigest()[:16], "paths": list(SRC_PATHS)}



def build_flags(bdir: Path) -> dict:
    """Compiler and the compile command of one heap source (compile_commands.json)."""
    out = {}
    try:
        cc = json.loads((bdir / "compile_commands.json").read_text())
        for e in cc:
            if e["file"].endswith("src/heap/heap.c"):
                cmd = e.get("command") or " ".join(e.get("arguments", []))
                args = shlex.split(cmd)
                out["compiler"] = args[0]
                out["flags"] = " ".join(a for a in args[1:] if a.startswith(("-O", "-std", "-f", "-m", "-g", "-D"))
                                        and not a.startswith("-DDMM_HEAP_CONFIG_HEADER"))
                break
    except (OSError, ValueError, KeyError):
        pass
    if out.get("compiler"):
        v = run([out["compiler"], "--version"])
        out["compiler_version"] = (v.stdout.splitlines() or [""])[0]
    return out


# --------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------

def ranks(xs: list[float]) -> list[float]:
    """1-based ranks, ties get their mean rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rho: Pearson correlation of the (tie-averaged) ranks."""
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else None


def kendall_discordant(a: list[float], b: list[float]) -> list[tuple[int, int]]:
    """Pairs (i, j) ordered one way by a and the other way by b."""
    out = []
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if (a[i] - a[j]) * (b[i] - b[j]) < 0:
                out.append((i, j))
    return out


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--traces", help="comma-separated trace names (bench/traces/NAME.trace) or paths; "
                    "default: every row of bench/traces/manifest.tsv")
    ap.add_argument("--configs", help="comma-separated config names (" + ", ".join(CONFIGS) + "); "
                    "default: all of them")
    ap.add_argument("--config", action="append", metavar="NAME=TEXT",
                    help="add a config (dmm_heap_config_parse text; repeatable)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: traces {','.join(QUICK_TRACES)}, configs {','.join(QUICK_CONFIGS)}")
    ap.add_argument("--source", choices=("head", "worktree"), default="head",
                    help="build from git HEAD (default) or from the work tree as it is now")
    ap.add_argument("--jobs", type=int, default=2, help="build jobs and parallel callgrind runs (default 2)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "runtime_vs_frozen"),
                    help="output path without extension (default bench/results/runtime_vs_frozen)")
    ap.add_argument("--threshold", type=float, default=1.25,
                    help="flag configs whose runtime/frozen ratio exceeds this on some trace (default 1.25)")
    args = ap.parse_args()

    valgrind = shutil.which("valgrind")
    if not valgrind:
        print("valgrind not found (apt install valgrind)", file=sys.stderr)
        return 2

    # ---- selection -------------------------------------------------------
    cfg_names = list(QUICK_CONFIGS if args.quick else CONFIGS)
    extra_cfgs = {}
    for kv in args.config or []:
        if "=" not in kv:
            ap.error(f"--config {kv!r}: expected NAME=TEXT")
        n, t = kv.split("=", 1)
        extra_cfgs[n.strip()] = t.strip()
    if args.configs:
        cfg_names = []
        for c in args.configs.split(","):
            c = c.strip()
            if c not in CONFIGS:
                ap.error(f"unknown config {c!r} (known: {', '.join(CONFIGS)}; add others with --config NAME=TEXT)")
            cfg_names.append(c)
    cfg_names += [n for n in extra_cfgs if n not in cfg_names]
    specs = {n: extra_cfgs.get(n) or CONFIGS[n] for n in cfg_names}

    tdir = ROOT / "bench" / "traces"
    manifest = []
    for ln in (tdir / "manifest.tsv").read_text().splitlines():
        if ln.startswith("#") or not ln.strip():
            continue
        f = ln.split("\t")
        manifest.append({"file": f[0], "ops": int(f[1]), "threads": int(f[2]), "hash": f[3],
                         "deterministic": f[5] == "yes", "command": f[7] if len(f) > 7 else ""})
    by_name = {m["file"][:-len(".trace")]: m for m in manifest}
    if args.traces:
        tnames = [t.strip() for t in args.traces.split(",") if t.strip()]
    elif args.quick:
        tnames = list(QUICK_TRACES)
    else:
        tnames = list(by_name)
    traces = []
    for t in tnames:
        p = Path(t) if ("/" in t or t.endswith(".trace")) else tdir / f"{t}.trace"
        if not p.is_file():
            ap.error(f"no trace {p}")
        traces.append({"name": p.stem, "path": str(p.resolve()), "manifest": by_name.get(p.stem)})

    build_root = ROOT / "build"
    src = build_root / "rank-src"
    rt_dir = build_root / "rank-runtime"
    log(f"runtime vs frozen: {len(specs)} configs x {len(traces)} traces; sources: {args.source}")

    # ---- sources and the runtime build -------------------------------------
    snap = snapshot_sources(args.source, src)
    log(f"sources ({args.source}, commit {snap['commit'][:12]}) -> {src.relative_to(ROOT)}: {snap['files']} files, {snap['changed']} rewritten, "
        f"{snap['removed']} removed (content {snap['sha256']})")
    n_builds = 1 + len(specs)
    beta = Eta("build", n_builds, guess=60.0)
    t = beta.start(0, f"runtime dmm-replay + dmm-config in {rt_dir.relative_to(ROOT)}")
    try:
        up = cmake_build(src, rt_dir, ["dmm-replay", "dmm-config"], [], jobs=args.jobs, export_compile_commands=True)
    except FrozenBuildError as e:
        raise SystemExit(e.detail(40))
    d = beta.end(t, counted=not up)
    log(f"  {'up to date' if up else 'built'} in {fmt_s(d)}")
    rt_replay = rt_dir / "tools" / "dmm-replay"
    dmm_config = rt_dir / "tools" / "dmm-config"

    # ---- normalise the configs (as explore does: dmm-replay --check-configs) --
    p = run([str(rt_replay), "--check-configs", "-"], input="\n".join(specs.values()) + "\n")
    answers = p.stdout.splitlines()
    if p.returncode != 0 or len(answers) != len(specs):
        raise SystemExit(f"dmm-replay --check-configs failed: {p.stderr}")
    configs = []
    for (n, spec), a in zip(specs.items(), answers):
        if not a.startswith("ok "):
            raise SystemExit(f"config {n} ({spec}) refused by the heap: {a}")
        configs.append({"name": n, "spec": spec, "config": a[3:].strip()})

    # ---- frozen builds --------------------------------------------------------
    problems: list[str] = []
    for i, c in enumerate(configs):
        bdir = build_root / f"rank-frozen-{slug(c['name'])}"
        c["build_dir"] = str(bdir.relative_to(ROOT))
        t = beta.start(i + 1, f"frozen {c['name']} in {c['build_dir']}")
        try:
            header = header_text(dmm_config, c["config"], "rank_" + slug(c["name"]))
        except FrozenBuildError as e:
            c["frozen_error"] = e.message
            problems.append(f"{c['name']}: {c['frozen_error']}")
            log("  " + c["frozen_error"])
            beta.end(t, counted=False)
            continue
        hdr = bdir / "frozen_config.h"
        bdir.mkdir(parents=True, exist_ok=True)
        write_if_changed(hdr, header.encode())
        try:
            up = cmake_build(src, bdir, ["dmm-replay"], [f"-DDMM_FROZEN_CONFIG={hdr}"], jobs=args.jobs,
                             export_compile_commands=True)
        except FrozenBuildError as e:
            c["frozen_error"] = e.message
            problems.append(f"{c['name']}: frozen build failed ({bdir})")
            log("  " + e.detail(30))
            beta.end(t, counted=False)
            continue
        d = beta.end(t, counted=not up)
        log(f"  {'up to date' if up else 'built'} in {fmt_s(d)}")
        c["frozen_replay"] = str(bdir / "tools" / "dmm-replay")

    # ---- arenas: explore's measure_memory on the runtime build -----------------
    log(f"arenas (explore's measure_memory: minimum arena, then the replay arena) for "
        f"{len(traces) * len(configs)} (trace, config) pairs")
    mem: dict[tuple[str, str], dict] = {}
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(measure_memory, {"replay": str(rt_replay), "trace": tr["path"], "spec": c["config"]}):
                (tr["name"], c["name"]) for tr in traces for c in configs}
        for f in cf.as_completed(futs):
            key = futs[f]
            try:
                mem[key] = f.result()
            except TaskError as e:
                problems.append(f"{key[1]} on {key[0]}: measure_memory failed: {e}")

    # ---- instruction counts ------------------------------------------------
    # runtime: one callgrind run per trace over every config (exactly explore);
    # frozen: one run per (trace, config), each with its own frozen binary.
    jobs = []
    for tr in traces:
        lines = [(mem[(tr["name"], c["name"])]["arena"], c["config"]) for c in configs
                 if (tr["name"], c["name"]) in mem]
        names = [c["name"] for c in configs if (tr["name"], c["name"]) in mem]
        jobs.append(("runtime", tr, names, {"replay": str(rt_replay), "trace": tr["path"], "valgrind": valgrind,
                                             "lines": lines}))
        for c in configs:
            if c.get("frozen_replay") and (tr["name"], c["name"]) in mem:
                jobs.append(("frozen", tr, [c["name"]],
                             {"replay": c["frozen_replay"], "trace": tr["path"], "valgrind": valgrind,
                              "lines": [(mem[(tr["name"], c["name"])]["arena"], c["config"])]}))
    counts: dict[tuple[str, str, str], dict] = {}
    eta = Eta("callgrind", len(jobs), guess=3.0)
    log(f"callgrind: {len(jobs)} runs ({len(traces)} runtime sweeps, {len(jobs) - len(traces)} frozen), "
        f"{args.jobs} at a time")
    tstart = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(count_instructions, j[3]): j for j in jobs}
        for k, f in enumerate(cf.as_completed(futs)):
            form, tr, names, _ = futs[f]
            try:
                res = f.result()
            except TaskError as e:
                res = [{"instructions": None, "failed": None, "error": str(e)}] * len(names)
            for n, r in zip(names, res):
                counts[(form, tr["name"], n)] = r
                if r.get("error") or not r.get("instructions"):
                    problems.append(f"{n} ({form}) on {tr['name']}: {r.get('error') or 'no instructions counted'}")
            el = time.monotonic() - tstart
            left = el / (k + 1) * (len(jobs) - k - 1)
            log(f"callgrind {k + 1}/{len(jobs)}: {form} {tr['name']}"
                + (f" ({names[0]})" if form == "frozen" else f" ({len(names)} configs)") + f" (ETA {fmt_s(left)})")

    # ---- figures ---------------------------------------------------------------
    per_trace = []
    ratios: dict[str, list[float]] = {c["name"]: [] for c in configs}
    ratio_tr: dict[str, list[str]] = {c["name"]: [] for c in configs}
    for tr in traces:
        rows = []
        for c in configs:
            m = mem.get((tr["name"], c["name"])) or {}
            ops = m.get("ops")
            rr = counts.get(("runtime", tr["name"], c["name"])) or {}
            fr = counts.get(("frozen", tr["name"], c["name"])) or {}
            ri, fi = rr.get("instructions"), fr.get("instructions")
            row = {"config": c["name"], "arena": m.get("arena"), "ops": ops,
                   "runtime_instructions": ri, "frozen_instructions": fi,
                   "runtime_failed": rr.get("failed"), "frozen_failed": fr.get("failed"),
                   "runtime_instr_per_op": ri / ops if ri and ops else None,
                   "frozen_instr_per_op": fi / ops if fi and ops else None,
                   "error": rr.get("error") or fr.get("error")}
            row["ratio"] = (row["runtime_instr_per_op"] / row["frozen_instr_per_op"]
                            if row["runtime_instr_per_op"] and row["frozen_instr_per_op"] else None)
            if row["ratio"] is not None:
                ratios[c["name"]].append(row["ratio"])
                ratio_tr[c["name"]].append(tr["name"])
            rows.append(row)
        ok = [r for r in rows if r["ratio"] is not None]
        a = [r["runtime_instr_per_op"] for r in ok]
        b = [r["frozen_instr_per_op"] for r in ok]
        rho = spearman(a, b)
        best_rt = min(ok, key=lambda r: r["runtime_instr_per_op"])["config"] if ok else None
        best_fr = min(ok, key=lambda r: r["frozen_instr_per_op"])["config"] if ok else None
        disc = [(ok[i]["config"], ok[j]["config"]) for i, j in kendall_discordant(a, b)]
        per_trace.append({"trace": tr["name"], "ops": (ok[0]["ops"] if ok else None),
                          "threads": (tr["manifest"] or {}).get("threads"),
                          "configs_compared": len(ok), "spearman": rho,
                          "best_runtime": best_rt, "best_frozen": best_fr,
                          "best_agrees": (best_rt == best_fr) if ok else None,
                          "discordant_pairs": disc, "rows": rows})
    rhos = [t["spearman"] for t in per_trace if t["spearman"] is not None]
    agree = [t["best_agrees"] for t in per_trace if t["best_agrees"] is not None]
    per_config = []
    for c in configs:
        rs = ratios[c["name"]]
        worst = ratio_tr[c["name"]][max(range(len(rs)), key=lambda i: rs[i])] if rs else None
        per_config.append({"config": c["name"], "spec": c["spec"], "normalised": c["config"],
                           "frozen_build": c.get("build_dir"), "frozen_error": c.get("frozen_error"),
                           "ratio_median": statistics.median(rs) if rs else None,
                           "ratio_min": min(rs) if rs else None,
                           "ratio_max": max(rs) if rs else None, "ratio_max_trace": worst,
                           "traces": len(rs)})
    slow = [pc for pc in per_config if pc["ratio_max"] is not None and pc["ratio_max"] > args.threshold]
    overall = {"spearman_mean": statistics.fmean(rhos) if rhos else None,
               "spearman_min": min(rhos) if rhos else None,
               "spearman_min_trace": (min((t for t in per_trace if t["spearman"] is not None),
                                          key=lambda t: t["spearman"])["trace"] if rhos else None),
               "best_agrees_fraction": (sum(agree) / len(agree)) if agree else None,
               "best_agrees": sum(agree), "traces": len(agree),
               "ratio_median_all": statistics.median([x for v in ratios.values() for x in v]) if ratios else None,
               "configs_over_threshold": [pc["config"] for pc in slow], "threshold": args.threshold}

    # ---- context and output ------------------------------------------------------
    git = lambda *a: run(["git", "-C", str(ROOT), *a]).stdout.strip()  # noqa: E731
    vg = run([valgrind, "--version"]).stdout.strip()
    flags = build_flags(rt_dir)
    cmdline = "scripts/bench_rank_frozen.py" + "".join(" " + shlex.quote(a) for a in sys.argv[1:])
    doc = {
        "schema": SCHEMA, "version": SCHEMA_VERSION,
        "context": {
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": cmdline,
            "commit": snap["commit"],  # HEAD when the sources were copied (it may move during the run)
            "commit_subject": git("log", "-1", "--format=%s", snap["commit"]),
            "head_at_end": git("rev-parse", "HEAD"),
            "sources": snap,
            # --source worktree: uncommitted changes under the source paths when the run ended
            "worktree_dirty_paths": [ln[3:] for ln in git("status", "--porcelain", "--", *SRC_PATHS).splitlines()],
            "host": platform.node(), "machine": platform.machine(),
            "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
                        None) if Path("/proc/cpuinfo").exists() else None,
            "python": platform.python_version(),
            "compiler": flags.get("compiler"), "compiler_version": flags.get("compiler_version"),
            "flags": flags.get("flags"),
            "cmake_options": ["-G Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DDMM_BUILD_TESTS=OFF",
                              "-DDMM_BUILD_BENCH=OFF", "-DDMM_BUILD_SHARED=OFF",
                              "frozen: -DDMM_FROZEN_CONFIG=<build dir>/frozen_config.h (dmm-config header CONFIG)"],
            "valgrind": vg,
            "method": {
                "measure_version": MEASURE_VERSION,
                "arena": "dmmkit.measure.measure_memory on the runtime dmm-replay (explore's arena: "
                         "max(4 x peak live, 1 MiB, 2 x minimum arena), rounded to 4 KiB); the same arena for both forms",
                "instructions": "dmmkit.measure.count_instructions: valgrind --tool=callgrind "
                                + " ".join(f"--toggle-collect={t}" for t in CALLGRIND_TOGGLES)
                                + f" --dump-after={SWEEP_MARK} dmm-replay TRACE --count-sweep FILE; "
                                  "runtime: one sweep per trace over all configs (as explore), frozen: one "
                                  "sweep of one config per frozen binary",
                "instr_per_op": "instructions / trace operations",
                "spearman": "Pearson correlation of tie-averaged ranks of instr/op across the configs, "
                            "runtime vs frozen, per trace",
                "ratio": "runtime instr/op / frozen instr/op",
            },
            "wall_seconds": round(time.monotonic() - T0, 1),
        },
        "configs": per_config,
        "traces": per_trace,
        "overall": overall,
        "problems": problems,
    }
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from provenance import provenance
    doc["provenance"] = provenance(doc["context"]["command"], doc["context"]["compiler_version"],
                                   doc["context"]["flags"], "runtime library and per-config frozen builds")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    log(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    print(markdown_summary(doc))
    return 0


def f2(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def markdown_summary(doc: dict) -> str:
    o = doc["overall"]
    return (f"Spearman mean {f2(o['spearman_mean'], 3)}, min {f2(o['spearman_min'], 3)} ({o['spearman_min_trace']}); "
            f"best config agrees on {o['best_agrees']}/{o['traces']} traces; "
            f"configs with runtime/frozen > {o['threshold']}: {', '.join(o['configs_over_threshold']) or 'none'}")


def markdown(doc: dict) -> str:
    c = doc["context"]
    o = doc["overall"]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from provenance import markdown as prov_md
    L = ["# Runtime vs frozen: instructions per operation and config ranking", "",
         *([prov_md(doc["provenance"]), ""] if doc.get("provenance") else []),
         "Written by", "", "```sh", c["command"], "```", "",
         f"{c['date']}, commit `{c['commit'][:12]}` ({c['commit_subject']}), sources: {c['sources']['mode']} "
         f"(content {c['sources']['sha256']}), {c['compiler_version']}, `{c['flags']}`, {c['valgrind']}, "
         f"{c['cpu']}; wall time {fmt_s(c['wall_seconds'])}.", "",
         "Instructions per operation counted exactly as `dmmkit explore` counts them "
         "(`dmmkit.measure.count_instructions`: callgrind, collection only inside the heap's allocator entry "
         "points, `dmm-replay --count-sweep`, instructions / trace operations; the arena from "
         "`measure_memory`), once with `dmm-replay` linked against the runtime library (all configs in one sweep, "
         "as explore) and once per config with `dmm-replay` built frozen to it (`dmm-config header` + "
         "`-DDMM_FROZEN_CONFIG`). Same arena, same normalised config text for both. Every config keeps "
         "explore's defaults (`stats=counters,harden=checked`), `lock=none`.", "",
         "## Overall", "",
         f"- Spearman rank correlation runtime vs frozen across the configs, per trace: mean "
         f"**{f2(o['spearman_mean'], 3)}**, min **{f2(o['spearman_min'], 3)}** ({o['spearman_min_trace']}).",
         f"- Best config the same in both forms on **{o['best_agrees']}/{o['traces']}** traces.",
         f"- Runtime/frozen instr/op ratio, median over every (trace, config): {f2(o['ratio_median_all'], 3)}; "
         f"configs above {o['threshold']} on some trace: {', '.join(o['configs_over_threshold']) or 'none'}.", "",
         "## Per config", "",
         "| config | runtime/frozen median | min | max (trace) | traces | config text (policy) |",
         "|---|---:|---:|---:|---:|---|"]
    for pc in doc["configs"]:
        pol = ",".join(kv for kv in pc["normalised"].split(",")
                       if kv.split("=")[0] in ("org", "sl_bits", "links", "order", "fit", "split", "coalesce",
                                               "quick_max"))
        mx = f"{f2(pc['ratio_max'], 3)} ({pc['ratio_max_trace']})" if pc["ratio_max"] is not None else "-"
        err = f" **frozen: {pc['frozen_error']}**" if pc.get("frozen_error") else ""
        L.append(f"| {pc['config']} | {f2(pc['ratio_median'], 3)} | {f2(pc['ratio_min'], 3)} | {mx} | "
                 f"{pc['traces']} | `{pol}`{err} |")
    L += ["", "## Per trace", "",
          "| trace | ops | Spearman | best (runtime) | best (frozen) | agree | pairs ordered differently |",
          "|---|---:|---:|---|---|---|---|"]
    for t in doc["traces"]:
        disc = "; ".join(f"{a} / {b}" for a, b in t["discordant_pairs"]) or "none"
        L.append(f"| {t['trace']} | {t['ops']} | {f2(t['spearman'], 3)} | {t['best_runtime']} | {t['best_frozen']} | "
                 f"{'yes' if t['best_agrees'] else 'NO'} | {disc} |")
    names = [pc["config"] for pc in doc["configs"]]
    L += ["", "## Instructions per operation (runtime / frozen)", "",
          "| trace | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for t in doc["traces"]:
        cells = []
        for r in t["rows"]:
            cells.append(f"{f2(r['runtime_instr_per_op'], 1)} / {f2(r['frozen_instr_per_op'], 1)}")
        L.append(f"| {t['trace']} | " + " | ".join(cells) + " |")
    if doc["problems"]:
        L += ["", "## Problems", ""] + [f"- {p}" for p in doc["problems"]]
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
