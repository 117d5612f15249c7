"""rerokit.bounds.pld.step._tails_at computes the Q tails once and reuses them in the mixture's
(k = 1): the tails must equal, bit for bit, the mixture formulas evaluated on their own
(step._mix_sf / step._mix_cdf and the two normal tails), the route taken before, so every step
discretisation is unchanged (their accuracy against mpmath: test_pld_engine.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.pld import step


@pytest.mark.parametrize("sigma,q,k,direction,h", [
    (1.0, 0.01, 1, "remove", 2e-3), (0.5, 0.3, 1, "add", 5e-3), (3.0, 1e-3, 1, "remove", 1e-5),
    (10.0, 1e-3, 2, "remove", 1e-4), (1.0, 0.1, 3, "add", 2e-3), (2.0, 1.0, 1, "add", 1e-2),
])
def test_tails_bit_identical_to_the_mixture_formulas(sigma, q, k, direction, h):
    lo, hi = step.loss_range(sigma, q, direction, math.log(1e-20), k)
    l = np.arange(math.floor(lo / h), math.ceil(hi / h) + 1) * h
    *tails, x = step._tails_at(l, sigma, q, direction, k)
    sf, cdf = step._mix_sf(x, sigma, q, k), step._mix_cdf(x, sigma, q, k)
    q_gt, q_le = step.ndtr(-x / sigma), step.ndtr(x / sigma)
    ref = (sf, cdf, q_gt, q_le) if direction == "remove" else (q_le, q_gt, cdf, sf)
    for got, want in zip(tails, ref):
        assert np.array_equal(got, want)


def test_ndtr_is_libm_erfc_per_point():
    """normal.ndtr below SCIPY_ABOVE points: y = Phi(-|x|) by libm's erfc per point (as
    np.frompyfunc(math.erfc) gives), bit for bit, and 1 - y where x > 0, any shape, infinities and
    NaN; and within 2e-15 (1 + x^2) relative of mpmath (x^2: the rounding of the argument
    x / sqrt 2)."""
    import mpmath as mp

    from rerokit.bounds.pld.normal import ndtr

    rng = np.random.default_rng(0)
    erfc = np.frompyfunc(math.erfc, 1, 1)
    for x in (rng.uniform(-40.0, 40.0, 3000), np.array([-np.inf, np.inf, np.nan, 0.0, -0.0]),
              rng.normal(size=(7, 11)), np.zeros(0)):
        y = 0.5 * erfc(np.abs(x) * math.sqrt(0.5)).astype(float)
        assert np.array_equal(ndtr(x), np.where(x > 0, 1.0 - y, y), equal_nan=True)
    with mp.workdps(30):
        for xi in (-37.0, -20.5, -3.2, -0.3, 0.0, 0.4, 2.0, 8.0):
            ex = mp.ncdf(xi)
            assert abs(mp.mpf(float(ndtr(np.array([xi]))[0])) - ex) <= 2e-15 * (1.0 + xi * xi) * ex  # (+ the argument)


@pytest.mark.parametrize("libm", [True, False])
def test_ndtr_pair_equals_two_ndtr_calls(libm):
    """normal.ndtr_pair(t) = (ndtr(-t), ndtr(t)) bit for bit on each path (libm's erfc, one per
    point; scipy's ndtr, the path above SCIPY_ABOVE points), including |t| < 1, zeros, infinities
    and NaN."""
    from scipy.special import ndtr as scipy_ndtr

    from rerokit.bounds.pld.normal import ndtr, ndtr_pair

    rng = np.random.default_rng(3)
    one = ndtr if libm else (lambda v: scipy_ndtr(np.asarray(v, dtype=float)))
    for t in (rng.uniform(-40.0, 40.0, 4000), rng.normal(scale=0.5, size=(5, 9)),
              np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, 1.0, -1.0])):
        lo, hi = ndtr_pair(t, libm=libm)
        assert np.array_equal(lo, one(-t), equal_nan=True) and np.array_equal(hi, one(t), equal_nan=True)
