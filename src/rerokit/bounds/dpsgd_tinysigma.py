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

The same reasoning gives the trade-off curve's membership quantities without a PLD
(:class:`rerokit.bounds.tradeoff.TradeoffCurve` uses them where narrow, and where its PLD cannot be
discretised): the power at every level (:func:`closed_form_power`, the same floats as ``rero_dpsgd``),
the privacy profile delta(eps) - advantage and Bayes accuracy - (:func:`closed_form_profile`), the
symmetrised add-or-remove power (:func:`closed_form_sym_power`), and epsilon
(:func:`rerokit.bounds.dpsgd_tinysigma_epsilon.closed_form_epsilon`, used by :func:`rerokit.bounds.dpsgd.epsilon_dpsgd`); and the one cap of the
PLD's upper end by the supremum that ``rero_dpsgd`` and the curve share (:func:`supremum_capped`).

Monotone in sigma: the upper end does not depend on sigma and the max test's power is
non-increasing in every sigma_i, so the bracket is narrow exactly for noise multipliers below a
threshold, and the PLD's value above it is at most the same supremum (``rero_dpsgd`` takes the
minimum): the reported value is non-increasing in sigma across the switch.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from rerokit.bounds.dpsgd_envelope import envelope_log_gamma, log_sup_gamma, round_up_exp
from rerokit.bounds.pld.maxtest import log_max_test_miss

__all__ = [
    "CLOSED_FORM_WIDTH",
    "ClosedFormBracket",
    "closed_form_bracket",
    "closed_form_power",
    "closed_form_profile",
    "closed_form_sym_power",
    "log_sym_envelope",
    "narrow_closed_form_bracket",
    "supremum_capped",
]

# The closed forms answer where their bracket's relative width, of gamma and of 1 - gamma, is at most
# this: far inside the 2 % (issue 17), narrower than the PLD's own brackets there (1.4e-6 of
# gamma at sigma 1e-4, q 1e-3, T 100, kappa 1e-3), and below its 1e-9 target on 1 - gamma wherever
# gamma > 0.999 (1 - gamma < 1e-3). Nothing a user reads to 5 significant digits changes.
CLOSED_FORM_WIDTH = 1e-6
_LOG_HALF = math.log(0.5)
_REL = 1e-12  # the float error of a few operations in logs (a few ulps), with much to spare
_EPS = float(np.finfo(float).eps)
# the levels of the max-test points behind the profile's lower end (closed_form_profile): natural logs
# from log 1/2 down to -740 (near the smallest double), geometric, so that both the steep part of the
# curve (tiny levels) and its straight part (slope prod (1 - q_i)^T_i) get points
_PROFILE_LOG_LEVELS = -np.geomspace(math.log(2.0), 740.0, 160)


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


