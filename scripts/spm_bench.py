#!/usr/bin/env python3
"""scripts/spm_bench.py - the scratchpad heap's experiments (seed 000, section 8).

Runs the managed programs of bench/spm (spm_<prog>_{raw,spm,swc}) and writes
bench/results/spm_<experiment>.{json,md} (and .png when matplotlib is there).
Called by scripts/spm_bench.sh, which builds the programs first.

  fig8    rbTree from 1 to 65,536 nodes: the unmanaged program on a local heap
          of the seed's size (it runs out), the managed one with H ~ 150 KB and
          T = 4 KB (it does not)
  fig9    heap-region size sweep (a) and granularity sweep at H = 4 KB (b)
  table2  management share at Table I input sizes (8 KB heap, unit 256), the
          programs as dmm-spmcc builds them beside the hand-written ones,
          and where the management cycles go
  fig10   the overhead's growth with rbTree's size
  table3  dynamic vs static global memory (Table I input sizes)
  fig11   1..6 execution cores sharing one manager
  swc     every program on the software-cache baseline beside the heap
  rewrite the seven programs as dmm-spmcc rewrites them from the unmanaged
          sources beside the hand-written managed ones

Figures: the cycle model of scripts/spm_cycles.py (docs/spm.md, "The cycle
model") for Table II, Fig. 9, Fig. 10, Table III and the cache comparison:
program and library instructions counted by callgrind at one cycle each, the
host port's DMA emulation (its memcpy) and the core's side of the mailbox
emulation left out, and the cost model's cycles for every transfer and
mailbox word added.  Host wall-clock time is reported only where it is the
point (Fig. 8's capacity runs, Fig. 11's contention) and never added to
simulated cycles.  Table II reports the seed's metric (cycles inside the
management functions over all cycles) and, second, the slowdown against the
unmanaged program in the same model.
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm_cycles  # noqa: E402  (scripts/spm_cycles.py)

PROGRAMS = ["rbtree", "dijkstra", "fft", "fft_inv", "stringsearch", "dfs", "mst"]
FNS = ["malloc", "free", "realloc", "p2s", "s2p"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Runner:
    def __init__(self, bindir, reps, sizes, spmcc_dir=None):
        self.bindir = bindir
        self.spmcc_dir = spmcc_dir
        self.reps = reps
        self.sizes = sizes
        self.tmp = tempfile.mkdtemp(prefix="spm_bench_")
        # scratch JSON and callgrind files: gone when the run ends, however it ends
        atexit.register(shutil.rmtree, self.tmp, True)
        self.count = 0

    def base(self, prog, sizes):
        return list(self.sizes.get(prog, []) if sizes is None else sizes)

    def run(self, prog, backend, args, expect_ok=True, reps=None, timing=False, sizes=None):
        """One run; returns the parsed JSON (median host time over reps).
        timing: the library's per-function clocks on (two clock reads per
        call: they inflate the run time, so totals come from runs without)."""
        exe = os.path.join(self.bindir, "spm_%s_%s" % (prog, backend))
        cmd = [exe] + self.base(prog, sizes) + list(args) + ([] if timing else ["--no-timing"])
        docs = []
        for r in range(reps or self.reps):
            self.count += 1
            out = os.path.join(self.tmp, "r%d.json" % self.count)
            p = subprocess.run(cmd + ["--json", out], capture_output=True, text=True)
            if p.returncode != 0:
                if expect_ok:
                    raise SystemExit("spm_bench: %s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                                        p.stderr.strip()[-400:]))
                return {"failed": True, "exit_status": p.returncode, "stderr": p.stderr.strip()[-300:],
                        "cmd": " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}
            with open(out) as f:
                docs.append(json.load(f))
        docs.sort(key=lambda d: d["host_ns_total"])
        d = docs[len(docs) // 2]
        d["host_ns_reps"] = [x["host_ns_total"] for x in docs]
        d["cmd"] = " ".join([os.path.basename(exe)] + cmd[1:])
        return d

    def model(self, prog, backend, args, sizes=None):
        """One run under callgrind (deterministic: no repetitions); its JSON
        plus d["model"], the cycle model's figures (scripts/spm_cycles.py)."""
        exe = os.path.join(self.bindir, "spm_%s_%s" % (prog, backend))
        cmd = [exe] + self.base(prog, sizes) + list(args) + ["--no-timing"]
        self.count += 1
        out = os.path.join(self.tmp, "m%d.json" % self.count)
        dynamic = "--static" not in args and backend != "raw"
        prof = spm_cycles.callgrind(cmd + ["--json", out], os.path.join(self.tmp, "cg%d.out" % self.count), dynamic)
        with open(out) as f:
            d = json.load(f)
        m = spm_cycles.model(prof, backend, lib_cycles(d), dynamic)
        d["model"] = m
        d["cmd"] = " ".join(["valgrind --tool=callgrind", os.path.basename(exe)] + cmd[1:])
        return d

    def model_rewritten(self, prog, local, config, sizes=None, static=False):
        """The unmanaged program as dmm-spmcc rewrites it (tools/spmcc, built
        as spmcc_seed_<prog>_spm), one run under callgrind on one core with
        the given local memory and heap configuration (SPMCC_LOCAL,
        SPMCC_CONFIG); its statistics come from SPMCC_STATS."""
        exe = os.path.join(self.spmcc_dir, "spmcc_seed_%s_spm" % prog)
        cmd = [exe] + self.base(prog, sizes)
        env = dict(os.environ, SPMCC_LOCAL=str(local), SPMCC_CONFIG=config, SPMCC_STATS="1",
                   SPMCC_STATIC="1" if static else "0")
        self.count += 1
        prof = spm_cycles.callgrind(cmd, os.path.join(self.tmp, "cg%d.out" % self.count), not static,
                                    body_fn="spmcc_user_main", env=env)
        stats = next(json.loads(line) for line in prof.stderr.splitlines() if line.startswith('{"functions"'))
        d = {"per_core": [{"spm": stats}], "cmd": "SPMCC_LOCAL=%s SPMCC_CONFIG=%s%s valgrind --tool=callgrind %s %s" % (
            local, config, " SPMCC_STATIC=1" if static else "", os.path.basename(exe), " ".join(cmd[1:]))}
        d["model"] = spm_cycles.model(prof, "spm", lib_cycles(d), not static, body_fn="spmcc_user_main")
        return d


