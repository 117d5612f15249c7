"""DP/RDP/zCDP/GDP -> ReRo conversions and ReRo -> DP, each against an independent computation."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize_scalar

from rerokit.bounds import conversions as cv

KAPPAS = [1e-12, 1e-4, 0.01, 0.1, 0.5, 0.9, 1.0]


# ----------------------------------------------------------------------------- Cor. 3, Thm 2


def test_dp_closed_form_cor3():
    for k in KAPPAS:
        for eps in (0.0, 0.1, 1.0, 5.0, 30.0):
            assert cv.rero_from_dp(eps, k) == pytest.approx(min(1.0, k * math.exp(eps)), rel=1e-13)
    # log version with a baseline far below float range (9.66e-473)
    lk = math.log(9.66) - 473 * math.log(10)
    assert cv.log_rero_from_dp(8.0, lk) == pytest.approx(lk + 8.0, rel=1e-15)


def test_rdp_thm2_closed_form_and_limit_is_cor3():
    for k in KAPPAS:
        for a in (1.01, 2.0, 10.0, 1e6):
            for eps in (0.0, 0.5, 3.0):
                want = min(1.0, (k * math.exp(eps)) ** ((a - 1) / a))
                assert cv.rero_from_rdp(a, eps, k) == pytest.approx(want, rel=1e-12)
    # alpha -> infinity recovers eps-DP (Cor. 3)
    assert cv.rero_from_rdp(1e12, 1.0, 0.01) == pytest.approx(cv.rero_from_dp(1.0, 0.01), rel=1e-9)
    # the curve helper accepts alpha = inf as eps-DP
    g, a = cv.rero_from_rdp_curve([2.0, math.inf], [5.0, 1.0], 0.01)
    assert a == math.inf and g == pytest.approx(0.01 * math.e)


def test_zcdp_cor4_equals_bruteforce_minimum_of_thm2():
    """Cor. 4 is Thm 2 for eps(alpha) = alpha rho minimised over alpha > 1 (numerically here)."""
    for k in (1e-30, 1e-6, 0.01, 0.2):
        for rho in (0.001, 0.1, 1.0, 3.0, 10.0, 100.0):
            lk = math.log(k)
            f = lambda a: min(0.0, (lk + a * rho) * (a - 1) / a)  # noqa: E731
            res = minimize_scalar(f, bounds=(1.0 + 1e-12, 1e6), method="bounded", options={"xatol": 1e-10})
            grid = np.exp(np.linspace(1e-9, math.log(1e6), 200_000))
            brute = min(res.fun, float(np.min(np.minimum(0, (lk + grid * rho) * (grid - 1) / grid))))
            got = cv.log_rero_from_zcdp(rho, lk)
            assert got <= brute + 1e-9  # closed form is the infimum
            assert got == pytest.approx(brute, abs=1e-6)


def test_rdp_curve_from_rdp_accountant_gaussian_approaches_cor4_from_above():
    """Gaussian mechanism (sensitivity 1, noise sigma): RDP(alpha) = alpha/(2 sigma^2), i.e.
    rho-zCDP with rho = 1/(2 sigma^2). The best Thm-2 bound over a finite order grid is >= Cor. 4
    and tends to it as the grid gets finer."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    for sigma in (0.5, 1.0, 3.0):
        for k in (1e-6, 0.01, 0.1):
            orders = np.concatenate([1 + np.exp(np.linspace(-8, 0, 400)), np.linspace(2.01, 300, 30_000)])
            acc = RdpAccountant(list(orders))
            acc.compose(dp_event.GaussianDpEvent(sigma))
            np.testing.assert_allclose(acc.rdp, orders / (2 * sigma**2), rtol=1e-10)
            g, a = cv.rero_from_rdp_curve(acc.orders, acc.rdp, k)
            cor4 = cv.rero_from_zcdp(1 / (2 * sigma**2), k)
            assert g >= cor4 * (1 - 1e-12)
            assert g == pytest.approx(cor4, rel=1e-4, abs=1e-9)
            # the same through the DpEvent entry point
            b = cv.rero_from_rdp_event(dp_event.GaussianDpEvent(sigma), k, orders=list(orders))
            assert b.value == pytest.approx(g, rel=1e-12) and b.extras["best_alpha"] == a


def test_rdp_event_composition_and_subsampling():
    from dp_accounting import dp_event

    sigma, T, k = 4.0, 16, 1e-3
    full = cv.rero_from_rdp_event(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(sigma), T), k)
    # T-fold Gaussian composition = rho-zCDP with rho = T/(2 sigma^2); default orders are coarse
    cor4 = cv.rero_from_zcdp(T / (2 * sigma**2), k)
    assert cor4 * (1 - 1e-12) <= full.value <= cor4 * 1.05
    sub = cv.rero_from_rdp_event(
        dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(sigma)), T),
        log_kappa=math.log(k),
    )
    assert k <= sub.value < full.value  # subsampling only helps
    with pytest.raises(ValueError, match="not supported"):
        cv.rero_from_rdp_event(
            dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0)), k, neighboring_relation="replace_one"
        )
    with pytest.raises(TypeError, match="event"):
        cv.rero_from_rdp_event("gaussian", k)
    with pytest.raises(ValueError, match="orders"):
        cv.rero_from_rdp_event(dp_event.GaussianDpEvent(1.0), k, orders=[0.5, 2.0])
    with pytest.raises(ValueError, match="neighboring_relation"):
        cv.rero_from_rdp_event(dp_event.GaussianDpEvent(1.0), k, neighboring_relation="swap")


# ----------------------------------------------------------------------------- GDP


