"""`dmmkit advise`: from a program (or a trace) to one answer per goal.

    dmmkit advise [OPTIONS] -- PROGRAM ARGS...     record, analyse, explore, compare, generate, e2e, answer
    dmmkit advise TRACE [--program "CMD"]          the same from a recorded trace (e2e only with --program)
    dmmkit advise --from RESULTS...                an answer from existing compare/explore results

Everything goes under one output directory (default ./dmmkit-advise):
PROGRAM.trace (named after the program), record.log, explore.json, compare.json, generated/ (the
chosen dmm config as an LD_PRELOAD library), report/, and advise.json
(schema dmmkit-advise/1: the answer, the e2e figures and the paths of the
other results).  advise.json is rewritten after every step, so an
interrupted or failed run keeps what was measured.

The time budget (--budget-minutes) is split between the steps: each step
gets a deadline (a share of the budget, plus what earlier steps left
unused) and sizes its work to it from a probe replay of the trace.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shlex
import signal as _signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from .procs import PY_HINT, python_hint, python_interpreter  # noqa: F401 (python_hint: part of advise's API)
from .cache import write_json_atomic
from .errors import BAD_INPUT, RUNTIME, DmmkitError
from .tools import Tools, validate_trace, warn_if_unoptimised
from .ui import console

SCHEMA = "dmmkit-advise/1"
BYTES_PER_OP = 64  # what dmm-replay holds in memory per operation, rounded up (the trace check)

# ---- the budget plan (docs/frontend.md, "The budget") ----
# The least each step needs, from the probe (one replay of the whole trace
# on the system allocator) and the recorded run's duration; what is left
# over is shared out by EXTRA_SHARES.  Every estimate has a margin for a
# machine busy with other work.
EXPLORE_MIN_S = 15.0       # explore on the window: >= 10 configs with full deterministic figures
COMPARE_MIN_ROUNDS = 2     # interleaved rounds of every allocator on the whole trace
COMPARE_MARGIN = 1.3       # a round costs n x probe x this
E2E_MARGIN = 1.2           # a run costs the recorded run x this
GENERATE_S = 30.0          # compiling a generated LD_PRELOAD library (cached by config hash: then about 0); the
                           # .so alone (preload_only) took 21 s with configuring at load 15, both libraries 35 s
REPORT_S = 4.0             # the answer, advise.json and the report without its heavy figures
REPORT_FULL_S = 60.0       # the report with latency, timeline and heap-map figures: 48 s measured on a 1.8M-op
                           # trace at load 13 (heap maps 28 s, latency panels 13 s); drawn only when this is left
PICTURES_BUDGET_S = 600.0  # compare takes pictures (timeline, heap maps) only for a budget of 10 min or more
E2E_FLOOR_ROUNDS = 3       # the end-to-end check's rounds when 6 (MIN_SEPARABLE_PAIRS) do not fit
E2E_FEW = 5                # its candidates when not even 3 rounds of all of them fit
EXTRA_SHARES = {"explore": 0.50, "compare": 0.25, "e2e": 0.25}
# explore's window: the whole explore (24 configs: minimum arena, footprint,
# callgrind, timing) costs about this many replays of the window (measured
# 41 s for 20 configs on a 106k-op window whose replay took 0.13 s at load 8,
# about 330; raised to leave room for process start-ups at load 10; the
# default grid had 23 points then, one more since)
WINDOW_REPLAYS = 450
WINDOW_MIN_OPS, WINDOW_MAX_OPS = 20_000, 150_000


def plan_budget(left_s: float, probe_s: float, ops: int | None, n_compare: int, n_e2e: int, t_run: float | None,
                generate_cached: bool, skip: list[str], budget_minutes: float, used_s: float) -> dict:
    """Seconds for each step after the analysis (explore, compare, generate,
    e2e, report), the explore window's operations and the least the plan
    needs.  Pure (tested).  Raises DmmkitError naming the budget that would
    hold one round of every step when left_s cannot."""
    from .stats import MIN_SEPARABLE_PAIRS
    def least_of(e2e_rounds: int, cands: int) -> dict:
        return {"explore": 0.0 if "explore" in skip else EXPLORE_MIN_S,
                "compare": COMPARE_MIN_ROUNDS * n_compare * probe_s * COMPARE_MARGIN,
                "generate": 0.0 if "generate" in skip else (1.0 if generate_cached else GENERATE_S),
                "e2e": 0.0 if ("e2e" in skip or not t_run) else e2e_rounds * cands * max(0.005, t_run) * E2E_MARGIN,
                "report": REPORT_S}
    # the end-to-end check's least: the 6 rounds a Wilcoxon test needs to
    # separate wall times, of every candidate; when they do not fit, 3 rounds
    # (peak RSS still tells, wall time then cannot, and the answer keeps the
    # current allocator for speed); then 3 rounds of the E2E_FEW candidates
    # the answer can name (the current allocator, the replay's best for speed
    # and for memory, the generated library, libdmm).  A budget that holds
    # none is refused, naming the budget of the first.
    e2e_rounds, e2e_cands = MIN_SEPARABLE_PAIRS, n_e2e
    for e2e_rounds, e2e_cands in ((MIN_SEPARABLE_PAIRS, n_e2e), (E2E_FLOOR_ROUNDS, n_e2e),
                                  (E2E_FLOOR_ROUNDS, min(n_e2e, E2E_FEW))):
        need = least_of(e2e_rounds, e2e_cands)
        if sum(need.values()) <= left_s:
            break
    least = sum(need.values())
    if least > left_s:
        need = least_of(MIN_SEPARABLE_PAIRS, n_e2e)
        least = sum(need.values())
        total = used_s + least
        minutes = math.ceil(total / 60 * 1.15 * 2) / 2  # half-minutes, with room for a busy machine
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in need.items() if v)
        raise DmmkitError(f"the budget of {budget_minutes:g} min is too small for this trace and program: "
                          f"{used_s:.0f} s are used and one round of every step needs about {least:.0f} s more "
                          f"({parts}); --budget-minutes {minutes:g} would do", RUNTIME)
    extra = left_s - least
    alloc = dict(need)
    active = {k: v for k, v in EXTRA_SHARES.items() if need.get(k)}
    for k, share in active.items():
        alloc[k] += extra * share / sum(active.values())
    window = None
    if ops and "explore" not in skip:
        per_op = max(probe_s, 1e-3) / max(1, ops)
        window = int(min(WINDOW_MAX_OPS, max(WINDOW_MIN_OPS, alloc["explore"] / (WINDOW_REPLAYS * per_op))))
    return {"seconds": {k: round(v, 1) for k, v in alloc.items()}, "least": {k: round(v, 1) for k, v in need.items()},
            "left_s": round(left_s, 1), "window_ops": window, "e2e_rounds": e2e_rounds, "e2e_candidates": e2e_cands}

@dataclass
class AdviseOptions:
    program: list[str] = field(default_factory=list)
    trace: str | None = None
    from_results: list[str] = field(default_factory=list)
    outdir: str | None = None          # None: ./dmmkit-advise (with --from: print only)
    budget_minutes: float = 5.0
    current: str = "glibc"
    current_given: bool = True          # False: --current not given (--from then keeps the results' own)
    keep_going: bool = False           # use the trace of a program that failed while recorded
    e2e_reps: int = 9
    compare_reps: int | None = None    # None: from the budget
    allocators: str | None = None      # compare's list (None: compare's default list)
    skip: list[str] = field(default_factory=list)  # steps left out: explore, generate, e2e
    argv: list[str] = field(default_factory=list)


# ------------------------------------------------------------ interpreters ---

def _unwritten_traces(log: Path) -> list[str]:
    """The recorder's "(trace not written)" lines in record's log (each names
    the file and the cause)."""
    try:
        with open(log, errors="replace") as f:
            return [ln for ln in map(str.strip, f) if ln.endswith("(trace not written)")]
    except OSError:
        return []


# ------------------------------------------------------------------ driver ---

class _Run:
    """The state of one advise run: steps, deadlines, the results file."""

    def __init__(self, opts: AdviseOptions, steps: list[str]):
        self.opts = opts
        self.t0 = time.monotonic()
        self.budget = max(0.0, opts.budget_minutes * 60.0)
        self.steps = steps
        self.k = 0
        self.out = Path(opts.outdir or "dmmkit-advise")
        self.doc: dict = {"schema": SCHEMA,
                          "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                          "argv": opts.argv, "output_dir": str(self.out), "program": opts.program or None,
                          "trace": None, "current": opts.current,
                          "budget": {"minutes": opts.budget_minutes, "steps": {}},
                          "compare": None, "explore": None, "generated": None, "e2e": None, "report": None,
                          "answer": None, "notes": [], "complete": False}
        self.step_start = self.t0
        self.plan_from = self.t0  # when the plan starts (after the analysis)
        self.plan: dict | None = None  # plan_budget's result
        self.answer_notes: list[str] = []  # notes that are also caveats of the answer

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def step(self, name: str, what: str) -> None:
        self.k += 1
        self.step_start = time.monotonic()
        console.print(f"[bold]advise[/] step {self.k}/{len(self.steps)} [{self.elapsed():.0f} s]: {name} - {what}")

    def done(self, name: str) -> None:
        self.doc["budget"]["steps"][name] = round(time.monotonic() - self.step_start, 2)
        self.save()

    def deadline(self, name: str) -> float:
        """The monotonic time by which step `name` must end: the start of the
        plan plus the planned seconds of the steps up to and including it
        (time an earlier step leaves unused is handed on), and never later
        than what the least of the steps after it still needs allows."""
        if not self.plan:
            return self.t0 + self.budget
        secs, least = self.plan["seconds"], self.plan["least"]
        order = [s for s in PLANNED if s in secs]
        cum = sum(secs[s] for s in order[:order.index(name) + 1])
        after = sum(least[s] for s in order[order.index(name) + 1:])
        end = self.t0 + self.budget
        return min(self.plan_from + cum, end - after)

    def left(self, name: str) -> float:
        return self.deadline(name) - time.monotonic()

    def note(self, text: str) -> None:
        self.doc["notes"].append(text)
        console.print(f"[yellow]note[/]: {text}", soft_wrap=True)

    def save(self) -> None:
        self.doc["budget"]["used_s"] = round(self.elapsed(), 2)
        write_json_atomic(self.out / "advise.json", self.doc)


PLANNED = ("explore", "compare", "generate", "e2e", "report")


def _signal_name(rc: int) -> str | None:
    sig = -rc if rc < 0 else rc - 128 if 128 < rc < 160 else None
    if sig is None:
        return None
    try:
        return _signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _check_memory(trace: str, ops: int | None) -> None:
    """A trace whose replay would not fit in the available memory is refused
    with one message (before dmm-replay would be killed by the kernel)."""
    try:
        size = os.path.getsize(trace)
    except OSError:
        return
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for ln in f:
                if ln.startswith("MemAvailable:"):
                    avail = int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return
    need = max(size * 4, (ops or 0) * BYTES_PER_OP)
    if avail is not None and need > avail:
        raise DmmkitError(f"trace {trace} is too large for this machine's memory: replaying it needs about "
                          f"{need >> 20} MiB, {avail >> 20} MiB are available", BAD_INPUT)


def _check_requests(trace: str, analysis: dict) -> None:
    """A trace asking for one block larger than the machine's memory (a
    damaged or hostile trace: 2^63 bytes) is refused with one line: no
    allocator can grant it, so no advice can come from it (dmm-replay and
    compare replay it with that allocation failing)."""
    biggest = (analysis.get("sizes") or {}).get("max")
    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if isinstance(biggest, int) and phys > 0 and biggest > phys:
        raise DmmkitError(f"trace {trace} asks for a block of {biggest} bytes, more than this machine's memory "
                          f"({phys >> 20} MiB): no allocator can grant it, so there is nothing to advise on "
                          "(dmmkit compare replays it with that allocation failing)", BAD_INPUT)


def _trace_ops(analysis: dict) -> int | None:
    oc = analysis.get("op_counts") or {}
    try:
        return int(sum(v for k, v in oc.items() if k != "sync"))
    except (TypeError, ValueError):
        return None


def run_advise(tools: Tools | None, opts: AdviseOptions) -> dict:
    if opts.from_results:
        return advise_from(opts)
    if not opts.program and not opts.trace:
        raise DmmkitError("give a program after -- (dmmkit advise -- PROGRAM ARGS), a TRACE, or --from RESULTS")
    bad = [x for x in opts.skip if x not in ("explore", "generate", "e2e")]
    if bad:
        raise DmmkitError(f"--skip {bad[0]}: the steps that can be left out are explore, generate, e2e")
    if opts.budget_minutes <= 0:
        raise DmmkitError("--budget-minutes must be positive")
    if opts.program:
        from .e2e import program_exists
        if program_exists(opts.program) is None:
            raise DmmkitError(f"program not found: {opts.program[0]} (not a file, not on PATH)", BAD_INPUT)
    if opts.trace:
        validate_trace(tools, opts.trace)
    if tools is not None:
        warn_if_unoptimised(tools, "advise")
    steps = (["record"] if not opts.trace else []) + ["analyse", "explore", "compare", "generate", "e2e", "report"]
    r = _Run(opts, steps)
    try:
        r.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DmmkitError(f"cannot create {r.out}: {e.strerror}")
    console.print(f"[bold]advise[/]: results go to {r.out}/ (advise.json, compare.json, explore.json, report/); "
                  f"budget {opts.budget_minutes:g} min")
    try:
        return _advise(tools, r)
    except KeyboardInterrupt:
        r.doc["interrupted"] = True
        r.save()
        raise DmmkitError(f"interrupted after {r.elapsed():.0f} s; what was measured is kept in {r.out}/ "
                          "(advise.json lists it)", 130) from None
    except DmmkitError as e:
        r.doc["error"] = e.message
        r.save()
        if str(r.out) not in e.message:
            e.message += f" (what was measured is kept in {r.out}/)"
        raise


def _advise(tools: Tools, r: _Run) -> dict:
    opts, out = r.opts, r.out
    program = opts.program

    # ---- record -------------------------------------------------------------
    if not opts.trace:
        # named after the program, so tables and the report say whose trace it is
        stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", os.path.basename(program[0])) or "program"
        trace = str(out / f"{stem}.trace")
        env_note = ""
        saved = os.environ.get("PYTHONMALLOC")
        if python_interpreter(program) and saved != "malloc":
            os.environ["PYTHONMALLOC"] = "malloc"
            env_note = " with PYTHONMALLOC=malloc"
            r.note(f"{program[0]} is a Python interpreter: recording{env_note} ({PY_HINT})")
        r.step("record", f"{shlex.join(program)[:100]}{env_note} -> {trace} (the program's output: "
                         f"{out / 'record.log'})")
        from .procs import record_quietly
        try:
            if os.path.exists(trace):
                os.unlink(trace)
            t_rec = time.monotonic()
            rc = record_quietly(tools, Path(trace), program, out / "record.log")
            r.doc["record"] = {"exit": rc, "seconds": round(time.monotonic() - t_rec, 3),
                               "env": {"PYTHONMALLOC": "malloc"} if env_note else {}, "log": str(out / "record.log")}
        finally:
            if env_note:
                if saved is None:
                    os.environ.pop("PYTHONMALLOC", None)
                else:
                    os.environ["PYTHONMALLOC"] = saved
        has_trace = os.path.exists(trace) and os.path.getsize(trace) > 0
        if rc != 0:
            sig = _signal_name(rc)
            what = f"was killed by {sig}" if sig else f"exited with status {rc}"
            unwritten = _unwritten_traces(out / "record.log")
            if unwritten:  # record's status is 1 when a trace failed, even if the program succeeded
                what += (f" ({len(unwritten)} trace(s) not written, the first: {unwritten[0]})")
            if rc == 127 and not has_trace:
                raise DmmkitError(f"program not found or not executable: {program[0]} (see {out / 'record.log'})",
                                  BAD_INPUT)
            if not has_trace:
                raise DmmkitError(f"{program[0]} {what} while recorded and no trace was written "
                                  f"(its output: {out / 'record.log'})", RUNTIME)
            if not opts.keep_going:
                raise DmmkitError(f"{program[0]} {what} while recorded; the trace of what it did is kept in {trace} "
                                  f"(its output: {out / 'record.log'}); --keep-going advises on it anyway", RUNTIME)
            r.note(f"{program[0]} {what} while recorded; going on with the trace of what it did (--keep-going)")
        if not has_trace:
            raise DmmkitError(f"no trace was written for {program[0]} (statically linked, or it exits through "
                              f"_exit/abort); see {out / 'record.log'}", RUNTIME)
        validate_trace(tools, trace)
        r.doc["trace"] = {"path": trace}
        r.done("record")
    else:
        trace = opts.trace
        r.doc["trace"] = {"path": trace}
    r.plan_from = time.monotonic()

    # ---- analyse + probe ------------------------------------------------------
    r.step("analyse", f"request patterns of {trace}, one probe replay, the budget plan")
    from .analyse import analyse_json
    from .measure import TaskError, measure_timing
    analysis = analyse_json(tools, trace)
    ops = _trace_ops(analysis)
    _check_requests(trace, analysis)
    _check_memory(trace, ops)
    r.doc["trace"].update({"ops": ops, "threads": (analysis.get("threads") or {}).get("count"),
                           "peak_live": (analysis.get("peak") or {}).get("live_bytes")})
    console.print(f"  {ops} operations, peak live {(analysis.get('peak') or {}).get('live_bytes')} B")
    if program and ops is not None and ops < 10000 and python_interpreter(program):
        r.note(f"only {ops} operations recorded from a Python program")
    t = time.monotonic()
    try:
        measure_timing({"replay": str(tools.replay), "trace": trace, "args": ["--alloc", "system"], "env": None})
    except TaskError as e:
        raise DmmkitError(f"the probe replay of {trace} failed: {e}", RUNTIME)
    probe = max(0.01, time.monotonic() - t)
    r.doc["budget"]["probe_replay_s"] = round(probe, 3)

    # the plan: the least each step needs, from the probe; the rest shared out
    n_alloc = len(_compare_list(r.opts, with_best=True).split(","))
    t_run = None
    if program and "e2e" not in opts.skip:
        # one plain run sizes the end-to-end check (the recorded run is
        # slower: the recorder writes every operation)
        from .procs import run_process
        t_run = run_process(program, None, 600.0)[3]
        r.doc["budget"]["program_run_s"] = round(t_run, 3)
    from .allocators import SYSTEM_ALLOCATORS
    n_e2e = sum(1 for a in _compare_list(opts).split(",") if a in SYSTEM_ALLOCATORS) + 2  # + generated, libdmm
    gen_cached = False  # the config is chosen only after compare: a cached library cannot be counted on yet
    r.plan = plan_budget(r.budget - r.elapsed(), probe, ops, n_alloc, n_e2e, t_run if program else None,
                         gen_cached, opts.skip, opts.budget_minutes, r.elapsed())
    r.plan_from = time.monotonic()
    r.doc["budget"]["plan"] = r.plan
    console.print("  budget plan: " + ", ".join(f"{k} {v:.0f} s" for k, v in r.plan["seconds"].items())
                  + f" (of {r.plan['left_s']:.0f} s left; probe replay {probe:.2f} s)")
    r.done("analyse")

    # ---- explore ----------------------------------------------------------------
    r.step("explore", f"dmm configs on a window of the trace, within {max(0, r.left('explore')):.0f} s"
           if "explore" not in opts.skip else "skipped (--skip)")
    explore_doc = _explore(tools, r, trace, ops) if "explore" not in opts.skip else None
    r.done("explore")

    # ---- compare ----------------------------------------------------------------
    r.step("compare", "system allocators on this machine + dmm presets"
           + (" + explore's best" if _feasible_best(explore_doc) else "")
           + f", within {max(0, r.left('compare')):.0f} s")
    compare_doc = _compare(tools, r, trace, probe, explore_doc)
    if (r.doc.get("window") or {}).get("whole") is False:
        from .window import fidelity
        fid = fidelity(explore_doc, compare_doc)
        r.doc["window"]["fidelity"] = fid
        if fid:
            console.print(f"  window fidelity: Kendall tau {fid['kendall_tau_frag4']} (frag #4), "
                          f"{fid['kendall_tau_speed']} (speed) over {len(fid['configs'])} dmm configs measured on "
                          "both the window and the whole trace")
    r.done("compare")

    # ---- generate ---------------------------------------------------------------
    r.step("generate", "the chosen dmm config as an LD_PRELOAD library (cached by config)"
           if "generate" not in opts.skip else "skipped (--skip)")
    gen = _generate(tools, r, compare_doc, explore_doc) if "generate" not in opts.skip else None
    r.done("generate")

    # ---- e2e --------------------------------------------------------------------
    r.step("e2e", f"the real program under each candidate allocator, within {max(0, r.left('e2e')):.0f} s"
           if program else "skipped (no program)")
    e2e = _e2e(r, compare_doc, gen, t_run)
    r.done("e2e")

    # ---- answer + report ----------------------------------------------------------
    r.step("report", "the answer and the report")
    from .answer import make_answer, print_answer
    answer = make_answer(compare_doc, explore_doc, e2e, current=opts.current, program=program or None)
    for n in r.answer_notes:
        answer["caveats"] = sorted(set(answer["caveats"]) | {n})
    r.doc["answer"] = answer
    r.save()
    try:
        from .report import write_report
        # advise.json brings its answer (the summary card) and its compare / explore results files
        left = max(0.0, r.left("report"))
        light = left < REPORT_FULL_S
        if light:
            console.print(f"  the report without its latency, timeline and heap-map figures ({left:.0f} s left, they "
                          f"need about {REPORT_FULL_S:.0f} s): dmmkit report {out / 'advise.json'} draws them")
        rep = write_report([str(out / "advise.json")], str(out / "report"), light=light)
        r.doc["report_light"] = light
        r.doc["report"] = str(rep)
    except DmmkitError as e:
        r.note(f"report not written: {e.message}")
    r.doc["complete"] = True
    r.done("report")
    console.rule("answer")
    print_answer(answer)
    console.print(f"advise: done in {r.elapsed():.0f} s (budget {opts.budget_minutes:g} min); results: "
                  f"{out / 'advise.json'}" + (f", report: {r.doc['report']}" if r.doc.get("report") else ""))
    return r.doc


def _feasible_best(explore_doc: dict | None) -> str | None:
    """explore's best config when it has figures (None when explore measured nothing)."""
    if not explore_doc:
        return None
    b = explore_doc.get("best")
    ok = any(c.get("id") == b and c.get("feasible", True) for c in explore_doc.get("configs") or [])
    return b if b and ok else None