def local_for(h_kib, table=4096):
    """--local for a heap region of about h_kib KiB and a table of `table` bytes
    (plus 1.5 KiB for the control block: 1,952 bytes on x86-64 since it holds
    the hit path's 512-byte cache, the rest coming out of H as before)."""
    return str(h_kib * 1024 + table + 1536)


MIN_H = {}


def min_heap(R, prog, sizes=None):
    """The smallest heap region (KiB, T = 4 KB) that runs prog: its largest
    object plus the local heap's bookkeeping (the seed's Fig. 9a starts each
    program's sweep at its minimum)."""
    key = (prog, tuple(R.base(prog, sizes)))
    if key not in MIN_H:
        lo, hi = 1, 512
        while lo < hi:
            mid = (lo + hi) // 2
            d = R.run(prog, "spm", ["--local", local_for(mid), "--table", "4096"], expect_ok=False, reps=1,
                      sizes=sizes)
            if d.get("failed"):
                lo = mid + 1
            else:
                hi = mid
        MIN_H[key] = lo
    return MIN_H[key]


# The seed's Table I: the most heap data each program needs (bytes).  Table II
# and Table III run each program at the input size that needs about that much
# (table1_sizes); Fig. 8, 9, 10, 11 and the cache comparison keep the larger
# inputs of main()'s `sizes`.
TABLE1 = {"rbtree": 2476, "dijkstra": 5040, "fft": 16416, "fft_inv": 16416, "stringsearch": 4096,
          "dfs": 16000, "mst": 336}
# one scale parameter per program: (smallest, largest, arguments for it)
SCALE = {
    "rbtree": (1, 4096, lambda s: ["-n", str(s), "--ops", str(s)]),
    "dijkstra": (2, 300, lambda s: ["-n", str(s), "--sources", "4"]),
    "fft": (1, 10, lambda k: ["-n", str(1 << k), "-b", "4"]),
    "fft_inv": (1, 10, lambda k: ["-n", str(1 << k), "-b", "4"]),
    "stringsearch": (1, 60, lambda s: ["-n", "100", "-t", str(s), "--vocabulary", str(4 * s)]),
    "dfs": (1, 4000, lambda s: ["-n", str(s), "-r", "2"]),
    "mst": (2, 500, lambda s: ["-n", str(s), "-r", "2"]),
}
T1 = {}


def peak_heap(R, prog, sizes):
    """The most bytes prog has asked for at once (the unmanaged program on a
    large local dmm heap with full statistics: heap_peak_requested)."""
    d = R.run(prog, "raw", ["--local-heap", "64m"], reps=1, sizes=sizes)
    return core0(d)["heap_peak_requested"]


def table1_sizes(R, prog):
    """The input of prog sized to the seed's Table I: the largest value of
    its scale parameter whose peak heap data is at most TABLE1[prog].  When
    the smallest input already needs more (a fixed part: rbTree's 4 KiB key
    chunk, MST's per-round arrays), the bound is that fixed part plus
    TABLE1[prog].  Returns (arguments, peak bytes, bound)."""
    if prog not in T1:
        lo, hi, f = SCALE[prog]
        bound = max(TABLE1[prog], peak_heap(R, prog, f(lo)) + TABLE1[prog]
                    if peak_heap(R, prog, f(lo)) > TABLE1[prog] else 0)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if peak_heap(R, prog, f(mid)) <= bound:
                lo = mid
            else:
                hi = mid - 1
        T1[prog] = (f(lo), peak_heap(R, prog, f(lo)), bound)
    return T1[prog]


def core0(d):
    return d["per_core"][0]


def sim_cycles(d):
    return sum(c.get("port", {}).get("cycles", 0) for c in d["per_core"])


def lib_ns(d, fn=None):
    """The library's own host time, per function or in total (core 0)."""
    if "swc" in core0(d):  # the cache's stats: arrays by function (malloc, free, access)
        hs = core0(d)["swc"].get("host_ns", [])
        return sum(hs) if fn is None else 0
    fns = core0(d).get("spm", {}).get("functions", {})
    if fn is not None:
        return fns.get(fn, {}).get("host_ns", 0)
    return sum(v.get("host_ns", 0) for v in fns.values())


def lib_cycles(d):
    """The cost model's cycles charged inside the management functions (all
    cores): the per-function sim_cycles of the heap's or the cache's stats."""
    tot = 0
    for c in d["per_core"]:
        if "spm" in c:
            tot += sum(v.get("sim_cycles", 0) for v in c["spm"].get("functions", {}).values())
        elif "swc" in c:
            sc = c["swc"].get("sim_cycles", {})
            tot += sum(sc.values()) if isinstance(sc, dict) else sum(sc)
    return tot


def mcyc(d):
    return d["model"]["total_cycles"] / 1e6


def ms(ns):
    return ns / 1e6


def build_info(bindir):
    """Compiler, flags, CPU and valgrind of the measurement (the build's CMakeCache)."""
    info = {"compiler": "?", "flags": "?", "cpu": "?", "valgrind": "?"}
    d = os.path.abspath(bindir)
    while d != "/" and not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        d = os.path.dirname(d)
    cache = {}
    try:
        with open(os.path.join(d, "CMakeCache.txt")) as f:
            for line in f:
                if "=" in line and ":" in line.split("=", 1)[0]:
                    k, v = line.rstrip("\n").split("=", 1)
                    cache[k.split(":")[0]] = v
    except OSError:
        pass
    cc = cache.get("CMAKE_C_COMPILER", "cc")
    try:
        ver = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        ver = cc
    bt = cache.get("CMAKE_BUILD_TYPE", "")
    info["compiler"] = ver
    info["flags"] = (cache.get("CMAKE_C_FLAGS", "") + " " + cache.get("CMAKE_C_FLAGS_" + bt.upper(), "")).strip() \
        + (" (%s)" % bt if bt else "")
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    try:
        info["valgrind"] = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(head))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(out) + "\n"


