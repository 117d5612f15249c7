"""Normal tails and log-sum-exp for the PLD engine, numpy only.

numpy has no erfc; ``math.erfc`` (libm, accurate in the tails) element-wise is fast enough for the
usual grids and avoids importing scipy (a few tenths of a second) on the CLI path; grids larger
than :data:`SCIPY_ABOVE` points use ``scipy.special.ndtr``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ndtr", "normal_isf_log", "logsumexp_rows", "SCIPY_ABOVE"]

_ERFC = np.frompyfunc(math.erfc, 1, 1)
SCIPY_ABOVE = 50_000


def ndtr(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, accurate in both tails.

    Args:
      x: array of reals (+-inf allowed).

    Returns:
      Phi(x), a float array of the same shape.
    """
    x = np.asarray(x, dtype=float)
    if x.size > SCIPY_ABOVE:
        from scipy.special import ndtr as _scipy_ndtr

        return _scipy_ndtr(x)
    return 0.5 * _ERFC(-x * math.sqrt(0.5)).astype(float)


def normal_isf_log(log_tau: float) -> float:
    """z >= 0 with Phi(-z) <= tau = exp(log_tau) (bisection to 1e-12; returns the safe end).

    Args:
      log_tau: natural log of the tail mass tau.

    Returns:
      z in [0, 38] (38 where tau is below Phi(-38) ~ 3e-316).
    """
    if log_tau >= math.log(0.5):
        return 0.0
    lo, hi = 0.0, 38.0
    if log_tau <= math.log(0.5 * math.erfc(hi * math.sqrt(0.5))):
        return hi
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if math.log(0.5 * math.erfc(mid * math.sqrt(0.5))) <= log_tau:
            hi = mid
        else:
            lo = mid
    return hi


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
