"""Epsilon of DP-SGD at tiny noise from closed forms, without a PLD (see :mod:`rerokit.bounds.dpsgd_tinysigma`).

One segment, one example per step: the REMOVE privacy profile is a Binomial mixture over how many
steps sampled the target, each term a Gaussian tail (:func:`closed_form_epsilon`'s docstring); used
by :func:`rerokit.bounds.dpsgd.epsilon_dpsgd` and :meth:`rerokit.bounds.tradeoff.TradeoffCurve.epsilon`
where its certified ends are within :data:`~rerokit.bounds.dpsgd_tinysigma.CLOSED_FORM_WIDTH`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from rerokit.bounds.dpsgd_tinysigma import CLOSED_FORM_WIDTH
from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr

__all__ = ["closed_form_epsilon"]

_EPS = float(np.finfo(float).eps)
# epsilon: the loss shift c of the lower end (a factor 1 - e^-c on delta; 40 nats is 3e-7 of the smallest
# epsilon the closed form is narrow at), the pmf terms kept (log pmf >= log delta - _KEEP) and the
# relative slack on math.lgamma's error (glibc: a few ulps for positive arguments)
_EPS_SHIFT = 40.0
_KEEP = 60.0
_LGAMMA_REL = 1e-12
_MAX_TERMS = 5000  # more Binomial terms than this (large q T): the PLD instead
_U = _EPS / 2.0


def _log_binom_pmf(n: int, T: int, q: float) -> tuple[float, float]:
    """log Binomial(n; T, q) and a bound on its float error (math.lgamma, logs, sums)."""
    lg = (math.lgamma(T + 1.0), math.lgamma(n + 1.0), math.lgamma(T - n + 1.0))
    a, b = n * math.log(q), (T - n) * math.log1p(-q)
    return lg[0] - lg[1] - lg[2] + a + b, _LGAMMA_REL * (sum(lg) + abs(a) + abs(b)) + 1e-15


def _binom_window(T: int, q: float, log_floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """The n >= 1 whose log pmf (unimodal in n) is at least ``log_floor``: (n, log pmf, its error bound,
    an upper bound on the omitted mass, (T + 1) times the larger pmf just outside), or None if more than
    :data:`_MAX_TERMS` terms."""
    mode = min(T, int((T + 1) * q))
    ns, vs, es = [], [], []
    edge = -math.inf
    for step in (1, -1):
        k = mode if step == 1 else mode - 1
        while 0 <= k <= T:
            v, e = _log_binom_pmf(k, T, q)
            if v + e < log_floor:
                edge = max(edge, v + e)
                break
            if k >= 1:
                ns.append(k), vs.append(v), es.append(e)
            if len(ns) > _MAX_TERMS:
                return None
            k += step
    omitted = (T + 1) * math.exp(edge) * (1.0 + 4.0 * _U) if edge > -math.inf else 0.0
    o = np.argsort(ns)
    return np.array(ns, dtype=float)[o], np.array(vs)[o], np.array(es)[o], omitted


def _tail(logw: np.ndarray, x: np.ndarray, up: bool) -> float:
    """sum_n e^{logw_n} Phi(-x_n), rounded up (``up``) or down; the weights' logs already bounded."""
    tot = []
    for lw, xv in zip(logw, x):
        v = float(log_ndtr(-float(xv)))
        v = v + LOG_NDTR_REL * abs(v) if up else v - LOG_NDTR_REL * abs(v)
        tot.append(math.exp(lw + v))
    s = math.fsum(tot)  # exactly rounded; each exp within an ulp
    # (upward: an exp that underflowed to 0 or a subnormal is below the smallest subnormal more)
    return (s + len(tot) * 5e-324) * (1.0 + 4.0 * _U) if up else s * (1.0 - 4.0 * _U)


