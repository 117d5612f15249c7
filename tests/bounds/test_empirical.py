"""Empirical (audit) lower bounds on mu-GDP and (eps, delta)-DP from a measured attack success,
and the one-sided Clopper-Pearson lower end they use.

References: mu_lo = Phi^-1(s_lo) - Phi^-1(kappa) inverts the Gaussian trade-off curve
(Dong, Roth & Su 2022, Eq. 6); eps_lo = log((s_lo - delta)/kappa) inverts gamma <= e^eps kappa +
delta (Balle et al. 2022 Cor. 3 with delta). Closed forms are checked against mpmath (50 digits),
the Clopper-Pearson end against the binomial tail (scipy.stats.binom), and soundness against the
certified bounds of the same mechanism (rero_dpsgd): the best possible attack must not refute
the mechanism's own mu / eps.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.stats import binom, norm

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.empirical import audit_lower_bounds, epsilon_lower, mu_gdp_lower
from rerokit.stats import clopper_pearson, clopper_pearson_lower



@pytest.fixture(autouse=True)
def _mp_precision():
    """mpmath's working precision for this module's references, restored after each test (a
    module-level assignment leaked into the other modules collected in the same process)."""
    with mp.workdps(50):
        yield


def mp_ndtri(p):
    return mp.sqrt(2) * mp.erfinv(2 * mp.mpf(p) - 1)


@pytest.mark.parametrize("s,kappa", [(0.5, 0.1), (0.9, 0.01), (0.999999, 1e-6), (0.2, 0.19), (1 - 1e-12, 0.5)])
def test_mu_lower_closed_form(s, kappa):
    ref = float(mp_ndtri(s) - mp_ndtri(kappa))
    got = mu_gdp_lower(s, kappa)
    assert got <= ref and got == pytest.approx(ref, rel=1e-9, abs=1e-12)  # rounded down, close
    assert mu_gdp_lower(s, log_kappa=math.log(kappa)) == pytest.approx(got, rel=1e-12, abs=1e-12)


def test_mu_lower_edge_cases_and_tiny_kappa():
    assert mu_gdp_lower(0.1, 0.1) == 0.0 and mu_gdp_lower(0.05, 0.1) == 0.0 and mu_gdp_lower(0.0, 0.1) == 0.0
    assert mu_gdp_lower(1.0, 0.1) == math.inf and mu_gdp_lower(1.0, 1.0) == 0.0
    lk = -1000.0  # kappa ~ 5e-435: Phi^-1 via log
    z = mp.findroot(lambda t: mp.log(mp.ncdf(t)) - lk, -44.0)  # Phi^-1(kappa); Phi^-1(0.5) = 0
    got = mu_gdp_lower(0.5, log_kappa=lk)
    assert got <= -float(z) and got == pytest.approx(-float(z), rel=1e-10)


@pytest.mark.parametrize("s,kappa,delta", [(0.5, 0.1, 0.0), (0.9, 0.01, 1e-5), (0.3, 0.29, 0.0), (0.02, 0.01, 0.015)])
def test_epsilon_lower_closed_form(s, kappa, delta):
    x = s - delta
    ref = max(0.0, math.log(x / kappa)) if x > 0 else 0.0
    got = epsilon_lower(s, kappa, delta=delta)
    assert got <= ref + 1e-300 and got == pytest.approx(ref, rel=1e-12, abs=1e-14)


def test_monotone_in_success_lower():
    s = np.linspace(0.0, 1.0, 201)
    mus = [mu_gdp_lower(x, 0.05) for x in s]
    eps = [epsilon_lower(x, 0.05, delta=1e-3) for x in s]
    assert np.all(np.diff(mus) >= 0) and np.all(np.diff(eps) >= 0)
    assert mus[0] == 0.0 and eps[0] == 0.0


@pytest.mark.parametrize("sigma,T,kappa", [(1.0, 1, 0.1), (2.0, 100, 0.01), (5.0, 10, 1e-3), (0.7, 3, 0.5)])
def test_best_attack_does_not_refute_the_mechanisms_own_mu(sigma, T, kappa):
    """q = 1: the mechanism is exactly mu-GDP with mu = sqrt(T)/sigma. The best attack succeeds with
    gamma = Phi(Phi^-1(kappa) + mu): from its certified lower end the audit bound must not exceed mu;
    from the (rounded-up) closed form and from the certified upper end it may exceed mu only by
    the rounding / bracket width propagated through Phi^-1."""
    mu = math.sqrt(T) / sigma
    ex = rero_dpsgd(sigma, 1.0, T, kappa)
    cf = rero_dpsgd(sigma, 1.0, T, kappa, method="closed-form")
    lo, hi = ex.interval
    assert mu_gdp_lower(lo, kappa) <= mu
    slope = norm.pdf(norm.ppf(lo))  # d gamma / d mu at the lower end
    assert mu_gdp_lower(hi, kappa) <= mu + (hi - lo) / slope * 1.01 + 1e-12
    assert mu_gdp_lower(cf.value, kappa) <= mu + 64 * 2.2e-16 / slope + 1e-12


@pytest.mark.parametrize("sigma,q,T,kappa", [(1.0, 0.01, 1000, 0.01), (2.0, 1.0, 100, 0.01), (0.8, 0.1, 50, 0.1),
                                             (1.5, 0.04, 2250, 1e-3)])
def test_best_attack_does_not_refute_the_mechanisms_own_epsilon(sigma, q, T, kappa):
    """(eps, delta)-DP of the schedule (our PLD epsilon at delta = 1e-5, as dp-accounting): even the
    certified upper end of gamma must give eps_lo <= eps."""
    b = rero_dpsgd(sigma, q, T, kappa)
    eps, delta = b.extras["epsilon"], b.extras["delta"]
    assert epsilon_lower(b.value, kappa, delta=delta) <= eps
    if q == 1.0:
        assert mu_gdp_lower(b.interval[0], kappa) <= math.sqrt(T) / sigma


def test_clopper_pearson_one_sided_lower_end():
    for k, n, c in [(7, 10, 0.95), (0, 10, 0.9), (10, 10, 0.95), (480, 1000, 0.99), (1, 1000, 0.95)]:
        lo = clopper_pearson_lower(k, n, c)
        if k == 0:
            assert lo == 0.0
            continue
        assert binom.sf(k - 1, n, lo) == pytest.approx(1 - c, rel=1e-8)  # P(X >= k | p = lo) = 1 - c
        two = clopper_pearson(k, n, 1 - 2 * (1 - c))  # two-sided at 1 - 2(1 - c): same lower end
        assert lo == pytest.approx(two[0], rel=1e-12)
        assert lo >= clopper_pearson(k, n, c)[0]  # one-sided end is tighter than the two-sided
    with pytest.raises(ValueError, match="successes"):
        clopper_pearson_lower(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson_lower(1, 10, 1.0)


def test_audit_lower_bounds_dict():
    d = audit_lower_bounds(90, 100, 0.1, confidence=0.95, delta=1e-5)
    s = clopper_pearson_lower(90, 100, 0.95)
    assert d["success_lower"] == s
    assert d["mu_gdp_lower"] == mu_gdp_lower(s, log_kappa=math.log(0.1))
    assert d["epsilon_lower"] == epsilon_lower(s, log_kappa=math.log(0.1), delta=1e-5)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: mu_gdp_lower(float("nan"), 0.1), "success_lower"),
        (lambda: mu_gdp_lower(1.5, 0.1), "success_lower"),
        (lambda: mu_gdp_lower(0.5, 0.0), "kappa"),
        (lambda: mu_gdp_lower(0.5), "kappa"),
        (lambda: mu_gdp_lower(0.5, log_kappa=1.0), "log_kappa"),
        (lambda: epsilon_lower(0.5, 0.1, delta=1.0), "delta"),
        (lambda: epsilon_lower(0.5, 0.1, delta=-0.1), "delta"),
        (lambda: audit_lower_bounds(5, 0, 0.1), "trials"),
    ],
)
def test_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()
