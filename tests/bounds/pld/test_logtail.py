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


def _true_hockey_stick(lam: float, sigma: float, q: float) -> mp.mpf:
    """E_P[(1 - e^{lam - L})_+] = P(L > lam) - e^lam Q(L > lam) of the remove pair, in mpmath."""
    s, qq, lm = mp.mpf(sigma), mp.mpf(q), mp.mpf(lam)
    x = s * s * mp.log((mp.exp(lm) - (1 - qq)) / qq) + mp.mpf(1) / 2  # L(x) = lam
    return (1 - qq) * mp.ncdf(-x / s) + qq * mp.ncdf((1 - x) / s) - mp.exp(lm) * mp.ncdf(-x / s)


@pytest.mark.parametrize("sigma,q,T,h", [(1.0, 0.01, 1000, 0.01), (2.0, 0.002, 100000, 0.0025), (0.5, 0.01, 1000, 0.04),
                                         (0.7, 0.5, 1, 0.01)])
def test_extended_step_dominates_the_true_pair(sigma, q, T, h):
    st = dpsgd_step_pld(sigma, q, h, "remove", math.log(1e-300) - math.log(T))
    target = -1089.0 - 30.0 - math.log(T)
    off, lp, log_inf, shift = extend_step(st, sigma, q, target)
    n, j_hi = st.split.size, st.j_lo + st.split.size - 1
    assert off == st.j_lo and lp.size > n and shift >= st.loss_shift
    own = np.exp(lp[:n])
    assert np.all(own >= st.split) and own[-1] <= st.split[-1] + 2.0 * st.inf_mass * (1.0 + 1e-6)
    ext = lp[n:]
    labels = j_hi + 1 + np.arange(ext.size)
    # the Neyman-Pearson dual of one step at every threshold e^lam in the extension: the stored
    # masses (losses read ``shift`` higher) and the +infinity mass bound the true pair's
    # E_P[(1 - e^{lam - L})_+] (the criterion of a dominating pair), and closely: connect the dots
    # is exact at the grid points (up to the proven rounding: measured 8e-9-1.7e-7 above), a chord
    # between them (measured 0.7-11 % above at the midpoints here: steep tails, coarse h)
    grid_pts = labels[:: max(1, labels.size // 6)][:-1] * h
    with mp.workdps(40):
        for lam in np.concatenate((grid_pts, grid_pts + 0.5 * h)):
            above = labels * h > lam * (1.0 + 1e-15)
            dom = mp.fsum(mp.exp(mp.mpf(float(v))) * (1 - mp.exp(mp.mpf(lam) - mp.mpf(float(l)) - mp.mpf(shift)))
                          for v, l in zip(ext[above], labels[above] * h) if np.isfinite(v)) + mp.exp(mp.mpf(log_inf))
            true = _true_hockey_stick(float(lam), sigma, q)
            assert dom >= true
            on_grid = abs(lam / h - round(lam / h)) < 1e-6
            assert dom <= true * (1 + (mp.mpf(10) ** -6 if on_grid else mp.mpf(0.15)))
        # the whole tail above the step's last label is carried (extension + its last atom's extra)
        x_hi = float(x_of_remove_loss(np.array([j_hi * h]), sigma, q, 1)[0])
        carried = mp.fsum(mp.exp(mp.mpf(float(v))) for v in ext if np.isfinite(v)) + mp.exp(mp.mpf(log_inf))
        assert carried + mp.mpf(float(own[-1] - st.split[-1])) >= mp.exp(_log_tail_mp(x_hi, sigma, q)) * (1 - mp.mpf(10) ** -12)
        # the mass at +infinity bounds the exact tail beyond the last point, which is within the target
        x_top = float(x_of_remove_loss(np.array([labels[-1] * h]), sigma, q, 1)[0])
        top = _log_tail_mp(x_top, sigma, q)
        assert 0.0 <= float(mp.mpf(log_inf) - top) <= 1e-9 * abs(float(top))
        assert float(top) <= target + 1e-6 * abs(target)
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
    # above that label's point (connect the dots keeps a cell's lower part at its lower label)
    with mp.workdps(40):
        for k in nz[::10]:
            lab = j_hi + 1 + int(k)
            x0 = float(x_of_remove_loss(np.array([lab * h]), 1.0, 0.01, 1)[0])
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


def test_log_ndtr_many_against_the_scalar_and_mpmath():
    from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr, log_ndtr_many

    x = np.concatenate((-np.geomspace(30.0001, 1e6, 200), np.linspace(-30.0, 5.0, 50), [-np.inf, np.inf, -30.0]))
    got = log_ndtr_many(x)
    for xi, g in zip(x, got):
        s = log_ndtr(float(xi))
        assert g == s or abs(g - s) <= 8.0 * 2.0 ** -53 * abs(s)  # the same series (numpy's log for libm's)
    with mp.workdps(40):
        for xi, g in zip(x[:200:7], got[:200:7]):
            ref = mp.log(mp.ncdf(mp.mpf(float(xi))))
            assert abs(float(mp.mpf(float(g)) - ref)) <= LOG_NDTR_REL * abs(float(ref))