def closed_form_epsilon(segments: Sequence[tuple[float, float, int]], delta: float,
                        width: float = CLOSED_FORM_WIDTH) -> float | None:
    """A certified upper bound on the add-or-remove epsilon at ``delta`` from closed forms (small noise,
    one segment, one example per step), where a certified lower bound is within ``width`` of it; else None.

    For one segment (sigma, q, T), one step's privacy loss (remove direction: mu = with the target, nu =
    without) is l(x) = log(1 - q + q e^y), y = (2x - 1) / (2 sigma^2), and L = sum_t l(x_t). Then
    delta_R(eps) = E_mu[(1 - e^{eps - L})_+] (Balle et al. 2018, Thm 1; the hockey-stick divergence), and:

    * upper end: delta_R(eps) <= P_mu(L > eps). Since log q + y <= l <= max(0, y): on the event A that
      every sampled step has y >= 0 and every other step y <= 0 (each fails with probability
      Phi(-1 / (2 sigma)), so P(not A) <= T Phi(-1 / (2 sigma))), L <= sum over the N sampled steps of y,
      which given N = n is N(n / (2 sigma^2), n / sigma^2). So delta_R(eps) <= T Phi(-1/(2 sigma)) +
      sum_{n >= 1} Bin(n; T, q) Phi(-(eps - n / (2 sigma^2)) sigma / sqrt(n)) for eps >= 0.
    * lower end: l >= log q + y on sampled steps and l >= log(1 - q) on the others, so
      delta_R(eps) >= (1 - e^{-c}) P_mu(L > eps + c) >= (1 - e^{-c}) sum_n Bin(n; T, q)
      Phi(-(eps + c - n log q - (T - n) log(1 - q) - n / (2 sigma^2)) sigma / sqrt(n)), c = 40.
    * the add direction: delta_A(eps) = E_nu[(1 - e^{eps + L})_+] = 0 for eps >= -T log(1 - q) (as
      L >= T log(1 - q)); epsilon = max of the two directions' (Dong, Roth & Su 2022, Prop. F.2).

    Each end is found by bisection and confirmed at the returned point: the upper end U(eps) <= delta
    (so epsilon <= max(eps, -T log(1 - q))) and the lower end's bound > delta at eps_lo (so epsilon >
    eps_lo). They differ by about c + N log(1/q) nats out of N / (2 sigma^2) (N the number of sampled
    steps that matter at delta), so they meet where sigma is small (sigma <~ 3e-4 at width 1e-6).

    Rounding: log pmf by math.lgamma with 1e-12 relative slack (thousands of ulps), the normal tail by
    :func:`rerokit.bounds.pld.normal.log_ndtr` within its proven :data:`LOG_NDTR_REL`, each argument
    moved outwards by 8 ulps of the sum of its terms' magnitudes, sums by ``math.fsum`` (exactly
    rounded) and each end moved by 4 ulps; the omitted terms (log pmf below log delta - 60; the pmf is
    unimodal, so they lie outside a window around the mode) are added to the upper end as (T + 1)
    times the largest of them, the one just outside the window.

    Args:
      segments: validated (sigma, q, T) segments.
      delta: delta in (0, 1) (validated by the caller).
      width: the largest accepted relative gap between the two ends.

    Returns:
      The upper end (a float >= 0), or None (more than one segment, q = 1, the ends too far apart, or
      the union bound T Phi(-1 / (2 sigma)) above delta).
    """
    if len(segments) != 1:
        return None
    sigma, q, T = (float(segments[0][0]), float(segments[0][1]), int(segments[0][2]))
    if not 0.0 < q < 1.0:
        return None
    w = _binom_window(T, q, math.log(delta) - _KEEP)
    if w is None or w[0].size == 0:
        return None
    n, lpmf, err, omitted = w
    lw_up, lw_lo = lpmf + err, lpmf - err
    rt = sigma / np.sqrt(n)  # (the arguments' rounding is covered by the 8-ulp widening below)
    mean = n / (2.0 * sigma * sigma)
    v = float(log_ndtr(-1.0 / (2.0 * sigma)))
    union = T * math.exp(v + LOG_NDTR_REL * abs(v)) * (1.0 + 4.0 * _U)
    if union + omitted >= delta:
        return None
    shift = _EPS_SHIFT - n * math.log(q) - (T - n) * math.log1p(-q)
    factor = -math.expm1(-_EPS_SHIFT) * (1.0 - 4.0 * _U)

    def upper(e: float) -> float:
        x = (e - mean) * rt
        x -= 8.0 * _U * (e + mean) * rt + 8.0 * _U * np.abs(x)
        return union + omitted + _tail(lw_up, x, up=True)

    def lower(e: float) -> float:
        x = (e + shift - mean) * rt
        x += 8.0 * _U * (e + np.abs(shift) + mean) * rt + 8.0 * _U * np.abs(x)
        return factor * _tail(lw_lo, x, up=False)

    if upper(_EPS_SHIFT / width) <= delta:  # epsilon below c / width: the ends, about c apart, cannot meet
        return None
    hi = float(mean[-1] + 60.0 * math.sqrt(n[-1]) / sigma + 2.0 * shift[-1])
    if upper(hi) > delta:
        return None
    lo = 0.0
    if upper(lo) <= delta:
        e_hi = 0.0
    else:
        a, b = lo, hi  # upper(a) > delta >= upper(b)
        while b - a > 1e-10 * b:
            m = 0.5 * (a + b)
            a, b = (m, b) if upper(m) > delta else (a, m)
        e_hi = b
    if not lower(0.0) > delta:
        e_lo = 0.0
    else:
        a, b = 0.0, e_hi + float(np.max(shift)) + 1.0  # lower(a) > delta
        if lower(b) > delta:  # cannot happen (lower <= delta_R <= upper); keep the certified claim safe
            return None
        while b - a > 1e-10 * b:
            m = 0.5 * (a + b)
            a, b = (m, b) if lower(m) > delta else (a, m)
        e_lo = a
    e_add = -T * math.log1p(-q) * (1.0 + 4.0 * _U)
    e_up = max(e_hi, e_add)
    return e_up if e_up - e_lo <= width * e_up else None
