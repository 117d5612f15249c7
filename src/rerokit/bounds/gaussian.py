"""The Gaussian mechanism's exact privacy profile, in one place.

A Gaussian mechanism with sensitivity D and noise standard deviation s is mu-GDP with
mu = D / s (Dong, Roth & Su 2022), and T full-batch DP-SGD steps with noise multiplier sigma
compose into one such mechanism with mu = sqrt(T) / sigma. Its exact hockey-stick divergence
(Balle & Wang 2018, Thm 8) is

    delta(eps; mu) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu),

decreasing in eps and increasing in mu. :func:`gaussian_delta` evaluates it (rounded up),
:func:`gaussian_epsilon` and :func:`gdp_mu` invert it with the one calibration solver
(:func:`rerokit.bounds.solve.calibrate_monotone`), always returning the private side: the
epsilon is never below, the mu never above the exact value. scipy is imported inside the
functions only.
"""

from __future__ import annotations

import math

from rerokit._validate import check_epsilon, check_int, check_nonnegative, check_positive, check_probability
from rerokit.bounds.solve import SearchRange, calibrate_monotone

__all__ = ["gaussian_delta", "gaussian_delta_bracket", "gaussian_epsilon", "gdp_mu", "noise_multiplier_full_batch"]

_ULP = 2.220446049250313e-16
_TINY = 5e-324  # the smallest positive (subnormal) float


def gaussian_delta_bracket(epsilon: float, mu: float) -> tuple[float, float]:
    """Certified bracket [lo, hi] of delta(epsilon) of a mu-GDP (Gaussian) mechanism
    (Balle & Wang 2018, Thm 8): Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu).

    Both terms are evaluated in logs (``log_ndtr``; no overflow of e^eps), and the bracket is the
    float value plus or minus an allowance for every rounding: a few ulps of each log, the
    rounding of the arguments mu/2 -/+ eps/mu (times d log Phi / dx <= 1 + |x|), and the
    cancellation in eps + log Phi(y), which grows with eps (at eps ~ 1e20 floats no longer resolve
    delta and the bracket widens to [0, 1]).

    Args:
      epsilon: eps >= 0 (inf gives [0, 0]).
      mu: mu = sensitivity / noise std > 0.

    Returns:
      (lo, hi) in [0, 1] with lo <= delta(eps; mu) <= hi.

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``epsilon`` is nan or negative, or ``mu`` is not a finite number > 0.
    """
    from scipy.special import log_ndtr

    e = check_epsilon("epsilon", epsilon)
    m = check_positive("mu", mu)
    if math.isinf(e):
        return 0.0, 0.0
    x, y = m / 2 - e / m, -m / 2 - e / m
    log_a = float(log_ndtr(x))
    log_phi_y = float(log_ndtr(y))
    log_b = e + log_phi_y  # e^eps Phi(y) in logs: no overflow for eps > 709
    a = math.exp(log_a)
    b = math.exp(min(log_b, 0.0))
    slack = 0.0
    if a + b > 0.0:  # (a term beyond float range is an exact 0 here, whose infinite log adds nothing)
        scale = 1.0 + abs(log_a) + abs(log_b) + e + abs(log_phi_y) + (2.0 + abs(x) + abs(y)) * (m / 2 + e / m)
        slack = 16 * _ULP * (a + b) * scale
    if a == 0.0:  # Phi(mu/2 - eps/mu) underflowed: its true value is below the smallest subnormal
        slack += _TINY
    value = max(0.0, a - b)
    return float(max(0.0, value - slack)), float(min(1.0, value + slack))


def gaussian_delta(epsilon: float, mu: float) -> float:
    """Exact delta(epsilon) of a mu-GDP (Gaussian) mechanism, rounded up (Balle & Wang 2018, Thm 8).

    Args:
      epsilon, mu: as in :func:`gaussian_delta_bracket`.

    Returns:
      Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), rounded up: the upper end of
      :func:`gaussian_delta_bracket`, in [0, 1].

    Raises:
      TypeError, ValueError: as in :func:`gaussian_delta_bracket`.
    """
    return gaussian_delta_bracket(epsilon, mu)[1]


