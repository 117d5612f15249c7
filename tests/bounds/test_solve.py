"""The one calibration solver: certified side, precision, brackets, integer search, refusals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rerokit.bounds.solve import AllFeasible, NoFeasibleValue, SearchRange, calibrate_monotone


@given(root=st.floats(1e-3, 1e3), start=st.floats(1e-2, 1e2), rtol=st.sampled_from([1e-2, 1e-4, 1e-8]))
@settings(max_examples=60, deadline=None)
def test_smallest_feasible_above_root(root: float, start: float, rtol: float) -> None:
    """f(x) = exp(-x / root) is decreasing; feasible iff x >= root (target e^-1): the returned x
    is evaluated feasible and the bracket's other end infeasible, within rtol."""
    f = lambda x: math.exp(-x / root)  # noqa: E731
    r = calibrate_monotone(f, math.exp(-1.0), feasible="above", search=SearchRange(1e-9, 1e9, start), rtol=rtol)
    assert f(r.x) <= math.exp(-1.0) and r.value == f(r.x)
    lo, hi = r.bracket
    assert hi == r.x and f(lo) > math.exp(-1.0)
    assert hi / lo <= 1 + rtol
    assert r.x >= root * (1 - 1e-12) and r.x <= root * (1 + rtol) * (1 + 1e-12)


def test_largest_feasible_below_integer() -> None:
    """Risk increasing in steps: the largest integer T with f(T) <= target; neighbours checked."""
    f = lambda T: 1 - math.exp(-T / 1234.5)  # noqa: E731
    target = f(777.3)
    r = calibrate_monotone(f, target, feasible="below", search=SearchRange(1, 10**7, 10), integer=True)
    assert r.x == 777 and f(777) <= target < f(778)
    assert r.bracket == (777, 778)


def test_smooth_curves_converge_in_few_evaluations() -> None:
    """Illinois regula falsi with the across-probe: a smooth curve from a 25%-off guess takes far
    fewer evaluations than bisection from a factor-2 bracket to rtol 1e-4 (about 13 halvings)."""
    r = calibrate_monotone(lambda s: 1 / (1 + s * s), 0.2, feasible="above", search=SearchRange(1e-6, 1e6, 1.5),
                           rtol=1e-4, growth=1.25)
    assert r.x == pytest.approx(2.0, rel=1e-4) and 1 / (1 + r.x ** 2) <= 0.2
    assert r.evaluations <= 8


def test_payload_and_capped_search() -> None:
    r = calibrate_monotone(lambda x: (x / 100.0, {"at": x}), 0.5, feasible="below", search=SearchRange(1, 20, 3),
                           integer=True)
    assert r.at_limit and r.x == 20 and r.payload == {"at": 20}


def test_refusals() -> None:
    with pytest.raises(NoFeasibleValue):
        calibrate_monotone(lambda x: 1.0, 0.5, feasible="above", search=SearchRange(1e-3, 1e3, 1))
    with pytest.raises(AllFeasible):
        calibrate_monotone(lambda x: 0.1, 0.5, feasible="above", search=SearchRange(1e-3, 1e3, 1))
    with pytest.raises(ValueError, match="feasible"):
        calibrate_monotone(lambda x: 0.1, 0.5, feasible="left", search=SearchRange(1e-3, 1e3, 1))
    with pytest.raises(ValueError, match="lower <= start <= upper"):
        calibrate_monotone(lambda x: 0.1, 0.5, feasible="above", search=SearchRange(1e-3, 1e3, 1e4))
    with pytest.raises(RuntimeError, match="monotone"):  # the evaluation cap always ends the search
        calibrate_monotone(lambda x: 1.0 / x, 0.5, feasible="above", search=SearchRange(1e-300, 1e300, 1.0),
                           rtol=1e-15, max_evaluations=3)
