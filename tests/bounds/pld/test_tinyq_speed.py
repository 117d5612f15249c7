"""Tiny q at tiny kappa (sigma 1, q 1e-4): the far-tail tilt on the coarse grids first
(:meth:`rerokit.bounds.pld.SchedulePLD._tail_power_coarse`, one step on 8192 points, then finer as
the width predicts) against the finest grids that the schedule's own step allows (the path before
the coarse grids, forced here by starting the ladder beyond every grid): both brackets are certified,
so they must overlap; the upper end must stay above the max test's power (a closed-form lower end on
the true pair, :mod:`rerokit.bounds.pld.maxtest`), and the Bromwich reference of
``tests/bounds/conftest.py`` must lie inside where it converges (at these settings it reports that
it does not; ``tests/bounds/test_dpsgd_tinyq.py`` has it at T 1e6).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rerokit.bounds.pld.builder as builder
from rerokit.bounds.dpsgd import dpsgd_pld, rero_dpsgd
from rerokit.bounds.pld.maxtest import log_max_test_power

# (T, kappa): the cells where the ladder runs (the schedule's own step grid is >= 8 x 8192 points)
CASES = [(1000, 1e-20), (100_000, 1e-9), (100_000, 1e-20)]


def _old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builder, "_JUMP_Q", -1.0)  # not the two-grid tilt (pld.jumps) either
    monkeypatch.setattr(builder, "_TAIL_LADDER_START", 10**12)
    monkeypatch.setattr(builder, "_TAIL_FIRST_ENOUGH", 0.003)


@pytest.mark.parametrize("T, kappa", CASES)
def test_coarse_tail_bracket_overlaps_the_fine_grids(T: int, kappa: float, monkeypatch: pytest.MonkeyPatch,
                                                      bromwich) -> None:
    la = math.log(kappa)
    lo, up = dpsgd_pld([(1.0, 1e-4, T)]).tail_power(la)
    mt = float(log_max_test_power(((1.0, 1e-4, T),), np.array([la]))[0])
    assert up >= mt  # the upper end is never below a certified lower end
    lo = max(lo, mt)
    assert up - lo <= 0.005  # within _PRECISE_ENOUGH (issue 17: 2 %)
    with monkeypatch.context() as m:
        _old_path(m)
        lo_o, up_o = dpsgd_pld([(1.0, 1e-4, T)]).tail_power(la)
    assert lo <= up_o and max(lo_o, mt) <= up  # two certified brackets of the same power overlap
    try:
        ref = bromwich.Schedule([(1.0, 1e-4, T)]).at_level(la)
    except ValueError:  # the reference does not converge here
        return
    got_lo, got_up = dpsgd_pld([(1.0, 1e-4, T)]).tail_power(ref.log_level)
    assert got_lo <= ref.log_power + bromwich.REF_TOL and got_up >= ref.log_power - bromwich.REF_TOL


def test_rero_dpsgd_bracket_within_the_target_and_the_old_one() -> None:
    # T 1e3, kappa 1e-20: the old path's bracket was [2.44210e-20, 2.44273e-20] (2.6e-4 wide)
    b = rero_dpsgd(1.0, 1e-4, 1000, 1e-20, comparisons=False)
    lo, up = b.interval[0], b.value
    assert lo <= 2.44273e-20 * (1 + 1e-5) and up >= 2.44210e-20 * (1 - 1e-5)
    assert (up - lo) / up <= 0.005


@pytest.mark.parametrize("T, kappa", [(1000, 1e-3), (1000, 1e-9), (1_000_000, 1e-3)])
def test_sparse_tail_steps_overlap_the_full_grid(T: int, kappa: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # schedule_pld's tiny-q REMOVE steps on sparse tail grids (builder._SPARSE_Q) against the full
    # grids (the old path, forced): both certified, so the brackets overlap; measured equal to 6-7
    # digits, so the sparse bracket is no more than 1e-4 (relative) wider
    split = dpsgd_pld([(1.0, 1e-4, T)]).grid_steps("remove")[0][1]
    assert np.count_nonzero(split) < split.size / 4  # the sparse grid is used: zeros at skipped labels
    b = rero_dpsgd(1.0, 1e-4, T, kappa, comparisons=False)
    with monkeypatch.context() as m:
        m.setattr(builder, "_SPARSE_Q", -1.0)
        split = dpsgd_pld([(1.0, 1e-4, T)]).grid_steps("remove")[0][1]
        assert np.count_nonzero(split) > split.size / 2
        b_full = rero_dpsgd(1.0, 1e-4, T, kappa, comparisons=False)
    assert b.interval[0] <= b_full.value and b_full.interval[0] <= b.value
    w, w_full = b.value - b.interval[0], b_full.value - b_full.interval[0]
    assert w <= w_full + 1e-4 * b_full.value
    assert w <= 0.005 * b.value


def test_sparse_only_for_tiny_q_remove_steps() -> None:
    assert builder._sparse_budget(1e-4, "remove", 1) == builder._SPARSE_BUDGET
    assert builder._sparse_budget(1e-2, "remove", 1) is None
    assert builder._sparse_budget(1e-4, "add", 1) is None
    assert builder._sparse_budget(1e-4, "remove", 2) is None
