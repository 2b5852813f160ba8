#!/usr/bin/env python3
"""tests/replay/replay_tests.py - tests of dmm-replay, dmm-analyse, dmm-trace.

Each test is one ctest entry: replay_tests.py TEST --bin DIR-or-paths ...
Exit 0 = pass, 1 = fail, 77 = skipped (ctest SKIP_RETURN_CODE).
"""
import argparse
import json
import os
import stat
import subprocess
import sys
import shutil
import threading
import tempfile

SKIP = 77
PRESETS = ["dlmalloc", "tlsf", "halffit", "firstfit", "p2012"]
GRAN = 16  # DMM_HEAP_ALIGN on 64-bit


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Ctx:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="dmm-replay-test-")

    def data(self, name):
        return os.path.join(self.a.data, name)

    def run(self, tool, args, env=None, expect=0):
        exe = {"replay": self.a.replay, "analyse": self.a.analyse, "trace": self.a.trace}[tool]
        e = dict(os.environ)
        if env:
            e.update(env)
        p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                           universal_newlines=True, timeout=240)
        if expect is not None and p.returncode != expect:
            raise Fail("%s %s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s" %
                       (tool, " ".join(args), p.returncode, expect, p.stdout, p.stderr))
        return p

    def replay_json(self, trace, args, env=None, expect=0):
        out = os.path.join(self.tmp, "r.json")
        if os.path.exists(out):
            os.unlink(out)
        p = self.run("replay", [trace, "--json", out] + args, env=env, expect=expect)
        with open(out) as f:
            return json.load(f), p

    @property
    def sanitized(self):
        return self.a.sanitize not in ("", "none", "OFF")


def common_checks(d, peak_live, peak_objects, ops):
    check(d["schema"] == "dmm-replay/1", "schema")
    for k in ("machine", "build", "trace", "allocator", "timing", "memory", "fragmentation"):
        check(k in d, "JSON lacks %s" % k)
    check(d["trace"]["peak_live"] == peak_live, "peak_live %s != %s" % (d["trace"]["peak_live"], peak_live))
    check(d["trace"]["peak_objects"] == peak_objects, "peak_objects")
    check(d["trace"]["ops"] == ops, "ops %s != %s" % (d["trace"]["ops"], ops))
    check(len(d["trace"]["hash"]) == 16, "hash is 16 hex digits")
    check(d["failed"] == 0, "failed allocations: %s" % d["failed"])
    check(d["skipped"] == 0, "skipped ops: %s" % d["skipped"])
    check(d["memory"]["run_peak_live"] == peak_live or d["trace"]["threads"] > 1,
          "run peak live %s != trace peak %s" % (d["memory"]["run_peak_live"], peak_live))


# ---------------------------------------------------------------------------

def t_dmm_presets(c):
    for p in PRESETS + ["preset=firstfit,org=single,fit=best,harden=canary,stats=full"]:
        d, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:" + p, "--verify", "--reps", "2"])
        common_checks(d, 900, 3, 10)
        check(d["verify"] == "pass", "verify")
        check(d["allocator"]["kind"] == "dmm", "kind")
        check(d["allocator"]["heap_errors"] == 0, "heap errors")
        k = d["timing"]["cold"]["kinds"]
        check(k["malloc"]["count"] == 2 and k["calloc"]["count"] == 1 and k["realloc"]["count"] == 2
              and k["aligned"]["count"] == 1 and k["free"]["count"] == 4, "per-kind counts %s" % k)
        check(k["all"]["count"] == 10, "all count")
        check(d["timing"]["warm"]["reps"] == 2 and d["timing"]["cold"]["reps"] == 2, "reps")
        m = d["memory"]
        # dmm heaps report exactly: the footprint at peak holds at least the live bytes
        check(m["at_peak_live"]["live"] == 900, "sample at the peak: %s" % m["at_peak_live"])
        check(m["peak_footprint"] >= m["at_peak_live"]["footprint"] >= 900, "footprints")
        f = d["fragmentation"]
        check(f["frag4"] >= f["frag3"] > 1.0 or abs(f["frag4"] - f["frag3"]) < 1e-9, "frag #3/#4 %s" % f)
        check(f["internal_waste"] >= 0 and f["external_waste"] >= 0, "waste %s" % f)
        used = m["at_peak_live"]["used"]
        check(f["internal_waste"] == used - 900, "internal waste = used - live")
        check(m["at_peak_live"]["footprint"] == used + f["external_waste"] + f["metadata"],
              "footprint = used + external + metadata")
    # the heap's own peak extent bounds what the run needed: at least the
    # peak of live requested bytes, at least every sample, within the arena
    rnd = os.path.join(c.tmp, "rnd.txt")
    with open(rnd, "w") as f:
        f.write("dmmtrace 1\n")
        live, x = [], 12345
        for i in range(1, 2501):
            x = (x * 1103515245 + 12345) % (1 << 31)
            if x % 100 < 55 or not live:
                f.write("0 m %d %d\n" % (i, 1 + x % 700))
                live.append(i)
            elif x % 100 < 65:
                f.write("0 r %d %d\n" % (live[x % len(live)], 1 + (x >> 8) % 2000))
            else:
                f.write("0 f %d\n" % live.pop(x % len(live)))
    for p in PRESETS:
        d, _ = c.replay_json(rnd, ["--alloc", "dmm:" + p, "--no-warm", "--verify", "--quiet"])
        m = d["memory"]
        check(d["failed"] == 0 and d["verify"] == "pass", "%s: random trace replays" % p)
        check(m["run_peak_live"] <= m["peak_footprint"] <= m["arena"],
              "%s: peak extent %s outside [peak live %s, arena %s]" % (p, m["peak_footprint"],
                                                                       m["run_peak_live"], m["arena"]))
        check(m["peak"]["footprint"] <= m["peak_footprint"], "samples never exceed the peak")
    # the stats level is raised, and said so
    d, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:preset=tlsf,stats=off", "--quiet"])
    check(d["allocator"]["stats_forced"] is True and d["allocator"]["stats"] == "counters", "stats forced")


def t_system(c):
    for tr, peak, objs, ops in (("simple.txt", 900, 3, 10), ("mt.txt", 5396, 3, 9)):
        d, p = c.replay_json(c.data(tr), ["--alloc", "system", "--verify", "--reps", "2"])
        common_checks(d, peak, objs, ops)
        check(d["verify"] == "pass", "verify")
        det = d["allocator"]["detected"]
        want = "asan" if c.a.sanitize == "address" else ("tsan" if c.a.sanitize == "thread" else "glibc")
        check(det == want, "detected %s, expected %s" % (det, want))
        check("system: %s" % det in p.stdout, "human table names the allocator")
        check(d["timing"]["cold"]["reps"] == 1 and d["timing"]["warm"]["reps"] == 2,
              "system: one cold pass, reps warm passes")
    c.run("replay", [c.data("simple.txt"), "--alloc", "system", "--expect", "no-such-allocator"], expect=3)


