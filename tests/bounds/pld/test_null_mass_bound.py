"""DiscretePLD.log_null_mass_above's certified sides against the Q-masses of the stored atoms summed
in mpmath (50 digits)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld import schedule_pld
from rerokit.bounds.pld.discrete import DiscretePLD


@pytest.mark.parametrize("pld", [
    schedule_pld([(1.0, 0.01, 300)], add_direction=False).upper,
    DiscretePLD(0.5, -1500, np.exp(-np.linspace(0.0, 40.0, 2000)) / 40.0),  # Q-masses beyond e^690: running log-sum
    # tiny P-masses at losses near -600 (Q-masses near 1): the terms' own rounding (log p, the losses'
    # product, the difference; ~1e-13) dwarfs the log-sum's, and must be carried
    DiscretePLD(0.37, -1700, np.exp(-600.0 + np.linspace(0.0, 30.0, 500))),
])
def test_sides_bracket_the_exact_null_mass(pld):
    lf, p = pld.losses, pld.pmf
    eps = np.concatenate((lf[:: max(1, lf.size // 40)] + 0.25 * pld.h, [lf[-1] - 0.5 * pld.h, lf[0] - 1.0]))
    with mp.workdps(50):
        # the exact atoms: stored masses at losses (offset + i) h, not their rounded products
        l = [mp.mpf(pld.offset + i) * mp.mpf(pld.h) for i in range(p.size)]
        qm = [mp.mpf(float(pi)) * mp.exp(-li) for li, pi in zip(l, p)]
        for strict in (True, False):
            mid = pld.log_null_mass_above(eps, strict)
            lo = pld.log_null_mass_above(eps, strict, side=-1)
            hi = pld.log_null_mass_above(eps, strict, side=1)
            for e, a, b, c in zip(eps, lo, mid, hi):
                tot = mp.fsum(q for q, li in zip(qm, l) if (li > e if strict else li >= e))
                if tot == 0:
                    assert a == b == c == -math.inf
                    continue
                ex = mp.log(tot)
                assert a <= ex <= c and a <= b <= c
                assert c - a < 1e-9
    # the same sums through the power's bound: epsilon's Q-suffixes (rounded down) stay below the exact ones
    lq, err = pld.top_sums[2], pld.top_sums_error[0]
    with mp.workdps(50):
        acc = mp.mpf(0)
        for i in range(p.size - 1, -1, -1):
            acc += qm[i]
            k = p.size - 1 - i
            if acc > 0:
                assert lq[k] - err[k] <= mp.log(acc) <= lq[k] + err[k]


def test_side_checked():
    with pytest.raises(ValueError, match="side"):
        schedule_pld([(1.0, 0.01, 3)], add_direction=False).upper.log_null_mass_above(np.zeros(1), side=2)
