"""`dmmkit report`: one HTML page (index.html, rendered from the Jinja2
template templates/report.html.j2 with autoescaping) and PNG plots beside
it, from explore, compare and advise results files.

The page opens with a summary card (the answer: per goal the choice, its
ratio and confidence interval, the memory cost, the next command), then a
table of contents, then one section per results file, with each trace's
details in a collapsible <details>.  Every numeric table cell keeps the
exact JSON value in a data-value attribute; bytes are shown as the console
shows them (dmmkit.ui.fmt_kib); a memory figure that is not exact carries
APPROX and the legend line (dmmkit.memfig).

Plots: the compare ranking on a log ratio axis centred on 1 (with the
confidence interval, or the range over traces in older results), latency
as percentiles (p50 ... max) on a log axis, live bytes and footprint over
time from 0, heap maps at the moment of worst fragmentation (see
dmmkit.pictures), and the explore Pareto front.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from .errors import DmmkitError  # noqa: E402
from .labels import place_labels  # noqa: E402
from .memfig import APPROX, LEGEND, Legend, footprint_kind, footprint_value, is_exact  # noqa: E402
from .pictures import decode_blocks  # noqa: E402
from .schemas import EXPLORE, RESULTS  # noqa: E402
from .ui import console, fmt_kib, progress  # noqa: E402
from .validate import Schema, check_document, read_json_file  # noqa: E402

DPI = 90
MAX_HEAPMAPS = 4  # panels per heap-map figure in a comparison
LABEL_MAX = 32    # longer plot labels are shortened (the tables keep them whole)
ADVISE_SCHEMA = "dmmkit-advise/1"
NO_ANSWER = "no answer in these results: run dmmkit advise"
DEFAULT_DIR = "dmmkit-report"
FILE_MODE = 0o644


# ---------------------------------------------------------------- loading --

def load_inputs(paths: list[str]) -> tuple[list[tuple[str, Schema, dict]], list[tuple[str, dict]]]:
    """The results files (checked by dmmkit.validate) and the advise results
    among them.  An advise file's own compare / explore results (its
    "compare" and "explore" paths) are added when they exist and were not
    given.  A missing, damaged or foreign file is one DmmkitError naming
    it."""
    results, advise, seen = [], [], set()

    def add(p: str, doc=None):
        key = os.path.realpath(p)
        if key in seen:
            return
        seen.add(key)
        if doc is None:
            doc = read_json_file(p)
        if isinstance(doc, dict) and str(doc.get("schema", "")).startswith("dmmkit-advise/"):
            if doc.get("schema") != ADVISE_SCHEMA:
                raise DmmkitError(f"results file {p}: advise results of schema {doc.get('schema')}, "
                                  f"this dmmkit reads {ADVISE_SCHEMA}")
            if not isinstance(doc.get("answer"), (dict, type(None))):
                raise DmmkitError(f"results file {p}: \"answer\" is not an object")
            advise.append((p, doc))
            for k in ("compare", "explore"):
                sub = doc.get(k)
                if isinstance(sub, str) and sub:
                    # relative paths: as written (from where advise ran), else beside the advise file
                    for q in (sub, os.path.join(os.path.dirname(p) or ".", sub)):
                        if os.path.isfile(q):
                            add(q)
                            break
            return
        kind = check_document(doc, RESULTS, where=f"results file {p}")
        results.append((p, kind, doc))

    for p in paths:
        add(p)
    return results, advise


def load_results(paths: list[str]) -> list[tuple[str, Schema, dict]]:
    """Every explore / compare results file, checked: (path, kind, document)."""
    return load_inputs(paths)[0]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "x"


def short(label: str, n: int = LABEL_MAX) -> str:
    """A plot label of at most n characters (middle elided)."""
    label = str(label)
    if len(label) <= n:
        return label
    k = (n - 1) // 2
    return label[:k] + "\u2026" + label[-(n - 1 - k):]


# ----------------------------------------------------------- the answer ---

def answer_for(docs: list[tuple[str, Schema, dict]]) -> dict | None:
    """The answer built from compare / explore results when no advise
    results were given: dmmkit.answer.make_answer on the first of each;
    None when there is nothing to answer from."""
    from .answer import make_answer
    cmp = next((d for _, k, d in docs if k != EXPLORE), None)
    exp = next((d for _, k, d in docs if k == EXPLORE), None)
    if cmp is None and exp is None:
        return None
    try:
        return make_answer(cmp, exp)
    except (KeyError, TypeError, ValueError) as e:
        console.print(f"[yellow]note[/]: no answer from these results ({e})")
        return None


def _fmt_ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}x"


def card_answer(ans: dict | None) -> dict | None:
    """The answer as the template shows it: the JSON's numbers plus their
    text (and data-value) forms."""
    if not isinstance(ans, dict):
        return None
    goals = []
    for g in ans.get("goals") or []:
        if not isinstance(g, dict):
            continue
        ci = g.get("ci")
        ci = ci if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci else None
        e2e = g.get("e2e") if isinstance(g.get("e2e"), dict) else None
        e2e_text = ""
        if e2e:
            parts = []
            if e2e.get("wall_ratio") is not None:
                parts.append(_fmt_ratio(e2e["wall_ratio"]))
                wc = e2e.get("wall_ci")
                if isinstance(wc, (list, tuple)) and len(wc) == 2 and None not in wc:
                    parts.append(f"(95% CI {wc[0]:.2f}-{wc[1]:.2f})")
            if e2e.get("rss_ratio") is not None:
                parts.append(f"peak RSS {_fmt_ratio(e2e['rss_ratio'])}")
            if e2e.get("agrees") is not None:
                parts.append("agrees with the replay" if e2e["agrees"] else "does NOT agree with the replay")
            if e2e.get("note"):
                parts.append(f"({e2e['note']})")
            e2e_text = " ".join(parts)
        # a badge only where a test was made: "significant" needs an interval
        # (a memory ratio has none: its figure is exact or approximate, no test)
        conf = g.get("confidence")
        badge = None if conf == "significant" and ci is None else conf
        goals.append({
            **g, "ci": ci, "e2e": e2e, "e2e_text": e2e_text, "badge": badge,
            "ratio": g.get("ratio"), "ratio_json": json.dumps(g.get("ratio")), "ratio_text": _fmt_ratio(g.get("ratio")),
            "ci_json": json.dumps(ci), "ci_text": "" if not ci else f"{ci[0]:.2f}-{ci[1]:.2f}",
            "memory_ratio": g.get("memory_ratio"), "memory_json": json.dumps(g.get("memory_ratio")),
            "memory_text": "-" if g.get("memory_ratio") is None else f"{g['memory_ratio']:.2f}",
            "memory_exact": bool(g.get("memory_exact")),
            "ties": [t for t in (g.get("ties") or []) if isinstance(t, str)],
            "best": _card_best(g.get("best")),
        })
    return {**ans, "goals": goals, "caveats": [c for c in (ans.get("caveats") or []) if isinstance(c, str)]}


def _card_best(b) -> dict | None:
    """The best rival of a goal whose answer keeps the current allocator:
    label, ratio and interval as the card shows them."""
    if not isinstance(b, dict) or not isinstance(b.get("label"), str):
        return None
    ci = b.get("ci")
    ok = isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci)
    r = b.get("ratio") if isinstance(b.get("ratio"), (int, float)) else None
    return {"label": b["label"], "ratio_text": _fmt_ratio(r), "ratio_json": json.dumps(r),
            "ci_text": f"{ci[0]:.2f}-{ci[1]:.2f}" if ok else ""}


# ---------------------------------------------------------------- cells ---

def cell(text, value=None, cls: str = "", title: str = "") -> dict:
    return {"text": str(text), "value": None if value is None else json.dumps(value), "cls": cls, "title": title}


def num(v, digits: int = 1) -> str:
    """The text shown for a number."""
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if digits == 0:
        return f"{v:.0f}"
    return f"{v:.{digits}f}"


def c_num(v, digits: int = 1) -> dict:
    isnum = isinstance(v, (int, float)) and not isinstance(v, bool)
    return cell(num(v, digits), v, "n" if isnum else "")


def c_bytes(v) -> dict:
    return cell(fmt_kib(v), v, "n")


def c_txt(s) -> dict:
    return cell("" if s is None else s)


def c_mem(v, exact: bool, legend: Legend, kind: str) -> dict:
    """A memory figure; one that is not exact is shown as APPROX n with its
    legend line (the data-value keeps the JSON value)."""
    if legend.note(exact, kind) or v is None:
        return c_bytes(v)
    return cell(f"{APPROX} {fmt_kib(v)}", v, "n approx", LEGEND.get(kind, LEGEND["allocator"]))


def table(headers: list[str], rows: list, cls: str = "") -> dict:
    """rows: lists of cells, or (row class, cells) pairs."""
    out = []
    for r in rows:
        rc, cells = r if isinstance(r, tuple) else ("", r)
        out.append({"cls": rc, "cells": cells})
    return {"kind": "table", "headers": headers, "rows": out, "cls": cls}


def p(text) -> dict:
    return {"kind": "p", "text": text}


def note(text) -> dict:
    return {"kind": "note", "text": text}


def fig(src: str, caption: str) -> dict:
    return {"kind": "figure", "src": src, "caption": caption}


# ----------------------------------------------------------------- plots --

def _save(fig_, outdir: Path, name: str) -> str:
    fig_.savefig(outdir / name, dpi=DPI, bbox_inches="tight")
    plt.close(fig_)
    return name


def byte_unit(vmax) -> tuple[float, str]:
    """The divisor and unit for an axis of bytes, the console's (fmt_kib)."""
    vmax = float(vmax or 0)
    if vmax >= 10 * 1048576:
        return 1048576.0, "MiB"
    if vmax >= 10 * 1024:
        return 1024.0, "KiB"
    return 1.0, "B"


