"""A short segment beside a composed schedule: the power's upper end with one step in closed form
(:func:`one_step_upper`, below), with a segment of a few steps composed by pieces
(:func:`segment_upper`), and the lower end of the test on the two bucket statistics
(:func:`segment_lower`).

Where a single step A of small sigma sits beside a schedule B of small losses, the power at a tiny
level comes from A's far tail (one sampled step's large deviation) while B stays near its bulk.
Tilting the whole composition (:mod:`rerokit.bounds.pld.tilt`) then also weights A's far tail, and
the upper end stays a few per cent above the truth (one step of sigma 1.30, q 1.3e-4 beside 1585 of
sigma 3.02, q 2.6e-4, kappa e^-68.1: 2.4 %). Here A is not composed. By Neyman-Pearson duality
(as in :mod:`rerokit.bounds.pld.discrete`) and independence, for every s = e^l > 0

    gamma(alpha) <= s alpha + E_{P_A x P_B}[(1 - s e^{-L_A - L_B})_+] = s alpha + E_{P_A}[F_B(l - L_A)],
    F_B(y) = E_{P_B}[(1 - e^{y - L_B})_+]  (its mass at +infinity included),

and F_B is non-increasing in y. B's dominating PLD (discretised with its loss shift s_B: the power
at level alpha e^{s_B} bounds the true one, :class:`rerokit.bounds.pld.DiscretePLD`) composed under a
few tilts bounds F_B at each label y_k = k h of its windows
(:func:`rerokit.bounds.pld.tilt.tilted_hockey_sticks`, each tilt precise near its own tilted mean);
G_k = the minimum of those bounds over the tilts and over the labels j <= k (F_B(y_k) <= F_B(y_j)),
is again an upper bound, non-increasing in k. Below the lowest window label y_0,
(1 - e^{y - L})_+ <= (1 - e^{y_0 - L})_+ + (e^{y_0} - e^y) e^{-L} for every L (check L > y_0 and
L <= y_0 apart), so F_B(y) <= F_B(y_0) + (e^{y_0} - e^y) Q_B(L < infinity), Q_B's mass at most
1 + 1e-6 (and F_B <= 1). A's loss
L_A(x) = log(1 - q + q e^{(2x - 1) / (2 sigma^2)}) is increasing in x (P_A = (1-q) N(0, sigma^2) +
q N(1, sigma^2)), so with l = m h and the boundaries b_j = j h,

    E_{P_A}[F_B(l - L_A)] <= sum_j P_A(b_{j-1} < L_A <= b_j) G_{m-j} + P_A(L_A > b_J) * 1,

since for L_A in (b_{j-1}, b_j] the argument l - L_A is at least the label (m - j) h. The interval
masses are differences of normal tails in logs (:func:`rerokit.bounds.pld.normal.log_ndtr_many`,
within :data:`~rerokit.bounds.pld.normal.LOG_NDTR_REL`), each boundary x_j moved outwards by
1e-9 (|x_j| + 1) (far more than its rounding), so every interval's mass is over-estimated; below
log(1 - q) no loss lies. The sum runs in log space and is rounded up by (n + 4) u, n terms.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.compose import WindowTooWide
from rerokit.bounds.pld.normal import normal_isf_log
from rerokit.bounds.pld.tilt import (log_total_mass, mean_ladder, mean_tilt, randomized_lower, tilted_hockey_sticks,
                                     tilted_side_tails, tilted_tails)

__all__ = ["hockey_stick_bounds", "one_step_upper", "segment_upper", "segment_lower"]

_U = float(np.finfo(float).eps)
_SCIPY_REL = 1e-10  # the error allowed for scipy's log_ndtr, relative to |log Phi| (_log_tail)
# a bound on B's composed Q-mass (its dominating steps' masses exceed 1 by a few u each): below the
# lowest window label y_0, F_B(y) <= F_B(y_0) + (e^{y_0} - e^y) E_P[e^{-L}] (module docstring)
_Q_MASS = 1.0 + 1e-6
# B's tilts (_b_tilts): a small one, the schedule's saddle tilt times these factors, and the one
# whose tilted mean is the threshold plus _TOP_MARGIN nats
_MIN_TILT = 0.05
_TILT_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
_TOP_MARGIN = 0.05
# A's loss tail beyond the last boundary counts with F_B <= 1: taken where A's tail there is below
# the level's e^-_A_DEPTH (its sampled component's tail; the other is far smaller)
_A_DEPTH = 40.0
# at most this many boundaries (else not applicable: a grid too fine for A's range), and B's tilted
# windows of at most this many labels (wider tilts are left out: a choice of computation)
_MAX_BOUNDARIES = 400_000
_MAX_POINTS = 1 << 19
# the threshold l = m h: a golden-section search over m within _SCAN_NATS of the hint (any l gives
# an upper end; the bound is about convex in e^l)
_SCAN_NATS = 1.0
# segment_upper: A's tilt ladder, its tilted means spaced by _LADDER_SPACING tilted standard
# deviations up to _A_OVER nats above the threshold (beyond, F_B is within e^-_A_OVER of 1), at most
# _LADDER_MOST tilts
_A_OVER = 8.0
# ... A's steps split at _A_CUT nats into bulk and tail, at most _A_PIECES + 1 pieces (k = 0 ... tail steps)
_A_CUT = 0.05
# ... and A's labels read, at most this many (else not applicable)
_MAX_LABELS_A = 1 << 20
_A_PIECES = 8
_LADDER_SPACING = 4.0
_LADDER_MOST = 40


def _log_tail(x: np.ndarray, sigma: float, q: float, side: int) -> np.ndarray:
    """log P_A(X > x) for X ~ (1 - q) N(0, sigma^2) + q N(1, sigma^2), moved by its error bound up
    (``side`` +1) or down (-1); 0 (certain) at x = -inf. scipy's log_ndtr, vectorised (A's range
    has ~1e5 boundaries), with 1e-10 of |log Phi| + 1e-14 allowed for its error (as
    :func:`rerokit.bounds.dpsgd`'s one-step closed form: far more than the function's ~1e-14)."""
    from scipy.special import log_ndtr

    with np.errstate(invalid="ignore"):
        l0 = log_ndtr(np.where(np.isfinite(x), -x / sigma, np.inf))
        l1 = log_ndtr(np.where(np.isfinite(x), (1.0 - x) / sigma, np.inf))
    out = np.logaddexp(math.log1p(-q) + l0, math.log(q) + l1)
    err = _SCIPY_REL * (np.abs(l0) + np.abs(l1)) + 2e-14 + 16.0 * _U * (np.abs(out) + 40.0)
    return np.minimum(out + side * err, 0.0)


def _x_bounds(b: np.ndarray, sigma: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on x(b) = sigma^2 log((e^b - (1 - q)) / q) + 1/2, the output whose loss
    L_A is b: -inf where b <= log(1 - q) (no loss lies there) or too close to it for the relative
    margin (the lower bound only; the upper then the log(1 - q) side of the margin, -inf too)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eb = np.exp(b)
        d = eb - (1.0 - q)
        ok = d > 1e-6 * eb
        x = np.where(ok, sigma * sigma * np.log(np.where(ok, d, 1.0) / q) + 0.5, -np.inf)
    delta = 1e-9 * (np.abs(np.where(np.isfinite(x), x, 0.0)) + 1.0)
    return x - delta, x + delta


def _b_tilts(parts: Sequence[tuple[int, np.ndarray, int]], h: float, y_top: float, tilt: float) -> list[float]:
    """B's tilts: _MIN_TILT, the whole schedule's saddle tilt ``tilt`` times 1/4 ... 4 (where A's
    tail and B's balance: B's tilted mean there is where their product peaks) and the tilt whose
    tilted mean is ``y_top`` (:func:`rerokit.bounds.pld.tilt.mean_tilt`; A's bulk against B's far
    tail)."""
    out = {_MIN_TILT} | {tilt * f for f in _TILT_FACTORS if tilt * f > _MIN_TILT}
    top = mean_tilt(parts, h, y_top, _MIN_TILT, 1e5)
    if top is not None:
        out.add(top)
    return sorted(out)


def hockey_stick_bounds(parts: Sequence[tuple[int, np.ndarray, int]], h: float, inf_mass: float, log_alpha: float,
                        tilts: Sequence[float], precision: str, k_lo: int, k_hi: int) -> tuple[int, np.ndarray] | None:
    """(K0, log G_k for k = K0 ... at most k_hi): the minimum over the tilts of their bounds on log F_B
    (windows clipped to [k_lo, k_hi], the labels the sum reads), then the running minimum upwards
    (module docstring); None where no tilt's window fits or meets that range."""
    wins = []
    for t in tilts:
        try:
            off, lg = tilted_hockey_sticks(parts, h, t, inf_mass, log_alpha, precision, _MAX_POINTS)
        except WindowTooWide:
            continue
        a, b = max(off, k_lo), min(off + lg.size, k_hi + 1)
        if a < b:
            wins.append((a, lg[a - off: b - off]))
    if not wins:
        return None
    k0 = min(off for off, _ in wins)
    g = np.full(max(off + lg.size for off, lg in wins) - k0, np.inf)
    for off, lg in wins:
        _merge(g, k0, off, lg, np.minimum)
    return k0, np.minimum.accumulate(np.minimum(g, 0.0))


