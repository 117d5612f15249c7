"""Tests of rerokit.bounds.mse (Guo et al. 2022, Thm 1, Thm 2, Thm 4, Sec. 7.1)."""

import math

import numpy as np
import pytest
from scipy.special import erf
from scipy.stats import norm

from rerokit.bounds import mse


def test_rdp_bound_issue_value_eps1_diameter1():
    # Issue / Thm 1 with diam_i = 1, unbiased: 0.25 / (e - 1) = 0.14549 per coordinate.
    b = mse.rdp_mse_lower_bound(1.0, 1.0)
    assert b.direction == "lower"
    assert b.value == pytest.approx(0.25 / (math.e - 1), rel=1e-12)
    assert round(b.value, 5) == 0.14549
    assert b.value <= 0.25 / (math.e - 1)  # safe side
    # Same per-coordinate value for any dim when all diameters are equal.
    assert mse.rdp_mse_lower_bound(1.0, 1.0, dim=784).value == pytest.approx(b.value, rel=1e-12)


def test_rdp_bound_paper_example_age():
    # Guo et al. Sec. 4, observation 3: Z = [0, 100], eps = 2 -> 10^4 / (4 (e^2 - 1)) ~ 391.
    assert mse.rdp_mse_lower_bound(2.0, 100.0).value == pytest.approx(391.3, abs=0.1)


def test_rdp_bound_per_coordinate_diameters_and_bias():
    diam = np.array([1.0, 2.0, 0.5])
    gamma = np.array([1.0, 0.5, 2.0])
    eps = 0.7
    # Independent evaluation of Thm 1: sum_i gamma_i^2 diam_i^2 / (4 d) / (e^eps - 1) + bias^2/d.
    expect = np.sum(gamma**2 * diam**2) / (4 * 3) / (math.exp(eps) - 1) + 0.3 / 3
    b = mse.rdp_mse_lower_bound(eps, diam, gamma=gamma, bias_sq=0.3)
    assert b.value == pytest.approx(expect, rel=1e-12)
    assert b.value <= expect


def test_rdp_bound_limits():
    assert mse.rdp_mse_lower_bound(0.0).value == math.inf
    assert mse.rdp_mse_lower_bound(5000.0).value == 0.0  # underflows to the safe side, no overflow
    # Tightness example of Sec. 4: Gaussian z + N(0, s^2), eps = M^2/s^2; bound -> s^2/4 as M -> 0.
    s, M = 0.7, 1e-4
    assert mse.rdp_mse_lower_bound(M**2 / s**2, M).value == pytest.approx(s**2 / 4, rel=1e-6)


