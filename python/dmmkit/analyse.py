"""`dmmkit analyse` (dmm-analyse) and `dmmkit record` (the LD_PRELOAD
recorder)."""

from __future__ import annotations

import os
import sys
import subprocess
import tempfile
from pathlib import Path

from rich.table import Table

from .errors import RUNTIME, DmmkitError
from .schemas import ANALYSE
from .validate import load_document
from .tools import Tools, first_error_line, run, validate_trace
from .ui import console, fmt_kib


def analyse_json(tools: Tools, trace: str) -> dict:
    validate_trace(tools, trace)
    fd, tmp = tempfile.mkstemp(prefix="dmmkit-an-", suffix=".json")
    os.close(fd)
    try:
        res = run([str(tools.analyse), trace, "--json", tmp], timeout=1800)
        if res.returncode != 0:
            raise DmmkitError(f"dmm-analyse failed on {trace}: {first_error_line(res.stderr) or res.returncode}",
                              2 if res.returncode == 2 else RUNTIME)
        return load_document(tmp, ANALYSE, status=RUNTIME, where=f"dmm-analyse's JSON output for {trace}")[1]
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def print_analysis(trace: str, d: dict) -> None:
    oc = d.get("op_counts") or {}
    pk = d.get("peak") or {}
    sz = d.get("sizes") or {}
    lt = d.get("lifetime") or {}
    th = d.get("threads") or {}
    ra = d.get("realloc") or {}
    t = Table(title=f"{trace}", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    ops = sum(v for k, v in oc.items() if k != "sync")
    t.add_row("operations", f"{ops} (" + ", ".join(f"{k} {v}" for k, v in oc.items() if v) + ")")
    t.add_row("threads", f"{th.get('count', 1)}; ops per thread {d.get('thread_ops')}")
    t.add_row("peak live", f"{fmt_kib(pk.get('live_bytes'))} ({pk.get('live_bytes')} B) in {pk.get('live_objects')} "
                           f"objects, at operation {pk.get('op')}")
    t.add_row("requests", f"{sz.get('requests')}, {sz.get('min')}..{sz.get('max')} B, mean {sz.get('mean')} B, "
                          f"{sz.get('distinct')} distinct sizes")
    top = sz.get("top") or []
    t.add_row("top sizes", ", ".join(f"{x['size']} B x{x['count']}" for x in top[:8]))
    t.add_row("lifetime", f"mean {lt.get('mean')} ops, max {lt.get('max')}; {lt.get('never_freed')} never freed")
    t.add_row("cross-thread frees", f"{th.get('cross_thread_frees', 0)} of {th.get('frees', 0)} "
                                    f"({100 * (th.get('cross_thread_free_fraction') or 0):.1f}%)")
    t.add_row("realloc chains", f"{ra.get('chains')} chains, {ra.get('reallocs')} reallocs "
                                f"(grow {ra.get('grow_steps')}, shrink {ra.get('shrink_steps')}); "
                                f"final/initial median {ra.get('growth_median')}")
    console.print(t)
    hist = sz.get("histogram") or []
    if hist:
        h = Table(title="request sizes (power-of-two buckets)")
        h.add_column("bytes", justify="right")
        h.add_column("requests", justify="right")
        h.add_column("share of bytes", justify="right")
        h.add_column("")
        total = max(1, sum(b.get("bytes", 0) for b in hist))
        mx = max(1, max(b.get("count", 0) for b in hist))
        for b in hist:
            bar = "#" * max(1, round(30 * b["count"] / mx)) if b["count"] else ""
            h.add_row(f"{b['min']}..{b['max']}", str(b["count"]), f"{100 * b.get('bytes', 0) / total:.1f}%", bar)
        console.print(h)


ERROR_PREFIX = "dmmkit record: error: "


def record(tools: Tools, out: str | None, program: list[str], time: bool = False, follow_fork: bool = False,
           signal: str | None = None) -> int:
    """Runs the program with libdmmrec.so preloaded (what scripts/record.sh
    does, with the command line's error form: a failure is one line
    `dmmkit record: error: ...` on stderr).  Returns the program's exit
    status (1 when it succeeded but a trace was not written)."""
    if not program:
        raise DmmkitError("no program given: dmmkit record -o OUT -- PROGRAM [ARGS...]")
    from .advise import python_hint
    hint = python_hint(program)
    if hint:  # a Python program recorded through pymalloc shows a few thousand operations
        print("record: " + hint, file=sys.stderr)
    env = dict(os.environ)
    if not tools.recorder:
        raise DmmkitError("libdmmrec.so not found next to the tools: build the release preset "
                          "(cmake --preset release && cmake --build --preset release)", RUNTIME)
    from shutil import which
    if not which(program[0]) and not Path(program[0]).is_file():
        raise DmmkitError(f"program not found: {program[0]}", 127)
    env["LD_PRELOAD"] = str(tools.recorder) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env.pop("DMM_TRACE_ROOT", None)
    if out:
        env["DMM_TRACE_OUT"] = out
    if time:
        env["DMM_TRACE_TIME"] = "1"
    if follow_fork:
        env["DMM_TRACE_FORK"] = "follow"
    if signal:
        env["DMM_TRACE_SIGNAL"] = signal
    # The recorder appends one status line per trace it tried to write; a
    # line ending in "(trace not written)" carries the real cause (a full
    # disk, a missing directory), which is then the one message shown.
    fd, summary = tempfile.mkstemp(prefix="dmmkit-rec-", suffix=".status")
    os.close(fd)
    env["DMM_TRACE_SUMMARY"] = summary
    try:
        try:
            p = subprocess.run(program, env=env)
        except OSError as e:  # not executable, or a bare name found as a file but not on PATH
            raise DmmkitError(f"cannot run {program[0]}: {e.strerror or e}"
                              + (f" (for the file in this directory: ./{program[0]})"
                                 if "/" not in program[0] and Path(program[0]).is_file() else ""),
                              127 if isinstance(e, FileNotFoundError) else 126) from None
        try:
            with open(summary, errors="replace") as f:
                lines = [ln.strip() for ln in f if ln.strip()]
        except OSError:
            lines = []
    finally:
        try:
            os.unlink(summary)
        except OSError:
            pass
    failed = [ln for ln in lines if ln.endswith("(trace not written)")]
    for ln in lines:
        text = ln.split(": ", 1)[1] if ln.startswith("dmmrec: ") else ln
        if ln in failed:
            print(f"{ERROR_PREFIX}{text}", file=sys.stderr)
        else:
            print("record: " + text)
    if not lines:
        print(f"{ERROR_PREFIX}no trace was written (statically linked program, _exit/abort/kill before exit, "
              "or DMM_TRACE_DISABLE set)", file=sys.stderr)
        return p.returncode or 1
    if failed and p.returncode == 0:
        return 1
    return p.returncode