def t_malformed(c):
    binf = os.path.join(c.tmp, "simple.bin")
    c.run("trace", ["convert", c.data("simple.txt"), binf])
    raw = open(binf, "rb").read()
    cut = os.path.join(c.tmp, "cut.bin")
    with open(cut, "wb") as f:
        f.write(raw[:-3])
    p = c.run("replay", [cut], expect=2)
    check("cut.bin: offset " in p.stderr and "truncated" in p.stderr, "message names offset: %r" % p.stderr)
    # garbage after the header
    bad = os.path.join(c.tmp, "junk.bin")
    with open(bad, "wb") as f:
        f.write(raw[:12] + b"\xff" * 40)
    p = c.run("replay", [bad], expect=2)
    check("offset 12" in p.stderr, "offset of the bad varint: %r" % p.stderr)
    # text with a bad line
    txt = os.path.join(c.tmp, "bad.txt")
    with open(txt, "w") as f:
        f.write("dmmtrace 1\n0 m 1 10\n0 q 2\n")
    p = c.run("replay", [txt], expect=2)
    check("bad.txt: line 3:" in p.stderr, "line number: %r" % p.stderr)
    # well-formed but invalid: double free
    dbl = os.path.join(c.tmp, "dbl.txt")
    with open(dbl, "w") as f:
        f.write("dmmtrace 1\n0 m 1 10\n0 f 1\n0 f 1\n")
    p = c.run("replay", [dbl], expect=2)
    check("operation 2:" in p.stderr and "free" in p.stderr, "validation reason: %r" % p.stderr)
    # same refusals from the other tools
    p = c.run("trace", ["validate", cut], expect=2)
    check(p.stderr.startswith("dmm-trace: ") and "offset " in p.stderr, "dmm-trace message %r" % p.stderr)
    p = c.run("analyse", [dbl], expect=2)
    check("operation 2:" in p.stderr, "dmm-analyse message")
    c.run("replay", [os.path.join(c.tmp, "does-not-exist")], expect=2)
    # bad configurations name the reason
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "dmm:preset=tlsf,fit=next"], expect=2)
    check("next fit" in p.stderr, "config check reason: %r" % p.stderr)
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "dmm:nosuch"], expect=2)
    check("unknown preset" in p.stderr, "preset message")
    c.run("replay", [c.data("simple.txt"), "--alloc", "nonsense"], expect=2)
    c.run("replay", [c.data("simple.txt"), "--reps", "0"], expect=2)
    c.run("replay", [c.data("simple.txt"), "--arena", "64"], expect=2)


def t_threads(c):
    for alloc in ["dmm:tlsf", "dmm:dlmalloc", "system"]:
        for rep in range(3):
            d, _ = c.replay_json(c.data("mt.txt"), ["--alloc", alloc, "--verify", "--reps", "2"])
            common_checks(d, 5396, 3, 9)
            check(d["trace"]["threads"] == 2 and d["trace"]["syncs"] == 2, "threads/syncs")
            check(d["trace"]["syncs_derived"] is False, "the trace's own syncs suffice")
            check(d["verify"] == "pass", "verify")
            th = d["timing"]["cold"]["threads"]
            check(len(th) == 2, "per-thread timing")
            c0, c1 = th[0]["kinds"]["all"]["count"], th[1]["kinds"]["all"]["count"]
            check(c0 == 5 and c1 == 4, "ops per thread %s/%s" % (c0, c1))
            if alloc.startswith("dmm"):
                check(d["allocator"]["lock_forced"] is True, "a lock is forced for threads")
    d, _ = c.replay_json(c.data("mt_nosync.txt"), ["--alloc", "dmm:tlsf", "--verify"])
    check(d["trace"]["syncs_derived"] is True, "missing syncs are derived")
    check(d["trace"]["syncs"] >= 3, "derived syncs: %s" % d["trace"]["syncs"])
    check(d["failed"] == 0 and d["skipped"] == 0 and d["verify"] == "pass", "derived-sync replay")


def t_min_arena(c):
    for p in ["tlsf", "firstfit", "p2012", "dlmalloc"]:
        d, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "dmm:" + p, "--min-arena"])
        ma = d["min_arena"]
        check(ma["found"] is True, "found")
        a = ma["bytes"]
        check(a % GRAN == 0 and a >= ma["lower_bound"], "granule multiple above the minimum buffer")
        check(ma["replays"] >= 2, "replays counted")
        check(a >= 3000, "holds the live bytes")
        ok, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "dmm:" + p, "--arena", str(a), "--verify"])
        check(ok["failed"] == 0 and ok["verify"] == "pass", "%s: the arena found (%d) replays" % (p, a))
        if a - GRAN < ma["lower_bound"]:
            c.run("replay", [c.data("trivial.txt"), "--alloc", "dmm:" + p, "--arena", str(a - GRAN)], expect=2)
        else:
            bad, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "dmm:" + p, "--arena", str(a - GRAN)])
            check(bad["failed"] > 0, "%s: one granule less (%d) must fail" % (p, a - GRAN))
    c.run("replay", [c.data("trivial.txt"), "--alloc", "system", "--min-arena"], expect=2)


def t_analyse(c):
    out = os.path.join(c.tmp, "a.json")
    c.run("analyse", [c.data("simple.txt"), "--json", out])
    got = json.load(open(out))
    want = json.load(open(c.data("simple.analyse.json")))
    got["trace"].pop("path", None)
    want["trace"].pop("path", None)
    if got != want:
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                print("differs: %s\n  got  %s\n  want %s" % (k, got.get(k), want.get(k)))
        raise Fail("dmm-analyse JSON differs from the golden file")
    # multi-threaded golden values, checked field by field
    c.run("analyse", [c.data("mt.txt"), "--json", out])
    m = json.load(open(out))
    check(m["peak"] == {"live_bytes": 5396, "live_objects": 3, "op": 3}, "mt peak %s" % m["peak"])
    check(m["threads"]["cross_thread_frees"] == 1 and m["threads"]["frees"] == 4, "cross-thread frees")
    check(abs(m["threads"]["cross_thread_free_fraction"] - 0.25) < 1e-12, "fraction")
    check(m["threads"]["cross_thread_reallocs"] == 1, "cross-thread reallocs")
    check(m["realloc"]["chains"] == 1 and m["realloc"]["growth_median"] == 2.0, "realloc chain")
    check(m["thread_ops"] == [5, 4], "ops per thread")
    check(m["lifetime"]["never_freed"] == 0 and m["lifetime"]["freed"] == 4, "lifetimes")
    # never-freed objects and the sampling of long traces
    long_t = os.path.join(c.tmp, "long.txt")
    with open(long_t, "w") as f:
        f.write("dmmtrace 1\n")
        for i in range(1, 3001):
            f.write("0 m %d %d\n" % (i, i % 97 + 1))
            if i % 3 == 0:
                f.write("0 f %d\n" % (i - 1))
    c.run("analyse", [long_t, "--json", out])
    m = json.load(open(out))
    pts = m["live"]["points"]
    check(len(pts) <= 514, "at most ~512 points (%d)" % len(pts))
    check(pts[-1][0] == 4000, "last point is the last op")
    check(m["lifetime"]["never_freed"] == 2000, "never freed %s" % m["lifetime"]["never_freed"])
    check(max(p[3] for p in pts) == m["peak"]["live_bytes"], "window maxima include the peak")


