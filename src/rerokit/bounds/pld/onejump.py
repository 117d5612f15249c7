"""Rare sampled steps (q T << 1): the far-tail power with one large loss taken entry by entry.

Where q T is small, the power at a tiny level comes from one sampled step's large loss on top of
a bulk of steps whose losses are of order q; the Neyman-Pearson threshold c is a few hundredths of
a nat (sigma 0.668, q 2.16e-7, T = 2, kappa 1.9e-17: c = 0.0233, the power 2.8 % above the level). A tilted
composition (:mod:`rerokit.bounds.pld.tilt`) then has no tilt at which the masses at c are large
against the window's: the bulk at 0 and the step's heavy tail above c both outweigh them (by 1e16
at T = 2 above), the FFT's proven round-off swamps them, and the upper end stayed 2.6-9 % above
the power (the max test's closed form, which the direct sums below confirm to 1e-6 at T = 2-16).

Here nothing that needs relative precision goes through an FFT. Split one step's dominating pmf p
(grid h, REMOVE direction, mass p_inf at +infinity) at a label ``cut`` into its bulk b (labels below)
and its jumps j (the rest): p = b + j + p_inf delta_inf, and by the binomial expansion of a
convolution power

    p^{*T} = b^{*T} + T b^{*(T-1)} * j + R_2 + (terms with an atom at +infinity),
    R_2 = sum_{k >= 2} C(T, k) b^{*(T-k)} * j^{*k}.

By Neyman-Pearson duality (as in :mod:`rerokit.bounds.pld.discrete`) the power at level alpha is
at most f(s) = s alpha + P(L = inf) + E_{p^{*T}}[(1 - s e^{-L})_+] for every s = e^{l_k} > 0, and
the expectation is linear in the pmf:

* the terms with +infinity: at most (M + p_inf)^T - M^T <= T p_inf (M + p_inf)^{T-1}, M the
  finite mass (which may exceed 1 - p_inf by the masses' rounding);
* b^{*T}: at most its mass above l_k, at most e^{-t l_k} M_b(t)^T for every t > 0 (Chernoff;
  M_b(t) = sum_l b_l e^{t l}), the least over a ladder of tilts;
* R_2: at most e^{-t l_k} sum_{k >= 2} C(T, k) M_b^{T-k} M_j^k <= e^{-t l_k} M_b^T (e^z - 1 - z)
  with z = T M_j / M_b (C(T, k) <= T^k / k!), and e^z - 1 - z <= z^2 e^z / 2;
* T b^{*(T-1)} * j: T sum_m j_m F(l_k - l_m), F(y) = E_{b^{*(T-1)}}[(1 - e^{y - L})_+], a sum of
  non-negative terms, computed with relative error at most (n + 2) u (Higham 2002, "Accuracy and
  Stability of Numerical Algorithms", 2nd ed., Sec. 4.2: summation of non-negative terms in any
  order), with F bounded above at each label by the least of: the bulk's total mass
  (sum b)^{T-1}; the FFT composition of b^{*(T-1)} (:func:`compose`) read as a dominating PLD, whose
  hockey-stick bound carries its proven round-off and window tail
  (:meth:`rerokit.bounds.pld.discrete.DiscretePLD.hockey_stick`); the same bulk composed under a few
  tilts whose tilted means lie between 0 and c - cut
  (:func:`rerokit.bounds.pld.onestep.hockey_stick_bounds`, as for the short segment there: relative
  precision where the jumps' large masses near the cut meet F's tail); for y > 0, the Chernoff bound
  e^{-t y} M_b(t)^{T-1}; and, F being non-increasing, each of these at every smaller y.

Several distinct steps i (counts T_i, one grid): the bulk is B = prod_i b_i^{*T_i}, the one-jump
terms T_i (B without one copy of b_i) * j_i (one composition per step), z = sum_i T_i M_{j_i} / M_{b_i}
(the coefficients of prod_i (1 + x_i)^{T_i} are at most those of e^{sum_i T_i x_i}), and the atoms
at +infinity at most sum_i T_i p_inf_i prod_i' max(1, M_i' + p_inf_i')^{T_i'} (which step's atom it is).

The composed bulk has no large losses, so its FFT is needed only near its bulk, where the absolute
round-off is negligible; the jumps' masses near c enter the sum as they are. Every term is an upper
bound, so f(s) is one for every s; the least over a scan of labels around the max test's threshold
(:func:`rerokit.bounds.pld.maxtest.loss_matched_threshold`) is returned, reaching down to the cut
where the least is at the scan's start (any label gives a certified bound; the scan is a choice of
computation). Levels whose masses leave double range (alpha below 1e-280) are left to the tilt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.compose import WindowTooWide, coarse_moment_copy, compose, moment_terms
from rerokit.bounds.pld.discrete import DiscretePLD
from rerokit.bounds.pld.onestep import hockey_stick_bounds
from rerokit.bounds.pld.tilt import mean_tilt

__all__ = ["JumpStep", "OneJump", "one_jump_upper"]

_U = float(np.finfo(float).eps) / 2.0
# the composed bulk's window: tail mass at most this on each side (added to every F bound)
_LOG_TAU = math.log(1e-15)
# Chernoff tilts, geometric, as multiples of 1 / (the scan's first loss): the exponents t l that
# matter are a few tens at the threshold, whatever its size (1e-5 to 10 nats); and the margin on
# every moment function's log
_TILT_SCALES = np.geomspace(0.03, 1200.0, 24)
_LOG_MARGIN = 1e-6
# masses below double range: left to the tilt
_MIN_LOG_ALPHA = math.log(1e-280)
# the scan of the threshold label: this many labels on [lo, hi], then as many around the best
_SCAN = 64
# the bulk's tilts: tilted means at these fractions of the gap between the cut and the scan's start
_BULK_MEANS = (1.0, 0.5, 0.25)
_BULK_MIN_TILT = 0.05
# at most this many jump labels times scanned labels (the sums' cost)
_MAX_WORK = 40_000_000


@dataclass(frozen=True)
class OneJump:
    """:func:`one_jump_upper`'s result.

    Attributes:
      log_upper: natural log of the certified upper end (the power at level alpha, at most 0).
      log_share: log of the Chernoff terms' share (b^{*T} and R_2) of the bound at its minimum.
      threshold: the label (loss l_k / h) where the bound is least.
    """

    log_upper: float
    log_share: float
    threshold: int


def _log_moments(labels: np.ndarray, pmf: np.ndarray, h: float, tilts: np.ndarray) -> np.ndarray:
    """log M(t) = log sum_l pmf_l e^{t l} for every t of ``tilts``
    (:func:`rerokit.bounds.pld.compose.moment_terms` at lam = t h), raised by a margin far above the
    float error of the sums (each exponent within a few u |t l|, n positive terms)."""
    if not np.any(pmf > 0.0):
        return np.full(tilts.size, -np.inf)
    top = 745.0 + float(np.max(tilts)) * h * float(np.max(np.abs(labels)))  # |log p| + |t l|
    return moment_terms(labels, pmf, tilts * h) + _LOG_MARGIN + 8.0 * _U * top + (pmf.size + 4) * 2.0 * _U


def _z_terms(steps: Sequence["JumpStep"], lmj: list, lmb: list, log_mb: np.ndarray) -> np.ndarray:
    """log of M_B (e^z - 1 - z)'s bound M_B z^2 e^z / 2, z = sum_i T_i M_{j_i} / M_{b_i}, per tilt."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # (a z beyond range: no bound there)
        z = sum(st.count * np.exp(np.minimum(mj - mb, 700.0)) for st, mj, mb in zip(steps, lmj, lmb))
        return log_mb + 2.0 * np.log(z) - math.log(2.0) + z


