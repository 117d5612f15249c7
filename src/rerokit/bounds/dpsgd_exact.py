"""The ``exact`` method's engine: a certified bracket of the DP-SGD Neyman-Pearson power at many levels.

gamma(kappa) = sup { mu(E) : nu(E) <= kappa } for the pair of :mod:`rerokit.bounds.dpsgd` (Hayes,
Mahloujifar & Balle 2023, Thm 2), from one composed privacy-loss distribution
(:func:`rerokit.bounds.pld.schedule_pld`): the dominating PLD's upper end and the bucket
statistic's lower end (Doroshenko et al. 2022, "Connect the dots"), and where those are not yet
tight, in this order (every bracket computed is certified; each end keeps the better value):

* one step in closed form (:func:`_one_step_closed_form`);
* small-sigma segments with their sampling indicator revealed (a dominating pair, upper end only);
* gamma near 1: 1 - gamma by the lower-tail tilt on two grids (:func:`_near_one_into`,
  :mod:`rerokit.bounds.pld.lowertail`);
* each (sigma, q) kind alone as a sub-schedule (a garbling: its power is a lower end) and a short
  segment apart from the rest (:mod:`rerokit.bounds.pld.onestep`);
* a finer grid where a bracket is wider than 1 % of its upper end (:func:`_refine_into`);
* at small levels the far-tail tilt (:mod:`rerokit.bounds.pld.tilt`), first where the untilted
  double-precision bracket is predicted useless (:func:`_tilt_first`), and below 1e-300 the bracket
  kept in logs (:func:`_tiny_log_bracket`).

:func:`rerokit.bounds.dpsgd.rero_dpsgd` and the trade-off curve call :func:`exact_power_many`. The
constants below are choices of computation (which path, which grid); none is part of a bound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from rerokit.bounds.dpsgd_envelope import round_up_exp
from rerokit.bounds.pld import (
    PLDTooWide,
    SIGMA_GRID_RANGE,
    SchedulePLD,
    log_chernoff_gamma_many,
    log_max_test_power,
    log_rdp_gamma_many,
    schedule_pld,
)
from rerokit.bounds.pld.chernoff import log_sum_test_power
from rerokit.bounds.pld.lowertail import clear_step_cache, lower_tilt, tilt_spread
from rerokit.bounds.schedule import Segment

__all__ = ["ExactPower", "exact_power_many", "MIN_TILTED_LOG"]

# At most this many levels of one call get the tilted tail computation (two or three compositions each).
_MAX_TILTED = 16
MIN_TILTED_LOG = math.log(1e-300)
# Below 1e-300 the Hölder bound (pld.chernoff) before the tilt on schedules of at most this many steps
# (where it can be the tighter one: measured 4e-4 and 6e-4 below the tilt's upper end at T 3, q 0.3
# and T 5, q 0.5, kappa e^-1089; 0.019 above at T 10, 0.07-0.6 above at T 3-1e5 with q <= 0.01),
# else only where the tilt's log bracket is wider than _HOLDER_SKIP nats (the most it could then
# lower the value; a quarter of the 2 % width target; 0 restores the plain minimum)
_HOLDER_FIRST_STEPS = 8
_HOLDER_SKIP = 5e-3
# Brackets wider than this share of their upper end are recomputed on a finer grid (automatic grids
# only), which at most this many window points.
_REFINE_ABOVE = 0.01
_REFINE_POINTS = 2_000_000
# ... by a factor of at most this; where the width asked for more and a bracket is still wider than
# _REFINE_ABOVE, a second grid finer by what the remaining width asks for (fifteenth stop: sigma 0.3,
# q 1e-4, T 1e6, kappa 1e-30: 27 % on the schedule's grid, 1.1 % 8x finer, then 0.45 % 15x finer,
# 0.10 -> 0.29 s, best of 3 in one session; the Bromwich reference inside)
_REFINE_MAX = 8.0
# Upper ends above this (gamma near 1, where the target is on 1 - gamma) are recomputed on a grid
# finer by _NEAR_ONE_FACTOR (automatic grids only). The rule reads the upper end only, so it applies
# identically with and without the lower end.
_NEAR_ONE_ABOVE = 0.999
_NEAR_ONE_FACTOR = 8.0
# Upper ends in (_NEAR_ONE_BAND, _NEAR_ONE_ABOVE] get the lower-tail tilt too (_near_one_into), with the
# relative target _PRECISE_ENOUGH (1 - gamma) instead of _NEAR_ONE_TARGET, and no 8x finer grid where
# it does not apply. Random cells (sigma 0.3-20, q 1e-4-1, T 10-1e6, kappa 1e-30-1e-2) with gamma in
# (0.99, 0.999], seed 5: the plain brackets were 0.4-75 % of 1 - gamma (sigma 0.35, q 7.9e-4, T 6.2e5,
# kappa 1.3e-25, gamma 0.99883: 8.8e-4 wide), now 0.06-0.4 % (7.7e-7 there), 6-150 ms more per call;
# in (0.9, 0.99], seed 6: 0.04-2.2 % before, 0.006-0.26 % after, 10-45 ms more (riskcal 0.5-2 s)
_NEAR_ONE_BAND = 0.9
# gamma near 1, first: the lower-tail tilt on two grids (rerokit.bounds.pld.lowertail), as
# (fine-to-coarse ratio, schedule-to-coarse divisor, block steps per ratio^2, the FFT arithmetic of
# the statistic's blocks), cheapest first. The rules for going on read the lower end of 1 - gamma only (the
# upper end of gamma), so they are the same with and without the statistic: after the first grid,
# stop if that lower end is at most _NEAR_ONE_FIRST_STOP (its bracket measured 5-8 % of 1 - gamma
# at T = 1e6, the worst case: the default grid is sized by the composed loss there); after a later
# one, stop if its gain over the previous one, times _NEAR_ONE_GAIN (the measured ratio of the
# brackets of consecutive grids, 1.5-1.7e-4 over 5-8e-2 of 1 - gamma, with the bracket about 2.5
# times the lower end's gap), is within _NEAR_ONE_TARGET (issue 17). Grids whose fine windows would
# exceed about _NEAR_ONE_POINTS points are skipped.
# The finest: r = 20 with blocks of ~2048 steps (5.12 r^2), not r = 32: the dominating split's proven
# rounding grows like 1 / h_f (rerokit.bounds.pld.lowertail), measured narrower and faster at T = 1e6.
_NEAR_ONE_GRIDS = ((4, 1.0, 1.0, "double"), (16, 4.0, 2.0, "double"), (20, 16.0, 5.12, "extended"))
# A shortcut instead of the last grid, for a level whose bracket on it is predicted within the target:
# 160x finer than the schedule's grid (the middle one 64x, the last 320x), double precision, about a
# quarter of the last grid's time (sigma 5, q 0.1, T 1e5, kappa 1e-3: 0.57 s against 2.3 s, 1 - gamma
# bracketed within 6.6e-10 against 1.2e-10). The brackets shrink like the grid step squared (measured:
# 1.1e-6, 3.5e-9, 6.6e-10, 1.2e-10 on the first, middle, shortcut and last grids there), so the
# prediction is the middle grid's (the skip rule's after the first grid; the gain rule's after the
# middle one) times (64 / 160)^2. It reads the upper end of gamma only, like the rules above.
_NEAR_ONE_SHORTCUT = (20, 8.0, 2.0, "double")
_NEAR_ONE_SHORTCUT_SCALE = (64.0 / 160.0) ** 2
# With the lower end, a level whose bracket on the last grid is still wider than the target takes
# this one too, its coarse grid twice as fine (sigma 0.318, q 5.9e-4, T 3.4e5, kappa 8.5e-11: the
# last grid's 1.04e-9 in 0.76 s, this one's 3.2e-10 in 1.25 s; a finer ratio, 32, gave 4.4e-10 in 1.19 s)
_NEAR_ONE_BEYOND = (20, 32.0, 5.12, "extended")
_NEAR_ONE_FIRST_STOP = 1e-8
# After the first grid, a level goes straight to the last grid where the middle one's gain, predicted
# as _NEAR_ONE_SKIP_GAIN times the first grid's gain over the plain PLD's lower end of 1 - gamma
# (measured 0.14-0.16: sigma 1 q 0.01 and sigma 20 q 0.3 at T 1e6, sigma 2 q 0.2 T 15000, sigma 7.4
# q 1 T 1e4), exceeds _NEAR_ONE_SKIP_MARGIN times what would stop after the middle grid (it would go
# on to the last grid anyway; a wrong prediction only costs time, never the bracket).
_NEAR_ONE_SKIP_GAIN = 0.1
_NEAR_ONE_SKIP_MARGIN = 4.0
_NEAR_ONE_GAIN = 2.5 / 300.0
_NEAR_ONE_TARGET = 1e-9
_NEAR_ONE_POINTS = 4_000_000
# At most this many groups of levels (nearby saddle-point tilts, one set of compositions each) of
# one call get the last (finest, seconds at T = 1e6) grid; the others stop before it and get the 8x
# finer grid as well (one composition shared by all of them).
_NEAR_ONE_FINE_LEVELS = 4
# Brackets already this narrow against min(gamma, 1 - gamma) are not recomposed in extended precision
# (its round-off is a large share of such a bracket, but the bracket is a quarter of the 2 % width
# target or less; 1 - gamma keeps the rule meaningful near gamma = 1, where the target is on 1 - gamma).
# Was 1e-4: at q 1e-3, T 3e3-1e4, kappa 1e-6 the brackets are now 3e-4-1.3e-3 wide (were 4e-6-2e-5)
# and the calls about 2.5 times faster (benchmarks/pld_engine.py --mid). Was 2e-3: at q 1e-3, T 3e4,
# kappa 1e-6 the double brackets are 3.1-3.4e-3 wide, and their recomposition was half of the call.
_PRECISE_ENOUGH = 5e-3
_BETA_NEGLIGIBLE = 1e-12
# the most (sigma, q) kinds whose sub-schedules each give a lower end (_sub_schedules_into)
_SUB_SCHEDULE_KINDS = 4
# the most kinds for the ends with a short segment apart (_one_step_into: the rest is composed under
# about seven tilts, a composition per kind each)
_ONE_STEP_KINDS = 8
# ... and for a segment of several steps (composed by pieces) only at q <= _SHORT_SEGMENT_Q (the
# tiny-q jumps, where its log-density is convex), its sigma the schedule's smallest, and where its own
# lower end is within _SHORT_SEGMENT_NATS of the upper end (measured 0.02-0.09 in the cells it
# narrows; 0.04-26 where it did not, all but one of those with a larger q or sigma)
_SHORT_SEGMENT_Q = 2e-3
_SHORT_SEGMENT_NATS = 1.0
# Tilt first (:func:`_tilt_first`): at levels kappa <= 1e-6 (log at most _TILT_FIRST_BELOW) the far-tail
# tilt alone where the untilted double-precision bracket is predicted useless. Its proven round-off ro,
# about _RO_PER_STEP per step (measured 3.9e-14 - 1.1e-13 for sigma 0.5-20, q 1e-4-0.3, T 1e3-1e6), costs
# the bracket about 2 ro / gamma at the upper end and 2 ro / kappa at the lower one (the statistic's
# level is shifted by its round-off; _exact_power_once's ro_effect), so its predicted relative width
# is w = 2 ro (1 / gamma + 1 / kappa), gamma by its Chernoff estimate. Tilt first where w is at least
# _TILT_FIRST_USELESS (the extended recomposition, ~1e-3 of the round-off, would still be a percent
# wide: only the tilt helps), or where w exceeds _PRECISE_ENOUGH (the plain path would recompose in
# extended precision or tilt anyway) and the tilted composition is about as wide as the untilted one
# (spread <= _TILT_FIRST_SPREAD; small sigma widens it 3-5x, and double + extended is the cheaper
# there). Not near gamma = 1 (estimate above _TILT_FIRST_GAMMA).
_TILT_FIRST_BELOW = math.log(1e-6) + 1e-9
_RO_PER_STEP = 3e-14
_TILT_FIRST_USELESS = 10.0
_TILT_FIRST_SPREAD = 1.5
_TILT_FIRST_GAMMA = 1e-2
# ... and where the two-grid tilt of tiny q applies (SchedulePLD.tail_by_jumps, 40-70 ms at sigma 1,
# q 1e-4) and the untilted window has at least this many points (its double composition and the
# extended one cost 100-180 ms at 256k-384k points; at sigma 0.5, q 1e-3, T 1e3, 94k points, the
# plain path took 81 ms against 175 ms for the tilt first)
_TILT_FIRST_JUMP_POINTS = 200_000


def _narrow_enough(up: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Brackets that need no extended-precision recomposition: within _PRECISE_ENOUGH of
    min(gamma, 1 - gamma), and near gamma = 1 also within the 1 - gamma target (issue 17: 1e-9);
    or a lower end already within _BETA_NEGLIGIBLE of 1 (1 - gamma certified below 1e-12: the
    relative rule cannot be met where 1 - gamma underflows, and the recomposition took seconds)."""
    w = up - low
    relative = (w <= _PRECISE_ENOUGH * np.minimum(up, 1.0 - up)) & ((up <= _NEAR_ONE_ABOVE) | (w <= _NEAR_ONE_TARGET))
    return relative | (1.0 - low <= _BETA_NEGLIGIBLE)


