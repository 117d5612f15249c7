"""The far-tail tilt's window starting at the tilted mass's 1e-6 lower Chernoff bound
(rerokit.bounds.pld.tilt._window): the mass below it, wrapped around the circular convolution, is
within tilt._left_alias's per-label bound (against the same composition on a window that holds the
whole mass), and the brackets of long schedules, whose tilted losses have long thin left tails,
contain the Bromwich reference (tests/bounds/conftest.py) with the windows shorter."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import tilt
from rerokit.bounds.pld.compose import compose, fft_size, weighted_roundoff

builder = sys.modules["rerokit.bounds.pld.builder"]  # (loaded by rerokit.bounds.dpsgd)


def _weighted_suffix(d: np.ndarray, rate: float) -> np.ndarray:
    """sum_{j >= k} e^{-rate (j - k)} |d_j| for every k (exact recursion in double)."""
    out = np.zeros(d.size)
    acc = 0.0
    for k in range(d.size - 1, -1, -1):
        acc = abs(float(d[k])) + math.exp(-rate) * acc
        out[k] = acc
    return out


@pytest.mark.parametrize("t,cut", [(0.5, 0.5), (2.0, 0.3)])
def test_the_mass_below_a_window_wraps_within_its_bound(t: float, cut: float) -> None:
    """sigma 1.2, q 0.05, T 300 tilted by t, composed on a window that starts at the tilted mass's
    ``cut`` quantile (half of it and more below: far more than any tail allowance) and on one that
    holds everything: their difference, weighted as the upper end weighs errors above each label,
    is within the alias bound plus both round-off bounds, everywhere. The wrapped mass shows: 1e3
    times the round-off bounds at thousands of labels near the window's top (measured: up to 2.8e-7
    / 2.7e-3 of the bound there)."""
    pld = dpsgd_pld([(1.2, 0.05, 300)])
    h = pld.h
    steps = pld.grid_steps("remove")
    tp, c, _ = tilt._tilted(steps, h, t)
    full = compose(tp, h, math.log(1e-300))
    cdf = np.cumsum(full.pmf) / full.pmf.sum()
    a = full.offset + int(np.searchsorted(cdf, cut))
    b = full.offset + full.pmf.size - 1
    short = compose(tp, h, math.log(1e-300), window=(a, b))
    assert short.pmf.size < full.pmf.size
    diff = short.pmf - full.pmf[a - full.offset:]
    got = _weighted_suffix(diff, t * h)
    alias = tilt._left_alias(short.offset, short.pmf.size, h, t, c, tilt.log_total_mass(steps))
    bound = alias + weighted_roundoff(short, t * h) + weighted_roundoff(full, t * h)
    assert np.all(got <= bound)
    assert np.sum(got > 1e3 * (weighted_roundoff(short, t * h) + weighted_roundoff(full, t * h))) > 1000


@pytest.mark.parametrize("segs,log_level,log_power", [
    # pinned Bromwich points (tests/bounds/pld/test_bracket_consistency.py, test_tilt_fastpaths.py)
    ([(1.36, 1e-3, 70_000)], -63.47059823067659, -60.965439322449754),
    ([(1.36, 1e-3, 70_000)], -76.06259981572008, -73.11010653925497),
])
def test_long_schedules_take_the_short_window_and_stay_sound(bromwich, segs, log_level: float, log_power: float,
                                                             monkeypatch) -> None:
    """The tilted compositions of sigma 1.36, q 1e-3, T 7e4 near kappa 1e-28 / 1e-33: 1.09-1.28x
    fewer FFT points in all (the tilted losses' 1e-12 and 1e-6 lower quantiles ~12 nats apart), the
    bracket still contains the reference and is no wider than with compose's own windows (to
    2 %: 1.0 % wider at the second level, the same at the first)."""
    sizes: list[int] = []
    real = tilt.compose

    def spy(parts, h, log_tau, window=None, precision="double"):
        out = real(parts, h, log_tau, window=window, precision=precision)
        sizes.append(fft_size(out.pmf.size))
        return out

    monkeypatch.setattr(tilt, "compose", spy)
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    short = list(sizes)
    assert lo <= log_power + bromwich.REF_TOL and up >= log_power - bromwich.REF_TOL
    sizes.clear()
    monkeypatch.setattr(tilt, "_SHORT_WINDOW", False)
    lo_f, up_f = dpsgd_pld(segs).tail_power(log_level)
    assert lo_f <= log_power + bromwich.REF_TOL and up_f >= log_power - bromwich.REF_TOL
    assert sum(sizes) > 1.05 * sum(short)
    assert up - lo <= 1.02 * (up_f - lo_f)
