"""The heap design space as `explore` sweeps it.

Every point is a dmm heap configuration in the text form of
`dmm_heap_config_parse` (docs/heap.md).  Validity is decided by the heap
itself: the candidate configs go through `dmm-replay --check-configs`, which
answers with the normalised text or the heap's reason, so the grid never
duplicates the C rules.

* `presets`: the five presets (dlmalloc, tlsf, halffit, firstfit, p2012).
* `default`: the presets plus the one-knob neighbours of p2012, tlsf and
  dlmalloc (19 more points).  It asks "which single change to a classic
  design pays off on this trace?" and keeps the main job within minutes.
* `full`: the presets plus the full factorial of org x fit x links x
  order x split x coalesce x quick lists (2400 combinations before
  validation).

With `--pools`, a second dimension: the same heap behind size-class pools
sized from the trace (`pool:auto;heap=CONFIG`, dmm-replay's pool backend,
docs/replay.md), for every point of the `presets` and `default` grids and
of --config, and for the presets only in the `full` grid (pool_points).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

from .allocators import PRESETS

# p2012's quick_max=4096: an exact-size list for every request size up to a page, the allocator a
# kernel with a few fixed object sizes would get hand-tuned (seed 001's kernels: 16 B .. 4 KiB objects;
# on their traces, at explore's defaults, it ranks ahead of p2012 itself).
NEIGHBOURS = {
    "p2012": ["quick_max=64", "quick_max=4096", "split=on", "links=doubly,coalesce=immediate", "coalesce=deferred",
              "order=fifo", "order=address", "order=size", "fit=best", "fit=next", "links=doubly"],
    "tlsf": ["split=off", "coalesce=deferred", "coalesce=off", "quick_max=64"],
    "dlmalloc": ["quick_max=0", "coalesce=deferred", "fit=first", "order=lifo"],
}

ORGS = {  # org -> the bin parameters used with it in the full grid
    "single": "org=single",
    "exact": "org=exact,exact_max=256,sl_bits=1",
    "geometric": "org=geometric,sl_bits=0",
    "tlsf": "org=tlsf,sl_bits=4",
    "addrtree": "org=addrtree",
}
FITS = ("first", "next", "best", "exact", "good")
LINKS = ("singly", "doubly")
ORDERS = ("lifo", "fifo", "address", "size")
SPLITS = ("on", "off")
COALESCE = ("off", "immediate", "deferred")
QUICK = (0, 64)

GRIDS = ("default", "full", "presets")


POOL_FRONT = "auto"  # the pool classes explore puts in front of a heap (sized from the trace)


@dataclass
class Point:
    name: str       # short label ("p2012", "p2012+fit=best", "tlsf/good/doubly/lifo/...")
    spec: str       # what the user or the grid wrote
    config: str = ""  # normalised by the heap (dmm-replay --check-configs)
    preset: bool = False
    front: str = ""   # pool classes in front of the heap ("auto"), "" for a plain heap
    heap_name: str = ""  # the plain heap point's name and id, for a pool point
    heap_id: str = ""

    @property
    def kind(self) -> str:
        return "pool" if self.front else "dmm"

    @property
    def alloc(self) -> str:
        """dmm-replay's --alloc for this point."""
        if self.front:
            return f"pool:{self.front};heap={self.config}"
        return "dmm:" + self.config

    @property
    def key(self) -> str:
        """The cache key's config part: the heap config for a plain heap (as
        before pools existed), the whole --alloc spec for a pool point."""
        return self.alloc if self.front else self.config

    @property
    def id(self) -> str:
        if self.front:
            return f"pool.{self.heap_id}"
        if self.preset:
            return self.name
        return "c" + hashlib.sha1(self.config.encode()).hexdigest()[:8]


def pool_point(p: Point, front: str = POOL_FRONT) -> Point:
    """The heap of p (checked) behind pools: named `pool:auto;heap=NAME`."""
    return Point(f"pool:{front};heap={p.name}", p.spec, p.config, preset=False, front=front, heap_name=p.name,
                 heap_id=p.id)


def pool_points(points: list[Point], grid: str, user: list[Point]) -> list[Point]:
    """The pool dimension: every heap of the presets / default grids and
    of --config; only the presets (and --config) of the full grid, whose
    2400 heaps would double an already long sweep."""
    base = [p for p in points if grid != "full" or p.preset or p in user]
    return [pool_point(p) for p in base if not p.front]


def preset_points() -> list[Point]:
    return [Point(p, p, preset=True) for p in PRESETS]


def default_points() -> list[Point]:
    pts = preset_points()
    for base, changes in NEIGHBOURS.items():
        for ch in changes:
            pts.append(Point(f"{base}+{ch}", f"preset={base},{ch}"))
    return pts


def full_points() -> list[Point]:
    pts = preset_points()
    for org, fit, links, order, split, coal, quick in itertools.product(ORGS, FITS, LINKS, ORDERS, SPLITS, COALESCE,
                                                                          QUICK):
        spec = (f"{ORGS[org]},fit={fit},links={links},order={order},split={split},coalesce={coal},"
                f"quick_max={quick}")
        name = f"{org}/{fit}/{links}/{order}/split={split}/coal={coal}/q={quick}"
        pts.append(Point(name, spec))
    return pts


def points_for(grid: str) -> list[Point]:
    if grid == "default":
        return default_points()
    if grid == "full":
        return full_points()
    if grid == "presets":
        return preset_points()
    raise ValueError(f"unknown grid {grid!r} ({', '.join(GRIDS)})")


def short_config(config: str) -> str:
    """The policy part of a normalised config (what tables show)."""
    keep = ("org", "sl_bits", "links", "order", "fit", "split", "split_min", "coalesce", "quick_max")
    kv = dict(p.split("=", 1) for p in config.split(",") if "=" in p)
    return ",".join(f"{k}={kv[k]}" for k in keep if k in kv)