def fmt(x, nd=2):
    return ("%." + str(nd) + "f") % x


# ---- experiments -------------------------------------------------------------------

def exp_fig8(R, a):
    ns = [1, 16, 256, 1024, 4096, 6800, 16384, 65536] if not a.quick else [1, 256, 4096, 16384]
    rows, recs = [], []
    # the seed: 241 KB shared by heap and stack, ~160 KB of heap reached before
    # the crash; H = 150 KB and T = 4 KB managed.
    raw_local = "160k"
    spm = ["--local", str(150 * 1024 + 4096 + 1024), "--table", "4096"]
    for n in ns:
        args = ["-n", str(n), "--ops", str(n)]
        raw = R.run("rbtree", "raw", args + ["--local-heap", raw_local], expect_ok=False)
        man = R.run("rbtree", "spm", args + spm)
        st = core0(man)["spm"]
        recs.append({"nodes": n, "raw": raw, "spm": man})
        rows.append([n, "fails (exit %d)" % raw["exit_status"] if raw.get("failed") else fmt(ms(raw["host_ns_total"]), 3),
                     fmt(ms(man["host_ns_total"]), 3), sim_cycles(man), st["unit_fetches"], st["page_fetches"]])
    # where the unmanaged program runs out: bisect n on the raw backend
    lo, hi = 1, 65536
    while lo < hi:
        mid = (lo + hi + 1) // 2
        d = R.run("rbtree", "raw", ["-n", str(mid), "--ops", str(mid), "--local-heap", raw_local], expect_ok=False)
        if d.get("failed"):
            hi = mid - 1
        else:
            lo = mid
    md = ("Unmanaged: rbTree's nodes from a dmm heap on a %s local buffer (the seed's SPE reached ~160 KB of heap "
          "before crashing at 6,800 nodes of 24 B; ours are 48 B). **Largest n that runs unmanaged: %d.** Managed: "
          "`%s` (H ~ 150 KB, T = 4 KB, 256 entries).\n\n" % (raw_local, lo, " ".join(spm)))
    md += ("Host ms are this machine's wall clock of the program body (the point here is which runs complete); "
           "DMA + mailbox cycles are the cost model's, reported beside it and not added to it.\n\n")
    md += md_table(["nodes", "unmanaged ms", "managed ms", "managed DMA + mailbox cycles", "unit fetches",
                    "table swaps"], rows)
    return {"unmanaged_limit": lo, "runs": recs}, md


def exp_fig9(R, a):
    progs = PROGRAMS if not a.quick else ["rbtree", "fft"]
    mults = [1, 2, 4, 8, 16] if not a.quick else [1, 4]
    grans = [1, 2, 4, 8, 16] if not a.quick else [1, 4]
    recs, rows_a, rows_b = [], [], []
    for p in progs:
        m = min_heap(R, p)
        ra = [p, m]
        for k in mults:
            d = R.model(p, "spm", ["--local", local_for(m * k), "--table", "4096"])
            recs.append({"program": p, "sweep": "heap", "heap_kib": m * k, "run": d})
            ra.append(fmt(mcyc(d), 2))
        rows_a.append(ra)
        rb = [p, 2 * m]
        for g in grans:
            d = R.model(p, "spm", ["--local", local_for(2 * m), "--table", "4096", "--gran", str(g),
                                   "--unit", "4096"])
            recs.append({"program": p, "sweep": "gran", "gran": g, "heap_kib": 2 * m, "run": d})
            rb.append(fmt(mcyc(d), 2))
        rows_b.append(rb)
    md = ("(a) modelled Mcycles (scripts/spm_cycles.py) by heap region H, from each program's minimum (the smallest H, in KiB, that runs it: "
          "its largest object plus bookkeeping) upwards; T = 4 KB, granularity 1:\n\n")
    md += md_table(["program", "min H KiB"] + ["H = %dx min" % k for k in mults], rows_a)
    md += ("\n(b) modelled Mcycles by granularity (objects of one size per transfer unit, unit cap 4 KB) at H = 2x the "
           "minimum (the seed used 4 KB for every program; ours need more for their largest objects):\n\n")
    md += md_table(["program", "H KiB"] + ["gran %d" % g for g in grans], rows_b)
    return {"mults": mults, "grans": grans, "min_heap_kib": {p: min_heap(R, p) for p in progs}, "runs": recs}, md


REWRITTEN = ("rbtree", "dijkstra", "fft", "fft_inv", "stringsearch", "dfs", "mst")   # the programs dmm-spmcc accepts
T2_CONF = "table=65536,frames=16,unit=256,gran=16"


def kc(x):
    return fmt(x / 1e3, 1)


def breakdown_row(p, which, m):
    """Where one run's management cycles go (scripts/spm_cycles.py, breakdown)."""
    b = m["breakdown"]
    fnc = b["by_function"]

    def fam(*names):
        return sum(fnc.get("dmm_spm_" + n, 0) for n in names)
    return [p, which, kc(m["management_cycles"]), kc(fam("p2s", "p2s_ro", "p2s_part", "p2s_part_ro", "pin", "unpin")), kc(fam("s2p")),
            kc(fam("malloc", "calloc", "realloc", "free")), kc(b["miss_path"]), kc(b["table_walk"]),
            kc(b["local_allocation"]), kc(b["eviction"]), kc(m["dma_and_mailbox_cycles"]),
            kc(m["dma_emulation_instructions"] + m["mailbox_emulation_instructions"]),
            kc(m["manager_service_instructions"])]