@dataclass(frozen=True)
class ExactPower:
    """The ``exact`` method's numbers at many levels (arrays, one entry per kappa; ``floor`` and ``h``
    are one number for all): what :func:`exact_power_many` returns.

    Attributes:
      log_upper: log of the dominating PLD's bound on gamma (the Neyman-Pearson power).
      upper: exp(log_upper).
      lower_pld: the certified lower end from actual tests (bucket statistic, max test, tilting),
        at most ``upper``.
      eps_star: the threshold privacy loss of the optimal test on the dominating PLD (where the
        far-tail tilt answered alone, :func:`_tilt_first`: the tilted mean, that threshold to first order).
      floor: the PLD's error terms (mass at infinity, window and round-off; where the tilt answered
        alone, the largest bracket width: no untilted PLD was composed).
      floored: where ``floor`` exceeds a tenth of the upper end.
      used_rdp: where the RDP (or, below kappa = 1e-300, the Hölder) bound replaced the PLD value.
      log_value: log of the final upper bound on gamma.
      value: the final upper bound, exp(log_value) rounded up (never below the truth).
      lower: min(lower_pld, value), the certified lower end.
      h: the finest grid step used.
      log_lower: log of a certified lower end, kept in logs where ``lower`` underflows (kappa below
        1e-300: :func:`_tiny_log_bracket`); None where it is just log(lower).
    """

    log_upper: np.ndarray
    upper: np.ndarray
    lower_pld: np.ndarray
    eps_star: np.ndarray
    floor: float
    floored: np.ndarray
    used_rdp: np.ndarray
    log_value: np.ndarray
    value: np.ndarray
    lower: np.ndarray
    h: float
    log_lower: np.ndarray | None = None


