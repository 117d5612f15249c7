"""Normal tails, log tails, their inverse and log-sum-exp for the PLD engine, numpy only.

numpy has no erfc; ``math.erfc`` (libm, accurate in the tails) element-wise is fast enough for the
usual grids and avoids importing scipy (a few tenths of a second) on the CLI path; grids larger
than :data:`SCIPY_ABOVE` points use ``scipy.special.ndtr``. :func:`log_ndtr`, :func:`normal_isf_log`
and :func:`normal_ppf_log` are ``math`` only (scalars, the full double range of log levels): the
package's one normal log-CDF and inverse, each inverse rounded to the side its caller asks for
(step truncation points, the max test's threshold, the GDP mixture's Phi^-1(kappa), start guesses).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ndtr", "ndtr_pair", "log_ndtr", "log_ndtr_many", "normal_isf_log", "normal_ppf_log", "logsumexp_rows", "LOG_NDTR_REL", "SCIPY_ABOVE"]

SCIPY_ABOVE = 50_000
LOG_NDTR_REL = 1e-13
"""A proven bound on :func:`log_ndtr`'s relative error for x <= 0 (about 1e-15 measured)."""
_SERIES_BELOW = -30.0  # log_ndtr: the Mills-ratio series below this argument, libm's erfc above
_SERIES_TERMS = 7  # its terms k = 1..7 (the remainder below the next one: log_ndtr)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_HALF = math.log(0.5)


def ndtr(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF Phi(x), accurate in both tails: y = Phi(-|x|) = erfc(|x| / sqrt 2) / 2 by
    libm's erfc, and 1 - y where x > 0 (within 3u of Phi(x) there, as y <= 1/2 carries libm's
    2 ulps), so that the smaller side is always libm's own value and ``ndtr(-a)``, ``ndtr(a)`` are
    bit for bit the two sides of :func:`ndtr_pair` ``(a)``. Above :data:`SCIPY_ABOVE` points
    scipy's ``ndtr``.

    Args:
      x: array of reals (+-inf allowed).

    Returns:
      Phi(x), a float array of the same shape.
    """
    x = np.asarray(x, dtype=float)
    if x.size > SCIPY_ABOVE:
        from scipy.special import ndtr as _scipy_ndtr

        return _scipy_ndtr(x)
    return ndtr_pair(x, libm=True)[1]


def ndtr_pair(t: np.ndarray, libm: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(-t), Phi(t)) element-wise, the same values as ``ndtr(-t)``, ``ndtr(t)`` for one erfc
    per point instead of two.

    Args:
      t: array of reals.
      libm: libm's erfc (:func:`ndtr`'s path up to :data:`SCIPY_ABOVE` points) or scipy's ``ndtr``
        (its path above); None: by the size of ``t``, as :func:`ndtr` chooses.

    Returns:
      The two arrays. scipy's path: for |t| >= 1 scipy returns y = erfc(|t|/sqrt2)/2 on the lower
      side and 1 - y on the upper, so y is computed once; below 1 it uses erf, and those points
      are evaluated on each side directly.
    """
    t = np.asarray(t, dtype=float)
    if libm is None:
        libm = t.size <= SCIPY_ABOVE
    if libm:
        y = _half_erfc_abs(t)
        hi = 1.0 - y
        pos = t > 0
        return np.where(pos, y, hi), np.where(pos, hi, y)
    from scipy.special import ndtr as _scipy_ndtr

    a = np.abs(t)
    y = _scipy_ndtr(-a)  # Phi(-|t|)
    hi = 1.0 - y
    pos = t >= 0
    lo_side = np.where(pos, y, hi)
    hi_side = np.where(pos, hi, y)
    mid = a < 1.0
    if mid.any():
        tm = t[mid]
        lo_side[mid] = _scipy_ndtr(-tm)
        hi_side[mid] = _scipy_ndtr(tm)
    return lo_side, hi_side


def _half_erfc_abs(x: np.ndarray) -> np.ndarray:
    """Phi(-|x|) = erfc(|x| / sqrt 2) / 2, libm's erfc per point (``map`` over a list: about 1.3x
    faster than ``np.frompyfunc``)."""
    y = (np.abs(x) * math.sqrt(0.5)).ravel().tolist()
    return 0.5 * np.fromiter(map(math.erfc, y), float, len(y)).reshape(x.shape)


