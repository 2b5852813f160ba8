"""`dmmkit compare`: dmm configurations and the machine's allocators side by
side on the same traces.

Every measurement is one `dmm-replay --reps 1` run (a cold and a warm pass).
The runs are interleaved: repetition r replays every trace on every
allocator, starting each round with a different allocator (round-robin), so
slow drift of a shared machine hits all allocators alike.  Speed is the warm
pass's average TSC cycles per operation; each allocator's figure is divided
by the baseline's figure of the same round (paired ratios), and the ratios
are summarised by their median, min/max and interquartile range, and
tested (dmmkit.stats, on scipy.stats): the geometric mean of the paired
ratios with a 95% bootstrap interval and a Wilcoxon signed-rank p-value, per
trace and overall (the per-repetition geometric mean over the traces, still
paired), and the groups of allocators that cannot be told apart.  By
default the number of repetitions is adaptive (at least 9; then more, up to
--max-reps, until every interval against the baseline is narrower than
--ci-target or it is told apart from the baseline).  Preempted runs and TSC frequency changes are
counted and, when they spoil the runs, announced loudly.

System allocators run under LD_PRELOAD with `--expect NAME`, so a preload
that did not take effect stops the comparison instead of silently measuring
glibc; a `--peer` library must be the object `malloc` resolves to.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from dataclasses import dataclass, field

from rich.table import Table

from .allocators import Allocator, parse_peers, resolve, split_allocator_list
from .cache import clean_nans, write_json_atomic
from .errors import RUNTIME, DmmkitError
from .measure import BudgetExceeded, TaskError, measure_timing
from .textfmt import short_labels, tie_marker
from .memfig import APPROX, Legend, footprint_kind, footprint_value, frag_text, is_exact, mark
from .stats import MIN_SEPARABLE_PAIRS, geomean, noise_check, paired_ratios, paired_test, ratio_summary, repetition_decision, summarize, tie_groups
from .tools import Tools, check_configs, validate_trace, warn_if_unoptimised
from .ui import console, fmt_interval, fmt_kib, fmt_num, fmt_ratio, progress, trace_refs

DEFAULT_ALLOCATORS = "dmm:tlsf,dmm:p2012,dmm:dlmalloc,glibc,jemalloc,mimalloc,tcmalloc,tbbmalloc"
METRICS = ("warm_avg", "cold_avg", "warm_p99", "warm_max", "cold_max")
MIN_CLEAN = MIN_SEPARABLE_PAIRS  # fewest unpreempted pairs the tests are restricted to (they can reach p < ALPHA)


@dataclass
class CompareOptions:
    traces: list[str]
    allocators: list[str] = field(default_factory=lambda: [DEFAULT_ALLOCATORS])
    peers: list[str] = field(default_factory=list)
    named: list[str] = field(default_factory=list)  # NAME=CONFIG dmm allocators
    default_list: bool = False  # allocators not given: missing system allocators are skipped
    reps: int | None = None  # None: adaptive (the repetition rule of dmmkit.stats)
    min_reps: int = 9
    max_reps: int = 30
    ci_target: float = 0.02
    explore_results: str = "dmmkit-explore.json"
    baseline: str | None = None
    results: str = "dmmkit-compare.json"
    pictures: bool = True
    argv: list[str] = field(default_factory=list)
    # time.monotonic() after which no new round starts, once min_rounds are
    # done (advise's step deadline); None: no limit
    deadline: float | None = None
    min_rounds: int = 2
    # seconds one replay of a dmm allocator may take (advise: a few times its
    # probe replay); one that takes longer is killed and left out of the
    # comparison (doc["dropped"]): it cannot win speed and its rounds would
    # take the budget.  None: no limit
    dmm_replay_limit: float | None = None


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
    if opts.reps is not None and opts.reps < 1:
        raise DmmkitError("--reps must be at least 1")
    if opts.max_reps < 1:
        raise DmmkitError("--max-reps must be at least 1")
    if not 0 < opts.ci_target < 1:
        raise DmmkitError(f"--ci-target {opts.ci_target}: expected a relative half-width between 0 and 1 (0.02 = +-2%)")
    items = split_allocator_list(opts.allocators)
    if not items and not opts.named:
        raise DmmkitError("no allocators given")
    peers = parse_peers(opts.peers)
    notes: list[str] | None = [] if opts.default_list else None
    allocs = resolve(items, peers, skip_missing=notes, explore_results=opts.explore_results)
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

    auto = opts.reps is None
    planned = min(opts.min_reps, opts.max_reps) if auto else opts.reps
    runs: dict[str, dict[str, list]] = {tr.label: {a.label: [] for a in allocs} for tr in refs}
    tools_warning = warn_if_unoptimised(tools, "compare")
    doc = {
        "schema": "dmmkit-compare/1",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": opts.argv,
        "tools": tools.as_dict(),
        **({"tools_warning": tools_warning} if tools_warning else {}),
        "settings": {"reps": planned, "reps_mode": "auto" if auto else "fixed",
                     **({"min_reps": opts.min_reps, "max_reps": opts.max_reps, "ci_target": opts.ci_target}
                        if auto else {}),
                     "baseline": base, "speed": "warm pass, average TSC cycles per operation",
                     "ratios": "paired by repetition (same round), median [min-max] and IQR over repetitions; "
                               "only repetitions in which neither run was preempted, when there are any",
                     "tests": f"geometric mean of the paired ratios, 95% bootstrap interval (BCa, seeded), Wilcoxon "
                              f"signed-rank p; over the repetitions in which neither run was preempted when there "
                              f"are at least {MIN_CLEAN}, else over all; tie = interval contains 1 or p >= 0.05",
                     "order": "round-robin: repetition r starts with allocator r mod n"},
        "allocators": [a.as_dict() for a in allocs],
        "baseline": base,
        "traces": [{"label": tr.label, "path": tr.path, "sha256": tr.sha256} for tr in refs],
        "runs": runs,
    }
    hists: dict[str, dict[str, list]] = {tr.label: {a.label: [] for a in allocs} for tr in refs}
    per_round = len(allocs) * len(refs)
    failure = None
    how = (f"{planned}-{opts.max_reps} rep(s) (adaptive: until every interval against {base} is within "
           f"+-{opts.ci_target * 100:g}% or told apart)" if auto else f"{opts.reps} rep(s)")
    console.print(f"[bold]compare[/]: {len(allocs)} allocator(s) x {len(refs)} trace(s) x {how}, "
                  f"interleaved; baseline {base}")
    reps_done, why = 0, None
    last_round = 0.0
    interrupted = False
    with progress() as prog:
        task = prog.add_task("replays (serial, interleaved)", total=planned * per_round)
        try:
            while failure is None:
                if auto:
                    if reps_done:
                        stop, why = repetition_decision(overall_tests(doc), reps_done, opts.min_reps,
                                                        opts.max_reps, opts.ci_target)
                        if stop:
                            break
                    prog.update(task, total=max(planned, reps_done + 1) * per_round)
                elif reps_done >= opts.reps:
                    why = f"the {opts.reps} repetition(s) asked for (--reps)"
                    break
                if opts.deadline is not None and reps_done >= opts.min_rounds and \
                        time.monotonic() + last_round > opts.deadline:
                    why = f"the time budget: another round ({last_round:.1f} s) would end after the deadline"
                    break
                t_round = time.monotonic()
                failure = _one_round(tools, doc, allocs, refs, reps_done, hists, prog, task, opts.dmm_replay_limit)
                last_round = time.monotonic() - t_round
                if failure is None:
                    reps_done += 1
        except KeyboardInterrupt:
            # keep every complete round (and the partial one's pairs): summarised and written below
            interrupted = True
            failure = f"interrupted after {reps_done} complete repetition(s)"
    doc["reps_done"] = reps_done
    if auto:
        doc["settings"]["reps"] = reps_done
    doc["reps_stop"] = why if failure is None else "stopped by an error"
    doc["histograms"] = {t: {a: {p: merge_hists([h.get(p) or {} for h in hs]) for p in ("cold", "warm")}
                             for a, hs in d.items()} for t, d in hists.items()}
    summarise_compare(doc)
    if failure is None and opts.pictures:
        doc["pictures"] = compare_pictures(tools, refs, allocs)
    doc["complete"] = failure is None
    doc["interrupted"] = interrupted
    if failure:
        doc["error"] = failure
    write_json_atomic(opts.results, clean_nans(doc))
    print_compare(doc)
    console.print(f"results: {opts.results}")
    if failure:
        raise DmmkitError(failure + f" (runs finished so far are in {opts.results})", 130 if interrupted else RUNTIME)
    return doc


def _drop_slow(doc: dict, allocs: list[Allocator], a: Allocator, trace: str, e: BudgetExceeded, limit: float) -> None:
    """Leaves dmm allocator `a` out of the comparison (allocs, doc's
    allocators, runs and histograms), recorded in doc["dropped"]."""
    allocs.remove(a)
    doc["allocators"] = [x for x in doc["allocators"] if x["label"] != a.label]
    for per in doc["runs"].values():
        per.pop(a.label, None)
    doc.setdefault("dropped", []).append(
        {"label": a.label, "trace": trace, "seconds": round(e.seconds, 1),
         "why": f"one replay of {trace} took more than {limit:.1f} s (the limit for a dmm allocator: several times "
                "the baseline's replay), so it cannot win speed and its rounds would take the budget"})
    console.print(f"[yellow]dropped[/] {a.label}: {doc['dropped'][-1]['why']}", soft_wrap=True)


def _one_round(tools: Tools, doc: dict, allocs: list[Allocator], refs, rep: int, hists: dict, prog, task,
               dmm_limit: float | None = None) -> str | None:
    """Repetition `rep`: every trace on every allocator, starting with
    allocator rep mod n (round-robin); the figures go into doc["runs"].  A
    dmm allocator whose replay takes more than dmm_limit seconds is left out
    (_drop_slow).  Returns the failure text, or None."""
    runs = doc["runs"]
    for tr in refs:
        for a in allocs:
            runs[tr.label][a.label].append(None)
    k = rep % len(allocs)
    order = allocs[k:] + allocs[:k]
    for tr in refs:
        for a in order:
            if a not in allocs:
                continue  # dropped earlier in this round
            item = {"replay": str(tools.replay), "trace": tr.path, "args": a.replay_args(), "env": a.env(),
                    "hist": True}
            limited = dmm_limit is not None and a.kind == "dmm" and a.label != doc["baseline"]
            if limited:
                item["budget"] = dmm_limit
            try:
                fig = measure_timing(item)
            except BudgetExceeded as e:
                if not limited:
                    return f"allocator {a.label} on {tr.label}: dmm-replay failed: {e}"
                _drop_slow(doc, allocs, a, tr.label, e, dmm_limit)
                hists[tr.label].pop(a.label, None)
                continue
            except TaskError as e:
                msg = str(e)
                if a.kind == "system" and "expected allocator" in msg:
                    return f"allocator {a.label}: the preload did not take effect: {msg}"
                return f"allocator {a.label} on {tr.label}: dmm-replay failed: {msg}"
            bad = _preload_check(a, fig)
            if bad:
                return bad
            h = fig.pop("histograms", None)
            if h:
                hists[tr.label][a.label].append(h)
            runs[tr.label][a.label][rep] = fig
            prog.advance(task)
    return None


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
    _tests(doc, labels, kinds)
    doc["ranking"] = sorted(labels, key=lambda l: (overall[l]["warm_avg_ratio_geomean"] is None,
                                                    overall[l]["warm_avg_ratio_geomean"] or 0.0))
    doc["noise"] = noise_check((r, f) for per in doc["runs"].values() for rr in per.values()
                               for r, f in enumerate(rr))


def _series(doc: dict, lab: str, trace: str | None, metric: str = "warm_avg") -> tuple[list, list]:
    """Per repetition: the metric of `lab` on `trace` (None: the geometric
    mean over every trace, known only when known on all) and whether that
    pass was free of preemption (on every trace)."""
    pk = metric.split("_")[0]
    traces = [trace] if trace is not None else list(doc["runs"])
    cols = [(doc["runs"].get(t) or {}).get(lab) or [] for t in traces]
    n = max((len(c) for c in cols), default=0)
    vals, clean = [], []
    for i in range(n):
        figs = [c[i] if i < len(c) else None for c in cols]
        xs = [f.get(metric) if f else None for f in figs]
        ok = bool(xs) and all(x is not None and x > 0 for x in xs)
        vals.append((xs[0] if len(xs) == 1 else geomean(xs)) if ok else None)
        clean.append(all(_clean(f, pk) for f in figs))
    return vals, clean


def _pair_test(a: tuple[list, list], b: tuple[list, list]) -> dict:
    """paired_test of series a against series b over the repetitions where
    both are known and neither was preempted, when there are at least
    MIN_CLEAN of them, else over all known ones."""
    (va, ca), (vb, cb) = a, b
    both = [i for i in range(min(len(va), len(vb))) if va[i] is not None and vb[i] is not None]
    clean = [i for i in both if ca[i] and cb[i]]
    use = clean if len(clean) >= MIN_CLEAN else both
    res = paired_test([va[i] for i in use], [vb[i] for i in use])
    res["clean_only"] = len(clean) >= MIN_CLEAN
    return res


def _failed(doc: dict, lab: str, trace: str | None) -> int:
    """The most allocations one replay of `lab` failed on `trace` (None: on
    any trace)."""
    runs = doc.get("runs") or {}
    return max(((r or {}).get("failed") or 0 for tl in ([trace] if trace is not None else list(runs))
                for r in (runs.get(tl) or {}).get(lab) or []), default=0)


def _untested(doc: dict, lab: str, other: str, trace: str | None, metric: str = "warm_avg") -> dict | None:
    """When `lab` or `other` failed allocations (on `trace`, or on any trace),
    their cycles are not the same work (a failed request takes another path,
    and what follows it differs), so no interval test is made: the ratio of
    the figures is kept and the tie is unknown (None).  Such an allocator is
    never recommended nor tied (dmmkit.answer), and a trace that every
    allocator fails (a hostile one) needs no statistics at all.  None when
    neither failed."""
    n = _failed(doc, lab, trace) or _failed(doc, other, trace)
    if not n:
        return None
    (va, _), (vb, _) = _series(doc, lab, trace, metric), _series(doc, other, trace, metric)
    pairs = [(a, b) for a, b in zip(va, vb) if a is not None and b is not None]
    return {"n": len(pairs), "ratio": geomean(paired_ratios([a for a, _ in pairs], [b for _, b in pairs])),
            "ci": None, "p": None, "tie": None, "clean_only": False,
            "untested": f"{n} failed allocation(s): not the same work, no interval test"}


def _tested(doc: dict, lab: str, other: str, trace: str | None, metric: str = "warm_avg") -> dict:
    """The paired test of `lab` against `other`, or _untested's figures."""
    return _untested(doc, lab, other, trace, metric) or \
        _pair_test(_series(doc, lab, trace, metric), _series(doc, other, trace, metric))


