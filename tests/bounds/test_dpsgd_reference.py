"""The certified gamma bracket against an independent reference on settings of the random sweep
``benchmarks/pld_soundness.py`` (seed 0): small sigma at kappa ~e^-31, and two segments with T ~1e6
and gamma near 1 (there 1 - gamma is compared in relative precision).

Reference: the exact Neyman-Pearson test S > l at its own level, by Bromwich inversion of the
moment function (``tests/bounds/conftest.py``, numpy/scipy only; it refuses settings where its
quadrature does not converge). Tolerance: 2e-4 in log (ten times the reference's measured
accuracy). The bracket must contain the truth and be narrow (issue 17: <= 2 %; 1 - gamma within
1e-9 near 1)."""

from __future__ import annotations

import math

import pytest

from rerokit.bounds.dpsgd import rero_dpsgd

SETTINGS = [  # (segments, target log kappa): sweep rows 11 and 13 (the sweep has 40, ~2 min of reference each)
    ([(0.6562, 0.0104, 312)], -31.21),  # small sigma, kappa ~e^-31
    ([(1.8703, 0.209, 3158), (1.7873, 0.0143, 945110)], -12.55),  # two segments, T ~1e6, gamma near 1
]


@pytest.mark.parametrize("segments, log_kappa", SETTINGS)
def test_bracket_contains_the_exact_power(bromwich, segments, log_kappa) -> None:
    pt = bromwich.Schedule(segments).at_level(log_kappa)
    b = rero_dpsgd(segments=segments, log_kappa=pt.log_level, comparisons=False)
    lo, up, tol = b.interval[0], b.value, bromwich.REF_TOL
    assert math.log(lo) <= pt.log_power + tol and math.log(up) >= pt.log_power - tol  # never beyond the truth
    assert (up - lo) / up <= 0.02
    if up > 0.999:  # 1 - gamma in [1 - up, 1 - lo], relative precision
        assert 1 - up <= math.exp(pt.log_miss + tol) and 1 - lo >= math.exp(pt.log_miss - tol)
        assert up - lo <= 1e-9
