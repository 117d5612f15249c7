"""The split fractions by quadrature of the cell integrand (rerokit.bounds.pld.step._quadrature_split,
part of the opt-in component split) against the exact connect-the-dots fraction of each cell in
mpmath (50 digits), and its bound against the tail-based ones (component_split's other candidate)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld import LOG_TAU
from rerokit.bounds.pld import step as step_mod

sys.path.insert(0, str(Path(__file__).parent))
from test_step_split import bucket_inputs  # noqa: E402 - the buckets as step_from_tails has them


def _inputs(sigma: float, q: float, h: float):
    return bucket_inputs(sigma, q, h, LOG_TAU - math.log(1e6))


# the lower-tail tilt's fine grids (sigma 20, q 0.3: both of its grids), a tiny q, and coarse grids
@pytest.mark.parametrize("sigma,q,h", [(20.0, 0.3, 5.863e-6), (20.0, 0.3, 1.1726e-5), (1.0, 0.01, 1.024e-5),
                                       (4.0, 1e-4, 1e-6), (0.5, 1e-3, 2e-5), (1.0, 0.01, 1e-3), (0.3, 0.3, 1e-3)])
def test_quadrature_fraction_within_its_bound_of_the_exact_one(sigma, q, h):
    """At 60 buckets across the grid and 40 across l_j <= 0 the exact fraction (pb* - e^{l_j} qb*) / (1 - e^{-h}) of the
    cell between the computed points (mpmath, 50 digits) lies within dc of the computed c. On the
    fine grids (h <= 1e-4), at the buckets with l_j <= 0 (P's lower tail, where the near-1 threshold
    sits) whose cell is short against the density's scale (max(|x_j|, 1) Delta / sigma^2 <= 0.01;
    at small q the lowest cells, where L flattens, are not: there the other candidates serve), dc
    is finite and at most 1e-7 of the exact fraction plus the clip's allowance (the bucket's own
    error). component_split takes the smaller c + dc per bucket; at q >= 0.1 (where R ~ Q and the
    tails' argument rounding dominated the tail-based bound) the quadrature's, summed over those
    buckets, is at least 100x below the tail-based one's (step._tails_split; measured 283x and
    565x at sigma 20, q 0.3, where the loss-point term common to both now dominates; at small q
    the (1 - q) Q part already cancels in the tail-based one and the two are alike)."""
    l, x, pb, qb, local_p, local_q = _inputs(sigma, q, h)
    c, dc = step_mod._quadrature_split(l, h, q, pb, qb, local_p, local_q, sigma, x)  # noqa: SLF001
    r_tails = (step_mod.ndtr((1.0 - x) / sigma), step_mod.ndtr((x - 1.0) / sigma))
    with np.errstate(all="ignore"):
        c_t, dc_t = step_mod._tails_split(  # noqa: SLF001
            l, h, q, pb, qb, local_p, local_q, sigma, x, r_tails)
    assert np.all(dc > 0)
    checked = 0
    with mp.workdps(50):
        s, qq = mp.mpf(sigma), mp.mpf(q)
        d_mp = 1 - mp.exp(-mp.mpf(h))

        def cell(a: float, b: float, m: int) -> mp.mpf:  # N(m, sigma^2)((a, b]), from the smaller tails
            if a == -math.inf:
                return mp.erfc((m - mp.mpf(float(b))) / s / mp.sqrt(2)) / 2
            za, zb = (mp.mpf(float(a)) - m) / s / mp.sqrt(2), (mp.mpf(float(b)) - m) / s / mp.sqrt(2)
            return mp.erfc(za) / 2 - mp.erfc(zb) / 2 if a >= m else mp.erfc(-zb) / 2 - mp.erfc(-za) / 2

        rel_checked = 0
        n_low = int(np.count_nonzero(l[:-1] <= 0.0))
        picks = np.concatenate((np.linspace(0, l.size - 2, 60), np.linspace(0, max(n_low - 1, 0), 40)))
        for j in np.unique(picks.astype(int)):
            if not math.isfinite(dc[j]):
                continue
            qb_mp = cell(x[j], x[j + 1], 0)
            pb_mp = (1 - qq) * qb_mp + qq * cell(x[j], x[j + 1], 1)
            exact = (pb_mp - mp.exp(mp.mpf(float(l[j]))) * qb_mp) / d_mp
            assert abs(mp.mpf(float(c[j])) - exact) <= mp.mpf(float(dc[j])), (j, float(l[j]))
            short = max(abs(x[j]), 1.0) * (x[j + 1] - x[j]) / sigma**2 <= 1e-2  # the cell short against the density's scale
            if h <= 1e-4 and l[j] <= 0.0 and exact > 0 and short:
                assert dc[j] <= 1e-7 * float(exact) + 1.001 * local_p[j], (j, float(l[j]), dc[j] / float(exact))
                rel_checked += 1
            checked += 1
    assert checked >= 40
    if h <= 1e-4:
        assert rel_checked >= (10 if q >= 0.1 else 0)
        with np.errstate(invalid="ignore"):
            short = np.maximum(np.abs(x[:-1]), 1.0) * np.diff(x) / sigma**2 <= 1e-2
        low = (l[:-1] <= 0.0) & (pb > 1e-300) & np.isfinite(x[:-1]) & short
        assert np.all(np.isfinite(dc[low]))
        c_both, dc_both = step_mod.component_split(l, h, q, pb, qb, local_p, local_q, sigma, x, r_tails)
        ok_t = np.isfinite(dc_t)
        assert np.all(c_both[ok_t] + dc_both[ok_t] <= c_t[ok_t] + dc_t[ok_t])
        assert np.all(c_both[low] + dc_both[low] <= c[low] + dc[low])
        if q >= 0.1:
            assert 100.0 * float(np.sum(dc[low])) <= float(np.sum(dc_t[low]))
