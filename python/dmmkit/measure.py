"""The measurements behind `explore`, as plain functions of plain dicts so
that any executor (threads, processes, Ray workers) can run them.

Deterministic figures, exact and repeatable:
  * `measure_memory`: the minimum arena (`dmm-replay --min-arena`,
    bisection), then one untimed replay for the peak footprint (the heap's
    extent high-water), fragmentation #3/#4, internal and external waste and
    failed allocations (a dmm heap reports them exactly);
  * `count_instructions`: instructions per operation, from ONE run of
    `valgrind --tool=callgrind` per trace and batch of configs:
    `dmm-replay --count-sweep` replays the trace once per config, collection
    is switched on only inside the allocator entry points the replayer calls
    (the heap's `dmm_allocator` functions, so the replayer's bookkeeping is
    not counted), and `--dump-after` writes one profile per config.
Timing figures (`measure_timing`): one `dmm-replay --reps 1` run (a cold
and a warm pass, TSC cycles per operation); the caller repeats and
interleaves them.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

from .errors import DmmkitError
from .memfig import replay_memory
from .schemas import REPLAY
from .validate import check_document, parse_json_text

# The heap's dmm_allocator entry points (src/heap/heap.c: a_malloc & co.).
# dmm_heap_malloc etc. are inlined into them in release builds, so these are
# the functions that exist in the dmm-replay binary.  Nested toggles would
# switch collection off again, so only the outermost names are listed.
CALLGRIND_TOGGLES = ("a_malloc", "a_free", "a_realloc", "a_calloc", "a_aligned")

MEASURE_VERSION = 3  # part of the cache key: bump when the figures change
SWEEP_MARK = "rpx_sweep_mark"  # dmm-replay --count-sweep calls it after each config


class TaskError(Exception):
    """A measurement that could not be made; the message says why."""


class BudgetExceeded(TaskError):
    """A measurement killed at its time budget (explore --budget / --time-limit);
    `seconds` is how long it ran."""

    def __init__(self, message: str, seconds: float = 0.0):
        super().__init__(message)
        self.seconds = seconds

    def __reduce__(self):  # crosses process pools and Ray workers with its seconds
        return (BudgetExceeded, (str(self), self.seconds))


# The subprocesses running now, so that an interrupted explore can end them
# at once instead of waiting for them (kill_running).
_RUNNING: set = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = threading.Event()  # set by kill_running: no new subprocess starts


def reset_stop() -> None:
    _STOPPING.clear()


def kill_running() -> int:
    """Kills every measurement subprocess of this process that is still
    running, and keeps new ones from starting (until reset_stop); returns
    how many were killed."""
    _STOPPING.set()
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for p in procs:
        try:
            p.kill()
        except OSError:
            pass
    return len(procs)


def _run(cmd, timeout=3600, env=None):
    """Runs cmd, capturing its output; a run past `timeout` seconds is killed
    (BudgetExceeded)."""
    t0 = time.monotonic()
    if _STOPPING.is_set():
        raise TaskError("interrupted")
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    except FileNotFoundError as e:
        raise TaskError(f"cannot run {cmd[0]}: {e.strerror}") from e
    with _RUNNING_LOCK:
        _RUNNING.add(p)
    try:
        out, err = p.communicate(timeout=max(0.01, timeout))
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        took = time.monotonic() - t0
        raise BudgetExceeded(f"killed at its time budget after {took:.1f} s: {os.path.basename(cmd[0])}", took) \
            from None
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(p)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _remaining(item: dict, t0: float) -> float:
    """Seconds this task may still run: its budget (item["budget"], from t0)
    and the whole run's deadline (item["deadline"], time.time() based)."""
    left = 3600.0
    if item.get("budget"):
        left = min(left, item["budget"] - (time.monotonic() - t0))
    if item.get("deadline"):
        left = min(left, item["deadline"] - time.time())
    if left <= 0:
        raise BudgetExceeded("time budget used up", time.monotonic() - t0)
    return left


def _err(p) -> str:
    lines = [ln for ln in (p.stderr or "").splitlines() if ln.strip() and not ln.startswith("==")]
    return lines[-1].strip() if lines else f"exit status {p.returncode}"


