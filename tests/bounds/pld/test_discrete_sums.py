"""The plain path's linear-space sums (discrete.py's _TopSums) and the two queries built on them,
DiscretePLD.power and ThresholdTests.power_lower, against exact references: math.fsum (correctly
rounded sums) and mpmath evaluations of the same Neyman-Pearson / threshold-test quantities on the
stored masses (no rerokit code in the references)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.discrete import DiscretePLD, GridPMF, ThresholdTests, _TopSums


def _terms(rng: np.random.Generator, n: int) -> np.ndarray:
    """Non-negative terms over a wide dynamic range, with exact zeros and subnormals."""
    t = np.exp(rng.uniform(-60.0, 0.0, n)) * rng.uniform(0.0, 1.0, n)
    t[rng.random(n) < 0.2] = 0.0
    t[rng.random(n) < 0.01] = 5e-324 * rng.integers(1, 100)
    return t


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 20_000])
def test_top_sums_within_their_bound(n: int) -> None:
    rng = np.random.default_rng(n)
    t = _terms(rng, n)
    ts = _TopSums.of(t)
    counts = np.unique(np.concatenate(([0, n], rng.integers(0, n + 1, 40))))
    got = ts.at(counts)
    for c, g in zip(counts, got):
        exact = math.fsum(t[:c])
        assert abs(g - exact) <= ts.rel * exact, (c, g, exact)
    # count: the returned sum is the computed sum at that count, < x (<= x), and adding the next
    # term reaches x up to the sums' bound
    total = math.fsum(t)
    xs = np.concatenate((rng.uniform(0.0, 1.2 * total, 30), [0.0, total]))
    for strict in (True, False):
        cnt, val = ts.count(xs, strict)
        for x, c, v in zip(xs, cnt, val):
            assert 0 <= c <= n
            assert v <= x  # (< x in long double where strict; rounded to double, <= x)
            exact = math.fsum(t[:c])
            assert abs(v - exact) <= ts.rel * exact
            if c < n:
                assert math.fsum(t[: c + 1]) * (1.0 + 2.0 * ts.rel) >= x


def _pld(seed: int, n: int, h: float, offset: int) -> DiscretePLD:
    rng = np.random.default_rng(seed)
    x = np.arange(n) - n / 2
    pmf = np.exp(-0.5 * (x / (n / 8.0)) ** 2) * rng.uniform(0.5, 1.5, n)
    pmf[rng.random(n) < 0.1] = 0.0
    pmf /= pmf.sum()
    return DiscretePLD(h, offset, pmf)


def _mp_power(pld: DiscretePLD, alpha: mp.mpf) -> mp.mpf:
    """inf over s >= 0 of s alpha + sum_i p_i (1 - s e^{-l_i})_+ at the exact losses (offset + i) h:
    the minimum over s = 0 and s = e^{l_k} (the function is convex and piecewise linear in s)."""
    p = [mp.mpf(float(v)) for v in pld.pmf[::-1]]
    l = [(pld.offset + pld.pmf.size - 1 - i) * mp.mpf(pld.h) for i in range(pld.pmf.size)]
    best, P, Q = mp.fsum(p), mp.mpf(0), mp.mpf(0)
    for pi, li in zip(p, l):  # from the top: P, Q = masses of the atoms above l_k
        s = mp.exp(li)
        best = min(best, s * alpha + P - s * Q)
        P += pi
        Q += pi * mp.exp(-li)
    return best


@pytest.mark.parametrize("seed,offset", [(1, -1500), (2, -300), (3, 200)])
def test_power_against_mpmath(seed: int, offset: int) -> None:
    mp.mp.dps = 40
    pld = _pld(seed, 1500, 2e-3, offset)
    lks = np.log([0.5, 0.1, 1e-2, 1e-3, 1e-5, 1e-8])
    log_up, _ = pld.power(lks)
    for la, lu in zip(lks, log_up):
        exact = min(mp.mpf(1), _mp_power(pld, mp.exp(mp.mpf(float(la)))))
        up = mp.exp(mp.mpf(float(lu)))
        assert up >= exact, (la, up, exact)  # never below the stored pair's power
        assert up <= exact * (1 + mp.mpf("1e-12")), (la, up, exact)


def _mp_threshold_power(p: GridPMF, q: GridPMF, kappa: mp.mpf) -> mp.mpf:
    """The threshold test S >= s randomised on s - 1 at level kappa, on the exact stored sums."""
    Q = [mp.mpf(float(v)) for v in q.pmf]
    P = {p.offset + i: mp.mpf(float(v)) for i, v in enumerate(p.pmf)}
    acc, i = mp.mpf(0), len(Q)
    while i > 0 and acc + Q[i - 1] <= kappa:
        i -= 1
        acc += Q[i]
    s = q.offset + i
    power = mp.fsum(v for lab, v in P.items() if lab >= s)
    if i > 0 and Q[i - 1] > 0:
        power += min(mp.mpf(1), (kappa - acc) / Q[i - 1]) * P.get(s - 1, mp.mpf(0))
    return power


@pytest.mark.parametrize("seed", [4, 5])
def test_power_lower_against_mpmath(seed: int) -> None:
    mp.mp.dps = 40
    rng = np.random.default_rng(seed)
    n = 1200
    x = np.arange(n) - n / 2
    pq = np.exp(-0.5 * (x / 150.0) ** 2)
    pq[rng.random(n) < 0.1] = 0.0
    pp = pq * np.exp(x / 300.0) * rng.uniform(0.8, 1.2, n)
    p = GridPMF(1e-3, -600 + 7, pp / pp.sum())
    q = GridPMF(1e-3, -600, pq / pq.sum())
    tests = ThresholdTests(p, q)
    kappas = np.array([0.3, 0.05, 1e-3, 1e-6, 1e-9])
    low = tests.power_lower(np.log(kappas))
    for k, lo in zip(kappas, low):
        exact = max(mp.mpf(float(k)), _mp_threshold_power(p, q, mp.mpf(float(k))))
        assert mp.mpf(float(lo)) <= exact, (k, lo, exact)  # never above the best such test's power
        assert mp.mpf(float(lo)) >= exact * (1 - mp.mpf("1e-12")), (k, lo, exact)
