"""Pareto fronts (every objective minimised) and objective rankings."""

from __future__ import annotations

import math
from typing import Sequence


def _usable(p: Sequence[float | None]) -> bool:
    return all(x is not None and not (isinstance(x, float) and math.isnan(x)) for x in p)


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """a is at least as good as b everywhere and better somewhere."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def front(points: Sequence[Sequence[float | None]]) -> list[int]:
    """Indices of the non-dominated points, in input order.  Points with a
    missing coordinate take no part; equal points are all kept."""
    idx = [i for i, p in enumerate(points) if _usable(p)]
    out = []
    for i in idx:
        if not any(dominates(points[j], points[i]) for j in idx if j != i):
            out.append(i)
    return out


def rank(points: Sequence[Sequence[float | None]], objective: str) -> list[int]:
    """Indices ordered best first for an objective over (speed, memory)
    points: "speed" sorts by speed then memory, "memory" by memory then
    speed, "balanced" by the geometric mean of the two, each taken relative
    to its best value among the points.  Points with a missing coordinate
    come last, in input order."""
    usable = [i for i, p in enumerate(points) if _usable(p)]
    rest = [i for i in range(len(points)) if i not in set(usable)]
    if objective == "speed":
        key = lambda i: (points[i][0], points[i][1], i)  # noqa: E731
    elif objective == "memory":
        key = lambda i: (points[i][1], points[i][0], i)  # noqa: E731
    elif objective == "balanced":
        sc = balanced_scores(points)

        def key(i):
            return (sc[i], points[i][0], i)
    else:
        raise ValueError(f"unknown objective {objective!r} (speed, memory, balanced)")
    return sorted(usable, key=key) + rest


def balanced_scores(points: Sequence[Sequence[float | None]]) -> list[float | None]:
    """The "balanced" objective's score of each (speed, memory) point: the
    geometric mean of its speed and its memory, each relative to the best
    value among the usable points (1.0 = best at both; lower is better).
    None for a point with a missing coordinate."""
    usable = [i for i, p in enumerate(points) if _usable(p)]
    if not usable:
        return [None] * len(points)
    s0 = min(points[i][0] for i in usable)
    m0 = min(points[i][1] for i in usable)
    out: list[float | None] = [None] * len(points)
    for i in usable:
        s = points[i][0] / s0 if s0 > 0 else points[i][0]
        m = points[i][1] / m0 if m0 > 0 else points[i][1]
        out[i] = math.sqrt(max(s, 0.0) * max(m, 0.0))
    return out
