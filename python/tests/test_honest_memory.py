"""Memory figures that are not exact are marked wherever they appear, never
published as fragmentation; the report of an explore run made without
timing (and without instruction counts) draws no empty plot and raises no
warning; the one size parser."""

from __future__ import annotations

import copy
import json
import re

import pytest

from conftest import load, run_cli
from dmmkit.compare import print_compare, summarise_compare
from dmmkit.errors import DmmkitError
from dmmkit.measure import timing_figures
from dmmkit.memfig import APPROX
from dmmkit.sizes import parse_size


def replay_doc(kind: str, memory: dict | None, frag: dict | None) -> dict:
    return {"schema": "dmm-replay/1", "trace": {"ops": 10}, "allocator": {"kind": kind},
            "timing": {"cold": None, "warm": None}, "memory": memory, "fragmentation": frag, "failed": 0}


def test_timing_figures_exactness():
    frag = {"frag3": 1.3, "frag4": 1.4}
    # new replayer, not exact: no fragmentation object, RSS growth given
    f = timing_figures(replay_doc("system", {"exact": False, "footprint_kind": "rss_growth", "rss_growth": 8192,
                                             "peak_footprint": None}, None))
    assert f["memory_exact"] is False and f["footprint_kind"] == "rss_growth" and f["rss_growth"] == 8192
    assert f["frag4"] is None and f["frag3"] is None
    # old files: no "exact": exact for dmm, not for anything else (whose ratio is then dropped)
    f = timing_figures(replay_doc("dmm", {"peak_footprint": 4096}, frag))
    assert f["memory_exact"] is True and f["frag4"] == 1.4
    f = timing_figures(replay_doc("system", {"peak_footprint": 4096}, frag))
    assert f["memory_exact"] is False and f["frag4"] is None and f["footprint_kind"] == "allocator"
    # exact system figures (an allocator's own statistics) keep their ratio
    f = timing_figures(replay_doc("system", {"exact": True, "footprint_kind": "allocator", "peak_footprint": 4096},
                                  frag))
    assert f["memory_exact"] is True and f["frag4"] == 1.4


