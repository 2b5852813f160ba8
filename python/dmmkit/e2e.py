"""The end-to-end check: the real program under each candidate allocator.

Replay figures say how an allocator serves a recorded trace; what a user
finally cares about is the program itself.  So, after the replay
comparison, the program runs as a whole process under each candidate (the
system allocators and any built dmm library by LD_PRELOAD, the current
allocator as it is), repeated and interleaved round-robin (repetition r
starts with candidate r mod n), with the wall time and peak RSS of every
run (dmmkit.procs.run_process: GNU time's ru_maxrss when installed).

Each candidate's figures are divided by the current allocator's figures of
the same round (paired ratios): their geometric mean, 95% bootstrap
interval and Wilcoxon p (dmmkit.stats.paired_test, as compare does); a
difference counts only where the test says so (interval excluding 1 and
p < 0.05).  The
program's standard output must be the same under each allocator; a
difference is reported, not hidden.  `agreement` then says, per goal,
whether the replay's verdict holds on the real program.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table
from scipy import stats as _st

from .textfmt import fmt_ci, fmt_x
from .stats import paired_test
from .stats import summarize
from .procs import failure_text, rss_method, run_process

MIN_REPS = 9  # the timing figures' minimum (fewer cannot reach p < 0.05 with room to spare)
# a memory ratio within this distance of 1 is no change (as in answer)
RSS_TIE = 0.02


@dataclass
class Candidate:
    label: str               # as in compare ("glibc", "mimalloc", "dmm:tlsf", ...)
    lib: str | None          # LD_PRELOAD library; None: the program as it is
    kind: str = "system"     # "system", "dmm" (a generated .so), "peer", "current"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _ratio_figs(vals: list, base: list) -> dict:
    """The paired figures of one allocator's runs against the current
    allocator's (by round): stats.paired_test, as compare and explore do."""
    t = paired_test(vals, base)
    return {"ratio": t["ratio"], "ci": t["ci"], "p": t["p"], "n": t["n"]}


def run_e2e(program: list[str], candidates: list[Candidate], current: str = "glibc", reps: int = MIN_REPS,
            timeout: float = 600.0, deadline: float | None = None, on_run=None, cwd: str | None = None,
            min_rounds: int = 1) -> dict:
    """Runs the program reps times under every candidate (interleaved) and
    returns the e2e figures (the "e2e" object of advise.json).  With a
    deadline (time.monotonic()), no new round starts that would end after
    it (by the last round's duration); at least min_rounds rounds always
    run.  on_run(done, total, label) reports progress.  A
    KeyboardInterrupt keeps the rounds finished so far (interrupted: true)
    and is raised again by the caller's choice (see advise)."""
    labels = [c.label for c in candidates]
    if current not in labels:
        raise ValueError(f"the current allocator {current} is not among the candidates")
    runs: dict[str, list] = {c.label: [] for c in candidates}
    order_log = []
    total = reps * len(candidates)
    done = 0
    interrupted = False
    stopped = None
    last = 0.0
    try:
        for rep in range(reps):
            if deadline is not None and rep >= max(1, min_rounds) and time.monotonic() + last > deadline:
                stopped = f"the time budget ran out after {rep} repetition(s)"
                break
            t_round = time.monotonic()
            k = rep % len(candidates)
            order = candidates[k:] + candidates[:k]
            order_log.append([c.label for c in order])
            for c in order:
                code, so, se, wall, rss, to = run_process(program, c.lib, timeout, cwd=cwd)
                fail = failure_text(code, se, so, to, timeout)
                runs[c.label].append({"rep": rep, "wall_s": wall, "rss_kb": rss, "exit": code, "failed": fail,
                                      "stdout_sha": _sha(so), "stdout_bytes": len(so.encode("utf-8", "replace"))})
                done += 1
                if on_run:
                    on_run(done, total, c.label)
            last = time.monotonic() - t_round
    except KeyboardInterrupt:
        interrupted = True
    doc = summarise_e2e({"program": list(program), "current": current, "reps": reps, "order": order_log,
                         "rss_method": rss_method(), "runs": runs,
                         "candidates": [{"label": c.label, "lib": c.lib, "kind": c.kind} for c in candidates]})
    doc["interrupted"] = interrupted
    doc["stopped"] = stopped
    return doc