def _compare_list(opts: AdviseOptions, best: str | None = None, with_best: bool = False) -> str:
    from .compare import DEFAULT_ALLOCATORS
    allocs = opts.allocators or DEFAULT_ALLOCATORS
    if opts.current not in allocs.split(","):
        allocs += "," + opts.current
    if (best and best not in allocs.split(",") and best not in ("tlsf", "p2012", "dlmalloc")) or \
            (with_best and "explore" not in opts.skip):
        allocs += ",explore:best"  # explore's answer, measured beside what the program uses today
    return allocs


def _explore(tools: Tools, r: _Run, trace: str, ops: int | None) -> dict | None:
    """Explore on a bounded window of the trace (dmmkit.window), ranked by
    deterministic figures (instruction counts, minimum arena), within the
    step's deadline."""
    from .explore import Options, run_explore
    from .measure import find_valgrind
    from .window import make_window
    left = r.left("explore")
    instr = find_valgrind() is not None
    if not instr:
        r.note("explore without instruction counts (valgrind is not installed)")
    t0 = time.monotonic()
    win = make_window(tools, trace, str(r.out / "window.trace"), r.plan["window_ops"] if r.plan else
                      WINDOW_MAX_OPS, ops=ops)
    win["seconds"] = round(time.monotonic() - t0, 2)
    r.doc["window"] = win
    if not win["whole"]:
        console.print(f"  window: {win['ops']} of {win['trace_ops']} operations ({win['chunks']} evenly spaced "
                      f"slices, lifetimes kept; {win['seconds']:.1f} s) -> {win['path']}")
    left = r.left("explore")
    path = str(r.out / "explore.json")
    # no screening (the window is the bounded sample); a config may take an
    # eighth of the step, so a pathological one (an address-ordered list on
    # many live blocks) costs little; the pictures only when time is plenty
    opts = Options(traces=[win["path"]], grid="default", objective="speed", results=path, reps=None, max_reps=9,
                   timing_max=6, instructions=instr, frozen=False, pictures=False, cache_dir=str(r.out / "cache"),
                   time_limit=max(1.0, left), budget=max(2.0, min(30.0, left / 8)), screen_ops=None,
                   argv=r.opts.argv)
    try:
        doc = run_explore(tools, opts)
    except DmmkitError as e:
        if not os.path.exists(path):
            r.note(f"explore failed: {e.message}")
            doc = None
        else:
            r.note(f"explore: {e.message}")
            with open(path) as f:
                doc = json.load(f)
    if doc is not None:
        r.doc["explore"] = path
    if not _feasible_best(doc):
        text = (f"explore measured no dmm config within its {max(0.0, left):.0f} s; its time went to compare, "
                "generate and the end-to-end check (the dmm presets are compared, the fastest of them generated)")
        r.note(text)
        r.answer_notes.append(text)
        return doc
    n = sum(1 for c in doc.get("configs") or [] if c.get("feasible", True)
            and (c.get("aggregate") or {}).get("min_arena") is not None)
    console.print(f"  explore: {n} config(s) with full deterministic figures on the window")
    return doc


