"""Odds as people read them (report.format.odds / chance): never below the certified bound."""

from __future__ import annotations

import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rerokit.report.format import chance, key_part, odds


def _value(text: str) -> float:
    m = re.fullmatch(r"(\d+) in 100", text)
    if m:
        return int(m.group(1)) / 100
    m = re.fullmatch(r"1 in ([\d,]+|[\d.]+e\d+)", text)
    assert m, text
    return 1.0 / float(m.group(1).replace(",", ""))


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1.0))
def test_odds_never_understate_the_bound(p):
    v = _value(odds(p))
    assert v >= p * (1 - 1e-12)
    # and are tight: one unit less would understate it (whole counts out of 100; 3 digits of N)
    if p >= 0.01:
        assert v - 0.01 < p
    else:
        assert v <= p * 1.011


def test_odds_of_underflowing_bounds_use_log10():
    assert odds(0.0, log10=-472.3) == "1 in 1.99e472"  # 1/10^472.3 = 1/1.995e472, N rounded down
    assert _value(odds(0.0, log10=-40.5)) >= 10**-40.5


def test_examples():
    assert odds(0.3607) == "37 in 100" and odds(0.36) == "36 in 100" and odds(1.0) == "100 in 100"
    assert odds(0.0099) == "1 in 101" and odds(4.319e-34) == "1 in 2.31e33"
    assert [chance(k) for k in (0.1, 0.5, 0.01, 0.001)] == ["10 in 100", "50 in 100", "1 in 100", "1 in 1,000"]
    assert chance(2.938735877058358e-39) == "1 in 3.4e38"
    assert math.isclose(1 / 3.4e38, 2.938735877058358e-39, rel_tol=0.01)


def test_key_part_has_no_dots():
    assert [key_part(x) for x in (0.01, 0.2, 1e-05, 10)] == ["0p01", "0p2", "1em05", "10"]
