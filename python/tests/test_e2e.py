"""The end-to-end check (dmmkit.e2e): paired ratios, output comparison and
the per-goal verdict on hand-made runs; one real interleaved run."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT
from dmmkit.e2e import Candidate, agreement, ranking_check, run_e2e, summarise_e2e


def _runs(walls, rss, sha="a", failed=None):
    return [{"rep": i, "wall_s": w, "rss_kb": r, "exit": 0, "failed": failed, "stdout_sha": sha}
            for i, (w, r) in enumerate(zip(walls, rss))]


def doc(**runs):
    return summarise_e2e({"program": ["p"], "current": "glibc", "runs": runs,
                          "candidates": [{"label": k, "lib": None if k == "glibc" else f"/l/{k}.so"} for k in runs]})


def test_paired_ratios_and_output():
    d = doc(glibc=_runs([1.0, 1.1, 0.9, 1.0, 1.05], [1000] * 5),
            fast=_runs([0.5, 0.55, 0.45, 0.5, 0.525], [1200] * 5),
            same=_runs([1.0, 1.1, 0.9, 1.0, 1.05], [1000] * 5, sha="b"),
            broken=_runs([0.1] * 5, [10] * 5, failed="killed by SIGSEGV"))
    a = d["allocators"]
    assert a["fast"]["wall_ratio"]["ratio"] == pytest.approx(0.5)
    assert a["fast"]["rss_ratio"]["ratio"] == pytest.approx(1.2)
    assert a["fast"]["output_same"] is True and a["fast"]["output_differs"] is False
    # a different standard output is reported, not hidden
    assert a["same"]["output_differs"] is True
    # failed runs are left out of every figure and their first error kept
    assert a["broken"]["ok"] == 0 and a["broken"]["wall_ratio"]["ratio"] is None
    assert a["broken"]["failed"] == "killed by SIGSEGV"


def test_agreement_per_goal():
    # nine paired runs: with five the Wilcoxon test cannot reach p < 0.05, so nothing is told apart
    d = doc(glibc=_runs([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.02, 0.98, 1.0], [1000] * 9),
            fast=_runs([0.5, 0.56, 0.44, 0.51, 0.52, 0.48, 0.5, 0.49, 0.51], [1200, 1210, 1190, 1200, 1205] + [1200] * 4),
            flat=_runs([1.0, 1.12, 0.88, 1.01, 1.04, 0.96, 1.01, 0.99, 1.0], [1000] * 9))
    five = doc(glibc=_runs([1.0, 1.1, 0.9, 1.0, 1.05], [1000] * 5), fast=_runs([0.5, 0.56, 0.44, 0.51, 0.52], [1000] * 5))
    assert agreement(five, "speed", "fast", "glibc", {"ratio": 0.7, "ci": [0.6, 0.8],
                                                       "confidence": "significant"})["agrees"] is False
    sig = {"ratio": 0.7, "ci": [0.6, 0.8], "confidence": "significant"}
    assert agreement(d, "speed", "fast", "glibc", sig)["agrees"] is True
    v = agreement(d, "speed", "flat", "glibc", sig)
    assert v["agrees"] is False and "replay says faster" in v["note"] and "not told apart from glibc" in v["note"]
    # replay says less memory, the real program uses more
    v = agreement(d, "memory", "fast", "glibc", {"ratio": 0.8})
    assert v["agrees"] is False and "1.20x" in v["note"]
    # replay says less memory, the real program's RSS is unchanged: not an agreement either
    v = agreement(d, "memory", "flat", "glibc", {"ratio": 0.6})
    assert v["agrees"] is False and "not dominated" in v["note"]
    assert agreement(d, "worst case", "fast", "glibc", sig)["agrees"] is None
    assert agreement(d, "speed", "absent", "glibc", sig) is None


def test_ranking_check():
    d = doc(glibc=_runs([1.0] * 5, [1] * 5), a=_runs([0.5] * 5, [1] * 5), b=_runs([0.8] * 5, [1] * 5))
    c = {"overall": {"glibc": {"warm_avg_ratio_geomean": 1.0}, "a": {"warm_avg_ratio_geomean": 0.6},
                     "b": {"warm_avg_ratio_geomean": 0.9}}}
    assert ranking_check(d, c)["spearman"] == pytest.approx(1.0)


def test_real_interleaved_run():
    lib = ROOT / "build" / "release" / "lib" / "libdmm.so"
    cands = [Candidate("glibc", None, "current")] + ([Candidate("libdmm", str(lib), "peer")] if lib.is_file() else [])
    e = run_e2e([sys.executable, "-c", "print(sum(range(1000)))"], cands, reps=5)
    assert len(e["order"]) == 5
    for lab in [c.label for c in cands]:
        ent = e["allocators"][lab]
        assert ent["ok"] == 5 and ent["wall_s"]["median"] > 0 and ent["rss_kb"]["median"] > 0
        assert ent["output_same"] is True
    if len(cands) == 2:
        # round-robin: the second round starts with the second candidate
        assert e["order"][1][0] == "libdmm"
        assert e["allocators"]["libdmm"]["wall_ratio"]["ci"] is not None


def test_a_relative_preload_reaches_programs_run_from_another_directory(tools, tmp_path, monkeypatch):
    """ld.so resolves a relative LD_PRELOAD in each process's own cwd: a
    program that runs another after a cd (pyenv's shims do) lost the
    generated library ('cannot be preloaded').  run_process passes it
    absolute.  The library preloaded is the recorder, told to stay idle."""
    from dmmkit.procs import run_process
    assert tools.recorder is not None
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libpre.so").symlink_to(tools.recorder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DMM_TRACE_DISABLE", "1")
    code, out, err, _, _, to = run_process(["sh", "-c", "cd / && cat /proc/self/maps"], "lib/libpre.so", 30)
    assert code == 0 and not to, err
    assert "cannot be preloaded" not in err, err
    assert str(tools.recorder.resolve()) in out or "libdmmrec.so" in out
