"""The tilted power's cheaper evaluations (rerokit.bounds.pld.tilt) against the paths they replace and
mpmath: the four-term log-sum of the upper end (was a stacked logsumexp_rows), the lower end's
single P-sum (was one entry of the full suffix sums), and the statistic skipped where the max
test's closed form is a lower end close enough (against the exact power of two steps)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import tilt
from rerokit.bounds.pld.logsum import suffix_logsumexp
from rerokit.bounds.pld.normal import logsumexp_rows
from rerokit.bounds.pld.tilt import _logsumexp4

sys.path.insert(0, str(Path(__file__).parent))
from _mp_reference import mp_two_steps  # noqa: E402 - the exact T = 2 power

builder = sys.modules["rerokit.bounds.pld.builder"]  # (loaded by rerokit.bounds.dpsgd)


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


@pytest.mark.parametrize("l", [3.0, 5.0])
def test_the_tilt_skips_its_statistic_where_the_max_test_is_enough(l: float, monkeypatch) -> None:
    """SchedulePLD._tail_power_from: where the max test's power (pld.maxtest, closed form) is within
    builder._MAX_TEST_ENOUGH of the tilt's upper end, the statistic's two compositions are not run
    and the lower end is the max test's. Two steps of sigma 1, q 0.01 at the levels of the tests
    S > 3 and S > 5 (8.0e-16 and 5.7e-24): the bracket contains the exact power (mpmath, 30
    digits), one composition runs instead of three, and the upper end is the full tilt's."""
    log_level, log_power = mp_two_steps(0.01, l)
    composed: list[int] = []
    real = tilt.compose

    def counting(*args, **kwargs):
        composed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(tilt, "compose", counting)
    pld = dpsgd_pld([(1.0, 0.01, 2)])
    lo, up = pld.tail_power(log_level)
    assert len(composed) == 1
    assert lo == pld._max_test_log(log_level)  # noqa: SLF001
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert up - lo <= builder._MAX_TEST_ENOUGH  # measured 8.5e-4 and 1.5e-3 (in log)
    composed.clear()
    monkeypatch.setattr(builder, "_MAX_TEST_ENOUGH", -math.inf)  # the rule off: the full tilt
    lo_f, up_f = dpsgd_pld([(1.0, 0.01, 2)]).tail_power(log_level)
    assert len(composed) == 3
    assert up_f == up
    assert lo <= lo_f <= log_power + 1e-9  # the statistic's lower end, with the max test's
