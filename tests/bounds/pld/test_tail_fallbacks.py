"""Far tails where one sampled step's large deviation sets the power (a single step of sigma ~1 beside a
long schedule of small losses): the two-grid tilt's fallback to the one-grid tilt
(builder._JUMP_SHARE) and the stalled grid ladder's early stops (builder._STALL_GAIN,
builder._STALL_DEEPER), against an importance-sampled Monte Carlo of the exact outputs
(tests/bounds/pld/_mc_reference.py; no grid, no PLD). Tolerance: 4 standard errors of the power
at the estimated level (_mc_reference's docstring)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import builder, jumps, maxtest

sys.path.insert(0, str(Path(__file__).parent))
from _mc_reference import mc_one_plus_bulk  # noqa: E402


def _reference(a: float, qa: float, b: float, qb: float, tb: int, l: float) -> tuple[float, float, float]:
    """(log level, log power, tolerance in log) of the test L >= l, 60,000 seeded draws."""
    log_p, log_q, se = mc_one_plus_bulk(a, qa, b, qb, tb, l, 60_000, seed=1)
    return log_q, log_p, 4.0 * se


def test_a_two_grid_tilt_whose_error_term_is_large_is_retried_else_takes_the_one_grid_tilt_too(tilts, monkeypatch) -> None:
    """sigma 1.14, q 2.4e-4 once, then sigma 5.29, q 2.5e-4 for 1273 steps, at the level of the test
    L >= 0.1 (~9e-14): the two-grid tilt's tilted mass at the threshold is tiny (the tilt that
    brings the mean there also weights the single step's far tail), its upper end's error term is
    more than 1e-3 of it (e^-4.8), and its bracket is 7.8 % wide (the statistic ~2.8 standard errors
    below the reference; the max test's power e^-30.104 is far below). Retried with the windows' tail
    mass 1e-16 (builder._JUMP_RETRY_TAU): 1.3e-3 wide (error share e^-7.8 at the pulled tilt in "mixed",
    tilt._PULLED_MIXED_FIRST; 6.3e-4 at the saddle point), the one-grid tilt not run.
    Without the retry, the one-grid tilt too, each end the better: 1.9e-3 wide. The max test is the
    common-threshold one here (pld.maxtest._MATCHED_MOST = 1): its loss-matched thresholds give a lower
    end 2.4e-4 below the reference by themselves (e^-29.99324 against e^-29.99300) and would mask the
    rules tested."""
    monkeypatch.setattr(maxtest, "_MATCHED_MOST", 1)
    segs = [(1.14, 2.4e-4, 1), (5.29, 2.5e-4, 1273)]
    log_level, log_power, tol = _reference(1.14, 2.4e-4, 5.29, 2.5e-4, 1273, 0.1)
    assert dpsgd_pld(segs).tail_by_jumps(log_level)  # the path under test
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    assert lo - tol <= log_power <= up + tol
    assert up - lo <= 1.5e-3 and not tilts  # (the two grids alone)
    with monkeypatch.context() as m:
        m.setattr(builder, "_JUMP_RETRY_TAU", jumps.JUMP_LOG_TAU)  # the retry as the first: no gain
        lo_r, up_r = dpsgd_pld(segs).tail_power(log_level)
        assert tilts  # the one-grid tilt
    with monkeypatch.context() as m:
        m.setattr(builder, "_JUMP_SHARE", math.inf)
        m.setattr(builder, "_JUMP_WIDE", math.inf)
        lo_j, up_j = dpsgd_pld(segs).tail_power(log_level)
    with monkeypatch.context() as m:
        m.setattr(builder.SchedulePLD, "_tail_power_jumps", lambda self, *args: None)
        lo_1, up_1 = dpsgd_pld(segs).tail_power(log_level)
    assert up_j - lo_j > 0.05  # the two grids alone
    for a, b in ((lo_j, up_j), (lo_1, up_1), (lo_r, up_r)):
        assert a - tol <= log_power <= b + tol
    assert lo_r == pytest.approx(max(lo_j, lo_1), abs=1e-12) and up_r == pytest.approx(min(up_j, up_1), abs=1e-12)
    assert up_r - lo_r <= 5e-3


def test_a_stalled_ladder_tries_deeper_truncations_on_its_best_grid_only(tilts, monkeypatch) -> None:
    """sigma 1.06, q 3.5e-4 once, then sigma 4.58, q 3.5e-4 for 1256 steps, at the level of the test
    L >= 0.42 (~1.0e-16): the one-grid tilt's ladder stalls (a finer grid leaves the bracket wider);
    the deeper truncations on the ladder's best grid give 8e-4, where this grid's own tilt (the
    rules off, on a grid 6.6x finer) gave 6.7e-3. Both contain the reference. (By default the two-grid
    tilt retried with a smaller tail mass answers this level alone: 1.4e-3, the reference inside;
    the ladder is then forced.)"""
    segs = [(1.06, 3.5e-4, 1), (4.58, 3.5e-4, 1256)]
    log_level, log_power, tol = _reference(1.06, 3.5e-4, 4.58, 3.5e-4, 1256, 0.42)
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    assert lo - tol <= log_power <= up + tol and up - lo <= 2e-3
    assert not tilts  # (the two grids alone)
    monkeypatch.setattr(builder.SchedulePLD, "_tail_power_jumps", lambda self, *args: None)
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    on = len(tilts)
    assert lo - tol <= log_power <= up + tol
    assert up - lo <= 2e-3
    monkeypatch.setattr(builder, "_STALL_GAIN", False)
    monkeypatch.setattr(builder, "_STALL_DEEPER", False)
    lo_off, up_off = dpsgd_pld(segs).tail_power(log_level)
    assert lo_off - tol <= log_power <= up_off + tol
    assert up_off - lo_off > 3.0 * (up - lo)
    # the rules off: a finer grid (this one's own)
    assert min(x.h for x in tilts[on:]) < 0.5 * min(x.h for x in tilts[:on])


def test_one_segment_alone_gives_the_lower_end_where_the_composed_tilts_lose_it(monkeypatch) -> None:
    """sigma 1.298, q 1.3e-4 once, then sigma 3.024, q 2.6e-4 for 1585 steps, at the level of the
    test L >= 0.483 (~e^-68): the composed tilts' lower end is e^-68.11 against the reference's
    e^-67.61 (a bracket 41 % wide). The first step alone is a sub-experiment (the other steps'
    outputs ignored: the same level and power), so its certified power is a lower end of the
    schedule's (dpsgd_exact._sub_schedules_into): the bracket is then within 3 % (2.4 % with the composed
    tilts' upper end; the step in closed form narrows it further, test_onestep.py), the reference
    inside."""
    from rerokit.bounds import dpsgd, dpsgd_exact

    # the common-threshold max test (as the first test): the loss-matched one alone gives e^-67.62430
    # against the reference's e^-67.62425 and would mask the sub-schedules tested
    monkeypatch.setattr(maxtest, "_MATCHED_MOST", 1)
    segs = [(1.298, 1.3e-4, 1), (3.024, 2.6e-4, 1585)]
    log_level, log_power, tol = _reference(1.298, 1.3e-4, 3.024, 2.6e-4, 1585, 0.483)
    b = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    assert lo - tol <= log_power <= up + tol
    assert 1.0 - math.exp(lo - up) <= 0.03
    alone = dpsgd.rero_dpsgd(segments=segs[:1], log_kappa=log_level, comparisons=False)
    assert alone.interval[0] <= b.interval[0]
    assert b.value <= alone.value * 1.05  # (the long segment adds little: the regime under test)
    monkeypatch.setattr(dpsgd_exact, "_sub_schedules_into", lambda r, pld, lks: (r, {}))
    monkeypatch.setattr(dpsgd_exact, "_one_step_into", lambda r, subs, pld, lks: r)  # (its lower end too)
    off = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert log_power <= math.log(off.value) + tol and math.log(off.interval[0]) - tol <= log_power
    assert 1.0 - off.interval[0] / off.value > 0.3


def test_sub_schedules_of_many_kinds_take_the_smallest_sigma_and_the_largest_mu(monkeypatch) -> None:
    """Beyond dpsgd_exact._SUB_SCHEDULE_KINDS kinds, only two sub-schedules are composed: the kind of the
    smallest sigma and the kind of the largest full-batch mu^2 = T (e^{1/sigma^2} - 1) q^2."""
    from rerokit.bounds import dpsgd, dpsgd_exact

    segs = [(1.2, 1e-4, 1), (3.0, 2e-4, 400), (3.5, 1e-2, 800), (4.0, 2e-4, 300), (5.0, 3e-4, 200)]
    pld = dpsgd.dpsgd_pld(segs)
    seen: list[list] = []
    orig = dpsgd.exact_power_many

    def spy(p, segments, lks, log_rdp=None):
        seen.append(list(segments))
        return orig(p, segments, lks, log_rdp)

    monkeypatch.setattr(dpsgd_exact, "exact_power_many", spy)
    lks = [math.log(1e-40)]
    wide = dpsgd.ExactPower(**{**vars(orig(pld, segs, np.array(lks))), "lower": np.array([0.0]),
                               "lower_pld": np.array([0.0])})
    out, subs = dpsgd_exact._sub_schedules_into(wide, pld, np.array(lks))
    assert seen == [[(1.2, 1e-4, 1)], [(3.5, 1e-2, 800)]]
    assert set(subs) == {(1.2, 1e-4, 1), (3.5, 1e-2, 800)} and max(float(v[0]) for v in subs.values()) == out.lower[0]
    assert out.lower[0] > 0.0 and out.lower[0] <= out.value[0]


def test_a_wide_two_grid_bracket_takes_the_one_grid_tilt_too(monkeypatch) -> None:
    """sigma 0.930, q 4.2e-5, T 58081 at kappa 3.1e-12 (q T = 2.4 sampled steps expected): the
    two-grid tilt's error share is small, yet both its ends are loose ([-26.488, -26.230] in log; the
    max test's -26.304 is folded into the lower end).
    With the lower end, a two-grid bracket wider than builder._JUMP_WIDE in log takes the one-grid
    tilt too, each end the better: [-26.2993, -26.2966] measured. The max test's closed-form power
    (an independent certified lower end, rerokit.bounds.pld.maxtest) stays below the upper end.
    Without the lower end the rule does not apply (it reads the bracket): the two grids' upper end."""
    segs = [(0.9301183881030959, 4.196609302247022e-05, 58081)]
    lk = math.log(3.1375404169561506e-12)
    pld = dpsgd_pld(segs)
    assert pld.tail_by_jumps(lk)
    lo, up = pld.tail_power(lk)
    assert up - lo <= 5e-3
    with monkeypatch.context() as m:
        m.setattr(builder, "_JUMP_WIDE", math.inf)
        lo_j, up_j = dpsgd_pld(segs).tail_power(lk)
    with monkeypatch.context() as m:
        m.setattr(builder.SchedulePLD, "_tail_power_jumps", lambda self, *args: None)
        lo_1, up_1 = dpsgd_pld(segs).tail_power(lk)
    assert up_j - lo_j > 0.05  # (the two grids alone were [-26.488, -26.230]; the max test is folded in)
    assert lo == pytest.approx(max(lo_j, lo_1), abs=1e-12) and up == pytest.approx(min(up_j, up_1), abs=1e-12)
    assert math.log(float(pld.max_test_lower(np.array([lk]))[0])) <= up
    lo_n, up_n = dpsgd_pld(segs, lower=False).tail_power(lk)
    assert up_n == pytest.approx(up_j, abs=1e-12)



def _spied(monkeypatch, pld, lk: float) -> tuple[float, float, list]:
    """(lo, up) of pld.tail_power(lk) with the one-grid tilt forbidden, and the tail masses of the
    two-grid tilts run (None: the default)."""
    taus = []
    orig = builder.SchedulePLD._tail_power_jumps

    def spy(self, log_alpha, lt_q, *args):
        taus.append(args[0] if args else None)
        return orig(self, log_alpha, lt_q, *args)

    with monkeypatch.context() as m:
        m.setattr(builder.SchedulePLD, "_tail_power_jumps", spy)
        m.setattr(builder.SchedulePLD, "_tail_power_legacy", lambda self, *args: pytest.fail("one-grid tilt run"))
        lo, up = pld.tail_power(lk)
    return lo, up, taus


@pytest.mark.parametrize("sigma, q, T, kappa, width, legacy", [
    (0.841, 8.92e-7, 118579, 1.93e-26, 1e-3, True),
    (0.78, 3.1e-7, 190000, 1.3e-26, 6e-3, False),
])
def test_a_large_error_share_is_retried_and_the_max_test_spares_the_one_grid_tilt(
        sigma: float, q: float, T: int, kappa: float, width: float, legacy: bool, monkeypatch) -> None:
    """Tiny q, q T << 1 sampled steps expected (0.1 and 0.06): the two-grid tilt's upper end has an
    error share above builder._JUMP_SHARE (e^-5.8 and e^-5.2: the windows' tail mass 1e-13 against
    tiny tilted masses at the threshold), and its statistic found no test ([-59.210, -58.806] and
    [-59.605, -59.189] in log). With the max test's closed-form power (e^-58.8109, e^-59.2023) folded
    in and the retry with the tail mass 1e-16 (builder._JUMP_RETRY_TAU; its statistic skipped: the
    first one lost to the max test), the upper ends are e^-58.8104 and e^-59.1966, the brackets 5.7e-4
    and 5.7e-3 wide, and the one-grid tilt (1.7 s and 20 s on its coarse grids, brackets 5.0e-3 and
    1.3e-2 wide, measured; 39 s in all with the refinement for the second) is not run. Both brackets
    are certified, so they overlap (the first checked); the max test stays below the upper end. The
    one-jump bound (builder._tail_power_one_jump) answers the second cell now (q T = 0.06: 20-28 ms,
    5.8e-4 wide) and is off here: the retry is what is tested."""
    monkeypatch.setattr(builder, "_ONE_JUMP_Q", 0.0)
    monkeypatch.setattr(builder, "_ONE_JUMP_RARE_Q", 0.0)
    pld = dpsgd_pld([(sigma, q, T)])
    lk = math.log(kappa)
    lo, up, taus = _spied(monkeypatch, pld, lk)
    assert taus == [None, builder._JUMP_RETRY_TAU]
    assert up - lo <= width
    mt = math.log(float(pld.max_test_lower(np.array([lk]))[0]))
    assert lo == pytest.approx(mt, abs=1e-12) and mt <= up
    _, up_first, share = pld._tail_power_jumps(lk, pld._inf_truncation(lk))
    assert share > builder._JUMP_SHARE and up < up_first - 4e-3
    if legacy:
        lo_1, up_1 = pld._tail_power_legacy(lk, pld._tail_truncation(lk), pld._inf_truncation(lk))
        assert max(lo, lo_1) <= min(up, up_1)
        assert up - lo < 0.5 * (up_1 - lo_1)


@pytest.mark.parametrize("sigma, q, T, kappa, width, legacy", [
    (1.0, 3e-8, 1_000_000, 1e-12, 1e-3, True),
    (0.8, 3e-8, 500_000, 1e-28, 7e-3, False),
])
def test_a_step_without_losses_above_the_cut_takes_a_quarter_of_the_threshold(
        sigma: float, q: float, T: int, kappa: float, width: float, legacy: bool, monkeypatch) -> None:
    """q ~3e-8: within its truncation no loss of one step reaches builder._JUMP_CUT (0.05 nats; the
    thresholds are 7e-4 and 0.019), so the two-grid tilt declined, and the one-grid tilt's coarse
    ladder took 21.5 s for the second cell (twice with the refinement: 39.5 s, 1.14 % wide). The cut is
    then builder._JUMP_CUT_OF_THRESHOLD of the forecast's threshold: the two grids answer, with the
    max test, in 4.0e-4 and 6.4e-3 (measured). The first cell's one-grid bracket (3 ms there) overlaps
    it (both certified); the max test stays below the upper end."""
    pld = dpsgd_pld([(sigma, q, T)])
    lk = math.log(kappa)
    thr = pld.tail_forecast(lk)[1]
    assert pld._jump_cut(lk) == pytest.approx(builder._JUMP_CUT_OF_THRESHOLD * thr)
    assert pld._jump_cut(lk) < builder._JUMP_CUT
    assert pld.tail_by_jumps(lk)
    lo, up, _ = _spied(monkeypatch, pld, lk)
    assert up - lo <= width
    mt = math.log(float(pld.max_test_lower(np.array([lk]))[0]))
    assert mt <= up and lo >= mt
    if legacy:
        lo_1, up_1 = pld._tail_power_legacy(lk, pld._tail_truncation(lk), pld._inf_truncation(lk))
        assert max(lo, lo_1) <= min(up, up_1)
