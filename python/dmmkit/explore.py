"""`dmmkit explore`: sweep the heap design space on traces, keep the Pareto
front of speed against memory, time the candidates, rank them.

Phases
  1. validate the traces and the grid (the heap's own config check);
  2. deterministic figures for every (trace, config), in parallel on an
     executor, each cached by (trace hash, config, build id);
  3. aggregate over the traces (geometric means), apply the arena
     constraint, keep the front of instructions/op against memory;
  4. frozen re-measurement: the instruction counts of the candidates (the
     front, then the next fronts, at most --frozen-max, plus every preset on
     the front) again, each with a dmm-replay built frozen to its config
     (dmmkit.frozen; the form `generate` ships); the candidates are ranked on
     these figures (--no-frozen: the runtime figures only);
  5. timing figures (TSC cycles per operation) for the front and the
     presets only: serially, round-robin over the candidates, repeated;
     apply the worst-case bound (--max-cycles), refilling the front with
     the next non-dominated configs when a member breaks it;
  6. rank by the objective, take pictures (timeline, heap map) of the best
     configuration and of the reference, write the results JSON.
"""

from __future__ import annotations

import concurrent.futures as _cf
import datetime as _dt
import os
import sys
import time
from dataclasses import dataclass, field

from rich.table import Table

from . import grid as gridmod
from . import frozen as frozenmod
from . import pareto
from .cache import Cache, clean_nans, write_json_atomic
from .errors import RUNTIME, DmmkitError
from .executors import make_executor
from .measure import MEASURE_VERSION, BudgetExceeded, TaskError, count_instructions, find_valgrind, kill_running, \
    measure_memory, measure_timing
from .measure import reset_stop as measure_reset
from .stats import geomean, relative, summarize
from .textfmt import tie_marker
from .tools import Tools, check_configs, validate_trace, warn_if_unoptimised
from .ui import TraceRef, console, fmt_interval, fmt_kib, fmt_num, fmt_ratio, trace_refs

OBJECTIVES = ("speed", "memory", "balanced")

# Budget defaults (docs/frontend.md, "Explore at scale").  With them the
# default grid on a 540k-operation trace finishes in a few minutes on two
# cores: the screening prefix is about a tenth of such a trace, a config ten
# times slower than the best is not worth its callgrind and timing runs, and
# a config that needs more than a minute for its native figures on one trace
# (one replay + the minimum-arena search) is slower than any design the
# grid is meant to find.
DEFAULT_BUDGET = 60.0
DEFAULT_RELATIVE = 10.0
DEFAULT_SCREEN_OPS = 50_000
SCREEN_KEEP = 6  # at least this many configs (best by the objective on the prefix) get the full measurement
EXIT_INTERRUPTED = 130
MEMORY_METRICS = {"arena": "min_arena", "footprint": "peak_footprint"}


@dataclass
class Options:
    traces: list[str]
    grid: str = "default"
    configs: list[str] = field(default_factory=list)
    arena: int | None = None
    max_cycles: float | None = None
    objective: str = "balanced"
    memory: str = "arena"
    speed: str = "instructions"
    executor: str = "local"
    address: str | None = None
    jobs: int | None = None
    cache_dir: str | None = ".dmmkit-cache"
    use_cache: bool = True
    results: str = "dmmkit-explore.json"
    reps: int | None = None  # timing rounds; None: adaptive (min_reps .. max_reps, dmmkit.stats)
    min_reps: int = 9
    max_reps: int = 20
    ci_target: float = 0.02
    timing: bool = True
    timing_max: int = 12
    instructions: bool = True
    reference: str = "dlmalloc"
    pictures: bool = True
    frozen: bool = True
    frozen_max: int = 6
    frozen_dir: str | None = None  # base of the frozen build directories (default: dmmkit.frozen.build_base)
    pools: bool = False  # also every heap behind pool:auto pools (grid.pool_points)
    budget: float | None = DEFAULT_BUDGET  # seconds for one config's deterministic figures on one trace
    budget_relative: float | None = DEFAULT_RELATIVE  # drop configs this many times slower than the best
    screen_ops: int | None = DEFAULT_SCREEN_OPS  # screening prefix (None: no screening)
    time_limit: float | None = None  # seconds for the whole explore
    argv: list[str] = field(default_factory=list)


def _settings_key(opts: Options) -> str:
    return f"v{MEASURE_VERSION};callgrind={int(opts.instructions)}"