def paired_against(doc: dict, lab: str, other: str, metric: str = "warm_avg", trace: str | None = None) -> dict:
    """The paired test (stats.paired_test: ratio, bootstrap interval,
    Wilcoxon p) of allocator `lab` against `other` on a metric of compare
    results, per repetition on one trace or (None) the geometric mean over
    the traces; unpreempted repetitions only when there are enough."""
    return _tested(doc, lab, other, trace, metric)


def overall_tests(doc: dict, metric: str = "warm_avg") -> dict:
    """Every allocator's paired test against the baseline on the
    per-repetition geometric mean over the traces (what the adaptive rule
    decides on)."""
    base = doc["baseline"]
    return {a["label"]: _tested(doc, a["label"], base, None, metric) for a in doc["allocators"]
            if a["label"] != base}


def _groups(doc: dict, labels: list[str], ratio: dict, trace: str | None) -> list[list[str]]:
    # an allocator that failed allocations is in no group: it is never tied with another (dmmkit.answer)
    order = sorted((l for l in labels if ratio.get(l) is not None and not _failed(doc, l, trace)),
                   key=lambda l: ratio[l])
    ser = {l: _series(doc, l, trace) for l in order}
    return tie_groups({l: ser[l][0] for l in order}, order,
                      test=lambda a, b: _untested(doc, b, a, trace) or _pair_test(ser[b], ser[a]))


