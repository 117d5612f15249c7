"""Composition of discrete PLDs by FFT, with a Chernoff window and a proven round-off bound.

``compose(parts)`` computes the convolution prod_i p_i^{*T_i} of non-negative pmfs on integer labels
(the composed PLD, or the distribution of a composed bucket statistic), restricted to a window
[A, B] outside of which the composed mass is below tau on each side (Chernoff bounds from the
pmfs' moment generating functions), by one circular FFT: the mass outside the window wraps around
and lands inside it, so each computed entry is >= the exact one up to round-off.

Round-off (proven, a priori for the transforms, carried through the powers exactly). For the
Cooley-Tukey FFT in floating point with unit roundoff u and twiddle factors accurate to mu,
||fl(FFT x) - FFT x||_2 <= c_n ||FFT x||_2 with c_n = log2(n) eta / (1 - log2(n) eta),
eta = mu + gamma_4 (sqrt 2 + mu), gamma_4 = 4u / (1 - 4u) (Higham 2002, "Accuracy and Stability
of Numerical Algorithms", 2nd ed., Thm 24.2). We take mu = u and, because pocketfft (numpy's FFT)
mixes radix 2, 3 and 4 butterflies, twice that constant with log2(n) rounded up plus 2
(:func:`fft_error_constant`). The powers z^T are computed by binary powering, a product of T
factors, so their relative error is at most (1 + sqrt(5) u)^(T-1) - 1 (complex multiplication:
Brent, Percival & Zimmermann 2007, "Error bounds on complex floating-point multiplication"). An
error e in the spectrum of one pmf enters the T-th power as at most T e a^(T-1) with a an upper
bound on |X| and |X_hat| (mean value theorem); all these are evaluated per frequency in a
rounded-up way and summed in the 2-norm, and Parseval turns the spectral error into the 2-norm
of the error of the composed pmf. The bound returned, ``roundoff``, is on sum_i |computed_i -
exact_i| over the window (Cauchy-Schwarz: <= sqrt(n) times the 2-norm), so every bracket that
adds or subtracts it is certified without estimating anything from the output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.normal import logsumexp_rows

__all__ = ["Composed", "WindowTooWide", "compose", "chernoff_window", "fft_size", "fft_error_constant",
           "compose_inf_mass", "MAX_FFT"]

MAX_FFT = 1 << 24  # composed window size
_U = float(np.finfo(float).eps) / 2.0  # unit roundoff of double
_U_LD = float(np.finfo(np.longdouble).eps) / 2.0  # unit roundoff of long double (the FFT's arithmetic)


class WindowTooWide(Exception):
    """The composed window would exceed :data:`MAX_FFT` points (callers coarsen the grid)."""


@dataclass(frozen=True)
class Composed:
    """A composed pmf on labels offset..offset+len-1 with its proven errors.

    Attributes:
      offset: label of pmf[0].
      pmf: the computed masses (clipped at 0).
      tail: bound on the exact mass outside the window (both sides together).
      roundoff: bound on sum_i |pmf_i - exact_i| over the window (floating-point error).
      entry_roundoff: bound on max_i |pmf_i - exact_i|.
    """

    offset: int
    pmf: np.ndarray
    tail: float
    roundoff: float
    entry_roundoff: float


def fft_size(n: int) -> int:
    """Smallest 2^k or 3 * 2^k >= n (both fast in pocketfft), at least 16."""
    m = 1 << max(4, (n - 1).bit_length())
    if 3 * (m >> 2) >= n:
        return 3 * (m >> 2)
    return m


def fft_error_constant(n: int, unit_roundoff: float = _U_LD) -> float:
    """eps_F(n): componentwise bound |fl(DFT x)_k - (DFT x)_k| <= eps_F(n) sum_j |x_j| of an
    n-point FFT in a precision with unit roundoff ``unit_roundoff`` (module docstring).

    Args:
      n: transform size.
      unit_roundoff: u of the arithmetic (default: numpy's long double).

    Returns:
      eps_F(n) = 2 ((1 + gamma_8)^L - 1), L = ceil(log2 n) + 1 passes, gamma_8 = 8u / (1 - 8u).
    """
    g8 = 8.0 * unit_roundoff / (1.0 - 8.0 * unit_roundoff)
    passes = math.ceil(math.log2(max(n, 2))) + 1
    return 2.0 * math.expm1(passes * math.log1p(g8))


def _moment_terms(labels: np.ndarray, pmf: np.ndarray, lam: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logp = np.log(pmf)
    return logsumexp_rows(logp[None, :] + lam[:, None] * labels[None, :])


def chernoff_window(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float) -> tuple[int, int]:
    """Chernoff window [A, B] of the composed labels with P(S > B), P(S < A) <= tau each.

    For a (sub-)probability pmf p and lam > 0: P(S >= B) <= e^{-lam B} prod_i M_i(lam)^{T_i},
    M_i(lam) = sum_j p_ij e^{lam j}; every lam gives a valid window. lam is chosen on a geometric
    grid around the Gaussian optimum sqrt(2 log(1/tau) / Var(S)) and on 2^-6..2^8 per unit of
    loss using each pmf's moment function on a 64-fold coarser copy (cheap, only to choose);
    the bound itself is then evaluated exactly at the chosen lam and its two neighbours.

    Args:
      parts: (label offset, pmf, count T_i) per distinct pmf.
      h: grid step (loss per label).
      log_tau: natural log of the tail mass allowed on each side.

    Returns:
      (A, B), clipped to the support of the composition.
    """
    var = 0.0
    lo_sup = hi_sup = 0
    coarse = []
    for off, pmf, count in parts:
        labels = off + np.arange(pmf.size, dtype=float)
        tot = float(pmf.sum())
        if tot > 0:
            m1 = float(np.sum(pmf * labels)) / tot
            var += count * float(np.sum(pmf * (labels - m1) ** 2)) / tot
        nz = np.nonzero(pmf)[0]
        lo_sup += count * (off + int(nz[0]))
        hi_sup += count * (off + int(nz[-1]))
        b = 64 if pmf.size > 4096 else 1
        nb = -(-pmf.size // b)
        pad = np.zeros(nb * b)
        pad[: pmf.size] = pmf
        coarse.append((off + b * np.arange(nb, dtype=float) + 0.5 * (b - 1), pad.reshape(nb, b).sum(axis=1), count))
    lam0 = math.sqrt(2.0 * abs(log_tau) / var) if var > 0 else 1.0
    lam = np.concatenate((lam0 * 2.0 ** np.arange(-4, 7), h * 2.0 ** np.arange(-6, 9)))
    lam = np.unique(lam)

    def bounds(lams: np.ndarray, parts_) -> tuple[np.ndarray, np.ndarray]:
        up = np.zeros(lams.size)
        dn = np.zeros(lams.size)
        for labels, p, count in parts_:
            up += count * _moment_terms(labels, p, lams)
            dn += count * _moment_terms(labels, p, -lams)
        return np.ceil((up - log_tau) / lams), np.floor((log_tau - dn) / lams)

    cb, ca = bounds(lam, coarse)
    iu, ia = int(np.argmin(cb)), int(np.argmax(ca))
    pick_u = lam[max(0, iu - 1): iu + 2]
    pick_a = lam[max(0, ia - 1): ia + 2]
    fine = [(off + np.arange(pmf.size, dtype=float), pmf, count) for off, pmf, count in parts]
    hi, lo = np.min(bounds(pick_u, fine)[0]), np.max(bounds(pick_a, fine)[1])
    if not (np.isfinite(hi) and np.isfinite(lo)):  # moments overflowed (e.g. q 1e-320 at a tiny sigma)
        raise WindowTooWide("the Chernoff window of this privacy-loss distribution is not finite")
    B, A = int(hi), int(lo)
    return max(A, lo_sup), min(B, hi_sup)


def _cmul_power(z: np.ndarray, T: int) -> np.ndarray:
    """z^T by binary powering (a product of T factors: relative error <= (1 + sqrt5 u)^(T-1) - 1)."""
    result = None
    base = z
    while T:
        if T & 1:
            result = base.copy() if result is None else result * base
        T >>= 1
        if T:
            base = base * base
    return result


def compose(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float,
            window: tuple[int, int] | None = None) -> Composed:
    """T_i-fold convolution of each pmf, all convolved, restricted to a Chernoff window.

    Computed in long double (numpy's pocketfft supports it), with the proven round-off bound of
    the module docstring.

    Args:
      parts: (label offset, non-negative pmf, count T_i >= 1) per distinct pmf.
      h: grid step (only for the window).
      log_tau: natural log of the tail mass allowed outside the window on each side.
      window: (A, B) to use instead of :func:`chernoff_window`.

    Returns:
      The :class:`Composed` pmf with its tail and proven round-off bounds.

    Raises:
      WindowTooWide: if the window exceeds :data:`MAX_FFT` points (or lost double precision).
    """
    A, B = window if window is not None else chernoff_window(parts, h, log_tau)
    n = B - A + 1
    if n > MAX_FFT or n < 1:
        raise WindowTooWide(f"the composed privacy-loss window needs {n} points (max {MAX_FFT})")
    nfft = fft_size(n)
    u = _U_LD
    eps_f = fft_error_constant(nfft, u)
    spec = None
    err = np.zeros(nfft // 2 + 1)  # bound on |computed spectrum - exact spectrum| per frequency
    mag = np.ones(nfft // 2 + 1)  # upper bound on |exact| and |computed| spectrum per frequency
    off_tot = 0
    for off, pmf, count in parts:
        x = np.asarray(pmf, dtype=np.longdouble)
        if x.size <= nfft:
            folded = np.zeros(nfft, dtype=np.longdouble)
            folded[: x.size] = x
            fold_rel = 0.0
        else:
            pad = np.zeros(-(-x.size // nfft) * nfft, dtype=np.longdouble)
            pad[: x.size] = x
            folded = pad.reshape(-1, nfft).sum(axis=0)
            fold_rel = (pad.size // nfft) * u  # each folded entry: a sum of that many masses
        X = np.fft.rfft(folded)
        # componentwise: |X_hat_k - X_k| <= eps_F sum_j x_j (+ folding's own rounding)
        e = (eps_f + 1.01 * fold_rel) * float(np.sum(folded)) * (1.0 + 1e-12) + 1e-300
        a = np.abs(X).astype(float) * (1.0 + 1e-15) + e  # >= |X_k| and >= |X_hat_k|
        with np.errstate(under="ignore", over="ignore"):
            a_pow1 = np.power(a, count - 1) * (1.0 + 1e-14)
            rho = math.expm1((count - 1) * math.log1p(math.sqrt(5.0) * u)) * (1.0 + 1e-6)
            d = count * e * a_pow1 + rho * a_pow1 * a  # |Y_hat_k - Y_k| for this part
            a_pow = a_pow1 * a * (1.0 + rho)
            # product rule: |Y1Y2 - Y1'Y2'| <= |Y1 - Y1'| M2 + M1 |Y2 - Y2'| (+ the product's rounding)
            # frequencies whose power is negligible (bound < 1e-30) are set to 0: error |Y_k| <= a^T
            active = a_pow * mag > 1e-30
            d = np.where(active, d, a_pow)
            err = err * a_pow + mag * d + (0.0 if spec is None else 3.0 * u * mag * a_pow)
            mag = mag * a_pow
            pw = np.zeros(X.size, dtype=X.dtype)
            pw[active] = _cmul_power(X[active], count)
            spec = pw if spec is None else spec * pw
        off_tot += count * off
    circ = np.fft.irfft(spec, nfft)
    # full (Hermitian) spectrum sums: frequencies 1..nfft/2-1 appear twice
    w2 = np.full(err.size, 2.0)
    w2[0] = 1.0
    if nfft % 2 == 0:
        w2[-1] = 1.0
    d1 = float(np.sum(w2 * (err + 1e-300)))
    y1 = float(np.sum(w2 * np.abs(spec).astype(float)))
    # inverse: |computed_l - exact_l| <= (1/n) (sum_k |D_k| + eps_F sum_k |Y_hat_k|) (+ the 1/n scaling)
    entry = (d1 + eps_f * y1) / nfft * (1.0 + 4.0 * u) * (1.0 + 1e-12)
    window_vals = np.roll(circ, -((A - off_tot) % nfft))[:n]
    out = np.maximum(window_vals.astype(float), 0.0)
    # rounding to double: half an ulp of each entry
    entry64 = entry + _U * (float(np.max(out)) if out.size else 0.0) + 1e-300
    roundoff = min(2.0, n * entry + _U * float(np.sum(out)) * 1.01 + n * 1e-300)
    return Composed(A, out, 2.0 * math.exp(log_tau), roundoff, min(entry64, 2.0))


def compose_inf_mass(parts: Sequence[tuple[float, int]]) -> float:
    """Composed +infinity mass 1 - prod (1 - p_inf_i)^{T_i}.

    Args:
      parts: (infinity mass of one step, count T_i).

    Returns:
      The composed infinity mass.
    """
    s = sum(T * math.log1p(-min(p, 1.0 - 1e-300)) for p, T in parts)
    return -math.expm1(s)
