"""Golden-file tests of the pure statistics: summaries, paired ratios,
geometric means, Pareto fronts, objective rankings, compare summaries."""

import copy
import math

import pytest

from conftest import GOLDEN, load
from dmmkit import pareto, stats
from dmmkit.compare import merge_hists, summarise_compare


def close(a, b):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def test_summaries():
    g = load(GOLDEN / "stats_cases.json")
    for case in g["summaries"]:
        got = stats.summarize(case["values"])
        for k, v in case["expect"].items():
            assert close(got[k], v), (case, k, got[k])


def test_paired_ratios():
    g = load(GOLDEN / "stats_cases.json")
    for case in g["ratios"]:
        pairs = stats.paired_ratios(case["values"], case["base"])
        assert all(close(a, b) for a, b in zip(pairs, case["pairs"])) and len(pairs) == len(case["pairs"])
        got = stats.ratio_summary(case["values"], case["base"])
        for k, v in case["expect"].items():
            assert close(got[k], v), (case, k, got[k])


def test_geomeans():
    g = load(GOLDEN / "stats_cases.json")
    for case in g["geomeans"]:
        assert close(stats.geomean(case["values"]), case["expect"]), case


def test_pareto_front_and_ranks():
    g = load(GOLDEN / "pareto_cases.json")
    assert pareto.front(g["points"]) == g["front"]
    for obj, want in g["rank"].items():
        assert pareto.rank(g["points"], obj) == want, obj
    assert pareto.front(g["points3"]) == g["front3"]
    with pytest.raises(ValueError):
        pareto.rank(g["points"], "fastest")


def test_dominates():
    assert pareto.dominates((1, 1), (1, 2))
    assert not pareto.dominates((1, 2), (1, 2))
    assert not pareto.dominates((0, 3), (1, 2))


def test_compare_summary_golden():
    g = load(GOLDEN / "compare_summary.json")
    doc = copy.deepcopy(g["doc"])
    summarise_compare(doc)
    exp = g["expect"]
    for t, per in exp["summary"].items():
        for lab, fields in per.items():
            s = doc["summary"][t][lab]
            for k, v in fields.items():
                if isinstance(v, dict):
                    for kk, vv in v.items():
                        assert close(s[k][kk], vv), (t, lab, k, kk, s[k][kk])
                else:
                    assert s[k] == v, (t, lab, k)
    for lab, fields in exp["overall"].items():
        for k, v in fields.items():
            got = doc["overall"][lab][k]
            assert close(got, v) if isinstance(v, float) else got == v, (lab, k, got)
    assert doc["ranking"] == exp["ranking"]


def test_merge_hists():
    a = {"malloc": [[10, 1, 3], [20, 1, 1]], "all": [[10, 1, 3]]}
    b = {"malloc": [[10, 1, 2], [1024, 16, 5]]}
    m = merge_hists([a, b, {}])
    assert m["malloc"] == [[10, 1, 5], [20, 1, 1], [1024, 16, 5]]
    assert m["all"] == [[10, 1, 3]]


def test_compare_skips_preempted_repetitions():
    doc = {"baseline": "g", "allocators": [{"label": "g"}, {"label": "a"}],
           "runs": {"t": {"g": [{"warm_avg": 100}, {"warm_avg": 100, "warm_preemptions": 2}, {"warm_avg": 100}],
                          "a": [{"warm_avg": 50}, {"warm_avg": 500}, {"warm_avg": 70, "warm_preemptions": 1}]}}}
    summarise_compare(doc)
    s = doc["summary"]["t"]["a"]
    assert s["clean_reps"] == 1 and s["warm_avg_ratio"]["n"] == 1 and s["warm_avg_ratio"]["median"] == 0.5
    # every repetition preempted: all of them are used
    for r in doc["runs"]["t"]["g"]:
        r["warm_preemptions"] = 1
    summarise_compare(doc)
    s = doc["summary"]["t"]["a"]
    assert s["clean_reps"] == 0 and s["warm_avg_ratio"]["n"] == 3 and s["warm_avg_ratio"]["median"] == 0.7


def test_dmm_pass_stats_prefers_clean_passes():
    from dmmkit.explore import dmm_pass_stats
    runs = [{"cold_avg": 10, "cold_max": 100, "cold_preemptions": 0, "warm_avg": 90, "warm_max": 9e6,
             "warm_preemptions": 1},
            {"cold_avg": 12, "cold_max": 120, "cold_preemptions": 0, "warm_avg": 11, "warm_max": 110,
             "warm_preemptions": 0}]
    st = dmm_pass_stats(runs)
    assert st["samples"] == 4 and st["clean_samples"] == 3
    assert st["avg"]["median"] == 11 and st["max"]["median"] == 110
