"""The Hölder (Chernoff) bound at real orders (rerokit.bounds.pld.chernoff) at tiny baselines.

References, all independent of the code under test: at q = 1 the Gaussian-DP closed form
log gamma = log Phi(Phi^-1(kappa) + sqrt(T)/sigma) in mpmath; at q < 1 and T = 1, 2 the exact
Neyman-Pearson power of the likelihood-ratio test L_1 + ... + L_T > l, in mpmath (quadrature for
T = 2): that test is the most powerful at its own level alpha(l), so (alpha(l), beta(l)) is a
point of the exact trade-off curve and gamma(alpha) = beta; at q < 1 and T = 1e3-1e4 the
Lugannani-Rice saddle-point formula (Lugannani & Rice 1980, "Saddle point approximation for the
distribution of the sum of independent random variables", Adv. Appl. Prob. 12) for the same test,
with the cumulant generating function T log E_nu[(mu/nu)^lambda] and its derivatives by mpmath
quadrature (relative error O(1/T) in gamma: ~1e-4 in log gamma here, so it checks soundness up
to that and tightness).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.pld import log_chernoff_gamma_many, log_moment_int, log_moment_real, log_rdp_gamma_many
from rerokit.bounds.pld.chernoff import log_gdp_mixture_gamma

LN10 = math.log(10.0)


def _gdp_truth(sigma: float, T: int, lk: float) -> mp.mpf:
    with mp.workdps(40):
        z = mp.findroot(lambda x: mp.log(mp.ncdf(x)) - lk, -mp.sqrt(2 * abs(lk)))
        return mp.log(mp.ncdf(z + mp.sqrt(T) / sigma))


def _np_point(sigma: float, q: float, T: int, l: float) -> tuple[mp.mpf, mp.mpf]:
    """(log alpha, log beta) of the test sum_t L(x_t) > l, L(x) = log(1-q + q e^{(2x-1)/(2 sigma^2)})."""
    s, qq = mp.mpf(sigma), mp.mpf(q)

    def x_of(v):  # L(x) > v  <=>  x > x_of(v); None when every x qualifies
        if v <= mp.log(1 - qq):
            return None
        return s * s * mp.log((mp.exp(v) - (1 - qq)) / qq) + mp.mpf(1) / 2

    def tail_nu(x):
        return mp.mpf(1) if x is None else mp.ncdf(-x / s)

    def tail_mu(x):
        return mp.mpf(1) if x is None else (1 - qq) * mp.ncdf(-x / s) + qq * mp.ncdf(-(x - 1) / s)

    def L(x):
        return mp.log(1 - qq + qq * mp.exp((2 * x - 1) / (2 * s * s)))

    if T == 1:
        x = x_of(mp.mpf(l))
        return mp.log(tail_nu(x)), mp.log(tail_mu(x))
    c = x_of(mp.mpf(l) / 2)  # the diagonal point of the boundary: the integrands peak near it
    pts = [-mp.inf, -10 * s, 0] + [c + k * s for k in (-6, -3, -1, 0, 1, 3, 6)] + [2 * c + 10 * s, mp.inf]
    pts = sorted(set(pts))
    a = mp.quad(lambda x1: mp.npdf(x1, 0, s) * tail_nu(x_of(l - L(x1))), pts)
    b = mp.quad(lambda x1: ((1 - qq) * mp.npdf(x1, 0, s) + qq * mp.npdf(x1, 1, s)) * tail_mu(x_of(l - L(x1))), pts)
    return mp.log(a), mp.log(b)


def test_moments_are_upper_bounds_and_tight():
    segs = [(1.0, 0.3, 1)]
    s, q = mp.mpf(1), mp.mpf("0.3")
    with mp.workdps(30):
        for a in (2, 7, 30):
            exact = mp.log(mp.fsum(mp.binomial(a, k) * q**k * (1 - q) ** (a - k) * mp.exp((k * k - k) / (2 * s * s))
                                   for k in range(a + 1)))
            got = log_moment_int(segs, a)
            assert got >= exact and got - exact <= 1e-12 * (1 + abs(exact))
        for a in (1.3, 4.5, 12.25):
            f = lambda x: mp.npdf(x, 0, s) * (1 - q + q * mp.exp((2 * x - 1) / (2 * s * s))) ** a  # noqa: E731
            exact = mp.log(mp.quad(f, [-mp.inf, 0, a / 2, a, mp.inf]))
            got = log_moment_real(segs, a)
            assert got >= exact and got - exact <= 1e-4 * (1 + abs(exact))  # cellwise Taylor bound: slightly above
    assert log_moment_real([(2.0, 1.0, 5)], 3.5) >= 5 * 3.5 * 2.5 / 8.0


@pytest.mark.parametrize("log10_kappa", [-300.5, -350.0, -473.0, -1000.0])
@pytest.mark.parametrize("sigma,T", [(1.0, 1000), (1.0, 10), (2.0, 100)])
def test_full_batch_against_the_gdp_closed_form(log10_kappa, sigma, T):
    lk = log10_kappa * LN10
    got = float(log_chernoff_gamma_many([(sigma, 1.0, T)], np.array([lk]))[0][0])
    truth = _gdp_truth(sigma, T, lk)
    assert got >= truth  # never below the truth
    # the closed form, rounded up (the Hölder bound alone was 11 % off at 1e-300, 1.8 % at 1e-473)
    assert got / float(truth) >= 1.0 - 1e-9
    # not looser than the fixed-order RDP bound (up to its rounding)
    assert got <= float(log_rdp_gamma_many([(sigma, 1.0, T)], np.array([lk]))[0][0]) + 1e-9 * abs(lk)


# thresholds l chosen so that the level is about 1e-473 (1e-1000 for the last two)
@pytest.mark.parametrize("sigma,q,T,l", [(1.0, 0.5, 1, 45.4), (1.0, 0.01, 1, 41.5), (2.0, 0.3, 1, 21.9),
                                         (1.0, 0.5, 2, 63.6), (1.0, 0.1, 2, 90.3), (1.0, 0.5, 1, 67.0)])
def test_subsampled_against_the_neyman_pearson_power(sigma, q, T, l):
    la, lb = _np_point(sigma, q, T, l)
    lk = float(la)
    assert -1100 * LN10 < lk < -470 * LN10
    got = float(log_chernoff_gamma_many([(sigma, q, T)], np.array([lk]))[0][0])
    assert got >= lb  # never below the truth
    assert got / float(lb) >= 1.0 - 1e-9  # the binomial mixture of Gaussian shifts: exact at T = 1, ~1e-12 at T = 2
    assert log_gdp_mixture_gamma([(sigma, q, T)], lk) >= lb
    # the public entry point: never below the truth, and uses it (no looser than the fixed-order RDP bound)
    b = rero_dpsgd(sigma, q, T, log_kappa=lk, comparisons=False)
    assert b.extras["log_gamma"] >= lb
    assert b.extras["log_gamma"] <= float(log_rdp_gamma_many([(sigma, q, T)], np.array([lk]))[0][0]) + 1e-12
    assert b.extras["log_gamma"] <= got + 1e-12


def _lr_point(sigma: float, q: float, T: int, lam: float) -> tuple[float, float]:
    """(log kappa, log gamma) of the test S >= K'(lam), S = sum of T losses, by Lugannani-Rice: the
    nu-tail at tilt lam and the mu-tail at tilt lam - 1 (K_mu(t) = K_nu(t + 1), same threshold)."""
    with mp.workdps(30):
        s, qq, la = mp.mpf(sigma), mp.mpf(q), mp.mpf(lam)

        def lr(x):
            return mp.log(1 - qq + qq * mp.exp((2 * x - 1) / (2 * s * s)))

        pts = [-mp.inf, -8 * s, 0, mp.mpf(1) / 2, la, la + 8 * s, mp.inf]
        m = [mp.quad(lambda x: mp.npdf(x, 0, s) * mp.exp(la * lr(x)) * lr(x) ** j, pts) for j in range(3)]
        K, K1 = T * mp.log(m[0]), T * m[1] / m[0]
        K2 = T * (m[2] / m[0] - (m[1] / m[0]) ** 2)

        def log_tail(t):
            w = mp.sqrt(2 * (t * K1 - K))
            u = t * mp.sqrt(K2)
            return mp.log(mp.ncdf(-w) + mp.npdf(w) * (1 / u - 1 / w))

        return float(log_tail(la)), float(log_tail(la - 1))


# kappa between 1e-473 and 1e-300 where gamma is not tiny: the Hölder bound alone was 0.9-1.9 %
# off in log here (it misses the tail's polynomial prefactor); the tilted PLD is not
@pytest.mark.parametrize("sigma,q,T,lam", [(0.5, 0.05, 10000, 1.42), (1.0, 0.5, 1000, 1.9), (0.6, 0.2, 1000, 1.7)])
def test_subsampled_long_schedules_against_the_saddle_point(sigma, q, T, lam):
    lk, lg = _lr_point(sigma, q, T, lam)
    assert -473 * LN10 <= lk <= -300 * LN10
    got = float(log_chernoff_gamma_many([(sigma, q, T)], np.array([lk]))[0][0])
    assert got >= lg - 1e-3 * abs(lg)  # never below the truth (up to the saddle point's own error)
    assert (got - lg) / abs(lg) <= 0.005  # measured 3e-5-4e-4
    hoelder = float(log_chernoff_gamma_many([(sigma, q, T)], np.array([lk]), tilted=False)[0][0])
    assert hoelder >= got
    # the public entry point gets the same quality (it uses this module below kappa = 1e-300)
    b = rero_dpsgd(sigma, q, T, log_kappa=lk, comparisons=False)
    assert b.extras["log_gamma"] >= lg - 1e-3 * abs(lg)
    assert (b.extras["log_gamma"] - lg) / abs(lg) <= 0.005


def _np_point_two(segs, l: float) -> tuple[mp.mpf, mp.mpf]:
    """(log alpha, log beta) of the test L_1(x_1) + L_2(x_2) > l for two one-step segments with
    different (sigma, q), by mpmath quadrature over x_1 (the most powerful test at its own level)."""
    (s1, q1), (s2, q2) = [(mp.mpf(a), mp.mpf(b)) for a, b, _ in segs]

    def x_of(v, s, q):  # L(x) > v  <=>  x > x_of(v); None when every x qualifies
        if v <= mp.log(1 - q):
            return None
        return s * s * mp.log((mp.exp(v) - (1 - q)) / q) + mp.mpf(1) / 2

    def tail_nu(x, s):
        return mp.mpf(1) if x is None else mp.ncdf(-x / s)

    def tail_mu(x, s, q):
        return mp.mpf(1) if x is None else (1 - q) * mp.ncdf(-x / s) + q * mp.ncdf(-(x - 1) / s)

    def loss(x, s, q):
        return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * s * s)))

    l = mp.mpf(l)
    c = x_of(l / 2, s1, q1)
    pts = sorted(set([-mp.inf, -10 * s1, 0] + [c + k * s1 for k in (-6, -3, -1, 0, 1, 3, 6)]
                     + [x_of(l, s1, q1) + 10 * s1, mp.inf]))
    a = mp.quad(lambda x: mp.npdf(x, 0, s1) * tail_nu(x_of(l - loss(x, s1, q1), s2, q2), s2), pts)
    b = mp.quad(lambda x: ((1 - q1) * mp.npdf(x, 0, s1) + q1 * mp.npdf(x, 1, s1))
                * tail_mu(x_of(l - loss(x, s1, q1), s2, q2), s2, q2), pts)
    return mp.log(a), mp.log(b)


def test_two_subsampled_segments_get_the_mixture_bound_below_1e300() -> None:
    # two segments with q < 1 (one step each): the joint binomial mixture of Gaussian shifts is an
    # upper bound (each component is exactly GDP), here within 1e-5 in log of the exact
    # Neyman-Pearson power at kappa ~ 1e-599; before, such schedules had only the Hölder / RDP
    # bounds there (log gamma -1320.013 against the exact -1320.109; now -1320.102)
    segs = [(1.0, 0.5, 1), (1.5, 0.2, 1)]
    with mp.workdps(30):
        la, lb = _np_point_two(segs, 60.0)
    lk = float(la)
    assert lk < -300 * LN10
    mix = log_gdp_mixture_gamma(segs, lk)
    assert lb <= mix <= lb * (1 - 1e-5)
    got = float(log_chernoff_gamma_many(segs, np.array([lk]))[0][0])
    assert lb <= got <= mix + 1e-12
    b = rero_dpsgd(segments=segs, log_kappa=lk, comparisons=False)
    assert lb <= b.extras["log_gamma"] <= mix + 1e-12


def test_two_segment_mixture_against_an_independent_sum() -> None:
    # the same bound summed independently in mpmath over (k_1, k_2) (30 digits)
    segs = [(1.0, 0.1, 20), (2.0, 0.3, 30), (3.0, 1.0, 5)]
    for lk in (-800 * LN10, -20 * LN10):
        with mp.workdps(30):
            z = mp.findroot(lambda x: mp.log(mp.ncdf(x)) - lk, -mp.sqrt(2 * abs(lk)))
            c = mp.mpf(5) / 9
            tot = mp.mpf(0)
            for k1 in range(21):
                w1 = mp.binomial(20, k1) * mp.mpf("0.1") ** k1 * mp.mpf("0.9") ** (20 - k1)
                for k2 in range(31):
                    w2 = mp.binomial(30, k2) * mp.mpf("0.3") ** k2 * mp.mpf("0.7") ** (30 - k2)
                    tot += w1 * w2 * mp.ncdf(z + mp.sqrt(k1 + mp.mpf(k2) / 4 + c))
            ref = mp.log(tot)
        got = log_gdp_mixture_gamma(segs, lk)
        assert ref <= got <= ref + 1e-9 * abs(ref) + 1e-12
