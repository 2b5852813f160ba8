"""`dmmkit analyse` (dmm-analyse) and `dmmkit record` (the LD_PRELOAD
recorder)."""

from __future__ import annotations

import os
import tempfile

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


