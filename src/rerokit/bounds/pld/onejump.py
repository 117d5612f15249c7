"""Rare sampled steps (q T << 1): the far-tail power with one large loss taken entry by entry.

Where q T is small, the power at a tiny level comes from one sampled step's large loss on top of
a bulk of steps whose losses are of order q; the Neyman-Pearson threshold c is a few hundredths of
a nat (sigma 0.668, q 2.16e-7, T = 2: c = 0.0233, the power 2.8 % above the level). A tilted
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

* the terms with +infinity: at most 1 - (1 - p_inf)^T (:func:`compose_inf_mass`);
* b^{*T}: at most its mass above l_k, at most e^{-t l_k} M_b(t)^T for every t > 0 (Chernoff;
  M_b(t) = sum_l b_l e^{t l}), the least over a ladder of tilts;
* R_2: at most e^{-t l_k} sum_{k >= 2} C(T, k) M_b^{T-k} M_j^k <= e^{-t l_k} M_b^T (e^z - 1 - z)
  with z = T M_j / M_b (C(T, k) <= T^k / k!), and e^z - 1 - z <= z^2 e^z / 2;
* T b^{*(T-1)} * j: T sum_m j_m F(l_k - l_m), F(y) = E_{b^{*(T-1)}}[(1 - e^{y - L})_+], a sum of
  non-negative terms, computed with relative error at most (n + 2) u (Higham 2002, "Accuracy and
  Stability of Numerical Algorithms", 2nd ed., Sec. 4.2: summation of non-negative terms in any
  order), with F bounded above at each label by the least of: 1 + 1e-9 (a sub-probability: the
  step's masses exceed their exact ones by a few u); the FFT composition of b^{T-1}
  (:func:`compose`) with its proven round-off and window tail added (F <= the window's sum + the
  l1 error + the mass outside); and, for y > 0, the Chernoff bound e^{-t y} M_b(t)^{T-1}.

The composed bulk b^{*(T-1)} has no large losses, so its FFT is needed only near its bulk, where
the absolute round-off is negligible; j's masses near c enter the sum as they are. Every term is
an upper bound, so f(s) is one for every s; the least over a scan of labels around the max test's
threshold is returned (any label gives a certified bound; the scan is a choice of computation).
Levels whose masses leave double range (alpha below 1e-280) are left to the tilt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rerokit.bounds.pld.compose import WindowTooWide, compose, compose_inf_mass

__all__ = ["OneJump", "one_jump_upper"]

_U = float(np.finfo(float).eps) / 2.0
# the composed bulk's window: tail mass at most this on each side (added to every F bound)
_LOG_TAU = math.log(1e-15)
# Chernoff tilts (nats^-1), geometric; and the relative margin on every moment function's log
_TILTS = np.geomspace(0.5, 2.0e4, 24)
_LOG_MARGIN = 1e-6
# masses below double range: left to the tilt
_MIN_LOG_ALPHA = math.log(1e-280)
# the scan of the threshold label: this many labels on [lo, hi], then as many around the best
_SCAN = 64
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


def _log_moments(l: np.ndarray, pmf: np.ndarray) -> np.ndarray:
    """log M(t) = log sum_l pmf_l e^{t l} for every t of :data:`_TILTS`, raised by a margin far
    above the float error of the sums (each exponent within a few u |t l|, n positive terms)."""
    keep = pmf > 0.0
    if not np.any(keep):
        return np.full(_TILTS.size, -np.inf)
    x = np.log(pmf[keep])[None, :] + _TILTS[:, None] * l[keep][None, :]
    m = np.max(x, axis=1)
    s = np.log(np.sum(np.exp(x - m[:, None]), axis=1)) + m
    return s + _LOG_MARGIN + 8.0 * _U * np.max(np.abs(x), axis=1) + (keep.sum() + 4) * 2.0 * _U


def one_jump_upper(j_lo: int, pmf: np.ndarray, inf_mass: float, T: int, h: float, log_alpha: float,
                   cut: int, scan: tuple[int, int]) -> OneJump | None:
    """Certified upper end of the power of T identical REMOVE steps at level alpha (module docstring).

    Args:
      j_lo: label of ``pmf[0]`` (losses l = label * h).
      pmf: one step's dominating P-masses (connect the dots), non-negative.
      inf_mass: the step's P-mass at +infinity.
      T: the number of steps (>= 2).
      h: grid step (nats).
      log_alpha: natural log of the level (>= log 1e-280).
      cut: the first label of the jumps (j_lo < cut <= the last label).
      scan: (lo, hi) labels where the threshold is looked for (lo >= 1).

    Returns:
      The :class:`OneJump` bound, or None where it does not apply (the level below double range,
      the cut outside the pmf, the composed bulk's window too wide, the sums too long).
    """
    n = pmf.size
    if T < 2 or not (j_lo < cut < j_lo + n) or float(log_alpha) < _MIN_LOG_ALPHA or scan[1] <= scan[0]:
        return None
    labels = j_lo + np.arange(n)
    b, jm = pmf[: cut - j_lo], pmf[cut - j_lo:]
    jl = labels[cut - j_lo:]
    if jm.size * 2 * _SCAN > _MAX_WORK:
        return None
    lmb = _log_moments(labels[: cut - j_lo] * h, b)
    lmj = _log_moments(jl * h, jm)
    try:
        bulk = compose([(j_lo, b, T - 1)], h, _LOG_TAU)
    except WindowTooWide:
        return None
    # F(y) at the labels d = k - m the sums read: the window's suffix sums, rounded up
    bp = np.maximum(bulk.pmf, 0.0)
    nb = bp.size
    bl = (bulk.offset + np.arange(nb)) * h
    if nb == 0 or float(bl[0]) < -700.0:  # (e^{-l} beyond double range: left to the tilt)
        return None
    a_suf = np.append(np.cumsum(bp[::-1])[::-1], 0.0)
    w_suf = np.append(np.cumsum((bp * np.exp(-bl))[::-1])[::-1], 0.0)
    d0 = scan[0] - int(jl[-1])
    d = d0 + np.arange(scan[1] - int(cut) - d0 + 1)
    i0 = np.clip(d + 1 - bulk.offset, 0, nb)
    ey = np.exp(d * h)
    a, w = a_suf[i0], w_suf[i0]
    f_fft = np.maximum(a - ey * w, 0.0) + 4.0 * (nb + 2) * _U * (a + ey * w) + (bulk.roundoff + bulk.tail) * (1.0 + 1e-12)
    f_up = np.minimum(f_fft, 1.0 + 1e-9)
    pos = d > 0
    if np.any(pos):
        log_ch = np.min((T - 1) * lmb[:, None] - _TILTS[:, None] * (d[pos] * h)[None, :], axis=0)
        f_up[pos] = np.minimum(f_up[pos], np.exp(np.minimum(log_ch, 0.0)))
    p_inf = compose_inf_mass([(inf_mass, T)]) * (1.0 + 1e-12)
    log_z = math.log(T) + lmj - lmb
    z = np.exp(np.minimum(log_z, 700.0))
    log_r2 = T * lmb + 2.0 * log_z - math.log(2.0) + z  # log of M_b^T z^2 e^z / 2
    grow = 1.0 + 2.0 * (jm.size + 2) * _U

    def bound(ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lk = ks * h
        chern = (np.exp(np.min(T * lmb[:, None] - _TILTS[:, None] * lk[None, :], axis=0))
                 + np.exp(np.min(log_r2[:, None] - _TILTS[:, None] * lk[None, :], axis=0)))
        sums = np.array([float(np.dot(jm, f_up[k - jl - d0])) for k in ks]) * grow
        total = (np.exp(lk + float(log_alpha)) * (1.0 + 4.0 * _U) + p_inf + chern + T * sums) * (1.0 + 8.0 * _U)
        return total, chern

    ks = np.unique(np.linspace(scan[0], scan[1], _SCAN).round().astype(np.int64))
    vals, chern = bound(ks)
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
