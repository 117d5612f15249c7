"""gamma near 1: the type-II error beta = 1 - gamma in relative precision, by tilting towards P's lower tail.

Where the ReRo gamma is close to 1 the target is the bracket of beta = 1 - gamma (issue 17: width
<= 1e-9). beta is the P-mass of the privacy loss below the Neyman-Pearson threshold l*, which sits
far in P's *lower* tail (Q(L > l*) = alpha is tiny, so l* is far below E_P[L]). The plain
composition carries absolute errors (round-off, window tails, mass defect) of 1e-10-1e-8 at
T = 1e6, and its grid step h costs a discretisation gap of order T h^2 times the density at l*.
This module removes both:

1. Exponential tilting (the Esscher transform; Esscher 1932, Daniels 1954) with a *negative*
   parameter t in (-1, 0), the mirror of :mod:`rerokit.bounds.pld.tilt`: each step's pmf is
   replaced by p(l) e^{t l} / M(t) before the FFT, and after it

       p(l) = e^{C - t l} p_t(l),   C = sum_i T_i log M_i(t).

   Since Q's masses are p(l) e^{-l}, the same composition is Q tilted by t + 1 > 0. An absolute
   error e of the tilted composition (round-off, proven as in :mod:`rerokit.bounds.pld.compose`;
   wrap-around and the mass outside the window, 3 tau) costs at most e^{C - t l_k} e in every sum
   over labels <= l_k of P-masses (t < 0: e^{-t l} increases with l) and in every sum over labels
   > l_k of Q-masses times e^{l_k} (t + 1 > 0), i.e. an error *relative* to beta when t centres
   the tilted distribution at l* (the saddle point: Psi(t) - (t+1) Psi'(t) = log alpha, as in
   :func:`rerokit.bounds.pld.tilt.saddle_tilt`; it only *chooses* t, every t in (-1, 0) is
   certified).

2. Two grids. The gap of a threshold test on the bucket statistic (and of the connect-the-dots
   chord) grows with the variance that the per-step rounding to the grid adds, about T h^2 / 12.
   The steps are discretised on a fine grid h_f, composed in blocks of m steps there (tilted), and
   each block is re-discretised onto the coarse grid h_c = r h_f: the block's dominating PLD by
   connect-the-dots (each atom's P- and Q-mass split onto the two neighbouring coarse atoms, both
   preserved: Blackwell dominance, Doroshenko et al. 2022), the block's bucket statistic by the
   coarse label floor(S_f / r) (a function of the output: still a test of the true pair). The
   added variance is then T h_f^2 / 12 + (T / m) h_c^2 / 12 instead of T h_c^2 / 12.

Bounds (t in (-1, 0), s = e^{l_k}, all in untilted masses of the composed pmfs):

* upper end of gamma (lower end of beta): gamma <= f(s) = s alpha + p_inf + sum_{l > l_k} p_l
  (1 - s e^{-l}) for every s (Neyman-Pearson duality, :mod:`rerokit.bounds.pld.discrete`), and
  with sum_l p_l + p_inf = 1,

      1 - gamma >= P(L <= l_k) + s Q(L > l_k) - s alpha,

  the mass at +infinity cancels; the stored step pmfs sum to 1 only up to rounding: their excess is
  taken from their lowest buckets (:func:`conserve_from_bottom`) and what is left of it (the mass
  defect, sum_i T_i |1 - sum of step i's masses|, ~1e-6 of the excess) is subtracted.
* lower end of gamma (upper end of beta): the threshold test S >= s on the bucket statistic with
  Q(S >= s) <= alpha (Q-sums tilted by t + 1, an upper bound with the error terms), randomised on
  the label s - 1 up to the level, has 1 - gamma <= P(S < s) - f P(S = s - 1) = (1 - f) P(S < s)
  + f P(S < s - 1) (P-sums: upper and lower bounds with the error terms). The stored P-masses
  are below the exact ones in the stochastic order (:mod:`rerokit.bounds.pld.step`) and short of
  1 by a few u; that shortfall is added to their lowest bucket (:func:`conserve_at_bottom`), after
  which every prefix sum of every composition dominates the exact one, so no mass defect enters
  (at T = 1e6 it was ~6e-10 of this end).
* the dominating step's own safe rounding: its split fractions c = (P - e^l Q) / (1 - e^{-h}) of
  each bucket carry the tails' proven errors divided by 1 - e^{-h} (:mod:`rerokit.bounds.pld.step`),
  so each fine step's split is raised by ~32 u x (tail) / h_f at every cut, a loss shift of ~2e-11
  per step on the finest grid (h_f ~ 6e-6) and ~2e-5 nats over T = 1e6: measured 1.1-1.4e-9 of the
  lower end of 1 - gamma at sigma 1, q 0.01 and sigma 20, q 0.3 (the rest of that end: 3.5-5.7e-10
  of discretisation, round-off and tilting error). It grows like 1 / h_f while the discretisation
  gap shrinks like h_f^2; a coarser fine grid for the dominating blocks alone (h_c / 20) measured
  1.2e-9 at best. With group_size 1 the fine steps therefore take their split fractions from the
  mixture's components (:func:`rerokit.bounds.pld.step.component_split`: P - e^l Q = q (R - e^a Q),
  the (1 - q) Q part cancels exactly), whose proven error is about q + (e^l - 1 + q) times the
  tails' instead of 2x: that end's gap fell from 1.21e-9 to 5.2e-10 (sigma 1, q 0.01) and from
  1.75e-9 to 1.08e-9 (sigma 20, q 0.3, where R ~ Q and the gain is only ~2.5x). Per bucket, the
  fraction may also come from a quadrature of the cell's integrand
  (:func:`rerokit.bounds.pld.step._quadrature_split`), whose proven error is relative to the
  fraction itself: at sigma 20, q 0.3 the split's rounding then costs ~1e-12 of that end (measured:
  scaling every dc by 0 or 2 moves it by < 1e-12) and it fell to 7.9e-10, the dominating split's
  discretisation on the fine grid. No longer held back by a 1 / h_f rounding, the finest grids
  (statistic in extended precision) take the dominating steps :data:`_PLD_FINER` times finer
  where they stay cheap (<= :data:`_PLD_FINER_POINTS` points): 3.7e-10 (bracket 1.44e-9 ->
  7.3e-10); sigma 1, q 0.01 (1e6-point steps, not refined) 7.47e-10 -> 7.26e-10.

The relative error of the tilting itself (rounding each exponent, ~T u (|log p| + |t l|)) is
carried as in :mod:`rerokit.bounds.pld.tilt`; a block's absolute error (its composition's proven
round-off, 3 tau) grows by at most e^{|t| h_c} in the re-discretisation (every mass moves by less
than h_c) and adds up over the coarse composition's factors.

Measured (sigma 1, q 0.01 and sigma 20, q 0.3, T = 1e6, kappa 1e-20 / 1e-30, against second-order
Lugannani-Rice references): the bracket of 1 - gamma is 5-8 % of it on a grid 4x finer than the
schedule's (r = 4, h_c = h), 1.5-1.7e-4 with r = 16, h_c = h / 4, 4e-6 with r = 32, h_c = h / 16
and the statistic's blocks in extended precision (5.2e-10 and 8.6e-10 at 1 - gamma = 1.35e-4 and
2.0e-4, against 9.6e-7 and 1.5e-6 on the 8x finer grid alone; with the steps' proven rounding
2.3e-9 and 3.0e-9, and now, the statistic conserved at the bottom and the finest grid r = 20,
h_c = h / 16, blocks of ~2048 steps, 1.43e-9 and 2.11e-9, the dominating split's rounding above;
with the component split 7.5e-10 and 1.44e-9);
:func:`rerokit.bounds.dpsgd.exact_power_many` tries them in that order, skips the middle one where
the first predicts it would not stop, and serves the levels of one call whose saddle points are
close (within 1.8 / sd in t, sd of the tilted composed loss: their errors grow by at most about 1.5
against their own tilts) from one set of compositions (:func:`near_one_beta` with several levels),
since only the tilt, never the level, enters the blocks and the coarse compositions.

Cost (T = 1e6). The finest grid composes, per segment, three blocks of m ~ block_per_r2 r^2 fine steps (the
dominating PLD's in double, the statistic's P- and Q-masses in extended precision; fine windows of
1.4-1.5e6 points) and three coarse compositions of T / m identical blocks (one power in the Fourier
domain each; ~1e6 points). The windows are Chernoff windows at tau 1e-13 / 1e-12 / 1e-13 (coarse /
dominating blocks / statistic's blocks), which against the other terms of the tilted l1 error
change the bracket by < 2e-12, and the blocks' windows use one exact moment per side
(:func:`_block_window`). Measured 2026-11-26 on the shared 2-core machine (load 1.3-1.8, each run
a fresh process, best of 3, against the previous version in the same run; ``rero_dpsgd(...,
comparisons=False)``): sigma 1, q 0.01, T 1e6, kappa 1e-20 1.44 s (was 2.46 s; riskcal 0.97 s),
bracket of 1 - gamma 5.21e-10 (was 5.23e-10); sigma 20, q 0.3, kappa 1e-30 1.16 s (was 1.71 s;
riskcal 3.0 s), 8.62e-10 (8.63e-10); the first row without the statistic (``bracket=False``)
0.69 s (0.95 s); twelve levels kappa 1e-30 ... 1e-8 on the first row in one call
(:func:`rerokit.bounds.dpsgd.exact_power_many`) 2.6 s (8.3 s; the three levels that reach the
finest grid in one group), twelve levels 1e-30 ... 1e-15 on the second row (all near 1) 3.2 s
(21 s, at load ~3; every bracket of 1 - gamma <= 8.6e-10, as before); calibrating sigma to
gamma = 0.9999 at q 0.01, T 1e6, kappa 1e-20 5.3 s (7.9 s; 12 evaluations). At load ~5 the first
two rows took 4.6-5.8 s and 2.8-3.5 s before. 2026-11-26 later (load 3.4-4.4, fresh processes, best
of 3, the previous version in the same run): the finest grid at r = 20 (fine steps of 574k points
instead of 918k) with the proven log-sums: sigma 1, q 0.01, kappa 1e-20 2.80-2.96 s (was
3.11-3.73 s; riskcal/rerokit 0.62-0.64, was 0.42-0.43), sigma 20, q 0.3, kappa 1e-30 1.47-2.85 s
(2.19-2.80 s; riskcal x2.6-3.3). Where the time goes (sigma 1, q 0.01): the fine step's
discretisation (:mod:`rerokit.bounds.pld.step`, ~30 %), the statistic's two blocks in extended
precision (~25 %), the coarse compositions and the proven running sums (~35 %; pld.logsum's
tight bound costs about 4 plain accumulations per sum).

Three cuts of that work (2026-11-26), each certified on its own (only the choice of work is heuristic):

* sparse fine steps: a step's grid spans ~5.9 nats at sigma 1, q 0.01 (574k points at h_f = h / 320)
  but nearly all of its mass lies within ~0.3 nats; the fine steps keep every label only where the
  pair's mass beyond a point exceeds :data:`_SPARSE_TAIL`, every 2^i-th where it is below
  :data:`_SPARSE_TAIL` 4^-i (:func:`rerokit.bounds.pld.step.tail_labels`: the same construction on
  wider cells, 45k points there); the tilt, the blocks' windows and the mass sums read the non-zero
  entries only. The bracket moved by < 1 % (7.262e-10 -> 7.267e-10), the step's CPU time 10x down.
* super-blocks (:func:`_top_blocks`): on the finest grids the T / m blocks are composed m2 at a time
  and re-discretised (again connect the dots, or the coarse label of the statistic) onto a grid
  :data:`_TOP_RATIO` = 4 times coarser, m2 the least count whose added variance stays within
  :data:`_TOP_VAR` (5 %) of the discretisation's; the schedule's three compositions and the running
  sums of :func:`_tilted_betas` then have 4x smaller windows (245k points instead of 980k).
* the statistic's extended blocks take the largest divisor block size in [m/2, m] whose window needs
  a smaller FFT (:func:`_smaller_fft_block`: 3 * 2^18 points instead of 2^20 at T = 1e6).

Measured (2026-11-26, load 4.5-7 on the shared 2-core machine, fresh processes alternating with the
previous version, ``rero_dpsgd(..., comparisons=False)``, best of 3; CPU time in brackets, the wall
time being up to 2.5x the CPU time at that load): sigma 1, q 0.01, T 1e6, kappa 1e-20 1.53 s
(0.75 s CPU) against 3.07 s (1.50 s) before and riskcal's ``get_beta_for_dpsgd`` 2.23 s (1.12 s),
bracket of 1 - gamma 7.86e-10 (was 7.26e-10); sigma 20, q 0.3, kappa 1e-30 1.61 s (0.81 s) against
2.28 s (1.09 s), 7.92e-10 (was 7.32e-10). The finest grid alone at sigma 1, q 0.01: 0.70 s CPU
against 1.26 s, now about 60 % the statistic's two extended blocks.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from rerokit.bounds.pld.compose import MAX_FFT, WindowTooWide, compose, fft_size
from rerokit.bounds.pld.logsum import prefix_logsumexp, suffix_logsumexp
from rerokit.bounds.pld.normal import logsumexp_rows
from rerokit.bounds.pld.step import StepTooWide, dpsgd_step_pld, loss_range
from rerokit.bounds.pld.tilt import bisect_saddle, log_moments, saddle_gap, tilt_pmf

__all__ = ["TiltedPart", "lower_tilt", "tilt_spread", "tilted_beta", "near_one_beta", "NearOneGrid", "conserve_from_bottom",
           "conserve_at_bottom", "clear_step_cache", "rebin_pld", "rebin_stat", "tilt_sparse", "block_size"]

_LOG_TAU = math.log(1e-17)
_U = float(np.finfo(float).eps)
# defaults of near_one_beta: the fine grid is the coarse one divided by _RATIO (r); blocks of about
# _BLOCK_PER_R2 r^2 steps
_RATIO = 32
_BLOCK_PER_R2 = 2.0
# one fine step's grid points at most; its top tail (sent to +infinity, which costs the lower end of
# 1 - gamma about the share of paths that meet it) at most this log mass over all steps
_MAX_STEP = 1 << 21  # was 2^20: sigma 0.545, q 4.2e-3 needs ~1.5e6 points on the last grid (570 MB in all)
_MAX_TOP_LOG = math.log(1e-10)
# near_one_beta's windows (tilted mass outside each side, 3 tau in the tilted l1 error with the
# wrap-around): the coarse compositions', the dominating PLD's blocks' and the statistic's blocks'.
# Against the other errors of the tilted l1 at T = 1e6 (the dominating blocks' double round-off,
# ~1e-10 per block, 5e-8 in all; the statistic's extended one, ~5e-14 per block, plus ~2e-11 of the
# coarse compositions), the tails then add 3e-13, 1.5e-9 and 1.5e-10 (500 blocks); measured, the
# bracket of 1 - gamma moves by < 2e-12 while the windows shrink by 12-13 % (the FFT sizes from
# 2^21 to 3 * 2^19 for the blocks, from 3 * 2^19 to 2^20 for the coarse compositions).
_COARSE_LOG_TAU = math.log(1e-13)
_BLOCK_LOG_TAU = math.log(1e-12)
_STAT_BLOCK_LOG_TAU = math.log(1e-13)
# the tilted steps' entries with |log p| above this carry their exponent's rounding as an absolute
# error (rerokit.bounds.pld.tilt.tilt_pmf): the safe rounding leaves masses near the underflow
# threshold in the far tails, whose |log p| ~ 700 made the relative error of the whole dominating
# step 10x larger (6.6e-7 instead of 6e-8 of 1 - gamma at T = 1e6, 1.2e-10 of the bracket)
_TILT_CAP = 80.0
# which of the statistic's blocks (P-masses "p", Q-masses "q") take block_precision
_STAT_EXTENDED = ("p", "q")
# on the finest grids (block_precision "extended") the dominating PLD's fine grid is this many times
# finer than the statistic's where its steps have at most _PLD_FINER_POINTS points (their split's
# proven rounding, now relative to each fraction (rerokit.bounds.pld.step._quadrature_split), no
# longer grows like 1 / h_f, while the discretisation gap shrinks like h_f^2; wider steps would
# cost up to 2x the call for a bracket already within the target)
_PLD_FINER = 2
_PLD_FINER_POINTS = 1 << 18
# the fine steps on sparse grids (rerokit.bounds.pld.step.tail_labels): every label where the mass
# beyond a point exceeds this, every 2^i-th where it is below this times 4^-i
_SPARSE_TAIL = 1e-4
# the finest grids (block_precision "extended") compose the schedule on a grid this many times
# coarser than the blocks' coarse grid, from super-blocks whose re-discretisation adds at most
# _TOP_VAR of the discretisation's variance (_top_blocks)
_TOP_RATIO = 4
_TOP_VAR = 0.05


@dataclass(frozen=True)
class TiltedPart:
    """One factor of a tilted composition, ``count`` copies.

    Untilted mass at label j: exp(log_c - t j h) pmf[j], up to the errors: ``err`` bounds the l1
    distance of ``pmf`` to the exact tilted masses, ``rel`` the relative error of each entry (both
    per copy).
    """

    offset: int
    pmf: np.ndarray
    count: int
    log_c: float
    err: float = 0.0
    rel: float = 0.0


def _mass_gap(pmf: np.ndarray, inf: float) -> float:
    """|1 - (sum of the stored masses + inf)| (math.fsum: correctly rounded)."""
    return abs(math.fsum(itertools.chain(_nonzero(pmf).tolist(), (float(inf), -1.0))))


def _nonzero(pmf: np.ndarray) -> np.ndarray:
    """The non-zero entries (a sparse step's pmf is mostly zeros, which add nothing to a sum)."""
    pmf = np.asarray(pmf, dtype=float)
    return pmf[pmf != 0.0]


def _defect(pmf: np.ndarray, inf: float, count: int) -> float:
    """count |1 - (sum of the stored masses + inf)|, rounded up; as
    :mod:`rerokit.bounds.pld.builder` carries it."""
    return count * _mass_gap(pmf, inf) * (1.0 + 1e-9) + 1e-300


def conserve_from_bottom(pmf: np.ndarray, inf: float) -> np.ndarray:
    """A dominating step pmf (stored masses + ``inf`` at +infinity, total 1 + e with e >= 0, every
    suffix sum >= the true one: :mod:`rerokit.bounds.pld.step`) with the excess e taken from its
    lowest buckets: suffix sums min(S_m, 1), still >= the true ones (which are <= 1), total 1 up to
    the rounding of the touched buckets (kept upwards). The upper end of gamma then carries no
    mass defect, which at T = 1e6 steps of ~5 u each would cost ~5e-10 of 1 - gamma."""
    pmf = np.asarray(pmf, dtype=float)
    excess = math.fsum(_nonzero(pmf).tolist() + [float(inf), -1.0])
    if not excess > 0.0:
        return pmf
    # slightly less than the excess, and the mass below each bucket rounded up (the cumsum errs by
    # < n u relative): never more is taken than min(S_m, 1) allows; what is left over (~1e-6 e) is
    # the recomputed mass defect, carried as before
    below = np.concatenate(([0.0], np.cumsum(pmf)[:-1])) * (1.0 + 1e-9)
    take = np.clip(excess * (1.0 - 1e-6) - below, 0.0, pmf)
    out = pmf - take
    touched = take > 0
    out[touched] = np.nextafter(out[touched], np.inf)  # the subtraction rounded upwards
    return out


def conserve_at_bottom(pmf: np.ndarray) -> np.ndarray:
    """A statistic's P-masses stored below the exact ones in the stochastic order (every suffix sum,
    the mass of S >= m, including the total, <= the exact one: :mod:`rerokit.bounds.pld.step`'s
    flow down) with the missing mass 1 - total (rounded up) added to the lowest bucket.

    Every prefix sum (the mass of S < m, m >= 1) is then >= the exact one: it is the new total
    (>= 1, the exact total) minus the stored suffix sum at m (<= the exact one). Non-negative
    measures whose every prefix sum dominates keep that order under convolution (E[g(X + Y)] is
    non-decreasing in each law for non-increasing g >= 0, the order's test functions, and
    x -> E[g(x + Y)] is again non-increasing), so the composed statistic's P(S < s) is an upper
    bound on the exact one for every s with no mass-defect term: at T = 1e6 steps of ~5 u each
    that term cost ~6e-10 of the upper end of 1 - gamma (the type-II error of the test S >= s is a
    non-negative combination of such prefix sums, randomised or not)."""
    pmf = np.asarray(pmf, dtype=float)
    missing = -math.fsum(_nonzero(pmf).tolist() + [-1.0])  # 1 - total, correctly rounded (relative u/2)
    if not missing > 0.0 or pmf.size == 0:
        return pmf
    out = pmf.copy()
    out[0] = np.nextafter(out[0] + missing * (1.0 + 4.0 * _U), np.inf)  # the sum rounded up
    return out


def lower_tilt(parts: Sequence[tuple[int, np.ndarray, int]], h: float, log_alpha: float) -> float | None:
    """The tilt t in (-1, 0) with Psi(t) - (t + 1) Psi'(t) = log alpha, or None if the threshold is
    not in P's lower tail (Psi(0) - Psi'(0) = -E_P[L] >= log alpha)."""

    if saddle_gap(parts, h, 0.0) >= log_alpha:
        return None
    # g decreases on (-1, 0]: g(-1) = log Q-mass ~ 0 > log alpha
    return bisect_saddle(parts, h, log_alpha, -1.0 + 1e-9, 0.0, 1e-7, 0.0, 50)


def tilt_spread(parts: Sequence[tuple[int, np.ndarray, int]], h: float, t: float) -> float:
    """The standard deviation sqrt(Psi''(t)) of the composed loss tilted by t (a central difference
    of Psi'): a level whose saddle point is t' sits about (t' - t) Psi'' from the tilted mean, so
    its errors are magnified by about exp((t' - t)^2 Psi'' / 2) against its own tilt."""
    d = 1e-4
    lo, hi = max(t - d, -1.0 + 1e-9), min(t + d, -1e-9)
    return math.sqrt(max((log_moments(parts, h, hi)[1] - log_moments(parts, h, lo)[1]) / (hi - lo), 1e-300))


def _prefix_lse(a: np.ndarray, side: int) -> np.ndarray:
    """s[k] = log sum_{j <= k} e^{a_j}, moved by its proven rounding bound
    (:func:`rerokit.bounds.pld.logsum.prefix_logsumexp`) up (``side`` +1) or down (-1)."""
    s, err = prefix_logsumexp(a)
    return s + side * err


def _suffix_lse(a: np.ndarray, side: int) -> np.ndarray:
    """s[k] = log sum_{j >= k} e^{a_j} (length n + 1, s[n] = -inf), moved by its proven rounding
    bound (:func:`rerokit.bounds.pld.logsum.suffix_logsumexp`) up (+1) or down (-1)."""
    s, err = suffix_logsumexp(a)
    return s + side * err


def _compose_tilted(parts: Sequence[TiltedPart], h: float, precision: str, log_tau: float = _LOG_TAU):
    """(offset, pmf, log C, absolute error, relative error) of the composition (window: tilted
    mass below tau = e^log_tau outside on each side, 3 tau in the error with the wrap-around)."""
    c = compose([(p.offset, p.pmf, p.count) for p in parts], h, log_tau, precision=precision)
    log_c = sum(p.count * p.log_c for p in parts)
    # factors a_i (computed, l1 norm 1) and b_i (exact) with |a_i - b_i|_1 <= e_i: the convolutions
    # differ by at most sum_i e_i prod_{j != i} (1 + e_j) <= E e^E in l1, E = sum_i e_i
    e_in = sum(p.count * p.err for p in parts)
    err = c.roundoff + 3.0 * math.exp(log_tau) + e_in * math.exp(min(e_in, 700.0)) * (1.0 + 1e-9)
    rel = sum(p.count * p.rel for p in parts) + 4.0 * _U * (abs(log_c) + 1.0)
    return c.offset, c.pmf, log_c, err, rel


def tilted_beta(pld_parts: Sequence[TiltedPart], stat_p: Sequence[TiltedPart] | None,
                stat_q: Sequence[TiltedPart] | None, h: float, t: float, log_alpha: float,
                defect: float = 0.0, defect_stat: float = 0.0,
                precision: str = "double") -> tuple[float, float]:
    """Certified (lower, upper) of beta = 1 - gamma at level exp(log_alpha) (module docstring).

    Args:
      pld_parts: the tilted (by t) dominating REMOVE pmfs, on the grid h.
      stat_p: the tilted (by t) bucket statistic's P-masses, or None (upper end 1).
      stat_q: the tilted (by t + 1) statistic's Q-masses.
      h: grid step.
      t: the tilt, in (-1, 0).
      log_alpha: natural log of the level.
      defect: mass defect of the stored dominating step pmfs (sum_i T_i |1 - mass_i|).
      defect_stat: the same for the statistic's P-masses (0 once they are conserved at the
        bottom, :func:`conserve_at_bottom`).
      precision: the FFT arithmetic (:func:`rerokit.bounds.pld.compose.compose`).

    Returns:
      (lower, upper) bounds on 1 - gamma, lower >= 0 and upper <= 1.

    Raises:
      WindowTooWide: a composed window, or the statistic's P and Q windows together, exceed
        :data:`rerokit.bounds.pld.compose.MAX_FFT` (twice it for the pair).
    """
    return _tilted_betas(pld_parts, stat_p, stat_q, h, t, [log_alpha], defect, defect_stat, precision)[0]


def _tilted_betas(pld_parts: Sequence[TiltedPart], stat_p: Sequence[TiltedPart] | None,
                 stat_q: Sequence[TiltedPart] | None, h: float, t: float, log_alphas: Sequence[float],
                 defect: float = 0.0, defect_stat: float = 0.0,
                 precision: str = "double", log_tau: float = _LOG_TAU, level_shift: float = 0.0) -> list[tuple[float, float]]:
    """:func:`tilted_beta` at several levels from one set of compositions (every t in (-1, 0) is
    certified at every level; t near a level's saddle point makes its bracket relative)."""
    if not -1.0 < t < 0.0:
        raise ValueError(f"the lower-tail tilt must be in (-1, 0), got {t!r}")
    off, pmf, c, err, rel = _compose_tilted(pld_parts, h, precision, log_tau)
    l = (off + np.arange(pmf.size)) * h
    n = pmf.size
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logp = np.log(pmf) - t * l + c
        # a lower end: both running sums rounded down by their proven bounds (pld.logsum)
        p_le = np.exp(_prefix_lse(logp, -1))
        sq_gt = np.exp(l + _suffix_lse(logp - l, -1)[1:])
        e_k = np.exp(c - t * l + math.log(err))
    # relative errors: tilting, untilting (u (|log p_t| + |t l| + |C|)) and the final exp
    r = rel + 4.0 * _U * (float(np.max(np.abs(t * l))) + abs(c) + 800.0)
    with np.errstate(invalid="ignore"):
        base = (p_le + sq_gt) * (1.0 - 1.01 * r)
    e_k = e_k * (1.0 + 1e-9)
    lowers = []
    for log_alpha in log_alphas:
        with np.errstate(over="ignore", invalid="ignore"):
            # the steps' loss shift: the dominating PLD's bound on gamma read at level alpha e^shift
            cand = base - np.exp(l + (log_alpha + level_shift)) * (1.0 + 4.0 * _U) - e_k
        cand = np.where(np.isfinite(cand), cand, -np.inf)
        lowers.append(max(0.0, float(np.max(cand)) - defect * (1.0 + 1e-9)) if n else 0.0)
    uppers = [1.0] * len(lowers)
    if stat_p is not None and stat_q is not None:
        offp, pp, cp, errp, relp = _compose_tilted(stat_p, h, precision, log_tau)
        offq, pq, cq, errq, relq = _compose_tilted(stat_q, h, precision, log_tau)
        span = max(offp + pp.size, offq + pq.size) + 1 - min(offp, offq)
        if span > 2 * MAX_FFT:  # P's and Q's windows far apart (a near-noiseless step): 37 GiB of labels
            raise WindowTooWide(f"the statistic's P and Q windows span {span} labels (max {2 * MAX_FFT})")
        s_all = np.arange(min(offp, offq), max(offp + pp.size, offq + pq.size) + 1)
        lq = (offq + np.arange(pq.size)) * h
        lp = (offp + np.arange(pp.size)) * h
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            logq = np.log(pq) - (t + 1.0) * lq + cq
            logpp = np.log(pp) - t * lp + cp
            # the level's Q-sums and the type-II error's P-sums both rounded up (pld.logsum)
            q_suf = _suffix_lse(logq, +1)
            p_pre = np.concatenate(([-np.inf], _prefix_lse(logpp, +1)))  # p_pre[i] = log sum_{j < i}
            iq = np.clip(s_all - offq, 0, pq.size)
            ip = np.clip(s_all - offp, 0, pp.size)
            rq = relq + 4.0 * _U * (float(np.max(np.abs((t + 1.0) * s_all * h))) + abs(cq) + 800.0)
            rp = relp + 4.0 * _U * (float(np.max(np.abs(t * s_all * h))) + abs(cp) + 800.0)
            q_up = (np.exp(q_suf[iq]) * (1.0 + 1.01 * rq)
                    + np.exp(cq - (t + 1.0) * s_all * h + math.log(errq)) * (1.0 + 1e-9))
            p_up = (np.exp(p_pre[ip]) * (1.0 + 1.01 * rp)
                    + np.exp(cp - t * (s_all - 1) * h + math.log(errp)) * (1.0 + 1e-9) + defect_stat * (1.0 + 1e-9))
        for a_i, log_alpha in enumerate(log_alphas):
            alpha = math.exp(log_alpha) * (1.0 - 4.0 * _U)
            ok = np.nonzero(q_up <= alpha)[0]
            if not ok.size:
                continue
            i = int(ok[0])
            upper = float(p_up[i])
            if i > 0:  # randomised on the label below: rejected with probability f
                j = int(s_all[i - 1])
                with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                    qb = (float(pq[j - offq]) * (1.0 + 1.01 * rq) if offq <= j < offq + pq.size else 0.0) + errq
                    qb_up = math.exp(cq - (t + 1.0) * j * h) * qb * (1.0 + 1e-9)
                    pb = (float(pp[j - offp]) * (1.0 - 1.01 * rp) if offp <= j < offp + pp.size else 0.0) - errp
                    pb_lo = math.exp(cp - t * j * h) * pb * (1.0 - 1e-9) if pb > 0 else 0.0
                f = min(1.0, (alpha - float(q_up[i])) / qb_up) if qb_up > 0 else 0.0
                if f > 0 and pb_lo > 0:
                    upper -= f * pb_lo
            uppers[a_i] = min(1.0, upper)
    return [(lo, max(lo, up)) for lo, up in zip(lowers, uppers)]


# --------------------------------------------------------------------------- two grids


def _by_column(off_f: int, pmf_t: np.ndarray, r: int) -> tuple[int, np.ndarray]:
    """(J0, M): the fine labels off_f.. laid out as rows J0, J0 + 1, ... of r columns (fine label
    J r + c at row J - J0, column c; zeros outside the pmf), so that a factor that depends only on
    the position c within a coarse cell is one matrix-vector product."""
    j0 = off_f // r
    lead = off_f - j0 * r
    rows = -(-(lead + pmf_t.size) // r)
    mat = np.zeros(rows * r)
    mat[lead: lead + pmf_t.size] = pmf_t
    return j0, mat.reshape(rows, r)


def rebin_pld(off_f: int, pmf_t: np.ndarray, r: int, h_f: float, t: float) -> tuple[int, np.ndarray]:
    """Connect-the-dots of a tilted fine PLD (grid h_f) onto the grid h_c = r h_f, in tilted terms:
    the atom at l = i h_f (J h_c <= l < (J+1) h_c, a = l - J h_c) sends the P-mass fraction
    w = (1 - e^{-a}) / (1 - e^{-h_c}) to J + 1 and 1 - w to J (both P and Q masses preserved), and
    a tilted mass moved from l to l' is multiplied by e^{t (l' - l)}. The factors depend on a only
    (the column of :func:`_by_column`): each coarse mass a sum of r products, as a bincount."""
    h_c = r * h_f
    a = np.arange(r) * h_f
    w = -np.expm1(-a) / -math.expm1(-h_c)
    j0, mat = _by_column(off_f, pmf_t, r)
    out = np.zeros(mat.shape[0] + 1)
    out[:-1] += mat @ ((1.0 - w) * np.exp(-t * a))
    out[1:] += mat @ (w * np.exp(t * (h_c - a)))
    return j0, out


def rebin_stat(off_f: int, pmf_t: np.ndarray, r: int, h_f: float, t: float) -> tuple[int, np.ndarray]:
    """The coarse label floor(i / r) of a tilted fine statistic, in tilted terms (untilted by the
    coarse value J h_c): masses multiplied by e^{t (J h_c - i h_f)} (by column, :func:`_by_column`)."""
    j0, mat = _by_column(off_f, pmf_t, r)
    return j0, mat @ np.exp(-t * np.arange(r) * h_f)


def tilt_sparse(off: int, pmf: np.ndarray, h: float, t: float) -> tuple[np.ndarray, float, float, float]:
    """:func:`rerokit.bounds.pld.tilt.tilt_pmf` (cap :data:`_TILT_CAP`) of a step pmf, on its
    non-zero entries only where most are zero (a sparse step, :func:`rerokit.bounds.pld.step.tail_labels`):
    a zero mass tilts to zero exactly and adds nothing to M(t) (its e^-700 floor in the log-sum is
    only a rounding allowance for non-zero terms)."""
    nz = np.flatnonzero(pmf)
    if 2 * nz.size > pmf.size:
        return tilt_pmf(off, pmf, h, t, _TILT_CAP)
    pt, lm, rel, e_t = tilt_pmf(off, pmf[nz], h, t, _TILT_CAP, labels=off + nz)
    out = np.zeros(pmf.size)
    out[nz] = pt
    return out, lm, rel, e_t


def _block_window(off: int, pmf: np.ndarray, m: int, log_tau: float) -> tuple[int, int]:
    """Chernoff window [A, B] of the m-fold composition of ``pmf`` (labels off..): for any lam > 0
    the composed mass above B is at most e^{-lam B} M(lam)^m and below A at most e^{lam A} M(-lam)^m
    (M(lam) = sum_j p_j e^{lam j}, any non-negative masses), so both are <= tau = e^log_tau with
    B = ceil((m log M(lam) - log tau) / lam) (and A alike), plus one label for the rounding of the
    log-sum. As :func:`rerokit.bounds.pld.compose.chernoff_window`, but lam is chosen on a copy
    coarsened to ~512 points over a 2^(1/4)-spaced grid and the exact moment is evaluated at that lam
    only (twice over the pmf instead of a dozen: the fine steps have up to 1e6 points)."""
    n = pmf.size
    nz = np.nonzero(pmf)[0]
    lo_sup, hi_sup = m * (off + int(nz[0])), m * (off + int(nz[-1]))
    # the moments over the non-zero entries only (the same sums: a sparse step is mostly zeros)
    p_nz = pmf[nz]
    j = nz.astype(float)  # labels relative to off
    tot = float(np.sum(p_nz))
    mean = float(np.sum(p_nz * j)) / tot
    var = m * float(np.sum(p_nz * (j - mean) ** 2)) / tot
    b = max(1, n // 512)
    nb = -(-n // b)
    pad = np.zeros(nb * b)
    pad[:n] = pmf
    with np.errstate(divide="ignore"):
        lw_c = np.log(pad.reshape(nb, b).sum(axis=1))
        logp = np.log(p_nz)
    j_c = b * np.arange(nb, dtype=float) + 0.5 * (b - 1)
    lam0 = math.sqrt(2.0 * abs(log_tau) / var) if var > 0 else 1.0
    lams = lam0 * 2.0 ** (np.arange(-16, 25) / 4.0)
    ends = []
    for sign in (1.0, -1.0):
        lse_c = logsumexp_rows(lw_c[None, :] + sign * lams[:, None] * j_c[None, :])
        lam = float(lams[int(np.argmin((m * lse_c - log_tau) / lams))])
        lse = float(logsumexp_rows((logp + sign * lam * j)[None, :])[0])
        ends.append((m * lse - log_tau) / lam)
    if not all(math.isfinite(e) for e in ends):
        raise WindowTooWide("the Chernoff window of a block is not finite")
    B = m * off + math.ceil(ends[0]) + 1
    A = m * off + math.floor(-ends[1]) - 1
    return max(A, lo_sup), min(B, hi_sup)


def _block(off: int, pmf_t: np.ndarray, lm: float, rel: float, m: int, count: int, r: int, h_f: float, t: float,
           kind: str, precision: str, log_tau: float = _LOG_TAU, step_err: float = 0.0) -> TiltedPart:
    """m tilted fine steps composed on the fine grid (window: tilted mass below e^log_tau outside on
    each side), re-discretised onto the coarse grid (``kind``: "pld" connect-the-dots, "stat" coarse
    labels), normalised; ``count`` copies. ``step_err``: the l1 error of the tilted step itself
    (:func:`rerokit.bounds.pld.tilt.tilt_pmf`), which the m-fold convolution turns into at most
    m e e^{m e} (as in :func:`_compose_tilted`)."""
    c = compose([(off, pmf_t, m)], h_f, log_tau, window=_block_window(off, pmf_t, m, log_tau), precision=precision)
    e_in = m * step_err
    e = c.roundoff + 3.0 * math.exp(log_tau) + e_in * math.exp(min(e_in, 700.0)) * (1.0 + 1e-9)
    j0, out = (rebin_pld if kind == "pld" else rebin_stat)(c.offset, c.pmf, r, h_f, t)
    s = math.fsum(out.tolist())
    # the rebinning moves every mass by less than h_c: its tilted weight changes by <= e^{|t| h_c}
    e = e * math.exp(abs(t) * r * h_f) / s
    # each coarse mass: a sum of at most 2 r products of a mass and a factor (each factor within a
    # few u: expm1, exp, the quotient), then the normalisation: relative error <= (2 r + 16) u
    return TiltedPart(j0, out / s, count, m * lm + math.log(s), e * (1.0 + 1e-9),
                      m * rel + (2.0 * r + 16.0) * _U)


def _top_blocks(parts: Sequence[TiltedPart], kind: str, t: float, h_c: float, var: float) -> list[TiltedPart]:
    """Three grids: each part's ``count`` blocks (grid h_c) composed in super-blocks of m2 blocks
    and re-discretised onto the grid h_c :data:`_TOP_RATIO` (as :func:`_block` re-discretises the
    fine steps' blocks; certified the same way, every m2), where the schedule is then composed:
    about a 4x smaller window for the three compositions and the running sums of
    :func:`_tilted_betas`. m2 is the least count (a divisor of ``count`` up to twice it, where
    there is one) for which the re-discretisation adds at most :data:`_TOP_VAR` of the
    discretisation's variance so far (``var``, over h_c^2: T_i (h_f / h_c)^2 + the blocks), about
    (count / m2) (r h_c)^2 / 12 against ``var`` h_c^2 / 12 (a heuristic choice only)."""
    out = []
    r = _TOP_RATIO
    for p in parts:
        need = max(1, min(p.count, math.ceil(p.count * r * r / (_TOP_VAR * var))))
        m2 = next((d for d in range(need, min(2 * need, p.count) + 1) if p.count % d == 0), need)
        n2, rest = divmod(p.count, m2)
        for m, c in ((m2, n2), (rest, 1)):
            if m and c:
                out.append(_block(p.offset, p.pmf, p.log_c, p.rel, m, c, r, h_c, t, kind, "double",
                                  _COARSE_LOG_TAU, p.err))
    return out


_STEP_CACHE: dict[tuple, list] = {}
_STEP_CACHE_SIZE = 4


def clear_step_cache() -> None:
    """Forget the fine steps kept by :func:`_fine_step` (called at the end of each
    :func:`rerokit.bounds.dpsgd.exact_power_many` near-1 pass: they are shared within a call only)."""
    _STEP_CACHE.clear()


def _fine_step(s: float, q: float, h_f: float, step_tau: float, group_size: int, n_steps: int, lower: bool = True,
               split: bool = True):
    """(the step's PLD on the fine grid, the mass defect of its dominating pmf and, with ``lower``,
    of its statistic's P-masses (else None), per step), truncated less deep where the fine grid does
    not fit (the top tail: +infinity); None where even that does not fit. The last few are kept:
    the levels' groups of one call (:func:`rerokit.bounds.dpsgd_exact._near_one_into`) share them.
    ``split`` False: the dominating split is not used (the default path's, cheaper)."""
    key = (float(s), float(q), float(h_f), float(step_tau), int(group_size), int(n_steps), bool(split))
    hit = _STEP_CACHE.get(key)
    if hit is None:
        lt = step_tau
        while True:
            try:
                # k = 1: the split fractions from the components (1 - q cancels), about q times
                # smaller a proven error where e^l ~ 1 (module docstring, the dominating split)
                st = dpsgd_step_pld(s, q, h_f, "remove", lt, group_size, _MAX_STEP,
                                    component_split=split and group_size == 1, sparse_tail=_SPARSE_TAIL)
                break
            except StepTooWide:
                lt += 2.0
                if lt > _MAX_TOP_LOG - math.log(max(n_steps, 1)):
                    return None
        st = replace(st, split=conserve_from_bottom(st.split, st.inf_mass))
        hit = [st, _mass_gap(st.split, st.inf_mass), None]
        while len(_STEP_CACHE) >= _STEP_CACHE_SIZE:
            _STEP_CACHE.pop(next(iter(_STEP_CACHE)))
        _STEP_CACHE[key] = hit
    if lower and hit[2] is None:
        # the statistic's missing mass moved to its lowest bucket (conserve_at_bottom): its prefix
        # sums then dominate with no mass defect left to carry
        hit[0] = replace(hit[0], stat_p=conserve_at_bottom(hit[0].stat_p))
        hit[2] = 0.0
    return tuple(hit)


def _smaller_fft_block(off: int, pmf_t: np.ndarray, T: int, m: int, log_tau: float) -> int:
    """The statistic's block size in extended precision (its FFTs the costliest of the call): the
    largest divisor m' of T in [m/2, m) whose block window (:func:`_block_window`) needs a smaller
    FFT (:func:`rerokit.bounds.pld.compose.fft_size`) than m's, else m. Fewer steps per block add
    (T / m') h_c^2 / 12 of re-discretisation variance instead of (T / m) h_c^2 / 12 (measured at
    T = 1e6: m' = 1000 instead of 2000, FFTs of 3 * 2^18 points instead of 2^20, the bracket of
    1 - gamma 8.1e-10 instead of 7.6e-10 at sigma 1, q 0.01; m' = 1250 at sigma 20, q 0.3)."""
    lo, hi = _block_window(off, pmf_t, m, log_tau)
    base = fft_size(hi - lo + 1)
    last = m
    for d in range(m - 1, (m + 1) // 2 - 1, -1):
        if T % d or d > 0.95 * last:  # (candidates at least 5 % apart: a few windows at most)
            continue
        last = d
        lo, hi = _block_window(off, pmf_t, d, log_tau)
        if fft_size(hi - lo + 1) < base:
            return d
    return m


def block_size(T: int, m: int) -> int:
    """A divisor of T in [m/2, m] if there is one (no second, remainder block to compose), else m."""
    for d in range(m, max(1, (m + 1) // 2) - 1, -1):
        if T % d == 0:
            return d
    return m


@dataclass(frozen=True)
class NearOneGrid:
    """The two grids of :func:`near_one_beta`.

    Attributes:
      ratio: the coarse grid step over the fine one (r).
      coarse_div: the schedule's grid step over the coarse one.
      block_per_r2: blocks of about this times r^2 steps (the rebinning's added variance,
        (T / m) h_c^2 / 12, then about that of the fine grid, T h_f^2 / 12).
      block_precision: the FFT arithmetic of the statistic's blocks on the fine grid ("extended":
        their proven round-off, about T x 5e-14 in the tilted l1 in double, becomes negligible).
        The dominating PLD's blocks stay in double: measured at T = 1e6, extended precision narrows
        its end by only 0.7-1e-10 there (the statistic's by 2.6-3.2e-10) and costs 3x as much.
    """

    ratio: int = _RATIO
    coarse_div: float = 8.0
    block_per_r2: float = _BLOCK_PER_R2
    block_precision: str = "double"


def near_one_beta(segments: Sequence[tuple[float, float, int]], steps: Sequence[tuple[int, np.ndarray, int]],
                  h: float, log_alpha: float | Sequence[float], group_size: int = 1, log_tau: float = _LOG_TAU,
                  lower: bool = True, grid: NearOneGrid = NearOneGrid(), precision: str = "double",
                  tilt: float | None = None) -> tuple[float, float] | None | list[tuple[float, float] | None]:
    """Certified (lower, upper) of 1 - gamma at level exp(log_alpha) for a schedule (module docstring).

    None where this does not apply (the threshold not in P's lower tail, or a window too wide).
    With a sequence of levels, a list (one entry per level) from one set of compositions at one
    tilt (``tilt``, else the saddle point of the middle level): every t in (-1, 0) is certified, and
    a level whose own saddle point is within about 1 / sd of t (:func:`tilt_spread`) keeps a
    relative bracket; levels whose threshold is not in P's lower tail get None.

    Args:
      segments: the schedule's (sigma, q, T), noise multipliers within the grid range.
      steps: (label offset, dominating pmf, count) of its steps on the grid h (they choose the tilt).
      h: the schedule's grid step; the steps are discretised anew on the grid h / coarse_div / ratio
        and composed on h / coarse_div.
      log_alpha: natural log of the level.
      group_size: examples that move together.
      log_tau: natural log of the composed tail mass (the steps are truncated at tau / T).
      lower: also the upper end of 1 - gamma (the bucket statistic's test); else it is 1.
      grid: the fine and coarse grids and the blocks (:class:`NearOneGrid`).
      precision: the FFT arithmetic of the coarse compositions.
      tilt: the tilt in (-1, 0) to use (default: the saddle point of the (middle) level).
    """
    many = not isinstance(log_alpha, (int, float, np.floating, np.integer))
    las = [float(a) for a in (log_alpha if many else [log_alpha])]
    if not las:
        return []
    ratio, coarse_div, block_per_r2, block_precision = grid.ratio, grid.coarse_div, grid.block_per_r2, grid.block_precision
    t = tilt if tilt is not None else lower_tilt(steps, h, sorted(las)[len(las) // 2])
    if t is None or not -1.0 < t < 0.0:
        return [None] * len(las) if many else None
    h_c = h / coarse_div
    h_f = h_c / ratio
    finer = _PLD_FINER if block_precision == "extended" else 1
    n_steps = sum(T for _, _, T in segments)
    step_tau = log_tau - math.log(max(n_steps, 1))
    parts, sp, sq = [], [], []
    var = {"pld": 0.0, "stat": 0.0}  # the discretisation's added variance so far, over h_c^2 (x 12)
    defect = defect_stat = shift = 0.0
    try:
        with np.errstate(over="raise"):  # an overflow makes the part meaningless: not applicable
            for s, q, T in segments:
                # the dominating steps on a grid `finer` times finer still (same blocks, same coarse
                # grid), where that fits; the statistic's steps then need no split of their own
                lo_l, hi_l = loss_range(s, q, "remove", step_tau, group_size)
                cheap = finer > 1 and (hi_l - lo_l) * finer / h_f <= _PLD_FINER_POINTS
                got_p = _fine_step(s, q, h_f / finer, step_tau, group_size, n_steps, False) if cheap else None
                got = _fine_step(s, q, h_f, step_tau, group_size, n_steps, lower, split=got_p is None)
                if got is None:
                    return [None] * len(las) if many else None
                st, d_pld, d_stat = got
                if lower:
                    defect_stat += T * d_stat * (1.0 + 1e-9) + 1e-300
                r_pld, hp, st_p = ratio, h_f, st
                if got_p is not None:
                    r_pld, hp, st_p, d_pld = ratio * finer, h_f / finer, got_p[0], got_p[1]
                defect += T * d_pld * (1.0 + 1e-9) + 1e-300
                shift += T * st_p.loss_shift
                todo = [(st_p.j_lo, st_p.split, "pld", parts, t, r_pld, hp)]
                if lower:
                    todo += [(st.j_lo - 1, st.stat_p, "stat", sp, t, ratio, h_f),
                             (st.j_lo - 1, st.stat_q, "stat", sq, t + 1.0, ratio, h_f)]
                m = m_pld = block_size(T, int(min(T, max(1.0, block_per_r2 * ratio * ratio))))
                for off, pmf, kind, dest, tt, rr, hh in todo:
                    pt, lm, rel, e_t = tilt_sparse(off, pmf, hh, tt)
                    prec = block_precision if (dest is sp and "p" in _STAT_EXTENDED) or (dest is sq and "q" in _STAT_EXTENDED) \
                        else "double"
                    btau = _BLOCK_LOG_TAU if dest is parts else _STAT_BLOCK_LOG_TAU
                    if dest is sp and prec == "extended":  # (the Q-masses' blocks take the same size)
                        m = _smaller_fft_block(off, pt, T, m_pld, btau)
                    nb, rest = divmod(T, m)
                    if dest is not sq:
                        var[kind] += T * (hh / h_c) ** 2 + nb + (1 if rest else 0)
                    dest.append(_block(off, pt, lm, rel, m, nb, rr, hh, tt, kind, prec, btau, e_t))
                    if rest:
                        dest.append(_block(off, pt, lm, rel, rest, 1, rr, hh, tt, kind, prec, btau, e_t))
            h_top = h_c
            if block_precision == "extended":  # the finest grids: the blocks in super-blocks (_top_blocks)
                h_top = h_c * _TOP_RATIO
                parts = _top_blocks(parts, "pld", t, h_c, var["pld"])
                sp = _top_blocks(sp, "stat", t, h_c, var["stat"])
                sq = _top_blocks(sq, "stat", t + 1.0, h_c, var["stat"])
            res = _tilted_betas(parts, sp if lower else None, sq if lower else None, h_top, t, las,
                                defect, defect_stat, precision, _COARSE_LOG_TAU, shift * (1.0 + 1e-9))
    except (WindowTooWide, OverflowError, FloatingPointError):
        # an extreme tilt (sigma ~1e-4: losses ~1e8) overflows the tilting factors: not applicable here
        return [None] * len(las) if many else None
    res = [r if r is None or all(math.isfinite(v) for v in r) else None for r in res]  # never inf or NaN
    return res if many else res[0]
