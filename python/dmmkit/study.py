"""`dmmkit study`: the many-core heap study (issue 10, seed 002 reproduced).

A thread sweep over multi-threaded stress programs (bench/workloads/mt,
every `mt-*` found in the directory) and real programs
(bench/workloads/real/real.sh), each run as a whole process under every
allocator through LD_PRELOAD (glibc: no preload).

How it measures (docs/study.md):

- Interleaving: for each repetition, for each (workload, threads) cell, the
  allocators run one after the other in an order shuffled afresh for that
  cell (seeded by --seed; every order is recorded), so drift of a shared
  machine hits all allocators alike.
- Each run is one process: its wall time is measured here (perf_counter,
  from the start to the reaping); its peak RSS is the `ru_maxrss` of
  `os.wait4` (the child, or its largest reaped descendant); an mt program's
  own `wall_ns` (the threaded part) is kept too.
- Correctness: an mt run must exit 0 and print the checksum the other
  allocators print for the same cell (the checksum does not depend on the
  allocator); a real run must exit 0 and print what glibc prints.  A failed
  or wrong run keeps its first error line, is left out of every figure and
  is shown as such in the tables.
- Statistics per cell and allocator: mean and a 95% Student-t confidence
  interval over the repetitions; the ratio to the best allocator of the cell
  (lowest mean time) from ratios paired by repetition.
- Beside the results: one run of each workload at 2 threads recorded under
  the recorder and summarised by dmm-analyse (`dmmkit analyse`).

Outputs in the output directory: study.json (schema dmm-study/1, written
after every cell, so an interrupted study leaves its partial results),
study.md and the PNG plots.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.util
import math
import os
import platform
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats as _st

from .allocators import LIBDMM, SYSTEM_ALLOCATORS, Allocator, parse_peers, resolve, split_allocator_list
from .cache import clean_nans, write_json_atomic
from .errors import BAD_INPUT, RUNTIME, DmmkitError
from .procs import failure_text, record_quietly, rss_method, run_process
from .schemas import STUDY
from .stats import geomean, paired_ratios
from .validate import check_document
from .tools import Tools, file_sha256, find_root, first_error_line

SCHEMA = STUDY.id  # "dmm-study/1"
DEFAULT_ALLOCATORS = ("glibc", "jemalloc", "mimalloc", "tcmalloc", "tbbmalloc", LIBDMM)
DEFAULT_THREADS = (1, 2, 4, 8)
DEFAULT_REPS = 5
# mt programs: at --scale 200 one run at 1 thread takes 0.1-0.5 s on the
# 2-core development VM (0.04-0.26 s of threaded work at their default 100,
# measured under glibc); the work per thread is constant, so on 2 cores 8
# threads take about four times as long as 2.
DEFAULT_SCALE = 200
QUICK_SCALE = 2
QUICK_THREADS = (1, 2)
DEFAULT_TIMEOUT = 600.0
MT_SEED = 1
ANALYSE_THREADS = 2
NOT_INSTALLED = 77  # real.sh: the program is not installed

# Failures known from elsewhere, shown beside the run's own error line.
KNOWN_FAILURES = {
    ("mimalloc", "rptest"): "known mimalloc 2.0.9 bug: posix_memalign can return a block that is not aligned "
                            "as asked (microsoft/mimalloc issue #700)",
}

def t95(df: int) -> float:
    """The two-sided 95% Student t quantile for df degrees of freedom
    (scipy.stats); NaN below 1."""
    if df < 1:
        return math.nan
    return float(_st.t.ppf(0.975, df))


def mean_ci(values: list[float]) -> dict:
    """n, mean, the half-width of the 95% confidence interval of the mean
    (Student t, scipy.stats; None for fewer than two values), sd, min, max."""
    v = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "ci95": None, "sd": None, "min": None, "max": None}
    m = sum(v) / n
    if n < 2:
        return {"n": 1, "mean": m, "ci95": None, "sd": None, "min": v[0], "max": v[0]}
    if min(v) == max(v):
        return {"n": n, "mean": m, "ci95": 0.0, "sd": 0.0, "min": v[0], "max": v[0]}
    d = _st.describe(v)
    sd = math.sqrt(d.variance)
    return {"n": n, "mean": m, "ci95": t95(n - 1) * float(_st.sem(v)), "sd": sd, "min": min(v), "max": max(v)}


# ------------------------------------------------------------ workloads ---

@dataclass
class Workload:
    name: str          # "larson" (mt-larson), "sqlite3" (real.sh sqlite3), "cfrac" (an --external line)
    kind: str          # "mt", "real" or "ext"
    path: Path         # the program (mt, ext) or real.sh (real)
    threaded: bool = True
    command: list[str] | None = None   # ext: the whole command, {threads} still in it
    stdin: str | None = None           # ext: the file on its standard input
    check_output: bool = False         # ext: its output must be glibc's (check=output)

    def thread_counts(self, threads: list[int]) -> list[int]:
        return list(threads) if self.threaded else [1]

    def as_dict(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "path": str(self.path), "threaded": self.threaded}
        if self.kind == "ext":
            d.update(command=self.command, stdin=self.stdin, check_output=self.check_output)
        return d


EXT_KINDS = ("threaded", "single")


def parse_external(manifest: Path, base: Path | None = None) -> tuple[list[Workload], list[str]]:
    """The workloads of an --external manifest (docs/study.md, "Programs of
    your own"): one a line, `NAME threaded|single [stdin=FILE] [check=output]
    -- PROGRAM ARGS...`, shell-quoted, `#` comments.  `{dir}` in the command
    and the stdin file is BASE (default: the manifest's directory), `{threads}`
    the run's thread count, `{cpus}` the CPUs this process may use.  A bad line is an error naming FILE:LINE; a
    program that is not there (not built) is left out with a note."""
    try:
        text = manifest.read_text()
    except OSError as e:
        raise DmmkitError(f"--external {manifest}: {e.strerror or e}", BAD_INPUT) from None
    base = (base or manifest.resolve().parent).resolve()
    out: list[Workload] = []
    notes: list[str] = []
    cpus = str(len(os.sched_getaffinity(0)))
    for no, line in enumerate(text.splitlines(), 1):
        where = f"{manifest}:{no}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise DmmkitError(f"{where}: {e}", BAD_INPUT) from None
        if "--" not in words:
            raise DmmkitError(f"{where}: expected 'NAME threaded|single [stdin=FILE] [check=output] -- PROGRAM "
                              "ARGS...'", BAD_INPUT)
        cut = words.index("--")
        head, cmd = words[:cut], [w.replace("{dir}", str(base)).replace("{cpus}", cpus) for w in words[cut + 1:]]
        if len(head) < 2 or not cmd:
            raise DmmkitError(f"{where}: expected a name, threaded or single, then -- and the command", BAD_INPUT)
        name, kind, opts = head[0], head[1], head[2:]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
            raise DmmkitError(f"{where}: workload name {name!r}: use letters, digits and _.+-", BAD_INPUT)
        if kind not in EXT_KINDS:
            raise DmmkitError(f"{where}: {kind!r}: expected threaded or single", BAD_INPUT)
        if any(w.name == name for w in out):
            raise DmmkitError(f"{where}: workload {name!r} is named twice", BAD_INPUT)
        stdin, check = None, False
        for o in opts:
            if o.startswith("stdin="):
                stdin = os.path.abspath(base / o[6:].replace("{dir}", str(base)))  # lexically, as the shell would
            elif o == "check=output":
                check = True
            else:
                raise DmmkitError(f"{where}: unknown option {o!r} (stdin=FILE, check=output)", BAD_INPUT)
        if kind == "single" and any("{threads}" in w for w in cmd):
            raise DmmkitError(f"{where}: a single-threaded workload cannot use {{threads}}", BAD_INPUT)
        prog = cmd[0] if "/" in cmd[0] else (shutil.which(cmd[0]) or str(base / cmd[0]))
        prog_path = Path(prog)
        if not prog_path.is_absolute():
            prog_path = Path(os.path.abspath(base / prog_path))
        if not (prog_path.is_file() and os.access(prog_path, os.X_OK)):
            notes.append(f"{name} left out: {cmd[0]} is not an executable file ({where})")
            continue
        if stdin is not None and not Path(stdin).is_file():
            notes.append(f"{name} left out: its input {stdin} is not a file ({where})")
            continue
        cmd[0] = str(prog_path)
        out.append(Workload(name, "ext", prog_path, kind == "threaded", command=cmd, stdin=stdin,
                            check_output=check))
    if not out and not notes:
        raise DmmkitError(f"--external {manifest}: no workload in it", BAD_INPUT)
    return out, notes


def parse_threads(text: str) -> list[int]:
    out: list[int] = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            continue
        if not tok.isdigit() or not 1 <= int(tok) <= 256:
            raise DmmkitError(f"--threads {text!r}: expected a comma-separated list of thread counts 1..256")
        if int(tok) not in out:
            out.append(int(tok))
    if not out:
        raise DmmkitError(f"--threads {text!r}: no thread count given")
    return out


def discover_mt(mt_dir: Path) -> list[Workload]:
    """Every executable mt-* file of the directory, sorted by name."""
    out = []
    for p in sorted(mt_dir.glob("mt-*")):
        if p.is_file() and os.access(p, os.X_OK) and "." not in p.name:
            out.append(Workload(p.name[3:], "mt", p.resolve()))
    return out


def discover_real(real: Path, timeout: float = 60) -> list[Workload]:
    """The workloads `real.sh --list` names ("NAME threaded" / "NAME single")."""
    try:
        p = subprocess.run([str(real), "--list"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DmmkitError(f"--real {real}: cannot run '{real} --list' ({e})", BAD_INPUT) from None
    if p.returncode != 0:
        raise DmmkitError(f"--real {real}: '--list' failed: {first_error_line(p.stderr) or p.returncode}",
                          BAD_INPUT)
    out = []
    for ln in p.stdout.splitlines():
        parts = ln.split()
        if not parts:
            continue
        if len(parts) != 2 or parts[1] not in ("threaded", "single"):
            raise DmmkitError(f"--real {real}: '--list' printed {ln.strip()!r}, expected 'NAME threaded' or "
                              "'NAME single'", BAD_INPUT)
        out.append(Workload(parts[0], "real", real.resolve(), parts[1] == "threaded"))
    return out


def default_mt_dir(tools: Tools | None) -> Path | None:
    cands = []
    if tools is not None:
        cands.append(tools.replay.parent.parent / "bench" / "workloads" / "mt")
    root = (tools.root if tools is not None and tools.root and not tools.installed else None) or find_root()
    if root is not None:
        cands.extend(root / "build" / b / "bench" / "workloads" / "mt" for b in ("release", "debug"))
    for c in cands:
        if c.is_dir() and discover_mt(c):
            return c
    return None


def default_real(tools: Tools | None) -> Path | None:
    root = (tools.root if tools is not None and tools.root else None) or find_root()
    if root is None:
        return None
    p = root / "bench" / "workloads" / "real" / "real.sh"
    return p if p.is_file() else None


# ---------------------------------------------------------------- runs ---

@dataclass
class RunResult:
    status: str              # "ok" or "failed" here; judge() may make it "wrong"
    time_s: float | None
    rss_kb: int | None
    wall_ns: int | None = None
    cpu_s: float | None = None
    checksum: str | None = None
    out_sha: str | None = None
    error: str | None = None


def run_mt(w: Workload, threads: int, scale: int, preload: str | None, timeout: float,
           pin: bool = False) -> RunResult:
    import json
    cmd = pin_prefix(threads, pin) + [str(w.path), "--threads", str(threads), "--scale", str(scale), "--seed",
                                      str(MT_SEED), "--json"]
    usage: dict = {}
    code, so, se, wall, rss, to = run_process(cmd, preload, timeout, usage=usage)
    err = failure_text(code, se, so, to, timeout)
    doc = None
    for ln in so.splitlines():
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            if isinstance(d, dict) and d.get("schema") == "dmm-mtbench/1":
                doc = d
    if err is None and doc is None:
        err = "no dmm-mtbench/1 JSON line in the output"
    r = RunResult("failed" if err else "ok", wall, rss, cpu_s=usage.get("cpu_s"), error=err)
    if doc is not None:
        wn = doc.get("wall_ns")
        r.wall_ns = int(wn) if isinstance(wn, (int, float)) else None
        ck = doc.get("checksum")
        r.checksum = str(ck) if ck is not None else None
    return r


def run_real(w: Workload, threads: int, scale: int | None, preload: str | None, timeout: float,
             scratch: Path, pin: bool = False) -> RunResult:
    work = Path(tempfile.mkdtemp(prefix=f"{w.name}-", dir=scratch))
    usage: dict = {}
    try:
        cmd = pin_prefix(threads, pin) + [str(w.path), w.name, "--workdir", str(work)]
        if w.threaded:
            cmd += ["--threads", str(threads)]
        if scale is not None:
            cmd += ["--scale", str(scale)]
        code, so, se, wall, rss, to = run_process(cmd, preload, timeout, cwd=str(work), usage=usage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if code == NOT_INSTALLED and not to:
        return RunResult("skipped", None, None, error=first_error_line(se) or first_error_line(so)
                         or "not installed (real.sh exit 77)")
    err = failure_text(code, se, so, to, timeout)
    return RunResult("failed" if err else "ok", wall, rss, cpu_s=usage.get("cpu_s"),
                     out_sha=hashlib.sha256(so.encode()).hexdigest(), error=err)


def pin_prefix(threads: int, pin: bool) -> list[str]:
    """taskset -c 0..k-1 for a run of `threads` threads when --pin is asked
    (k = threads, at most the CPUs this process may use: the first k of
    them), else nothing."""
    if not pin:
        return []
    cpus = sorted(os.sched_getaffinity(0))
    return ["taskset", "-c", ",".join(map(str, cpus[:max(1, min(threads, len(cpus)))]))]


def run_ext(w: Workload, threads: int, preload: str | None, timeout: float, scratch: Path,
            pin: bool = False) -> RunResult:
    """One run of an --external workload in a fresh working directory: exit
    status 0 is required; with check=output its output is judged against
    glibc's."""
    work = Path(tempfile.mkdtemp(prefix=f"{w.name}-", dir=scratch))
    usage: dict = {}
    try:
        cmd = pin_prefix(threads, pin) + [x.replace("{threads}", str(threads)) for x in (w.command or [])]
        code, so, se, wall, rss, to = run_process(cmd, preload, timeout, cwd=str(work), stdin_path=w.stdin,
                                                  usage=usage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    err = failure_text(code, se, so, to, timeout)
    return RunResult("failed" if err else "ok", wall, rss, cpu_s=usage.get("cpu_s"),
                     out_sha=hashlib.sha256(so.encode()).hexdigest() if w.check_output else None, error=err)


# ------------------------------------------------------------- judging ---

def judge(runs: list[dict], reference: str = "glibc") -> None:
    """Marks the runs whose result differs from the cell's reference as
    "wrong" (in place).  The reference of a (workload, threads) cell is the
    most common result (checksum for mt, stdout hash for real) of the
    reference allocator's good runs, else of all good runs.  Runs marked
    wrong before are judged again (the reference may have changed)."""
    cells: dict[tuple, list[dict]] = {}
    for r in runs:
        if r["status"] == "wrong":
            r["status"] = "ok"
            r["error"] = None
        cells.setdefault((r["workload"], r["threads"]), []).append(r)
    for cell in cells.values():
        good = [r for r in cell if r["status"] == "ok"]
        key = "checksum" if any(r.get("checksum") is not None for r in good) else "out_sha"

        def most_common(rs):
            counts: dict = {}
            for r in rs:
                if r.get(key) is not None:
                    counts[r[key]] = counts.get(r[key], 0) + 1
            return max(counts, key=lambda k: (counts[k], str(k))) if counts else None

        ref_runs = [r for r in good if r["allocator"] == reference]
        ref = most_common(ref_runs) if ref_runs else None
        who = reference
        if ref is None:
            ref, who = most_common(good), "most runs"
        if ref is None:
            continue
        for r in good:
            if r.get(key) != ref:
                r["status"] = "wrong"
                if key == "checksum":
                    r["error"] = f"wrong result: checksum {r.get(key)} differs from {who}'s {ref}"
                else:
                    r["error"] = f"wrong result: the output differs from {who}'s"


# ----------------------------------------------------------- summaries ---

def summarise(doc: dict) -> None:
    """Fills doc["summary"] (per workload, threads, allocator), doc["best"]
    and doc["goals"] from doc["runs"]."""
    reps = doc["settings"]["reps"]
    labels = [a["label"] for a in doc["allocators"]]
    by: dict[str, dict[str, dict[str, list]]] = {}
    counts: dict[tuple, dict] = {}
    for r in doc["runs"]:
        t = str(r["threads"])
        cell = by.setdefault(r["workload"], {}).setdefault(t, {})
        lst = cell.setdefault(r["allocator"], [None] * reps)
        c = counts.setdefault((r["workload"], t, r["allocator"]), {"runs": 0, "bad": 0, "errors": []})
        c["runs"] += 1
        if r["status"] == "ok":
            if 0 <= r["rep"] < reps:
                lst[r["rep"]] = r
        elif r["status"] in ("failed", "wrong"):
            c["bad"] += 1
            if r.get("error") and r["error"] not in c["errors"]:
                c["errors"].append(r["error"])
    summary: dict = {}
    best: dict = {}
    for wl, per_t in by.items():
        for t, per_a in per_t.items():
            figs = {}
            for a, lst in per_a.items():
                times = [x["time_s"] if x else None for x in lst]
                c = counts.get((wl, t, a), {"runs": 0, "bad": 0, "errors": []})
                f = {"time": mean_ci([x for x in times if x is not None]),
                     "rss_kb": mean_ci([x["rss_kb"] for x in lst if x and x.get("rss_kb") is not None]),
                     "wall_ns": mean_ci([x["wall_ns"] for x in lst if x and x.get("wall_ns") is not None]),
                     "cpu_s": mean_ci([x["cpu_s"] for x in lst if x and x.get("cpu_s") is not None]),
                     "runs": c["runs"], "bad": c["bad"], "errors": c["errors"][:3], "_times": times}
                known = KNOWN_FAILURES.get((a, wl))
                if known and c["bad"]:
                    f["known_failure"] = known
                figs[a] = f
            ok = {a: f for a, f in figs.items() if f["time"]["mean"] is not None}
            b = min(ok, key=lambda a: ok[a]["time"]["mean"]) if ok else None
            bm = min(ok, key=lambda a: ok[a]["rss_kb"]["mean"] or math.inf) if ok else None
            for a, f in figs.items():
                f["ratio"] = None
                f["rss_ratio"] = None
                if b is not None and f["time"]["mean"] is not None:
                    pr = paired_ratios(f["_times"], figs[b]["_times"])
                    f["ratio"] = mean_ci(pr) if pr else {"n": 0, "mean": f["time"]["mean"] / figs[b]["time"]["mean"],
                                                         "ci95": None, "sd": None, "min": None, "max": None}
                if bm is not None and f["rss_kb"]["mean"] is not None and ok[bm]["rss_kb"]["mean"]:
                    f["rss_ratio"] = f["rss_kb"]["mean"] / ok[bm]["rss_kb"]["mean"]
            for f in figs.values():
                del f["_times"]
            summary.setdefault(wl, {})[t] = figs
            best.setdefault(wl, {})[t] = {"time": b, "rss": bm}
    doc["summary"] = summary
    doc["best"] = best
    doc["goals"] = goals(summary, labels)


def goals(summary: dict, labels: list[str]) -> dict:
    """The issue's three goals for libdmm, as measured (never asserted)."""
    out: dict = {"allocator": LIBDMM}
    if LIBDMM not in labels:
        out["note"] = "libdmm was not in the study"
        return out

    def cells_with(a, b, key):
        rs = []
        for wl, per_t in summary.items():
            for t, figs in per_t.items():
                x, y = figs.get(a), figs.get(b)
                if x and y and x[key]["mean"] and y[key]["mean"]:
                    rs.append(x[key]["mean"] / y[key]["mean"])
        return rs

    vs_mi = cells_with(LIBDMM, "mimalloc", "time")
    out["time_geomean_vs_mimalloc"] = {"value": geomean(vs_mi), "cells": len(vs_mi), "goal": "<= 1.0"}
    vs_gl = cells_with(LIBDMM, "glibc", "rss_kb")
    out["rss_geomean_vs_glibc"] = {"value": geomean(vs_gl), "cells": len(vs_gl), "goal": "<= 1.0"}
    worst: dict = {}
    for wl, per_t in summary.items():
        w = None
        for t, figs in per_t.items():
            f = figs.get(LIBDMM)
            if f and f["ratio"] and f["ratio"]["mean"] is not None:
                if w is None or f["ratio"]["mean"] > w["ratio"]:
                    w = {"ratio": f["ratio"]["mean"], "threads": int(t)}
        worst[wl] = w
    out["worst_ratio_to_best"] = worst
    vals = [w["ratio"] for w in worst.values() if w]
    out["worst_ratio_overall"] = max(vals) if vals else None
    out["worst_ratio_goal"] = "<= 1.5"
    return out


# ------------------------------------------------------------ analysis ---

def analysis_figures(d: dict) -> dict:
    """The request-pattern figures of a dmm-analyse document the study
    shows beside the results."""
    oc = d.get("op_counts") or {}
    ops = sum(v for k, v in oc.items() if k != "sync" and isinstance(v, int))
    sz = d.get("sizes") or {}
    th = d.get("threads") or {}
    ra = d.get("realloc") or {}
    lt = d.get("lifetime") or {}
    pk = d.get("peak") or {}
    hist = sz.get("histogram") or []
    req = sum(b.get("count", 0) for b in hist) or None
    small = sum(b.get("count", 0) for b in hist if b.get("max", 0) <= 64)
    medium = sum(b.get("count", 0) for b in hist if 64 < b.get("max", 0) <= 4096)
    allocs = sum(v for k, v in oc.items() if k not in ("free", "sync") and isinstance(v, int))
    return {
        "ops": ops, "op_counts": oc, "threads": th.get("count"),
        "size_mean": sz.get("mean"), "size_min": sz.get("min"), "size_max": sz.get("max"),
        "sizes_distinct": sz.get("distinct"),
        "share_le_64": small / req if req else None,
        "share_65_4096": medium / req if req else None,
        "top_sizes": [[x.get("size"), x.get("count")] for x in (sz.get("top") or [])[:4]],
        "cross_thread_free_share": th.get("cross_thread_free_fraction"),
        "realloc_share": (ra.get("reallocs") or 0) / allocs if allocs else None,
        "peak_live_bytes": pk.get("live_bytes"), "peak_live_objects": pk.get("live_objects"),
        "lifetime_mean": lt.get("mean"), "lifetime_max": lt.get("max"), "never_freed": lt.get("never_freed"),
    }


def analyse_workload(tools: Tools, w: Workload, scale: int, outdir: Path, real_scale: int | None,
                     timeout: float) -> dict:
    """Records one run at 2 threads (a single-threaded real workload: its
    one run) and returns {"threads", "command", "process", "figures"} or {"error"}: "process" is the recorded process analysed (for a real workload, its largest trace)."""
    from .analyse import analyse_json
    adir = outdir / "analysis"
    adir.mkdir(parents=True, exist_ok=True)
    rec = Path(tempfile.mkdtemp(prefix=f"rec-{w.name}-traces-"))
    trace = rec / f"{w.name}.trace"
    log = adir / f"{w.name}.log"
    log.unlink(missing_ok=True)
    threads = ANALYSE_THREADS if w.threaded else 1
    work = None
    if w.kind == "mt":
        cmd = [str(w.path), "--threads", str(threads), "--scale", str(scale), "--seed", str(MT_SEED)]
    elif w.kind == "ext":
        # in a scratch directory, with its input, as the timed runs have them
        work = Path(tempfile.mkdtemp(prefix=f"rec-{w.name}-"))
        cmd = ["sh", "-c", 'cd "$0" || exit 1; f=$1; shift; exec "$@" < "$f"', str(work), w.stdin or os.devnull,
               *[x.replace("{threads}", str(threads)) for x in (w.command or [])]]
    else:
        work = Path(tempfile.mkdtemp(prefix=f"rec-{w.name}-"))
        cmd = [str(w.path), w.name, "--workdir", str(work)] + (["--threads", str(threads)] if w.threaded else []) \
            + (["--scale", str(real_scale)] if real_scale is not None else [])
    try:
        if tools.recorder is None:
            return {"threads": threads, "error": "the recorder libdmmrec.so was not found"}
        rc = record_quietly(tools, trace, cmd, log)
        if rc != 0 or not any(rec.glob(f"{w.name}.trace*")):
            why = f"exit status {rc}" if rc != 0 else "no trace written: the program made no allocation"
            return {"threads": threads, "error": f"recording failed ({why}; see {log})"}
        # A real workload is a driver script starting the program (and
        # helpers): the recorder writes one trace per process.  The one
        # that allocated the most is the program's.
        main = max(rec.glob(f"{w.name}.trace*"), key=lambda p: p.stat().st_size)
        d = analyse_json(tools, str(main))
        return {"threads": threads, "command": cmd, "process": _recorded_command(log, main),
                "figures": analysis_figures(d)}
    except DmmkitError as e:
        return {"threads": threads, "error": e.message}
    except OSError as e:
        return {"threads": threads, "error": f"recording failed: {e}"}
    finally:
        shutil.rmtree(rec, ignore_errors=True)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _recorded_command(log: Path, trace: Path) -> str | None:
    """The command line the recorder's report gives for this trace file
    ("record: FILE: N ops (...), pid P, written in T ms: COMMAND")."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("record:") and f"{trace}:" in ln and " ms: " in ln:
            return ln.split(" ms: ", 1)[1].strip() or None
    return None


# ---------------------------------------------------------------- facts ---

def machine_facts() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.lower().startswith("model name"):
                    model = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        avail = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        avail = None
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {"cpu_model": model or platform.processor() or None, "cores": os.cpu_count(), "cores_available": avail,
            "kernel": platform.release(), "system": platform.system(), "python": sys.version.split()[0],
            "load_at_start": load}


def allocator_facts(a: Allocator) -> dict:
    d = {"label": a.label, "kind": a.kind, "lib": str(a.lib) if a.lib else None, "version": None, "package": None}
    if a.label in SYSTEM_ALLOCATORS:
        pkg = SYSTEM_ALLOCATORS[a.label][1]
        d["package"] = pkg
        try:
            p = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True,
                               timeout=20)
            if p.returncode == 0 and p.stdout.strip():
                d["version"] = p.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    elif a.lib is not None:
        try:
            d["sha256"] = file_sha256(a.lib)[:16]
        except OSError:
            pass
        root = find_root()
        if a.label == LIBDMM and root is not None:
            try:
                p = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True,
                                   text=True, timeout=20)
                if p.returncode == 0:
                    d["version"] = "dmmkit " + p.stdout.strip()
            except (OSError, subprocess.TimeoutExpired):
                pass
    return d


def _provenance_module():
    """The source tree's scripts/provenance.py (the record every
    bench/results file carries, written the same way by every generator), or
    None when dmmkit runs outside a source tree."""
    try:
        root = find_root()
    except DmmkitError:
        root = None
    path = root / "scripts" / "provenance.py" if root is not None else None
    if path is None or not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_dmmkit_provenance", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dmm_builds(allocs: list[Allocator]) -> list[tuple[str, Path]]:
    """(label, CMake build tree) of every preloaded library built from this
    source tree (libdmm and --peer builds of it): their compiler and flags go
    into the record."""
    out = []
    for a in allocs:
        if a.lib is None or a.label in SYSTEM_ALLOCATORS:
            continue
        for d in Path(a.lib).resolve().parents:
            if (d / "CMakeCache.txt").is_file():
                out.append((a.label, d))
                break
    return out


def provenance_record(mod, command: str, allocs: list[Allocator], load_before: float | None) -> dict:
    """The scripts/provenance.py record of a study: its command, commit,
    date, CPU, the load before and after, and the compiler and flags of each
    dmmkit-built library studied."""
    compiler, flags = None, []
    for label, d in _dmm_builds(allocs):
        cc, fl = mod.cmake_build(str(d))
        compiler = compiler or cc
        if fl:
            flags.append(f"{label}: {fl}")
    return mod.provenance(command, compiler, "; ".join(flags) or None, None, load_before)


# --------------------------------------------------------------- driver ---

@dataclass
class StudyOptions:
    outdir: str
    threads: list[int] = field(default_factory=lambda: list(DEFAULT_THREADS))
    reps: int = DEFAULT_REPS
    allocators: list[str] = field(default_factory=list)  # empty: the default six, missing ones left out
    workloads: list[str] = field(default_factory=list)   # empty: every mt program and real workload
    scale: int = DEFAULT_SCALE
    real_scale: int | None = None
    mt_dir: str | None = None
    real: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    analyse: bool = True
    analyse_scale: int | None = None
    seed: int = 1
    quick: bool = False
    no_real: bool = False
    peers: list[str] = field(default_factory=list)       # NAME=/path/lib.so, studied beside the list
    external: str | None = None                          # a manifest of programs of the user's own
    external_dir: str | None = None                      # its {dir} (default: the manifest's directory)
    pin: bool = False                                    # each run on its first `threads` CPUs (taskset)
    argv: list[str] = field(default_factory=list)


def plan(tools: Tools | None, opts: StudyOptions) -> tuple[list[Allocator], list[Workload], list[str]]:
    """Checks the options; returns the allocators, the workloads and notes
    (what was left out).  Bad input raises DmmkitError (exit status 2)."""
    notes: list[str] = []
    if opts.reps < 1:
        raise DmmkitError("--reps must be at least 1")
    if opts.scale < 1:
        raise DmmkitError("--scale must be at least 1")
    items = split_allocator_list(opts.allocators) if opts.allocators else list(DEFAULT_ALLOCATORS)
    for it in items:
        if it.startswith("dmm:") or it in ("dlmalloc", "tlsf", "halffit", "firstfit", "p2012"):
            raise DmmkitError(f"allocator {it!r}: the study runs whole programs under LD_PRELOAD and a dmm heap "
                              "configuration is not a malloc library: use libdmm, or build one with dmmkit generate "
                              "and pass it with --peer NAME=/path/lib.so")
    peers = parse_peers(opts.peers)
    items += [name for name in peers if name not in items]
    tdir = tools.replay.parent if tools is not None else None
    allocs = resolve(items, peers=peers, skip_missing=notes if not opts.allocators else None, tools_dir=tdir)
    if not allocs:
        raise DmmkitError("no allocator to study")

    mt: list[Workload] = []
    if opts.mt_dir:
        d = Path(opts.mt_dir)
        if not d.is_dir():
            raise DmmkitError(f"--mt-dir {opts.mt_dir}: no such directory")
        mt = discover_mt(d)
        if not mt:
            raise DmmkitError(f"--mt-dir {opts.mt_dir}: no executable mt-* program in it (build them: cmake "
                              "--build --preset release --target mt_programs)")
    else:
        d = default_mt_dir(tools)
        if d is None:
            notes.append("no mt programs found (build them: cmake --build --preset release --target mt_programs, "
                         "or pass --mt-dir)")
        else:
            mt = discover_mt(d)
    real: list[Workload] = []
    if opts.real:
        rp = Path(opts.real)
        if not rp.is_file():
            raise DmmkitError(f"--real {opts.real}: no such file")
        real = discover_real(rp)
    elif not opts.no_real:
        rp = default_real(tools)
        if rp is None:
            notes.append("no real-program workloads (bench/workloads/real/real.sh not found; pass --real)")
        else:
            real = discover_real(rp)
    ext: list[Workload] = []
    if opts.external:
        mp = Path(opts.external)
        if not mp.is_file():
            raise DmmkitError(f"--external {opts.external}: no such file", BAD_INPUT)
        if opts.external_dir and not Path(opts.external_dir).is_dir():
            raise DmmkitError(f"--external-dir {opts.external_dir}: no such directory", BAD_INPUT)
        ext, ext_notes = parse_external(mp, Path(opts.external_dir) if opts.external_dir else None)
        notes.extend(ext_notes)
        if not ext:
            raise DmmkitError(f"--external {opts.external}: none of its programs is there ({ext_notes[0]})",
                              BAD_INPUT)
        clash = {w.name for w in mt + real} & {w.name for w in ext}
        if clash:
            raise DmmkitError(f"--external {opts.external}: workload name(s) {', '.join(sorted(clash))} are "
                              "already mt or real workloads: rename them in the manifest", BAD_INPUT)
    if opts.pin and not shutil.which("taskset"):
        raise DmmkitError("--pin needs taskset (util-linux)", BAD_INPUT)
    every = mt + [w for w in real if w.name not in {m.name for m in mt}] + ext
    if opts.workloads:
        by = {w.name: w for w in every}
        chosen = []
        for name in split_allocator_list(opts.workloads):
            key = name[3:] if name.startswith("mt-") and name[3:] in by else name
            if key not in by:
                raise DmmkitError(f"unknown workload {name!r} (known: {', '.join(by) or 'none found'})")
            if by[key] not in chosen:
                chosen.append(by[key])
        every = chosen
    if not every:
        raise DmmkitError("no workload to run (no mt programs and no real workloads found; see --mt-dir, --real)")
    return allocs, every, notes


def run_study(tools: Tools | None, opts: StudyOptions) -> dict:
    from .ui import console, progress
    if opts.reps < 1:
        raise DmmkitError("--reps must be at least 1")
    if opts.quick:
        opts.reps = 1
        opts.threads = [t for t in opts.threads if t in QUICK_THREADS] or list(QUICK_THREADS)
        opts.scale = min(opts.scale, QUICK_SCALE)
        if opts.real_scale is None:
            opts.real_scale = 1
    allocs, workloads, notes = plan(tools, opts)
    for n in notes:
        console.print(f"[yellow]note[/]: {n}", soft_wrap=True)
    outdir = Path(opts.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="dmmkit-study-"))
    mach = machine_facts()
    prov_mod = _provenance_module()
    prov_command = os.environ.get("DMMKIT_STUDY_SCRIPT") or shlex.join(list(opts.argv) or ["dmmkit", "study"])
    prov_load = prov_mod.load() if prov_mod is not None else None
    if prov_mod is None:
        notes.append("no provenance record: scripts/provenance.py of the dmmkit source tree was not found")
    cores = mach["cores"] or 0
    over = [t for t in opts.threads if cores and t > cores]
    mach["note"] = (f"this machine has {cores} cores: runs with {', '.join(map(str, over))} threads oversubscribe "
                    "the cores and measure contention, not scaling") if over else f"this machine has {cores} cores"
    console.print(f"[bold]study[/]: {len(workloads)} workloads x threads {','.join(map(str, opts.threads))} x "
                  f"{len(allocs)} allocators x {opts.reps} reps; {mach['note']}", soft_wrap=True)
    doc = {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": list(opts.argv) or ["dmmkit", "study"],
        # scripts/study.sh says how it was run
        "script": os.environ.get("DMMKIT_STUDY_SCRIPT") or None,
        "complete": False,
        "machine": mach,
        "settings": {"threads": opts.threads, "reps": opts.reps, "scale": opts.scale, "real_scale": opts.real_scale,
                     "mt_seed": MT_SEED, "order_seed": opts.seed, "timeout": opts.timeout, "quick": opts.quick,
                     "pin": ("each run on its first min(threads, CPUs) CPUs (taskset)" if opts.pin else None),
                     "cpu_metric": "user + system CPU seconds of the process and its reaped descendants (wait4)",
                     "time_metric": "wall time of the whole process, measured by dmmkit (perf_counter)",
                     "rss_method": rss_method(),
                     "rss_metric": ("peak RSS (KiB): ru_maxrss of the program, or of its largest reaped descendant, "
                                    "from GNU time's wait4" if rss_method() == "gnu-time" else
                                    "peak RSS (KiB): ru_maxrss of os.wait4; GNU time is not installed, so this "
                                    "includes the front end's own resident set before exec (a floor of ~30 MB)")},
        "allocators": [allocator_facts(a) for a in allocs],
        "workloads": [w.as_dict() for w in workloads],
        "notes": notes,
        "orders": [],
        "runs": [],
        "skipped": {},
        "analysis": {},
    }
    if prov_mod is not None:
        doc["provenance"] = provenance_record(prov_mod, prov_command, allocs, prov_load)
    rng = random.Random(opts.seed)
    cells = [(w, t) for w in workloads for t in w.thread_counts(opts.threads)]
    total = opts.reps * len(cells) * len(allocs)
    json_path = outdir / "study.json"

    def save(final: bool = False):
        judge(doc["runs"])
        summarise(doc)
        if final and "load" in doc.get("provenance", {}):
            # the record names the tree the study started from; the load is the one after the runs
            doc["provenance"]["load"]["after"] = prov_mod.load()
        clean = clean_nans(doc)  # a copy: what the JSON gets, and study.md renders the same doc
        if final:
            # what is written is what `load_document(..., STUDY)` accepts
            check_document(clean, STUDY, "the study results about to be written", RUNTIME)
        write_json_atomic(json_path, clean)
        if final:
            write_outputs(doc, outdir)

    skipped: dict[str, str] = doc["skipped"]
    try:
        with progress() as prog:
            task = prog.add_task("study", total=total)
            for rep in range(opts.reps):
                for w, t in cells:
                    if w.name in skipped:
                        prog.advance(task, len(allocs))
                        continue
                    order = list(allocs)
                    rng.shuffle(order)
                    doc["orders"].append({"rep": rep, "workload": w.name, "threads": t,
                                          "order": [a.label for a in order]})
                    for a in order:
                        prog.update(task, description=f"rep {rep + 1} {w.name} t={t} {a.label}")
                        if w.name in skipped:
                            prog.advance(task)
                            continue
                        preload = str(a.lib) if a.lib else None
                        if w.kind == "mt":
                            r = run_mt(w, t, opts.scale, preload, opts.timeout, opts.pin)
                        elif w.kind == "ext":
                            r = run_ext(w, t, preload, opts.timeout, scratch, opts.pin)
                        else:
                            r = run_real(w, t, opts.real_scale, preload, opts.timeout, scratch, opts.pin)
                        if r.status == "skipped":
                            skipped[w.name] = r.error or "not installed"
                            console.print(f"[yellow]note[/]: {w.name} left out: {skipped[w.name]}", soft_wrap=True)
                            doc["runs"] = [x for x in doc["runs"] if x["workload"] != w.name]
                            prog.advance(task)
                            continue
                        doc["runs"].append({"workload": w.name, "threads": t, "allocator": a.label, "rep": rep,
                                            "status": r.status, "time_s": r.time_s, "rss_kb": r.rss_kb,
                                            "cpu_s": r.cpu_s, "wall_ns": r.wall_ns, "checksum": r.checksum, "out_sha": r.out_sha,
                                            "error": r.error})
                        prog.advance(task)
                    save()
        if opts.analyse and tools is not None:
            ascale = opts.analyse_scale or max(1, opts.scale // 10)
            for w in workloads:
                if w.name in skipped:
                    continue
                console.print(f"analyse: recording {w.name} ...", soft_wrap=True)
                doc["analysis"][w.name] = analyse_workload(tools, w, ascale, outdir, opts.real_scale, opts.timeout)
                if "error" in doc["analysis"][w.name]:
                    console.print(f"[yellow]note[/]: analysis of {w.name}: {doc['analysis'][w.name]['error']}",
                                  soft_wrap=True)
                save()
        elif opts.analyse:
            doc["notes"].append("analysis skipped: the native tools were not found")
        doc["complete"] = True
        save(final=True)
    except KeyboardInterrupt:
        doc["interrupted"] = True
        try:
            save(final=True)
        finally:
            console.print(f"study interrupted: partial results in {json_path}", soft_wrap=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_summary(doc)
    console.print(f"wrote {json_path}, {outdir / 'study.md'} and the plots", soft_wrap=True)
    return doc


# -------------------------------------------------------------- outputs ---

def _fmt_figure(stat: dict, ratio: float | None, scale: float, digits: int) -> str:
    """mean ± CI half-width (scaled, to `digits` places), then (ratio x)."""
    m = stat["mean"]
    if m is None:
        return "-"
    ci = stat["ci95"]
    s = f"{m / scale:.{digits}f}" + (f" ± {ci / scale:.{digits}f}" if ci is not None else "")
    return s + (f" ({ratio:.2f}x)" if ratio is not None else "")


def _fmt_time(f: dict) -> str:
    return _fmt_figure(f["time"], (f.get("ratio") or {}).get("mean"), 1.0, 3)


def _fmt_rss(f: dict) -> str:
    return _fmt_figure(f["rss_kb"], f.get("rss_ratio"), 1024.0, 1)


def _fmt_cpu(f: dict) -> str:
    return _fmt_figure(f.get("cpu_s") or {"mean": None}, None, 1.0, 3)


def _cell_text(f: dict | None, fmt) -> str:
    if f is None:
        return "-"
    s = fmt(f)
    if f["bad"]:
        why = f["errors"][0] if f["errors"] else "failed"
        if f.get("known_failure"):
            why += f"; {f['known_failure']}"
        bad = f"FAILED {f['bad']}/{f['runs']}: {why}".replace("|", "/")
        s = bad if s == "-" else f"{s}; {bad}"
    return s


def _threads_sorted(per_t: dict) -> list[str]:
    return sorted(per_t, key=int)


def markdown(doc: dict, plots: list[str]) -> str:
    labels = [a["label"] for a in doc["allocators"]]
    m = doc["machine"]
    s = doc["settings"]
    L = ["# Many-core heap study (dmmkit study)", ""]
    prov_mod = _provenance_module() if doc.get("provenance") else None
    if prov_mod is not None:
        L += [prov_mod.markdown(doc["provenance"]), ""]
    if not doc.get("complete"):
        L += ["**Partial results: the study was interrupted.**", ""]
    if doc.get("script"):
        L.append(f"- run by: `{doc['script']}`")
    L += [f"- command: `{shlex.join(doc['command'])}`",
          f"- machine: {m.get('cpu_model')}, {m.get('cores')} cores, Linux {m.get('kernel')}; "
          f"load average at start {', '.join(f'{x:.2f}' for x in m.get('load_at_start') or [])}",
          f"- **{m.get('note')}**",
          f"- threads {', '.join(map(str, s['threads']))}; {s['reps']} repetitions, interleaved (allocator order "
          f"shuffled per cell, seed {s['order_seed']}); mt programs at --scale {s['scale']} --seed {s['mt_seed']}",
          f"- time: {s['time_metric']}; peak RSS: {s['rss_metric']}"
          + (f"; CPU time: {s['cpu_metric']}" if s.get("cpu_metric") else "")
          + (f"; pinned: {s['pin']}" if s.get("pin") else ""),
          "- allocators: " + "; ".join(f"{a['label']} {a.get('version') or ''} ({a.get('lib') or 'no preload'})"
                                       for a in doc["allocators"]),
          ""]
    for n in doc.get("notes") or []:
        L.append(f"- note: {n}")
    for w, why in (doc.get("skipped") or {}).items():
        L.append(f"- {w} left out: {why}")
    L.append("")
    L += ["Each cell: mean ± half-width of the 95% confidence interval (Student t over the repetitions), then "
          "(ratio to the best allocator of the row, paired by repetition). A failed or wrong run is excluded from "
          "the figures and shown with its first error line.", ""]
    g = doc.get("goals") or {}
    L += ["## Goals (libdmm, measured, not asserted)", ""]
    if g.get("note"):
        L += [g["note"], ""]
    else:
        def v(x):
            return "not measured" if x is None else f"{x:.3f}"
        tm, rs = g.get("time_geomean_vs_mimalloc", {}), g.get("rss_geomean_vs_glibc", {})
        L += ["| goal | measured | target |", "|---|---|---|",
              f"| geometric-mean time, libdmm / mimalloc ({tm.get('cells', 0)} cells) | {v(tm.get('value'))} | <= 1.0 |",
              f"| geometric-mean peak RSS, libdmm / glibc ({rs.get('cells', 0)} cells) | {v(rs.get('value'))} | "
              "<= 1.0 |",
              f"| worst time ratio of libdmm to the best allocator | {v(g.get('worst_ratio_overall'))} | <= 1.5 |", ""]
        L += ["| workload | libdmm's worst ratio to the best | at threads |", "|---|---|---|"]
        for wl, w in (g.get("worst_ratio_to_best") or {}).items():
            L.append(f"| {wl} | {v(w['ratio']) if w else 'no good run'} | {w['threads'] if w else '-'} |")
        L.append("")
    for title, fmt, unit, key in (("Time", _fmt_time, "seconds", "time"), ("Peak RSS", _fmt_rss, "MiB", "rss"),
                                  ("CPU time", _fmt_cpu, "seconds, user + system", "cpu")):
        if key == "cpu" and not any(f.get("cpu_s", {}).get("mean") is not None for per_t in
                                    doc.get("summary", {}).values() for figs in per_t.values()
                                    for f in figs.values()):
            continue  # results made before CPU time was recorded
        L += [f"## {title} ({unit})", ""]
        if key == "cpu":
            L += ["Beside the wall time: on a shared machine CPU time varies less; for programs that run for a "
                  "fixed time (they report their own throughput) it does not measure speed.", ""]
        for wl, per_t in doc.get("summary", {}).items():
            L += [f"### {wl}", "", "| threads | " + " | ".join(labels) + " | best |",
                  "|---|" + "---|" * (len(labels) + 1)]
            for t in _threads_sorted(per_t):
                figs = per_t[t]
                if key == "cpu":
                    ok = {a: f["cpu_s"]["mean"] for a, f in figs.items()
                          if (f.get("cpu_s") or {}).get("mean") is not None and f["time"]["mean"] is not None}
                    b = min(ok, key=ok.get) if ok else None
                else:
                    b = doc["best"][wl][t][key]
                cells = [_cell_text(figs.get(a), fmt) for a in labels]
                L.append(f"| {t} | " + " | ".join(cells) + f" | {b or '-'} |")
            L.append("")
    L += ["## Request patterns (dmmkit analyse of one recorded run)", "",
          "| workload | threads | ops | mean size (B) | <= 64 B | 65..4096 B | cross-thread frees | reallocs "
          "| peak live | mean lifetime (ops) | fastest (threads: allocator) |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    for w in doc["workloads"]:
        wl = w["name"]
        if wl in (doc.get("skipped") or {}):
            continue
        an = (doc.get("analysis") or {}).get(wl)
        bests = "; ".join(f"{t}: {doc['best'][wl][t]['time']}" for t in _threads_sorted(doc["best"].get(wl, {})))
        if not an:
            L.append(f"| {wl} | - | not analysed | | | | | | | | {bests} |")
            continue
        if "error" in an:
            L.append(f"| {wl} | {an.get('threads')} | {an['error'].replace('|', '/')} | | | | | | | | {bests} |")
            continue
        f = an["figures"]
        pl = f.get("peak_live_bytes")
        size = "-" if f.get("size_mean") is None else f"{f['size_mean']:.0f}"
        life = "-" if f.get("lifetime_mean") is None else f"{f['lifetime_mean']:.0f}"
        live = "-" if pl is None else f"{pl / 1024:.0f} KiB"
        name = wl
        if an.get("process") and not an["process"].startswith(("bash ", "sh ")):
            name += f" (`{an['process'].split()[0].rsplit('/', 1)[-1]}`)"  # the real program's own process
        L.append(f"| {name} | {an['threads']} | {f.get('ops')} | {size} | {pct(f.get('share_le_64'))} | "
                 f"{pct(f.get('share_65_4096'))} | {pct(f.get('cross_thread_free_share'))} | "
                 f"{pct(f.get('realloc_share'))} | {live} | {life} | {bests} |")
    L += ["", "The mt programs are recorded at a smaller scale than they are timed (the request pattern per thread "
          "does not depend on the scale; the trace stays small). A real workload is a script that starts the "
          "program: the recorder follows it into every process, and the process that allocated the most (named "
          "in brackets) is the one analysed.", ""]
    if plots:
        L += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(L)


def print_summary(doc: dict) -> None:
    from rich.table import Table

    from .ui import console
    labels = [a["label"] for a in doc["allocators"]]
    t = Table(title=f"time, s (ratio to best); {doc['machine'].get('note')}")
    t.add_column("workload")
    t.add_column("threads", justify="right")
    for a in labels:
        t.add_column(a, justify="right")
    for wl, per_t in doc.get("summary", {}).items():
        for th in _threads_sorted(per_t):
            row = []
            for a in labels:
                f = per_t[th].get(a)
                row.append("-" if f is None else ("FAILED" if f["bad"] and f["time"]["mean"] is None
                                                  else _fmt_time(f) + (" !" if f["bad"] else "")))
            t.add_row(wl, th, *row)
    console.print(t)
    g = doc.get("goals") or {}
    if "time_geomean_vs_mimalloc" in g:
        def v(x):
            return "-" if x is None else f"{x:.3f}"
        console.print(f"libdmm: time geomean / mimalloc {v(g['time_geomean_vs_mimalloc']['value'])} (goal <= 1), "
                      f"peak RSS geomean / glibc {v(g['rss_geomean_vs_glibc']['value'])} (goal <= 1), worst ratio to "
                      f"best {v(g.get('worst_ratio_overall'))} (goal <= 1.5)", soft_wrap=True)


def write_outputs(doc: dict, outdir: Path) -> list[str]:
    plots: list[str] = []
    try:
        plots = plot_all(doc, outdir)
    except Exception as e:  # noqa: BLE001 - a plot problem must not lose the results
        doc.setdefault("notes", []).append(f"plots not written: {type(e).__name__}: {e}")
    (outdir / "study.md").write_text(markdown(doc, plots))
    return plots


# ---------------------------------------------------------------- plots ---

def _colours(labels: list[str]) -> dict[str, str]:
    import matplotlib
    cmap = matplotlib.colormaps["tab10"]
    return {a: cmap(i % 10) for i, a in enumerate(labels)}


def _panel_grid(n: int, cols_max: int = 4):
    import matplotlib.pyplot as plt
    cols = min(cols_max, max(1, n))
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows + 0.6), squeeze=False)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    return fig, axes, cols


def _sweep_plot(doc: dict, outdir: Path, name: str, key: str, scale: float, ylabel: str, title: str) -> str | None:
    """One panel per workload: the figure `key` against the thread count,
    one line per allocator with its 95% confidence interval as error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    summ = doc.get("summary") or {}
    wls = [w for w in summ if summ[w]]
    if not wls:
        return None
    labels = [a["label"] for a in doc["allocators"]]
    col = _colours(labels)
    fig, axes, cols = _panel_grid(len(wls))
    n = len(labels)
    for k, wl in enumerate(wls):
        ax = axes[k // cols][k % cols]
        ts = _threads_sorted(summ[wl])
        for j, a in enumerate(labels):
            xs, ys, es = [], [], []
            for t in ts:
                f = summ[wl][t].get(a)
                if not f or f[key]["mean"] is None:
                    continue
                # spread the allocators a little along x so the bars do not hide each other
                xs.append(int(t) * (1 + 0.04 * (j - (n - 1) / 2)))
                ys.append(f[key]["mean"] * scale)
                es.append((f[key]["ci95"] or 0) * scale)
            if xs:
                ax.errorbar(xs, ys, yerr=es, marker="o", ms=3.5, lw=1.2, capsize=2, color=col[a], label=a)
        ax.set_xscale("log", base=2)
        ax.set_xticks([int(t) for t in ts])
        ax.set_xticklabels(ts)
        ax.minorticks_off()
        ax.set_title(wl, fontsize=10)
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles, labs = [], []
    for row in axes:
        for ax in row:
            for h, lb in zip(*ax.get_legend_handles_labels()):
                if lb not in labs:
                    handles.append(h)
                    labs.append(lb)
    height = fig.get_figheight()
    fig.suptitle(f"{title} ({doc['machine'].get('cores')} cores; error bars: 95% CI)", fontsize=10,
                 y=1 - 0.12 / height, va="top")
    fig.legend(handles, labs, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.42 / height), ncol=min(6, len(labs)),
               fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / height))
    fig.savefig(outdir / name, dpi=90)
    plt.close(fig)
    return name


def _heatmap(doc: dict, outdir: Path, name: str) -> str | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    summ = doc.get("summary") or {}
    labels = [a["label"] for a in doc["allocators"]]
    rows, data, bad = [], [], []
    for wl in summ:
        for t in _threads_sorted(summ[wl]):
            rows.append(f"{wl} t={t}")
            line, bl = [], []
            for a in labels:
                f = summ[wl][t].get(a)
                r = f["ratio"]["mean"] if f and f.get("ratio") and f["ratio"].get("mean") else None
                line.append(r if r is not None else math.nan)
                bl.append(bool(f and f["bad"]))
            data.append(line)
            bad.append(bl)
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(1.1 * len(labels) + 2.6, 0.32 * len(rows) + 1.4))
    hi = max([x for line in data for x in line if not math.isnan(x)] + [1.5])
    im = ax.imshow(data, aspect="auto", cmap="RdYlGn_r", norm=LogNorm(vmin=1.0, vmax=hi))
    for i, line in enumerate(data):
        for j, x in enumerate(line):
            txt = "fail" if math.isnan(x) and bad[i][j] else ("-" if math.isnan(x) else f"{x:.2f}")
            if bad[i][j] and not math.isnan(x):
                txt += "!"
            ax.text(j, i, txt, ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.set_title("time / best allocator of the row (1.00 = fastest; ! = some runs failed)", fontsize=9)
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    ticks = [t for t in (1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100) if t <= hi]
    cb.ax.minorticks_off()
    cb.set_ticks(ticks)
    cb.set_ticklabels([f"{t:g}x" for t in ticks])
    fig.tight_layout()
    fig.savefig(outdir / name, dpi=90)
    plt.close(fig)
    return name


def plot_all(doc: dict, outdir: Path) -> list[str]:
    out = [_sweep_plot(doc, outdir, "study_time.png", "time", 1.0, "seconds", "Wall time per run vs threads"),
           _sweep_plot(doc, outdir, "study_rss.png", "rss_kb", 1 / 1024, "MiB", "Peak RSS vs threads"),
           _heatmap(doc, outdir, "study_ratio_heatmap.png")]
    return [p for p in out if p]
