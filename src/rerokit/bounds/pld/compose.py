"""Composition of discrete PLDs by FFT, with a Chernoff window and a proven round-off bound.

``compose(parts)`` computes the convolution prod_i p_i^{*T_i} of non-negative pmfs on integer labels
(the composed PLD, or the distribution of a composed bucket statistic), restricted to a window
[A, B] outside of which the composed mass is below tau on each side (Chernoff bounds from the
pmfs' moment generating functions), by one circular FFT: the mass outside the window wraps around
and lands inside it, so each computed entry is >= the exact one up to round-off.

Round-off (proven, a priori for the transforms, carried through the powers exactly). numpy 2.x
computes ``rfft``/``irfft`` with pocketfft's ``rfftp`` (the FFTPACK real passes radf2/radf3/radf4 and
radb2/radb3/radb4 for the sizes 2^k, 3 * 2^k and 9 * 2^k that :func:`fft_size` returns), in long double. Each
pass forms unit-modulus combinations of partial DFTs over disjoint residue classes, so with
per-pass constants theta_r (twiddle accuracy, one complex multiplication, and the pass's additions
and constant products counted from the source) the error of every output is at most
(prod_passes (1 + theta_r) - 1) sum_j |x_j| (componentwise; the analysis of Higham 2002,
"Accuracy and Stability of Numerical Algorithms", 2nd ed., Sec. 3.6 and 24.1, done with the
modulus 'mass' of each partial DFT instead of the 2-norm; the derivation, what is proven and
what is assumed (libm's long double sin/cos within 2 ulps) is in :func:`fft_error_constant`;
about half the former assumed constant, 2 ((1 + gamma_8)^(log2 n + 2) - 1)). The powers z^T are computed by binary powering, a product of T
factors, so their relative error is at most (1 + sqrt(5) u)^(T-1) - 1 (complex multiplication:
Brent, Percival & Zimmermann 2007, "Error bounds on complex floating-point multiplication"). An
error e in the spectrum of one pmf enters the T-th power as at most T e a^(T-1) with a an upper
bound on |X| and |X_hat| (mean value theorem); all these are evaluated per frequency in a
rounded-up way and summed in the 2-norm, and Parseval turns the spectral error into the 2-norm
of the error of the composed pmf. The bound returned, ``roundoff``, is on sum_i |computed_i -
exact_i| over the window (Cauchy-Schwarz: <= sqrt(n) times the 2-norm), so every bracket that
adds or subtracts it is certified without estimating anything from the output.

Precision. The same analysis holds at any unit roundoff u (pocketfft's passes are templates on
the element type; for double its twiddles come from sincos_2pibyn<double>, libm's double sin/cos,
assumed within 2 ulps as the long double ones are, and measured so in tests/bounds/pld/test_fft_roundoff.py together with the observed double-precision transform errors); :func:`compose` runs in double (u = 2^-53,
the default: pocketfft's double transforms are about 5x faster than its long double ones) or in
numpy's long double (``precision="extended"``, u = 2^-64 on x86), with :func:`fft_error_constant`
at that u. The double bound is about 2^11 times the extended one (about T x 3e-14 in l1 for T steps),
negligible against the discretisation gap of a bracket except for gamma near 1, very long
schedules and small levels; :func:`rerokit.bounds.dpsgd.exact_power_many` then switches to
extended precision (:meth:`rerokit.bounds.pld.SchedulePLD.extended`). Frequencies whose bound
prod_i a_i^{T_i} on the composed spectrum falls below 1e-30 are set to zero and carry that bound
as their error (exactly what the bound above charges them), so the powers and the bookkeeping
run on the few frequencies that matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.batch import BATCH_MIN, moment_window_batched
from rerokit.bounds.pld.normal import logsumexp_rows

__all__ = ["Composed", "WindowTooWide", "compose", "chernoff_window", "chernoff_lower", "moment_support",
           "coarse_moment_copy", "fft_size", "fft_error_constant", "fft_factors",
           "PRECISIONS",
           "compose_inf_mass", "MAX_FFT", "weighted_roundoff", "moment_terms"]

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
      roundoff2: bound on (sum_i |pmf_i - exact_i|^2)^(1/2) over the window (the 2-norm of the
        same error; :func:`weighted_roundoff` turns it into bounds on geometrically weighted sums).
    """

    offset: int
    pmf: np.ndarray
    tail: float
    roundoff: float
    entry_roundoff: float
    roundoff2: float = math.inf