def exact_power_many(
    pld: SchedulePLD, segments: Sequence[Segment], log_kappas: np.ndarray, log_rdp: np.ndarray | None = None
) -> ExactPower:
    """The ``exact`` method at many log kappas from one composed PLD (arrays, one entry per kappa).

    :func:`rerokit.bounds.dpsgd.rero_dpsgd` calls this with one kappa, so both give the same numbers.

    Args:
      pld: the composed PLDs of the schedule (:func:`rerokit.bounds.dpsgd.dpsgd_pld`); without the statistic
        (``lower=False``) the lower end is the trivial kappa.
      segments: the same schedule's validated segments (for the RDP fallback, group size 1 only).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array (not validated here).
      log_rdp: precomputed RDP bounds on log gamma for the same log kappas (optional); if None,
        they are computed here for the floored entries only.

    Returns:
      An :class:`ExactPower`: the dominating-PLD bound (``log_upper``/``upper``), the certified
      lower end (``lower_pld``, and ``lower`` = min(lower_pld, value)), the threshold loss
      (``eps_star``), the PLD's error terms (``floor``; ``floored`` where they exceed a tenth of
      the upper end, and the RDP bound then replaces the PLD value when smaller: ``used_rdp``),
      the final upper bound (``log_value``/``value``, rounded up, never below the truth) and the
      finest grid step used (``h``).

    Grid refinement: where the PLD's grid step was chosen automatically (``pld.auto_grid``), the
    lower end was requested (``pld.lower``; without it the upper value never depends on a width) and a
    bracket is wider than :data:`_REFINE_ABOVE` of its upper end (small q with small sigma, where
    one step's loss is mostly far below its rms; very long schedules, whose default grid is sized
    by the composed loss), those levels are recomputed on a grid finer by a factor chosen from the
    width (the gap shrinks about like h^1.5, and like h^2 where every such level is below
    :data:`_TILT_FIRST_BELOW`, the far-tail tilt's brackets: sigma 2.49, q 8.7e-3, T 3.4e5,
    kappa 4e-23 was refined 5.9x to a bracket 1.3e-3 wide, now 3.8x to 3.1e-3, 0.16 -> 0.10 s),
    at most :data:`_REFINE_MAX` times; where that cap bound and a bracket is still wide, once more
    from the schedule's grid, finer by what the remaining width asks for; each end keeps the better
    certified value.
    Before that, where a bracket is wider than :data:`_PRECISE_ENOUGH` of its upper end on a schedule
    of several kinds of step, each kind alone gives a certified lower end too
    (:func:`_sub_schedules_into`: a sub-schedule's power never exceeds the schedule's); and where upper
    ends are above :data:`_NEAR_ONE_BAND` (gamma near 1, where the target is the bracket of 1 - gamma:
    1e-9 above :data:`_NEAR_ONE_ABOVE`, else relative), 1 - gamma is bracketed by the lower-tail tilt on two grids
    (:func:`_near_one_into`, :mod:`rerokit.bounds.pld.lowertail`), and where that does not apply or
    skips a grid those levels are recomputed on a grid finer by :data:`_NEAR_ONE_FACTOR`; that rule
    reads the upper end only, so it applies identically with and without the lower end. The width
    rules (this refinement, the extended recomposition and the far-tail tilt of
    :func:`_exact_power_once`, the tilt's grid ladder) read the lower end, so a run without the
    bracket may end with another certified upper end than the bracketed one; calibration
    (:mod:`rerokit.bounds.calibrate`) therefore compares the bracketed value itself.
    """
    lks = np.asarray(log_kappas, dtype=float)
    one = _one_step_closed_form(pld, lks)
    if one is not None:
        return one
    # (the lower end includes the max test at small levels: SchedulePLD.power_lower)
    return _refined(pld, segments, lks, log_rdp)


def _refined(
    pld: SchedulePLD, segments: Sequence[Segment], lks: np.ndarray, log_rdp: np.ndarray | None
) -> ExactPower:
    """:func:`_exact_power_once` with the grid refinements of :func:`exact_power_many`."""
    r = _exact_power_once(pld, segments, lks, log_rdp)
    if not pld.auto_grid:
        return r
    r = _revealed_into(r, pld, lks)
    near = (r.upper > _NEAR_ONE_BAND) & ~r.used_rdp & (lks >= MIN_TILTED_LOG)
    above = r.upper > _NEAR_ONE_ABOVE
    if near.any():
        try:
            r, near = _near_one_into(r, pld, lks, near)
        finally:
            clear_step_cache()
    near &= above  # (the band's levels keep their grid where the tilt does not apply)
    if near.any():
        r = _refine_into(r, pld, segments, lks, log_rdp, near, _NEAR_ONE_FACTOR)
    if not pld.lower:  # no lower end (bracket=False): the width says nothing
        return r
    r = _one_step_into(*_sub_schedules_into(r, pld, lks), pld, lks)
    factor, order = 1.0, None
    for _ in range(2):  # a second grid only where the first one's factor was capped at _REFINE_MAX
        rel = _rel_width(r)
        wide = (rel > _REFINE_ABOVE) & ~r.used_rdp & (lks >= MIN_TILTED_LOG)
        if not wide.any():
            return r
        if order is None:
            # the far tail (the tilt's brackets, below _TILT_FIRST_BELOW) shrinks about like h^2 (the
            # tilt's grid ladder, pld.builder); the untilted composition's like h^1.5
            order = 2.0 if bool(np.all(lks[wide] <= _TILT_FIRST_BELOW)) else 1.5
        want = (float(np.max(rel[wide])) / (0.3 * _REFINE_ABOVE)) ** (1.0 / order)
        # (the second grid from the schedule's too, finer by what the remaining width asks for)
        factor *= float(np.clip(want, 1.5, _REFINE_MAX))
        r = _refine_into(r, pld, segments, lks, log_rdp, wide, factor)
        if want <= _REFINE_MAX:
            return r
    return r


