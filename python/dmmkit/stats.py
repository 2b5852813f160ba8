"""Statistics over repetitions: summaries, paired ratios, geometric means.

Timings on a shared machine are noisy, so a comparison is made of ratios
between allocators measured side by side in the same round (paired by
repetition), summarised by their median and spread (min/max and the
interquartile range).  Tested on golden JSON files (tests/golden/).
"""

from __future__ import annotations

import math
import statistics
from typing import Iterable, Sequence


def _clean(values: Iterable[float | int | None]) -> list[float]:
    out = []
    for v in values:
        if v is None:
            continue
        f = float(v)
        if math.isnan(f):
            continue
        out.append(f)
    return out


def summarize(values: Iterable[float | int | None]) -> dict:
    """n, median, min, max, q1, q3 (inclusive quartiles) and mean of the
    values that are not None/NaN; every figure None when there are none."""
    v = sorted(_clean(values))
    n = len(v)
    if n == 0:
        return {"n": 0, "median": None, "min": None, "max": None, "q1": None, "q3": None, "mean": None}
    med = statistics.median(v)
    if n == 1:
        q1 = q3 = v[0]
    else:
        q1, _, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return {"n": n, "median": med, "min": v[0], "max": v[-1], "q1": q1, "q3": q3, "mean": statistics.fmean(v)}


def paired_ratios(values: Sequence[float | int | None], base: Sequence[float | int | None]) -> list[float]:
    """values[i] / base[i] for every repetition i where both are known and
    base[i] > 0.  Pairing by repetition cancels drift that hits both runs of
    one round."""
    out = []
    for a, b in zip(values, base):
        if a is None or b is None:
            continue
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b) or b <= 0:
            continue
        out.append(a / b)
    return out


def ratio_summary(values: Sequence[float | int | None], base: Sequence[float | int | None]) -> dict:
    return summarize(paired_ratios(values, base))


def geomean(values: Iterable[float | int | None]) -> float | None:
    """Geometric mean of the positive values; None when there are none."""
    v = [x for x in _clean(values) if x > 0]
    if not v:
        return None
    return math.exp(sum(math.log(x) for x in v) / len(v))


def relative(value: float | int | None, ref: float | int | None) -> float | None:
    if value is None or ref is None:
        return None
    value, ref = float(value), float(ref)
    if ref <= 0 or math.isnan(value) or math.isnan(ref):
        return None
    return value / ref


# ---- paired comparisons, tie groups, the repetition rule, noise ---------------
#
# Built on scipy.stats: a bootstrap confidence interval of the geometric
# mean of the paired ratios (the mean of their logarithms, resampled), and
# the Wilcoxon signed-rank test of the log ratios against 0 (no difference).
# The bootstrap's generator is seeded, so the same samples always give the
# same interval.

CONFIDENCE = 0.95
ALPHA = 0.05
# the fewest pairs a two-sided Wilcoxon test can separate at ALPHA: its
# least exact p for n pairs is 2/2**n (6 pairs: 0.031; 5 pairs: 0.0625)
MIN_SEPARABLE_PAIRS = next(n for n in range(1, 64) if 2.0 / 2 ** n < ALPHA)
SEED = 20260114
N_RESAMPLES = 4999


def _bootstrap_mean_ci(logs):
    """The 95% interval of the mean of `logs` (a numpy array with some
    spread), BCa, falling back on the percentile method when BCa cannot be
    computed (tiny or lopsided samples)."""
    import inspect
    import warnings

    import numpy as np
    from scipy import stats as st

    seed_kw = "rng" if "rng" in inspect.signature(st.bootstrap).parameters else "random_state"
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = st.bootstrap((logs,), np.mean, confidence_level=CONFIDENCE, n_resamples=N_RESAMPLES,
                               method=method, vectorized=True, **{seed_kw: np.random.default_rng(SEED)})
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(lo) or math.isnan(hi)):
            return lo, hi
    return None, None


