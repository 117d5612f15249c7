"""Small levels answered by the far-tail tilt first (``rerokit.bounds.dpsgd_exact._tilt_first``): where
the untilted double-precision bracket is predicted useless, no untilted composition is computed.

Checked against two independent computations: the plain path (the untilted double and extended
compositions with the tilt where it ran, i.e. the previous code path: ``_tilt_first`` switched off)
and, on two settings, the exact Neyman-Pearson power by Bromwich inversion (``bromwich`` fixture,
tests/bounds/conftest.py; about 30 s each). Every bracket must be within the issue's 2 % (issue 17),
intersect the plain path's bracket and contain the reference (within its tolerance)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds import dpsgd_exact
from rerokit.bounds.dpsgd import dpsgd_pld, exact_power_many, rero_dpsgd

LN10 = math.log(10.0)

# (segments, log10 kappa, whether the tilt-first rule applies): kappa 1e-6 .. 1e-30, T 1e3 .. 1e6, one
# two-segment schedule
SETTINGS = [
    ([(2.0, 0.002, 100_000)], -6, True),
    ([(2.0, 0.002, 100_000)], -9, True),
    ([(2.0, 0.002, 100_000)], -20, True),
    ([(2.0, 0.002, 100_000)], -30, True),
    ([(3.0, 0.001, 10_000)], -9, True),
    ([(2.0, 0.001, 3_000)], -9, True),
    ([(2.0, 0.001, 3_000)], -6, False),  # round-off about 1e-4 of gamma: the double bracket is kept
    ([(20.0, 0.3, 1_000)], -20, True),
    ([(1.0, 0.01, 1_000)], -9, False),  # small sigma: the tilted window is ~5x wider
    ([(4.0, 0.001, 1_000_000)], -20, True),
    ([(2.0, 0.002, 50_000), (3.0, 0.001, 50_000)], -12, True),
    # rare sampled steps (q T 6.4e-4): the one-jump bound first, final against the max test
    # (SchedulePLD.tail_by_one_jump; the plain path composed a 1.5M-point window first: 380 -> 24 ms)
    ([(0.866, 1.04e-7, 6130)], -9, True),
]


def _plain(monkeypatch: pytest.MonkeyPatch, segments, log_kappa: float):
    with monkeypatch.context() as m:
        m.setattr(dpsgd_exact, "_tilt_first", lambda pld, lks: {})
        return rero_dpsgd(segments=segments, log_kappa=log_kappa, comparisons=False)


@pytest.mark.parametrize("segments, lk10, applies", SETTINGS)
def test_tilt_first_bracket_is_narrow_and_meets_the_plain_one(monkeypatch, segments, lk10, applies) -> None:
    lk = lk10 * LN10
    pld = dpsgd_pld(segments, None, lower=True)
    r = exact_power_many(pld, segments, np.array([lk]))
    assert pld.is_composed("upper") is not applies  # the rule's choice (no untilted composition)
    new = rero_dpsgd(segments=segments, log_kappa=lk, comparisons=False)
    assert new.value == pytest.approx(float(r.value[0]), rel=1e-12)
    # the same bracket with the comparisons (which compose the untilted PLD for epsilon first)
    assert rero_dpsgd(segments=segments, log_kappa=lk).interval == new.interval
    old = _plain(monkeypatch, segments, lk)
    lo, up = new.interval
    assert 0.0 < lo <= up and (up - lo) / up <= 0.02
    assert max(lo, old.interval[0]) <= min(up, old.value)  # both certified: they must intersect
    assert lo >= math.exp(lk) * (1 - 1e-12)  # gamma >= kappa (a coin)
    if applies:  # the tilt-only answer: no error floor, the threshold near the plain one's
        assert not new.extras["floored"] and math.isfinite(new.extras["threshold_epsilon"])


def test_tilt_first_skips_levels_with_a_cheap_double_bracket() -> None:
    # kappa 1e-3 (above the rule's range) and a level whose double bracket is kept: the plain path
    segs = [(2.0, 0.002, 100_000)]
    pld = dpsgd_pld(segs, None, lower=True)
    assert dpsgd_exact._tilt_first(pld, np.array([math.log(1e-3)])) == {}
    assert set(dpsgd_exact._tilt_first(pld, np.array([math.log(1e-3), math.log(1e-20)]))) == {1}
    pld.upper  # noqa: B018 - the choice reads the schedule and the levels only, not what is composed
    assert set(dpsgd_exact._tilt_first(pld, np.array([math.log(1e-20)]))) == {0}


@pytest.mark.parametrize("segments, target", [
    ([(2.0, 0.002, 100_000)], -20 * LN10),
    ([(4.0, 0.001, 1_000_000)], -30 * LN10),
])
def test_tilt_first_bracket_contains_the_exact_power(bromwich, segments, target) -> None:
    pt = bromwich.Schedule(segments).at_level(target)
    pld = dpsgd_pld(segments, None, lower=True)
    assert dpsgd_exact._tilt_first(pld, np.array([pt.log_level]))  # the rule applies here
    b = rero_dpsgd(segments=segments, log_kappa=pt.log_level, comparisons=False)
    lo, up, tol = b.interval[0], b.value, bromwich.REF_TOL
    assert math.log(lo) <= pt.log_power + tol and math.log(up) >= pt.log_power - tol
    assert (up - lo) / up <= 0.02
