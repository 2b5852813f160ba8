"""Console output: one rich Console, progress bars, number formatting."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, \
    TimeRemainingColumn

from .tools import file_sha256

def _width():
    """Wide tables when the output is not a terminal (logs, pipes)."""
    import sys
    if sys.stdout.isatty():
        return None
    try:
        return max(80, int(os.environ.get("COLUMNS", "160")))
    except ValueError:
        return 160


console = Console(highlight=False, width=_width())
err_console = Console(stderr=True, highlight=False, width=_width())


def progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                    console=console, transient=False)


def fmt_num(x, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 1000):
        return f"{int(x)}"
    return f"{x:.{digits}f}"


def fmt_bytes(x) -> str:
    if x is None:
        return "-"
    return f"{int(x)}"


def fmt_kib(x) -> str:
    if x is None:
        return "-"
    x = float(x)
    if x >= 10 * 1024 * 1024:
        return f"{x / 1048576:.1f} MiB"
    if x >= 10 * 1024:
        return f"{x / 1024:.1f} KiB"
    return f"{int(x)} B"


def fmt_ratio(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}"


def fmt_interval(ci, digits: int = 2) -> str:
    """A [lo, hi] interval as "lo-hi"; "-" when it is missing or not two numbers."""
    if (not isinstance(ci, (list, tuple)) or len(ci) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in ci)):
        return "-"
    return f"{ci[0]:.{digits}f}-{ci[1]:.{digits}f}"


def fmt_spread(s: dict | None) -> str:
    if not s or s.get("median") is None:
        return "-"
    return f"{s['median']:.3f} [{s['min']:.3f}-{s['max']:.3f}]"


@dataclass
class TraceRef:
    label: str
    path: str
    sha256: str


def trace_refs(paths: list[str]) -> list[TraceRef]:
    """Labels (file names without the suffix, made unique) and content hashes."""
    out: list[TraceRef] = []
    used: dict[str, int] = {}
    for p in paths:
        stem = Path(p).name
        for suf in (".trace", ".txt", ".rep"):
            if stem.endswith(suf) and len(stem) > len(suf):
                stem = stem[: -len(suf)]
                break
        n = used.get(stem, 0)
        used[stem] = n + 1
        label = stem if n == 0 else f"{stem}#{n + 1}"
        out.append(TraceRef(label, os.path.abspath(p), file_sha256(p)))
    return out
