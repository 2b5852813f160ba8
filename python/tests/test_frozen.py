"""Frozen re-measurement: dmmkit.frozen builds dmm-replay frozen to one
config; explore re-counts its candidates' instructions with those builds and
ranks them on the frozen figures (--no-frozen: runtime only; a failed build:
a warning and the runtime figure, marked)."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from conftest import ROOT, load, run_cli
from dmmkit import frozen as frozenmod
from dmmkit.explore import frozen_candidates, frozen_ranking
from dmmkit.tools import check_configs

TRACE = ROOT / "bench" / "traces" / "integral.trace"  # the smallest bundled trace (689 operations)
CONFIGS = ["p2012", "preset=p2012,quick_max=64", "preset=tlsf,fit=best"]

needs_build = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("valgrind") is None,
                                 reason="needs cmake, a C compiler and valgrind")


# ---- pure parts -------------------------------------------------------------

def _cfg(i, instr, mem, preset=False, frozen=None):
    a = {"instr_per_op": instr, "min_arena": mem, "instr_per_op_ranked": frozen if frozen is not None else instr}
    return {"id": i, "name": i, "preset": preset, "aggregate": a}


def test_candidates_front_first_then_next_fronts():
    feas = [_cfg("a", 100, 10), _cfg("b", 50, 20), _cfg("c", 120, 12), _cfg("d", 200, 30), _cfg("e", 60, 25)]
    pts = [(c["aggregate"]["instr_per_op"], c["aggregate"]["min_arena"]) for c in feas]
    # front: b (fastest), a (smallest); next front: e, c; then d
    assert [feas[i]["id"] for i in frozen_candidates(feas, pts, 2, "speed")] == ["b", "a"]
    assert [feas[i]["id"] for i in frozen_candidates(feas, pts, 3, "speed")] == ["b", "a", "e"]
    assert [feas[i]["id"] for i in frozen_candidates(feas, pts, 9, "speed")] == ["b", "a", "e", "c", "d"]
    # presets on the front are taken beyond the budget
    feas[0]["preset"] = True
    assert [feas[i]["id"] for i in frozen_candidates(feas, pts, 1, "speed")] == ["b", "a"]


def test_ranking_uses_the_frozen_figure():
    """Runtime says a < b; frozen says b < a: the frozen order wins, the
    configs not re-measured follow in their runtime order."""
    cands = [_cfg("a", 100, 10, frozen=100), _cfg("b", 150, 10, frozen=70)]
    assert frozen_ranking(cands, "min_arena", "speed", ["a", "b", "x", "y"]) == ["b", "a", "x", "y"]
    assert cands[1].get("frozen_front") and not cands[0].get("frozen_front")


def test_cmake_missing_is_a_clear_error(tools, monkeypatch, tmp_path):
    monkeypatch.setenv("DMMKIT_CMAKE", str(tmp_path / "no-such-cmake"))
    with pytest.raises(frozenmod.FrozenBuildError) as ei:
        frozenmod.build_frozen_replay(tools, "p2012", base=tmp_path)
    assert "cannot run" in ei.value.message and "no-such-cmake" in ei.value.message
    assert ei.value.general


def test_build_failure_shows_the_log_tail(tools, tmp_path):
    fake = tmp_path / "fake-cmake"
    fake.write_text("#!/bin/sh\necho 'configuring...'\necho 'frozen.c:1: error: something broke' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ok, cfg = check_configs(tools, ["p2012"])[0]
    with pytest.raises(frozenmod.FrozenBuildError) as ei:
        frozenmod.build_frozen_replay(tools, cfg, base=tmp_path / "b", cmake=str(fake))
    e = ei.value
    assert "configure failed" in e.message
    assert "something broke" in e.tail and "something broke" in e.detail()
    assert e.log and e.log.is_file()


# ---- the frozen build --------------------------------------------------------

@pytest.fixture(scope="session")
def frozen_p2012(tools):
    """dmm-replay frozen to p2012, built once (build/frozen-<hash>, reused)."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed")
    ok, cfg = check_configs(tools, ["p2012"])[0]
    assert ok
    return cfg, frozenmod.build_frozen_replay(tools, cfg, jobs=int(os.environ.get("DMM_JOBS", "2")))


