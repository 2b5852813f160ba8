"""The answer: one plain sentence per goal (speed, memory, worst case) from
compare results, explore results and the end-to-end check (the contract is
docs/frontend.md, "The answer").

Pure functions over the result documents, tested on hand-made fixtures.
Every figure a sentence carries is read from the documents (or derived from
their runs); a figure that is missing is unknown, and the sentence says so
instead of guessing.  A choice is only called better than what the program
uses today when the interval of its ratio excludes 1; otherwise the
sentence says the allocators cannot be told apart.
"""

from __future__ import annotations

import math
import shlex
from .compare import CompareOptions, paired_against
from .e2e import agreement
from .textfmt import fmt_ci, fmt_x
from .stats import ALPHA, MIN_SEPARABLE_PAIRS


GOALS = ("speed", "memory", "worst case")
METRICS = {"speed": "warm cycles/op (replay)", "memory": "peak footprint (replay)",
           "worst case": "warm maximum cycles/op (replay)"}
# a memory ratio within this distance of 1 is no change
MEMORY_TIE = 0.02


def _num(x) -> float | None:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def _ci(x) -> list[float] | None:
    if isinstance(x, (list, tuple)) and len(x) == 2:
        lo, hi = _num(x[0]), _num(x[1])
        if lo is not None and hi is not None:
            return [lo, hi]
    return None


