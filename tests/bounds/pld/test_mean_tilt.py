"""rerokit.bounds.pld.tilt.mean_tilt: the tilt t >= lo whose tilted mean Psi'(t) = sum_i T_i E_t[L_i]
is y, found by a bracket then Newton's method on log Psi' safeguarded by bisection (a choice of
computation: any tilt gives a valid bound where it is used; these tests check that it finds the
tilt it is asked for). The reference is an independent evaluation of Psi' in mpmath at 40 digits
and its inversion by mpmath's own root finder."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.tilt import mean_tilt


def _parts(h: float):
    """Two distinct steps: a binomial-like bulk near 0 with a heavy upper tail (as a tiny-q step),
    and a short symmetric one."""
    j = np.arange(-3, 400)
    p1 = np.exp(-0.5 * (j / 2.0) ** 2) + 1e-9 * np.exp(-0.02 * np.maximum(j, 0))
    p1 /= p1.sum()
    p2 = np.array([0.25, 0.5, 0.25])
    return [(-3, p1, 50), (-1, p2, 7)]


def _mp_mean(parts, h: float, t) -> mp.mpf:
    total = mp.mpf(0)
    for off, pmf, count in parts:
        ls = [(off + i) * mp.mpf(h) for i in range(pmf.size)]
        w = [mp.mpf(float(p)) * mp.e ** (t * l) for p, l in zip(pmf, ls)]
        total += count * mp.fsum(wi * l for wi, l in zip(w, ls)) / mp.fsum(w)
    return total


@pytest.mark.parametrize("y", [0.5, 2.0, 10.0, 40.0])
def test_mean_tilt_matches_an_mpmath_inversion(y):
    h = 0.05
    parts = _parts(h)
    t = mean_tilt(parts, h, y, 0.05, 1e5)
    assert t is not None
    with mp.workdps(40):
        ref = mp.findroot(lambda s: _mp_mean(parts, h, s) - y, t)
        assert abs(_mp_mean(parts, h, mp.mpf(t)) - y) <= 1e-8 * y
    assert t == pytest.approx(float(ref), rel=1e-8)


def test_mean_tilt_returns_lo_none_and_respects_the_cap():
    h = 0.05
    parts = _parts(h)
    with mp.workdps(30):
        at_lo = float(_mp_mean(parts, h, mp.mpf(0.05)))
    assert mean_tilt(parts, h, at_lo * 0.5, 0.05, 1e5) == 0.05  # Psi'(lo) >= y already
    top = 399 * h * 50 + 1 * h * 7  # the largest total loss: Psi' stays below it at every tilt
    assert mean_tilt(parts, h, top * 1.01, 0.05, 1e5) is None
    # a cap below the root: None (the bracket never passes the cap by more than a doubling)
    t = mean_tilt(parts, h, 40.0, 0.05, 1e5)
    assert mean_tilt(parts, h, 40.0, 0.05, t / 8.0) is None
