"""Empirical lower bounds on privacy parameters from an audit's measured attack success.

An audit runs an attack against the trained mechanism and measures how often it succeeds
(Jagielski, Ullman & Oprea 2020; Nasr et al. 2021 "Adversary instantiation": a measured attack
refutes every privacy guarantee that would forbid it). Let s_lo be a one-sided lower confidence
end (at confidence c) of the success probability of an attack whose baseline - the best success
without the release, e.g. 1/k for k equally likely candidates - is kappa. Each guarantee below
implies an upper bound on the success of *every* attack at baseline kappa; a guarantee whose
bound is below s_lo is refuted at confidence c:

* mu-GDP: success <= Phi(Phi^-1(kappa) + mu), the power at level kappa of the Gaussian
  trade-off curve (Dong, Roth & Su 2022, Eq. 6; reconstruction reading: Hayes et al. 2023, Sec.
  3; Kulynych et al. 2025). Hence the mechanism is not mu-GDP for any
  mu < mu_lo = Phi^-1(s_lo) - Phi^-1(kappa) (mu_lo = 0 when s_lo <= kappa).
* (eps, delta)-DP: success <= e^eps kappa + delta: for every target z the success event has
  probability <= e^eps P(event under the run without z) + delta, and the run without z cannot
  beat the baseline (Balle, Cherubin & Hayes 2022, Cor. 3, which states delta = 0; the delta
  term is the standard (eps, delta) relaxation of the same argument). Hence not (eps, delta)-DP
  for any eps < eps_lo = log((s_lo - delta) / kappa) (0 when s_lo - delta <= kappa).

Both are monotone in s_lo, and with s_lo the true (or any certified upper) success of the best
attack they recover at most the mechanism's own mu / eps (tests). Confidence: with the
one-sided Clopper-Pearson lower end (:func:`rerokit.stats.clopper_pearson_lower`) of k
successes in n independent trials, the refutation holds with probability >= c. Values are
rounded down (a lower bound must not be overstated by floating-point error).
"""

from __future__ import annotations

import math
from typing import Any

from rerokit._validate import check_probability
from rerokit.bounds.priors import resolve_baseline

__all__ = ["mu_gdp_lower", "epsilon_lower", "audit_lower_bounds"]

_EPS = 2.220446049250313e-16


def mu_gdp_lower(success_lower: float, kappa: float | None = None, *, log_kappa: float | None = None) -> float:
    """Largest mu such that the mechanism cannot be mu-GDP: Phi^-1(s_lo) - Phi^-1(kappa), >= 0.

    Args:
      success_lower: lower confidence end s_lo of the attack's success probability, in [0, 1].
      kappa: the attack's baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa``.
      log_kappa: natural log of kappa (<= 0), for tiny baselines.

    Returns:
      mu_lo >= 0 (``inf`` when s_lo = 1 > kappa: no finite mu allows certain success), rounded down;
      0 when s_lo <= kappa.

    Raises:
      ValueError: if ``success_lower`` is not in [0, 1], or not exactly one valid baseline is given.
      TypeError: if a value is not a real number.
    """
    from scipy.special import ndtri, ndtri_exp

    s = check_probability("success_lower", success_lower, low_open=False)
    lk = resolve_baseline(kappa=kappa, log_kappa=log_kappa).log_kappa
    if s <= math.exp(lk) or s == 0.0:
        return 0.0
    if s == 1.0:
        return math.inf if lk < 0.0 else 0.0
    z_s = -float(ndtri(1.0 - s)) if s > 0.5 else float(ndtri(s))  # 1 - s is exact for s > 1/2
    z_k = float(ndtri_exp(lk))
    mu = z_s - z_k
    return max(0.0, mu - 64.0 * _EPS * (1.0 + abs(z_s) + abs(z_k)))


def epsilon_lower(
    success_lower: float, kappa: float | None = None, *, delta: float = 0.0, log_kappa: float | None = None
) -> float:
    """Largest eps such that the mechanism cannot be (eps, delta)-DP: log((s_lo - delta) / kappa), >= 0.

    Args:
      success_lower: lower confidence end s_lo of the attack's success probability, in [0, 1].
      kappa: the attack's baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa``.
      delta: the delta of the refuted guarantees, in [0, 1) (default 0: pure DP).
      log_kappa: natural log of kappa (<= 0), for tiny baselines.

    Returns:
      eps_lo >= 0, rounded down (0 when s_lo - delta <= kappa).

    Raises:
      ValueError: if ``success_lower`` is not in [0, 1], ``delta`` not in [0, 1), or not exactly one
        valid baseline is given.
      TypeError: if a value is not a real number.
    """
    s = check_probability("success_lower", success_lower, low_open=False)
    d = check_probability("delta", delta, low_open=False, high_open=True)
    lk = resolve_baseline(kappa=kappa, log_kappa=log_kappa).log_kappa
    x = s - d
    if x <= 0.0:
        return 0.0
    eps = math.log(x) - lk
    return max(0.0, eps - 8.0 * _EPS * (1.0 + abs(math.log(x)) + abs(lk)))


def audit_lower_bounds(
    successes: int,
    trials: int,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    confidence: float = 0.95,
    delta: float = 1e-5,
) -> dict[str, Any]:
    """mu_lo and eps_lo from k successes in n independent attack trials at baseline kappa.

    Args:
      successes: k, the number of successful trials (0 <= k <= n).
      trials: n, the number of independent trials (n >= 1).
      kappa: the baseline success in (0, 1]. Give exactly one of ``kappa`` / ``log_kappa``.
      log_kappa: natural log of kappa (<= 0), for tiny baselines.
      confidence: one-sided confidence c in (0, 1) of the Clopper-Pearson lower end (default 0.95).
      delta: delta of the refuted (eps, delta)-DP guarantees, in [0, 1) (default 1e-5).

    Returns:
      JSON-ready dict: ``success_lower`` (one-sided Clopper-Pearson), ``mu_gdp_lower``,
      ``epsilon_lower`` (at ``delta``), with the inputs echoed (``successes``, ``trials``,
      ``confidence``, ``log_kappa``, ``delta``). Both lower bounds hold with probability >= c.

    Raises:
      ValueError: if a count, ``confidence``, ``delta`` or the baseline is out of range.
      TypeError: if a count is not an integer or a value is not a number.
    """
    from rerokit.stats import clopper_pearson_lower

    lk = resolve_baseline(kappa=kappa, log_kappa=log_kappa).log_kappa
    s_lo = clopper_pearson_lower(successes, trials, confidence)
    return {
        "successes": int(successes),
        "trials": int(trials),
        "confidence": float(confidence),
        "log_kappa": lk,
        "success_lower": s_lo,
        "mu_gdp_lower": mu_gdp_lower(s_lo, log_kappa=lk),
        "epsilon_lower": epsilon_lower(s_lo, log_kappa=lk, delta=delta),
        "delta": float(delta),
    }
