"""One DP-SGD step as a discrete privacy-loss distribution (PLD) on the grid l_j = j h.

The pair of one step of DP-SGD with noise multiplier sigma, Poisson sampling rate q and a group of
k examples (k = 1: one example; Hayes, Mahloujifar & Balle 2023, Thm 2):

* ``"remove"``: P = sum_j Binomial(j; k, q) N(j, sigma^2) (with the target group),
  Q = N(0, sigma^2) (without it). L(x) = log P/Q (x) is increasing in x (a log-sum-exp of
  increasing affine functions, convex).
* ``"add"``: the reversed pair, P = N(0, sigma^2), Q = the mixture; L = -L_remove, decreasing.
* ``"replace"`` (k = 1): P = (1-q) N(0, sigma^2) + q N(1, sigma^2) against
  Q = (1-q) N(0, sigma^2) + q N(-1, sigma^2), the substitution pair of Poisson-subsampled
  Gaussians (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via
  characteristic function", Sec. 5), used by one-run audits; L increasing, symmetric.

A step's discretisation (:class:`StepPLD`) has two parts from the same loss buckets (l_j, l_{j+1}]:
the dominating ``split`` ("connect the dots", Doroshenko et al. 2022, "Connect the dots: tighter
discrete approximations of privacy loss distributions"): each bucket's (P, Q) masses onto its two
end atoms preserving both, so its hockey-stick curve is the chord of the true one (Blackwell
dominance), bottom tail rounded up to the lowest atom, top tail to +infinity; and the bucket
masses ``stat_p``/``stat_q`` themselves, the dominated (post-processed) experiment of the bucket
statistic, which gives certified lower bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.normal import ndtr, normal_isf_log

__all__ = ["StepPLD", "StepTooWide", "dpsgd_step_pld", "loss_range", "default_grid_step", "DIRECTIONS",
           "MAX_STEP_WIDTH", "remove_loss"]

DIRECTIONS = ("remove", "add", "replace")
MAX_STEP_WIDTH = 200_000  # grid points of one step's PLD
COMPOSED_POINTS = 4000  # default grid points per standard deviation of the composed loss (at most)


class StepTooWide(Exception):
    """One step's grid for this h would exceed :data:`MAX_STEP_WIDTH` points (callers coarsen h)."""


@dataclass(frozen=True)
class StepPLD:
    """One step's discretisation on the grid l_j = j h.

    Attributes:
      h: grid step of the privacy loss.
      j_lo: label of the first atom of ``split``.
      split: dominating discrete PLD, P-masses at the atoms j_lo..j_hi (connect the dots).
      inf_mass: P-mass sent to +infinity (the top tail).
      stat_p: P-masses of the buckets, labels j_lo-1..j_hi (first: bottom tail, last: top tail).
      stat_q: Q-masses of the same buckets.
    """

    h: float
    j_lo: int
    split: np.ndarray
    inf_mass: float
    stat_p: np.ndarray
    stat_q: np.ndarray


# --------------------------------------------------------------------------- the pair


def _log_weights(q: float, k: int) -> np.ndarray:
    """log Binomial(j; k, q), j = 0..k (-inf where the weight is 0)."""
    j = np.arange(k + 1, dtype=float)
    if q == 1.0:
        return np.where(j == k, 0.0, -np.inf)
    lg = np.array([math.lgamma(k + 1.0) - math.lgamma(x + 1.0) - math.lgamma(k - x + 1.0) for x in j])
    return lg + j * math.log(q) + (k - j) * math.log1p(-q)


def remove_loss(x: np.ndarray, sigma: float, q: float, k: int = 1) -> np.ndarray:
    """L_R(x) = log(P(x) / N(0, sigma^2)(x)) of the remove pair with a group of k examples.

    Args:
      x: points.
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1].
      k: group size >= 1.

    Returns:
      log sum_j Binomial(j; k, q) exp((2 j x - j^2) / (2 sigma^2)), element-wise.
    """
    x = np.asarray(x, dtype=float)
    if k == 1:
        a = (2.0 * x - 1.0) / (2.0 * sigma * sigma)
        if q == 1.0:
            return a
        return np.logaddexp(math.log1p(-q), math.log(q) + a)
    lw = _log_weights(q, k)
    j = np.arange(k + 1, dtype=float)
    t = lw[:, None] + (2.0 * j[:, None] * x.ravel()[None, :] - (j * j)[:, None]) / (2.0 * sigma * sigma)
    m = np.max(t, axis=0)
    with np.errstate(under="ignore"):
        out = m + np.log(np.sum(np.exp(t - m), axis=0))
    return out.reshape(x.shape)