DMM_REPLAY_X = 4.0  # in advise's compare, one replay of a dmm allocator may take this many probe replays (at
                    # least 2 s); one slower is killed and left out: p2012 on the 1.8M-op Python trace took 31 and
                    # 43 s against the probe's 3.4 s (a 25k-op window had shown it only 1.9x dlmalloc's instructions)
HOPELESS_X = 3.0  # a dmm preset with this many times explore's best's instructions/op on the window (and no
                  # smaller minimum arena) is left out of advise's compare


def hopeless_presets(allocs: str, explore_doc: dict | None) -> dict[str, str]:
    """The dmm presets of compare's list (dmm:NAME) that explore's window
    shows cannot win either goal, each with the reason: HOPELESS_X times
    explore's best's instructions/op or more and no smaller minimum arena,
    or dropped by explore's relative or per-config budget (more than 10x
    slower, or over the per-config time, on the window).  Replayed on the
    whole trace such a preset costs many rounds' time (p2012 on a 1.8M-op
    Python trace: 18 s of a 21 s round), and the answer could not name it.
    Pure (tested)."""
    best_id = _feasible_best(explore_doc)
    if not best_id:
        return {}
    by_id = {c.get("id"): c for c in explore_doc.get("configs") or []}
    b = by_id[best_id].get("aggregate") or {}
    dropped = {d.get("id"): d for d in (explore_doc.get("budget") or {}).get("dropped") or []
               if d.get("reason") in ("relative", "budget")}
    out = {}
    for a in allocs.split(","):
        name = a[4:] if a.startswith("dmm:") else None
        if not name or name == best_id or name not in by_id:
            continue
        agg = by_id[name].get("aggregate") or {}
        ipo, arena = agg.get("instr_per_op"), agg.get("min_arena")
        if name in dropped:
            out[a] = f"explore dropped it on the window ({dropped[name].get('detail')})"
        elif ipo and b.get("instr_per_op") and ipo >= HOPELESS_X * b["instr_per_op"] and arena is not None \
                and b.get("min_arena") is not None and arena >= b["min_arena"]:
            out[a] = (f"{ipo:.0f} instructions/op on the window, {ipo / b['instr_per_op']:.1f}x explore's best "
                      f"({best_id}), and no smaller minimum arena")
    return out