def fft_size(n: int) -> int:
    """Smallest 2^k, 3 * 2^k or 9 * 2^k >= n, at least 16: pocketfft's real transforms of these
    lengths run radix-4 and -2 passes and at most two radix-3 ones (:func:`fft_factors`; round-off
    proven by :func:`fft_error_constant`, at most about 5 % above that of the next 2^k), and the
    sizes are at most a third above n (2^k and 3 * 2^k alone: up to a half). More factors 3 would
    pad less but cost about twice the round-off per level of the transform each."""
    n = max(int(n), 16)
    return min(m << max(0, (-(-n // m) - 1).bit_length()) for m in (1, 3, 9))


def fft_factors(n: int) -> list[int]:
    """The radices of pocketfft's real transform of length n (``rfftp::factorize``): factors 4 while
    4 | n, then one 2 (if left), then odd factors; only n = 2^a 3^b is accepted here (radices 2, 3, 4,
    the passes whose round-off :func:`fft_error_constant` proves)."""
    m, out = int(n), []
    if m < 1:
        raise ValueError(f"FFT size must be >= 1, got {n}")
    while m % 4 == 0:
        out.append(4)
        m //= 4
    if m % 2 == 0:
        out.append(2)
        m //= 2
    while m % 3 == 0:
        out.append(3)
        m //= 3
    if m != 1:
        raise ValueError(f"FFT size {n} has a prime factor > 3: its pocketfft passes (radf5, radfg) are not covered")
    return out


_LIBM_ULPS = 2.0
"""Assumed accuracy of the C library's long double sin/cos on [0, pi/4] (measured <= 0.51 ulp on 6,000 points, glibc 2.36;
tests/bounds/pld/test_fft_roundoff.py checks numpy's longdouble sin/cos, which call the same functions)."""
_P3 = 1.3660254037844388  # |taur| + |taui| = 1/2 + sqrt(3)/2, rounded up: radix-3 path weight


def fft_error_constant(n: int, unit_roundoff: float = _U_LD) -> float:
    """eps_F(n): componentwise bound |fl(DFT x)_k - (DFT x)_k| <= eps_F(n) sum_j |x_j| for numpy's
    ``rfft`` of length n, and |fl(y)_l - y_l| <= eps_F(n) sum_k |Y_k| (all n frequencies) for the
    unnormalised inverse behind ``irfft``, in an arithmetic with unit roundoff u (module docstring).

    Derivation (pocketfft's ``rfftp``, the real FFTPACK passes; Higham 2002, Sec. 3.6 and 24.1):
    every stored number is +-Re or +-Im of a complex partial DFT v = sum_{j in S} w_j x_j, |w_j| = 1,
    over a residue class S; a pass of radix r forms y = sum_m c_m v_m, |c_m| = 1, from r such values
    on disjoint classes. Write m(v) = sum_{j in S} |x_j| (so |v| <= m(v), m(y) = sum_m m(v_m)). If
    |v_hat - v| <= E m(v) before a pass and the pass's own rounding is at most theta_r sum_m |v_hat_m|,
    then |y_hat - y| <= ((1 + E)(1 + theta_r) - 1) m(y): over the passes, eps_F = prod (1 + theta_r) - 1.
    Per pass, with gamma_k = k u / (1 - k u):

    * twiddles: sincos_2pibyn<long double> takes cos/sin of fl(x fl(fl(pi/4)/n)) (|error| <= gamma_3
      pi/4) from libm (<= 2 ulps assumed), table entries off by e_t <= gamma_3 pi/4 + 2 sqrt2 u
      (modulus), and a twiddle is the product of two entries: mu <= 2 e_t + e_t^2 + sqrt2 gamma_2 (1 + e_t)^2;
    * one twiddle multiplication (MULPM, 2 products and 1 sum per component, with or without FMA):
      eps_m = sqrt2 gamma_2 (1 + mu) + mu (Higham Lemma 3.5);
    * radix 2 (radf2/radb2): a twiddle product and one complex addition: theta_2 = (1 + u)(1 + eps_m) - 1
      (the multiplications by 2 and -1 are exact);
    * radix 4 (radf4/radb4): a twiddle product and two additions, theta_4 = (1 + u)^2 (1 + eps_m) - 1;
      the ido-even columns (hsqt2 (a +- b), sqrt2 (a - b): at most 5 roundings incl. the constant's,
      weight sqrt2 <= the 2 of a conjugate pair) stay below it;
    * radix 3 (radf3/radb3): a twiddle product, three additions and the rounded taui (taur = -1/2
      is exact), and the result is formed as taur (.) + i taui (.), paths of weight |taur| + |taui|:
      theta_3 = (1/2 + sqrt3/2) ((1 + u)^4 (1 + eps_m) - 1).

    The inverse uses the same passes reversed (radb*); the 1/n of ``irfft`` (fct, one more product,
    fct = 1/n rounded) is not included here. Proven from the source (pocketfft_hdronly.h, cpp branch,
    vendored by numpy 2.x; rfftp is used for every n = 2^a 3^b since its largest prime factor p has
    p^2 <= n or n < 50). Assumed: libm's long double sin/cos within 2 ulps on [0, pi/4]; no
    underflow to subnormals (absolute errors <= 2^-16445 per operation, covered by the 1e-300 the
    callers add); the identification of every stored number with a partial DFT (FFTPACK's halfcomplex
    layout; Swarztrauber 1982, "Vectorizing the FFTs"), checked in the tests against exact DFTs.

    Args:
      n: transform size, 2^a 3^b (:func:`fft_size` returns 2^k or 3 * 2^k).
      unit_roundoff: u of the arithmetic (default: numpy's long double).

    Returns:
      eps_F(n), rounded up.

    Raises:
      ValueError: if n has a prime factor > 3 (the radix-5 and generic passes are not covered).
    """
    u = float(unit_roundoff)
    g2, g3 = 2.0 * u / (1.0 - 2.0 * u), 3.0 * u / (1.0 - 3.0 * u)
    s2 = math.sqrt(2.0) * (1.0 + 1e-15)
    e_t = g3 * math.pi / 4.0 + _LIBM_ULPS * s2 * u
    mu = 2.0 * e_t + e_t * e_t + s2 * g2 * (1.0 + e_t) ** 2
    eps_m = s2 * g2 * (1.0 + mu) + mu
    lu = math.log1p(u)
    theta = {
        2: math.expm1(lu + math.log1p(eps_m)),
        4: math.expm1(2.0 * lu + math.log1p(eps_m)),
        3: _P3 * math.expm1(4.0 * lu + math.log1p(eps_m)),
    }
    total = sum(math.log1p(theta[r]) for r in fft_factors(max(int(n), 1)))
    return math.expm1(total) * (1.0 + 1e-9)


def _mostly_zero(nonzero: np.ndarray, size: int) -> bool:
    """Whether fewer than half of ``size`` masses are nonzero (``nonzero`` their indices): the rule
    by which the moment sums and the coarse copies take the nonzero masses alone."""
    return 2 * nonzero.size < size


def moment_support(labels: np.ndarray | int, pmf: np.ndarray,
                   nonzero: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(labels, masses) that a moment sum sum_j p_j e^{lam l_j} needs: only the nonzero masses where
    fewer than half are nonzero (sparse steps, tiny q; zero masses add nothing), else all (the
    dense steps' sums unchanged). ``labels``: one per mass, or the first label (an int: the labels
    are consecutive, made only as needed); ``nonzero``: the indices of the nonzero masses, if known."""
    nz = np.flatnonzero(pmf) if nonzero is None else nonzero
    sparse = _mostly_zero(nz, pmf.size)
    if isinstance(labels, (int, np.integer)):
        labels = labels + (nz if sparse else np.arange(pmf.size)).astype(float)
        return labels, (pmf[nz] if sparse else pmf)
    if sparse:
        return labels[nz], pmf[nz]
    return labels, pmf


def coarse_moment_copy(off: int, pmf: np.ndarray, points: int = 256,
                       nonzero: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(labels, masses) of ``pmf`` (labels off..) summed in blocks of size // ``points`` labels (at
    least 1), each block at its centre label: a copy of at most ~2 ``points`` entries whose moment
    function locates a good Chernoff parameter lam cheaply. Only to *choose* lam: it is not a bound
    (the bound is the exact moment sum at the chosen lam). ``nonzero``: the indices of the nonzero
    masses, if known; where fewer than half are nonzero the blocks are summed from those alone."""
    b = max(1, pmf.size // points)
    nb = -(-pmf.size // b)
    centres = off + b * np.arange(nb, dtype=float) + 0.5 * (b - 1)
    if nonzero is not None and _mostly_zero(nonzero, pmf.size):
        return centres, np.bincount(nonzero // b, weights=pmf[nonzero], minlength=nb)
    pad = np.zeros(nb * b)
    pad[: pmf.size] = pmf
    return centres, pad.reshape(nb, b).sum(axis=1)


def moment_terms(labels: np.ndarray, pmf: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """log sum_j pmf_j e^{lam l_j} for each lam (rows of :func:`rerokit.bounds.pld.normal.logsumexp_rows`,
    rounded as it rounds them), over :func:`moment_support`'s entries."""
    labels, pmf = moment_support(labels, pmf)
    with np.errstate(divide="ignore"):
        logp = np.log(pmf)
    return logsumexp_rows(logp[None, :] + lam[:, None] * labels[None, :])


def chernoff_window(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float) -> tuple[int, int]:
    """Chernoff window [A, B] of the composed labels with P(S > B), P(S < A) <= tau each.

    For a (sub-)probability pmf p and lam > 0: P(S >= B) <= e^{-lam B} prod_i M_i(lam)^{T_i},
    M_i(lam) = sum_j p_ij e^{lam j}; every lam gives a valid window. lam is chosen on a geometric
    grid around the Gaussian optimum sqrt(2 log(1/tau) / Var(S)) and on 2^-6..2^8 per unit of
    loss using each pmf's moment function on a copy coarsened to ~256 points (cheap, only to choose);
    the bound itself is then evaluated exactly at the chosen lam and its two neighbours.

    Args:
      parts: (label offset, pmf, count T_i) per distinct pmf.
      h: grid step (loss per label).
      log_tau: natural log of the tail mass allowed on each side.

    Returns:
      (A, B), clipped to the support of the composition.
    """
    a, b = _chernoff_ends(parts, h, log_tau, log_tau)
    return a, b


def chernoff_lower(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float) -> int:
    """The lower end A of :func:`chernoff_window` alone: P(S < A) <= e^log_tau (the upper side not
    computed)."""
    return _chernoff_ends(parts, h, None, log_tau)[0]


def _chernoff_ends(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_up: float | None,
                   log_left: float) -> tuple[int, int | None]:
    """(A, B) of :func:`chernoff_window` with the tail masses e^log_left below A and e^log_up above
    B; B None where log_up is None (not computed)."""
    if len(parts) >= BATCH_MIN:  # many distinct parts: the same bounds, vectorised across parts
        hi, lo, lo_sup, hi_sup = moment_window_batched(parts, h, log_left)
        if log_up is not None and log_up != log_left:
            hi = moment_window_batched(parts, h, log_up)[0]
        if not (math.isfinite(lo) and (log_up is None or math.isfinite(hi))):
            raise WindowTooWide("the Chernoff window of this privacy-loss distribution is not finite")
        return max(int(lo), lo_sup), (None if log_up is None else min(int(hi), hi_sup))
    var = 0.0
    lo_sup = hi_sup = 0
    coarse = []
    fine = []
    for off, pmf, count in parts:
        nz = np.flatnonzero(pmf)
        # the moments on the nonzero masses only where fewer than half are nonzero (the sparse
        # steps of tiny q: 1259 masses on 199998 labels at sigma 0.731, q 1.05e-7), as
        # moment_support takes them
        labels, masses = moment_support(off, pmf, nz)
        tot = float(masses.sum())
        if tot > 0:
            m1 = float(np.sum(masses * labels)) / tot
            var += count * float(np.sum(masses * (labels - m1) ** 2)) / tot
        lo_sup += count * (off + int(nz[0]))
        hi_sup += count * (off + int(nz[-1]))
        coarse.append((*coarse_moment_copy(off, pmf, nonzero=nz), count))  # only to choose lam
        fine.append((labels, masses, count))

    def end(log_t: float, upper: bool) -> float:
        """One side's bound at tail mass e^log_t: lam chosen on the coarse copies, then the exact
        bound at it and its two neighbours (each row of the moment terms is computed on its own)."""
        lam0 = math.sqrt(2.0 * abs(log_t) / var) if var > 0 else 1.0
        lams = np.unique(np.concatenate((lam0 * 2.0 ** np.arange(-4, 7), h * 2.0 ** np.arange(-6, 9))))
        sign = 1.0 if upper else -1.0

        def ends(ls: np.ndarray, parts_) -> np.ndarray:
            m = sum(count * moment_terms(labels, p, sign * ls) for labels, p, count in parts_)
            with np.errstate(invalid="ignore"):
                return np.ceil((m - log_t) / ls) if upper else np.floor((log_t - m) / ls)

        c = ends(lams, coarse)
        i = int(np.argmin(c)) if upper else int(np.argmax(c))
        exact = ends(lams[max(0, i - 1): i + 2], fine)
        return float(np.min(exact) if upper else np.max(exact))

    hi = end(log_up, True) if log_up is not None else 0.0
    lo = end(log_left, False)
    if not (np.isfinite(hi) and np.isfinite(lo)):  # moments overflowed (e.g. q 1e-320 at a tiny sigma)
        raise WindowTooWide("the Chernoff window of this privacy-loss distribution is not finite")
    return max(int(lo), lo_sup), (None if log_up is None else min(int(hi), hi_sup))


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


PRECISIONS = ("double", "extended", "mixed")
_DEAD = 1e-30  # frequencies whose spectrum bound falls below this are set to 0 (error <= the bound)


def compose(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_tau: float,
            window: tuple[int, int] | None = None, precision: str = "double") -> Composed:
    """T_i-fold convolution of each pmf, all convolved, restricted to a Chernoff window.

    The FFT runs in double (u = 2^-53, default) or numpy's long double (``"extended"``, u = 2^-64
    on x86: about 5x slower, 2^11 times smaller round-off), with the proven round-off bound of the
    module docstring at that unit roundoff either way; ``"mixed"`` takes the forward transforms
    and the powers in long double and the inverse in double (the spectrum rounded to complex128,
    u |Y_k| more error per frequency, then the double inverse's constant) where that at most
    doubles the proven round-off (long schedules, whose narrow spectrum makes the inverse's error
    small), else in long double: the T-fold amplified forward error, which dominates the double
    bound, stays at long double's size, while the inverse, whose error is not amplified, costs a
    double transform (about 0.6 of the time of ``"extended"``). Frequencies whose spectrum bound
    prod_i a_i^{T_i} falls below 1e-30 are set to 0 and carry that bound as their error (their
    exact value is no larger), so the powers and the error bookkeeping run only on the
    frequencies that matter (a few hundred for long schedules).

    Args:
      parts: (label offset, non-negative pmf, count T_i >= 1) per distinct pmf.
      h: grid step (only for the window).
      log_tau: natural log of the tail mass allowed outside the window on each side.
      window: (A, B) to use instead of :func:`chernoff_window`.
      precision: "double" (default), "extended" or "mixed".

    Returns:
      The :class:`Composed` pmf with its tail and proven round-off bounds.

    Raises:
      WindowTooWide: if the window exceeds :data:`MAX_FFT` points.
      ValueError: for an unknown ``precision``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    A, B = window if window is not None else chernoff_window(parts, h, log_tau)
    n = B - A + 1
    if n > MAX_FFT or n < 1:
        raise WindowTooWide(f"the composed privacy-loss window needs {n} points (max {MAX_FFT})")
    nfft = fft_size(n)
    ext = precision != "double"  # forward transforms and powers in long double
    dt = np.longdouble if ext else np.float64
    u = _U_LD if ext else _U
    eps_f = fft_error_constant(nfft, u)
    inv_ext = precision == "extended"  # the inverse transform too ("mixed": the inverse in double)
    nf = nfft // 2 + 1
    # full (Hermitian) spectrum sums: frequencies 1..nfft/2-1 appear twice
    w2 = np.full(nf, 2.0)
    w2[0] = 1.0
    if nfft % 2 == 0:
        w2[-1] = 1.0
    idx = None  # the live frequencies (None: all)
    spec = None  # computed spectrum on the live frequencies
    err = np.zeros(nf)  # bound on |computed - exact| spectrum per live frequency
    mag = np.ones(nf)  # upper bound on |exact| and |computed| spectrum per live frequency
    dead = 0.0  # sum over the zeroed frequencies (weights w2) of bounds on their |exact| spectrum
    off_tot = 0
    for off, pmf, count in parts:
        x = np.asarray(pmf, dtype=dt)
        if x.size <= nfft:
            folded = np.zeros(nfft, dtype=dt)
            folded[: x.size] = x
            fold_rel = 0.0
        else:
            pad = np.zeros(-(-x.size // nfft) * nfft, dtype=dt)
            pad[: x.size] = x
            folded = pad.reshape(-1, nfft).sum(axis=0)
            fold_rel = (pad.size // nfft) * u  # each folded entry: a sum of that many masses
        X = np.fft.rfft(folded)
        if idx is not None:
            X = X[idx]
        mass = float(np.sum(folded)) * (1.0 + 2.0 * nfft * u) + 1e-300  # >= sum of the exact entries
        # componentwise: |X_hat_k - X_k| <= eps_F sum_j x_j (+ folding's own rounding)
        e = (eps_f + 1.01 * fold_rel) * mass * (1.0 + 1e-12) + 1e-300
        # zeroed frequencies: every exact |X_k| <= sum_j x_j, so their bound grows by (mass + e)^T
        if dead > 0.0:
            dead *= math.exp(count * math.log(mass + e)) * (1.0 + 1e-12)
        # >= |X_k| and >= |X_hat_k| (long double spectra: their modulus taken after rounding to
        # complex128, within 3u of |X_hat_k|, which the factor covers; 7x faster than the long double abs)
        a = np.abs(X.astype(np.complex128) if ext else X) * (1.0 + 1e-15) + e
        rho = math.expm1((count - 1) * math.log1p(math.sqrt(5.0) * u)) * (1.0 + 1e-6)
        # frequencies with mag a^T (1 + rho) <= 1e-30 (a cheap test against the largest mag): zeroed
        big_mag = float(np.max(mag)) if mag.size else 1.0
        with np.errstate(divide="ignore", under="ignore", over="ignore"):
            a_cut = math.exp((math.log(_DEAD) - math.log(big_mag * (1.0 + rho) * (1.0 + 1e-14))) / count)
        cand = a > a_cut * (1.0 - 1e-12)
        w2_live = w2 if idx is None else w2[idx]
        dead += _DEAD * float(np.sum(w2_live[~cand])) * (1.0 + 1e-12)
        sel = np.nonzero(cand)[0]
        a, err, mag, w2_live, X = a[sel], err[sel], mag[sel], w2_live[sel], X[sel]
        with np.errstate(under="ignore", over="ignore"):
            a_pow1 = np.power(a, count - 1) * (1.0 + 1e-14)
            d = count * e * a_pow1 + rho * a_pow1 * a  # |Y_hat_k - Y_k| for this part
            a_pow = a_pow1 * a * (1.0 + rho)
            new_mag = mag * a_pow
            live = new_mag > _DEAD
            # zeroed now: the computed value is 0, so the error is |exact| <= new_mag
            dead += float(np.sum(w2_live[~live] * new_mag[~live])) * (1.0 + 1e-12)
            # product rule: |Y1Y2 - Y1'Y2'| <= |Y1 - Y1'| M2 + M1 |Y2 - Y2'| (+ the product's rounding)
            err = err * a_pow + mag * d + (0.0 if spec is None else 3.0 * u * mag * a_pow)
            keep = np.nonzero(live)[0]
            err, mag = err[keep], new_mag[keep]
            pw = _cmul_power(X[keep], count)
            if spec is None:
                spec = pw
            else:
                spec = spec[sel[keep]] * pw
        idx = sel[keep] if idx is None else idx[sel[keep]]
        off_tot += count * off
    if ext and not inv_ext and spec is not None:
        # "mixed": the inverse in double where its error (the l1 form below, at double's u) is at most
        # what the long double one would leave (the forward/powers' part and its own): the proven
        # round-off then at most doubles; else (short schedules: a wide spectrum) in long double
        w2_live = w2 if idx is None else w2[idx]
        mod = np.abs(spec).astype(float)
        y1_ = float(np.sum(w2_live * mod))
        fwd = math.sqrt(n / nfft) * (math.sqrt(float(np.sum(w2_live * err * err))) + dead) + n * eps_f * y1_ / nfft
        inv_d = n * fft_error_constant(nfft, _U) * y1_ / nfft + math.sqrt(n / nfft) * _U * math.sqrt(
            float(np.sum(w2_live * mod * mod)))
        inv_ext = inv_d > fwd
    if ext and not inv_ext and spec is not None:
        # the spectrum rounded to complex128 (each part to nearest: |error| <= u |Y_hat_k|, u of
        # double), then the inverse in double, with the double transform's constant
        spec = spec.astype(np.complex128)
        err = err + _U * np.abs(spec) * (1.0 + 1e-12)
        u = _U
        eps_f = fft_error_constant(nfft, _U)
    full = np.zeros(nf, dtype=np.clongdouble if inv_ext else np.complex128)
    if spec is not None and idx is not None:
        full[idx] = spec
    circ = np.fft.irfft(full, nfft)
    w2_live = w2 if idx is None else w2[idx]
    d1 = float(np.sum(w2_live * err)) + dead + nf * 1e-300
    y1 = float(np.sum(w2_live * np.abs(spec).astype(float))) if spec is not None else 0.0
    # inverse: |computed_l - exact_l| <= (1/n) (sum_k |D_k| + eps_F sum_k |Y_hat_k|) (+ the 1/n scaling)
    entry = (d1 + eps_f * y1) / nfft * (1.0 + 4.0 * u) * (1.0 + 1e-12)
    shift = (A - off_tot) % nfft
    if shift + n <= nfft:
        window_vals = circ[shift: shift + n]
    else:
        window_vals = np.concatenate((circ[shift:], circ[: shift + n - nfft]))
    out = np.maximum(window_vals.astype(float), 0.0)
    # rounding to double (extended precision only): half an ulp of each entry
    r64 = _U if inv_ext else 0.0
    entry64 = entry + r64 * (float(np.max(out)) if out.size else 0.0) + 1e-300
    # the sum over the window, two ways: n times the entry bound, or (Parseval) the exact inverse of
    # the spectral error D has 2-norm ||D||_2 / sqrt(nfft), so its l1 over n entries is at most
    # sqrt(n / nfft) ||D||_2 (Cauchy-Schwarz), plus n times the inverse transform's own entry bound;
    # the zeroed frequencies' bounds enter ||D||_2 through ||.||_2 <= ||.||_1
    d2 = math.sqrt(float(np.sum(w2_live * err * err)) * (1.0 + 1e-12)) + dead + math.sqrt(nf) * 1e-300
    parseval = (math.sqrt(n / nfft) * d2 + n * eps_f * y1 / nfft) * (1.0 + 4.0 * u) * (1.0 + 1e-12)
    roundoff = min(2.0, min(n * entry, parseval) + r64 * float(np.sum(out)) * 1.01 + n * 1e-300)
    # the same two parts in the 2-norm: ||IDFT(D)||_2 = ||D||_2 / sqrt(nfft) (Parseval; restricting to
    # the window only lowers it) plus sqrt(n) times the inverse's entry bound; the rounding to double
    # (extended only) is <= r64 out_i per entry, 2-norm <= r64 sum(out)
    l2 = (d2 / math.sqrt(nfft) + math.sqrt(n) * eps_f * y1 / nfft) * (1.0 + 4.0 * u) * (1.0 + 1e-12)
    roundoff2 = min(roundoff, l2 + r64 * float(np.sum(out)) * 1.01 + math.sqrt(n) * 1e-300)
    return Composed(A, out, 2.0 * math.exp(log_tau), roundoff, min(entry64, 2.0), roundoff2)


def weighted_roundoff(c: Composed, rate: float) -> float:
    """A bound on sum_{j >= 0} e^{-rate j} |pmf_{k+j} - exact_{k+j}| for every k (rate >= 0): the
    round-off of masses above a point, each weighted by its untilting factor relative to that point
    (:mod:`rerokit.bounds.pld.tilt`).

    The smallest of: the l1 bound (weights <= 1); the entry bound times sum_j e^{-rate j} =
    1 / (1 - e^{-rate}); and (Cauchy-Schwarz) the 2-norm bound times (sum_j e^{-2 rate j})^(1/2) =
    (1 - e^{-2 rate})^(-1/2).

    Args:
      c: a composition.
      rate: the weights' decay per grid step (t h for a tilt t), >= 0.

    Returns:
      The bound (rounded up).
    """
    best = c.roundoff
    if rate > 0.0:
        g1 = -math.expm1(-rate)
        g2 = -math.expm1(-2.0 * rate)
        best = min(best, c.entry_roundoff / g1, c.roundoff2 / math.sqrt(g2))
    return best * (1.0 + 1e-12)

def compose_inf_mass(parts: Sequence[tuple[float, int]]) -> float:
    """Composed +infinity mass 1 - prod (1 - p_inf_i)^{T_i}.

    Args:
      parts: (infinity mass of one step, count T_i).

    Returns:
      The composed infinity mass.
    """
    if any(p >= 1.0 and T > 0 for p, T in parts):  # (1 - 1e-300 rounds to 1: log1p(-1) would fail)
        return 1.0
    s = sum(T * math.log1p(-p) for p, T in parts if T)
    return -math.expm1(s)
