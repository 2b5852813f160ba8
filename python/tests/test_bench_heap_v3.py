"""scripts/bench_heap_v3.py: the "min arena <= before" goal reads its
baseline from a file or from REV:PATH (git show), names where it came from,
judges a grown arena as missed, and refuses a bad baseline in one line."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("bench_heap_v3", ROOT / "scripts" / "bench_heap_v3.py")
bh = importlib.util.module_from_spec(_spec)
sys.modules["bench_heap_v3"] = bh
_spec.loader.exec_module(bh)


def _doc(arena, commit="c0ffee"):
    res = [{"target": "dmm-tlsf-frozen", "workload": "frag", "ir_per_op": 100.0, "min_arena": arena}]
    return {"context": {"workload_names": ["frag"], "commit": commit}, "results": res}


def _arena_rows(doc, base):
    return [r for r in bh.goals(doc, base) if r["goal"] == "min arena <= before"]


def test_grown_arena_is_missed_and_equal_is_met(tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps(_doc(1000, "abc123")))
    base = bh.load_baseline(str(p))
    assert base["context"]["commit"] == "abc123"
    (grown,) = _arena_rows(_doc(1001), base)
    assert grown["met"] is False and grown["value"] == 1001 and grown["limit"] == 1000
    assert "abc123" in grown["note"]
    (same,) = _arena_rows(_doc(1000), base)
    assert same["met"] is True


def test_baseline_from_a_commit_is_the_committed_file():
    # The manifest's -O3 baseline: heap_v2.json as committed when issue 25 was filed.
    try:
        want = json.loads(subprocess.run(["git", "-C", str(ROOT), "show", "a058c00aec02:bench/results/heap_v2.json"],
                                         capture_output=True, text=True, check=True).stdout)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("no git history here (an export, not a clone)")
    got = bh.load_baseline("a058c00aec02:bench/results/heap_v2.json")
    assert got["results"] == want["results"]
    assert "a058c00aec02" in got["_source"] and "heap_v2.json" in got["_source"]


@pytest.mark.parametrize("spec", ["no/such/file.json", "0000000000000000000000000000000000000bad:bench/results/heap_v2.json",
                                  "HEAD:no/such.json", ":x"])
def test_bad_baseline_is_one_line_error(spec):
    with pytest.raises(SystemExit) as e:
        bh.load_baseline(spec)
    msg = str(e.value)
    assert msg.startswith("bench_heap_v3.py: ") and "\n" not in msg