def one_step_upper(sigma: float, q: float, parts: Sequence[tuple[int, np.ndarray, int]], h: float, inf_mass: float,
                   loss_shift: float, log_alpha: float, threshold: float, tilt: float,
                   precision: str = "double") -> float | None:
    """log of a certified upper bound on the power at level exp(log_alpha) of one DP-SGD step (sigma,
    0 < q < 1, one example; REMOVE direction) composed with the schedule B of the dominating
    ``parts`` (module docstring).

    Args:
      sigma, q: the single step's noise multiplier and sampling rate.
      parts: (label offset, dominating pmf, count) per distinct step of B (grid h, truncated deep
        enough that ``inf_mass`` is far below the power).
      h: B's grid step.
      inf_mass: B's composed mass at +infinity.
      loss_shift: B's total loss shift (its dominating steps' discretisation): the level is read as
        alpha e^loss_shift.
      log_alpha: natural log of the level (<= 0).
      threshold: a guess of the Neyman-Pearson threshold (nats; the search for l starts there).
      tilt: the whole schedule's saddle tilt (B's tilts are chosen around it).
      precision: B's FFT arithmetic.

    Returns:
      The log upper end, or None where B's windows or A's boundaries do not fit.
    """
    if not (0.0 < q < 1.0 and sigma > 0.0 and math.isfinite(threshold)):
        return None
    log_a_eff = float(log_alpha) + loss_shift
    # A's boundaries: from just below log(1 - q) to where A's tail is below the level's e^-_A_DEPTH
    z = normal_isf_log(log_a_eff - _A_DEPTH - math.log(q))
    if not math.isfinite(z):
        return None
    x_max = 1.0 + sigma * z
    a_max = math.log1p(-q) + math.log1p(q / (1.0 - q) * math.exp(min((2.0 * x_max - 1.0) / (2.0 * sigma * sigma), 700.0)))
    j0 = math.floor(math.log1p(-q) / h) - 1
    j1 = math.ceil(a_max / h) + 1
    if j1 - j0 > _MAX_BOUNDARIES:
        return None
    js = np.arange(j0, j1 + 1)
    x_lo, x_hi = _x_bounds(js * h, sigma, q)
    log_t_up = _log_tail(x_lo, sigma, q, +1)  # P(L_A > b_j), rounded up
    log_t_dn = np.where(np.isfinite(x_hi), _log_tail(x_hi, sigma, q, -1), -np.inf)
    log_t_dn[js * h < math.log1p(-q) - 1e-12 * (abs(math.log1p(-q)) + 1.0)] = 0.0  # no loss lies below
    with np.errstate(divide="ignore", invalid="ignore"):
        log_m = log_t_up[:-1] + np.log(-np.expm1(np.minimum(log_t_dn[1:] - log_t_up[:-1], 0.0)))
    log_m = np.where(log_t_dn[1:] == -np.inf, log_t_up[:-1], log_m)  # interval (b_{j-1}, b_j], j = j0+1..j1
    log_beyond = float(log_t_up[-1])
    tilts = _b_tilts(parts, h, threshold - math.log1p(-q) + _TOP_MARGIN, tilt)
    lo, hi = int(math.floor((threshold - _SCAN_NATS) / h)), int(math.ceil((threshold + _SCAN_NATS) / h))
    got = hockey_stick_bounds(parts, h, inf_mass, log_a_eff, tilts, precision, lo - j1, hi - j0)
    if got is None:
        return None
    k0, log_g = got
    jj = js[1:]

    def bound(m: int) -> float:
        terms = log_m + _log_g_at(log_g, k0, h, m - jj)
        top = float(np.max(terms))
        s = top + math.log(float(np.sum(np.exp(terms - top)))) if math.isfinite(top) else -math.inf
        s = float(np.logaddexp(s, log_beyond))
        total = float(np.logaddexp(m * h + log_a_eff, s))
        return total + (terms.size + 4) * 4.0 * _U * (abs(total) + 1.0) + 1e-12

    return _golden_min(bound, lo, hi)


