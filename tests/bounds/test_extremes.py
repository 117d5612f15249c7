"""Adversarial extremes: every bound stays on its safe side at extreme but valid inputs.

References are independent high-precision computations with mpmath (closed forms or the
defining equations), never the code under test.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from rerokit.bounds import fano

mp.mp.dps = 60


# --------------------------------------------------------------------------- fano


def _mp_fano_advantage(sigma: float, n: int) -> tuple[mp.mpf, mp.mpf]:
    """(advantage bound, I) of Hayes et al. 2023 App. H Eq. 4-5 by 400-step mpmath bisection."""
    p = mp.mpf(1) / n
    i = -mp.log(p + (1 - p) * mp.e ** (-1 / (2 * mp.mpf(sigma) ** 2)))
    h, top = mp.log(n), 1 - p
    if i >= h:
        return mp.mpf(1), i
    f = lambda t: h - i + t * mp.log(t) + (1 - t) * mp.log(1 - t) - t * mp.log(n - 1)  # noqa: E731
    lo, hi = mp.mpf(0), top
    for _ in range(400):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return (1 - lo - p) / (1 - p), i


@pytest.mark.parametrize("n", [2, 10, 10**6])
@pytest.mark.parametrize("sigma", [1e-200, 0.5, 1.0, 1e3, 1e5, 1e8, 1e10])
def test_fano_gaussian_never_below_mpmath(sigma: float, n: int) -> None:
    # Before the fix: sigma=1e8 gave I = 0 and advantage 0 (true 7.07e-9 for n=2), sigma=1e5,
    # n=10 gave 3.16229e-6 < true 3.16229099e-6, and sigma=1e-200 raised ZeroDivisionError.
    b = fano.fano_advantage_gaussian(sigma, n)
    true_adv, true_i = _mp_fano_advantage(sigma, n)
    i = b.extras["mutual_information_bound"]
    assert i >= true_i and i <= true_i * (1 + 1e-13) + 1e-300
    assert b.value >= true_adv
    assert 0.0 <= b.error <= b.value <= 1.0
    assert b.value - b.error <= true_adv  # the lower end of the bracket is also honest