def _np_power_numeric(mu, kappa, h=2e-4):
    """Neyman-Pearson by brute force: cells of the real line sorted by likelihood ratio of
    N(mu,1) to N(0,1); accumulate N(0,1) mass up to kappa, sum N(mu,1) mass (no Phi^-1)."""
    edges = np.arange(-12.0, 12.0 + mu + h, h)
    nu = np.diff(stats.norm.cdf(edges))
    mu_m = np.diff(stats.norm.cdf(edges - mu))
    mid = 0.5 * (edges[1:] + edges[:-1])
    order = np.argsort(-(mu * mid - mu * mu / 2))  # log likelihood ratio, decreasing
    cnu, cmu = np.cumsum(nu[order]), np.cumsum(mu_m[order])
    i = int(np.searchsorted(cnu, kappa))
    frac = (kappa - (cnu[i - 1] if i else 0.0)) / nu[order][i]
    return (cmu[i - 1] if i else 0.0) + frac * mu_m[order][i]


def test_gdp_closed_form_vs_scipy_and_neyman_pearson():
    for mu in (0.0, 0.3, 1.0, 2.5):
        for k in (1e-3, 0.05, 0.3, 0.8):
            g = cv.rero_from_gdp(mu, k)
            assert g == pytest.approx(stats.norm.cdf(stats.norm.ppf(k) + mu), rel=1e-10)
            assert g == pytest.approx(_np_power_numeric(mu, k), abs=2e-6)
    assert cv.rero_from_gdp(1.0, 1.0) == 1.0


def test_gdp_tiny_kappa_finite_monotone_and_matches_mpmath(monkeypatch):
    mpmath = pytest.importorskip("mpmath")  # in the test env via torch -> sympy
    monkeypatch.setattr(mpmath.mp, "dps", 80)  # restored after the test
    lk0 = math.log(9.66) - 473 * math.log(10)
    prev = -math.inf
    for mu in np.linspace(0, 40, 41):
        lg = cv.log_rero_from_gdp(float(mu), lk0)
        assert math.isfinite(lg) and lg >= prev - 1e-12 and lg >= lk0 - 1e-9 * abs(lk0)
        prev = lg
    for mu in (0.0, 1.0, 10.0):
        kap = mpmath.exp(mpmath.mpf(lk0))
        x = mpmath.findroot(lambda t: mpmath.ncdf(t) - kap, -46.5)
        ref = float(mpmath.log(mpmath.ncdf(x + mu)))
        assert cv.log_rero_from_gdp(mu, lk0) == pytest.approx(ref, rel=1e-9)
    lks = np.linspace(-5000, -1e-6, 300)
    vals = [cv.log_rero_from_gdp(2.0, float(v)) for v in lks]
    assert np.all(np.diff(vals) >= -1e-12)


# ----------------------------------------------------------------------------- Thm 5


def test_dp_from_rero_closed_form_and_edges():
    for g in (0.0, 0.3, 0.7, 0.95, 1.0):
        for eps in (0.0, 0.5, 2.0):
            e = math.exp(eps)
            assert cv.dp_from_rero(g, eps) == pytest.approx(max(0.0, (e + 1) * g - e), abs=1e-14)
    assert cv.dp_from_rero(1.0, 1000.0) == 1.0  # gamma = 1 gives no guarantee at any eps
    assert cv.dp_from_rero(0.999, 1000.0) == 0.0


def test_dp_from_rero_on_randomized_response():
    """Thm 5 on binary randomized response with parameter eps0: the exact best reconstruction
    success over the pair priors with p = 1/(e^eps + 1) (enumerate all four deterministic
    attacks and both orientations) gives delta >= the mechanism's true delta(eps) =
    max(0, P[1|1] - e^eps P[1|0])."""
    for eps0 in (0.2, 1.0, 3.0):
        a = math.exp(eps0) / (1 + math.exp(eps0))  # P[out = in]
        P = np.array([[a, 1 - a], [1 - a, a]])  # P[out | in]
        for eps in (0.0, 0.5, 1.0, 2.0, 4.0):
            p = 1 / (math.exp(eps) + 1)
            gamma = 0.0
            for prior in ((p, 1 - p), (1 - p, p)):
                for R in ((0, 0), (0, 1), (1, 0), (1, 1)):  # R[out] = guessed input
                    succ = sum(prior[z] * P[z, o] for z in (0, 1) for o in (0, 1) if R[o] == z)
                    gamma = max(gamma, succ)
            true_delta = max(0.0, P[1, 1] - math.exp(eps) * P[0, 1])
            d = cv.dp_from_rero(gamma, eps)
            assert d >= true_delta - 1e-12
            assert d == pytest.approx(true_delta, abs=1e-12)  # tight for RR


def test_advantage_and_validation():
    assert cv.advantage(0.55, 0.1) == pytest.approx(0.5)
    assert cv.advantage(1.0, 1.0) == 0.0
    for f, args, name in [
        (cv.rero_from_dp, (float("nan"), 0.1), "epsilon"),
        (cv.rero_from_dp, (1.0, 0.0), "kappa"),
        (cv.rero_from_dp, (1.0, 1.5), "kappa"),
        (cv.rero_from_rdp, (1.0, 1.0, 0.1), "alpha"),
        (cv.rero_from_zcdp, (-1.0, 0.1), "rho"),
        (cv.rero_from_gdp, (float("inf"), 0.1), "mu"),
        (cv.log_rero_from_gdp, (1.0, 0.5), "log_kappa"),
        (cv.dp_from_rero, (1.2, 1.0), "gamma"),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):
            f(*args)
    with pytest.raises(ValueError, match="orders"):
        cv.rero_from_rdp_curve([1.0, 2.0], [0.1, 0.2], 0.1)
    with pytest.raises(ValueError, match="exactly one"):
        cv.rero_from_rdp_curve([2.0], [0.1])