def paired_test(values: Sequence[float | int | None], base: Sequence[float | int | None]) -> dict:
    """values against base, paired by repetition (index): n (pairs used),
    ratio (geometric mean of the paired ratios values[i]/base[i]), ci (its
    95% bootstrap interval, [lo, hi]), p (two-sided Wilcoxon signed-rank
    p-value of the log ratios) and tie (True when the interval contains 1 or
    p >= 0.05: the two cannot be told apart).  Identical samples are a tie
    with p = 1 and ci = [1, 1].  With fewer than 2 pairs only the ratio is
    known: ci and p are None and tie is None (unknown)."""
    import numpy as np

    ratios = [r for r in paired_ratios(values, base) if r > 0]
    n = len(ratios)
    out = {"n": n, "ratio": None, "ci": None, "p": None, "tie": None}
    if n == 0:
        return out
    logs = np.log(np.asarray(ratios, dtype=float))
    out["ratio"] = float(math.exp(logs.mean()))
    if n < 2:
        return out
    if np.all(logs == 0.0):
        out.update(ci=[1.0, 1.0], p=1.0, tie=True)  # identical samples: nothing to tell apart
        return out
    if np.ptp(logs) == 0.0:
        ci = [out["ratio"], out["ratio"]]  # every pair the same ratio: no spread to resample
    else:
        lo, hi = _bootstrap_mean_ci(logs)
        ci = None if lo is None else [math.exp(lo), math.exp(hi)]
    import warnings

    from scipy import stats as st  # here, not above: identical samples need no scipy (about 75 MB)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(st.wilcoxon(logs, zero_method="wilcox", alternative="two-sided").pvalue)
    if math.isnan(p):
        p = 1.0
    out["ci"], out["p"] = ci, p
    out["tie"] = bool(p >= ALPHA or ci is None or (ci[0] <= 1.0 <= ci[1]))
    return out


def tie_groups(samples: dict[str, Sequence[float | int | None]], order: Sequence[str] | None = None,
               test=None) -> list[list[str]]:
    """Groups of allocators that cannot be told apart.  `order`: the labels
    from the fastest (lowest ratio) on (default: by the geometric mean of
    their samples).  The first label leads group 1; each next label joins the
    current group while the paired test against the group's leader is a tie
    (or unknown), otherwise it leads a new group.  `test(a, b)` returns
    paired_test's dict of b against a (default: paired_test(samples[b],
    samples[a]))."""
    if order is None:
        known = [k for k in samples if geomean(samples[k]) is not None]
        order = sorted(known, key=lambda k: geomean(samples[k]))
    if test is None:
        def test(a, b):
            return paired_test(samples[b], samples[a])
    groups: list[list[str]] = []
    for lab in order:
        if groups and test(groups[-1][0], lab)["tie"] is not False:
            groups[-1].append(lab)
        else:
            groups.append([lab])
    return groups


# Stopping as soon as a test comes out significant, look after look, would
# make "significant" more likely than 5% for allocators that do not differ
# (optional stopping).  So stopping early on a separation asks for a
# stricter p at every look: 0.05 shared over up to 10 looks (Bonferroni).
# Identical-looking samples then go on until their interval is narrow or
# the maximum; the p-value and interval reported stay the usual ones.
STOP_P = 0.005


def settled(res: dict, target: float) -> str | None:
    """Why a paired comparison needs no more repetitions, or None:
    "separated" (its interval excludes 1 and the Wilcoxon p is below
    STOP_P, the per-look level) or "narrow" (its interval is within +-target
    of its ratio)."""
    ci, r = res.get("ci"), res.get("ratio")
    if not ci or not r:
        return None
    p = res.get("p")
    if res.get("tie") is False and p is not None and p < STOP_P:
        return "separated"
    if ci[1] / r - 1.0 <= target and 1.0 - ci[0] / r <= target:
        return "narrow"
    return None