@pytest.mark.slow
def test_frozen_builder(tools, frozen_p2012, tmp_path):
    cfg, fr = frozen_p2012
    assert fr.replay.is_file() and os.access(fr.replay, os.X_OK)
    assert fr.build_dir == ROOT / "build" / f"frozen-{fr.header_sha}"
    hdr = (fr.build_dir / "frozen_config.h").read_text()
    assert "#define DMM_FROZEN_ORG DMM_ORG_SINGLE" in hdr and frozenmod.header_hash(hdr) == fr.header_sha
    # runs the config it was frozen to, as the frozen code path, and refuses another
    out = tmp_path / "r.json"
    p = frozenmod.subprocess.run([str(fr.replay), str(TRACE), "--alloc", "dmm:" + cfg, "--no-timing", "--no-warm",
                                  "--json", str(out), "--quiet"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text())["allocator"]["variant"] == "frozen"
    p = frozenmod.subprocess.run([str(fr.replay), str(TRACE), "--alloc", "dmm:tlsf", "--no-timing", "--quiet"],
                                 capture_output=True, text=True)
    assert p.returncode != 0 and "frozen" in p.stderr
    # the second request reuses the directory: nothing to build
    again = frozenmod.build_frozen_replay(tools, cfg)
    assert again.build_dir == fr.build_dir and again.up_to_date and again.build_id == fr.build_id


# ---- explore ------------------------------------------------------------------

@pytest.fixture(scope="session")
def frozen_explore(tools, work, frozen_p2012):
    """explore on one bundled trace, three configs, --frozen-max 2 (the p2012
    build is the session fixture's; one more is built)."""
    out = work / "explore-frozen.json"
    args = ["explore", str(TRACE), "--grid", "none", *[a for c in CONFIGS for a in ("--config", c)],
            "--no-timing", "--no-pictures", "--objective", "speed", "--frozen-max", "2", "-j", "2",
            "--cache", str(work / "cache-frozen")]
    p = run_cli(args + ["--results", str(out)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    return args, out, p


@pytest.mark.slow
@needs_build
def test_explore_records_both_figures_and_ranks_on_frozen(frozen_explore, frozen_p2012):
    _, out, p = frozen_explore
    d = load(out)
    fz = d["frozen"]
    assert fz["enabled"] and fz["status"] == "measured" and len(fz["candidates"]) == 2
    assert d["settings"]["speed_metric"] == "instr_per_op_frozen"
    by_id = {c["id"]: c for c in d["configs"]}
    cands = [by_id[i] for i in fz["candidates"]]
    for c in cands:
        a = c["aggregate"]
        assert a["instr_source"] == "frozen"
        assert a["instr_per_op_runtime"] == a["instr_per_op"] > 0
        assert a["instr_per_op_frozen"] > 0 and a["instr_per_op_ranked"] == a["instr_per_op_frozen"]
        assert c["frozen"]["status"] == "measured" and c["frozen"]["variant"] == "frozen"
        assert c["frozen"]["runtime_variant"]  # the path the runtime build ran (a preset's, or "any")
        m = c["per_trace"]["integral"]
        assert m["instructions_frozen"] > 0 and m["instr_per_op_frozen"] == pytest.approx(m["instructions_frozen"] /
                                                                                          m["ops"])
    # p2012's build is the session fixture's (same header, same directory)
    p2012 = next(c for c in cands if c["name"] == "p2012")
    assert p2012["frozen"]["build_dir"] == str(frozen_p2012[1].build_dir)
    # the candidates come first, in frozen order; the other config after them
    rank = d["ranking"]
    assert rank[:2] == sorted(fz["candidates"], key=lambda i: by_id[i]["aggregate"]["instr_per_op_frozen"])
    assert d["best"] == rank[0] and len(rank) == 3 and rank[2] not in fz["candidates"]
    assert d["ranking_runtime"] and set(d["ranking_runtime"]) == set(rank)
    # the printed ranking says which figure is which
    assert "frozen: built frozen to it" in p.stdout and "instr/op" in p.stdout  # both columns, legend below
    assert "speed = instr_per_op_frozen" in p.stdout


@pytest.mark.slow
@needs_build
def test_explore_second_run_reuses_builds_and_counts(frozen_explore, work):
    args, out, _ = frozen_explore
    out2 = work / "explore-frozen-2.json"
    p = run_cli(args + ["--results", str(out2)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    a, b = load(out), load(out2)
    fz = b["frozen"]
    assert fz["builds"]["built"] == 0 and fz["builds"]["up_to_date"] == 2
    assert fz["callgrind_runs"] == 0 and fz["cache_hits"] == 2
    assert b["ranking"] == a["ranking"]


@pytest.mark.slow
@needs_build
def test_no_frozen_skips_it(frozen_explore, work):
    args, _, _ = frozen_explore
    out = work / "explore-nofrozen.json"
    p = run_cli(args + ["--no-frozen", "--results", str(out)], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    assert d["frozen"] == {"enabled": False, "reason": "--no-frozen"}
    assert d["settings"]["speed_metric"] == "instr_per_op" and d["settings"]["frozen"] is False
    assert all("instr_per_op_frozen" not in c["aggregate"] and not c.get("frozen") for c in d["configs"])
    assert d["ranking"] == d["ranking_runtime"]
    assert "frozen builds" not in p.stdout and "instr/op frozen" not in p.stdout
    assert "frozen re-measurement off (--no-frozen)" in p.stdout


@pytest.mark.slow
@needs_build
def test_failed_build_falls_back_to_runtime_figures(frozen_explore, work, tmp_path):
    """A cmake that cannot run: a warning, exit status 0, every candidate
    ranked on its runtime figure, marked as such."""
    args, _, _ = frozen_explore
    out = work / "explore-fallback.json"
    p = run_cli(args + ["--results", str(out)], cwd=work, env={"DMMKIT_CMAKE": str(tmp_path / "no-such-cmake")})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "warning" in p.stdout and "no-such-cmake" in p.stdout and "runtime figure" in p.stdout
    d = load(out)
    fz = d["frozen"]
    assert fz["enabled"] and fz["status"] == "fallback" and not fz["measured"]
    assert fz["fallback"] == fz["candidates"] and fz["builds"]["failed"] == 2
    assert d["settings"]["speed_metric"] == "instr_per_op"
    by_id = {c["id"]: c for c in d["configs"]}
    for i in fz["candidates"]:
        a = by_id[i]["aggregate"]
        assert by_id[i]["frozen"]["status"] == "failed" and "no-such-cmake" in by_id[i]["frozen"]["error"]
        assert a["instr_source"] == "runtime (frozen build failed)"
        assert a["instr_per_op_frozen"] is None and a["instr_per_op_ranked"] == a["instr_per_op"]
    assert d["ranking"] == d["ranking_runtime"]
    assert "failed" in p.stdout  # the frozen column of the printed ranking