def exp_table2(R, a):
    progs = PROGRAMS if not a.quick else ["rbtree", "fft"]
    rows, brows, recs, shares, slows, hshares = [], [], [], [], [], []
    for p in progs:
        sz, peak, bound = table1_sizes(R, p)
        hmin = min_heap(R, p, sz)
        rmin = min_heap_rewritten(R, p, T2_CONF, sz) if p in REWRITTEN and R.spmcc_dir else 0
        h = max(8, hmin, rmin)
        local = local_for(h, 65536)
        cfg = ["--local", local, "--table", "65536", "--frames", "16", "--unit", "256", "--gran", "16"]
        raw = R.model(p, "raw", [], sizes=sz)
        hand = R.model(p, "spm", cfg, sizes=sz)
        rew = R.model_rewritten(p, int(local), T2_CONF, sizes=sz) if rmin else None
        built = rew or hand
        m, mr, mh = built["model"], raw["model"], hand["model"]
        share = m["management_share"]
        slow = m["total_cycles"] / mr["total_cycles"] if mr["total_cycles"] else 0
        shares.append(share)
        slows.append(slow)
        hshares.append(mh["management_share"])
        st = core0(built)["spm"]
        fn = st["functions"]
        recs.append({"program": p, "sizes": sz, "peak_heap_bytes": peak, "table1_bytes": TABLE1[p],
                     "size_bound_bytes": bound, "heap_kib": h, "min_heap_kib_hand": hmin,
                     "min_heap_kib_rewritten": rmin, "raw": raw, "hand_written": hand, "rewritten": rew,
                     "built_from": "rewritten" if rew else "hand-written",
                     "management_share": share, "slowdown_vs_raw": slow})
        rows.append([p, " ".join(sz), "%d (%d)" % (peak, TABLE1[p]), h, kc(mr["total_cycles"]),
                     kc(mh["total_cycles"]), fmt(100 * mh["management_share"], 1) + "%",
                     kc(rew["model"]["total_cycles"]) if rew else "refused",
                     (fmt(100 * rew["model"]["management_share"], 1) + "%") if rew else "-",
                     "**" + fmt(100 * share, 1) + "%**", fmt(slow, 2) + "x",
                     fn["p2s"]["calls"], st["unit_fetches"], st["page_fetches"]])
        brows.append(breakdown_row(p, "hand-written", mh))
        if rew:
            brows.append(breakdown_row(p, "rewritten", rew["model"]))
    md = ("Each program's input is sized to the seed's Table I (the most heap data it needs): the largest input "
          "whose peak of requested heap bytes (the unmanaged program on a local dmm heap with full statistics) is "
          "at most the Table I figure, or, when the smallest input already needs more, at most that fixed part "
          "plus the Table I figure (rbTree: a 4 KiB key chunk; MST: per-round arrays). The seed's configuration: "
          "heap region H = 8 KB (or the program's minimum when larger), unit cap 256 B (granularity up to 16 "
          "objects), T = 64 KB of table in 16 frames of 4 KB. Cycle model (scripts/spm_cycles.py, docs/spm.md): "
          "program and library instructions at one cycle each (callgrind), the host port's DMA emulation and "
          "the core's side of the mailbox emulation left out, the cost model's DMA + mailbox cycles added. "
          "**share** = cycles inside malloc/calloc/realloc/free/p2s/p2s_ro/p2s_part/s2p/pin/unpin over all cycles (the "
          "seed's Table II metric) of the program **as built by the pass** (the unmanaged source rewritten by "
          "dmm-spmcc; the hand-written managed program where the pass refuses one); "
          "**slowdown** = its cycles over the unmanaged program's (raw backend, same model). hand-written: "
          "bench/spm (p2s + s2p around every scalar access). Kcycles = thousands of modelled cycles. p2s "
          "calls count p2s, p2s_ro and pin of the program as built.\n\n")
    md += md_table(["program", "input", "peak heap B (Table I)", "H KiB", "unmanaged Kcycles",
                    "hand-written Kcycles", "hand share", "rewritten Kcycles", "rewritten share",
                    "share (as built)", "slowdown", "p2s calls", "unit fetches", "page fetches"], rows)
    md += ("\nMean share (the seed's metric, as built): **%.1f%%** (seed: 18%%); highest %.1f%%. Mean slowdown vs "
           "unmanaged: %.2fx. Hand-written programs alone: mean share %.1f%%.\n" % (
               100 * statistics.mean(shares), 100 * max(shares), statistics.mean(slows),
               100 * statistics.mean(hshares)))
    md += ("\nWhere the management cycles go (Kcycles). Instructions per management function, inclusive (calls "
           "from the program), then the internal paths inside them, inclusive and nested (the miss path: p2s/p2s_ro "
           "calls that neither the hit path's 8 entries nor the translation cache answer; it holds "
           "the table walk, the local allocation and the eviction; local allocation = the first-fit local heap "
           "that holds the resident copies), all including the host's DMA emulation beneath them, which the "
           "total leaves out (its column); then the cost model's DMA + mailbox cycles and, in dynamic mode, the "
           "manager's instructions for the core's requests. management = instructions - emulation + DMA/mailbox "
           "+ manager.\n\n")
    md += md_table(["program", "build", "management", "p2s/p2s_ro/p2s_part/pin/unpin", "s2p", "malloc/free",
                    "miss path", "table walk", "local allocation", "eviction", "DMA + mailbox cycles",
                    "emulation excluded", "manager"], brows)
    return {"mean_management_share": statistics.mean(shares), "max_management_share": max(shares),
            "mean_slowdown": statistics.mean(slows), "mean_management_share_hand_written": statistics.mean(hshares),
            "runs": recs}, md


