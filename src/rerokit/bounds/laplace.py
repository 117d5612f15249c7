"""Exact reconstruction-risk bound of the Laplace mechanism from its trade-off curve.

A pure epsilon-DP release only gets Balle et al. 2022, Cor. 3, gamma <= kappa e^eps, from its
(epsilon, 0) guarantee. The Laplace mechanism is tighter: a one-dimensional query of sensitivity
Delta released with Laplace noise of scale b is f-DP (Dong, Roth & Su 2022, "Gaussian
differential privacy", JRSS-B, Sec. 2.3 / App.) for the trade-off curve of Lap(0, b) against
Lap(Delta, b); with eps = Delta / b,

    f_eps(alpha) = 1 - e^eps alpha          for alpha <  e^-eps / 2,
                   e^-eps / (4 alpha)       for e^-eps / 2 <= alpha <= 1/2,
                   e^-eps (1 - alpha)       for alpha >  1/2.

(The most powerful test rejects Lap(0, b) for large outcomes; the three pieces are the rejection
thresholds above Delta, inside [0, Delta] and below 0.) Every f-DP mechanism is (eta, gamma)-ReRo
for any prior of baseline kappa with gamma = 1 - f(kappa) (Kaissis, Hayes, Ziller & Rueckert 2023,
"Bounding data reconstruction attacks with the hypothesis testing interpretation of differential
privacy"), so the Laplace mechanism has

    gamma = e^eps kappa                     for kappa <  e^-eps / 2   (= Cor. 3),
            1 - e^-eps / (4 kappa)           for e^-eps / 2 <= kappa <= 1/2,
            1 - e^-eps (1 - kappa)           for kappa >  1/2,

which is below kappa e^eps as soon as kappa > e^-eps / 2, and below the bound that any
eps-DP mechanism gets from its trade-off curve f_{eps,0}(alpha) = max(0, 1 - e^eps alpha,
e^-eps (1 - alpha)) (Dong et al. 2022, Def. 2.3 / Wasserman & Zhou 2010), which is
:func:`pure_dp_tradeoff` here. Both curves are exact: the Laplace one is attained by the Laplace
mechanism, the pure-DP one by randomised response.

Scope: a *one-dimensional* Laplace release (or a d-dimensional one whose worst-case pair of
neighbouring outputs differs in one coordinate). A d-dimensional Laplace mechanism calibrated to
l1 sensitivity is eps-DP; use :func:`rero_pure_dp` for it unless its worst case is known to be a
one-coordinate shift. Pure numpy (no torch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rerokit._validate import check_nonnegative, check_positive, check_real_array
from rerokit.bounds.conversions import log_rero_from_dp
from rerokit.bounds.priors import resolve_baseline
from rerokit.bounds.types import Bound

__all__ = [
    "laplace_epsilon",
    "laplace_tradeoff",
    "pure_dp_tradeoff",
    "rero_laplace",
    "rero_pure_dp",
]

_LOG2 = math.log(2.0)
_ULP = 2.220446049250313e-16


def laplace_epsilon(scale: float, sensitivity: float = 1.0) -> float:
    """eps = Delta / b of a Laplace release with noise scale b and sensitivity Delta.

    Args:
      scale: the Laplace scale b > 0 (standard deviation sqrt(2) b).
      sensitivity: the query's sensitivity Delta >= 0 (default 1).

    Returns:
      epsilon = Delta / b (the release is eps-DP and f_eps-DP for :func:`laplace_tradeoff`).

    Raises:
      ValueError: if ``scale`` is not a finite number > 0, ``sensitivity`` not finite and >= 0, or the
        ratio is not finite.
      TypeError: if an argument is not a real number.
    """
    b = check_positive("scale", scale)
    d = check_nonnegative("sensitivity", sensitivity)
    eps = d / b
    if not math.isfinite(eps):
        raise ValueError(f"sensitivity / scale must be finite, got {d!r} / {b!r}")
    return eps


def _alphas(alpha: Any) -> np.ndarray:
    a = check_real_array("alpha", alpha)
    if a.size and (np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1)):
        raise ValueError("alpha must be in [0, 1] (type-I errors)")
    return a


def _out(x: np.ndarray, like: Any) -> float | np.ndarray:
    return float(x) if np.ndim(like) == 0 else x


def laplace_tradeoff(alpha: float | np.ndarray, epsilon: float) -> float | np.ndarray:
    """The trade-off curve f_eps(alpha) of Lap(0, b) vs Lap(eps b, b) (Dong, Roth & Su 2022).

    The smallest type-II error of any test of "Lap(0, b)" against "Lap(eps b, b)" at type-I error
    alpha: 1 - e^eps alpha (alpha < e^-eps/2), e^-eps/(4 alpha) (e^-eps/2 <= alpha <= 1/2),
    e^-eps (1 - alpha) (alpha > 1/2). Symmetric (f(f(alpha)) = alpha), convex, continuous.

    Args:
      alpha: type-I error(s) in [0, 1], a number or an array.
      epsilon: eps = sensitivity / scale, a finite number >= 0.

    Returns:
      beta = f_eps(alpha): a float for a scalar ``alpha``, else an array of its shape.

    Raises:
      ValueError: if an alpha is outside [0, 1] or not finite, or ``epsilon`` is negative or not finite.
      TypeError: if an argument is not a real number.
    """
    eps = check_nonnegative("epsilon", epsilon)
    a = _alphas(alpha)
    e_m = math.exp(-eps)
    knee = 0.5 * e_m
    safe = np.where(a > 0, a, 1.0)  # alpha = 0 lies in the first piece: beta = 1
    with np.errstate(over="ignore"):
        low = np.where(a > 0, 1.0 - np.exp(eps + np.log(safe)), 1.0)  # e^eps alpha without overflowing e^eps
    mid = e_m / (4.0 * safe)
    high = e_m * (1.0 - a)
    beta = np.where(a < knee, low, np.where(a <= 0.5, mid, high))
    return _out(np.clip(beta, 0.0, 1.0), alpha)


def pure_dp_tradeoff(alpha: float | np.ndarray, epsilon: float) -> float | np.ndarray:
    """f_{eps,0}(alpha) = max(0, 1 - e^eps alpha, e^-eps (1 - alpha)): the curve of any eps-DP mechanism.

    Dong, Roth & Su 2022, Def. 2.3 / Prop. 2.5 (Wasserman & Zhou 2010): a mechanism is eps-DP iff
    it is f_{eps,0}-DP; attained by randomised response.

    Args:
      alpha: type-I error(s) in [0, 1], a number or an array.
      epsilon: the pure-DP epsilon, a finite number >= 0.

    Returns:
      beta: a float for a scalar ``alpha``, else an array of its shape.

    Raises:
      ValueError, TypeError: as :func:`laplace_tradeoff`.
    """
    eps = check_nonnegative("epsilon", epsilon)
    a = _alphas(alpha)
    safe = np.where(a > 0, a, 1.0)
    with np.errstate(over="ignore"):
        line = np.where(a > 0, 1.0 - np.exp(eps + np.log(safe)), 1.0)  # 1 - e^eps alpha without overflowing e^eps
    beta = np.maximum(0.0, np.maximum(line, math.exp(-eps) * (1.0 - a)))
    return _out(beta, alpha)


def _log_small_region(lk: float, eps: float) -> float:
    """log(kappa e^eps) rounded up (a few ulps of the magnitudes added)."""
    return lk + eps + 4.0 * _ULP * (abs(lk) + eps + 1.0)


def rero_laplace(epsilon: float, kappa: float | None = None, *, log_kappa: float | None = None,
                 prior: Any = None) -> Bound:
    """ReRo bound gamma = 1 - f_eps(kappa) of a one-dimensional Laplace release (exact for this mechanism).

    Kaissis, Hayes, Ziller & Rueckert 2023 (gamma = 1 - f(kappa) for an f-DP mechanism) with the
    Laplace trade-off curve of Dong, Roth & Su 2022 (see the module docstring). The bound holds
    for every attacker and every prior of baseline kappa against a Laplace release of scale b and
    sensitivity Delta with eps = Delta / b (for the informed adversary of Balle et al. 2022 Def. 1,
    Delta is the largest change of the query when the target record is replaced).

    Args:
      epsilon: eps = Delta / b, a finite number >= 0 (see :func:`laplace_epsilon`).
      kappa: the prior's baseline in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa`` / ``prior``.
      log_kappa: natural log of kappa (<= 0), for baselines that underflow.
      prior: a prior (an int n = uniform over n candidates, or a rerokit ``Prior``).

    Returns:
      A :class:`Bound` (``direction="upper"``, method "laplace-tradeoff"): ``value`` gamma rounded up
      by a few ulps (``error`` that margin); ``extras``: ``log_gamma``, ``region`` ("kappa e^eps",
      "1 - e^-eps/(4 kappa)" or "1 - e^-eps (1 - kappa)"), ``gamma_dp`` (Balle et al. 2022, Cor. 3,
      min(1, kappa e^eps)) and ``gamma_pure_dp_curve`` (1 - f_{eps,0}(kappa), what any eps-DP
      mechanism gets).

    Raises:
      ValueError: if ``epsilon`` is negative or not finite, or the baseline is invalid.
      TypeError: if an argument has the wrong type.
    """
    eps = check_nonnegative("epsilon", epsilon)
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk, kap = base.log_kappa, base.kappa
    if lk < -eps - _LOG2:  # kappa < e^-eps / 2: the Cor. 3 line
        log_g = _log_small_region(lk, eps)
        value = min(1.0, math.exp(log_g) * (1.0 + 4.0 * _ULP))
        raw, region = math.exp(lk + eps), "kappa e^eps"
    else:
        if lk <= -_LOG2:  # e^-eps / (4 kappa) in log space: kappa may underflow here when eps is huge
            raw, region = 1.0 - math.exp(-eps - 2.0 * _LOG2 - lk), "1 - e^-eps/(4 kappa)"
        else:
            raw, region = 1.0 - math.exp(-eps) * (1.0 - kap), "1 - e^-eps (1 - kappa)"
        value = min(1.0, raw + 4.0 * _ULP)  # raw >= 1/2: absolute rounding of the few operations
        log_g = math.log(value)
    inputs = {"epsilon": eps, "kappa": kap, "log_kappa": lk, **base.echo()}
    extras = {
        "log_gamma": log_g,
        "region": region,
        "gamma_dp": math.exp(log_rero_from_dp(eps, lk)),
        "gamma_pure_dp_curve": rero_pure_dp(eps, log_kappa=lk).value,
    }
    return Bound(value, max(0.0, value - raw), "laplace-tradeoff", "upper", None, inputs, extras)


def rero_pure_dp(epsilon: float, kappa: float | None = None, *, log_kappa: float | None = None,
                 prior: Any = None) -> Bound:
    """ReRo bound gamma = 1 - f_{eps,0}(kappa) = min(kappa e^eps, 1 - e^-eps (1 - kappa)) of any eps-DP mechanism.

    Kaissis, Hayes, Ziller & Rueckert 2023 with the pure-DP trade-off curve (:func:`pure_dp_tradeoff`);
    the first term is Balle et al. 2022, Cor. 3, the second is smaller for kappa > 1 / (1 + e^eps).
    Tight: attained by binary randomised response.

    Args:
      epsilon: eps >= 0, finite (the mechanism is eps-DP under the adjacency of the attack: replacing
        the target record).
      kappa, log_kappa, prior: the baseline, as in :func:`rero_laplace`.

    Returns:
      A :class:`Bound` (``direction="upper"``, method "pure-dp-tradeoff"), rounded up; ``extras``:
      ``log_gamma``.

    Raises:
      ValueError, TypeError: as :func:`rero_laplace`.
    """
    eps = check_nonnegative("epsilon", epsilon)
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    lk, kap = base.log_kappa, base.kappa
    if lk < -eps - math.log1p(math.exp(-eps)):  # kappa < 1/(1 + e^eps): kappa e^eps is the smaller
        log_g = _log_small_region(lk, eps)
        value = min(1.0, math.exp(log_g) * (1.0 + 4.0 * _ULP))
        raw = math.exp(lk + eps)
    else:
        raw = 1.0 - math.exp(-eps) * (1.0 - kap)
        value = min(1.0, raw + 4.0 * _ULP)
        log_g = math.log(value)
    inputs = {"epsilon": eps, "kappa": kap, "log_kappa": lk, **base.echo()}
    return Bound(value, max(0.0, value - raw), "pure-dp-tradeoff", "upper", None, inputs, {"log_gamma": log_g})