def _tests(doc: dict, labels: list[str], kinds: dict) -> None:
    """The paired tests, tie groups and memory/worst-case ratios per trace
    and overall (fields in docs/frontend.md, "compare results")."""
    base, summary, overall = doc["baseline"], doc["summary"], doc["overall"]
    bsum = {t: per.get(base) or {} for t, per in summary.items()}
    doc["trace_groups"] = {}
    for tl, per in summary.items():
        for lab in labels:
            r = _tested(doc, lab, base, tl)
            s = per[lab]
            s["warm_avg_ratio_geomean"], s["warm_avg_ratio_ci"], s["warm_avg_ratio_p"] = r["ratio"], r["ci"], r["p"]
            s["tie"] = r["tie"]
            if r.get("untested"):
                s["speed_untested"] = r["untested"]
        groups = _groups(doc, labels, {l: per[l]["warm_avg_ratio_geomean"] for l in labels}, tl)
        doc["trace_groups"][tl] = groups
        for g, members in enumerate(groups, 1):
            for lab in members:
                per[lab]["group"] = g
    for lab in labels:
        o = overall[lab]
        r = _tested(doc, lab, base, None)
        o["warm_avg_ratio_geomean"], o["warm_avg_ratio_ci"], o["warm_avg_ratio_p"] = r["ratio"], r["ci"], r["p"]
        o["tie"], o["reps_tested"], o["clean_only"] = r["tie"], r["n"], r["clean_only"]
        if r.get("untested"):
            o["speed_untested"] = r["untested"]
        rm = paired_against(doc, lab, base, "warm_max")  # the worst case, paired the same way
        o["warm_max_ratio_geomean"], o["warm_max_ratio_ci"], o["warm_max_ratio_p"] = rm["ratio"], rm["ci"], rm["p"]
        fps = [(footprint_value(summary[t][lab]), footprint_value(bsum[t])) for t in summary]
        o["peak_footprint_ratio_geomean"] = (geomean(a / b for a, b in fps) if fps and all(
            a is not None and b for a, b in fps) else None)
        o["memory_exact"] = bool(summary) and all(is_exact(summary[t][lab], kinds.get(lab))
                                                  and is_exact(bsum[t], kinds.get(base)) for t in summary)
        o["group"] = None
    groups = _groups(doc, labels, {l: overall[l]["warm_avg_ratio_geomean"] for l in labels}, None)
    for g, members in enumerate(groups, 1):
        for lab in members:
            overall[lab]["group"] = g
    doc["groups"] = groups


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


