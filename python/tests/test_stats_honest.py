"""Golden tests of the honest statistics (dmmkit.stats on scipy.stats):
paired tests with their bootstrap interval and Wilcoxon p, tie groups, the
adaptive repetition rule and the noise check, on inputs whose answer is
known."""

import random

from dmmkit import stats
from dmmkit.compare import summarise_compare


def noisy(level, n=9, sd=0.01, seed=1):
    r = random.Random(seed)
    return [level * (1 + r.gauss(0, sd)) for _ in range(n)]


BASE = noisy(1.0, seed=1)
SLOW = noisy(1.5, seed=2)          # clearly separated from BASE
NEAR = noisy(1.0, sd=0.05, seed=3)  # overlaps BASE


def test_identical_samples_are_a_tie():
    r = stats.paired_test(BASE, list(BASE))
    assert r["n"] == 9 and r["ratio"] == 1.0 and r["p"] == 1.0 and r["ci"] == [1.0, 1.0] and r["tie"] is True


def test_separated_samples_are_not_a_tie():
    r = stats.paired_test(SLOW, BASE)
    assert r["tie"] is False
    assert 1.0 < r["ci"][0] <= r["ratio"] <= r["ci"][1] < 2.0 and abs(r["ratio"] - 1.5) < 0.05
    # all 9 pairs on one side: the exact two-sided signed-rank p is 2/2^9
    assert abs(r["p"] - 2 / 512) < 1e-12
    # faster the other way round: the reciprocal ratio, same p
    r2 = stats.paired_test(BASE, SLOW)
    assert r2["ci"][1] < 1.0 and abs(r2["ratio"] * r["ratio"] - 1) < 1e-12 and r2["p"] == r["p"]


def test_the_interval_is_reproducible_and_one_pair_is_unknown():
    assert stats.paired_test(NEAR, BASE) == stats.paired_test(NEAR, BASE)
    one = stats.paired_test([2.0], [1.0])
    assert one["ratio"] == 2.0 and one["ci"] is None and one["p"] is None and one["tie"] is None
    # missing repetitions are skipped pairwise
    assert stats.paired_test([1.0, None, 3.0], [1.0, 2.0, None])["n"] == 1


def test_tie_groups_of_a_known_mix():
    samples = {"slow": SLOW, "base": BASE, "same": list(BASE), "near": NEAR, "slow2": noisy(1.5, seed=4)}
    groups = stats.tie_groups(samples)
    assert sorted(map(sorted, groups)) == [["base", "near", "same"], ["slow", "slow2"]]
    assert set(groups[0]) == {"base", "near", "same"}  # the faster group first


def test_adaptive_rule_stops_at_9_for_separated_samples():
    tests = {"slow": stats.paired_test(SLOW, BASE)}
    assert stats.repetition_decision(tests, 8) == (False, "at least 9 repetitions")
    stop, why = stats.repetition_decision(tests, 9)
    assert stop and "settled after 9" in why


def test_adaptive_rule_continues_for_overlapping_samples():
    wide = {"near": stats.paired_test(NEAR, BASE)}
    assert stats.settled(wide["near"], 0.02) is None
    stop, why = stats.repetition_decision(wide, 9)
    assert not stop and "near" in why
    stop, why = stats.repetition_decision(wide, 30)
    assert stop and "maximum of 30" in why and "near" in why
    # a narrow interval containing 1 settles it too (identical samples: [1, 1])
    assert stats.repetition_decision({"s": stats.paired_test(list(BASE), BASE)}, 9)[0]
    # a maximum below the minimum stops there
    assert stats.repetition_decision(wide, 2, max_reps=2)[0]


