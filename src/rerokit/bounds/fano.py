"""Fano bound on reconstruction advantage for a uniform prior (Guo et al. 2022b, as restated in
Hayes et al. 2023, App. H, Eq. 4-5).

The target is drawn uniformly from a prior of n candidates; w is the release. Fano's inequality
bounds the conditional entropy by the error probability t = 1 - P[success]:

    H(pi | w) <= h(t) + t log(n - 1),   h(t) = -t log t - (1 - t) log(1 - t),

and H(pi | w) = H(pi) - I(pi; w) with H(pi) = log n. So every attack's error t satisfies

    f(t) := H(pi) - I + t log t + (1 - t) log(1 - t) - t log(n - 1) <= 0     (Eq. 5)

and t >= t*, the smallest root of f in [0, 1 - 1/n] (f is convex with f(0) = H - I and
f(1 - 1/n) = -I). The advantage (Eq. 4) Adv = (P[success] - 1/n) / (1 - 1/n) is then at most
(1 - t* - 1/n) / (1 - 1/n). When I >= H, t* = 0 and the bound is 1.

Mutual information bounds: an (alpha, eps)-RDP mechanism has I <= eps (so any RDP epsilon can be
passed to :func:`fano_advantage_from_mi`); for the Gaussian mechanism with noise std sigma and
sensitivity Delta (Guo et al. 2022b),

    I <= -sum_i p_i log(p_i + (1 - p_i) exp(-Delta^2 / (2 sigma^2))).

Hayes et al. 2023, Table 2 ("Guo et al." rows, one full-batch DP-SGD step, prior sizes 10 and
100) is reproduced with Delta = sqrt(2) (in units of the clipping norm), the distance between two
orthogonal unit-norm gradients -- see tests/bounds/test_fano.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from scipy.optimize import brentq
from scipy.special import xlogy

from rerokit._validate import check_int, check_nonnegative, check_positive
from rerokit.bounds.types import Bound

__all__ = [
    "fano_min_error",
    "fano_advantage_from_mi",
    "fano_advantage_rdp",
    "fano_advantage_gaussian",
    "gaussian_mutual_information_bound",
]

_XTOL = 1e-14
_EPS = 2.220446049250313e-16  # float64 machine epsilon


def _f(t: float, h_minus_i: float, log_nm1: float) -> float:
    return h_minus_i + float(xlogy(t, t)) + float(xlogy(1.0 - t, 1.0 - t)) - t * log_nm1


def fano_min_error(mutual_information: float, prior_size: int) -> tuple[float, float]:
    """Bracket [t_lo, t_hi] of t*, the smallest t in [0, 1 - 1/n] with f(t) <= 0 (Eq. 5).

    ``t_lo`` is certified from below (f(t_lo) > 0, or t_lo = 0), so 1 - t_lo upper-bounds the
    success probability; ``t_hi - t_lo`` is the numerical width (<= ~1e-13).

    Args:
      mutual_information: a bound I on I(pi; w) in nats, a finite number >= 0.
      prior_size: n, the number of equally likely candidates, an integer >= 2.

    Returns:
      ``(t_lo, t_hi)`` in [0, 1 - 1/n]: (0, 0) when I >= log n, (1 - 1/n, 1 - 1/n) when I = 0.

    Raises:
      ValueError: if ``mutual_information`` is negative or not finite, or ``prior_size`` < 2.
      TypeError: if ``prior_size`` is not an integer or ``mutual_information`` not a number.
    """
    i = check_nonnegative("mutual_information", mutual_information)
    n = check_int("prior_size", prior_size, minimum=2)
    h = math.log(n)
    log_nm1 = math.log(n - 1)
    top = 1.0 - 1.0 / n
    if i >= h:
        return 0.0, 0.0
    if i == 0.0:
        return top, top
    hmi = h - i
    # Float evaluation of f has an absolute error below tol (4 terms, each <= max(log n, 1/e),
    # a few roundings each): a sign of f is trusted only beyond tol. For tiny I, f(top) = -I
    # may be lost in round-off; then the root is searched downward from top.
    tol = 8.0 * _EPS * (2.0 * h + 2.0)
    if _f(top, hmi, log_nm1) < 0.0:
        root = brentq(_f, 0.0, top, args=(hmi, log_nm1), xtol=_XTOL, rtol=1e-15, maxiter=500)
    else:
        root = top
    # f is decreasing on [0, top]: walk outward until the bracket is certified by sign.
    lo, hi, step = root, root, 4 * _XTOL
    while lo > 0.0 and not _f(lo, hmi, log_nm1) > tol:
        lo = max(0.0, lo - step)
        step *= 2
    step = 4 * _XTOL
    while hi < top and not _f(hi, hmi, log_nm1) < -tol:
        hi = min(top, hi + step)
        step *= 2
    return lo, hi


def fano_advantage_from_mi(mutual_information: float, prior_size: int) -> Bound:
    """Upper bound on the advantage (Eq. 4) of any attack against a uniform prior of size n, from I(pi; w).

    Guo et al. 2022b; Hayes et al. 2023, Eq. 5. Pass an RDP epsilon (any order) as
    ``mutual_information`` for an RDP mechanism (I <= eps).

    Args:
      mutual_information: a bound I on the mutual information I(pi; w) in nats, >= 0.
      prior_size: n, the number of equally likely candidates, an integer >= 2.

    Returns:
      A :class:`Bound` whose value (in [0, 1]) is computed from the certified lower end t_lo of t*
      (an upper bound); ``error`` is the numerical width. ``extras`` has ``gamma`` = 1 - t_lo
      (success bound), ``kappa`` = 1/n, ``t`` = t_lo.

    Raises:
      ValueError, TypeError: as :func:`fano_min_error`.
    """
    n = check_int("prior_size", prior_size, minimum=2)
    lo, hi = fano_min_error(mutual_information, n)
    adv = lambda t: min(1.0, max(0.0, (1.0 - t - 1.0 / n) / (1.0 - 1.0 / n)))  # noqa: E731
    a_up, a_lo = adv(lo), adv(hi)
    return Bound(
        value=a_up,
        error=a_up - a_lo,
        method="fano_guo2022b",
        direction="upper",
        inputs={"mutual_information": float(mutual_information), "prior_size": n},
        extras={"gamma": min(1.0, 1.0 - lo), "kappa": 1.0 / n, "t": lo},
    )


def fano_advantage_rdp(epsilon: float, prior_size: int) -> Bound:
    """Fano advantage bound for an (alpha, eps)-RDP mechanism (any alpha > 1): I(pi; w) <= eps.

    Hayes et al. 2023, App. H; this is :func:`fano_advantage_from_mi` with I = eps.

    Args:
      epsilon: the RDP epsilon at any order, a finite number >= 0, for REPLACE-ONE neighbours
        (datasets that differ in which candidate the target is: I(pi; w) <= max KL between two
        candidates' output laws <= eps). An add/remove RDP epsilon does not bound it; for DP-SGD
        use :func:`rerokit.accounting.replace_one_rdp_order2`.
      prior_size: n, the number of equally likely candidates, an integer >= 2.

    Returns:
      A :class:`Bound` (upper bound on the advantage), as :func:`fano_advantage_from_mi`.

    Raises:
      ValueError: if ``epsilon`` is negative or not finite, or ``prior_size`` < 2.
      TypeError: if an argument has the wrong type.
    """
    e = check_nonnegative("epsilon", epsilon)
    n = check_int("prior_size", prior_size, minimum=2)  # before int(): int(inf) raised OverflowError
    return _from_mi(e, n, "fano_guo2022b_rdp", {"epsilon": e, "prior_size": n})


def gaussian_mutual_information_bound(noise_multiplier: float, prior_size: int, sensitivity: float = 1.0) -> float:
    """I(pi; w) <= -log(1/n + (1 - 1/n) exp(-Delta^2 / (2 sigma^2))) for the Gaussian mechanism and a uniform prior.

    Guo et al. 2022b; Hayes et al. 2023, App. H. Rounded up (I is used as an upper bound).

    Args:
      noise_multiplier: noise std sigma, in units of the sensitivity scale, > 0.
      prior_size: n, the number of equally likely candidates, an integer >= 2.
      sensitivity: Delta, the distance between two candidates' outputs, >= 0 (default 1).

    Returns:
      The bound on I in nats, in [0, log n] up to rounding.

    Raises:
      ValueError: if ``noise_multiplier`` is not > 0, ``sensitivity`` is negative, either is not
        finite, or ``prior_size`` < 2.
      TypeError: if an argument has the wrong type.
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    n = check_int("prior_size", prior_size, minimum=2)
    d = check_nonnegative("sensitivity", sensitivity)
    p = 1.0 / n
    r = d / s
    x = 0.5 * r * r  # Delta^2 / (2 sigma^2); inf (not ZeroDivisionError) for tiny sigma
    # -log(p + (1 - p) e^-x): a sum of positive terms for large x; for small x (huge sigma) the
    # naive form rounds to 0, so there -log1p(-(1 - p)(1 - e^-x)) with expm1 (both accurate to
    # a few ulps); rounded up (I is used as an upper bound).
    if x > 0.5:
        i = -math.log(p + (1.0 - p) * math.exp(-x))
    else:
        i = -math.log1p(-(1.0 - p) * -math.expm1(-x))
    return i * (1.0 + 8.0 * _EPS)


def fano_advantage_gaussian(noise_multiplier: float, prior_size: int, sensitivity: float = 1.0) -> Bound:
    """Fano advantage bound for the Gaussian mechanism with the closed-form mutual-information bound above.

    The noise std is ``noise_multiplier`` in units of the sensitivity scale. With
    ``sensitivity=sqrt(2)`` this reproduces Hayes et al. 2023, Table 2 (Guo et al. rows).

    Args:
      noise_multiplier: noise std sigma, > 0.
      prior_size: n, the number of equally likely candidates, an integer >= 2.
      sensitivity: Delta, >= 0 (default 1).

    Returns:
      A :class:`Bound` (upper bound on the advantage) as :func:`fano_advantage_from_mi`, with
      ``extras["mutual_information_bound"]``.

    Raises:
      ValueError: as :func:`gaussian_mutual_information_bound`.
      TypeError: if an argument has the wrong type.
    """
    i = gaussian_mutual_information_bound(noise_multiplier, prior_size, sensitivity)
    inputs = {"noise_multiplier": float(noise_multiplier), "prior_size": int(prior_size),
              "sensitivity": float(sensitivity)}
    return _from_mi(i, prior_size, "fano_guo2022b_gaussian", inputs, mutual_information_bound=i)


def _from_mi(i: float, prior_size: int, method: str, inputs: dict[str, Any], **extras: Any) -> Bound:
    """:func:`fano_advantage_from_mi` at I = ``i``, under the caller's method and inputs, with more ``extras``."""
    b = fano_advantage_from_mi(i, prior_size)
    return replace(b, method=method, inputs=inputs, extras={**b.extras, **extras})