def _group_text(o: dict, sizes: dict) -> str:
    g = o.get("group")
    if g is None:
        return "-"
    return f"={g}" if sizes.get(g, 1) > 1 else str(g)


def _ci_text(ci) -> str:
    return fmt_interval(ci, 3)


def _p_text(p) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def print_noise(doc: dict) -> None:
    """The noise warning of compare results, loudly, or one quiet line."""
    noise = doc.get("noise") or {}
    if noise.get("warning"):
        console.print(f"[bold red]WARNING[/] [yellow]{noise['warning']}[/]")
    elif noise.get("runs"):
        console.print(f"noise: {noise.get('preempted', 0)} of {noise['runs']} timed runs preempted, "
                      f"{noise.get('freq_changes', 0)} TSC frequency change(s)")


def print_compare(doc: dict) -> None:
    """The noise warning, the ranking, the per-trace speed ratios and the
    memory figures of (checked) compare results; results written before the
    statistics existed print with "-" in their columns."""
    summary, overall, base = doc.get("summary") or {}, doc.get("overall") or {}, doc["baseline"]
    ranking = doc.get("ranking") or []
    print_noise(doc)
    sizes = {g: len(m) for g, m in enumerate(doc.get("groups") or [], 1)}
    reps = doc.get("reps_done", (doc.get("settings") or {}).get("reps"))
    why = f"; {doc['reps_stop']}" if doc.get("reps_stop") else ""
    t = Table(title=f"ranking: warm cycles/op relative to {base} (paired by repetition, geometric mean over "
                    f"{len(summary)} trace(s); lower is faster; {reps} repetition(s){why})")
    # at 100 columns: long labels as short ids (legend below), the interval never cut
    shown, id_legend = short_labels(ranking)
    t.add_column("#", justify="right")
    t.add_column("allocator", no_wrap=True)
    t.add_column("x " + base, justify="right")
    t.add_column("95% CI", justify="right", no_wrap=True, min_width=11)
    t.add_column("p", justify="right")
    t.add_column("group", justify="right")
    t.add_column("mem x", justify="right", no_wrap=True, min_width=7)
    t.add_column("worst x", justify="right")
    t.add_column("cold x", justify="right")
    t.add_column("wins", justify="right")
    t.add_column("failed", justify="right", no_wrap=True, min_width=6)
    legend = Legend()
    for n, lab in enumerate(ranking, 1):
        o = overall[lab]
        mem = o.get("peak_footprint_ratio_geomean")
        exact = bool(o.get("memory_exact"))  # unknown counts as approximate
        if mem is not None and not exact:
            legend.note(False, "ratio")
        t.add_row(str(n), shown[lab], fmt_ratio(o.get("warm_avg_ratio_geomean")), _ci_text(o.get("warm_avg_ratio_ci")),
                  _p_text(o.get("warm_avg_ratio_p")), _group_text(o, sizes),
                  mark(fmt_ratio(mem), exact) if mem is not None else "-",
                  fmt_ratio(o.get("warm_max_ratio_geomean")),
                  fmt_ratio(o.get("cold_avg_ratio_geomean")), f"{o.get('wins') or 0}/{len(summary)}",
                  str(o.get("failed") if o.get("failed") is not None else "-"))
    console.print(t)
    console.print(f"ratios to {base}: x = warm cycles/op, mem = peak footprint, worst = warm maximum cycles/op, "
                  "cold = cold cycles/op; wins = traces where it was fastest; group: allocators with the same number "
                  "cannot be told apart (\"=N\": a tie; paired test against the group's fastest: 95% interval "
                  "containing 1 or Wilcoxon p >= 0.05)", markup=False)
    if id_legend:
        console.print("allocators: " + "; ".join(id_legend), markup=False, soft_wrap=True)
    if legend.kinds:
        console.print(f"{APPROX} memory ratio: a footprint figure of this allocator or of {base} is not the "
                      "allocator's own exact count (approximate)", markup=False)
    m = Table(title=f"per trace: warm cycles/op of {base}, and each allocator's ratio to it "
                    f"(median over paired repetitions; not told apart from {base}: \"=\" the interval holds 1, "
                    "\"~\" it excludes 1 but Wilcoxon p >= 0.05)")
    m.add_column("trace")
    m.add_column(base + " cyc/op", justify="right")
    for lab in ranking:
        if lab != base:
            m.add_column(shown[lab], justify="right")
    for tl, per in summary.items():
        row = [tl, fmt_num(((per.get(base) or {}).get("warm_avg") or {}).get("median"))]
        for lab in ranking:
            if lab != base:
                s = per[lab]
                cell = fmt_ratio((s.get("warm_avg_ratio") or {}).get("median"))
                mk = tie_marker(s.get("warm_avg_ratio_ci"), s.get("tie"))
                if mk:  # not told apart from the baseline on this trace
                    cell += " " + mk
                row.append(cell)
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
    shown, _ = short_labels(ranking)  # the ids of the ranking table's legend
    m = Table(title="per trace: peak footprint \\[fragmentation #4] (first repetition)")
    m.add_column("trace")
    for lab in ranking:
        m.add_column(shown[lab], justify="right")
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
