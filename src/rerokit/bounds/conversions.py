"""Conversions between privacy guarantees and reconstruction robustness (ReRo).

A mechanism is (eta, gamma)-ReRo w.r.t. a prior pi and error function l if no adversary
reconstructs the target within error eta with probability above gamma (Balle et al. 2022,
Def. 2). The prior enters only through the baseline kappa = kappa_{pi,l}(eta), the success of
the best guess that ignores the release.

Each bound comes in two forms: ``rero_from_*`` (floats) and ``log_rero_from_*`` (natural logs,
for baselines that underflow, e.g. kappa = 9.66e-473). All return values are capped at 1. A float
form ``rero_from_X(..., kappa)`` is ``exp(log_rero_from_X(..., log kappa))``: the same privacy
parameters, the baseline ``kappa`` in (0, 1] (checked by :func:`check_kappa`) instead of its log,
gamma in (0, 1] rounded up (never below the exact value) as its result, and the errors of its log
form (``TypeError`` for an argument that is not a real number, ``ValueError`` naming one that is
out of range).
numpy/scipy/dp-accounting are imported inside the functions that need them, so that the
closed forms (and ``rerokit bound dp``) load in a few milliseconds.
"""

from __future__ import annotations

import math
from typing import Sequence

from rerokit._validate import check_nonnegative, check_probability, check_real, check_real_array
from rerokit.bounds.priors import check_log_kappa, resolve_baseline
from rerokit.bounds.types import Bound

__all__ = [
    "rero_from_dp",
    "log_rero_from_dp",
    "rero_from_rdp",
    "log_rero_from_rdp",
    "rero_from_rdp_curve",
    "rero_from_rdp_event",
    "rero_from_zcdp",
    "log_rero_from_zcdp",
    "rero_from_gdp",
    "log_rero_from_gdp",
    "log_gdp_power",
    "dp_from_rero",
    "advantage",
    "check_kappa",
    "check_log_kappa",
]


_EPS = 2.220446049250313e-16  # float64 machine epsilon


def _round_up(log_kappa: float, epsilon: float) -> float:
    """Safe-side allowance added to a log gamma computed from log kappa and epsilon: a few ulps of
    the terms (including the rounding of log(kappa) in the float wrappers and of the final exp).
    Without it e.g. rero_from_rdp(32, 7.3, 1e-300) came out 7e-14 (relative) below the exact
    (kappa e^eps)^((alpha-1)/alpha)."""
    return 4.0 * _EPS * (abs(log_kappa) + abs(epsilon) + 1.0)


def check_kappa(kappa: float) -> float:
    """Check that a baseline kappa lies in (0, 1].

    Args:
      kappa: the baseline success probability kappa_{pi,l}(eta) of the best oblivious guess.

    Returns:
      ``kappa`` as a float.

    Raises:
      TypeError: if ``kappa`` is not a real number (a bool counts as not a number).
      ValueError: if ``kappa`` is not finite or not in (0, 1].
    """
    return check_probability("kappa", kappa)


def log_rero_from_dp(epsilon: float, log_kappa: float) -> float:
    """log gamma for eps-DP: gamma = kappa * e^eps (Balle et al. 2022, Cor. 3).

    Args:
      epsilon: the pure-DP parameter eps >= 0 (finite).
      log_kappa: natural log of the baseline kappa, a finite number <= 0.

    Returns:
      log gamma = min(0, log kappa + eps), rounded up by a few ulps (never below the exact value).

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``epsilon`` is negative or not finite, or ``log_kappa`` is > 0 or not finite.
    """
    eps = check_nonnegative("epsilon", epsilon)
    lk = check_log_kappa(log_kappa)
    return min(0.0, lk + eps + _round_up(lk, eps))


def rero_from_dp(epsilon: float, kappa: float) -> float:
    """gamma = min(1, kappa * e^eps) for an eps-DP mechanism (Balle et al. 2022, Cor. 3).

    The float form of :func:`log_rero_from_dp` (see the module docstring): ``epsilon`` >= 0 (finite)
    and ``kappa`` in (0, 1] give gamma in (0, 1], rounded up.
    """
    return math.exp(log_rero_from_dp(epsilon, math.log(check_kappa(kappa))))