def _remove_loss_slope(x: np.ndarray, sigma: float, q: float, k: int) -> np.ndarray:
    """d L_R / dx = E[j | x] / sigma^2 (posterior mean of the number sampled)."""
    lw = _log_weights(q, k)
    j = np.arange(k + 1, dtype=float)
    t = lw[:, None] + (2.0 * j[:, None] * x[None, :] - (j * j)[:, None]) / (2.0 * sigma * sigma)
    t -= np.max(t, axis=0)
    w = np.exp(t)
    return (j @ w) / np.sum(w, axis=0) / (sigma * sigma)


def _x_of_remove_loss(l: np.ndarray, sigma: float, q: float, k: int = 1) -> np.ndarray:
    """Inverse of L_R: x with L_R(x) = l; -inf where l <= log Binomial(0; k, q) (no such x)."""
    l = np.asarray(l, dtype=float)
    if q == 1.0:
        return sigma * sigma * l / k + 0.5 * k
    if k == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            # log(e^l - (1-q)), computed without cancellation on both sides of l = 0
            big = l + np.log1p(-(1.0 - q) * np.exp(-np.maximum(l, 0.0)))
            small = np.log(np.expm1(np.minimum(l, 0.0)) + q)
            lg = np.where(l > 0, big, small)
            x = sigma * sigma * (lg - math.log(q)) + 0.5
        return np.where(np.isnan(x), -np.inf, x)
    # k > 1: L_R is convex and increasing, so Newton's method started right of the root decreases
    # monotonically to it (the tangent lies below the curve) - never overshoots.
    floor = k * math.log1p(-q)
    ok = l > floor
    lt = np.where(ok, l, floor + 1.0)
    x = np.maximum(sigma * sigma * lt / k + 0.5 * k, k + 0.0)  # L_R(x) >= l there (j = k term alone)
    x = x + sigma * sigma * np.maximum(0.0, -k * math.log(q)) / k
    for _ in range(200):
        f = remove_loss(x, sigma, q, k) - lt
        step = f / _remove_loss_slope(x, sigma, q, k)
        x_new = x - np.maximum(step, 0.0)
        if np.all(np.abs(x_new - x) <= 4e-16 * np.maximum(1.0, np.abs(x))):
            x = x_new
            break
        x = x_new
    return np.where(ok, x, -np.inf)


def _mix_sf(x: np.ndarray, sigma: float, q: float, k: int = 1, sign: float = 1.0) -> np.ndarray:
    """P(X > x) for X ~ sum_j Binomial(j; k, q) N(sign * j, sigma^2)."""
    if k == 1:
        return (1.0 - q) * ndtr(-x / sigma) + q * ndtr((sign - x) / sigma)
    w = np.exp(_log_weights(q, k))
    return sum(float(w[j]) * ndtr((sign * j - x) / sigma) for j in range(k + 1) if w[j] > 0)


def _mix_cdf(x: np.ndarray, sigma: float, q: float, k: int = 1, sign: float = 1.0) -> np.ndarray:
    """P(X <= x) for the same mixture."""
    if k == 1:
        return (1.0 - q) * ndtr(x / sigma) + q * ndtr((x - sign) / sigma)
    w = np.exp(_log_weights(q, k))
    return sum(float(w[j]) * ndtr((x - sign * j) / sigma) for j in range(k + 1) if w[j] > 0)