def exp_fig10(R, a):
    """rbTree's share as it grows: the program as dmm-spmcc rewrites it (the
    headline, as in Table II) and the hand-written managed version beside it
    (a comparison, labelled), the same heap region for both."""
    ns = [1, 16, 256, 1024, 4096, 16384, 65536] if not a.quick else [16, 1024, 4096]
    rew = "rbtree" in REWRITTEN and R.spmcc_dir
    h = max(8, min_heap(R, "rbtree"), min_heap_rewritten(R, "rbtree", T2_CONF) if rew else 0)
    local = local_for(h, 65536)
    cfg = ["--local", local, "--table", "65536", "--frames", "16", "--unit", "256", "--gran", "16"]
    rows, recs = [], []

    def cols(m, raw):
        share = m["management_share"]
        dma = m["dma_and_mailbox_cycles"] / m["total_cycles"] if m["total_cycles"] else 0
        return share, [fmt(100 * share, 1) + "%", fmt(100 * dma, 1) + "%",
                       fmt(m["total_cycles"] / raw["model"]["total_cycles"], 2) + "x"]
    for n in ns:
        args = ["-n", str(n), "--ops", str(n)]
        raw = R.model("rbtree", "raw", args)
        d = R.model("rbtree", "spm", args + cfg)
        hshare, hcols = cols(d["model"], raw)
        rec = {"nodes": n, "raw": raw, "run": d, "management_share_hand_written": hshare}
        row = [n]
        if rew:
            r = R.model_rewritten("rbtree", int(local), T2_CONF, sizes=args)
            rshare, rcols = cols(r["model"], raw)
            rec.update(rewritten=r, management_share=rshare)
            row += rcols
        else:
            rec["management_share"] = hshare
        recs.append(rec)
        rows.append(row + hcols)
    md = ("rbTree, the Table II configuration (H = %d KiB, T = 64 KB, 16 frames, 256 B units), the cycle model of "
          "Table II. share = management cycles / all cycles (the seed's metric), with the part of it that is the cost "
          "model's DMA + mailbox cycles; slowdown against the unmanaged program in the same model. %s\n\n"
          % (h, "The headline is the program as dmm-spmcc rewrites it from the unmanaged source; the hand-written "
                "managed version (one translation per scalar access) is shown beside it as a comparison only."
             if rew else "Hand-written managed version (the pass's build was not available)."))
    head = ["nodes"] + (["share (rewritten)", "DMA + mailbox", "slowdown"] if rew else []) + \
        ["share (hand-written)", "DMA + mailbox (hand-written)", "slowdown (hand-written)"]
    md += md_table(head, rows)
    return {"runs": recs, "local": int(local)}, md


def exp_table3(R, a):
    """Static vs dynamic global memory, at Table I input sizes, the program as
    built by the pass (rewritten where dmm-spmcc accepts it)."""
    progs = PROGRAMS if not a.quick else ["rbtree", "fft"]
    rows, recs, gains, ogains = [], [], [], []
    for p in progs:
        sz = table1_sizes(R, p)[0]
        rew = p in REWRITTEN and R.spmcc_dir
        # at least 4 KiB: the minimum is measured at granularity 1, and a 1 KiB unit of granularity 4
        # needs room beside the local heap's bookkeeping (hand-written mst's minimum is 2 KiB)
        # (the rewritten program's minimum at both granularities of the sweep: the pass's pins hold
        # whole units, so a finer granularity can need more room, as dfs's four pinned arrays do)
        m = max(4, min_heap(R, p, sz), *(min_heap_rewritten(R, p, "table=4096,unit=1024,gran=%d" % g, sz, 4096)
                                         for g in (1, 4)) if rew else (0,))
        # the optimized configuration's coarser units need a larger region (8 KiB, or what the
        # rewritten program's pinned units need)
        mo = min_heap_rewritten(R, p, "table=65536,frames=16,unit=1024,gran=16", sz) if rew else 0
        dyn, sta, opt = [], [], []

        def one(local, table, frames, g, static):
            if rew:
                conf = "table=%d,frames=%d,unit=1024,gran=%d" % (table, frames, g)
                return R.model_rewritten(p, int(local), conf, sizes=sz, static=static)
            c = ["--local", local, "--table", str(table), "--frames", str(frames), "--gran", str(g), "--unit", "1024"]
            return R.model(p, "spm", c + (["--static"] if static else []), sizes=sz)
        for k in (1, 4):
            for g in (1, 4):
                d = one(local_for(k * m), 4096, 1, g, False)
                s = one(local_for(k * m), 4096, 1, g, True)
                # the seed's section 8.5 all together: static, a table of 16 frames (every page
                # of these runs stays resident) beside the same heap region, granularity 16
                o = one(local_for(max(k * m, mo, 8), 65536), 65536, 16, 16, True)
                dyn.append(mcyc(d))
                sta.append(mcyc(s))
                opt.append(mcyc(o))
                recs.append({"program": p, "sizes": sz, "heap_kib": k * m, "optimized_heap_kib": max(k * m, mo, 8), "gran": g,
                             "built_from": "rewritten" if rew else "hand-written", "dynamic": d, "static": s,
                             "optimized": o})
        g = statistics.mean((x - y) / x for x, y in zip(dyn, sta) if x)
        go = statistics.mean((x - y) / x for x, y in zip(dyn, opt) if x)
        gains.append(g)
        ogains.append(go)
        rows.append([p, "rewritten" if rew else "hand-written", " ".join(sz), fmt(1e3 * statistics.mean(dyn), 1),
                     fmt(1e3 * statistics.mean(sta), 1), fmt(100 * g, 1) + "%", fmt(1e3 * statistics.mean(opt), 1),
                     fmt(100 * go, 1) + "%"])
    md = ("Inputs sized to the seed's Table I (as Table II). Mean over H in {1, 4} x the program's minimum (at least "
          "4 KiB) and "
          "granularity {1, 4} (unit cap 1 KiB, T = 4 KB), modelled Kcycles (the cycle model of Table II; no host "
          "time). The program as built by the pass (rewritten by dmm-spmcc). "
          "Dynamic: every segment request and every segment given back is a mailbox message to the manager "
          "(its words at the cost model's price, plus the manager's work on the request, which the core waits "
          "for); static: the core carves its own slice with its own instructions.\n\n")
    md += ("**optimized**: the seed's section 8.5 optimizations together (static global memory, a 64 KB table in "
           "16 frames so that every table page of these runs stays in local memory, granularity 16) beside the "
           "same heap region, at least 8 KiB (the seed's Table II region: 1 KiB units need room) and at least "
           "the smallest that runs the rewritten program with these coarser units, against the dynamic runs.\n\n")
    md += md_table(["program", "build", "input", "dynamic Kcycles", "static Kcycles", "static improvement",
                    "optimized Kcycles", "optimized improvement"], rows)
    md += ("\nMean improvement of static over dynamic: **%.1f%%** (seed: 14%%); of the optimized configuration: "
           "**%.1f%%**.\n" % (100 * statistics.mean(gains), 100 * statistics.mean(ogains)))
    return {"mean_improvement": statistics.mean(gains), "mean_improvement_optimized": statistics.mean(ogains),
            "runs": recs}, md