def log_rero_from_rdp(alpha: float, epsilon: float, log_kappa: float) -> float:
    """log gamma for (alpha, eps)-RDP: gamma = (kappa e^eps)^((alpha-1)/alpha) (Balle et al. 2022, Thm 2).

    Args:
      alpha: the Renyi order, a finite number > 1.
      epsilon: the RDP parameter eps(alpha) >= 0 (finite).
      log_kappa: natural log of the baseline kappa, a finite number <= 0.

    Returns:
      log gamma = min(0, (log kappa + eps) (alpha - 1)/alpha), rounded up by a few ulps.

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``alpha`` is not a finite number > 1, ``epsilon`` is negative or not finite, or
        ``log_kappa`` is > 0 or not finite.
    """
    a = check_real("alpha", alpha)
    if not a > 1:
        raise ValueError(f"alpha must be a finite number > 1, got {alpha!r}")
    eps = check_nonnegative("epsilon", epsilon)
    lk = check_log_kappa(log_kappa)
    return min(0.0, (lk + eps) * (a - 1.0) / a + _round_up(lk, eps))


def rero_from_rdp(alpha: float, epsilon: float, kappa: float) -> float:
    """gamma = min(1, (kappa e^eps)^((alpha-1)/alpha)) (Balle et al. 2022, Thm 2).

    The float form of :func:`log_rero_from_rdp` (see the module docstring): the Renyi order ``alpha``
    > 1, ``epsilon`` = eps(alpha) >= 0 and ``kappa`` in (0, 1] give gamma in (0, 1], rounded up.
    """
    return math.exp(log_rero_from_rdp(alpha, epsilon, math.log(check_kappa(kappa))))


def rero_from_rdp_curve(
    orders: Sequence[float], rdp: Sequence[float], kappa: float | None = None, *, log_kappa: float | None = None
) -> tuple[float, float]:
    """Best Thm-2 bound over an RDP curve: min over alpha of (kappa e^{eps(alpha)})^((alpha-1)/alpha).

    Balle et al. 2022, Thm 2, evaluated at every order of the curve. An order alpha = inf is read as
    eps-DP (exponent 1, Cor. 3). Each candidate is rounded up by a few ulps, as the single-order
    functions.

    Args:
      orders: RDP orders alpha, a non-empty 1-D sequence of numbers > 1 (as produced by dp-accounting's
        ``RdpAccountant``; inf allowed).
      rdp: RDP values eps(alpha) >= 0 for each order, same length as ``orders``; infinite values are
        allowed and skipped.
      kappa: the baseline success, in (0, 1].
      log_kappa: natural log of kappa (<= 0), for baselines that underflow. Give exactly one of
        ``kappa`` / ``log_kappa``.

    Returns:
      ``(gamma, best_alpha)``: the smallest bound (an upper bound on the success, capped at 1) and
      the order that attains it; gamma is 1 when no order gives a non-trivial bound.

    Raises:
      TypeError: if ``orders``/``rdp`` are not arrays of real numbers, or the baseline is not a number.
      ValueError: if the shapes differ or are not 1-D and non-empty, an order is not > 1 (or nan), an
        RDP value is negative or nan, or not exactly one valid ``kappa``/``log_kappa`` is given.
    """
    import numpy as np

    lk = resolve_baseline(kappa=kappa, log_kappa=log_kappa).log_kappa
    a = check_real_array("orders", orders)
    e = check_real_array("rdp", rdp)
    if a.shape != e.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("orders and rdp must be 1-D sequences of the same non-zero length")
    if np.any(~(a > 1)) or np.any(np.isnan(a)):
        raise ValueError("orders must all be > 1")
    if np.any(np.isnan(e)) or np.any(e < 0):
        raise ValueError("rdp values must be >= 0 (inf allowed)")
    with np.errstate(invalid="ignore"):
        # alpha = inf is eps-DP: exponent (alpha - 1)/alpha -> 1 (Cor. 3).
        ratio = np.where(np.isinf(a), 1.0, (a - 1.0) / a)
        slack = 4.0 * _EPS * (abs(lk) + np.abs(e) + 1.0)  # float round-off, as _round_up
        logs = np.where(np.isfinite(e), (lk + e) * ratio + slack, np.inf)
    i = int(np.argmin(logs))
    return float(math.exp(min(0.0, logs[i]))), float(a[i])