def t_trace_tool(c):
    b = os.path.join(c.tmp, "mt.bin")
    t2 = os.path.join(c.tmp, "mt2.txt")
    c.run("trace", ["convert", c.data("mt.txt"), b])
    c.run("trace", ["convert", b, t2])
    i1 = c.run("trace", ["info", c.data("mt.txt")]).stdout
    i2 = c.run("trace", ["info", b]).stdout
    h1 = [l for l in i1.splitlines() if l.startswith("hash")]
    h2 = [l for l in i2.splitlines() if l.startswith("hash")]
    check(h1 and h1 == h2, "hash survives conversion")
    check("threads   2" in i1 and "sync 2" in i1 and "valid     yes" in i1, "info: %s" % i1)
    check("purpose=two threads" in i1, "info prints metadata")
    p = c.run("trace", ["validate", t2])
    check("valid" in p.stdout, "validate")
    r = os.path.join(c.tmp, "rand.txt")
    c.run("trace", ["randomize", c.data("simple.txt"), r, "--seed", "42"])
    d, _ = c.replay_json(r, ["--verify", "--quiet"])
    check(d["trace"]["op_counts"]["malloc"] == 2 and d["trace"]["op_counts"]["realloc"] == 2, "randomized keeps allocs")
    check(d["failed"] == 0 and d["verify"] == "pass", "randomized trace replays")
    c.run("trace", ["randomize", c.data("simple.txt"), r], expect=2)  # --seed missing
    c.run("trace", ["frobnicate", r], expect=2)


def t_no_timing(c):
    d, _ = c.replay_json(c.data("simple.txt"), ["--no-timing", "--verify", "--quiet"])
    check(d["timing"]["enabled"] is False, "timing off")
    check("kinds" not in d["timing"]["cold"], "no per-kind timing without the clock")
    check(d["verify"] == "pass" and d["failed"] == 0, "replay still runs")


def t_clock(c):
    """The TSC frequency is measured over the replay itself (padded to
    10 ms after the passes when the replay is shorter), not over a fixed
    sleep before it: a one-operation trace, a longer one and a threaded one
    must agree on it within the 1% that compare's noise check allows
    between runs (python/dmmkit/stats.py FREQ_TOLERANCE)."""
    tps = []
    for name, extra in (("trivial.txt", []), ("simple.txt", ["--reps", "3"]), ("mt.txt", [])):
        d, _ = c.replay_json(c.data(name), ["--quiet"] + extra)
        t = d["timing"].get("ticks_per_sec")
        check(isinstance(t, (int, float)) and t > 0, "%s: ticks_per_sec %r, expected a positive number" % (name, t))
        tps.append(t)
    lo, hi = min(tps), max(tps)
    check(hi / lo - 1.0 <= 0.01, "ticks_per_sec differs by more than 1%% between replays: %r" % tps)


def t_verify_catches(c):
    if c.sanitized:
        print("skipped: LD_PRELOAD does not mix with sanitizer runtimes")
        return SKIP
    p = c.run("replay", [c.data("broken.txt"), "--alloc", "system", "--verify"],
              env={"LD_PRELOAD": c.a.broken}, expect=4)
    check("operation 2" in p.stderr and "realloc" in p.stderr, "names the op: %r" % p.stderr)
    # the same library without --verify goes unnoticed: the test above measures --verify
    c.run("replay", [c.data("broken.txt"), "--alloc", "system"], env={"LD_PRELOAD": c.a.broken}, expect=0)


def t_jemalloc(c):
    lib = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    if c.sanitized:
        print("skipped: LD_PRELOAD does not mix with sanitizer runtimes")
        return SKIP
    if not os.path.exists(lib):
        print("skipped: %s not installed" % lib)
        return SKIP
    d, p = c.replay_json(c.data("simple.txt"), ["--alloc", "system", "--verify", "--expect", "jemalloc"],
                         env={"LD_PRELOAD": lib})
    check(d["allocator"]["detected"] == "jemalloc", "detected %s" % d["allocator"]["detected"])
    check("libjemalloc" in d["allocator"]["malloc_object"], "malloc object %s" % d["allocator"]["malloc_object"])
    check("jemalloc" in d["memory"]["footprint_source"], "jemalloc stats used")
    check("system: jemalloc" in p.stdout, "human table")
    c.run("replay", [c.data("simple.txt"), "--alloc", "system", "--expect", "glibc"], env={"LD_PRELOAD": lib},
          expect=3)


# ---- the adversarial cases of issue 9 ------------------------------------------

