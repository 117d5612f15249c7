"""The far-tail tilt at tiny q on two grids: a fine bulk and coarse jumps.

At tiny q (sigma 1, q 1e-4) the upper tail that the tilt of :mod:`rerokit.bounds.pld.tilt` centres
at the Neyman-Pearson threshold is made of a few sampled steps with large losses (0.1-1.3 nats,
the *jumps*), on top of a bulk of steps whose losses are of order q. The bulk needs a fine grid h_f
(connect-the-dots on a grid coarser than its losses inflates the variance of every step by about
h E|l| instead of E l^2), the jumps do not, yet one grid for both makes the tilted window span the
jumps (~20 nats) at the bulk's step: millions of points. Here each step's tilted pmf is split at a
label ``cut`` into its bulk b (labels < cut) and its jumps j, and a block of m steps is

    (b + j)^{*m} = sum_k C(m, k) beta^{m-k} pi^k  bh^{*(m-k)} * jh^{*k}    (beta, pi: the masses of b, j;
                                                                               bh, jh: b / beta, j / pi),

a sum over the number k of jumps (the slice k). Slices k <= K are computed; the others are bounded
per label in the tilt's weighted norm (:class:`_OmitBound`: they sit above about K + 1 jumps'
losses, so K = 3-4 suffices where the threshold is near the tilted mean). In slice k the m - K *main* bulk steps are
composed on the fine grid (one composition for all slices), the K - k *extra* bulk steps and the k
jumps are taken one by one, and every part is re-discretised onto the coarse grid h_c = r h_f
(:func:`rerokit.bounds.pld.lowertail.rebin_pld`: connect-the-dots, each atom's P- and Q-mass split
onto its two coarse neighbours, both preserved) before the slice is composed there.

Why this dominates the block's PLD (every slice's re-discretisation is a refinement of the true
pair, Blackwell 1951 / Sherman 1951 / Stein 1951, as connect-the-dots is in Doroshenko et al. 2022,
"Connect the dots: tighter discrete approximations of privacy loss distributions"): which steps
jumped (their loss is >= cut h_f) is a function of the output, so revealing it, and with it the
slice and a fixed choice of the extra bulk steps among the others (say the last K - k), changes
nothing. Given it, the output's loss is the main bulk's sum plus the other steps' losses; the
two-point split of the main bulk's sum L_b (P-fractions w at L_b^- and 1 - w at L_b^+ with
w e^{-L_b^-} + (1 - w) e^{-L_b^+} = e^{-L_b}) preserves the P- and Q-mass of every output atom
whatever the other losses are (their factor e^{-L_o} cancels), so the split pair is a refinement
(merging the two points gives back the atom) and the same holds for each extra step and each jump.
The split of L_b depends only on L_b, hence it acts on the composed bulk measure alone. Compositions
of dominating pairs dominate (the tradeoff function of a composition is monotone in each factor's;
Dong, Roth & Su 2022, "Gaussian differential privacy", Sec. 3), so the blocks are composed as they
are (:func:`compose_blocks`). The lower end's statistic is built the same way (P- and Q-masses of the
bucket statistic, the slices' parts re-labelled to the nearest coarse label: a function of the
output, the same for P and Q, so its threshold tests are tests of the true pair).
The variance added per block is at most h_c^2 / 4 per re-discretised part (K + 2 parts per slice)
against the T h_f E|l| of connect-the-dots step by step.

Tilted terms: everything is the tilted pmf of :func:`rerokit.bounds.pld.tilt.tilt_pmf` (normaliser
M(t) per step), a mass moved from l to l' is multiplied by e^{t (l' - l)} (so by at most
e^{|t| h_c} per re-discretised part), and the untilted masses are e^{C - t l} times the tilted
ones. Errors, all in the weighted norm of :func:`rerokit.bounds.pld.compose.weighted_roundoff` and per
label (an error at a label does not count for the sums above a higher one): each slice's composition
carries its proven round-off (up to the top of its support) and 3 tau (windows, wrap-around;
:func:`rerokit.bounds.pld.compose.compose`), the main bulk's its own times the slice's other factors'
moments at -t, all weighted by the slice weight; the omitted slices their bound; the tilted step's own
absolute error (entries beyond the tilt's cap) m e e^{m e} times the re-discretisation's
e^{|t| h_c (K + 1)}; relative errors (the tilting's, the divisions by beta and pi, the
re-discretisation's (2 r + 16) u per part, the weights' logs) add up per entry.

Measured (sigma 1, q 1e-4, kappa 1e-9 / 1e-20; 2026-11-26, the one-grid tilt of the same steps
beside): T 1e5, kappa 1e-9, the bracket [-20.46390, -20.46331] in log (one grid: [-20.46409,
-20.46326]) from one block of K = 3 slices per side (dominating pmf, statistic's P and Q) on the
grid 54 h (windows of 10-13k points instead of 1.5-2.3 million); at T 1e6, kappa 1e-20
[-44.60005, -44.59616] with the bulk on the grid h / 2 ([-44.60133, -44.59419] on h). :mod:`rerokit.bounds.pld.builder` takes this path for q <= 1e-3 where the
one-grid tilt's window would be >= 3x the untilted one.

Several distinct steps (:func:`jump_parts_multi`): with S steps (tilted pmfs, m_i copies each) the
slices are the jump counts (k_1, ..., k_S), k_i <= K_i (a product set), weighted by prod_i
C(m_i, k_i) beta_i^{m_i - k_i} pi_i^{k_i}; a slice is composed on the coarse grid from one main bulk
(all steps' m_i - K_i bulk steps, composed once on the fine grid, in mixed precision, and
re-discretised once), K_i - k_i extra bulk steps and k_i jumps of each step. The argument above is
unchanged (which steps jumped is a function of the output; every part's re-discretisation is a
refinement); the omitted slices, the union over i of {k_i > K_i}, are bounded per label by the sum
over i of step i's omitted tail times the other steps' full tilted factors (:class:`_MultiOmitBound`).
Measured (2026-11-26, load ~1): sigma 1 / 2, q 1e-4 / 2e-4, T 5e5 + 5e5, kappa 1e-20: rero_dpsgd
0.10 s, bracket 1.1e-3 wide, against 13.6-17.7 s and 9.2e-3 by the one-grid tilt and its
refinement; sigma 0.8 / 1.5, q 1e-4 / 5e-4, T 1e5 + 1e4, kappa 1e-9: 0.10 s, 1.3e-4, against
1.4-3.4 s, 3.2e-3. Where a step at a small tilt needs many slices (sigma 0.5, q 1e-4, T 1e5 at
t 3.2: K = 25 at the cut 0.05 nats, 208 slices with a second step) the builder takes a higher cut
(pld.builder._JUMP_MULTI_CUTS; 0.5 nats: 18 slices, 0.18 s, 2.2e-4 wide, against 0.83 s for the
one-grid tilt), declining above :data:`MAX_SLICES`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.compose import (WindowTooWide, coarse_moment_copy, compose, moment_support, moment_terms,
                                        weighted_roundoff)
from rerokit.bounds.pld.lowertail import TiltedPart, block_size, rebin_pld, rebin_stat, tilt_sparse
from rerokit.bounds.pld.tilt import TiltedSide, pulled_tilt, pulled_upper, tilted_lower, tilted_upper_share

__all__ = ["jump_parts", "jump_parts_multi", "jump_power", "jump_power_share", "compose_blocks", "multi_slice_count",
           "JUMP_LOG_TAU", "JumpTilt", "MAX_SLICES"]

_U = float(np.finfo(float).eps)  # twice the unit round-off (as pld.lowertail's)
# the slices' and the main bulk's windows (tilted mass outside each side), and the omitted slices'
# mass bound: against the ~1e-3 brackets at the cells measured, far below anything that shows
JUMP_LOG_TAU = math.log(1e-13)
# the omitted slices are made negligible up to the tilted mean plus this (nats; jump_power)
_REF_MARGIN = 1.0
# blocks of at most this many expected jumps (tilted): the slices per block K grows with it
_JUMPS_PER_BLOCK = 4.0


def _log_binom(m: int, k: int) -> tuple[float, float]:
    """(log C(m, k), a bound on its rounding error): a sum of k logs of exact quotients' roundings
    (each log within 2 ulps plus the quotient's ulp: <= 2 u (|term| + 1) per term, u = 2^-52)."""
    s, err = 0.0, 0.0
    for i in range(k):
        v = math.log((m - i) / (i + 1))
        s += v
        err += 2.0 * _U * (abs(v) + abs(s) + 1.0)
    return s, err


def _omitted(m: int, log_pi: float, beta: float, grow: float, K: int) -> float:
    """A bound on the total tilted mass of the slices k > K after re-discretisation: each slice's
    exact mass C(m, k) beta^{m-k} pi^k grows by at most ``grow``^{k+1} (one part per jump and one for
    the bulk), and C(m, k) <= m^k / k!, beta^{m-k} <= max(1, beta)^m, so the sum is at most
    grow max(1, beta)^m sum_{k > K} x^k / k! with x = m pi grow, and that tail is at most
    x^{K+1} / (K+1)! / (1 - x / (K + 2)) (a geometric series) where x < K + 2 (else inf). Rounded up."""
    if K >= m:
        return 0.0
    x_log = math.log(m) + log_pi + math.log(grow)
    x = math.exp(x_log)
    if x >= K + 2:
        return math.inf
    log_b = ((K + 1) * x_log - math.lgamma(K + 2) - math.log1p(-x / (K + 2)) + math.log(grow)
             + m * max(0.0, math.log(beta)))
    return math.exp(log_b * (1.0 - 1e-9) if log_b < 0 else log_b * (1.0 + 1e-9)) * (1.0 + 1e-6)


def _slices(m: int, log_pi: float, beta: float, grow: float, log_tau: float) -> int:
    """The least K (<= m) whose omitted slices (:func:`_omitted`) weigh at most tau."""
    K = 0
    while K < m and not _omitted(m, log_pi, beta, grow, K) <= math.exp(log_tau):
        K += 1
    return K


class _OmitBound:
    """Per-label bounds on the weighted error (rate t, :func:`rerokit.bounds.pld.compose.weighted_roundoff`)
    that leaving out the slices k > K makes: for every s in [0, t] and every label J of loss L_J,
    1{L' >= L_J} e^{-t (L' - L_J)} <= e^{-s (L' - L_J)}, so the omitted (tilted, re-discretised)
    mass costs at most e^{s L_J} sum_{k > K} (its slice's mass times E[e^{-s L'}]) there. A slice is
    the bulk sum of m - k steps plus k jumps, each part moved by less than h_c (a factor e^{s h_c}
    on E[e^{-s L'}] and ``grow`` on its tilted mass), so with the normalised bulk's and jump's
    moments Mb(-s), Mj(-s) (on the fine grid) and C(m, k) <= m^k / k!:

        <= g e^{s h_c} max(1, beta Mb(-s))^m sum_{k > K} x^k / k!,   x = m pi g e^{s h_c} Mj(-s),

    the series' tail bounded as in :func:`_omitted`. s = 0 is :func:`_omitted` itself; s near t
    makes the bound tiny below the omitted slices' losses (k > K jumps, ~k times a jump's), which is
    where the thresholds are. Evaluated on a few s, the least taken."""

    def __init__(self, off: int, bh: np.ndarray, off_j: int, jh: np.ndarray, m: int, beta: float, pi: float,
                 grow: float, h_f: float, h_c: float, t: float):
        self.s = t * np.array([0.0, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 3.0 / 4, 1.0])
        lb = moment_terms(off + np.arange(bh.size, dtype=float), bh, -self.s * h_f)
        lj = moment_terms(off_j + np.arange(jh.size, dtype=float), jh, -self.s * h_f)
        lb, lj = lb + 1e-12 * (np.abs(lb) + 1.0), lj + 1e-12 * (np.abs(lj) + 1.0)
        self.m, self.h_c = m, h_c
        log_g = math.log(grow)
        self.base = log_g + self.s * h_c + m * np.maximum(0.0, math.log(beta) + lb)
        self.log_x = math.log(m) + math.log(pi) + log_g + self.s * h_c + lj

    def log_at(self, J: np.ndarray, K: int) -> np.ndarray:
        """log of the bound at the coarse labels J (-inf where K >= m: nothing is left out)."""
        J = np.asarray(J, dtype=float)
        if K >= self.m:
            return np.full(J.shape, -np.inf)
        ratio = np.exp(self.log_x) / (K + 2)
        tail = np.full(ratio.shape, np.inf)
        ok = ratio < 1.0
        tail[ok] = (K + 1) * self.log_x[ok] - math.lgamma(K + 2) - np.log1p(-ratio[ok])
        per_s = self.base + tail  # log Phi(s), then + s L_J, least over s
        out = np.min(self.s[:, None] * (J[None, :] * self.h_c) + per_s[:, None], axis=0)
        return out + 1e-9 * np.abs(out) + 1e-12

    def slices(self, J_ref: float, log_tau: float) -> int:
        """The least K whose bound at the label J_ref is at most tau."""
        K = 0
        while K < self.m and not float(self.log_at(np.array([J_ref]), K)[0]) <= log_tau:
            K += 1
        return K


def _log_mneg(j0: int, pmf: np.ndarray, h: float, t: float) -> float:
    """log of an upper bound on sum_i pmf_i e^{-t (j0 + i) h}: what a convolution with ``pmf`` (>= 0)
    multiplies the weighted error norm of :func:`rerokit.bounds.pld.compose.weighted_roundoff` by
    (sum_{j >= k} e^{-t (l_j - l_k)} |(e * mu)_j| <= sum_i mu_i e^{-t l_i} x the norm of e). Each
    term's exponent is rounded within a few u of its magnitude; 1e-12 relative covers them (the moment
    sum is :func:`rerokit.bounds.pld.compose.moment_terms` at lam = -t h per label)."""
    if not np.any(pmf):
        return -math.inf
    v = float(moment_terms(j0 + np.arange(pmf.size, dtype=float), pmf, np.array([-t * h]))[0])
    return v + 1e-12 * (abs(v) + 1.0) + 1e-12


def _rebin_nearest(off_f: int, pmf_t: np.ndarray, r: int, h_f: float, t: float) -> tuple[int, np.ndarray]:
    """The coarse label round(i / r) (floor((i + r // 2) / r)) of a tilted fine statistic, in tilted
    terms: :func:`rerokit.bounds.pld.lowertail.rebin_stat` of the labels shifted by r // 2, whose
    factors e^{t (J h_c - (i + r // 2) h_f)} are put back by e^{t (r // 2) h_f}. Rounded to the
    nearest rather than down, so that the k jumps and K - k extra bulk steps of a slice, each
    re-labelled on its own, do not shift the slices' statistics apart by about k r / 2 fine labels
    (measured: 2-5 % of the lower end at q 1e-4). A function of the output, as the floor."""
    j0, out = rebin_stat(off_f + r // 2, pmf_t, r, h_f, t)
    return j0, out * math.exp(t * (r // 2) * h_f)


def _split(pt: np.ndarray, off: int, cut: int) -> tuple[int, float, float]:
    """(index of the first jump, bulk mass beta, jump mass pi) of a tilted step (both sums
    correctly rounded, math.fsum)."""
    i_c = min(max(cut - off, 1), pt.size - 1)
    b, j = pt[:i_c], pt[i_c:]
    beta, pi = math.fsum(b[b != 0].tolist()), math.fsum(j[j != 0].tolist())
    if not (beta > 0.0 and pi > 0.0):
        raise ValueError("the cut must leave mass on both sides")
    return i_c, beta, pi


# the moment parameters (per label) at which the slices' Chernoff windows are evaluated
_LAMS = 2.0 ** (np.arange(-32, 5) / 2.0)


class _SliceWindows:
    """Chernoff windows of the slices of one block: for any lam > 0 the mass of a composition above
    B is at most e^{-lam B} prod_i M_i(lam)^{T_i} (and below A alike, Markov's inequality), as in
    :func:`rerokit.bounds.pld.compose.chernoff_window` (the same rounding of the log moments, the
    same ceil/floor). For each slice the best lam of :data:`_LAMS` is located on the parts'
    coarse copies (:func:`rerokit.bounds.pld.compose.coarse_moment_copy`, evaluated once on the
    whole grid of lam), and the window is the exact bound at it and its two neighbours; the exact
    log moments are computed once per part and lam, and shared by the slices (evaluating every part
    on all of :data:`_LAMS` cost more than the slices' compositions: 10.6 of 47 ms at sigma 1.19,
    q 2.1e-5, T 69025, kappa 1e-8)."""

    def __init__(self, parts: Sequence[tuple[int, np.ndarray]], log_tau: float):
        self.log_tau = log_tau
        self.fine, self.c_up, self.c_dn, self.lo, self.hi = [], [], [], [], []
        self._exact: dict[tuple[int, float, int], float] = {}  # (part, sign, lam index) -> log moment
        for j0, pmf in parts:
            nz = np.flatnonzero(pmf)
            cl, cp = coarse_moment_copy(j0, pmf)
            self.c_up.append(moment_terms(cl, cp, _LAMS))
            self.c_dn.append(moment_terms(cl, cp, -_LAMS))
            self.fine.append(moment_support(j0, pmf, nz))  # (its nonzero masses found once)
            self.lo.append(j0 + int(nz[0]))
            self.hi.append(j0 + int(nz[-1]))

    def _exact_sum(self, counts: Sequence[int], idx: np.ndarray, sign: float) -> np.ndarray:
        """sum_i counts_i log M_i(sign lam) at lam = _LAMS[idx], each part's exact log moment
        (:func:`rerokit.bounds.pld.compose.moment_terms`) computed once per lam."""
        out = np.zeros(idx.size)
        for i, (c, (labels, pmf)) in enumerate(zip(counts, self.fine)):
            if not c:
                continue
            keys = [(i, sign, int(j)) for j in idx]
            missing = [k for k in keys if k not in self._exact]
            if missing:
                vals = moment_terms(labels, pmf, sign * _LAMS[[j for _, _, j in missing]])
                self._exact.update(zip(missing, vals.tolist()))
            out += c * np.array([self._exact[k] for k in keys])
        return out

    def window(self, counts: Sequence[int]) -> tuple[int, int]:
        """[A, B] of the composition with ``counts`` copies of each part."""
        c_up = sum(c * u for c, u in zip(counts, self.c_up))
        c_dn = sum(c * d for c, d in zip(counts, self.c_dn))
        with np.errstate(invalid="ignore"):
            b_c = np.ceil((c_up - self.log_tau) / _LAMS)
            a_c = np.floor((self.log_tau - c_dn) / _LAMS)
        n = _LAMS.size
        iu = int(np.argmin(np.where(np.isnan(b_c), np.inf, b_c)))
        id_ = int(np.argmax(np.where(np.isnan(a_c), -np.inf, a_c)))
        sel_u = np.arange(max(0, iu - 1), min(n, iu + 2))
        sel_d = np.arange(max(0, id_ - 1), min(n, id_ + 2))
        with np.errstate(invalid="ignore"):
            B = float(np.min(np.ceil((self._exact_sum(counts, sel_u, 1.0) - self.log_tau) / _LAMS[sel_u])))
            A = float(np.max(np.floor((self.log_tau - self._exact_sum(counts, sel_d, -1.0)) / _LAMS[sel_d])))
        if not (math.isfinite(A) and math.isfinite(B)):
            raise WindowTooWide("the Chernoff window of a slice is not finite")
        lo = sum(c * x for c, x in zip(counts, self.lo))
        hi = sum(c * x for c, x in zip(counts, self.hi))
        return max(int(A), lo), min(int(B), hi)


def _assemble(terms: Sequence[tuple[int, np.ndarray, float]], tops: Sequence[int]) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(lo, hi, sum of the slices' weighted pmfs on labels lo..hi-1, per-label sum of their weighted
    round-off bounds): a slice's bound counts at every label up to the top of its support ``top``
    (its errors sit at or below it; the weighted norm sums upwards from the label)."""
    lo = min(o for o, _, _ in terms)
    hi = max(o + p.size for o, p, _ in terms)
    out = np.zeros(hi - lo)
    wvec = np.zeros(hi - lo)
    for (o, p, we), top in zip(terms, tops):
        out[o - lo: o - lo + p.size] += p
        wvec[: max(0, min(top - lo + 1, hi - lo))] += we
    return lo, hi, out, wvec


def _jump_block(off: int, pt: np.ndarray, lm: float, rel: float, step_err: float, cut: int, m: int, count: int,
                r: int, h_f: float, t: float, kind: str, log_tau: float, K: int,
                precision: str = "double") -> tuple[TiltedPart, np.ndarray]:
    """m tilted steps (labels off.., grid h_f, tilt t) as one block on the grid r h_f, ``count``
    copies (module docstring), and its error bounds in the weighted norm of
    :func:`rerokit.bounds.pld.compose.weighted_roundoff` at rate t r h_f *per label* J: a bound on
    sum_{J' >= J} e^{-t (L_J' - L_J)} |computed - exact|_J' (``err`` of the part: the l1 bound). A
    slice's round-off and its main bulk's error sit at or below the top of its support (the sum of
    its parts' tops), so labels above it see only the tails (3 tau, omitted slices, the step's own
    error), which count everywhere. ``kind`` "pld" re-discretises by connect-the-dots, "stat" by
    the coarse label round(i / r) of a bucket statistic (:func:`_rebin_nearest`; a function of the
    output: the test stays a test of the true pair)."""
    rebin = rebin_pld if kind == "pld" else _rebin_nearest
    i_c, beta, pi = _split(pt, off, cut)
    b, j = pt[:i_c], pt[i_c:]
    h_c = r * h_f
    # a re-discretised mass's tilted weight grows by at most this (moved by < h_c), and so does the
    # weighted norm of an error re-discretised (a fine error at l_i >= L_J - h_c reaches labels >= J)
    grow = math.exp(abs(t) * h_c) * (1.0 + 1e-12)
    log_pi, log_beta = math.log(pi), math.log(beta)
    K = min(m, K)
    bh, jh = b / beta, j / pi
    j0_e, be = rebin(off, bh, r, h_f, t)  # one extra bulk step, re-discretised
    j0_j, jc = rebin(off + i_c, jh, r, h_f, t)  # one jump
    top_e, top_j = j0_e + int(np.flatnonzero(be)[-1]), j0_j + int(np.flatnonzero(jc)[-1])
    s_e, s_j = float(np.sum(be)) * (1.0 + be.size * _U), float(np.sum(jc)) * (1.0 + jc.size * _U)
    lm_e, lm_j = _log_mneg(j0_e, be, h_c, t), _log_mneg(j0_j, jc, h_c, t)
    tau3 = 3.0 * math.exp(log_tau)
    n_main = m - K
    if n_main > 0:
        cm = compose([(off, bh, n_main)], h_f, log_tau, precision=precision)
        j0_b, rb = rebin(cm.offset, cm.pmf, r, h_f, t)
        top_b = j0_b + rb.size - 1
        w_main = weighted_roundoff(cm, t * h_f) * grow  # in the main window (<= top_b)
        l1_main = (cm.roundoff + tau3) * grow
    terms, tops = [], []
    err = tail = log_w_err = 0.0
    wins = _SliceWindows([(j0_e, be), (j0_j, jc)] + ([(j0_b, rb)] if n_main > 0 else []), log_tau)
    for k in range(K + 1):
        lc, lc_err = _log_binom(m, k)
        log_w = lc + (m - k) * log_beta + k * log_pi
        log_w_err = max(log_w_err, lc_err + 2.0 * _U * ((m - k) * abs(log_beta) + k * abs(log_pi) + abs(log_w) + 2.0))
        parts = [(j0_e, be, K - k), (j0_j, jc, k)]
        if n_main > 0:
            parts.append((j0_b, rb, 1))
        window = wins.window([p[2] for p in parts])
        parts = [p for p in parts if p[2] > 0]
        w = math.exp(log_w) * (1.0 + 1e-12)
        c = compose(parts, h_c, log_tau, window=window, precision=precision)
        e = c.roundoff + tau3
        we = weighted_roundoff(c, t * h_c)
        top = c.offset + c.pmf.size - 1
        tl = tau3
        if n_main > 0:  # the main bulk's error, convolved with the slice's other parts
            e += l1_main * s_e ** (K - k) * s_j ** k * (1.0 + 1e-12)
            we += w_main * math.exp(min((K - k) * lm_e + k * lm_j, 700.0)) * (1.0 + 1e-12)
            tl += tau3 * grow * s_e ** (K - k) * s_j ** k * (1.0 + 1e-12)  # its tails: anywhere
            top = max(top, top_b + (K - k) * top_e + k * top_j)
        err += w * e
        tail += w * tl
        terms.append((c.offset, w * c.pmf, we * w))
        tops.append(top)
    lo, hi, out, wvec = _assemble(terms, tops)
    e_in = m * step_err
    rest = grow ** (K + 1) * e_in * math.exp(min(e_in, 700.0)) * (1.0 + 1e-9)
    err += rest + _omitted(m, log_pi, beta, grow, K)
    omit = _OmitBound(off, bh, off + i_c, jh, m, beta, pi, grow, h_f, h_c, t)
    with np.errstate(over="ignore"):
        rest = rest + np.exp(omit.log_at(np.arange(lo, hi), K)) * (1.0 + 1e-12)
    s = math.fsum(out.tolist())
    # relative errors per entry: the tilting's (m factors), the divisions by beta and pi (u each,
    # m factors), K + 1 re-discretised parts ((2 r + 16) u each), the weight's log, the sum over
    # the slices and the normalisation
    rel_b = m * rel + m * _U + (K + 1) * (2.0 * r + 16.0) * _U + math.expm1(log_w_err) + (K + 4) * _U
    part = TiltedPart(lo, out / s, count, m * lm + math.log(s), err / s * (1.0 + 1e-9), rel_b * 1.01)
    # (the running sum of at most K + 1 bounds: 1e-9 covers its rounding)
    return part, (wvec + tail + rest) / s * (1.0 + 1e-9)


def compose_blocks(parts: Sequence[tuple[TiltedPart, np.ndarray]], h: float, t: float,
                   log_tau: float = JUMP_LOG_TAU,
                   precision: str = "double") -> tuple[int, np.ndarray, float, float | np.ndarray, float]:
    """(offset, tilted pmf, log C, weighted error, relative error) of the composition of the blocks
    (each with its weighted error bounds per label, :func:`_jump_block`), the error in the weighted
    norm of :func:`rerokit.bounds.pld.compose.weighted_roundoff` at rate t h. One block of one copy
    is taken as it is (its bounds per label); else one bound for all labels: the composition's
    weighted round-off, 3 tau, and the blocks' errors: with a = computed, b = exact factors,
    a^{*n} - b^{*n} is a sum of n terms a^{*i} * (a - b) * b^{*(n-1-i)}, each bounded by the error's
    norm times the other factors' moments at -t (:func:`_log_mneg`; an exact factor's is at most the
    computed one's plus e^{-t l_min} times its l1 error)."""
    if len(parts) == 1 and parts[0][0].count == 1:
        p, we = parts[0]
        return p.offset, p.pmf, p.log_c, we, p.rel + 4.0 * _U * (abs(p.log_c) + 1.0)
    parts = [(p, float(np.max(we))) for p, we in parts]  # per label: the largest (labels below count above)
    c = compose([(p.offset, p.pmf, p.count) for p, _ in parts], h, log_tau, precision=precision)
    log_c = sum(p.count * p.log_c for p, _ in parts)
    log_g = []
    for p, _ in parts:
        lm_p = _log_mneg(p.offset, p.pmf, h, t)
        extra = -t * p.offset * h + math.log(p.err) if p.err > 0 else -math.inf  # the labels start at p.offset
        log_g.append(float(np.logaddexp(lm_p, extra)) + 1e-12 * (abs(lm_p) + 1.0))
    log_G = sum(p.count * g for (p, _), g in zip(parts, log_g))
    prop = sum(p.count * we * math.exp(min(log_G - g, 700.0)) for (p, we), g in zip(parts, log_g))
    werr = (weighted_roundoff(c, t * h) + 3.0 * math.exp(log_tau) + prop * (1.0 + 1e-9)) * (1.0 + 1e-12)
    rel = sum(p.count * p.rel for p, _ in parts) + 4.0 * _U * (abs(log_c) + 1.0)
    return c.offset, c.pmf, log_c, werr, rel


def jump_parts(off: int, sides: Sequence[tuple[np.ndarray, float]], T: int, h_f: float, r: int, cut: int,
               kind: str = "pld", log_tau: float = JUMP_LOG_TAU,
               margin: float | None = None, precision: str = "double") -> list[list[tuple[TiltedPart, np.ndarray]]]:
    """One step's T-fold composition, tilted, as blocks on the coarse grid r h_f (module docstring),
    for each of ``sides`` (pmf, tilt): the dominating pmf by t ("pld"), or the bucket statistic's
    P-masses by t and Q-masses by t + 1 ("stat"), which share the block size and the slices (the
    statistic of the test is defined by them).

    Args:
      off: the label of each pmf's first entry (grid h_f).
      sides: (untilted pmf, tilt) per side.
      T: the number of steps.
      h_f: the fine grid step.
      r: the coarse grid step over the fine one (an integer >= 1).
      cut: the first label of the jumps.
      kind: "pld" (connect-the-dots) or "stat" (coarse labels).
      log_tau: the windows' tail mass and the omitted slices' bound (natural log).
      margin: the omitted slices must weigh at most tau (:class:`_OmitBound`, per label; above
        it they are counted, only looser) up to each side's tilted mean (where the saddle point
        puts the threshold, Daniels 1954) plus ``margin`` (in loss; the statistic's labels sit
        elsewhere than the losses); None: everywhere (:func:`_slices`).

    Returns:
      per side, (:class:`rerokit.bounds.pld.lowertail.TiltedPart` block (grid r h_f), its weighted
      error bounds per label (:func:`_jump_block`)) per distinct block.
    """
    if kind not in ("pld", "stat"):
        raise ValueError(f"kind must be 'pld' or 'stat', got {kind!r}")
    if not (isinstance(r, (int, np.integer)) and r >= 1):
        raise ValueError(f"r must be an integer >= 1, got {r!r}")
    if not (isinstance(T, (int, np.integer)) and T >= 1):
        raise ValueError(f"T must be an integer >= 1, got {T!r}")
    tilted = []
    for pmf, t in sides:
        if not off < cut < off + np.asarray(pmf).size:
            raise ValueError(f"cut must be inside the pmf's labels, got {cut!r}")
        pt, lm, rel, e_t = tilt_sparse(off, np.asarray(pmf, dtype=float), h_f, t)
        tilted.append((pt, lm, rel, e_t, t) + _split(pt, off, cut))
    pi = max(x[-1] for x in tilted)
    nb = max(1, math.ceil(T * pi / _JUMPS_PER_BLOCK))
    m = block_size(T, -(-T // nb))
    n, rest = divmod(T, m)
    if n > 1 or rest:  # several blocks are composed with one bound for all labels: K for all of them
        margin = None
    out: list[list[tuple[TiltedPart, np.ndarray]]] = [[] for _ in sides]
    for mm, count in ((m, n), (rest, 1)):
        if not (mm and count):
            continue
        K = 0
        for pt, _, _, _, t, i_c, beta, pi_ in tilted:
            grow = math.exp(abs(t) * r * h_f) * (1.0 + 1e-12)
            if margin is None:
                K = max(K, _slices(mm, math.log(pi_), beta, grow, log_tau))
            else:
                omit = _OmitBound(off, pt[:i_c] / beta, off + i_c, pt[i_c:] / pi_, mm, beta, pi_, grow, h_f, r * h_f, t)
                mean = mm * float(np.sum(pt * (off + np.arange(pt.size)))) * h_f / float(np.sum(pt))
                K = max(K, omit.slices((mean + margin) / (r * h_f), log_tau))
        for dest, (pt, lm, rel, e_t, t, _, _, _) in zip(out, tilted):
            dest.append(_jump_block(off, pt, lm, rel, e_t, cut, mm, count, r, h_f, t, kind, log_tau, K, precision))
    return out


# the product set of the slices of several distinct steps (jump_parts_multi): more than this and the
# two-grid tilt declines (each slice is one coarse composition)
MAX_SLICES = 64
# ... the statistic's (P and Q share the slices; the Q side tilted by t + 1 has more jumps): beyond
# it the lower end is left trivial (never the upper end's choice: it must not depend on the lower end)
_MAX_STAT_SLICES = 256
# the main bulk's fine composition (jump_parts_multi): in "mixed" precision (pld.compose.compose),
# whose proven round-off is ~2^11 times smaller; in double it dominated the lower end at sigma 1 / 2,
# q 1e-4 / 2e-4, T 5e5 + 5e5, kappa 1e-20 (2.5 % wide against 0.11 %, 70 against 90 ms)
_MAIN_PRECISION = "mixed"


class _MultiOmitBound:
    """Per-label bounds on the weighted error (rate t) of leaving out the slices of several distinct
    steps i (m_i copies each) outside the product set {k_i <= K_i for all i}: the union over i of
    {k_i > K_i}, bounded by the sum over i (a union bound on non-negative masses). For each s in
    [0, t] and label J, as in :class:`_OmitBound`, the omitted mass costs at most e^{s L_J} times
    sum over the omitted slices of (slice weight) x (its re-discretised E[e^{-s L'}]); a slice
    (k_1, ..., k_S) is one bulk part (all steps' bulk steps) and sum_i k_i jumps, each moved by less
    than h_c (a factor g e^{s h_c}, g = ``grow``, per part: tilted mass and moment), so its term is
    at most g e^{s h_c} prod_i C(m_i, k_i) (beta_i Mb_i(-s))^{m_i - k_i} (pi_i g e^{s h_c} Mj_i(-s))^{k_i}
    (normalised bulk's and jump's moments on the fine grid). Summed over {k_i > K_i} and all the other
    k_j, the binomial theorem gives step j's full tilted factor (beta_j Mb_j(-s) + pi_j g e^{s h_c}
    Mj_j(-s))^{m_j} (every k_j, the dominating re-discretisation counted), and step i's tail is
    bounded as :class:`_OmitBound`'s: max(1, beta_i Mb_i(-s))^{m_i} sum_{k > K_i} x_i^k / k!,
    x_i = m_i pi_i g e^{s h_c} Mj_i(-s). Evaluated on the same few s, the least taken per label."""

    def __init__(self, steps: Sequence[tuple[int, np.ndarray, int, np.ndarray | None, int, float, float]], grow: float,
                 h_f: float, h_c: float, t: float):
        self.s = t * np.array([0.0, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 3.0 / 4, 1.0])
        self.h_c, log_g = h_c, math.log(grow)
        self.m, self.own, self.log_x, full = [], [], [], []
        for off, bh, off_j, jh, m, beta, pi in steps:
            lb = moment_terms(off + np.arange(bh.size, dtype=float), bh, -self.s * h_f)
            lb = lb + 1e-12 * (np.abs(lb) + 1.0)
            self.m.append(m)
            self.own.append(m * np.maximum(0.0, math.log(beta) + lb))
            if pi > 0.0:
                lj = moment_terms(off_j + np.arange(jh.size, dtype=float), jh, -self.s * h_f)
                lj = lj + 1e-12 * (np.abs(lj) + 1.0)
                self.log_x.append(math.log(m) + math.log(pi) + log_g + self.s * h_c + lj)
                # log(beta Mb + pi g e^{s h_c} Mj), its rounding (a few u absolute, times m) covered
                v = np.logaddexp(math.log(beta) + lb, math.log(pi) + log_g + self.s * h_c + lj)
            else:  # a step without jumps: every slice has k_i = 0, nothing of it is left out
                self.log_x.append(None)
                v = math.log(beta) + lb
            full.append(m * (v + 1e-12 * (np.abs(v) + 1.0)))
        total = np.sum(full, axis=0)
        # per step i: the other steps' full factors, the one bulk part's g e^{s h_c} and its own bulk
        self.base = [log_g + self.s * h_c + total - f + o for f, o in zip(full, self.own)]

    def _per_s(self, i: int, K: int) -> np.ndarray:
        """log of step i's term at every s (before the factor e^{s L_J}); -inf where K >= m_i."""
        if K >= self.m[i] or self.log_x[i] is None:
            return np.full(self.s.shape, -np.inf)
        ratio = np.exp(self.log_x[i]) / (K + 2)
        tail = np.full(ratio.shape, np.inf)
        ok = ratio < 1.0
        tail[ok] = (K + 1) * self.log_x[i][ok] - math.lgamma(K + 2) - np.log1p(-ratio[ok])
        return self.base[i] + tail

    def log_at(self, J: np.ndarray, Ks: Sequence[int]) -> np.ndarray:
        """log of the bound at the coarse labels J for the product set {k_i <= Ks[i]}."""
        J = np.asarray(J, dtype=float)
        with np.errstate(divide="ignore"):
            per_s = np.logaddexp.reduce(np.array([self._per_s(i, K) for i, K in enumerate(Ks)]), axis=0)
        out = np.min(self.s[:, None] * (J[None, :] * self.h_c) + per_s[:, None], axis=0)
        with np.errstate(invalid="ignore"):  # (-inf: nothing left out, kept as it is)
            return np.where(out > -np.inf, out + 1e-9 * np.abs(out) + 1e-12 * (len(Ks) + 1), out)

    def l1(self, Ks: Sequence[int]) -> float:
        """The bound on the omitted slices' total tilted mass (s = 0), rounded up."""
        with np.errstate(divide="ignore"):
            v = float(np.logaddexp.reduce([self._per_s(i, K)[0] for i, K in enumerate(Ks)]))
        return 0.0 if v == -math.inf else math.exp(v + 1e-9 * abs(v) + 1e-12 * (len(Ks) + 1))

    def slices(self, i: int, J_ref: float, log_tau: float) -> int:
        """The least K_i whose step-i term at the label J_ref is at most tau / S (S steps: their sum
        is then at most tau)."""
        lim = log_tau - math.log(len(self.m))
        K = 0
        while K < self.m[i]:
            v = float(np.min(self.s * (J_ref * self.h_c) + self._per_s(i, K)))
            if v == -math.inf or v + 1e-9 * abs(v) <= lim:
                break
            K += 1
        return K


def _split_multi(pt: np.ndarray, off: int, cut: int) -> tuple[int, float, float]:
    """:func:`_split` where the step has labels at or above the cut, else (pt.size, its mass, 0.0):
    a step without jumps (all of it bulk)."""
    if cut - off < pt.size:
        return _split(pt, off, cut)
    beta = math.fsum(pt[pt != 0].tolist())
    if not beta > 0.0:
        raise ValueError("a step must have mass")
    return pt.size, beta, 0.0


def _multi_block(steps: Sequence[tuple[int, np.ndarray, float, float, float, int]], Ks: Sequence[int], cut: int,
                 r: int, h_f: float, t: float, kind: str, log_tau: float,
                 precision: str = "double") -> tuple[TiltedPart, np.ndarray]:
    """Several distinct tilted steps (off_i, pmf_i, log M_i, rel_i, step error_i, m_i copies; labels
    off_i.., grid h_f, tilt t) as one block on the grid r h_f, with per-label error bounds as
    :func:`_jump_block`'s: the slices (k_1, ..., k_S), k_i <= K_i, weighted by prod_i C(m_i, k_i)
    beta_i^{m_i - k_i} pi_i^{k_i}, each composed on the coarse grid from one *main* bulk (all steps'
    m_i - K_i bulk steps composed once on the fine grid and re-discretised once), K_i - k_i extra
    bulk steps and k_i jumps of each step. The domination argument of the module docstring carries
    over unchanged: which steps jumped is a function of the output (so is the slice), the extra bulk
    steps are a fixed choice given it, and the joint split of the main bulk's sum preserves every
    output atom's P- and Q-mass whatever the other parts are. The omitted slices: the union bound
    of :class:`_MultiOmitBound`."""
    rebin = rebin_pld if kind == "pld" else _rebin_nearest
    h_c = r * h_f
    grow = math.exp(abs(t) * h_c) * (1.0 + 1e-12)
    tau3 = 3.0 * math.exp(log_tau)
    per, omit_in, main = [], [], []
    for (off, pt, _, _, _, m), K in zip(steps, Ks):
        i_c, beta, pi = _split_multi(pt, off, cut)
        if pi == 0.0:  # no jumps: all its steps in the main bulk (K_i = 0)
            if K != 0:
                raise ValueError("a step without labels at or above the cut has no slices k > 0")
            omit_in.append((off, pt / beta, off, None, m, beta, pi))
            main.append((off, pt / beta, m))
            per.append(dict(m=m, K=0, lb=math.log(beta), lp=0.0, binom=[(0.0, 0.0)], none=True))
            continue
        bh, jh = pt[:i_c] / beta, pt[i_c:] / pi
        j0_e, be = rebin(off, bh, r, h_f, t)
        j0_j, jc = rebin(off + i_c, jh, r, h_f, t)
        per.append(dict(m=m, K=K, lb=math.log(beta), lp=math.log(pi), e=(j0_e, be), j=(j0_j, jc),
                        top_e=j0_e + int(np.flatnonzero(be)[-1]), top_j=j0_j + int(np.flatnonzero(jc)[-1]),
                        s_e=float(np.sum(be)) * (1.0 + be.size * _U), s_j=float(np.sum(jc)) * (1.0 + jc.size * _U),
                        lm_e=_log_mneg(j0_e, be, h_c, t), lm_j=_log_mneg(j0_j, jc, h_c, t),
                        binom=[_log_binom(m, k) for k in range(K + 1)], none=False))
        omit_in.append((off, bh, off + i_c, jh, m, beta, pi))
        if m > K:
            main.append((off, bh, m - K))
    jumpy = [p for p in per if not p["none"]]
    win_parts = [x for p in jumpy for x in (p["e"], p["j"])]
    if main:
        cm = compose(main, h_f, log_tau, precision=_MAIN_PRECISION if precision == "double" else precision)
        j0_b, rb = rebin(cm.offset, cm.pmf, r, h_f, t)
        top_b = j0_b + rb.size - 1
        w_main = weighted_roundoff(cm, t * h_f) * grow
        l1_main = (cm.roundoff + tau3) * grow
        win_parts.append((j0_b, rb))
    wins = _SliceWindows(win_parts, log_tau)
    terms, tops = [], []
    err = tail = log_w_err = 0.0
    n_slices = 0
    for ks in itertools.product(*(range(K + 1) for K in Ks)):
        n_slices += 1
        log_w, absw, lc_err = 0.0, 0.0, 0.0
        for p, k in zip(per, ks):
            lc, e_c = p["binom"][k]
            log_w += lc + (p["m"] - k) * p["lb"] + k * p["lp"]
            absw += abs(lc) + (p["m"] - k) * abs(p["lb"]) + k * abs(p["lp"])
            lc_err += e_c
        # 3 roundings per step (two products, one sum) and the running sum, each <= u times a partial
        # sum of the absolute terms
        log_w_err = max(log_w_err, lc_err + 2.0 * _U * (3 * len(per) + 1) * (absw + 1.0))
        counts = [c for p, k in zip(per, ks) if not p["none"] for c in (p["K"] - k, k)] + ([1] if main else [])
        window = wins.window(counts)
        parts = [(j0, pmf, c) for (j0, pmf), c in zip(win_parts, counts) if c > 0]
        w = math.exp(log_w) * (1.0 + 1e-12)
        c = compose(parts, h_c, log_tau, window=window, precision=precision)
        e = c.roundoff + tau3
        we = weighted_roundoff(c, t * h_c)
        top = c.offset + c.pmf.size - 1
        tl = tau3
        if main:  # the main bulk's error, convolved with the slice's other parts
            s_o = math.prod(p["s_e"] ** (p["K"] - k) * p["s_j"] ** k for p, k in zip(per, ks) if not p["none"])
            lm_o = sum((p["K"] - k) * p["lm_e"] + k * p["lm_j"] for p, k in zip(per, ks) if not p["none"])
            e += l1_main * s_o * (1.0 + 1e-12)
            we += w_main * math.exp(min(lm_o, 700.0)) * (1.0 + 1e-12)
            tl += tau3 * grow * s_o * (1.0 + 1e-12)
            top = max(top, top_b + sum((p["K"] - k) * p["top_e"] + k * p["top_j"]
                                       for p, k in zip(per, ks) if not p["none"]))
        err += w * e
        tail += w * tl
        terms.append((c.offset, w * c.pmf, we * w))
        tops.append(top)
    lo, hi, out, wvec = _assemble(terms, tops)
    # the steps' own absolute errors: a product of N = sum m_i factors, each within e_i (l1) of
    # the exact one (masses <= 1): at most E e^E, E = sum m_i e_i; 1 + sum K_i parts re-discretised
    e_in = sum(m * e_t for _, _, _, _, e_t, m in steps)
    rest = grow ** (1 + sum(Ks)) * e_in * math.exp(min(e_in, 700.0)) * (1.0 + 1e-9)
    omit = _MultiOmitBound(omit_in, grow, h_f, h_c, t)
    err += rest + omit.l1(Ks)
    with np.errstate(over="ignore"):
        rest = rest + np.exp(omit.log_at(np.arange(lo, hi), Ks)) * (1.0 + 1e-12)
    s = math.fsum(out.tolist())
    m_tot = sum(m for *_, m in steps)
    rel_b = (sum(m * rel for _, _, _, rel, _, m in steps) + m_tot * _U + (1 + sum(Ks)) * (2.0 * r + 16.0) * _U
             + math.expm1(log_w_err) + (n_slices + 3) * _U)
    log_c = sum(m * lm for _, _, lm, _, _, m in steps) + math.log(s)
    part = TiltedPart(lo, out / s, 1, log_c, err / s * (1.0 + 1e-9), rel_b * 1.01)
    return part, (wvec + tail + rest) / s * (1.0 + 1e-9 + n_slices * _U)


def _multi_slices(tilted: Sequence[Sequence[tuple[int, np.ndarray, float, float, float, int]]], ts: Sequence[float],
                  h_f: float, r: int, cut: int, log_tau: float, margin: float | None) -> list[int]:
    """The K_i of :func:`jump_parts_multi` from the tilted steps of each side (off, pt, log M, rel,
    error, m): per side the least K_i whose step-i term of :class:`_MultiOmitBound` is at most
    tau / S at the side's tilted mean plus ``margin`` (None: its total mass, everywhere), the
    largest over the sides."""
    h_c = r * h_f
    S = len(tilted[0])
    Ks = [0] * S
    for row, t in zip(tilted, ts):
        grow = math.exp(abs(t) * h_c) * (1.0 + 1e-12)
        omit_in, mean = [], 0.0
        for off, pt, _, _, _, m in row:
            i_c, beta, pi = _split_multi(pt, off, cut)
            omit_in.append((off, pt[:i_c] / beta, off + i_c, pt[i_c:] / pi if pi > 0.0 else None, m, beta, pi))
            mean += m * float(np.sum(pt * (off + np.arange(pt.size)))) * h_f / float(np.sum(pt))
        omit = _MultiOmitBound(omit_in, grow, h_f, h_c, t)
        J_ref = math.inf if margin is None else (mean + margin) / h_c
        for i in range(S):
            if margin is None:  # everywhere: the total mass (s = 0)
                K = 0
                while K < omit.m[i] and not omit.l1([K if j == i else omit.m[j] for j in range(S)]) \
                        <= math.exp(log_tau) / S:
                    K += 1
            else:
                K = omit.slices(i, J_ref, log_tau)
            Ks[i] = max(Ks[i], K)
    return Ks


def multi_slice_count(steps: Sequence[tuple[int, np.ndarray, int]], t: float, h_f: float, r: int, cut: int,
                      log_tau: float = JUMP_LOG_TAU, margin: float | None = _REF_MARGIN) -> int:
    """The number of slices (prod_i (K_i + 1)) that :func:`jump_power` would compute for the
    dominating pmf of these steps ((label offset, pmf, copies) per distinct step) at tilt t (a
    choice of computation: :mod:`rerokit.bounds.pld.builder` declines above :data:`MAX_SLICES`)."""
    row = []
    for off, pmf, T in steps:
        pt, lm, rel, e_t = tilt_sparse(off, np.asarray(pmf, dtype=float), h_f, t)
        row.append((off, pt, lm, rel, e_t, int(T)))
    return math.prod(K + 1 for K in _multi_slices([row], [t], h_f, r, cut, log_tau, margin))


def jump_parts_multi(steps: Sequence[tuple[int, Sequence[np.ndarray], int]], ts: Sequence[float], h_f: float, r: int,
                     cut: int, kind: str = "pld", log_tau: float = JUMP_LOG_TAU, margin: float | None = _REF_MARGIN,
                     max_slices: int = MAX_SLICES, precision: str = "double") -> list[tuple[TiltedPart, np.ndarray]]:
    """Several distinct steps' composition, tilted, as ONE block on the coarse grid r h_f
    (:func:`_multi_block`) per side, with per-label error bounds (so that :func:`compose_blocks`
    keeps them); the sides (tilts ``ts``: the dominating pmf by t, or the statistic's P- and
    Q-masses by t and t + 1) share the slices. Each step's K_i is the least whose omitted slices
    (:class:`_MultiOmitBound`, step i's term) weigh at most tau / S up to each side's tilted mean
    plus ``margin`` (None: everywhere), the largest over the sides.

    Args:
      steps: (label offset, one pmf per side, copies) per distinct step (grid h_f).
      ts: the tilt of each side.
      h_f, r, cut, kind, log_tau: as :func:`jump_parts`.
      margin: as :func:`jump_parts`.
      max_slices: the most slices (prod_i (K_i + 1)) computed.

    Returns:
      per side, (block, its weighted error bounds per label).

    Raises:
      WindowTooWide: more than ``max_slices`` slices (the caller takes another path).
    """
    if kind not in ("pld", "stat"):
        raise ValueError(f"kind must be 'pld' or 'stat', got {kind!r}")
    if not (isinstance(r, (int, np.integer)) and r >= 1):
        raise ValueError(f"r must be an integer >= 1, got {r!r}")
    if not steps:
        raise ValueError("steps must not be empty")
    tilted = []  # per side, per step: (off, pt, log M, rel, error, m)
    for side, t in enumerate(ts):
        row = []
        for off, pmfs, T in steps:
            if not (isinstance(T, (int, np.integer)) and T >= 1):
                raise ValueError(f"T must be an integer >= 1, got {T!r}")
            pmf = np.asarray(pmfs[side], dtype=float)
            if not off < cut:
                raise ValueError(f"cut must be above every pmf's first label, got {cut!r}")
            pt, lm, rel, e_t = tilt_sparse(off, pmf, h_f, t)
            row.append((off, pt, lm, rel, e_t, int(T)))
        tilted.append(row)
    Ks = _multi_slices(tilted, ts, h_f, r, cut, log_tau, margin)
    if math.prod(K + 1 for K in Ks) > max_slices:
        raise WindowTooWide(f"{math.prod(K + 1 for K in Ks)} slices (K = {Ks}) exceed {max_slices}")
    return [_multi_block(row, Ks, cut, r, h_f, t, kind, log_tau, precision) for row, t in zip(tilted, ts)]


@dataclass(frozen=True)
class JumpTilt:
    """How :func:`jump_power_share` tilts (choices of computation only: every result is certified).

    Attributes:
      pull: the tilt used is :func:`rerokit.bounds.pld.tilt.pulled_tilt` of t by this many nats (0:
        t itself), or t where that one's upper end has too large an error term, in "mixed" precision
        where the double round-off calls for it (:func:`rerokit.bounds.pld.tilt.pulled_upper`); the
        statistic takes the same tilt and precision.
      log_tau: natural log of the windows' tail mass and of the omitted slices' bound (each counted
        in the error terms; a smaller one widens the windows a little and shrinks those terms).
      enough: the statistic (the lower end) is skipped where the upper end is at most this (in log:
        a certified lower end known to the caller, plus the width at which the bracket is final);
        -inf: never skipped.
    """

    pull: float = 0.0
    log_tau: float = JUMP_LOG_TAU
    enough: float = -math.inf


def jump_power(parts: Sequence[tuple[int, np.ndarray, int]], stat_p: Sequence[tuple[int, np.ndarray, int]] | None,
               stat_q: Sequence[tuple[int, np.ndarray, int]] | None, h_f: float, inf_mass: float, log_alpha: float,
               t: float, r: int, cut_loss: float, tilting: JumpTilt = JumpTilt()) -> tuple[float, float]:
    """Certified (log lower, log upper) of the power at level exp(log_alpha), by the two-grid tilt:
    :func:`jump_power_share` (same arguments) without the error term's share."""
    lo, up, _ = jump_power_share(parts, stat_p, stat_q, h_f, inf_mass, log_alpha, t, r, cut_loss, tilting)
    return lo, up


def jump_power_share(parts: Sequence[tuple[int, np.ndarray, int]], stat_p: Sequence[tuple[int, np.ndarray, int]] | None,
                     stat_q: Sequence[tuple[int, np.ndarray, int]] | None, h_f: float, inf_mass: float,
                     log_alpha: float, t: float, r: int, cut_loss: float,
                     tilting: JumpTilt = JumpTilt()) -> tuple[float, float, float]:
    """Certified (log lower, log upper) of the power at level exp(log_alpha), by the two-grid tilt
    (module docstring): as :func:`rerokit.bounds.pld.tilt.tilted_power` (same arguments, the same
    evaluation, :func:`rerokit.bounds.pld.tilt.tilted_upper` and
    :func:`rerokit.bounds.pld.tilt.tilted_lower`), with the compositions on the coarse grid r h_f.
    Several distinct steps are one block of product slices per side (:func:`jump_parts_multi`,
    per-label bounds kept); more than :data:`MAX_SLICES` slices raise WindowTooWide (the
    statistic's: more than 256, the lower end is then left at the level). The lower end's test is
    on the statistic whose main bulk part is round(sum of its steps' fine bucket labels / r) and
    whose other parts are round(label / r) each
    (:func:`_rebin_nearest`; a function of the output, the same for P and Q: :func:`jump_parts`
    gives them the same blocks and slices).

    Args:
      parts: (label offset, dominating pmf, count) per distinct step (REMOVE direction, grid h_f).
      stat_p: (label offset, bucket P-masses, count) per step, or None (no lower end).
      stat_q: (label offset, bucket Q-masses, count) per step.
      h_f: the fine grid step.
      inf_mass: the composed mass at +infinity.
      log_alpha: natural log of the level (<= 0).
      t: the tilt (> 0).
      r: the coarse grid step over the fine one (an integer >= 1).
      cut_loss: the loss (nats) from which an atom is a jump; the statistic's buckets from the same label.
      tilting: the pull of the tilt and the windows' tail mass (:class:`JumpTilt`).

    Returns:
      (log lower, log upper, the log share of the error term in the upper end kept:
      :func:`rerokit.bounds.pld.tilt.pulled_upper`, which reads the upper end only); log lower =
      log_alpha where no test fits or the statistic was skipped (``tilting.enough``).
    """
    if not t > 0.0:
        raise ValueError(f"t must be > 0, got {t!r}")
    pull, log_tau = tilting.pull, tilting.log_tau
    if not log_tau < 0.0:
        raise ValueError(f"tilting.log_tau must be < 0, got {log_tau!r}")
    if not cut_loss > 0.0:
        raise ValueError(f"cut_loss must be > 0, got {cut_loss!r}")
    cut = math.ceil(cut_loss / h_f)
    h_c = r * h_f
    t_pulled = pulled_tilt(parts, h_f, t, pull) if pull > 0.0 else t
    if len(parts) > 1:  # several distinct steps: one block of product slices per side (per-label bounds)
        def upper(x: float, prec: str) -> tuple[float, float]:
            (blk,) = jump_parts_multi([(off, [pmf], T) for off, pmf, T in parts], [x], h_f, r, cut, "pld", log_tau,
                                      precision=prec)
            off, pmf, c, err, rel = compose_blocks([blk], h_c, x, log_tau, prec)
            return tilted_upper_share(off, pmf, h_c, x, c, err, rel, inf_mass, log_alpha)

        log_up, t, prec, share = pulled_upper(upper, t, t_pulled)
        log_lo = log_alpha
        if stat_p is not None and stat_q is not None and log_up > tilting.enough:
            if [(o, T) for o, _, T in stat_p] != [(o, T) for o, _, T in stat_q]:
                raise ValueError("stat_p and stat_q must list the same steps")
            sides = [(o, [pp, pq], T) for (o, pp, T), (_, pq, _) in zip(stat_p, stat_q)]
            try:
                bp, bq = jump_parts_multi(sides, [t, t + 1.0], h_f, r, cut, "stat", log_tau,
                                          max_slices=_MAX_STAT_SLICES, precision=prec)
            except (WindowTooWide, ValueError):
                # the lower end only (too many slices, a cut without mass on one side): the upper
                # end's path is the schedule's and the level's choice, never the statistic's
                return min(log_alpha, log_up), log_up, share
            po, pp_, cp, ep, rp = compose_blocks([bp], h_c, t, log_tau, prec)
            qo, pq_, cq, eq, rq = compose_blocks([bq], h_c, t + 1.0, log_tau, prec)
            log_lo = tilted_lower(TiltedSide(po, pp_, cp, rp, ep), TiltedSide(qo, pq_, cq, rq, eq), h_c, t,
                                  log_alpha)[0]
        return min(log_lo, log_up), log_up, share
    # the omitted slices need to be negligible only up to about the threshold (jump_parts)
    margin = _REF_MARGIN

    def upper_one(x: float, prec: str) -> tuple[float, float]:
        blocks: list[tuple[TiltedPart, np.ndarray]] = []
        for off, pmf, T in parts:
            blocks += jump_parts(off, [(pmf, x)], T, h_f, r, cut, "pld", log_tau, margin, prec)[0]
        off, pmf, c, err, rel = compose_blocks(blocks, h_c, x, log_tau, prec)
        return tilted_upper_share(off, pmf, h_c, x, c, err, rel, inf_mass, log_alpha)

    log_up, t, prec, share = pulled_upper(upper_one, t, t_pulled)
    log_lo = log_alpha
    if stat_p is not None and stat_q is not None and log_up > tilting.enough:
        bp: list[tuple[TiltedPart, np.ndarray]] = []
        bq: list[tuple[TiltedPart, np.ndarray]] = []
        for (off, pp, T), (off_q, pq, T_q) in zip(stat_p, stat_q):
            if (off, T) != (off_q, T_q):
                raise ValueError("stat_p and stat_q must list the same steps")
            got = jump_parts(off, [(pp, t), (pq, t + 1.0)], T, h_f, r, cut, "stat", log_tau, margin, prec)
            bp += got[0]
            bq += got[1]
        po, pp_, cp, ep, rp = compose_blocks(bp, h_c, t, log_tau, prec)
        qo, pq_, cq, eq, rq = compose_blocks(bq, h_c, t + 1.0, log_tau, prec)
        log_lo = tilted_lower(TiltedSide(po, pp_, cp, rp, ep), TiltedSide(qo, pq_, cq, rq, eq), h_c, t, log_alpha)[0]
    return min(log_lo, log_up), log_up, share

