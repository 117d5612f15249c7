"""The split fractions from the mixture's components (rerokit.bounds.pld.step.component_split, the
opt-in path of dpsgd_step_pld used by the lower-tail tilt's fine steps) against independent
references: the exact connect-the-dots fraction of each cell in mpmath (50 digits), the exact split's
suffix sums in mpmath, the default path (option off), and the second-order Lugannani-Rice values of
test_lowertail for gamma near 1 at T = 1e6."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import rero_dpsgd
from rerokit.bounds.pld import LOG_TAU, dpsgd_step_pld
from rerokit.bounds.pld import step as step_mod

sys.path.insert(0, str(Path(__file__).parent))
from _mp_reference import mp_cdf, mp_cells, mp_exact_split, mp_pair, mp_suffixes  # noqa: E402 - exact step references
from test_lowertail import TARGET, _lr_point  # noqa: E402 - the saddle-point reference


def _grid(sigma: float, q: float, h: float, log_tau: float) -> np.ndarray:
    lo, hi = step_mod.loss_range(sigma, q, "remove", log_tau)
    return np.arange(math.floor(lo / h), math.ceil(hi / h) + 1) * h


def bucket_inputs(sigma: float, q: float, h: float, log_tau: float):
    """The grid, the computed points, the buckets and their error bounds as step_from_tails has
    them (remove, k = 1): (l, x, pb, qb, local_p, local_q). Also used by test_step_quadrature."""
    l = _grid(sigma, q, h, log_tau)
    p_gt, p_le, q_gt, q_le, x = step_mod._tails_at(l, sigma, q, "remove")  # noqa: SLF001
    pb, qb = step_mod._bucket_masses(p_gt, p_le), step_mod._bucket_masses(q_gt, q_le)  # noqa: SLF001
    comp_p, comp_q, _ = step_mod.pair_components(sigma, q, "remove", 1)
    ep = step_mod._tail_errors(p_gt, p_le, step_mod._arg_slack(x, sigma, comp_p), 0.0)  # noqa: SLF001
    eq = step_mod._tail_errors(q_gt, q_le, step_mod._arg_slack(x, sigma, comp_q), 0.0)  # noqa: SLF001
    _, local_p = step_mod._suffix_errors(p_gt, p_le, *ep, p_gt[:-1] < 0.5)  # noqa: SLF001
    _, local_q = step_mod._suffix_errors(q_gt, q_le, *eq, q_gt[:-1] < 0.5)  # noqa: SLF001
    return l, x, pb, qb, local_p, local_q


def _component_inputs(sigma: float, q: float, h: float, log_tau: float):
    """:func:`bucket_inputs` and component_split's (c, dc) with the default path's dc."""
    l, x, pb, qb, local_p, local_q = bucket_inputs(sigma, q, h, log_tau)
    r_tails = (step_mod.ndtr((1.0 - x) / sigma), step_mod.ndtr((x - 1.0) / sigma))
    c, dc = step_mod.component_split(l, h, q, pb, qb, local_p, local_q, sigma, x, r_tails)
    _, dc_default, _ = step_mod._default_split(l, h, pb, qb, local_p, local_q)  # noqa: SLF001
    return l, x, dc_default, c, dc


# fine grids as the lower-tail tilt uses them (h_f ~ 1e-5), and a coarse one
@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.01, 1.024e-5), (20.0, 0.3, 1.17e-5), (0.5, 1e-3, 2e-5),
                                       (4.0, 1e-4, 1e-6), (1.0, 0.01, 1e-3)])
def test_component_fraction_within_its_bound_of_the_exact_one(sigma, q, h):
    """At 60 buckets across the grid the exact fraction (pb* - e^{l_j} qb*) / (1 - e^{-h}) of the
    cell between the computed points (mpmath, 50 digits) lies within dc of the computed c; where
    e^{l_j} <= 1 (P's lower tail, where the near-1 threshold sits) dc is below the default path's
    bound, and on the fine grids (h <= 1e-4) at q <= 0.01 at least 10x below it (measured: median
    26-112x; at the coarse h = 1e-3 the loss-point term common to both dominates, 6.5x)."""
    log_tau = LOG_TAU - math.log(1e6)
    l, x, dc_default, c, dc = _component_inputs(sigma, q, h, log_tau)
    assert np.all(np.isfinite(dc)) and np.all(dc > 0)
    d_mp = None
    with mp.workdps(50):
        qq, hh = mp.mpf(q), mp.mpf(h)
        d_mp = 1 - mp.exp(-hh)

        def le(v: float, m: int) -> mp.mpf:  # N(m, sigma^2)(X <= v)
            return mp_cdf([(1, m)], v, sigma)

        for j in np.unique(np.linspace(0, l.size - 2, 60).astype(int)):
            qb = le(x[j + 1], 0) - le(x[j], 0)
            pb = (1 - qq) * qb + qq * (le(x[j + 1], 1) - le(x[j], 1))
            exact = (pb - mp.exp(mp.mpf(float(l[j]))) * qb) / d_mp
            assert abs(mp.mpf(float(c[j])) - exact) <= mp.mpf(float(dc[j])), (j, float(l[j]))
    low = l[:-1] <= 0.0
    assert np.any(low)
    assert np.all(dc[low] <= dc_default[low])
    if q <= 0.01 and h <= 1e-4:
        # the sum over the cuts (times h: how far the flows raise the step's mean loss) and all but
        # the lowest 8 buckets (or 0.1 %; there a cell holds most of the tail below it, so the grid
        # points' loss error, common to both paths, dominates both bounds: measured >= 2x)
        assert 10.0 * float(np.sum(dc[low])) <= float(np.sum(dc_default[low]))
        ratio = dc_default[low] / dc[low]
        assert np.all(ratio[max(8, ratio.size // 1000):] >= 10.0)


@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.01, 2e-3), (0.8, 0.05, 1e-3), (2.0, 1.0, 1e-2)])
def test_option_changes_only_the_split_and_it_still_dominates(sigma, q, h):
    """With component_split the statistic, its reversed-test error and the loss shift are those of
    the default path bit for bit (the same tails); the split (with +infinity) has every suffix sum
    >= the exact connect-the-dots split of the same cells onto the grid points widened by the loss
    error (mpmath), and <= the default path's split plus 1e-8 relative (it moved less, if at all)."""
    log_tau = LOG_TAU - math.log(1000)
    off = dpsgd_step_pld(sigma, q, h, "remove", log_tau)
    on = dpsgd_step_pld(sigma, q, h, "remove", log_tau, component_split=True)
    assert (on.h, on.j_lo, on.stat_rev_err, on.loss_shift) == (off.h, off.j_lo, off.stat_rev_err, off.loss_shift)
    assert np.array_equal(on.stat_p, off.stat_p) and np.array_equal(on.stat_q, off.stat_q)
    l = _grid(sigma, q, h, log_tau)
    *_, x = step_mod._tails_at(l, sigma, q, "remove")  # noqa: SLF001
    with mp.workdps(40):
        mp_p, mp_q, _ = mp_pair(sigma, q, 1, "remove")  # (1 - q) N(0, s^2) + q N(1, s^2) against N(0, s^2)
        ep, eq_ = mp_cells(mp_p, x, sigma), mp_cells(mp_q, x, sigma)
        exact = mp_suffixes(mp_exact_split(ep, eq_, l, h, step_mod.LOSS_POINT_ULPS)[0])
        got = mp_suffixes([mp.mpf(float(v)) for v in on.split] + [mp.mpf(on.inf_mass)])
        old = mp_suffixes([mp.mpf(float(v)) for v in off.split] + [mp.mpf(off.inf_mass)])
        for g, e, o in zip(got, exact, old):
            assert e <= g <= o * (1 + mp.mpf(1e-8)) + mp.mpf(1e-290)


def test_bad_component_split_raises_naming_it():
    with pytest.raises(ValueError, match="component_split"):
        dpsgd_step_pld(1.0, 0.01, 1e-3, "add", -40.0, component_split=True)
    with pytest.raises(ValueError, match="component_split"):
        dpsgd_step_pld(1.0, 0.01, 1e-3, "remove", -40.0, group_size=2, component_split=True)


# (sigma, q, kappa) and the Lugannani-Rice tilt whose level is ~kappa; widths measured with the
# quadrature split and sigma 20's dominating steps 2x finer: 7.3e-10 and 7.3e-10 (with the tails'
# component split: 7.5e-10 and 1.44e-9; before it: 1.43e-9 and 2.11e-9)
@pytest.mark.parametrize("sigma,q,lam,width", [(1.0, 0.01, -0.279916021294475, TARGET),
                                               (20.0, 0.3, -0.2358720967753748, TARGET)])
def test_near_one_cells_bracket_the_saddle_point(sigma, q, lam, width):
    """sigma 1, q 0.01 and sigma 20, q 0.3 at T = 1e6 (kappa ~1e-20, 1e-30): 1 - gamma (second-order
    Lugannani-Rice) inside the bracket of rero_dpsgd; both within the 1e-9 target now."""
    T = 1_000_000
    alpha, beta = _lr_point(sigma, q, T, lam)
    b = rero_dpsgd(sigma, q, T, log_kappa=float(mp.log(alpha)), comparisons=False)
    slack = 1e-12  # the saddle point's own error (test_lowertail's docstring)
    assert 1.0 - b.value <= beta + slack and beta - slack <= 1.0 - b.interval[0]
    assert b.value - b.interval[0] <= width
