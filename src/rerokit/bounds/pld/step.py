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

Rounding of the bucket masses. The masses are differences of normal tails (``ndtr``) at the grid
points x'_j (computed inverses of the losses l_j), in floating point, so the computed masses are
exact only up to rounding. They are stored rounded in the *safe stochastic order*, which every
query and the composition respect, so that no allowance for this rounding is needed afterwards:

* the cells (x'_j, x'_{j+1}] are a partition of the line, so the statistic is a function of the
  output whatever the x'_j; its exact masses are those of these cells. With proven bounds F_m on
  |computed - exact| mass of the positions >= m (the tail errors below: a run of buckets taken
  from one side of the median telescopes to the difference of two tails, so only the tail errors
  at the cut, where the side changes and at the ends enter, plus each subtraction's rounding),
  ``stat_p`` is lowered and ``stat_q`` raised by the least mass flow across the cuts that makes
  every suffix sum (the mass of S >= s) at most, resp. at least, the exact one: a lower bound on
  the power and an upper bound on the level of every test S >= s, by any composition (convolution
  preserves the stochastic order of non-negative measures: E[g(X + Y)] is non-decreasing in X's
  law for non-decreasing g). The flow is at most F_m at cut m, i.e. relative to the tails, so
  tiny levels keep their relative precision. The reversed tests S <= s get the prefix sums'
  error bound ``stat_rev_err`` as round-off instead.
* ``split`` (with its mass at +infinity) is raised in the same order above the exact
  connect-the-dots split of the same cells, so its hockey-stick divergence (E[(1 - e^{eps-L})_+],
  non-decreasing in L) and power stay upper bounds; at the cut between atoms j and j+1 the exact
  split also differs by the error of the split fraction c_j, computed from its bucket's two
  masses (divided by 1 - e^{-h}, but moved by one grid step only). Opt-in (remove, k = 1:
  ``component_split``), c_j is taken from the components instead, P - e^l Q = q (R - e^a Q) with
  R = N(1, sigma^2), or by quadrature of that difference's density over the cell (an error
  relative to c_j itself), per bucket whichever bound is smaller (:func:`component_split`).
  Opt-in (``sparse_tail``), the grid points are a subset of the labels, sparse in the tails
  (:func:`tail_labels`): a bucket is then the cell between consecutive points, its split onto
  their atoms with 1 - e^{-w} for its width w; every bound here is per bucket or per cut.
* the grid points' own loss error eta (L(x'_j) within eta of l_j): each cell's losses lie in
  [l_j - eta, l_{j+1} + eta], so its split onto those two points, shifted up by eta, dominates it
  (the fraction's change is counted above); every atom is then at most 2 eta above the grid, and
  the composed PLD carries the shift (``loss_shift``) that its queries add to the losses.

Assumed (stated as for the FFT's sin/cos, and measured against mpmath in
``tests/bounds/pld/test_pld_engine.py``): (i) every computed mixture tail sum_c w_c Phi(+-a_c)
(``ndtr`` through libm's ``erfc`` or scipy's ``ndtr``, each the larger side as 1 - Phi(-|a|),
within 3u of it as Phi(-|a|) <= 1/2 carries 2 ulps; a_c = (x' - m_c) / sigma the standardised
arguments, the weights and the sum) at a computed point x' is within
:data:`NDTR_ULPS` u (tail + sum_c w_c |a_c| phi(a_c)) of the exact tail at x' (relative
accuracy of the special function and the arithmetic, plus the rounding of the argument itself,
a few u |a_c|, times the density there; group weights from lgamma with their own relative
bound); (ii) the computed point x'_j has exact loss L(x'_j) within :data:`LOSS_POINT_ULPS` u
(1 + max |l|) of l_j (the loss inversions are a few well-conditioned operations in the loss;
measured <= 7 u (1 + |l_j|)); (iii) libm's exp, log and expm1 within 2 ulps (the split fractions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.exactsum import exact_sum_minus_one
from rerokit.bounds.pld.normal import ndtr, ndtr_pair, normal_isf_log

__all__ = ["StepPLD", "StepTooWide", "dpsgd_step_pld", "step_from_tails", "component_split", "loss_range", "default_grid_step", "DIRECTIONS",
           "MAX_STEP_WIDTH", "remove_loss", "loss_tails", "pair_components", "x_of_remove_loss"]