def exp_fig11(R, a):
    progs = PROGRAMS if not a.quick else ["rbtree"]
    cores = [1, 2, 3, 4, 5, 6] if not a.quick else [1, 2]
    rows, recs = [], []
    for p in progs:
        cfg = ["--local", local_for(min_heap(R, p)), "--table", "4096"]
        r = [p]
        for c in cores:
            d = R.run(p, "spm", cfg + ["--cores", str(c)])
            recs.append({"program": p, "cores": c, "run": d})
            words = sum(x.get("port", {}).get("mailbox_words", 0) for x in d["per_core"])
            waits = d.get("global", {}).get("mailbox_full_waits", 0)
            r.append("%s ms / %d w / %d full" % (fmt(ms(d["host_ns_total"]), 1), words, waits))
        rows.append(r)
    md = ("The smallest configuration (each program's minimum H, granularity 1, dynamic), N identical copies on N core threads "
          "sharing one manager. Each cell: host ms of the whole run / mailbox words / times a core found its "
          "inbound mailbox full. **This machine has 2 cores**: beyond 2 the core threads and the manager "
          "time-share them, so host time grows with N for that reason too.\n\n")
    md += md_table(["program"] + ["%d core%s" % (c, "s" if c > 1 else "") for c in cores], rows)
    return {"runs": recs}, md


SWC_CONF = "table=4096"  # the rewritten heap's configuration beside the cache: the hand-written run's


