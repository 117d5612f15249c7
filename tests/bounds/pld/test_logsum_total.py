"""The total log-sum (rerokit.bounds.pld.logsum.total_logsumexp) against exact sums in mpmath
(60 digits), and against the running log-sum's last entry (a second method)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.logsum import suffix_logsumexp, total_logsumexp


def _exact(a: np.ndarray) -> mp.mpf:
    with mp.workdps(60):
        acc = mp.fsum(mp.exp(mp.mpf(float(x))) for x in a if np.isfinite(x))
        return mp.log(acc) if acc > 0 else -mp.inf


@pytest.mark.parametrize("a", [
    np.random.default_rng(1).uniform(-700.0, 690.0, 3000),
    np.concatenate(([-np.inf] * 3, -np.linspace(0.0, 60.0, 20_000) + np.random.default_rng(2).normal(0, 1e-3, 20_000))),
    np.array([-np.inf, -5.0, -np.inf, -4.0, 3.0]),
    np.array([0.0, 691.0, 1.0]),  # out of the linear range: the running log-sum
    np.array([-800.0, -801.0, -np.inf]),
])
def test_total_within_its_bound(a):
    s, err = total_logsumexp(a)
    ex = _exact(a)
    with mp.workdps(60):
        assert abs(mp.mpf(s) - ex) <= err
    s_run, err_run = suffix_logsumexp(a)
    assert abs(s - float(s_run[0])) <= err + float(err_run[0])
    assert err <= max(float(err_run[0]), 1e-13)


def test_single_and_no_terms_exact():
    assert total_logsumexp(np.array([-np.inf, -3.0, -np.inf])) == (-3.0, 0.0)
    assert total_logsumexp(np.full(4, -np.inf)) == (-np.inf, 0.0)
