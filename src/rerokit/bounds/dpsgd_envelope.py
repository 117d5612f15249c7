"""Closed-form envelopes of the DP-SGD ReRo gamma, valid for every schedule, and the exact method's range.

Used where the exact PLD cannot be: every noise multiplier outside :data:`SIGMA_EXACT_RANGE` or more
than :data:`MAX_EXACT_STEPS` steps (see :func:`rerokit.bounds.dpsgd.rero_dpsgd`), and as a second,
sometimes tighter, certified upper bound beside the PLD.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from rerokit.bounds.schedule import Segment
from rerokit.bounds.types import Bound

__all__ = [
    "SIGMA_EXACT_RANGE", "MAX_EXACT_STEPS", "check_full_batch", "outside_exact_range", "envelope_note",
    "envelope_log_gamma", "log_sup_gamma", "envelope_bound", "round_up_exp",
]


# The exact PLD is built in double precision; outside this sigma range (no practical DP-SGD run
# lives there) its grids over/underflow, and rero_dpsgd answers with closed-form envelopes.
SIGMA_EXACT_RANGE = (1e-4, 1e8)

# Beyond this many steps the composed PLD's window loses double precision (measured: 1e13-1e14 steps
# fail to discretise; 1e12 gives a bracket of width 0.1); such schedules get the envelope.
MAX_EXACT_STEPS = 10**10


def check_full_batch(segments: Sequence[Segment]) -> None:
    """Raise unless every segment has q = 1 (what method='closed-form', Gaussian DP, needs).

    Args:
      segments: (sigma, q, T) segments.

    Raises:
      ValueError: if some segment has a sample rate other than 1.
    """
    bad = [q for _, q, _ in segments if q != 1.0]
    if bad:
        raise ValueError(
            f"method='closed-form' needs sample_rate = 1 (full batch, Gaussian DP); got sample_rate={bad[0]!r}. "
            "Use method='exact' for q < 1"
        )


def outside_exact_range(segments: Sequence[Segment]) -> bool:
    """True if the schedule is outside the exact PLD method's range (closed-form envelopes are used).

    That is: every noise multiplier outside SIGMA_EXACT_RANGE, or more than MAX_EXACT_STEPS steps in all. A
    schedule with only *some* segments outside the range keeps the PLD: those steps get dominating
    replacements inside it (:mod:`rerokit.bounds.pld.builder`).

    Args:
      segments: (sigma, q, T) segments.

    Returns:
      Whether the exact method is skipped for this schedule.
    """
    return all(not (SIGMA_EXACT_RANGE[0] <= s <= SIGMA_EXACT_RANGE[1]) for s, _, _ in segments) or (
        sum(T for _, _, T in segments) > MAX_EXACT_STEPS
    )


def envelope_note(segments: Sequence[Segment]) -> str:
    """Why the closed-form envelope answers for this schedule (for ``extras['note']``).

    Args:
      segments: (sigma, q, T) segments.

    Returns:
      A one-sentence note naming the reason and what the value is.
    """
    why = (f"noise multipliers outside [{SIGMA_EXACT_RANGE[0]:g}, {SIGMA_EXACT_RANGE[1]:g}]"
           if all(not (SIGMA_EXACT_RANGE[0] <= s <= SIGMA_EXACT_RANGE[1]) for s, _, _ in segments)
           else "a schedule too long for the privacy-loss distribution (more than "
                f"{MAX_EXACT_STEPS:.0e} steps, or a grid beyond its size limits)")
    return (f"{why}: value is the minimum of two closed-form upper bounds (same schedule at q = 1; target never "
            "sampled), error = value - kappa")


def envelope_log_gamma(segments: Sequence[Segment], log_kappa: float, group_size: int = 1) -> float:
    """log of min(g_full, g_sup), two closed-form upper bounds on gamma valid for every schedule.

    * g_full = Phi(Phi^{-1}(kappa) + sqrt(sum_i T_i / sigma_i^2)): the same schedule with q = 1.
      Poisson subsampling never increases gamma: mu^T is a mixture over the set S of steps that
      use the target of products P_S with N(1, sigma^2) on S, and P_S(E) <= g_full for every E
      with nu(E) <= kappa (fewer Gaussian steps are a post-processing of more).
    * g_sup = 1 - (1 - kappa) prod_i (1 - q_i)^{T_i} (:func:`log_sup_gamma`).

    Args:
      segments: (sigma, q, T) segments.
      log_kappa: natural log of the baseline kappa (<= 0; not validated here).
      group_size: k >= 1 examples that move together (mu scales by k, (1-q)^T by power k).

    Returns:
      log gamma (<= 0), an upper bound (g_full is rounded up as in
      :func:`~rerokit.bounds.conversions.log_rero_from_gdp`).
    """
    lk = float(log_kappa)
    inv = sum(T / (s * s) if s > 1e-150 else math.inf for s, _, T in segments)
    mu = group_size * math.sqrt(inv) if math.isfinite(inv) else math.inf
    if math.isinf(mu):
        log_full = 0.0
    else:
        from rerokit.bounds.conversions import log_rero_from_gdp

        log_full = log_rero_from_gdp(mu, lk)
    return min(0.0, log_full, log_sup_gamma(segments, lk, group_size))


def log_sup_gamma(segments: Sequence[Segment], log_kappa: float, group_size: int = 1) -> float:
    """log of sup over all noise multipliers of gamma: 1 - (1 - kappa) prod_i (1 - q_i)^{T_i}.

    With probability prod (1-q_i)^{T_i} the target is never sampled; mu and nu then coincide and
    no test beats kappa there, so mu(E) <= (1 - prod) + prod nu(E) for every E (sigma -> 0
    attains it). Used as an envelope and to reject unreachable calibration targets at once.

    Args:
      segments: (sigma, q, T) segments (only q and T matter).
      log_kappa: natural log of the baseline kappa (<= 0; not validated here).

    Returns:
      log of the supremum (<= 0; 0 when log_kappa >= 0 or some q = 1), rounded up by a few ulps.
    """
    lk = float(log_kappa)
    if lk >= 0.0:
        return 0.0
    log_never = sum(group_size * T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)
    v = math.log(-math.expm1(math.log(-math.expm1(lk)) + log_never))
    return min(0.0, v + 4.0 * float(np.finfo(float).eps) * (1.0 + abs(v)))  # rounded up


def envelope_bound(segs: Sequence[Segment], lk: float, kap: float, group_size: int = 1) -> Bound:
    """The closed-form envelope (:func:`envelope_log_gamma`) as a Bound, bracket [kappa, value].

    Args:
      segs: (sigma, q, T) segments.
      lk: natural log of kappa.
      kap: kappa.
      group_size: k >= 1 examples that move together.

    Returns:
      A :class:`Bound` with method "envelope" and a note saying why it answers.
    """
    log_val = envelope_log_gamma(segs, lk, group_size)
    value = round_up_exp(log_val)
    lower = min(kap, value)  # gamma >= kappa always: the attacker may ignore the release
    inputs: dict[str, Any] = {"method": "exact", "kappa": kap, "log_kappa": lk}
    if len(segs) == 1:
        inputs.update(noise_multiplier=segs[0][0], sample_rate=segs[0][1], steps=segs[0][2])
    else:
        inputs["segments"] = [list(x) for x in segs]
    extras = {
        "lower": lower, "upper": value, "log_gamma": log_val, "floored": False,
        "note": envelope_note(segs),
    }
    return Bound(value, max(0.0, value - lower), "envelope", "upper", (lower, value), inputs, extras)


def round_up_exp(log_value: float) -> float:
    """exp(log_value) rounded up (never below the true value because of underflow/rounding): libm's
    exp within 2 ulps (the package's assumption, rerokit.bounds.pld.step), so two steps up."""
    v = math.exp(log_value)
    if v >= 1.0:
        return 1.0
    return min(1.0, float(np.nextafter(np.nextafter(v, 1.0), 1.0))) if v > 0 else 5e-324