"""`dmmkit report`: an HTML page (index.html) with PNG plots next to it,
made from explore and compare results files.

Plots: the Pareto front (speed vs memory, front highlighted, presets
labelled), per-operation latency distributions (the replayer's histograms),
live bytes and footprint over time, and heap maps at peak live (every block
of the heap coloured used / free / quick list / top).  Tables carry the
numbers of the JSON; every numeric cell also holds the exact JSON value in a
data-value attribute.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from .errors import DmmkitError  # noqa: E402
from .memfig import APPROX, LEGEND, Legend, footprint_kind, footprint_value, is_exact  # noqa: E402
from .schemas import EXPLORE, RESULTS  # noqa: E402
from .validate import Schema, load_document  # noqa: E402
from .ui import console, progress  # noqa: E402

STATE_COLOURS = {"used": "#d62728", "free": "#2ca02c", "quick": "#ff7f0e", "top": "#c7c7c7"}
DPI = 90
MAX_HEAPMAPS = 4  # panels per heap-map figure in a comparison


# ---------------------------------------------------------------- loading --

def load_results(paths: list[str]) -> list[tuple[str, Schema, dict]]:
    """Every results file, checked (dmmkit.validate): (path, kind, document).
    A missing, damaged or foreign file is one DmmkitError naming it."""
    return [(p, *load_document(p, RESULTS)) for p in paths]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "x"


# ----------------------------------------------------------------- html ---

def esc(x) -> str:
    return html.escape(str(x))


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


def td(v, digits: int = 1) -> str:
    dv = "" if v is None else f' data-value="{esc(json.dumps(v))}"'
    cls = ' class="n"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
    return f"<td{cls}{dv}>{esc(num(v, digits))}</td>"


def td_mem(v, exact: bool, legend: Legend, kind: str) -> str:
    """A memory figure's cell; one that is not exact is shown as APPROX n
    (the data-value keeps the JSON value) and its kind goes to the legend."""
    if legend.note(exact, kind) or v is None:
        return td(v, 0)
    return (f'<td class="n approx" data-value="{esc(json.dumps(v))}" title="{esc(LEGEND.get(kind, ""))}">'
            f"{esc(APPROX)} {esc(num(v, 0))}</td>")


def legend_html(legend: Legend) -> str:
    return "".join(f"<p class='note'>{esc(line)}</p>" for line in legend.lines())


def tdt(s) -> str:
    return f"<td>{esc(s)}</td>"


def table(headers: list[str], rows: list, cls: str = "") -> str:
    """rows: lists of cells, or (row class, cells) pairs."""
    h = "".join(f"<th>{esc(x)}</th>" for x in headers)
    out = []
    for r in rows:
        rc, cells = r if isinstance(r, tuple) else ("", r)
        out.append((f'<tr class="{rc}">' if rc else "<tr>") + "".join(cells) + "</tr>")
    body = "\n".join(out)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>\n{body}\n</tbody></table>'


def img(name: str, alt: str) -> str:
    return f'<figure><img src="{esc(name)}" alt="{esc(alt)}"><figcaption>{esc(alt)}</figcaption></figure>'


CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}
th,td{border:1px solid #ddd;padding:.25em .5em}th{background:#f3f3f3}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.front td{background:#fff4e5}tr.best td{background:#e5f5e5;font-weight:bold}
figure{display:inline-block;margin:.5em;vertical-align:top}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.8em;color:#555}code{font-size:.85em}.note{color:#555;font-size:.9em}
"""


# ----------------------------------------------------------------- plots --

def _save(fig, outdir: Path, name: str, tight: bool = False) -> str:
    """Writes the PNG.  tight=True trims the margins (one more draw: used for
    the figures with few axes)."""
    if tight:
        fig.savefig(outdir / name, dpi=DPI, bbox_inches="tight")
    else:
        fig.savefig(outdir / name, dpi=DPI)
    plt.close(fig)
    return name