def _compare(tools: Tools, r: _Run, trace: str, probe: float, explore_doc: dict | None) -> dict:
    from .compare import CompareOptions, run_compare
    allocs = _compare_list(r.opts, _feasible_best(explore_doc))
    if not r.opts.allocators:  # the default list only: a list the user gave is compared as given
        out = hopeless_presets(allocs, explore_doc)
        if out:
            allocs = ",".join(a for a in allocs.split(",") if a not in out)
            r.note("compare leaves out " + "; ".join(f"{a}: {why}" for a, why in out.items())
                   + " (it can win neither goal; its replays of the whole trace would take much of the budget)")
    n = len(allocs.split(","))
    left = r.left("compare")
    per_round = n * probe * COMPARE_MARGIN
    # pictures: untimed replays of every allocator on the whole trace, for figures the report draws only
    # when it has REPORT_FULL_S; with a short budget neither is affordable
    pictures = left > per_round * (COMPARE_MIN_ROUNDS + 4) and r.budget >= PICTURES_BUDGET_S
    rounds = int(left // per_round)
    reps = r.opts.compare_reps
    if reps is None and rounds < 9:
        r.note(f"compare: the budget allows about {max(COMPARE_MIN_ROUNDS, rounds)} repetitions, fewer than the 9 "
               "that can separate allocators reliably; the replay is likely to say 'tie' (raise --budget-minutes)")
    console.print(f"  up to {max(COMPARE_MIN_ROUNDS, min(30, rounds))} interleaved repetitions ({per_round:.1f} s per "
                  f"round estimated, {max(0, left):.0f} s for this step)")
    path = str(r.out / "compare.json")
    opts = CompareOptions(traces=[trace], allocators=[allocs], default_list=not r.opts.allocators, reps=reps,
                          min_reps=min(9, max(COMPARE_MIN_ROUNDS, rounds)), max_reps=30, baseline=r.opts.current,
                          results=path, pictures=pictures, deadline=r.deadline("compare"),
                          min_rounds=COMPARE_MIN_ROUNDS, dmm_replay_limit=max(2.0, DMM_REPLAY_X * probe),
                          explore_results=r.doc.get("explore") or "dmmkit-explore.json", argv=r.opts.argv)
    try:
        doc = run_compare(tools, opts)
    except DmmkitError:
        r.doc["compare"] = path if os.path.exists(path) else None
        raise
    r.doc["compare"] = path
    for d in doc.get("dropped") or []:
        r.note(f"compare left out {d['label']}: {d['why']}")
    return doc


def _generate_cache_dir(tools: Tools, config: str) -> Path:
    """Where a generated library of `config` is kept between runs: keyed by
    the config, the native tools' build and this front end's version
    ($DMMKIT_CACHE, else $XDG_CACHE_HOME/dmmkit, else ~/.cache/dmmkit)."""
    import hashlib
    from . import __version__
    base = os.environ.get("DMMKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dmmkit")
    key = hashlib.sha256(f"{config}\0{tools.build_id}\0{__version__}".encode()).hexdigest()[:16]
    return Path(base) / "generated" / key


def _generate(tools: Tools, r: _Run, compare_doc: dict, explore_doc: dict | None) -> list[dict]:
    """The chosen dmm config as an LD_PRELOAD library: explore's best when
    it was compared, else the fastest dmm config of the comparison (never
    one that failed allocations); from the cache when built before."""
    ov = compare_doc.get("overall") or {}
    base_failed = (ov.get(r.opts.current) or {}).get("failed") or 0
    dmm = [a for a in compare_doc.get("allocators") or [] if a.get("kind") == "dmm" and a.get("spec")]
    dmm = [a for a in dmm if (ov.get(a["label"]) or {}).get("warm_avg_ratio_geomean") is not None
           and ((ov.get(a["label"]) or {}).get("failed") or 0) <= base_failed]
    if not dmm:
        r.note("no dmm config to generate (none was compared without failed allocations)")
        return []
    b = _feasible_best(explore_doc)
    best = [a for a in dmm if a["label"].startswith("best:") or (b and a["label"] == f"dmm:{b}")]
    a = best[0] if best else min(dmm, key=lambda a: ov[a["label"]]["warm_avg_ratio_geomean"])
    out = [_generate_one(tools, r, a)]
    # the memory goal's dmm choice (smallest exact peak footprint) too, when
    # it is another config and there is time (or it is cached), so the
    # end-to-end check can back a memory switch to it
    fp = {x["label"]: _fp(compare_doc, x["label"]) for x in dmm}
    mem = [x for x in dmm if fp[x["label"]] is not None]
    if mem:
        m = min(mem, key=lambda x: fp[x["label"]])
        if m["spec"] != a["spec"]:
            cached = (_generate_cache_dir(tools, m["spec"]) / "dmmkit-generated.json").is_file()
            if cached or r.left("generate") > GENERATE_S:
                out.append(_generate_one(tools, r, m))
            else:
                r.note(f"the memory choice {m['label']} is not generated (no time left in this step): the "
                       "end-to-end check cannot back a memory switch to it")
    gens = [g for g in out if g]
    r.doc["generated"] = gens[0] if gens else None
    r.doc["generated_all"] = gens
    return gens


def _fp(compare_doc: dict, label: str) -> float | None:
    """The exact peak footprint of label on the (one) trace, else None."""
    for per in (compare_doc.get("summary") or {}).values():
        s = per.get(label) or {}
        if s.get("memory_exact") and isinstance(s.get("peak_footprint"), (int, float)):
            return float(s["peak_footprint"])
    return None


def _generate_one(tools: Tools, r: _Run, a: dict) -> dict | None:
    from .generate import generate
    cdir = _generate_cache_dir(tools, a["spec"])
    info_path = cdir / "dmmkit-generated.json"
    info = None
    if info_path.is_file():
        try:
            info = json.loads(info_path.read_text())
            if not Path(info.get("preload_library") or "").is_file():
                info = None
        except (OSError, ValueError):
            info = None
    cached = info is not None
    if not cached:
        try:
            info = generate(tools, a["spec"], str(cdir), preload_only=True)  # the e2e check needs only the .so
            write_json_atomic(info_path, info)
        except DmmkitError as e:
            r.note(f"generate {a['spec']} failed: {e.message}")
            return None
    console.print(f"  {a['label']} ({a['spec']}): {info.get('preload_library')}" + (" (cached)" if cached else ""))
    return {"label": a["label"], "spec": a["spec"], "dir": str(cdir), "preload_library": info.get("preload_library"),
            "config": info.get("config"), "cached": cached,
            "command": f"dmmkit generate {shlex.quote(a['spec'])} -o DIR"}


def _e2e(r: _Run, compare_doc: dict, gen: dict | None, t_run: float | None) -> dict:
    from .e2e import Candidate, print_e2e, ranking_check, run_e2e, skipped
    from .stats import MIN_SEPARABLE_PAIRS
    program = r.opts.program
    cur = r.opts.current
    if "e2e" in r.opts.skip:
        e = skipped("left out (--skip e2e)", program, cur)
        r.doc["e2e"] = e
        return e
    if not program:
        e = skipped("no program to run (advise TRACE: give --program \"CMD\" to run the end-to-end check)",
                    None, cur)
        r.doc["e2e"] = e
        console.print("  " + e["skipped"], markup=False)
        return e
    cands: list[Candidate] = []
    for a in compare_doc.get("allocators") or []:
        if a.get("kind") == "system":
            lib = a.get("lib")
            if a["label"] == cur:
                cands.insert(0, Candidate(a["label"], lib, "current"))
            else:
                cands.append(Candidate(a["label"], lib, "system"))
    if not any(c.label == cur for c in cands):
        raise DmmkitError(f"the current allocator {cur} is not a system allocator of the comparison", BAD_INPUT)
    for g in gen or []:
        if g.get("preload_library"):
            cands.append(Candidate(g["label"], g["preload_library"], "dmm"))
    from .allocators import find_libdmm
    lib, _ = find_libdmm()
    if lib is not None:
        cands.append(Candidate("libdmm", str(lib), "peer"))
    few = (r.plan or {}).get("e2e_candidates")
    if few and len(cands) > few:
        # the budget holds only the candidates the answer can name: the
        # current allocator, the generated libraries, libdmm, and the
        # replay's best system allocators for speed and for memory
        ov = compare_doc.get("overall") or {}
        keep = {cur} | {c.label for c in cands if c.kind in ("dmm", "peer")}
        sys_c = [c for c in cands if c.kind == "system"]
        for key in ("warm_avg_ratio_geomean", "peak_footprint_ratio_geomean"):
            known = [c for c in sys_c if (ov.get(c.label) or {}).get(key) is not None]
            if known and len(keep) < few:
                keep.add(min(known, key=lambda c: ov[c.label][key]).label)
        left_out = [c.label for c in cands if c.label not in keep]
        cands = [c for c in cands if c.label in keep]
        r.note(f"the end-to-end check runs {len(cands)} candidates, the ones the answer can name; the budget does "
               f"not hold {', '.join(left_out)} too (raise --budget-minutes)")
    if lib is None:
        r.note("libdmm.so is not built (cmake --build --preset release --target dmm_malloc_shared; scripts/main.sh "
               "builds it): the end-to-end check runs without it")
    t_run = max(0.005, t_run or 0.005)
    left = r.left("e2e")
    fit = int(left // (len(cands) * t_run * E2E_MARGIN))
    least = min(r.opts.e2e_reps, (r.plan or {}).get("e2e_rounds") or MIN_SEPARABLE_PAIRS)
    if least < MIN_SEPARABLE_PAIRS:
        r.note(f"the end-to-end check fits {least} rounds in the budget, fewer than the {MIN_SEPARABLE_PAIRS} a "
               "Wilcoxon test needs to tell wall times apart: it can back a memory switch (peak RSS), not a speed "
               "one (raise --budget-minutes)")
    reps = max(least, min(15, max(r.opts.e2e_reps, fit) if fit >= r.opts.e2e_reps else fit))
    console.print(f"  {len(cands)} allocators x up to {reps} interleaved repetitions (at least {least})")
    from .ui import progress
    with progress() as prog:
        task = prog.add_task("e2e runs", total=reps * len(cands))
        e = run_e2e(program, cands, current=cur, reps=reps, timeout=max(60.0, t_run * 20),
                    deadline=r.deadline("e2e"), min_rounds=least,
                    on_run=lambda d, t, lab: prog.update(task, completed=d, description=f"e2e: {lab}"))
    e["ranking_check"] = ranking_check(e, compare_doc)
    r.doc["e2e"] = e
    print_e2e(e, compare_doc)
    if e.get("interrupted"):
        r.save()
        raise KeyboardInterrupt
    return e


# -------------------------------------------------------------- from results ---

def advise_from(opts: AdviseOptions) -> dict:
    """An answer from existing results files: compare (the figures), explore
    (caveats), an advise.json (its e2e figures and program)."""
    from .schemas import COMPARE, EXPLORE
    from .validate import load_document
    compare = explore = e2e = None
    program = None
    paths: dict[str, str] = {}
    for p in opts.from_results:
        try:
            with open(p) as f:
                head = json.load(f)
        except FileNotFoundError:
            raise DmmkitError(f"{p}: no such file")
        except (OSError, ValueError) as e:
            raise DmmkitError(f"{p}: not a results file ({e})")
        if isinstance(head, dict) and head.get("schema") == SCHEMA:
            e2e = head.get("e2e")
            program = head.get("program")
            if not opts.current_given:  # answer against what that run compared with, not glibc by default
                own = head.get("current") or (e2e or {}).get("current")
                if isinstance(own, str) and own:
                    opts.current = own
            for key in ("compare", "explore"):
                q = head.get(key)
                if q and os.path.exists(q):
                    d = load_document(q, COMPARE if key == "compare" else EXPLORE)[1]
                    if key == "compare" and compare is None:
                        compare, paths["compare"] = d, q
                    elif key == "explore" and explore is None:
                        explore, paths["explore"] = d, q
            continue
        kind, d = load_document(p, (COMPARE, EXPLORE))
        if kind == COMPARE:
            if compare is not None:
                console.print(f"[yellow]note[/]: {p}: a second compare results file is left out", soft_wrap=True)
            else:
                compare, paths["compare"] = d, p
        elif explore is None:
            explore, paths["explore"] = d, p
        else:
            # a further explore (another trace set): its best config is not
            # the answer's, but what its budget dropped is still a caveat
            b0, b1 = explore.get("budget"), d.get("budget")
            if isinstance(b1, dict) and isinstance(b1.get("dropped"), list):
                b0 = dict(b0) if isinstance(b0, dict) else {}
                b0["dropped"] = list(b0.get("dropped") or []) + b1["dropped"]
                explore = {**explore, "budget": b0}
    if compare is None:
        raise DmmkitError("--from needs compare results (dmmkit compare --results FILE) or an advise.json")
    from .answer import make_answer, print_answer
    answer = make_answer(compare, explore, e2e, current=opts.current, program=program)
    print_answer(answer)
    doc = {"schema": SCHEMA, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "argv": opts.argv, "from": list(opts.from_results), "answer": answer, "complete": True,
           # the results the answer was made from, for `dmmkit report advise.json`
           "compare": os.path.abspath(paths["compare"]) if paths.get("compare") else None,
           "explore": os.path.abspath(paths["explore"]) if paths.get("explore") else None}
    if opts.outdir:
        Path(opts.outdir).mkdir(parents=True, exist_ok=True)
        write_json_atomic(Path(opts.outdir) / "advise.json", doc)
        console.print(f"results: {Path(opts.outdir) / 'advise.json'}")
    return doc