def run_explore(tools: Tools, opts: Options) -> dict:
    if opts.objective not in OBJECTIVES:
        raise DmmkitError(f"--objective {opts.objective}: expected one of {', '.join(OBJECTIVES)}")
    if opts.memory not in MEMORY_METRICS:
        raise DmmkitError(f"--memory {opts.memory}: expected arena or footprint")
    if opts.speed not in ("instructions", "cycles"):
        raise DmmkitError(f"--speed {opts.speed}: expected instructions or cycles")
    if opts.speed == "cycles" and not opts.timing:
        raise DmmkitError("--speed cycles needs the timing phase (drop --no-timing)")
    if opts.speed == "instructions" and not opts.instructions:
        opts.speed = "cycles" if opts.timing else "instructions"
    if not opts.traces:
        raise DmmkitError("explore needs at least one trace")
    for t in opts.traces:
        validate_trace(tools, t)
    tools_warning = warn_if_unoptimised(tools, "explore")
    refs = trace_refs(opts.traces)
    valgrind = None
    if opts.instructions:
        valgrind = find_valgrind()
        if not valgrind:
            raise DmmkitError("valgrind not found: instruction counts need it (apt install valgrind, or run "
                              "scripts/setup.sh); --no-instructions ranks by memory and cycles only")

    # ---- grid ---------------------------------------------------------------
    points = gridmod.points_for(opts.grid) if opts.grid != "none" else []
    for c in opts.configs:
        if c.startswith("pool:"):
            raise DmmkitError(f"--config {c!r}: explore's configs are heap configs; --pools puts each of them "
                              "behind pool:auto pools")
    user_points = [gridmod.Point(c, c) for c in opts.configs]
    if not points and not user_points:
        raise DmmkitError("nothing to explore: --grid none and no --config")
    answers = check_configs(tools, [p.spec for p in user_points + points])
    for p, (ok, text) in zip(user_points, answers[: len(user_points)]):
        if not ok:
            raise DmmkitError(f"config {p.spec!r} refused by the heap: {text}")
        p.config = text
    skipped = []
    kept: list[gridmod.Point] = []
    seen: dict[str, gridmod.Point] = {}
    for p, (ok, text) in zip(points, answers[len(user_points):]):
        if not ok:
            skipped.append({"name": p.name, "spec": p.spec, "reason": text})
            continue
        p.config = text
    for p in points + user_points:
        if not p.config:
            continue
        if p.config in seen:
            continue
        seen[p.config] = p
        kept.append(p)
    if opts.pools:
        kept += gridmod.pool_points(kept, opts.grid, user_points)
    points = kept
    ids = {p.id: p for p in points}
    ref_id = opts.reference if opts.reference in ids else points[0].id
    console.print(f"[bold]explore[/]: {len(refs)} trace(s) x {len(points)} config(s) "
                  f"({opts.grid} grid{', with pool fronts' if opts.pools else ''}, {len(skipped)} invalid "
                  f"combination(s) skipped by the heap's check); "
                  f"build {tools.build_id}")

    # ---- deterministic figures ---------------------------------------------
    cache = Cache(opts.cache_dir, enabled=opts.use_cache)
    skey = _settings_key(opts)
    budget = Budget(opts)
    interrupted = False
    measure_reset()
    old_term = _sigterm_to_interrupt()
    det: dict[tuple[str, str], dict] = {}
    scr: dict[tuple[str, str], dict] = {}
    todo = []
    for tr in refs:
        for p in points:
            hit = cache.get(tr.sha256, p.key, tools.build_id, skey)
            if hit is not None:
                det[(tr.label, p.id)] = hit
            else:
                todo.append((tr, p))
    full_hits = len(det)
    errors: list[str] = []
    try:
        if todo:
            ex = make_executor(opts.executor, opts.jobs, opts.address)
            try:
                executor_info = ex.describe()
                keep = {p.id for p in user_points} | {ref_id} | {pid for (_, pid) in det}
                _deterministic(ex, executor_info, todo, tools, valgrind, det, scr, cache, skey, errors, budget,
                               opts, refs, keep)
            except KeyboardInterrupt:
                interrupted = True
                kill_running()
            finally:
                ex.close()
        else:
            executor_info = {"executor": opts.executor, "note": "every figure came from the cache"}
    except KeyboardInterrupt:
        interrupted = True
        kill_running()
    budget.full = len({pid for (_, pid) in det})
    budget.log()
    console.print(f"deterministic figures: {len(det)} ({full_hits} from the cache, {len(det) - full_hits} measured)"
                  + (f", [red]{len(errors)} failed[/]" if errors else "")
                  + (f"; {len(budget.dropped)} dropped by the budget (summed up above; each in the results)"
                     if budget.dropped else ""))

    # ---- aggregate, constraints, front ------------------------------------
    mem_key = MEMORY_METRICS[opts.memory]
    configs = []
    for p in points:
        per = {tr.label: det.get((tr.label, p.id)) for tr in refs}
        reasons = []
        for tr in refs:
            m = per[tr.label]
            if m is None:
                reasons.append(f"not measured on {tr.label}")
                continue
            if m.get("failed"):
                reasons.append(f"{m['failed']} failed allocation(s) on {tr.label}")
            if not m.get("min_arena_found"):
                reasons.append(f"no arena replays {tr.label} without failures")
            elif opts.arena and m["min_arena"] > opts.arena:
                reasons.append(f"needs a {m['min_arena']}-byte arena on {tr.label} (> --arena {opts.arena})")
            if m.get("heap_errors"):
                reasons.append(f"heap reported misuse on {tr.label}")
        reasons += [f"dropped: {r}" for r in budget.reasons(p.id)]
        vals = [m for m in per.values() if m]
        agg = {
            "instr_per_op": geomean(m.get("instr_per_op") for m in vals) if len(vals) == len(refs) else None,
            "min_arena": geomean(m.get("min_arena") for m in vals) if len(vals) == len(refs) else None,
            "min_arena_max": max((m.get("min_arena") or 0 for m in vals), default=None),
            "peak_footprint": geomean(m.get("peak_footprint") for m in vals) if len(vals) == len(refs) else None,
            "frag4": geomean(m.get("frag4") for m in vals),
            "frag3": geomean(m.get("frag3") for m in vals),
            "failed": sum(m.get("failed") or 0 for m in vals),
        }
        configs.append({"id": p.id, "name": p.name, "spec": p.spec, "config": p.config, "preset": p.preset,
                        "kind": p.kind, "alloc": p.alloc, "key": p.key, "heap_id": p.heap_id or None,
                        "short": gridmod.short_config(p.config), "per_trace": per, "aggregate": agg,
                        "screen": {tr.label: _screen_fields(scr.get((tr.label, p.id))) for tr in refs}
                        if any((tr.label, p.id) in scr for tr in refs) else None,
                        "feasible": not reasons, "infeasible_reasons": reasons, "front": False, "timed": False,
                        "timing_front": False})
    by_id = {c["id"]: c for c in configs}
    ref = by_id[ref_id]
    for c in configs:
        a, r = c["aggregate"], ref["aggregate"]
        a["instr_ratio"] = relative(a["instr_per_op"], r["instr_per_op"])
        a["memory_ratio"] = relative(a[mem_key], r[mem_key])
    feas = [c for c in configs if c["feasible"]]

    def speed_det(c):
        return c["aggregate"]["instr_per_op"] if opts.instructions else 0.0

    det_pts = [(speed_det(c), c["aggregate"][mem_key]) for c in feas]
    for i in pareto.front(det_pts):
        feas[i]["front"] = True
    ranking_det = [feas[i]["id"] for i in pareto.rank(det_pts, opts.objective)]

    # ---- frozen re-measurement of the candidates ------------------------------
    ranking_runtime = [i for i in ranking_det if by_id[i]["feasible"]]
    frozen_info: dict = {"enabled": False,
                         "reason": ("--no-frozen" if not opts.frozen else
                                    "no instruction counts (--no-instructions)" if not opts.instructions else
                                    "no feasible configuration")}
    if opts.frozen and opts.instructions and feas and (interrupted or budget.stop("frozen re-measurement")):
        frozen_info["reason"] = "interrupted" if interrupted else "the --time-limit was reached"
    elif opts.frozen and opts.instructions and feas:
        try:
            with budget.timed("frozen"):
                frozen_info = _frozen_phase(tools, opts, refs, feas, det_pts, by_id, cache, skey, valgrind, ref_id,
                                            mem_key)
            ranking_det = frozen_info.pop("_ranking")
        except KeyboardInterrupt:
            interrupted = True
            kill_running()
            frozen_info = {"enabled": False, "reason": "interrupted"}

    # ---- timing for the candidates ------------------------------------------
    timed_ids: list[str] = []
    timing_stats: list[dict] = []
    if opts.timing and not interrupted and not budget.stop("timing"):
        try:
            with budget.timed("timing"):
                timed_ids = _timing_phase(tools, opts, refs, configs, feas, det_pts, by_id, mem_key, errors, budget,
                                          timing_stats)
        except KeyboardInterrupt:
            interrupted = True
            kill_running()

    # ---- ranking ------------------------------------------------------------
    ranking = ranking_det
    if timed_ids:
        cand = [by_id[i] for i in timed_ids if by_id[i]["feasible"]]
        t_pts = [(c["aggregate"].get("cycles_avg"), c["aggregate"].get("cycles_max"), c["aggregate"][mem_key])
                 for c in cand]
        for i in pareto.front(t_pts):
            cand[i]["timing_front"] = True
        for c in configs:
            c["aggregate"]["cycles_ratio"] = relative(c["aggregate"].get("cycles_avg"),
                                                      ref["aggregate"].get("cycles_avg"))
        if opts.speed == "cycles":
            two = [(c["aggregate"].get("cycles_avg"), c["aggregate"][mem_key]) for c in cand]
            ranking = [cand[i]["id"] for i in pareto.rank(two, opts.objective)]
    ranking = [i for i in ranking if by_id[i]["feasible"]]
    best = ranking[0] if ranking else None
    if opts.objective == "balanced":
        # the score the balanced ranking sorts on, shown beside it (pareto.balanced_scores)
        def _speed(a):
            if timed_ids and opts.speed == "cycles":
                return a.get("cycles_avg")
            return a.get("instr_per_op_ranked") or a.get("instr_per_op")
        pts = [(_speed(by_id[i]["aggregate"]), by_id[i]["aggregate"][mem_key]) for i in ranking]
        for i, sc in zip(ranking, pareto.balanced_scores(pts)):
            by_id[i]["aggregate"]["balanced_score"] = sc

    # ---- pictures -----------------------------------------------------------
    pictures: dict = {}
    if opts.pictures and best and not interrupted and not budget.stop("pictures"):
        try:
            with budget.timed("pictures"):
                pictures = take_pictures(tools, refs, [best, ref_id] if best != ref_id else [best], det,
                                         {c["id"]: c["alloc"] for c in configs})
        except KeyboardInterrupt:
            interrupted = True
            kill_running()
    _restore_sigterm(old_term)

    doc = {
        "schema": "dmmkit-explore/1",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": not interrupted and not budget.limit_hit,
        "interrupted": interrupted,
        "argv": opts.argv,
        "tools": tools.as_dict(),
        **({"tools_warning": tools_warning} if tools_warning else {}),
        "executor": executor_info,
        "context": _context(det),
        "settings": {"grid": opts.grid, "objective": opts.objective, "memory": opts.memory,
                     "memory_metric": mem_key, "arena": opts.arena, "max_cycles": opts.max_cycles,
                     "reps": opts.reps if opts.reps is not None else "auto", "min_reps": opts.min_reps,
                     "max_reps": opts.max_reps, "timing": opts.timing, "instructions": opts.instructions,
                     "pools": ({"front": gridmod.POOL_FRONT, "which": "every heap of the grid and --config"
                                if opts.grid != "full" else "the presets and --config"} if opts.pools else None),
                     "reference": ref_id, "cache": str(opts.cache_dir) if opts.use_cache else None,
                     "speed": opts.speed, "frozen": opts.frozen, "frozen_max": opts.frozen_max,
                     "speed_metric": ("cycles_avg" if (timed_ids and opts.speed == "cycles") else
                                      "instr_per_op_frozen" if frozen_info.get("measured") else "instr_per_op"),
                     "aggregate": "geometric mean over the traces"},
        "traces": [{"label": tr.label, "path": tr.path, "sha256": tr.sha256,
                    **_trace_fields(det, tr.label)} for tr in refs],
        "configs": configs,
        "skipped": skipped,
        "front": [c["id"] for c in configs if c["front"]],
        "timing_front": [c["id"] for c in configs if c["timing_front"]],
        "timed": timed_ids,
        "timing_stats": timing_stats[0] if len(timing_stats) == 1 else (timing_stats or None),
        "ranking": ranking,
        "ranking_instructions": [i for i in ranking_det if by_id[i]["feasible"]],
        "ranking_runtime": ranking_runtime,
        "frozen": frozen_info,
        "best": best,
        "reference": ref_id,
        "pictures": pictures,
        "errors": errors,
        "cache": {"hits": full_hits, "measured": len(det) - full_hits},
        "budget": budget.as_dict(),
    }
    doc = clean_nans(doc)
    write_json_atomic(opts.results, doc)
    budget.log()  # what the timing and frozen phases dropped
    if interrupted:
        raise DmmkitError(f"interrupted: the partial results ({budget.full} config(s) with full figures, "
                          f"\"complete\": false) are in {opts.results}", EXIT_INTERRUPTED)
    print_explore(doc)
    console.print(f"results: {opts.results}" + (f"; cache of deterministic figures: {opts.cache_dir}/"
                                                if opts.use_cache else ""))
    if not det and budget.dropped:
        kinds = {d["reason"] for d in budget.dropped}
        if "time_limit" in kinds or budget.limit_hit:
            raise DmmkitError(f"the --time-limit of {budget.time_limit:g} s ended before any config was measured; "
                              f"what was measured is in {opts.results}", RUNTIME)
        raise DmmkitError(f"the budget is too small for even one config: all {len(points)} were dropped "
                          f"({', '.join(sorted(kinds))}; --budget {budget.per_config:.3g} s per config and trace); "
                          f"raise --budget; what was measured is in {opts.results}", RUNTIME)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise DmmkitError(f"{len(errors)} measurement(s) failed, first: {errors[0]}{more}; the figures that were "
                          f"measured are in {opts.results} and the cache", RUNTIME)
    if not ranking:
        raise DmmkitError("no configuration is feasible under the constraints "
                          + (f"(--arena {opts.arena}) " if opts.arena else "")
                          + (f"(--max-cycles {opts.max_cycles}) " if opts.max_cycles else "")
                          + f"; see {opts.results}", RUNTIME)
    return doc


