"""rerokit.accounting.events.replace_one_rdp_order2: the replace-one (2, eps)-RDP of DP-SGD that Guo et
al. 2022, Thm 1 needs, checked against the Gaussian closed form (q = 1) and against the Renyi
divergence of order 2 between the two Poisson mixtures, integrated numerically (q < 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from rerokit.accounting.events import _chi2_segment, _weak_triangle_segment, dpsgd_event, rdp_curve
from rerokit.accounting.events import rdp_epsilon_order2, replace_one_rdp_order2
from rerokit.bounds.mse import rdp_mse_lower_bound
from rerokit.bounds.schedule import Schedule


def _log_mix(x: np.ndarray, q: float, sigma: float, mean: np.ndarray) -> np.ndarray:
    """log density of (1 - q) N(0, sigma^2 I) + q N(mean, sigma^2 I) at the rows of x (up to the shared
    Gaussian normaliser, which cancels in D_2)."""
    base = -0.5 * (x**2).sum(-1) / sigma**2
    shifted = -0.5 * ((x - mean) ** 2).sum(-1) / sigma**2
    return np.logaddexp(np.log1p(-q) + base, math.log(q) + shifted) if q < 1 else shifted


def _renyi2_1d(q: float, sigma: float, g: float, g2: float) -> float:
    """D_2(P || R) = log int p^2 / r, P = (1-q) N(0, s^2) + q N(g, s^2), R the same with g2 (quadrature)."""
    norm = -0.5 * math.log(2 * math.pi * sigma**2)

    def f(x: float) -> float:
        xx = np.array([[x]])
        return math.exp(norm + 2 * _log_mix(xx, q, sigma, np.array([g]))[0] - _log_mix(xx, q, sigma, np.array([g2]))[0])

    lim = 40 * sigma + 4
    val, err = integrate.quad(f, -lim, lim, points=[0.0, g, g2], limit=400, epsabs=0, epsrel=1e-12)
    assert err < 1e-9 * val
    return math.log(val)


def _renyi2_2d(q: float, sigma: float, g: np.ndarray, g2: np.ndarray) -> float:
    """The same in the plane of two non-collinear gradients (a fine grid; the integrand is smooth)."""
    h = sigma / 40
    ax = np.arange(-12 * sigma - 2, 12 * sigma + 2, h)
    X, Y = np.meshgrid(ax, ax, indexing="ij")
    pts = np.stack([X.ravel(), Y.ravel()], -1)
    logf = 2 * _log_mix(pts, q, sigma, g) - _log_mix(pts, q, sigma, g2) - math.log(2 * math.pi * sigma**2)
    return math.log(np.exp(logf).sum() * h * h)


@pytest.mark.parametrize("sigma,T", [(10.81, 100), (1.0, 1), (0.7, 3), (3.0, 1000)])
def test_full_batch_closed_form(sigma, T):
    # q = 1: T Gaussian releases of sensitivity 2C: eps_2 = 2 (2C)^2 / (2 sigma^2 C^2) = 4 T / sigma^2 exactly
    r = replace_one_rdp_order2(dpsgd_event(sigma, 1.0, T))
    assert r.epsilon == pytest.approx(4 * T / sigma**2, rel=1e-14)
    assert r.relation == "replace-one" and r.order == 2.0
    # and numerically: D_2(N(2, s^2) || N(0, s^2)) per step (mpmath-free quadrature of the Gaussian pair)
    assert r.epsilon / T == pytest.approx(_renyi2_1d(1.0, sigma, 1.0, -1.0), rel=1e-8)


def test_readme_quick_start_numbers():
    # sigma = 10.81, q = 1, T = 100: add/remove 100/sigma^2 = 0.8557..., replace-one 4x that
    add = rdp_epsilon_order2(dpsgd_event(10.81, 1.0, 100))[0]
    rep = replace_one_rdp_order2(dpsgd_event(10.81, 1.0, 100)).epsilon
    assert rep == pytest.approx(4 * add, rel=1e-12)
    assert rdp_mse_lower_bound(rep, 1.0).value == pytest.approx(0.25 / math.expm1(400 / 10.81**2), rel=1e-9)


PAIRS_1D = [(1.0, -1.0), (-1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.5, -1.0), (1.0, 0.3)]


@pytest.mark.parametrize("q,sigma", [(0.05, 1.0), (0.01, 0.8), (0.2, 2.0), (0.5, 1.5), (0.3, 0.6), (0.01, 0.5),
                                     (0.9, 1.0)])
@pytest.mark.parametrize("T", [1, 2])
def test_poisson_at_least_the_numerical_replace_one_divergence(q, sigma, T):
    # every pair of clipped gradients (|g| <= C = 1) of the target and its replacement, other records
    # fixed: D_2 of the T-step product is T x one step (non-adaptive pairs); the certified value must
    # be >= each of them (the true replace-one eps_2 is the sup over pairs and adaptive choices)
    r = replace_one_rdp_order2(dpsgd_event(sigma, q, T)).epsilon
    worst = max(_renyi2_1d(q, sigma, g, g2) for g, g2 in PAIRS_1D)
    assert r >= T * worst
    # each certified ingredient on its own (the chi-square bound, Mironov's weak triangle inequality)
    assert T * _chi2_segment(sigma, q) >= T * worst
    assert _weak_triangle_segment(sigma, q, T) >= T * worst
    # and it is not absurdly loose: within 2x of the antipodal pair (measured: 1.08x to 1.6x here)
    assert r <= 2 * T * _renyi2_1d(q, sigma, 1.0, -1.0)


@pytest.mark.parametrize("q,sigma", [(0.1, 1.0), (0.3, 0.8)])
def test_poisson_at_least_the_divergence_of_orthogonal_gradients(q, sigma):
    r = replace_one_rdp_order2(dpsgd_event(sigma, q, 1)).epsilon
    for ang in (math.pi / 2, 2.5):
        d = _renyi2_2d(q, sigma, np.array([1.0, 0.0]), np.array([math.cos(ang), math.sin(ang)]))
        assert 0 < d <= r


@pytest.mark.parametrize("q,sigma", [(0.05, 1.0), (0.2, 2.0), (0.5, 0.9)])
def test_dp_accounting_rdp_bounds_both_directions(q, sigma):
    # the weak triangle step uses dp-accounting's add/remove RDP for the remove (P||Q) AND the add (Q||P)
    # direction: check both against quadrature at the integer orders of p = 2 (orders 4 and 3)
    orders, rdp = rdp_curve(dpsgd_event(sigma, q, 1), [3.0, 4.0])
    norm = -0.5 * math.log(2 * math.pi * sigma**2)
    for a, eps in zip(orders, rdp):
        for first, second in ((1.0, None), (None, 1.0)):  # remove: D(mix || N0); add: D(N0 || mix)

            def f(x: float, a=a, first=first, second=second) -> float:
                xx = np.array([[x]])
                lp = _log_mix(xx, q, sigma, np.array([1.0]))[0] if first else -0.5 * x * x / sigma**2
                lr = _log_mix(xx, q, sigma, np.array([1.0]))[0] if second else -0.5 * x * x / sigma**2
                return math.exp(norm + a * lp - (a - 1) * lr)

            val, _ = integrate.quad(f, -40 * sigma - 4, 40 * sigma + 4, points=[0.0, 1.0], limit=400, epsrel=1e-12)
            assert math.log(val) / (a - 1) <= eps * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("sigma,q,T", [(1.0, 0.01, 1000), (0.8, 0.001, 10000), (4.0, 0.05, 200), (2.0, 0.5, 10),
                                       (10.81, 1.0, 100), (0.6, 0.2, 7)])
def test_never_below_add_remove_so_the_mse_bound_is_never_above(sigma, q, T):
    rep = replace_one_rdp_order2(dpsgd_event(sigma, q, T)).epsilon
    add = rdp_epsilon_order2(dpsgd_event(sigma, q, T))[0]
    assert rep >= add
    assert rep <= 4 * T / sigma**2 * (1 + 1e-15)  # never above the unamplified closed form
    assert rdp_mse_lower_bound(rep, 1.0, 8).value <= rdp_mse_lower_bound(add, 1.0, 8).value


def test_tiny_sigma_is_finite_or_inf_never_nan():
    # sinh(1e4) overflows (chi-square bound inf); the weak triangle and the closed form 4T/s^2 remain
    r = replace_one_rdp_order2(dpsgd_event(0.01, 0.01, 10)).epsilon
    assert math.isfinite(r) and rdp_epsilon_order2(dpsgd_event(0.01, 0.01, 10))[0] <= r <= 4 * 10 / 0.01**2


@pytest.mark.parametrize("sigma,q,T", [(1e6, 1e-6, 10), (0.3, 1e-300, 1), (1e150, 0.1, 3), (1e200, 1.0, 3),
                                       (1e-3, 0.5, 1), (1e-150, 0.1, 3), (0.05, 0.999999, 5)])
def test_extremes_are_positive_never_nan(sigma, q, T):
    # dp-accounting's add/remove RDP comes out NEGATIVE (cancellation) at (1e6, 1e-6) and (0.3, 1e-300): the
    # replace-one value must still be > 0 (a true RDP is > 0 here), and inf only where it overflows
    r = replace_one_rdp_order2(dpsgd_event(sigma, q, T)).epsilon
    assert r > 0 and not math.isnan(r)
    env = 4 * T / (sigma * sigma)
    assert r <= max(env, T * 1e-300) * (1 + 1e-12) or math.isinf(env)


def test_shuffle_and_groups_use_the_unamplified_gaussian():
    # shuffled fixed-size batches: one release per epoch touched (ceil(T q)), sensitivity 2C
    s = Schedule.from_settings(2.0, 0.1, 25, sampler="shuffle")
    assert replace_one_rdp_order2(s).epsilon == pytest.approx(3 * 4 / 4.0, rel=1e-14)
    # full batch sampler: every step
    s = Schedule.from_settings(2.0, 0.1, 25, sampler="full_batch")
    assert replace_one_rdp_order2(s).epsilon == pytest.approx(25 * 4 / 4.0, rel=1e-14)
    # k examples per user: sensitivity 2kC (Poisson with k > 1: the unamplified envelope)
    s = Schedule.from_settings(2.0, 0.1, 25, examples_per_user=3)
    assert replace_one_rdp_order2(s).epsilon == pytest.approx(25 * 4 * 9 / 4.0, rel=1e-14)
    # several segments add up
    two = replace_one_rdp_order2([(1.0, 1.0, 3), (2.0, 1.0, 4)]).epsilon
    assert two == pytest.approx(4 * 3 + 4 * 4 / 4, rel=1e-14)


def test_report_error_view_uses_the_run_sampler():
    # the report's Guo section certifies replace-one for the run's sampler: shuffled batches, no amplification
    from rerokit.report.build import _guo

    s = Schedule.from_settings(2.0, 0.1, 25, sampler="shuffle")
    g = _guo(s, 1.0, 4)
    assert g.neighbouring_relation == "replace-one" and g.epsilon_rdp2 == pytest.approx(3.0, rel=1e-14)
    assert g.mse_lower_bound <= rdp_mse_lower_bound(rdp_epsilon_order2(dpsgd_event(2.0, 0.1, 25))[0], 1.0, 4).value
