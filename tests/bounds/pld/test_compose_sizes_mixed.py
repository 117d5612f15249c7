"""FFT sizes 9 * 2^k (two radix-3 passes) within the proven constant, against exact DFTs in mpmath;
and the "mixed" composition (long double forward transforms and powers, double inverse) against
exact binomial masses (mpmath, 60 digits), its proven round-off between that of extended precision and twice it."""

from __future__ import annotations

import math
import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.pld.compose import compose, fft_error_constant, fft_factors, fft_size

U = 2.0**-53
U_LD = float(np.finfo(np.longdouble).eps) / 2.0


def _exact_mp(x: np.ndarray) -> list:
    out = []
    for v in np.asarray(x, dtype=np.longdouble):
        m, e = np.frexp(v)
        out.append(mp.ldexp(mp.mpf(int(np.ldexp(m, 64))), int(e) - 64))
    return out


@pytest.mark.parametrize("n", [36, 72, 144, 288])
@pytest.mark.parametrize("dtype, u", [(np.float64, U), (np.longdouble, U_LD)])
def test_nine_times_power_of_two_within_the_constant(n, dtype, u):
    assert fft_factors(n).count(3) == 2
    rng = np.random.default_rng(n)
    eps = fft_error_constant(n, u)
    with mp.workdps(40):
        c = [mp.cos(2 * mp.pi * k / n) for k in range(n)]
        s = [mp.sin(2 * mp.pi * k / n) for k in range(n)]
        for x in (rng.random(n), rng.exponential(size=n) ** 8, (np.arange(n) == 5).astype(float)):
            xl = np.asarray(x, dtype=dtype)
            X = np.fft.rfft(xl)
            xm = _exact_mp(xl)
            mass = mp.fsum(xm)
            for k in range(n // 2 + 1):
                re = mp.fsum(xm[t] * c[(k * t) % n] for t in range(n))
                im = -mp.fsum(xm[t] * s[(k * t) % n] for t in range(n))
                got_re, got_im = _exact_mp([X[k].real])[0], _exact_mp([X[k].imag])[0]
                assert mp.sqrt((got_re - re) ** 2 + (got_im - im) ** 2) <= eps * mass


def test_sizes_pad_at_most_a_third():
    for m in list(range(1, 3000)) + [70_805, (1 << 24) - 1, 1 << 24]:
        k = fft_size(m)
        assert max(m, 16) <= k <= max(16, math.ceil(m * 4 / 3)) and set(fft_factors(k)) <= {2, 3, 4}
        assert fft_factors(k).count(3) <= 2


def _binomial_masses(T: int, p: float, ks: range) -> list:
    """Binomial(T, p) masses at ks in mpmath at 60 digits (relative error far below 1e-40)."""
    with mp.workdps(60):
        lp, lq, lt = mp.log(p), mp.log(1 - mp.mpf(p)), mp.loggamma(T + 1)
        return [mp.exp(lt - mp.loggamma(k + 1) - mp.loggamma(T - k + 1) + k * lp + (T - k) * lq) for k in ks]


@pytest.mark.parametrize("T, inverse_in_double", [(20_000, True), (40, False)])
def test_mixed_composition_within_its_bound(T, inverse_in_double):
    """Bernoulli(3/8) composed T times is Binomial(T, 3/8): every computed mass within the proven
    entry bound, the sum of errors within the l1 bound. Long schedules (narrow spectrum) take the
    double inverse (round-off above extended's, at most about twice it); short ones the long double one
    (the same bound as extended)."""
    pmf = np.array([5.0 / 8.0, 3.0 / 8.0])
    ext = compose([(0, pmf, T)], 1.0, math.log(1e-17), precision="extended")
    mix = compose([(0, pmf, T)], 1.0, math.log(1e-17), precision="mixed")
    assert (mix.offset, mix.pmf.size) == (ext.offset, ext.pmf.size)
    if inverse_in_double:
        assert ext.roundoff < mix.roundoff <= 2.1 * ext.roundoff
    else:
        assert mix.roundoff == ext.roundoff and np.array_equal(mix.pmf, ext.pmf)
    ks = range(mix.offset, mix.offset + mix.pmf.size)
    exact = _binomial_masses(T, 0.375, ks)
    with mp.workdps(60):
        diffs = [abs(mp.mpf(float(v)) - e) for v, e in zip(mix.pmf, exact)]
        assert max(diffs) <= mix.entry_roundoff and mp.fsum(diffs) <= mix.roundoff
        assert 1 - mp.fsum(exact) <= mix.tail  # the mass outside the window within its tail bound