def exp_swc(R, a):
    """The software cache beside the heap, twice: (1) both as hand-written
    programs (one cache_rd/cache_wr or one p2s + s2p per scalar access: the
    same access granularity, the runtimes alone); (2) the seed's comparison
    (section 5): the heap as its compiler pass builds the unmanaged program
    (dmm-spmcc) against the cache used as the seed describes, every access
    through the cache's read/write calls (there is no pass for the cache,
    and section 5 says a cache user cannot avoid the per-access look-up).
    The same local memory for all three runs of a program."""
    progs = PROGRAMS if not a.quick else ["rbtree", "fft"]
    rew_ok = bool(R.spmcc_dir)

    def one(p, hmin_hand, sz, floor, table=4096, conf=SWC_CONF, hand_cfg=("--table", "4096")):
        rmin = min_heap_rewritten(R, p, conf, sz, table=table) if rew_ok and p in REWRITTEN else 0
        h = max(floor, hmin_hand, rmin)
        local = local_for(h, table)
        s = R.model(p, "spm", ["--local", local] + list(hand_cfg), sizes=sz)
        c = R.model(p, "swc", ["--local", local], sizes=sz)
        r = R.model_rewritten(p, int(local), conf, sizes=sz) if rmin else None
        rec = {"program": p, "heap_kib": h, "table_bytes": table, "min_heap_kib_hand": hmin_hand,
               "min_heap_kib_rewritten": rmin,
               "spm": s, "swc": c, "spm_rewritten": r,
               "swc_over_spm": mcyc(c) / mcyc(s) if mcyc(s) else 0,
               "swc_over_spm_rewritten": (mcyc(c) / mcyc(r)) if r and mcyc(r) else 0}
        if sz:
            rec["sizes"] = sz
        return rec

    def row(rec, scale, nd):
        s, c, r = rec["spm"], rec["swc"], rec["spm_rewritten"]
        out = ([rec["program"]] + ([" ".join(rec["sizes"])] if "sizes" in rec else []) +
               [rec["heap_kib"], fmt(scale * mcyc(c), nd), fmt(100 * c["model"]["management_share"], 1) + "%",
                fmt(scale * mcyc(s), nd), fmt(100 * s["model"]["management_share"], 1) + "%",
                fmt(rec["swc_over_spm"], 2) + "x"])
        if r:
            out += [fmt(scale * mcyc(r), nd), fmt(100 * r["model"]["management_share"], 1) + "%",
                    "**" + fmt(rec["swc_over_spm_rewritten"], 2) + "x**"]
        else:
            out += ["-", "-", "-"]
        return out

    def means(recs):
        hand = [x["swc_over_spm"] for x in recs if x["swc_over_spm"] > 0]
        rew = [x["swc_over_spm_rewritten"] for x in recs if x["swc_over_spm_rewritten"] > 0]
        return (statistics.geometric_mean(hand) if hand else 0, statistics.geometric_mean(rew) if rew else 0,
                sum(1 for x in recs if x["swc_over_spm_rewritten"] > 1), len(rew))

    def head(unit):
        return ["H KiB", "swc " + unit, "swc share", "spm hand-written " + unit, "spm hand share",
                "swc / spm hand-written", "spm rewritten " + unit, "spm rewritten share", "swc / spm rewritten"]
    md = ("The same local memory for the three runs of a program: H + T + 1.5 KiB (T = 4 KB in the first two "
          "tables), H the larger of the floor below and the smallest region each heap build runs in; the software cache (128 B lines, 4 ways) "
          "gets the whole buffer, and every cache malloc/free goes to the manager. Three builds: **swc**, the "
          "cache, every scalar access through its read/write calls (bench/spm with hm_swc.h: the way the seed's "
          "section 5 says the cache must be used, one look-up per access); **spm hand-written**, the heap with one "
          "p2s + s2p per scalar access (bench/spm with hm.h: the same access granularity as the cache, so the "
          "runtimes alone are compared); **spm rewritten**, the heap as its compiler pass builds the unmanaged "
          "program (dmm-spmcc, one translation per pointer per access region: the seed's comparison, heap with "
          "its pass against the cache as a programmer would use it). Cycle model of Table II for all. A ratio "
          "above 1 means the heap is ahead.\n\n")
    md += "Large inputs (the sizes above), H at least 16 KiB and 2x the hand-written program's minimum, Mcycles:\n\n"
    recs = []
    for p in progs:
        recs.append(one(p, 2 * min_heap(R, p), None, 16))
    md += md_table(["program"] + head("Mcycles"), [row(x, 1, 2) for x in recs])
    gh, gr, ahead, n = means(recs)
    md += ("\nGeometric mean swc / spm: hand-written **%.2fx**; rewritten **%.2fx** (the heap ahead on %d of %d).\n"
           % (gh, gr, ahead, n))
    recs1 = []
    for p in progs:
        sz = table1_sizes(R, p)[0]
        recs1.append(one(p, min_heap(R, p, sz), sz, 8))
    md += ("\nAt the seed's Table I input sizes (Table II's inputs), H at least 8 KiB (the seed's Table II region) "
           "and the program's minimum, Kcycles:\n\n")
    md += md_table(["program", "input"] + head("Kcycles"), [row(x, 1e3, 1) for x in recs1])
    gh1, gr1, ahead1, n1 = means(recs1)
    md += ("\nGeometric mean swc / spm at Table I sizes: hand-written **%.2fx**; rewritten **%.2fx** (the heap "
           "ahead on %d of %d).\n" % (gh1, gr1, ahead1, n1))
    # the same inputs in Table II's configuration: the whole table resident (T = 64 KB in 16 frames),
    # 256-byte units of up to 16 objects, H as Table II's; the cache gets the same bytes
    recs2 = []
    for p in progs:
        sz = table1_sizes(R, p)[0]
        hmin = min_heap(R, p, sz)
        recs2.append(one(p, hmin, sz, 8, table=65536, conf=T2_CONF,
                         hand_cfg=("--table", "65536", "--frames", "16", "--unit", "256", "--gran", "16")))
    md += ("\nThe same inputs in the seed's Table II configuration (the whole table in local memory: T = 64 KB in "
           "16 frames, 256-byte units of up to 16 objects, H as in Table II); the cache gets the same buffer "
           "(H + 64 KB + 1.5 KiB), Kcycles:\n\n")
    md += md_table(["program", "input"] + head("Kcycles"), [row(x, 1e3, 1) for x in recs2])
    gh2, gr2, ahead2, n2 = means(recs2)
    md += ("\nGeometric mean swc / spm in Table II's configuration: hand-written **%.2fx**; rewritten **%.2fx** "
           "(the heap ahead on %d of %d).\n" % (gh2, gr2, ahead2, n2))
    return {"runs": recs, "table1_runs": recs1, "table2_config_runs": recs2,
            "geomean_swc_over_spm": gh, "geomean_swc_over_spm_rewritten": gr,
            "table1_geomean_swc_over_spm": gh1, "table1_geomean_swc_over_spm_rewritten": gr1,
            "table2_config_geomean_swc_over_spm": gh2, "table2_config_geomean_swc_over_spm_rewritten": gr2}, md


def min_heap_rewritten(R, prog, config, sizes=None, table=65536):
    """The smallest heap region (KiB, with T = 64 KB) that runs the rewritten
    program: it pins every object a region holds at once (fft: three arrays
    in one loop body), so it may need more than the hand-written one."""
    exe = os.path.join(R.spmcc_dir, "spmcc_seed_%s_spm" % prog)
    lo, hi = 1, 1024
    while lo < hi:
        mid = (lo + hi) // 2
        env = dict(os.environ, SPMCC_LOCAL=local_for(mid, table), SPMCC_CONFIG=config)
        r = subprocess.run([exe] + R.base(prog, sizes), capture_output=True, text=True, env=env)
        if r.returncode != 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


