"""The binomial weights of ``mse_rero_over_steps`` (scipy.special, for a fast import) against scipy.stats.binom."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rerokit.bounds.uninformed import _binom_pmf, _binom_window, mse_rero_over_steps


@pytest.mark.parametrize("t,q", [(1, 0.3), (5, 0.5), (100, 1.0), (1000, 0.01), (100_000, 0.001), (10, 1e-9)])
def test_pmf_and_window_match_scipy_stats(t, q):
    lo, hi = _binom_window(t, q, 1e-15)
    d = stats.binom(t, q)
    ks = np.arange(lo, hi + 1)
    pmf, rel = _binom_pmf(ks, t, q)
    want = d.pmf(ks)
    assert np.all(np.abs(pmf - want) <= rel * want + 1e-300)  # within the error bound it states
    assert d.cdf(lo - 1) <= 1e-15 and d.sf(hi) <= 1e-15  # the window leaves out at most the tail


def test_over_steps_bound_is_at_least_the_direct_binomial_sum():
    # an independent sum over every k with scipy.stats weights (no window)
    from scipy import special

    eta, s, n, T, q, r = 0.01, 0.5, 16, 2000, 0.01, 1.0
    b = mse_rero_over_steps(eta, s, n, T, q, min_norm=r)
    ks = np.arange(1, T + 1)
    direct = float(np.sum(stats.binom.pmf(ks, T, q) * special.gammainc(n / 2, ks * n * eta / (2 * s**2 * r**2))))
    assert direct <= b.value <= direct * (1 + 1e-9) + 1e-14