def write(c, name, text):
    path = os.path.join(c.tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def one_line_error(p, what):
    err = p.stderr.strip()
    check(err.count("\n") == 0, "%s: expected one line on stderr, got:\n%s" % (what, err))
    check("usage:" not in err, "%s: printed the usage" % what)
    return err


def t_hostile(c):
    import time
    # a lone thread id 65535: one thread, quickly (it used to start 65,536)
    tr = write(c, "tid.txt", "dmmtrace 1\n65535 m 1 8\n65535 f 1\n")
    t0 = time.time()
    d, _ = c.replay_json(tr, ["--no-warm", "--quiet"])
    check(d["trace"]["threads"] == 1, "threads %s" % d["trace"]["threads"])
    check(time.time() - t0 < 30, "took %.0f s" % (time.time() - t0))
    d, _ = c.replay_json(tr, ["--alloc", "system", "--no-warm", "--quiet"])
    check(d["trace"]["threads"] == 1 and d["failed"] == 0, "system replay of the tid trace")
    p = c.run("analyse", [tr], expect=0)
    check("1 thread" in p.stdout, "analyse sees one thread: %s" % p.stdout[:200])

    # more threads than a replay may start: one clear refusal, nothing started
    body = "".join("%d m %d 8\n%d f %d\n" % (k, k, k, k) for k in range(1100))
    many = write(c, "many.txt", "dmmtrace 1\n" + body)
    p = c.run("replay", [many, "--no-warm"], expect=2)
    err = one_line_error(p, "too many threads")
    check("1100 threads" in err and "--max-threads" in err, "refusal names the count: %s" % err)
    p = c.run("replay", [tr, "--max-threads", "0"], expect=2)
    one_line_error(p, "--max-threads 0")

    # CS:APP .rep: free(NULL) and realloc(NULL) import, validate and replay
    rep = write(c, "x.rep", "1\n2\n3\n1\nr 0 8\nf 0\n")
    c.run("trace", ["validate", rep], expect=0)
    rep2 = write(c, "y.rep", "20000\n2\n6\n1\na 0 100\nf -1\nr 1 50\nr 1 70\nf 0\nf 1\n")
    d, _ = c.replay_json(rep2, ["--no-warm", "--quiet", "--verify"])
    check(d["failed"] == 0 and d["trace"]["ops"] == 5, "rep with NULL forms replays: %s" % d["trace"])
    p = c.run("analyse", [rep2], expect=0)
    bad = write(c, "bad.rep", "1\n2\n3\n1\na 0 8\nf -7\n")
    p = c.run("trace", ["validate", bad], expect=2)
    err = one_line_error(p, "malformed .rep")
    check("line 6" in err and "-1 for NULL" in err, "names the line and what is wrong: %s" % err)

    # a request no address space can hold: one failed allocation, not a refusal
    huge = write(c, "huge.txt", "dmmtrace 1\n0 m 1 18446744073709551615\n0 m 2 100\n0 f 1\n0 f 2\n")
    for alloc in ("dmm:tlsf", "system"):
        if alloc == "system" and c.sanitized:
            continue  # the sanitizer's malloc reports a huge request as an error
        d, p = c.replay_json(huge, ["--alloc", alloc, "--no-warm", "--quiet"])
        check(d["failed"] == 1, "%s: failed %s" % (alloc, d["failed"]))
        check(d["trace"]["impossible_requests"] == 1 and d["trace"]["peak_live"] == 100, "%s: trace figures" % alloc)
    d, _ = c.replay_json(huge, ["--min-arena"])
    check(d["min_arena"]["found"] is False and "no allocator can grant" in d["min_arena"]["reason"], "min arena")

    # out-of-range options: one line each, exit 2
    for args in (["--reps", "0"], ["--reps", "1001"], ["--arena", "0"], ["--arena", "12q"], ["--bogus"],
                 ["--alloc", "pool:x"], ["--json"]):
        p = c.run("replay", [tr] + args, expect=2)
        one_line_error(p, " ".join(args))
    p = c.run("analyse", [tr, "--bogus"], expect=2)
    one_line_error(p, "analyse --bogus")


def t_outputs(c):
    """Outputs appear complete or not at all: a file-size limit (a full disk)
    gives one message with the real cause, exit 1, and leaves the old file."""
    import resource
    tr = c.data("simple.txt")

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    for tool, args, out in (("replay", [tr, "--quiet", "--hist", "--no-warm"], "r.json"),
                            ("analyse", [tr], "a.json")):
        path = os.path.join(c.tmp, out)
        with open(path, "w") as f:
            f.write("old\n")
        exe = {"replay": c.a.replay, "analyse": c.a.analyse}[tool]
        p = subprocess.run([exe] + args + ["--json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120, preexec_fn=limited)
        check(p.returncode == 1, "%s under a 1 KiB file limit: exit %d\n%s" % (tool, p.returncode, p.stderr))
        check("File too large" in p.stderr and path in p.stderr, "%s names the cause: %s" % (tool, p.stderr))
        with open(path) as f:
            check(f.read() == "old\n", "%s replaced the old file with a partial one" % tool)
        left = [n for n in os.listdir(c.tmp) if n.startswith(out + ".")]
        check(not left, "%s left temporary files: %s" % (tool, left))
    # and dmm-trace convert
    path = os.path.join(c.tmp, "big.txt")
    p = subprocess.run([c.a.trace, "convert", c.data("mt.txt"), path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16)))
    check(p.returncode == 1 and "File too large" in p.stderr, "convert: %d %s" % (p.returncode, p.stderr))
    check(not os.path.exists(path) and not os.path.exists(path + ".part"), "convert left a file")


def t_honest_memory(c):
    """Every exact figure holds footprint >= used >= live; a figure that is
    not the allocator's own count is never published as fragmentation."""
    if c.sanitized:
        print("skipped: LD_PRELOAD does not mix with sanitizer runtimes")
        return SKIP
    peers = [("", "glibc")]
    for lib, name in (("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "jemalloc"),
                      ("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "tcmalloc"),
                      ("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "mimalloc")):
        if os.path.exists(lib):
            peers.append((lib, name))
    if c.a.libdmm:
        peers.append((c.a.libdmm, "libdmm"))
    for tr in ("simple.txt", "mt.txt"):
        for lib, name in peers:
            env = {"LD_PRELOAD": lib} if lib else None
            d, p = c.replay_json(c.data(tr), ["--alloc", "system", "--quiet", "--expect", name], env=env)
            m, f = d["memory"], d["fragmentation"]
            if m["exact"]:
                check(f is not None and f["exact"] is True, "%s: exact but no fragmentation" % name)
                check(f["frag3"] >= 1 and f["frag4"] >= 1, "%s %s: fragmentation below 1: %s" % (name, tr, f))
                check(f["internal_waste"] is None or f["internal_waste"] >= 0, "%s: internal waste < 0" % name)
                check(f["external_waste"] is None or f["external_waste"] >= 0, "%s: external waste < 0" % name)
            else:
                check(f is None, "%s: not exact, yet fragmentation published" % name)
                # "sampled": an own count whose peak is sampled across threads
                kinds = ("rss_growth", "commit_growth") + (("sampled",) if tr == "mt.txt" else ())
                check(m["footprint_kind"] in kinds, "kind %s" % m["footprint_kind"])
            if name == "libdmm":
                # libdmm: its own count of used bytes (growth over the pass),
                # the footprint from the resident set, both marked not exact.
                # Single-threaded, the used growth at the peak covers the
                # trace's live bytes (with threads the sample may meet other
                # threads' counts mid-update, so only its presence is checked)
                check(not m["exact"] and m["footprint_kind"] == "rss_growth", "libdmm: %s" % m)
                used = m["at_peak_live"]["used"]
                check(used is not None and "mallinfo2" in m["used_source"], "libdmm %s: used %s" % (tr, used))
                if tr == "simple.txt":
                    check(used >= m["at_peak_live"]["live"],
                          "libdmm %s: used %s below live %s" % (tr, used, m["at_peak_live"]["live"]))
    # what the console says for a figure that is not exact
    if len(peers) > 1 and any(n == "mimalloc" for _, n in peers):
        lib = [l for l, n in peers if n == "mimalloc"][0]
        p = c.run("replay", [c.data("simple.txt"), "--alloc", "system"], env={"LD_PRELOAD": lib})
        check("not exact" in p.stdout and "fragmentation  not measured" in p.stdout, p.stdout)


def pool_checks(d, classes):
    """What every pool: replay reports: the classes, each pool's statistics,
    the front's routing counts, and memory figures that add up."""
    a, m = d["allocator"], d["memory"]
    check(a["kind"] == "pool" and a["detected"] == "pool", "kind %s" % a["kind"])
    check(a["pool"]["classes"] == classes, "classes %s != %s" % (a["pool"]["classes"], classes))
    check(a["heap_errors"] == 0 and a["pool"]["pool_errors"] == 0, "misuse reports")
    pools = m["pools"]
    want = [tuple(int(x) for x in c.split("x")) for c in classes.split("/")] if classes else []
    check(len(pools) == len(want), "one stats object per pool: %s" % pools)
    for st, (size, count) in zip(pools, want):
        check(st["block_size"] == size and st["capacity"] >= count, "pool %s: %s" % (size, st))
        check(st["live_blocks"] == 0, "every block given back at the end: %s" % st)
    fr = m["front"]
    for k in ("pool_allocs", "heap_allocs", "pool_full"):
        check(isinstance(fr[k], int) and fr[k] >= 0, "front %s" % k)
    check(m["pool_bytes"] > 0 or not classes, "pool bytes")
    pk = m["at_peak_live"]
    check(m["peak_footprint"] >= pk["footprint"] >= m["pool_bytes"], "footprint includes the pools: %s" % m)
    f = d["fragmentation"]
    if f:
        check(f["internal_waste"] >= 0 and f["external_waste"] >= 0, "waste %s" % f)
        check(pk["footprint"] == pk["used"] + f["external_waste"] + f["metadata"],
              "footprint = used + external + metadata")
    return fr


def t_pool(c):
    # auto: power-of-two classes sized from the trace's per-class peak in
    # trace order (simple.txt: 48 -> 64 B once; 100 -> 128 B once, the
    # realloc to 500 leaves the pools; 200 and the 200-byte calloc -> 256 B twice)
    # (with auto512 the 500-byte realloc has a class of its own)
    for spec, classes in [("auto", "64x1/128x1/256x2"), ("auto;heap=tlsf", "64x1/128x1/256x2"),
                          ("auto512;heap=dlmalloc", "64x1/128x1/256x2/512x1")]:
        d, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "pool:" + spec, "--verify", "--reps", "2"])
        common_checks(d, 900, 3, 10)
        check(d["verify"] == "pass", "verify")
        fr = pool_checks(d, classes)
        check(fr["pool_allocs"] >= 3, "the 100, 200 and calloc 200 requests come from the pools: %s" % fr)
        check(fr["pool_full"] == 0, "profile-sized pools are never full in trace order: %s" % fr)
        check(d["allocator"]["pool"]["sizing"].startswith("auto"), "sizing")
    # explicit classes, pool keys, a heap config
    spec = "16x10/32x10/128x4/256x4;harden=canary;poison=on;heap=preset=dlmalloc,quick_max=0"
    d, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "pool:" + spec, "--verify", "--reps", "2"])
    common_checks(d, 900, 3, 10)
    check(d["verify"] == "pass", "verify (explicit)")
    pool_checks(d, "16x10/32x10/128x4/256x4")
    check("harden=canary" in d["allocator"]["pool"]["config"], "pool keys applied: %s" % d["allocator"]["pool"])
    check("quick_max=0" in d["allocator"]["config"], "heap config applied: %s" % d["allocator"]["config"])
    # pools full: a single 256-byte block; the second 256-byte request goes to the heap
    d, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "pool:256x1", "--verify"])
    common_checks(d, 900, 3, 10)
    fr = pool_checks(d, "256x1")
    check(fr["pool_full"] >= 1 and fr["heap_allocs"] >= 2, "a full pool sends requests to the heap: %s" % fr)
    # threads: the pools get a lock too
    d, _ = c.replay_json(c.data("mt.txt"), ["--alloc", "pool:auto;heap=tlsf", "--verify", "--reps", "2"])
    common_checks(d, 5396, 3, 9)
    check(d["verify"] == "pass", "verify (threads)")
    check(d["allocator"]["pool"]["lock_forced"] is True and d["allocator"]["lock_forced"] is True, "locks forced")
    # --min-arena: the smallest arena (pools + heap) with no failed allocation
    d, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "pool:auto", "--min-arena"])
    ma = d["min_arena"]
    check(ma["found"] is True and ma["bytes"] >= ma["lower_bound"], "min arena %s" % ma)
    ok, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "pool:auto", "--arena", str(ma["bytes"]), "--verify"])
    check(ok["failed"] == 0 and ok["verify"] == "pass", "the arena found replays")
    if ma["bytes"] - GRAN >= ma["lower_bound"]:
        bad, _ = c.replay_json(c.data("trivial.txt"), ["--alloc", "pool:auto", "--arena", str(ma["bytes"] - GRAN)])
        check(bad["failed"] > 0, "one granule less must fail")
    # the console names the pools
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "pool:auto", "--no-timing"])
    check("pools 64x1/128x1/256x2" in p.stdout, p.stdout)
    # --count-sweep and --check-configs take pool lines
    cfg = os.path.join(c.tmp, "sweep.txt")
    with open(cfg, "w") as f:
        f.write("1048576 pool:auto;heap=tlsf\n1048576 pool:16x0\n1048576 dmm:tlsf\n")
    p = c.run("replay", [c.data("simple.txt"), "--count-sweep", cfg])
    lines = p.stdout.splitlines()
    check(lines[0] == "ok 1 0" and lines[1].startswith("error 2 ") and "16x0" in lines[1] and lines[2] == "ok 3 0",
          "count sweep: %s" % lines)
    p = subprocess.run([c.a.replay, "--check-configs", "-"], input="pool:auto;heap=tlsf\npool:auto;heap=nosuch\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines[0] == "ok pool:auto;heap=tlsf" and lines[1].startswith("error ")
          and "nosuch" in lines[1], "check-configs: %s" % lines)