def test_rdp_bound_huge_diameter_is_the_largest_float_without_warnings():
    """diameter 1e308: diameter^2 / (4 (e^eps - 1)) exceeds every float; the lower bound reported
    is the largest float (below the truth), without an overflow warning on stderr."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = mse.rdp_mse_lower_bound(0.5, 1e308)
    assert b.value <= np.finfo(float).max and b.value > 1e307


@pytest.mark.parametrize("bad", [dict(epsilon=-1), dict(epsilon=float("nan")), dict(epsilon=1, diameter=-1), dict(epsilon=1, dim=0)])
def test_rdp_bound_rejects_bad_input(bad):
    eps = bad.pop("epsilon")
    with pytest.raises(ValueError):
        mse.rdp_mse_lower_bound(eps, **bad)


def test_epsilon_from_curve_never_interpolates_down():
    orders = [1.5, 1.75, 2.5, 3.0, 8.0]
    rdp = [0.1, 0.2, 0.5, 0.6, 2.0]
    eps, order = mse.rdp_epsilon_at_order(orders, rdp)
    assert (eps, order) == (0.5, 2.5)  # smallest order >= 2
    eps2, order2 = mse.rdp_epsilon_at_order([2.0, 3.0], [0.4, 0.6])
    assert (eps2, order2) == (0.4, 2.0)
    with pytest.raises(ValueError, match="orders"):
        mse.rdp_epsilon_at_order([1.5, 1.9], [0.1, 0.2])


def test_bound_from_gaussian_rdp_curve_matches_closed_form():
    # Gaussian mechanism, sensitivity 1, std s: eps(alpha) = alpha / (2 s^2); at alpha = 2: 1/s^2.
    s = 1.3
    orders = np.array([1.25, 2.0, 4.0, 16.0])
    b = mse.rdp_mse_lower_bound_from_curve(orders, orders / (2 * s**2), 1.0)
    assert b.value == pytest.approx(0.25 / math.expm1(1 / s**2), rel=1e-12)
    assert b.extras["order_used"] == 2.0


def test_output_perturbation_epsilon_paper_setting():
    # Guo et al. Sec. 7.1: n = 12665, lam = sigma = 1e-2. Correct (2, eps)-RDP with sigma the noise
    # std: Delta^2/sigma^2 = 4/(n lam sigma)^2 = 2.494 (the authors' code); the paper's printed
    # 1.58 = 2/(n lam sigma) is the GDP mu = Delta/sigma, not eps_2.
    n, lam, sig = 12665, 1e-2, 1e-2
    eps = mse.output_perturbation_rdp(n, lam, sig)
    assert eps == pytest.approx(4 / (n * lam * sig) ** 2, rel=1e-12)
    assert eps == pytest.approx(2.4937, abs=1e-4)
    mu = mse.output_perturbation_sensitivity(n, lam) / sig
    assert mu == pytest.approx(1.58, abs=0.005)  # the paper's number
    assert eps == pytest.approx(mu**2, rel=1e-12)
    # Sec. 7.2 (sigma = 1e-5): paper's eps = 1579 is mu again; eps_2 = mu^2.
    assert mse.output_perturbation_sensitivity(n, lam) / 1e-5 == pytest.approx(1579, abs=1)
    assert mse.output_perturbation_rdp(n, lam, 1e-5) == pytest.approx(1579.2**2, rel=1e-3)


def test_output_perturbation_rdp_is_the_gaussian_divergence():
    # Independent: Renyi divergence of order 2 between N(0, s^2) and N(Delta, s^2) by quadrature.
    n, lam, s = 100, 0.05, 0.3
    D = mse.output_perturbation_sensitivity(n, lam)
    x = np.linspace(-20, 20, 400001) * s
    p, q = norm.pdf(x, D, s), norm.pdf(x, 0, s)
    d2 = math.log(np.trapezoid(p**2 / q, x))
    assert mse.output_perturbation_rdp(n, lam, s) == pytest.approx(d2, rel=1e-6)
    assert mse.output_perturbation_rdp(n, lam, s, adjacency="add_remove") == pytest.approx(d2 / 4, rel=1e-6)
    with pytest.raises(ValueError, match="adjacency"):
        mse.output_perturbation_rdp(n, lam, s, adjacency="swap")


def test_cramer_rao_unbiased_and_matrix_forms():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 5))
    F = A @ A.T + 0.5 * np.eye(5)
    d = 5
    dfil = np.trace(F) / d
    full = mse.cramer_rao_mse_lower_bound_matrix(F)
    assert full == pytest.approx(np.trace(np.linalg.inv(F)) / d, rel=1e-10)
    # Thm 2: Tr(I^{-1})/d >= d/Tr(I) = 1/dFIL.
    assert full >= mse.cramer_rao_mse_lower_bound(dfil)
    assert mse.cramer_rao_mse_lower_bound(dfil) == pytest.approx(1 / dfil)
    # Scalar Gaussian location model: I = 1/s^2, the sample mean attains s^2.
    assert mse.cramer_rao_mse_lower_bound(1 / 0.25) == pytest.approx(0.25)
    np.testing.assert_allclose(mse.cramer_rao_mse_lower_bound([2.0, 0.0]), [0.5, np.inf])
    with pytest.raises(ValueError):
        mse.cramer_rao_mse_lower_bound(-1.0)
    with pytest.raises(ValueError, match="positive definite"):
        mse.cramer_rao_mse_lower_bound_matrix(np.zeros((2, 2)))


def test_gelu_clip_factor_is_safe():
    # max_u u / (GELU(u - 1) + 1) on a fine grid, erf GELU and tanh GELU. Alg. 1 prints 1.115,
    # slightly below the true maxima 1.11522 / 1.11524; rerokit's factor must exceed both.
    u = np.linspace(0, 20, 2_000_001)
    v = u - 1
    gelu = 0.5 * v * (1 + erf(v / math.sqrt(2)))
    gelu_tanh = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3)))
    m = np.max(u / (gelu + 1))
    m_tanh = np.max(u / (gelu_tanh + 1))
    assert m == pytest.approx(1.1152189, abs=1e-6)
    assert 1.115 < m <= mse.GELU_CLIP_FACTOR
    assert m_tanh <= mse.GELU_CLIP_FACTOR


def test_gaussian_dp_epsilon_exact_and_subsampling_factor():
    D, s, delta = 1.0, 2.0, 1e-5
    eps = mse.gaussian_dp_epsilon(D, s, delta)
    # Balle & Wang 2018: the privacy profile at eps equals delta (and eps is rounded up).
    mu = D / s
    back = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
    assert back <= delta and back == pytest.approx(delta, rel=1e-6)
    # The classical bound (valid for eps < 1) is never below the exact one where it applies.
    s2 = 10.0
    classical = math.sqrt(2 * math.log(1.25 / delta)) / s2
    assert mse.gaussian_dp_epsilon(1.0, s2, delta) <= classical
    q = 0.01
    k = mse.fil_subsampling_factor(q, eps)
    assert k == pytest.approx(q / (q + (1 - q) * math.exp(-eps)))
    assert q <= k <= 1
    assert mse.fil_subsampling_factor(q, math.inf) == 1.0
    assert mse.fil_subsampling_factor(q, 0.0) == pytest.approx(q)


def test_bound_from_dp_accounting_rdp_curve():
    # "From any RDP curve": dp-accounting's RdpAccountant for T compositions of a Gaussian with
    # noise multiplier s (full batch) gives eps(alpha) = T alpha / (2 s^2); Thm 1 at eps_2 = T/s^2.
    from rerokit.accounting.events import dpsgd_event, rdp_curve

    s, T = 3.0, 4
    orders, rdp = rdp_curve(dpsgd_event(s, 1.0, T), [1.5, 2.0, 3.0, 8.0])
    np.testing.assert_allclose(rdp, T * np.asarray(orders) / (2 * s**2), rtol=1e-10)
    b = mse.rdp_mse_lower_bound_from_curve(orders, rdp, 1.0)
    assert b.value == pytest.approx(0.25 / math.expm1(T / s**2), rel=1e-10)
    assert mse.rdp_mse_lower_bound_from_curve(orders, rdp, 1.0).extras["order_used"] == 2.0
