"""The REMOVE step's dominating pmf beyond double range, in logs: PLD-quality upper ends below 1e-300.

A step of :mod:`rerokit.bounds.pld.step` is truncated where its top tail is about 1e-300 / T at the
deepest (its masses beyond are below double range) and sends that tail to +infinity, so the
composed mass at +infinity (~1e-300) swamps a power gamma ~ 1e-421 at the pixel-tolerance baselines
(kappa = 9.66e-473; Hayes, Mahloujifar & Balle 2023, App. I). :func:`extend_step` keeps the step's
dominating pmf and continues it above its last label in log masses, down to where the untilted
mass beyond is at most a target (the caller's alpha e^-30 / T); only that rest goes to +infinity,
as a log mass. The far-tail tilt (:func:`rerokit.bounds.pld.tilt.tilted_power` with
``log_masses``) then composes it without underflow.

The remove pair with one example, P = (1-q) N(0, sigma^2) + q N(1, sigma^2), Q = N(0, sigma^2),
loss L(x) increasing in x. With the computed grid points x'_j = x(l_j) (``step.x_of_remove_loss``),
the extension's buckets are the cells (x'_j, x'_{j+1}], j = j_hi .. N-1 (the first one starting at
x(l_hi - 2 eta) <= the step's own last point, below): each cell's exact P-mass is bounded above by
S_up(x'_j) - S_low(x'_{j+1}), S(x) = P(X > x) (:func:`log_mixture_tail` with its proven error), and
placed at the cell's upper grid point l_{j+1} (the "pessimistic" rounding of the losses: every loss
in the cell is at most L(x'_{j+1}) <= l_{j+1} + eta, eta the grid points' loss error of
``step.LOSS_POINT_ULPS``, carried as the step's ``loss_shift``). Each cell's restriction of (P, Q)
is dominated (Blackwell) by the pair with P-mass p at l_{j+1} and Q-mass p e^{-l_{j+1}} (the rest
of its Q-mass at loss -infinity), and the Neyman-Pearson dual
f(s) = s alpha + p_inf + sum_i p_i (1 - s e^{-l_i})_+ >= the power grows with every loss and every
mass, as does every composition of non-negative pmfs: over-estimating a P-mass of the dominating
pmf, or a loss, keeps the upper end an upper end. (Connect the dots, Doroshenko et al. 2022, would
save about t h per jump into this region at tilt t; the region is far beyond the tilts of the
issue's grid, where the mass at +infinity was the whole problem.)

The step's own part (split'' with its mass p'' at +infinity, raised in the safe stochastic order
above the exact connect-the-dots split of its cells: ``step.step_from_tails``) is kept, with p''
less a proven lower bound on the exact mass S(x(l_hi - 2 eta)) that the extension carries added
at its last atom: at every cut at or below that atom the suffix sum is then at least
split''(>= cut) + p'' >= the exact one, and above it the extension's bounds alone are.

Assumed (as the step's NDTR_ULPS and libm assumptions, measured against mpmath in
tests/bounds/pld/test_logtail.py): :func:`rerokit.bounds.pld.normal.log_ndtr` within its
:data:`~rerokit.bounds.pld.normal.LOG_NDTR_REL`; libm's and numpy's log, log1p, exp and expm1
within 4 ulps.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.logsum import total_logsumexp
from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr
from rerokit.bounds.pld.step import LOSS_POINT_ULPS, MAX_STEP_WIDTH, StepPLD, StepTooWide, x_of_remove_loss, loss_range

__all__ = ["log_mixture_tail", "log_bucket_masses", "extend_step", "composed_log_inf"]

_U = 2.0 ** -53
_MAX_EXTENSION = 1 << 23  # labels of one extension (its cells are coarsened to max_width first)


def log_mixture_tail(x: np.ndarray, sigma: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """log S(x) = log P(X > x), X ~ (1-q) N(0, sigma^2) + q N(1, sigma^2), and a proven bound E on
    |computed - exact log S(x)| at each (computed) point x.

    Each component's log tail log Phi((m - x) / sigma) by :func:`~rerokit.bounds.pld.normal.log_ndtr`
    (within LOG_NDTR_REL |v| + 1e-16 of the exact value at its computed argument y; the argument
    fl(fl(m - x) / sigma) within 2u (1 + u) |y| of the exact one, which moves log Phi by at most
    (|y| + 1) times that: the hazard phi / Phi is below |y| + 1 everywhere, Birnbaum 1942), plus
    the weight's log (log1p / log within 4 ulps) and the sum (u); the two components joined by
    numpy's logaddexp (the result's and the difference's rounding, log1p and exp: 4u (|r| + |d| + 2)).

    Args:
      x: points (finite).
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1].

    Returns:
      (log S, E), arrays like x.
    """
    x = np.asarray(x, dtype=float)
    terms, errs = [], []
    comps = [(1.0, q)] if q == 1.0 else [(0.0, 1.0 - q), (1.0, q)]
    for m, w in comps:
        lw = math.log1p(-q) if m == 0.0 else math.log(q)
        y = (m - x) / sigma
        v = np.fromiter(map(log_ndtr, y.ravel().tolist()), float, y.size).reshape(y.shape)
        t = lw + v
        e = (LOG_NDTR_REL * np.abs(v) + 1e-16 + 2.01 * _U * np.abs(y) * (np.abs(y) + 1.0)
             + 8.0 * _U * abs(lw) + _U * np.abs(t))
        terms.append(t)
        errs.append(e)
    if len(terms) == 1:
        return terms[0], errs[0] * (1.0 + 1e-9)
    r = np.logaddexp(terms[0], terms[1])
    e = np.maximum(errs[0], errs[1]) + 4.0 * _U * (np.abs(r) + np.abs(terms[0] - terms[1]) + 2.0)
    return r, e * (1.0 + 1e-9)


def log_bucket_masses(log_s: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Proven upper bounds, in logs, on the masses S(x_j) - S(x_{j+1}) of consecutive cells from
    the log tails ``log_s`` at increasing points and their error bounds ``err``
    (:func:`log_mixture_tail`): a + log(-expm1(b - a)) with a = log_s[j] + err[j] (up) and
    b = log_s[j+1] - err[j+1] (down), rounded up by 4u (|a| + |g| + |a + g| + 3) (g the second
    term: its d = b - a rounded (u |d|, and g' <= 1/|d|), expm1 and log within 2 ulps, the two
    additions); -inf where b >= a (the exact mass is 0 then)."""
    a = log_s[:-1] + err[:-1]
    b = log_s[1:] - err[1:]
    d = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.log(-np.expm1(np.minimum(d, 0.0)))
        out = a + g + 4.0 * _U * (np.abs(a) + np.abs(g) + np.abs(a + g) + 3.0)
    return np.where(d < 0.0, out, -np.inf)