def _points(doc: dict, key: str, mem_key: str) -> list:
    """(speed, memory, config) of the configs that have both figures."""
    pts = [(c["aggregate"].get(key), c["aggregate"].get(mem_key), c) for c in doc["configs"]]
    return [(x, y, c) for x, y, c in pts if x is not None and y is not None]


def pareto_panels(doc: dict) -> list[tuple[str, str, str]]:
    """The speed axes that have points to plot: instructions (unless explore
    ran with --no-instructions), cycles (when candidates were timed)."""
    mem_key = doc["settings"]["memory_metric"]
    panels = [("instr_per_op", "instructions per operation (geometric mean)", "front")]
    if doc.get("timed"):
        panels.append(("cycles_avg", "warm cycles per operation, average (geometric mean)", "timing_front"))
    return [p for p in panels if _points(doc, p[0], mem_key)]


def plot_pareto(doc: dict, outdir: Path, prefix: str) -> list[str]:
    """The Pareto plot(s); none when no configuration has both a speed and a
    memory figure (explore --no-instructions --no-timing measures memory
    only: the caller says so instead of drawing empty axes)."""
    by_id = {c["id"]: c for c in doc["configs"]}
    mem_key = doc["settings"]["memory_metric"]
    names = []
    panels = pareto_panels(doc)
    if not panels:
        return names
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (key, xlabel, flag) in zip(axes[0], panels):
        pts = _points(doc, key, mem_key)
        feas = [(x, y, c) for x, y, c in pts if c["feasible"]]
        infe = [(x, y, c) for x, y, c in pts if not c["feasible"]]
        if infe:
            ax.scatter([p[0] for p in infe], [p[1] / 1024 for p in infe], marker="x", c="#bbbbbb",
                       label="infeasible", s=18)
        other = [p for p in feas if not p[2].get(flag)]
        if other:
            ax.scatter([p[0] for p in other], [p[1] / 1024 for p in other], c="#1f77b4", s=18, alpha=.7,
                       label="feasible")
        fr = sorted([p for p in feas if p[2].get(flag)], key=lambda p: p[0])
        if fr and flag == "front":
            ax.plot([p[0] for p in fr], [p[1] / 1024 for p in fr], "-o", c="#d62728", ms=6, label="Pareto front")
        elif fr:
            # the timing front is three-dimensional (avg cycles, max cycles,
            # memory): its projection here is a set of points, not a line
            ax.scatter([p[0] for p in fr], [p[1] / 1024 for p in fr], c="#d62728", s=36,
                       label="Pareto front (avg, max cycles, memory)")
        for x, y, c in pts:
            if c["preset"]:
                ax.annotate(c["name"], (x, y / 1024), textcoords="offset points", xytext=(5, 4), fontsize=8)
                ax.scatter([x], [y / 1024], facecolors="none", edgecolors="k", s=60)
        best = by_id.get(doc.get("best"))
        if best and best["aggregate"].get(key) is not None and best["aggregate"].get(mem_key) is not None:
            ax.scatter([best["aggregate"][key]], [best["aggregate"][mem_key] / 1024], marker="*", s=220,
                       c="#2ca02c", zorder=5, label=f"best: {best['name']}")
        xs_all = [p[0] for p in pts if p[0] and p[0] > 0]
        if xs_all and max(xs_all) / min(xs_all) > 10:
            ax.set_xscale("log")
            xlabel += ", log scale"
        ax.set_xlabel(xlabel)
        ax.set_ylabel(("minimum arena" if mem_key == "min_arena" else "peak footprint") + " (KiB, geometric mean)")
        ax.grid(alpha=.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"speed vs memory over {len(doc['traces'])} trace(s) (lower-left is better)")
    names.append(_save(fig, outdir, f"{prefix}_pareto.png", tight=True))

    # per-trace small multiples
    traces = [t["label"] for t in doc["traces"]]

    def trace_point(c, tl):
        m = (c.get("per_trace") or {}).get(tl)
        if not m or m.get("instr_per_op") is None or m.get(mem_key) is None:
            return None
        return m["instr_per_op"], m[mem_key] / 1024

    if 1 < len(traces) <= 20 and any(trace_point(c, tl) for c in doc["configs"] for tl in traces):
        cols = min(4, len(traces))
        rows = math.ceil(len(traces) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.8 * rows), squeeze=False)
        for k, tl in enumerate(traces):
            ax = axes[k // cols][k % cols]
            xs, ys, cs = [], [], []
            for c in doc["configs"]:
                pt = trace_point(c, tl)
                if pt is None:
                    continue
                xs.append(pt[0])
                ys.append(pt[1])
                cs.append("#d62728" if c["id"] == doc.get("best") else ("#333333" if c["preset"] else "#1f77b4"))
            order = sorted(range(len(xs)), key=lambda i: {"#1f77b4": 0, "#333333": 1}.get(cs[i], 2))
            ax.scatter([xs[i] for i in order], [ys[i] for i in order], c=[cs[i] for i in order],
                       s=[30 if cs[i] == "#d62728" else 10 for i in order])
            if xs and min(xs) > 0 and max(xs) / min(xs) > 10:
                ax.set_xscale("log")
            ax.set_title(tl, fontsize=9)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=.3)
        for k in range(len(traces), rows * cols):
            axes[k // cols][k % cols].axis("off")
        fig.supxlabel("instructions per operation")
        fig.supylabel("KiB")
        fig.suptitle("per trace (red: best overall, black: presets)")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.1, top=0.88, wspace=0.3, hspace=0.45)
        names.append(_save(fig, outdir, f"{prefix}_pareto_traces.png"))
    return names


