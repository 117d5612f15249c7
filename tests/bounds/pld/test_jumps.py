"""The two-grid tilt of tiny q (:mod:`rerokit.bounds.pld.jumps`) against independent references.

* T = 2 steps (sigma 1, q 0.01): the Neyman-Pearson power of the test S > l at its own level in
  closed form up to one integral, P(S > l) = int p(x1) P(x2 > f^-1(l - f(x1))) dx1 with the step's
  loss f(x) = log(1 - q + q e^{x - 1/2}) increasing in x, by mpmath quadrature (30 digits).
* T = 1e6 (sigma 1, q 1e-4): the Bromwich inversion of the exact moment function
  (``tests/bounds/conftest.py``; no rerokit code).
* The one-grid tilt (:func:`rerokit.bounds.pld.tilt.tilted_power`, the code path before this one):
  both brackets are certified, so they overlap; at r = 1 the two compositions are the same
  measure, computed two ways (slices vs one power).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld, rero_dpsgd
from rerokit.bounds.pld import builder as builder_mod
from rerokit.bounds.pld import jumps, tilt
from rerokit.bounds.pld.builder import schedule_pld
from rerokit.bounds.pld.compose import compose_inf_mass
from rerokit.bounds.pld.jumps import JumpTilt, _OmitBound, jump_parts, jump_power
from rerokit.bounds.pld.tilt import saddle_tilt, tilted_power

sys.path.insert(0, str(Path(__file__).parent))
from _mp_reference import mp_two_steps  # noqa: E402 - the exact T = 2 power


def _steps(T: int, q: float, h: float | None = None):
    """(grid step, the one grid step's DiscretePLD parts) of the schedule (sigma 1, q, T)."""
    pld = schedule_pld(((1.0, q, T),), h)
    return pld.h, pld._parts("remove")[0][0][0]  # noqa: SLF001 - the step with its statistic


def _args(T: int, step, h: float, la: float):
    return ([(step.j_lo, step.split, T)], [(step.j_lo - 1, step.stat_p, T)], [(step.j_lo - 1, step.stat_q, T)], h,
            compose_inf_mass([(step.inf_mass, T)]), la)


@pytest.mark.parametrize("r", [1, 4])
def test_two_steps_bracket_contains_the_exact_power(r: int) -> None:
    q, l = 0.01, 2.0
    log_level, log_power = mp_two_steps(q, l)  # level ~3.4e-12
    h, step = _steps(2, q, 2e-3)
    args = _args(2, step, h, log_level)
    t = saddle_tilt(args[0], h, log_level)
    lo, up = jump_power(*args, t, r, 0.05)
    # the steps' loss shift (a few ulps per step) is what the builder adds to the upper end
    up += 2 * step.loss_shift
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert up - lo <= 5e-4  # measured 1.1e-4 (r 4), 7e-9 (r 1)


def test_the_statistic_is_skipped_where_the_upper_end_is_at_most_enough() -> None:
    """JumpTilt.enough: the statistic (the lower end) is composed only where the upper end exceeds it
    (the builder passes the max test's power plus builder._JUMP_ENOUGH); the upper end is the same
    either way, the lower end is then the level (no test), and the exact T = 2 power stays inside."""
    q, l = 0.01, 2.0
    log_level, log_power = mp_two_steps(q, l)
    h, step = _steps(2, q, 2e-3)
    args = _args(2, step, h, log_level)
    t = saddle_tilt(args[0], h, log_level)
    lo, up = jump_power(*args, t, 4, 0.05, JumpTilt(enough=-math.inf))
    lo_s, up_s = jump_power(*args, t, 4, 0.05, JumpTilt(enough=up))  # the upper end at most enough
    lo_k, up_k = jump_power(*args, t, 4, 0.05, JumpTilt(enough=up - 1e-9))  # just above it: kept
    assert up_s == up and up_k == up and lo_k == lo
    assert lo_s == log_level < lo <= log_power + 1e-9 <= up + 2 * step.loss_shift + 2e-9
    with pytest.raises(ValueError, match="log_tau"):
        jump_power(*args, t, 4, 0.05, JumpTilt(log_tau=0.0))


def test_slices_reassemble_the_power_of_the_step() -> None:
    # r = 1 (no re-discretisation): the blocks' slices sum to the T-fold power of the tilted step,
    # which the one-grid tilt composes directly; both brackets contain each other's truth region
    h, step = _steps(20, 0.01, 1e-3)
    la = math.log(1e-9)
    args = _args(20, step, h, la)
    t = saddle_tilt(args[0], h, la)
    lo_o, up_o = tilted_power(*args, t=t)
    lo_n, up_n = jump_power(*args, t, 1, 0.2)
    assert lo_n <= up_o and lo_o <= up_n
    assert abs(up_n - up_o) < 1e-6 and abs(lo_n - lo_o) < 1e-6
    (part, err), = jump_parts(step.j_lo, [(step.split, t)], 20, h, 1, math.ceil(0.2 / h))[0]
    assert part.count == 1 and np.all(np.isfinite(err)) and np.all(err > 0)
    assert abs(math.fsum(part.pmf.tolist()) - 1.0) < 1e-12


def test_omitted_slices_bound_per_label_against_direct_convolution() -> None:
    # a step with bulk (labels < 20) and jumps, m = 12 steps: the slices with more than K jumps,
    # by direct convolution (numpy, exact up to double rounding), weighted as the tilt weighs errors
    # above each label, against jumps._OmitBound (r = 1: nothing moves, grow = 1)
    rng = np.random.default_rng(3)
    off, cut, h, t, m, K = -3, 20, 0.05, 1.5, 12, 2
    pmf = np.concatenate((rng.uniform(0.5, 1.0, 23), 1e-2 * rng.uniform(0.5, 1.0, 30)))
    pmf /= pmf.sum()
    i_c = cut - off
    beta, pi = float(pmf[:i_c].sum()), float(pmf[i_c:].sum())
    b, j = np.zeros_like(pmf), np.zeros_like(pmf)
    b[:i_c], j[i_c:] = pmf[:i_c], pmf[i_c:]
    # the composition tracked by the number of jumps: slices[k] = C(m, k) b^{*(m-k)} * j^{*k}
    slices = [np.array([1.0])]
    for _ in range(m):
        nxt = [np.convolve(s, b) for s in slices] + [np.zeros(1)]
        for k, s in enumerate(slices):
            c = np.convolve(s, j)
            nxt[k + 1] = c if nxt[k + 1].size == 1 else nxt[k + 1] + c
        slices = nxt
    omitted = sum(slices[K + 1:])
    labels = m * off + np.arange(omitted.size)
    bound = _OmitBound(off, b[:i_c] / beta, cut, j[i_c:] / pi, m, beta, pi, 1.0, h, h, t)
    got = np.exp(bound.log_at(labels, K))
    for J in range(0, labels.size, 7):
        exact = float(np.sum(omitted[J:] * np.exp(-t * (labels[J:] - labels[J]) * h)))
        assert exact <= got[J] * (1 + 1e-9)
    assert got[0] < 1e-3 * got[-1]  # below the omitted slices' losses the bound is far smaller (6.7e-5)


@pytest.mark.parametrize("T, kappa", [(1000, 1e-9), (100_000, 1e-9), (100_000, 1e-20), (1_000_000, 1e-20)])
def test_tinyq_cells_overlap_the_one_grid_tilt_within_one_percent(T: int, kappa: float, monkeypatch) -> None:
    monkeypatch.setattr(builder_mod, "_JUMP_ENOUGH", -math.inf)  # the statistic never skipped: its own end
    la = math.log(kappa)
    pld = dpsgd_pld([(1.0, 1e-4, T)])
    lt = min(pld.log_tau, max(la - 46.0, math.log(1e-300)))
    lt_q = pld._inf_truncation(la)  # noqa: SLF001
    got = pld._tail_power_jumps(la, lt_q)  # noqa: SLF001 - the new path alone
    assert got is not None
    lo, up, _ = got
    lo_o, up_o = pld._tail_power_legacy(la, lt, lt_q)  # noqa: SLF001 - the path before it
    assert lo <= up_o and lo_o <= up  # two certified brackets of the same power overlap
    assert (math.exp(up) - math.exp(lo)) / math.exp(up) <= 0.01  # issue 17: <= 2 %


def test_long_schedule_bracket_contains_the_bromwich_reference(bromwich) -> None:
    # sigma 1, q 1e-4, T 1e6, threshold 0.93: level e^-28.1845 (5.8e-13), power e^-27.2363
    pt = bromwich.Schedule([(1.0, 1e-4, 10**6)]).point(0.93)
    pld = dpsgd_pld([(1.0, 1e-4, 10**6)])
    assert pld.tail_by_jumps(pt.log_level)
    lo, up = pld.tail_power(pt.log_level)
    tol = bromwich.REF_TOL
    assert lo <= pt.log_power + tol and up >= pt.log_power - tol
    assert up - lo <= 0.01


def test_the_two_grid_tilt_is_pulled_below_the_saddle_point(bromwich, monkeypatch) -> None:
    """jump_power(..., pull=builder._JUMP_PULL): the two-grid tilt runs at tilt.pulled_tilt of the
    saddle point (fewer tilted jumps, shorter windows: sigma 1, q 1e-3, T 7e4-3e5, kappa 1e-30
    190-310 -> 126-160 ms in rero_dpsgd), its upper end's error term far below it (e^-17 of it,
    against e^-20.6 at the saddle point). The bracket is the saddle point's within 1e-5 (in log)
    and contains the Bromwich reference (pinned: sigma 1, q 1e-3, T 7e4 at its level e^-74.1)."""
    tilts: list[tuple[float, float]] = []
    real = tilt.upper_with_pull

    def recording(upper, t, t_pulled):
        def spy(x):
            r = upper(x)
            tilts.append((x, r[1]))
            return r
        return real(spy, t, t_pulled)

    monkeypatch.setattr(tilt, "upper_with_pull", recording)
    segs, log_level, log_power = [(1.0, 1e-3, 70_000)], -74.10889641452785, -67.92537616996623
    pld = dpsgd_pld(segs)
    assert pld.tail_by_jumps(log_level)
    lo, up = pld.tail_power(log_level)
    assert len(tilts) == 1 and tilts[0][1] <= tilt._PULL_ERR
    tol = bromwich.REF_TOL
    assert lo <= log_power + tol and up >= log_power - tol
    t_pulled = tilts[0][0]
    tilts.clear()
    monkeypatch.setattr(builder_mod, "_JUMP_PULL", 0.0)
    lo0, up0 = dpsgd_pld(segs).tail_power(log_level)
    assert len(tilts) == 1 and tilts[0][0] > t_pulled  # the saddle point's tilt
    assert abs(lo - lo0) <= 1e-5 and abs(up - up0) <= 1e-5


def test_a_lattice_like_two_grid_tilt_is_recomposed_in_mixed_precision(compose_precisions, monkeypatch) -> None:
    """sigma 1.1, q 5.43e-5, T 182000, kappa 8.23e-18 (the two-grid tilt): the double slices' proven
    round-off is e^-5.7 of the upper end at the threshold, and the bracket was 3.1e-2 wide (in log;
    2.3 % after a refinement). Above tilt._MIXED_SHARE the upper end and the statistic are composed
    again with long double forward transforms: 2.2e-3. No reference reaches it (the Bromwich integral
    does not converge); both brackets are certified, so they overlap."""
    seen = compose_precisions(jumps)
    log_level = math.log(8.23e-18)
    pld = dpsgd_pld([(1.1, 5.43e-5, 182_000)])
    assert pld.tail_by_jumps(log_level)
    lo, up = pld.tail_power(log_level)
    assert "mixed" in seen and up - lo <= 5e-3
    seen.clear()
    monkeypatch.setattr(tilt, "_MIXED_SHARE", math.inf)
    lo_d, up_d = dpsgd_pld([(1.1, 5.43e-5, 182_000)]).tail_power(log_level)
    assert seen.count("mixed") < len(seen) and up_d - lo_d > 2e-2
    assert lo <= up_d and lo_d <= up


def test_the_mixed_two_grid_tilt_contains_the_bromwich_reference(bromwich, compose_precisions, monkeypatch) -> None:
    """The two-grid tilt in "mixed" precision throughout (tilt._MIXED_SHARE at -inf) at sigma 1,
    q 1e-3, T 7e4 near the level e^-74.1 (Bromwich reference pinned): the bracket contains it."""
    seen = compose_precisions(jumps)
    monkeypatch.setattr(tilt, "_MIXED_SHARE", -math.inf)
    pld = dpsgd_pld([(1.0, 1e-3, 70_000)])
    lo, up = pld.tail_power(-74.10889641452785)
    assert seen and all(p == "mixed" for p in seen[-3:])
    log_power = -67.92537616996623
    assert lo <= log_power + bromwich.REF_TOL and up >= log_power - bromwich.REF_TOL
    assert up - lo <= 5e-3  # 3.0e-3 in double


def test_the_two_grid_tilt_is_declined_before_its_grid_is_built(monkeypatch) -> None:
    """builder.SchedulePLD._tail_power_jumps declines where this grid's own steps predict too many
    tilted jumps (tail_by_jumps), before the bulk's grid and its saddle point are computed (a decline
    found late cost 2-20 ms; sigma 2.17, q 4.51e-4, T 202, kappa 2.4e-24 took 89 ms on the two grids
    for a bracket 4.0e-3 wide, 30 ms and 1.35e-3 on one; below builder._JUMP_FEW_STEPS steps the
    two grids are now declined outright). sigma 0.507, q 3.26e-4, T 745507, kappa 2.85e-20: no
    SchedulePLD is built for the two grids, and the bracket (the one-grid tilt's) is within 1 %."""
    segs, log_level = [(0.507, 3.26e-4, 745_507)], math.log(2.85e-20)
    pld = dpsgd_pld(segs)
    assert pld._jump_forecast(log_level) is not None and not pld.tail_by_jumps(log_level)  # noqa: SLF001
    built: list[float] = []
    init = builder_mod.SchedulePLD.__init__

    def counting(self, *args, **kwargs):
        built.append(1.0)
        init(self, *args, **kwargs)

    monkeypatch.setattr(builder_mod.SchedulePLD, "__init__", counting)
    assert pld._tail_power_jumps(log_level, pld._inf_truncation(log_level)) is None  # noqa: SLF001
    assert built == []
    monkeypatch.undo()
    b = rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert (b.value - b.interval[0]) / b.value <= 0.01  # measured 3.1e-3


def test_few_steps_take_the_one_grid_tilt(monkeypatch) -> None:
    """builder._jumps_pay declines the two-grid tilt below builder._JUMP_FEW_STEPS steps: there the
    one-grid tilt was faster in 46 of 47 random tiny-q cells. sigma 1.955 / 5.493, q 4.57e-3 /
    6.86e-4, T 26 + 614, kappa 3.7e-12 (benchmarks/pld_engine.py --two-seg: 86 ms on the two grids,
    0.79x dp-accounting; 29 ms now): the forecast's spread would take the two grids, the step count
    does not, and the bracket overlaps the two-grid tilt's (both certified)."""
    segs, log_level = [(1.955, 0.00457, 26), (5.493, 0.000686, 614)], math.log(3.7e-12)
    pld = dpsgd_pld(segs)
    fc = pld.tail_forecast(log_level)
    assert fc[3] >= builder_mod._JUMP_SPREAD and fc[0] >= builder_mod._JUMP_SMALL_T  # noqa: SLF001
    assert pld._jump_forecast(log_level) is None  # noqa: SLF001 - declined by the step count
    lo, up = pld.tail_power(log_level)
    assert up - lo <= 1e-3  # measured 1.2e-4 (in log)
    monkeypatch.setattr(builder_mod, "_JUMP_FEW_STEPS", 0)  # the two grids, as before
    lo_j, up_j = dpsgd_pld(segs).tail_power(log_level)
    assert lo <= up_j and lo_j <= up


def test_rero_dpsgd_tinyq_cells_within_one_percent() -> None:
    for T, kappa in [(1000, 1e-20), (1_000_000, 1e-9)]:
        b = rero_dpsgd(1.0, 1e-4, T, kappa, comparisons=False)
        assert (b.value - b.interval[0]) / b.value <= 0.01


def test_bad_input_names_the_parameter() -> None:
    h, step = _steps(20, 0.01, 1e-3)
    args = _args(20, step, h, math.log(1e-9))
    with pytest.raises(ValueError, match="t must"):
        jump_power(*args, 0.0, 4, 0.2)
    with pytest.raises(ValueError, match="cut_loss"):
        jump_power(*args, 1.0, 4, -1.0)
    with pytest.raises(ValueError, match="r must"):
        jump_parts(step.j_lo, [(step.split, 1.0)], 20, h, 0, 100)
    with pytest.raises(ValueError, match="T must"):
        jump_parts(step.j_lo, [(step.split, 1.0)], 0, h, 4, 100)
    with pytest.raises(ValueError, match="kind"):
        jump_parts(step.j_lo, [(step.split, 1.0)], 20, h, 4, 100, kind="x")
    with pytest.raises(ValueError, match="cut"):
        jump_parts(step.j_lo, [(step.split, 1.0)], 20, h, 4, step.j_lo - 5)
