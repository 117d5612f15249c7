"""The linear-space running log-sum (rerokit.bounds.pld.logsum, terms in [-700, 690]) against exact
sums in mpmath (60 digits), and numpy's vectorised exp and log within the 4 ulps it assumes."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld import logsum
from rerokit.bounds.pld.logsum import prefix_logsumexp, suffix_logsumexp


def _exact_prefix(a, every=1):
    out, acc = {}, mp.mpf(0)
    with mp.workdps(60):
        for i, x in enumerate(a):
            if np.isfinite(x):
                acc += mp.exp(mp.mpf(float(x)))
            if i % every == 0 or i == len(a) - 1:
                out[i] = mp.log(acc) if acc > 0 else -mp.inf
    return out


def _pld_like(n: int, seed: int) -> np.ndarray:
    """log Q-masses of a PLD's atoms from the top: log p - l for a Gaussian-like pmf with tiny tails."""
    rng = np.random.default_rng(seed)
    l = np.linspace(-0.2, 0.6, n)
    logp = -0.5 * ((l - 0.2) / 0.05) ** 2 - 5.0 + rng.normal(0, 1e-3, n)
    a = (logp - l)[::-1]
    a[rng.integers(0, n, n // 50)] = -np.inf
    return a


@pytest.mark.parametrize("a", [
    _pld_like(20_000, 0),
    np.random.default_rng(1).uniform(-700.0, 690.0, 3000),
    np.concatenate(([-np.inf] * 5, np.random.default_rng(2).normal(-300.0, 100.0, 3000).clip(-700, 690))),
])
def test_linear_path_within_its_bound(a):
    assert logsum._prefix_linear(a) is not None  # the fast path is the one tested
    s, err = prefix_logsumexp(a)
    ex = _exact_prefix(a, every=7)
    worst = 0.0
    for i, e in ex.items():
        if e == -mp.inf:
            assert s[i] == -np.inf and err[i] == 0.0
            continue
        d = abs(float(mp.mpf(float(s[i])) - e))
        assert d <= err[i] + 1e-50, (i, d, err[i])
        worst = max(worst, d / err[i] if err[i] else 0.0)
    assert worst < 0.5
    ss, es = suffix_logsumexp(a[::-1])
    assert np.array_equal(ss[:-1][::-1], s) and np.array_equal(es[:-1][::-1], err)


def test_linear_path_is_tighter_than_the_running_bound():
    """At 20,000 PLD-like terms the linear bound is far below the running log-sum's."""
    a = _pld_like(20_000, 3)
    _, err = prefix_logsumexp(a)
    fin = np.isfinite(a)
    step = 2.0 * 2.0**-53 * (np.abs(np.logaddexp.accumulate(a)) + 3.0)
    assert err[-1] < 1e-13 < float(np.sum(step[fin])) * 0.01


def test_out_of_range_terms_take_the_running_log_sum():
    for a in (np.array([0.0, 691.0, 1.0]), np.array([0.0, -701.0, 1.0]), np.full(3, -np.inf)):
        assert logsum._prefix_linear(a) is None
        s, err = prefix_logsumexp(a)
        assert np.array_equal(s, np.logaddexp.accumulate(a))


def test_single_terms_exact():
    s, err = prefix_logsumexp(np.array([-np.inf, -3.0, -np.inf, -2.0]))
    assert list(s[:3]) == [-np.inf, -3.0, -3.0] and list(err[:3]) == [0.0, 0.0, 0.0] and err[3] > 0


def test_numpy_exp_and_log_within_four_ulps():
    """The assumption of the linear path: numpy's vectorised exp on [-700, 690] and log on the normal
    doubles within 4 ulps (observed below 1 ulp)."""
    rng = np.random.default_rng(11)
    x = np.concatenate((rng.uniform(-700.0, 690.0, 3000), rng.uniform(-1.0, 1.0, 1000)))
    y = np.exp(x)
    y_rev = np.exp(x[::-1])[::-1]  # a reversed view (the engine's top sums) may take another loop
    with mp.workdps(40):
        for xi, yi in zip(x[::4], y_rev[::4]):
            assert abs(mp.mpf(float(yi)) - mp.exp(mp.mpf(float(xi)))) <= 4 * np.spacing(float(yi))
        for xi, yi in zip(x, y):
            assert abs(mp.mpf(float(yi)) - mp.exp(mp.mpf(float(xi)))) <= 4 * np.spacing(float(yi))
        z = np.concatenate((y, rng.uniform(0.5, 2.0, 1000)))
        for zi, li in zip(z, np.log(z)):
            assert abs(mp.mpf(float(li)) - mp.log(mp.mpf(float(zi)))) <= 4 * np.spacing(abs(float(li)))
