"""The engine's scipy-free normal log CDF and inverses (rerokit.bounds.pld.normal: log_ndtr,
normal_isf_log, normal_ppf_log, each on its proven side) and the max test's threshold and power
against mpmath (40-350 digits), and that the max test imports no scipy."""

from __future__ import annotations

import math
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld import maxtest
from rerokit.bounds.pld.maxtest import log_max_test_power, max_test_threshold
from rerokit.bounds.pld.normal import log_ndtr, normal_isf_log, normal_ppf_log


def _exact(x: float) -> mp.mpf:
    with mp.workdps(40):
        return mp.log(mp.ncdf(mp.mpf(x)))


def test_log_ndtr_against_mpmath() -> None:
    """Relative error <= 1e-15 in the lower tail (both branches: erfc above -30, the series below),
    absolute <= 1e-16 above 0; the max test assumes 1e-13 relative."""
    xs = np.concatenate((np.linspace(-400.0, 0.0, 1601), np.linspace(-31.0, -29.0, 201), [-1e4, -1e7, -30.0]))
    for x in xs:
        ex = _exact(float(x))
        assert abs(mp.mpf(log_ndtr(float(x))) - ex) <= 1e-15 * abs(ex), x
    for x in np.linspace(1e-3, 38.0, 400):
        assert abs(mp.mpf(log_ndtr(float(x))) - _exact(float(x))) <= 1e-16, x
    assert log_ndtr(-math.inf) == -math.inf and log_ndtr(math.inf) == 0.0


@pytest.mark.parametrize("n, lk", [(1, math.log(1e-3)), (1000, math.log(1e-6)), (10**5, -100.0), (7, -2000.0)])
def test_threshold_confirms_the_level_and_is_tight(n: int, lk: float) -> None:
    """1 - Phi(z)^n <= kappa at the returned z (mpmath), and z is within 1e-9 of the exact root."""
    z = max_test_threshold(n, lk)
    with mp.workdps(60):
        level = -mp.expm1(n * mp.log(mp.ncdf(mp.mpf(z)))) if lk > -700 else n * mp.ncdf(-mp.mpf(z))
        assert mp.log(level) <= lk
        target = mp.log(-mp.expm1(mp.log1p(-mp.exp(lk)) / n)) if lk > -700 else lk - mp.log(n)
        root = mp.findroot(lambda t: mp.log(mp.ncdf(-t)) - target, z)
    assert 0.0 <= z - float(root) <= 1e-9 * (1.0 + z)


def _mp_test(segs, zs) -> tuple:
    """(log level, log power) of the test "x_t > sigma_i z_i for some step" (mpmath, 60 digits)."""
    with mp.workdps(60):
        s_q = s_p = mp.mpf(0)
        for sigma, q, T in segs:
            z = mp.mpf(zs[(sigma, q)])
            b = (1 - mp.mpf(q)) * mp.ncdf(-z) + mp.mpf(q) * mp.ncdf(1 / mp.mpf(sigma) - z)
            s_q += T * mp.log(mp.ncdf(z))
            s_p += T * mp.log1p(-b)
        return mp.log(-mp.expm1(s_q)), mp.log(-mp.expm1(s_p))


def test_power_is_at_least_the_common_threshold_tests_and_certified() -> None:
    """The power's lower bound is at least the common-z test's exact power (mpmath) less 1e-9
    relative, and at most the exact power of the better of the two explicit tests (the common z,
    the loss-matched z_i, whose exact level is at most kappa): every value returned is the power of a
    test at level kappa."""
    segs = [(1.0, 1e-4, 1000), (2.0, 0.01, 500)]
    for lk in (math.log(1e-6), math.log(1e-20), -300.0):
        got = float(log_max_test_power(segs, np.array([lk]))[0])
        z = max_test_threshold(1500, lk)
        _, ex_common = _mp_test(segs, {(s, q): z for s, q, _ in segs})
        zs = maxtest._matched_thresholds(segs, 1500, lk)
        level, ex_matched = _mp_test(segs, zs)
        assert level <= lk
        assert got >= ex_common * (1 + 1e-9)
        assert got <= max(ex_common, ex_matched)


