"""The RDP of the Poisson-subsampled Gaussian at fractional orders is a proven upper bound.

Reference (independent of the code under test): log A_alpha = log E_nu[(mu/nu)^alpha] by mpmath
quadrature at 40 digits, with the integrand's breakpoints at 0, 1/2, alpha/2, alpha; integer orders by
the exact binomial sum in mpmath (Mironov, Talwar & Zhang 2019, Sec. 3.3).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.rdp import log_moment_step_int, log_moment_step_real, rdp_poisson_gaussian


def _mp_log_a(sigma: float, q: float, a: float) -> mp.mpf:
    with mp.workdps(40):
        s, qq, aa = mp.mpf(sigma), mp.mpf(q), mp.mpf(a)
        f = lambda x: mp.npdf(x, 0, s) * (1 - qq + qq * mp.exp((2 * x - 1) / (2 * s * s))) ** aa  # noqa: E731
        pts = sorted({-mp.inf, -5 * s, mp.mpf(0), mp.mpf(1) / 2, aa / 2, aa, aa + 5 * s, mp.inf})
        return mp.log(mp.quad(f, pts))


# measured (mpmath, 252 settings sigma 0.3..1e3, q 1e-5..0.9, alpha 1.1..33.3): never below; relative
# excess of log A <= 6.4e-7 (median 1e-12) where log A > 1e-6, absolute excess <= 1.5e-12 below
# (the float-rounding slack dominates there; the convexity chord caps it at ~2x)
@pytest.mark.parametrize("sigma", [0.3, 1.0, 5.0])
@pytest.mark.parametrize("q", [1e-3, 0.1, 0.9])
@pytest.mark.parametrize("alpha", [1.1, 2.5, 10.9, 33.3])
def test_fractional_moment_is_a_tight_upper_bound(sigma, q, alpha):
    exact = _mp_log_a(sigma, q, alpha)
    got = log_moment_step_real(sigma, q, alpha)
    assert got >= exact
    assert got - exact <= 1e-9 * exact + 1e-12  # rounding slack: ~1e-13 absolute


@pytest.mark.parametrize("sigma,q", [(1e3, 1e-5), (30.0, 1e-5), (0.2, 1e-3), (0.05, 0.5), (0.01, 0.3)])
def test_fractional_never_below_in_the_corners(sigma, q):
    """Tiny moments (rounding-dominated: the chord caps the excess) and small sigma (a finer step or
    only the chord: never below)."""
    for a in (1.1, 1.9, 2.5, 7.3):
        exact = _mp_log_a(sigma, q, a)
        got = log_moment_step_real(sigma, q, a)
        assert got >= exact
        if exact < 1e-12:
            assert got <= 3.0 * exact + 1e-13  # the chord: at most ~2x, plus ulps


def test_convexity_chord_and_integer_orders():
    """Integer orders are the exact sum (rounded up by a few ulps); between them the value never
    exceeds the chord of the exact integer values (the convexity bound is one of the two used)."""
    sigma, q = 1.0, 0.05
    with mp.workdps(40):
        s, qq = mp.mpf(sigma), mp.mpf(q)
        ex = {a: mp.log(mp.fsum(mp.binomial(a, k) * qq**k * (1 - qq) ** (a - k) * mp.exp((k * k - k) / (2 * s * s))
                                for k in range(a + 1))) for a in (2, 3, 4)}
    for a in (2, 3, 4):
        got = log_moment_step_int(sigma, q, a)
        assert got >= ex[a] and got - ex[a] <= 1e-13 * (1 + ex[a])
    for a in np.linspace(2.05, 3.95, 7):
        n = int(a)
        chord = (n + 1 - a) * float(ex[n]) + (a - n) * float(ex[n + 1])
        assert log_moment_step_real(sigma, q, float(a)) <= chord * (1 + 1e-12) + 1e-15


def test_rdp_uses_the_proven_bound():
    sigma, q = 2.0, 0.05
    eps = rdp_poisson_gaussian(sigma, q, [1.1, 2.5, 10.9])
    for e, a in zip(eps, (1.1, 2.5, 10.9)):
        exact = _mp_log_a(sigma, q, a) / (a - 1)
        assert e >= exact and e - exact <= 1e-7 * exact