def _log_g_at(log_g: np.ndarray, k0: int, h: float, k: np.ndarray) -> np.ndarray:
    """log of the bound on F_B at the labels ``k``: G from :func:`hockey_stick_bounds` inside (its last value
    above), F_B(y_0) + (e^{y_0} - e^y) Q_B-mass (at most 1) below (module docstring)."""
    g0 = math.exp(float(log_g[0]))
    with np.errstate(divide="ignore"):
        below = np.log(np.minimum(1.0, (g0 + (math.exp(k0 * h) - np.exp(np.minimum(k, k0) * h)) * _Q_MASS)
                                  * (1.0 + 1e-12)))
    return np.where(k < k0, below, log_g[np.clip(k - k0, 0, log_g.size - 1)])


def _golden_min(bound, lo: int, hi: int) -> float:
    """min(0, the smallest ``bound(m)`` found by a golden-section search over the integers [lo, hi]
    (bound is about convex; any m's value is an upper end)."""
    seen: dict[int, float] = {}

    def at(m: int) -> float:
        if m not in seen:
            seen[m] = bound(m)
        return seen[m]

    g = (math.sqrt(5.0) - 1.0) / 2.0
    while hi - lo > 3:
        m1, m2 = hi - int(round(g * (hi - lo))), lo + int(round(g * (hi - lo)))
        if at(m1) <= at(m2):
            hi = m2
        else:
            lo = m1
    return min(0.0, min(at(m) for m in range(lo, hi + 1)))