def extend_step(st: StepPLD, sigma: float, q: float, log_target: float,
                max_width: int = MAX_STEP_WIDTH) -> tuple[int, np.ndarray, float, float]:
    """The REMOVE step ``st`` (one example, noise multiplier sigma, rate q) with its dominating pmf
    continued above its last label in log masses (module docstring).

    Args:
      st: the step (``step.dpsgd_step_pld(sigma, q, h, "remove", ...)``, group size 1).
      sigma, q: its pair.
      log_target: the log of the untilted P-mass that may go to +infinity (the extension ends at the
        first label where the tail beyond is at most about this).
      max_width: the most cells the extension may have (beyond, every 2^i-th label only).

    Returns:
      (j_lo, log pmf on the labels j_lo .. N, log of the P-mass at +infinity, loss shift): the log
      masses are proven upper bounds (-inf for 0); the loss shift (the step's own, or the
      extension's grid points' loss error if larger) is to be added to the composed losses.

    Raises:
      StepTooWide: if the extension would span more than 2^23 labels, or its grid points are not
        increasing.
      ValueError: if log_target is NaN or q is not in (0, 1].
    """
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must be in (0, 1], got {q!r}")
    if math.isnan(log_target):
        raise ValueError("log_target must not be NaN")
    h = st.h
    j_hi = st.j_lo + st.split.size - 1
    n_lab = max(1, math.ceil(loss_range(sigma, q, "remove", float(log_target))[1] / h) - j_hi)
    # at most max_width cells: every stride-th label (a power of two; a cell's mass sits at its
    # upper label, so a wider cell only costs t (stride h) per jump into it at tilt t)
    stride = 1
    while n_lab > max_width * stride:
        stride *= 2
    n_cells = -(-n_lab // stride)
    if n_cells * stride > _MAX_EXTENSION:
        raise StepTooWide(f"{n_cells * stride} labels for the log-tail extension (max {_MAX_EXTENSION})")
    l_top = (j_hi + n_cells * stride) * h
    eta = LOSS_POINT_ULPS * _U * (1.0 + max(abs(l_top), abs(st.j_lo * h)))
    # the first cell starts at x(l_hi - 2 eta): its loss is at most l_hi - eta <= that of the step's
    # own last point (both within eta of their grid values), so the cells cover everything above it
    l = np.concatenate(([j_hi * h - 2.0 * eta], (j_hi + stride * np.arange(1, n_cells + 1)) * h))
    x = x_of_remove_loss(l, sigma, q, 1)
    if not (np.all(np.isfinite(x)) and np.all(np.diff(x) > 0.0)):  # (cells must partition the line above x[0])
        raise StepTooWide("the log-tail extension's grid points are not increasing (grid step too fine)")
    log_s, err = log_mixture_tail(x, sigma, q)
    ext = np.full(n_cells * stride, -np.inf)
    ext[stride - 1::stride] = log_bucket_masses(log_s, err)
    log_inf = float(log_s[-1] + err[-1]) + 4.0 * _U * (abs(float(log_s[-1])) + 1.0)
    # the step's +infinity mass goes to its last atom, less what the extension carries for certain
    low0 = float(log_s[0] - err[0]) - 4.0 * _U * (abs(float(log_s[0])) + 1.0)
    carried = math.exp(low0) * (1.0 - 8.0 * _U) if low0 > -745.0 else 0.0
    split = np.array(st.split, dtype=float)
    extra = max(0.0, st.inf_mass - carried)
    if extra > 0.0:
        split[-1] = (split[-1] + extra) * (1.0 + 2.0 * _U)
    with np.errstate(divide="ignore"):
        own = np.log(split)
    # np.log of a mass within 4 ulps of the result: rounded up by 8u |log p|
    own = own + 8.0 * _U * np.abs(np.where(np.isfinite(own), own, 0.0))
    return st.j_lo, np.concatenate((own, ext)), log_inf, max(st.loss_shift, eta)


def composed_log_inf(log_infs: Sequence[tuple[float, int]]) -> float:
    """log of an upper bound on the composed mass at +infinity, 1 - prod_i (1 - p_i)^{T_i} <=
    sum_i T_i p_i, from (log p_i, T_i): that log-sum rounded up (its proven error,
    :func:`rerokit.bounds.pld.logsum.total_logsumexp`, and log T_i within 2 ulps)."""
    a = np.array([lp + math.log(T) + 4.0 * _U * (math.log(T) + abs(lp) + 1.0) for lp, T in log_infs], dtype=float)
    if a.size == 0:
        return -math.inf
    s, e = total_logsumexp(a)
    return min(0.0, s + e + 2.0 * _U * abs(s)) if math.isfinite(s) else s
