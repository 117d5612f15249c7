"""Gaussian mechanism privacy profile (Balle & Wang 2018, Thm 8) against mpmath and dp-accounting."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from rerokit.bounds.gaussian import gaussian_delta, gaussian_delta_bracket, gaussian_epsilon, gdp_mu, noise_multiplier_full_batch



@pytest.fixture(autouse=True)
def _mp_precision():
    """mpmath's working precision for this module's references, restored after each test (a
    module-level assignment leaked into the other modules collected in the same process)."""
    with mp.workdps(50):
        yield


def _delta_exact(eps: float, mu: float) -> mp.mpf:
    e, m = mp.mpf(eps), mp.mpf(mu)
    return mp.ncdf(m / 2 - e / m) - mp.e**e * mp.ncdf(-m / 2 - e / m)


@pytest.mark.parametrize("eps,mu", [(0.0, 1.0), (1.0, 0.5), (3.0, 2.0), (50.0, 10.0), (800.0, 40.0), (1e-3, 1e-3)])
def test_delta_is_exact_and_rounded_up(eps: float, mu: float) -> None:
    exact = _delta_exact(eps, mu)
    got = gaussian_delta(eps, mu)
    assert got >= exact  # the safe side
    lo, hi = gaussian_delta_bracket(eps, mu)
    assert lo <= exact <= hi == got and hi - lo <= 1e-10  # certified; its width is the rounding allowance
    assert got <= exact * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("eps,mu", [(1e20, 1e5), (1e20, 1e15), (1e20, 1.4142135623e10), (1e3, 44.72)])
def test_delta_at_huge_epsilon_is_on_the_safe_side(eps: float, mu: float) -> None:
    """eps + log Phi(y) cancels for large eps: the slack grows with eps (never below the truth)."""
    exact = _delta_exact(eps, mu)
    got = gaussian_delta(eps, mu)
    assert exact <= got <= 1.0 and gaussian_delta_bracket(eps, mu)[0] <= exact
    if eps <= 1e3:  # where floats resolve eps + log Phi(y) the slack stays tiny
        assert got <= exact * (1 + 1e-9) + 1e-300


def test_delta_beyond_float_range_is_exact_zero_or_one() -> None:
    """eps = 1e308: e^eps and Phi(mu/2 - eps/mu) leave the float range. mu = 1e150: both terms
    are below exp(-1e315), delta is 0 to within the smallest subnormal; mu = 1e300: Phi(5e299) = 1
    and e^eps Phi(-5e299) = exp(1e308 - 1.25e599) = 0, delta is 1. Before, an infinite log made
    the slack nan and delta read 1 for every mu, so gdp_mu(1e308, .) found no mu."""
    assert 0.0 < gaussian_delta(1e308, 1e150) <= 1e-300
    assert gaussian_delta(1e308, 1e300) == 1.0
    mu = gdp_mu(1e308, 1e-5)  # the crossing is sqrt(2 eps) to ~1e-153 relative; the slack puts mu below it
    assert mu <= math.sqrt(2.0) * 1e154 and mu == pytest.approx(math.sqrt(2.0) * 1e154, rel=1e-6)


@pytest.mark.parametrize("delta,mu", [(1e-5, 0.5), (1e-5, 2.0), (1e-10, 5.0), (1e-300, 1.0), (0.3, 0.1)])
def test_epsilon_inverts_delta_tightly(delta: float, mu: float) -> None:
    eps = gaussian_epsilon(delta, mu)
    assert _delta_exact(eps, mu) <= delta
    if eps > 0:
        assert _delta_exact(eps * (1 - 1e-8), mu) > delta


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-5), (8.0, 1e-6), (1e4, 1e-5), (1e20, 1e-5),
                                       (1e308, 1e-5)])
def test_gdp_mu_is_largest_private_mu(eps: float, delta: float) -> None:
    mu = gdp_mu(eps, delta)
    assert _delta_exact(eps, mu) <= delta
    assert _delta_exact(eps, mu * (1 + 1e-8)) > delta


def test_full_batch_sigma_vs_dp_accounting() -> None:
    """Second method: dp-accounting's PLD accountant for T Gaussian steps (pessimistic, so its
    epsilon at our sigma is >= the target by at most its discretisation)."""
    import dp_accounting

    eps, delta, T = 2.0, 1e-5, 50
    s = noise_multiplier_full_batch(eps, delta, T)
    assert s == pytest.approx(math.sqrt(T) / gdp_mu(eps, delta), rel=1e-8)
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(s), T))
    assert acc.get_epsilon(delta) == pytest.approx(eps, rel=2e-3)


@pytest.mark.parametrize("call,name", [
    (lambda: gaussian_delta(-1.0, 1.0), "epsilon"), (lambda: gaussian_delta(1.0, 0.0), "mu"),
    (lambda: gaussian_epsilon(0.0, 1.0), "delta"), (lambda: gdp_mu(float("nan"), 1e-5), "epsilon"),
    (lambda: noise_multiplier_full_batch(1.0, 1e-5, 0), "steps"), (lambda: gaussian_delta("1", 1.0), "epsilon"),
])
def test_errors_name_the_parameter(call, name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        call()
