"""Tiny q, long schedule, tiny kappa (sigma 1, q 1e-4, T 1e6): the certified bracket against an
independent reference for the Neyman-Pearson power itself (not a bound on it): the Bromwich
inversion of the exact moment function in ``tests/bounds/conftest.py`` (numpy/scipy only, no rerokit
code; its docstring gives the formulas and the measured accuracy, ~2e-5 in log here; the tolerance
is 2e-4 in log gamma and log kappa).
"""

from __future__ import annotations

import math

from rerokit.bounds.dpsgd import rero_dpsgd


def test_tiny_q_long_schedule_bracket_contains_the_exact_power(bromwich) -> None:
    # threshold l = 3.0541877: level 1e-30 (log -69.07755), power e^-65.94569; before the weighted
    # round-off and the truncation at alpha e^-7 the bracket was [e^-65.9623, e^-65.9402] (2.2 %),
    # round-off limited
    pt = bromwich.Schedule([(1.0, 1e-4, 10**6)]).point(3.0541877)
    assert abs(pt.log_level - math.log(1e-30)) < 1e-3
    b = rero_dpsgd(1.0, 1e-4, 10**6, log_kappa=pt.log_level, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    tol = bromwich.REF_TOL
    assert lo <= pt.log_power + tol and up >= pt.log_power - tol  # never beyond the truth
    assert (b.value - b.interval[0]) / b.value <= 0.01  # issue 17: <= 2 % (measured 0.2 %)


def test_a_capped_grid_refinement_takes_a_second_finer_grid(bromwich, monkeypatch) -> None:
    """sigma 0.3, q 1e-4, T 1e6 at the level of the threshold 62.8032 (e^-73.0101; power e^-8.71013 by
    the Bromwich reference): the schedule's grid gives a bracket 27 % wide; the refinement asks for a
    grid 9.5x finer and takes dpsgd_exact._REFINE_MAX = 8x (1.1 % wide), then a second grid finer by
    what the remaining width asks for (0.45 % wide, measured). The reference stays inside."""
    from rerokit.bounds import dpsgd_exact

    pt = bromwich.Schedule([(0.3, 1e-4, 10**6)]).point(62.803224164564845)
    factors = []
    orig = dpsgd_exact._refine_into

    def spy(r, pld, segments, lks, log_rdp, wide, factor):
        factors.append(factor)
        return orig(r, pld, segments, lks, log_rdp, wide, factor)

    monkeypatch.setattr(dpsgd_exact, "_refine_into", spy)
    b = rero_dpsgd(0.3, 1e-4, 10**6, log_kappa=pt.log_level, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    tol = bromwich.REF_TOL
    assert lo <= pt.log_power + tol and up >= pt.log_power - tol
    assert factors[0] == dpsgd_exact._REFINE_MAX and len(factors) == 2 and factors[1] > 1.4 * factors[0]
    assert (b.value - b.interval[0]) / b.value <= 0.006