def _wide(vals) -> bool:
    """Whether positive values span more than 20x (a log axis then)."""
    v = [x for x in vals if x and x > 0]
    return bool(v) and max(v) / min(v) > 20


def _points(doc: dict, key: str, mem_key: str) -> list:
    pts = [(c["aggregate"].get(key), c["aggregate"].get(mem_key), c) for c in doc["configs"]]
    return [(x, y, c) for x, y, c in pts if x is not None and y is not None]


def pareto_panels(doc: dict) -> list[tuple[str, str, str]]:
    mem_key = doc["settings"]["memory_metric"]
    panels = [("instr_per_op", "instructions per operation (geometric mean)", "front")]
    if doc.get("timed"):
        panels.append(("cycles_avg", "warm cycles per operation, average (geometric mean)", "timing_front"))
    return [q for q in panels if _points(doc, q[0], mem_key)]


def plot_pareto(doc: dict, outdir: Path, prefix: str) -> list[str]:
    """The Pareto plot(s): memory from 0 (in the console's unit), speed on
    a log axis when it spans more than 20x; none when no configuration has
    both figures."""
    by_id = {c["id"]: c for c in doc["configs"]}
    mem_key = doc["settings"]["memory_metric"]
    names: list[str] = []
    panels = pareto_panels(doc)
    if not panels:
        return names
    f, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (key, xlabel, flag) in zip(axes[0], panels):
        pts = _points(doc, key, mem_key)
        div, unit = byte_unit(max(p_[1] for p_ in pts))
        feas = [q for q in pts if q[2]["feasible"]]
        infe = [q for q in pts if not q[2]["feasible"]]
        if infe:
            ax.scatter([q[0] for q in infe], [q[1] / div for q in infe], marker="x", c="#bbbbbb", label="infeasible",
                       s=18)
        other = [q for q in feas if not q[2].get(flag)]
        if other:
            ax.scatter([q[0] for q in other], [q[1] / div for q in other], c="#1f77b4", s=18, alpha=.7,
                       label="feasible")
        fr = sorted([q for q in feas if q[2].get(flag)], key=lambda q: q[0])
        if fr and flag == "front":
            ax.plot([q[0] for q in fr], [q[1] / div for q in fr], "-o", c="#d62728", ms=6, label="Pareto front")
        elif fr:
            ax.scatter([q[0] for q in fr], [q[1] / div for q in fr], c="#d62728", s=36,
                       label="Pareto front (avg, max cycles, memory)")
        presets = sorted([q for q in pts if q[2]["preset"]], key=lambda q: (q[0], q[1]))
        if _wide([q[0] for q in pts]):
            ax.set_xscale("log")
            xlabel += ", log scale"
        ax.set_ylim(bottom=0, top=max(q[1] for q in pts) / div * 1.12)
        for x, y, c in presets:
            ax.scatter([x], [y / div], facecolors="none", edgecolors="k", s=60)
        best = by_id.get(doc.get("best"))
        if best and best["aggregate"].get(key) is not None and best["aggregate"].get(mem_key) is not None:
            ax.scatter([best["aggregate"][key]], [best["aggregate"][mem_key] / div], marker="*", s=220, c="#2ca02c",
                       zorder=5, label=f"best: {short(best['name'], 24)}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(("minimum arena" if mem_key == "min_arena" else "peak footprint") + f" ({unit}, geometric mean)")
        ax.grid(alpha=.3)
        legend = ax.legend(fontsize=7, loc="lower right") if ax.get_legend_handles_labels()[0] else None
        # the presets' names, placed where they meet no other label, marker or the legend (dmmkit.labels)
        place_labels(ax, [(x, y / div) for x, y, _ in presets], [short(c["name"], 20) for _, _, c in presets],
                     obstacles=[legend] if legend else (), others=[(x, y / div) for x, y, _ in pts])
    f.suptitle(f"speed vs memory over {len(doc['traces'])} trace(s) (left and low is better)")
    names.append(_save(f, outdir, f"{prefix}_pareto.png"))
    return names


def plot_compare_ranking(doc: dict, outdir: Path, name: str) -> str | None:
    """Warm cycles/op relative to the baseline on a log axis centred on 1,
    one bar per allocator (green faster, red slower) with its 95% CI, or
    the range over traces in results without one."""
    ov = doc.get("overall") or {}
    labs = [lab for lab in doc.get("ranking") or [] if (ov.get(lab) or {}).get("warm_avg_ratio_geomean")]
    if not labs:
        return None
    vals = [ov[lab]["warm_avg_ratio_geomean"] for lab in labs]
    lows, highs, have_ci = [], [], False
    for lab, v in zip(labs, vals):
        o = ov[lab]
        ci = o.get("warm_avg_ratio_ci")
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci and ci[0] > 0:
            lo, hi = ci
            have_ci = True
        else:
            lo, hi = o.get("warm_avg_ratio_min") or v, o.get("warm_avg_ratio_max") or v
        lows.append(max(min(lo, v), 1e-9))
        highs.append(max(hi, v))
    span = max(max(highs), 1 / min(lows), 1.05) * 1.25
    f, ax = plt.subplots(figsize=(7.5, 0.8 + 0.34 * len(labs)))
    ys = list(range(len(labs)))[::-1]
    colours = ["#2ca02c" if v < 1 else "#d62728" if v > 1 else "#777777" for v in vals]
    ax.barh(ys, [v - 1 for v in vals], left=1, color=colours, alpha=.75, height=.6)
    ax.errorbar(vals, ys, xerr=[[v - lo for v, lo in zip(vals, lows)], [hi - v for v, hi in zip(vals, highs)]],
                fmt="none", ecolor="k", capsize=3, lw=.8)
    ax.set_xscale("log")
    ax.set_xlim(1 / span, span)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, c="k", lw=.9)
    ax.set_yticks(ys)
    ax.set_yticklabels([short(lab) for lab in labs], fontsize=8)
    for y, v in zip(ys, vals):
        # the value in a column right of the axes, level with its bar: bars and whiskers are clipped to
        # the axes, so it never meets them (inside, a whisker crossing 1 ran through it)
        ax.annotate(f"{v:.2f}x", (1, y), xycoords=("axes fraction", "data"), textcoords="offset points",
                    xytext=(4, 0), ha="left", va="center", fontsize=7, annotation_clip=False)
    what = "95% CI" if have_ci else "range over traces"
    ax.set_xlabel(f"warm cycles/op relative to {short(doc['baseline'])} (log scale; <1 faster; whiskers: {what})")
    ax.grid(alpha=.3, axis="x", which="both")
    return _save(f, outdir, name)