def t_pool_bad_specs(c):
    bad = {
        "pool:": "empty specification",
        "pool:16x0": "'16x0'",
        "pool:16xx": "'16xx'",
        "pool:16": "'16'",
        "pool:16x4/": "empty class",
        "pool:auto100": "'auto100'",
        "pool:auto8": "'auto8'",
        "pool:16x1/16x2": "given twice",
        "pool:auto;harden=bogus": "'harden=bogus'",
        "pool:auto;frob=1": "'frob=1'",
        "pool:auto;block=64": "block size comes from the classes",
        "pool:auto;heap=nosuch": "'nosuch'",
        "pool:auto;heap=preset=tlsf,fit=sideways": "fit=sideways",
        "pool:auto;heap=tlsf;heap=dlmalloc": "heap= given twice",
        "pool:auto;;heap=tlsf": "empty part",
        "pool:auto;foo": "'foo'",
        "pool:" + "/".join("%dx1" % (16 * (i + 1)) for i in range(17)): "more than 16 classes",
    }
    for spec, want in bad.items():
        p = c.run("replay", [c.data("simple.txt"), "--alloc", spec, "--no-timing"], expect=2)
        msg = p.stderr.strip()
        check(want in msg and msg.count("\n") == 0, "%s: message %r lacks %r" % (spec, msg, want))
    c.run("replay", [c.data("simple.txt"), "--alloc", "pool:auto", "--arena", "64"], expect=2)
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "pool:auto", "--heapmap", os.path.join(c.tmp, "h.json")],
              expect=2)
    check("--heapmap" in p.stderr, p.stderr)
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "poolx"], expect=2)
    check("pool:..." in p.stderr, "the usage names pool:: %s" % p.stderr)


