"""Honest memory figures: which ones are exact, and how the others are shown.

dmm-replay's `memory` object says whether its figures are the allocator's
own exact count (`exact: true`: a dmm heap, glibc, jemalloc, tcmalloc) or
something else (`exact: false`): for `footprint_kind: "rss_growth"` the
footprint is the growth of the process's resident set over the pass, for
`"commit_growth"` the growth of the allocator's committed memory (mimalloc
2.0, which has no count of allocated bytes).  When a figure is not exact,
`fragmentation` is null: a ratio of RSS growth to live bytes is not
fragmentation.

Files written before these fields existed lack them: a missing `exact` means
exact for a dmm heap and not exact for any other allocator.

Every display (console tables, the report, generate's check table) marks a
figure that is not exact with APPROX and prints the legend line once, and
never shows a fragmentation ratio for it.
"""

from __future__ import annotations

APPROX = "\u2248"  # ≈

LEGEND = {
    "rss_growth": f"{APPROX} = RSS growth over the pass, not the allocator's own count (not exact; no fragmentation "
                  "ratio is given for it)",
    "commit_growth": f"{APPROX} = growth of the allocator's committed memory over the pass, not a count of the "
                     "memory it holds for the program (not exact; no fragmentation ratio is given for it)",
    "sampled": f"{APPROX} = the allocator's own count, its peak sampled during a multi-threaded replay (the samples "
               "may miss the peak; not exact; no fragmentation ratio is given for it)",
    "allocator": f"{APPROX} = the figure the allocator itself exposes, net of the replayer's own memory (not exact; "
                 "no fragmentation ratio is given for it)",
}


def replay_memory(d: dict) -> dict:
    """The honest-memory fields of one (checked) dmm-replay document:
    memory_exact, footprint_kind and rss_growth."""
    mem = d.get("memory") or {}
    kind = (d.get("allocator") or {}).get("kind")
    exact = mem.get("exact")
    if exact is None:
        exact = kind == "dmm"
    fk = mem.get("footprint_kind") or "allocator"
    return {"memory_exact": bool(exact), "footprint_kind": fk, "rss_growth": mem.get("rss_growth")}


def is_exact(fig: dict | None, allocator_kind: str | None) -> bool:
    """Whether the memory figures of a run or summary entry are exact; old
    entries without `memory_exact` are exact only for a dmm heap."""
    v = (fig or {}).get("memory_exact")
    if v is None:
        return allocator_kind == "dmm"
    return bool(v)


def footprint_kind(fig: dict | None) -> str:
    return (fig or {}).get("footprint_kind") or "allocator"


def footprint_value(fig: dict | None):
    """The footprint figure to show: the peak footprint, or the RSS growth
    when that is all there is."""
    fig = fig or {}
    v = fig.get("peak_footprint")
    return v if v is not None else fig.get("rss_growth")


def mark(text: str, exact: bool) -> str:
    """The shown text of a memory figure: APPROX before it when not exact."""
    if exact or text in ("", "-"):
        return text
    return f"{APPROX} {text}"


def frag_text(value, exact: bool, fmt) -> str:
    """A fragmentation ratio, or "-" when the figures are not exact."""
    return fmt(value) if exact else "-"


class Legend:
    """Collects the kinds of inexact figures shown, to print their legend
    lines once."""

    def __init__(self):
        self.kinds: list[str] = []

    def note(self, exact: bool, kind: str) -> bool:
        if not exact and kind not in self.kinds:
            self.kinds.append(kind)
        return exact

    def lines(self) -> list[str]:
        return [LEGEND.get(k, LEGEND["allocator"]) for k in self.kinds]
