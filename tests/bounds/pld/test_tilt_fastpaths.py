"""The tilted power's cheaper evaluations (rerokit.bounds.pld.tilt) against the paths they replace and
mpmath: the four-term log-sum of the upper end (was a stacked logsumexp_rows) and the lower end's
single P-sum (was one entry of the full suffix sums)."""

from __future__ import annotations

import mpmath as mp
import numpy as np

from rerokit.bounds.pld.logsum import suffix_logsumexp
from rerokit.bounds.pld.normal import logsumexp_rows
from rerokit.bounds.pld.tilt import _logsumexp4


def test_logsumexp4_matches_stacked_rows_and_mpmath():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = 400
        cols = [rng.uniform(-800.0, 10.0, n) for _ in range(3)]
        for c in cols:
            c[rng.random(n) < 0.1] = -np.inf
        d = -np.inf if trial % 2 else float(rng.uniform(-800.0, 10.0))
        got = _logsumexp4(cols[0], cols[1], cols[2], d)
        # the old path: bit-identical
        ref = logsumexp_rows(np.vstack(cols + [np.full(n, d)]).T)
        assert np.array_equal(got, ref)
        # never below the exact value (to rounding), and close to it
        for k in range(0, n, 37):
            terms = [float(c[k]) for c in cols] + [d]
            with mp.workdps(40):
                ex = mp.log(sum(mp.exp(mp.mpf(x)) for x in terms if np.isfinite(x))) if any(
                    np.isfinite(terms)) else -mp.inf
            if ex == -mp.inf:
                continue
            assert got[k] >= float(ex) - 1e-13 * (1.0 + abs(float(ex)))
            assert got[k] <= float(ex) + 1e-13 * (1.0 + abs(float(ex)))


def test_single_suffix_sum_equals_full_suffix_entry():
    rng = np.random.default_rng(4)
    for linear in (True, False):
        a = rng.uniform(-120.0, -5.0, 5000) if linear else rng.uniform(-760.0, -5.0, 5000)
        a[rng.random(a.size) < 0.05] = -np.inf
        s, err = suffix_logsumexp(a)
        for j in (0, 1, 17, 2500, 4998, 4999):
            s1, e1 = suffix_logsumexp(a[j:])
            assert s1[0] == s[j] and e1[0] == err[j]
        # and the entry is within its bound of the exact sum
        j = 2500
        with mp.workdps(50):
            ex = mp.log(sum(mp.exp(mp.mpf(float(x))) for x in a[j:] if np.isfinite(x)))
        assert abs(float(ex) - s[j]) <= err[j] + 1e-300