# ---- multiheap: (backend_multiheap.c) ----------------------------------------

MH_KEYS = ("local_allocs", "remote_allocs", "served_remote", "skipped_busy", "remote_frees", "queued_frees",
           "failures")
MH_POLICIES = ("lazy", "central", "private", "priority")

# Thread 0 (home node 0) makes five 20000-byte blocks: with 2 nodes on a
# 128 KiB arena its node holds three, so two go to node 1 (or fail, private);
# thread 1 (node 1) then frees all five; thread 2 (node 2 % 2 = 0) makes and
# frees one small block at home.  Every cross-thread use is ordered by SYNC,
# so the counts are exact even on replay threads.
MH_TRACE = """dmmtrace 1
meta purpose=multiheap home nodes: thread t on node t % 2
0 m 1 20000
0 m 2 20000
0 m 3 20000
0 m 4 20000
0 m 5 20000
1 s 0 5
1 f 1
1 f 2
1 f 3
1 f 4
1 f 5
2 s 1 5
2 m 6 100
2 f 6
"""


def mh_nodes(d, n):
    a, m = d["allocator"], d["memory"]
    check(a["kind"] == "multiheap" and a["detected"] == "multiheap", "kind %s" % a["kind"])
    check(a["multiheap"]["nodes"] == n, "nodes %s" % a["multiheap"])
    nodes = m["nodes"]
    check(len(nodes) == n and [x["node"] for x in nodes] == list(range(n)), "one stats object per node: %s" % nodes)
    for x in nodes:
        for k in MH_KEYS:
            check(isinstance(x.get(k), int) and x[k] >= 0, "node %s lacks %s: %s" % (x["node"], k, x))
    check(m["peak_footprint"] == sum(x["peak_extent"] for x in nodes), "footprint = sum of node peak extents")
    check("peak_extent" in m["peak_footprint_method"], m["peak_footprint_method"])
    check(a["heap_errors"] == 0, "misuse reports: %s" % a)
    return nodes


def mh_sum(nodes, k):
    return sum(x[k] for x in nodes)


