"""Laplace mechanism: trade-off curve (Dong, Roth & Su 2022) and its ReRo bound gamma = 1 - f(kappa)
(Kaissis et al. 2023), checked against a direct Neyman-Pearson computation for Lap(0, b) vs Lap(Delta, b)."""

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from rerokit.bounds.laplace import laplace_epsilon, laplace_tradeoff, pure_dp_tradeoff, rero_laplace, rero_pure_dp


def _np_threshold_beta(alpha: float, scale: float, shift: float):
    """Neyman-Pearson for Lap(0, b) vs Lap(shift, b) in 50-digit arithmetic: the likelihood ratio is
    non-decreasing in x, so the most powerful level-alpha test rejects for x > t with P0(X > t) = alpha
    (the Laplace quantile); beta = P1(X <= t) (the Laplace cdf). Returns an mpmath number."""
    with mpmath.workdps(50):
        a, b, m = mpmath.mpf(alpha), mpmath.mpf(scale), mpmath.mpf(shift)
        t = -b * mpmath.log(2 * a) if a <= 0.5 else b * mpmath.log(2 * (1 - a))
        return mpmath.e ** ((t - m) / b) / 2 if t < m else 1 - mpmath.e ** (-(t - m) / b) / 2


def _np_sorted_lr_beta(alphas: np.ndarray, scale: float, shift: float) -> np.ndarray:
    """The same curve without using monotonicity: fine cells of the line sorted by likelihood ratio,
    rejecting the cells of largest ratio first (the Neyman-Pearson lemma), interpolated in alpha."""
    edges = np.linspace(-40 * scale, shift + 40 * scale, 800_001)
    p0 = np.diff(stats.laplace.cdf(edges, 0.0, scale))
    p1 = np.diff(stats.laplace.cdf(edges, shift, scale))
    order = np.argsort(-(p1 / np.maximum(p0, 1e-300)), kind="stable")
    a = np.concatenate([[0.0], np.cumsum(p0[order])])
    power = np.concatenate([[0.0], np.cumsum(p1[order])])
    return 1.0 - np.interp(alphas, a, power)


@pytest.mark.parametrize("scale,shift", [(1.0, 1.0), (0.5, 1.0), (2.0, 0.5), (0.25, 1.0)])
def test_tradeoff_formula_equals_neyman_pearson(scale, shift):
    eps = laplace_epsilon(scale, shift)
    assert eps == pytest.approx(shift / scale)
    alphas = np.concatenate([np.geomspace(1e-6, 0.5, 40), np.linspace(0.5, 1 - 1e-9, 40)])
    beta = laplace_tradeoff(alphas, eps)
    direct = np.array([float(_np_threshold_beta(a, scale, shift)) for a in alphas])
    np.testing.assert_allclose(beta, direct, rtol=1e-10, atol=1e-13)
    # a second, independent Neyman-Pearson computation (sorted likelihood ratios on a grid)
    grid_alphas = np.linspace(0.001, 0.999, 25)
    np.testing.assert_allclose(laplace_tradeoff(grid_alphas, eps), _np_sorted_lr_beta(grid_alphas, scale, shift),
                               atol=2e-4)


def test_tradeoff_is_symmetric_and_between_pure_dp_and_identity():
    a = np.linspace(0, 1, 1001)
    for eps in (0.1, 1.0, 3.0, 10.0):
        f = laplace_tradeoff(a, eps)
        np.testing.assert_allclose(laplace_tradeoff(f, eps), a, atol=1e-12)  # f(f(alpha)) = alpha
        assert np.all(f >= pure_dp_tradeoff(a, eps) - 1e-15)  # eps-DP: above f_{eps,0}
        assert np.all(f <= 1 - a + 1e-15)  # a real test
    assert laplace_tradeoff(0.0, 5.0) == 1.0 and laplace_tradeoff(1.0, 5.0) == 0.0
    assert laplace_tradeoff(0.3, 0.0) == pytest.approx(0.7)  # eps = 0: no information


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("kappa", [1e-4, 0.01, 0.1, 0.3, 0.5, 0.7])
def test_rero_laplace_is_one_minus_f_of_kappa(eps, kappa):
    b = rero_laplace(eps, kappa=kappa)
    exact = 1 - _np_threshold_beta(kappa, 1.0, eps)  # Lap(0, 1) vs Lap(eps, 1), direct Neyman-Pearson
    assert exact <= b.value <= exact * (1 + 1e-13)  # never below the truth, and tight
    assert b.value <= b.extras["gamma_dp"] + 1e-15 and b.value <= b.extras["gamma_pure_dp_curve"] + 1e-15
    assert b.value >= kappa


