"""The running log-sum-exp's proven error bound (rerokit.bounds.pld.logsum) against exact sums in
mpmath (60 digits), and numpy's logaddexp within the assumed error per step."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.logsum import prefix_logsumexp, suffix_logsumexp


@pytest.fixture(autouse=True)
def workdps():
    with mp.workdps(60):
        yield


def _exact_prefix(a):
    out, acc = [], mp.mpf(0)
    for x in a:
        if np.isfinite(x):
            acc += mp.exp(mp.mpf(float(x)))
        out.append(mp.log(acc) if acc > 0 else -mp.inf)
    return out


@pytest.mark.parametrize("seed, scale, shift", [(0, 1.0, 0.0), (1, 30.0, -200.0), (2, 5.0, 650.0), (3, 300.0, 0.0)])
def test_prefix_and_suffix_within_the_bound(seed, scale, shift):
    rng = np.random.default_rng(seed)
    a = rng.normal(shift, scale, 3000)
    a[rng.integers(0, a.size, 100)] = -np.inf
    s, err = prefix_logsumexp(a)
    ex = _exact_prefix(a)
    worst = 0.0
    for i in range(a.size):
        if ex[i] == -mp.inf:
            assert s[i] == -np.inf
            continue
        d = abs(float(mp.mpf(float(s[i])) - ex[i]))
        assert d <= err[i] + 1e-50, (i, d, err[i])  # 1e-50: the 60-digit reference's own rounding
        worst = max(worst, d / err[i] if err[i] else 0.0)
    assert worst < 0.5  # the bound is a bound, not the error (observed well below it)
    assert err[-1] <= 2.2e-16 * 2 * 3000 * (float(np.max(np.abs(s[np.isfinite(s)]))) + 3) * 1.01
    ss, es = suffix_logsumexp(a)
    assert ss[-1] == -np.inf and es[-1] == 0.0 and ss.size == a.size + 1
    ex_s = _exact_prefix(a[::-1])[::-1]
    for i in range(0, a.size, 37):
        if ex_s[i] != -mp.inf:
            assert abs(float(mp.mpf(float(ss[i])) - ex_s[i])) <= es[i] + 1e-50


def test_one_logaddexp_step_within_the_assumed_error():
    """numpy's logaddexp(x, y) errs by at most u (|result| + 3) (the module's per-step model, which
    the bound carries twice), over differences from 0 to 40 and magnitudes up to 700."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-700, 700, 4000)
    y = x - np.concatenate((rng.uniform(0, 40, 3000), np.zeros(500), rng.uniform(0, 1e-3, 500)))
    r = np.logaddexp(x, y)
    u = 2.0 ** -53
    for xi, yi, ri in zip(x, y, r):
        exact = mp.mpf(float(xi)) + mp.log1p(mp.exp(mp.mpf(float(yi)) - mp.mpf(float(xi))))
        assert abs(float(mp.mpf(float(ri)) - exact)) <= u * (abs(float(ri)) + 3.0)


def test_edge_cases():
    s, err = prefix_logsumexp(np.array([]))
    assert s.size == 0 and err.size == 0
    s, err = prefix_logsumexp(np.array([-np.inf, -np.inf, 0.0]))
    assert s[-1] == 0.0 and err[-1] == 0.0  # sums of a single finite term are exact
    s, err = suffix_logsumexp(np.array([1.5]))
    assert list(s) == [1.5, -np.inf] and list(err) == [0.0, 0.0]
    assert math.isfinite(prefix_logsumexp(np.full(10, -745.0))[1][-1])


def test_errors_count_in_proportion_to_their_mass():
    """Far-tail terms (log masses ~ -1e6) round at ~1e-10 in log each, but the total they join is
    dominated by a term of mass 1: the bound at the end is that of the large term's step, not the sum
    of all the tail's (plain bound ~2e-7 here), and it still holds against 60-digit sums."""
    rng = np.random.default_rng(3)
    a = np.concatenate((rng.normal(-1e6, 1e5, 2000), [0.0, -1.0]))
    s, err = prefix_logsumexp(a)
    ex = _exact_prefix(a)
    for i in (0, 1000, a.size - 2, a.size - 1):
        assert abs(float(mp.mpf(float(s[i])) - ex[i])) <= err[i] + 1e-50
    assert err[-1] < 1e-14


@pytest.mark.parametrize("summation", ["extended", "double"])
@pytest.mark.parametrize("slope", [0.15, -0.15, 0.1])
def test_blocked_linear_sums_within_the_bound(summation, slope):
    """Terms spanning 2000-3000 nats (beyond the linear path's range) but a few hundred per block of
    4096, as in the far-tail tilt's sums: the blocked linear path (module docstring) against
    60-digit sums, with a leading block of -inf (a sum's first term is exact) and scattered -inf."""
    from rerokit.bounds.pld import logsum

    rng = np.random.default_rng(11)
    n = 5 * logsum._BLOCK + 123
    a = slope * np.arange(n) + rng.normal(0.0, 2.0, n) - (0.0 if slope < 0 else slope * n / 2)
    a[: logsum._BLOCK + 5] = -np.inf
    a[rng.integers(0, n, 200)] = -np.inf
    assert float(np.max(a)) - float(np.min(a[np.isfinite(a)])) > 1390  # not the one-range linear path
    assert logsum._prefix_linear(a, summation) is None and logsum._prefix_blocked(a, summation) is not None
    s, err = prefix_logsumexp(a, summation)
    ex = _exact_prefix(a)
    first = int(np.flatnonzero(np.isfinite(a))[0])
    assert s[first] == a[first] and err[first] == 0.0
    for i in list(range(first - 2, first + 40)) + list(range(first, n, 97)) + [n - 1]:
        if ex[i] == -mp.inf:
            assert s[i] == -np.inf
            continue
        assert abs(float(mp.mpf(float(s[i])) - ex[i])) <= err[i] + 1e-50, i
    assert float(np.max(err)) < 1e-11  # tight, unlike the running log-sum's cumulative bound


def test_blocked_path_declines_a_block_spanning_more_than_700():
    from rerokit.bounds.pld import logsum

    a = np.zeros(3 * logsum._BLOCK)
    a[100] = -800.0  # one block spans 800 nats
    a[-1] = 1000.0  # and the whole array more than the linear range
    assert logsum._prefix_blocked(a, "double") is None
    s, err = prefix_logsumexp(a, "double")  # the running log-sum then
    assert abs(float(mp.mpf(float(s[-1])) - _exact_prefix(a)[-1])) <= err[-1] + 1e-50
