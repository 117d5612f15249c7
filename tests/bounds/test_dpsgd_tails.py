"""Tails of the certified DP-SGD bracket against independent references in mpmath (never rerokit's
engine): gamma near 1 (the upper-only grid refinement).

References: explicit tests whose level and power are exact in mpmath give lower bounds on the true
gamma (the upper end must not fall below them), and the binomial mixture of Gaussian shifts
sum_k Bin(k; T, q) Phi(Phi^-1(kappa) + sqrt(k)/sigma) (Dong, Roth & Su 2022) is an upper bound on
it (the lower end must not rise above it)."""

from __future__ import annotations

import math

import mpmath as mp

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.options import Numerics

mp.mp.dps = 50


def _phi_bar(x):
    return mp.erfc(x / mp.sqrt(2)) / 2


def _z_of_level(log_level):
    """z with Phi(-z) = e^log_level (mpmath root finding, 50 digits)."""
    target = mp.mpf(log_level)
    return mp.findroot(lambda z: mp.log(_phi_bar(z)) - target, mp.sqrt(-2 * target))


def _linear_test_power(sigma, q, T, log_kappa):
    """Power of 'reject iff sum_t x_t > c' at level kappa: under Q the sum is N(0, T sigma^2), under
    P it is that plus K ~ Bin(T, q), exactly."""
    c = _z_of_level(log_kappa) * sigma * mp.sqrt(T)
    s = mp.mpf(0)
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    for k in range(T + 1):
        lb = mp.loggamma(T + 1) - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lq + (T - k) * l1q
        if lb < -200:
            if k > T * q:
                break
            continue
        s += mp.exp(lb) * _phi_bar((c - k) / (sigma * mp.sqrt(T)))
    return s


def _mixture_upper(sigma, q, T, log_kappa):
    z = -_z_of_level(log_kappa)  # Phi(z) = kappa
    s = mp.mpf(0)
    lq, l1q = mp.log(q), mp.log(1 - mp.mpf(q))
    for k in range(T + 1):
        lb = mp.loggamma(T + 1) - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lq + (T - k) * l1q
        s += mp.exp(lb) * (1 - _phi_bar(z + mp.sqrt(k) / sigma))
    return s


def test_gamma_near_one_refined_in_both_modes() -> None:
    # sigma 1, q 0.3, T 1000, kappa 1e-9: the 1 - gamma bracket was 1.2e-7 (3.1e-9 on the finer grid);
    # the refinement reads the upper end only, so bracket=False (what calibration compares) gets it too
    lk = math.log(1e-9)
    b = rero_dpsgd(1.0, 0.3, 1000, log_kappa=lk, comparisons=False)
    nb = rero_dpsgd(1.0, 0.3, 1000, log_kappa=lk, comparisons=False, numerics=Numerics(bracket=False))
    assert b.value - b.interval[0] <= 5e-9
    assert abs(b.value - nb.value) <= 1e-10
    ref_low = _linear_test_power(1.0, 0.3, 1000, lk)  # a valid test: gamma >= its power
    assert mp.mpf(b.value) >= ref_low and mp.mpf(nb.value) >= ref_low
    assert mp.mpf(b.interval[0]) <= _mixture_upper(1.0, 0.3, 1000, lk)