def _labels(parts: Sequence[tuple[int, np.ndarray, int]]) -> tuple[int, int]:
    """The first and last label of the composition of ``parts``."""
    return sum(T * off for off, _, T in parts), sum(T * (off + pmf.size - 1) for off, pmf, T in parts)


def _merge(arr: np.ndarray, k0: int, off: int, vals: np.ndarray, op) -> None:
    """arr[k - k0] = op(arr[k - k0], vals[k - off]) (np.minimum / np.maximum, in place) on the labels
    both cover: a window's per-label bounds into the running best."""
    lo, hi = max(off, k0), min(off + vals.size, k0 + arr.size)
    if lo < hi:
        seg = arr[lo - k0: hi - k0]
        op(seg, vals[lo - off: hi - off], out=seg)


def _piece_tails(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_a_eff: float, j0: int, j1: int,
                 y_top: float, precision: str) -> np.ndarray:
    """log of upper bounds on P(L > j h), j0 <= j <= j1, of the composition of the (sub-probability)
    ``parts``: its total mass, the minimum over a ladder of tilts of :func:`tilted_tails` where
    their windows fit, then the running minimum upwards (the tail is non-increasing); nothing
    above the composition's last label (the error terms' floor is not a tail there)."""
    log_u = np.full(j1 - j0 + 1, log_total_mass(parts) + 1e-12)
    for t in mean_ladder(parts, h, _MIN_TILT, y_top, _LADDER_SPACING, 1e5, _LADDER_MOST):
        try:
            off, u = tilted_tails(parts, h, t, 0.0, log_a_eff, precision, _MAX_POINTS)
        except WindowTooWide:
            continue
        _merge(log_u, j0, off, u, np.minimum)
    log_u[max(_labels(parts)[1] - j0, 0):] = -np.inf  # nothing lies above the last label
    return np.minimum.accumulate(log_u)


