"""The upper end of gamma must not depend on whether the lower end is computed.

Where the rules that choose which certified computation runs read quantities both modes have (the
upper end, the schedule, the level), ``Numerics(bracket=False)`` gives the bracketed run's upper end.
A rule that kept a tilted bracket by its width (lower end included) made the two differ by 3e-5
relative at sigma 0.79, q 0.01, T 100, kappa 1e-12 (reverted). The older width rules (grid
refinement, extended recomposition, the tilt's grid ladder) still read the lower end, and the two
differ elsewhere (up to 1e-3 relative at small q and tiny levels); calibration therefore compares
the bracketed value itself (tests/bounds/test_calibrate.py).
"""

from __future__ import annotations

import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.options import Numerics


@pytest.mark.parametrize("sigma,q,T,kappa", [
    (0.794571756021619, 0.01, 100, 1e-12),  # the calibrated setting of test_extremes
    (2.0, 1e-3, 3000, 1e-9),  # the far-tail tilt alone (dpsgd._tilt_first)
    (3.0, 1e-3, 30_000, 1e-6),
    (1.0, 0.01, 1000, 1e-20),
    (1.0, 1e-4, 1000, 1e-20),  # tiny q: the coarse-grid ladder (its grid choice reads the max test)
])
def test_upper_end_is_the_same_with_and_without_the_bracket(sigma: float, q: float, T: int, kappa: float) -> None:
    with_b = rero_dpsgd(sigma, q, T, kappa=kappa, comparisons=False)
    without = rero_dpsgd(sigma, q, T, kappa=kappa, comparisons=False, numerics=Numerics(bracket=False))
    assert with_b.interval[0] <= with_b.value
    # equal up to the last digits (the bracketed path's round-off terms are summed in another order)
    assert with_b.value == pytest.approx(without.value, rel=1e-9, abs=0.0)


def test_two_segment_far_tail_on_a_coarser_grid(bromwich) -> None:
    """Several distinct steps whose tilted window is predicted above 1.5 x builder._TILT_REGRID_ABOVE
    points: the far-tail tilt on a coarser grid, chosen from the forecast only (the same upper end
    with and without the bracket); the bracket contains the Bromwich reference of
    tests/bounds/conftest.py (Schedule(segs).point(0.5), pinned)."""
    import math
    import sys

    from rerokit.bounds.dpsgd import dpsgd_pld

    builder = sys.modules["rerokit.bounds.pld.builder"]
    segs = [(5.801, 0.00841, 1900), (1.419, 0.00171, 90)]
    log_level, log_power = -31.711357234400417, -31.201459404182046
    pld = dpsgd_pld(segs)
    fc = pld.tail_forecast(log_level)
    assert fc[3] * pld.window_points() >= 1.5 * builder._TILT_REGRID_ABOVE  # the path under test
    lo, up = pld.tail_power(log_level)
    assert lo <= log_power + bromwich.REF_TOL and up >= log_power - bromwich.REF_TOL
    assert up - lo <= 2e-3  # measured 6.3e-4 (in log)
    kappa = math.exp(log_level)
    with_b = rero_dpsgd(segments=segs, kappa=kappa, comparisons=False)
    without = rero_dpsgd(segments=segs, kappa=kappa, comparisons=False, numerics=Numerics(bracket=False))
    assert with_b.value == pytest.approx(without.value, rel=1e-9, abs=0.0)
    assert with_b.interval[0] <= math.exp(log_power + bromwich.REF_TOL)