def _jump_log_moments(steps: Sequence["JumpStep"], js: list, lmb: list, log_mb: np.ndarray, h: float,
                      tilts: np.ndarray, losses: np.ndarray) -> tuple[list, np.ndarray]:
    """(the jumps' log moment functions, the tilts at which they were computed): exactly
    (:func:`_log_moments`) only at the tilts whose two-jump term's Chernoff bound is least at one of
    ``losses`` (the scan's two ends) on the jumps' coarse copies
    (:func:`rerokit.bounds.pld.compose.coarse_moment_copy`), the tilts between them and one more on
    each side; elsewhere the term is not used (the least over fewer tilts is still a bound). The
    jumps are most of a step's labels (25224 of 25725 at sigma 0.731, q 1.05e-7, T 86529, kappa
    1.9e-13: all 24 tilts took 4.6 ms of the query's 34 ms, the 8 selected here 1.3 ms)."""
    coarse = [_log_moments(*coarse_moment_copy(int(jl[0]), jm), h, tilts) if jm.size
              else np.full(tilts.size, -np.inf) for jl, jm in js]
    log_r2 = _z_terms(steps, coarse, lmb, log_mb)
    use = np.ones(tilts.size, dtype=bool)
    if np.isfinite(log_r2).any():
        arg = np.argmin(np.where(np.isfinite(log_r2), log_r2, np.inf)[:, None] - tilts[:, None] * losses[None, :], axis=0)
        use[:] = False
        use[max(0, int(arg.min()) - 1): int(arg.max()) + 2] = True
    lmj = []
    for jl, jm in js:
        m = np.full(tilts.size, -np.inf)
        if jm.size:
            m[use] = _log_moments(jl, jm, h, tilts[use])
        lmj.append(m)
    return lmj, use


