"""Small noise on the trade-off curve: closed-form power, profile and epsilon, and one value with rero_dpsgd.

References: mpmath (50 digits) for one step's exact trade-off curve, privacy profile and both
directions' hockey-stick divergences (the Neyman-Pearson tests of a Gaussian against a two-component
mixture are thresholds on x, so each is a closed form in Phi), and for the Binomial-Gaussian tail the
epsilon's upper end rests on; the PLD engine (a second method) for epsilon and gamma at settings where
it is quick; ``rero_dpsgd`` for the curve's reconstruction success.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld, rero_dpsgd
from rerokit.bounds.dpsgd_tinysigma import (
    CLOSED_FORM_WIDTH,
    closed_form_power,
    closed_form_profile,
)
from rerokit.bounds.dpsgd_tinysigma_epsilon import closed_form_epsilon
from rerokit.bounds.tradeoff import dpsgd_tradeoff

mp.mp.dps = 50


def _phi_bar(x) -> mp.mpf:
    return mp.erfc(mp.mpf(x) / mp.sqrt(2)) / 2


def _one_step_power(sigma: float, q: float, alpha: float) -> mp.mpf:
    """Exact power at level alpha of one step (the likelihood ratio is increasing in x): reject x > sigma z."""
    z = mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(alpha))  # Phi_bar(z) = alpha
    return (1 - q) * mp.mpf(alpha) + q * _phi_bar(z - 1 / mp.mpf(sigma))


def _one_step_delta_remove(sigma: float, q: float, eps) -> mp.mpf:
    """delta_R(eps) = sup_E mu(E) - e^eps nu(E) of one step, mu = (1-q) N(0, s^2) + q N(1, s^2), nu = N(0, s^2)."""
    s, q, sig = mp.e ** mp.mpf(eps), mp.mpf(q), mp.mpf(sigma)
    if s <= 1 - q:
        return 1 - s
    x = sig**2 * mp.log((s - 1 + q) / q) + mp.mpf(1) / 2  # mu > s nu exactly where x > x*
    return q * _phi_bar((x - 1) / sig) - (s - 1 + q) * _phi_bar(x / sig)


def _one_step_delta_add(sigma: float, q: float, eps) -> mp.mpf:
    """delta_A(eps) = sup_E nu(E) - e^eps mu(E) (nu > s mu where x < x*)."""
    s, q, sig = mp.e ** mp.mpf(eps), mp.mpf(q), mp.mpf(sigma)
    if s * (1 - q) >= 1:
        return mp.mpf(0)
    x = sig**2 * mp.log((1 - s * (1 - q)) / (s * q)) + mp.mpf(1) / 2
    return (1 - s * (1 - q)) * (1 - _phi_bar(x / sig)) - s * q * (1 - _phi_bar((x - 1) / sig))


@pytest.mark.parametrize("sigma", [1e-4, 1e-3, 0.01, 0.05])
@pytest.mark.parametrize("alpha", [1e-12, 1e-3, 0.2, 0.7])
def test_closed_form_power_brackets_one_step_exact_curve(sigma: float, alpha: float) -> None:
    q = 0.01
    lo, up, narrow = closed_form_power([(sigma, q, 1)], np.array([math.log(alpha)]))
    truth = _one_step_power(sigma, q, alpha)
    assert lo[0] <= truth <= up[0]
    if sigma <= 0.01:
        assert narrow[0]
        assert up[0] - lo[0] <= CLOSED_FORM_WIDTH * up[0]


@pytest.mark.parametrize("sigma", [1e-4, 1e-3, 0.01, 0.1])
@pytest.mark.parametrize("eps", [-3.0, -0.005, 0.0, 0.8, 5.0])
def test_closed_form_profile_brackets_one_step_exact_profile(sigma: float, eps: float) -> None:
    q = 0.01
    lo, hi, narrow = closed_form_profile([(sigma, q, 1)], eps)
    truth = _one_step_delta_remove(sigma, q, eps)
    assert 0.0 <= lo <= truth <= hi <= 1.0
    if sigma <= 1e-3:
        assert narrow and hi - lo <= CLOSED_FORM_WIDTH * hi
    lo2, hi2, _ = closed_form_profile([(sigma, q, 1)], eps, "add_remove")
    truth2 = max(truth, _one_step_delta_add(sigma, q, eps))
    assert lo2 <= truth2 <= hi2


def test_closed_form_profile_at_zero_is_total_variation_near_never_sampled_mass() -> None:
    # TV of one step = q (2 Phi(1 / (2 sigma)) - 1) exactly; many steps: within the bracket's 1e-6 of 1 - P
    assert closed_form_profile([(1e-3, 0.3, 1)], 0.0)[0] <= 0.3 * (2 * (1 - _phi_bar(500)) - 1)
    for T in (100, 10**6):
        lo, hi, narrow = closed_form_profile([(1e-4, 1e-3, T)], 0.0)
        one_minus_p = -mp.expm1(T * mp.log1p(-mp.mpf(1e-3)))
        assert narrow and lo <= one_minus_p <= hi and hi - lo <= CLOSED_FORM_WIDTH * hi


@pytest.mark.parametrize("q", [1e-3, 0.5])
def test_closed_form_epsilon_one_step_against_mpmath(q: float) -> None:
    sigma, delta = 1e-4, 1e-5
    e = closed_form_epsilon([(sigma, q, 1)], delta)
    assert e is not None
    # valid: both directions' profiles at e are <= delta; tight: delta_R above delta 1e-6 lower
    assert max(_one_step_delta_remove(sigma, q, e), _one_step_delta_add(sigma, q, e)) <= delta
    assert _one_step_delta_remove(sigma, q, e * (1 - 1e-6)) > delta


def _mp_upper_tail(sigma: float, q: float, T: int, eps: float) -> mp.mpf:
    """The closed form's upper end of delta_R(eps) in 50 digits (all Binomial terms)."""
    sig, q = mp.mpf(sigma), mp.mpf(q)
    tot = T * _phi_bar(1 / (2 * sig))
    for n in range(1, T + 1):
        pmf = mp.binomial(T, n) * q**n * (1 - q) ** (T - n)
        tot += pmf * _phi_bar((mp.mpf(eps) - n / (2 * sig**2)) * sig / mp.sqrt(n))
    return tot


