"""A bounded, phase-preserving window of a trace, for exploring the heap
design space on a long trace within a time budget (`dmmkit advise`).

The window is `chunks` slices of consecutive operations, evenly spaced over
the whole trace (the first starts at operation 0, the last ends at the last
operation), together at most `max_ops` operations.  Each phase of the
program (start-up, steady state, tear-down) is therefore sampled in
proportion to its length, and inside a slice the request sizes, the
interleaving of threads and the order of operations are the program's own.

Objects are followed across the gaps between slices, so their lifetimes
are kept:

* an object allocated in a slice is in the window;
* its realloc in a slice is kept; a realloc in a gap is dropped (the object
  keeps its last size in the window), a realloc to 0 in a gap becomes its
  free;
* its free is kept wherever it happens (a free in a gap is written at the
  point where the gap is skipped, in the trace's order);
* an operation on an object allocated before the window (in a gap) is
  dropped, except a realloc, which becomes the allocation of a new object
  of that size (the program holds such a block from then on).

SYNC operations are dropped (their counts refer to the whole trace);
dmm-replay derives the synchronisation a multi-threaded window needs
(docs/replay.md).  Timestamps and metadata are kept.  The window is written
through the text form (`dmm-trace convert`), checked by the trace reader,
and converted back to the binary form.  Pure in its inputs: the same trace
and bounds give the same window (tested).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import RUNTIME, DmmkitError
from .tools import Tools, first_error_line, run

DEFAULT_CHUNKS = 8


def slices(n: int, max_ops: int, chunks: int = DEFAULT_CHUNKS) -> list[tuple[int, int]]:
    """The [start, end) operation ranges of the window over n operations."""
    if n <= max_ops:
        return [(0, n)]
    chunks = max(1, min(chunks, max_ops))
    length = max_ops // chunks
    if chunks == 1:
        return [(0, length)]
    step = (n - length) / (chunks - 1)
    out = []
    for j in range(chunks):
        s = int(round(j * step))
        out.append((s, s + length))
    return out


def window_lines(lines, n_ops: int, max_ops: int, chunks: int = DEFAULT_CHUNKS):
    """Yields the text lines of the window of a text trace given as an
    iterable of lines (the header and metadata pass through).  n_ops: the
    number of non-SYNC operations in the trace."""
    rng = slices(n_ops, max_ops, chunks)
    k = 0  # current slice
    i = -1  # index of the current non-SYNC operation
    live: set[str] = set()
    for raw in lines:
        line = raw.rstrip("\r\n")
        t = line.split()
        if not t or t[0].startswith("#") or t[0] in ("dmmtrace", "meta", "time"):
            yield line
            continue
        kind = t[1] if len(t) > 1 else ""
        if kind == "s":
            continue
        i += 1
        while k < len(rng) and i >= rng[k][1]:
            k += 1
        inside = k < len(rng) and rng[k][0] <= i < rng[k][1]
        oid = t[2] if len(t) > 2 else None
        if kind in ("m", "c", "a"):
            if inside:
                live.add(oid)
                yield line
        elif kind == "f":
            if oid in live:
                live.discard(oid)
                yield line
        elif kind == "r":
            size = t[3] if len(t) > 3 else "0"
            if oid in live:
                if size == "0":
                    live.discard(oid)
                    yield line if inside else " ".join([t[0], "f", oid] + [x for x in t[4:] if x.startswith("@")])
                elif inside:
                    yield line
            elif inside and size != "0":
                live.add(oid)
                yield " ".join([t[0], "m", oid, size] + t[4:])
        else:
            yield line  # unknown: left for the reader to reject
    return


def _convert(tools: Tools, src: str, dst: str) -> None:
    res = run([str(tools.trace), "convert", str(src), str(dst)], timeout=600)
    if res.returncode != 0:
        raise DmmkitError(f"dmm-trace convert {src}: {first_error_line(res.stderr or res.stdout)}", RUNTIME)


def _count_ops(path: str) -> int:
    n = 0
    with open(path, errors="replace") as f:
        for line in f:
            t = line.split(None, 2)
            if len(t) > 1 and t[1] in ("m", "c", "a", "f", "r"):
                n += 1
    return n


def make_window(tools: Tools, trace: str, out: str, max_ops: int, ops: int | None = None,
                chunks: int = DEFAULT_CHUNKS) -> dict:
    """Writes the window of `trace` to `out` (binary form) when the trace
    has more than max_ops operations; returns {"path", "whole", "trace_ops",
    "ops", "chunks", "slices"} (path is the trace itself when it is whole).
    The window's operation count is that of the slices plus the frees (and
    realloc-to-0) of window objects that fall in the gaps."""
    if ops is not None and ops <= max_ops:
        return {"path": trace, "whole": True, "trace_ops": ops, "ops": ops, "chunks": 1, "slices": [[0, ops]]}
    with tempfile.TemporaryDirectory(prefix="dmmkit-window-") as tmp:
        txt = os.path.join(tmp, "whole.txt")
        _convert(tools, trace, txt)
        n = _count_ops(txt)
        if n <= max_ops:
            return {"path": trace, "whole": True, "trace_ops": n, "ops": n, "chunks": 1, "slices": [[0, n]]}
        win = os.path.join(tmp, "window.txt")
        wrote = 0
        with open(txt, errors="replace") as f, open(win, "w") as g:
            for line in window_lines(f, n, max_ops, chunks):
                g.write(line + "\n")
                wrote += 1
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        _convert(tools, win, str(out))
        w_ops = _count_ops(win)
    if not os.path.exists(out):
        raise DmmkitError(f"the window of {trace} was not written", RUNTIME)
    return {"path": str(out), "whole": False, "trace_ops": n, "ops": w_ops, "chunks": len(slices(n, max_ops, chunks)),
            "slices": [list(s) for s in slices(n, max_ops, chunks)]}


def fidelity(explore_doc: dict | None, compare_doc: dict | None) -> dict | None:
    """How well the window stood for the whole trace, from what advise
    measured anyway: the dmm configs explore ranked on the window and
    compare replayed on the whole trace (the presets, explore's best).  Per
    config, fragmentation #4 (exact for a dmm heap) on the window and on the
    trace; and whether the two rank them alike: Kendall's tau (scipy.stats)
    of #4, and of the window's instructions/op against the trace's warm
    cycles/op.  None when fewer than two configs are in both."""
    if not explore_doc or not compare_doc:
        return None
    summary = compare_doc.get("summary") or {}
    if len(summary) != 1:
        return None
    per = next(iter(summary.values()))
    by_spec = {}
    for a in compare_doc.get("allocators") or []:
        if a.get("kind") == "dmm" and a.get("spec") and a.get("label") in per:
            by_spec[a["spec"]] = a["label"]
    rows = []
    for c in explore_doc.get("configs") or []:
        agg = c.get("aggregate") or {}
        lab = by_spec.get(c.get("spec")) or by_spec.get(c.get("id")) or by_spec.get(c.get("config"))
        if not lab:
            continue
        s = per[lab]
        rows.append({"config": c.get("id"), "label": lab, "frag4_window": agg.get("frag4"),
                     "frag4_trace": s.get("frag4"), "instr_per_op_window": agg.get("instr_per_op"),
                     "cycles_per_op_trace": (s.get("warm_avg") or {}).get("median")})
    if len(rows) < 2:
        return None
    from scipy import stats as st

    def tau(a: str, b: str):
        xs = [(r[a], r[b]) for r in rows if r[a] is not None and r[b] is not None]
        if len(xs) < 2:
            return None
        t = st.kendalltau([x for x, _ in xs], [y for _, y in xs]).statistic
        return None if t != t else round(float(t), 3)

    return {"configs": rows, "kendall_tau_frag4": tau("frag4_window", "frag4_trace"),
            "kendall_tau_speed": tau("instr_per_op_window", "cycles_per_op_trace"),
            "definition": "Kendall's tau between the window's and the whole trace's ranking of the dmm configs "
                          "both measured (1: the same order, -1: reversed); frag #4 on both, speed as the "
                          "window's instructions/op against the trace's warm cycles/op"}
