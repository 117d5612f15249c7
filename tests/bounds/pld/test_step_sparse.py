"""Sparse step grids (rerokit.bounds.pld.step.tail_labels, ``dpsgd_step_pld(..., sparse_tail=...)``,
used by the lower-tail tilt's fine steps) against independent references: the full-grid step (the
old code path, bit for bit where every label is kept), the exact suffix sums of the statistic and
of the connect-the-dots split of the same cells in mpmath (40 digits), and the lower-tail tilt's
bracket of 1 - gamma on full-grid steps."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import LOG_TAU, dpsgd_step_pld
from rerokit.bounds.pld import lowertail as lt_mod
from rerokit.bounds.pld import step as step_mod


def _ends(sigma: float, q: float, h: float, log_tau: float) -> tuple[int, int]:
    lo, hi = step_mod.loss_range(sigma, q, "remove", log_tau)
    return math.floor(lo / h), math.ceil(hi / h)


@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.01, 1.024e-5), (20.0, 0.3, 1.17e-5), (0.5, 1e-3, 2e-5),
                                       (1.0, 1.0, 1e-4)])
def test_tail_labels_keep_the_bulk_and_thin_the_tails(sigma, q, h):
    """The labels run from j_lo to j_hi by powers of two; every run of 1024 labels whose tails
    beyond both ends exceed the budget (mpmath: the mixture's tails at the run's ends) keeps every
    label; at sigma 1, q 0.01 (the near-1 cell at T = 1e6) under 10 % of the labels remain."""
    log_tau = LOG_TAU - math.log(1e6)
    j_lo, j_hi = _ends(sigma, q, h, log_tau)
    budget = 1e-4
    lab = step_mod.tail_labels(sigma, q, h, "remove", 1, j_lo, j_hi, budget)
    gaps = np.diff(lab)
    assert lab[0] == j_lo and lab[-1] == j_hi
    assert np.all(gaps > 0) and not np.any(gaps & (gaps - 1)) and int(gaps.max()) <= 1024
    x_of = step_mod.x_of_remove_loss
    with mp.workdps(30):
        s, qq = mp.mpf(sigma), mp.mpf(q)

        def tails(label: int) -> tuple[mp.mpf, mp.mpf]:
            """(max(P, Q)(L > l), max(P, Q)(L <= l)) at l = label h."""
            x = float(x_of(np.array([label * h]), sigma, q)[0])
            if x == -math.inf:
                return mp.mpf(1), mp.mpf(0)
            xm = mp.mpf(x)
            p_gt = (1 - qq) * mp.ncdf(-xm / s) + qq * mp.ncdf((1 - xm) / s)
            q_gt = mp.ncdf(-xm / s)
            return max(p_gt, q_gt), max(1 - p_gt, 1 - q_gt)

        starts = list(range(j_lo, j_hi, 1024))
        for a in starts[:: max(1, len(starts) // 40)]:
            b = min(a + 1024, j_hi)
            if min(tails(a)[0], tails(b)[1]) > 2 * budget:  # (2x: the rule reads double tails)
                inside = lab[(lab >= a) & (lab <= b)]
                assert np.array_equal(inside, np.arange(a, b + 1))
    if (sigma, q) == (1.0, 0.01):
        assert lab.size < 0.1 * (j_hi - j_lo + 1)


@pytest.mark.parametrize("sigma,q,h", [(1.0, 0.01, 1e-4), (20.0, 0.3, 1e-4), (2.0, 1.0, 1e-3)])
def test_sparse_step_with_every_label_is_the_full_step_bit_for_bit(sigma, q, h):
    """A budget that keeps every label (1e-300) gives the full-grid step of the same option, bit for
    bit: the per-bucket widths (all h), the scatter onto the full grid and the statistic's layout
    are the old code path's."""
    log_tau = LOG_TAU - math.log(1e4)
    for split in (False, True):
        if split and q == 1.0:
            continue
        full = dpsgd_step_pld(sigma, q, h, "remove", log_tau, component_split=split)
        sparse = dpsgd_step_pld(sigma, q, h, "remove", log_tau, component_split=split, sparse_tail=1e-300)
        assert (sparse.h, sparse.j_lo, sparse.inf_mass, sparse.stat_rev_err, sparse.loss_shift) == (
            full.h, full.j_lo, full.inf_mass, full.stat_rev_err, full.loss_shift)
        for a, b in ((sparse.split, full.split), (sparse.stat_p, full.stat_p), (sparse.stat_q, full.stat_q)):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("sigma,q,h,budget", [(1.0, 0.01, 2e-3, 1e-2), (0.8, 0.05, 1e-3, 1e-2), (2.0, 1.0, 1e-3, 1e-1)])