def summarise_e2e(doc: dict) -> dict:
    """Fills doc["allocators"] from doc["runs"]: per candidate the wall time
    and peak RSS summaries, paired ratios to the current allocator (only
    rounds where both runs succeeded), whether the output matched, and the
    first failure.  Pure (tested on hand-made runs)."""
    cur = doc["current"]
    runs = doc["runs"]
    base = {r["rep"]: r for r in runs.get(cur) or [] if not r.get("failed")}
    ref_out = next((r["stdout_sha"] for r in runs.get(cur) or [] if not r.get("failed")), None)
    out = {}
    for c in doc.get("candidates") or [{"label": k, "lib": None} for k in runs]:
        lab = c["label"]
        rr = runs.get(lab) or []
        ok = [r for r in rr if not r.get("failed")]
        pairs = [(r, base[r["rep"]]) for r in ok if r["rep"] in base]
        differs = ref_out is not None and any(r.get("stdout_sha") != ref_out for r in ok)
        out[lab] = {
            "lib": c.get("lib"), "kind": c.get("kind"), "runs": len(rr), "ok": len(ok),
            "wall_s": summarize([r["wall_s"] for r in ok]),
            "rss_kb": summarize([r["rss_kb"] for r in ok]),
            "wall_ratio": _ratio_figs([a["wall_s"] for a, _ in pairs], [b["wall_s"] for _, b in pairs]),
            "rss_ratio": _ratio_figs([a["rss_kb"] for a, _ in pairs], [b["rss_kb"] for _, b in pairs]),
            "output_same": (not differs) if ok and ref_out is not None else None,
            "output_differs": bool(differs),
            "failed": next((r["failed"] for r in rr if r.get("failed")), None),
        }
    doc["allocators"] = out
    return doc


def agreement(e2e: dict, goal: str, label: str, current: str, replay: dict) -> dict | None:
    """Does the replay's verdict for `label` against `current` on `goal` hold
    on the real program?  replay: {"ratio", "ci", "confidence"} of the
    answer.  Returns the answer's per-goal "e2e" object, or None when the
    program did not run under `label`."""
    ent = (e2e.get("allocators") or {}).get(label)
    if not ent or not ent.get("ok"):
        return None
    w, m = ent.get("wall_ratio") or {}, ent.get("rss_ratio") or {}
    res = {"wall_ratio": w.get("ratio"), "wall_ci": w.get("ci"), "rss_ratio": m.get("ratio"),
           "rss_ci": m.get("ci"), "agrees": None, "note": None}
    if label == current:
        res["agrees"] = True
        return res
    if ent.get("output_differs"):
        res["agrees"] = False
        res["note"] = f"the program's output under {label} differs from its output under {current}"
        return res
    conf = replay.get("confidence")
    if goal == "worst case":
        res["note"] = "the end-to-end check measures wall time and peak RSS, not the slowest single operation"
        return res
    if goal == "speed":
        wr, wci, wp = w.get("ratio"), w.get("ci"), w.get("p")
        if wr is None:
            res["note"] = "no paired wall-time figures"
            return res
        # the tie rule of stats.paired_test: the interval AND the Wilcoxon p
        told_apart = wci and not (wci[0] <= 1 <= wci[1]) and wp is not None and wp < 0.05
        real = "unknown" if not wci else ("tie" if not told_apart else "faster" if wci[1] < 1 else "slower")
        rr = replay.get("ratio")
        rep_verdict = {"significant": "faster" if (rr or 1) < 1 else "slower", "tie": "tie"}.get(conf, "unknown")
        if real == "unknown" or rep_verdict == "unknown":
            res["note"] = "too few runs for an interval" if real == "unknown" else "the replay verdict is unknown"
            return res
        res["agrees"] = real == rep_verdict
        if not res["agrees"]:
            word = {"tie": f"not told apart from {current}"}
            res["note"] = (f"replay says {word.get(rep_verdict, rep_verdict)} ({fmt_x(rr)}), on the real program it "
                           f"is {word.get(real, real)} (wall {fmt_x(wr)}, {fmt_ci(wci)})")
            if rep_verdict == "faster" and real == "tie":
                res["note"] += ": the allocator is a small part of its run time"
        return res
    # memory
    rr, mr = replay.get("ratio"), m.get("ratio")
    if rr is None or mr is None:
        res["note"] = "no peak RSS figures"
        return res
    side = lambda x: "less" if x < 1 - RSS_TIE else "more" if x > 1 + RSS_TIE else "same"  # noqa: E731
    res["agrees"] = side(rr) == side(mr)
    if not res["agrees"]:
        res["note"] = f"replay footprint {fmt_x(rr)}, real peak RSS {fmt_x(mr)} of {current}'s"
        if side(mr) == "same":
            res["note"] += " (the program's RSS is not dominated by what this allocator holds)"
    return res