def _join(names: list[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


# ---------------------------------------------------------------- compare ---

def _fp_ratio(compare: dict, lab: str, cur: str) -> tuple[float | None, bool | None]:
    """Peak footprint lab / cur: the compare field, else the geometric mean
    over the traces of the per-trace figures."""
    o = (compare.get("overall") or {}).get(lab) or {}
    r = _num(o.get("peak_footprint_ratio_geomean"))
    exact = o.get("memory_exact")
    summary = compare.get("summary") or {}
    if r is not None and cur == compare.get("baseline"):
        return r, exact if isinstance(exact, bool) else None
    logs, ex = [], True
    for per in summary.values():
        a, b = per.get(lab) or {}, per.get(cur) or {}
        fa, fb = _num(a.get("peak_footprint")), _num(b.get("peak_footprint"))
        if fa and fb and fa > 0 and fb > 0:
            logs.append(math.log(fa / fb))
            ex = ex and bool(a.get("memory_exact")) and bool(b.get("memory_exact"))
    if not logs:
        return None, None
    return math.exp(sum(logs) / len(logs)), ex


def _speed_figures(compare: dict, lab: str, cur: str, metric: str, caveats: set) -> dict:
    """ratio / ci / p of lab against cur on a timing metric (warm_avg or
    warm_max): the compare fields when they are relative to cur, else
    derived from the paired runs."""
    o = (compare.get("overall") or {}).get(lab) or {}
    base = compare.get("baseline")
    if lab == cur:
        return {"ratio": 1.0, "ci": [1.0, 1.0], "p": None}
    ratio = _num(o.get(f"{metric}_ratio_geomean"))
    ci = _ci(o.get(f"{metric}_ratio_ci"))
    p = _num(o.get(f"{metric}_ratio_p"))
    if cur == base and ratio is not None and ci is not None:
        return {"ratio": ratio, "ci": ci, "p": p}
    t2 = paired_against(compare, lab, cur, metric)
    if t2["ratio"] is not None:
        caveats.add("some intervals were computed by advise from compare's paired runs (the same bootstrap and "
                    "Wilcoxon test), as the compare results do not carry them against " + cur)
        return {"ratio": t2["ratio"], "ci": t2["ci"], "p": t2["p"]}
    if cur == base:
        return {"ratio": ratio, "ci": ci, "p": p}
    return {"ratio": None, "ci": None, "p": None}


def _confidence(ci: list[float] | None, p: float | None = None) -> str:
    """significant only when the interval excludes 1 and the Wilcoxon p (when
    known) is below 0.05: the tie rule of dmmkit.stats.paired_test."""
    if ci is None:
        return "unknown"
    if ci[0] <= 1.0 <= ci[1] or (p is not None and p >= 0.05):
        return "tie"
    return "significant"


# --------------------------------------------------------------- the goals ---

def _program_text(program: list[str] | None) -> str:
    return shlex.join(program) if program else "PROGRAM ARGS"


def _next(lab: str, kind: str, alloc: dict, program: list[str] | None, e2e: dict | None) -> str:
    if kind == "current":
        return "nothing to change" + (f": keep running {_program_text(program)}" if program else "")
    lib = None
    ent = ((e2e or {}).get("allocators") or {}).get(lab) or {}
    lib = ent.get("lib") or alloc.get("lib")
    if lib:
        return f"LD_PRELOAD={shlex.quote(str(lib))} {_program_text(program)}"
    spec = alloc.get("spec") or lab.removeprefix("dmm:")
    if kind == "pool":
        return f"dmmkit generate {shlex.quote(spec.split('heap=', 1)[-1] if 'heap=' in spec else 'tlsf')} " \
               "-o dmmkit-generated (the pool front is not generated; this builds its heap)"
    return f"dmmkit generate {shlex.quote(spec)} -o dmmkit-generated"


def _e2e_for(goal: str, lab: str, cur: str, e2e: dict | None, replay: dict) -> dict | None:
    if not e2e or e2e.get("skipped"):
        return None
    return agreement(e2e, goal, lab, cur, replay)


def _no_answer(goal: str, why: str, cur: str) -> dict:
    return {"goal": goal, "choice": None, "kind": None, "metric": METRICS[goal], "ratio": None, "ci": None,
            "confidence": "unknown", "ties": [], "memory_ratio": None, "memory_exact": None, "e2e": None,
            "next": None, "overruled": None, "sentence": f"For {goal} there is no answer: {why}."}


def _failed_allocations(compare: dict) -> dict[str, int]:
    """label -> allocations that failed on the traces (compare's overall
    "failed", else the per-trace summaries)."""
    out: dict[str, int] = {}
    for lab, o in (compare.get("overall") or {}).items():
        n = _num((o or {}).get("failed"))
        if n is None:
            n = sum(_num((per.get(lab) or {}).get("failed")) or 0 for per in (compare.get("summary") or {}).values())
        if n and n > 0:
            out[lab] = int(n)
    return out


def _e2e_ran(e2e: dict | None) -> bool:
    """Whether the end-to-end check ran the program (at least one good run)."""
    return bool(e2e) and not e2e.get("skipped") and \
        any((ent or {}).get("ok") for ent in (e2e.get("allocators") or {}).values())


def _not_backed(goal: str, choice: str, d: dict, e2e: dict | None) -> str | None:
    """Why a switch to `choice` is not backed by what was measured, or None.
    When the end-to-end check ran, a switch for speed needs the real
    program's wall time and a switch for memory its peak RSS to agree with
    the replay; without the check, approximate replay footprints alone never
    make a switch."""
    e = d.get("e2e")
    if _e2e_ran(e2e):
        if e is None:
            return f"the end-to-end check did not run the program under {choice}"
        if e.get("agrees") is False:
            return e.get("note") or "the end-to-end check disagrees"
        if e.get("agrees") is None and goal != "worst case":
            return "the end-to-end check cannot confirm it: " + (e.get("note") or "no paired figures")
        return None
    if goal == "memory" and d.get("confidence") != "significant":
        return "the replay footprint is approximate (what the process mapped) and no end-to-end check measured " \
               "the real peak RSS"
    return None


def _program_winner(goal: str, cur: str, e2e: dict | None, excluded: set) -> tuple[str, dict] | None:
    """The allocator that won on the real program for `goal` (speed: wall
    time told apart, interval below 1 and p < ALPHA; memory: peak RSS below
    1 - MEMORY_TIE with its interval below 1 when it has one), or None."""
    if goal not in ("speed", "memory") or not _e2e_ran(e2e):
        return None
    best = None
    for lab, ent in (e2e.get("allocators") or {}).items():
        if lab == cur or lab in excluded or not ent or not ent.get("ok") or ent.get("output_differs") \
                or ent.get("failed"):
            continue
        f = (ent.get("wall_ratio") if goal == "speed" else ent.get("rss_ratio")) or {}
        r, ci, p = _num(f.get("ratio")), _ci(f.get("ci")), _num(f.get("p"))
        if r is None:
            continue
        if goal == "speed":
            won = ci is not None and ci[1] < 1.0 and p is not None and p < ALPHA
        else:
            won = r < 1 - MEMORY_TIE and (ci is None or ci[1] < 1.0)
        if won and (best is None or r < best[1]["ratio"]):
            best = (lab, {"ratio": r, "ci": ci, "p": p})
    return best


def _overrule(d: dict, goal: str, why: str, cur: str, rows: dict, allocs: dict, known: list, compare: dict,
              e2e: dict | None, failed: dict) -> dict:
    """The replay's choice is not backed: keep the current allocator, or
    take the allocator that won on the real program; the replay's choice
    and the reason go under "overruled"."""
    over = {"label": d["choice"], "ratio": d["ratio"], "ci": d.get("ci"), "p": d.get("p"),
            "memory_exact": d.get("memory_exact") if goal != "memory" else
            (rows.get(d["choice"]) or {}).get("exact"), "e2e": d.get("e2e"), "why": why}
    excluded = set(failed) | {d["choice"]}
    win = _program_winner(goal, cur, e2e, excluded)
    d = dict(d, overruled=over, ties=[], best=None)
    if win is None:
        d.update(choice=cur, kind="current", ratio=1.0, ci=None, p=None, confidence="tie", memory_ratio=None,
                 memory_exact=None, e2e=None)
        return d
    lab, figs = win
    ent = (e2e.get("allocators") or {}).get(lab) or {}
    kind = (allocs.get(lab) or {}).get("kind") or ent.get("kind") or "system"
    row = rows.get(lab) or {}
    w, m = ent.get("wall_ratio") or {}, ent.get("rss_ratio") or {}
    d.update(choice=lab, kind=kind, ratio=row.get("ratio"), ci=row.get("ci"), p=row.get("p"),
             confidence="program", memory_ratio=None, memory_exact=None,
             e2e={"wall_ratio": w.get("ratio"), "wall_ci": w.get("ci"), "rss_ratio": m.get("ratio"),
                  "rss_ci": m.get("ci"), "agrees": None, "program_winner": True,
                  "note": f"chosen on the real program ({'wall time' if goal == 'speed' else 'peak RSS'})"})
    return d


def _goal(goal: str, compare: dict, cur: str, program, e2e, caveats: set) -> dict:
    allocs = {a.get("label"): a for a in compare.get("allocators") or [] if a.get("label")}
    labels = [lab for lab in allocs if lab in (compare.get("overall") or {})]
    if cur not in labels:
        return _no_answer(goal, f"{cur} (what the program uses today) is not in the compare results", cur)
    rows = {}
    for lab in labels:
        if goal == "memory":
            r, ex = _fp_ratio(compare, lab, cur) if lab != cur else (1.0, None)
            rows[lab] = {"ratio": r, "ci": None, "exact": ex}
        else:
            rows[lab] = _speed_figures(compare, lab, cur, "warm_avg" if goal == "speed" else "warm_max", caveats)
    # a configuration that failed allocations on the trace did not serve it:
    # its figures are of a different (smaller) workload, so it is neither
    # ranked nor tied
    # (counted beyond the current allocator's own failures: a request no
    # allocator can grant fails for every one)
    failed = {lab: n for lab, n in _failed_allocations(compare).items()}
    base_failed = failed.pop(cur, 0)
    failed = {lab: n for lab, n in failed.items() if n > base_failed}
    for lab in sorted(failed):
        if lab in labels:
            caveats.add(f"{lab} failed {failed[lab]} allocation(s) on the trace"
                        + (f" ({cur}: {base_failed})" if base_failed else "") + ": it is not ranked for any goal")
    known = [lab for lab in labels if rows[lab]["ratio"] is not None and (lab == cur or lab not in failed)]
    if len(known) < 2:
        return _no_answer(goal, f"the compare results hold no {METRICS[goal]} figures against {cur}", cur)
    best = min(known, key=lambda lab: rows[lab]["ratio"])
    mem = {lab: _fp_ratio(compare, lab, cur) if lab != cur else (1.0, None) for lab in known}

    if goal == "memory":
        r, exact = rows[best]["ratio"], rows[best]["exact"]
        ties = sorted((lab for lab in known if lab != best and abs(rows[lab]["ratio"] - r) <= MEMORY_TIE * r),
                      key=lambda lab: rows[lab]["ratio"])
        if best == cur or r >= 1 - MEMORY_TIE:
            conf = "tie"
        else:
            conf = "significant" if exact else "unknown"
        ci = None
    else:
        r, ci = rows[best]["ratio"], rows[best]["ci"]
        conf = _confidence(ci, rows[best].get("p")) if best != cur else "tie"
        groups = compare.get("groups") if goal == "speed" else None
        ties = []
        if isinstance(groups, list):
            for g in groups:
                if isinstance(g, list) and best in g:
                    ties = [lab for lab in g if lab != best]
        elif ci is not None:
            # no groups in the results: those whose paired ratio to the
            # choice has an interval that holds 1
            metric = "warm_avg" if goal == "speed" else "warm_max"
            for lab in known:
                if lab == best:
                    continue
                if paired_against(compare, lab, best, metric)["tie"] is True:
                    ties.append(lab)
        ties = [lab for lab in ties if lab in known]
        if cur in ties:
            conf = "tie"
    kind_of = lambda lab: "current" if lab == cur else (allocs[lab].get("kind") or "dmm")  # noqa: E731
    choice = best
    if conf == "tie":
        # nothing measurably better than today: keep it, name the others
        choice, kind = cur, "current"
    else:
        kind = kind_of(best)
    keep = choice == cur
    m_r, m_ex = mem.get(choice, (None, None)) if not keep else (None, None)
    # ratio / ci / p are choice over current: keeping the current allocator
    # is 1 by definition; the best measured rival's figures go under "best"
    d = {"goal": goal, "choice": choice, "kind": kind, "metric": METRICS[goal],
         "ratio": 1.0 if keep else rows[choice]["ratio"], "ci": None if keep else rows[choice].get("ci"),
         "p": None if keep else rows[choice].get("p"),
         "best": ({"label": best, "ratio": rows[best]["ratio"], "ci": rows[best].get("ci"), "p": rows[best].get("p"),
                   "memory_ratio": mem.get(best, (None, None))[0], "memory_exact": mem.get(best, (None, None))[1]}
                  if keep and best != cur else None),
         "confidence": conf, "ties": ties if not keep else [lab for lab in ([best] + ties) if lab != cur],
         "memory_ratio": m_r, "memory_exact": m_ex, "e2e": None, "next": None, "sentence": ""}
    d["overruled"] = None
    rival = d["best"] or d
    # the real program under the choice (or, when keeping today's allocator,
    # under its best rival); today's allocator against itself says nothing
    if (best if keep else choice) != cur:
        d["e2e"] = _e2e_for(goal, best if keep else choice, cur, e2e, {"ratio": rival["ratio"], "ci": rival["ci"],
                                                                       "confidence": conf})
    if not keep:
        why = _not_backed(goal, choice, d, e2e)
        if why:
            d = _overrule(d, goal, why, cur, rows, allocs, known, compare, e2e, failed)
    elif _program_winner(goal, cur, e2e, set(failed)):
        # the replay tells nothing apart, the real program does: its winner
        d = _overrule(d, goal, f"the replay did not tell the allocators apart from {cur}", cur, rows, allocs,
                      known, compare, e2e, failed)
    d["next"] = _next(d["choice"], d["kind"], allocs.get(d["choice"]) or {}, program, e2e)
    d["sentence"] = _sentence(d, cur, best, rows)
    if m_ex is False or (goal == "memory" and rows[best].get("exact") is False):
        caveats.add("footprint figures of system allocators are approximate (what the process mapped, not what the "
                    "allocator holds); the end-to-end peak RSS is the real-program check")
    return d


def _real_figs(e: dict | None, goal: str) -> str:
    """The real program's figure for a goal: "wall time 0.91x (95% CI ..)"
    or "peak RSS 1.13x"."""
    if not e:
        return ""
    if goal == "memory":
        r, ci = e.get("rss_ratio"), e.get("rss_ci")
        name = "peak RSS"
    else:
        r, ci = e.get("wall_ratio"), e.get("wall_ci")
        name = "wall time"
    if r is None:
        return ""
    return f"{name} {fmt_x(r)}" + (f" ({fmt_ci(ci)})" if ci else "")


def _overruled_sentence(d: dict, cur: str) -> str:
    goal, metric = d["goal"], d["metric"].replace(" (replay)", "")
    o = d["overruled"]
    approx = goal == "memory" and not o.get("memory_exact")
    rep = f"{o['label']} ({fmt_x(o['ratio'])} the {metric} of {cur} on the replay" + \
        (", approximate" if approx else "") + ")"
    if d["kind"] == "current":
        s = f"For {goal} keep {cur}: the replay's best, {rep}, is not backed: {o['why']}"
    elif o["label"] == cur:
        real = _real_figs(d.get("e2e"), goal)
        fig = rows_fig = d.get("ratio")
        iv = fmt_ci(d.get("ci"))
        s = (f"For {goal} use {d['choice']}, which won on the real program ({real} of {cur}'s); {o['why']}"
             + (f" ({d['choice']} {fmt_x(fig)} the {metric}" + (f", {iv}" if iv else "") + ")"
                if rows_fig is not None else ""))
    else:
        real = _real_figs(d.get("e2e"), goal)
        s = (f"For {goal} use {d['choice']}, which won on the real program ({real} of {cur}'s); the replay's best, "
             f"{rep}, is not backed: {o['why']}")
    return s + f". Next: {d['next']}."


def _sentence(d: dict, cur: str, best: str, rows: dict) -> str:
    if d.get("overruled"):
        return _overruled_sentence(d, cur)
    goal, metric = d["goal"], d["metric"].replace(" (replay)", "")
    fig = d.get("best") or d  # keeping the current allocator: the figures of the best rival
    ci = fmt_ci(fig["ci"])
    pv = fig.get("p")
    iv = (f" ({ci}" + (f", Wilcoxon p {pv:.2g}" if isinstance(pv, (int, float)) else "") + ")") if ci \
        else " (no interval)"
    if d["kind"] == "current":
        others = d["ties"]
        if not others or best == cur:
            s = f"For {goal} keep {cur}: nothing measured beats it"
        elif goal == "memory":
            s = (f"For {goal} keep {cur}: {_join(others)} {'is' if len(others) == 1 else 'are'} within "
                 f"{int(MEMORY_TIE * 100)}% of its peak footprint (best {best} {fmt_x(fig['ratio'])})")
        else:
            s = (f"For {goal} keep {cur}: {_join(others)} cannot be told apart from it; the best, {best}, has "
                 f"{fmt_x(fig['ratio'])} the {metric} of {cur}{iv}")
    else:
        ch = d["choice"]
        if d["confidence"] == "tie" or (d["ties"] and goal == "speed"):
            names = [ch] + d["ties"]
            lead = f"For {goal} {_join(names)} cannot be told apart; any of them: {ch} " if d["ties"] \
                else f"For {goal} {ch} may help but is not told apart from {cur}: "
        elif d["confidence"] == "unknown" and goal == "memory":
            lead = f"For {goal} {ch} measured smallest, but the figures are approximate: "
        elif d["confidence"] == "unknown":
            lead = f"For {goal} {ch} measured best, but the confidence is unknown (no interval): "
            iv = ""
        else:
            lead = f"For {goal} use {ch}: "
        if goal == "memory":
            s = lead + f"{fmt_x(d['ratio'])} the peak footprint of {cur}" + \
                ("" if d["memory_exact"] else " (approximate)")
        else:
            s = lead + f"{fmt_x(d['ratio'])} the {metric} of {cur}{iv}"
            if d["memory_ratio"] is not None:
                s += f", peak footprint {fmt_x(d['memory_ratio'])}" + ("" if d["memory_exact"] else " (approximate)")
    e = d.get("e2e")
    if e:
        parts = []
        if e.get("wall_ratio") is not None:
            parts.append(f"wall time {fmt_x(e['wall_ratio'])}" + (f" ({fmt_ci(e.get('wall_ci'))})"
                                                                  if e.get("wall_ci") else ""))
        if e.get("rss_ratio") is not None:
            parts.append(f"peak RSS {fmt_x(e['rss_ratio'])}")
        if parts:
            s += "; on the real program " + ", ".join(parts)
        if e.get("agrees") is False:
            s += f" - the end-to-end check disagrees: {e.get('note') or 'see e2e'}"
        elif e.get("agrees") is True:
            s += ", which agrees"
    return s + f". Next: {d['next']}."


def make_answer(compare: dict | None, explore: dict | None = None, e2e: dict | None = None,
                current: str | None = None, program: list[str] | None = None) -> dict:
    """The answer of docs/frontend.md: three goals, in order, each with its
    choice, ratio to the current allocator, interval, confidence, ties,
    memory cost, end-to-end figures, next command and sentence."""
    cur = current or (e2e or {}).get("current") or "glibc"
    program = program or (e2e or {}).get("program") or None
    caveats: set = set()
    trace = None
    if compare:
        tr = (compare.get("traces") or [{}])
        ops = None
        for per in (compare.get("runs") or {}).values():
            for rr in per.values():
                for r in rr or []:
                    if r and _num(r.get("ops")):
                        ops = int(r["ops"])
                        break
                if ops:
                    break
            break
        labels = [t.get("label") for t in tr if isinstance(t, dict) and t.get("label")]
        if len(labels) == 1:
            trace = {"label": labels[0], "ops": ops}
        elif labels:  # the ratios are geometric means over every trace, not one trace's figures
            trace = {"label": f"{len(labels)} traces ({', '.join(labels[:4])}{', ...' if len(labels) > 4 else ''}; "
                              "geometric mean)", "ops": None}
        noise = compare.get("noise") or {}
        if noise.get("warning"):
            caveats.add(str(noise["warning"]))
        reps = compare.get("reps_done")
        if isinstance(reps, int) and not isinstance(reps, bool) and 2 <= reps < CompareOptions.min_reps:
            if reps < MIN_SEPARABLE_PAIRS:
                caveats.add(f"compare ran {reps} repetitions: with fewer than {MIN_SEPARABLE_PAIRS} paired runs "
                            f"the Wilcoxon test cannot reach p < {ALPHA:g}, so no allocator can be told apart from {cur} "
                            "whatever its ratio; give it more (advise --budget-minutes, compare --reps)")
            else:
                caveats.add(f"compare ran {reps} repetitions, fewer than {CompareOptions.min_reps}: small differences "
                            "are likely to read as ties (advise --budget-minutes, compare --reps)")
        if compare.get("complete") is False:
            caveats.add("the compare run did not finish: " + str(compare.get("error") or "see its results file"))
    goals = []
    for g in GOALS:
        if not compare:
            goals.append(_no_answer(g, "no compare results", cur))
        else:
            goals.append(_goal(g, compare, cur, program, e2e, caveats))
    if explore:
        b = explore.get("best")
        if b and not any(g.get("choice") and b in str(g.get("choice")) for g in goals):
            caveats.add(f"explore's best config ({b}) ranks dmm configs against each other "
                        f"(reference {explore.get('reference')}), not against {cur}")
        budget = (explore.get("budget") or {}) if isinstance(explore.get("budget"), dict) else {}
        dropped = [d for d in budget.get("dropped") or [] if isinstance(d, dict)]
        # entries are per (config, trace): configs are counted once
        by_reason: dict[str, set] = {}
        for d in dropped:
            by_reason.setdefault(str(d.get("reason")), set()).add(d.get("id") or d.get("name"))
        screened = by_reason.pop("screen", set())
        if screened:
            caveats.add(f"explore measured {len(screened)} config(s) only on a prefix of the trace (screening: not "
                        "promising there)")
        why = {"relative": "more than --budget-relative times slower than the fastest",
               "budget": "over the per-config --budget", "time_limit": "stopped at the --time-limit"}
        if by_reason:
            caveats.add("explore dropped " + "; ".join(f"{len(ids)} config(s) {why.get(r, r)}"
                                                       for r, ids in sorted(by_reason.items()))
                        + " (budget.dropped in its results says which, on which trace and why)")
    if e2e:
        if e2e.get("skipped"):
            caveats.add("end-to-end check skipped: " + str(e2e["skipped"]))
        for lab, ent in (e2e.get("allocators") or {}).items():
            if ent.get("output_differs"):
                caveats.add(f"the program's output under {lab} differs from its output under {cur}")
            if ent.get("failed"):
                caveats.add(f"the program failed under {lab}: {ent['failed']}")
    return {"current": cur, "trace": trace, "program": list(program) if program else None, "goals": goals,
            "caveats": sorted(caveats)}


def print_answer(answer: dict, console=None) -> None:
    """The sentences, one per goal, and the caveats."""
    if console is None:
        from .ui import console
    console.print("[bold]answer[/] (what the program uses today: " + str(answer.get("current")) + ")")
    for g in answer.get("goals") or []:
        console.print("  " + g.get("sentence", ""), markup=False, soft_wrap=True)
    for c in answer.get("caveats") or []:
        console.print("  caveat: " + c, markup=False, soft_wrap=True)