def _jump_sums(jm: np.ndarray, f_up: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """sum_m j_m F(l_k - l_m) for every scanned label k: with the jumps at the labels cut, cut + 1, ...
    and F's bounds ``f_up`` from the label cut + 1 - (the last jump's) on, the terms of label k read
    ``f_up`` from ``starts`` = k - cut - 1 up, against the jumps in reverse order: one dot product
    per label, on views (any order of summation: the caller's allowance (n + 2) u holds for each)."""
    n, rev = jm.size, np.ascontiguousarray(jm[::-1])
    return np.array([float(f_up[a:a + n] @ rev) for a in starts.tolist()])


@dataclass(frozen=True)
class JumpStep:
    """One distinct step of :func:`one_jump_upper`: its dominating P-masses (connect the dots,
    non-negative) at the labels ``j_lo`` ... (losses label * h), its P-mass at +infinity, and how
    many times it is composed."""

    j_lo: int
    pmf: np.ndarray
    inf_mass: float
    count: int


def _bulk_hockey(parts: list, h: float, log_alpha: float, d: np.ndarray, log_mgf: np.ndarray,
                 tilts: np.ndarray, mean_top: float) -> np.ndarray | None:
    """Upper bounds on F(y) = E_B[(1 - e^{y - L})_+] at y = d h for the composed bulk B of ``parts``
    (module docstring): the least of B's total mass, its FFT window's hockey-stick bound
    (:meth:`rerokit.bounds.pld.discrete.DiscretePLD.hockey_stick`: proven sums, round-off and tail
    added), the Chernoff bounds e^{-t y} M_B(t) (``log_mgf``, for y > 0), and the compositions
    tilted to the means mean_top x :data:`_BULK_MEANS`
    (:func:`rerokit.bounds.pld.onestep.hockey_stick_bounds`); then the running minimum (F is
    non-increasing). None where the window does not fit."""
    y = d * h
    if not parts:  # B = delta_0: F(y) = (1 - e^y)_+, rounded up
        return np.maximum(-np.expm1(y), 0.0) * (1.0 + 4.0 * _U) + 4.0 * _U
    try:
        bulk = compose(parts, h, _LOG_TAU)
    except WindowTooWide:
        return None
    f_up = DiscretePLD(h, bulk.offset, bulk.pmf, bulk.tail, bulk.roundoff, bulk.entry_roundoff).hockey_stick(y)
    # F <= B's total mass, the product of the parts' masses (each sum rounded up)
    masses = [float(np.sum(b)) * (1.0 + (b.size + 2) * _U) for _, b, _ in parts]
    if min(masses) <= 0.0:  # (a bulk of no mass: F = 0)
        return np.zeros(d.size)
    log_mass = sum(T * math.log(m) for (_, _, T), m in zip(parts, masses))
    f_up = np.minimum(f_up, math.exp(log_mass) * (1.0 + 1e-12))
    pos = d > 0
    if np.any(pos):
        log_ch = np.min(log_mgf[:, None] - tilts[:, None] * y[pos][None, :], axis=0)
        f_up[pos] = np.minimum(f_up[pos], np.exp(log_ch) * (1.0 + 1e-12))
    # ... and B composed under tilts whose tilted means sit at a ladder of y in (0, c - cut]:
    # relative precision where the jumps' masses near the cut meet F's tail
    ladder = [t for t in (mean_tilt(parts, h, frac * mean_top, _BULK_MIN_TILT, 1e5) for frac in _BULK_MEANS)
              if t is not None]
    got = hockey_stick_bounds(parts, h, 0.0, float(log_alpha), ladder, "double", int(d[0]), int(d[-1]))
    if got is not None:
        k0, log_g = got
        seg = slice(k0 - int(d[0]), k0 - int(d[0]) + log_g.size)
        f_up[seg] = np.minimum(f_up[seg], np.exp(log_g) * (1.0 + 1e-12))
    return np.minimum.accumulate(f_up)  # each bound holds at every larger y


def one_jump_upper(steps: Sequence[JumpStep], h: float, log_alpha: float, cut: int,
                   scan: tuple[int, int]) -> OneJump | None:
    """Certified upper end of the power of the composition of REMOVE steps at level alpha (module
    docstring; several distinct steps i with counts T_i: the bulk B = prod_i b_i^{*T_i}, the jump
    terms T_i B / b_i * j_i, z = sum_i T_i M_{j_i} / M_{b_i}).

    Args:
      steps: the distinct steps (:class:`JumpStep`), on one grid.
      h: grid step (nats).
      log_alpha: natural log of the level (>= log 1e-280).
      cut: the first label of the jumps (above every step's first label).
      scan: (lo, hi) labels where the threshold is looked for (cut < lo < hi).

    Raises:
      ValueError: ``log_alpha`` not a finite number <= 0, or ``h`` not a finite number > 0.

    Returns:
      The :class:`OneJump` bound, or None where it does not apply (fewer than two steps in all, the
      level below double range, the cut at or below a step's first label, a composed bulk's window
      too wide, the sums too long).
    """
    if not (math.isfinite(float(log_alpha)) and float(log_alpha) <= 0.0):
        raise ValueError(f"log_alpha must be a finite log-level <= 0, got {log_alpha!r}")
    if not (math.isfinite(float(h)) and h > 0.0):
        raise ValueError(f"h must be a finite grid step > 0, got {h!r}")
    if (sum(st.count for st in steps) < 2 or float(log_alpha) < _MIN_LOG_ALPHA or not cut < scan[0] < scan[1]
            or any(not st.j_lo < cut for st in steps) or any(st.count < 1 for st in steps)):
        return None
    tilts = _TILT_SCALES / (scan[0] * h)
    bs, js = [], []
    for st in steps:
        k = min(cut - st.j_lo, st.pmf.size)
        bs.append((st.j_lo, st.pmf[:k], st.count))
        js.append((cut + np.arange(st.pmf.size - k), st.pmf[k:]))
    if sum(jm.size for _, jm in js) * 2 * _SCAN > _MAX_WORK:
        return None
    lmb = [_log_moments(j_lo + np.arange(b.size), b, h, tilts) for j_lo, b, _ in bs]
    log_mb = sum(T * m for (_, _, T), m in zip(bs, lmb))  # log M_B(t), B the whole bulk
    lmj, r2_tilts = _jump_log_moments(steps, js, lmb, log_mb, h, tilts, np.array([cut + 1, scan[1]]) * h)
    sums_of = []
    for i, (jl, jm) in enumerate(js):
        if not jm.size:
            continue
        # the bulk without one of step i's copies
        parts = [(j_lo, b, T - (i == i2)) for i2, (j_lo, b, T) in enumerate(bs) if T - (i == i2) > 0]
        d0 = cut + 1 - int(jl[-1])  # (the scan may reach down to the cut)
        d = d0 + np.arange(scan[1] - cut - d0 + 1)
        f_up = _bulk_hockey(parts, h, float(log_alpha), d, log_mb - lmb[i], tilts, (scan[0] - cut) * h)
        if f_up is None:
            return None
        sums_of.append((steps[i].count, jm, f_up, 1.0 + 2.0 * (jm.size + 2) * _U))
    # the paths with an atom at +infinity: by the union over which step's atom it is, at most
    # sum_i T_i p_inf_i prod_i' max(1, M_i' + p_inf_i')^{T_i'} (M the finite masses, rounded up: they
    # may exceed 1 - p_inf by the masses' own rounding)
    log_excess = sum(st.count * math.log1p(max(0.0, float(np.sum(st.pmf)) * (1.0 + (st.pmf.size + 2) * _U)
                                                + st.inf_mass - 1.0)) for st in steps)
    p_inf = sum(st.count * st.inf_mass for st in steps) * math.exp(log_excess) * (1.0 + 1e-12)
    # two or more jumps: M_B (e^z - 1 - z) <= M_B z^2 e^z / 2, z = sum_i T_i M_{j_i} / M_{b_i}
    log_r2 = np.where(r2_tilts, _z_terms(steps, lmj, lmb, log_mb), np.inf)

    def bound(ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lk = ks * h
        chern = (np.exp(np.min(log_mb[:, None] - tilts[:, None] * lk[None, :], axis=0))
                 + np.exp(np.min(log_r2[:, None] - tilts[:, None] * lk[None, :], axis=0))) * (1.0 + 1e-9)
        sums = sum(T * _jump_sums(jm, f_up, ks - cut - 1) * grow for T, jm, f_up, grow in sums_of)
        x = lk + float(log_alpha)  # s alpha = e^x, within u (|x| + 4) of its computed value
        level = np.exp(x) * (1.0 + 2.0 * _U * (np.abs(x) + 4.0))
        total = (level + p_inf + chern + sums) * (1.0 + 8.0 * _U)
        return total, chern

    ks = np.unique(np.linspace(scan[0], scan[1], _SCAN).round().astype(np.int64))
    vals, chern = bound(ks)
    i = int(np.argmin(vals))
    if i == 0 and ks[0] > cut + 2:  # the least at the scan's first label: down to the cut too
        ks0 = np.unique(np.linspace(cut + 1, ks[0], _SCAN).round().astype(np.int64))
        v0, c0 = bound(ks0)
        ks, vals, chern = np.concatenate((ks0, ks)), np.concatenate((v0, vals)), np.concatenate((c0, chern))
        i = int(np.argmin(vals))
    lo, hi = int(ks[max(i - 1, 0)]), int(ks[min(i + 1, ks.size - 1)])
    if hi - lo > 2:
        ks2 = np.unique(np.linspace(lo, hi, _SCAN).round().astype(np.int64))
        v2, c2 = bound(ks2)
        if float(np.min(v2)) < vals[i]:
            i2 = int(np.argmin(v2))
            ks, vals, chern, i = ks2, v2, c2, i2
    best = float(vals[i])
    if not (best > 0.0 and math.isfinite(best)):
        return None
    share = math.log(chern[i] / best) if chern[i] > 0.0 else -math.inf
    return OneJump(min(0.0, math.log(best)), share, int(ks[i]))