DIRECTIONS = ("remove", "add", "replace")
MAX_STEP_WIDTH = 200_000  # grid points of one step's PLD
NDTR_ULPS = 16.0
"""Assumed accuracy of a computed mixture tail, in units of u (tail + sum_c w_c |a_c| phi(a_c))
(module docstring, (i))."""
LOSS_POINT_ULPS = 32.0
"""Assumed accuracy of a grid point's loss, in units of u (1 + |l|) (module docstring, (ii))."""
_U = 2.0 ** -53
COMPOSED_POINTS = 4000  # default grid points per standard deviation of the composed loss (at most)
# default grid points per (rms) standard deviation of one step's loss. 20 was measured
# (2026-11-26): 2x faster at T <= 4e4 (--mid geometric mean against riskcal x1.15 -> x1.54), every
# --widths cell still within 6.5e-3, but the brackets 4x wider moved pinned golden values (the
# README's gamma 0.19421 +- 1e-5 to 0.194224; tests/bounds/test_options.py), so it stays 40
STEP_POINTS = 40
# a grid step below H_FLOOR (nats; riskcal's and dp-accounting's default is 1e-4) only where the
# composed loss has fewer than FLOOR_POINTS of them per standard deviation: steps with tiny losses
# (large sigma, small q) got grids of ~1e-6 and brackets of 1e-6 - 5e-5 for 2-4x the time. 3e-5, not
# 1e-5 (measured 2026-11-26, seventh stop): q 1e-3 at sigma 2-5 and T 3e3-3e4 (benchmarks/pld_engine.py
# --mid) had grids of 1e-5 (~3400 points per composed standard deviation) and brackets 1e-5 - 1e-4
# wide; at kappa 1e-9 they were slower than riskcal (x0.77-0.98); now x1.17-1.95 there, brackets
# <= 3e-3, and every --widths cell within 2 % (widest unchanged); 1e-4 (x2.98) took those cells to 9e-3
H_FLOOR = 3e-5
FLOOR_POINTS = 200


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
      stat_rev_err: (P, Q) bounds on |stored - exact| of every prefix sum (mass of the buckets up
        to a label) of ``stat_p`` / ``stat_q``: what the tests S <= s (the reversed pair) must allow;
        the tests S >= s need none (module docstring).
      loss_shift: bound on how far (in nats) the true losses of a bucket may lie above its grid
        atoms (the grid points' own loss error, twice; module docstring): the composed PLD's
        losses are to be read that much higher.
    """

    h: float
    j_lo: int
    split: np.ndarray
    inf_mass: float
    stat_p: np.ndarray
    stat_q: np.ndarray
    stat_rev_err: tuple[float, float] = (0.0, 0.0)
    loss_shift: float = 0.0


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


def x_of_remove_loss(l: np.ndarray, sigma: float, q: float, k: int = 1) -> np.ndarray:
    """Inverse of L_R (:func:`remove_loss`): x with L_R(x) = l; -inf where l <= log Binomial(0; k, q)
    (no such x). The grid points x'_j = x(l_j) as every step computes them: the cells
    (x'_j, x'_{j+1}] of the log-mass continuation (:mod:`rerokit.bounds.pld.logtail`) are the steps' own."""
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
    return _tails_at(l, sigma, q, direction, k)[:4]


def _tails_at(l: np.ndarray, sigma: float, q: float, direction: str, k: int = 1):
    """:func:`_tails` and the points x where they were evaluated."""
    if direction in ("remove", "add"):
        x = x_of_remove_loss(l if direction == "remove" else -l, sigma, q, k)  # add: L_A > l <=> x < x_R(-l)
        q_gt, q_le = ndtr_pair(x / sigma)  # ndtr(-x / sigma), ndtr(x / sigma), one erfc per point
        if k == 1:  # the Q tails reused in the mixture's (the same values as _mix_sf / _mix_cdf)
            r_gt, r_le = ndtr_pair((x - 1.0) / sigma)  # (1 - x) / sigma is -((x - 1) / sigma) exactly
            p_gt, p_le = (1.0 - q) * q_gt + q * r_gt, (1.0 - q) * q_le + q * r_le
        else:
            p_gt, p_le = _mix_sf(x, sigma, q, k), _mix_cdf(x, sigma, q, k)
        if direction == "remove":
            return p_gt, p_le, q_gt, q_le, x
        return q_le, q_gt, p_le, p_gt, x
    x = _x_of_replace_loss(l, sigma, q)
    return (_mix_sf(x, sigma, q), _mix_cdf(x, sigma, q), _mix_sf(x, sigma, q, 1, -1.0),
            _mix_cdf(x, sigma, q, 1, -1.0), x)


def loss_tails(l: np.ndarray, sigma: float, q: float, direction: str, k: int = 1):
    """(P(L > l), P(L <= l), Q(L > l), Q(L <= l)) for the pair (P, Q) of ``direction``, element-wise.

    Args:
      l: losses.
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1].
      direction: "remove", "add" or "replace".
      k: group size >= 1.

    Returns:
      The four arrays.
    """
    return _tails(np.asarray(l, dtype=float), sigma, q, direction, k)


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


def _arg_slack(x: np.ndarray, sigma: float, comps: Sequence[tuple[float, float]]) -> np.ndarray:
    """sum_c w_c |a_c| phi(a_c), a_c = (x - m_c) / sigma, for the components (w_c, m_c) of a mixture."""
    out = np.zeros(x.shape)
    fin = np.isfinite(x)
    xf = np.where(fin, x, 0.0)
    for w, m in comps:
        a = np.abs(xf - m) / sigma
        with np.errstate(under="ignore"):
            out += w * a * np.exp(-0.5 * a * a) * 0.3989422804014328
    return np.where(fin, out, 0.0)


def pair_components(sigma: float, q: float, direction: str, k: int) -> tuple[list, list, float]:
    """(weight, mean) of the components of P and of Q for ``direction``, and a bound on the
    relative error of the computed binomial weights (k > 1: exp of a sum of lgamma and log terms,
    libm within 2 ulps; k = 1: q exactly and 1 - q rounded once, inside the tails' own budget)."""
    lw = _log_weights(q, k)
    w = np.exp(lw)
    mix = [(float(w[j]), float(j)) for j in range(k + 1) if w[j] > 0]
    rel_w = 0.0
    if k > 1 and q < 1.0:
        fin = lw[np.isfinite(lw)]
        big = 3.0 * math.lgamma(k + 1.0) + k * (abs(math.log(q)) + abs(math.log1p(-q)))
        rel_w = 8.0 * _U * (4.0 + big + float(np.max(np.abs(fin))))
    if direction == "remove":
        return mix, [(1.0, 0.0)], rel_w
    if direction == "add":
        return [(1.0, 0.0)], mix, rel_w
    return [(1.0 - q, 0.0), (q, 1.0)], [(1.0 - q, 0.0), (q, -1.0)], rel_w


_components = pair_components  # (the name the tests use)


def _tail_errors(p_gt: np.ndarray, p_le: np.ndarray, slack: np.ndarray, rel_w: float):
    """Bounds on the computed tails' errors (module docstring, (i)), and the mixture weights'."""
    e_gt = (NDTR_ULPS * _U + rel_w) * np.abs(p_gt) + NDTR_ULPS * _U * slack + 1e-300
    e_le = (NDTR_ULPS * _U + rel_w) * np.abs(p_le) + NDTR_ULPS * _U * slack + 1e-300
    return e_gt, e_le


def _suffix_errors(p_gt: np.ndarray, p_le: np.ndarray, e_gt: np.ndarray, e_le: np.ndarray,
                   use_gt: np.ndarray | None = None):
    """Errors of the stored statistic [bottom tail, buckets, top tail] (:func:`_bucket_masses`).

    A run of buckets taken from one side telescopes to the difference of two tails, so the stored
    mass of the positions >= a cut is off by at most the tail errors at the cut, at the points
    where the side changes (both sides) and at the top or bottom where a run ends there, plus
    each bucket's own subtraction (<= u |result|) and clipping of a negative rounded difference.

    Args:
      p_gt, p_le: the computed tails at the grid points; e_gt, e_le: bounds on their errors.
      use_gt: which side each bucket was taken from (default: :func:`_bucket_masses`' choice).

    Returns:
      (F, local): F[m] bounds |stored - exact| mass of the positions >= m (m = 0..n, n the
      statistic's length); local[j] bounds |stored - exact| of bucket j alone.
    """
    n_b = p_gt.size - 1
    if use_gt is None:
        use_gt = p_gt[:-1] < 0.5
    raw = np.where(use_gt, p_gt[:-1] - p_gt[1:], p_le[1:] - p_le[:-1])
    extra = _U * np.abs(raw) + np.maximum(-raw, 0.0)
    side = np.where(use_gt, e_gt[:-1], e_le[:-1])  # the error at each bucket's lower point, its side
    local = np.where(use_gt, e_gt[:-1] + e_gt[1:], e_le[:-1] + e_le[1:]) + extra
    const = np.zeros(n_b)
    starts = np.concatenate(([0], np.nonzero(use_gt[1:] != use_gt[:-1])[0] + 1))
    c = 0.0 if use_gt[-1] else float(e_le[-1] + e_gt[-1])  # the top run's end (top tail cancels on the gt side)
    for r in range(starts.size - 1, -1, -1):
        a = int(starts[r])
        b = int(starts[r + 1]) if r + 1 < starts.size else n_b
        const[a:b] = c
        c = c + float(e_le[a] + e_gt[a])  # the run below ends at a: both sides' errors there
    ext_suffix = np.concatenate((np.cumsum(extra[::-1])[::-1], [0.0]))
    F = np.zeros(n_b + 3)
    F[1:n_b + 1] = side + const + ext_suffix[:-1]
    # the total: the bottom tail p_le[0] cancels against a run of le buckets starting there
    F[0] = const[0] + ext_suffix[0] + (0.0 if not use_gt[0] else float(e_le[0] + e_gt[0]))
    F[n_b + 1] = e_gt[-1]  # the top tail alone
    return F * (1.0 + 1e-9), local


def _one_sided(p_gt: np.ndarray, p_le: np.ndarray, e_gt: np.ndarray, e_le: np.ndarray, stored: np.ndarray):
    """(up, down, local, f_suf, f_pre): bounds on exact - stored (up) and stored - exact (down) mass
    of the positions >= m of the stored statistic ``stored`` (exact total 1), the buckets' own
    errors, and the two-sided suffix and prefix bounds they come from.

    Each is the smaller of the suffix bound (:func:`_suffix_errors`) and the stored total's exact
    excess (math.fsum) plus the bound on the prefix (positions < m), the same telescoping from the
    bottom: relative to the smaller tail at every cut, so that the flows below keep the relative
    precision of both tails (tiny levels, and gamma near 1)."""
    use_gt = p_gt[:-1] < 0.5
    f_suf, local = _suffix_errors(p_gt, p_le, e_gt, e_le, use_gt)
    f_rev, _ = _suffix_errors(p_le[::-1], p_gt[::-1], e_le[::-1], e_gt[::-1], ~use_gt[::-1])
    f_pre = f_rev[::-1]  # F_pre[m]: positions < m (reversed positions >= n - m)
    excess = exact_sum_minus_one(stored)  # stored total - 1, exact (rounded once)
    slop = 2.0 * _U * abs(excess)  # excess is the exact sum rounded once
    up = np.maximum(0.0, np.minimum(f_suf, f_pre - excess + slop))
    down = np.maximum(0.0, np.minimum(f_suf, f_pre + excess + slop))
    return up, down, local, f_suf, f_pre


def _flow_up(p: np.ndarray, F: np.ndarray) -> np.ndarray:
    """A pmf p'' whose mass at positions >= m is >= that of p plus F[m] for every m (so it
    stochastically dominates every pmf within F of p at every cut), moving mass upwards only
    where needed: G_m = max(F_m, G_{m+1} - p_m), p''_m >= p_m + G_m - G_{m+1} >= 0 (rounded up)."""
    n = p.size
    G = np.array(F[: n + 1], dtype=float)
    G[n] = 0.0
    for _ in range(256):
        cand = np.maximum(F[:n], G[1:] - p)
        if np.array_equal(cand, G[:n]):
            break
        G[:n] = cand
    else:  # a long chain (not seen in practice): the recurrence itself
        for m in range(n - 1, -1, -1):
            G[m] = max(F[m], G[m + 1] - p[m])
    d = G[:n] - G[1:]
    return np.maximum(0.0, (p + d) + 5.0 * _U * (p + np.abs(d)))


def _flow_down(p: np.ndarray, F: np.ndarray) -> np.ndarray:
    """A pmf p'' whose mass at positions >= m is <= that of p minus F[m], or equal to the mass at
    positions >= m + 1 where that is not possible (stochastically dominated by every pmf within F
    of p at every cut): G_m = min(F_m, G_{m+1} + p_m) from the top, p''_m = 0 where the min is the
    second, else <= p_m - G_m + G_{m+1} (rounded down)."""
    n = p.size
    G = np.array(F[: n + 1], dtype=float)
    G[n] = 0.0
    shrink = 1.0 - 4.0 * _U
    for _ in range(256):
        cand = np.minimum(F[:n], (G[1:] + p) * shrink)
        if np.array_equal(cand, G[:n]):
            break
        G[:n] = cand
    else:
        for m in range(n - 1, -1, -1):
            G[m] = min(F[m], (G[m + 1] + p[m]) * shrink)
    second = F[:n] > (G[1:] + p) * shrink
    d = G[:n] - G[1:]
    out = np.maximum(0.0, (p - d) - 5.0 * _U * (p + np.abs(d)))
    return np.where(second, 0.0, out)


def _prefix_error(p: np.ndarray, p2: np.ndarray, F: np.ndarray) -> float:
    """Bound on |prefix sum of p2 - exact| for every cut (exact total 1): twice the largest suffix
    error (p vs exact: F; p2 vs p: their l1 distance), since a prefix is the total minus a suffix."""
    return 2.0 * (float(np.max(F)) + float(np.sum(np.abs(p2 - p))) * (1.0 + 1e-6) + 1e-300)


def check_direction(direction: str, k: int) -> None:
    """Raise ValueError for an unknown direction or replace with a group (k > 1)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if direction == "replace" and k != 1:
        raise ValueError(f"direction='replace' supports group_size=1 only, got group_size={k}")


def dpsgd_step_pld(sigma: float, q: float, h: float, direction: str, log_tau: float,
                   group_size: int = 1, max_width: int = MAX_STEP_WIDTH, component_split: bool = False,
                   sparse_tail: float | None = None) -> StepPLD:
    """Discretise one DP-SGD step's PLD on the grid l_j = j h (see the module docstring).

    Args:
      sigma: noise multiplier > 0.
      q: Poisson sampling rate in (0, 1].
      h: grid step > 0.
      direction: "remove", "add" or "replace".
      log_tau: natural log of the tail mass cut off on each side.
      group_size: number k of examples that move together (the unit of privacy), >= 1.
      max_width: the most grid points allowed (default :data:`MAX_STEP_WIDTH`).
      component_split: (remove, group_size 1 only) compute the split fractions from the mixture's
        components, where the (1 - q) N(0, sigma^2) part cancels exactly (:func:`component_split`):
        the same statistic, a split with a proven error about q times smaller where e^l ~ 1 (the
        lower-tail tilt's fine grids, :mod:`rerokit.bounds.pld.lowertail`). Off: the default
        path, which :mod:`rerokit.bounds.pld.batch` mirrors.
      sparse_tail: (opt-in) the grid points only where :func:`tail_labels` puts them (every label
        in the bulk, every 2^i-th in the tails, for this mass budget): the same construction on
        the coarser cells, its arrays on the full grid with zeros at the skipped labels. None
        (the default): every label.

    Returns:
      The :class:`StepPLD`.

    Raises:
      StepTooWide: if the grid would span more than ``max_width`` points.
      ValueError: for an unknown direction (or replace with a group), or ``component_split`` for
        another pair than remove with group_size 1.
    """
    check_direction(direction, group_size)
    if component_split and (direction != "remove" or group_size != 1):
        raise ValueError(f"component_split needs direction='remove' and group_size=1, got {direction!r}, {group_size}")
    l_lo, l_hi = loss_range(sigma, q, direction, log_tau, group_size)
    j_lo, j_hi = math.floor(l_lo / h), math.ceil(l_hi / h)
    if j_hi - j_lo > max_width:
        raise StepTooWide(f"{j_hi - j_lo} grid points for one step (max {max_width})")
    j_hi = max(j_hi, j_lo + 1)
    labels = None if sparse_tail is None else tail_labels(sigma, q, h, direction, group_size, j_lo, j_hi, sparse_tail)
    l = (np.arange(j_lo, j_hi + 1) if labels is None else labels) * h
    if component_split:
        x = x_of_remove_loss(l, sigma, q, 1)
        q_gt, q_le = ndtr_pair(x / sigma)
        r_gt, r_le = ndtr_pair((x - 1.0) / sigma)
        # the same operations as _mix_sf / _mix_cdf (k = 1): the same tails, bit for bit
        tails = ((1.0 - q) * q_gt + q * r_gt, (1.0 - q) * q_le + q * r_le, q_gt, q_le, x)
        return step_from_tails(sigma, q, h, direction, group_size, j_lo, l, tails, r_tails=(r_gt, r_le), labels=labels)
    return step_from_tails(sigma, q, h, direction, group_size, j_lo, l, _tails_at(l, sigma, q, direction, group_size),
                           labels=labels)


def step_from_tails(sigma: float, q: float, h: float, direction: str, group_size: int, j_lo: int, l: np.ndarray,
                    tails: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                    r_tails: tuple[np.ndarray, np.ndarray] | None = None, labels: np.ndarray | None = None) -> StepPLD:
    """The step PLD of :func:`dpsgd_step_pld` from its tails at the grid points ``l`` = (j_lo ..
    j_hi) h: the buckets, the split and the safe rounding of both (module docstring).

    Args:
      sigma, q, h, direction, group_size: as for :func:`dpsgd_step_pld`.
      j_lo: the lowest grid label.
      l: the grid points' losses, ``np.arange(j_lo, j_hi + 1) * h``.
      tails: (P(L > l), P(L <= l), Q(L > l), Q(L <= l), x) at those points, as ``_tails_at``
        computes them (:mod:`rerokit.bounds.pld.batch` does all of this for many steps at once, on
        rows of a 2-D array, with the same values).
      r_tails: (remove, k = 1 only) the tails (N(1, sigma^2)(X > x), N(1, sigma^2)(X <= x)) at the
        same points, from which the split fractions are taken where their proven error is smaller
        (:func:`component_split`); None (the default): the default path.
      labels: (opt-in) the points' integer labels, increasing from j_lo, their gaps powers of two
        (:func:`tail_labels`), ``l = labels * h``: a bucket is then the cell between two consecutive
        points, its split onto their atoms (connect the dots on a cell of width w = gap h, exact
        in floating point, with 1 - e^{-w} for 1 - e^{-h} throughout; every bound of the module
        docstring is per bucket), its statistic labelled by its lower point, and the arrays are
        returned on the full grid j_lo..j_hi with zeros at the other labels (the same masses in the
        same order: every stochastic-order statement is unchanged). None: every label.

    Returns:
      The :class:`StepPLD`.
    """
    p_gt, p_le, q_gt, q_le, x = tails
    j_hi = j_lo + l.size - 1
    hw: float | np.ndarray = h  # each bucket's width (the grid step on the default path)
    if labels is not None:
        gaps = np.diff(labels)
        if labels[0] != j_lo or gaps.size != l.size - 1 or np.any(gaps <= 0) or np.any(gaps & (gaps - 1)):
            raise ValueError("labels must increase from j_lo by powers of two, one per point of l")
        hw = gaps * h  # a power of two times h: exact
    pb = _bucket_masses(p_gt, p_le)  # bucket (l_j, l_{j+1}], j = j_lo..j_hi-1
    qb = _bucket_masses(q_gt, q_le)
    # proven effect of the tails' rounding (module docstring)
    comp_p, comp_q, rel_w = pair_components(sigma, q, direction, group_size)
    ep_gt, ep_le = _tail_errors(p_gt, p_le, _arg_slack(x, sigma, comp_p), rel_w if direction != "add" else 0.0)
    eq_gt, eq_le = _tail_errors(q_gt, q_le, _arg_slack(x, sigma, comp_q), rel_w if direction == "add" else 0.0)
    stat_p = np.concatenate(([float(p_le[0])], pb, [float(p_gt[-1])]))
    stat_q = np.concatenate(([float(q_le[0])], qb, [float(q_gt[-1])]))
    fp_up, fp_down, local_p, f_suf, f_pre = _one_sided(p_gt, p_le, ep_gt, ep_le, stat_p)
    fq_up, fq_down, local_q, _, _ = _one_sided(q_gt, q_le, eq_gt, eq_le, stat_q)
    p_bot, p_top = float(p_le[0]), float(p_gt[-1])
    c, dc, eta = _default_split(l, hw, pb, qb, local_p, local_q)
    a = pb - c
    if r_tails is not None:
        # the opt-in path: per bucket, whichever fraction has the smaller c + dc. The flows below
        # make the stored suffix at the cut inside bucket j (which holds c_j and no other fraction)
        # max over the cuts above of (stored suffix + its bound): this choice lowers every one of
        # them, so the split is never above the default path's beyond the rounding of a = pb - c
        c2, dc2 = component_split(l, hw, q, pb, qb, local_p, local_q, sigma, x, r_tails)
        better = c2 + dc2 < c + dc  # (False where dc2 is not finite)
        c, dc = np.where(better, c2, c), np.where(better, dc2, dc)
        a = pb - c
    split = np.zeros(j_hi - j_lo + 1)
    split[:-1] += a
    split[1:] += c
    split[0] += p_bot  # bottom tail: rounded up to the lowest atom (pessimistic)
    # rounded in the safe stochastic order (upwards), with the mass at +infinity as the top position
    # (exact total 1: the suffix and prefix bounds of the statistic, the fraction's error at the
    # cut it straddles, and the stored split's own exact excess)
    n_b = pb.size
    stored = np.concatenate((split, [p_top]))
    g_suf, g_pre = np.array(f_suf), np.array(f_pre)
    g_suf[1:n_b + 1] = f_suf[2:n_b + 2] + dc
    g_suf[n_b + 1] = f_suf[n_b + 1]
    g_pre[1:n_b + 1] = f_pre[2:n_b + 2] + dc
    g_pre[n_b + 1] = f_pre[n_b + 1]
    excess = exact_sum_minus_one(stored)  # math.fsum's value, vectorised
    f_split = np.maximum(0.0, np.minimum(g_suf, g_pre - excess + 2.0 * _U * abs(excess)))
    up = _flow_up(stored, f_split)
    split, p_top = up[:-1], float(up[-1])
    # the statistic's masses, rounded in the safe stochastic order: P below (power of S >= s), Q above
    # (its level), so the tests S >= s need no allowance; the reversed tests get stat_rev_err
    p_lo, q_hi = _flow_down(stat_p, fp_down), _flow_up(stat_q, fq_up)
    rev = (_prefix_error(stat_p, p_lo, np.maximum(fp_up, fp_down)), _prefix_error(stat_q, q_hi, np.maximum(fq_up, fq_down)))
    if labels is not None:
        split, p_lo, q_hi = _on_full_grid(labels, split, p_lo, q_hi)
    return StepPLD(h, j_lo, split, p_top, p_lo, q_hi, rev, 2.0 * eta)


def _on_full_grid(labels: np.ndarray, split: np.ndarray, stat_p: np.ndarray,
                  stat_q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sparse step's arrays (:func:`step_from_tails` with ``labels``) on the full grid: the atoms
    at their labels, each bucket at its lower point's label, the bottom tail below the first and
    the top tail at the last (as on the default path), zeros elsewhere."""
    pos = labels - labels[0]
    n = int(pos[-1]) + 1
    full = np.zeros(n)
    full[pos] = split
    out = [full]
    for st in (stat_p, stat_q):
        f = np.zeros(n + 1)
        f[0] = st[0]
        f[1 + pos[:-1]] = st[1:-1]
        f[n] = st[-1]
        out.append(f)
    return out[0], out[1], out[2]


def tail_labels(sigma: float, q: float, h: float, direction: str, group_size: int, j_lo: int, j_hi: int,
                budget: float, max_log2: int = 10) -> np.ndarray:
    """Labels of a sparse step grid (:func:`dpsgd_step_pld` with ``sparse_tail``): j_lo..j_hi in
    runs of 2^max_log2 labels, run m with every 2^i-th label for the largest i <= max_log2 with

        min(max(P, Q)(L > l_a), max(P, Q)(L <= l_b)) <= budget 4^-i

    (l_a, l_b the run's ends; the tails of :func:`loss_tails` at the runs' ends only); the last
    gaps split into powers of two. A cell of width w carrying mass m adds at most m w^2 / 4 to the
    variance of the discretised loss (connect the dots), against about h^2 / 6 per step on the full
    grid: a run whose mass beyond one end is within budget 4^-i adds at most budget h^2 / 4, and
    the tails shrink geometrically, so the step's discretisation error grows by a few budget
    (a heuristic choice only: every grid gives a certified step). Any t-tilt in (-1, 0) of the
    pair, P^{1+t} Q^{-t}, is below max(P, Q) pointwise, so the rule also holds for the tilted steps
    up to their normalisation."""
    run = 1 << max_log2
    ends = np.append(np.arange(j_lo, j_hi, run), j_hi)
    p_gt, p_le, q_gt, q_le = _tails(ends * h, sigma, q, direction, group_size)
    above, below = np.maximum(p_gt, q_gt), np.maximum(p_le, q_le)
    beyond = np.minimum(above[:-1], below[1:])
    with np.errstate(divide="ignore"):
        i = np.floor(np.log(budget / np.maximum(beyond, 1e-300)) / math.log(4.0))
    i = np.clip(np.nan_to_num(i, nan=0.0), 0, max_log2).astype(np.int64)
    parts = [np.arange(int(a), int(b), 1 << int(k)) for a, b, k in zip(ends[:-1], ends[1:], i)]
    labels = np.concatenate(parts + [np.array([j_hi])])
    gaps = np.diff(labels)
    odd = np.nonzero(gaps & (gaps - 1))[0]  # (only the last run's last gap can be one)
    if odd.size:
        extra = []
        for g in odd:
            a, left = int(labels[g]), int(gaps[g])
            while left & (left - 1):  # not yet a power of two: its largest power of two first
                p = 1 << (left.bit_length() - 1)
                a += p
                left -= p
                extra.append(a)
        labels = np.sort(np.concatenate((labels, np.array(extra, dtype=np.int64))))  # (all distinct)
    return labels


def _one_minus_exp(hw: float | np.ndarray) -> float | np.ndarray:
    """1 - e^{-w} per bucket by libm's expm1 (2 ulps, the module docstring's (iii)): a float for
    the default path's single grid step, else one value per distinct width, mapped to the buckets."""
    if np.ndim(hw) == 0:
        return -math.expm1(-hw)
    mant, ex = np.frexp(hw)
    if hw.size and np.all(mant == mant[0]):  # powers of two times one width (tail_labels): a table
        lo = int(ex.min())
        tab = np.array([-math.expm1(-math.ldexp(float(mant[0]), lo + i)) for i in range(int(ex.max()) - lo + 1)])
        return tab[ex - lo]
    uniq, inv = np.unique(hw, return_inverse=True)
    return np.array([-math.expm1(-float(w)) for w in uniq])[inv]


def _default_split(l: np.ndarray, h: float | np.ndarray, pb: np.ndarray, qb: np.ndarray, local_p: np.ndarray,
                   local_q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The default path's split fractions c_j = (pb_j - e^{l_j} qb_j) / (1 - e^{-h}) (clipped to
    [0, pb_j]; Doroshenko et al. 2022), bounds dc on |c - exact| (module docstring) and the grid
    points' loss error eta (:func:`step_from_tails`; :mod:`rerokit.bounds.pld.batch` mirrors it)."""
    # split bucket j onto atoms j (mass a) and j+1 (mass c), preserving both P and Q masses:
    # a + c = pb, a e^{-l_j} + c e^{-l_{j+1}} = qb  =>  c = (pb - e^{l_j} qb) / (1 - e^{-h})
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        eq = np.where(qb > 0, np.exp(l[:-1] + np.log(qb)), 0.0)
    d = _one_minus_exp(h)
    c = np.clip((pb - eq) / d, 0.0, pb)
    # the split's exact counterpart (module docstring): each bucket's losses lie within eta of its
    # grid points (eta_j <= eta for bucket j), so its connect-the-dots split onto l_j - eta_j,
    # l_{j+1} + eta_j (c^ below) shifted up by eta_j dominates it (all atoms within 2 eta above the grid); the stored split differs from that one at the cut between atoms j and
    # j+1 by the statistic's suffix error plus |c_j - c^_j| <= (|d pb_j| + e^{l_j} |d qb_j| + the
    # rounding of eq = exp(l_j + log qb) (libm's exp/log within 2 ulps), of the subtraction and
    # division + eta_j (eq_j + 2 pb_j)) / (1 - e^{-h}) + |d pb_j| (the clip)
    eta = LOSS_POINT_ULPS * _U * (1.0 + float(np.max(np.abs(l))))
    lj = l[:-1]
    eta_j = LOSS_POINT_ULPS * _U * (1.0 + np.maximum(np.abs(lj), np.abs(l[1:])))  # bucket j's own (<= eta)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        q_scaled = np.exp(np.minimum(lj + np.log(local_q), 700.0))  # e^{l_j} |d qb_j|
        lq = np.where(qb > 0, np.abs(np.log(np.where(qb > 0, qb, 1.0))), 0.0)
    eq_rel = _U * (6.0 * lq + 4.0 * np.abs(lj) + 8.0)
    # and |d qb_j| <= stored + exact qb_j, e^{l_j} exact qb_j <= e^{eta_j} exact pb_j (the cell's
    # likelihood ratio is >= e^{l_j - eta_j}): what bounds it where qb_j underflows at huge losses
    q_scaled = np.minimum(q_scaled, eq * (1.0 + eq_rel) + math.exp(2.0 * eta) * (pb + local_p) * (1.0 + 4.0 * _U))
    num = local_p + q_scaled + eq_rel * eq + 8.0 * _U * (pb + eq) + eta_j * (eq + 2.0 * pb)
    dc = (num / (d * (1.0 - 8.0 * _U)) + local_p) * (1.0 + 1e-9)
    return c, dc, eta


def component_split(l: np.ndarray, h: float | np.ndarray, q: float, pb: np.ndarray, qb: np.ndarray, local_p: np.ndarray,
                    local_q: np.ndarray, sigma: float, x: np.ndarray,
                    r_tails: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Split fractions c_j of the remove pair with k = 1 from its components, and their proven error:
    per bucket the one with the smaller c + dc of :func:`_tails_split` (from the components' tails)
    and :func:`_quadrature_split` (quadrature of the cell's integrand: an error relative to the
    fraction itself). Arguments and returns as :func:`_tails_split`."""
    c, dc = _tails_split(l, h, q, pb, qb, local_p, local_q, sigma, x, r_tails)
    c3, dc3 = _quadrature_split(l, h, q, pb, qb, local_p, local_q, sigma, x)
    better = c3 + dc3 < c + dc  # (False where dc3 is not finite)
    return np.where(better, c3, c), np.where(better, dc3, dc)


def _tails_split(l: np.ndarray, h: float | np.ndarray, q: float, pb: np.ndarray, qb: np.ndarray, local_p: np.ndarray,
                 local_q: np.ndarray, sigma: float, x: np.ndarray,
                 r_tails: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Split fractions c_j of the remove pair with k = 1 from its components' tails, and their proven error.

    P = (1 - q) Q + q R with Q = N(0, sigma^2), R = N(1, sigma^2), so for the exact cell masses
    (pb*, qb*, rb*) of a bucket and W = e^{l_j} - (1 - q) (l_j the grid value, a float, exact)

        pb* - e^{l_j} qb* = q rb* - W qb*,

    and c_j = (q rb_j - W qb_j) / (1 - e^{-h}) (clipped to [0, pb_j]) loses the (1 - q) Q part
    exactly: its error is q |d rb| + |W| |d qb| instead of |d pb| + e^{l_j} |d qb| (module
    docstring), about q times smaller where e^{l_j} ~ 1 - q + O(q) (P's lower tail; Doroshenko et
    al. 2022 for the split itself). Every rounding, with d the bound on |computed - exact|:

    * rb, qb: bucket masses of single-component tails at the computed points (the module
      docstring's assumption (i) with one component), their errors local_r, local_q
      (:func:`_suffix_errors`, each bucket alone: two tails plus the subtraction and clip);
    * W = fl(expm1(l_j) + q): assumption (iii) budgets libm's expm1 at 2 ulps (<= 4 u relative);
      numpy's vectorised expm1 is allowed 4x that, dW <= 16 u |expm1(l_j)| + 2 u |W| (the sum
      rounded once, |W| vs the computed one: + u);
    * N = fl(fl(q rb) - fl(W qb)): two products and the subtraction, <= 3 u (q rb + |W| qb), and
      |N - N*| <= q local_r + (|W| + dW) local_q + dW qb + that;
    * the division by D = fl(-expm1(-h)) (2 ulps) and its own rounding: <= 6 u |N| / D, with
      |N| <= (q rb + |W| qb)(1 + 2u): counted as 8 u (q rb + |W| qb) / (D (1 - 8 u));
    * the grid points' loss error eta_j (module docstring): the exact counterpart splits onto
      l_j - eta_j and l_{j+1} + eta_j, which changes e^{l_j} qb* by <= eta_j e^{l_j} qb* and the
      denominator by <= 2 eta_j: + eta_j (e^{l_j} qb + 2 pb) / D, with e^{l_j} = W* + 1 - q <=
      |W| + dW + 1 (first order; the products of two u-small terms are inside the final 1e-9);
    * the clip to [0, pb] (the exact fraction lies in [0, pb*]): + local_p.

    Args:
      l: the grid points' losses (n + 1); h: the grid step (or each bucket's width, a sparse step:
        :func:`step_from_tails`); q: the sampling rate.
      pb, qb: the computed P- and Q-bucket masses (n); local_p, local_q: their error bounds.
      sigma: noise multiplier; x: the computed points (n + 1).
      r_tails: R(X > x), R(X <= x) at the points x, computed as ndtr((1 - x) / sigma),
        ndtr((x - 1) / sigma).

    Returns:
      (c, dc): the fractions (n) and bounds on |c - exact| (inf where W overflows: not used).
    """
    r_gt, r_le = r_tails
    rb = _bucket_masses(r_gt, r_le)
    er_gt, er_le = _tail_errors(r_gt, r_le, _arg_slack(x, sigma, [(1.0, 1.0)]), 0.0)
    _, local_r = _suffix_errors(r_gt, r_le, er_gt, er_le, r_gt[:-1] < 0.5)
    lj = l[:-1]
    with np.errstate(over="ignore", invalid="ignore"):
        em = np.expm1(lj)
        w = em + q
        aw = np.abs(w)
        dw = 16.0 * _U * np.abs(em) + 2.0 * _U * aw
        qr, wq = q * rb, w * qb
        big = qr + aw * qb
        d = _one_minus_exp(h)
        c = np.clip((qr - wq) / d, 0.0, pb)
        err_n = q * local_r + (aw + dw) * local_q + dw * qb + 3.0 * _U * big
        eta_j = LOSS_POINT_ULPS * _U * (1.0 + np.maximum(np.abs(lj), np.abs(l[1:])))
        num = err_n + 8.0 * _U * big + eta_j * ((aw + dw + 1.0) * qb + 2.0 * pb)
        dc = (num / (d * (1.0 - 8.0 * _U)) + local_p) * (1.0 + 1e-9)
    return c, np.where(np.isfinite(dc), dc, np.inf)


# Gauss-Legendre nodes and weights on [-1, 1], m = 3 (Abramowitz & Stegun 1964, Table 25.4)
_GL_X = (-0.7745966692414834, 0.0, 0.7745966692414834)
_GL_W = (0.5555555555555556, 0.8888888888888888, 0.5555555555555556)
_GL_M = 3
_GL_CONST = math.factorial(_GL_M) ** 4 / ((2 * _GL_M + 1) * math.factorial(2 * _GL_M) ** 2)


def _quadrature_split(l: np.ndarray, h: float | np.ndarray, q: float, pb: np.ndarray, qb: np.ndarray,
                      local_p: np.ndarray, local_q: np.ndarray, sigma: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split fractions of the remove pair with k = 1 by quadrature of the cell's integrand, with an
    error relative to the fraction itself (not to the tails, as the bucket differences have).

    With Q = N(0, sigma^2) (density phi_0), R = N(1, sigma^2) (phi_1 = phi_0 e^{(2x - 1) / (2 sigma^2)}),
    k = 1 / sigma^2, the cell (x_j, x_j + Delta] and eps_j = e^{L(x_j)} - e^{l_j} (the point's loss
    error, |eps_j| <= e^{l_j} expm1(eta_j) by the module docstring's (ii)):

        pb* - e^{l_j} qb* = q phi_1(x_j) J + eps_j qb*,
        J = int_0^Delta exp(-k x_j t - k t^2 / 2) expm1(k t) dt,

    whose integrand g is positive and vanishes at t = 0. J by the 3-point Gauss-Legendre rule, its
    remainder Delta^7 (3!)^4 / (7 (6!)^3) |g^(6)| (Abramowitz & Stegun 1964, 25.4.30) bounded by
    Cauchy's estimate |g^(6)| <= 6! M / s^6 on the disks of radius s around [0, Delta] (g is entire,
    |g(z)| <= exp(|k x_j| rho + k rho^2 / 2) expm1(k rho) =: M for |z| <= rho = Delta + s;
    s = 2 / (|k x_j| + sqrt(k)), where M stays O(k rho)). Only where |k x_j| D <= 1 and k D <= 1
    (D below; else the rule is of no use). Rounding, all counted (u the unit roundoff; numpy's exp
    and expm1 allowed 8 u):

    * Delta = fl(x_{j+1} - x_j): |Delta~ - Delta| <= u Delta~ (1 + 2u), times max g <= e^{|k x_j| D}
      expm1(k D) on [0, D], D = Delta~ (1 + 2u) (e^y <= 1 + y + y^2, expm1(y) <= y + y^2 for y <= 1);
    * the nodes (literals, 1 + xi and the product) within 4 u Delta of the rule's: times max |g'| <=
      e^{|k x_j| D} ((|k x_j| + k D) expm1(k D) + k e^{k D}), and the rule's weights sum to 2;
    * each g at a node, with k = fl(1 / sigma^2) and k x_j rounded (2u each): the exponent's argument
      within 8 u (|k x_j| t + k t^2), expm1's argument within 3 u relative (condition (1 + k t)), the
      two functions and the product: (48 + 8 (|k x_j| D + k D^2) + 4 k D) u relative, summed over
      positive terms;
    * q phi_1(x_j) = q exp(-(x_j - 1)^2 k / 2) / (sigma sqrt(2 pi)): (24 + 8 (x_j - 1)^2 k / 2) u
      relative; N = fl(q phi_1 J) another u, and the division by D = fl(-expm1(-h)) as in
      :func:`component_split`, with its loss-point term eta_j (e^{l_j} qb + 2 pb) / D and the clip
      (+ local_p); expm1(eta_j) <= eta_j (1 + eta_j) (eta_j <= 1).

    Returns:
      (c, dc) as :func:`component_split` (dc = inf where a bound overflows or underflows: not used).
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore", divide="ignore"):
        k = 1.0 / (sigma * sigma)
        xj = x[:-1]
        dx = x[1:] - x[:-1]
        ok = np.isfinite(xj) & np.isfinite(dx) & (dx > 0.0)
        xj, dx = np.where(ok, xj, 0.0), np.where(ok, dx, 1.0)
        b = k * xj
        ab = np.abs(b)
        half = 0.5 * dx
        jq = np.zeros(xj.shape)
        for xi, w in zip(_GL_X, _GL_W):
            t = half * (1.0 + xi)
            jq += w * (np.exp(-(b * t + 0.5 * k * t * t)) * np.expm1(k * t))
        jq *= half
        big_d = dx * (1.0 + 2.0 * _U)
        y1, y2 = ab * big_d, k * big_d
        ok &= (y1 <= 1.0) & (y2 <= 1.0)  # (else the rule is no use: not used)
        e_d = (1.0 + y1 + y1 * y1) * (1.0 + 8.0 * _U)  # e^y <= 1 + y + y^2 and expm1(y) <= y + y^2 (y <= 1)
        em_d = (y2 + y2 * y2) * (1.0 + 8.0 * _U)
        g0 = e_d * em_d
        g1 = e_d * ((ab + y2) * em_d + k * (1.0 + em_d))
        s = 2.0 / (ab + math.sqrt(k))
        rho = big_d + s
        # M <= e^{|k x_j| rho + k rho^2 / 2} k rho e^{k rho} (expm1(y) <= y e^y: one exp)
        krho = k * rho
        m_bound = krho * np.exp(ab * rho + 0.5 * krho * rho + krho) * (1.0 + 16.0 * _U)
        r2 = (big_d / s) ** 2
        rem = _GL_CONST * big_d * (r2 * r2 * r2) * m_bound * (1.0 + 16.0 * _U)
        rel = (48.0 + 8.0 * (ab * big_d + k * big_d * big_d) + 4.0 * k * big_d) * _U
        err_j = rem + _U * big_d * g0 + 4.0 * _U * big_d * big_d * g1 + rel * jq
        arg = 0.5 * k * (xj - 1.0) ** 2
        pref = q * np.exp(-arg) * (1.0 / (sigma * math.sqrt(2.0 * math.pi)))
        pref_rel = (24.0 + 8.0 * arg) * _U
        n = pref * jq
        d = _one_minus_exp(h)
        c = np.clip(n / d, 0.0, pb)
        lj = l[:-1]
        eta_j = LOSS_POINT_ULPS * _U * (1.0 + np.maximum(np.abs(lj), np.abs(l[1:])))
        el = np.exp(lj) * (1.0 + 16.0 * _U)
        err_n = pref * (1.0 + pref_rel) * err_j + pref_rel * n + el * eta_j * (1.0 + eta_j + 1e-9) * (qb + local_q)
        num = err_n + 8.0 * _U * n + eta_j * (el * qb + 2.0 * pb)
        dc = (num / (d * (1.0 - 8.0 * _U)) + local_p) * (1.0 + 1e-9)
        good = ok & np.isfinite(dc) & (n > 1e-280)  # (no subnormal: every relative bound above holds)
    return np.where(good, c, 0.0), np.where(good, dc, np.inf)


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


def default_grid_step(segments: Sequence[tuple[float, float, int]], group_size: int = 1,
                      step_points: float = STEP_POINTS) -> float:
    """Grid step ~ 1/step_points (STEP_POINTS, 40) of the rms standard deviation of one step's privacy loss, in [1e-7, 1e-2],
    at least 1/COMPOSED_POINTS (4000) of the composed loss's standard deviation (long schedules),
    and at least min(H_FLOOR (3e-5), that standard deviation / FLOOR_POINTS (200)) (tiny losses).

    Var(L) ~ chi^2(P || Q) = q^2 (e^{1/sigma^2} - 1) for small q, 1/sigma^2 for q = 1. The
    discretisation changes the composed loss variance by O(T h^2), small against T Var(L).

    Args:
      segments: (sigma, q, T) triples.
      group_size: k >= 1.
      step_points: grid points per rms standard deviation of one step's loss (> 0).

    Returns:
      The grid step h.
    """
    if not step_points > 0:
        raise ValueError(f"step_points must be > 0, got {step_points!r}")
    tot = 0.0
    n = 0
    for sigma, q, T in segments:
        tot += T * step_variance(sigma, q, group_size)
        n += T
    rms = math.sqrt(tot / n)
    # and at most ~COMPOSED_POINTS grid points per standard deviation of the composed loss: beyond
    # that a finer grid only costs FFT size (the connect-the-dots error is second order in h)
    floor = min(H_FLOOR, math.sqrt(tot) / FLOOR_POINTS)
    return float(min(1e-2, max(1e-7, rms / step_points, math.sqrt(tot) / COMPOSED_POINTS, floor)))