def test_loss_matched_thresholds_beat_one_z_for_distinct_steps() -> None:
    """Two segments at q ~1e-7 (sigma 0.6 / 0.9, T 3e4 each, kappa 1e-20): one z rejects on the
    larger sigma's bulk too early; thresholds at a common per-step loss give e^-45.0561 against
    e^-45.3751 (measured), below the one-jump upper end e^-45.0558 (rerokit.bounds.pld.onejump), and
    their exact level (mpmath) is at most kappa. One distinct step: the same test, not recomputed."""
    segs = [(0.6, 2e-7, 30000), (0.9, 5e-7, 30000)]
    lk = math.log(1e-20)
    got = float(log_max_test_power(segs, np.array([lk]))[0])
    level, ex = _mp_test(segs, maxtest._matched_thresholds(segs, 60000, lk))
    assert level <= lk and got <= ex
    z = max_test_threshold(60000, lk)
    _, ex_common = _mp_test(segs, {(s, q): z for s, q, _ in segs})
    assert got > ex_common + 0.3
    assert maxtest._matched_thresholds([(0.6, 2e-7, 30000)], 30000, lk) is None


def test_no_scipy_import() -> None:
    code = ("import sys, numpy as np; from rerokit.bounds.pld.maxtest import log_max_test_power; "
            "log_max_test_power([(2.0, 1e-3, 10000)], np.array([-13.8, -700.0, -1089.1])); print('scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("lt", [-0.7, -1.0, -10.0, -39.1, -45.0, -300.0, -700.0, -720.0, -1089.1, -5e4])
def test_normal_isf_log_sides_against_mpmath(lt: float) -> None:
    """The upper value has Phi(-z) <= tau, the lower Phi(-z) >= tau (mpmath, 60 digits), each at a
    level within 3e-13 of |log tau| and 1e-12 of the exact quantile, over the full range (step
    truncation down to the max test's kappa = 1e-473, log level -1089, and below)."""
    up, lo = normal_isf_log(lt), normal_isf_log(lt, upper=False)
    with mp.workdps(60):
        l_up, l_lo = mp.log(mp.ncdf(-mp.mpf(up))), mp.log(mp.ncdf(-mp.mpf(lo)))
        assert lt * (1 + 3e-13) <= l_up <= lt <= l_lo <= lt * (1 - 3e-13)
        root = mp.findroot(lambda t: mp.log(mp.ncdf(-t)) - lt, up)
    assert lo <= float(root) <= up and up - lo <= 1e-12 * (1.0 + up)


def test_normal_isf_log_edges() -> None:
    """tau >= 1/2: 0 (upper); log tau = -inf: +inf (both sides); NaN and a lower value above 1/2: ValueError."""
    assert normal_isf_log(math.log(0.5)) == 0.0 and normal_isf_log(0.0) == 0.0
    assert normal_isf_log(-math.inf) == math.inf == normal_isf_log(-math.inf, upper=False)
    with pytest.raises(ValueError, match="log_tau"):
        normal_isf_log(math.nan)
    with pytest.raises(ValueError, match="log_tau"):
        normal_isf_log(-0.5, upper=False)


@pytest.mark.parametrize("lp", [-5e4, -1089.1, -100.0, -3.0, math.log(0.5) - 1e-9, math.log(0.5), math.log(0.5) + 1e-13,
                                math.log(0.5) + 1e-9, -0.1, -1e-5, -1e-12, -1e-30, -1e-300])
def test_normal_ppf_log_sides_against_mpmath(lp: float) -> None:
    """Phi(upper) >= p >= Phi(lower) (mpmath, 350 digits: 1 - p down to 1e-300 is resolved), the
    two within 1e-12 (1 + |z|) of each other."""
    up, lo = normal_ppf_log(lp), normal_ppf_log(lp, upper=False)
    with mp.workdps(350):
        p = mp.exp(mp.mpf(lp))
        assert mp.ncdf(mp.mpf(lo)) <= p <= mp.ncdf(mp.mpf(up))
    assert lo <= up <= lo + 1e-12 * (1.0 + abs(up))
    assert normal_ppf_log(-math.inf) == -math.inf and normal_ppf_log(0.0) == math.inf
    with pytest.raises(ValueError, match="log_p"):
        normal_ppf_log(1e-9)
