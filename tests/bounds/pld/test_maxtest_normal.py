"""The max test's scipy-free normal log CDF (rerokit.bounds.pld.maxtest.log_ndtr) and threshold
against mpmath (40 digits), and that the max test imports no scipy."""

from __future__ import annotations

import math
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.maxtest import log_max_test_power, log_ndtr, max_test_threshold


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


def test_power_unchanged_in_value_and_certified() -> None:
    """The power's lower bound is below the exact power at the same z (mpmath) by at most 1e-9 relative."""
    segs = [(1.0, 1e-4, 1000), (2.0, 0.01, 500)]
    for lk in (math.log(1e-6), math.log(1e-20), -300.0):
        got = float(log_max_test_power(segs, np.array([lk]))[0])
        z = mp.mpf(max_test_threshold(1500, lk))
        with mp.workdps(60):
            s = mp.mpf(0)
            for sigma, q, T in segs:
                b = (1 - mp.mpf(q)) * mp.ncdf(-z) + mp.mpf(q) * mp.ncdf(1 / mp.mpf(sigma) - z)
                s += T * mp.log1p(-b)
            ex = mp.log(-mp.expm1(s))
        assert got <= ex and got >= ex * (1 + 1e-9)


def test_no_scipy_import() -> None:
    code = ("import sys, numpy as np; from rerokit.bounds.pld.maxtest import log_max_test_power; "
            "log_max_test_power([(2.0, 1e-3, 10000)], np.array([-13.8, -700.0])); print('scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
