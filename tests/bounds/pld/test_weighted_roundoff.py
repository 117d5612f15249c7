"""The 2-norm round-off bound of a composition and the weighted bound built on it (the tilted tails).

Reference: the exact composition p^{*T} in integer arithmetic (p has dyadic masses k_i / 2^m, so
p^{*T} = (sum_i k_i x^i)^T / 2^{mT} exactly, with Python integers), independent of the FFT code;
the errors of the computed doubles are then exact rationals. The bounds must hold for every
window position k: sum_{j >= 0} e^{-rate j} |computed_{k+j} - exact_{k+j}| <= weighted_roundoff,
and the 2-norm of the error <= roundoff2 <= roundoff.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from rerokit.bounds.pld.compose import compose, weighted_roundoff


def _exact_power(k: list[int], T: int) -> list[int]:
    """Integer coefficients of (sum_i k_i x^i)^T (binary powering, exact)."""
    base = np.array(k, dtype=object)
    out = np.array([1], dtype=object)
    while T:
        if T & 1:
            out = np.convolve(out, base)
        T >>= 1
        if T:
            base = np.convolve(base, base)
    return [int(v) for v in out]


@pytest.mark.parametrize("precision", ["double", "extended"])
@pytest.mark.parametrize("T", [60, 333])
def test_weighted_roundoff_bounds_the_exact_errors(precision: str, T: int) -> None:
    m = 10
    k = [700, 200, 90, 30, 3, 1]  # sum 1024 = 2^m: a pmf with a long, thin upper tail
    pmf = np.array(k, dtype=float) / 2.0**m
    n = T * (len(k) - 1) + 1
    c = compose([(0, pmf, T)], 1e-3, math.log(1e-30), window=(0, n - 1), precision=precision)
    assert c.offset == 0 and c.pmf.size == n
    coef = _exact_power(k, T)
    den = 2 ** (m * T)
    err = np.array([float(abs(Fraction(float(c.pmf[i])) - Fraction(coef[i], den))) for i in range(n)])
    assert float(np.sqrt(np.sum(err * err))) <= c.roundoff2 * (1 + 1e-9)
    assert c.roundoff2 <= c.roundoff
    assert float(np.sum(err)) <= c.roundoff
    for rate in (0.0, 1e-4, 1e-2, 0.3, 3.0):
        w = np.exp(-rate * np.arange(n))
        # sum_{j >= 0} w_j err_{k+j} for every k: a correlation, by the reversed cumulative form
        worst = max(float(np.dot(w[: n - i], err[i:])) for i in range(0, n, max(1, n // 200)))
        assert worst <= weighted_roundoff(c, rate)
    # the point of the bound: with slowly decaying weights it is far below the l1 round-off
    assert weighted_roundoff(c, 0.1) < 0.3 * c.roundoff
