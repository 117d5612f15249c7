"""Exact reconstruction of a record from a finite set: the quantitative-information-flow bound.

Balle, Cherubin & Hayes 2022 ("Reconstructing Training Data with Informed Adversaries", IEEE S&P),
Sec. VII-F, citing the quantitative-information-flow literature (Alvim, Andres, Chatzikokolakis,
Degano & Palamidessi, "Differential privacy: on the trade-off between utility and information
leakage", Thm 3; Alvim et al., "The Science of Quantitative Information Flow", 2020): when the
target takes one of |Z| values and every two of them give eps-DP neighbouring outputs (the
informed adversary's datasets D- u {z} and D- u {z'} differ by replacing one record), the
multiplicative Bayes leakage of the mechanism is at most

    L = |Z| e^eps / (|Z| - 1 + e^eps),

so the probability of reconstructing the target exactly (l_{0/1}, any eta in [0, 1)) is at most
kappa * L for every prior on Z, kappa = max_z pi(z) being the prior's baseline. The printed
statement reads "gamma <= |Z| e^eps / (|Z| + e^eps - 1)", without the factor kappa: that is the
leakage ratio (it exceeds 1 for eps > 0, and its limit |Z| -> infinity, e^eps, only gives
Cor. 3's kappa e^eps with the factor kappa). Derivation, for a channel C(z, y): the posterior
success is sum_y max_z pi(z) C(z, y) <= kappa sum_y m_y with m_y = max_z C(z, y); eps-DP gives
C(z, y) >= e^-eps m_y for every z, so |Z| = sum_z sum_y C(z, y) >= sum_y m_y (1 + (|Z| - 1) e^-eps).

For a uniform prior on n candidates (kappa = 1/n) this is e^eps / (n - 1 + e^eps), attained by
n-ary randomised response, and smaller than both kappa e^eps and the pure-DP trade-off bound
1 - f_{eps,0}(kappa) (:func:`rerokit.bounds.laplace.rero_pure_dp`), which only use one pair of
candidates. |Z| can be taken as the size of the prior's support. Pure numpy (no torch).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from rerokit._validate import check_int, check_nonnegative
from rerokit.bounds.priors import UniformDiscretePrior, resolve_baseline
from rerokit.bounds.types import Bound

__all__ = ["bayes_leakage_bound", "rero_finite_support"]

_ULP = 2.220446049250313e-16


def _log_leakage(epsilon: float, n: int) -> float:
    """log(n e^eps / (n - 1 + e^eps)) = log n - log1p((n - 1) e^-eps), stable for large eps and n."""
    if n == 1:
        return 0.0
    x = math.log(n - 1) - epsilon  # log((n - 1) e^-eps); math.log takes ints beyond the doubles
    softplus = x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))
    return math.log(n) - softplus


def _support_size(value: Any) -> int:
    """|Z| as an int >= 1. Python ints of any size are accepted (28x28 images of 256 levels are 10^1888
    values): only log|Z| meets floating point, so check_int's float-range limit does not apply."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        n = int(value)
        if n < 1:
            raise ValueError(f"support_size must be an integer >= 1, got {n}")
        return n
    return check_int("support_size", value, minimum=1)


def bayes_leakage_bound(epsilon: float, support_size: int) -> float:
    """The multiplicative Bayes leakage bound |Z| e^eps / (|Z| - 1 + e^eps) of an eps-DP channel on |Z| secrets.

    Alvim et al. (Thm 3), as cited by Balle, Cherubin & Hayes 2022, Sec. VII-F: the posterior
    probability of guessing the secret is at most this factor times the prior's.

    Args:
      epsilon: eps >= 0, finite (eps-DP between every two secrets).
      support_size: |Z|, an integer >= 1 (Python ints of any size are accepted).

    Returns:
      The leakage factor in [1, min(|Z|, e^eps)], rounded up by a few ulps.

    Raises:
      ValueError: if ``epsilon`` is negative or not finite, or ``support_size`` < 1.
      TypeError: if an argument has the wrong type.
    """
    eps = check_nonnegative("epsilon", epsilon)
    n = _support_size(support_size)
    log_leak = _log_leakage(eps, n)
    return math.exp(log_leak) * (1.0 + 8.0 * _ULP) if log_leak < 709.0 else math.inf