def _a_tails(parts_a: Sequence[tuple[int, np.ndarray, int]], h: float, inf_a: float, log_a_eff: float, j0: int,
             j1: int, precision: str) -> np.ndarray | None:
    """log of upper bounds U_j on P_A(L_A > j h), j0 <= j <= j1, for A = T steps of one dominating pmf
    p (``parts_a``, one part), in relative precision over A's whole range.

    A tilt of the whole of A is precise only near its tilted mean, and with small q the sampled
    steps' losses lie in a region where P's log-density is convex (the loss grows like log x
    there): every tilt puts its mass either in the bulk or at the top, none in between. So p is
    split into pieces by the number of steps in its tail (:class:`_Pieces`, exact), each composed
    under its own ladder of tilts (:func:`_piece_tails`: the tail pieces alone are nearly flat under
    a suitable tilt); the pieces not taken count together (:meth:`_Pieces.rest`) at every label, and
    A's mass at +infinity too. The log-sum is rounded up by (n + 4) 4 u. None where A is not one
    part."""
    if len(parts_a) != 1:
        return None
    off, pmf, T = parts_a[0]
    y_top = (j1 + 1) * h
    cut = _Pieces(off, T, h)
    log_rt = cut.log_tail_mass(pmf)
    if not math.isfinite(log_rt):
        terms = [_piece_tails(parts_a, h, log_a_eff, j0, j1, y_top, precision)]
        rest = -math.inf
    else:
        ks = cut.taken(log_rt, log_a_eff)
        terms = [cut.log_choose(k) + 1e-12 * (T + 1) + _piece_tails(cut.parts(pmf, k), h, log_a_eff, j0, j1, y_top,
                                                                    precision) for k in ks]
        rest = cut.rest(log_rt, log_total_mass([(off, pmf, 1)]), len(ks))
    extra = float(np.logaddexp(rest, math.log(inf_a) if inf_a > 0 else -math.inf))
    return _log_sum_rows(np.vstack(terms + [np.full(j1 - j0 + 1, extra)]), 1)


class _Pieces:
    """A's step pmf p (labels from ``off``, T steps) split at the cut
    c = _A_CUT nats into bulk b (labels <= c) and tail r (above): p^{*T} = sum_k C(T, k)
    b^{*(T - k)} * r^{*k} (exact; the same cut label on either measure, so for each)."""

    def __init__(self, off: int, T: int, h: float) -> None:
        self.off, self.T = off, T
        self.jc = max(off, int(math.floor(_A_CUT / h)))  # the last bulk label
        self.i = self.jc - off + 1  # the first tail index

    def log_tail_mass(self, pmf: np.ndarray) -> float:
        """log of r's mass (-inf where there is none)."""
        tail = pmf[self.i:]
        return log_total_mass([(self.jc + 1, tail, 1)]) if tail.size and np.any(tail > 0) else -math.inf

    def log_choose(self, k: int) -> float:
        return math.lgamma(self.T + 1) - math.lgamma(k + 1) - math.lgamma(self.T - k + 1)

    def taken(self, log_r: float, log_a_eff: float) -> list[int]:
        """k = 0 ... K: every k up to _A_PIECES (and T) while C(T, k) r^k is at least the level's
        e^-_A_DEPTH."""
        ks = [0]
        for k in range(1, min(self.T, _A_PIECES) + 1):
            if self.log_choose(k) + k * log_r < log_a_eff - _A_DEPTH:
                break
            ks.append(k)
        return ks

    def parts(self, pmf: np.ndarray, k: int) -> list[tuple[int, np.ndarray, int]]:
        """The parts of b^{*(T - k)} * r^{*k}."""
        return (([(self.off, pmf[: self.i], self.T - k)] if k < self.T else [])
                + ([(self.jc + 1, pmf[self.i:], k)] if k else []))

    def rest(self, log_r: float, log_p: float, k: int) -> float:
        """log of a bound on the pieces from k on, sum_{k' >= k} C(T, k') r^{k'} b^{T - k'} <=
        C(T, k) r^k p^{T - k} (k of the steps in the tail, the rest anything; coefficient by
        coefficient C(T, k) C(T - k, i) >= C(T, k + i)), rounded up; -inf for k > T."""
        if k > self.T:
            return -math.inf
        return self.log_choose(k) + 1e-12 * (self.T + 1) + k * log_r + (self.T - k) * max(log_p, 0.0)


