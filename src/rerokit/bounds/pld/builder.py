"""The composed PLDs of a DP-SGD schedule, built once and queried many times.

:func:`schedule_pld` takes a :class:`~rerokit.bounds.schedule.Schedule` (or validated (sigma, q, T)
triples) and returns a :class:`SchedulePLD`, whose directions are composed on first use only
(``upper``: the dominating REMOVE PLD; ``add``: the dominating ADD PLD, for epsilon and the
symmetrised curve; ``tests``: the bucket statistic for certified lower ends; ``replace``: the
substitution pair). Identical (sigma, q) segments are merged (composition is commutative), so a
history of thousands of alternating steps costs one composition per *distinct* step.

Steps outside the double-precision range of the grid get their own certified treatment instead of
sending the whole schedule to a closed-form envelope:

* sigma < :data:`SIGMA_GRID_RANGE` [0], or small enough that T Phi(-1/(2 sigma)) <= e^-5060
  (near-noiseless, :func:`_revealing`; sigma <= ~0.005): the pair is a post-processing (adding
  N(0, sigma^2)) of the pair "the sampling indicator is revealed", P' = (1-q) delta_0 + q delta_1
  against Q' = delta_0, whose PLD is exact and has two atoms: loss log(1-q) with P-mass 1-q
  (rounded up to the grid) and +infinity with P-mass q (ADD direction: loss -log(1-q), P-mass 1).
  That pair dominates (Blackwell) for every sigma and is the sigma -> 0 limit, within 2 eps / alpha
  relative of the truth at level alpha (eps = T Phi(-1/(2 sigma)), the error of decoding the
  indicator), so the bound stays PLD-quality for the rest of the schedule. Those steps are ignored by the lower-end tests (a test that
  ignores part of the output is still a test).
* sigma > :data:`SIGMA_GRID_RANGE` [1] (near-silent): Poisson subsampling never makes the pair
  more distinguishable (f_mix(alpha) = (1-q)(1-alpha) + q f(alpha) >= f(alpha)), and the
  full-batch steps together are one Gaussian pair with mu = sqrt(sum T_i / sigma_i^2); they are
  replaced by one q = 1 step with noise multiplier 1/mu (dominating), and ignored by the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from rerokit.bounds.pld.batch import BATCH_MIN, mass_defect_batched, segment_excesses, step_plds_batched
from rerokit.bounds.pld.compose import MAX_FFT, WindowTooWide, chernoff_window, compose, compose_inf_mass
from rerokit.bounds.pld.discrete import Bracket, DiscretePLD, GridPMF, ThresholdTests
from rerokit.bounds.pld.lowertail import NearOneGrid, near_one_beta
from rerokit.bounds.pld.logtail import composed_log_inf, extend_step
from rerokit.bounds.pld.maxtest import log_max_test_power, loss_matched_threshold
from rerokit.bounds.pld.onejump import JumpStep, one_jump_upper
from rerokit.bounds.pld.normal import log_ndtr
from rerokit.bounds.pld.jumps import JUMP_LOG_TAU, MAX_SLICES, JumpTilt, jump_power_share, multi_slice_count
from rerokit.bounds.pld.onestep import one_step_upper, segment_lower, segment_upper
from rerokit.bounds.pld.tilt import saddle_tilt, tail_forecast, tilted_power
from rerokit._resources import check_memory, group_step_pld_bytes
from rerokit.bounds.pld.step import (STEP_POINTS, StepTooWide, default_grid_step, dpsgd_step_pld, loss_range,
                                    loss_tails, MAX_STEP_WIDTH)

# tail_power where the far-truncated steps do not fit the grid: truncation depths below the level
# (in nats) and the grid coarsening factors tried, finest first
_COARSE_TAIL_DEPTHS = (1.5, 3.0, 6.0)
_COARSE_TAIL_FACTORS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.5, 8.0, 12.0, 16.0, 32.0)
# ... tried first: the shallowest truncation whose mass at +infinity is <= alpha e^-_INF_DEPTH; the
# further depths only while the bracket is wider than _COARSE_TAIL_ENOUGH (in log)
_INF_DEPTH = 7.0
_LOG_MIN_TAIL = math.log(1e-300)
"""The smallest truncation tail_power uses (the smallest double-range normal tail, about Phi(-37))."""
# below 1e-300 the steps' log-mass continuation (rerokit.bounds.pld.logtail) ends where the mass beyond
# is at most alpha e^-_LOG_TAIL_DEPTH / T per step: the composed mass at +infinity is then e^-30 of the level
_LOG_TAIL_DEPTH = 30.0
_COARSE_TAIL_ENOUGH = 0.008
_TAIL_FIRST_POINTS = 131_072
# (was 0.003; 0.004 stays below dpsgd_exact._PRECISE_ENOUGH = 5e-3, under which a tilt-only bracket is final)
_TAIL_FIRST_ENOUGH = 0.004
# ... the first grids (where this grid's step has >= 8 times as many points): one step on
# _TAIL_LADDER_START points, then finer by the factor that the width predicts for half
# _TAIL_FIRST_ENOUGH (width ~ h^_TAIL_LADDER_ORDER, measured 1.2-2.7 at sigma 1, q 1e-4, T 1e3-1e6,
# kappa 1e-9-1e-20), at least 2, up to _TAIL_FIRST_POINTS (the tilted composition's cost is about linear in
# the points: at T 1e3, kappa 1e-20 8192 points gave a bracket 3.3e-4 wide in 0.25 s, 131072 points
# 2.5e-4 in 4.1 s)
_TAIL_LADDER_START = 8192
_TAIL_LADDER_ORDER = 2.0
# ... and stopped, with every later grid of that truncation, where a grid at least twice as fine
# left the bracket wider than _TAIL_LADDER_STALL times the previous one: the grid does not set its
# width there (sigma 0.785, q 1.94e-6, T 65, kappa 6.4e-16, q T = 1.3e-4: the error terms of an
# almost lattice-like tail; six grids down to 1/24 of the first one's step, 18 s, each bracket 5.8-6.4 %
# wide in log, the combined one 5.8 %: now the first two, 0.8 s, the same bracket)
_TAIL_LADDER_STALL = 0.7
# ... and then, where the truncation's mass at +infinity is above alpha e^-_INF_DEPTH: stopped too
# where putting all of it back on the grid could not bring the bracket within _COARSE_TAIL_ENOUGH
# (_STALL_GAIN), else only the deeper truncations on the ladder's narrowest grid (_STALL_DEEPER),
# not the width law's nor this grid's own finer ones. Where one sampled step of sigma ~1 sets the
# power beside a long schedule of small losses the masses at the threshold are ~1e-12 of the tilted
# window's, the error terms set the bracket on every grid and the finer ones were wider (1.6 % on
# the ladder's grid, 1.9-4.9 % on finer ones): [(1.005, 1.04e-4, 16), (5.702, 1.93e-4, 17565)] at
# kappa 2e-21: 15.9 s -> 1.8 s, the same bracket; [(1.216, 1.28e-4, 51), (3.122, 2.38e-4, 24863)]
# at kappa 1.2e-26: 21 s -> 1.8 s, the same; [(1.406, 1.34e-4, 99), (4.434, 1.51e-4, 7600)] at
# kappa 1.35e-26: 16.3 s -> 1.3 s, 1.27 % -> 1.23 %. No cell of --grid, seeds 13 / 14 of
# benchmarks/pld_far_tail.py or its --small-q seeds 1 / 2 changed (brackets bit for bit)
_STALL_GAIN = True
_STALL_DEEPER = True
# ... the ladder only where one step on this grid has at least this many times _TAIL_LADDER_START
# points (else this grid's own tilt first; was 8: sigma 1.36, q 3e-3, T 1e4, kappa 1e-20-1e-30, steps
# 6-8 times that, took this grid's tilt, 135-165 ms for brackets 2-3e-4 wide; the ladder 42-45 ms for
# 2.9-3.9e-3. Where the ladder's grids do not suffice they cost 7-13 % more, sigma 0.64-1.36,
# q 1e-3-3e-3, T 7e4-1e6)
_LADDER_MIN_RATIO = 4.0
# the one-grid tilt on this grid where its window is predicted (tail_forecast's spread times the
# untilted window) at most this many points, else the coarse ladder first (seventh stop: sigma 5.6 /
# 0.589, q 1.2e-3 / 1.5e-3, T 2470 + 195, kappa 3.2e-11: spread 68 on a 2.1e5-point window, the
# tilt took 1.1 s on 2e6 points for a bracket 3.3e-6 wide (in log); the ladder 29 ms, 2.0e-3)
_TILT_OWN_POINTS = 2_000_000
# ... and above 1.5 times _TILT_REGRID_ABOVE predicted points, first on a grid coarser by that ratio
# (at most _TILT_REGRID_MAX): sigma 5.801 / 1.419, q 8.4e-3 / 1.7e-3, T 1900 + 90, kappa 2.4e-12
# (spread 9.5 on 4.9e4 points; the tilted windows 3-5e5 points): 211 ms for a bracket 3.5e-5 wide
# (in log) on this grid, 44 ms and 5.5e-4 on a 4x coarser one (dp-accounting 0.11 s). Not below
# 1e-300, and on the automatic grid only (a grid refined for a wide bracket, dpsgd_exact._refine_into, keeps
# its own: coarsened again, sigma 1.75, q 2.46e-3, T 656064, kappa 6.6e-30 ended 3.3 % wide). Since the
# eighth stop one segment too (the steps truncated at _inf_truncation where it exists; at first with
# these two constants): sigma 1.28, q 1.75e-3, T 2477, kappa 2.5e-17 0.39 s -> 0.10 s (riskcal 0.11 s),
# sigma 1.17, q 5.3e-3, T 39, kappa 2e-24 0.50 s -> 0.07 s, every bracket still below 1 %; one segment
# now uses _TILT_REGRID_ONE instead (the first: 54 ms, benchmarks/pld_far_tail.py)
_TILT_REGRID_ABOVE = 100_000
_TILT_REGRID_MAX = 4.0
# ... one segment only where the forecast's spread is at least this: the tilted window is then the
# far tail of a short schedule, whose grid (sized for the bulk) is needlessly fine for it. At a small
# spread the bulk's grid is the tail's too: sigma 1, q 1e-3, T 1e5, kappa 1e-9 (spread 2.5) was 1.05 %
# wide on the coarser grid, and the refinement then cost 0.27-0.46 s against 0.15 s on its own grid
_TILT_REGRID_SPREAD = 8.0
# ... and there coarser by pred / 5e4, at most 8x (the tilted window of a short schedule's far tail
# is wide, and its bracket narrow: 40 random such cells, sigma 0.6-2.3, q 1e-4-0.04, T 13-6e4, kappa
# 1e-12-1e-30: the same or 1.1-2x faster than pred / 1e5 at most 4x, widths 7e-5-3.6e-3, were 4e-5-2e-3)
_TILT_REGRID_ONE = (50_000, 8.0)
# the coarse ladder (_tail_power_coarse) on a grid that is coarse for one step but whose tilted window
# is predicted above _TILT_OWN_POINTS: its first grid coarser by the prediction over this, at most 8x
# (sigma 0.894, q 2.45e-3, T 114, kappa 4.8e-23: the tilt on this grid took 0.36 s for a bracket
# 2.6e-6 wide; riskcal 0.29 s)
_TILT_LADDER_WINDOW = 250_000
# the coarse path's truncation depths start on the grid that the width law predicts _WIDTH_AIM wide
# (in log): coarser by at most _WIDTH_MAX_FACTOR where that is at least _WIDTH_COARSER, finer by at most
# _WIDTH_FINER[1] where the factor is at most _WIDTH_FINER[0] (this grid's own then predicted above
# ~7.3e-3, near dpsgd_exact._REFINE_ABOVE's refinement); one segment of at least _WIDTH_MIN_STEPS steps.
# The law, fitted on 102 far-tail tilts (seeds 13-15 of benchmarks/pld_far_tail.py and its --grid,
# T >= 1000, brackets not set by the mass at +infinity): log w = _WIDTH_LAW[0] + _WIDTH_LAW[1] log T
# + _WIDTH_LAW[2] log(t h) + _WIDTH_LAW[3] log t (t the saddle-point tilt), residuals of sd 0.19 and
# at most 0.65; shorter schedules strayed up to 4 (sigma 1.08, q 2.1e-3, T 22). The ladder is skipped
# where the law predicts its first grid wider than twice _TAIL_FIRST_ENOUGH. Measured (tenth stop,
# the law on and off in one process): --grid 1.28x, seeds 13/14 1.07x/1.06x faster, no cell slower
# beyond 0.96x at 0.5 for the finer bound; 0.6 moved sigma 1.36, q 1e-3, T 3e5, kappa 1e-30 from 131
# to 83 ms (no refinement) and made two cells whose own grid was 7.5e-3-9.5e-3 wide finer (22-23 -> 34-36
# ms, 31 -> 41-42 ms in two runs, brackets 3e-3), 1.00-1.01x overall; _WIDTH_COARSER 1.25 rather than 1.5: 1.01-1.03x
# (sigma 1.36, q 1.13e-3, T 70744, kappa 1.2e-30, factor 1.47: 224 -> 136 ms, 1.5e-3 -> 3.2e-3 wide).
# The aim was 3e-3 until the seventeenth stop; 6e-3 since (with _WIDTH_FINER[0] 0.6 -> 0.9, so that
# this grid's own is still predicted below dpsgd_exact._REFINE_ABOVE, the 1 % the rest of the engine
# accepts): on the --grid, in one session, geometric mean x2.36 -> x2.78 against riskcal, slower in
# 1 -> 0 of 36 (sigma 1.36, q 1e-3, T 7e4, kappa 1e-30: x0.95 -> x1.33, 4.3e-3 -> 7.5e-3 wide), the
# widest bracket 7.9e-3 either way, the affected ones 2.8e-3-3.5e-3 -> 6.0e-3-7.5e-3; seeds 13 / 14
# x5.92 / x4.96 -> x6.11 / x5.06. A choice of grid only: any grid is certified
_WIDTH_AIM = 6e-3
_WIDTH_MAX_FACTOR = 4.0
_WIDTH_MIN_STEPS = 1000
_WIDTH_FINER = (0.9, 8.0)
_WIDTH_COARSER = 1.25
_WIDTH_LAW = (-2.35, 0.9, 1.8, -0.94)

# the two-grid tilt (rerokit.bounds.pld.jumps) of tail_power: for q <= _JUMP_Q (several distinct steps:
# the smallest q; a step with a larger q that has few losses above the cut is part of the product
# slices like any other, the slice count and _few_jumps deciding. Since the seventh stop: a tiny-q
# segment beside one with q 3e-3-0.03 took the one-grid tilt on ~1.3e6 points, 0.67 s against
# dp-accounting's 0.44 s, or its refinement, 2.3 s; now 0.1-0.2 s), where the tilted
# schedule makes at most _JUMP_MAX expected jumps (losses >= _JUMP_CUT nats; one block of slices),
# on the coarse grid h_c ~ _JUMP_TH / t (the tilted weight of a re-discretised mass moves by at most
# e^{t h_c}); alone where it applies
# the far-tail tilt skips its statistic (the lower end) where the max test's power is within this
# (in log) of its upper end (SchedulePLD._tail_power_from); a bracket that narrow is final
# (dpsgd_exact._PRECISE_ENOUGH is 5e-3)
_MAX_TEST_ENOUGH = -math.log1p(-2e-3)

_JUMP_Q = 1e-3
# ... and where the error term of its upper end is more than this share of it (after the "mixed"
# precision of pld.tilt.pulled_upper), the one-grid tilt too, each end the better: where one sampled
# step of sigma ~1 sets the power beside a long schedule of small losses, the tilt that brings the
# tilted mean to the threshold also weights that step's far tail, the masses at the threshold are
# tiny against the window's and the two grids' statistic found no test (the lower end the level
# itself). 40 random cells of such schedules (sigma 0.5-2, q 1e-4-1e-3, T 1-300 beside sigma 1-6,
# q 1e-4-1e-3, T 100-1e5, kappa 1e-30-1e-9; seed 7): widest 53.6 % -> 5.1 %, 5.8 -> 8.1 s in all;
# seed 5: 47.8 % -> 15.8 % (that cell the one-grid tilt's own), 4.3 -> 7.6 s; the error share
# was above e^-5.4 in every such cell wider than 1 %, below e^-7 in the narrow ones measured. No cell
# of --grid, seeds 13 / 14 of benchmarks/pld_far_tail.py or its --small-q seeds 1 / 2 changed
_JUMP_SHARE = math.log(1e-3)
# ... and, with the lower end, where its bracket is wider than this in log (a rule that reads the
# lower end, as the width rules of rerokit.bounds.dpsgd do): a few sampled steps of sigma ~1 over a
# long schedule of tiny q (sigma 0.93, q 4.2e-5, T 58081, kappa 3.1e-12: the two grids [-26.488,
# -26.230] in log, both ends loose with a small error share; the one grid [-26.2993, -26.2966])
_JUMP_WIDE = 0.01
# ... and before that (with the lower end), where the error share exceeds _JUMP_SHARE, the two-grid tilt
# once more with the windows' tail mass (and the omitted slices' bound) at this instead of
# pld.jumps.JUMP_LOG_TAU, each end the better; the max test's closed form is folded into the lower end,
# and then only the width decides whether the one-grid tilt runs too (fifteenth stop). Tiny q, few
# sampled steps, whose tilted masses at the threshold are small against the window's: sigma 0.78,
# q 3.1e-7, T 1.9e5, kappa 1.3e-26: the upper end e^-59.1892 -> e^-59.1966, the max test e^-59.2023
# (the two grids' statistic found no test), 39 s -> 0.22 s (best of 3), the bracket 1.3 % -> 0.57 % (the one-grid
# tilt's coarse ladder, twice with the refinement, had added nothing); sigma 0.841, q 8.9e-7, T 118579,
# kappa 1.9e-26: 2.1 -> 0.27 s, 0.50 % -> 0.057 %. 80 random cells at sigma 0.3-20, q 1e-7-1e-4,
# T 1-1e6, kappa 1e-30-1e-2 (seed 41): 45.1 -> 5.1 s in all, widest 1.3 % -> 0.70 %, 5 widths changed
# (two narrower, three wider but within 0.8 %: 7.3e-4 -> 8.1e-4, 9.4e-4 -> 1.5e-3, 6.8e-3 -> 7.0e-3).
# pld_soundness.py --one-jump seeds 1 (40 settings) and 0 (30): none missed, widest 0.48 %
_JUMP_RETRY_TAU = math.log(1e-16)
# ... and its statistic (the lower end) skipped where the max test's power is within this of its upper
# end (in log; as _MAX_TEST_ENOUGH for the one-grid tilt): at q T << 1 the two grids' statistic found
# no better test, and its slices were most of the time (sigma 0.982, q 1.7e-6, T 28379: 4 blocks of
# 22 slices, 290 of 520 ms). The bracket is then within 5e-3 (dpsgd_exact's "precise enough"); where
# the statistic would have narrowed it further, it is wider than before (30 random cells at sigma
# 0.5-2, q 1e-7-1e-4, T 1e3-1e6, kappa 1e-30-1e-6, seed 1: sigma 0.614, q 2.9e-5, T 112165, kappa
# 7.8e-12 8.5e-4 -> 3.7e-3, 60 -> 39 ms; sigma 0.715, q 2e-5, T 124073 1.6e-3 -> 2.2e-3, 47 -> 30 ms;
# 3.6 -> 2.1 s in all)
_JUMP_ENOUGH = 5e-3
# ... and its tilt pulled below the saddle point by this (nats at the threshold: pld.tilt.pulled_tilt),
# unless the pulled upper end's error term is too large (pld.tilt.pulled_upper): fewer tilted jumps,
# fewer slices (30 random tiny-q cells, sigma 0.7-1.6, q 5e-5-1e-3, T 1e3-1e6: 1.10x; --grid 1.06x;
# sigma 1, q 1e-3, T 3e5, kappa 1e-30 284 -> 139 ms; 2 for 1.04x and 1.05x)
_JUMP_PULL = 3.0
_JUMP_MAX = 4.0
_JUMP_CUT = 0.05
# ... or, for one distinct step whose grid has no loss above _JUMP_CUT, this share of the forecast's
# threshold (q T << 1 at q ~1e-8: the threshold itself a few hundredths of a nat; sigma 0.8, q 3e-8,
# T 5e5, kappa 1e-28: the threshold 0.019, declined before; the one-grid tilt's coarse ladder took
# 21.5 s, twice with the refinement)
_JUMP_CUT_OF_THRESHOLD = 0.25
# ... on schedules of at least this many steps: on shorter ones the one-grid tilt was as tight and
# faster (sigma 1.526, q 7.8e-5, T 2828, kappa 3.7e-19: 10 ms and 1.4e-3 against 21 ms and 4.9e-3;
# sigma 0.866, q 1e-7, T 6130: 41 against 320 ms), on long ones its coarse ladder can take seconds
_JUMP_CUT_LONG = 100_000
_JUMP_TH = 0.02
# rare sampled steps (sum q T at most _ONE_JUMP_QT): the upper end with one large loss
# taken entry by entry (pld.onejump), on a grid of _ONE_JUMP_LABELS labels up to the max test's
# per-step threshold c, the jumps from _ONE_JUMP_CUT c, the threshold looked for on
# [_ONE_JUMP_SCAN] c. There the tilts' upper ends stayed 2.6-9 % above the power (sigma 0.668,
# q 2.16e-7, kappa 1.9e-17: T 2 [-38.46354, -38.43695] in log, the exact power -38.4635363 by mpmath;
# T 32632 [-38.3636, -38.2683] after 2.3 s). Up to 0.5 expected sampled steps: its Chernoff terms
# for two or more jumps grow with q T, yet it is cheap (10-25 ms) and often final there too (25
# random cells at q <= 1e-5, q T 0.1-0.6, seed 11: final in 6 of the 13 where it applied, sigma
# 0.705, q 4.9e-7, T 218442, kappa 2.9e-16 in 25-36 ms within 4e-4 where the tilts took 6.1 s to a
# bracket 2.9 % wide; else 11-18 ms more). 6 since the eighteenth stop, with the finer grids below
# (_ONE_JUMP_FINER): sigma 0.8, q 1e-6, T 1e6 (one expected sampled step), kappa 1e-15 was 4.9 % wide
# after 7.9 s (the tilts' upper end, refined 4x; the max test's lower end), now 0.10 % in 57 ms;
# sigma 0.8, q 3e-6, T 1e6 (q T 3), kappa 1e-15 2.1 % in 2.5 s -> 0.31 % in 0.54 s
_ONE_JUMP_QT = 6.0
# ... at q at most _ONE_JUMP_Q, and where c is at least _ONE_JUMP_SPREAD times the bulk's standard
# deviation, q sqrt(T (e^{1/sigma^2} - 1)) (a choice only; where either fails its bound lost to the
# tilts' on random cells: sigma 2.47, q 2.2e-5, T 970, kappa 1e-13: e^-5.3 against e^-29.90 (c at 2.2
# standard deviations); sigma 0.528, q 6.7e-5, T 271, kappa 1e-28: e^-53.26 against e^-53.82). 11 since the
# finer grids (_ONE_JUMP_FINER): sigma 0.81, q 3.4e-6, T 471659, kappa 4.1e-12 (c at 13 deviations) 2.3 %
# wide in 3.3 s -> 0.71 % in 1.0 s; at 10.5 (sigma 0.8, q 3e-6, T 1e5, kappa 1e-9) the bound took 240 ms
# where the two-grid tilt takes 40. On 54 grid and 90 random tiny-q cells (seeds 1-3), against 2 / 20
# with no finer grid, in one process: 12.0 -> 7.3 s in all, widest 2.3 % -> 1.3 %, 19 brackets changed
# (13 narrower; the 6 wider all within 1.6e-3: the one-jump bound final within _ONE_JUMP_ENOUGH where
# the tilts went further), the slowest change 18 -> 42 ms (sigma 1.25, q 5.45e-7, T 202092, kappa
# 1.2e-25, 1.7e-3 -> 7.9e-4 wide)
_ONE_JUMP_Q = 1e-5
# ... and at q up to _ONE_JUMP_RARE_Q where sum q T is at most _ONE_JUMP_RARE_QT (nineteenth stop;
# below that it is final against the max test on 19 of 21 random cells with 1e-5 < q <= 1e-4, mostly in
# 7-12 ms, where the tilts took 6-181 ms: sigma 0.911, q 1.02e-5, T 1299, kappa 1.25e-13 181 -> 16 ms,
# the bracket 6.6e-4 -> 5.4e-5 wide; above 0.1 final on 5 of 11 (19-26 ms spent where not). Above
# q 1e-4 the tilts are cheap and narrower: on pld_far_tail.py --small-q seed 1, q up to 1e-3 made
# sigma 3.7, q 8.8e-4, T 9, kappa 3.7e-19 8 -> 25 ms and sigma 1.27, q 1.3e-4, T 416 7 -> 25 ms)
_ONE_JUMP_RARE_Q = 1e-4
_ONE_JUMP_RARE_QT = 0.1
_ONE_JUMP_SPREAD = 11.0
_ONE_JUMP_LABELS = 1000
# ... then on grids _ONE_JUMP_FINER times finer while not final (the bulk's grid: connect-the-dots
# adds about h q of variance per step, T h q in all, against the bulk's own T q^2 (e^{1/sigma^2} - 1);
# sigma 0.8, q 3e-6, T 1e6, kappa 1e-15: 2.5 % above the max test at 1000 labels, 0.31 % at 4000,
# 0.12 % at 16000, but 16000 cost up to 0.3 s where the tilts take 20 ms; its Chernoff terms were 0.25 %
# of the bound)
_ONE_JUMP_FINER = (4,)
_ONE_JUMP_CUT = 0.5
_ONE_JUMP_SCAN = (0.6, 1.8)
# ... final where its upper end is within this of the max test's power (in log)
_ONE_JUMP_ENOUGH = 2e-3
# ... its steps on sparse labels (step.tail_labels) with the budget alpha _ONE_JUMP_SPARSE / T per step:
# cells of 2^i labels only where the mass beyond them is below that 4^-i (a choice of grid; every
# grid is certified). sigma 0.731, q 1.05e-7, T 86529, kappa 1.9e-13: 25725 labels built in ~10 ms
# before, the bracket the same to 10 digits (38 -> 28 ms in rero_dpsgd)
_ONE_JUMP_SPARSE = 1e-5
# ... and where the one-grid tilt's window would be this many times the untilted one or more
# (tail_forecast's spread: 5.7-262 at sigma 0.5-1, q 1e-4-1e-3; ~1 at sigma >= 2, q 1e-3, where the
# one-grid tilt took 17-24 ms against 31-33 ms for the two grids)
_JUMP_SPREAD = 3.0
# ... and not where the tilt is small on a short schedule: the jumps spread over many slices (K = 8
# at sigma 0.79, q 5.5e-4, T 1477, kappa 9e-29, t 9: 146 ms against 97 ms for the one-grid tilt's
# coarse grids; t 9.4 at T 1629: 96 against 86 ms), while at T 1e5-3e5 small tilts still paid
# (t 5-7: 139 / 193 ms against 445 / 990 ms)
_JUMP_SMALL_T = 12.0
_JUMP_SHORT = 5000
# ... and never on fewer than this many steps: there the one-grid tilt (with the tail allowance of
# rerokit.bounds.pld.tilt) was faster end to end in 46 of 47 random tiny-q cells (sigma 0.5-4,
# q 1e-4-1e-3, T 10-1000, kappa 1e-30-1e-6: geometric mean 1.40x, up to 14x; the other 0.70x),
# brackets within 1.3e-3; at T 1e3-5e3 the two grids still paid in 2 of 6 (0.62x and 0.68x without)
_JUMP_FEW_STEPS = 1000
# ... with several distinct steps (pld.jumps.jump_parts_multi: a product set of slices) the cut is
# the first of these whose predicted product set has at most _JUMP_MULTI_SLICES slices (else the
# one with the fewest, up to pld.jumps.MAX_SLICES): at sigma 0.5 / 1, q 1e-4 / 1e-3, T 1e5 + 1e4,
# kappa 1e-9 the cut 0.05 needs 208 slices, 0.2 36 (0.22 s), 0.5 18 (0.13 s, bracket 2.2e-4 wide);
# elsewhere 0.2 was as tight as 0.05 and as fast or faster (3-6 slices instead of 5-22)
_JUMP_MULTI_CUTS = (0.2, 0.5, 1.0)
_JUMP_MULTI_SLICES = 24
# more distinct steps than this: the two-grid tilt is declined before its slices are counted (a
# product of K_i + 1 over the steps: at most log2(MAX_SLICES) = 6 steps can have a jump slice, so
# beyond 12 only schedules where most steps never jump could fit; counting them for a 116-step noise
# schedule at q ~3e-4 took 5.4 s, for a product of ~2^100)
_JUMP_MULTI_MAX_STEPS = 12
# the bulk's grid over this one, finest first (the first on which one step fits, step.MAX_STEP_WIDTH)
_JUMP_FACTORS = (0.5, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)

# Sparse step grids (rerokit.bounds.pld.step.tail_labels) for REMOVE steps with q <= _SPARSE_Q, one
# example: nearly all of such a step's grid is the sampled component's tail (total mass q), whose
# losses reach ~1/(2 sigma^2) + x/sigma^2 while the bulk's (~q) set the grid step; every label where
# the mass beyond a point exceeds _SPARSE_BUDGET, every 2^i-th where it is below _SPARSE_BUDGET 4^-i.
# At sigma 1, q 1e-4, T 1e3 one step's 2e5 points become 8212 (0.44 s -> 0.03 s); the brackets of
# kappa 1e-3 .. 1e-20 at T 1e3 .. 1e6 (benchmarks/pld_engine.py --tinyq) the full grids' to 6-7
# digits (the lower end at T 1e6, kappa 1e-9 2e-6 lower). A choice of grid only: every grid gives a
# certified step.
_SPARSE_Q = 1e-3
_SPARSE_BUDGET = 1e-9
# default grid points per rms standard deviation of one step's loss where the schedule has at least
# BATCH_MIN distinct grid steps (pld.step.STEP_POINTS, 40, otherwise): there every distinct step is
# discretised and transformed on its own, so the cost is (distinct steps) x (points per step), while
# the bracket's relative width grows only as 1 / points^2. Measured 2026-11-26 (seventh stop; 2,000
# distinct steps, sigma ~ U(0.8, 2), q ~ U(0.005, 0.02)): kappa 1e-2 8.9 -> 4.6 s, width 9e-5 ->
# 3.6e-4; kappa 1e-9 24.9 -> 12.4 s, width 1.7e-4 -> 5.5e-4 (10 points: 2.8 / 10.6 s, 1.4e-3 / 2e-3)
_DISTINCT_STEP_POINTS = 20

__all__ = ["SchedulePLD", "PLDTooWide", "schedule_pld", "merge_segments", "SIGMA_GRID_RANGE", "LOG_TAU", "MAX_TEST_BELOW"]

LOG_TAU = math.log(1e-17)  # tail mass bound used for truncations (per composition)

# The max test's lower end (rerokit.bounds.pld.maxtest) is tried at levels at or below this only
# (where one rare jump can dominate; above, the statistic's tests are better and the time is saved).
MAX_TEST_BELOW = math.log(1e-6)

# Noise multipliers whose one-step PLD fits the double-precision grid; outside, the dominating
# replacements of the module docstring are used.
SIGMA_GRID_RANGE = (1e-4, 1e8)
_U = 2.0 ** -53  # unit round-off
# SchedulePLD.short_segment_upper: the most steps of the segment taken apart from the rest (its
# tilt ladder composes it some 10-30 times; the far tail of such a segment of small sigma beside a
# long one of small losses is a few sampled steps' large deviation, which tilting the whole
# schedule weights poorly)
SHORT_SEGMENT_STEPS = 64
REVEAL_LOG_ERROR = 5060.0  # :func:`_revealing`: near-noiseless where T Phi(-1/(2 sigma)) <= e^-this
_REVEAL_SIGMA = 0.01  # (above it Phi(-1/(2 sigma)) > e^-1254: never near-noiseless by that rule)
# SchedulePLD.revealed: segments up to this sigma also get the revealed pair's upper end (the smaller
# end is kept): at sigma 0.01-0.05 beside sigma 1, q 0.01 the grid's was 6e-6-5e-5 above it
REVEAL_BAND = 0.05


class PLDTooWide(ValueError):
    """No grid step makes this schedule's privacy-loss distribution fit the size limits (an
    astronomically long schedule); callers answer with the closed-form envelope instead."""


def merge_segments(segments: Sequence[Sequence[Any]]) -> tuple[tuple[float, float, int], ...]:
    """Sum the steps of identical (sigma, q) segments, in order of first appearance.

    Args:
      segments: (sigma, q, T) triples.

    Returns:
      Triples with distinct (sigma, q).
    """
    tot: dict[tuple[float, float], int] = {}
    for s, q, T in segments:
        key = (float(s), float(q))
        tot[key] = tot.get(key, 0) + int(T)
    return tuple((s, q, T) for (s, q), T in tot.items())


def _merge_full_batch(segs: Sequence[tuple[float, float, int]]) -> tuple[tuple[float, float, int], ...]:
    """The full-batch (q = 1) segments within the grid range as one step with noise multiplier
    1 / mu, mu = sqrt(sum T_i / sigma_i^2), where there is more than one such step and that step is
    near-noiseless (:func:`_revealing`): T Gaussian
    mechanisms of the same sensitivity compose to one Gaussian pair with mu^2 = sum T_i / sigma_i^2
    (Dong, Roth & Su 2022, Cor. 3.3; the sum of the outputs is sufficient), the same pair, not a
    dominating one, so both ends stay certified (tests of it are tests of the sum). One composition
    instead of sum T_i: sigma 0.25, q 1, T 1.9e6 beside other segments took 36 s (each step's
    loss range set a grid of ~1e-2 nats over millions of steps)."""
    full = [(s, q, T) for s, q, T in segs if q == 1.0 and SIGMA_GRID_RANGE[0] <= s <= SIGMA_GRID_RANGE[1]]
    if sum(T for _, _, T in full) <= 1:
        return tuple(segs)
    mu = math.sqrt(math.fsum(T / (s * s) for s, _, T in full))
    if not _revealing(1.0 / mu, 1):
        # only where that step is near-noiseless (mu >~ 200: the target is certain to be found):
        # at mu ~ 10 one step spans hundreds of nats and its near-1 tilt was 100x looser (beta
        # bracket 3.9e-10 against 3.8e-12 at sigma 3, q 1, T 1e3 beside sigma 1, q 0.01, T 1e3)
        return tuple(segs)
    rest = [(s, q, T) for s, q, T in segs if (s, q, T) not in full]
    return tuple(rest) + ((1.0 / mu, 1.0, 1),)


def _revealing(sigma: float, T: int) -> bool:
    """Whether a segment is treated as near-noiseless (its sampling indicator revealed; module
    docstring): sigma below :data:`SIGMA_GRID_RANGE` [0], or small enough that decoding the
    indicator from each release errs with total probability T Phi(-1/(2 sigma)) <= e^-REVEAL_LOG_ERROR.
    Then the revealed pair's power at a level alpha is at most the true pair's at alpha + eps plus eps
    (eps that error; a test of the indicator is a test of its decoding, up to eps under P and Q), so
    it is within 2 eps / alpha relative of the truth: below 1e-26 for every alpha >= e^-5000, while
    on the grid such a step (losses ~1 / (2 sigma^2) nats, sigma <= 0.005) forces a grid step of
    0.3 nats or more on every other segment (sigma 1e-3 beside sigma 1, q 0.01: bracket [0.095,
    0.58] in 8 s, against [0.09521, 0.09522] now; found by fuzzing rero_dpsgd)."""
    if sigma < SIGMA_GRID_RANGE[0]:
        return True
    if sigma > _REVEAL_SIGMA:
        return False
    return math.log(T) + log_ndtr(-0.5 / sigma) <= -REVEAL_LOG_ERROR


def _inf_gain(inf_mass: float, log_up: float) -> float:
    """The most the log upper end ``log_up`` of a power can fall when the composed mass ``inf_mass``
    at +infinity is put back on the grid (it counts fully in the power): -log(1 - m e^-up)."""
    x = inf_mass * math.exp(-log_up) if log_up > -700.0 else math.inf
    return -math.log1p(-x) if x < 1.0 else math.inf


def _split_extremes(segs: Sequence[tuple[float, float, int]], strict: bool = False):
    """(grid segments, near-noiseless segments, mu of the near-silent ones); ``strict``: only
    sigma < :data:`SIGMA_GRID_RANGE` [0] is near-noiseless (the replace-one pair has no revealed
    form here)."""
    grid, noiseless, inv = [], [], 0.0
    for s, q, T in segs:
        if s < SIGMA_GRID_RANGE[0] if strict else _revealing(s, T):
            noiseless.append((s, q, T))
        elif s > SIGMA_GRID_RANGE[1]:
            inv += T / (s * s)
        else:
            grid.append((s, q, T))
    return grid, noiseless, inv


@dataclass(frozen=True)
class SchedulePLD:
    """Composed discrete PLDs of one DP-SGD schedule; directions are composed on first use.

    Attributes:
      segments: the schedule's (sigma, q, T) triples (merged: distinct (sigma, q)).
      h: the grid step used.
      group_size: k, the number of examples that move together.
      lower: whether the bucket statistic (``tests``, ``stat_p``/``stat_q``) is available.
      add_direction: whether the ADD direction (``add``) is available.
      log_tau: natural log of the tail mass per composition.
      precision: the FFT arithmetic of the compositions, "double" (default), "extended" or "mixed"
        (:func:`rerokit.bounds.pld.compose.compose`); :meth:`extended` gives the same PLDs in
        mixed precision, sharing the step discretisations.
      auto_grid: whether h was chosen automatically (:func:`schedule_pld` without a grid step);
        callers may then refine it where a bracket is wide (:meth:`refined`).
      sparse: tiny-q REMOVE steps on sparse grids (:data:`_SPARSE_Q`; :func:`schedule_pld`'s own
        PLDs); not for the far-tail tilt's steps (:meth:`_regridded`), whose tilt weights the tail
        that the sparse grid coarsens (at T 1e5, kappa 1e-20 their brackets took 3x as long).
      sparse_budget: every grid step's ``sparse_tail`` budget instead (the one-jump bound's grid,
        :data:`_ONE_JUMP_SPARSE`); None: :attr:`sparse` decides.
      width_aim: the far-tail tilt's width aim (:meth:`_predicted_factor`) on a grid that is not
        automatic: :meth:`refined` sets it to :data:`_WIDTH_AIM` / F^c (F the refinement, c the width
        law's exponent), so the refined tilt's grid is F times finer than the automatic grid's tilt
        grid, not merely F times finer than the automatic grid itself; None: no aim there.
    """

    segments: tuple[tuple[float, float, int], ...]
    h: float
    group_size: int = 1
    lower: bool = True
    add_direction: bool = True
    log_tau: float = LOG_TAU
    precision: str = "double"
    auto_grid: bool = False
    sparse: bool = False
    sparse_budget: float | None = None
    width_aim: float | None = None
    _built: dict = field(default_factory=dict, repr=False, compare=False)

    def extended(self) -> SchedulePLD:
        """The same schedule's PLDs with the forward FFTs and powers in extended precision and the
        inverse in double (:func:`rerokit.bounds.pld.compose.compose`'s "mixed": 200-2000 times
        smaller proven round-off, within 1.1-11 times full extended precision's, at about 3x the
        double time against 5x), built on first use and kept; the step discretisations are shared,
        so only the compositions are redone. A PLD not in double is its own."""
        if self.precision != "double":
            return self
        if "extended" not in self._built:
            other = SchedulePLD(self.segments, self.h, self.group_size, self.lower, self.add_direction,
                                self.log_tau, "mixed", sparse=self.sparse, sparse_budget=self.sparse_budget)
            for key, value in self._built.items():
                if isinstance(key, tuple) and key[0] in ("parts", "window"):  # the windows do not depend on the arithmetic
                    other._built[key] = value
            self._built["extended"] = other
        return self._built["extended"]

    def refined(self, factor: float) -> SchedulePLD:
        """The same schedule on the grid step h / ``factor`` (REMOVE direction and, if requested,
        the statistic; no ADD direction), coarsened back only if the finer window does not fit.
        Every query stays certified on either grid; a finer one narrows the brackets (the
        discretisation gap shrinks about like h^1.5-h^2). ``self`` if one step's grid size limit
        allows no finer step."""
        h = _grid_step(self.segments, self.h / factor, self.group_size, ("remove",), self.log_tau)
        if h >= 0.99 * self.h:
            return self
        fine = schedule_pld(self.segments, h, group_size=self.group_size, lower=self.lower,
                            add_direction=False, log_tau=self.log_tau)
        aim = self._width_aim()
        if aim is not None:  # (the far-tail tilt's grid refined by the same factor: _predicted_factor)
            fine = replace(fine, width_aim=aim / (self.h / fine.h) ** _WIDTH_LAW[2])  # (its steps kept)
        return fine

    def revealed(self) -> SchedulePLD | None:
        """The same schedule with each segment of sigma <= :data:`REVEAL_BAND` that is not already
        near-noiseless (:func:`_revealing`) given sigma = SIGMA_GRID_RANGE [0] / 2, i.e. its
        sampling indicator revealed (module docstring: a dominating pair for every sigma), on its
        own automatic grid, REMOVE direction only and no lower end (its tests would be tests of
        the other pair). None if there is no such segment. Its upper ends are upper ends of this
        schedule's; taking the smaller keeps the bound monotone in sigma across the
        near-noiseless boundary (it does not depend on sigma there)."""
        segs = [((0.5 * SIGMA_GRID_RANGE[0], q, T) if s <= REVEAL_BAND and not _revealing(s, T) else (s, q, T))
                for s, q, T in self.segments]
        if segs == list(self.segments):
            return None
        return schedule_pld(segs, None, group_size=self.group_size, lower=False, add_direction=False,
                            log_tau=self.log_tau)

    def window_points(self) -> int:
        """The number of points of the REMOVE PLD's window (its Chernoff window, sized when built;
        the composed pmf has exactly as many), without composing it."""
        if ("window", "remove") not in self._built:
            self._size(False)
        if ("window", "remove") not in self._built:  # nothing on the grid: one point
            return 1
        A, B = self._built[("window", "remove")]
        return B - A + 1

    def is_composed(self, name: str) -> bool:
        """Whether the composition ``name`` ("upper", "add", "tests", "replace") has been computed
        (queries on it then cost no FFT)."""
        return name in self._built

    @property
    def roundoff(self) -> float:
        """The proven round-off bounds of the compositions built so far, summed (the REMOVE PLD
        and the two bucket statistics; a measure of the FFT arithmetic's share of a bracket)."""
        tot = 0.0
        for name in ("upper", "tests"):
            c = self._built.get(name)
            if isinstance(c, ThresholdTests):
                tot += c.p.roundoff + c.q.roundoff
            elif c is not None:
                tot += c.roundoff
        return tot

    # ------------------------------------------------------------------ directions

    def grid_steps(self, direction: str = "remove") -> list[tuple[int, np.ndarray, int]]:
        """(label offset, dominating pmf, count) of each grid step of ``direction``: what the
        lower-tail tilt reads its saddle point from (:func:`rerokit.bounds.pld.lowertail.lower_tilt`)."""
        return [(st.j_lo, st.split, T) for st, T in self._parts(direction)[0]]

    def _parts(self, direction: str) -> tuple[list, list, float]:
        key = ("parts", direction)
        if key not in self._built:
            self._built[key] = self._make_parts(direction)
        return self._built[key]

    def _make_parts(self, direction: str) -> tuple[list, list, float]:
        grid, noiseless, inv = _split_extremes(self.segments, strict=direction == "replace")
        if inv > 0:  # near-silent steps: one full-batch Gaussian step with mu = sqrt(inv)
            grid = grid + [(1.0 / math.sqrt(inv), 1.0, 1)]
        n_steps = sum(T for _, _, T in grid) + sum(T for _, _, T in noiseless)
        step_tau = self.log_tau - math.log(max(n_steps, 1))  # composed +inf mass <= ~tau
        if len(grid) >= BATCH_MIN and self.group_size == 1 and direction in ("remove", "add"):
            # many distinct steps (e.g. a noise scheduler): all grids at once (bit-identical masses)
            steps = list(zip(step_plds_batched(grid, self.h, direction, step_tau), [T for _, _, T in grid]))
        else:
            steps = [(dpsgd_step_pld(s, q, self.h, direction, step_tau, self.group_size, sparse_tail=(
                self.sparse_budget if self.sparse_budget is not None else
                _sparse_budget(q, direction, self.group_size) if self.sparse else None)), T) for s, q, T in grid]
        if direction == "replace" and noiseless:
            raise ValueError("direction='replace' needs noise multipliers within the grid range")
        atoms = [_revealed_atom(q, T, self.group_size, direction, self.h) for _, q, T in noiseless]
        return steps, atoms, n_steps

    def _plain_parts(self, direction: str) -> list[tuple[int, np.ndarray, int]]:
        """The FFT parts of ``direction``'s plain composition: the grid steps' dominating pmfs and
        the near-noiseless atoms."""
        steps, atoms, _ = self._parts(direction)
        parts = [(st.j_lo, st.split, T) for st, T in steps]
        return parts + [(off, pmf, 1) for off, pmf, _ in atoms if pmf.size]

    def _stat_parts(self) -> tuple[list, list, list]:
        """(grid steps, P parts, Q parts) of the bucket statistic (the replaced extreme steps are
        ignored by it)."""
        steps, _, _ = self._parts("remove")
        grid, _, _ = _split_extremes(self.segments)
        steps = steps[: len(grid)]
        pp = [(st.j_lo - 1, st.stat_p, T) for st, T in steps]
        qq = [(st.j_lo - 1, st.stat_q, T) for st, T in steps]
        return steps, pp, qq

    def _size(self, every: bool) -> None:
        """Size this grid without composing: build the steps of the REMOVE direction (and, with
        ``every``, of the other requested ones and the statistic) and their Chernoff windows
        (:func:`rerokit.bounds.pld.compose.chernoff_window`), kept for the compositions, which then
        use exactly these windows. Raises :class:`PLDTooWide` where a step or a window does not
        fit, which is all that a composition on this grid could raise; the FFTs run on first use,
        so a query that needs none of them (e.g. :meth:`tail_power`) pays for none. The windows of
        the ADD direction and of the statistic are left to first use too where their parts' whole
        support (sum of T (size - 1) + 1 labels, which bounds the window) fits :data:`MAX_FFT`."""
        def window(key: tuple[str, str], parts: list, lazy: bool = False) -> None:
            if lazy and sum(T * (pmf.size - 1) for _, pmf, T in parts) < MAX_FFT:
                # its whole support fits, so its window (clipped to it) does too: computed on first
                # use, the same window (a tail query at a tiny level often composes none of these)
                return
            if parts and key not in self._built:
                A, B = chernoff_window(parts, self.h, self.log_tau)
                if not 1 <= B - A + 1 <= MAX_FFT:
                    raise WindowTooWide(f"the composed privacy-loss window needs {B - A + 1} points (max {MAX_FFT})")
                self._built[key] = (A, B)

        try:
            window(("window", "remove"), self._plain_parts("remove"))
            if every and self.add_direction and not (all(q == 1.0 for _, q, _ in self.segments)
                                                     and self.group_size == 1):
                window(("window", "add"), self._plain_parts("add"), lazy=True)
            if every and self.lower:
                _, pp, qq = self._stat_parts()
                window(("window", "stat_p"), pp, lazy=True)
                window(("window", "stat_q"), qq, lazy=True)
        except (WindowTooWide, StepTooWide) as exc:
            raise PLDTooWide(f"the privacy-loss distribution of this schedule is too wide to discretise ({exc})") from exc

    def _compose_plain(self, direction: str) -> DiscretePLD:
        steps, atoms, _ = self._parts(direction)
        parts = self._plain_parts(direction)
        infs = [(st.inf_mass, T) for st, T in steps] + [(p_inf, 1) for _, _, p_inf in atoms]
        inf = compose_inf_mass(infs)
        if not parts:
            return DiscretePLD(self.h, 0, np.zeros(1), 0.0, 0.0, 0.0, inf)
        c = self._compose_windowed(("window", direction), parts)
        # the grid steps' masses are rounded upwards in the stochastic order (rerokit.bounds.pld.step:
        # their masses' rounding needs no allowance); the near-noiseless atoms' masses are rounded
        defect = _mass_defect([(pmf, p_inf, 1) for _, pmf, p_inf in atoms]) if atoms else 0.0
        # the grid points' loss error is a shift of the losses
        shift = _total_shift(steps)
        return DiscretePLD(self.h, c.offset, c.pmf, c.tail + defect, c.roundoff, c.entry_roundoff, inf, shift)

    def _compose_windowed(self, key: tuple[str, str], parts: list) -> Any:
        """:func:`compose` on the Chernoff window kept under ``key`` (the same parts' window, from a
        composition in another arithmetic: :meth:`extended`), else on a new one, which is kept."""
        c = compose(parts, self.h, self.log_tau, window=self._built.get(key), precision=self.precision)
        self._built[key] = (c.offset, c.offset + c.pmf.size - 1)
        return c

    def _get(self, name: str, build) -> Any:
        if name not in self._built:
            try:
                self._built[name] = build()
            except (WindowTooWide, StepTooWide) as exc:
                raise PLDTooWide(f"the privacy-loss distribution of this schedule is too wide to discretise ({exc})") from exc
        return self._built[name]

    @property
    def upper(self) -> DiscretePLD:
        """The dominating REMOVE-direction PLD (P: with the target, Q: without)."""
        return self._get("upper", lambda: self._compose_plain("remove"))

    @property
    def add(self) -> DiscretePLD | None:
        """The dominating ADD-direction PLD, or None if not requested (``add_direction=False``)."""
        if not self.add_direction:
            return None
        if all(q == 1.0 for _, q, _ in self.segments) and self.group_size == 1:
            return self.upper  # the Gaussian pair is symmetric
        return self._get("add", lambda: self._compose_plain("add"))

    @property
    def replace(self) -> DiscretePLD:
        """The dominating PLD of the substitution pair (k = 1; see :mod:`rerokit.bounds.pld.step`)."""
        def build() -> DiscretePLD:  # not part of the grid sizing: coarsens on its own if needed
            h = self.h
            for _ in range(12):
                try:
                    return SchedulePLD(self.segments, h, self.group_size, False, False,
                                       self.log_tau, self.precision)._compose_plain("replace")
                except (WindowTooWide, StepTooWide):
                    h *= 4.0
            raise WindowTooWide("no grid step fits the replace-one PLD")

        return self._get("replace", build)

    @property
    def tests(self) -> ThresholdTests | None:
        """The bucket statistic of the grid steps under P and Q, or None (``lower=False``)."""
        if not self.lower:
            return None

        def build() -> ThresholdTests:
            steps, pp, qq = self._stat_parts()  # the statistic ignores the replaced extreme steps
            if not steps:
                z = GridPMF(self.h, 0, np.ones(1))
                return ThresholdTests(z, z)
            cp = self._compose_windowed(("window", "stat_p"), pp)
            cq = self._compose_windowed(("window", "stat_q"), qq)
            # the steps' masses are rounded in the safe stochastic order for the tests S >= s
            # (rerokit.bounds.pld.step); the reversed tests S <= s allow for their prefix errors
            rp = _step_rounding([(st.stat_p, 0.0, T, st.stat_rev_err[0]) for st, T in steps])
            rq = _step_rounding([(st.stat_q, 0.0, T, st.stat_rev_err[1]) for st, T in steps])
            return ThresholdTests(GridPMF(self.h, cp.offset, cp.pmf, cp.tail, cp.roundoff, cp.entry_roundoff),
                                  GridPMF(self.h, cq.offset, cq.pmf, cq.tail, cq.roundoff, cq.entry_roundoff),
                                  rp, rq)

        return self._get("tests", build)

    @property
    def stat_p(self) -> GridPMF | None:
        """The bucket statistic's distribution under P (None without ``lower``)."""
        t = self.tests
        return None if t is None else t.p

    @property
    def stat_q(self) -> GridPMF | None:
        """The bucket statistic's distribution under Q (None without ``lower``)."""
        t = self.tests
        return None if t is None else t.q

    # ------------------------------------------------------------------ queries

    def power_lower(self, log_alphas: Any) -> np.ndarray:
        """Certified lower bounds on the REMOVE pair's power at levels exp(log_alphas).

        Threshold tests on the bucket statistic of the grid steps; with near-noiseless steps in the
        schedule, the test also rejects whenever one of their outputs exceeds 1/2 (level at most
        a0 = 1 - prod Phi(1/(2 sigma))^T <= T e^{-1/(8 sigma^2)}, power at least
        p0 = 1 - prod (1 - (1 - (1-q)^k) Phi(1/(2 sigma)))^T), independent of the statistic, so
        the combined test at level alpha has power >= p0 + (1 - p0) lower_S(alpha - a0).

        At levels <= :data:`MAX_TEST_BELOW` (one example per step), also the max test "some step's
        output is large" (:func:`rerokit.bounds.pld.maxtest.log_max_test_power`: closed-form level
        and power on the true pair, every step included); any test at level <= alpha has power <=
        the Neyman-Pearson power (Neyman & Pearson 1933), so the larger of the two is a lower bound.

        Args:
          log_alphas: natural logs of the levels (<= 0).

        Returns:
          Array of lower bounds (alpha, trivial, where no test fits).
        """
        lk = np.atleast_1d(np.asarray(log_alphas, dtype=float))
        if not self.lower:
            return np.exp(lk)
        return np.maximum(self._power_lower_stat(lk), self.max_test_lower(lk))

    def _power_lower_stat(self, lk: np.ndarray) -> np.ndarray:
        """:meth:`power_lower` from the bucket statistic (and the near-noiseless steps' indicator) only."""
        _, noiseless, _ = _split_extremes(self.segments)
        if not noiseless:
            return self.tests.power_lower(lk)
        k = self.group_size
        log_a0 = math.log(sum(T for _, _, T in noiseless)) - min(1.0 / (8.0 * s * s) for s, _, _ in noiseless)
        a0 = math.exp(max(log_a0, -745.0)) + 5e-324
        log_miss = 0.0  # log P(no revealing output)
        for s, q, T in noiseless:
            hit = -math.expm1(k * math.log1p(-q)) if q < 1.0 else 1.0
            hit *= -math.expm1(log_a0)  # Phi(1/(2 sigma)) >= 1 - e^{-1/(8 sigma^2)}
            log_miss += T * math.log1p(-min(hit, 1.0 - 1e-16))
        p0 = -math.expm1(log_miss) * (1.0 - 1e-15)
        alpha = np.exp(lk)
        rest = alpha - a0
        ok = rest > 0  # else the indicator test alone exceeds the level: the statistic's tests only
        with np.errstate(divide="ignore"):
            low_s = np.where(ok, self.tests.power_lower(np.log(np.where(ok, rest, 1.0))), 0.0)
        combined = np.maximum(alpha, np.minimum(1.0, p0 + (1.0 - p0) * low_s))
        return np.where(ok, combined, self.tests.power_lower(lk))

    def tail_power(self, log_alpha: float) -> tuple[float, float]:
        """Certified (log lower, log upper) of the REMOVE power at one tiny level, by exponential tilting.

        See :mod:`rerokit.bounds.pld.tilt`: relative precision in the far tail (levels like 1e-30 or
        1e-473 in log space), at the cost of two or three more compositions. Where sampled steps are
        rare (sum q T <= :data:`_ONE_JUMP_QT`, q <= :data:`_ONE_JUMP_Q`; or sum q T <=
        :data:`_ONE_JUMP_RARE_QT`, q <= :data:`_ONE_JUMP_RARE_Q`) first the upper end of
        :mod:`rerokit.bounds.pld.onejump` (no FFT where relative precision is needed), final where
        it is within :data:`_ONE_JUMP_ENOUGH` of the max test's power, else folded into the tilts'
        bracket below (each end the better). At tiny q the two-grid
        tilt of :mod:`rerokit.bounds.pld.jumps` where it applies; with the lower end, the max test's
        power folded in, a retry with a smaller tail mass where its error share is large
        (:data:`_JUMP_RETRY_TAU`), and the one-grid tilt too where the bracket is still wider than
        :data:`_JUMP_WIDE` in log (each end the better: all certified).

        Args:
          log_alpha: natural log of the level (<= 0).

        Returns:
          (log lower, log upper).
        """
        lt, lt_q = self._tail_truncations(log_alpha)
        # rare sampled steps: one large loss entry by entry, final where it meets the max test (a
        # rule that reads the schedule, the level and two closed forms only: the same upper end
        # with and without the lower end); else each end the better
        one = self._tail_power_one_jump(log_alpha, lt_q)
        if one is not None:
            final = self.one_jump_bracket(log_alpha)
            if final is not None:
                return final
            lo, up = self._tail_power_tilts(log_alpha, lt, lt_q)
            return min(lo, one), min(up, one)
        return self._tail_power_tilts(log_alpha, lt, lt_q)

    def _tail_truncations(self, log_alpha: float) -> tuple[float, float | None]:
        """(:meth:`_tail_truncation`, :meth:`_inf_truncation` where the first lies below this grid's
        own truncation, else None) at one level: :meth:`tail_power`'s steps."""
        lt = self._tail_truncation(log_alpha)
        return lt, (self._inf_truncation(log_alpha) if lt < self.log_tau else None)

    def one_jump_bracket(self, log_alpha: float) -> tuple[float, float] | None:
        """Certified (log lower, log upper) of the REMOVE power at one level where the one-jump bound
        (:meth:`_tail_power_one_jump`) is final: within :data:`_ONE_JUMP_ENOUGH` of the max test's
        power (:func:`rerokit.bounds.pld.maxtest.log_max_test_power`, the lower end; the level itself
        without ``lower``); else None. What :meth:`tail_power` returns there."""
        one = self._tail_power_one_jump(log_alpha, self._tail_truncations(log_alpha)[1])
        if one is None or not self._one_jump_final(one, log_alpha):
            return None
        lo = max(self._max_test_log(float(log_alpha)), float(log_alpha)) if self.lower else float(log_alpha)
        return min(lo, one), one

    def _tail_power_tilts(self, log_alpha: float, lt: float, lt_q: float | None) -> tuple[float, float]:
        """:meth:`tail_power` by the tilts (the two-grid tilt, the max test, the one-grid tilt),
        steps truncated at ``lt`` (``lt_q``: :meth:`_inf_truncation`, or None)."""
        # the two-grid tilt where it applies: that choice reads the schedule and the level only; what
        # runs after it reads the error share, and with the lower end the bracket (as the width rules
        # of rerokit.bounds.dpsgd_exact do: the upper ends with and without it may then differ)
        jumps = self._tail_power_jumps(log_alpha, lt_q) if lt_q is not None else None
        if jumps is None:
            return self._tail_power_legacy(log_alpha, lt, lt_q)
        lo_j, up_j, share = jumps
        if not self.lower:  # without the lower end, the upper end's error share decides
            if not share > _JUMP_SHARE:
                return lo_j, up_j
        else:  # with it, the bracket's width, the max test's power (a closed form) folded in
            lo_mt = self._max_test_log(float(log_alpha))
            stat_won = lo_j > lo_mt
            lo_j = min(max(lo_j, lo_mt), up_j)
            if share > _JUMP_SHARE:
                # the error terms near the upper end: once more with the windows' tail mass
                # lowered, each end the better (both certified); its statistic only where the first
                # one's beat the max test
                again = self._tail_power_jumps(log_alpha, lt_q, _JUMP_RETRY_TAU, stat_won)
                if again is not None:
                    lo_j, up_j = max(lo_j, again[0]), min(up_j, again[1])
            if not up_j - lo_j > _JUMP_WIDE:
                return lo_j, up_j
        # the two-grid tilt's bracket wide, or (without the lower end) its error terms near its upper
        # end: also the one-grid tilt, each end the better (both certified)
        lo, up = self._tail_power_legacy(log_alpha, lt, lt_q)
        up = min(up, up_j)
        return min(max(lo, lo_j), up), up

    def _tail_truncation(self, log_alpha: float) -> float:
        """The far tail's deep truncation: each step truncated far enough out that the mass sent to
        +infinity is negligible against the level itself (alpha e^-46 per composition, down to the
        smallest normal tail, Phi(-38) ~ 1e-316), never shallower than this schedule's own."""
        return min(self.log_tau, max(float(log_alpha) - 46.0, math.log(1e-300)))

    def _tail_power_legacy(self, log_alpha: float, lt: float, lt_q: float | None) -> tuple[float, float]:
        """:meth:`tail_power` by the one-grid tilt (:func:`rerokit.bounds.pld.tilt.tilted_power`),
        steps truncated at ``lt`` (``lt_q``: :meth:`_inf_truncation`, or None). Where the tilted
        window on this grid is predicted (the forecast's spread times this window) above
        :data:`_TILT_OWN_POINTS` points, the coarse grids first (:meth:`_tail_power_coarse`, which adds
        this grid's own tilt where theirs is wider than 1 % in log); above 1.5 :data:`_TILT_REGRID_ABOVE`
        predicted points on the automatic grid (one segment: a spread of at least
        :data:`_TILT_REGRID_SPREAD`), one grid coarser by up to :data:`_TILT_REGRID_MAX` (one
        segment: :data:`_TILT_REGRID_ONE`). Else this grid's own steps where their truncation
        suffices (``lt_q`` at or above it); the coarse grids where ``lt_q`` lies below it and
        halves the step, or the deep truncation ``lt`` would make one step at least
        :data:`_TAIL_LADDER_START` points long; else the steps truncated at ``lt``."""
        fc = self.tail_forecast(float(log_alpha))
        pred = fc[3] * self.window_points() if fc is not None else 0.0
        if pred > _TILT_OWN_POINTS:
            return self._tail_power_coarse(log_alpha)
        several = len(_split_extremes(self.segments)[0]) > 1
        if (pred >= 1.5 * _TILT_REGRID_ABOVE and float(log_alpha) >= _LOG_MIN_TAIL and self.auto_grid
                and (several or fc[3] >= _TILT_REGRID_SPREAD)):
            # on a grid coarser by pred / _TILT_REGRID_ABOVE (at most _TILT_REGRID_MAX; one segment:
            # _TILT_REGRID_ONE; any grid is certified). Chosen from the forecast of the dominating
            # steps only, so that the upper end is the same with and without the bracket
            own_tau = lt_q is not None and lt_q >= self.log_tau
            per, most = (_TILT_REGRID_ABOVE, _TILT_REGRID_MAX) if several else _TILT_REGRID_ONE
            try:
                coarse = self._regridded(min(most, pred / per),
                                         self.log_tau if own_tau else (lt if lt_q is None else lt_q))
                coarse._parts("remove")
                return self._tail_power_from(coarse, log_alpha)
            except (StepTooWide, WindowTooWide):
                pass
        src = self
        if lt_q is not None and lt_q >= self.log_tau:
            # this grid's own truncation already keeps the mass at +infinity below alpha e^-7: its
            # steps (built for the sizing) answer, unless the bracket is wide (then as below). At
            # q 1e-3, sigma 5, T 3e3-1e5, kappa 1e-6/1e-9 the deeper steps moved the bracket's
            # ends by < 3e-9 relative and cost a step discretisation.
            lo, up = self._tail_power_from(self, log_alpha)
            if up - lo <= _COARSE_TAIL_ENOUGH:
                return lo, up
        if lt_q is not None and (self._step_span(lt_q) < 0.5 * self._step_span(lt)
                                 or self._step_span(lt) >= self.h * _TAIL_LADDER_START):
            # small q: the sampled component's tail sets the mass at +infinity (about q tau), so a far
            # shallower truncation keeps it below alpha e^-7; the steps' grids are then less than half
            # as long and fit finer grids (the coarse path tries that truncation first). Likewise
            # where the deep truncation's step is long (at least _TAIL_LADDER_START points on this
            # grid): its far tail, tilted, made the tilted window heavy and the bracket wide (sigma
            # 1.36, q 1e-3, T 7e4, kappa 1e-30: 530 ms for 4.4 %, then refined, 770 ms in all; the
            # coarse path 287 ms for 1.3e-3; at sigma 1-1.36, q 1e-3-3e-3, T 1e4-1e6 2.6-3x faster
            # where it applied, the brackets no wider). Short steps keep the deep truncation: the
            # coarse path's mass at +infinity (up to alpha e^-7) made sigma 4.55, q 0.28, T 14,
            # kappa 1e-21 5.3e-3 wide instead of 1.2e-4, for 0.5 ms
            return self._tail_power_coarse(log_alpha)
        if lt < self.log_tau:
            wide = SchedulePLD(self.segments, self.h, self.group_size, self.lower, False, lt, self.precision)
            try:
                wide._parts("remove")
                src = wide
            except (StepTooWide, WindowTooWide):
                return self._tail_power_coarse(log_alpha)
        return self._tail_power_from(src, log_alpha)

    def tail_by_jumps(self, log_alpha: float) -> bool:
        """Whether :meth:`tail_power` at this level is predicted to take the two-grid tilt
        (:meth:`_tail_power_jumps`: tiny q, few tilted jumps, a tilted window at least
        :data:`_JUMP_SPREAD` times the untilted one), from this grid's own steps and
        :meth:`tail_forecast`. A choice of computation only."""
        fc = self._jump_forecast(log_alpha)
        if fc is None:
            return False
        return _few_jumps(self._parts("remove")[0], self.h, fc[0], self._jump_cut(log_alpha))

    def _jump_forecast(self, log_alpha: float) -> tuple[float, float, float, float] | None:
        """:meth:`tail_forecast` where the two-grid tilt may apply (a distinct step on the grid with
        q <= :data:`_JUMP_Q`, one example per step, and :func:`_jumps_pay`), else None. Several
        distinct steps are one block of product slices (pld.jumps.jump_parts_multi, per-label
        error bounds). A choice of computation only."""
        grid, noiseless, inv = _split_extremes(self.segments)
        if noiseless or inv > 0 or not grid or self.group_size != 1 or min(q for _, q, _ in grid) > _JUMP_Q:
            return None
        fc = self.tail_forecast(float(log_alpha))
        if not _jumps_pay(fc, sum(T for _, _, T in grid)):
            return None
        if len(grid) > _JUMP_MULTI_MAX_STEPS or (len(grid) > 1 and self._jump_cut(log_alpha) is None):
            return None
        return fc

    def _jump_cut(self, log_alpha: float) -> float | None:
        """The two-grid tilt's cut (nats): :data:`_JUMP_CUT` for one distinct step (where this grid's
        step has no loss above it and the schedule at least :data:`_JUMP_CUT_LONG` steps,
        :data:`_JUMP_CUT_OF_THRESHOLD` times the forecast's threshold if smaller); for several, the
        first of :data:`_JUMP_MULTI_CUTS` whose product set of slices (pld.jumps.jump_parts_multi),
        as this grid's steps predict it at the forecast's tilt, has at most :data:`_JUMP_MULTI_SLICES`,
        else the one with the fewest if at most pld.jumps.MAX_SLICES, else None (declined). Kept
        per level; a choice of computation only (the schedule and the level)."""
        if len(_split_extremes(self.segments)[0]) <= 1:
            steps = self._parts("remove")[0]
            if _losses_above(steps, math.ceil(_JUMP_CUT / self.h)):
                return _JUMP_CUT
            fc = self.tail_forecast(float(log_alpha))
            if fc is None or not fc[1] > 0.0 or sum(T for _, T in steps) < _JUMP_CUT_LONG:
                return _JUMP_CUT
            return min(_JUMP_CUT, _JUMP_CUT_OF_THRESHOLD * fc[1])
        key = ("jump_cut", float(log_alpha))
        if key not in self._built:
            steps = self._parts("remove")[0]
            fc = self.tail_forecast(float(log_alpha))
            best, best_n = None, math.inf
            if fc is not None and fc[0] > 0.0:
                own = [(st.j_lo, st.split, T) for st, T in steps]
                r = max(1, int(_JUMP_TH / (fc[0] * self.h)))
                for cut_loss in _JUMP_MULTI_CUTS:
                    cut = math.ceil(cut_loss / self.h)
                    if not _losses_above(steps, cut):
                        break  # no step has losses above it (nor above the next)
                    try:
                        n = multi_slice_count(own, fc[0], self.h, r, cut)
                    except (ValueError, FloatingPointError, OverflowError):
                        continue
                    if n < best_n:
                        best, best_n = cut_loss, n
                    if n <= _JUMP_MULTI_SLICES:
                        break
            self._built[key] = best if best_n <= MAX_SLICES else None
        return self._built[key]

    def _tail_power_jumps(self, log_alpha: float, lt_q: float, log_tau: float = JUMP_LOG_TAU,
                          with_stat: bool = True) -> tuple[float, float, float] | None:
        """(log lower, log upper, the upper end's error share: pld.jumps.jump_power_share) of
        :meth:`tail_power` by the two-grid tilt of :mod:`rerokit.bounds.pld.jumps` (tiny q: a
        bulk of steps with losses ~q on this grid, a few sampled steps' large losses on a coarse
        one), steps truncated at ``lt_q`` (:meth:`_inf_truncation`: the mass at +infinity at most
        alpha e^-7, counted); None where it does not apply (every q > :data:`_JUMP_Q`, steps outside the
        grid range, groups, a spread below :data:`_JUMP_SPREAD`, more than :data:`_JUMP_MAX`
        expected tilted jumps, no loss above the cut (:meth:`_jump_cut`), several distinct steps whose
        product set of slices, as this grid's steps predict it, exceeds pld.jumps.MAX_SLICES) or a
        window does not fit. ``log_tau``: the windows' tail mass (pld.jumps.JumpTilt); the statistic
        is skipped where the max test's power is within :data:`_JUMP_ENOUGH` of the upper end, and
        always without ``with_stat``. Both ends certified; only the choice of t, the cut, the coarse
        grid and the skip is heuristic."""
        fc = self._jump_forecast(log_alpha)
        # declined first where this grid's own steps (built for the sizing) predict too many jumps:
        # the prediction matched the outcome on 50 of 51 random tiny-q cells, and the one miss took
        # 89 ms on the two grids against 30 ms on one (sigma 2.17, q 4.5e-4, T 202, kappa 2.4e-24);
        # each decline found late cost 2-20 ms of steps and saddle points on the bulk's grid
        if fc is None or not self.tail_by_jumps(log_alpha):
            return None
        try:
            # the bulk's grid: the finest of _JUMP_FACTORS times this one on which a step (truncated
            # at lt_q) fits; its width is the bracket's (sigma 1, q 1e-4, T 1e6, kappa 1e-9: 6.1e-3
            # on this grid, 1.5e-3 on half of it, 46 against 58 ms; the sparse steps cost 2-6 ms)
            src = None
            for factor in _JUMP_FACTORS:
                try:
                    if factor == 1.0 and lt_q >= self.log_tau:
                        src = self  # (its steps are built already)
                    else:
                        src = SchedulePLD(self.segments, self.h * factor, 1, self.lower, False, lt_q, self.precision,
                                          sparse=self.sparse)
                    src._parts("remove")
                    break
                except StepTooWide:
                    src = None
            if src is None:
                return None
            h = src.h
            steps, _, _ = src._parts("remove")
            parts = [(st.j_lo, st.split, T) for st, T in steps]
            t = fc[0] if src is self else saddle_tilt(parts, h, float(log_alpha))
            cut_loss = self._jump_cut(log_alpha)
            if not (cut_loss is not None and 0.0 < t < 1e3 / h * 0.99 and _few_jumps(steps, h, t, cut_loss)):
                return None
            r = max(1, int(_JUMP_TH / (t * h)))
            inf = compose_inf_mass([(st.inf_mass, T) for st, T in steps])
            sp = [(st.j_lo - 1, st.stat_p, T) for st, T in steps] if self.lower else None
            sq = [(st.j_lo - 1, st.stat_q, T) for st, T in steps] if self.lower else None
            # the statistic skipped where the max test's power (a certified lower end that tail_power
            # takes too) is within _JUMP_ENOUGH of the upper end
            lo_mt = self._max_test_log(float(log_alpha)) if self.lower else -math.inf
            shift = _total_shift(steps)
            enough = lo_mt - shift + _JUMP_ENOUGH if math.isfinite(lo_mt) else -math.inf
            if not with_stat:
                enough = math.inf
            lo, up, share = jump_power_share(parts, sp, sq, h, inf, float(log_alpha), t, r, cut_loss,
                                             JumpTilt(_JUMP_PULL, log_tau, enough))
        except (WindowTooWide, StepTooWide, ValueError, FloatingPointError, OverflowError):
            return None
        # the steps' loss shift s (DiscretePLD.loss_shift): the power at level alpha e^s, at most
        # e^s times that at alpha (concave in the level, 0 at level 0)
        up = min(0.0, up + shift)
        return min(lo, up), up, share

    def _tail_power_coarse(self, log_alpha: float) -> tuple[float, float]:
        """:meth:`tail_power` where one step's far-truncated grid does not fit this grid step (tiny
        q: the bulk losses ~q set a fine step, while the tail that matters is one sampled step's
        large loss, cut off by the default truncation). Steps truncated at a few levels just below
        alpha (mass at +infinity ~ alpha e^-d), each on the finest grid it fits; every one is
        certified (any grid, any truncation: its mass at +infinity is counted), and each end keeps
        the best value; this grid's own steps too where that bracket is wider than 1 % (in log).

        Order (speed): the shallowest truncation with mass at +infinity <= alpha e^-7
        (:meth:`_inf_truncation`) first, on grids coarser than this one where one step has
        :data:`_TAIL_LADDER_START` points (where it has at least :data:`_LADDER_MIN_RATIO` times as
        many here; else from a grid coarser by the predicted tilted window over
        :data:`_TILT_LADDER_WINDOW`, if that is 1.5 or more), then more as the width predicts (at most
        :data:`_TAIL_FIRST_POINTS`), until a bracket is within :data:`_TAIL_FIRST_ENOUGH` (in log,
        each end the best so far), kept alone then; else the
        finest grids, each further depth only while wider than :data:`_COARSE_TAIL_ENOUGH` and, after
        a bracket on this grid, only while the last truncation's mass at +infinity could close the gap
        (:func:`_inf_gain`; a deeper truncation on the same grid or a coarser one only moves that mass
        onto the grid, and this grid's own shallower truncation then adds nothing either). The
        widths here count the max test's power (:mod:`rerokit.bounds.pld.maxtest`) as a lower end,
        as the final bracket does; only the choice of grids depends on them."""
        lo, up = float(log_alpha), 0.0
        found = False
        lts = [min(self.log_tau, max(float(log_alpha) - d, math.log(1e-300))) for d in _COARSE_TAIL_DEPTHS]
        lt_q = self._inf_truncation(log_alpha)
        if lt_q is not None and lt_q > lts[0]:
            lts.insert(0, lt_q)
        # the ladder's truncation. (lt_q where it lies deeper, its mass at +infinity at most alpha
        # e^-_INF_DEPTH, made the brackets of one sampled step beside a long schedule 5-14x wider:
        # the deeper tail, tilted, outweighs the masses at the threshold)
        lt_l = lts[0]
        # when to stop: the max test's power (closed form, pld.maxtest) counts as the lower end too,
        # as it will in the final bracket (it is not returned here)
        lo_mt = self._max_test_log(float(log_alpha))
        done = set()  # (truncation, grid factor) already computed (capped depths coincide)
        # first grids coarser than this one, on which one step has _TAIL_LADDER_START points, then
        # more as the width predicts, up to _TAIL_FIRST_POINTS (fast; often enough: where the
        # schedule's own grid is fine, as for T ~ 1e3, a coarse one is far tighter than needed)
        # the forecast (None for steps off the grid or groups: then neither rule below applies)
        fc = self.tail_forecast(float(log_alpha))
        span = self._step_span(lt_l)
        points = float(_TAIL_LADDER_START)
        if span / (self.h * points) < _LADDER_MIN_RATIO:  # this grid is coarse itself: the ladder would cost about as much
            points = math.inf
            # ... unless the tilted window is predicted large (short schedules' far tails): then the
            # ladder from a grid coarser by the window's excess over _TILT_LADDER_WINDOW, at most 8x
            excess = fc[3] * self.window_points() / _TILT_LADDER_WINDOW if (fc is not None and self.auto_grid) else 0.0
            if excess >= 1.5 and span > 0.0:
                points = span / (self.h * min(8.0, excess))
        if math.isfinite(points) and _WIDTH_AIM > 0.0:
            lw = self._law_log_width(fc, span / (self.h * points))
            if lw is not None and lw > math.log(2.0 * _TAIL_FIRST_ENOUGH):
                points = math.inf  # the width law predicts the ladder's first grid far too wide
        stalled = False  # a finer grid did not narrow the bracket (_TAIL_LADDER_STALL)
        width, best_factor, best_width = math.inf, None, math.inf
        while not found and span / (self.h * points) >= 1.5:  # else this grid's own, below
            factor = span / (self.h * points)
            got = self._tilt_on(factor, lt_l, log_alpha)
            if got is None:
                break
            lo_c, up_c = got
            lo, up = max(lo, lo_c), min(up, up_c)
            width, previous = up - max(lo, lo_mt), width
            w_c = up_c - max(lo_c, lo_mt)
            if w_c < best_width:
                best_factor, best_width = factor, w_c
            found = width <= _TAIL_FIRST_ENOUGH
            stalled = not found and width > _TAIL_LADDER_STALL * previous
            if points >= _TAIL_FIRST_POINTS or stalled:
                break
            # aim at half the target: a third grid costs more than the margin
            grow = (max(width, _TAIL_FIRST_ENOUGH) / (0.5 * _TAIL_FIRST_ENOUGH)) ** (1.0 / _TAIL_LADDER_ORDER)
            points = min(points * max(2.0, grow), float(_TAIL_FIRST_POINTS))
        inf_here = None  # the composed mass at +infinity of the last tilt below, if on this grid
        f0 = self._predicted_factor(fc)  # the width law's grid (the same for every truncation)
        if stalled:
            inf_l = self._inf_mass(lt_l)

            def beyond_reach() -> bool:
                """Putting all of the truncation's mass at +infinity back on the grid could not bring
                the bracket within _COARSE_TAIL_ENOUGH."""
                return up - max(lo, lo_mt) - _inf_gain(inf_l, up) > _COARSE_TAIL_ENOUGH

            if inf_l <= math.exp(float(log_alpha) - _INF_DEPTH) or (_STALL_GAIN and beyond_reach()):
                # finer grids would not narrow it, and deeper truncations only move the mass at
                # +infinity (at most alpha e^-_INF_DEPTH, or too little) onto the grid
                return min(lo, up), up
            if _STALL_DEEPER:
                # finer grids would not narrow it: the deeper truncations on the ladder's best grid
                # only (their tilts on finer grids were wider still and took seconds)
                for lt in lts:
                    if lt >= lt_l or beyond_reach():
                        continue
                    got = self._tilt_on(best_factor, lt, log_alpha)
                    if got is None:
                        break
                    lo, up = max(lo, got[0]), min(up, got[1])
                return min(lo, up), up
        for i, lt in enumerate(lts):
            if found and up - max(lo, lo_mt) <= _COARSE_TAIL_ENOUGH:
                break
            if (not found and fc is not None and i + 1 < len(lts)
                    and self._inf_mass(lt) > _COARSE_TAIL_ENOUGH * math.exp(fc[2])):
                # its mass at +infinity alone is more than the width wanted of the forecast's gamma
                # (a Chernoff estimate): a deeper truncation first (sigma 3.7, q 1.28e-4, T 58,
                # kappa 1.2e-17: the tilt at alpha e^-1.5 was 1.7 % wide, the next one 0.37 %)
                continue
            if inf_here is not None and up - max(lo, lo_mt) - _inf_gain(inf_here, up) > _COARSE_TAIL_ENOUGH:
                # a deeper truncation, on this grid or a coarser one, only moves mass from +infinity
                # onto the grid: the upper end falls by at most that mass, too little to be enough
                break
            if f0 is not None and (lt, f0) not in done:
                # first the grid that the width law predicts _WIDTH_AIM wide on; kept alone if enough
                try:
                    coarse = self._regridded(f0, lt)
                    coarse._parts("remove")
                    done.add((lt, f0))
                    lo_c, up_c = self._tail_power_from(coarse, log_alpha)
                    lo, up, found = max(lo, lo_c), min(up, up_c), True
                    if up - max(lo, lo_mt) <= _COARSE_TAIL_ENOUGH:
                        break
                    if f0 < 1.0:  # this grid's own would be wider still, and deeper truncations ...
                        done.add((lt, 1.0))
                        # ... only move the mass at +infinity onto the grid (as below)
                        inf_here = compose_inf_mass([(st.inf_mass, T) for st, T in coarse._parts("remove")[0]])
                except (StepTooWide, WindowTooWide):
                    pass
            for factor in _COARSE_TAIL_FACTORS:
                if (lt, factor) in done:
                    break
                coarse = self._regridded(factor, lt)
                try:
                    steps_c, _, _ = coarse._parts("remove")
                except (StepTooWide, WindowTooWide):
                    continue
                done.add((lt, factor))
                lo_c, up_c = self._tail_power_from(coarse, log_alpha)
                lo, up, found = max(lo, lo_c), min(up, up_c), True
                inf_here = compose_inf_mass([(st.inf_mass, T) for st, T in steps_c]) if factor == 1.0 else None
                break
        # not tight: this grid's own steps too (each end the better), unless just computed; not
        # below 1e-300, where its truncation's mass at +infinity (~tau, far above the level) leaves
        # that tilt the trivial bracket (alpha, 1): 20 s for nothing at q 1e-4, T 1e3, kappa e^-1089
        own_useless = float(log_alpha) < _LOG_MIN_TAIL and self.log_tau > float(log_alpha) + 46.0
        # (nor where this grid's steps were tilted truncated deeper: the same grid, less mass at +infinity)
        own_done = any(f == 1.0 and lt <= self.log_tau for lt, f in done)
        if (not found or up - max(lo, lo_mt) > 0.01) and not own_done and not own_useless:
            lo_s, up_s = self._tail_power_from(self, log_alpha)
            lo, up = max(lo, lo_s), min(up, up_s)
        return min(lo, up), up

    def _tilt_on(self, factor: float, lt: float, log_alpha: float) -> tuple[float, float] | None:
        """The far-tail tilt (:meth:`_tail_power_from`) on the grid h * ``factor``, the steps truncated
        at ``lt``; None where a step or the window does not fit."""
        try:
            coarse = self._regridded(factor, lt)
            coarse._parts("remove")
        except (StepTooWide, WindowTooWide):
            return None
        return self._tail_power_from(coarse, log_alpha)

    def _law_log_width(self, fc: tuple[float, float, float, float] | None, factor: float) -> float | None:
        """log of the far-tail tilt's width (in log) on the grid h * ``factor`` that the width law
        :data:`_WIDTH_LAW` predicts from the forecast ``fc`` (:meth:`tail_forecast`), for one grid
        segment of at least :data:`_WIDTH_MIN_STEPS` steps; None elsewhere. A choice of grid only."""
        grid, _, _ = _split_extremes(self.segments)
        if fc is None or len(grid) != 1 or grid[0][2] < _WIDTH_MIN_STEPS:
            return None
        a, b, c, d = _WIDTH_LAW
        t = fc[0]
        return a + b * math.log(grid[0][2]) + c * math.log(t * self.h * factor) + d * math.log(t)

    def _width_aim(self) -> float | None:
        """The far-tail tilt's width aim on this grid: :attr:`width_aim` (a refined grid), else
        :data:`_WIDTH_AIM` on the automatic grid, else None."""
        if self.width_aim is not None:
            return self.width_aim
        return _WIDTH_AIM if self.auto_grid else None

    def _predicted_factor(self, fc: tuple[float, float, float, float] | None) -> float | None:
        """The grid factor whose far-tail tilt :meth:`_law_log_width` predicts :data:`_WIDTH_AIM` wide
        (in log; a refined grid's :attr:`width_aim` instead), on the automatic grid or a refined one
        (:meth:`refined`): coarser (at least :data:`_WIDTH_COARSER`, at most
        :data:`_WIDTH_MAX_FACTOR`) or finer (at most :data:`_WIDTH_FINER` [0], at least the inverse of
        its [1]); None elsewhere or in between. A choice of grid only."""
        lw = self._law_log_width(fc, 1.0)
        aim = self._width_aim()
        if lw is None or aim is None or _WIDTH_AIM <= 0.0:
            return None
        factor = math.exp((math.log(aim) - lw) / _WIDTH_LAW[2])
        factor = min(max(factor, 1.0 / _WIDTH_FINER[1]), _WIDTH_MAX_FACTOR)
        return factor if (factor >= _WIDTH_COARSER or factor <= _WIDTH_FINER[0]) else None

    def tail_forecast(self, log_alpha: float) -> tuple[float, float, float, float] | None:
        """:func:`rerokit.bounds.pld.tilt.tail_forecast` of this grid's REMOVE steps at one level
        (no composition), or None where :meth:`tail_power` would not tilt them as they are (steps
        outside :data:`SIGMA_GRID_RANGE`, groups of examples) or the level is not in the upper
        tail. A choice of computation only; kept per level (dpsgd_exact._tilt_first, :meth:`tail_by_jumps`
        and :meth:`_tail_power_jumps` all ask)."""
        grid, noiseless, inv = _split_extremes(self.segments)
        if noiseless or inv > 0 or not grid or self.group_size != 1:
            return None
        # t to tilted_power's own precision: kept for a tilt of these very steps (_tail_power_from)
        key = ("forecast", float(log_alpha))
        if key not in self._built:
            fc = tail_forecast(self.grid_steps("remove"), self.h, float(log_alpha), 1e-6)
            if fc is not None:
                self._built[("saddle", float(log_alpha))] = fc[0]
            self._built[key] = fc
        return self._built[key]

    def _tail_power_one_jump(self, log_alpha: float, lt_q: float | None) -> float | None:
        """log of a certified upper end of :meth:`tail_power` by :func:`rerokit.bounds.pld.onejump.one_jump_upper`
        (one example per step, every segment on the grid with 0 < q <= :data:`_ONE_JUMP_Q`, sum q T
        <= :data:`_ONE_JUMP_QT`, or q <= :data:`_ONE_JUMP_RARE_Q` and sum q T <= :data:`_ONE_JUMP_RARE_QT`;
        at least two steps), its steps truncated at ``lt_q`` on a grid of
        :data:`_ONE_JUMP_LABELS` labels up to c, the per-step loss at the loss-matched max test's
        threshold (pld.maxtest.loss_matched_threshold), then on grids :data:`_ONE_JUMP_FINER` times
        finer while it is not within :data:`_ONE_JUMP_ENOUGH` of the max test's power (the least
        kept); None where it does not apply. Kept per level."""
        key = ("one_jump", float(log_alpha))
        if key not in self._built:
            self._built[key] = self._find_one_jump(float(log_alpha), lt_q)
        return self._built[key]

    def tail_by_one_jump(self, log_alpha: float) -> bool:
        """Whether :meth:`tail_power` at this level starts with the one-jump bound
        (:meth:`_tail_power_one_jump`; it may still decline there, where a step does not fit). Reads
        the schedule and the level only. A choice of computation only."""
        return self._one_jump_threshold(float(log_alpha)) is not None

    def _one_jump_threshold(self, log_alpha: float) -> float | None:
        """The one-jump bound's threshold c (:func:`rerokit.bounds.pld.maxtest.loss_matched_threshold`)
        where its rule applies (:meth:`_tail_power_one_jump`), else None. Kept per level
        (dpsgd_exact._tilt_first and :meth:`_find_one_jump` both ask)."""
        key = ("one_jump_c", float(log_alpha))
        if key not in self._built:
            self._built[key] = self._find_one_jump_threshold(float(log_alpha))
        return self._built[key]

    def _find_one_jump_threshold(self, log_alpha: float) -> float | None:
        """:meth:`_one_jump_threshold`, computed."""
        grid, noiseless, inv = _split_extremes(self.segments)
        n = sum(T for _, _, T in self.segments)
        qt = sum(q * T for _, q, T in grid)
        if (self.group_size != 1 or noiseless or inv > 0 or n < 2
                or not any(all(0.0 < q <= q_max for _, q, _ in grid) and qt <= qt_max
                           for q_max, qt_max in ((_ONE_JUMP_Q, _ONE_JUMP_QT), (_ONE_JUMP_RARE_Q, _ONE_JUMP_RARE_QT)))):
            return None
        c = loss_matched_threshold(self.segments, log_alpha)
        if c is None:
            return None
        spread = math.sqrt(sum(T * (q * q) * math.expm1(min(1.0 / (s * s), 700.0)) for s, q, T in grid))
        if not (math.isfinite(c) and c > 0.0 and c >= _ONE_JUMP_SPREAD * spread):
            return None
        return c

    def _find_one_jump(self, log_alpha: float, lt_q: float | None) -> float | None:
        """:meth:`_tail_power_one_jump`, computed."""
        c = self._one_jump_threshold(log_alpha) if lt_q is not None else None
        if c is None:
            return None
        n = sum(T for _, _, T in self.segments)
        # the grid c / (_ONE_JUMP_LABELS r), r = 1 first, finer (_ONE_JUMP_FINER) while the bound is not
        # final against the max test's closed form (the same rule as tail_power's); the least is kept
        budget = math.exp(log_alpha) * _ONE_JUMP_SPARSE / n
        best = None
        for r in (1,) + _ONE_JUMP_FINER:
            labels = _ONE_JUMP_LABELS * r
            h = c / labels
            try:
                # (no statistic; the steps' far tails on sparse labels, :data:`_ONE_JUMP_SPARSE`)
                steps = SchedulePLD(self.segments, h, 1, False, False, lt_q, self.precision,
                                    sparse_budget=budget if budget > 0.0 else None)._parts("remove")[0]
            except (StepTooWide, PLDTooWide, ValueError):
                break
            got = one_jump_upper([JumpStep(st.j_lo, st.split, st.inf_mass, T) for st, T in steps], h, log_alpha,
                                 round(_ONE_JUMP_CUT * labels),
                                 (round(_ONE_JUMP_SCAN[0] * labels), round(_ONE_JUMP_SCAN[1] * labels)))
            if got is None:
                break
            # the level read as alpha e^shift (the steps' loss shift, DiscretePLD.loss_shift)
            up = min(0.0, got.log_upper + _total_shift(steps))
            best = up if best is None else min(best, up)
            if self._one_jump_final(best, log_alpha):
                break
        return best

    def _one_jump_final(self, log_up: float, log_alpha: float) -> bool:
        """Whether a one-jump upper end is final: within :data:`_ONE_JUMP_ENOUGH` of the max test's
        power (its closed form, the lower end)."""
        return log_up - self._max_test_log(float(log_alpha)) <= _ONE_JUMP_ENOUGH

    def _max_test_log(self, log_alpha: float) -> float:
        """log of the max test's power at one level (:func:`rerokit.bounds.pld.maxtest.log_max_test_power`,
        closed form; -inf for groups of examples), kept per level."""
        key = ("max_test", log_alpha)
        if key not in self._built:
            self._built[key] = (float(log_max_test_power(self.segments, np.array([log_alpha]))[0])
                                if self.group_size == 1 else -math.inf)
        return self._built[key]

    def short_segment(self) -> tuple[float, float, int] | None:
        """The segment :meth:`short_segment_upper` takes apart: of those with at most
        :data:`SHORT_SEGMENT_STEPS` steps and 0 < q < 1, the one of smallest sigma (then fewest
        steps); None where it does not apply (a group of examples, a segment off the grid, fewer
        than two segments on it)."""
        grid, noiseless, inv = _split_extremes(self.segments)
        shorts = [seg for seg in grid if seg[2] <= SHORT_SEGMENT_STEPS and 0.0 < seg[1] < 1.0]
        if self.group_size != 1 or noiseless or inv > 0 or not shorts or len(grid) < 2:
            return None
        return min(shorts, key=lambda seg: (seg[0], seg[2]))

    def _short_parts(self, log_alpha: float, with_a: bool) -> tuple[tuple[float, float, int], list, list] | None:
        """(:meth:`short_segment`, its REMOVE steps (``with_a``; else none), the other segments'
        steps), truncated as deep as :meth:`tail_power`'s at this level; each built once per
        truncation (the upper and the lower end read the same; one step in closed form needs only
        the others). None where it does not apply or a step does not fit."""
        a = self.short_segment()
        if a is None:
            return None
        lt = self._tail_truncation(log_alpha)

        def built(key: tuple, segs: tuple) -> list | None:
            if key not in self._built:
                try:
                    self._built[key] = SchedulePLD(segs, self.h, 1, False, False, lt, self.precision)._parts("remove")[0]
                except (StepTooWide, WindowTooWide):
                    self._built[key] = None
            return self._built[key]

        rest = list(_split_extremes(self.segments)[0])
        rest.remove(a)
        steps = built(("short_rest", lt), tuple(rest))
        steps_a = built(("short_a", lt), (a,)) if with_a else []
        return None if steps is None or steps_a is None else (a, steps_a, steps)

    def _saddle(self, log_alpha: float) -> float:
        """The whole schedule's saddle tilt at this level: the one tail_forecast's bisection kept
        where it ran, else :func:`rerokit.bounds.pld.tilt.saddle_tilt`."""
        tilt = self._built.get(("saddle", float(log_alpha)))
        return saddle_tilt(self.grid_steps("remove"), self.h, float(log_alpha)) if tilt is None else tilt

    def short_segment_upper(self, log_alpha: float, threshold: float) -> float | None:
        """log of a certified upper bound on the REMOVE power at exp(log_alpha) with a short segment A
        (at most :data:`SHORT_SEGMENT_STEPS` steps; the one of smallest sigma) apart from the rest B
        (:mod:`rerokit.bounds.pld.onestep`): one step in closed form
        (:func:`~rerokit.bounds.pld.onestep.one_step_upper`), several composed under a ladder of
        tilts (:func:`~rerokit.bounds.pld.onestep.segment_upper`); B composed under a few tilts. Both
        truncated as deep as :meth:`tail_power`'s. None where it does not apply (one example per
        step, 0 < q < 1, every segment on the grid, at least two) or the windows do not fit;
        ``threshold``: a guess of the threshold (nats)."""
        a = self.short_segment()
        got = None if a is None else self._short_parts(log_alpha, a[2] > 1)
        if got is None:
            return None
        _, steps_a, steps = got
        parts = [(st.j_lo, st.split, T) for st, T in steps]
        inf = compose_inf_mass([(st.inf_mass, T) for st, T in steps])
        # (A's own shift only where A is discretised too)
        shift = _total_shift(steps + (steps_a if a[2] > 1 else []))
        tilt = self._saddle(log_alpha)
        if a[2] == 1:
            return one_step_upper(a[0], a[1], parts, self.h, inf, shift, float(log_alpha), threshold, tilt,
                                  self.precision)
        parts_a = [(st.j_lo, st.split, T) for st, T in steps_a]
        inf_a = compose_inf_mass([(st.inf_mass, T) for st, T in steps_a])
        return segment_upper(parts_a, inf_a, parts, self.h, inf, shift, float(log_alpha), threshold, tilt,
                             self.precision)

    def short_segment_lower(self, log_alpha: float, threshold: float) -> float | None:
        """log of a certified lower bound on the REMOVE power at exp(log_alpha): the test on the sum
        of the bucket statistics of :meth:`short_segment` and of the rest
        (:func:`rerokit.bounds.pld.onestep.segment_lower`), both truncated as :meth:`short_segment_upper`'s.
        None where it does not apply or no test is found; ``threshold``: a guess of the threshold
        (nats)."""
        got = self._short_parts(log_alpha, True)
        if got is None:
            return None
        _, steps_a, steps = got
        tilt = self._saddle(log_alpha)

        def sides(sts: list) -> tuple[list, list]:
            return ([(st.j_lo - 1, st.stat_p, T) for st, T in sts], [(st.j_lo - 1, st.stat_q, T) for st, T in sts])

        a_p, a_q = sides(steps_a)
        b_p, b_q = sides(steps)
        return segment_lower(a_p, a_q, b_p, b_q, [(st.j_lo, st.split, T) for st, T in steps], self.h,
                             float(log_alpha), threshold, tilt, self.precision)

    def max_test_lower(self, log_alphas: np.ndarray) -> np.ndarray:
        """The max test's power at levels exp(log_alphas) <= exp(:data:`MAX_TEST_BELOW`), one
        example per step (:func:`rerokit.bounds.pld.maxtest.log_max_test_power`: closed form on the
        true pair, no composition); 0 elsewhere. A certified lower end of the power."""
        lk = np.atleast_1d(np.asarray(log_alphas, dtype=float))
        out = np.zeros(lk.shape)
        small = lk <= MAX_TEST_BELOW
        if self.group_size == 1 and small.any():
            out[small] = np.exp(log_max_test_power(self.segments, lk[small]))
        return out

    def _regridded(self, factor: float, log_tau: float) -> SchedulePLD:
        """The same schedule's REMOVE steps on the grid step h * ``factor``, truncated at ``log_tau``:
        ``self`` where both are this grid's own (its steps, already built for the sizing, are the
        same ones), else a new :class:`SchedulePLD` (steps built on first use)."""
        if factor == 1.0 and log_tau == self.log_tau:
            return self
        return SchedulePLD(self.segments, self.h * factor, self.group_size, self.lower, False, log_tau, self.precision)

    def _step_span(self, log_tau: float) -> float:
        """The longest loss range of one grid step truncated at ``log_tau`` (per composition)."""
        grid, _, _ = _split_extremes(self.segments)
        step_tau = log_tau - math.log(max(sum(T for _, _, T in self.segments), 1))
        spans = [loss_range(s_, q_, "remove", step_tau, self.group_size) for s_, q_, _ in grid]
        return max((hi - lo for lo, hi in spans), default=0.0)

    def _inf_truncation(self, log_alpha: float) -> float | None:
        """The shallowest truncation log tau (<= this one's; None if none is found or the schedule
        has steps outside the grid range) whose composed mass at +infinity is at most
        alpha e^-:data:`_INF_DEPTH`, i.e. at most that fraction of the power (>= alpha): a choice
        only (the mass is counted whatever it is), which keeps one step's grid short where the
        sampled component's tail, not the truncation bound, sets the mass (small q: about
        q tau)."""
        key = ("inf_truncation", float(log_alpha))  # tail_power and _tail_power_coarse both ask
        if key not in self._built:
            self._built[key] = self._find_inf_truncation(float(log_alpha))
        return self._built[key]

    def _find_inf_truncation(self, log_alpha: float) -> float | None:
        """:meth:`_inf_truncation`, computed."""
        grid, noiseless, inv = _split_extremes(self.segments)
        if noiseless or inv > 0 or not grid:
            return None
        target = float(log_alpha) - _INF_DEPTH

        def ok(lt: float) -> bool:
            inf = self._inf_mass(lt)
            return inf > 0.0 and math.log(inf) <= target

        # the last of lt0, lt0 + 0.5, ... (<= this truncation) before the first that is not ok: the
        # mass at +infinity grows with the truncation, so once positive, ok is monotone and the
        # lattice is bisected (4-6 evaluations instead of up to ~20)
        lattice = [min(max(target, math.log(1e-300)), self.log_tau)]
        while lattice[-1] + 0.5 <= self.log_tau:
            lattice.append(lattice[-1] + 0.5)
        if not ok(lattice[0]):
            return None
        good, bad = 0, len(lattice)  # ok at good; not ok at bad (or beyond the lattice)
        while bad - good > 1:
            mid = (good + bad) // 2
            if ok(lattice[mid]):
                good = mid
            else:
                bad = mid
        return lattice[good]

    def _inf_mass(self, lt: float) -> float:
        """The composed mass at +infinity of the grid steps truncated at ``lt`` (each step at
        ``lt`` - log of the number of steps), from the steps' loss tails (no step is built); only
        for schedules whose steps are all on the grid (:func:`_split_extremes`)."""
        grid, _, _ = _split_extremes(self.segments)
        step_tau = lt - math.log(sum(T for _, _, T in grid))
        infs = []
        for s_, q_, T in grid:
            l_hi = loss_range(s_, q_, "remove", step_tau, self.group_size)[1]
            infs.append((float(loss_tails(np.array([l_hi]), s_, q_, "remove", self.group_size)[0][0]), T))
        return compose_inf_mass(infs)

    def _tail_power_from(self, src: "SchedulePLD", log_alpha: float) -> tuple[float, float]:
        """:meth:`tail_power` from the steps of ``src`` (the same schedule, its own grid and truncation).

        Below 1e-300 (:data:`_LOG_MIN_TAIL`; one example per step, every step on the grid) the
        dominating steps are continued beyond their truncation in log masses
        (:mod:`rerokit.bounds.pld.logtail`), down to a mass beyond of alpha e^-30 / T per step,
        so that the mass at +infinity no longer swamps the upper end; the statistic (lower end) is
        unchanged."""
        steps, atoms, _ = src._parts("remove")
        parts = [(st.j_lo, st.split, T) for st, T in steps] + [(off, pmf, 1) for off, pmf, _ in atoms if pmf.size]
        inf = compose_inf_mass([(st.inf_mass, T) for st, T in steps] + [(p_inf, 1) for _, _, p_inf in atoms])
        shift = _total_shift(steps)
        log_masses = False
        grid, _, _ = _split_extremes(self.segments)
        if float(log_alpha) < _LOG_MIN_TAIL and not atoms and self.group_size == 1:
            ext = self._log_tail_parts(src, steps, float(log_alpha))
            if ext is not None:
                parts, inf, shift = ext
                log_masses = True
        gsteps = steps[: len(grid)]
        sp = [(st.j_lo - 1, st.stat_p, T) for st, T in gsteps] if (self.lower and gsteps) else None
        sq = [(st.j_lo - 1, st.stat_q, T) for st, T in gsteps] if (self.lower and gsteps) else None
        # the statistic (the lower end) is skipped where the max test's power (closed form, a
        # certified lower end that the final bracket takes too) is within _MAX_TEST_ENOUGH of the
        # upper end: two of the tilt's three compositions (short schedules: sigma 1.99, q 2.31e-3,
        # T 13, kappa 2e-25: the tilt 7.6 -> 3.8 ms, the bracket 5.0e-4 -> 1.2e-3 wide)
        lo_mt = self._max_test_log(float(log_alpha)) if sp is not None else -math.inf
        enough = lo_mt - shift + _MAX_TEST_ENOUGH if math.isfinite(lo_mt) else None
        try:
            # the saddle point of these steps if tail_forecast found it already (the same bisection)
            t = self._built.get(("saddle", float(log_alpha))) if (src is self and not log_masses) else None
            lo, up = tilted_power(parts, sp, sq, src.h, inf, float(log_alpha), t=t, precision=self.precision,
                                  log_masses=log_masses, enough=enough)
            # the steps' loss shift s (DiscretePLD.loss_shift): the upper end is the power at level
            # alpha e^s, at most e^s times that at alpha (concave in the level, 0 at level 0); near
            # gamma = 1 that factor is loose, and the upper end is recomputed at alpha e^s instead
            up_s = min(0.0, up + shift)
            if shift > 0.0 and up_s > -0.1:
                up_s = min(up_s, tilted_power(parts, None, None, src.h, inf, min(0.0, float(log_alpha) + shift),
                                              precision=self.precision, log_masses=log_masses)[1])
        except WindowTooWide:
            return max(float(log_alpha), min(lo_mt, 0.0)), 0.0
        return min(max(lo, lo_mt), up_s), up_s

    def _log_tail_parts(self, src: "SchedulePLD", steps: list, log_alpha: float) -> tuple[list, float, float] | None:
        """(log-mass parts, log of the composed mass at +infinity, total loss shift) of ``src``'s
        REMOVE steps continued in logs (:func:`rerokit.bounds.pld.logtail.extend_step`), or None
        where an extension does not fit (then the steps as they are answer)."""
        grid, _, inv = _split_extremes(self.segments)
        pairs = [(s_, q_) for s_, q_, _ in grid] + ([(1.0 / math.sqrt(inv), 1.0)] if inv > 0 else [])
        n_steps = max(sum(T for _, T in steps), 1)
        target = log_alpha - _LOG_TAIL_DEPTH - math.log(n_steps)
        parts, infs, shift = [], [], 0.0
        try:
            for (st, T), (s_, q_) in zip(steps, pairs):
                off, lp, li, sh = extend_step(st, s_, q_, target)
                parts.append((off, lp, T))
                infs.append((li, T))
                shift += T * sh
        except StepTooWide:
            return None
        return parts, composed_log_inf(infs), shift * (1.0 + 1e-9)

    def beta_near_one(self, log_alpha: Any, ratio: int = 32, coarse_div: float = 8.0,
                      block_per_r2: float = 2.0, block_precision: str = "double",
                      tilt: float | None = None) -> Any:
        """Certified (lower, upper) of 1 - gamma (the REMOVE power's complement) at one level where
        gamma is near 1, in relative precision: P's lower tail by exponential tilting, the steps on
        a grid finer by ``coarse_div * ratio`` composed in blocks (:mod:`rerokit.bounds.pld.lowertail`).
        The upper end is 1 without the statistic (``lower=False``).

        Args:
          log_alpha: natural log of the level (<= 0).
          ratio: the composition grid's step over the steps' grid step.
          coarse_div: this grid step over the composition grid's.
          block_per_r2: steps per block, over ratio^2.
          block_precision: the FFT arithmetic of the statistic's blocks on the fine grid.
          tilt: the tilt (default: the level's saddle point; with several levels, the middle one's).

        Returns:
          (lower, upper), or None where the threshold is not in P's lower tail, the schedule has
          steps outside :data:`SIGMA_GRID_RANGE` or a window is too wide; with a sequence of levels
          a list of those, from one set of compositions
          (:func:`rerokit.bounds.pld.lowertail.near_one_beta`).
        """
        many = not isinstance(log_alpha, (int, float, np.floating, np.integer))
        grid, noiseless, inv = _split_extremes(self.segments)
        if noiseless or inv > 0 or not grid:
            return [None] * len(log_alpha) if many else None
        la = [float(a) for a in log_alpha] if many else float(log_alpha)
        grid_ = NearOneGrid(ratio, coarse_div, block_per_r2, block_precision)
        return near_one_beta(self.segments, self.grid_steps("remove"), self.h, la,
                             self.group_size, self.log_tau, self.lower, grid_, self.precision, tilt)

    def power(self, log_alphas: Any) -> Bracket:
        """Certified bracket of the REMOVE pair's power (the ReRo gamma) at levels exp(log_alphas).

        Args:
          log_alphas: natural logs of the levels (<= 0), a number or 1-D array.

        Returns:
          :class:`Bracket` of arrays: upper from the dominating PLD, lower from the threshold
          tests (the level itself without ``lower``); ``floored`` where the error terms exceed a
          tenth of the upper end.
        """
        lk = np.atleast_1d(np.asarray(log_alphas, dtype=float))
        log_up, _ = self.upper.power(lk)
        up = np.exp(log_up)
        low = self.power_lower(lk)
        return Bracket(np.minimum(low, up), up, self.upper.error > 0.1 * up)

    def epsilon(self, delta: float) -> float:
        """epsilon at ``delta`` under add-or-remove adjacency: the larger of the two directions.

        Args:
          delta: in (0, 1) (not validated here).

        Returns:
          A certified upper bound on epsilon (inf if the error terms reach delta).

        Raises:
          ValueError: if the ADD direction was not requested.
        """
        if self.add is None:
            raise ValueError("epsilon needs the PLD built with add_direction=True")
        return max(self.upper.epsilon(delta), self.add.epsilon(delta))


def _jumps_pay(fc: tuple[float, float, float, float] | None, n_steps: int) -> bool:
    """Whether the two-grid tilt is predicted cheaper than the one-grid tilt, from
    :meth:`SchedulePLD.tail_forecast` (t, threshold, estimate, spread): a spread of at least
    :data:`_JUMP_SPREAD` (the one-grid tilt's window that many times the untilted one), and not a
    small tilt on a short schedule (t < :data:`_JUMP_SMALL_T` with fewer than
    :data:`_JUMP_SHORT` steps, where the one-grid tilt's coarse grids are cheap), nor fewer than
    :data:`_JUMP_FEW_STEPS` steps at all. A choice only."""
    if fc is None or fc[3] < _JUMP_SPREAD or n_steps < _JUMP_FEW_STEPS:
        return False
    return not (fc[0] < _JUMP_SMALL_T and n_steps < _JUMP_SHORT)


def _total_shift(steps: Sequence[tuple[Any, int]]) -> float:
    """The composed loss shift sum_i T_i s_i of the steps (DiscretePLD.loss_shift), rounded up."""
    return sum(T * st.loss_shift for st, T in steps) * (1.0 + 1e-9)


def _losses_above(steps: Sequence[tuple[Any, int]], cut: int) -> bool:
    """Whether some step's grid has a label above ``cut`` (a loss the two-grid tilt counts as a jump)."""
    return any(cut < st.j_lo + st.split.size for st, _ in steps)


def _few_jumps(steps: Sequence[tuple[Any, int]], h: float, t: float, cut_loss: float = _JUMP_CUT) -> bool:
    """Whether every step has losses below ``cut_loss`` and one (the only one, for one step) above
    it, and the schedule tilted by t expects at most :data:`_JUMP_MAX` jumps (:func:`_tilted_jumps`):
    the two-grid tilt's condition on the steps (a choice of computation only)."""
    cut = math.ceil(cut_loss / h)
    # (several distinct steps: those without losses above the cut are all bulk, pld.jumps.jump_parts_multi)
    if any(not st.j_lo < cut for st, _ in steps) or not _losses_above(steps, cut):
        return False
    return _tilted_jumps(steps, h, t, cut) <= _JUMP_MAX


def _tilted_jumps(steps: Sequence[tuple[Any, int]], h: float, t: float, cut: int) -> float:
    """The expected number of jumps (labels >= cut) of the schedule tilted by t: sum_i T_i times
    step i's tilted mass at or above the cut (a choice of computation only)."""
    n = 0.0
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for st, T in steps:
            a = np.log(st.split) + t * (st.j_lo + np.arange(st.split.size)) * h
            w = np.exp(a - float(np.max(a)))
            n += T * float(np.sum(w[cut - st.j_lo:]) / np.sum(w))
    return n


def _sparse_budget(q: float, direction: str, group_size: int) -> float | None:
    """The ``sparse_tail`` budget of one grid step (:data:`_SPARSE_Q`), None for the full grid."""
    return _SPARSE_BUDGET if (q <= _SPARSE_Q and direction == "remove" and group_size == 1) else None


def _revealed_atom(q: float, T: int, k: int, direction: str, h: float) -> tuple[int, np.ndarray, float]:
    """(label offset, P-masses on the grid h, mass at +infinity) of T near-noiseless steps composed
    (module docstring: the revealed sampling indicator of k examples, never sampled with
    probability (1 - q)^{kT}). REMOVE: loss x = kT log(1 - q) with P-mass e^x, +infinity with the
    rest; ADD: loss -x with P-mass 1 (+infinity surely at q = 1). The T steps are composed exactly
    (a point mass) and the loss x put on the grid once by connect-the-dots (Doroshenko et al.
    2022: P-mass 1 - w at the grid point above, w below, Q-mass preserved, a dominating pair),
    rounded to the safe side (x up, the finite P-mass down, the upper point's share up). One
    rounding instead of T: rounding each step's loss up to the grid cost T h (epsilon 0.1 for a
    loss of 1e-319 at T 10)."""
    never = k * T * math.log1p(-q) if q < 1.0 else -math.inf
    if direction == "remove":
        x, m = never, math.exp(never) * (1.0 - 4.0 * _U) if never > -745.0 else 0.0
        inf = min(1.0, -math.expm1(never) * (1.0 + 4.0 * _U)) if math.isfinite(never) else 1.0
    else:
        x, m, inf = -never, 1.0, 0.0
    if not (m > 0.0 and math.isfinite(x) and abs(x) / h < 2.0 ** 52):
        return 0, np.zeros(0), 1.0  # all at +infinity (the pessimistic end: a dominating pair)
    x += abs(x) * 8.0 * _U + 1e-300  # the log1p and the product: a few ulps, rounded up
    i = math.floor(x / h)
    a = i * h
    if x <= a:  # on the grid point itself (or below it by the division's rounding)
        return i, np.array([m]), inf
    up_share = min(1.0, math.expm1(a - x) / math.expm1(-h) * (1.0 + 8.0 * _U))
    m_up = m * up_share
    return i, np.array([m - m_up, m_up]), inf


def _mass_defect(parts: Sequence[tuple[np.ndarray, float, int]]) -> float:
    """sum_i T_i |1 - (sum of step i's stored masses + its infinity mass)|: the stored step pmfs
    are probability distributions only up to rounding (about 1e-16 each), and a composition of T
    of them can miss (or gain) T times that; carried as mass outside the window, so a bracket
    near gamma = 1 stays certified once the round-off bound is smaller than it."""
    if len(parts) >= BATCH_MIN:  # many distinct steps: the same sums, vectorised
        return mass_defect_batched(parts)
    tot = 0.0
    for pmf, inf, T in parts:
        # math.fsum: the exact sum - 1, correctly rounded (Shewchuk 1997), so |.| (1 + 2^-52) bounds it
        tot += T * abs(math.fsum(np.asarray(pmf, dtype=float).tolist() + [float(inf), -1.0]))
    return tot * (1.0 + 1e-9) + 1e-300


def _step_rounding(parts: Sequence[tuple[np.ndarray, float, int, float]]) -> float:
    """What the rounding of the steps' masses can do to the composed prefix sums (the reversed
    tests S <= s; ``err``: a step's bound on |E' g - E g| for monotone g with values in [0, 1],
    ``StepPLD.stat_rev_err``; :mod:`rerokit.bounds.pld.step`).

    Telescoping, p'^{*T} - p^{*T} = sum_k p'^{*k} * (p' - p) * p^{*(T-1-k)}, and every term is one
    step's difference tested against g averaged over a positive measure (again non-decreasing,
    increments no larger, values in [0, its mass]); the exact steps have mass <= 1, the stored ones
    at most 1 + their (fsum-exact) excess, so the bound is sum_i T_i err_i times
    exp(sum_i T_i excess_i). It bounds every prefix or suffix sum, so it is carried as round-off of
    the reversed pair; one entry (a difference of two such sums) twice it.
    """
    tot, excess = 0.0, 0.0
    # the fsum-exact excesses, vectorised (batch.segment_excesses: the same values)
    exc = segment_excesses([(pmf, inf) for pmf, inf, _, _ in parts]).tolist()
    for (_, _, T, err), e in zip(parts, exc):
        tot += T * float(err)
        excess += T * max(0.0, e)
    return tot * math.exp(excess * (1.0 + 1e-9)) * (1.0 + 1e-9)


def _grid_step(segs: Sequence[tuple[float, float, int]], h: float | None, group_size: int,
               directions: Sequence[str], log_tau: float) -> float:
    grid, noiseless, inv = _split_extremes(segs)
    sized = grid + ([(1.0 / math.sqrt(inv), 1.0, 1)] if inv > 0 else [])
    if h is None:
        many = len(sized) >= BATCH_MIN  # (segments merged: distinct steps, as _make_parts counts them)
        h = default_grid_step(sized, group_size, _DISTINCT_STEP_POINTS if many else STEP_POINTS) if sized else 1e-2
    n_steps = sum(T for _, _, T in segs)
    step_tau = log_tau - math.log(n_steps)
    for s_, q_, _ in sized:  # keep one step's grid below MAX_STEP_WIDTH points
        for d in directions:
            l_lo, l_hi = loss_range(s_, q_, d, step_tau, group_size)
            h = max(h, (l_hi - l_lo) / (MAX_STEP_WIDTH - 4))
    return h


def schedule_pld(
    schedule: Any,
    value_discretization_interval: float | None = None,
    *,
    group_size: int | None = None,
    lower: bool = True,
    add_direction: bool = True,
    log_tau: float = LOG_TAU,
    eager: bool = True,
) -> SchedulePLD:
    """Build the composed PLDs of a DP-SGD schedule (sized now, composed on first use).

    The grid step h defaults to ~1/40 of the rms standard deviation of one step's loss (within
    [1e-7, 1e-2]) and is raised where needed to keep one step's grid within its size limit; when
    the composed window still exceeds the size limits h is coarsened 4x until it fits (still
    certified; only the bracket is wider).

    Args:
      schedule: a :class:`~rerokit.bounds.schedule.Schedule` or validated (sigma, q, T) triples.
      value_discretization_interval: grid step h > 0 (validated by the caller); None for automatic.
      group_size: k >= 1 examples that move together; None (default) uses the schedule's
        ``examples_per_user`` attribute if it has one, else 1.
      lower: make the bucket statistic (certified lower ends) available (default True).
      add_direction: make the ADD direction available (default True).
      log_tau: natural log of the tail mass per composition (default log 1e-17).
      eager: size every requested direction now (default: the steps and Chernoff windows that the
        compositions will use, :meth:`SchedulePLD._size`), so that a too-wide window is met by
        coarsening the grid here; False sizes only the REMOVE direction now and the others on
        first use (a later :class:`PLDTooWide` is then possible, in extreme cases). Either way the
        FFT compositions run on first use (queries at tiny levels answered by
        :meth:`SchedulePLD.tail_power` alone compose none of them).

    Returns:
      The :class:`SchedulePLD`.

    Raises:
      PLDTooWide: (a ValueError) if no grid step fits the size limits.
      ValueError: if ``group_size`` is not an integer >= 1.
    """
    if group_size is None:
        group_size = getattr(schedule, "examples_per_user", 1) or 1
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}")
    group_size = int(group_size)
    check_memory("group_size (examples_per_user)", group_step_pld_bytes(group_size),
                 f"the privacy-loss distribution of groups of "
                 f"{group_size if group_size < 10**15 else 'about 1e%d' % (len(str(group_size)) - 1)} examples")
    raw = schedule.segments if hasattr(schedule, "segments") else schedule
    segs = _merge_full_batch(merge_segments(raw))
    directions = ("remove", "add") if add_direction else ("remove",)
    h = _grid_step(segs, value_discretization_interval, group_size, directions, log_tau)
    auto = value_discretization_interval is None
    for _ in range(12):
        pld = SchedulePLD(segs, h, group_size, lower, add_direction, log_tau, auto_grid=auto, sparse=True)
        try:
            pld._size(eager)  # the steps and windows now (they size the grid); the FFTs on first use
            return pld
        except PLDTooWide:
            h *= 4.0
    raise PLDTooWide("the privacy-loss distribution of this schedule is too wide to discretise")