def t_multiheap(c):
    tr = write(c, "mh.txt", MH_TRACE)
    for pol in MH_POLICIES:
        for fr in ("locked", "queue"):
            spec = "multiheap:2;policy=%s;free=%s" % (pol, fr)
            d, _ = c.replay_json(tr, ["--alloc", spec, "--arena", "131072", "--verify", "--reps", "2"])
            check(d["verify"] == "pass", "%s: verify" % spec)
            check(len(d["timing"]["cold"]["threads"]) == 3, "%s: replayed on 3 threads" % spec)
            a = d["allocator"]["multiheap"]
            check(a["policy"] == pol and a["remote_free"] == fr, "%s: %s" % (spec, a))
            n0, n1 = nodes = mh_nodes(d, 2)
            got = [[x[k] for k in MH_KEYS] for x in nodes]
            # local, remote, served_remote, skipped, remote_frees, queued, failures
            q = 3 if fr == "queue" else 0
            if pol in ("lazy", "priority"):
                want = [[4, 0, 2, 0, 3, q, 0], [0, 2, 0, 0, 0, 0, 0]]
            elif pol == "private":
                want = [[4, 0, 0, 0, 3, q, 2], [0, 0, 0, 0, 0, 0, 0]]
            else:
                # one heap over both ranges, served as node 0's: a free of a
                # block in node 0's range from node 1 is remote, never queued
                want = [[6, 0, 0, 0, n0["remote_frees"], 0, 0], [0, 0, 0, 0, 0, 0, 0]]
                check(n0["remote_frees"] >= 3, "%s: remote frees %s" % (spec, got))
            check(got == want, "%s: node stats %s, expected %s" % (spec, got, want))
            check(d["failed"] == (2 if pol == "private" else 0), "%s: failed %s" % (spec, d["failed"]))
    # a bundled multi-threaded trace, every policy and free mode: the sums agree
    t4 = os.path.join(c.a.data, "..", "..", "..", "bench", "traces", "fast-t4.trace")
    if not os.path.exists(t4):
        raise Fail("bundled trace %s missing" % t4)
    for pol in MH_POLICIES:
        for fr in ("locked", "queue"):
            spec = "multiheap:4;policy=%s;free=%s" % (pol, fr)
            d, _ = c.replay_json(t4, ["--alloc", spec, "--arena", "600000", "--verify", "--no-warm"])
            check(d["verify"] == "pass", "%s: verify" % spec)
            check(d["trace"]["threads"] > 1 and len(d["timing"]["cold"]["threads"]) == d["trace"]["threads"],
                  "%s: threaded replay" % spec)
            nodes = mh_nodes(d, 4)
            oc = d["trace"]["op_counts"]
            check(oc["realloc"] == 0 and oc["aligned"] == 0, "fast-t4 has no realloc/aligned: %s" % oc)
            allocs = oc["malloc"] + oc["calloc"]
            served = mh_sum(nodes, "local_allocs") + mh_sum(nodes, "served_remote") + mh_sum(nodes, "failures")
            check(served == allocs, "%s: local + served remote + failures = %d, the trace allocates %d"
                  % (spec, served, allocs))
            check(mh_sum(nodes, "remote_allocs") == mh_sum(nodes, "served_remote"), "%s: remote balance" % spec)
            check(mh_sum(nodes, "failures") == d["failed"], "%s: failures %d vs failed %d"
                  % (spec, mh_sum(nodes, "failures"), d["failed"]))
            check(mh_sum(nodes, "remote_frees") > 0, "%s: fast-t4 frees across threads" % spec)
            if fr == "locked" or pol == "central":
                check(mh_sum(nodes, "queued_frees") == 0, "%s: nothing queued" % spec)
            else:
                check(mh_sum(nodes, "queued_frees") == mh_sum(nodes, "remote_frees"), "%s: all remote frees "
                      "queued" % spec)
            if pol == "private":
                check(mh_sum(nodes, "remote_allocs") == 0 and mh_sum(nodes, "skipped_busy") == 0,
                      "%s: private never leaves home" % spec)
            if pol == "central":
                check(all(x["remote_allocs"] == 0 for x in nodes[1:]), "%s: central serves from node 0" % spec)
    # --min-arena: the smallest arena with no failed allocation, homes as in a threaded replay
    for pol, least in (("lazy", 100000), ("private", 200000)):
        spec = "multiheap:2;policy=%s" % pol
        d, _ = c.replay_json(tr, ["--alloc", spec, "--min-arena"])
        ma = d["min_arena"]
        check(ma["found"] is True and ma["bytes"] >= ma["lower_bound"], "%s: min arena %s" % (spec, ma))
        # private: node 0 alone holds the five blocks, so both halves must
        check(ma["bytes"] >= least, "%s: min arena %d below %d" % (spec, ma["bytes"], least))
        ok, _ = c.replay_json(tr, ["--alloc", spec, "--arena", str(ma["bytes"]), "--verify"])
        check(ok["failed"] == 0 and ok["verify"] == "pass", "%s: the arena found replays" % spec)
        if ma["bytes"] - GRAN >= ma["lower_bound"]:
            bad, _ = c.replay_json(tr, ["--alloc", spec, "--arena", str(ma["bytes"] - GRAN)])
            check(bad["failed"] > 0, "%s: one granule less must fail" % spec)
    # the sequential replays of --min-arena keep the homes: thread 1's block
    # is node 1's, so each private node holds one 30000-byte block (with
    # every operation on node 0, node 0 would need both)
    tr2 = write(c, "mh2.txt", "dmmtrace 1\n0 m 1 30000\n1 s 0 1\n1 m 2 30000\n1 f 1\n1 f 2\n")
    d, _ = c.replay_json(tr2, ["--alloc", "multiheap:2;policy=private", "--min-arena"])
    ma = d["min_arena"]
    check(ma["found"] is True and 60000 < ma["bytes"] < 90000, "private homes in --min-arena: %s" % ma)
    ok, _ = c.replay_json(tr2, ["--alloc", "multiheap:2;policy=private", "--arena", str(ma["bytes"]), "--verify"])
    check(ok["failed"] == 0 and ok["verify"] == "pass", "the arena found replays on threads")
    # the default is dmm_mh_default_config's (queued frees, home cache 16);
    # cache= sets the home cache, whose hits are local allocations
    d, _ = c.replay_json(tr, ["--alloc", "multiheap:2", "--arena", "131072", "--verify"])
    a = d["allocator"]["multiheap"]
    check(a["remote_free"] == "queue" and a["home_cache"] == 16, "multiheap:2 defaults: %s" % a)
    # one thread frees and asks again for the same size: with a cache, the
    # second and third requests are served from it (exactly, on one thread)
    tr3 = write(c, "mh3.txt", "dmmtrace 1\n0 m 1 100\n0 f 1\n0 m 2 100\n0 f 2\n0 m 3 100\n0 f 3\n")
    for cache in (0, 3):
        spec = "multiheap:2;cache=%d" % cache
        d, _ = c.replay_json(tr3, ["--alloc", spec, "--arena", "131072", "--verify", "--no-warm"])
        check(d["verify"] == "pass" and d["allocator"]["multiheap"]["home_cache"] == cache, "%s: %s"
              % (spec, d["allocator"]["multiheap"]))
        nodes = mh_nodes(d, 2)
        hits, local = mh_sum(nodes, "cache_hits"), mh_sum(nodes, "local_allocs")
        check(hits == (2 if cache else 0) and local == 3, "%s: %d cache hits, %d local" % (spec, hits, local))
    # the console reports the first pass
    p = c.run("replay", [tr, "--alloc", "multiheap:2", "--arena", "131072", "--no-timing"])
    check("2 nodes, lazy" in p.stdout and "home cache 16" in p.stdout and "4 local, 2 remote allocations" in p.stdout,
          p.stdout)
    # --check-configs takes multiheap lines
    p = subprocess.run([c.a.replay, "--check-configs", "-"],
                       input="multiheap:4;policy=central;heap=dlmalloc\nmultiheap:4;policy=nosuch\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines[0] == "ok multiheap:4;policy=central;heap=dlmalloc"
          and lines[1].startswith("error ") and "policy=nosuch" in lines[1], "check-configs: %s" % lines)


def t_multiheap_bad_specs(c):
    bad = {
        "multiheap:": "empty specification",
        "multiheap:0": "'0'",
        "multiheap:257": "'257'",
        "multiheap:99999999999999999999": "'99999999999999999999'",
        "multiheap:x": "'x'",
        "multiheap:4;policy=nosuch": "'policy=nosuch'",
        "multiheap:4;free=later": "'free=later'",
        "multiheap:4;final=maybe": "'final=maybe'",
        "multiheap:4;cache=": "'cache='",
        "multiheap:4;cache=257": "'cache=257'",
        "multiheap:4;cache=8x": "'cache=8x'",
        "multiheap:4;heap=nosuch": "'heap=nosuch'",
        "multiheap:4;heap=preset=tlsf,fit=sideways": "fit",
        "multiheap:4;frob=1": "'frob=1'",
        "multiheap:4;;policy=lazy": "empty part",
    }
    for spec, want in bad.items():
        p = c.run("replay", [c.data("simple.txt"), "--alloc", spec, "--no-timing"], expect=2)
        msg = p.stderr.strip()
        check(want in msg and msg.count("\n") == 0, "%s: message %r lacks %r" % (spec, msg, want))
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "multiheap:4", "--arena", "4096"], expect=2)
    check("below the minimum" in p.stderr, p.stderr)
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "multiheap:4", "--heapmap", os.path.join(c.tmp, "h.json")],
              expect=2)
    check("--heapmap" in p.stderr, p.stderr)
    p = c.run("replay", [c.data("simple.txt"), "--alloc", "multi"], expect=2)
    check("multiheap:..." in p.stderr, "the usage names multiheap:: %s" % p.stderr)