def repetition_decision(tests: dict[str, dict], done: int, min_reps: int = 9, max_reps: int = 30,
                        target: float = 0.02) -> tuple[bool, str]:
    """The adaptive repetition rule.  `tests`: every allocator's paired_test
    against the baseline after `done` repetitions.  Returns (stop, why): keep
    going until at least min_reps, then until every interval is narrower than
    +-target (relative to its ratio) or the allocator is told apart (not a tie), or max_reps is reached.
    An allocator whose test was not made (an "untested" entry: failed
    allocations) is not waited for."""
    if done >= max_reps and done < min_reps:
        return True, f"stopped at the maximum of {max_reps} repetitions"
    if done < min_reps:
        return False, f"at least {min_reps} repetitions"
    testable = {lab: res for lab, res in tests.items() if not res.get("untested")}
    if tests and not testable:  # more repetitions cannot settle what is not tested
        return True, (f"stopped after {done} repetitions: no allocator is tested against the baseline "
                      f"({next(iter(tests.values()))['untested']})")
    open_ = [lab for lab, res in testable.items() if settled(res, target) is None]
    if not open_:
        return True, (f"settled after {done} repetitions: every allocator is told apart from the baseline "
                      f"(interval excluding 1, p < {STOP_P:g} at this look) or its interval is within "
                      f"+-{target * 100:g}%")
    if done >= max_reps:
        return True, (f"stopped at the maximum of {max_reps} repetitions; not settled: {', '.join(open_)} (not told "
                      f"apart from the baseline, interval wider than +-{target * 100:g}%)")
    return False, "not settled: " + ", ".join(open_)


PREEMPTED_SHARE = 0.2
FREQ_TOLERANCE = 0.01


def _preempted(fig: dict) -> bool:
    c, w = fig.get("cold_preemptions"), fig.get("warm_preemptions")
    if c is None and w is None:
        return bool(fig.get("preemptions") or 0)
    return bool((c or 0) + (w or 0))


def _ranges(nums: list[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5" (sorted, distinct numbers)."""
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def noise_check(runs: Iterable[tuple[int, dict | None]]) -> dict:
    """The noise of a set of timed runs, each (repetition, figures): runs,
    preempted (runs with an involuntary context switch in their cold or warm
    pass), share, freq_changes (runs whose TSC ticks_per_sec differs by more
    than 1% from the median of all runs), spoiled_reps (the repetitions with
    a preempted or frequency-changed run) and warning (a text when more than
    20% of the runs were preempted or the frequency changed, else None)."""
    items = [(rep, f) for rep, f in runs if f]
    n = len(items)
    pre = [rep for rep, f in items if _preempted(f)]
    tps = [float(f["ticks_per_sec"]) for _, f in items if f.get("ticks_per_sec")]
    med = statistics.median(tps) if tps else None
    freq = [rep for rep, f in items
            if med and f.get("ticks_per_sec") and abs(float(f["ticks_per_sec"]) / med - 1.0) > FREQ_TOLERANCE]
    share = len(pre) / n if n else 0.0
    spoiled = sorted(set(pre) | set(freq))
    warn = []
    if n and share > PREEMPTED_SHARE:
        warn.append(f"{len(pre)} of {n} timed runs ({share * 100:.0f}%) were preempted (involuntary context switches)")
    if freq:
        warn.append(f"the TSC frequency changed in {len(freq)} run(s) (more than {FREQ_TOLERANCE * 100:g}% from the "
                    "median)")
    text = None
    if warn:
        text = ("NOISY MEASUREMENTS: " + "; ".join(warn) + ". Spoiled repetitions: "
                + _ranges([r + 1 for r in spoiled]) + ". The figures are less trustworthy; rerun on a quieter "
                "machine (fewer other jobs, a fixed CPU frequency) or with more repetitions.")
    return {"runs": n, "preempted": len(pre), "share": share, "freq_changes": len(freq), "spoiled_reps": spoiled,
            "warning": text}
