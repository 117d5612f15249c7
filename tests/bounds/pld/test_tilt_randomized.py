"""The far-tail tilt's randomized lower end (rerokit.bounds.pld.tilt.randomized_lower): the
Neyman-Pearson test that randomizes between two adjacent thresholds of the bucket statistic.
Against independent references: the Gaussian mechanism's closed-form power (q = 1, mpmath), the
exact mixture arithmetic in mpmath, and the previous (deterministic) lower end, never above."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from rerokit.bounds.pld import tilt
from rerokit.bounds.pld.builder import schedule_pld


@pytest.mark.parametrize("sigma,T,kappa", [(1.0, 100, 1e-9), (2.0, 1000, 1e-9), (3.0, 400, 1e-15), (0.8, 30, 1e-6)])
def test_tilted_bracket_contains_the_gaussian_power_and_is_narrow(sigma, T, kappa):
    """q = 1: T Gaussian steps are one Gaussian pair with mu = sqrt(T) / sigma, whose power at level
    kappa is Phi(Phi^-1(kappa) + mu) (Dong, Roth & Su 2019). The tilted bracket contains it, and
    the randomized lower end keeps it within 1e-3 relative (the deterministic one: up to ~1e-2)."""
    pld = schedule_pld([(sigma, 1.0, T)])
    lo, up = pld._tail_power_from(pld, math.log(kappa))
    with mp.workdps(40):
        mu = mp.sqrt(T) / sigma
        exact = mp.ncdf(mp.sqrt(2) * mp.erfinv(2 * mp.mpf(kappa) - 1) + mu)
        assert mp.log(exact) <= up and lo <= mp.log(exact)
    assert up - lo < 1e-3


def test_randomized_mixture_against_mpmath():
    """The returned log power is at most the exact mixture at the largest admissible theta, within
    the stated slack of it, and the level of the theta used is within alpha."""
    log_alpha, q_hi, q_lo, p_hi, p_lo = math.log(1e-9), math.log(0.7e-9), math.log(1.6e-9), math.log(3.1e-9), math.log(4.4e-9)
    got = tilt.randomized_lower(q_hi, q_lo, log_alpha, p_hi, lambda: p_lo)
    with mp.workdps(40):
        a, b, al = mp.e ** mp.mpf(q_hi), mp.e ** mp.mpf(q_lo), mp.e ** mp.mpf(log_alpha)
        theta = (al - a) / (b - a)
        best = mp.log((1 - theta) * mp.e ** mp.mpf(p_hi) + theta * mp.e ** mp.mpf(p_lo))
        assert got <= best and best - got < 1e-8
        # the power's mixture weight got implies: theta' with (1-theta') e^p_hi + theta' e^p_lo = e^got
        th = (mp.e ** mp.mpf(got) - mp.e ** mp.mpf(p_hi)) / (mp.e ** mp.mpf(p_lo) - mp.e ** mp.mpf(p_hi))
        assert (1 - th) * a + th * b <= al


def test_randomized_lower_declines_where_nothing_is_certain():
    lo = math.log(1e-9)
    assert tilt.randomized_lower(lo - 1.0, lo, lo, lo, lambda: lo) == -math.inf  # no gap above alpha
    assert tilt.randomized_lower(lo, lo + 1.0, lo, -math.inf, lambda: lo) == -math.inf  # no power bound
    assert tilt.randomized_lower(lo - 1.0, lo + 1.0, lo, lo, lambda: -math.inf) == -math.inf


def test_randomized_end_never_below_the_deterministic_one():
    """At q 1e-3 (the --mid rows) the lower end with randomization is at least the deterministic
    test's (both computed here from the same compositions) and below the upper end."""
    pld = schedule_pld([(3.0, 1e-3, 3000)])
    lk = math.log(1e-9)
    lo, up = pld._tail_power_from(pld, lk)
    saved = tilt.randomized_lower
    try:
        tilt.randomized_lower = lambda *a: -math.inf
        lo_det, up_det = pld._tail_power_from(pld, lk)
    finally:
        tilt.randomized_lower = saved
    assert up == up_det and lo_det <= lo <= up
    assert up - lo < 0.1 * (up - lo_det)