def log_ndtr(x: float) -> float:
    """log Phi(x), the standard normal log CDF, to about 1e-15 relative (``math`` only).

    x >= -30: log(erfc(-x / sqrt 2) / 2), or log1p(-erfc(x / sqrt 2) / 2) for x > 0, with libm's
    erfc (within 2 ulps, the package's assumption on libm); the rounding of the argument x / sqrt 2
    (2u relative) moves log erfc(y) by at most 4 u y^2 + 4 u, i.e. about 2e-16 of |log Phi(x)| in
    the lower tail. x < -30: the Mills-ratio expansion Phi(-z) = phi(z)/z sum_k (-1)^k (2k-1)!!/z^{2k}
    (Abramowitz & Stegun 1964, 26.2.12), whose remainder after the term k = 7 is below the next
    term, 5e-18 at z = 30 (an alternating asymptotic series with decreasing terms there).
    For x <= 0 the error is within :data:`LOG_NDTR_REL` |log Phi(x)| (with much to spare); above 0
    within 1e-16 absolute. Checked against mpmath in tests/bounds/pld/test_maxtest_normal.py.

    Args:
      x: a real number (+-inf allowed).

    Returns:
      log Phi(x) (-inf at -inf, 0 at +inf).
    """
    x = float(x)
    if x >= _SERIES_BELOW:
        if x > 0.0:
            return math.log1p(-0.5 * math.erfc(x * math.sqrt(0.5)))
        return math.log(0.5 * math.erfc(-x * math.sqrt(0.5)))
    if x == -math.inf:
        return -math.inf
    z = -x
    return -0.5 * z * z - math.log(z) - _LOG_SQRT_2PI + math.log(_mills_series(1.0 / (z * z)))


def _mills_series(r):
    """1 + sum_{k=1}^{7} prod_{i<=k} (-(2 i - 1) r), r = 1 / z^2: the asymptotic series of the Mills
    ratio Phi(-z) z sqrt(2 pi) e^{z^2 / 2} (:func:`log_ndtr`'s far branch), for a float or an array
    (the same operations in the same order either way)."""
    term, series = r * 0.0 + 1.0, r * 0.0 + 1.0
    for k in range(1, _SERIES_TERMS + 1):
        term = term * (-(2 * k - 1) * r)
        series = series + term
    return series


def log_ndtr_many(x: np.ndarray) -> np.ndarray:
    """:func:`log_ndtr` element-wise: below -30 its Mills-ratio series vectorised (the same
    operations, numpy's log for libm's: within the same :data:`LOG_NDTR_REL`), else the scalar
    function per point (the log-mass steps of :mod:`rerokit.bounds.pld.logtail`: ~1e5 far-tail
    points, 0.6 s per 1e5 as scalars).

    Args:
      x: array of reals (+-inf allowed).

    Returns:
      log Phi(x), a float array of the same shape.
    """
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    far = (x < _SERIES_BELOW) & np.isfinite(x)
    rest = ~far
    if rest.any():
        out[rest] = np.fromiter(map(log_ndtr, x[rest].tolist()), float, int(np.count_nonzero(rest)))
    if far.any():
        z = -x[far]
        out[far] = -0.5 * z * z - np.log(z) - _LOG_SQRT_2PI + np.log(_mills_series(1.0 / (z * z)))
    return out