def closed_form_power(
    segments: Sequence[tuple[float, float, int]], log_alphas: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closed-form bracket of the power (TPR) at many levels, as floats, and where it is narrow.

    The power of the best test at level alpha is gamma at kappa = alpha (Hayes et al. 2023, Thm 2;
    Kulynych et al. 2025), so :func:`closed_form_bracket` brackets it; the floats are those of
    :func:`rerokit.bounds.dpsgd.rero_dpsgd`'s closed-form answer (upper end rounded up, lower end
    rounded down and at most the upper end), so that the trade-off curve and ``rero_dpsgd`` report one
    value.

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      log_alphas: natural logs of the levels (finite, <= 0), a 1-D array.

    Returns:
      ``(lower, upper, narrow)`` arrays: certified ends of the power (for every level, narrow or not)
      and where the relative width is at most :data:`CLOSED_FORM_WIDTH` (of the power and of 1 - power).
    """
    lks = np.asarray(log_alphas, dtype=float).ravel()
    lo, up = np.ones(lks.size), np.ones(lks.size)
    narrow = np.ones(lks.size, dtype=bool)
    for j, lk in enumerate(lks):
        if not lk < 0.0:  # level 1: the test that always rejects, power 1
            continue
        b = closed_form_bracket(segments, float(lk))
        up[j] = round_up_exp(b.log_upper)
        lo[j] = min(b.lower, up[j])
        narrow[j] = b.relative_width() <= CLOSED_FORM_WIDTH
    return lo, up, narrow


def closed_form_profile(
    segments: Sequence[tuple[float, float, int]], eps: float, adjacency: str = "remove"
) -> tuple[float, float, bool]:
    """A certified bracket of the privacy profile delta(eps) from the two closed forms, without a PLD.

    delta(eps) = sup_E mu(E) - e^eps nu(E) = sup_alpha [TPR(alpha) - e^eps alpha] (the conjugate of the
    trade-off curve; Dong, Roth & Su 2022, Prop. 2.12), for the remove pair (mu = with the target);
    the membership advantage is delta(0) = TV(mu, nu) and the Bayes accuracy reads delta at
    log((1 - pi) / pi) (Kulynych et al. 2025, Prop. D.1). With P = prod_i (1 - q_i)^{T_i} and s = e^eps:

    * upper end: every test at level alpha has power <= 1 - (1 - alpha) P (the never-sampled
      supremum: with probability P the target is never sampled and mu = nu there), so
      delta(eps) <= sup_{alpha in [0, 1]} [1 - P + alpha (P - s)] = (1 - P) + (P - s)_+ (the bracket is
      linear in alpha: its supremum is at an end). For ``adjacency="add_remove"`` the profile is
      max(delta_R, delta_A) (module docstring of :mod:`rerokit.bounds.tradeoff`), and
      delta_A(eps) = sup_E nu(E) - s mu(E) <= (1 - s P)_+ since mu >= P nu.
    * lower end: every certified test point (alpha_j, p_j), p_j at most the power of an actual test of
      level at most alpha_j, gives delta_R(eps) >= p_j - s alpha_j (and delta_R <= the add_remove
      profile). The points are the max test's (:mod:`rerokit.bounds.pld.maxtest`: closed-form level and
      power) at the levels :data:`_PROFILE_LOG_LEVELS`, the test that always rejects (1, 1), and the
      one that never does (0, 0); for ``adjacency="add_remove"`` also their complements, tests of the add
      direction (:func:`_test_points`).

    As sigma -> 0 the max test's power at every fixed level tends to 1 - (1 - alpha) P, so at e^eps >= P
    the lower end tends to 1 - P - alpha s + alpha P at the smallest levels, i.e. to the upper end;
    at e^eps <= P both ends are 1 - s exactly.

    Rounding: P in logs (log1p), 1 - P, 1 - s and 1 - s P each by one expm1, and the few operations each raised (upper) or lowered
    (lower) by a few ulps of the result; the max test's miss probability is already rounded up.

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      eps: the real eps at which to bracket the profile (any sign, finite).
      adjacency: "remove" (default) or "add_remove".

    Returns:
      ``(lower, upper, narrow)``: certified ends of delta(eps) in [0, 1], and whether
      upper - lower <= :data:`CLOSED_FORM_WIDTH` upper.
    """
    log_never = sum(T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)
    s = math.exp(eps) if eps < 700.0 else math.inf
    # (1 - P) + (P - s)_+ is 1 - s below log P, else 1 - P; and 1 - s P: each one expm1 (no cancellation)
    hi = -math.expm1(min(eps, log_never))
    if adjacency != "remove":
        hi = max(hi, -math.expm1(eps + log_never) if eps + log_never < 0.0 else 0.0)
    hi = min(1.0, hi * (1.0 + 4.0 * _EPS) + 4.0 * _EPS * _EPS)
    lo = max(0.0, -math.expm1(eps) * (1.0 - 4.0 * _EPS)) if eps < 0.0 else 0.0  # the (1, 1) point
    if math.isfinite(s):
        x, y = _test_points(tuple((float(a), float(b), int(c)) for a, b, c in segments), adjacency != "remove")
        lo = max(lo, float(np.max(y - s * x * (1.0 + 4.0 * _EPS) - 4.0 * _EPS * y)))
    lo = min(lo, hi)
    return lo, hi, hi - lo <= CLOSED_FORM_WIDTH * hi


@functools.lru_cache(maxsize=16)  # one curve reads the profile at several eps (advantage, Bayes accuracy)
def _test_points(segments: tuple[tuple[float, float, int], ...], both: bool) -> tuple[np.ndarray, np.ndarray]:
    """Certified (level, power) points of actual tests: each power at most the curve at its level.

    The max test at level kappa_j = e^{la_j} (:data:`_PROFILE_LOG_LEVELS`) gives (kappa_j, 1 - m_j), m_j its
    miss probability rounded up (:func:`rerokit.bounds.pld.maxtest.log_max_test_miss`). With ``both``,
    also its complement "no step's output is large" as a test of the add direction (nu the alternative,
    mu the null): level mu(all small) <= m_j and power nu(all small) >= 1 - kappa_j, so (m_j, 1 - kappa_j)
    lies under the add direction's curve (non-decreasing), hence under the symmetrised one (Dong, Roth &
    Su 2022, Def. F.1: the concave envelope above both directions). Levels rounded up, powers down.
    """
    xs, ys = [0.0, 1.0], [0.0, 1.0]
    for la in _PROFILE_LOG_LEVELS:
        m = log_max_test_miss(segments, float(la))
        if m >= 0.0:
            continue
        xs.append(math.exp(float(la)) * (1.0 + 4.0 * _EPS))
        ys.append(-math.expm1(m) * (1.0 - 4.0 * _EPS))
        if both:
            xs.append(math.exp(m) * (1.0 + 4.0 * _EPS))
            ys.append(-math.expm1(float(la)) * (1.0 - 4.0 * _EPS))
    x, y = np.array(xs), np.array(ys)
    x.flags.writeable = y.flags.writeable = False  # (cached: shared by every caller)
    return x, y


def _upper_hull(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The upper concave hull of the points (Andrew's monotone chain; which points it keeps only
    changes how high the lower end is: any chord of points under a concave curve lies under it)."""
    o = np.lexsort((-y, x))
    hx: list[float] = []
    hy: list[float] = []
    for a, b in zip(x[o], y[o]):
        if hx and a == hx[-1]:
            continue  # (the higher point at this level came first)
        while len(hx) >= 2 and (hx[-1] - hx[-2]) * (b - hy[-2]) - (hy[-1] - hy[-2]) * (a - hx[-2]) >= 0.0:
            hx.pop(), hy.pop()
        hx.append(float(a)), hy.append(float(b))
    return np.array(hx), np.array(hy)


