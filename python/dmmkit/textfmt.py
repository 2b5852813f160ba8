"""How ratios and intervals read in sentences and tables (the answer, the
end-to-end check): one place, imported by both."""

from __future__ import annotations


def fmt_x(r: float | None) -> str:
    return "?" if r is None else f"{r:.2f}x"


def fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f"95% CI {ci[0]:.2f}-{ci[1]:.2f}"