def _rel_width(r: ExactPower) -> np.ndarray:
    """Each level's bracket width relative to its upper end, (value - lower) / value."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (r.value - r.lower) / r.value


def _sub_schedules_into(r: ExactPower, pld: SchedulePLD,
                        lks: np.ndarray) -> tuple[ExactPower, dict[Segment, np.ndarray]]:
    """Each level whose bracket is wider than :data:`_PRECISE_ENOUGH` of its upper end also takes
    the certified lower end of the power of the schedule's steps of one (sigma, q) alone (each of
    at most :data:`_SUB_SCHEDULE_KINDS` kinds; beyond, the one of the smallest sigma and the one of
    the largest full-batch mu^2 = T (e^{1/sigma^2} - 1) q^2).

    Sound because the steps are independent under both measures: a test that reads only some steps'
    outputs, E_sub x (the other coordinates), has the level and power of E_sub under the marginal
    pair, which is the sub-schedule's own pair (a product of the same per-step pairs, the same
    unit of privacy). So gamma(kappa) >= gamma_sub(kappa) (Blackwell: the marginal is a garbling).
    It matters where one short segment of small sigma carries the far tail beside a long segment
    of small losses (one sampled step's large deviation): there the composed tilts lose the
    lower end (one step of sigma 1.30, q 1.3e-4 beside 1585 of sigma 3.02, q 2.6e-4 at kappa
    e^-68.1: lower end e^-68.109, the step alone e^-67.612, within 0.1 % of the Monte Carlo
    estimate; benchmarks/pld_soundness.py --one-jump). Also returns each kind's lower ends (at every
    level: 0 where not computed), which :func:`_one_step_into` reads."""
    subs: dict[Segment, np.ndarray] = {}
    if len(pld.segments) < 2:
        return r, subs
    rel = _rel_width(r)
    wide = np.nonzero((rel > _PRECISE_ENOUGH) & (lks >= MIN_TILTED_LOG))[0]
    if not wide.size:
        return r, subs
    kinds = list(pld.segments)
    if len(kinds) > _SUB_SCHEDULE_KINDS:
        def mu2(seg: Segment) -> float:
            s, q, T = seg
            return T * math.expm1(min(1.0 / (s * s), 700.0)) * q * q

        kinds = list(dict.fromkeys([min(kinds, key=lambda seg: seg[0]), max(kinds, key=mu2)]))
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    lower_pld = np.array(r.lower_pld, dtype=float, copy=True)
    for seg in kinds:
        try:
            sub = exact_power_many(schedule_pld([seg], group_size=pld.group_size, add_direction=False), [seg], lks[wide])
        except (PLDTooWide, WindowTooWide, StepTooWide, MemoryError):
            continue  # (an optional second lower end: the first one stands)
        subs[seg] = np.zeros(lks.size)
        subs[seg][wide] = sub.lower
        lower_pld[wide] = np.maximum(lower_pld[wide], sub.lower)
    lower_pld = np.minimum(lower_pld, r.upper)
    return replace(r, lower_pld=lower_pld, lower=np.minimum(np.maximum(r.lower, lower_pld), r.value)), subs


def _one_step_into(r: ExactPower, subs: dict[Segment, np.ndarray], pld: SchedulePLD,
                   lks: np.ndarray) -> ExactPower:
    """Each level whose bracket is still wider than :data:`_PRECISE_ENOUGH` of its upper end, on a
    schedule with a short segment beside others, also takes the upper end with that segment apart
    (:meth:`SchedulePLD.short_segment_upper`, :mod:`rerokit.bounds.pld.onestep`): one step in closed
    form; several composed by pieces; and where still that wide, the lower end of the test on the
    sum of the two statistics (:meth:`SchedulePLD.short_segment_lower`, A by pieces too). Several
    steps only where their q is at most :data:`_SHORT_SEGMENT_Q`, their sigma the smallest, and
    the segment alone has a lower end (``subs``, :func:`_sub_schedules_into`) within
    :data:`_SHORT_SEGMENT_NATS` of the upper end (its own far tail carries the power; elsewhere the
    pieces cost up to 4.5 s and gained nothing in 120 random cells). At most :data:`_MAX_TILTED`
    levels and :data:`_ONE_STEP_KINDS` kinds of step.
    One step of sigma ~1 beside a long schedule of small losses: the composed tilts' upper end was
    1-3 % above the truth (one step of sigma 1.30, q 1.3e-4 beside 1585 of sigma 3.02, q 2.6e-4 at
    kappa e^-68.1: e^-67.588; with the step in closed form e^-67.6119, the lower end e^-67.6121).
    Reads the lower end (a width rule)."""
    a = pld.short_segment() if 2 <= len(pld.segments) <= _ONE_STEP_KINDS else None
    if a is None:
        return r
    rel = _rel_width(r)
    wide = (rel > _PRECISE_ENOUGH) & (lks >= MIN_TILTED_LOG)
    if a[2] > 1:
        with np.errstate(divide="ignore"):
            own = np.log(subs.get(a, np.zeros(lks.size)))
        wide &= (a[1] <= _SHORT_SEGMENT_Q) & (a[0] <= min(seg[0] for seg in pld.segments)) & (
            own >= r.log_value - _SHORT_SEGMENT_NATS)
    wide = np.nonzero(wide)[0][:_MAX_TILTED]
    if not wide.size:
        return r
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    keys = ("log_upper", "upper", "log_value", "value", "used_rdp", "lower", "lower_pld")
    v = {key: np.array(getattr(r, key), copy=True) for key in keys}
    errors = (PLDTooWide, WindowTooWide, StepTooWide, ArithmeticError, MemoryError)
    for i in wide:
        try:
            up = pld.short_segment_upper(float(lks[i]), float(r.eps_star[i]))
        except errors:
            up = None  # (an optional second upper end: the first one stands)
        if up is not None and up < v["log_value"][i]:
            v["log_upper"][i] = min(float(v["log_upper"][i]), up)
            v["upper"][i] = math.exp(v["log_upper"][i])
            v["log_value"][i] = up
            v["value"][i] = round_up_exp(up)
            v["used_rdp"][i] = False
        if v["value"][i] - v["lower"][i] <= _PRECISE_ENOUGH * v["value"][i]:
            continue
        try:
            low = pld.short_segment_lower(float(lks[i]), float(r.eps_star[i]))
        except errors:
            low = None  # (an optional second lower end: the first one stands)
        if low is not None:
            v["lower_pld"][i] = max(float(v["lower_pld"][i]), math.exp(low))
            v["lower"][i] = max(float(v["lower"][i]), math.exp(low))
    v["lower_pld"] = np.minimum(v["lower_pld"], v["upper"])
    v["lower"] = np.minimum(v["lower"], v["value"])
    return replace(r, **v)


def _revealed_into(r: ExactPower, pld: SchedulePLD, lks: np.ndarray) -> ExactPower:
    """Each level's upper end also from :meth:`SchedulePLD.revealed` (small-sigma segments with
    their sampling indicator revealed: a dominating pair), where smaller; the lower ends are this
    schedule's own (the other pair's tests are not tests of this one)."""
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    try:  # (the revealed schedule's own PLD can be too wide too: then this one's ends stay)
        alt = pld.revealed()
        if alt is None:
            return r
        r2 = _exact_power_once(alt, alt.segments, lks, None)
    except (PLDTooWide, WindowTooWide, StepTooWide):
        return r
    better = r2.log_value < r.log_value
    if not better.any():
        return r
    return _upper_ends_merged(r, r2, np.arange(lks.size), better, r.lower_pld, r.lower,
                              np.where(better, False, r.floored), float(r.floor), r.h)


def _upper_ends_merged(r: ExactPower, r2: ExactPower, sub: np.ndarray, better: np.ndarray, lower_pld: np.ndarray,
                       lower: np.ndarray, floored: np.ndarray, floor: float, h: float) -> ExactPower:
    """``r`` with the upper-end fields (log_upper, value, eps_star, used_rdp, log_value) of ``r2``
    (computed at the levels ``sub`` of ``r``) where ``better``, and the given lower ends, floor and
    grid; the lower ends capped by the merged upper ends."""
    def merged(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        out = np.array(mine, copy=True)
        out[sub] = np.where(better, theirs, out[sub])
        return out

    log_upper = merged(r.log_upper, r2.log_upper)
    upper = np.exp(log_upper)
    value = merged(r.value, r2.value)
    return ExactPower(
        log_upper=log_upper, upper=upper, lower_pld=np.minimum(lower_pld, upper),
        eps_star=merged(r.eps_star, r2.eps_star), floor=floor, floored=floored,
        used_rdp=merged(r.used_rdp, r2.used_rdp), log_value=merged(r.log_value, r2.log_value), value=value,
        lower=np.minimum(lower, value), h=h,
    )


def _near_one_into(
    r: ExactPower, pld: SchedulePLD, lks: np.ndarray, near: np.ndarray
) -> tuple[ExactPower, np.ndarray]:
    """gamma near 1: the bracket of 1 - gamma by tilting towards P's lower tail on two grids
    (:meth:`SchedulePLD.beta_near_one`), at most :data:`_MAX_TILTED` levels; each end keeps the
    better certified value. The grids of :data:`_NEAR_ONE_GRIDS`, cheapest first (about 0.03 s,
    0.2 s and 0.7 s of CPU time at T = 1e6: rerokit.bounds.pld.lowertail), until the next one is predicted to be unneeded; a level whose
    first grid predicts that the middle one would not stop it goes straight to the last one
    (:data:`_NEAR_ONE_SKIP_GAIN`), or to the cheaper :data:`_NEAR_ONE_SHORTCUT` grid where that
    one's bracket is predicted within the target (after the first or the middle grid). On each grid the levels are grouped by their saddle-point tilts
    (:func:`_near_one_groups`) and one set of compositions serves a group (the blocks depend on the
    tilt only; every tilt in (-1, 0) is certified); the last grid for at most
    :data:`_NEAR_ONE_FINE_LEVELS` groups per call. Those rules and the upper end of gamma use the
    dominating PLD only, so they are the same with and without the lower end, but one: with the lower
    end, a level stops on any grid whose bracket of 1 - gamma is within :data:`_NEAR_ONE_TARGET`
    (the width target). The two upper ends of gamma then differ by less than that, absolute, i.e.
    1e-9 relative near gamma = 1 (100 epochs of sigma 1.5 * 0.98^e, q 0.01, 100 steps each,
    kappa 1e-2: the first grid's bracket is 4e-10 wide; the middle grid took 5.3 s more).
    Levels in the band (:data:`_NEAR_ONE_BAND`, :data:`_NEAR_ONE_ABOVE`] have the target
    :data:`_PRECISE_ENOUGH` (1 - gamma) instead (relative, as :func:`_narrow_enough`). A level skips
    the middle grid only where the last one fits; where it does not, the shortcut grid is the finest
    left and takes the levels that would have gone on (sigma 10.4, q 0.71, T 33128: the first grid's
    3.1e-6 had been the answer, now 8.6e-10). With the lower end, a shortcut bracket wider than the
    target goes on to the last grid where it fits (sigma 0.545, q 4.2e-3, T 116284, kappa 1.2e-3:
    1.13e-9 on the shortcut).
    Returns the updated result and the levels where it did not apply or a grid was skipped (window
    too wide; left to :func:`_refine_into`)."""
    size = max(pld.upper.pmf.size, 1)
    n_steps = max(sum(T for _, _, T in pld.segments), 1)
    rest = np.array(near, copy=True)
    keys = ("log_upper", "upper", "log_value", "value", "lower", "lower_pld")
    v = {key: np.array(getattr(r, key), dtype=float, copy=True) for key in keys}
    last = len(_NEAR_ONE_GRIDS) - 1
    gots: dict[int, tuple[float, float]] = {}
    active = [int(i) for i in np.nonzero(near)[0][:_MAX_TILTED]]
    tilts = _near_one_tilts(pld, lks, active)
    skipped: list[int] = []  # levels sent from the first grid straight to the last one
    short: list[int] = []  # levels sent to the shortcut grid instead of the last one (and stopped there)
    lasted: set[int] = set()  # levels the last grid ran
    short_fits = _near_one_fine_points(size, n_steps, *_NEAR_ONE_SHORTCUT[:3]) <= _NEAR_ONE_POINTS
    # the target per level: 1e-9 near 1, relative to 1 - gamma in the band below (_NEAR_ONE_BAND)
    target = {i: _NEAR_ONE_TARGET if v["upper"][i] > _NEAR_ONE_ABOVE
              else max(_NEAR_ONE_TARGET, _PRECISE_ENOUGH * (1.0 - float(v["upper"][i]))) for i in active}
    # a level skips the middle grid only for a last grid that fits (else it would get neither)
    last_fits = _near_one_fine_points(size, n_steps, *_NEAR_ONE_GRIDS[last][:3]) <= _NEAR_ONE_POINTS

    def to_shortcut(i: int, predicted_middle: float, finest: bool = False) -> bool:
        """Whether level i, whose bracket after the middle grid is predicted ``predicted_middle``
        (above the target), goes to the shortcut grid (predicted within the target there, or
        ``finest``: the last grid does not fit, so the shortcut is the finest one left)."""
        if short_fits and (finest or predicted_middle * _NEAR_ONE_SHORTCUT_SCALE <= target[i]):
            short.append(i)
            return True
        return False

    def run(k: int, levels: list[int], cap: int | None = None) -> tuple[list[int], list[int]]:
        """Grid k for ``levels`` (k = -1: the shortcut grid, where they stop), one set of
        compositions per group of nearby tilts (the blocks depend on the tilt only; a one-level
        group uses its own saddle point), at most ``cap`` groups. Returns (the levels that go on,
        those of the groups left out)."""
        ratio, div, per, prec = (_NEAR_ONE_SHORTCUT if k == -1 else _NEAR_ONE_BEYOND if k == -2
                                 else _NEAR_ONE_GRIDS[k])
        div = min(div, max(1.0, _REFINE_POINTS / size))  # the coarse window within a few 1e6 points
        groups = _near_one_groups(tilts, levels)
        left = [i for _, m in groups[cap:] for i in m] if cap is not None else []
        nxt = []
        for tilt, members in groups[:cap]:
            bs = pld.beta_near_one([float(lks[i]) for i in members], ratio=ratio, coarse_div=div, block_per_r2=per,
                                   block_precision=prec, tilt=tilt if len(members) > 1 else None)
            for i, b in zip(members, bs):
                if b is None:
                    continue  # not applicable: rest stays True
                got = gots.get(i)
                gain = b[0] - got[0] if got is not None else math.inf
                got = b if got is None else (max(got[0], b[0]), min(got[1], b[1]))
                gots[i] = got
                # after the first grid: the middle grid's predicted bracket (its gain over the plain PLD)
                mid = (got[0] - (1.0 - float(v["upper"][i]))) * _NEAR_ONE_SKIP_GAIN * _NEAR_ONE_GAIN if k == 0 else 0.0
                if k == last:
                    lasted.add(i)
                if k < 0:  # the shortcut (-1) or the grid beyond the last (-2): the level stops there
                    rest[i] = False
                    if k == -1 and pld.lower and last_fits and got[1] - got[0] > target[i]:
                        nxt.append(i)  # the shortcut's prediction missed: the last grid after all
                elif k == last or (k == 0 and got[0] <= _NEAR_ONE_FIRST_STOP) or (
                        k > 0 and gain * _NEAR_ONE_GAIN <= target[i]) or (
                        pld.lower and got[1] - got[0] <= target[i]):
                    rest[i] = False
                elif k == 0 and last > 1 and mid > target[i] and to_shortcut(
                        i, mid, not last_fits and mid > _NEAR_ONE_SKIP_MARGIN * target[i]):
                    pass
                elif k == 0 and last > 1 and last_fits and mid > _NEAR_ONE_SKIP_MARGIN * target[i]:
                    skipped.append(i)
                    nxt.append(i)
                elif k == 1 and to_shortcut(i, gain * _NEAR_ONE_GAIN, not last_fits):
                    pass
                else:
                    nxt.append(i)
        return nxt, left

    for k in range(last + 1):
        fits = k == 0 or _near_one_fine_points(size, n_steps, *_NEAR_ONE_GRIDS[k][:3]) <= _NEAR_ONE_POINTS
        if not active or not fits:
            break  # the active levels keep rest = True (the 8x finer grid as well)
        if 0 < k < last:  # the predicted skips wait for the last grid
            go, wait = [i for i in active if i not in skipped], [i for i in active if i in skipped]
            active = run(k, go)[0] + wait
        elif k == last:
            _, left = run(k, active, _NEAR_ONE_FINE_LEVELS)
            back = [i for i in left if i in skipped]
            for k2 in range(1, last):  # skipped levels left out of the last grid: the middle grids after all
                if back and _near_one_fine_points(size, n_steps, *_NEAR_ONE_GRIDS[k2][:3]) <= _NEAR_ONE_POINTS:
                    back = run(k2, back)[0]
        else:
            active = run(k, active)[0]
    if short:
        missed = run(-1, short)[0]
        if missed:
            run(last, missed, _NEAR_ONE_FINE_LEVELS)
    over = [i for i in sorted(lasted) if gots[i][1] - gots[i][0] > target[i]]
    if pld.lower and over and _near_one_fine_points(size, n_steps, *_NEAR_ONE_BEYOND[:3]) <= _NEAR_ONE_POINTS:
        run(-2, over, _NEAR_ONE_FINE_LEVELS)  # the last grid missed the target: one twice as fine
    for i, (b_lo, b_up) in gots.items():
        b_lo = max(0.0, b_lo * (1.0 - 1e-9) - 1e-15)  # the rounding of 1 - beta (1 ulp) on the safe side
        log_up = math.log1p(-b_lo) if b_lo < 1.0 else -math.inf
        if log_up < v["log_upper"][i]:
            v["log_upper"][i] = log_up
            v["upper"][i] = math.exp(log_up)
        if log_up < v["log_value"][i]:
            v["log_value"][i] = log_up
            v["value"][i] = round_up_exp(log_up)
        if pld.lower:
            low = float(np.nextafter(1.0 - b_up, 0.0)) - 1e-15
            v["lower_pld"][i] = max(v["lower_pld"][i], low)
            v["lower"][i] = max(v["lower"][i], low)
    v["lower_pld"] = np.minimum(v["lower_pld"], v["upper"])
    v["lower"] = np.minimum(v["lower"], v["value"])
    return replace(r, **v), rest


def _near_one_fine_points(size: int, n_steps: int, ratio: int, div: float, per: float) -> float:
    """The fine blocks' windows of a grid of :data:`_NEAR_ONE_GRIDS`: about the schedule's window
    (``size`` points) on the fine grid, times the blocks' share of its spread."""
    div = min(div, max(1.0, _REFINE_POINTS / size))  # the coarse window within a few 1e6 points
    return size * div * ratio * math.sqrt(min(1.0, per * ratio * ratio / n_steps))


def _near_one_tilts(pld: SchedulePLD, lks: np.ndarray, levels: Sequence[int]) -> dict[int, tuple[float, float]]:
    """(saddle-point tilt, sd of the tilted composed loss) per level
    (:func:`rerokit.bounds.pld.lowertail.lower_tilt`, :func:`~rerokit.bounds.pld.lowertail.tilt_spread`);
    (0, 0) where the threshold is not in P's lower tail."""
    if not levels:
        return {}
    parts = pld.grid_steps("remove")
    out = {}
    for i in levels:
        t = lower_tilt(parts, pld.h, float(lks[i]))
        out[i] = (t, tilt_spread(parts, pld.h, t)) if t is not None and -1.0 < t < 0.0 else (0.0, 0.0)
    return out


def _near_one_groups(tilts: dict[int, tuple[float, float]], levels: Sequence[int]) -> list[tuple[float, list[int]]]:
    """Levels grouped by their saddle-point tilts (:func:`_near_one_tilts`): a group spans at most
    1.8 / sd in t, so each level is within 0.9 / sd of the group's middle tilt and its errors grow by
    at most about exp(0.9^2 / 2) = 1.5 against its own tilt (the tilted density at its threshold,
    :func:`~rerokit.bounds.pld.lowertail.tilt_spread`). (tilt, levels) per group, the largest
    groups first; a one-level group's tilt is its own saddle point."""
    tl = sorted((tilts[i][0], tilts[i][1], i) for i in levels)
    groups: list[tuple[float, list[int]]] = []
    j = 0
    while j < len(tl):
        t0, sd, _ = tl[j]
        width = 1.8 / sd if sd > 0 else 0.0
        k = j
        while k + 1 < len(tl) and tl[k + 1][0] - t0 <= width and tl[k + 1][1] > 0:
            k += 1
        groups.append((0.5 * (t0 + tl[k][0]), [i for _, _, i in tl[j: k + 1]]))
        j = k + 1
    groups.sort(key=lambda g: -len(g[1]))
    return groups


def _refine_into(
    r: ExactPower, pld: SchedulePLD, segments: Sequence[Segment], lks: np.ndarray,
    log_rdp: np.ndarray | None, wide: np.ndarray, factor: float,
) -> ExactPower:
    """Recompute the levels ``wide`` on the grid of ``pld`` finer by ``factor`` (window at most
    :data:`_REFINE_POINTS` points); each end keeps the better certified value (both stay certified
    on either grid)."""
    size = max(pld.window_points(), 1)  # the untilted window's size, composed or not (a tilt-only answer)
    factor = min(factor, max(1.0, _REFINE_POINTS / size))  # the finer window stays within a few 1e6 points
    if factor < 1.2:
        return r
    try:
        fine = pld.refined(factor)
    except PLDTooWide:
        return r
    if fine is pld:
        return r
    sub = np.nonzero(wide)[0]
    r2 = _exact_power_once(fine, segments, lks[sub], None if log_rdp is None else np.asarray(log_rdp)[sub])
    better = r2.log_value < r.log_value[sub]
    floored = np.array(r.floored, copy=True)
    floored[sub] &= r2.floored
    lower_pld = np.array(r.lower_pld, copy=True)
    lower_pld[sub] = np.maximum(lower_pld[sub], r2.lower_pld)
    lower = np.array(r.lower, copy=True)
    lower[sub] = np.maximum(lower[sub], r2.lower)
    return _upper_ends_merged(r, r2, sub, better, lower_pld, lower, floored, min(float(r.floor), float(r2.floor)),
                              fine.h)


def _one_step_closed_form(pld: SchedulePLD, lks: np.ndarray) -> ExactPower | None:
    """One step (T = 1, one example, 0 < q < 1, sigma in the grid range): the exact Neyman-Pearson
    power, or None for any other schedule.

    The likelihood ratio of (1-q) N(0, s^2) + q N(1, s^2) against N(0, s^2) is increasing in x,
    so the most powerful test at level kappa rejects when x > s z, z = Phi^-1(1 - kappa), and
    gamma = (1-q) kappa + q Phi(1/s - z) (Hayes, Mahloujifar & Balle 2023, Thm 2 with T = 1). In
    logs (scipy's ``ndtri_exp`` and ``log_ndtr``, accurate to ~1e-14 relative down to
    kappa = 1e-300 and beyond); the bracket is that value widened by 1e-10 relative on each
    side, far more than the special functions' error. The PLD's tails at tiny kappa are a
    mixture (the unsampled component dominates every tilt), which this avoids.
    """
    if len(pld.segments) != 1 or pld.group_size != 1:
        return None
    sigma, q, T = pld.segments[0]
    if T != 1 or not 0.0 < q < 1.0 or not SIGMA_GRID_RANGE[0] <= sigma <= SIGMA_GRID_RANGE[1]:
        return None
    from scipy.special import log_ndtr, ndtri_exp

    lks = np.minimum(np.asarray(lks, dtype=float), 0.0)
    with np.errstate(divide="ignore"):
        z = -ndtri_exp(lks)  # Phi(-z) = kappa
        lg = np.logaddexp(math.log1p(-q) + lks, math.log(q) + log_ndtr(1.0 / sigma - z))
    lg = np.minimum(lg, 0.0)
    log_up = np.minimum(lg + 1e-10, 0.0)
    lower = np.maximum(np.exp(lg - 1e-10) * (1.0 - 1e-15), np.exp(lks))  # and gamma >= kappa (a coin)
    x = sigma * z  # the threshold in x, its loss log(1 - q + q e^{(2x - 1)/(2 s^2)})
    with np.errstate(over="ignore"):
        eps_star = np.logaddexp(math.log1p(-q), math.log(q) + (2.0 * x - 1.0) / (2.0 * sigma * sigma))
    value = np.array([round_up_exp(float(v)) for v in log_up])
    up = np.exp(log_up)
    false = np.zeros(lks.shape, dtype=bool)
    log_lower = np.minimum(np.maximum(lg - 1e-10 - 1e-15, lks), log_up)  # lower's log, kept below 1e-300 too
    return ExactPower(
        log_upper=log_up, upper=up, lower_pld=np.minimum(lower, up), eps_star=eps_star, floor=0.0,
        floored=false, used_rdp=false.copy(), log_value=log_up, value=value, lower=np.minimum(lower, value),
        h=pld.h, log_lower=log_lower,
    )


def _tilt_first(pld: SchedulePLD, lks: np.ndarray) -> dict[int, tuple[float, float, float]]:
    """The levels whose bracket starts with the far-tail tilt, before (and mostly instead of) the
    untilted double-precision composition (the rule at :data:`_TILT_FIRST_BELOW`), as
    {index: (threshold estimate, log gamma estimate, log of the double bracket's predicted width)}
    (:meth:`rerokit.bounds.pld.SchedulePLD.tail_forecast`). A choice of computation only: every
    bracket computed either way is certified. It reads the schedule and the levels only (not what
    ``pld`` has composed so far), so the answer does not depend on the comparisons asked for.
    Empty where the arithmetic is not double."""
    out: dict[int, tuple[float, float, float]] = {}
    if pld.precision != "double":
        return out
    log_ro = math.log(_RO_PER_STEP * sum(T for _, _, T in pld.segments))
    for i in np.nonzero((lks <= _TILT_FIRST_BELOW) & (lks >= MIN_TILTED_LOG))[0][:_MAX_TILTED]:
        fc = pld.tail_forecast(float(lks[i]))
        if fc is None:
            return {}  # not the same kind of schedule at every level: the plain path
        _, thr, lg, spread = fc
        log_w = math.log(2.0) + log_ro + float(np.logaddexp(-lg, -float(lks[i])))
        # (the two-grid tilt of tiny q, pld.jumps, costs about the same whatever the spread: first
        # where the untilted window is long, _TILT_FIRST_JUMP_POINTS)
        # (and the one-jump bound of rare sampled steps, first where it applies:
        # SchedulePLD.tail_by_one_jump; sigma 0.866, q 1.04e-7, T 6130, kappa 1e-9 composed a
        # 1.5M-point untilted window first, 380 -> 24 ms)
        lk = float(lks[i])
        if lg <= math.log(_TILT_FIRST_GAMMA) and (log_w >= math.log(_TILT_FIRST_USELESS) or (
                log_w > math.log(_PRECISE_ENOUGH) and (spread <= _TILT_FIRST_SPREAD or pld.tail_by_one_jump(lk) or (
                    pld.window_points() >= _TILT_FIRST_JUMP_POINTS and pld.tail_by_jumps(lk))))):
            out[int(i)] = (thr, lg, log_w)
    return out


def _exact_power_once(
    pld: SchedulePLD, segments: Sequence[Segment], lks: np.ndarray, log_rdp: np.ndarray | None
) -> ExactPower:
    """:func:`exact_power_many` on the grid of ``pld`` only (no refinement).

    Where :func:`_tilt_first` picks every level, their brackets are the far-tail tilt's
    (:meth:`rerokit.bounds.pld.SchedulePLD.tail_power`) with the max test's power as a second lower
    end, and no untilted composition is computed unless a bracket is wider than
    :data:`_PRECISE_ENOUGH` (relative; with the lower end) where the round-off prediction leaves the
    double or extended composition some use, or (with or without the lower end) the tilt's upper end
    is far above the estimate of gamma (it failed); then the plain path below runs as well and each end
    keeps the better value. On that tilt-only answer ``eps_star`` is the tilted mean Psi'(t) (the
    threshold to first order, :func:`rerokit.bounds.pld.tilt.tail_forecast`) and ``floor`` the
    largest bracket width (upper - lower) of the levels: there is no untilted PLD error floor."""
    first = _tilt_first(pld, lks)
    pre = {i: pld.tail_power(float(lks[i])) for i in first}
    if first and len(first) == lks.size:
        idx = sorted(first)
        log_up_t = np.array([pre[i][1] for i in idx])
        up_t = np.exp(log_up_t)
        low_t = np.minimum(np.maximum(np.exp([pre[i][0] for i in idx]), pld.max_test_lower(lks)), up_t)
        log_w = np.array([first[i][2] for i in idx])
        # the upper-end rule applies with and without the lower end, so that whenever the plain path
        # runs (and may lower the upper end) without the bracket it runs with it too
        redo_plain = log_up_t > np.array([first[i][1] for i in idx]) + math.log(8.0)
        if pld.lower:
            redo_plain |= (up_t - low_t > _PRECISE_ENOUGH * up_t) & (log_w < math.log(_TILT_FIRST_USELESS))
        if not redo_plain.any():
            value = np.array([round_up_exp(float(x)) for x in log_up_t])
            false = np.zeros(lks.shape, dtype=bool)
            return ExactPower(
                log_upper=log_up_t, upper=up_t, lower_pld=low_t, eps_star=np.array([first[i][0] for i in idx]),
                floor=float(np.max(up_t - low_t)), floored=false, used_rdp=false.copy(), log_value=log_up_t,
                value=value, lower=np.minimum(low_t, value), h=pld.h,
            )
    log_up, eps_star = pld.upper.power(lks)
    log_up = np.array(log_up, dtype=float)
    up = np.exp(log_up)
    low = np.array(pld.power_lower(lks), dtype=float)
    floor = pld.upper.error
    floor_ext = np.full(lks.shape, floor)
    # The FFTs run in double precision. Their proven round-off (about 2^11 times extended
    # precision's) enters the upper end once per composition and the lower end through the level
    # of the test (times the likelihood ratio e^eps* at the threshold). Where it is a fifth of the
    # bracket or more and extended precision would make the bracket clearly narrower (gamma near 1,
    # very long schedules, small levels), those entries are recomputed from the same PLDs composed
    # in extended precision (:meth:`SchedulePLD.extended`, cached on ``pld``).
    redo = np.zeros(lks.shape, dtype=bool)
    done = np.zeros(lks.shape, dtype=bool)
    pred = up - low
    if pld.precision == "double":
        ro_up = pld.upper.roundoff
        t = pld.tests if pld.lower else None

        def ro_effect(scale: float) -> np.ndarray:
            """What round-off bounds ``scale`` times the double ones cost the bracket (doubled)."""
            eff = 2.0 * scale * ro_up
            if t is None:
                return eff + np.zeros(lks.shape)
            # the lower end tests at level kappa - (Q's slack): the upper curve's drop over that
            # shift bounds what the round-off costs there (all of it where the slack reaches kappa)
            lev = np.exp(lks) - 2.0 * scale * t.q.roundoff
            with np.errstate(divide="ignore"):
                shifted = np.exp(pld.upper.power(np.log(np.maximum(lev, 1e-320)))[0])
            return eff + 2.0 * scale * t.p.roundoff + np.where(lev > 0, np.maximum(up - shifted, 0.0), up)

        ro_eff = ro_effect(1.0)
        # predicted width of the extended-precision bracket (round-off ~2^-11 as large; 1e-3 here)
        pred = np.maximum(up - low - ro_eff, 0.0) + ro_effect(1e-3)
        floor_ext = np.full(lks.shape, floor - (1.0 - 1e-3) * ro_up)
        # at small levels the far-tail tilt instead, where the extended bracket is predicted wider
        # than _PRECISE_ENOUGH (was 1e-3: sigma 1, q 1e-3, T 1e4, kappa 1e-9 then took the double
        # composition and the tilt, 547 ms for a bracket 4.4e-5 wide, against 194 ms and 7.9e-4 now)
        tail_ext = (floor_ext > 0.1 * up) | ((lks < math.log(1e-6)) & (pred > _PRECISE_ENOUGH * up))
        narrow = _narrow_enough(up, low)
        redo = (ro_eff > 0.2 * (up - low)) & ~tail_ext & ~narrow

    def _extend(sub: np.ndarray) -> None:
        nonlocal up, floor
        ext = pld.extended()
        lu_e, _ = ext.upper.power(lks[sub])
        log_up[sub] = np.minimum(log_up[sub], lu_e)
        low[sub] = np.maximum(low[sub], np.array(ext.power_lower(lks[sub]), dtype=float))
        up = np.exp(log_up)
        floor = min(floor, ext.upper.error)
        floor_ext[sub] = ext.upper.error
        done[sub] = True

    if redo.any():
        _extend(np.nonzero(redo)[0])
    floored = floor_ext > 0.1 * up
    if not done.all():
        floored |= ~done & (pld.upper.error > 0.1 * up)
    # far tails: exponential tilting (rerokit.bounds.pld.tilt) where the error floor dominates or the
    # bracket is wide at a small level; both ends stay certified, so take the better of each
    # (not below kappa = 1e-300: there the tilt runs with its steps continued in log masses and
    # its bracket is kept in logs, _tiny_log_bracket)
    tail = (floored | ((lks < math.log(1e-6)) & (up - low > 1e-3 * up))) & (lks >= MIN_TILTED_LOG)
    # not near gamma = 1: the tilt gives gamma in relative precision, while there the target is
    # 1 - gamma, which the lower-tail tilt refines (_near_one_into); at sigma 0.3, q 0.3, T 1e6,
    # kappa 1e-30 the tilt took 12 s and changed nothing
    tail &= (1.0 - low > _BETA_NEGLIGIBLE) & (up <= _NEAR_ONE_ABOVE)
    for i in sorted(set(np.nonzero(tail)[0][:_MAX_TILTED].tolist()) | set(pre)):
        lo_t, up_t = pre[i] if i in pre else pld.tail_power(float(lks[i]))
        if up_t < log_up[i]:
            log_up[i] = up_t
        low[i] = max(float(low[i]), math.exp(lo_t))
        if math.exp(up_t) * 0.9 > floor or (up_t - lo_t) < 0.09:
            floored[i] = False
    up = np.exp(log_up)
    if pld.precision == "double":
        late = ~done & (pred < 0.8 * (up - low)) & ~_narrow_enough(up, low)
        if late.any():
            _extend(np.nonzero(late)[0])
            floored &= ~late | (floor_ext > 0.1 * up)
    log_val = log_up
    used_rdp = np.zeros(lks.shape, dtype=bool)
    if floored.any() and pld.group_size == 1:
        if log_rdp is None:
            log_rdp = np.full(lks.shape, np.inf)
            log_rdp[floored] = log_rdp_gamma_many(segments, lks[floored])[0]
        log_rdp = np.array(log_rdp, dtype=float)
        tiny = floored & (lks < MIN_TILTED_LOG)
        # below 1e-300: the Hölder bound at the best real order (pld.chernoff) first only on
        # schedules of <= _HOLDER_FIRST_STEPS steps (its binomial GDP mixture is within ~1e-8 at
        # T <= 2, the tilt's upper end 4e-8-5e-4 above); else after the tilt, where its bracket is
        # still wider than _HOLDER_SKIP
        if tiny.any() and sum(T for _, _, T in segments) <= _HOLDER_FIRST_STEPS:
            log_rdp[tiny] = np.minimum(log_rdp[tiny], log_chernoff_gamma_many(segments, lks[tiny])[0])
            tiny[:] = False
        used_rdp = floored & (log_rdp < log_up)
        log_val = np.where(used_rdp, log_rdp, log_up)
    else:
        tiny = np.zeros(lks.shape, dtype=bool)
    small = lks < MIN_TILTED_LOG
    tiny_lower = None
    if small.any():
        # the tests' and the tilted PLD's bracket in logs (_tiny_log_bracket); the tilt's upper end
        # (its steps continued in log masses, pld.logtail) where it beats the Hölder/RDP value:
        # each certified, the smaller kept
        tiny_lower, tiny_upper = _tiny_log_bracket(pld, lks[small], log_val[small])
        idx = np.nonzero(small)[0]
        log_val = np.array(log_val, dtype=float)
        used_rdp = np.array(used_rdp)

        def keep_smaller(cand: np.ndarray, from_rdp: bool) -> None:
            won = cand < log_val[idx]
            if not from_rdp:
                log_up[idx[won]] = np.minimum(log_up[idx[won]], cand[won])
            log_val[idx[won]] = cand[won]
            used_rdp[idx[won]] = from_rdp

        keep_smaller(tiny_upper, False)
        # the Hölder bound where the bracket is still wide: it can lower the value by at most the
        # bracket's width, and it is most of the call (2.4 s for one segment, 94 s for 40 distinct)
        late = tiny[idx] & (log_val[idx] - tiny_lower > _HOLDER_SKIP)
        if late.any():
            cand = np.full(idx.shape, np.inf)
            cand[late] = log_chernoff_gamma_many(segments, lks[idx[late]])[0]
            keep_smaller(cand, True)
        up = np.exp(log_up)
    value = np.array([round_up_exp(float(x)) for x in log_val])
    lower_pld = np.minimum(low, up)
    with np.errstate(divide="ignore"):
        log_lower = np.minimum(np.log(np.minimum(lower_pld, value)), log_val)
    if tiny_lower is not None:  # below 1e-300 the lower end underflows: its certified log (_tiny_log_bracket)
        log_lower[small] = np.minimum(np.maximum(log_lower[small], tiny_lower), log_val[small])
        # and its value where that is in double's normal range (1e-14 below: exp's few ulps)
        normal = small & (log_lower > MIN_TILTED_LOG)
        got = np.exp(log_lower[normal]) * (1.0 - 1e-14)
        lower_pld[normal] = np.minimum(np.maximum(lower_pld[normal], got), up[normal])
    return ExactPower(
        log_upper=log_up, upper=up, lower_pld=lower_pld, eps_star=eps_star, floor=floor, floored=floored,
        used_rdp=used_rdp, log_value=log_val, value=value, lower=np.minimum(lower_pld, value), h=pld.h,
        log_lower=log_lower,
    )


def _tiny_log_bracket(pld: SchedulePLD, lks: np.ndarray, log_upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) ends of log gamma at levels below 1e-300 (e.g. the pixel-tolerance
    baselines of Hayes, Mahloujifar & Balle 2023, App. I), where gamma itself is below double range.

    The largest of three certified powers of actual tests at level <= kappa (Neyman & Pearson 1933:
    any such test's power is <= gamma): the max test's, in logs
    (:func:`rerokit.bounds.pld.maxtest.log_max_test_power`), the linear test's
    (:func:`rerokit.bounds.pld.chernoff.log_sum_test_power`: the all-sampled component's optimal
    test, within ~1e-9 of the mixture's upper bound at small T), and, where those two leave a
    bracket wider than 0.01 against ``log_upper`` (the RDP upper ends; with Hölder's on schedules of
    <= 8 steps: :data:`_HOLDER_FIRST_STEPS`), the tilted PLD's
    (:meth:`SchedulePLD.tail_power`, :mod:`rerokit.bounds.pld.tilt`; at most :data:`_MAX_TILTED`
    levels; its lower end with the statistic only: ``pld.lower``). The tilt's bracket is certified
    at any level: its steps are truncated at 1e-300 at the deepest (the smallest double-range
    tail) and continued beyond in log masses (:mod:`rerokit.bounds.pld.logtail`) down to a mass
    at +infinity of kappa e^-30, so its upper end is PLD-quality too (it was the truncated tail at
    +infinity, ~T 1e-300, that spoiled it). Its upper end is returned (+inf where not computed);
    the lower end -inf where nothing applies (groups of examples)."""
    out = np.full(lks.shape, -math.inf)
    upper = np.full(lks.shape, math.inf)
    if pld.group_size != 1:
        return out, upper
    out = np.maximum(out, log_max_test_power(pld.segments, lks))
    out = np.maximum(out, [log_sum_test_power(pld.segments, float(lk)) for lk in lks])
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    for i in np.nonzero(log_upper - out > 0.01)[0][:_MAX_TILTED]:
        try:
            lo_t, up_t = pld.tail_power(float(lks[i]))
        except (ValueError, ArithmeticError, MemoryError, WindowTooWide, StepTooWide):
            continue
        if pld.lower:
            out[i] = max(out[i], float(lo_t))
        upper[i] = float(up_t)
    return out, upper