def ranking_check(e2e: dict, compare: dict | None) -> dict | None:
    """Spearman rank correlation (scipy.stats) between the replay's speed
    ratios and the real program's wall-time ratios over the allocators in
    both; None with fewer than three."""
    if not compare or not e2e:
        return None
    ov = compare.get("overall") or {}
    xs, ys, labs = [], [], []
    for lab, ent in (e2e.get("allocators") or {}).items():
        r = (ov.get(lab) or {}).get("warm_avg_ratio_geomean")
        w = (ent.get("wall_ratio") or {}).get("ratio")
        if lab == e2e.get("current"):
            w = 1.0
        if r is not None and w is not None:
            xs.append(r)
            ys.append(w)
            labs.append(lab)
    if len(xs) < 3:
        return None
    rho, p = _st.spearmanr(xs, ys)
    rho = None if rho is None or math.isnan(rho) else float(rho)
    return {"allocators": labs, "spearman": rho, "p": None if p is None or math.isnan(p) else float(p)}


def print_e2e(e2e: dict, compare: dict | None = None, console=None) -> None:
    """The real-program figures beside the replay's, one row per candidate."""
    if console is None:
        from .ui import console
    if e2e.get("skipped"):
        console.print(f"end-to-end check skipped: {e2e['skipped']}", markup=False)
        return
    cur = e2e["current"]
    ov = (compare or {}).get("overall") or {}
    base = (compare or {}).get("baseline")
    t = Table(title=f"end-to-end: {' '.join(e2e['program'])[:80]} ({len(e2e.get('order') or [])} interleaved "
                    f"round(s); ratios to {cur}, paired by round, 95% CI)")
    t.add_column("allocator")
    t.add_column("replay warm cyc/op" + (f" x {base}" if base else ""), justify="right")
    t.add_column("wall s (median)", justify="right")
    t.add_column("wall x " + cur, justify="right")
    t.add_column("peak RSS KiB", justify="right")
    t.add_column("RSS x " + cur, justify="right")
    t.add_column("output")
    for lab, ent in (e2e.get("allocators") or {}).items():
        w, m = ent.get("wall_ratio") or {}, ent.get("rss_ratio") or {}
        rep = (ov.get(lab) or {}).get("warm_avg_ratio_geomean")
        wm, rm = (ent.get("wall_s") or {}).get("median"), (ent.get("rss_kb") or {}).get("median")
        outtxt = ("failed: " + ent["failed"]) if ent.get("failed") and not ent.get("ok") else \
            "DIFFERS" if ent.get("output_differs") else "same" if ent.get("output_same") else "-"
        t.add_row(lab, fmt_x(rep) if rep is not None else "-", f"{wm:.3f}" if wm is not None else "-",
                  "1" if lab == cur else (fmt_x(w.get("ratio")) + (f" [{w['ci'][0]:.2f}-{w['ci'][1]:.2f}]"
                                                                    if w.get("ci") else "")),
                  f"{rm:.0f}" if rm is not None else "-",
                  "1" if lab == cur else fmt_x(m.get("ratio")), outtxt)
    console.print(t)
    rc = e2e.get("ranking_check")
    if rc and rc.get("spearman") is not None:
        console.print(f"replay vs real-program ranking: Spearman rho {rc['spearman']:.2f} over "
                      f"{len(rc['allocators'])} allocators", markup=False)


def skipped(note: str, program: list[str] | None = None, current: str = "glibc") -> dict:
    return {"program": list(program) if program else None, "current": current, "skipped": note, "allocators": {}}


def program_exists(program: list[str]) -> Path | None:
    import shutil
    if not program:
        return None
    p = program[0]
    if "/" in p:
        return Path(p) if Path(p).is_file() else None
    w = shutil.which(p)
    return Path(w) if w else None
