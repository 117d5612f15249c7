"""The total log-sum (rerokit.bounds.pld.logsum.total_logsumexp) against exact sums in mpmath
(60 digits), and against the running log-sum's last entry (a second method)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.logsum import prefix_logsumexp, suffix_logsumexp, total_logsumexp


def _exact(a: np.ndarray) -> mp.mpf:
    with mp.workdps(60):
        acc = mp.fsum(mp.exp(mp.mpf(float(x))) for x in a if np.isfinite(x))
        return mp.log(acc) if acc > 0 else -mp.inf


@pytest.mark.parametrize("a", [
    np.random.default_rng(1).uniform(-700.0, 690.0, 3000),
    np.concatenate(([-np.inf] * 3, -np.linspace(0.0, 60.0, 20_000) + np.random.default_rng(2).normal(0, 1e-3, 20_000))),
    np.array([-np.inf, -5.0, -np.inf, -4.0, 3.0]),
    np.array([0.0, 691.0, 1.0]),  # out of the linear range: shifted by the largest term
    # terms spanning thousands of nats (the far-tail tilt's powers): shifted, those below e^-700
    # of the largest dropped and counted
    np.concatenate((np.random.default_rng(3).normal(-2000.0, 300.0, 5000), [5.0, 4.5, -699.0, -701.0])),
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


def _exact_prefix(a: np.ndarray, every: int) -> dict[int, mp.mpf]:
    out, acc = {}, mp.mpf(0)
    with mp.workdps(60):
        for i, x in enumerate(a):
            if np.isfinite(x):
                acc += mp.exp(mp.mpf(float(x)))
            if i % every == 0 or i == len(a) - 1:
                out[i] = mp.log(acc) if acc > 0 else -mp.inf
    return out


@pytest.mark.parametrize("a", [
    # the tilt's suffix sums from the top: growing terms (a Gaussian times e^{-t l})
    np.concatenate(([-np.inf] * 4, (-0.5 * np.linspace(7.4, -2.3, 20_000) ** 2 + 0.0016 * np.arange(20_000))
                                    + np.random.default_rng(4).normal(0, 1e-3, 20_000))),
    # a bulk then a flat top (the bound is then about j u: larger, still proven)
    np.random.default_rng(5).normal(-50.0, 3.0, 5000),
    np.random.default_rng(6).uniform(-700.0, 690.0, 3000),
])
def test_double_summation_within_its_bound(a):
    """summation="double": every running sum within its (larger) proven bound, mpmath at 60 digits;
    the same sums as the long double path within both bounds."""
    s, err = prefix_logsumexp(a, "double")
    for i, e in _exact_prefix(a, every=13).items():
        if e == -mp.inf:
            assert s[i] == -np.inf and err[i] == 0.0
            continue
        assert abs(float(mp.mpf(float(s[i])) - e)) <= err[i] + 1e-50, i
    s_ld, err_ld = prefix_logsumexp(a)
    fin = np.isfinite(s)
    assert np.all(np.abs(s[fin] - s_ld[fin]) <= err[fin] + err_ld[fin])
    ss, es = suffix_logsumexp(a[::-1], "double")
    assert np.array_equal(ss[:-1][::-1], s) and np.array_equal(es[:-1][::-1], err)


def test_double_summation_bound_small_for_growing_terms():
    """Terms growing by e^0.01 per step: the bound's summation part stays near u / (1 - e^-0.01)."""
    a = -0.01 * np.arange(30_000.0)[::-1]
    _, err = prefix_logsumexp(a, "double")
    assert err[-1] < 2e-13
    with pytest.raises(ValueError, match="summation"):
        prefix_logsumexp(a, "quad")