def print_budget(doc: dict) -> None:
    """The budget's line(s): what it was, what it dropped, how long it took.
    A results file is read as it comes (dmmkit show): a budget section that
    is not what explore writes is skipped, with a note."""
    b = doc.get("budget")
    if b is None:
        return

    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    dropped = b.get("dropped") if isinstance(b, dict) else None
    if (not isinstance(b, dict) or not isinstance(dropped, list) or not all(isinstance(d, dict) for d in dropped)
            or any(b.get(k) is not None and not num(b.get(k))
                   for k in ("per_config_s", "relative", "screen_ops", "time_limit", "screened", "full", "seconds"))):
        console.print("note: the results' budget section is not in the form explore writes; not shown")
        return
    parts = [f"per config {b['per_config_s']:g} s" if b.get("per_config_s") else "no per-config budget",
             f"relative {b['relative']:g}x" if b.get("relative") else "no relative budget",
             f"screening on the first {b['screen_ops']} ops" if b.get("screen_ops") else "no screening"]
    if b.get("time_limit"):
        parts.append(f"time limit {b['time_limit']:g} s" + (f" (reached during {b['time_limit_hit']}: later work "
                                                             "not started, ranked on what was measured)"
                                                             if b.get("time_limit_hit") else ""))
    console.print(f"budget: {', '.join(parts)}; {b.get('screened') or 0} config(s) screened, "
                  f"{b.get('full') or 0} with full figures, {len(dropped)} dropped; "
                  f"{b.get('seconds') or 0:.0f} s in all", soft_wrap=True)
    counts: dict[str, int] = {}
    for d in dropped:
        r = str(d.get("reason"))
        counts[r] = counts.get(r, 0) + 1
    if counts:
        console.print("dropped: " + ", ".join(f"{n} by {k}" for k, n in sorted(counts.items()))
                      + " (each listed in the results under budget.dropped)", soft_wrap=True)


def _screen_fields(m: dict | None) -> dict | None:
    if not m:
        return None
    return {k: m.get(k) for k in ("ops", "instr_per_op", "min_arena", "peak_footprint", "replay_seconds", "seconds")}