@pytest.mark.parametrize("lib,kind", [("", "allocator"),
                                      ("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "commit_growth")])
def test_real_replay_memory_passes_the_checker(tools, tiny_trace, lib, kind):
    """What the replayer really writes for a system allocator passes the one
    checker: glibc exact, mimalloc 2.0 (no count of allocated bytes) as the
    growth of its committed memory, never as fragmentation."""
    import os
    import subprocess
    from dmmkit.schemas import REPLAY
    from dmmkit.validate import check_document
    if lib and not os.path.exists(lib):
        pytest.skip(f"{lib} not installed")
    env = dict(os.environ, LD_PRELOAD=lib) if lib else None
    p = subprocess.run([str(tools.replay), str(tiny_trace), "--alloc", "system", "--quiet", "--no-warm",
                        "--json", "-"], stdout=subprocess.PIPE, env=env, check=True, universal_newlines=True)
    doc = json.loads(p.stdout)
    check_document(doc, (REPLAY,), "replay output")
    f = timing_figures(doc)
    assert f["footprint_kind"] == kind
    if kind == "allocator":
        assert f["memory_exact"] is True and f["frag4"] >= 1.0
    else:
        assert f["memory_exact"] is False and f["frag4"] is None and doc["fragmentation"] is None


def _compare_doc(glibc_run: dict) -> dict:
    run = {"warm_avg": 100, "cold_avg": 100, "failed": 0}
    return {"schema": "dmmkit-compare/1", "baseline": "glibc", "settings": {"reps": 1},
            "allocators": [{"label": "glibc", "kind": "system"}, {"label": "dmm:tlsf", "kind": "dmm"}],
            "traces": [{"label": "t"}],
            "runs": {"t": {"glibc": [{**run, **glibc_run}],
                           "dmm:tlsf": [{**run, "peak_footprint": 70000, "frag4": 1.25}]}}}


def test_compare_summary_and_console(capsys):
    doc = _compare_doc({"peak_footprint": None, "rss_growth": 123456, "memory_exact": False,
                        "footprint_kind": "rss_growth", "frag4": None})
    summarise_compare(doc)
    g, d = doc["summary"]["t"]["glibc"], doc["summary"]["t"]["dmm:tlsf"]
    assert g["memory_exact"] is False and g["frag4"] is None and g["rss_growth"] == 123456
    assert d["memory_exact"] is True and d["frag4"] == 1.25
    print_compare(doc)
    out = capsys.readouterr().out
    assert f"{APPROX} 120.6 KiB" in out  # the RSS growth, marked
    assert "68.4 KiB [1.250]" in out  # the dmm heap: exact, with its ratio
    assert "RSS growth over the pass, not the allocator's own count" in out
    # an old file: a system allocator's figure and ratio as the old replayer wrote them
    old = _compare_doc({"peak_footprint": 50000, "frag4": 0.74})
    summarise_compare(old)
    assert old["summary"]["t"]["glibc"]["frag4"] is None
    print_compare(old)
    out = capsys.readouterr().out
    assert f"{APPROX} 48.8 KiB" in out and "0.74" not in out
    assert "the figure the allocator itself exposes" in out


def test_report_and_show_mark_inexact_figures(compare_results, work):
    doc = load(compare_results[0])
    new = copy.deepcopy(doc)
    s = new["summary"]["tiny"]["glibc"]
    s.update({"memory_exact": False, "footprint_kind": "rss_growth", "rss_growth": 987654, "peak_footprint": None,
              "frag4": None})
    path = work / "compare-rss.json"
    path.write_text(json.dumps(new))
    out = work / "report-rss"
    p = run_cli(["report", str(path), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    html = (out / "index.html").read_text()
    cell = re.search(r'<td class="n approx" data-value="987654"[^>]*>([^<]*)</td>', html)
    assert cell and cell.group(1) == f"{APPROX} 964.5 KiB", cell  # the console's unit (dmmkit.ui.fmt_kib)
    assert "RSS growth over the pass, not the allocator&#39;s own count" in html
    # the dmm heaps' figures are plain
    tl = doc["summary"]["tiny"]["dmm:tlsf"]
    assert f'<td class="n" data-value="{json.dumps(tl["peak_footprint"])}">' in html
    p = run_cli(["show", str(path)])
    assert p.returncode == 0, p.stderr
    assert f"{APPROX} 964.5 KiB" in p.stdout and "RSS growth over the pass" in p.stdout
    # the session's own file (this build's replayer): glibc's figures are its
    # own mallinfo2 counts, exact, so its ratio is shown and is at least 1
    p = run_cli(["show", str(compare_results[0])])
    assert p.returncode == 0
    g = doc["summary"]["tiny"]["glibc"]
    assert g.get("memory_exact") is True and g["frag4"] >= 1.0, g


def test_report_of_explore_without_timing_has_no_warning(tiny_trace, work):
    res = work / "explore-notiming.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--no-timing", "--no-instructions",
                 "--no-pictures", "--results", str(res), "--no-cache"])
    assert p.returncode == 0, p.stderr
    out = work / "report-notiming"
    p = run_cli(["report", str(res), "-o", str(out)], env={"PYTHONWARNINGS": "error"})
    assert p.returncode == 0, p.stderr
    assert "Warning" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    html = (out / "index.html").read_text()
    assert "No Pareto plot" in html and not list(out.glob("*_pareto*.png"))
    # timed but no instruction counts: the cycles panel alone
    d = load(res)
    for c in d["configs"]:
        c["aggregate"]["cycles_avg"] = 100.0 + len(c["id"])
    d["timed"] = [c["id"] for c in d["configs"]]
    res2 = work / "explore-cycles-only.json"
    res2.write_text(json.dumps(d))
    p = run_cli(["report", str(res2), "-o", str(work / "report-cycles")], env={"PYTHONWARNINGS": "error"})
    assert p.returncode == 0 and "Warning" not in p.stderr, p.stderr
    assert (work / "report-cycles" / "explore-cycles-only_pareto.png").is_file()


@pytest.mark.parametrize("text,n", [("65536", 65536), ("64k", 65536), ("64K", 65536), ("64KiB", 65536),
                                    ("64kb", 65536), ("1m", 1 << 20), ("2G", 2 << 30), ("1gib", 1 << 30)])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "lots", "-1", "1.5m", "64 k", " 64k", "64b", "64kx", "0x10", "1t",
                                  "99999999999999999999", "17179869184g"])
def test_parse_size_refuses(text):
    with pytest.raises(DmmkitError) as e:
        parse_size(text, "--arena")
    assert e.value.message.startswith("--arena: ")


def test_one_size_parser_everywhere(tiny_trace, work):
    """The CLI takes sizes through dmmkit.sizes (generate has no size
    options since its malloc is libdmm, which grows by segments)."""
    import dmmkit.cli
    assert dmmkit.cli.parse_size is parse_size
    assert not hasattr(dmmkit.cli, "SIZE_RE")
    with pytest.raises(DmmkitError):
        parse_size(0, "--grow")
    p = run_cli(["explore", str(tiny_trace), "--arena", "0"])
    assert p.returncode == 2 and "must be positive" in p.stderr
    p = run_cli(["explore", str(tiny_trace), "--arena", "1.5m"])
    assert p.returncode == 2 and "is not a size" in p.stderr
    p = run_cli(["generate", "tlsf", "-o", str(work / "gs"), "--grow", "1m", "--no-build"])
    assert p.returncode == 2 and "--grow" in p.stderr