def test_noise_warning_fires_on_preempted_runs():
    quiet = [(r, {"cold_preemptions": 0, "warm_preemptions": 0, "ticks_per_sec": 3.0e9}) for r in range(10)]
    n = stats.noise_check(quiet)
    assert n["runs"] == 10 and n["preempted"] == 0 and n["warning"] is None and n["spoiled_reps"] == []
    loud = quiet[:7] + [(r, {"warm_preemptions": 3, "ticks_per_sec": 3.0e9}) for r in (7, 8, 9)]
    n = stats.noise_check(loud)
    assert n["preempted"] == 3 and abs(n["share"] - 0.3) < 1e-12 and n["spoiled_reps"] == [7, 8, 9]
    assert "3 of 10 timed runs (30%) were preempted" in n["warning"] and "repetitions: 8-10." in n["warning"]
    # 2 of 10 (20%) is not more than 20%: no warning; a frequency change always warns
    assert stats.noise_check(quiet[:8] + loud[8:])["warning"] is None
    f = stats.noise_check(quiet[:9] + [(9, {"ticks_per_sec": 3.1e9})])
    assert stats._ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8"
    assert f["freq_changes"] == 1 and f["spoiled_reps"] == [9] and "TSC frequency changed" in f["warning"]


def _doc(series: dict, preempted=()):
    runs = {"t": {lab: [{"warm_avg": v, "cold_avg": v, "warm_max": 10 * v, "peak_footprint": 1000 * v,
                         "warm_preemptions": 1 if (lab, i) in preempted else 0}
                        for i, v in enumerate(vals)] for lab, vals in series.items()}}
    return {"baseline": "base", "allocators": [{"label": l, "kind": "dmm"} for l in series], "runs": runs}


def test_compare_results_fields():
    doc = _doc({"base": [100 * x for x in BASE], "slow": [100 * x for x in SLOW], "same": [100 * x for x in BASE]})
    summarise_compare(doc)
    o = doc["overall"]
    assert o["base"]["warm_avg_ratio_geomean"] == 1.0 and o["base"]["warm_avg_ratio_p"] == 1.0
    assert o["same"]["warm_avg_ratio_ci"] == [1.0, 1.0] and o["same"]["group"] == 1 and o["base"]["group"] == 1
    assert o["slow"]["group"] == 2 and o["slow"]["warm_avg_ratio_ci"][0] > 1.0 and o["slow"]["warm_avg_ratio_p"] < 0.05
    assert abs(o["slow"]["peak_footprint_ratio_geomean"] - SLOW[0] / BASE[0]) < 1e-9 and o["slow"]["memory_exact"]
    assert abs(o["slow"]["warm_max_ratio_geomean"] - o["slow"]["warm_avg_ratio_geomean"]) < 0.05
    assert doc["groups"] == [["base", "same"], ["slow"]] or doc["groups"] == [["same", "base"], ["slow"]]
    assert doc["ranking"][-1] == "slow" and doc["noise"]["runs"] == 27 and doc["noise"]["warning"] is None
    s = doc["summary"]["t"]["slow"]
    assert s["tie"] is False and s["group"] == 2 and s["warm_avg_ratio_ci"] == o["slow"]["warm_avg_ratio_ci"]


def test_overall_is_the_per_repetition_geomean_over_traces():
    doc = _doc({"base": [100.0] * 9, "x": [50.0] * 9})
    doc["runs"]["u"] = {"base": [{"warm_avg": 100.0}] * 9, "x": [{"warm_avg": 200.0}] * 9}
    summarise_compare(doc)
    # 0.5 on one trace, 2.0 on the other: 1.0 overall, every pair alike -> a zero-width interval
    assert abs(doc["overall"]["x"]["warm_avg_ratio_geomean"] - 1.0) < 1e-12
    assert doc["summary"]["t"]["x"]["warm_avg_ratio_ci"] == [0.5, 0.5]


def test_preempted_repetitions_left_out_of_the_tests_when_enough_are_clean():
    vals = [100 * x for x in BASE]
    other = [100 * x for x in SLOW]
    other[0] = 10.0  # a spoiled repetition that would flip the ratio of that pair
    doc = _doc({"base": vals, "x": other}, preempted={("x", 0)})
    summarise_compare(doc)
    o = doc["overall"]["x"]
    assert o["reps_tested"] == 8 and o["clean_only"] and o["warm_avg_ratio_ci"][0] > 1.0
    assert doc["noise"]["preempted"] == 1 and doc["noise"]["spoiled_reps"] == [0]