def log_sym_envelope(segments: Sequence[tuple[float, float, int]], lk: float, group_size: int = 1) -> float:
    """log of an upper bound on the symmetrised (add-or-remove) power at level e^lk valid for every sigma:
    min(GDP curve of the same schedule at q = 1 (symmetric), 1 - P + alpha), P = prod (1 - q_i)^{k T_i}.
    The latter is concave and above both directions' never-sampled bounds, 1 - (1 - alpha) P (remove)
    and min(1, alpha / P) (add: mu >= P nu), hence above their concave envelope (Dong, Roth & Su 2022,
    Def. F.1)."""
    env = envelope_log_gamma([(s, 1.0, T) for s, _, T in segments], lk, group_size)  # GDP part only
    log_never = sum(group_size * T * math.log1p(-q) if q < 1.0 else -math.inf for _, q, T in segments)
    never = -math.expm1(log_never) + math.exp(lk)
    return min(0.0, env, math.log(min(1.0, never)) + 4.0 * _EPS)


def closed_form_sym_power(
    segments: Sequence[tuple[float, float, int]], log_alphas: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The closed-form bracket of the symmetrised (add-or-remove) power at many levels, and where narrow.

    Upper end: min(1 - P + alpha, the Gaussian-DP curve of the same schedule at q = 1)
    (:func:`log_sym_envelope`: concave and above both directions' never-sampled
    bounds). Lower end: the concave hull of the certified test points of both directions
    (:func:`_test_points`), at alpha, less 4 ulps (the interpolation's rounding), and at least alpha.
    As sigma -> 0 the remove points tend to (0, 1 - P) and the add points to (P, 1), whose chord is
    1 - P + alpha: the two ends meet for alpha <= P, and at 1 above.

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      log_alphas: natural logs of the levels (finite, <= 0), a 1-D array.

    Returns:
      ``(lower, upper, narrow)`` arrays; narrow where upper - lower <= :data:`CLOSED_FORM_WIDTH` times the
      upper end and times 1 - the lower end (the relative width of the power and of beta), the latter
      unless the width is at most 8 ulps (near power 1, below what a float power resolves).
    """
    lks = np.asarray(log_alphas, dtype=float).ravel()
    alpha = np.exp(lks)
    up = np.array([round_up_exp(log_sym_envelope(segments, float(x))) for x in lks])
    hx, hy = _upper_hull(*_test_points(tuple((float(a), float(b), int(c)) for a, b, c in segments), True))
    lo = np.minimum(np.maximum(np.interp(alpha, hx, hy) - 4.0 * _EPS, alpha), up)
    # (or within 8 ulps of 1: a float power cannot resolve beta any finer, nor can the PLD's)
    narrow = (up - lo <= CLOSED_FORM_WIDTH * up) & ((up - lo <= CLOSED_FORM_WIDTH * (1.0 - lo)) | (up - lo <= 8.0 * _EPS))
    return lo, up, narrow


def supremum_capped(
    segments: Sequence[tuple[float, float, int]], log_kappas: np.ndarray, log_value: np.ndarray,
    value: np.ndarray, lower: np.ndarray, *, group_size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """min(the PLD's upper end, the never-sampled supremum) at every level: the one cap both
    :func:`rerokit.bounds.dpsgd.rero_dpsgd` and :class:`rerokit.bounds.tradeoff.TradeoffCurve` apply.

    The supremum 1 - (1 - kappa) prod_i (1 - q_i)^{k T_i} (:func:`log_sup_gamma`, rounded up) bounds
    gamma for every noise multiplier; the PLD's dominating pair may be looser (small sigma, where its
    grid is coarse), and both ends stay certified.

    Args:
      segments: validated (sigma, q, T) segments.
      log_kappas: natural logs of the levels (<= 0), a 1-D array.
      log_value, value, lower: the PLD's log upper end, upper end and lower end (arrays like ``log_kappas``).
      group_size: k >= 1 examples that move together (required: with k examples the target group is
        never sampled with probability prod (1 - q_i)^{k T_i}, and the k = 1 value would be below gamma).

    Returns:
      ``(log_value, value, lower, capped)``: new arrays; ``capped`` where the supremum was smaller
      (``lower`` is then at most the new value).
    """
    lks = np.asarray(log_kappas, dtype=float).ravel()
    log_env = np.array([log_sup_gamma(segments, float(x), group_size) for x in lks])
    capped = log_env < log_value
    new_value = np.where(capped, [round_up_exp(float(x)) for x in log_env], value)
    return (np.where(capped, log_env, log_value), new_value, np.where(capped, np.minimum(lower, new_value), lower),
            capped)