def t_min_arena_methods(c):
    """--min-arena (extent: one replay's extent high-water, confirmed) finds
    the same minimum as the plain bisection (--min-arena=bisect) on several
    traces x configs, configs whose decisions may depend on the arena size
    (quick lists, deferred coalescing) included; the fixed-policy ones need
    far fewer replays."""
    bench = os.path.normpath(os.path.join(c.a.data, "..", "..", "..", "bench", "traces"))
    traces = [c.data("trivial.txt"), c.data("simple.txt")]
    traces += [os.path.join(bench, t) for t in ("fft.trace", "fast-rf.trace", "gaussian.trace")
               if os.path.exists(os.path.join(bench, t))]
    configs = ["tlsf", "p2012", "firstfit", "halffit", "dlmalloc", "preset=p2012,split=on",
               "preset=tlsf,coalesce=deferred", "preset=p2012,fit=best", "preset=tlsf,max_block_log2=24"]
    fast = 0
    for t in traces:
        for cfg in configs:
            a = ["--alloc", "dmm:" + cfg]
            e, _ = c.replay_json(t, a + ["--min-arena"])
            b, _ = c.replay_json(t, a + ["--min-arena=bisect"])
            me, mb = e["min_arena"], b["min_arena"]
            where = "%s on %s" % (cfg, os.path.basename(t))
            check(mb["search"] == "bisect", "%s: --min-arena=bisect reports %r" % (where, mb["search"]))
            check(me["search"] in ("extent", "tight-bisect"), "%s: search %r" % (where, me["search"]))
            check(me["found"] and mb["found"], "%s: found" % where)
            check(me["bytes"] == mb["bytes"], "%s: extent %s != bisection %s (replays %s / %s, predicted %s)"
                  % (where, me["bytes"], mb["bytes"], me["replays"], mb["replays"], me["predicted"]))
            if me["search"] == "extent":
                fast += 1
                check(me["replays"] < mb["replays"], "%s: %s replays, the bisection %s"
                      % (where, me["replays"], mb["replays"]))
            if "quick" in cfg or "deferred" in cfg or cfg == "dlmalloc":
                check(me["search"] == "tight-bisect", "%s: a flushing policy is not predicted" % where)
    check(fast >= len(traces) * 4, "the extent search applied to %d runs only" % fast)
    c.run("replay", [c.data("trivial.txt"), "--min-arena=guess"], expect=2)


def t_output_to_fifo(c):
    """An output path that is not a regular file (a FIFO here, /dev/null in
    practice) is written in place: it stays what it was and its reader gets
    the whole JSON, instead of a temporary file being renamed over it."""
    fifo = os.path.join(c.tmp, "out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    c.run("replay", [c.data("simple.txt"), "--alloc", "dmm:tlsf", "--no-timing", "--quiet", "--json", fifo])
    reader.join(30)
    check(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a plain file")
    check(got and json.loads(got[0])["schema"] == "dmm-replay/1", "the reader did not get the JSON")


def t_ops_prefix(c):
    """--ops N replays the first N entries of the trace and says so."""
    full, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:tlsf", "--no-timing"])
    n = full["trace"]["ops"]
    check(full["trace"]["prefix"] is False and full["trace"]["ops_limit"] is None, "no prefix by default")
    check(full["trace"]["ops_in_file"] == n, "ops_in_file %s vs %s" % (full["trace"]["ops_in_file"], n))
    pre, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:tlsf", "--no-timing", "--ops", "3"])
    tr = pre["trace"]
    check(tr["ops"] == 3 and tr["ops_in_file"] == n and tr["ops_limit"] == 3 and tr["prefix"] is True,
          "a 3-entry prefix: %s" % tr)
    check(pre["failed"] == 0, "the prefix replays")
    ma, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:tlsf", "--ops", "3", "--min-arena"])
    check(ma["trace"]["ops"] == 3 and ma["min_arena"]["found"], "--min-arena on the prefix")
    big, _ = c.replay_json(c.data("simple.txt"), ["--alloc", "dmm:tlsf", "--no-timing", "--ops", str(10 * n)])
    check(big["trace"]["ops"] == n and big["trace"]["prefix"] is False, "N past the end: the whole trace")
    for bad in ("0", "-1", "x", "3k"):
        p = c.run("replay", [c.data("simple.txt"), "--ops", bad], expect=2)
        check("--ops" in p.stderr and p.stderr.count("\n") == 1, "one line for --ops %s: %r" % (bad, p.stderr))


TESTS = {
    "dmm_presets": t_dmm_presets,
    "system": t_system,
    "malformed": t_malformed,
    "threads": t_threads,
    "min_arena": t_min_arena,
    "min_arena_methods": t_min_arena_methods,
    "ops_prefix": t_ops_prefix,
    "output_to_fifo": t_output_to_fifo,
    "analyse": t_analyse,
    "trace_tool": t_trace_tool,
    "no_timing": t_no_timing,
    "clock": t_clock,
    "verify_catches": t_verify_catches,
    "jemalloc": t_jemalloc,
    "hostile": t_hostile,
    "outputs": t_outputs,
    "honest_memory": t_honest_memory,
    "pool": t_pool,
    "pool_bad_specs": t_pool_bad_specs,
    "multiheap": t_multiheap,
    "multiheap_bad_specs": t_multiheap_bad_specs,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test", choices=sorted(TESTS))
    ap.add_argument("--replay", required=True)
    ap.add_argument("--analyse", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--broken", default="")
    ap.add_argument("--libdmm", default="", help="libdmm.so (src/malloc), when built")
    ap.add_argument("--data", required=True)
    ap.add_argument("--sanitize", default="none")
    a = ap.parse_args()
    c = Ctx(a)
    try:
        rc = TESTS[a.test](c)
    except Fail as e:
        print("FAIL: %s (its files are kept in %s)" % (e, c.tmp))
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL: timeout: %s (its files are kept in %s)" % (e, c.tmp))
        return 1
    # A test that passed (or was skipped) leaves nothing behind; a failed
    # one keeps its scratch directory for the post-mortem.
    shutil.rmtree(c.tmp, ignore_errors=True)
    if rc == SKIP:
        return SKIP
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