def plot_timeline(trace: str, entries: dict[str, dict], outdir: Path, name: str,
                  approx: dict[str, str] | None = None) -> str | None:
    """Live bytes and each allocator's footprint over the operations.
    approx: label -> footprint kind of the allocators whose footprint is not
    exact (dashed, labelled with APPROX and what it is)."""
    approx = approx or {}
    fig, ax = plt.subplots(figsize=(7, 3.6))
    live_done = False
    any_line = False
    for label, e in entries.items():
        tl = (e or {}).get("timeline")
        if not tl or not tl.get("points"):
            continue
        pts = tl["points"]
        ops = [p[0] for p in pts]
        if not live_done:
            ax.plot(ops, [p[1] / 1024 for p in pts], c="k", lw=1.2, label="live bytes (requested)")
            live_done = True
        if label in approx:
            what = {"rss_growth": "RSS growth", "commit_growth": "commit growth"}.get(approx[label],
                                                                                     "as the allocator exposes it")
            ax.plot(ops, [p[2] / 1024 for p in pts], lw=1, ls="--",
                    label=f"footprint {APPROX} ({what}, not exact): {label}")
        else:
            ax.plot(ops, [p[2] / 1024 for p in pts], lw=1, label=f"footprint: {label}")
        any_line = True
    if not any_line:
        plt.close(fig)
        return None
    ax.set_xlabel("operation")
    ax.set_ylabel("KiB")
    ax.set_title(f"{trace}: live bytes and footprint over time", fontsize=10)
    ax.grid(alpha=.3)
    ax.legend(fontsize=7)
    return _save(fig, outdir, name, tight=True)