def _sigterm_to_interrupt():
    """SIGTERM ends explore as Ctrl-C does (partial results kept); returns
    the handler to restore (None when not on the main thread)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, on_term)


def _restore_sigterm(old) -> None:
    import signal
    if old is not None:
        signal.signal(signal.SIGTERM, old)


def _deterministic(ex, info, todo, tools, valgrind, det, scr, cache, skey, errors, budget: Budget, opts, refs,
                   keep: set[str]) -> None:
    """The deterministic figures of todo: first every config on the first
    --screen-ops operations of each trace (when a trace is longer), then the
    full measurement of the configs worth it (_screen_select)."""
    entries = {tr.label: _trace_entries(tools, tr.path) for tr in refs}
    sops = budget.screen_ops
    pts: dict[str, gridmod.Point] = {}
    for _, p in todo:
        pts.setdefault(p.id, p)
    weights = [float(entries.get(tr.label) or 1) for tr, _ in todo]
    if sops and len(pts) > SCREEN_KEEP and any((entries.get(tr.label) or 0) > sops for tr in refs):
        skey_s = skey + f";ops={sops}"
        s_todo = []
        for tr, p in todo:
            hit = cache.get(tr.sha256, p.key, tools.build_id, skey_s)
            if hit is not None:
                scr[(tr.label, p.id)] = hit
            else:
                s_todo.append((tr, p))
        if s_todo:
            _measure(ex, info, s_todo, tools, valgrind, scr, cache, skey_s, errors, budget, ops=sops,
                     weights=[float(min(sops, entries.get(tr.label) or sops)) for tr, _ in s_todo],
                     label=f" (screening: first {sops} ops)")
        budget.screened = len(pts)
        chosen = _screen_select(opts, list(pts.values()), refs, scr, budget, keep) | (keep & set(pts))
        out = [p for pid, p in pts.items() if pid not in chosen and not budget.gone(pid)]
        for p in out:
            budget.drop(p, None, "screen", None,
                        f"not among the promising configs on the first {sops} operations (the screening "
                        f"front, the best {SCREEN_KEEP} by the objective, the presets)", quiet=True)
        console.print(f"screening on the first {sops} operations: {len(pts) - len(out)} of {len(pts)} config(s) "
                      f"get the full measurement; [yellow]dropped[/] as not promising: "
                      f"{', '.join(p.name for p in out) or 'none'} (--no-screen measures every config in full)",
                      soft_wrap=True)
        todo = [(tr, p) for tr, p in todo if p.id in chosen and not budget.gone(p.id)]
        # expected cost of each full task: its own time on the prefix, scaled to the trace
        weights = []
        for tr, p in todo:
            m = scr.get((tr.label, p.id)) or {}
            n = entries.get(tr.label) or sops
            weights.append(float((m.get("seconds") or 1.0) * n / max(1, min(sops, n))))
    if todo and not budget.stop("full measurement"):
        _measure(ex, info, todo, tools, valgrind, det, cache, skey, errors, budget, weights=weights)


def frozen_candidates(feas: list[dict], det_pts: list, budget: int, objective: str) -> list[int]:
    """Indices (into feas) of the configs re-measured as frozen builds: the
    front of det_pts, best first by the objective, then the next fronts
    (the front of what is left, and so on) while the budget lasts; every
    preset on the first front is taken even beyond the budget."""
    chosen: list[int] = []
    pool = list(range(len(feas)))
    first = True
    while pool and len(chosen) < budget:
        sub = [det_pts[i] for i in pool]
        layer_j = pareto.front(sub)
        if not layer_j:
            break
        ranked = pareto.rank([sub[j] for j in layer_j], objective)  # indices into layer_j
        layer = [pool[layer_j[k]] for k in ranked]
        room = budget - len(chosen)
        take = layer[:room]
        if first:
            take += [i for i in layer[room:] if feas[i].get("preset")]
            first = False
        chosen += take
        drop = set(layer)
        pool = [i for i in pool if i not in drop]
    return chosen


def frozen_ranking(cands: list[dict], mem_key: str, objective: str, rest: list[str]) -> list[str]:
    """The candidates ranked by the objective on (instr_per_op_ranked:
    frozen where measured, else runtime; memory), then the other ids of
    `rest` in their order.  Sets frozen_front on the candidates."""
    pts = [(c["aggregate"].get("instr_per_op_ranked"), c["aggregate"].get(mem_key)) for c in cands]
    for i in pareto.front(pts):
        cands[i]["frozen_front"] = True
    head = [cands[i]["id"] for i in pareto.rank(pts, objective)]
    seen = set(head)
    return head + [i for i in rest if i not in seen]


def _frozen_phase(tools, opts, refs, feas, det_pts, by_id, cache, skey, valgrind, ref_id, mem_key) -> dict:
    """Re-measures the instruction counts of the candidates with dmm-replay
    built frozen to each of them (dmmkit.frozen), exactly as phase 2 counts
    them (measure.count_instructions, the same arena and config text), and
    ranks the candidates on these figures.  A candidate whose frozen build
    or count fails keeps its runtime figure, marked as such (a warning, not
    an error).  Returns the `frozen` section of the results, with the new
    instruction ranking under "_ranking"."""
    from .measure import _replay
    t0 = time.monotonic()
    idx = frozen_candidates(feas, det_pts, max(1, opts.frozen_max), opts.objective)
    cands = [feas[i] for i in idx]
    jobs = opts.jobs or os.cpu_count() or 1
    base = opts.frozen_dir or frozenmod.build_base(tools, opts.cache_dir)
    skf = skey + ";form=frozen"
    problems: list[str] = []
    builds: dict[str, frozenmod.FrozenReplay] = {}
    general: frozenmod.FrozenBuildError | None = None
    console.print(f"frozen re-measurement: {len(cands)} candidate(s) (front first, --frozen-max {opts.frozen_max}), "
                  f"each with dmm-replay built frozen to it under {base}/{frozenmod.BUILD_PREFIX}<hash>")

    def warn(msg):
        problems.append(msg)
        console.print(f"[yellow]warning[/]: {msg}", markup=True, soft_wrap=True)

    t_build = time.monotonic()
    with explore_progress() as prog:
        tb = PhaseTracker(prog, f"frozen builds of dmm-replay ({len(cands)} config(s), -j{jobs})",
                          [c["name"] for c in cands], [1.0] * len(cands), 1)
        for k, c in enumerate(cands):
            c["frozen_candidate"] = True
            if general is not None:
                c["frozen"] = {"status": "failed", "error": general.message}
                tb.finished(k)
                continue
            try:
                fr = frozenmod.build_frozen_replay(tools, c["config"], base=base, jobs=jobs)
                builds[c["id"]] = fr
                c["frozen"] = {"status": "built", **fr.as_dict()}
            except frozenmod.FrozenBuildError as e:
                c["frozen"] = {"status": "failed", "error": e.message, "log": str(e.log) if e.log else None,
                               "log_tail": frozenmod.tail(e.tail, 20)}
                warn(f"frozen build for {c['name']} failed: {e.detail(15)}\n  -> its runtime figure is used "
                     "(marked 'runtime' in the results)")
                if e.general:
                    general = e
            tb.finished(k)
        t_build = time.monotonic() - t_build

        # the heap code path each form runs (dmm-replay's allocator.variant), on the smallest trace
        t_count = time.monotonic()
        small = min(refs, key=lambda tr: (_trace_fields_ops(by_id, feas, tr.label), tr.label))
        for c in cands:
            m = c["per_trace"].get(small.label) or {}
            args = ["--alloc", c["alloc"], "--arena", str(m.get("arena") or 1 << 20), "--no-timing",
                    "--no-warm"]
            for key, binary in (("runtime_variant", str(tools.replay)),
                                ("variant", str(builds[c["id"]].replay) if c["id"] in builds else None)):
                if binary is None:
                    continue
                try:
                    p, d = _replay(binary, small.path, args, timeout=600)
                    c["frozen"][key] = ((d or {}).get("allocator") or {}).get("variant") if p.returncode == 0 else None
                except TaskError:
                    c["frozen"][key] = None

        # instruction counts: one callgrind run per (candidate, trace), its own binary each
        res: dict[tuple[str, str], dict] = {}
        work = []
        hits = 0
        for c in cands:
            fr = builds.get(c["id"])
            if fr is None:
                continue
            for tr in refs:
                m = c["per_trace"].get(tr.label)
                if not m:
                    continue
                hit = cache.get(tr.sha256, c["key"], fr.build_id, skf)
                if hit is not None:
                    res[(c["id"], tr.label)] = hit
                    hits += 1
                    continue
                work.append((c, tr, {"replay": str(fr.replay), "trace": tr.path, "valgrind": valgrind,
                                     "lines": [(m["arena"], c["alloc"])]}))
        nw = max(1, min(jobs, len(work) or 1))
        tc = PhaseTracker(prog, f"instruction counts of the frozen builds (callgrind, {len(work)} run(s), "
                                f"{hits} from the cache)", [f"{w[0]['name']} on {w[1].label}" for w in work],
                          [((w[0]["per_trace"].get(w[1].label) or {}).get("replay_seconds") or 1.0) for w in work], nw)
        with _cf.ThreadPoolExecutor(max_workers=nw) as ex:
            futs = {ex.submit(count_instructions, w[2]): (j, w) for j, w in enumerate(work)}
            for f in _cf.as_completed(futs):
                j, (c, tr, _) = futs[f]
                try:
                    r = f.result()[0]
                except TaskError as e:
                    r = {"instructions": None, "failed": None, "error": str(e)}
                if r.get("error") or not r.get("instructions"):
                    warn(f"frozen count of {c['name']} on {tr.label} failed: "
                         f"{r.get('error') or 'callgrind counted no instructions'}")
                else:
                    res[(c["id"], tr.label)] = r
                    cache.put(tr.sha256, c["key"], builds[c["id"]].build_id, skf, r)
                tc.finished(j)
        t_count = time.monotonic() - t_count

    # ---- figures --------------------------------------------------------------
    ref = by_id[ref_id]
    measured, fallback = [], []
    for c in cands:
        a = c["aggregate"]
        a["instr_per_op_runtime"] = a.get("instr_per_op")
        per = []
        for tr in refs:
            m = c["per_trace"].get(tr.label)
            r = res.get((c["id"], tr.label))
            if not m or not r:
                continue
            m["instructions_frozen"] = r["instructions"]
            m["instr_per_op_frozen"] = r["instructions"] / m["ops"] if m.get("ops") else None
            m["failed_frozen"] = r.get("failed")
            per.append(m["instr_per_op_frozen"])
            if (r.get("failed") or 0) != (m.get("failed") or 0):
                warn(f"{c['name']} on {tr.label}: {r.get('failed')} failed allocation(s) frozen, "
                     f"{m.get('failed')} at runtime")
        ok = c["id"] in builds and len(per) == len(refs) and all(v is not None for v in per)
        if ok:
            a["instr_per_op_frozen"] = geomean(per)
            a["frozen_ratio"] = relative(a["instr_per_op_runtime"], a["instr_per_op_frozen"])
            a["instr_per_op_ranked"] = a["instr_per_op_frozen"]
            a["instr_source"] = "frozen"
            c["frozen"]["status"] = "measured"
            measured.append(c["id"])
        else:
            a["instr_per_op_frozen"] = None
            a["frozen_ratio"] = None
            a["instr_per_op_ranked"] = a["instr_per_op_runtime"]
            a["instr_source"] = "runtime (frozen build failed)" if c["id"] not in builds else \
                "runtime (frozen count failed)"
            if c["frozen"].get("status") != "failed":
                c["frozen"]["status"] = "failed"
                c["frozen"]["error"] = "frozen instruction counts missing on some trace"
            fallback.append(c["id"])
    ra = ref["aggregate"]
    ref_fig = ra.get("instr_per_op_frozen") or ra.get("instr_per_op")
    for c in cands:
        c["aggregate"]["instr_ratio_ranked"] = relative(c["aggregate"]["instr_per_op_ranked"], ref_fig)
    rest = [feas[i]["id"] for i in pareto.rank(det_pts, opts.objective)]
    ranking = frozen_ranking(cands, mem_key, opts.objective, rest)
    ratios = [by_id[i]["aggregate"]["frozen_ratio"] for i in measured if by_id[i]["aggregate"].get("frozen_ratio")]
    info = {
        "enabled": True,
        "max": opts.frozen_max,
        "candidates": [c["id"] for c in cands],
        "measured": measured,
        "fallback": fallback,
        "status": "measured" if not fallback else ("fallback" if not measured else "partial"),
        "build_base": str(base),
        "reference_figure": "frozen" if ra.get("instr_per_op_frozen") else "runtime",
        "builds": {"built": sum(1 for b in builds.values() if not b.up_to_date),
                   "up_to_date": sum(1 for b in builds.values() if b.up_to_date), "failed": len(cands) - len(builds)},
        "callgrind_runs": len(work), "cache_hits": hits,
        "runtime_over_frozen_median": (sorted(ratios)[len(ratios) // 2] if ratios else None),
        "seconds": {"build": round(t_build, 1), "count": round(t_count, 1), "total": round(time.monotonic() - t0, 1)},
        "method": "the candidates' instruction counts again with dmm-replay built frozen to each config "
                  "(dmm-config header + -DDMM_FROZEN_CONFIG, Release), measure.count_instructions with the same "
                  "arena and config text; candidates ranked on instr_per_op_ranked (frozen, or the runtime "
                  "figure where the frozen build or count failed), before the configs not re-measured",
        "problems": problems,
        "_ranking": ranking,
    }
    if fallback:
        console.print(f"[yellow]warning[/]: {len(fallback)} of {len(cands)} candidate(s) ranked on their runtime "
                      f"instruction counts (frozen {'build' if not builds else 'measurement'} failed): "
                      + ", ".join(by_id[i]["name"] for i in fallback), markup=True, soft_wrap=True)
    return info


def _trace_fields_ops(by_id, feas, label):
    for c in feas:
        m = c["per_trace"].get(label)
        if m and m.get("ops"):
            return m["ops"]
    return 1 << 62


CHUNK = 32  # configs per callgrind run (one valgrind start-up each)
CHUNK_BUDGETED = 4  # for full runs under a per-config budget: an overrun costs a few configs' counts, not 32


def callgrind_chunks(tasks: dict[int, tuple[str, float | None]], chunk: int) -> list[list[int]]:
    """The callgrind runs of phase B: tasks (index -> (trace label, native
    replay seconds)) grouped per trace into runs of at most `chunk` configs,
    the fastest configs first.  A valgrind start-up (about 0.6 s on a busy
    2-core machine, as much as one config's count on a 150k-operation
    window) is paid once per run, and under a time limit the cheap configs
    are counted first, so as many as possible get full figures; slow ones
    share runs with slow ones.  Pure (tested)."""
    by_trace: dict[str, list[int]] = {}
    for i in sorted(tasks, key=lambda i: (tasks[i][1] is None, tasks[i][1] or 0.0, i)):
        by_trace.setdefault(tasks[i][0], []).append(i)
    runs = [idx[k:k + chunk] for idx in by_trace.values() for k in range(0, len(idx), chunk)]
    return sorted(runs, key=lambda c: sum(float("inf") if tasks[i][1] is None else tasks[i][1] for i in c))


class Budget:
    """The time budgets of one explore run and everything they dropped
    (doc["budget"])."""

    def __init__(self, opts: Options):
        self.per_config = opts.budget if opts.budget and opts.budget > 0 else None
        self.relative = opts.budget_relative if opts.budget_relative and opts.budget_relative > 0 else None
        self.screen_ops = opts.screen_ops or None
        self.time_limit = opts.time_limit if opts.time_limit and opts.time_limit > 0 else None
        self.t0 = time.monotonic()
        self.deadline = time.time() + self.time_limit if self.time_limit else None
        self.dropped: list[dict] = []
        self.screened = 0
        self.full = 0
        self.limit_hit: str | None = None  # the phase the time limit stopped
        self._gone: set[str] = set()
        self._pending: list[dict] = []  # drops not yet in the log (Budget.log)
        self.phase_s: dict[str, float] = {}  # wall seconds per phase (where an explore's time goes)

    def timed(self, phase: str):
        """A context adding the wall time of a block to phase_s[phase]."""
        import contextlib

        @contextlib.contextmanager
        def block():
            t = time.monotonic()
            try:
                yield
            finally:
                self.phase_s[phase] = round(self.phase_s.get(phase, 0.0) + time.monotonic() - t, 2)
        return block()

    def item(self, **kw) -> dict:
        """The budget fields of a measurement item."""
        return {"budget": self.per_config, "deadline": self.deadline, **kw}

    def over(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    def stop(self, phase: str) -> bool:
        """True (and noted) when the whole run's time limit has passed."""
        if self.over():
            if not self.limit_hit:
                self.limit_hit = phase
            return True
        return False

    def overrun(self, p, trace: str, exc, phase: str, why: str) -> None:
        """A measurement of p killed at its budget: past the --time-limit
        that stops the phase (and is the reason), else p broke its own
        --budget (why)."""
        if self.over():
            self.stop(phase)
            self.drop(p, trace, "time_limit", exc.seconds, "stopped at the --time-limit")
        else:
            self.drop(p, trace, "budget", exc.seconds, why)

    def drop(self, p, trace: str | None, reason: str, seconds: float | None, why: str, quiet: bool = False) -> None:
        self.dropped.append({"id": p.id, "name": p.name, "trace": trace, "reason": reason,
                             "seconds": round(seconds, 2) if seconds is not None else None, "detail": why})
        self._gone.add(p.id)
        if not quiet:
            self._pending.append(self.dropped[-1])

    def log(self) -> None:
        """One line per reason for the configs dropped since the last call
        (the full list is in the results, budget.dropped)."""
        new, self._pending = self._pending, []
        by: dict[str, list[dict]] = {}
        for d in new:
            by.setdefault(d["reason"], []).append(d)
        what = {"budget": "over the per-config --budget", "relative": "more than --budget-relative times slower",
                "time_limit": "stopped at the --time-limit", "screen": "not promising on the screening prefix"}
        for reason, ds in by.items():
            names = list(dict.fromkeys(d["name"] + (f" on {d['trace']}" if d.get("trace") else "") for d in ds))
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            console.print(f"[yellow]dropped[/] {len(names)} {what.get(reason, reason)}: {shown}"
                          + (f" ({ds[0]['detail']})" if len(names) == 1 else f" (e.g. {ds[0]['detail']})"),
                          soft_wrap=True)

    def gone(self, pid: str) -> bool:
        return pid in self._gone

    def reasons(self, pid: str) -> list[str]:
        return [d["detail"] for d in self.dropped if d["id"] == pid]

    def as_dict(self) -> dict:
        return {"per_config_s": self.per_config, "relative": self.relative, "screen_ops": self.screen_ops,
                "time_limit": self.time_limit, "time_limit_hit": self.limit_hit, "dropped": self.dropped,
                "screened": self.screened, "full": self.full, "phase_seconds": dict(self.phase_s),
                "seconds": round(time.monotonic() - self.t0, 1)}