def exp_rewrite(R, a):
    """The seed's programs as dmm-spmcc rewrites them (from the unmanaged
    sources) against the hand-written managed versions, the Table II
    configuration, the same cycle model."""
    progs = [p for p in REWRITTEN if not a.quick or p == "fft"]
    rows, recs = [], []
    conf = "table=65536,frames=16,unit=256,gran=16"
    for p in progs:
        hmin, rmin = min_heap(R, p), min_heap_rewritten(R, p, conf)
        h = max(8, hmin, rmin)
        local = int(local_for(h, 65536))
        cfg = ["--local", str(local), "--table", "65536", "--frames", "16", "--unit", "256", "--gran", "16"]
        hand = R.model(p, "spm", cfg)
        rew = R.model_rewritten(p, local, conf)
        raw = R.model(p, "raw", [])
        hm, rm, wm = hand["model"], rew["model"], raw["model"]
        recs.append({"program": p, "heap_kib": h, "min_heap_kib_hand": hmin, "min_heap_kib_rewritten": rmin,
                     "hand_written": hand, "rewritten": rew, "raw": raw})
        hp2s = core0(hand)["spm"]["functions"]["p2s"]["calls"]
        rp2s = core0(rew)["spm"]["functions"]["p2s"]["calls"]
        rows.append([p, "%d (%d / %d)" % (h, hmin, rmin), fmt(hm["total_cycles"] / 1e6, 2), fmt(rm["total_cycles"] / 1e6, 2),
                     fmt(rm["total_cycles"] / hm["total_cycles"], 3) + "x", hp2s, rp2s,
                     fmt(100 * hm["management_share"], 1) + "%", fmt(100 * rm["management_share"], 1) + "%",
                     fmt(hm["total_cycles"] / wm["total_cycles"], 2) + "x",
                     fmt(rm["total_cycles"] / wm["total_cycles"], 2) + "x"])
    md = ("The Table II configuration (T = 64 KB in 16 frames, unit 256, granularity 16), dynamic mode, one "
          "core; H = the larger of 8 KiB and both programs' minimum heap regions (given in brackets: hand-written / "
          "rewritten; the rewritten program pins every object a region holds at once, so it may need more). **hand-written**: bench/spm (hm.h: p2s + s2p around every "
          "scalar access); **rewritten**: the unmanaged program (bench/workloads/programs) as dmm-spmcc "
          "(tools/spmcc) rewrites it, run on tools/spmcc/runtime; the same cycle model (scripts/spm_cycles.py, "
          "body = the program's main). p2s counts p2s, p2s_ro and pin calls.\n\n")
    md += md_table(["program", "H KiB (min hand / rewritten)", "hand-written Mcycles", "rewritten Mcycles", "rewritten / hand",
                    "hand p2s calls", "rewritten p2s calls", "hand share", "rewritten share",
                    "hand slowdown", "rewritten slowdown"], rows)
    return {"runs": recs}, md


EXPERIMENTS = {"fig8": exp_fig8, "fig9": exp_fig9, "table2": exp_table2, "fig10": exp_fig10,
               "table3": exp_table3, "fig11": exp_fig11, "swc": exp_swc, "rewrite": exp_rewrite}
TITLES = {"fig8": "Unrestricted heap size (seed Fig. 8)", "fig9": "Heap management parameters (seed Fig. 9)",
          "table2": "Overhead by function (seed Table II)", "fig10": "Overhead growth with rbTree size (seed Fig. 10)",
          "table3": "Dynamic vs static global memory (seed Table III)",
          "fig11": "Scaling with execution cores (seed Fig. 11)", "swc": "Software-cache baseline beside the heap",
          "rewrite": "Programs rewritten by dmm-spmcc beside the hand-written managed ones"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True, help="directory holding spm_<prog>_<backend>")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--spmcc-dir", default="", help="directory holding spmcc_seed_<prog>_spm (experiment rewrite)")
    ap.add_argument("--reps", type=int, default=3, help="runs per point (median host time)")
    ap.add_argument("--only", default="", help="comma-separated experiments (%s)" % ",".join(EXPERIMENTS))
    ap.add_argument("--quick", action="store_true", help="few points (a smoke run)")
    ap.add_argument("--commit", default="")
    a = ap.parse_args()
    sizes = {
        "rbtree": ["-n", "4096", "--ops", "4096"],
        "dijkstra": ["-n", "300", "--sources", "4"],
        "fft": ["-n", "1024", "-b", "4"],
        "fft_inv": ["-n", "1024", "-b", "4"],
        "stringsearch": ["-n", "100", "-t", "60"],
        "dfs": ["-n", "4000", "-r", "2"],
        "mst": ["-n", "500", "-r", "2"],
    }
    R = Runner(a.bindir, a.reps, sizes, a.spmcc_dir)
    names = [x for x in a.only.split(",") if x] or list(EXPERIMENTS)
    for n in names:
        if n not in EXPERIMENTS:
            raise SystemExit("spm_bench: unknown experiment '%s' (%s)" % (n, ", ".join(EXPERIMENTS)))
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from provenance import cmake_build, provenance, load
    from provenance import markdown as prov_markdown
    bi = build_info(a.bindir)
    for n in names:
        load0 = load()
        t0 = time.time()
        log("spm_bench: %s ..." % n)
        data, md = EXPERIMENTS[n](R, a)
        prov = provenance("scripts/spm_bench.sh --only %s%s" % (n, " --quick" if a.quick else ""),
                          *cmake_build(os.path.join(os.path.dirname(os.path.abspath(a.bindir)), "..")),
                          "host port, Cell-like cost model", load0)
        doc = {"schema": "dmmkit.spm_bench/1", "provenance": prov, "experiment": n, "title": TITLES[n],
               "made_by": "scripts/spm_bench.sh",
               "commit": a.commit, "reps": a.reps, "quick": a.quick, "cycle_model": "scripts/spm_cycles.py", "build": bi,
               "program_sizes": sizes, "machine_cores": os.cpu_count(), "data": data}
        path = os.path.join(a.out, "spm_%s" % n)
        with open(path + ".json.tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(path + ".json.tmp", path + ".json")
        head = ("# %s\n\nMade by `scripts/spm_bench.sh` (`scripts/spm_bench.py --only %s`) at commit %s; median of "
                "%d runs per host-timed point (the callgrind runs of the cycle model are deterministic, one each); "
                "program sizes: %s. Built with %s, flags `%s`; CPU %s (%d cores); %s. Host times are from this "
                "machine; simulated DMA and mailbox cycles come from the host port's Cell-like cost model "
                "(docs/spm.md); modelled cycles from scripts/spm_cycles.py.\n\n" % (
                    TITLES[n], n, a.commit or "?", a.reps,
                    "; ".join("%s %s" % (k, " ".join(v)) for k, v in sizes.items()), bi["compiler"], bi["flags"],
                    bi["cpu"], os.cpu_count(), bi["valgrind"]))
        head += prov_markdown(prov) + "\n\n"
        with open(path + ".md", "w") as f:
            f.write(head + md)
        log("spm_bench: %s done in %.0f s -> %s.{json,md}" % (n, time.time() - t0, path))
        print(head + md)


if __name__ == "__main__":
    main()