def read_replay_json(path: str, trace: str, must: bool = True) -> dict | None:
    """dmm-replay's --json output for trace, read and checked
    (schemas.REPLAY).  None when the file is empty or missing; TaskError
    when it holds something else than dmm-replay output (must=False: None)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data.strip():
        return None
    where = f"dmm-replay's JSON output for {trace}"
    try:
        doc = parse_json_text(data, where)
        check_document(doc, REPLAY, where)
    except DmmkitError as e:
        if must:
            raise TaskError(e.message) from None
        return None
    return doc


def _replay(replay, trace, args, wrapper=(), timeout=3600):
    """One dmm-replay run with --json; returns (process, checked JSON or None)."""
    fd, tmp = tempfile.mkstemp(prefix="dmmkit-m-", suffix=".json")
    os.close(fd)
    try:
        p = _run([*wrapper, replay, trace, *args, "--json", tmp, "--quiet"], timeout=timeout)
        # a failed run may leave a partial file: its exit status says why
        return p, read_replay_json(tmp, trace, must=p.returncode == 0)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def callgrind_total(outfile: str, stderr: str) -> int | None:
    """Instructions collected, from callgrind's output file (totals: or
    summary: line), else from its 'Collected :' message."""
    try:
        with open(outfile) as f:
            tot = summ = None
            for ln in f:
                if ln.startswith("totals:"):
                    tot = int(ln.split()[1])
                elif ln.startswith("summary:"):
                    summ = int(ln.split()[1])
            if tot is not None:
                return tot
            if summ is not None:
                return summ
    except (OSError, ValueError, IndexError):
        pass
    m = re.search(r"Collected\s*:\s*(\d+)", stderr or "")
    return int(m.group(1)) if m else None


def _misuse_reports(alloc: dict):
    """The heap's misuse reports, plus the pools' for a pool front."""
    he, pe = alloc.get("heap_errors"), (alloc.get("pool") or {}).get("pool_errors")
    return he if pe is None else (he or 0) + pe


def alloc_arg(spec: str) -> str:
    """dmm-replay's --alloc for a spec: a heap config gets "dmm:", a
    `dmm:...`, `pool:...` or `multiheap:...` spec is taken as it is."""
    return spec if spec.startswith(("dmm:", "pool:", "multiheap:")) else "dmm:" + spec


def measure_memory(item: dict) -> dict:
    """Memory figures of one (trace, config), natively: the minimum arena
    (dmm-replay --min-arena) and one untimed replay for footprint,
    fragmentation and failures.  item: replay, trace, spec, arena (None =
    chosen here: room for the trace even where a multi-threaded interleaving
    needs more than the sequential minimum), ops (replay only that prefix of
    the trace), budget (seconds for the whole task: a replay still running
    then is killed, BudgetExceeded), deadline (time.time() of the whole
    run's end).  Raises TaskError.  The result has "seconds" (the task) and
    "replay_seconds" (the one untimed replay: how slow the config is)."""
    t0 = time.monotonic()
    replay, trace, spec = item["replay"], item["trace"], item["spec"]
    alloc = ["--alloc", alloc_arg(spec)]
    if item.get("ops"):
        alloc += ["--ops", str(int(item["ops"]))]
    out: dict = {"spec": spec, "measure_version": MEASURE_VERSION}

    p, ma = _replay(replay, trace, [*alloc, "--min-arena"], timeout=_remaining(item, t0))
    if p.returncode != 0 or ma is None:
        raise TaskError(f"dmm-replay --min-arena failed for {alloc_arg(spec)} on {trace}: {_err(p)}")
    mi = ma.get("min_arena") or {}
    tr = ma.get("trace") or {}
    out["ops"] = tr.get("ops")
    out["threads"] = tr.get("threads")
    out["peak_live"] = tr.get("peak_live")
    out["trace_hash"] = tr.get("hash")
    out["min_arena_found"] = bool(mi.get("found"))
    out["min_arena"] = mi.get("bytes") if mi.get("found") else None
    out["min_arena_replays"] = mi.get("replays")
    out["min_arena_search"] = mi.get("search") or "bisect"
    out["ops_in_file"] = tr.get("ops_in_file")
    out["prefix"] = bool(tr.get("prefix"))
    out["config"] = (ma.get("allocator") or {}).get("config")
    out["machine"] = ma.get("machine")
    out["build"] = ma.get("build")

    peak = int(out["peak_live"] or 0)
    arena = item.get("arena")
    if not arena:
        arena = _round_up(max(4 * peak, 1 << 20, 2 * int(out["min_arena"] or 0)), 4096)
    for attempt in range(2):
        t1 = time.monotonic()
        p, d = _replay(replay, trace, [*alloc, "--arena", str(arena), "--no-timing", "--no-warm"],
                       timeout=_remaining(item, t0))
        out["replay_seconds"] = round(time.monotonic() - t1, 3)
        if p.returncode != 0 or d is None:
            raise TaskError(f"dmm-replay failed for {alloc_arg(spec)} on {trace}: {_err(p)}")
        if (d.get("failed") or 0) > 0 and attempt == 0 and not item.get("arena"):
            arena = _round_up(arena * 4, 4096)  # the interleaving needed more room: once more
            continue
        break
    out["arena"] = arena
    mem = d.get("memory") or {}
    frag = d.get("fragmentation") or {}
    hs = mem.get("heap_stats") or {}
    out.update({
        "failed": d.get("failed"),
        "skipped": d.get("skipped"),
        "heap_errors": _misuse_reports(d.get("allocator") or {}),
        "peak_footprint": mem.get("peak_footprint"),
        "footprint_at_peak_live": frag.get("footprint_at_peak_live"),
        "frag3": frag.get("frag3"),
        "frag4": frag.get("frag4"),
        "internal_waste": frag.get("internal_waste"),
        "external_waste": frag.get("external_waste"),
        "metadata": frag.get("metadata"),
        "search_steps": hs.get("search_steps"),
        "search_max": hs.get("search_max"),
    })
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def count_instructions(item: dict) -> list[dict]:
    """Instructions spent in the allocator for each (arena, config) of
    item["lines"] on one trace, with ONE valgrind run: dmm-replay
    --count-sweep replays the trace once per config (sequentially, in trace
    order) and callgrind writes one profile per config (--dump-after).
    Returns [{"instructions": n or None, "failed": k, "error": msg or None}].
    item["ops"]: only that prefix of the trace; item["budget"] / "deadline":
    as for measure_memory (the valgrind run is killed, BudgetExceeded)."""
    t0 = time.monotonic()
    lines = item["lines"]
    d = tempfile.mkdtemp(prefix="dmmkit-cg-")
    try:
        cfgfile = os.path.join(d, "configs.txt")
        with open(cfgfile, "w") as f:
            for arena, cfg in lines:
                f.write(f"{int(arena)} {cfg}\n")
        out = os.path.join(d, "cg.out")
        cmd = [item["valgrind"], "--tool=callgrind", f"--callgrind-out-file={out}",
               *[f"--toggle-collect={t}" for t in CALLGRIND_TOGGLES], f"--dump-after={SWEEP_MARK}",
               item["replay"], item["trace"], "--count-sweep", cfgfile]
        if item.get("ops"):
            cmd += ["--ops", str(int(item["ops"]))]
        p = _run(cmd, timeout=_remaining(item, t0))
        if p.returncode != 0:
            raise TaskError(f"callgrind run failed on {item['trace']}: {_err(p)}")
        res = []
        status = {}
        for ln in p.stdout.splitlines():
            parts = ln.split(None, 2)
            if len(parts) >= 2 and parts[1].isdigit():
                status[int(parts[1])] = parts
        for i in range(1, len(lines) + 1):
            st = status.get(i)
            if not st:
                res.append({"instructions": None, "failed": None, "error": "no answer from --count-sweep"})
                continue
            if st[0] != "ok":
                res.append({"instructions": None, "failed": None, "error": st[2] if len(st) > 2 else "error"})
                continue
            n = callgrind_total(f"{out}.{i}", "")
            res.append({"instructions": n, "failed": int(st[2]) if len(st) > 2 else None,
                        "error": None if n is not None else "callgrind wrote no profile"})
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def measure_deterministic(item: dict) -> dict:
    """Both kinds for one (trace, config) (used when a single measurement is
    wanted; explore batches the instruction counts per trace instead)."""
    out = measure_memory(item)
    if item.get("valgrind"):
        r = count_instructions({"replay": item["replay"], "trace": item["trace"], "valgrind": item["valgrind"],
                                "lines": [(out["arena"], item["spec"])]})[0]
        if r["error"]:
            raise TaskError(r["error"])
        out["instructions"] = r["instructions"]
        out["instr_per_op"] = r["instructions"] / out["ops"] if out.get("ops") else None
    return out


def _kind(pass_, name="all"):
    if not pass_:
        return {}
    return (pass_.get("kinds") or {}).get(name) or {}


def measure_timing(item: dict) -> dict:
    """item: replay, trace, args (allocator args), env (dict or None), arena
    (int or None), budget / deadline (as for measure_memory).  One cold and
    one warm pass; cycles per operation."""
    args = list(item["args"]) + ["--reps", "1"]
    if item.get("arena"):
        args += ["--arena", str(item["arena"])]
    if item.get("hist"):
        args += ["--hist"]
    env = None
    if item.get("env"):
        env = dict(os.environ)
        env.update(item["env"])
    t0 = time.monotonic()
    fd, tmp = tempfile.mkstemp(prefix="dmmkit-t-", suffix=".json")
    os.close(fd)
    try:
        p = _run([item["replay"], item["trace"], *args, "--json", tmp, "--quiet"], env=env,
                 timeout=_remaining(item, t0))
        d = read_replay_json(tmp, item["trace"], must=p.returncode == 0)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    if p.returncode != 0 or d is None:
        raise TaskError(_err(p))
    return timing_figures(d)


def timing_figures(d: dict) -> dict:
    """The timing and memory figures of one (checked) dmm-replay JSON.  A
    memory figure that is not exact (memfig) carries memory_exact false, and
    no fragmentation ratio."""
    t = d.get("timing") or {}
    cold, warm = t.get("cold") or {}, t.get("warm") or {}
    mem = d.get("memory") or {}
    frag = d.get("fragmentation") or {}
    al = d.get("allocator") or {}
    out = {
        "cold_avg": _kind(cold).get("avg"), "cold_p50": _kind(cold).get("p50"), "cold_p99": _kind(cold).get("p99"),
        "cold_max": _kind(cold).get("max"),
        "warm_avg": _kind(warm).get("avg"), "warm_p50": _kind(warm).get("p50"), "warm_p99": _kind(warm).get("p99"),
        "warm_max": _kind(warm).get("max"),
        "cold_wall_ns": cold.get("wall_ns"), "warm_wall_ns": warm.get("wall_ns"),
        "preemptions": (cold.get("involuntary_ctx_switches") or 0) + (warm.get("involuntary_ctx_switches") or 0),
        "cold_preemptions": cold.get("involuntary_ctx_switches"),
        "warm_preemptions": warm.get("involuntary_ctx_switches"),
        "ticks_per_sec": t.get("ticks_per_sec"),
        "failed": d.get("failed"),
        "peak_footprint": mem.get("peak_footprint"),
        "frag4": frag.get("frag4"),
        "frag3": frag.get("frag3"),
        "rss_peak_pass": (mem.get("rss") or {}).get("peak_pass"),
        "baseline_footprint": (mem.get("baseline") or {}).get("footprint"),
        "detected": al.get("detected"),
        "malloc_object": al.get("malloc_object"),
        "verify": d.get("verify"),
    }
    out.update(replay_memory(d))
    if not out["memory_exact"]:
        out["frag3"] = out["frag4"] = None
    for k in ("malloc", "free", "realloc", "calloc", "aligned"):
        w = _kind(warm, k)
        if w.get("count"):
            out[f"warm_{k}_avg"] = w.get("avg")
            out[f"warm_{k}_max"] = w.get("max")
    if t.get("histograms"):
        out["histograms"] = t["histograms"]
    return out


def find_valgrind() -> str | None:
    return shutil.which("valgrind")


def finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))
