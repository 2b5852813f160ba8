"""`dmmkit compare`: dmm configurations and the machine's allocators side by
side on the same traces.

Every measurement is one `dmm-replay --reps 1` run (a cold and a warm pass).
The runs are interleaved: repetition r replays every trace on every
allocator, starting each round with a different allocator (round-robin), so
slow drift of a shared machine hits all allocators alike.  Speed is the warm
pass's average TSC cycles per operation; each allocator's figure is divided
by the baseline's figure of the same round (paired ratios), and the ratios
are summarised by their median, min/max and interquartile range.

System allocators run under LD_PRELOAD with `--expect NAME`, so a preload
that did not take effect stops the comparison instead of silently measuring
glibc; a `--peer` library must be the object `malloc` resolves to.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from dataclasses import dataclass, field

from rich.table import Table

from .allocators import Allocator, parse_peers, resolve, split_allocator_list
from .cache import clean_nans, write_json_atomic
from .errors import RUNTIME, DmmkitError
from .measure import TaskError, measure_timing
from .memfig import Legend, footprint_kind, footprint_value, frag_text, is_exact, mark
from .schemas import HEAPMAP, TIMELINE
from .validate import load_document
from .stats import geomean, ratio_summary, summarize
from .tools import Tools, check_configs, run, validate_trace
from .ui import console, fmt_kib, fmt_num, fmt_ratio, progress, trace_refs

DEFAULT_ALLOCATORS = "dmm:tlsf,dmm:p2012,dmm:dlmalloc,glibc,jemalloc,mimalloc,tcmalloc,tbbmalloc"
METRICS = ("warm_avg", "cold_avg", "warm_p99", "warm_max", "cold_max")


@dataclass
class CompareOptions:
    traces: list[str]
    allocators: list[str] = field(default_factory=lambda: [DEFAULT_ALLOCATORS])
    peers: list[str] = field(default_factory=list)
    named: list[str] = field(default_factory=list)  # NAME=CONFIG dmm allocators
    default_list: bool = False  # allocators not given: missing system allocators are skipped
    reps: int = 3
    baseline: str | None = None
    results: str = "dmmkit-compare.json"
    pictures: bool = True
    argv: list[str] = field(default_factory=list)


def merge_hists(hs: list[dict]) -> dict:
    """Sums histograms of the form {kind: [[lo, width, count], ...]}."""
    out: dict[str, dict[tuple[int, int], int]] = {}
    for h in hs:
        for kind, buckets in (h or {}).items():
            if not isinstance(buckets, list):
                continue
            acc = out.setdefault(kind, {})
            for lo, w, n in buckets:
                acc[(lo, w)] = acc.get((lo, w), 0) + n
    return {k: [[lo, w, n] for (lo, w), n in sorted(v.items())] for k, v in out.items()}


def _preload_check(a: Allocator, fig: dict) -> str | None:
    if a.kind == "peer":
        obj = fig.get("malloc_object") or ""
        try:
            same = obj and os.path.realpath(obj) == os.path.realpath(str(a.lib))
        except OSError:
            same = False
        if not same:
            return (f"peer {a.label}: LD_PRELOAD={a.lib} did not take effect (malloc resolves to {obj or 'unknown'}); "
                    "is it a malloc replacement library?")
    return None


def run_compare(tools: Tools, opts: CompareOptions) -> dict:
    if opts.reps < 1:
        raise DmmkitError("--reps must be at least 1")
    items = split_allocator_list(opts.allocators)
    if not items and not opts.named:
        raise DmmkitError("no allocators given")
    peers = parse_peers(opts.peers)
    notes: list[str] | None = [] if opts.default_list else None
    allocs = resolve(items, peers, skip_missing=notes)
    for n in notes or []:
        console.print(f"[yellow]note[/]: {n}")
    for nv in opts.named:
        if "=" not in nv or not nv.split("=", 1)[0].strip() or not nv.split("=", 1)[1].strip():
            raise DmmkitError(f"--dmm {nv!r}: expected NAME=CONFIG")
        name, spec = (x.strip() for x in nv.split("=", 1))
        kind = "dmm"
        if spec.startswith("dmm:"):
            spec = spec[4:]
        elif spec.startswith("pool:"):
            kind, spec = "pool", spec[5:]
        elif spec.startswith("multiheap:"):
            kind, spec = "multiheap", spec[10:]
        if any(a.label == name for a in allocs):
            raise DmmkitError(f"--dmm {name}: the name is already used")
        allocs.append(Allocator(name, kind, spec=spec))
    dmm = [a for a in allocs if a.kind == "dmm"]
    for a, (ok, text) in zip(dmm, check_configs(tools, [a.spec for a in dmm])):
        if not ok:
            raise DmmkitError(f"allocator {a.label}: the heap refuses this config: {text}")
    pools = [a for a in allocs if a.kind in ("pool", "multiheap")]
    for a, (ok, text) in zip(pools, check_configs(tools, [a.kind + ":" + a.spec for a in pools])):
        if not ok:
            raise DmmkitError(f"allocator {a.label}: {text}")
    if not opts.traces:
        raise DmmkitError("compare needs at least one trace")
    for t in opts.traces:
        validate_trace(tools, t)
    refs = trace_refs(opts.traces)
    labels = [a.label for a in allocs]
    if opts.baseline:
        if opts.baseline not in labels:
            raise DmmkitError(f"--baseline {opts.baseline} is not among the allocators ({', '.join(labels)})")
        base = opts.baseline
    else:
        base = "glibc" if "glibc" in labels else labels[0]

    runs: dict[str, dict[str, list]] = {tr.label: {a.label: [None] * opts.reps for a in allocs} for tr in refs}
    doc = {
        "schema": "dmmkit-compare/1",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": opts.argv,
        "tools": tools.as_dict(),
        "settings": {"reps": opts.reps, "baseline": base, "speed": "warm pass, average TSC cycles per operation",
                     "ratios": "paired by repetition (same round), median [min-max] and IQR over repetitions; "
                               "only repetitions in which neither run was preempted, when there are any",
                     "order": "round-robin: repetition r starts with allocator r mod n"},
        "allocators": [a.as_dict() for a in allocs],
        "baseline": base,
        "traces": [{"label": tr.label, "path": tr.path, "sha256": tr.sha256} for tr in refs],
        "runs": runs,
    }
    hists: dict[str, dict[str, list]] = {tr.label: {a.label: [] for a in allocs} for tr in refs}
    schedule = []
    for rep in range(opts.reps):
        k = rep % len(allocs)
        order = allocs[k:] + allocs[:k]
        for tr in refs:
            for a in order:
                schedule.append((rep, tr, a))
    failure = None
    console.print(f"[bold]compare[/]: {len(allocs)} allocator(s) x {len(refs)} trace(s) x {opts.reps} rep(s), "
                  f"interleaved; baseline {base}")
    with progress() as prog:
        task = prog.add_task("replays (serial, interleaved)", total=len(schedule))
        for rep, tr, a in schedule:
            item = {"replay": str(tools.replay), "trace": tr.path, "args": a.replay_args(), "env": a.env(),
                    "hist": True}
            try:
                fig = measure_timing(item)
            except TaskError as e:
                msg = str(e)
                if a.kind == "system" and "expected allocator" in msg:
                    failure = f"allocator {a.label}: the preload did not take effect: {msg}"
                else:
                    failure = f"allocator {a.label} on {tr.label}: dmm-replay failed: {msg}"
                break
            bad = _preload_check(a, fig)
            if bad:
                failure = bad
                break
            h = fig.pop("histograms", None)
            if h:
                hists[tr.label][a.label].append(h)
            runs[tr.label][a.label][rep] = fig
            prog.advance(task)
    doc["histograms"] = {t: {a: {p: merge_hists([h.get(p) or {} for h in hs]) for p in ("cold", "warm")}
                             for a, hs in d.items()} for t, d in hists.items()}
    summarise_compare(doc)
    if failure is None and opts.pictures:
        doc["pictures"] = compare_pictures(tools, refs, allocs)
    doc["complete"] = failure is None
    if failure:
        doc["error"] = failure
    write_json_atomic(opts.results, clean_nans(doc))
    print_compare(doc)
    console.print(f"results: {opts.results}")
    if failure:
        raise DmmkitError(failure + f" (runs finished so far are in {opts.results})", RUNTIME)
    return doc


def summarise_compare(doc: dict) -> None:
    """Fills doc['summary'] (per trace and allocator), doc['overall'] and
    doc['ranking'] from doc['runs']; pure, tested on golden files."""
    base = doc["baseline"]
    labels = [a["label"] for a in doc["allocators"]]
    kinds = {a["label"]: a.get("kind") for a in doc["allocators"]}
    summary: dict = {}
    for tl, per in doc["runs"].items():
        bruns = per.get(base) or []
        summary[tl] = {}
        for lab in labels:
            rr = per.get(lab) or []
            s: dict = {"reps": sum(1 for r in rr if r)}
            # per pass kind, the repetitions in which that pass (this
            # allocator's and the baseline's) ran without preemption; used
            # when there is at least one
            keeps = {}
            for pk in ("warm", "cold"):
                k = [i for i in range(len(rr)) if _clean(rr[i], pk) and i < len(bruns) and _clean(bruns[i], pk)]
                s[f"clean_reps_{pk}"] = len(k)
                keeps[pk] = k or list(range(len(rr)))
            s["clean_reps"] = s["clean_reps_warm"]
            for m in METRICS:
                keep = keeps[m.split("_")[0]]
                vals = [rr[i].get(m) if rr[i] else None for i in keep]
                bvals = [bruns[i].get(m) if i < len(bruns) and bruns[i] else None for i in keep]
                s[m] = summarize(vals)
                s[m + "_ratio"] = ratio_summary(vals, bvals)
            first = next((r for r in rr if r), None) or {}
            s["peak_footprint"] = first.get("peak_footprint")
            # memory figures that are not exact are marked, and carry no
            # fragmentation ratio (dmmkit.memfig)
            s["memory_exact"] = is_exact(first, kinds.get(lab)) if first else None
            s["footprint_kind"] = footprint_kind(first) if first else None
            s["rss_growth"] = first.get("rss_growth")
            s["frag4"] = first.get("frag4") if s["memory_exact"] else None
            s["failed"] = first.get("failed")
            s["detected"] = first.get("detected")
            s["preemptions"] = sum((r or {}).get("preemptions") or 0 for r in rr)
            summary[tl][lab] = s
    overall: dict = {}
    for lab in labels:
        meds = [summary[t][lab]["warm_avg_ratio"]["median"] for t in summary]
        cold = [summary[t][lab]["cold_avg_ratio"]["median"] for t in summary]
        known = [m for m in meds if m is not None]
        overall[lab] = {
            "warm_avg_ratio_geomean": geomean(meds),
            "cold_avg_ratio_geomean": geomean(cold),
            "warm_avg_ratio_min": min(known) if known else None,
            "warm_avg_ratio_max": max(known) if known else None,
            "traces": len(known),
            "wins": sum(1 for t in summary if _winner(summary[t]) == lab),
            "failed": sum(summary[t][lab]["failed"] or 0 for t in summary),
        }
    doc["summary"] = summary
    doc["overall"] = overall
    doc["ranking"] = sorted(labels, key=lambda l: (overall[l]["warm_avg_ratio_geomean"] is None,
                                                    overall[l]["warm_avg_ratio_geomean"] or 0.0))


def _clean(run: dict | None, pass_kind: str) -> bool:
    """A run whose cold or warm pass was not preempted (unknown counts count
    as clean)."""
    if not run:
        return False
    return not (run.get(f"{pass_kind}_preemptions") or 0)


def _winner(per: dict) -> str | None:
    best, who = None, None
    for lab, s in per.items():
        v = s["warm_avg"]["median"]
        if v is not None and (best is None or v < best):
            best, who = v, lab
    return who


def compare_pictures(tools: Tools, refs, allocs: list[Allocator]) -> dict:
    """One untimed replay per (trace, allocator), through dmmkit.pictures:
    live bytes and footprint over time; a heap map (at worst fragmentation)
    for dmm heaps."""
    from . import pictures
    jobs = [pictures.Job(tr.label, tr.path, a.label, list(a.replay_args()), env=a.env(), heapmap=a.kind == "dmm")
            for tr in refs for a in allocs]
    return pictures.take(tools, jobs)


def print_compare(doc: dict) -> None:
    """The ranking, the per-trace speed ratios and the memory figures of
    (checked) compare results."""
    summary, overall, base = doc.get("summary") or {}, doc.get("overall") or {}, doc["baseline"]
    ranking = doc.get("ranking") or []
    t = Table(title=f"ranking: warm cycles/op relative to {base} (geometric mean over {len(summary)} trace(s); "
                    "lower is faster)")
    t.add_column("#", justify="right")
    t.add_column("allocator")
    t.add_column("x " + base + " warm", justify="right")
    t.add_column("range over traces", justify="right")
    t.add_column("x " + base + " cold", justify="right")
    t.add_column("fastest on", justify="right")
    t.add_column("failed", justify="right")
    for n, lab in enumerate(ranking, 1):
        o = overall[lab]
        lo, hi = o.get("warm_avg_ratio_min"), o.get("warm_avg_ratio_max")
        rng = "-" if lo is None or hi is None else f"{lo:.2f}-{hi:.2f}"
        t.add_row(str(n), lab, fmt_ratio(o.get("warm_avg_ratio_geomean")), rng,
                  fmt_ratio(o.get("cold_avg_ratio_geomean")), f"{o.get('wins') or 0}/{len(summary)}",
                  str(o.get("failed") if o.get("failed") is not None else "-"))
    console.print(t)
    m = Table(title=f"per trace: warm cycles/op of {base}, and each allocator's ratio to it "
                    "(median over paired repetitions)")
    m.add_column("trace")
    m.add_column(base + " cyc/op", justify="right")
    for lab in ranking:
        if lab != base:
            m.add_column(lab, justify="right")
    for tl, per in summary.items():
        row = [tl, fmt_num(((per.get(base) or {}).get("warm_avg") or {}).get("median"))]
        for lab in ranking:
            if lab != base:
                row.append(fmt_ratio((per[lab].get("warm_avg_ratio") or {}).get("median")))
        m.add_row(*row)
    console.print(m)
    print_compare_memory(doc)


def print_compare_memory(doc: dict) -> None:
    """Peak footprint and fragmentation #4 per trace and allocator; a figure
    that is not exact is marked (memfig.APPROX) and has no fragmentation
    ratio, and the legend says what it is."""
    summary, ranking = doc.get("summary") or {}, doc.get("ranking") or []
    kinds = {a["label"]: a.get("kind") for a in doc.get("allocators") or []}
    if not summary or not ranking:
        return
    legend = Legend()
    m = Table(title="per trace: peak footprint [fragmentation #4] (first repetition)")
    m.add_column("trace")
    for lab in ranking:
        m.add_column(lab, justify="right")
    for tl, per in summary.items():
        row = [tl]
        for lab in ranking:
            s = per.get(lab) or {}
            fp = footprint_value(s)
            exact = is_exact(s, kinds.get(lab))
            if fp is not None:  # a legend only for figures actually shown
                legend.note(exact, footprint_kind(s))
            cell = mark(fmt_kib(fp), exact)
            fr = frag_text(s.get("frag4"), exact, fmt_ratio)
            row.append(cell + (f" [{fr}]" if fr != "-" else ""))
        m.add_row(*row)
    console.print(m)
    for line in legend.lines():
        console.print(line, markup=False)