def rero_finite_support(epsilon: float, prior: Any = None, *, support_size: int | None = None,
                        kappa: float | None = None, log_kappa: float | None = None) -> Bound:
    """gamma = min(1, kappa |Z| e^eps / (|Z| - 1 + e^eps)) for exact reconstruction from a finite support.

    Balle, Cherubin & Hayes 2022, Sec. VII-F (with the factor kappa, see the module docstring).
    Holds for every attacker when the mechanism is eps-DP under replacing the target record, for
    the 0/1 error (exact reconstruction, any eta in [0, 1)).

    Args:
      epsilon: eps >= 0, finite.
      prior: an int n (uniform over n candidates: |Z| = n, kappa = 1/n) or a
        :class:`~rerokit.bounds.priors.UniformDiscretePrior`; or give ``support_size`` with
        ``kappa`` / ``log_kappa`` instead.
      support_size: |Z|, the number of values the target can take (the prior's support), an
        integer >= 1; required unless ``prior`` is uniform discrete.
      kappa: the prior's largest probability in (0, 1] (its baseline for exact reconstruction).
      log_kappa: natural log of kappa (<= 0), for baselines that underflow.

    Returns:
      A :class:`Bound` (``direction="upper"``, method "finite-support-leakage"), rounded up;
      ``extras``: ``log_gamma``, ``leakage`` (the factor |Z| e^eps / (|Z| - 1 + e^eps)) and
      ``gamma_dp`` (Cor. 3's kappa e^eps, for comparison).

    Raises:
      ValueError: if the baseline is invalid, ``support_size`` is missing for a non-uniform prior or
        too small for the baseline (kappa >= 1/|Z| always: the largest of |Z| probabilities), or
        ``epsilon`` is negative or not finite.
      TypeError: if an argument has the wrong type.
    """
    eps = check_nonnegative("epsilon", epsilon)
    base = resolve_baseline(prior, kappa=kappa, log_kappa=log_kappa)
    if support_size is None:
        if not isinstance(base.prior, UniformDiscretePrior):
            raise ValueError("support_size is required (an integer >= 1, the number of values the target can take) "
                             "unless the prior is uniform over n candidates")
        n = base.prior.n
    else:
        n = _support_size(support_size)
        if isinstance(base.prior, UniformDiscretePrior) and base.prior.n != n:
            raise ValueError(f"support_size={n} differs from the uniform prior's {base.prior.n} candidates")
    lk = base.log_kappa
    if lk < -math.log(n) - 1e-12:
        raise ValueError(f"kappa (the largest prior probability) must be >= 1/support_size = 1/{n}, "
                         f"got log kappa {lk!r}")
    log_leak = _log_leakage(eps, n)
    raw_log = lk + log_leak
    log_g = min(0.0, raw_log + 8.0 * _ULP * (abs(lk) + abs(log_leak) + eps + 1.0))
    value = min(1.0, math.exp(log_g) * (1.0 + 4.0 * _ULP))
    raw = min(1.0, math.exp(raw_log))
    inputs = {"epsilon": eps, "support_size": n, "kappa": base.kappa, "log_kappa": lk}
    leakage = math.exp(log_leak) if log_leak < 709.0 else math.inf  # |Z| beyond the doubles: the factor overflows
    extras = {"log_gamma": log_g, "leakage": leakage, "gamma_dp": min(1.0, math.exp(min(0.0, lk + eps)))}
    return Bound(value, max(0.0, value - raw), "finite-support-leakage", "upper", None, inputs, extras)