@pytest.mark.parametrize("sigma, q, T", [(1e-4, 1e-3, 100), (5e-5, 0.02, 300)])
def test_closed_form_epsilon_many_steps_against_mpmath_and_the_pld(sigma: float, q: float, T: int) -> None:
    delta = 1e-5
    e = closed_form_epsilon([(sigma, q, T)], delta)
    assert e is not None
    assert _mp_upper_tail(sigma, q, T, e) <= delta  # its own bound, summed without truncation or rounding
    if sigma >= 1e-4:  # a second method: the PLD's epsilon is an upper bound on the truth, >= the lower end
        pld_eps = dpsgd_pld([(sigma, q, T)], lower=False, add_direction=True).epsilon(delta)
        assert e * (1 - CLOSED_FORM_WIDTH) <= pld_eps


def test_closed_form_epsilon_declines_where_not_narrow() -> None:
    assert closed_form_epsilon([(0.5, 0.01, 1000)], 1e-5) is None
    assert closed_form_epsilon([(1e-4, 1e-3, 10), (2e-4, 1e-3, 10)], 1e-5) is None  # one segment only


@pytest.mark.parametrize("sigma", [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.5])
def test_curve_reconstruction_success_equals_rero_dpsgd(sigma: float) -> None:
    q, T = 1e-3, 100
    curve = dpsgd_tradeoff(sigma, q, T)
    for kappa in (1e-3, 0.1):
        b = rero_dpsgd(sigma, q, T, kappa)
        g = curve.reconstruction_success(kappa)
        assert g.value == b.value
        assert g.interval == pytest.approx(b.interval, rel=1e-12, abs=0.0)
        assert g.interval[0] <= g.value


def test_curve_power_never_above_the_never_sampled_supremum() -> None:
    # sigma = 0.1 gave 0.09619 from the PLD alone against rero_dpsgd's 0.0961126 (capped)
    curve = dpsgd_tradeoff(0.1, 1e-3, 100)
    sup = 1 - (1 - mp.mpf(1e-3)) * (1 - mp.mpf(1e-3)) ** 100
    assert curve.tpr_at_fpr(1e-3).upper <= float(sup) * (1 + 1e-13)  # (rounded up by a few ulps in logs)
    assert curve.reconstruction_success(1e-3).value < 0.09612


def _one_step_sym_power(sigma: float, q: float, alpha: float) -> mp.mpf:
    """The symmetrised (add-or-remove) power: inf over s = e^eps of s alpha + max(delta_R, delta_A)
    (the conjugacy of tradeoff.py's module docstring), convex in s: ternary search to 1e-40."""
    def f(s):
        e = mp.log(s)
        return s * alpha + max(_one_step_delta_remove(sigma, q, e), _one_step_delta_add(sigma, q, e))

    a, b = mp.mpf("1e-30"), mp.mpf(1) / mp.mpf(alpha) + 10
    for _ in range(400):
        m1, m2 = a + (b - a) / 3, b - (b - a) / 3
        a, b = (a, m2) if f(m1) < f(m2) else (m1, b)
    return f((a + b) / 2)


@pytest.mark.parametrize("sigma", [1e-3, 0.02])
@pytest.mark.parametrize("alpha", [1e-6, 1e-3, 0.5, 0.995])
def test_closed_form_sym_power_brackets_one_step_symmetrised_curve(sigma: float, alpha: float) -> None:
    from rerokit.bounds.dpsgd_tinysigma import closed_form_sym_power

    q = 0.01
    lo, up, narrow = closed_form_sym_power([(sigma, q, 1)], np.array([math.log(alpha)]))
    truth = _one_step_sym_power(sigma, q, alpha)
    tol = mp.mpf("1e-30")  # (the reference's own accuracy: its search and 50-digit cancellations near 1)
    assert lo[0] <= truth + tol and truth - tol <= up[0]
    if sigma <= 1e-3:
        assert narrow[0]


def test_group_curve_keeps_its_bracket_and_rero_dpsgd_value() -> None:
    # (the closed forms are for one example per step: a group of 2 goes to the PLD, whose bracket must
    # come back whole - lower and upper ends are separate arrays)
    from rerokit.bounds.schedule import Schedule, Segment

    curve = dpsgd_tradeoff(1.0, 0.01, 100, group_size=2)
    b = rero_dpsgd(segments=Schedule((Segment(1.0, 0.01, 100),), examples_per_user=2), kappa=0.1)
    g = curve.reconstruction_success(0.1)
    assert g.value == b.value and g.interval[0] < g.value
    assert g.interval == pytest.approx(b.interval, rel=1e-12, abs=0.0)
    t = curve.tpr_at_fpr(1e-3)
    assert 1e-3 <= t.lower < t.upper
