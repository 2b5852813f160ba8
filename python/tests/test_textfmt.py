"""Ratios in advise's answers: a small ratio keeps its digits."""

from dmmkit.textfmt import fmt_ci, fmt_x


def test_ratios_below_a_tenth_keep_two_significant_digits():
    assert fmt_x(0.0031) == "0.0031x"       # read "0.00x" before
    assert fmt_ci([0.0028, 0.0035]) == "95% CI 0.0028-0.0035"


def test_ordinary_ratios_keep_two_decimals():
    assert fmt_x(0.24) == "0.24x" and fmt_x(1.0) == "1.00x" and fmt_x(0.0) == "0.00x"
    assert fmt_x(None) == "?" and fmt_ci(None) == ""
    assert fmt_ci([0.23, 0.25]) == "95% CI 0.23-0.25"
