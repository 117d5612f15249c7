"""The REMOVE step continued in log masses (rerokit.bounds.pld.logtail) against mpmath: the log
tails within their proven error, every cell's log mass at least the exact one and close to it,
the mass at +infinity an upper bound, and the composed +infinity mass against its closed form."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.logtail import composed_log_inf, extend_step, log_bucket_masses, log_mixture_tail
from rerokit.bounds.pld.step import StepTooWide, x_of_remove_loss, dpsgd_step_pld, loss_range


def _log_tail_mp(x: float, sigma: float, q: float) -> mp.mpf:
    """log P(X > x), X ~ (1-q) N(0, sigma^2) + q N(1, sigma^2), at the float x, in mpmath."""
    xs, s, qq = mp.mpf(x), mp.mpf(sigma), mp.mpf(q)
    return mp.log((1 - qq) * mp.ncdf(-xs / s) + qq * mp.ncdf((1 - xs) / s))


@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (0.5, 0.01), (2.0, 0.002), (0.3, 0.3), (20.0, 1e-4), (1.0, 1.0)])
def test_log_tails_within_their_proven_error(sigma, q):
    # from the bulk (z ~ 3, libm's erfc) through 1e-300 to about e^-2500 (the Mills series)
    x = np.concatenate((np.linspace(1.0 + 3.0 * sigma, 1.0 + 40.0 * sigma, 40), [1.0 + 70.0 * sigma]))
    got, err = log_mixture_tail(x, sigma, q)
    worst = 0.0
    with mp.workdps(40):
        for xi, g, e in zip(x, got, err):
            d = abs(float(mp.mpf(float(g)) - _log_tail_mp(float(xi), sigma, q)))
            assert d <= e
            worst = max(worst, d / (abs(float(g)) * 2.0 ** -53))
    assert worst <= 16.0  # measured at most a few ulps of |log S| (the bound allows 1e-13 relative)


@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.01, 0.004), (2.0, 0.002, 0.001), (0.5, 0.3, 0.05)])
def test_cell_masses_are_upper_bounds_and_close(sigma, q, h):
    l = np.arange(math.floor(30.0 / (sigma * sigma) / h), math.floor(30.0 / (sigma * sigma) / h) + 60) * h
    x = x_of_remove_loss(l, sigma, q, 1)
    got = log_bucket_masses(*log_mixture_tail(x, sigma, q))
    with mp.workdps(40):
        for i in range(got.size):
            exact = mp.log(mp.exp(_log_tail_mp(float(x[i]), sigma, q)) - mp.exp(_log_tail_mp(float(x[i + 1]), sigma, q)))
            gap = float(mp.mpf(float(got[i])) - exact)
            assert 0.0 <= gap <= 1e-8  # an upper bound, within 1e-8 relative (LOG_NDTR_REL |log S| / (1 - e^-d))


@pytest.mark.parametrize("sigma,q,T", [(1.0, 0.01, 1000), (2.0, 0.002, 100000), (0.5, 0.01, 1000)])
def test_extended_step_dominates_the_exact_tail(sigma, q, T):
    lt = math.log(1e-300) - math.log(T)
    h = 0.01 * sigma ** -2
    st = dpsgd_step_pld(sigma, q, h, "remove", lt)
    target = -1089.0 - 30.0 - math.log(T)
    off, lp, log_inf, shift = extend_step(st, sigma, q, target)
    j_hi = st.j_lo + st.split.size - 1
    assert off == st.j_lo and lp.size > st.split.size and shift >= st.loss_shift
    # the stored part: the step's own split (its +infinity mass moved to its last atom, less the
    # part the extension carries for certain)
    own = np.exp(lp[: st.split.size])
    assert np.all(own[:-1] >= st.split[:-1]) and own[-1] >= st.split[-1]
    assert own[-1] <= st.split[-1] + st.inf_mass * (1.0 + 1e-6)
    # every extension cell's mass (at its upper label) bounds the exact mass of its cell, the mass
    # at +infinity the exact tail beyond the last point, which is at most about the target
    labels = np.arange(j_hi + 1, j_hi + lp.size - st.split.size + 1)
    x = x_of_remove_loss(labels * h, sigma, q, 1)
    ext = lp[st.split.size:]
    with mp.workdps(40):
        tails = [mp.exp(_log_tail_mp(float(v), sigma, q)) for v in x]
        for i in range(1, x.size):
            exact = tails[i - 1] - tails[i]
            if exact > 0:
                assert float(mp.mpf(float(ext[i])) - mp.log(exact)) >= 0.0
        top = _log_tail_mp(float(x[-1]), sigma, q)
        assert 0.0 <= float(mp.mpf(log_inf) - top) <= 1e-9 * abs(float(top))
        assert float(top) <= target + 1e-6 * abs(target)
        # the whole tail above the step's last label is carried (extension + its last atom's extra)
        x_hi = float(x_of_remove_loss(np.array([j_hi * h]), sigma, q, 1)[0])
        carried = mp.fsum(mp.exp(mp.mpf(float(v))) for v in ext) + mp.exp(mp.mpf(log_inf))
        assert carried + mp.mpf(float(own[-1] - st.split[-1])) >= mp.exp(_log_tail_mp(x_hi, sigma, q)) * (1 - mp.mpf(10) ** -12)
        # and the extension ends where the loss range at the target ends
        assert abs(labels[-1] * h - loss_range(sigma, q, "remove", target)[1]) <= h


def test_coarse_cells_and_bad_input():
    h = 0.01
    st = dpsgd_step_pld(1.0, 0.01, h, "remove", math.log(1e-300))
    _, coarse, log_inf, _ = extend_step(st, 1.0, 0.01, -2000.0, max_width=100)
    n, j_hi = st.split.size, st.j_lo + st.split.size - 1
    ext = coarse[n:]
    nz = np.flatnonzero(np.isfinite(ext))
    stride = int(nz[1] - nz[0])
    assert nz.size <= 100 and stride > 1 and stride & (stride - 1) == 0 and np.all(np.diff(nz) == stride)
    # the mass at the coarse labels >= label j_hi + 1 + k (and at +infinity) bounds the exact tail
    # above the cell boundary below that label, at every coarse label
    with mp.workdps(40):
        for k in nz[::10]:
            lab = j_hi + 1 + int(k)
            x0 = float(x_of_remove_loss(np.array([(lab - stride) * h]), 1.0, 0.01, 1)[0])
            suffix = mp.fsum(mp.exp(mp.mpf(float(v))) for v in ext[k:] if np.isfinite(v)) + mp.exp(mp.mpf(log_inf))
            assert suffix >= mp.exp(_log_tail_mp(x0, 1.0, 0.01))
    with pytest.raises(StepTooWide):
        extend_step(st, 1.0, 0.01, -1e12)  # (over 2^23 labels)
    with pytest.raises(ValueError, match="q"):
        extend_step(st, 1.0, 0.0, -2000.0)
    with pytest.raises(ValueError, match="log_target"):
        extend_step(st, 1.0, 0.01, float("nan"))


def test_composed_log_inf_against_the_union_bound():
    parts = [(-1200.0, 1000), (-1190.5, 3), (-1300.0, 10 ** 6)]
    with mp.workdps(40):
        exact = mp.log(mp.fsum(T * mp.exp(mp.mpf(lp)) for lp, T in parts))
    got = composed_log_inf(parts)
    assert 0.0 <= got - float(exact) <= 1e-12
    assert composed_log_inf([]) == -math.inf