def segment_upper(parts_a: Sequence[tuple[int, np.ndarray, int]], inf_a: float,
                  parts: Sequence[tuple[int, np.ndarray, int]], h: float, inf_mass: float, loss_shift: float,
                  log_alpha: float, threshold: float, tilt: float, precision: str = "double") -> float | None:
    """log of a certified upper bound on the power at level exp(log_alpha) of a short schedule A
    (the dominating ``parts_a``, a few steps) composed with the schedule B of the dominating
    ``parts``, both on the grid h (:func:`one_step_upper`'s bound with A discretised too).

    The product of the two dominating pairs dominates the schedule's pair, and for it
    gamma(alpha) <= s alpha + E_{P_A}[F_B(l - L_A)] (module docstring). A's losses lie on the labels
    j h, and phi_j = G_{m - j} (made non-decreasing in j by a running maximum, which only raises
    it) bounds F_B(l - j h), so by summation by parts (the layer-cake formula)

        E_{P_A}[phi(L_A)] <= phi_{j0} M_A + sum_{j0 <= j < j1} (phi_{j+1} - phi_j) U_j + (1 - phi_{j1}) U_{j1},

    for any upper bounds U_j on P_A(L_A > j h) (their running minimum upwards is one too) and
    M_A >= A's total mass (j0: A's lowest label). The U_j come from A composed under a ladder of
    tilts (:func:`rerokit.bounds.pld.tilt.mean_ladder`, :func:`rerokit.bounds.pld.tilt.tilted_tails`),
    each in relative precision within a few standard deviations of its tilted mean, the ladder up to
    _A_OVER nats above the threshold. The sum is :func:`_layer_cake`'s, rounded up.

    Args:
      parts_a, inf_a: A's dominating parts (label offset, pmf, count) and composed mass at +infinity.
      parts, h, inf_mass, log_alpha, threshold, tilt, precision: as :func:`one_step_upper` (B).
      loss_shift: A's and B's total loss shift (the level is read as alpha e^loss_shift).

    Returns:
      The log upper end, or None where the windows do not fit.
    """
    if not math.isfinite(threshold):
        return None
    log_a_eff = float(log_alpha) + loss_shift
    ja_lo, ja_hi = _labels(parts_a)
    log_m_a = log_total_mass(parts_a) + 1e-12
    if inf_a > 0:
        log_m_a = float(np.logaddexp(log_m_a, math.log(inf_a))) + 1e-12
    j0 = ja_lo
    j1 = min(ja_hi, int(math.ceil((threshold + _A_OVER) / h)))
    if not j0 < j1 or j1 - j0 > _MAX_LABELS_A:
        return None
    log_u = _a_tails(parts_a, h, inf_a, log_a_eff, j0, j1, precision)
    if log_u is None:
        return None
    tilts = _b_tilts(parts, h, threshold - ja_lo * h + _TOP_MARGIN, tilt)
    lo, hi = int(math.floor((threshold - _SCAN_NATS) / h)), int(math.ceil((threshold + _SCAN_NATS) / h))
    got = hockey_stick_bounds(parts, h, inf_mass, log_a_eff, tilts, precision, lo - j1, hi - j0)
    if got is None:
        return None
    k0, log_g = got
    js = np.arange(j0, j1 + 1)
    tails = np.concatenate(([log_m_a], log_u))  # mu(>= j0) = M_A, mu(>= j + 1) = P(L_A > j h)

    def bound(m: int) -> float:
        cake = _layer_cake(np.maximum.accumulate(_log_g_at(log_g, k0, h, m - js)), tails, 0.0, 1)
        total = float(np.logaddexp(m * h + log_a_eff, cake))
        return total + 16.0 * _U * (abs(total) + 1.0) + 1e-12

    return _golden_min(bound, lo, hi)


def _side_bounds(pp: Sequence[tuple[int, np.ndarray, int]], pq: Sequence[tuple[int, np.ndarray, int]], h: float,
                 tilts: Sequence[float], log_a_eff: float, k0: int, k1: int,
                 precision: str) -> tuple[np.ndarray, np.ndarray]:
    """(log lower bounds on P(S >= k), log upper bounds on Q(S >= k)), k0 <= k <= k1, for the
    composition of the statistic's P-parts ``pp`` and Q-parts ``pq`` (sub-probability allowed):
    the best over the ``tilts`` t of :func:`tilted_side_tails` (P by t, Q by t + 1) where their
    windows fit; then the running maximum downwards (P's) and minimum upwards (Q's), the tails
    being non-increasing; Q's total mass where no window reaches, nothing above the last label."""
    n = k1 - k0 + 1
    p_lo = np.full(n, -np.inf)
    q_up = np.full(n, log_total_mass(pq) + 1e-12)
    for t in tilts:
        for side, parts, s_, arr in ((-1, pp, t, p_lo), (1, pq, t + 1.0, q_up)):
            try:
                off, b = tilted_side_tails(parts, h, s_, side, log_a_eff, precision, _MAX_POINTS)
            except WindowTooWide:
                continue
            _merge(arr, k0, off, b, np.maximum if side < 0 else np.minimum)
    q_up[max(_labels(pq)[1] + 1 - k0, 0):] = -np.inf  # nothing lies above the last label
    return np.maximum.accumulate(p_lo[::-1])[::-1], np.minimum.accumulate(q_up)