def normal_isf_log(log_tau: float, upper: bool = True) -> float:
    """The standard normal inverse survival function in logs, z = Phi^{-1}(1 - tau) >= 0 for
    tau = exp(log_tau) <= 1/2, rounded to a proven side (``math`` only, any log_tau down to -inf).

    Bisection on :func:`log_ndtr` (``log Phi(-z)`` is decreasing in z) to adjacent doubles, where
    every accepted end is confirmed with :data:`LOG_NDTR_REL` of |log Phi(-z)| to spare, so the
    side holds for the exact Phi whatever the round-off (the computed function need not be
    monotone for this: only confirmed points become the returned end).

    Args:
      log_tau: natural log of the tail mass tau (a float, not NaN).
      upper: True (default): the least z found with Phi(-z) <= tau for certain (an upper value of
        the exact z; 0 for tau >= 1/2). False: the largest z found with Phi(-z) >= tau for certain
        (a lower value; needs tau <= 1/2 with the margin). +inf at log_tau = -inf.

    Returns:
      z, at a level within two confirmation margins (plus an ulp of z) of tau: log Phi(-z) within
      about 2e-13 |log tau| of log tau, z within 1e-12 (1 + z) of the exact quantile.

    Raises:
      ValueError: if ``log_tau`` is NaN, or ``upper`` is False and tau is above 1/2 (less the margin).
    """
    lt = float(log_tau)
    if math.isnan(lt):
        raise ValueError(f"log_tau must not be NaN, got {log_tau!r}")

    def confirmed(z: float) -> bool:  # Phi(-z) <= tau (upper), >= tau (lower), for certain
        v = log_ndtr(-z)
        if not math.isfinite(v):  # (z^2 overflowed: no statement)
            return False
        return v + LOG_NDTR_REL * abs(v) <= lt if upper else v - LOG_NDTR_REL * abs(v) >= lt

    if upper and lt >= _LOG_HALF:  # the double -0.6931471805599453 is above -log 2: tau > 1/2
        return 0.0
    if lt == -math.inf:  # Phi(-inf) = 0 = tau
        return math.inf
    if not upper and not confirmed(0.0):
        raise ValueError(f"log_tau must be below log 1/2 for a lower value (upper=False), got {log_tau!r}")
    lo, hi = 0.0, math.sqrt(-2.0 * lt)  # Phi(-z) <= e^{-z^2/2} / 2 = tau / 2 at hi
    for _ in range(64):  # hi is confirmed at once unless |log_tau| > 1e12: the margin, kept for the proof
        if not math.isfinite(hi) or not upper or confirmed(hi):
            break
        lo, hi = hi, 2.0 * hi
    if upper and not (math.isfinite(hi) and confirmed(hi)):
        return math.inf  # (log_tau below about -1e307)
    # A start only (the bisection decides): Newton on the concave decreasing log Phi(-z) - log_tau
    # from hi, right of the root, stays right of it (the tangent lies above); the bracket shrinks
    # to +-1e-12 (1 + z) around it when its ends check out (about 15 evaluations instead of 60).
    z = hi
    for _ in range(30):
        v = log_ndtr(-z)
        if not math.isfinite(v):
            break
        step = (v - lt) * math.exp(0.5 * z * z + v + _LOG_SQRT_2PI)  # (v - log_tau) Phi(-z) / phi(z)
        z = max(z + step, lo)
        if not abs(step) > 1e-15 * (1.0 + z):
            break
    w = 1e-12 * (1.0 + z)
    a, b = max(lo, z - w), min(hi, z + w)
    if confirmed(b if upper else a) and not confirmed(a if upper else b):
        lo, hi = a, b
    for _ in range(2100):  # halves the gap, then the ulps: ends within 1100 steps for any double
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if confirmed(mid) == upper:
            hi = mid
        else:
            lo = mid
    return hi if upper else lo


def normal_ppf_log(log_p: float, upper: bool = True) -> float:
    """The standard normal quantile z = Phi^{-1}(p) of p = exp(log_p) in (0, 1], rounded to a
    proven side: :func:`normal_isf_log` of p below 1/2 (z = -isf(p), the other side), of 1 - p
    above (its log rounded by 1e-15 (1 + |log(1 - p)|), far more than the few ulps of
    ``log(-expm1(log_p))`` with libm's log and expm1 within 2 ulps).

    Args:
      log_p: natural log of p, <= 0 (-inf allowed).
      upper: True (default): Phi(z) >= p for certain (an upper value of the exact z). False:
        Phi(z) <= p for certain (a lower value).

    Returns:
      z (-inf at log_p = -inf, +inf at log_p = 0), at a level within about 2e-13 relative of p or
      of 1 - p (see :func:`normal_isf_log`).

    Raises:
      ValueError: if ``log_p`` is NaN or positive.
    """
    lp = float(log_p)
    if not lp <= 0.0:
        raise ValueError(f"log_p must be <= 0, got {log_p!r}")
    if lp == -math.inf or lp == 0.0:
        return math.inf if lp == 0.0 else -math.inf
    if lp < (_LOG_HALF - 1e-12 if upper else _LOG_HALF):  # p < 1/2: z = -w, Phi(-w) = p
        return -normal_isf_log(lp, upper=not upper)
    lq = math.log(-math.expm1(lp))  # log(1 - p); z >= 0 with Phi(-z) = 1 - p
    slack = 1e-15 * (1.0 + abs(lq))
    if upper:  # Phi(-z) <= 1 - p (0 where 1 - p > 1/2 for certain, i.e. p < 1/2)
        return normal_isf_log(lq - slack)
    if lq + slack > _LOG_HALF - 1e-12:  # (p > 1/2 here: Phi(0) = 1/2 < p; the lower isf needs
        return 0.0                      # 1 - p below 1/2 by its margin)
    return normal_isf_log(lq + slack, upper=False)


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """Row-wise log-sum-exp, rounded *up*: terms below e^-700 of the row maximum count as e^-700
    (conservative for the moment/tail bounds that use it; avoids slow subnormal exp).

    Args:
      a: array (..., n).

    Returns:
      Array (...,) of log sum_j exp(a[..., j]) (-inf rows stay -inf only if all terms are -inf).
    """
    m = np.max(a, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore", invalid="ignore"):
        z = np.maximum(a - m, -700.0)
        return (np.log(np.sum(np.exp(z), axis=-1, keepdims=True)) + m)[..., 0]