def test_sparse_step_dominates_on_its_cells(sigma, q, h, budget):
    """On a sparse grid (wide cells in the tails): the statistic's stored P-suffix sums are <= and its
    Q-suffix sums >= the exact masses of the cells above each computed point (mpmath), and the split
    (with +infinity) has every suffix sum >= the exact connect-the-dots split of the same cells onto
    their end atoms widened by the loss error, and within 1e-6 relative (+1e-13) of it; every
    stored mass sits at a kept label."""
    log_tau = LOG_TAU - math.log(1000)
    j_lo, j_hi = _ends(sigma, q, h, log_tau)
    lab = step_mod.tail_labels(sigma, q, h, "remove", 1, j_lo, j_hi, budget)
    assert lab.size < j_hi - j_lo + 1  # some cells are wide
    st = dpsgd_step_pld(sigma, q, h, "remove", log_tau, component_split=q < 1.0, sparse_tail=budget)
    pos = lab - j_lo
    off = np.ones(st.split.size, bool)
    off[pos] = False
    assert not np.any(st.split[off]) and not np.any(st.stat_p[1:-1][off[:-1]]) and not np.any(st.stat_q[1:-1][off[:-1]])
    x = step_mod.x_of_remove_loss(lab * h, sigma, q, 1)
    l = lab * h
    with mp.workdps(40):
        s, qq = mp.mpf(sigma), mp.mpf(q)
        comps = [(1 - qq, 0), (qq, 1)] if q < 1.0 else [(mp.mpf(1), 1)]

        def cdf(cs, v):
            if v == -math.inf:
                return mp.mpf(0)
            return mp.fsum(w * mp.erfc((m - mp.mpf(float(v))) / s / mp.sqrt(2)) / 2 for w, m in cs)

        cp = [cdf(comps, v) for v in x]
        cq = [cdf([(mp.mpf(1), 0)], v) for v in x]
        # statistic: mass of the positions >= bucket j (cells above x_j, and the top tail)
        sp, sq = st.stat_p, st.stat_q
        for j in range(0, lab.size - 1, max(1, lab.size // 60)):
            k = 1 + int(pos[j])
            got_p = mp.fsum(mp.mpf(float(v)) for v in sp[k:])
            got_q = mp.fsum(mp.mpf(float(v)) for v in sq[k:])
            assert got_p <= (1 - cp[j]) * (1 + mp.mpf(1e-15))
            assert got_q >= (1 - cq[j]) * (1 - mp.mpf(1e-15))
        # split: the exact connect-the-dots of the same cells
        ep = [cp[0]] + [cp[j + 1] - cp[j] for j in range(len(cp) - 1)] + [1 - cp[-1]]
        eq_ = [cq[0]] + [cq[j + 1] - cq[j] for j in range(len(cq) - 1)] + [1 - cq[-1]]
        split = [mp.mpf(0)] * lab.size
        split[0] += ep[0]
        for j in range(lab.size - 1):
            eta = mp.mpf(step_mod.LOSS_POINT_ULPS * 2.0 ** -53 * (1.0 + max(abs(float(l[j])), abs(float(l[j + 1])))))
            w = mp.mpf(float(l[j + 1] - l[j]))
            pb, qb = ep[j + 1], eq_[j + 1]
            c = (pb - mp.exp(mp.mpf(float(l[j])) - eta) * qb) / (1 - mp.exp(-w - 2 * eta))
            c = min(max(c, mp.mpf(0)), pb)
            split[j] += pb - c
            split[j + 1] += c
        exact, got = [], []
        acc_e, acc_g = ep[-1], mp.mpf(st.inf_mass)
        for j in range(lab.size - 1, -1, -1):
            acc_e += split[j]
            acc_g += mp.mpf(float(st.split[pos[j]]))
            exact.append(acc_e)
            got.append(acc_g)
        for g, e in zip(got, exact):
            assert e <= g <= e * (1 + mp.mpf(1e-6)) + mp.mpf(1e-13)


@pytest.mark.parametrize("sigma,q,T,lk10", [(1.0, 0.03, 100_000, -20), (6.0, 0.3, 100_000, -30)])
def test_near_one_bracket_on_sparse_steps_overlaps_the_full_grids(sigma, q, T, lk10, monkeypatch):
    """The lower-tail tilt's bracket of 1 - gamma on the finest grid with sparse fine steps and with
    full-grid ones (the old code path): both certified, so they overlap, and the sparse one is at
    most 2 % wider (measured 0.03 % at sigma 6; on the finest grid at T 1e6, sigma 1, q 0.01:
    7.267e-10 against 7.262e-10)."""
    pld = dpsgd_pld([(sigma, q, T)], lower=True, eager=False)
    lk = lk10 * math.log(10)

    def bracket(sparse: float | None) -> tuple[float, float]:
        monkeypatch.setattr(lt_mod, "_SPARSE_TAIL", sparse)
        lt_mod.clear_step_cache()
        try:
            got = pld.beta_near_one(lk, ratio=16, coarse_div=4.0, block_per_r2=2.0)
        finally:
            lt_mod.clear_step_cache()
        assert got is not None
        return got

    lo_s, up_s = bracket(lt_mod._SPARSE_TAIL)  # noqa: SLF001
    lo_f, up_f = bracket(None)
    assert max(lo_s, lo_f) <= min(up_s, up_f)
    assert up_s - lo_s <= 1.02 * (up_f - lo_f) + 1e-13


@pytest.mark.parametrize("sigma,q,T,lk10", [(1.0, 0.03, 100_000, -20), (6.0, 0.3, 100_000, -30)])
def test_near_one_super_blocks_against_two_grids(sigma, q, T, lk10, monkeypatch):
    """The finest grids' third level (lowertail._top_blocks, here with r 8, h / 4: the blocks in
    super-blocks, the schedule composed on a 4x coarser grid) against the two-grid composition of
    the same blocks (the old code path): both certified, so the brackets of 1 - gamma overlap, and
    the three-level one is at most 15 % wider (its re-discretisation adds at most 5 % of the
    variance; measured at T 1e6 with 10 %: 7.59e-10 against 7.27e-10 at sigma 1, q 0.01 and
    7.65e-10 against 7.31e-10 at sigma 20, q 0.3)."""
    pld = dpsgd_pld([(sigma, q, T)], lower=True, eager=False)
    lk = lk10 * math.log(10)

    def bracket() -> tuple[float, float]:
        lt_mod.clear_step_cache()
        try:
            got = pld.beta_near_one(lk, ratio=8, coarse_div=4.0, block_per_r2=5.12, block_precision="extended")
        finally:
            lt_mod.clear_step_cache()
        assert got is not None
        return got

    lo3, up3 = bracket()
    monkeypatch.setattr(lt_mod, "_TOP_RATIO", 1)
    monkeypatch.setattr(lt_mod, "_top_blocks", lambda parts, *_: parts)
    lo2, up2 = bracket()
    assert max(lo3, lo2) <= min(up3, up2)
    assert up3 - lo3 <= 1.15 * (up2 - lo2) + 1e-13