def gaussian_epsilon(delta: float, mu: float, *, rtol: float = 1e-10) -> float:
    """Smallest eps >= 0 (to relative ``rtol``, rounded up) with delta(eps; mu) <= ``delta``.

    Args:
      delta: target delta in (0, 1).
      mu: mu = sensitivity / noise std >= 0 (0: a mu that underflowed).
      rtol: relative precision of eps, > 0 (default 1e-10).

    Returns:
      eps such that the mu-GDP mechanism is (eps, delta)-DP; 0 if delta(0) <= delta (mu = 0
      included); inf for mu > 1e150 (eps ~ mu^2/2 is beyond the floats).

    Raises:
      ValueError: if ``delta`` is not in (0, 1), ``mu`` is not a finite number >= 0, or ``rtol`` <= 0.
      TypeError: if an argument is not a real number.
    """
    d = check_probability("delta", delta, high_open=True)
    m = check_nonnegative("mu", mu)
    if m == 0.0 or gaussian_delta(0.0, m) <= d:  # mu = 0 (a mu that underflowed): no privacy loss
        return 0.0
    if m > 1e150:  # eps >= mu^2/2 - mu z: beyond every float (the search's range ends at 1e300)
        return math.inf
    # delta(eps) <= Phi(mu/2 - eps/mu) <= delta once eps >= mu^2/2 + mu z_delta (Chernoff-free start)
    from scipy.special import ndtri

    guess = max(1e-12, 0.5 * m * m + m * float(-ndtri(d)))
    r = calibrate_monotone(
        lambda e: gaussian_delta(e, m), d, feasible="above", search=SearchRange(1e-300, 1e300, guess),
        rtol=rtol, growth=1.5,
    )
    return r.x


def gdp_mu(epsilon: float, delta: float, *, rtol: float = 1e-10) -> float:
    """Largest mu (to relative ``rtol``, rounded down) such that mu-GDP implies (epsilon, delta)-DP.

    Args:
      epsilon: eps >= 0.
      delta: delta in (0, 1).
      rtol: relative precision of mu, > 0 (default 1e-10).

    Returns:
      mu with delta(epsilon; mu) <= delta (the private side).

    Raises:
      ValueError: if ``epsilon`` is negative or not finite, ``delta`` is not in (0, 1), or
        ``rtol`` <= 0.
      TypeError: if an argument is not a real number.
    """
    eps = check_nonnegative("epsilon", epsilon)
    d = check_probability("delta", delta, high_open=True)
    # classical calibration mu = eps / sqrt(2 log(1.25/delta)) is a good start for eps <= 1;
    # for large eps, mu ~ sqrt(2 eps)
    guess = max(1e-6, min(1e150, max(eps / math.sqrt(2 * math.log(1.25 / d)), math.sqrt(2 * eps))))
    r = calibrate_monotone(
        lambda m: gaussian_delta(eps, m), d, feasible="below", search=SearchRange(1e-300, 1e300, guess),
        rtol=rtol, growth=1.5,
    )
    if r.at_limit:  # pragma: no cover - delta(eps; 1e300) = 1 > delta for every finite eps
        raise ValueError(f"epsilon={epsilon!r} is too large to calibrate")
    return r.x


def noise_multiplier_full_batch(epsilon: float, delta: float, steps: int, *, rtol: float = 1e-9) -> float:
    """Smallest sigma (to relative ``rtol``) making ``steps`` full-batch DP-GD steps (epsilon, delta)-DP.

    Sample rate 1, add/remove adjacency. T Gaussian steps of sensitivity C and noise sigma C compose
    exactly into one Gaussian mechanism with mu = sqrt(T) / sigma (Dong et al. 2022, GDP
    composition), so sigma = sqrt(T) / :func:`gdp_mu` (rounded up), with no accountant
    discretisation.

    Args:
      epsilon: eps > 0.
      delta: delta in (0, 1).
      steps: T >= 1.
      rtol: relative precision, > 0 (default 1e-9).

    Returns:
      sigma (the private side: never below the exact value).

    Raises:
      ValueError: if ``epsilon`` is not a finite number > 0, ``delta`` is not in (0, 1), ``steps``
        < 1, or ``rtol`` <= 0.
      TypeError: if an argument has the wrong type.
    """
    eps = check_positive("epsilon", epsilon)
    d = check_probability("delta", delta, high_open=True)
    T = check_int("steps", steps, minimum=1)
    mu = gdp_mu(eps, d, rtol=rtol)
    return float(math.nextafter(math.sqrt(T) / mu, math.inf))
