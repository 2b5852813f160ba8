"""The Ray executor against a local Ray instance (skipped, with the reason,
when ray is not installed in this environment)."""

import pytest

from conftest import load, run_cli

ray = pytest.importorskip("ray", reason="ray is not installed for this Python (pip install './python[ray]'); "
                                        "python/run_tests.sh tries to install it")


def test_explore_on_local_ray(tools, tiny_trace, work, explore_results):
    out = work / "explore-ray.json"
    p = run_cli(["explore", str(tiny_trace), "--grid", "presets", "--executor", "ray", "-j", "2", "--no-timing",
                 "--no-pictures", "--no-cache", "--results", str(out)], cwd=work, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    d = load(out)
    assert d["executor"]["executor"] == "ray"
    assert d["cache"]["measured"] == 5
    # the same deterministic figures as the local executor
    local = {c["id"]: c["per_trace"]["tiny"]["instructions"] for c in load(explore_results[0])["configs"]}
    for c in d["configs"]:
        assert c["per_trace"]["tiny"]["instructions"] == local[c["id"]]