def _x_of_replace_loss(l: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """Inverse of L(x) = L_R(x) - L_R(-x) (k = 1): with u = e^{x/s^2}, c = e^{-1/(2 s^2)}, r = e^l,
    q c u^2 + (1-q)(1-r) u - r q c = 0, whose positive root is u (stable form of the quadratic)."""
    s2 = sigma * sigma
    if q == 1.0:
        return s2 * l / 2.0
    # in logs: u = e^{x/s^2}; write the root as x = s2 * log u, u = (-(b) + sqrt(b^2 + 4 a r a)) / (2a)
    a = q * math.exp(-1.0 / (2.0 * s2))
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.exp(np.minimum(l, 700.0))
        b = (1.0 - q) * (1.0 - r)
        disc = np.sqrt(b * b + 4.0 * a * a * r)
        u = np.where(b < 0, (-b + disc) / (2.0 * a), (2.0 * a * r) / (b + disc))
        x = s2 * np.log(u)
    big = l > 700.0  # r overflows: u ~ (1-q)(r-1)/a, log u ~ l + log((1-q)/a)
    return np.where(big, s2 * (l + math.log((1.0 - q) / a)), x)


def _tails(l: np.ndarray, sigma: float, q: float, direction: str, k: int = 1):
    """(P(L > l), P(L <= l), Q(L > l), Q(L <= l)) for the pair (P, Q) of ``direction``."""
    if direction == "remove":
        x = _x_of_remove_loss(l, sigma, q, k)
        return _mix_sf(x, sigma, q, k), _mix_cdf(x, sigma, q, k), ndtr(-x / sigma), ndtr(x / sigma)
    if direction == "add":
        x = _x_of_remove_loss(-l, sigma, q, k)  # L_A > l  <=>  x < x_R(-l)
        return ndtr(x / sigma), ndtr(-x / sigma), _mix_cdf(x, sigma, q, k), _mix_sf(x, sigma, q, k)
    x = _x_of_replace_loss(l, sigma, q)
    return (_mix_sf(x, sigma, q), _mix_cdf(x, sigma, q), _mix_sf(x, sigma, q, 1, -1.0),
            _mix_cdf(x, sigma, q, 1, -1.0))


def _replace_loss(x: float, sigma: float, q: float) -> float:
    return float(remove_loss(x, sigma, q) - remove_loss(-x, sigma, q))


def loss_range(sigma: float, q: float, direction: str, log_tau: float, k: int = 1) -> tuple[float, float]:
    """Losses (l_lo, l_hi) with P(L > l_hi) <= tau and P(L <= l_lo) <= tau (tau = exp(log_tau)).

    Args:
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1].
      direction: "remove", "add" or "replace".
      log_tau: natural log of the tail mass allowed on each side.
      k: group size >= 1.

    Returns:
      The two losses.
    """
    z = normal_isf_log(log_tau)  # Phi(-z) <= tau
    if direction == "remove":  # X ~ mixture of N(j, s^2), j in 0..k: P(X > k + s z), P(X <= -s z) <= tau
        return float(remove_loss(-sigma * z, sigma, q, k)), float(remove_loss(k + sigma * z, sigma, q, k))
    if direction == "add":  # X ~ N(0, s^2), L = -L_R(X) decreasing
        return -float(remove_loss(sigma * z, sigma, q, k)), -float(remove_loss(-sigma * z, sigma, q, k))
    return _replace_loss(-sigma * z, sigma, q), _replace_loss(1.0 + sigma * z, sigma, q)


def _bucket_masses(p_gt: np.ndarray, p_le: np.ndarray) -> np.ndarray:
    """Masses of (l_j, l_{j+1}] from tail/cdf arrays, using the smaller side for precision."""
    from_gt = p_gt[:-1] - p_gt[1:]
    from_le = p_le[1:] - p_le[:-1]
    return np.maximum(np.where(p_gt[:-1] < 0.5, from_gt, from_le), 0.0)


def check_direction(direction: str, k: int) -> None:
    """Raise ValueError for an unknown direction or replace with a group (k > 1)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if direction == "replace" and k != 1:
        raise ValueError(f"direction='replace' supports group_size=1 only, got group_size={k}")


def dpsgd_step_pld(sigma: float, q: float, h: float, direction: str, log_tau: float,
                   group_size: int = 1) -> StepPLD:
    """Discretise one DP-SGD step's PLD on the grid l_j = j h (see the module docstring).

    Args:
      sigma: noise multiplier > 0.
      q: Poisson sampling rate in (0, 1].
      h: grid step > 0.
      direction: "remove", "add" or "replace".
      log_tau: natural log of the tail mass cut off on each side.
      group_size: number k of examples that move together (the unit of privacy), >= 1.

    Returns:
      The :class:`StepPLD`.

    Raises:
      StepTooWide: if the grid would have more than :data:`MAX_STEP_WIDTH` points.
      ValueError: for an unknown direction (or replace with a group).
    """
    check_direction(direction, group_size)
    l_lo, l_hi = loss_range(sigma, q, direction, log_tau, group_size)
    j_lo, j_hi = math.floor(l_lo / h), math.ceil(l_hi / h)
    if j_hi - j_lo > MAX_STEP_WIDTH:
        raise StepTooWide(f"{j_hi - j_lo} grid points for one step (max {MAX_STEP_WIDTH})")
    j_hi = max(j_hi, j_lo + 1)
    l = np.arange(j_lo, j_hi + 1) * h
    p_gt, p_le, q_gt, q_le = _tails(l, sigma, q, direction, group_size)
    pb = _bucket_masses(p_gt, p_le)  # bucket (l_j, l_{j+1}], j = j_lo..j_hi-1
    qb = _bucket_masses(q_gt, q_le)
    p_bot, q_bot = float(p_le[0]), float(q_le[0])
    p_top, q_top = float(p_gt[-1]), float(q_gt[-1])
    # split bucket j onto atoms j (mass a) and j+1 (mass c), preserving both P and Q masses:
    # a + c = pb, a e^{-l_j} + c e^{-l_{j+1}} = qb  =>  c = (pb - e^{l_j} qb) / (1 - e^{-h})
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        eq = np.where(qb > 0, np.exp(l[:-1] + np.log(qb)), 0.0)
    c = np.clip((pb - eq) / (-math.expm1(-h)), 0.0, pb)
    a = pb - c
    split = np.zeros(j_hi - j_lo + 1)
    split[:-1] += a
    split[1:] += c
    split[0] += p_bot  # bottom tail: rounded up to the lowest atom (pessimistic)
    stat_p = np.concatenate(([p_bot], pb, [p_top]))
    stat_q = np.concatenate(([q_bot], qb, [q_top]))
    return StepPLD(h, j_lo, split, p_top, stat_p, stat_q)


def step_variance(sigma: float, q: float, k: int = 1) -> float:
    """chi^2(P || Q) of one remove step (an upper proxy for Var L, used to pick the grid step).

    k = 1: q^2 (e^{1/sigma^2} - 1) (capped at 1/sigma^2, the q = 1 variance); k > 1:
    sum_{i,j} b_i b_j e^{i j / sigma^2} - 1 with b the binomial weights (capped at k^2/sigma^2).
    """
    inv = 1.0 / (sigma * sigma)
    if k == 1:
        return inv if inv > 700 else min(q * q * math.expm1(inv), inv)
    cap = k * k * inv
    if k * k * inv > 700:
        return cap
    b = np.exp(_log_weights(q, k))
    j = np.arange(k + 1, dtype=float)
    chi2 = float(b @ np.exp(np.outer(j, j) * inv) @ b) - 1.0
    return min(max(chi2, 0.0), cap)


def default_grid_step(segments: Sequence[tuple[float, float, int]], group_size: int = 1) -> float:
    """Grid step ~ 1/40 of the rms standard deviation of one step's privacy loss, in [1e-7, 1e-2],
    and at least 1/4000 of the composed loss's standard deviation (long schedules), and at least
    min(1/20 of the step's, 1/2000 of the composed) standard deviation.

    Var(L) ~ chi^2(P || Q) = q^2 (e^{1/sigma^2} - 1) for small q, 1/sigma^2 for q = 1. The
    discretisation changes the composed loss variance by O(T h^2), small against T Var(L).

    Args:
      segments: (sigma, q, T) triples.
      group_size: k >= 1.

    Returns:
      The grid step h.
    """
    tot = 0.0
    n = 0
    for sigma, q, T in segments:
        tot += T * step_variance(sigma, q, group_size)
        n += T
    rms = math.sqrt(tot / n)
    # and at most ~COMPOSED_POINTS grid points per standard deviation of the composed loss: beyond
    # that a finer grid only costs FFT size (the connect-the-dots error is second order in h); at
    # most half that where one step keeps >= 20 points per standard deviation of its own loss
    # (mid-length schedules, T ~ 3e3-1e5: brackets ~1e-5 wide cost twice the FFT size otherwise)
    coarse = min(rms / 20.0, 2.0 * math.sqrt(tot) / COMPOSED_POINTS)
    return float(min(1e-2, max(1e-7, rms / 40.0, math.sqrt(tot) / COMPOSED_POINTS, coarse)))