def rero_from_rdp_event(
    event: object,
    kappa: float | None = None,
    orders: Sequence[float] | None = None,
    *,
    log_kappa: float | None = None,
    neighboring_relation: str = "add_or_remove_one",
) -> Bound:
    """Thm-2 bound for any dp-accounting ``DpEvent``: gamma = min_alpha (kappa e^{eps(alpha)})^((alpha-1)/alpha).

    The event is composed in an ``RdpAccountant`` and the best order taken.

    Thm 2 (Balle et al. 2022) only needs E_{theta~Q}[(p(theta|z)/q(theta))^alpha] <=
    e^{(alpha-1) eps} for a reference distribution Q that does not depend on the target: its
    proof uses Q = M(D_- u {z0}) (replace-one adjacency), and the same steps hold with
    Q = M(D_-) (add/remove adjacency, the default of dp-accounting and of DP-SGD accounting; this
    is the reference Hayes et al. 2023 use).

    Args:
      event: a dp-accounting ``DpEvent`` describing the mechanism (e.g. a ``SelfComposedDpEvent`` of a
        ``PoissonSampledDpEvent``).
      kappa: the baseline success, in (0, 1].
      orders: RDP orders (each > 1); None (default) uses dp-accounting's DEFAULT_RDP_ORDERS.
      log_kappa: natural log of kappa (<= 0), for baselines that underflow. Give exactly one of
        ``kappa`` / ``log_kappa``.
      neighboring_relation: adjacency passed to the accountant: "add_or_remove_one" (default),
        "replace_one" or "replace_special".

    Returns:
      A :class:`Bound` with ``value`` gamma (an upper bound, capped at 1; ``direction="upper"``) and
      ``extras`` best_alpha, rdp_at_best_alpha and kappa.

    Raises:
      TypeError: if ``event`` is not a dp-accounting ``DpEvent``.
      ValueError: if ``neighboring_relation`` is unknown, ``orders`` is not a non-empty 1-D sequence of
        numbers > 1, the baseline is invalid, or the RDP accountant cannot handle the event.
    """
    import numpy as np
    from dp_accounting import dp_event as _dpe
    from dp_accounting import privacy_accountant as _pa
    from dp_accounting.rdp import rdp_privacy_accountant as _rdp

    if not isinstance(event, _dpe.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    rels = {
        "add_or_remove_one": _pa.NeighboringRelation.ADD_OR_REMOVE_ONE,
        "replace_one": _pa.NeighboringRelation.REPLACE_ONE,
        "replace_special": _pa.NeighboringRelation.REPLACE_SPECIAL,
    }
    if neighboring_relation not in rels:
        raise ValueError(f"neighboring_relation must be one of {', '.join(rels)}; got {neighboring_relation!r}")
    lk = resolve_baseline(kappa=kappa, log_kappa=log_kappa).log_kappa
    if orders is not None:
        o = check_real_array("orders", orders)
        if o.ndim != 1 or o.size == 0 or np.any(np.isnan(o)) or np.any(~(o > 1)):
            raise ValueError("orders must be a non-empty 1-D sequence of numbers > 1")
    acc = _rdp.RdpAccountant(None if orders is None else list(orders), rels[neighboring_relation])
    if not acc.supports(event):
        raise ValueError(f"event is not supported by dp-accounting's RdpAccountant "
                         f"({neighboring_relation}): {event}")
    acc.compose(event)
    gamma, best = rero_from_rdp_curve(acc.orders, acc.rdp, log_kappa=lk)
    i = int(np.argmin(np.abs(acc.orders - best)))
    return Bound(
        value=gamma,
        error=0.0,
        method="rdp_curve_thm2",
        direction="upper",
        inputs={"event": str(event), "log_kappa": lk, "neighboring_relation": neighboring_relation},
        extras={"best_alpha": best, "rdp_at_best_alpha": float(acc.rdp[i]), "kappa": math.exp(lk)},
    )


def log_rero_from_zcdp(rho: float, log_kappa: float) -> float:
    """log gamma for rho-zCDP: gamma = exp(-(sqrt(log 1/kappa) - sqrt(rho))^2) (Balle et al. 2022, Cor. 4).

    The bound holds when rho < log(1/kappa); otherwise gamma = 1.

    Args:
      rho: the zCDP parameter rho >= 0 (finite).
      log_kappa: natural log of the baseline kappa, a finite number <= 0.

    Returns:
      log gamma (<= 0), rounded up by a few ulps; 0 when rho >= log(1/kappa).

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``rho`` is negative or not finite, or ``log_kappa`` is > 0 or not finite.
    """
    r = check_nonnegative("rho", rho)
    lk = check_log_kappa(log_kappa)
    if r >= -lk:
        return 0.0
    return min(0.0, -((math.sqrt(-lk) - math.sqrt(r)) ** 2) + 2.0 * _round_up(lk, r))


def rero_from_zcdp(rho: float, kappa: float) -> float:
    """gamma for a rho-zCDP mechanism (Balle et al. 2022, Cor. 4).

    gamma = exp(-(sqrt(log 1/kappa) - sqrt(rho))^2) when rho < log(1/kappa), else 1; the float form of
    :func:`log_rero_from_zcdp` (see the module docstring) for ``rho`` >= 0 (finite) and ``kappa`` in
    (0, 1], rounded up.
    """
    return math.exp(log_rero_from_zcdp(rho, math.log(check_kappa(kappa))))


def log_rero_from_gdp(mu: float, log_kappa: float) -> float:
    """log gamma for mu-GDP: gamma = Phi(Phi^{-1}(kappa) + mu) (Dong et al. 2022; Kaissis et al. 2023).

    gamma is the power at level kappa of the optimal test between N(0,1) and N(mu,1). Exact, not
    just an upper bound: it is attained by the Gaussian mechanism. Stable for tiny kappa.

    Rounded up: z = Phi^{-1}(kappa) is nudged until log Phi(z) >= log kappa beyond log_ndtr's
    round-off (scipy's ndtri_exp alone was measured up to 3.7e-10 low in log gamma at
    log kappa = -1e4, 4.6e-13 at -1000), and the result gets the rounding of z + mu and of
    log_ndtr on top, so the value is never below Phi(Phi^{-1}(kappa) + mu).

    Args:
      mu: the GDP parameter mu >= 0 (finite).
      log_kappa: natural log of the baseline kappa, a finite number <= 0.

    Returns:
      log gamma (<= 0), never below the exact value.

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``mu`` is negative or not finite, or ``log_kappa`` is > 0 or not finite.
    """
    return log_gdp_power(mu, log_kappa, upward=True)


def log_gdp_power(mu: float, log_kappa: float, *, upward: bool = True) -> float:
    """log Phi(Phi^{-1}(kappa) + mu), rounded up or down: the power of the mu-GDP test at level kappa.

    With ``upward=True`` this is :func:`log_rero_from_gdp`. With ``upward=False`` z is nudged until
    log Phi(z) <= log kappa beyond round-off and the result loses its rounding: never above the
    exact value, never below log kappa.

    Args:
      mu: the GDP parameter mu >= 0 (finite).
      log_kappa: natural log of the level kappa, a finite number <= 0.
      upward: True (default) to round up (for upper bounds), False to round down (for lower bounds).

    Returns:
      log Phi(Phi^{-1}(kappa) + mu) in [log kappa, 0] (0 when log_kappa = 0), on the side chosen by
      ``upward``.

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``mu`` is negative or not finite, or ``log_kappa`` is > 0 or not finite.
    """
    from scipy.special import log_ndtr, ndtri_exp

    m = check_nonnegative("mu", mu)
    lk = check_log_kappa(log_kappa)
    if lk == 0.0:
        return 0.0
    eps = 2.220446049250313e-16
    sgn = 1.0 if upward else -1.0
    half_log_2pi = 0.5 * math.log(2.0 * math.pi)

    def ratio(x: float, log_cdf: float) -> float:  # d log Phi / dx = phi(x) / Phi(x)
        if x < -1e5:  # phi/Phi = |x| (1 + 1/x^2 + ...): avoid cancelling two ~x^2/2 terms
            return -x * (1.0 + 1e-9)
        return math.exp(-0.5 * x * x - half_log_2pi - log_cdf)

    z = float(ndtri_exp(lk))
    target = lk * (1.0 - sgn * 8.0 * eps)  # log_ndtr is accurate to a few ulps (relative)
    for _ in range(100):  # Newton on the concave log Phi (from below when rounding up), small overshoot
        lz = float(log_ndtr(z))
        if sgn * (lz - target) >= 0.0:
            break
        r = ratio(z, lz)
        step = 1.01 * (target - lz) / r if r > 0 else 0.0
        z += step + sgn * 4.0 * eps * max(1.0, abs(z))
    else:  # pragma: no cover - not reached in tests; the trivial bounds are always valid
        return 0.0 if upward else lk
    x = z + m
    lg = float(log_ndtr(x))
    lg += sgn * (ratio(x, lg) * 4.0 * eps * (abs(z) + m) + 8.0 * eps * (abs(lg) + 1e-300))
    return float(min(0.0, lg)) if upward else float(max(lk, min(0.0, lg)))


def rero_from_gdp(mu: float, kappa: float) -> float:
    """gamma = Phi(Phi^{-1}(kappa) + mu) for a mu-GDP mechanism (Dong et al. 2022; Kaissis et al. 2023).

    Exact (attained by the Gaussian mechanism) and rounded up: the float form of
    :func:`log_rero_from_gdp` (see the module docstring) for ``mu`` >= 0 (finite) and ``kappa`` in (0, 1].
    """
    return math.exp(log_rero_from_gdp(mu, math.log(check_kappa(kappa))))


def dp_from_rero(gamma: float, epsilon: float) -> float:
    """delta = max(0, (e^eps + 1) gamma - e^eps): ReRo back to (eps, delta)-DP (Balle et al. 2022, Thm 5).

    (eta, gamma)-ReRo against all two-point priors with p = 1/(e^eps + 1) implies (eps, delta)-DP.
    Computed as gamma - e^eps (1 - gamma) (no cancellation, no overflow).

    Args:
      gamma: the ReRo success bound, in [0, 1].
      epsilon: the DP parameter eps >= 0 (finite).

    Returns:
      delta in [0, 1] (1 when gamma = 1).

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``gamma`` is not in [0, 1] or ``epsilon`` is negative or not finite.
    """
    g = check_probability("gamma", gamma, low_open=False)
    eps = check_nonnegative("epsilon", epsilon)
    # (e^eps + 1) gamma - e^eps = gamma - e^eps (1 - gamma): no cancellation, no overflow.
    if g == 1.0:
        return 1.0
    e = math.exp(eps) if eps < 700 else math.inf
    return max(0.0, g - e * (1.0 - g))


def advantage(gamma: float, kappa: float) -> float:
    """Normalised advantage (gamma - kappa) / (1 - kappa) (Guo et al. 2022b; Hayes et al. 2023 App. H).

    Defined as 0 when kappa = 1. ``kappa`` may be 0 (a baseline that underflows, e.g. 9.66e-473);
    the result is clipped to [0, 1] (a bound computed in floating point may sit an ulp below kappa).

    Args:
      gamma: the success bound, in [0, 1].
      kappa: the baseline success, in [0, 1].

    Returns:
      (gamma - kappa) / (1 - kappa) in [0, 1].

    Raises:
      TypeError: if an argument is not a real number.
      ValueError: if ``gamma`` or ``kappa`` is not in [0, 1].
    """
    k = check_probability("kappa", kappa, low_open=False)
    g = check_probability("gamma", gamma, low_open=False)
    return 0.0 if k == 1.0 else min(1.0, max(0.0, (g - k) / (1.0 - k)))
