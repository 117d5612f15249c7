"""A certified bracket of the DP-SGD ReRo gamma from two closed forms, without a PLD (tiny noise).

Where the noise multipliers are small against the max test's threshold (sigma <= ~0.1 at the
usual levels), one sampled step reveals the target and two certified closed forms already pin
gamma (Hayes, Mahloujifar & Balle 2023, Thm 2) down:

* upper end: the never-sampled supremum 1 - (1 - kappa) prod_i (1 - q_i)^{T_i}
  (:func:`rerokit.bounds.dpsgd_envelope.log_sup_gamma`): with probability prod_i (1 - q_i)^{T_i}
  the target is never sampled and no test beats kappa there. It gives the lower end of 1 - gamma,
  (1 - kappa) prod_i (1 - q_i)^{T_i}, in logs.
* lower end: the power of the max test "some step's output exceeds sigma_t z" at level kappa
  (:mod:`rerokit.bounds.pld.maxtest`, closed-form level and power), in logs both as gamma and as
  1 - gamma. Above kappa = 1/2 (where the max test is not used) the test at level 1/2 is mixed
  with rejecting at random (Neyman & Pearson 1933: randomised tests; the power function is
  concave): 1 - gamma(kappa) <= (1 - gamma_mt(1/2)) (1 - kappa) / (1/2).

As sigma -> 0 the two coincide (the max test's miss probability tends to (1 - kappa) prod_i
(1 - q_i)^{T_i}); at sigma = 1e-4 they agree to a few 1e-12 in relative terms (of gamma and of
1 - gamma; 2.8e-9 of 1 - gamma = e^-1000.5 at q = 1e-3, T = 1e6), where the PLD's grid spans losses
up to 1 / (2 sigma^2) and its bracket took 3-90 s (benchmarks/tiny_sigma.py). :func:`rerokit.bounds.dpsgd.rero_dpsgd`
answers from this bracket before building any PLD when it is within :data:`CLOSED_FORM_WIDTH` of
gamma and of 1 - gamma.

No other upper end is used: where this bracket is narrow, none can gain more than its width, and
where it is not, an upper end would have to come within 1e-6 of gamma to make it narrow - the RDP
bound is far looser (1.0 at sigma = 1e-4), and the q = 1 envelope (Gaussian DP) is below the supremum
only for large noise and rates (for long schedules about where sigma^2 > 1 / (2 log(1 / (1 - q)))),
where the max test is not that close; leaving it out keeps the upper end independent of sigma (below).

Monotone in sigma: the upper end does not depend on sigma and the max test's power is
non-increasing in every sigma_i, so the bracket is narrow exactly for noise multipliers below a
threshold, and the PLD's value above it is at most the same supremum (``rero_dpsgd`` takes the
minimum): the reported value is non-increasing in sigma across the switch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from rerokit.bounds.dpsgd_envelope import log_sup_gamma
from rerokit.bounds.pld.maxtest import log_max_test_miss

__all__ = ["CLOSED_FORM_WIDTH", "ClosedFormBracket", "closed_form_bracket", "narrow_closed_form_bracket"]

# The closed forms answer where their bracket's relative width, of gamma and of 1 - gamma, is at most
# this: far inside the 2 % (issue 17), narrower than the PLD's own brackets there (1.4e-6 of
# gamma at sigma 1e-4, q 1e-3, T 100, kappa 1e-3), and below its 1e-9 target on 1 - gamma wherever
# gamma > 0.999 (1 - gamma < 1e-3). Nothing a user reads to 5 significant digits changes.
CLOSED_FORM_WIDTH = 1e-6
_LOG_HALF = math.log(0.5)
_REL = 1e-12  # the float error of a few operations in logs (a few ulps), with much to spare


@dataclass(frozen=True)
class ClosedFormBracket:
    """Certified bracket of gamma and of 1 - gamma, in logs (both ends of each are certified).

    Attributes:
      log_lower: log of the lower end of gamma (the max test's power, at least log kappa).
      log_upper: log of the upper end of gamma (the never-sampled supremum, rounded up).
      log_beta_lower: log of the lower end of 1 - gamma ((1 - kappa) prod_i (1 - q_i)^{T_i}, rounded down).
      log_beta_upper: log of the upper end of 1 - gamma (the max test's miss probability, rounded up).
    """

    log_lower: float
    log_upper: float
    log_beta_lower: float
    log_beta_upper: float

    @property
    def lower(self) -> float:
        """The lower end of gamma as a float, rounded down."""
        v = math.exp(self.log_lower)
        return float(np.nextafter(v, 0.0)) if v > 0.0 else 0.0

    def relative_width(self) -> float:
        """max(log upper - log lower) over gamma and 1 - gamma (about the relative widths)."""
        return max(self.log_upper - self.log_lower, self.log_beta_upper - self.log_beta_lower)


def _log1m_exp(x: float) -> float:
    """log(1 - e^x) for x < 0 (Mächler 2012's two branches, accurate to a few ulps)."""
    return math.log(-math.expm1(x)) if x > _LOG_HALF else math.log1p(-math.exp(x))


def closed_form_bracket(segments: Sequence[tuple[float, float, int]], log_kappa: float) -> ClosedFormBracket:
    """The closed-form bracket of gamma (module docstring) at one baseline, one example per step.

    Args:
      segments: validated (sigma, q, T) segments.
      log_kappa: natural log of the baseline kappa (< 0; not validated here).

    Returns:
      A :class:`ClosedFormBracket` (wide where sigma is not small: then the PLD is needed).
    """
    lk = float(log_kappa)
    log_up = log_sup_gamma(segments, lk)
    log_never = sum(T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)
    log_1mk = _log1m_exp(lk)
    b_low = log_1mk + log_never
    b_low -= _REL * abs(b_low)
    if lk <= _LOG_HALF:
        b_up = log_max_test_miss(segments, lk)
    else:  # the max test at level 1/2, then reject at random (level kappa, concave power function)
        b_up = log_max_test_miss(segments, _LOG_HALF) + math.log(2.0) + log_1mk
        b_up += _REL * abs(b_up)
    b_up = min(b_up, log_1mk + _REL * abs(log_1mk), 0.0)  # gamma >= kappa: the attacker may ignore the release
    log_low = lk
    if b_up < 0.0:  # log(1 - the miss probability's upper end), rounded down
        x = _log1m_exp(b_up)
        log_low = max(lk, x - _REL * abs(x))
    log_low = min(log_low, log_up)
    return ClosedFormBracket(log_low, log_up, min(b_low, b_up), b_up)


def narrow_closed_form_bracket(
    segments: Sequence[tuple[float, float, int]], log_kappa: float, width: float = CLOSED_FORM_WIDTH
) -> ClosedFormBracket | None:
    """:func:`closed_form_bracket` where its relative width is at most ``width``, else None.

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      log_kappa: natural log of the baseline kappa (< 0; not validated here).
      width: the largest relative width (of gamma and of 1 - gamma) accepted.

    Returns:
      The bracket, or None where the PLD is needed (or kappa >= 1).
    """
    if not log_kappa < 0.0:
        return None
    b = closed_form_bracket(segments, log_kappa)
    return b if b.relative_width() <= width else None