def test_rero_laplace_regions_and_improvement_over_cor3():
    # kappa = 0.1 at eps = 4: the middle piece, 1 - e^-4 / 0.4 = 0.95421, where Cor. 3 says 1
    b = rero_laplace(4.0, prior=10)
    assert b.extras["region"] == "1 - e^-eps/(4 kappa)"
    assert b.value == pytest.approx(1 - math.exp(-4) / 0.4, abs=1e-14)
    assert b.extras["gamma_dp"] == 1.0 and b.extras["gamma_pure_dp_curve"] == pytest.approx(1 - math.exp(-4) * 0.9)
    # tiny kappa: the kappa e^eps piece, exact in log space where kappa underflows
    t = rero_laplace(3.0, log_kappa=-2000.0)
    assert t.extras["region"] == "kappa e^eps" and t.extras["log_gamma"] == pytest.approx(-1997.0, abs=1e-9)
    assert t.extras["log_gamma"] >= -1997.0
    assert rero_laplace(2.0, kappa=0.9).extras["region"] == "1 - e^-eps (1 - kappa)"


def test_rero_pure_dp_is_min_of_the_two_lines():
    for eps, kappa in [(1.0, 0.1), (1.0, 0.5), (3.0, 0.01), (3.0, 0.2), (0.0, 0.3)]:
        want = min(kappa * math.exp(eps), 1 - math.exp(-eps) * (1 - kappa))
        assert want <= rero_pure_dp(eps, kappa=kappa).value <= want + 1e-14
    # attained by binary randomised response: the Neyman-Pearson test of P0 = (1 - p0, p0) against
    # P1 = (1 - p1, p1), p0 = 1/(1 + e^eps), p1 = e^eps/(1 + e^eps), randomised at level kappa
    for eps, kappa in [(1.0, 0.5), (1.0, 0.1), (2.5, 0.03), (2.5, 0.6)]:
        p0, p1 = 1 / (1 + math.exp(eps)), math.exp(eps) / (1 + math.exp(eps))
        power = kappa * p1 / p0 if kappa <= p0 else p1 + (kappa - p0) * (1 - p1) / (1 - p0)
        assert rero_pure_dp(eps, kappa=kappa).value == pytest.approx(power, rel=1e-13)


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
def test_bad_epsilon_named(bad):
    with pytest.raises(ValueError, match="epsilon"):
        rero_laplace(bad, kappa=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_tradeoff(0.1, bad)


def test_bad_alpha_and_scale_named():
    with pytest.raises(ValueError, match="alpha"):
        laplace_tradeoff([0.1, 1.5], 1.0)
    with pytest.raises(ValueError, match="scale"):
        laplace_epsilon(0.0)
    with pytest.raises(TypeError):
        rero_laplace("1", kappa=0.1)


# ----------------------------------------------------------------------------- the contract (hypothesis)
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rerokit.bounds.information_flow import rero_finite_support  # noqa: E402

_LOG_KAPPAS = st.one_of(st.floats(-4300.0, 0.0), st.just(0.0), st.floats(-1e-6, 0.0))
_EPS = st.floats(0.0, 2000.0)


@settings(max_examples=200, deadline=None)
@given(e1=_EPS, e2=_EPS, lk1=_LOG_KAPPAS, lk2=_LOG_KAPPAS)
def test_pure_dp_bounds_contract(e1, e2, lk1, lk2):
    """kappa <= gamma <= 1, gamma non-decreasing in kappa and in eps, Laplace <= pure-DP curve <= Cor. 3,
    for kappa down to 1e-1867 and eps up to 2000 (log values where gamma underflows)."""
    (e1, e2), (lk1, lk2) = sorted((e1, e2)), sorted((lk1, lk2))
    for f in (rero_laplace, rero_pure_dp):
        a, b, c = f(e1, log_kappa=lk1), f(e2, log_kappa=lk1), f(e1, log_kappa=lk2)
        for x in (a, b, c):
            assert 0.0 <= x.value <= 1.0 and math.isfinite(x.extras["log_gamma"]) and x.extras["log_gamma"] <= 0.0
            assert x.extras["log_gamma"] >= x.inputs["log_kappa"] - 1e-12
        assert b.extras["log_gamma"] >= a.extras["log_gamma"] - 1e-12
        assert c.extras["log_gamma"] >= a.extras["log_gamma"] - 1e-12
    lap, pure = rero_laplace(e1, log_kappa=lk1), rero_pure_dp(e1, log_kappa=lk1)
    assert lap.extras["log_gamma"] <= pure.extras["log_gamma"] + 1e-12
    assert pure.extras["log_gamma"] <= min(0.0, lk1 + e1) + 1e-9


@settings(max_examples=100, deadline=None)
@given(eps=_EPS, n=st.one_of(st.integers(1, 10**6), st.just(10**400)))
def test_finite_support_contract(eps, n):
    b = rero_finite_support(eps, support_size=n, log_kappa=-math.log(n))
    assert 0.0 <= b.value <= 1.0 and b.extras["log_gamma"] <= 0.0
    assert b.extras["log_gamma"] >= -math.log(n) - 1e-9  # never below kappa = 1/n
    assert b.extras["log_gamma"] <= min(0.0, -math.log(n) + eps) + 1e-9  # never above Cor. 3


def test_top_level_api():
    import rerokit

    assert rerokit.rero_laplace(4.0, prior=10).value == rero_laplace(4.0, kappa=0.1).value
    assert rerokit.rero_finite_support(1.0, 10).value == rero_finite_support(1.0, prior=10).value
