"""rerokit.bounds.pld.exactsum.exact_sum_minus_one: math.fsum's value (the exact sum rounded once,
Shewchuk 1997) of one array of masses plus ``extra`` minus 1, bit for bit, on the extraction path
(non-negative masses, sum < 8, fewer than 2^18 of them) and on math.fsum's own fallback."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.pld.exactsum import exact_sum_minus_one


@pytest.mark.parametrize("n,power", [(1, 1), (7, 3), (1000, 8), (30000, 20), (300000, 2)])
def test_exact_sum_minus_one_is_fsums_value(n, power):
    rng = np.random.default_rng(n)
    x = rng.random(n) ** power
    x /= math.fsum(x.tolist())  # a pmf whose float total is within a few u of 1
    x[:: max(1, n // 5)] *= 1e-30  # masses of very different sizes
    for extra in (0.0, 3.2e-17, 1e-300):
        assert exact_sum_minus_one(x, extra) == math.fsum(x.tolist() + [extra, -1.0])


def test_exact_sum_minus_one_fallbacks():
    assert exact_sum_minus_one(np.zeros(0), 0.25) == -0.75
    assert exact_sum_minus_one(np.array([9.0, 1.0])) == 9.0  # sum >= 8: math.fsum
    assert exact_sum_minus_one(np.array([0.5, -0.25, 0.75])) == 0.0  # a negative mass: math.fsum