def explore_progress():
    """Progress with the running config(s) and an ETA this module works out
    (PhaseTracker), not rich's count-based rate."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, \
        TimeElapsedColumn
    return Progress(SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta {task.fields[eta]}"),
                    TextColumn("{task.fields[now]}"), console=console, transient=False)


class PhaseTracker:
    """One progress line of a phase: which tasks run now (the first
    `workers` unfinished ones in submission order: the pools start tasks in
    that order) and an ETA from this run's own measurements: the wall time
    so far times the weight still to do over the weight done, each task
    weighted by what it is expected to cost (its trace's operations, or its
    own time measured on the screening prefix, scaled to the trace)."""

    def __init__(self, prog, label: str, names: list[str], weights: list[float], workers: int):
        self.prog, self.names, self.w = prog, names, [max(1e-9, float(x)) for x in weights]
        self.workers = max(1, int(workers or 1))
        self.left = list(range(len(names)))
        self.done_w = 0.0
        self.t0 = time.monotonic()
        self.task = prog.add_task(label, total=len(names), eta="-", now=self._now())

    def _now(self) -> str:
        run = [self.names[i] for i in self.left[: self.workers]]
        return ("running: " + ", ".join(run)) if run else ""

    def eta(self) -> float | None:
        if self.done_w <= 0:
            return None
        rest = sum(self.w[i] for i in self.left)
        return (time.monotonic() - self.t0) * rest / self.done_w

    def add(self, names: list[str], weights: list[float]) -> None:
        """More tasks of the same phase (another round of repetitions)."""
        base = len(self.names)
        self.names += names
        self.w += [max(1e-9, float(x)) for x in weights]
        self.left += list(range(base, base + len(names)))
        self.prog.update(self.task, total=len(self.names), now=self._now())

    def finished(self, j: int) -> None:
        if j in self.left:
            self.left.remove(j)
            self.done_w += self.w[j]
        e = self.eta()
        self.prog.update(self.task, advance=1, now=self._now(),
                         eta="-" if e is None else str(_dt.timedelta(seconds=int(e + 0.5))))


def _memory_loop(ex, mem_items, need, todo, ta, mem, budget, errors, cache, tools, valgrind, mkey, ops, label):
    """Phase A's results as they come: mem[i] (and the cache), or the drop
    / error of each task."""
    for j, res, exc in ex.map_unordered(measure_memory, mem_items):
        i = need[j]
        tr, p = todo[i]
        ta.finished(j)
        if isinstance(exc, BudgetExceeded):
            budget.overrun(p, tr.label, exc, f"memory figures{label}",
                           f"its figures took more than the --budget of {budget.per_config:.3g} s"
                           + (f" on the first {ops} operations" if ops else ""))
        elif exc is not None:
            errors.append(f"{p.name} on {tr.label}: {exc}")
        else:
            mem[i] = res
            if valgrind:
                cache.put(tr.sha256, p.key, tools.build_id, mkey, res)
        if budget.over():
            budget.stop(f"memory figures{label}")
            break


def _measure(ex, info, todo, tools, valgrind, det, cache, skey, errors, budget: Budget, ops: int | None = None,
             weights: list[float] | None = None, label: str = ""):
    """Phase A: memory figures per (trace, config), natively, in parallel
    (each within the per-config budget).  The relative budget then drops the
    configs more than K times slower than the fastest on the same trace (the
    untimed replay's wall time), before their callgrind runs.  Phase B:
    instruction counts, one callgrind run per trace and chunk of configs, in
    parallel.  ops: only that prefix of the traces (screening).  Complete
    figures go to det and the cache as soon as they are known, so an
    interruption keeps them."""
    workers = info.get("workers") or info.get("cluster_cpus") or 1
    mem: dict[int, dict] = {}
    mkey = skey + ";part=memory"  # phase A results, kept until phase B completes them
    for i, (tr, p) in enumerate(todo):
        hit = cache.get(tr.sha256, p.key, tools.build_id, mkey) if valgrind else None
        if hit is not None:
            mem[i] = hit
    need = [i for i in range(len(todo)) if i not in mem]
    weights = weights or [1.0] * len(todo)
    mem_items = [budget.item(replay=str(tools.replay), trace=todo[i][0].path, spec=todo[i][1].alloc, ops=ops)
                 for i in need]
    with explore_progress() as prog:
        if budget.stop(f"memory figures{label}"):
            return
        ta = PhaseTracker(prog, f"memory figures + minimum arena{label} ({info.get('executor')}, {workers} workers)",
                          [f"{todo[i][1].name} on {todo[i][0].label}" for i in need], [weights[i] for i in need],
                          workers)
        try:
            with budget.timed("memory" + ("_screen" if ops else "")):
                _memory_loop(ex, mem_items, need, todo, ta, mem, budget, errors, cache, tools, valgrind, mkey, ops,
                             label)
        except KeyboardInterrupt:
            if not valgrind:  # these figures are complete: keep them
                for i, m in mem.items():
                    tr, p = todo[i]
                    m["instructions"] = m["instr_per_op"] = None
                    det[(tr.label, p.id)] = m
            raise
        # the relative budget, per trace, against the fastest config measured on it:
        # on wall time only for a replay of at least REL_WALL_FLOOR_S (below it
        # a wall time is mostly start-up and noise: 0.05 s against 0.01 s
        # dropped configs on a busy machine); below, on instructions/op once
        # callgrind has counted them (_relative_on_instructions)
        floor_traces: set[str] = set()
        if budget.relative:
            best: dict[str, float] = {}
            for i, m in mem.items():
                t = m.get("replay_seconds")
                if t:
                    lab = todo[i][0].label
                    best[lab] = min(best.get(lab, t), t)
            for i in sorted(mem):
                tr, p = todo[i]
                t, b = mem[i].get("replay_seconds"), best.get(tr.label)
                if t is not None and t < REL_WALL_FLOOR_S:
                    floor_traces.add(tr.label)  # decided on instructions, whatever the wall times say
                elif t and b and t > budget.relative * b:
                    budget.drop(p, tr.label, "relative", t,
                                f"its replay took {t:.2f} s, more than {budget.relative:g}x the fastest "
                                f"config's {b:.2f} s (--budget-relative)"
                                + (f" on the first {ops} operations" if ops else ""))
                    del mem[i]
        if not valgrind:
            for i, m in mem.items():
                tr, p = todo[i]
                m["instructions"] = None
                m["instr_per_op"] = None
                det[(tr.label, p.id)] = m
                cache.put(tr.sha256, p.key, tools.build_id, skey, m)
            return
        if budget.stop(f"instruction counts{label}"):
            return
        chunks = callgrind_chunks({i: (todo[i][0].label, m.get("replay_seconds")) for i, m in mem.items()},
                                  CHUNK if ops or not budget.per_config else CHUNK_BUDGETED)
        # callgrind is some 50x slower than a native replay: each config's share of a chunk gets the
        # per-config budget scaled by how much longer its own native replay took than the budget allows
        items = []
        for c in chunks:
            native = sum(mem[i].get("replay_seconds") or 0 for i in c)
            it = budget.item(replay=str(tools.replay), trace=todo[c[0]][0].path, valgrind=valgrind, ops=ops,
                             lines=[(mem[i]["arena"], todo[i][1].alloc) for i in c])
            if it["budget"]:
                it["budget"] = max(it["budget"] * len(c), CALLGRIND_SLOWDOWN * native * 2)
            items.append(it)
        tb = PhaseTracker(prog, f"instruction counts{label} (callgrind, {len(chunks)} run(s))",
                          [", ".join(todo[i][1].name for i in c[:2]) + (" ..." if len(c) > 2 else "")
                           + f" on {todo[c[0]][0].label}" for c in chunks],
                          [sum(max(1e-3, mem[i].get("replay_seconds") or 0) for i in c) for c in chunks], workers)
        t_instr = time.monotonic()
        for j, res, exc in ex.map_unordered(count_instructions, items):
            tb.finished(j)
            for k, i in enumerate(chunks[j]):
                tr, p = todo[i]
                if isinstance(exc, BudgetExceeded):
                    budget.overrun(p, tr.label, exc, f"instruction counts{label}",
                                   f"its callgrind run took more than its budget ({items[j]['budget']:.0f} s)")
                    continue
                r = None if exc is not None else res[k]
                if r is None or r.get("error") or not r.get("instructions") and mem[i].get("ops"):
                    why = exc if exc is not None else (r.get("error") or
                                                       "callgrind counted no instructions in the allocator entry "
                                                       "points; was dmm-replay built from other heap sources?")
                    errors.append(f"{p.name} on {tr.label}: {why}")
                else:
                    m = mem[i]
                    m["instructions"] = r["instructions"]
                    m["instr_per_op"] = r["instructions"] / m["ops"] if m.get("ops") else None
                    det[(tr.label, p.id)] = m
                    cache.put(tr.sha256, p.key, tools.build_id, skey, m)
            if budget.over():
                budget.stop(f"instruction counts{label}")
                break
        key = "instructions" + ("_screen" if ops else "")
        budget.phase_s[key] = round(budget.phase_s.get(key, 0.0) + time.monotonic() - t_instr, 2)
        _relative_on_instructions(budget, det, todo, floor_traces, ops)


REL_WALL_FLOOR_S = 1.0  # the relative budget compares wall times only from this long a replay


def _relative_on_instructions(budget: Budget, det: dict, todo, traces: set[str], ops: int | None) -> None:
    """The relative budget on the traces whose wall times were below the
    floor: a config whose instructions/op are more than K times the fewest
    on the same trace is dropped (deterministic: the same on every run)."""
    if not budget.relative or not traces:
        return
    names = {p.id: p for _, p in todo}
    for lab in traces:
        figs = {pid: m.get("instr_per_op") for (tl, pid), m in det.items() if tl == lab and m.get("instr_per_op")}
        if not figs:
            continue
        best = min(figs.values())
        for pid, v in sorted(figs.items()):
            if v > budget.relative * best and pid in names:
                budget.drop(names[pid], lab, "relative", None,
                            f"its {v:.0f} instructions/op are more than {budget.relative:g}x the fewest ({best:.0f}) "
                            f"(--budget-relative, on instructions: the replays took less than {REL_WALL_FLOOR_S:g} s, "
                            "too short for wall times to tell)" + (f" on the first {ops} operations" if ops else ""))
                del det[(lab, pid)]


CALLGRIND_SLOWDOWN = 50  # callgrind's cost against a native replay, as measured on the allocator paths (issue 14)


def _trace_entries(tools: Tools, path: str) -> int | None:
    """Entries of a trace (dmm-trace validate's count), None when unknown."""
    import re
    from .tools import run
    res = run([str(tools.trace), "validate", str(path)], timeout=300)
    m = re.search(r"valid \((\d+) ops", res.stdout or "")
    return int(m.group(1)) if m else None


def _screen_select(opts, points, refs, scr, budget, keep_ids) -> set[str]:
    """The configs worth the full measurement after screening: the front of
    (instructions/op, or the replay's time without callgrind; minimum arena)
    on the prefixes, the best SCREEN_KEEP by the objective, the presets, the
    --config ones and the reference."""
    cand = []
    for p in points:
        ms = [scr.get((tr.label, p.id)) for tr in refs]
        if not all(ms) or any(m.get("failed") or not m.get("min_arena_found") for m in ms):
            continue
        speed = geomean((m.get("instr_per_op") if opts.instructions else m.get("replay_seconds")) for m in ms)
        mem = geomean(m.get("min_arena") if opts.memory == "arena" else m.get("peak_footprint") for m in ms)
        cand.append((p.id, (speed, mem)))
    pts = [c[1] for c in cand]
    chosen = {cand[i][0] for i in pareto.front(pts)} if cand else set()
    chosen |= {cand[i][0] for i in pareto.rank(pts, opts.objective)[:SCREEN_KEEP]} if cand else set()
    screened_ok = {c[0] for c in cand}
    chosen |= {p.id for p in points if (p.preset or p.id in keep_ids) and p.id in screened_ok}
    return chosen


def _trace_fields(det, label):
    for (lab, _), m in det.items():
        if lab == label and m:
            return {"ops": m.get("ops"), "threads": m.get("threads"), "peak_live": m.get("peak_live"),
                    "hash": m.get("trace_hash")}
    return {}


def _context(det):
    ctx = {"python": sys.version.split()[0]}
    for m in det.values():
        if m and m.get("machine"):
            ctx["machine"] = m["machine"]
            ctx["build"] = m.get("build")
            break
    return ctx


def _timing_phase(tools, opts, refs, configs, feas, det_pts, by_id, mem_key, errors, run_budget=None,
                  stats_out: list | None = None) -> list[str]:
    """Times the candidates; returns the ids timed.  Candidates: the
    deterministic front, then the presets, at most --timing-max; with
    --max-cycles, members that break the bound are replaced by the next
    front among the rest (while the budget lasts)."""
    timed: list[str] = []
    excluded: set[str] = set()
    budget = max(1, opts.timing_max)
    pool = list(range(len(feas)))
    first = True
    while True:
        rest = [i for i in pool if feas[i]["id"] not in excluded and feas[i]["id"] not in timed]
        sub = [det_pts[i] for i in rest]
        front_ids = [feas[rest[j]]["id"] for j in pareto.front(sub)] if rest else []
        # instructions first, so the fastest are timed when the budget is short
        front_ids.sort(key=lambda i: (by_id[i]["aggregate"]["instr_per_op"] or 0))
        cand = front_ids
        if first:
            cand = cand + [c["id"] for c in configs if c["preset"] and c["feasible"] and c["id"] not in cand]
            first = False
        cand = [i for i in cand if i not in timed][: budget - len(timed)]
        if not cand:
            break
        st = _time_configs(tools, opts, refs, [by_id[i] for i in cand], errors, run_budget)
        if stats_out is not None:
            stats_out.append(st)
        timed.extend(cand)
        if run_budget is not None and run_budget.stop("timing"):
            break
        if opts.max_cycles is None:
            break
        broke = [i for i in cand if (by_id[i]["aggregate"].get("cycles_max") or 0) > opts.max_cycles]
        for i in broke:
            c = by_id[i]
            c["feasible"] = False
            c["infeasible_reasons"].append(
                f"worst-case {c['aggregate']['cycles_max']:.0f} cycles/op > --max-cycles {opts.max_cycles:g}")
            excluded.add(i)
        front_ok = [i for i in front_ids if i in timed and i not in excluded]
        if front_ok and not broke:
            break
        if len(timed) >= budget:
            break
    # configs never timed cannot be shown to meet a worst-case bound
    if opts.max_cycles is not None:
        for c in configs:
            if c["feasible"] and c["id"] not in timed:
                c["feasible"] = False
                c["infeasible_reasons"].append("not timed, so the --max-cycles bound is not verified")
    return timed


def _time_configs(tools, opts, refs, cands, errors, budget=None) -> dict:
    """Times the candidates in rounds: each round replays every trace on
    every candidate, round-robin (a different first config each round).
    --reps N: exactly N rounds; auto (opts.reps None): at least
    opts.min_reps, then more (up to opts.max_reps) until every candidate's
    paired comparison with the reference (the reference config when timed,
    else the first candidate) is settled (dmmkit.stats.repetition_decision).
    Returns the timing statistics (rounds done, why they stopped, paired tests,
    tie groups, the noise check)."""
    from .stats import noise_check, paired_test, repetition_decision, tie_groups
    auto = opts.reps is None
    planned = min(opts.min_reps, opts.max_reps) if auto else opts.reps
    ref = next((c for c in cands if c["id"] == opts.reference), cands[0])

    def round_runs(rep):
        out = []
        for tr in refs:
            k = rep % len(cands)
            for c in cands[k:] + cands[:k]:
                out.append((rep, tr, c))
        return out

    def weights(rr):
        return [((c["per_trace"].get(tr.label) or {}).get("replay_seconds") or 1.0) for _, tr, c in rr]

    def names(rr):
        return [f"{c['name']} on {tr.label} (rep {rep + 1})" for rep, tr, c in rr]

    runs = [x for rep in range(planned) for x in round_runs(rep)]
    samples: dict[tuple[str, str], list[dict]] = {}
    by_rep: dict[tuple[str, str], dict[int, dict]] = {}
    slow: set[str] = set()
    tests: dict = {}
    stop_why = f"{planned} repetition(s) (--reps {planned})"
    reps_done = 0

    def per_rep(cid):
        """One sample per round: the geometric mean over the traces of the
        run's warm cycles/op (None when a trace is missing that round)."""
        out = []
        for rep in range(reps_done):
            vals = [((by_rep.get((tr.label, cid)) or {}).get(rep) or {}).get("warm_avg") for tr in refs]
            out.append(geomean(vals) if all(v is not None for v in vals) else None)
        return out

    with explore_progress() as prog:
        tk = PhaseTracker(prog, f"timing {len(cands)} candidate(s) x {len(refs)} trace(s), "
                                + (f"{planned}-{opts.max_reps} adaptive" if auto else str(planned))
                                + " rep(s), serially", names(runs), weights(runs), 1)
        j = 0
        stopped = False
        while j < len(runs) and not stopped:
            rep, tr, c = runs[j]
            if budget is not None and budget.stop("timing"):
                stopped = True
                stop_why = f"stopped by the --time-limit in round {rep + 1} ({reps_done} complete)"
                break
            if c["id"] not in slow:
                m = c["per_trace"].get(tr.label) or {}
                item = {"replay": str(tools.replay), "trace": tr.path, "args": ["--alloc", c["alloc"]],
                        "arena": m.get("arena")}
                if budget is not None:
                    item.update(budget.item())
                try:
                    fig = measure_timing(item)
                    samples.setdefault((tr.label, c["id"]), []).append(fig)
                    by_rep.setdefault((tr.label, c["id"]), {})[rep] = fig
                except BudgetExceeded as e:
                    if budget is not None and not budget.over():
                        slow.add(c["id"])
                        budget.drop(_PointRef(c), tr.label,
                                    "budget", e.seconds, f"a timing run took more than the --budget of "
                                    f"{budget.per_config:.3g} s: not timed")
                except TaskError as e:
                    errors.append(f"timing {c['name']} on {tr.label}: {e}")
            tk.finished(j)
            j += 1
            if j == len(runs) or runs[j][0] != rep:  # a round is complete
                reps_done = rep + 1
                base = per_rep(ref["id"])
                tests = {c2["id"]: paired_test(per_rep(c2["id"]), base) for c2 in cands if c2 is not ref}
                if auto:
                    stop, stop_why = repetition_decision(tests, reps_done, opts.min_reps, opts.max_reps,
                                                         opts.ci_target)
                    if not stop and j == len(runs):
                        more = round_runs(reps_done)
                        runs += more
                        tk.add(names(more), weights(more))
    for c in cands:
        c["timed"] = True
        avg_t, max_t = [], []
        c["aggregate"]["cycles_max_preempted"] = False
        for tr in refs:
            tm = dmm_pass_stats(samples.get((tr.label, c["id"]), []))
            if tm["samples"] and not tm["clean_samples"]:  # every pass preempted: the maximum holds one
                c["aggregate"]["cycles_max_preempted"] = True
            if c["per_trace"].get(tr.label) is not None:
                c["per_trace"][tr.label]["timing"] = tm
            avg_t.append(tm["avg"]["median"])
            max_t.append(tm["max"]["median"])
        c["aggregate"]["cycles_avg"] = geomean(avg_t) if all(v is not None for v in avg_t) else None
        c["aggregate"]["cycles_max"] = max((v for v in max_t if v is not None), default=None)
        t = tests.get(c["id"]) or {}
        c["aggregate"]["cycles_vs"] = ref["id"]
        c["aggregate"]["cycles_ratio_ci"] = t.get("ci") if c is not ref else [1.0, 1.0]
        c["aggregate"]["cycles_ratio_p"] = t.get("p")
        c["aggregate"]["cycles_tie"] = t.get("tie") if c is not ref else True
    series = {c["id"]: per_rep(c["id"]) for c in cands}
    order = sorted([i for i in series if geomean(series[i]) is not None], key=lambda i: geomean(series[i]))
    noise = noise_check([(rep, fig) for (_, _), d in by_rep.items() for rep, fig in d.items()])
    return {"reps_mode": "auto" if auto else "fixed", "reps_done": reps_done, "stop": stop_why,
            "reference": ref["id"], "groups": tie_groups(series, order), "noise": noise,
            "method": "paired by round: per round the geometric mean over the traces of each candidate's warm "
                      "cycles/op, against the reference's; bootstrap 95% interval and Wilcoxon signed-rank "
                      "(dmmkit.stats.paired_test)"}


class _PointRef:
    """A config of the results seen as a grid point (id and name) by Budget.drop."""

    def __init__(self, c: dict):
        self.id, self.name = c["id"], c["name"]


def dmm_pass_stats(runs: list[dict]) -> dict:
    """Timing of one dmm config on one trace from its runs.  For a dmm heap
    the cold and the warm pass of a run are the same experiment (a fresh
    heap on a prefaulted arena: dmm_heap_init, then dmm_heap_reset), so each
    run gives two samples.  Samples whose pass was preempted (involuntary
    context switches > 0) are set aside when at least one clean sample
    exists: on a shared machine a single preemption adds milliseconds to the
    maximum and, spread over the operations, to the average."""
    passes = []
    for r in runs:
        for p in ("cold", "warm"):
            if r.get(f"{p}_avg") is not None:
                passes.append({"avg": r[f"{p}_avg"], "max": r[f"{p}_max"], "p99": r.get(f"{p}_p99"),
                               "preempted": (r.get(f"{p}_preemptions") or 0) > 0})
    clean = [x for x in passes if not x["preempted"]]
    use = clean or passes
    return {
        "runs": len(runs), "samples": len(passes), "clean_samples": len(clean),
        "used": "clean samples only" if clean else "all samples (every pass was preempted)",
        "avg": summarize(x["avg"] for x in use),
        "max": summarize(x["max"] for x in use),
        "p99": summarize(x["p99"] for x in use),
        "avg_all": [x["avg"] for x in passes],
        "max_all": [x["max"] for x in passes],
        "preempted": [x["preempted"] for x in passes],
    }


def take_pictures(tools: Tools, refs: list[TraceRef], config_ids: list[str], det,
                  allocs: dict[str, str] | None = None) -> dict:
    """Timeline and heap map (at worst fragmentation) of each (trace,
    config): one untimed replay each, through dmmkit.pictures (allocs: id ->
    --alloc, default dmm:CONFIG; a pool front has no heap map)."""
    from . import pictures
    jobs = []
    for tr in refs:
        for cid in config_ids:
            m = det.get((tr.label, cid))
            if not m:
                continue
            alloc = (allocs or {}).get(cid) or "dmm:" + (m.get("config") or cid)
            jobs.append(pictures.Job(tr.label, tr.path, cid, ["--alloc", alloc, "--arena", str(m.get("arena") or 1 << 20)],
                                     heapmap=alloc.startswith("dmm:")))
    return pictures.take(tools, jobs)


def _max_text(a: dict) -> str:
    """The warm maximum cycles/op, marked '*' when a timed run of the
    config was preempted (the maximum then includes the preemption)."""
    v = fmt_num(a.get("cycles_max"), 0)
    return v + ("*" if a.get("cycles_max_preempted") else "") if v != "-" else v


def print_explore(doc: dict, top: int = 12) -> None:
    by_id = {c["id"]: c for c in doc["configs"]}
    st = doc["settings"]
    timed = bool(doc.get("timed"))
    fz = doc.get("frozen") or {}
    frozen = bool(fz.get("enabled"))
    ref = by_id.get(doc.get("reference"))
    t = Table(title=f"explore ranking (objective {st['objective']}, speed = {st.get('speed_metric')}, "
                    f"memory = {st['memory_metric']}, "
                    f"geometric mean over {len(doc['traces'])} trace(s); ratios vs {doc.get('reference')})")
    t.add_column("#", justify="right", no_wrap=True, min_width=3)
    balanced = st.get("objective") == "balanced"
    if balanced:
        t.add_column("score", justify="right")  # geomean of speed and memory, each relative to the best
    t.add_column("id", no_wrap=True, min_width=9)  # names longer than an id are in the legend under the table
    if frozen:
        t.add_column("instr/op", justify="right", no_wrap=True)  # runtime config
        t.add_column("frozen", justify="right", no_wrap=True)  # instr/op, built frozen to the config
        t.add_column("x ref", justify="right", no_wrap=True)  # of the figure ranked: frozen where measured
    else:
        t.add_column("instr/op", justify="right", no_wrap=True)
        t.add_column("x ref", justify="right", no_wrap=True)
    t.add_column("min arena", justify="right", no_wrap=True)
    t.add_column("peak fp", justify="right", no_wrap=True)
    t.add_column("#4", justify="right", no_wrap=True)
    t.add_column("front", justify="center", no_wrap=True)
    # the timing of the candidates: a table of its own (100 columns hold
    # neither all the figures in one nor a cut interval)
    tt = Table(title=f"timing of the candidates (warm cycles/op; ratios vs {doc.get('reference')})")
    tt.add_column("id", no_wrap=True)
    tt.add_column("cycles/op avg", justify="right", no_wrap=True)
    tt.add_column("x ref", justify="right", no_wrap=True)
    tt.add_column("95% CI", justify="right", no_wrap=True, min_width=10)
    tt.add_column("cycles/op max", justify="right", no_wrap=True)
    legend: list[str] = []
    order = list(doc["ranking"])[:top]
    if ref and ref["id"] not in order:
        order.append(ref["id"])
    for n, cid in enumerate(order, 1):
        c = by_id[cid]
        a = c["aggregate"]
        row = [str(n) if n <= top and cid in doc["ranking"] else "ref"]
        if balanced:
            sc = a.get("balanced_score")
            row.append(f"{sc:.3f}" if isinstance(sc, (int, float)) and not isinstance(sc, bool) else "-")
        row += [c["id"], fmt_num(a.get("instr_per_op"))]
        if c["name"] != c["id"]:
            legend.append(f"{c['id']} = {c['name']}")
        if frozen:
            st_f = (c.get("frozen") or {}).get("status")
            row += [fmt_num(a.get("instr_per_op_frozen")) if st_f == "measured" else
                    "failed" if st_f == "failed" else "",
                    fmt_ratio(a.get("instr_ratio_ranked") if c.get("frozen_candidate") else a.get("instr_ratio"))]
        else:
            row += [fmt_ratio(a.get("instr_ratio"))]
        if timed and a.get("cycles_avg") is not None:
            tt.add_row(c["id"], fmt_num(a.get("cycles_avg")), fmt_ratio(a.get("cycles_ratio")),
                       fmt_interval(a.get("cycles_ratio_ci")) + tie_marker(a.get("cycles_ratio_ci"),
                                                                           a.get("cycles_tie")),
                       _max_text(a))
        row += [fmt_kib(a.get("min_arena")), fmt_kib(a.get("peak_footprint")), fmt_ratio(a.get("frag4")),
                ("D" if c["front"] else "") + ("F" if c.get("frozen_front") else "")
                + ("T" if c.get("timing_front") else "")]
        t.add_row(*row)
    console.print(t)
    if timed and tt.row_count:
        console.print(tt)
    if legend:
        console.print("ids: " + "; ".join(legend), soft_wrap=True, markup=False)
    ts = doc.get("timing_stats")
    for st_t in (ts if isinstance(ts, list) else [ts]):
        if not isinstance(st_t, dict):
            continue
        groups = st_t.get("groups") if isinstance(st_t.get("groups"), list) else []
        console.print(f"timing: {st_t.get('stop')}; 95% CI = paired interval of cycles/op against "
                      f"{st_t.get('reference')} ('=': it holds 1, not told apart; '~': it excludes 1 but the "
                      "Wilcoxon p >= 0.05, not told apart either; cycles/op max '*': every pass was preempted, "
                      "the maximum includes a preemption); groups that cannot be told apart: "
                      + " | ".join(", ".join(map(str, g)) if isinstance(g, list) else str(g) for g in groups),
                      soft_wrap=True, markup=False)
        noise = st_t.get("noise")
        if isinstance(noise, dict) and noise.get("warning"):
            console.print(f"WARNING: {noise['warning']}", style="bold red", soft_wrap=True, markup=False)
    console.print("instr/op: callgrind instructions per operation" + (" (runtime config; frozen: built frozen to it)"
                                                                      if frozen else "")
                  + "; peak fp: peak footprint; #4: fragmentation #4 (peak footprint / peak live)", markup=False)
    nfeas = sum(1 for c in doc["configs"] if c["feasible"])
    console.print(f"{nfeas} of {len(doc['configs'])} configs feasible; front (D = instructions vs memory, "
                  + ("F = frozen instructions vs memory among the re-measured candidates, " if frozen else "")
                  + f"T = cycles avg/max vs memory): {len(doc.get('front') or [])} / "
                  + (f"{sum(1 for c in doc['configs'] if c.get('frozen_front'))} / " if frozen else "")
                  + f"{len(doc.get('timing_front') or [])}")
    if frozen:
        med = fz.get("runtime_over_frozen_median")
        sec = fz.get("seconds") or {}
        b = fz.get("builds") or {}
        console.print(f"frozen: {len(fz.get('measured') or [])} of {len(fz.get('candidates') or [])} candidate(s) "
                      f"re-measured with dmm-replay built frozen to their config and ranked first, on these "
                      f"figures; runtime/frozen instr/op median {fmt_ratio(med)}; builds "
                      f"{b.get('built') or 0} built, {b.get('up_to_date') or 0} up to date, {b.get('failed') or 0} "
                      f"failed ({sec.get('build') or 0:.0f} s), {fz.get('callgrind_runs') or 0} callgrind run(s) + "
                      f"{fz.get('cache_hits') or 0} from the cache ({sec.get('count') or 0:.0f} s)")
        if fz.get("fallback"):
            console.print(f"[yellow]frozen figures missing for {', '.join(fz['fallback'])}: ranked on the runtime "
                          f"figure (see 'frozen' in the results)[/]")
    elif fz.get("reason"):
        console.print(f"frozen re-measurement off ({fz['reason']}): ranked on the runtime instruction counts")
    if doc.get("best"):
        b = by_id[doc["best"]]
        console.print(f"[bold]best[/] ({st['objective']}): {b['id']} = {b['name']}\n  config {b['config']}"
                      + (f"\n  behind pools: {b['alloc']}" if b.get("kind") == "pool" else ""),
                      soft_wrap=True)  # the config string is one token: copied, never wrapped
        if ref and ref["id"] != b["id"]:
            a, r = b["aggregate"], ref["aggregate"]
            if a.get("instr_source"):
                parts = [f"instructions/op ({a['instr_source']}) x{fmt_ratio(a.get('instr_ratio_ranked'))}"]
            else:
                parts = [f"instructions/op x{fmt_ratio(a.get('instr_ratio'))}"]
            if timed:
                parts.append(f"warm cycles/op x{fmt_ratio(a.get('cycles_ratio'))}"
                             + (f" ({fmt_num(a.get('cycles_avg'))} vs {fmt_num(r.get('cycles_avg'))})"
                                if a.get('cycles_avg') else ""))
                rc, bc = r.get("cycles_avg"), a.get("cycles_avg")
                if rc and bc:
                    parts.append(f"= {rc / bc:.2f}x fewer cycles")
            parts.append(f"{st['memory_metric']} x{fmt_ratio(a.get('memory_ratio'))}")
            console.print(f"  vs {ref['id']} (geometric means over the traces): " + ", ".join(parts))
    print_budget(doc)
