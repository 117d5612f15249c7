"""The proven componentwise round-off constant of numpy's long double rfft/irfft (pocketfft).

Reference: the exact DFT of the (exactly representable) long double inputs, in mpmath at 40 digits,
independent of the code under test; inputs random, positive (pmf-like), and adversarial (constant,
a single spike, alternating, a pure tone, masses over 600 orders of magnitude).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.compose import fft_error_constant, fft_factors, fft_size

U_LD = float(np.finfo(np.longdouble).eps) / 2.0
SIZES = [16, 24, 48, 64, 96, 128, 192]


def _mp(v: np.longdouble) -> mp.mpf:
    return mp.mpf(repr(v)) if not isinstance(v, float) else mp.mpf(v)


def _to_mp(x: np.ndarray) -> list:
    # long double -> exact mpf through its (exact) mantissa and exponent
    out = []
    for v in x:
        m, e = np.frexp(v)
        out.append(mp.ldexp(mp.mpf(int(np.ldexp(m, 64))), int(e) - 64))
    return out


def _inputs(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    j = np.arange(n)
    return [
        rng.random(n),
        rng.standard_normal(n),
        np.ones(n),
        (j == 1).astype(float),
        (-1.0) ** j,
        np.cos(2 * np.pi * 3 * j / n) + 1.0,
        10.0 ** (-rng.integers(0, 300, n)) * rng.random(n),
        rng.exponential(size=n) ** 8,
    ]


def _observed(n: int, rng: np.random.Generator, dtype=np.longdouble) -> tuple[float, float]:
    """max over inputs of (forward, inverse) errors relative to sum |input|, transforms in ``dtype``."""
    worst_f = worst_b = 0.0
    with mp.workdps(40):
        c = [mp.cos(2 * mp.pi * k / n) for k in range(n)]
        s = [mp.sin(2 * mp.pi * k / n) for k in range(n)]
        for x in _inputs(n, rng):
            xl = np.asarray(x, dtype=dtype)
            X = np.fft.rfft(xl)
            xm = _to_mp(xl)
            mass = mp.fsum(abs(v) for v in xm)
            for k in range(n // 2 + 1):
                re = mp.fsum(xm[t] * c[(k * t) % n] for t in range(n))
                im = -mp.fsum(xm[t] * s[(k * t) % n] for t in range(n))
                er = mp.sqrt((_to_mp([X[k].real])[0] - re) ** 2 + (_to_mp([X[k].imag])[0] - im) ** 2)
                worst_f = max(worst_f, float(er / mass))
            # inverse: a Hermitian spectrum exactly representable in long double
            Y = X.copy()
            Y[0] = Y[0].real
            if n % 2 == 0:
                Y[-1] = Y[-1].real
            y = np.fft.irfft(Y, n) * dtype(n)  # undo the 1/n (exact for n = 2^k; else +u per entry)
            yr = _to_mp(Y.real)
            yi = _to_mp(Y.imag)
            w = [1] + [2] * (n // 2 - 1) + [1]
            full = mp.fsum(wk * mp.sqrt(a * a + b * b) for wk, a, b in zip(w, yr, yi))
            for t in range(n):
                ex = yr[0] + (yr[-1] * (-1) ** t) + 2 * mp.fsum(
                    yr[k] * c[(k * t) % n] - yi[k] * s[(k * t) % n] for k in range(1, n // 2))
                got = _to_mp([y[t]])[0]
                worst_b = max(worst_b, float(abs(got - ex) / full))
    return worst_f, worst_b


@pytest.mark.parametrize("n", SIZES)
def test_constant_exceeds_every_observed_error(n):
    rng = np.random.default_rng(n)
    f, b = _observed(n, rng)
    eps = fft_error_constant(n)
    # the inverse's check multiplies by n after irfft's 1/n: two more roundings when n is not 2^k
    assert f <= eps
    assert b <= eps + 4 * U_LD * (n & (n - 1) != 0)
    # measured worst/bound (n 16..384): forward 0.03-0.07, inverse 0.01-0.03 (the bound counts every rounding
    # at its worst and the twiddles at 2 ulps of libm)
    assert f > 0 and b > 0


def test_factorisation_and_sizes():
    assert fft_factors(16) == [4, 4]
    assert fft_factors(24) == [4, 2, 3]
    assert fft_factors(3 * 2**21) == [4] * 10 + [2, 3]
    for m in (1, 17, 100, 1000, 4097, 1 << 20, 3 * (1 << 20) + 1, 1 << 24):
        k = fft_size(m)
        assert k >= m and set(fft_factors(k)) <= {2, 3, 4}
    with pytest.raises(ValueError):
        fft_error_constant(80)  # radix 5: not covered
    with pytest.raises(ValueError):
        fft_error_constant(7 * 16)


def test_against_the_former_assumed_constant():
    """The former constant, 2 ((1 + gamma_8)^(ceil log2 n + 1) - 1), was an assumption (twice Higham's
    normwise radix-2 constant); the proven one is smaller (0.45-0.65 of it): a radix-4 pass has
    one twiddle product for two levels, and the real passes' multiplications by +-i, 2 and 1/2 are
    exact. Both are far above the observed errors (previous test)."""
    for n in (16, 24, 64, 96, 1 << 12, 3 << 12, 1 << 20, 1 << 24):
        g8 = 8 * U_LD / (1 - 8 * U_LD)
        old = 2 * math.expm1((math.ceil(math.log2(n)) + 1) * math.log1p(g8))
        new = fft_error_constant(n)
        assert 0.4 * old <= new <= 0.7 * old
        # at least one twiddle product (sqrt2 gamma_2) and one addition per radix-2 level
        assert new >= math.log2(n) / 2 * (2 * math.sqrt(2) + 2) * U_LD


def test_libm_long_double_sin_cos_within_two_ulps():
    """The assumption behind the twiddle bound: long double sin/cos on [0, pi/4] within 2 ulps
    (numpy's longdouble sin/cos call the same C library functions as pocketfft's std::sin/cos)."""
    rng = np.random.default_rng(7)
    th = np.concatenate((np.asarray(rng.random(400), dtype=np.longdouble) * np.longdouble(math.pi / 4),
                         np.longdouble(math.pi / 4) * np.arange(1, 50, dtype=np.longdouble) / 50))
    with mp.workdps(40):
        for t in th:
            tm = _to_mp([t])[0]
            for f, g in ((np.cos, mp.cos), (np.sin, mp.sin)):
                v = f(t)
                ulp = float(np.spacing(abs(v)))
                assert abs(float(_to_mp([v])[0] - g(tm))) <= 2 * ulp


U_D = float(np.finfo(float).eps) / 2.0


@pytest.mark.parametrize("n", [16, 48, 96, 128])
def test_constant_in_double_precision_exceeds_every_observed_error(n):
    """The PLD engine's default transforms are double precision: pocketfft runs the same passes
    with T = double (its twiddles from the same sincos_2pibyn in double, libm's sin/cos), so the
    derivation holds at u = 2^-53; exact DFTs in mpmath against numpy's float64 rfft/irfft."""
    rng = np.random.default_rng(100 + n)
    f, b = _observed(n, rng, dtype=np.float64)
    eps = fft_error_constant(n, U_D)
    assert 0 < f <= eps
    assert 0 < b <= eps + 4 * U_D * (n & (n - 1) != 0)


def test_libm_double_sin_cos_within_two_ulps():
    """The twiddle assumption at double precision: libm's sin/cos on [0, pi/4] within 2 ulps."""
    rng = np.random.default_rng(8)
    th = np.concatenate((rng.random(400) * (math.pi / 4), (math.pi / 4) * np.arange(1, 50) / 50))
    with mp.workdps(40):
        for t in th:
            for f, g in ((math.cos, mp.cos), (math.sin, mp.sin)):
                v = f(float(t))
                assert abs(float(mp.mpf(v) - g(mp.mpf(float(t))))) <= 2 * math.ulp(v)


@pytest.mark.parametrize("n", [3 * 1024, 4096])
def test_constant_at_larger_sizes_on_sampled_frequencies(n):
    """Six passes (4^5 x 3, 4^6): forward errors at 12 sampled frequencies, exact DFT in mpmath."""
    rng = np.random.default_rng(n)
    eps = fft_error_constant(n)
    ks = np.unique(np.concatenate(([0, 1, n // 4, n // 3, n // 2], rng.integers(0, n // 2 + 1, 7))))
    worst = 0.0
    with mp.workdps(30):
        c = [mp.cos(2 * mp.pi * k / n) for k in range(n)]
        s = [mp.sin(2 * mp.pi * k / n) for k in range(n)]
        for x in (rng.random(n), rng.standard_normal(n), rng.exponential(size=n) ** 8):
            xl = np.asarray(x, dtype=np.longdouble)
            X = np.fft.rfft(xl)
            xm = _to_mp(xl)
            mass = mp.fsum(abs(v) for v in xm)
            for k in ks:
                re = mp.fsum(xm[t] * c[(k * t) % n] for t in range(n))
                im = -mp.fsum(xm[t] * s[(k * t) % n] for t in range(n))
                er = mp.sqrt((_to_mp([X[k].real])[0] - re) ** 2 + (_to_mp([X[k].imag])[0] - im) ** 2)
                worst = max(worst, float(er / mass))
    assert 0 < worst <= eps  # measured 0.008 (3072) and 0.02 (4096) of the bound
