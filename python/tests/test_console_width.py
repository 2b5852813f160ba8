"""Console tables at 100 columns (issue 26 item 6): no wrapped allocator
or config names (short ids with a legend), the 95% CI column never cut,
and the tie markers consistent with the interval."""

from __future__ import annotations

import re

from conftest import load, run_cli
from dmmkit.textfmt import short_labels, tie_marker


def test_tie_marker_follows_the_interval():
    assert tie_marker([0.9, 1.1], True) == "="
    assert tie_marker([0.25, 0.27], True) == "~"  # excludes 1, yet a tie by the Wilcoxon p
    assert tie_marker([0.25, 0.27], False) == "" and tie_marker(None, None) == ""
    assert tie_marker(None, True) == "="


def test_short_labels_and_legend():
    shown, legend = short_labels(["glibc", "best:p2012+quick_max=64", "dmm:tlsf", "best:tlsf+coalesce=deferred"])
    assert shown["glibc"] == "glibc" and shown["dmm:tlsf"] == "dmm:tlsf"
    assert shown["best:p2012+quick_max=64"] == "a1" and legend == ["a1 = best:p2012+quick_max=64",
                                                                   "a2 = best:tlsf+coalesce=deferred"]


def test_show_at_100_columns(compare_results, explore_results):
    for path in (compare_results[0], explore_results[0]):
        p = run_cli(["show", str(path)], env={"COLUMNS": "100"})
        assert p.returncode == 0, p.stderr
        table = [ln for ln in p.stdout.splitlines() if ln.startswith(("│", "┃", "┏", "└", "┡"))]
        assert table and all(len(ln) <= 100 for ln in table), "\n".join(ln for ln in table if len(ln) > 100)
        # one line per row: no name wrapped onto a second line
        rows = [ln for ln in table if ln.startswith("│")]
        assert all(ln.split("│")[1].strip() for ln in rows), "a wrapped row"
    d = load(compare_results[0])
    p = run_cli(["show", str(compare_results[0])], env={"COLUMNS": "100"})
    for lab, o in d["overall"].items():
        ci = o.get("warm_avg_ratio_ci")
        if ci:
            assert f"{ci[0]:.3f}-{ci[1]:.3f}" in p.stdout, (lab, ci)  # never cut
    assert not re.search(r"\d\.\d+-…", p.stdout)
