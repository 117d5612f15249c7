"""The certified privacy-loss distribution (PLD) engine of DP-SGD, as a public package.

* :mod:`~rerokit.bounds.pld.discrete`: :class:`DiscretePLD` (grid, pmf, mass at infinity, proven
  error) with ``compose``, ``hockey_stick(eps)``, ``epsilon(delta)``, ``power(log_alpha)``;
  :class:`ThresholdTests` (certified lower ends); :class:`Bracket`.
* :mod:`~rerokit.bounds.pld.step`: one DP-SGD step's discretisation for the remove, add and
  replace-one pairs, groups of k examples (:func:`dpsgd_step_pld`).
* :mod:`~rerokit.bounds.pld.compose`: FFT composition on a Chernoff window with a proven
  round-off bound.
* :mod:`~rerokit.bounds.pld.builder`: :func:`schedule_pld`, one builder from a
  :class:`~rerokit.bounds.schedule.Schedule`, returning a :class:`SchedulePLD`.
* :mod:`~rerokit.bounds.pld.tilt`: far tails by exponential tilting (relative precision at tiny
  levels).
* :mod:`~rerokit.bounds.pld.logtail`: the REMOVE step continued beyond double range in log masses
  (:func:`extend_step`: the tilt's upper end below kappa = 1e-300).
* :mod:`~rerokit.bounds.pld.rdp`: the Rényi DP curve (moment function) of the same steps.
* :mod:`~rerokit.bounds.pld.chernoff`: the Hölder bound at the best real order (tiny baselines).
* :mod:`~rerokit.bounds.pld.maxtest`: the max test's closed-form power (a certified lower end
  where sampled steps are rare).
* :mod:`~rerokit.bounds.pld.onejump`: the matching upper end where sampled steps are rare (q T << 1):
  one large loss taken entry by entry beside the composed bulk.
"""

from rerokit.bounds.pld.builder import LOG_TAU, SIGMA_GRID_RANGE, PLDTooWide, SchedulePLD, merge_segments, schedule_pld
from rerokit.bounds.pld.chernoff import log_chernoff_gamma_many, log_moment_int, log_moment_real
from rerokit.bounds.pld.compose import Composed, compose, fft_error_constant
from rerokit.bounds.pld.maxtest import log_max_test_power, loss_matched_threshold, max_test_threshold
from rerokit.bounds.pld.onejump import JumpStep, OneJump, one_jump_upper
from rerokit.bounds.pld.discrete import Bracket, DiscretePLD, GridPMF, ThresholdTests
from rerokit.bounds.pld.logtail import extend_step
from rerokit.bounds.pld.rdp import RDP_ORDERS, log_rdp_gamma_many, rdp_curve_subsampled_gaussian, rdp_poisson_gaussian
from rerokit.bounds.pld.step import DIRECTIONS, StepPLD, default_grid_step, dpsgd_step_pld
from rerokit.bounds.pld.tilt import saddle_tilt, tilted_power

__all__ = [
    "Bracket", "Composed", "DIRECTIONS", "DiscretePLD", "GridPMF", "JumpStep", "LOG_TAU", "OneJump", "PLDTooWide", "RDP_ORDERS",
    "SIGMA_GRID_RANGE", "SchedulePLD", "StepPLD", "ThresholdTests", "compose", "default_grid_step",
    "dpsgd_step_pld", "extend_step", "fft_error_constant", "log_chernoff_gamma_many", "log_max_test_power", "log_moment_int", "log_moment_real",
    "log_rdp_gamma_many", "merge_segments", "rdp_curve_subsampled_gaussian",
    "rdp_poisson_gaussian", "loss_matched_threshold", "max_test_threshold", "one_jump_upper", "saddle_tilt", "schedule_pld",
    "tilted_power",
]
