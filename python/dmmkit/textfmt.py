"""How ratios and intervals read in sentences and tables (the answer, the
end-to-end check): one place, imported by both."""

from __future__ import annotations


def _ratio(r: float) -> str:
    # two decimals, or two significant digits below 0.1: a worst case 300
    # times glibc's lower read "0.00x", as if it cost nothing
    return f"{r:.2f}" if r == 0 or abs(r) >= 0.1 else f"{r:.2g}"


def fmt_x(r: float | None) -> str:
    return "?" if r is None else f"{_ratio(r)}x"


def fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f"95% CI {_ratio(ci[0])}-{_ratio(ci[1])}"


def short_labels(labels, width: int = 12, prefix: str = "a") -> tuple[dict, list[str]]:
    """Console tables at 100 columns: a label longer than width is shown as a
    short id (a1, a2, ...) and explained in a legend line under the table.
    Returns ({label: shown}, legend lines)."""
    shown, legend, k = {}, [], 0
    for lab in labels:
        if lab in shown:
            continue
        if len(lab) <= width:
            shown[lab] = lab
        else:
            k += 1
            shown[lab] = f"{prefix}{k}"
            legend.append(f"{prefix}{k} = {lab}")
    return shown, legend


def tie_marker(ci, tie) -> str:
    """The marker after an interval: '=' when it holds 1 (not told apart),
    '~' when it excludes 1 but the test still calls it a tie (Wilcoxon p >=
    0.05: too few or too scattered pairs), '' when told apart."""
    if tie is not True:
        return ""
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci) \
            and not (ci[0] <= 1.0 <= ci[1]):
        return "~"
    return "="