def _a_sides(a_p: Sequence[tuple[int, np.ndarray, int]], a_q: Sequence[tuple[int, np.ndarray, int]], h: float,
             log_a_eff: float, j0: int, j1: int, precision: str) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_side_bounds` of A's statistic (one part of T steps per side) over [j0, j1], by the
    pieces of :class:`_Pieces` (both measures split at the same cut label: the binomial identity
    holds for each), each under its own ladder of tilts: the lower bounds summed over the pieces
    taken (the others only add), the upper bounds with the others counted by :meth:`_Pieces.rest`
    on the Q masses. None where A is not one part per side."""
    if len(a_p) != 1 or len(a_q) != 1:
        return None
    (off, pp, T), (off_q, pq, _) = a_p[0], a_q[0]
    if off_q != off or pq.size != pp.size:
        return None
    y_top = (j1 + 1) * h

    def ladder(parts: Sequence[tuple[int, np.ndarray, int]]) -> list[float]:
        return mean_ladder(parts, h, _MIN_TILT, y_top, _LADDER_SPACING, 1e5, _LADDER_MOST)

    cut = _Pieces(off, T, h)
    log_rp = cut.log_tail_mass(pp)
    if not math.isfinite(log_rp):
        return _side_bounds(a_p, a_q, h, ladder(a_p), log_a_eff, j0, j1, precision)
    lows, ups = [], []
    ks = cut.taken(log_rp, log_a_eff)
    for k in ks:
        piece_p = cut.parts(pp, k)
        lo_k, up_k = _side_bounds(piece_p, cut.parts(pq, k), h, ladder(piece_p), log_a_eff, j0, j1, precision)
        lows.append(cut.log_choose(k) - 1e-12 * (T + 1) + lo_k)
        ups.append(cut.log_choose(k) + 1e-12 * (T + 1) + up_k)
    if len(ks) <= T:
        ups.append(np.full(j1 - j0 + 1, cut.rest(cut.log_tail_mass(pq), log_total_mass([(off, pq, 1)]), len(ks))))
    return _log_sum_rows(np.vstack(lows), -1), _log_sum_rows(np.vstack(ups), 1)


def _log_sum_rows(stack: np.ndarray, side: int) -> np.ndarray:
    """log of the column sums of e^``stack``, rounded down (``side`` -1) or up (+1) by
    (rows + 4) 4 u of their size."""
    top = np.max(stack, axis=0)
    fin = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(stack - fin), axis=0)) + fin
    size = np.where(np.isfinite(out), np.abs(out), 0.0)
    return out + side * ((stack.shape[0] + 4) * 4.0 * _U * (size + 1.0) + 1e-12)


def _layer_cake(g: np.ndarray, tails: np.ndarray, g_max: float | None, side: int) -> float:
    """log of the layer-cake sum e^{g_0} mu(>= j0) + sum_i (e^{g_{i+1}} - e^{g_i}) mu(>= j0 + i + 1)
    [+ (e^{g_max} - e^{g_last}) mu(>= j1 + 1)], for a non-decreasing g (logs) and the bounds
    ``tails`` on mu(>= j) (one more entry than g), rounded down (``side`` -1) or up (+1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inc = g[1:] + np.log(-np.expm1(g[:-1] - g[1:]))
        parts = [np.array([g[0] + tails[0]]), inc + tails[1: g.size]]
        if g_max is not None:
            parts.append(np.array([g_max + math.log(-math.expm1(min(float(g[-1]) - g_max, 0.0))) + tails[g.size]
                                   if g[-1] < g_max else -math.inf]))
    terms = np.concatenate(parts)
    terms = np.where(np.isnan(terms), -np.inf, terms)
    top = float(np.max(terms))
    if not math.isfinite(top):
        return -math.inf
    total = top + math.log(float(np.sum(np.exp(terms - top))))
    fin = terms[np.isfinite(terms)]
    gf = g[np.isfinite(g)]
    size = float(np.max(np.abs(fin))) + (float(np.max(np.abs(gf))) if gf.size else 0.0)
    return total + side * ((terms.size + 16) * 8.0 * _U * (abs(total) + size + 1.0) + 1e-12)


def segment_lower(a_p: Sequence[tuple[int, np.ndarray, int]], a_q: Sequence[tuple[int, np.ndarray, int]],
                  b_p: Sequence[tuple[int, np.ndarray, int]], b_q: Sequence[tuple[int, np.ndarray, int]],
                  parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_alpha: float, threshold: float,
                  tilt: float, precision: str = "double") -> float | None:
    """log of a certified lower bound on the power at level exp(log_alpha): the test
    S_A + S_B >= s (randomised at s - 1) on the bucket statistics of a short schedule A and the rest
    B, a test on the true outputs (the mirror of :func:`segment_upper`).

    Its level is E_{Q_A}[Q_B(S_B >= s - S_A)] and its power E_{P_A}[P_B(S_B >= s - S_A)], each the
    mean of a non-decreasing function of S_A; by summation by parts (the layer-cake formula), the
    level is at most the same sum with upper bounds on B's Q-tails (made non-decreasing in S_A) and
    on A's Q-tails (the Q-tail of B at most its total beyond A's last label read), the power at
    least the sum with lower bounds on both P-tails (the terms left out only add). Only tails enter,
    as the stored statistic guarantees them (its suffix sums are one-sided:
    :class:`rerokit.bounds.pld.StepPLD`; a convolution keeps that order). A's tails come from the
    pieces of :func:`_a_tails` (:func:`_a_sides`), B's from the tilts of :func:`segment_upper`
    (:func:`_side_bounds`). The smallest s on [threshold - _SCAN_NATS - n h, threshold + _SCAN_NATS]
    (n steps: a bucket's label lies up to one label below its losses) whose level bound is within
    alpha is taken (bisection; any s whose bound is checked is a test), and the randomised test
    between s and s - 1 (:func:`rerokit.bounds.pld.tilt.randomized_lower`).

    Args:
      a_p, a_q: A's statistic (label offset, bucket P- / Q-masses, count T), one part each.
      b_p, b_q: B's statistic, one part per distinct step.
      parts: B's dominating parts (for its tilts, as :func:`segment_upper`).
      h, log_alpha, threshold, tilt, precision: as :func:`segment_upper`.

    Returns:
      The log lower end, or None where no test is found or A is not one part.
    """
    if not math.isfinite(threshold):
        return None
    j0, ja_hi = _labels(a_p)
    j1 = min(ja_hi, int(math.ceil((threshold + _A_OVER) / h)))
    if not j0 < j1 or j1 - j0 > _MAX_LABELS_A:
        return None
    a = _a_sides(a_p, a_q, h, float(log_alpha), j0, j1 + 1, precision)
    if a is None:
        return None
    pa_lo, qa_up = a
    # the statistic's labels are its buckets' floors, up to one label per step below the loss
    n_steps = sum(T for _, _, T in a_p) + sum(T for _, _, T in b_p)
    lo, hi = int(math.floor((threshold - _SCAN_NATS) / h)) - n_steps, int(math.ceil((threshold + _SCAN_NATS) / h))
    if hi - lo > _MAX_LABELS_A:
        return None
    k0, k1 = lo - j1 - 1, hi - j0 + 1
    tilts = _b_tilts(parts, h, threshold - j0 * h + _TOP_MARGIN, tilt)
    pb_lo, qb_up = _side_bounds(b_p, b_q, h, tilts, float(log_alpha), k0, k1, precision)
    log_qb = log_total_mass(b_q) + 1e-12
    js = np.arange(j0, j1 + 1)

    def at(arr: np.ndarray, s: int, below: float, above: float) -> np.ndarray:
        k = s - js
        out = arr[np.clip(k - k0, 0, arr.size - 1)]
        return np.where(k < k0, below, np.where(k > k1, above, out))

    def level(s: int) -> float:
        g = np.maximum.accumulate(at(qb_up, s, log_qb, float(qb_up[-1])))
        return _layer_cake(g, qa_up, max(log_qb, float(g[-1])), 1)

    def power(s: int) -> float:
        g = np.minimum.accumulate(at(pb_lo, s, float(pb_lo[0]), -math.inf)[::-1])[::-1]
        return _layer_cake(g, pa_lo, None, -1)

    if level(hi) > log_alpha:
        return None
    if level(lo) <= log_alpha:
        s = lo
    else:
        a_, b_ = lo, hi  # level(a_) > alpha >= level(b_)
        while b_ - a_ > 1:
            mid = (a_ + b_) // 2
            a_, b_ = (mid, b_) if level(mid) > log_alpha else (a_, mid)
        s = b_
    q_hi, p_hi = level(s), power(s)
    best = p_hi if math.isfinite(p_hi) else -math.inf
    if s > lo:
        best = max(best, randomized_lower(q_hi, level(s - 1), float(log_alpha), p_hi, lambda: power(s - 1)))
    return best if math.isfinite(best) else None
