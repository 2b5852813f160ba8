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
