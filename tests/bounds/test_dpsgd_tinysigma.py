"""Small noise multipliers: the closed forms' certified bracket answers before any PLD is built.

References: mpmath (50 digits) for the never-sampled supremum 1 - (1 - kappa) prod_i (1 - q_i)^{T_i} and
the max test's level and power at the threshold the code uses; the PLD engine's own bracket
(``dpsgd_pld`` + ``exact_power_many``, the path these calls took before) on settings where it is quick.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import SIGMA_EXACT_RANGE, dpsgd_pld, epsilon_dpsgd, exact_power_many, rero_dpsgd
from rerokit.bounds.dpsgd_tinysigma import CLOSED_FORM_WIDTH, closed_form_bracket, narrow_closed_form_bracket
from rerokit.bounds.options import Numerics
from rerokit.bounds.pld.maxtest import log_max_test_miss, max_test_threshold
from rerokit.bounds.schedule import Schedule

mp.mp.dps = 50


def _phi_bar(x: mp.mpf) -> mp.mpf:
    return mp.erfc(x / mp.sqrt(2)) / 2


def _mp_log_never(segs, lk) -> mp.mpf:
    """log((1 - kappa) prod_i (1 - q_i)^T_i): 1 - the never-sampled supremum."""
    return mp.log(-mp.expm1(mp.mpf(lk))) + sum(T * mp.log1p(-mp.mpf(q)) for _, q, T in segs)


def _mp_log_miss(segs, lk) -> mp.mpf:
    """log of the max test's exact miss probability at the code's threshold (whose level must be <= kappa)."""
    n = sum(T for _, _, T in segs)
    z = mp.mpf(max_test_threshold(n, lk))
    assert mp.log(-mp.expm1(n * mp.log1p(-_phi_bar(z)))) <= lk
    return sum(T * mp.log1p(-((1 - q) * _phi_bar(z) + q * _phi_bar(z - 1 / mp.mpf(s)))) for s, q, T in segs)


SETTINGS = [
    ([(1e-4, 1e-3, 100)], 1e-3), ([(3e-4, 1e-3, 10**6)], 1e-20), ([(1e-4, 1e-3, 10**6)], 0.9),
    ([(1e-4, 1e-3, 50), (2e-4, 1e-2, 50)], 1e-6), ([(0.05, 0.01, 20)], 0.7), ([(1e-5, 1e-3, 50), (1e-3, 0.1, 5)], 1e-300),
]


@pytest.mark.parametrize("segs,kappa", SETTINGS)
def test_bracket_contains_the_mpmath_closed_forms(segs, kappa):
    lk = math.log(kappa)
    b = closed_form_bracket(segs, lk)
    log_never = _mp_log_never(segs, lk)
    # upper ends: at least the supremum (gamma) and the max test's miss (1 - gamma); lower ends at most
    assert mp.mpf(b.log_upper) >= mp.log(-mp.expm1(log_never))
    assert mp.mpf(b.log_beta_lower) <= log_never
    if kappa <= 0.5:
        miss = _mp_log_miss(segs, lk)
    else:  # the max test at level 1/2, then rejecting at random: miss (1 - kappa) / (1/2)
        miss = _mp_log_miss(segs, math.log(0.5)) + mp.log(2 * (1 - mp.mpf(kappa)))
    assert mp.mpf(b.log_beta_upper) >= miss
    assert mp.mpf(b.log_lower) <= mp.log(-mp.expm1(miss))
    # and all of them within a few 1e-10 of the closed forms (small noise: the test misses only unsampled runs)
    assert abs(mp.mpf(b.log_beta_upper) - log_never) <= 1e-8 * (1 + abs(log_never))
    assert b.relative_width() <= CLOSED_FORM_WIDTH
    assert narrow_closed_form_bracket(segs, lk) == b


def test_log_max_test_miss_is_the_exact_miss_rounded_up():
    for segs, lk in [([(1.0, 1e-4, 1000)], -30.0), ([(0.5, 0.01, 50)], -5.0), ([(0.8, 1e-3, 300), (2.0, 0.05, 700)], -57.0),
                     ([(1e-4, 1e-3, 10**6)], math.log(1e-3))]:
        exact = _mp_log_miss(segs, lk)
        got = log_max_test_miss(segs, lk)
        assert exact <= got <= exact + 1e-10 * abs(exact)  # b_i lowered by ~1e-11 (13 ulps of log Phi)
    assert log_max_test_miss([(1.0, 0.1, 10)], -0.1) == 0.0  # kappa > 1/2: of no use (the trivial bound)


@pytest.mark.parametrize("sigma,q,T,kappa", [(0.1, 1e-3, 100, 1e-3), (0.05, 0.01, 10, 1e-6), (0.08, 1e-3, 1000, 1e-3),
                                             (0.05, 0.01, 20, 0.9), (0.03, 0.01, 100, 1e-20)])
def test_fast_bracket_meets_the_pld_bracket(sigma, q, T, kappa):
    # both are certified brackets of the same gamma: they must overlap; the closed forms' is narrower
    segs = [(sigma, q, T)]
    fast = rero_dpsgd(sigma, q, T, kappa, comparisons=False)
    assert fast.extras["closed_form_bracket"] and fast.extras["value_discretization_interval"] is None
    pld = dpsgd_pld(segs, None, lower=True, add_direction=False)
    r = exact_power_many(pld, segs, np.array([math.log(kappa)]))
    lo, up = float(r.lower[0]), float(r.value[0])
    assert fast.interval[0] <= up and lo <= fast.value
    assert fast.value - fast.interval[0] <= min(up - lo, CLOSED_FORM_WIDTH * fast.value)
    # the value is the never-sampled supremum itself (rounded up)
    sup = 1 - (1 - mp.mpf(kappa)) * (1 - mp.mpf(q)) ** T
    assert sup <= fast.value <= sup * (1 + 1e-14)


@pytest.mark.parametrize("sigma", [1e-4, 3e-4])
@pytest.mark.parametrize("T", [100, 10**6])
@pytest.mark.parametrize("kappa", [1e-3, 1e-20])
def test_issue_settings_answer_without_a_pld(sigma, T, kappa):
    # these took 3-85 s (the PLD's grid spans losses up to 1 / (2 sigma^2)); benchmarks/tiny_sigma.py
    b = rero_dpsgd(sigma, 1e-3, T, kappa, comparisons=False)
    assert b.method == "exact" and b.extras["closed_form_bracket"] and "no PLD" in b.extras["note"]
    assert b.extras["value_discretization_interval"] is None
    log_never = _mp_log_never([(sigma, 1e-3, T)], math.log(kappa))
    lo_beta, up_beta = b.extras["log_one_minus_gamma_interval"]
    assert lo_beta <= log_never <= up_beta and up_beta - lo_beta <= 1e-8  # 1 - gamma to 1e-8 relative
    assert mp.mpf(b.value) >= -mp.expm1(log_never) and b.interval[0] <= -mp.expm1(log_never)
    if T == 10**6:  # gamma = 1 - e^-1000.5: the beta-error target (1e-9) is met by far
        assert b.value == 1.0 and b.error <= 1e-9


def test_value_non_increasing_in_sigma_across_the_switch():
    # gamma is non-increasing in sigma (more noise is post-processing); the reported value must be too,
    # across the exact range's low edge (envelope below it) and the switch from closed forms to the PLD
    q, T, kappa = 1e-3, 100, 1e-3
    lk = math.log(kappa)
    lo, hi = 1e-3, 1.0  # the switch: closed forms narrow enough below sigma*, the PLD above
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if narrow_closed_form_bracket([(mid, q, T)], lk) is not None else (lo, mid)
    star = lo
    assert 0.05 < star < 0.2
    edge = SIGMA_EXACT_RANGE[0]
    sigmas = [edge / 10, edge / 1.0001, edge, edge * 1.0001, 1e-3, 0.01, star / 1.1, star / 1.0001, star,
              star * 1.0001, star * 1.1, 0.3, 1.0]
    bounds = [rero_dpsgd(s, q, T, kappa, comparisons=False) for s in sigmas]
    vals = [b.value for b in bounds]
    assert all(b <= a for a, b in zip(vals, vals[1:])), list(zip(sigmas, vals))
    fast = [b.extras.get("closed_form_bracket", False) for b in bounds]
    assert fast == [False, False] + [True] * 7 + [False] * 4  # envelope, closed forms, PLD
    # the same without the lower end (what calibration compares)
    vals_nb = [rero_dpsgd(s, q, T, kappa, comparisons=False, numerics=Numerics(bracket=False)).value for s in sigmas]
    assert vals_nb[2:9] == vals[2:9] and all(b <= a for a, b in zip(vals_nb, vals_nb[1:]))
    # every certified lower end is at most every upper end at a smaller sigma (gamma(sigma) is non-increasing)
    for i, b in enumerate(bounds):
        assert all(b.interval[0] <= a.value for a in bounds[: i + 1])


def test_segments_group_size_and_comparisons():
    segs = [(1e-4, 1e-3, 50), (2e-4, 1e-2, 50)]
    b = rero_dpsgd(segments=segs, kappa=1e-6, comparisons=False)
    sup = 1 - (1 - mp.mpf(1e-6)) * (1 - mp.mpf(1e-3)) ** 50 * (1 - mp.mpf(1e-2)) ** 50
    assert b.extras["closed_form_bracket"] and sup <= b.value <= sup * (1 + 1e-14)
    # a segment with ordinary noise makes the bracket wide: the PLD answers
    assert narrow_closed_form_bracket([(1.0, 0.01, 100), (1e-4, 1e-3, 100)], math.log(1e-6)) is None
    # groups of k > 1 examples: no max test there, the PLD answers
    g = rero_dpsgd(segments=Schedule(((0.05, 1e-3, 10),), examples_per_user=2), kappa=1e-3, comparisons=False)
    assert "closed_form_bracket" not in g.extras and g.extras["value_discretization_interval"] is not None
    # comparisons: the same epsilon as epsilon_dpsgd
    c = rero_dpsgd(0.05, 1e-3, 100, 1e-3)
    assert c.extras["closed_form_bracket"] and c.extras["epsilon"] == epsilon_dpsgd(0.05, 1e-3, 100, 1e-5)
