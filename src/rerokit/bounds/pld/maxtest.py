"""A certified lower end from one explicit test: "some step's output is very large".

For the DP-SGD pair nu = prod_t N(0, sigma_t^2), mu = prod_t [(1-q_t) N(0, sigma_t^2) + q_t N(1, sigma_t^2)]
(one example, Poisson sampling), the test that rejects when x_t > sigma_t z for some step t has, in
closed form,

    level  nu(E) = 1 - Phi(z)^N,                                   N = sum_i T_i,
    power  mu(E) = 1 - prod_i (1 - b_i)^{T_i},   b_i = (1-q_i) Phi(-z) + q_i Phi(1/sigma_i - z),

because the coordinates are independent under both measures. Any test at level <= kappa has power
<= gamma(kappa), so the power at the z whose level is kappa is a certified lower bound on gamma.

It matters where the sampled steps are rare (q T small, tiny kappa): the likelihood ratio's tail is
then one sampled step's large output, and the optimal test is close to this one, while the PLD's
threshold statistic loses its relative precision there (sigma = 1, q = 1e-4, T = 1e3, kappa =
1e-30: log gamma >= -66.57 here against -68.21 from the PLD's test).

At tiny levels (kappa below 1e-300, e.g. the pixel-tolerance baselines of Hayes, Mahloujifar &
Balle 2023, App. I) the b_i and the power are below double range, so the power is bounded in logs:
with S = sum_i T_i b_i, 1 - prod_i (1 - b_i)^{T_i} >= 1 - e^{-S} (since 1 - b <= e^{-b}) and
1 - e^{-S} >= S - S^2/2 for S >= 0 (Taylor's theorem with the Lagrange remainder: e^{-S} = 1 - S +
S^2/2 - e^{-c} S^3/6 for some c in (0, S)), so log(power) >= log S + log1p(-S/2) for S < 2; used
where the power is below 1e-200 (S is then below 1e-200 too: the bound loses 1e-200 relative).

Distinct steps (several (sigma_i, q_i)): one z for all steps is not the best test of this kind: the
likelihood ratio's tail is one sampled step's large loss, so the test that rejects when some step's
loss L_i(x_t) exceeds a common c (x_t > sigma_i z_i(c), the thresholds "loss-matched") is closer to
the Neyman-Pearson one. Its level 1 - prod_i Phi(z_i)^{T_i} and power have the same closed forms; c is
the largest (by bisection between the common-z test's per-step losses) whose level is confirmed at
most kappa with every rounding against it, and the better of the two powers is returned (both tests
are explicit: each power is a certified lower end). Two segments at q ~1e-7 (sigma 0.6 / 0.9,
T 3e4 each, kappa 1e-20): e^-45.3751 (one z) against e^-45.0561 (loss-matched), the upper end e^-45.0558.

Rounding: z is the engine's upper normal quantile (:func:`rerokit.bounds.pld.normal.normal_isf_log`,
which confirms the level with :func:`~rerokit.bounds.pld.normal.log_ndtr`, accurate to 1e-13
relative with much to spare) at the level less 1e-12; the power is computed in logs and lowered by
1e-10 relative plus 1e-12 absolute (in log gamma), far more than the float error of the few
operations involved. Everything here is ``math`` and numpy only (normal.py imports numpy alone; the
steps' loss and its inverse come from step.py, which imports normal.py alone): importing
scipy.special costs a few tenths of a second on a process's first call at a small level, which the
CLI's bound commands would pay.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr, normal_isf_log
from rerokit.bounds.pld.step import remove_loss, x_of_remove_loss

__all__ = ["log_max_test_miss", "log_max_test_power", "loss_matched_threshold", "max_test_threshold"]

_MAX_LOG_KAPPA = math.log(0.5)
_MIN_DIRECT = 1e-200
"""Powers above this are 1 - prod_i (1 - b_i)^{T_i} directly; below, its log from S = sum_i T_i b_i."""
# the loss-matched thresholds for at most this many distinct steps (a bisection of 60 evaluations
# over them per level; beyond, the common z only: a choice of computation)
_MATCHED_MOST = 32


def max_test_threshold(n_steps: int, log_kappa: float) -> float:
    """The standardised threshold z with 1 - Phi(z)^n_steps <= kappa for certain (rounded up).

    Args:
      n_steps: the number of steps N >= 1.
      log_kappa: natural log of kappa (<= log 1/2).

    Returns:
      z (a float; +inf if none was confirmed).
    """
    n = int(n_steps)
    lk = float(log_kappa)
    if lk > -700.0:  # Phi(-z) = 1 - (1 - kappa)^(1/N), exactly the level kappa
        la = math.log(-math.expm1(math.log1p(-math.exp(lk)) / n))
    else:  # kappa below double range: the union bound N Phi(-z) <= kappa
        la = lk - math.log(n)
    return normal_isf_log(la - 1e-12)  # Phi(-z) <= e^la for certain, with 1e-12 to spare for la's rounding


def log_max_test_power(segments: Sequence[tuple[float, float, int]], log_kappas: np.ndarray) -> np.ndarray:
    """Certified lower bounds on log gamma from the max test (module docstring), one per log kappa.

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array.

    Returns:
      An array of lower bounds on log gamma (-inf where no bound was found or kappa > 1/2, where
      the test is of no use; 0 at kappa = 1).
    """
    lks = np.asarray(log_kappas, dtype=float).ravel()
    n = int(sum(int(T) for _, _, T in segments))
    out = np.full(lks.size, -math.inf)
    if n < 1:
        return out
    for j, lk in enumerate(lks):
        lk = float(lk)
        if lk >= 0.0:
            out[j] = 0.0
            continue
        if lk > _MAX_LOG_KAPPA:  # useful only at small levels; near 1 the level's rounding is delicate
            continue
        matched = _matched_thresholds(segments, n, lk)
        for zs in [None] + ([matched] if matched is not None else []):
            got = _log_no_rejection(segments, n, lk, with_sum=True, zs=zs)
            if got is None:
                continue
            s_log, log_s = got
            p = -math.expm1(s_log)
            if p > _MIN_DIRECT:
                lp = math.log(p)
            elif log_s < math.log(0.5):
                # 1 - prod_i (1 - b_i)^{T_i} >= 1 - e^{-S} >= S - S^2/2 = S (1 - S/2), S = sum_i T_i b_i
                # (module docstring): in logs, where the power itself is below double range
                lp = log_s + math.log1p(-0.5 * math.exp(log_s))
            else:
                continue
            out[j] = max(out[j], min(0.0, lp - 1e-10 * abs(lp) - 1e-12))
    return out


def loss_matched_threshold(segments: Sequence[tuple[float, float, int]], log_kappa: float) -> float | None:
    """The per-step loss c at which the loss-matched max test (module docstring) has level kappa: for
    distinct steps the c of its thresholds, for one distinct step its loss at the common threshold
    (the same test); None where no threshold is confirmed. A choice of computation for callers
    (where the Neyman-Pearson threshold of one sampled step's loss lies), not a bound."""
    n = int(sum(int(T) for _, _, T in segments))
    lk = float(log_kappa)
    if n < 1 or not lk <= _MAX_LOG_KAPPA:  # (NaN too)
        return None
    got = _matched_thresholds(segments, n, lk, with_c=True)
    if got is not None:
        return got[0]
    z = max_test_threshold(n, lk)
    if not math.isfinite(z):
        return None
    return max(float(remove_loss(float(s) * z, float(s), float(q))) for s, q, _ in segments)


def _matched_thresholds(segments: Sequence[tuple[float, float, int]], n: int, lk: float,
                        with_c: bool = False) -> Any:
    """Per distinct (sigma, q): the standardised threshold z_i = x_i / sigma at which one step's loss
    L_i(x) = log(1 - q + q e^{(2x - 1) / (2 sigma^2)}) is a common c, the largest c (bisection
    between the common-z test's per-step losses) whose level 1 - prod_i Phi(z_i)^{T_i} is confirmed
    at most kappa (Phi(-z_i) rounded up, the log-sum rounded so that the level is over-estimated; the
    union bound sum_i T_i Phi(-z_i) in logs below double range). None where there is one distinct
    step (the common z is then the same test), more than :data:`_MATCHED_MOST`, or no c is confirmed;
    with ``with_c``, the pair (c, thresholds)."""
    keys: dict[tuple[float, float], int] = {}
    for sigma, q, T in segments:
        keys[(float(sigma), float(q))] = keys.get((float(sigma), float(q)), 0) + int(T)
    z0 = max_test_threshold(n, lk)
    if not 2 <= len(keys) <= _MATCHED_MOST or not math.isfinite(z0):
        return None

    def thresholds(c: float) -> dict:  # x_i with L_i(x_i) = c, standardised
        return {(sigma, q): float(x_of_remove_loss(c, sigma, q)) / sigma for sigma, q in keys}

    def confirmed(zs: dict) -> bool:
        if lk > -700.0:  # sum_i T_i log(1 - p_i), p_i = Phi(-z_i) rounded up, rounded down itself
            s_log = 0.0
            for key, T in keys.items():
                v = float(log_ndtr(-zs[key]))
                s_log += T * math.log1p(-min(math.exp(v + LOG_NDTR_REL * abs(v) + 1e-15), 1.0))
            s_log -= 1e-13 * (abs(s_log) + 1e-300)
            return -math.expm1(s_log) * (1.0 + 1e-13) <= math.exp(lk) * (1.0 - 4e-16 * (abs(lk) + 2.0))
        # the union bound sum_i T_i Phi(-z_i), each log Phi(-z_i) raised by its own error bound
        terms = []
        for key, T in keys.items():
            v = float(log_ndtr(-zs[key]))
            terms.append(math.log(T) + v + LOG_NDTR_REL * abs(v))
        m = max(terms)
        log_u = m + math.log(math.fsum(math.exp(t - m) for t in terms))
        return log_u + 1e-13 * (abs(log_u) + 1.0) <= lk

    cs = [float(remove_loss(sigma * z0, sigma, q)) for sigma, q in keys]
    lo, hi = min(cs), max(cs)
    if not (0.0 < lo <= hi < math.inf):  # (a threshold below x = 1/2 has no use at a small level)
        return None
    try:
        if not confirmed(thresholds(hi)):
            return None
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if confirmed(thresholds(mid)):
                hi = mid
            else:
                lo = mid
    except (ValueError, OverflowError):
        return None
    return (hi, thresholds(hi)) if with_c else thresholds(hi)


def log_max_test_miss(segments: Sequence[tuple[float, float, int]], log_kappa: float) -> float:
    """A certified upper bound on log(1 - gamma) from the max test: log prod_i (1 - b_i)^{T_i}.

    1 - gamma <= 1 - (the max test's power) = prod_i (1 - b_i)^{T_i} (module docstring), computed in
    logs, so that it keeps its relative precision where gamma is near 1 (where
    :func:`log_max_test_power` rounds to 0). The b_i are rounded down as there; the sum of the few
    logs is raised by 1e-12 of itself, far more than its float error (a few ulps per term).

    Args:
      segments: validated (sigma, q, T) segments (one example per step).
      log_kappa: natural log of the baseline kappa (<= log 1/2; larger levels get the trivial 0).

    Returns:
      An upper bound on log(1 - gamma) (<= 0; 0 where the test is of no use; -inf at kappa = 1).
    """
    lk = float(log_kappa)
    n = int(sum(int(T) for _, _, T in segments))
    if lk >= 0.0:
        return -math.inf
    if n < 1 or lk > _MAX_LOG_KAPPA:
        return 0.0
    s_log = _log_no_rejection(segments, n, lk)
    if s_log is None:
        return 0.0
    return min(0.0, s_log + 1e-12 * abs(s_log))


def _log_no_rejection(segments: Sequence[tuple[float, float, int]], n: int, lk: float,
                      with_sum: bool = False, zs: dict | None = None) -> Any:
    """sum_i T_i log(1 - b_i) at the threshold of level kappa = e^lk (an upper bound on it: b_i
    rounded down), or None where no threshold was confirmed; with ``with_sum``, the pair of that and
    log S, S = sum_i T_i b_i (a lower bound on it: each log(T_i b_i) rounded down, and the log-sum
    lowered by 1e-13 relative, far more than its few ulps)."""
    z = max_test_threshold(n, lk) if zs is None else math.nan
    if zs is None and not math.isfinite(z):
        return None
    s_log = 0.0  # sum_i T_i log(1 - b_i) (an upper bound on it: b_i rounded down)
    terms: list[float] = []  # log(T_i b_i), each rounded down
    # steps with the same (sigma, q) have the same b_i: one term each (a 2,000-step alternating
    # history has two), as both sums are over steps whatever their order
    counts: dict[tuple[float, float], int] = {}
    for sigma, q, T in segments:
        counts[(float(sigma), float(q))] = counts.get((float(sigma), float(q)), 0) + int(T)
    for (sigma, q), T in counts.items():
        if zs is not None:
            z = zs[(sigma, q)]
        v0 = float(log_ndtr(-z))
        v0 -= LOG_NDTR_REL * abs(v0)
        v1 = float(log_ndtr(1.0 / sigma - z))
        v1 -= LOG_NDTR_REL * abs(v1)  # (argument > 0: 1e-16 absolute, inside lb's 1e-13 below)
        if q >= 1.0:
            lb = v1
        else:
            lb = float(np.logaddexp(math.log1p(-q) + v0, math.log(q) + v1))
        lb -= 1e-13 * (abs(lb) + 1.0)
        b = math.exp(lb)
        s_log += T * math.log1p(-min(b, 1.0 - 1e-15))
        terms.append(math.log(T) + lb)
    if not with_sum:
        return s_log
    m = max(terms)
    log_s = m + math.log(math.fsum(math.exp(t - m) for t in terms))
    return s_log, log_s - 1e-13 * (abs(log_s) + 1.0)
