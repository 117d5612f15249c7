"""Calibrate DP-SGD to a target reconstruction risk (Hayes et al. 2023, Thm 2 / Cor. 3).

``calibrate_noise_multiplier``: the smallest noise multiplier sigma whose certified ReRo bound
gamma(sigma, q, T, kappa) (:func:`rerokit.bounds.dpsgd.rero_dpsgd`, method "exact") is at most a
target; ``calibrate_steps``: the largest number of steps T with gamma <= target. Both search on
the *certified upper* value, so the returned setting provably meets the target (up to float
round-off), and report the (epsilon, delta) of the result from dp-accounting's PLD accountant.

``noise_multiplier_for_epsilon``: the smallest sigma meeting (epsilon, delta)-DP under
dp-accounting's PLD accountant (``dp_accounting.mechanism_calibration``, which guarantees the
returned value is on the private side).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rerokit._validate import check_int, check_nonnegative, check_positive, check_probability
from rerokit.bounds.conversions import check_kappa, check_log_kappa

__all__ = [
    "CalibrationResult",
    "calibrate_noise_multiplier",
    "calibrate_steps",
    "noise_multiplier_for_epsilon",
]


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated DP-SGD setting and its certified bound.

    ``gamma`` is the certified upper bound at the returned setting (<= ``target_gamma``),
    ``gamma_error`` its bracket width; ``epsilon`` at ``delta`` from dp-accounting's PLD
    accountant (None when not computed). ``bracket``: the last search interval (sigma or T)
    whose upper/lower end is infeasible.
    """

    noise_multiplier: float
    sample_rate: float
    steps: int
    kappa: float
    log_kappa: float
    target_gamma: float
    gamma: float
    gamma_error: float
    epsilon: float | None
    delta: float
    bracket: tuple[float, float]
    evaluations: int
    capped: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bracket"] = list(self.bracket)
        return d


def _log_kappa(kappa: float | None, log_kappa: float | None) -> float:
    if (kappa is None) == (log_kappa is None):
        raise ValueError("give exactly one of kappa (in (0, 1]) or log_kappa (<= 0)")
    return math.log(check_kappa(kappa)) if kappa is not None else check_log_kappa(log_kappa)


def _check_target(target_gamma: float, lk: float) -> float:
    g = check_probability("target_gamma", target_gamma)
    if not g > math.exp(lk) or g >= 1.0:
        raise ValueError(f"target_gamma must be in (kappa, 1) = ({math.exp(lk):.6g}, 1), got {target_gamma!r}")
    return g


def _gamma(sigma: float, q: float, T: int, lk: float, h: float | None):
    from rerokit.bounds.dpsgd import rero_dpsgd

    return rero_dpsgd(sigma, q, T, log_kappa=lk, comparisons=False, value_discretization_interval=h)


def _epsilon(sigma: float, q: float, T: int, delta: float | None) -> float | None:
    if delta is None:
        return None
    from rerokit.accounting.events import dpsgd_event, epsilon_pld

    return epsilon_pld(dpsgd_event(sigma, q, T), delta)


def calibrate_noise_multiplier(
    target_gamma: float,
    sample_rate: float,
    steps: int,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    delta: float | None = 1e-5,
    rtol: float = 1e-4,
    value_discretization_interval: float | None = None,
) -> CalibrationResult:
    """Smallest sigma (to relative precision ``rtol``) with certified gamma(sigma) <= target_gamma.

    gamma is non-increasing in sigma (Hayes et al. Thm 2: larger sigma garbles the pair), so we
    bracket by doubling/halving and bisect on log sigma; the returned sigma is the feasible end
    of a bracket [sigma/(1+rtol), sigma] whose lower end is infeasible. ``delta=None`` skips the
    dp-accounting epsilon (which imports dp-accounting, ~1 s).
    """
    lk = _log_kappa(kappa, log_kappa)
    g = _check_target(target_gamma, lk)
    q = check_probability("sample_rate", sample_rate)
    T = check_int("steps", steps, minimum=1)
    rtol = check_positive("rtol", rtol)
    if delta is not None:
        delta = check_probability("delta", delta, high_open=True)
    # A target at or above sup over sigma of gamma = 1 - (1-q)^T (1-kappa) is met by every sigma:
    # say so at once instead of bisecting down to sigma = 1e-6 (tens of seconds).
    from rerokit.bounds.dpsgd import log_sup_gamma

    sup_gamma = math.exp(log_sup_gamma([(1.0, q, T)], lk))
    if g >= sup_gamma:
        raise ValueError(
            f"target_gamma={target_gamma!r} is met by every noise multiplier: with sample_rate={q!r} and "
            f"steps={T} no noise multiplier gives gamma above 1 - (1-q)^T (1-kappa) = {sup_gamma:.6g}"
        )
    n = 0

    def ok(s: float):
        nonlocal n
        n += 1
        b = _gamma(s, q, T, lk, value_discretization_interval)
        return b.value <= g, b

    hi = 1.0
    feas, b_hi = ok(hi)
    while not feas:
        hi *= 2.0
        if hi > 2.0**40:
            raise ValueError(f"target_gamma={target_gamma!r} is not reached by any noise multiplier <= 2^40")
        feas, b_hi = ok(hi)
    lo = hi / 2.0
    while True:
        feas, b = ok(lo)
        if not feas:
            break
        hi, b_hi = lo, b
        lo /= 2.0
        if lo < 1e-6:
            raise ValueError(f"target_gamma={target_gamma!r} is met even at noise_multiplier < 1e-6")
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        feas, b = ok(mid)
        if feas:
            hi, b_hi = mid, b
        else:
            lo = mid
    return CalibrationResult(
        noise_multiplier=hi, sample_rate=q, steps=T, kappa=float(kappa) if kappa is not None else math.exp(lk), log_kappa=lk, target_gamma=g,
        gamma=b_hi.value, gamma_error=b_hi.error, epsilon=_epsilon(hi, q, T, delta),
        delta=delta if delta is not None else float("nan"), bracket=(lo, hi), evaluations=n,
    )


