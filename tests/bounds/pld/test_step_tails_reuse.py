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