PCTS = ((0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99.9"), (1.0, "max"))


def percentiles(buckets) -> list[float] | None:
    """p50, p90, p99, p99.9 and max of a latency histogram ([lo, width,
    count] buckets): the upper bound of the bucket holding each."""
    import numpy as np
    if not buckets:
        return None
    b = sorted(buckets, key=lambda x: x[0])
    counts = np.array([x[2] for x in b], dtype=float)
    tot = counts.sum()
    if tot <= 0:
        return None
    cum = np.cumsum(counts) / tot
    ub = [x[0] + x[1] for x in b]
    out = []
    for q, _ in PCTS:
        if q >= 1.0:
            out.append(float(ub[-1]))
        else:
            i = int(np.searchsorted(cum, q - 1e-12, side="left"))
            out.append(float(ub[min(i, len(ub) - 1)]))
    return out


def plot_latency(trace: str, hists: dict[str, dict], outdir: Path, name: str, order: list[str]) -> str | None:
    """Latency as percentiles (HDR-histogram style): per operation kind, one
    line per allocator through p50, p90, p99, p99.9 and max, on a log
    cycles axis."""
    kinds = [k for k in ("malloc", "free", "realloc", "calloc", "aligned", "all")
             if any(((h or {}).get("warm") or {}).get(k) for h in hists.values())]
    if not kinds:
        return None
    cols = min(3, len(kinds))
    rows = math.ceil(len(kinds) / cols)
    f, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.1 * rows), squeeze=False)
    xs = [i for i in range(len(PCTS))]
    labs = [lab for lab in order if lab in hists] + [lab for lab in hists if lab not in order]
    cmap = plt.get_cmap("tab10" if len(labs) <= 10 else "tab20")
    for k, kind in enumerate(kinds):
        ax = axes[k // cols][k % cols]
        for i, lab in enumerate(labs):
            ps = percentiles(((hists.get(lab) or {}).get("warm") or {}).get(kind))
            if not ps:
                continue
            ax.plot(xs, ps, marker="o", ms=3, lw=1.1, color=cmap(i % cmap.N), label=short(lab, 24))
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(xs)
        ax.set_xticklabels([n for _, n in PCTS], fontsize=7)
        ax.set_title(kind, fontsize=9)
        ax.set_ylabel("cycles (TSC ticks, log)", fontsize=8)
        ax.grid(alpha=.3, which="both")
        ax.tick_params(labelsize=7)
    for k in range(len(kinds), rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, names = axes[0][0].get_legend_handles_labels()
    f.legend(handles, names, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    f.suptitle(f"{short(trace, 48)}: per-operation latency percentiles (warm pass, all repetitions; "
               "bucket upper bounds)", fontsize=10)
    f.tight_layout()
    return _save(f, outdir, name)


def plot_timeline(trace: str, entries: dict[str, dict], outdir: Path, name: str,
                  approx: dict[str, str] | None = None) -> str | None:
    """Live bytes and each allocator's footprint over the operations, from
    0, in the console's unit.  approx: label -> footprint kind of the
    allocators whose footprint is not exact (dashed, marked APPROX)."""
    approx = approx or {}
    lines = [(lab, e["timeline"]["points"]) for lab, e in entries.items()
             if e and e.get("timeline") and e["timeline"].get("points")]
    if not lines:
        return None
    vmax = max(max(max(q[1], q[2]) for q in pts) for _, pts in lines)
    div, unit = byte_unit(vmax)
    f, ax = plt.subplots(figsize=(8, 3.8))
    pts0 = lines[0][1]
    ax.plot([q[0] for q in pts0], [q[1] / div for q in pts0], c="k", lw=1.4, label="live bytes (requested)")
    for lab, pts in lines:
        ops, fp = [q[0] for q in pts], [q[2] / div for q in pts]
        if lab in approx:
            what = {"rss_growth": "RSS growth", "commit_growth": "commit growth"}.get(approx[lab], "as exposed")
            ax.plot(ops, fp, lw=1, ls="--", label=f"{APPROX} footprint ({what}, not exact): {short(lab, 24)}")
        else:
            ax.plot(ops, fp, lw=1, label=f"footprint: {short(lab, 24)}")
    ax.set_ylim(bottom=0, top=vmax / div * 1.08)
    ax.set_xlim(left=0)
    ax.set_xlabel("operation")
    ax.set_ylabel(unit)
    ax.set_title(f"{short(trace, 48)}: live bytes and footprint over time", fontsize=10)
    ax.grid(alpha=.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return _save(f, outdir, name)


# heap map raster codes and colours
USED, USED2, OVERHEAD, FREE, QUICK, TOP, META, BEYOND = range(8)
RASTER_COLOURS = ["#3b6fb6", "#6b98d6", "#9ecae1", "#e8453c", "#f5b700", "#e6e6e6", "#222222", "#ffffff"]
RASTER_LEGEND = [(USED, "used (requested bytes)"), (OVERHEAD, "used: header and padding"), (FREE, "free"),
                 (QUICK, "quick list (free, cached)"), (META, "heap metadata (outside blocks)"),
                 (TOP, "top (never carved)")]


def heapmap_raster(hm: dict, cols: int = 256, max_rows: int = 96):
    """The heap as a raster of `cols` cells per row, `bpc` bytes per cell:
    first the bytes of the extent outside every block (control block and
    other metadata), then the blocks of every region end to end (up to the
    extent, plus the first bytes of the top).  Used blocks alternate two
    shades and show their header and padding (size - requested) when that
    covers a cell; free and quick-list blocks are painted last, one cell at
    least, so that a small hole still shows.  Returns (codes, bpc)."""
    import numpy as np
    blocks = decode_blocks(hm)
    ends: dict[int, int] = {}
    for r, off, size, state, _ in blocks:
        if state != "top":
            ends[r] = max(ends.get(r, 0), off + size)
    for r, off, size, state, _ in blocks:
        ends.setdefault(r, off)
    carved = sum(size for _, _, size, state, _ in blocks if state != "top")
    meta = max(0, int(hm.get("extent") or 0) - carved)
    base, region_off = meta, {}
    for r in sorted(ends):
        region_off[r] = base
        base += ends[r]
    total = max(base, 1)
    bpc = 16
    while total / bpc > cols * max_rows:
        bpc *= 2
    rows = max(1, math.ceil(total / bpc / cols))
    codes = np.full(rows * cols, BEYOND, dtype=np.int8)
    if meta:
        codes[0: max(1, meta // bpc)] = META

    def paint(a, b, c, at_least_one=True):
        if b <= a:
            return
        lo = a // bpc
        hi = (b + bpc - 1) // bpc if at_least_one else b // bpc
        codes[lo: max(lo + 1, hi) if at_least_one else hi] = c

    used_k = 0
    for second in (False, True):
        for r, off, size, state, req in blocks:
            if (state in ("free", "quick")) != second:
                continue
            a = region_off[r] + off
            b = min(a + size, region_off[r] + ends[r]) if state == "top" else a + size
            if state == "used":
                paint(a, b, USED if used_k % 2 == 0 else USED2)
                used_k += 1
                if req and 0 < req < size:
                    paint(-(-(a + req) // bpc) * bpc, b, OVERHEAD, at_least_one=False)
            elif state == "top":
                paint(a, b, TOP)
            else:
                paint(a, b, FREE if state == "free" else QUICK)
    return codes.reshape(rows, cols), bpc


def heapmap_moment(hm: dict) -> str:
    """Which moment a heap map shows, in words."""
    if hm.get("moment") == "worst_fragmentation":
        s = "at worst fragmentation"
        if hm.get("op") is not None:
            s += f" (after operation {hm['op']}"
            if hm.get("free_in_extent") is not None:
                s += f", {fmt_kib(hm['free_in_extent'])} of the extent not in used blocks"
            s += ")"
        return s
    return "at peak live"


def plot_heapmaps(trace: str, entries: dict[str, dict], outdir: Path, name: str) -> tuple[str, str] | None:
    """Heap maps side by side (two per row) with a legend; returns (file,
    which moment each shows, for the caption)."""
    from matplotlib.colors import ListedColormap
    maps = [(lab, e["heapmap"]) for lab, e in entries.items()
            if e and e.get("heapmap") and (e["heapmap"].get("blocks") or e["heapmap"].get("blocks_z"))]
    if not maps:
        return None
    rasters = [(lab, hm, *heapmap_raster(hm)) for lab, hm in maps]
    cols = min(2, len(rasters))
    rows = math.ceil(len(rasters) / cols)
    f, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.2 * rows + 0.6), squeeze=False)
    cmap = ListedColormap(RASTER_COLOURS)
    moments = []
    for k, (lab, hm, codes, bpc) in enumerate(rasters):
        ax = axes[k // cols][k % cols]
        ax.imshow(codes, cmap=cmap, vmin=0, vmax=len(RASTER_COLOURS) - 1, interpolation="nearest", aspect="auto")
        tot = hm.get("totals") or {}
        free = (tot.get("free") or {}).get("bytes", 0)
        quick = (tot.get("quick") or {}).get("bytes", 0)
        nfree = (tot.get("free") or {}).get("blocks", 0)
        moments.append("at worst fragmentation" if hm.get("moment") == "worst_fragmentation" else "at peak live")
        when = f"after operation {hm['op']}, " if hm.get("op") is not None else ""
        ax.set_title(f"{short(lab, 40)} ({when}{moments[-1].replace('at ', '')})\nextent {fmt_kib(hm.get('extent'))}, live {fmt_kib(hm.get('live'))}; "
                     f"free {fmt_kib(free)} in {nfree} blocks, quick {fmt_kib(quick)}", fontsize=8)
        ax.set_xticks([])
        ax.set_ylabel(f"rows of {codes.shape[1]} x {bpc} B", fontsize=7)
        ax.tick_params(labelsize=6)
    for k in range(len(rasters), rows * cols):
        axes[k // cols][k % cols].axis("off")
    f.legend(handles=[Patch(facecolor=RASTER_COLOURS[c], edgecolor="#999999", label=t) for c, t in RASTER_LEGEND],
             loc="lower center", ncol=3, fontsize=8, frameon=False)
    moment = " / ".join(dict.fromkeys(moments))
    f.suptitle(f"{short(trace, 48)}: heap map {moment}\n(address order, left to right, top to bottom)", fontsize=9)
    f.tight_layout(rect=(0, 0.08, 1, 1))
    detail = "; ".join(f"{lab} {heapmap_moment(hm)}" for lab, hm, _, _ in rasters)
    return _save(f, outdir, name), detail


# ------------------------------------------------------------ sections ---

class Section:
    def __init__(self, sid: str, title: str):
        self.id, self.title, self.blocks, self.toc = sid, title, [], []

    def sub(self, title: str) -> str:
        sid = f"{self.id}-{_slug(title)}-{len(self.toc)}"
        self.toc.append({"id": sid, "title": title})
        self.blocks.append({"kind": "h3", "id": sid, "text": title})
        return sid

    def details(self, title: str, sid: str, blocks: list, open_: bool) -> None:
        """A collapsible part (one trace), listed in the contents."""
        self.toc.append({"id": sid, "title": title})
        self.blocks.append({"kind": "details", "id": sid, "summary": title, "blocks": blocks, "open": open_})

    def as_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "blocks": self.blocks, "toc": self.toc}


def compare_section(path: str, doc: dict, outdir: Path, prefix: str, tick, light: bool = False) -> dict:
    base = doc["baseline"]
    ov = doc.get("overall") or {}
    summ = doc.get("summary") or {}
    s = Section(f"{prefix}", f"Allocator comparison: {Path(path).name}")
    noise = doc.get("noise") if isinstance(doc.get("noise"), dict) else {}
    intro = (f"{len(doc['traces'])} trace(s), {doc['settings']['reps']} interleaved repetition(s), baseline {base}. "
             "Speed: warm pass, average TSC cycles per operation; ratios are paired by repetition.")
    if not doc.get("complete", True):
        intro += f" Incomplete run: {doc.get('error')}"
    s.blocks.append(note(intro))
    if noise.get("warning"):
        s.blocks.append(p(f"Noise warning: {noise['warning']}"))
    s.sub("Ranking")
    n = plot_compare_ranking(doc, outdir, f"{prefix}_ranking.png")
    tick()
    if n:
        s.blocks.append(fig(n, f"warm cycles/op relative to {base}: log axis centred on 1 (bars left of 1 are faster)"))
    kinds = {a["label"]: a.get("kind") for a in doc["allocators"]}
    legend = Legend()
    rows = []
    for k, lab in enumerate(doc.get("ranking") or [], 1):
        o = ov.get(lab) or {}
        ci = o.get("warm_avg_ratio_ci")
        ci_ok = isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci
        exact = o.get("memory_exact")
        mem = o.get("peak_footprint_ratio_geomean")
        memcell = c_num(mem, 3)
        if mem is not None and exact is False:
            memcell = cell(f"{APPROX} {num(mem, 3)}", mem, "n approx", "not exact: some footprint figures are RSS or "
                                                                       "commit growth")
        rows.append([c_num(k), c_txt(lab), c_num(o.get("warm_avg_ratio_geomean"), 3),
                     cell(f"{ci[0]:.3f}-{ci[1]:.3f}" if ci_ok else "-", ci if ci_ok else None, "n"),
                     c_num(o.get("group")), c_num(o.get("warm_avg_ratio_min"), 3), c_num(o.get("warm_avg_ratio_max"), 3),
                     c_num(o.get("cold_avg_ratio_geomean"), 3), memcell, c_num(o.get("wins")), c_num(o.get("failed"))])
    s.blocks.append(table(["rank", "allocator", f"warm x {base} (geomean)", "95% CI", "group", "min over traces",
                           "max over traces", f"cold x {base}", "peak footprint ratio", "fastest on", "failed"],
                          rows, "ranking"))
    if doc.get("groups"):
        s.blocks.append(note("Groups (allocators that cannot be told apart share a group): "
                             + "; ".join(f"{i}: {', '.join(g)}" for i, g in enumerate(doc["groups"], 1))))
    labs = doc.get("ranking") or []
    hists = doc.get("histograms") or {}
    pics = doc.get("pictures") or {}
    for t in doc["traces"]:
        tl = t["label"]
        blocks = []
        rows = []
        approx: dict[str, str] = {}
        per = summ.get(tl) or {}
        for lab in labs:
            e = per.get(lab) or {}
            exact, fk = is_exact(e, kinds.get(lab)), footprint_kind(e)
            if not exact:
                approx[lab] = fk
            wa, r = e.get("warm_avg") or {}, e.get("warm_avg_ratio") or {}
            rows.append([c_txt(lab), c_num(wa.get("median")), c_num(r.get("median"), 3), c_num(r.get("min"), 3),
                         c_num(r.get("max"), 3), c_num(r.get("q1"), 3), c_num(r.get("q3"), 3),
                         c_num((e.get("warm_p99") or {}).get("median"), 0),
                         c_num((e.get("warm_max") or {}).get("median"), 0), c_num((e.get("cold_avg") or {}).get("median")),
                         c_mem(footprint_value(e), exact, legend, fk), c_num(e.get("frag4") if exact else None, 3),
                         c_num(e.get("failed")), c_num(e.get("preemptions"))])
        blocks.append(table(["allocator", "warm cyc/op", f"x {base}", "min", "max", "q1", "q3", "warm p99",
                             "warm max", "cold cyc/op", "peak footprint", "frag #4", "failed", "preemptions"],
                            rows, "detail"))
        if light and (tl in hists or tl in pics):
            blocks.append(note(LIGHT_NOTE))
        elif tl in hists:
            n = plot_latency(tl, hists[tl], outdir, f"{prefix}_latency_{_slug(tl)}.png", labs)
            tick()
            if n:
                blocks.append(fig(n, f"{tl}: latency percentiles per operation kind (log cycles axis)"))
        if tl in pics and not light:
            n = plot_timeline(tl, pics[tl], outdir, f"{prefix}_timeline_{_slug(tl)}.png", approx)
            tick()
            if n:
                cap = f"{tl}: live bytes and footprint over time"
                if approx:
                    cap += f" (dashed, {APPROX}: not exact)"
                blocks.append(fig(n, cap))
            dmm_pics = {lab: e for lab, e in pics[tl].items() if e and e.get("heapmap")}
            r = plot_heapmaps(tl, dict(list(dmm_pics.items())[:MAX_HEAPMAPS]), outdir,
                              f"{prefix}_heapmap_{_slug(tl)}.png")
            tick()
            if r:
                blocks.append(fig(r[0], f"{tl}: heap maps of the dmm heaps: {r[1]}. Blue used, red free, "
                                        "yellow quick list, black metadata, grey untouched top"))
        s.details(f"trace {tl}", f"{prefix}-trace-{_slug(tl)}", blocks, len(doc["traces"]) == 1)
    for line in legend.lines():
        s.blocks.append(note(line))
    return s.as_dict()


def explore_section(path: str, doc: dict, outdir: Path, prefix: str, tick, light: bool = False) -> dict:
    by_id = {c["id"]: c for c in doc["configs"]}
    st = doc["settings"]
    mem_key = st["memory_metric"]
    timed = bool(doc.get("timed"))
    s = Section(prefix, f"Design-space exploration: {Path(path).name}")
    s.blocks.append(note(
        f"{len(doc['traces'])} trace(s): " + ", ".join(t["label"] for t in doc["traces"])
        + f". Grid {st.get('grid')}, {len(doc['configs'])} valid configs ({len(doc.get('skipped') or [])} invalid "
        f"combinations skipped by the heap's check); objective {st['objective']}; memory metric {mem_key}; reference "
        f"{doc.get('reference')}; constraints: arena {st.get('arena') or '-'}, max cycles {st.get('max_cycles') or '-'}. "
        "Aggregates are geometric means over the traces; ratios are relative to the reference."))
    best = by_id.get(doc.get("best"))
    if best:
        s.blocks.append({"kind": "code", "label": f"Best ({st['objective']}): {best['id']} = {best['name']}:",
                         "text": best["config"]})
    s.sub("Speed vs memory")
    plots = plot_pareto(doc, outdir, prefix)
    tick()
    for n in plots:
        s.blocks.append(fig(n, "Pareto front: speed vs memory (memory axis from 0)"))
    if not plots:
        s.blocks.append(note("No Pareto plot: no configuration has a speed figure (this exploration ran without "
                             "instruction counts and without timing), so only the memory figures below are known."))
    frozen = bool((doc.get("frozen") or {}).get("enabled"))
    hdr = ["rank", "id", "name", "instr/op runtime" if frozen else "instr/op"]
    if frozen:
        hdr += ["instr/op frozen"]
    hdr += ["instr x ref"]
    if timed:
        hdr += ["cycles/op avg", "cycles x ref", "cycles/op max"]
    hdr += ["min arena", "peak footprint", "frag #3", "frag #4", "front (instr)", "front (cycles)", "feasible"]
    rows = []
    order = list(doc.get("ranking") or [])
    # dropped configs (by the budget, or with no figure) are not ranking rows:
    # they go to a collapsed section of their own, one line each with the reason
    gone = {d.get("id") for d in ((doc.get("budget") or {}).get("dropped") or []) if isinstance(d, dict)}
    measured = lambda c: any(c["aggregate"].get(k) is not None  # noqa: E731
                             for k in ("instr_per_op", "min_arena", "peak_footprint", "cycles_avg"))
    order += [c["id"] for c in doc["configs"] if c["id"] not in order and c["id"] not in gone and measured(c)]
    dropped = [c for c in doc["configs"] if c["id"] not in order]
    for k, cid in enumerate(order, 1):
        c = by_id[cid]
        a = c["aggregate"]
        r = [cell(k if cid in doc.get("ranking", []) else "-", None, "n"), c_txt(c["id"]), c_txt(c["name"]),
             c_num(a.get("instr_per_op"))]
        if frozen:
            fst = (c.get("frozen") or {}).get("status")
            r += [c_num(a.get("instr_per_op_frozen")) if fst == "measured" else
                  c_txt("failed (runtime used)" if fst == "failed" else "")]
            r += [c_num(a.get("instr_ratio_ranked") if c.get("frozen_candidate") else a.get("instr_ratio"), 3)]
        else:
            r += [c_num(a.get("instr_ratio"), 3)]
        if timed:
            r += [c_num(a.get("cycles_avg")), c_num(a.get("cycles_ratio"), 3), c_num(a.get("cycles_max"), 0)]
        r += [c_bytes(a.get("min_arena")), c_bytes(a.get("peak_footprint")), c_num(a.get("frag3"), 3),
              c_num(a.get("frag4"), 3), c_txt("yes" if c["front"] else ""), c_txt("yes" if c.get("timing_front") else ""),
              c_txt("yes" if c["feasible"] else "; ".join((c.get("infeasible_reasons") or [])[:2]))]
        rows.append(("best" if cid == doc.get("best") else "front" if c["front"] else "", r))
    s.sub("Ranking")
    s.blocks.append(note("Feasible configs first; green: best, orange: on the Pareto front."))
    if frozen:
        fz = doc["frozen"]
        s.blocks.append(note(f"Frozen re-measurement: {len(fz.get('measured') or [])} of "
                             f"{len(fz.get('candidates') or [])} candidate(s) re-counted with dmm-replay built frozen to "
                             "their configuration and ranked first, on those figures."))
    s.blocks.append(table(hdr, rows, "ranking"))
    if dropped:
        why: dict[str, list[str]] = {}
        for d in (doc.get("budget") or {}).get("dropped") or []:
            if isinstance(d, dict):
                why.setdefault(d.get("id"), []).append(
                    f"{d.get('reason')}" + (f" on {d['trace']}" if d.get("trace") else "") + f": {d.get('detail')}")
        drows = [[c_txt(c["id"]), c_txt(c["name"]),
                  c_txt("; ".join(why.get(c["id"]) or (c.get("infeasible_reasons") or ["no figures"])[:2]))]
                 for c in dropped]
        s.blocks.append({"kind": "details", "id": f"{prefix}-dropped", "open": False,
                         "summary": f"{len(dropped)} config(s) dropped or without figures (not ranked)",
                         "blocks": [table(["id", "name", "why"], drows, "dropped")]})
    show = [i for i in dict.fromkeys([doc.get("best"), doc.get("reference")]) if i in by_id]
    pics = doc.get("pictures") or {}
    for t in doc["traces"]:
        tl = t["label"]
        blocks = []
        for cid in show:
            c = by_id[cid]
            m = (c.get("per_trace") or {}).get(tl) or {}
            hdr = ["config", "ops", "instr/op", "min arena", "peak footprint", "frag #3", "frag #4", "internal waste",
                   "external waste", "failed"]
            r = [c_txt(f"{c['id']} ({c['name']})"), c_num(m.get("ops")), c_num(m.get("instr_per_op")),
                 c_bytes(m.get("min_arena")), c_bytes(m.get("peak_footprint")), c_num(m.get("frag3"), 3),
                 c_num(m.get("frag4"), 3), c_bytes(m.get("internal_waste")), c_bytes(m.get("external_waste")),
                 c_num(m.get("failed"))]
            if timed:
                tm = m.get("timing") or {}
                wa = tm.get("avg") or {}
                hdr += ["cycles/op avg (median)", "[min", "max]", "cycles/op max (median)", "clean passes", "passes"]
                r += [c_num(wa.get("median")), c_num(wa.get("min")), c_num(wa.get("max")),
                      c_num((tm.get("max") or {}).get("median"), 0), c_num(tm.get("clean_samples")),
                      c_num(tm.get("samples"))]
            blocks.append(table(hdr, [r], "pertrace"))
        entries = pics.get(tl)
        if entries and light:
            blocks.append(note(LIGHT_NOTE))
        elif entries:
            named = {by_id[c]["name"] if c in by_id else c: e for c, e in entries.items()}
            n = plot_timeline(tl, named, outdir, f"{prefix}_timeline_{_slug(tl)}.png")
            tick()
            if n:
                blocks.append(fig(n, f"{tl}: live bytes and footprint over time"))
            r2 = plot_heapmaps(tl, named, outdir, f"{prefix}_heapmap_{_slug(tl)}.png")
            tick()
            if r2:
                blocks.append(fig(r2[0], f"{tl}: heap maps: {r2[1]}. Blue used, red free, yellow quick list, "
                                         "black metadata, grey untouched top"))
        if blocks:
            s.details(f"trace {tl}", f"{prefix}-trace-{_slug(tl)}", blocks, len(doc["traces"]) == 1)
    sk = doc.get("skipped") or []
    if sk:
        reasons: dict[str, int] = {}
        for x in sk:
            reasons[x["reason"]] = reasons.get(x["reason"], 0) + 1
        s.sub("Combinations the heap refused")
        s.blocks.append(table(["reason", "count"], [[c_txt(r), c_num(n)] for r, n in sorted(reasons.items())]))
    return s.as_dict()


def _steps(kind: Schema, doc: dict) -> int:
    if kind == EXPLORE:
        return 1 + 2 * len(doc.get("pictures") or {})
    return 1 + 3 * len(doc.get("traces") or [])


HOW = [
    "Instructions per operation come from callgrind and are exact; cycles come from the TSC on a shared machine "
    "and are medians over interleaved repetitions.",
    "Ratios are relative to the baseline (compare) or the reference (explore); below 1 is faster or smaller. The "
    "ranking chart uses a log axis centred on 1, so 0.5x and 2x are equally far from 1.",
    "Minimum arena = the smallest buffer that replays the trace with no failed allocation. Fragmentation #3 = "
    "footprint / live at peak live, #4 = peak footprint / peak live (Johnstone and Wilson).",
    f"A memory figure marked {APPROX} is not exact (RSS growth, or what a system allocator exposes) and has no "
    "fragmentation ratio.",
    "Latency plots show percentiles of every call's cycles (p50, p90, p99, p99.9, max) per allocator; the "
    "histograms have logarithmic buckets and a percentile is the upper bound of its bucket.",
    "Heap maps show every block of the heap in address order at the moment of worst fragmentation: the first "
    "operation, while live bytes are at least half the trace's peak, at which the heap's extent holds the most "
    "bytes not in used blocks (dmm-replay --heapmap-at worst-frag; older results show the map at peak live, as "
    "their caption says). See docs/frontend.md.",
]


def default_outdir(paths: list[str]) -> Path:
    """dmmkit-report/ beside the first results file."""
    return Path(paths[0]).resolve().parent / DEFAULT_DIR


def _env():
    from jinja2 import Environment, PackageLoader, select_autoescape
    return Environment(loader=PackageLoader("dmmkit", "templates"), autoescape=select_autoescape(["html", "j2"]),
                       trim_blocks=False, lstrip_blocks=False)


def render(context: dict) -> str:
    return _env().get_template("report.html.j2").render(**context)


LIGHT_NOTE = ("The latency, timeline and heap-map figures were left out to keep dmmkit advise within its budget; "
              "`dmmkit report` on the same results files draws them.")


def write_report(paths: list[str], outdir: str | None = None, light: bool = False) -> Path:
    """The report of the results files `paths` in outdir.  light: without
    the latency percentiles, timelines and heap maps (each trace says so),
    which cost tens of seconds on a large trace (decoding and rastering the
    heap maps, laying out the percentile panels): what advise writes when
    little of its budget is left."""
    results, advise = load_inputs(paths)
    out = Path(outdir) if outdir else default_outdir(paths)
    try:
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o755)
    except OSError as e:
        raise DmmkitError(f"cannot create {out}: {e.strerror}")
    sections = []
    used: dict[str, int] = {}
    with progress() as prog:
        task = prog.add_task("report: plots and tables",
                             total=sum(1 if light else _steps(k, d) for _, k, d in results) or 1)

        def tick():
            prog.advance(task)

        for kind_first in (False, True):  # compare results first, then explore
            for pth, kind, d in results:
                if (kind == EXPLORE) != kind_first:
                    continue
                stem = _slug(Path(pth).stem)
                used[stem] = used.get(stem, 0) + 1
                prefix = stem if used[stem] == 1 else f"{stem}{used[stem]}"
                if kind == EXPLORE:
                    sections.append(explore_section(pth, d, out, prefix, tick, light))
                else:
                    sections.append(compare_section(pth, d, out, prefix, tick, light))
    answer, source = None, ""
    for pth, d in advise:
        if isinstance(d.get("answer"), dict):
            answer, source = d["answer"], f"dmmkit advise results {pth}"
            break
    if answer is None and results:
        answer = answer_for(results)
        source = "built from the compare / explore results given (dmmkit.answer)"
    machine = ""
    for _, _, d in results:
        m = (d.get("context") or {}).get("machine")
        if m:
            machine = f"{m.get('cpu_model')}, {m.get('cores')} cores, {m.get('kernel')}"
            break
    page = render({"inputs": list(paths), "machine": machine, "answer": card_answer(answer),
                   "answer_source": source, "no_answer": NO_ANSWER, "sections": sections, "how": HOW})
    index = out / "index.html"
    index.write_text(page)
    pngs = sorted(out.glob("*.png"))
    for f in [index, *pngs]:
        os.chmod(f, FILE_MODE)
    console.print(f"report: {index} ({len(pngs)} PNGs)")
    return index