def calibrate_steps(
    target_gamma: float,
    noise_multiplier: float,
    sample_rate: float,
    kappa: float | None = None,
    *,
    log_kappa: float | None = None,
    delta: float | None = 1e-5,
    max_steps: int = 10_000_000,
    value_discretization_interval: float | None = None,
) -> CalibrationResult:
    """Largest T <= max_steps with certified gamma(T) <= target_gamma.

    gamma is non-decreasing in T (composition), so we double T until the target is exceeded
    and bisect on integers. Raises ValueError if even T = 1 exceeds the target; returns
    ``max_steps`` with ``capped=True`` if the target holds there.
    """
    lk = _log_kappa(kappa, log_kappa)
    g = _check_target(target_gamma, lk)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    max_steps = check_int("max_steps", max_steps, minimum=1)
    if delta is not None:
        delta = check_probability("delta", delta, high_open=True)
    n = 0

    def ok(T: int):
        nonlocal n
        n += 1
        b = _gamma(sigma, q, T, lk, value_discretization_interval)
        return b.value <= g, b

    feas, b_lo = ok(1)
    if not feas:
        raise ValueError(
            f"target_gamma={target_gamma!r} is below the bound after a single step "
            f"(gamma(T=1) <= {b_lo.value:.6g}); no number of steps meets it"
        )
    lo, hi = 1, 2
    capped = False
    while True:
        hi = min(hi, max_steps)
        feas, b = ok(hi)
        if not feas:
            break
        lo, b_lo = hi, b
        if hi == max_steps:
            capped = True
            break
        hi *= 2
    if not capped:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            feas, b = ok(mid)
            if feas:
                lo, b_lo = mid, b
            else:
                hi = mid
    return CalibrationResult(
        noise_multiplier=sigma, sample_rate=q, steps=lo, kappa=float(kappa) if kappa is not None else math.exp(lk), log_kappa=lk, target_gamma=g,
        gamma=b_lo.value, gamma_error=b_lo.error, epsilon=_epsilon(sigma, q, lo, delta),
        delta=delta if delta is not None else float("nan"), bracket=(lo, hi), evaluations=n, capped=capped,
    )


def noise_multiplier_for_epsilon(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    *,
    tol: float = 1e-4,
    value_discretization_interval: float = 1e-4,
) -> float:
    """Smallest sigma (within ``tol``) such that DP-SGD(sigma, q, T) is (epsilon, delta)-DP
    under dp-accounting's PLD accountant (add-or-remove adjacency).

    Uses ``dp_accounting.mechanism_calibration.calibrate_dp_mechanism`` (Brent's method plus
    its guarantee that the returned parameter satisfies the privacy constraint).
    """
    eps = check_nonnegative("epsilon", epsilon)
    if not eps > 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    d = check_probability("delta", delta, high_open=True)
    q = check_probability("sample_rate", sample_rate)
    T = check_int("steps", steps, minimum=1)
    tol = check_positive("tol", tol)
    import dp_accounting

    from rerokit.accounting.events import dpsgd_event

    def make_event(sigma: float):
        return dpsgd_event(sigma, q, T) if sigma > 0 else dp_accounting.NonPrivateDpEvent()

    return float(
        dp_accounting.calibrate_dp_mechanism(
            lambda: dp_accounting.pld.PLDAccountant(value_discretization_interval=value_discretization_interval),
            make_event,
            eps,
            d,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(0.0, 1.0),
            tol=tol,
        )
    )
