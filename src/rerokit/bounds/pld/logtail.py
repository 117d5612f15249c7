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
the extension's cells are (x'_j, x'_{j+1}], j = j_hi .. N-1 (every label, or every 2^i-th where
they would exceed the step's width limit; the first one starting at x(l_hi - 2 eta) <= the step's
own last point, below). Each cell's exact P-mass is bounded above by S_up(x'_j) - S_low(x'_{j+1}),
S(x) = P(X > x), and its Q-mass below the same way (:func:`log_mixture_tail` with its proven error,
:func:`log_bucket_masses`); its losses lie within 4 eta of its grid ends (eta the grid points'
loss error of ``step.LOSS_POINT_ULPS``), and its P-mass is split onto those two points by connect
the dots (Doroshenko et al. 2022, "Connect the dots: tighter discrete approximations of privacy
loss distributions": the cell's restriction of (P, Q) is dominated, Blackwell, by the two-atom
pair), in logs with every rounding to the safe side (:func:`log_ctd_split`: the upper atom gets at
least the exact fraction, both together at least the exact mass), stored at the grid labels (the
losses read 5 eta higher: the step's ``loss_shift``). The Neyman-Pearson dual
f(s) = s alpha + p_inf + sum_i p_i (1 - s e^{-l_i})_+ >= the power grows with every loss and every
mass, as does every composition of non-negative pmfs, so the masses may be rounded up in this
stochastic order: over-estimating a P-mass of the dominating pmf keeps the upper end an upper end
(where a cell's Q-mass has no certain lower bound its whole mass sits at the upper point, the
"pessimistic" rounding, which costs about t h per jump into it at tilt t).

The step's own part (split'' with its mass p'' at +infinity, raised in the safe stochastic order
above the exact connect-the-dots split of its cells: ``step.step_from_tails``) is kept, with p''
less a proven lower bound on the exact mass S(x(l_hi - 2 eta)) that the extension carries added
at its last atom (with the first cell's lower atom): at every cut at or below that atom the
suffix sum is then at least split''(>= cut) + p'' >= the exact one, and above it the extension's
bounds alone are.

Assumed (as the step's NDTR_ULPS and libm assumptions, measured against mpmath in
tests/bounds/pld/test_logtail.py): :func:`rerokit.bounds.pld.normal.log_ndtr` within its
:data:`~rerokit.bounds.pld.normal.LOG_NDTR_REL`; libm's and numpy's log, log1p, exp and expm1
within 4 ulps. Measured: the computed log tails within 4.8 ulps of |log S| of mpmath's (at most
0.42 % of their proven bound) over sigma 0.3-20, q 1e-4-1, tails 1e-3 to e^-2500; the cells' log
masses at most 1.4e-9 above the exact ones; the extended step's hockey-stick divergence within
1.7e-7 of the true pair's at the grid points (tests/bounds/pld/test_logtail.py).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.logsum import total_logsumexp
from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr_many
from rerokit.bounds.pld.step import LOSS_POINT_ULPS, MAX_STEP_WIDTH, StepPLD, StepTooWide, x_of_remove_loss, loss_range

__all__ = ["log_mixture_tail", "log_bucket_masses", "log_ctd_split", "extend_step", "composed_log_inf"]

_U = 2.0 ** -53
_MAX_EXTENSION = 1 << 23  # labels of one extension (its cells are coarsened to max_width first)


def log_mixture_tail(x: np.ndarray, sigma: float, q: float, null: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """log S(x) = log P(X > x), X ~ (1-q) N(0, sigma^2) + q N(1, sigma^2) (``null``: X ~ N(0, sigma^2),
    the pair's Q), and a proven bound E on |computed - exact log S(x)| at each (computed) point x.

    Each component's log tail log Phi((m - x) / sigma) by :func:`~rerokit.bounds.pld.normal.log_ndtr_many`
    (within LOG_NDTR_REL |v| + 1e-16 of the exact value at its computed argument y; the argument
    fl(fl(m - x) / sigma) within 2u (1 + u) |y| of the exact one, which moves log Phi by at most
    (|y| + 1) times that: the hazard phi / Phi is below |y| + 1 everywhere, Birnbaum 1942), plus
    the weight's log (log1p / log within 4 ulps) and the sum (u); the two components joined by
    numpy's logaddexp (the result's and the difference's rounding, log1p and exp: 4u (|r| + |d| + 2)).

    Args:
      x: points (finite).
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1].
      null: the tail of Q = N(0, sigma^2) instead of P's.

    Returns:
      (log S, E), arrays like x.
    """
    x = np.asarray(x, dtype=float)
    terms, errs = [], []
    if null:
        comps = [(0.0, 0.0)]
    else:
        comps = [(1.0, 0.0)] if q == 1.0 else [(0.0, math.log1p(-q)), (1.0, math.log(q))]
    for m, lw in comps:
        y = (m - x) / sigma
        v = log_ndtr_many(y)
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


def _log_diff(a: np.ndarray, b: np.ndarray, side: int) -> np.ndarray:
    """log(e^a - e^b) = a + log(-expm1(b - a)) rounded up (``side`` +1) or down (-1) by
    4u (|a| + |g| + |a + g| + 3) (g the second term: d = b - a rounded (u |d|, and |g'| <= 1/|d|),
    expm1 and log within 2 ulps, the two additions); -inf where b >= a."""
    d = b - a
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.log(-np.expm1(np.minimum(d, 0.0)))
        out = a + g + side * 4.0 * _U * (np.abs(a) + np.abs(g) + np.abs(a + g) + 3.0)
    return np.where(d < 0.0, out, -np.inf)


def log_bucket_masses(log_s: np.ndarray, err: np.ndarray, upper: bool = True) -> np.ndarray:
    """Proven upper (``upper``) or lower bounds, in logs, on the masses S(x_j) - S(x_{j+1}) of
    consecutive cells from the log tails ``log_s`` at increasing points and their error bounds
    ``err`` (:func:`log_mixture_tail`): log(e^a - e^b) with a = log_s[j] + err[j], b = log_s[j+1] -
    err[j+1] (upper; the other way round for lower bounds), rounded to that side (:func:`_log_diff`);
    -inf where b >= a (the exact mass is 0 then, resp. no lower bound is known)."""
    side = 1 if upper else -1
    return _log_diff(log_s[:-1] + side * err[:-1], log_s[1:] - side * err[1:], side)


def log_ctd_split(log_p: np.ndarray, log_r: np.ndarray, u: np.ndarray, w: float) -> tuple[np.ndarray, np.ndarray]:
    """Connect the dots in logs (Doroshenko et al. 2022): each cell's P-mass split onto its loss
    interval's ends u and u + w, c = (p - e^u r) / (1 - e^-w) at the upper end and p - c at the
    lower one, with every rounding to the safe side: from an upper bound ``log_p`` on the cell's
    P-mass and a lower bound ``log_r`` on its Q-mass (-inf: none), c is raised (p up, e^u r down
    by 4u (|log r| + |u| + 1) for its sum, 1 - e^-w down: w lowered by 4u and 8u (|log D| + 1))
    and clipped to p, and p - c is rounded up (:func:`_log_diff`), so that the upper atom carries at
    least the exact c and both together at least the exact p.

    Returns:
      (log c, log (p - c)) per cell (-inf for 0).
    """
    lr = log_r + u - 4.0 * _U * (np.abs(log_r) + np.abs(u) + 1.0)
    log_n = np.where(np.isfinite(lr), _log_diff(log_p, lr, 1), log_p)
    log_d = math.log(-math.expm1(-w * (1.0 - 4.0 * _U)))
    log_d -= 8.0 * _U * (abs(log_d) + 1.0)
    with np.errstate(invalid="ignore"):
        log_c = log_n - log_d
        log_c = np.minimum(np.where(np.isfinite(log_c), log_c + 2.0 * _U * np.abs(log_c), log_c), log_p)
    return log_c, _log_diff(log_p, log_c, 1)


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
    # at most max_width cells: every stride-th label (a power of two; a wider cell's chord is
    # further from the true curve between its ends)
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
    log_p = log_bucket_masses(log_s, err)
    # connect the dots on each cell: its losses lie in [u, u + w], u = l[i] - 4 eta, w = stride h +
    # 8 eta (each point's loss within eta of its grid value; the first cell from l_hi - 3 eta to
    # l_b + eta), split onto those two points and stored at its grid labels a and b (a loss rounded
    # up is safe; the upper one moved down by at most 4 eta and a few ulps: the loss shift 5 eta)
    log_r = log_bucket_masses(*log_mixture_tail(x, sigma, q, null=True), upper=False)
    log_c, log_a = log_ctd_split(log_p, log_r, l[:-1] - 4.0 * eta, stride * h + 8.0 * eta)
    ext = np.full(n_cells * stride, -np.inf)
    at_b = log_c.copy()
    at_b[:-1] = np.logaddexp(log_c[:-1], log_a[1:])  # cell i's upper atom is cell i+1's lower one
    ext[stride - 1::stride] = at_b + 4.0 * _U * (np.abs(np.where(np.isfinite(at_b), at_b, 0.0)) + 2.0)
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
    # the first cell's lower atom is the step's last one
    last = float(np.logaddexp(own[-1], log_a[0]))
    own[-1] = last + 4.0 * _U * (abs(last) + 2.0) if math.isfinite(last) else last
    return st.j_lo, np.concatenate((own, ext)), log_inf, max(st.loss_shift, 5.0 * eta)


def composed_log_inf(log_infs: Sequence[tuple[float, int]]) -> float:
    """log of an upper bound on the composed mass at +infinity, 1 - prod_i (1 - p_i)^{T_i} <=
    sum_i T_i p_i, from (log p_i, T_i): that log-sum rounded up (its proven error,
    :func:`rerokit.bounds.pld.logsum.total_logsumexp`, and log T_i within 2 ulps)."""
    a = np.array([lp + math.log(T) + 4.0 * _U * (math.log(T) + abs(lp) + 1.0) for lp, T in log_infs], dtype=float)
    if a.size == 0:
        return -math.inf
    s, e = total_logsumexp(a)
    return min(0.0, s + e + 2.0 * _U * abs(s)) if math.isfinite(s) else s