def heapmap_raster(hm: dict, cols: int = 256, max_rows: int = 96):
    """The heap as a raster: the blocks of every region laid end to end
    (up to the extent, plus the first bytes of the top), wrapped into rows
    of `cols` cells of `bpc` bytes.  Each cell gets the state of the block
    covering its first byte; used blocks alternate two shades so that
    neighbours stay apart.  Returns (codes[rows][cols], bytes per cell)."""
    import numpy as np
    blocks = hm.get("blocks") or []
    ends: dict[int, int] = {}
    for r, off, size, state, _ in blocks:
        if state != "top":
            ends[r] = max(ends.get(r, 0), off + size)
    for r, off, size, state, _ in blocks:
        ends.setdefault(r, off)
    base, region_off = 0, {}
    for r in sorted(ends):
        region_off[r] = base
        base += ends[r]
    total = max(base, 1)
    bpc = 16
    while total / bpc > cols * max_rows:
        bpc *= 2
    rows = max(1, math.ceil(total / bpc / cols))
    codes = np.full(rows * cols, 5, dtype=np.int8)  # 5 = beyond the extent
    code_of = {"free": 2, "quick": 3, "top": 4}
    used_k = 0
    # used and top first, then free and quick-list blocks on top of them, so
    # a free block smaller than a cell still shows (one cell at least)
    for second in (False, True):
        for r, off, size, state, _ in blocks:
            if (state in ("free", "quick")) != second:
                continue
            a = region_off[r] + off
            b = min(a + size, region_off[r] + ends[r]) if state == "top" else a + size
            if b <= a:
                continue
            if state == "used":
                c = used_k % 2
                used_k += 1
            else:
                c = code_of.get(state, 4)
            codes[a // bpc: max(a // bpc + 1, (b + bpc - 1) // bpc)] = c
    return codes.reshape(rows, cols), bpc


RASTER_COLOURS = ["#d62728", "#9c1a1b", "#2ca02c", "#ff7f0e", "#c7c7c7", "#ffffff"]


def plot_heapmaps(trace: str, entries: dict[str, dict], outdir: Path, name: str) -> str | None:
    from matplotlib.colors import ListedColormap
    maps = [(lab, e["heapmap"]) for lab, e in entries.items() if e and e.get("heapmap") and e["heapmap"].get("blocks")]
    if not maps:
        return None
    rasters = [(lab, hm, *heapmap_raster(hm)) for lab, hm in maps]
    fig, axes = plt.subplots(1, len(rasters), figsize=(4.6 * len(rasters), 4.2), squeeze=False)
    cmap = ListedColormap(RASTER_COLOURS)
    for ax, (lab, hm, codes, bpc) in zip(axes[0], rasters):
        ax.imshow(codes, cmap=cmap, vmin=0, vmax=5, interpolation="nearest", aspect="auto")
        tot = hm.get("totals") or {}
        used = (tot.get("used") or {}).get("bytes", 0)
        free = (tot.get("free") or {}).get("bytes", 0)
        quick = (tot.get("quick") or {}).get("bytes", 0)
        nfree = (tot.get("free") or {}).get("blocks", 0)
        ax.set_title(f"{lab}\nextent {hm.get('extent')} B, live {hm.get('live')} B\n"
                     f"used blocks {used} B, free {free} B in {nfree} blocks, quick {quick} B", fontsize=7)
        ax.set_xticks([])
        ax.set_ylabel(f"rows of {codes.shape[1]} x {bpc} B", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.legend(handles=[Patch(color=RASTER_COLOURS[0], label="used"), Patch(color=RASTER_COLOURS[2], label="free"),
                        Patch(color=RASTER_COLOURS[3], label="quick list"), Patch(color=RASTER_COLOURS[4], label="top")],
               loc="lower center", ncol=4, fontsize=7)
    fig.suptitle(f"{trace}: heap map at peak live (address order, left to right, top to bottom)", fontsize=9)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.1, top=0.78, wspace=0.25)
    return _save(fig, outdir, name)


def _cdf(buckets, points: int = 120):
    """Cumulative fraction of calls at most x, at about `points` x values
    spaced evenly on a log scale (the histograms have thousands of buckets;
    a step plot of all of them is slow and looks the same)."""
    import numpy as np
    tot = sum(b[2] for b in buckets)
    if not tot:
        return [], []
    ub = np.array([lo + w for lo, w, _ in buckets], dtype=float)  # bucket upper bounds
    cum = np.cumsum([n for _, _, n in buckets]) / tot
    lo = max(float(buckets[0][0]), 1.0)
    hi = max(float(ub[-1]), lo * 1.0001)
    xs = np.unique(np.concatenate([np.geomspace(lo, hi, points), ub[-1:]]))
    idx = np.searchsorted(ub, xs, side="right") - 1
    ys = np.where(idx >= 0, cum[np.clip(idx, 0, len(cum) - 1)], 0.0)
    return xs.tolist(), ys.tolist()


def plot_latency(trace: str, hists: dict[str, dict], outdir: Path, name: str, order: list[str]) -> str | None:
    kinds = []
    for k in ("malloc", "free", "realloc", "calloc", "aligned", "all"):
        if any(((h or {}).get("warm") or {}).get(k) for h in hists.values()):
            kinds.append(k)
    if not kinds:
        return None
    cols = min(3, len(kinds))
    rows = math.ceil(len(kinds) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for k, kind in enumerate(kinds):
        ax = axes[k // cols][k % cols]
        for lab in order:
            b = ((hists.get(lab) or {}).get("warm") or {}).get(kind)
            if not b:
                continue
            xs, ys = _cdf(b)
            ax.step(xs, ys, where="post", lw=1, label=lab)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(kind, fontsize=9)
        ax.set_xlabel("cycles (TSC ticks)", fontsize=8)
        ax.set_ylabel("fraction of calls <= x", fontsize=8)
        ax.grid(alpha=.3)
        ax.tick_params(labelsize=7)
    for k in range(len(kinds), rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{trace}: per-operation latency (warm pass, all repetitions)", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.17 / rows, top=1 - 0.17 / rows, wspace=0.3, hspace=0.5)
    return _save(fig, outdir, name)


def plot_compare_ranking(doc: dict, outdir: Path, name: str) -> str | None:
    ov = doc.get("overall") or {}
    labs = [l for l in doc.get("ranking") or [] if ov.get(l, {}).get("warm_avg_ratio_geomean") is not None]
    if not labs:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.35 * len(labs)))
    vals = [ov[l]["warm_avg_ratio_geomean"] for l in labs]
    lo = [max(0.0, v - (ov[l].get("warm_avg_ratio_min") or v)) for v, l in zip(vals, labs)]
    hi = [max(0.0, (ov[l].get("warm_avg_ratio_max") or v) - v) for v, l in zip(vals, labs)]
    ax.barh(labs[::-1], vals[::-1], xerr=[lo[::-1], hi[::-1]], color="#1f77b4", alpha=.8, capsize=3)
    ax.axvline(1.0, c="k", lw=.8)
    ax.set_xlabel(f"warm cycles/op relative to {doc['baseline']} (geometric mean; bars: range over traces)")
    ax.grid(alpha=.3, axis="x")
    return _save(fig, outdir, name, tight=True)


# ------------------------------------------------------------ sections ---

def explore_section(path: str, doc: dict, outdir: Path, prefix: str, tick) -> str:
    by_id = {c["id"]: c for c in doc["configs"]}
    st = doc["settings"]
    mem_key = st["memory_metric"]
    timed = bool(doc.get("timed"))
    parts = [f"<h2>Design-space exploration: {esc(Path(path).name)}</h2>",
             f"<p class='note'>{len(doc['traces'])} trace(s): "
             + ", ".join(esc(t['label']) for t in doc["traces"])
             + f". Grid <b>{esc(st.get('grid'))}</b>, {len(doc['configs'])} valid configs "
             f"({len(doc.get('skipped') or [])} invalid combinations skipped by the heap's check); objective "
             f"<b>{esc(st['objective'])}</b>; memory metric <b>{esc(mem_key)}</b>; reference "
             f"<b>{esc(doc.get('reference'))}</b>; constraints: arena {esc(st.get('arena') or '-')}, "
             f"max cycles {esc(st.get('max_cycles') or '-')}. Aggregates are geometric means over the traces; "
             "ratios are relative to the reference.</p>"]
    plots = plot_pareto(doc, outdir, prefix)
    for n in plots:
        parts.append(img(n, "Pareto front: speed vs memory" if n.endswith("_pareto.png") else "per-trace points"))
        tick()
    if not plots:
        parts.append("<p class='note'>No Pareto plot: no configuration has a speed figure (this exploration ran "
                     "without instruction counts and without timing), so only the memory figures below are "
                     "known.</p>")
    best = by_id.get(doc.get("best"))
    if best:
        parts.append(f"<p><b>Best ({esc(st['objective'])})</b>: <code>{esc(best['id'])}</code> = "
                     f"{esc(best['name'])}<br><code>{esc(best['config'])}</code></p>")
    # ranking table
    frozen = bool((doc.get("frozen") or {}).get("enabled"))
    hdr = ["rank", "id", "name", "instr/op runtime" if frozen else "instr/op"]
    if frozen:
        hdr += ["instr/op frozen"]
    hdr += ["instr x ref"]
    if timed:
        hdr += ["cycles/op avg", "cycles x ref", "cycles/op max"]
    hdr += ["min arena (B)", "peak footprint (B)", "frag #3", "frag #4", "front (instr)", "front (cycles)",
            "feasible"]
    rows = []
    order = list(doc.get("ranking") or [])
    order += [c["id"] for c in doc["configs"] if c["id"] not in order]
    for k, cid in enumerate(order, 1):
        c = by_id[cid]
        a = c["aggregate"]
        r = [f"<td class='n'>{k if cid in doc.get('ranking', []) else '-'}</td>", tdt(c["id"]), tdt(c["name"]),
             td(a.get("instr_per_op"))]
        if frozen:
            fst = (c.get("frozen") or {}).get("status")
            r += [td(a.get("instr_per_op_frozen")) if fst == "measured" else
                  tdt("failed (runtime used)" if fst == "failed" else "")]
            r += [td(a.get("instr_ratio_ranked") if c.get("frozen_candidate") else a.get("instr_ratio"), 3)]
        else:
            r += [td(a.get("instr_ratio"), 3)]
        if timed:
            r += [td(a.get("cycles_avg")), td(a.get("cycles_ratio"), 3), td(a.get("cycles_max"), 0)]
        r += [td(a.get("min_arena"), 0), td(a.get("peak_footprint"), 0), td(a.get("frag3"), 3), td(a.get("frag4"), 3),
              tdt("yes" if c["front"] else ""), tdt("yes" if c.get("timing_front") else ""),
              tdt("yes" if c["feasible"] else "; ".join((c.get("infeasible_reasons") or [])[:2]))]
        rows.append(("best" if cid == doc.get("best") else "front" if c["front"] else "", r))
    parts.append("<h3>Ranking (feasible configs first; green: best, orange: on the Pareto front)</h3>")
    if frozen:
        fz = doc["frozen"]
        parts.append(f"<p>Frozen re-measurement: {len(fz.get('measured') or [])} of {len(fz.get('candidates') or [])} "
                     "candidate(s) re-counted with <code>dmm-replay</code> built frozen to their configuration (the "
                     "form <code>dmmkit generate</code> ships) and ranked first, on those figures; the other "
                     "configurations follow in their runtime order.</p>")
    parts.append(table(hdr, rows, "ranking"))
    # per-trace detail for best and reference
    show = [i for i in dict.fromkeys([doc.get("best"), doc.get("reference")]) if i in by_id]
    for cid in show:
        c = by_id[cid]
        hdr = ["trace", "ops", "instr/op", "min arena (B)", "peak footprint (B)", "frag #3", "frag #4",
               "internal waste (B)", "external waste (B)", "failed"]
        if timed:
            hdr += ["cycles/op avg (median)", "[min", "max]", "cycles/op max (median)", "clean passes", "passes"]
        rows = []
        for t in doc["traces"]:
            m = (c.get("per_trace") or {}).get(t["label"]) or {}
            r = [tdt(t["label"]), td(m.get("ops")), td(m.get("instr_per_op")), td(m.get("min_arena"), 0),
                 td(m.get("peak_footprint"), 0), td(m.get("frag3"), 3), td(m.get("frag4"), 3),
                 td(m.get("internal_waste"), 0), td(m.get("external_waste"), 0), td(m.get("failed"))]
            if timed:
                tm = m.get("timing") or {}
                wa = tm.get("avg") or {}
                r += [td(wa.get("median")), td(wa.get("min")), td(wa.get("max")),
                      td((tm.get("max") or {}).get("median"), 0), td(tm.get("clean_samples")), td(tm.get("samples"))]
            rows.append(r)
        parts.append(f"<h3>Per trace: {esc(c['id'])} ({esc(c['name'])})</h3>")
        parts.append(table(hdr, rows, "pertrace"))
    # pictures
    pics = doc.get("pictures") or {}
    if pics:
        parts.append("<h3>Live bytes and footprint over time; heap maps at peak live</h3>")
        for tl, entries in pics.items():
            named = {by_id[c]["name"] if c in by_id else c: e for c, e in entries.items()}
            n = plot_timeline(tl, named, outdir, f"{prefix}_timeline_{_slug(tl)}.png")
            tick()
            if n:
                parts.append(img(n, f"{tl}: live bytes and footprint"))
            n = plot_heapmaps(tl, named, outdir, f"{prefix}_heapmap_{_slug(tl)}.png")
            tick()
            if n:
                parts.append(img(n, f"{tl}: heap map at peak live"))
    sk = doc.get("skipped") or []
    if sk:
        reasons: dict[str, int] = {}
        for s in sk:
            reasons[s["reason"]] = reasons.get(s["reason"], 0) + 1
        parts.append("<h3>Combinations the heap refused</h3>")
        parts.append(table(["reason", "count"], [[tdt(r), td(n)] for r, n in sorted(reasons.items())]))
    return "\n".join(parts)


def compare_section(path: str, doc: dict, outdir: Path, prefix: str, tick) -> str:
    base = doc["baseline"]
    ov = doc.get("overall") or {}
    summ = doc.get("summary") or {}
    parts = [f"<h2>Allocator comparison: {esc(Path(path).name)}</h2>",
             f"<p class='note'>{len(doc['traces'])} trace(s), {doc['settings']['reps']} interleaved repetition(s), "
             f"baseline <b>{esc(base)}</b>. Speed: warm pass, average TSC cycles per operation. Ratios are paired "
             f"by repetition; spread is min-max over repetitions."
             + ("" if doc.get("complete", True) else f" <b>Incomplete run</b>: {esc(doc.get('error'))}") + "</p>"]
    n = plot_compare_ranking(doc, outdir, f"{prefix}_ranking.png")
    tick()
    if n:
        parts.append(img(n, "ranking"))
    rows = []
    for k, lab in enumerate(doc.get("ranking") or [], 1):
        o = ov.get(lab) or {}
        rows.append([td(k), tdt(lab), td(o.get("warm_avg_ratio_geomean"), 3), td(o.get("warm_avg_ratio_min"), 3),
                     td(o.get("warm_avg_ratio_max"), 3), td(o.get("cold_avg_ratio_geomean"), 3), td(o.get("wins")),
                     td(o.get("failed"))])
    parts.append("<h3>Ranking</h3>")
    parts.append(table(["rank", "allocator", f"warm x {base} (geomean)", "min over traces", "max over traces",
                        f"cold x {base} (geomean)", "fastest on", "failed"], rows, "ranking"))
    labs = doc.get("ranking") or []
    rows = []
    kinds = {a["label"]: a.get("kind") for a in doc["allocators"]}
    legend = Legend()
    approx: dict[str, dict[str, str]] = {}  # trace -> label -> footprint kind, of the figures not exact
    for tl, per in summ.items():
        for lab in labs:
            s = per.get(lab) or {}
            exact, fk = is_exact(s, kinds.get(lab)), footprint_kind(s)
            if not exact:
                approx.setdefault(tl, {})[lab] = fk
            wa, r = s.get("warm_avg") or {}, s.get("warm_avg_ratio") or {}
            rows.append([tdt(tl), tdt(lab), td(wa.get("median")), td(r.get("median"), 3), td(r.get("min"), 3),
                         td(r.get("max"), 3), td(r.get("q1"), 3), td(r.get("q3"), 3),
                         td((s.get("warm_p99") or {}).get("median"), 0), td((s.get("warm_max") or {}).get("median"), 0),
                         td((s.get("cold_avg") or {}).get("median")), td_mem(footprint_value(s), exact, legend, fk),
                         td(s.get("frag4") if exact else None, 3), td(s.get("failed")), td(s.get("preemptions"))])
    parts.append("<h3>Per trace and allocator</h3>")
    parts.append(table(["trace", "allocator", "warm cyc/op", f"x {base}", "min", "max", "q1", "q3", "warm p99",
                        "warm max", "cold cyc/op", "peak footprint (B)", "frag #4", "failed", "preemptions"],
                       rows, "detail"))
    parts.append(legend_html(legend))
    hists = doc.get("histograms") or {}
    pics = doc.get("pictures") or {}
    parts.append("<h3>Latency distributions, timelines, heap maps</h3>")
    for t in doc["traces"]:
        tl = t["label"]
        if tl in hists:
            n = plot_latency(tl, hists[tl], outdir, f"{prefix}_latency_{_slug(tl)}.png", labs)
            tick()
            if n:
                parts.append(img(n, f"{tl}: latency distributions"))
        if tl in pics:
            n = plot_timeline(tl, pics[tl], outdir, f"{prefix}_timeline_{_slug(tl)}.png", approx.get(tl))
            tick()
            if n:
                parts.append(img(n, f"{tl}: live bytes and footprint"))
            dmm_pics = {lab: e for lab, e in pics[tl].items() if e and e.get("heapmap")}
            n = plot_heapmaps(tl, dict(list(dmm_pics.items())[:MAX_HEAPMAPS]), outdir,
                              f"{prefix}_heapmap_{_slug(tl)}.png")
            tick()
            if n:
                parts.append(img(n, f"{tl}: heap maps at peak live (dmm heaps)"))
    return "\n".join(parts)


def _steps(kind: Schema, doc: dict) -> int:
    if kind == EXPLORE:
        return 2 + 2 * len(doc.get("pictures") or {})
    n = len(doc.get("traces") or [])
    return 1 + 3 * n


def write_report(paths: list[str], outdir: str) -> Path:
    results = load_results(paths)
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DmmkitError(f"cannot create {outdir}: {e.strerror}")
    sections = []
    used: dict[str, int] = {}
    with progress() as prog:
        task = prog.add_task("report: plots and tables", total=sum(_steps(k, d) for _, k, d in results))

        def tick():
            prog.advance(task)

        for p, kind, d in results:
            stem = _slug(Path(p).stem)
            used[stem] = used.get(stem, 0) + 1
            prefix = stem if used[stem] == 1 else f"{stem}{used[stem]}"
            if kind == EXPLORE:
                sections.append(explore_section(p, d, out, prefix, tick))
            else:
                sections.append(compare_section(p, d, out, prefix, tick))
    ctx = ""
    for _, _, d in results:
        m = (d.get("context") or {}).get("machine")
        if m:
            ctx = f"{m.get('cpu_model')}, {m.get('cores')} cores, {m.get('kernel')}"
            break
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>dmmkit report</title>"
            f"<style>{CSS}</style></head><body><h1>dmmkit report</h1>"
            f"<p class='note'>Inputs: {', '.join(esc(p) for p, _, _ in results)}. {esc(ctx)}</p>"
            + "\n".join(sections)
            + "<h2>How to read this</h2><p class='note'>Instructions per operation come from callgrind and are "
              "exact; cycles come from the TSC on a shared machine and are medians over interleaved repetitions. "
              "Minimum arena = the smallest buffer that replays the trace with no failed allocation. Fragmentation "
              "#3 = footprint / live at peak live, #4 = peak footprint / peak live (Johnstone &amp; Wilson); a memory "
              "figure marked &#8776; is not exact (RSS growth, or what a system allocator exposes) and has no "
              "fragmentation ratio. In heap "
              "maps red blocks are in use, green are free, orange are parked in quick lists, grey is the untouched "
              "top. See docs/frontend.md.</p></body></html>")
    (out / "index.html").write_text(page)
    console.print(f"report: {out / 'index.html'} ({len(list(out.glob('*.png')))} PNGs)")
    return out / "index.html"
