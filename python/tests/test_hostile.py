"""Hostile input (issue 26 item 10): a two-operation trace asking for 2^63
bytes and then reallocating that object to 2^62 bytes.  Every dmm-replay
backend replays it with the allocation failing, in one process that stays
small (the arena of a trace that cannot fit is mapped lazily, not touched
page by page); advise refuses it in one line.  And a multi-threaded replay
on a system allocator does not call its sampled peak exact."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import TOOLS_DIR, load, run_cli

HOSTILE = "dmmtrace 1\n0 m 1 9223372036854775808\n0 r 1 4611686018427387904\n"
LIMIT_KB = 100 * 1024
HANG = 60  # a hang detector, not a timing claim


@pytest.fixture
def hostile(tmp_path):
    p = tmp_path / "hostile.trace.txt"
    p.write_text(HOSTILE)
    return p


def _run_measured(cmd: list[str]) -> tuple[int, int, str]:
    """Runs cmd; returns (exit status, its own peak RSS in KiB, stdout).
    Through dmmkit.procs.run_process: GNU time's maxrss of the command
    itself (a direct child of this process would report pytest's own
    high-water mark, inherited across exec)."""
    from dmmkit.procs import rss_method, run_process
    if rss_method() != "gnu-time":
        pytest.skip("GNU time (/usr/bin/time) is needed to measure a child's own peak RSS")
    code, out, err, _wall, rss, timed_out = run_process(cmd, None, HANG)
    assert not timed_out, f"{cmd} still running after {HANG} s"
    return code, rss or 0, out + err


@pytest.mark.parametrize("alloc", [None, "dmm:tlsf", "system", "pool:auto;heap=tlsf",
                                   "multiheap:4;policy=lazy;heap=tlsf"])
def test_replay_fails_the_allocation_and_stays_small(hostile, tmp_path, alloc):
    js = tmp_path / "r.json"
    cmd = [str(TOOLS_DIR / "dmm-replay"), "--json", str(js), str(hostile)] + (["--alloc", alloc] if alloc else [])
    rc, kb, out = _run_measured(cmd)
    assert rc == 0, out
    assert kb < LIMIT_KB, f"{alloc}: peak RSS {kb} KiB"
    d = load(js)
    assert d["failed"] == 1
    assert "nan" not in out


def test_min_arena_on_the_hostile_trace(hostile):
    rc, kb, out = _run_measured([str(TOOLS_DIR / "dmm-replay"), "--min-arena", str(hostile)])
    assert rc == 0 and kb < LIMIT_KB and "no allocator can grant" in out, out


def test_advise_refuses_the_hostile_trace_in_one_line(hostile, tmp_path):
    p = run_cli(["advise", str(hostile), "-o", str(tmp_path / "o")], cwd=tmp_path, timeout=HANG)
    assert p.returncode == 2
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dmmkit advise: error: trace "), p.stderr
    assert "9223372036854775808 bytes, more than this machine's memory" in lines[0]


def test_compare_reports_the_failed_allocation(hostile, tmp_path):
    res = tmp_path / "c.json"
    p = run_cli(["compare", str(hostile), "-a", "glibc,dmm:tlsf", "--reps", "2", "--results", str(res)],
                cwd=tmp_path, timeout=HANG)
    assert p.returncode == 0, p.stderr
    d = load(res)
    assert all(d["overall"][lab]["failed"] == 1 for lab in ("glibc", "dmm:tlsf"))


def _two_thread_lines() -> list[str]:
    import random
    r = random.Random(26)
    lines, live, nid = ["dmmtrace 1"], {0: [], 1: []}, 0
    for _ in range(4000):
        t = r.randrange(2)
        if live[t] and r.random() < 0.45:
            lines.append(f"{t} f {live[t].pop(r.randrange(len(live[t])))}")
        else:
            lines.append(f"{t} m {nid} {r.choice([16, 64, 200, 1000, 5000])}")
            live[t].append(nid)
            nid += 1
    return lines


def test_system_allocator_sampled_peak_on_threads_is_not_exact(tmp_path):
    """With several replay threads the peak footprint of a system allocator
    is the largest sample, which can miss the peak-live moment (fragmentation
    #4 below 1 was reported as exact)."""
    lines = _two_thread_lines()
    tr = tmp_path / "mt.trace.txt"
    tr.write_text("\n".join(lines) + "\n")
    js = tmp_path / "r.json"
    p = subprocess.run([str(TOOLS_DIR / "dmm-replay"), "--alloc", "system", "--json", str(js), str(tr)],
                       capture_output=True, text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr
    d = json.loads(js.read_text())
    assert d["trace"]["threads"] == 2
    assert d["memory"]["exact"] is False and d["memory"]["footprint_kind"] == "sampled"
    assert d["fragmentation"] is None
    # a single-threaded replay keeps the allocator's own count exact
    st = tmp_path / "st.trace.txt"
    st.write_text("\n".join(ln if ln.startswith("dmmtrace") else "0" + ln[1:] for ln in lines) + "\n")
    p = subprocess.run([str(TOOLS_DIR / "dmm-replay"), "--alloc", "system", "--json", str(js), str(st)],
                       capture_output=True, text=True, timeout=HANG)
    assert p.returncode == 0, p.stderr
    d = json.loads(js.read_text())
    if d["allocator"].get("detected") == "glibc":
        assert d["memory"]["exact"] is True


def test_compare_on_the_hostile_trace_is_quick_and_small(hostile, tmp_path):
    """issue 26 item 10: compare on the two-op trace took 107 MB (scipy's
    bootstrap and Wilcoxon test for two allocators that both failed the
    allocation).  An allocator with failed allocations did not do the
    baseline's work: it gets no interval test, no tie and no group, so the
    default adaptive compare stops at its minimum repetitions, under 100 MB."""
    import sys
    res = tmp_path / "c.json"
    cmd = [sys.executable, "-m", "dmmkit", "compare", str(hostile), "-a", "glibc,dmm:tlsf",
           "--results", str(res), "--no-pictures"]
    rc, kb, out = _run_measured(cmd)
    assert rc == 0, out
    assert kb < LIMIT_KB, f"compare: peak RSS {kb} KiB"
    d = load(res)
    for lab in ("glibc", "dmm:tlsf"):
        o = d["overall"][lab]
        assert o["failed"] == 1 and o["tie"] is None and o["warm_avg_ratio_ci"] is None and o["group"] is None
    assert "failed allocation" in d["overall"]["dmm:tlsf"]["speed_untested"]
    assert d["reps_done"] == 9, d["reps_stop"]


def test_compare_takes_a_sampled_peak_on_threads(tmp_path):
    """The README's main job stopped in compare on larson (4 threads):
    dmm-replay's footprint_kind "sampled" (a system allocator's peak sampled
    across threads) was refused as "not valid dmm-replay output".  compare
    now takes it, marks the figure approximate and gives no fragmentation."""
    tr = tmp_path / "mt.trace.txt"
    tr.write_text("\n".join(_two_thread_lines()) + "\n")
    res = tmp_path / "c.json"
    p = run_cli(["compare", str(tr), "-a", "glibc,dmm:tlsf", "--reps", "2", "--no-pictures", "--results", str(res)],
                cwd=tmp_path, timeout=HANG)
    assert p.returncode == 0, p.stderr
    s = load(res)["summary"]["mt.trace"]["glibc"]
    assert s["footprint_kind"] == "sampled" and s["memory_exact"] is False and s["frag4"] is None
    assert "peak sampled during a multi-threaded replay" in p.stdout
