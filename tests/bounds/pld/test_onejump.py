"""Rare sampled steps (q T << 1): the upper end with one large loss taken entry by entry
(rerokit.bounds.pld.onejump), against independent references: the exact power of two steps by
mpmath, the exact composition of the same dominating pmf by direct (non-FFT) sums, and an
importance-sampled Monte Carlo of the exact outputs."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld, rero_dpsgd
from rerokit.bounds.pld import builder
from rerokit.bounds.pld.onejump import JumpStep, one_jump_upper

sys.path.insert(0, str(Path(__file__).parent))
from _mc_reference import mc_rare_schedule, mc_rare_steps  # noqa: E402
from _mp_reference import mp_two_steps  # noqa: E402


def _no_tilts(monkeypatch) -> None:
    monkeypatch.setattr(builder.SchedulePLD, "_tail_power_tilts", lambda self, *a: pytest.fail("tilts run"))


@pytest.mark.parametrize("sigma, q, l", [(0.668, 2.16e-7, 0.0233), (0.75, 1e-6, 0.05), (0.6, 3e-8, 0.02)])
def test_two_steps_at_tiny_q_are_bracketed_within_5e_5_of_the_exact_power(sigma, q, l, monkeypatch) -> None:
    """Two steps, the Neyman-Pearson test S > l (l near the threshold of a level ~1e-17-1e-30): its
    level and power by mpmath (30 digits; tests/bounds/pld/_mp_reference.py). The tilts' upper end
    was 2.6 % above the power at the first (e^-38.43695 against e^-38.46354: no tilt keeps the masses at
    the threshold above the FFT's proven round-off); the one-jump bound is within 5e-5 of it (1.6e-5 at the second, measured), final
    with the max test (the tilts are not run), and the truth lies inside (the reference's own error
    ~1e-25 relative; 1e-9 allowed)."""
    log_q, log_p = mp_two_steps(q, l, sigma)
    pld = dpsgd_pld([(sigma, q, 2)])
    _no_tilts(monkeypatch)
    lo, up = pld.tail_power(log_q)
    assert lo <= log_p + 1e-9 and up >= log_p - 1e-9
    assert up - log_p <= 5e-5
    assert pld._tail_power_one_jump(log_q, pld._inf_truncation(log_q)) == up


@pytest.mark.parametrize("scan", [(600, 1800), (1500, 1800)])
def test_the_bound_is_above_the_exact_composition_of_the_same_pmf_and_within_1e_6(scan) -> None:
    """T = 4 steps of one dominating pmf (sigma 0.668, q 2.16e-7, kappa 1.92e-17): its exact 4-fold
    composition by direct sums of non-negative terms (np.convolve: every entry within ~n u of the
    exact one, no FFT) and the Neyman-Pearson dual minimised over every label give the power of that
    pmf; one_jump_upper is an upper bound on it (1e-12 relative allowed for those sums) within 1e-6.
    A scan that starts above the threshold (its least value at its first label) reaches down to the
    cut and finds the optimum there."""
    sigma, q, T, lk = 0.668, 2.16e-7, 4, math.log(1.92e-17)
    pld = dpsgd_pld([(sigma, q, T)])
    assert pld._tail_power_one_jump(lk, pld._inf_truncation(lk)) is not None
    h = 0.0233 / 1000
    src = builder.SchedulePLD(((sigma, q, T),), h, 1, False, False, pld._inf_truncation(lk), "double")
    (st, _), = src._parts("remove")[0]
    p, off = st.split, st.j_lo
    p4 = np.convolve(np.convolve(p, p), np.convolve(p, p))
    l4 = (4 * off + np.arange(p4.size)) * h
    a = np.cumsum(p4[::-1])[::-1]
    w = np.cumsum((p4 * np.exp(-l4))[::-1])[::-1]
    inf4 = 1.0 - (1.0 - st.inf_mass) ** 4
    f = np.exp(l4 + lk) + inf4 + np.append(a[1:] - np.exp(l4[:-1]) * w[1:], 0.0)
    exact = math.log(float(np.min(f[l4 > 0])))
    got = one_jump_upper([JumpStep(off, p, st.inf_mass, T)], h, lk, 500, scan)
    assert got is not None
    assert got.log_upper >= exact - 1e-12 and got.log_upper - exact <= 1e-6
    assert got.log_share < -20.0  # the Chernoff terms (no jump, two or more) are negligible here
    assert got.threshold < 1500  # (the optimum, ~1000, found below the second scan's start)


@pytest.mark.parametrize("sigma, q, T, l", [(0.663, 1.9e-7, 608, 0.129), (0.807, 3.6e-6, 120, 0.085),
                                            (0.61, 5e-8, 1500, 0.06)])
def test_rare_steps_are_bracketed_against_a_monte_carlo_of_the_exact_outputs(sigma, q, T, l) -> None:
    """T identical steps, the test L >= l: its level and power by importance-sampled Monte Carlo
    (tests/bounds/pld/_mc_reference.mc_rare_steps, 40,000 draws, seeded; the jumping step chosen
    uniformly), 4 standard errors allowed. The bracket at that level contains the estimate and is
    narrower than 1e-3 (measured 2.2e-5, 3.5e-6 and 3.5e-7 in log; the tilts alone, with
    builder._ONE_JUMP_Q = 0: 2.3e-2, 4.1e-3 and 8.9e-2)."""
    log_p, log_q, se = mc_rare_steps(sigma, q, T, l, 40_000, seed=3)
    b = rero_dpsgd(sigma, q, T, log_kappa=log_q, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    assert lo <= log_p + 4.0 * se and up >= log_p - 4.0 * se
    assert up - lo <= 1e-3


def test_a_long_schedule_with_rare_samples_is_answered_without_the_tilts(monkeypatch) -> None:
    """sigma 0.668, q 2.16e-7, T 32632 (q T 7e-3), kappa 1.92e-17: the tilts gave [-38.3636,
    -38.2683] in log (9.1 % wide, 2.3 s). The one-jump bound meets the max test within 1e-4; the
    upper end is the same without the lower end (the rule reads closed forms only)."""
    lk = math.log(1.92e-17)
    pld = dpsgd_pld([(0.668, 2.16e-7, 32632)])
    _no_tilts(monkeypatch)
    lo, up = pld.tail_power(lk)
    mt = math.log(float(pld.max_test_lower(np.array([lk]))[0]))
    assert lo == pytest.approx(mt, abs=1e-12) and up - lo <= 1e-4
    assert dpsgd_pld([(0.668, 2.16e-7, 32632)], lower=False).tail_power(lk)[1] == up


@pytest.mark.parametrize("segs, l", [([(0.65, 2.9e-7, 887), (0.977, 1.5e-6, 57)], 0.09),
                                     ([(0.69, 1.5e-6, 116), (0.712, 4e-6, 101)], 0.245)])
def test_two_segments_are_bracketed_against_a_monte_carlo_of_the_exact_outputs(segs, l) -> None:
    """Two distinct steps (the bulk without one copy of each, composed per step): the bracket at
    the Monte Carlo's level (mc_rare_schedule, the jumping step chosen uniformly among all, 40,000
    draws, 4 standard errors) contains its estimate and is narrower than 1e-4 (measured 3.0e-6 and
    2.5e-6; the lower end the loss-matched max test, rerokit.bounds.pld.maxtest)."""
    log_p, log_q, se = mc_rare_schedule(segs, l, 40_000, seed=3)
    b = rero_dpsgd(segments=segs, log_kappa=log_q, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    assert lo <= log_p + 4.0 * se and up >= log_p - 4.0 * se
    assert up - lo <= 1e-4


def test_two_tiny_q_segments_are_answered_without_the_tilts(monkeypatch) -> None:
    """sigma 0.668 / 0.7, q 2.16e-7 / 1e-7, T 2e4 each, kappa 1e-17: the tilts gave [-39.0129,
    -38.9125] in log (9.6 % wide, 3.6 s); the one-jump bound meets the loss-matched max test within
    4e-5 (3.9e-5 measured, 55-64 ms)."""
    lk = math.log(1e-17)
    pld = dpsgd_pld([(0.668, 2.16e-7, 20000), (0.7, 1e-7, 20000)])
    _no_tilts(monkeypatch)
    lo, up = pld.tail_power(lk)
    assert up - lo <= 1e-4


@pytest.mark.parametrize("segs", [
    [(0.668, 2.16e-7, 1)],            # one step: its closed form answers
    [(0.668, 3e-5, 10_000)],          # q above builder._ONE_JUMP_Q, q T above _ONE_JUMP_RARE_QT (0.3)
    [(0.668, 2e-4, 200)],             # q above _ONE_JUMP_RARE_Q (q T 0.04)
    [(0.668, 4e-6, 2_000_000)],       # q T above builder._ONE_JUMP_QT (8 > 6)
    [(2.47, 2.2e-6, 970)],            # the threshold within _ONE_JUMP_SPREAD bulk deviations
    [(0.668, 2.16e-7, 100), (0.7, 3e-5, 10_000)],  # one of two segments above _ONE_JUMP_Q (q T 0.3)
])
def test_the_one_jump_bound_declines_outside_its_regime(segs) -> None:
    lk = math.log(1e-17)
    pld = dpsgd_pld(segs)
    assert pld._tail_power_one_jump(lk, pld._inf_truncation(lk)) is None


def test_one_jump_upper_declines_where_it_cannot_apply() -> None:
    p = np.array([0.5, 0.49, 0.01])
    one = [JumpStep(-1, p, 0.0, 1)]
    five = [JumpStep(-1, p, 0.0, 5)]
    assert one_jump_upper(one, 0.01, -30.0, 1, (2, 3)) is None              # one step in all
    assert one_jump_upper(five, 0.01, -30.0, -1, (2, 3)) is None            # the cut at the first label
    assert one_jump_upper(five, 0.01, -700.0, 1, (2, 3)) is None            # below double range
    assert one_jump_upper(five, 0.01, -30.0, 1, (3, 3)) is None             # empty scan
    assert one_jump_upper(five, 0.01, -30.0, 3, (2, 4)) is None             # the scan below the cut


@pytest.mark.parametrize("bad", [{"log_alpha": math.nan}, {"log_alpha": 0.5}, {"h": 0.0}, {"h": math.inf}])
def test_one_jump_upper_rejects_bad_input_by_name(bad) -> None:
    args = {"h": 0.01, "log_alpha": -30.0, **bad}
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        one_jump_upper([JumpStep(-1, np.array([0.5, 0.49, 0.01]), 0.0, 5)], args["h"], args["log_alpha"], 1, (2, 3))


def test_loss_matched_threshold_declines_a_nan_level() -> None:
    from rerokit.bounds.pld.maxtest import loss_matched_threshold

    assert loss_matched_threshold([(0.7, 1e-6, 100)], math.nan) is None
    assert loss_matched_threshold([(0.7, 1e-6, 100)], -0.1) is None  # above log 1/2: no use
    c = loss_matched_threshold([(0.7, 1e-6, 100), (0.9, 1e-6, 100)], math.log(1e-20))
    assert c is not None and c > 0.0


def test_the_one_jump_grid_on_sparse_labels_gives_the_dense_bound(monkeypatch) -> None:
    """builder._ONE_JUMP_SPARSE: the one-jump bound's steps on sparse labels (cells of 2^i labels only
    where the mass beyond them is below alpha 1e-5 / T 4^-i). sigma 0.731, q 1.05e-7, T 86529, kappa
    1.9e-13: a third of the labels computed (8498 of 25725 measured; 38 -> 28 ms in rero_dpsgd), the
    upper end the dense grid's within 1e-9 in log (measured equal to 12 digits). Both are certified
    (every grid dominates)."""
    segs, lk = [(0.731, 1.05e-7, 86529)], math.log(1.9e-13)
    built: list[int] = []
    real = builder.dpsgd_step_pld

    def counting(*args, **kwargs):
        st = real(*args, **kwargs)
        if kwargs.get("sparse_tail") is not None or args[2] > 1e-6:  # (the one-jump grid: h = c / 1000)
            built.append(int(np.count_nonzero(st.split)))
        return st

    monkeypatch.setattr(builder, "dpsgd_step_pld", counting)
    pld = dpsgd_pld(segs)
    sparse = pld._tail_power_one_jump(lk, pld._inf_truncation(lk))
    n_sparse = built[-1]
    monkeypatch.setattr(builder, "_ONE_JUMP_SPARSE", 0.0)  # the budget 0: every label
    pld = dpsgd_pld(segs)
    dense = pld._tail_power_one_jump(lk, pld._inf_truncation(lk))
    assert sparse is not None and dense is not None
    assert abs(sparse - dense) <= 1e-9
    assert 2 * n_sparse < built[-1]


def test_about_one_expected_sampled_step_takes_the_one_jump_upper_end_too() -> None:
    """builder._ONE_JUMP_QT (2 since the eighteenth stop): sigma 0.8, q 1e-6, T 1e6, kappa 1e-15, one
    expected sampled step. The one-jump bound (proven, like every upper end) is the upper end, the
    max test's closed form the lower one: 0.86 % wide (measured), where the tilts' bracket alone was
    4.9 % wide after 7.9 s (its upper end e^-34.4126 on a grid 4x finer; the one-jump bound e^-34.4569)."""
    segs, lk = [(0.8, 1e-6, 10**6)], math.log(1e-15)
    pld = dpsgd_pld(segs)
    one = pld._tail_power_one_jump(lk, pld._inf_truncation(lk))  # noqa: SLF001
    assert one is not None
    b = rero_dpsgd(0.8, 1e-6, 10**6, kappa=1e-15, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.interval[1])
    assert up <= one + 1e-12 and lo >= pld._max_test_log(lk) - 1e-12  # noqa: SLF001
    assert up - lo <= 0.01


def test_a_finer_one_jump_grid_where_the_first_is_not_final(monkeypatch) -> None:
    """builder._ONE_JUMP_FINER: sigma 0.8, q 3e-6, T 1e6 (q T 3), kappa 1e-15. On the grid c / 1000 the
    bound is 2.5 % above the max test (its bulk's added variance, T h q, is 5x the bulk's own); on the
    grid 4x finer 0.31 % (measured), each a certified upper end, the least kept. The bracket was 2.1 %
    wide (the tilts' upper end) before the one-jump bound reached q T 3."""
    segs, lk = [(0.8, 3e-6, 10**6)], math.log(1e-15)
    pld = dpsgd_pld(segs)
    lo_mt = pld._max_test_log(lk)  # noqa: SLF001
    fine = pld._tail_power_one_jump(lk, pld._inf_truncation(lk))  # noqa: SLF001
    monkeypatch.setattr(builder, "_ONE_JUMP_FINER", ())
    pld = dpsgd_pld(segs)
    coarse = pld._tail_power_one_jump(lk, pld._inf_truncation(lk))  # noqa: SLF001
    assert fine is not None and coarse is not None
    assert fine < coarse and fine - lo_mt <= 5e-3 < coarse - lo_mt
    monkeypatch.undo()
    b = rero_dpsgd(0.8, 3e-6, 10**6, kappa=1e-15, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.interval[1])
    assert up <= fine + 1e-12 and lo >= lo_mt - 1e-12 and up - lo <= 5e-3


@pytest.mark.parametrize("sigma, q, T, l", [(0.911, 1.02e-5, 1299, 0.05), (1.249, 6.23e-5, 108, 0.03),
                                            (0.8, 8e-5, 150, 0.6)])
def test_few_sampled_steps_at_larger_q_take_the_one_jump_bound(sigma, q, T, l, monkeypatch) -> None:
    """q above builder._ONE_JUMP_Q with sum q T <= _ONE_JUMP_RARE_QT (0.1; nineteenth stop): the
    one-jump bound answers without the tilts (sigma 0.911, q 1.02e-5, T 1299, kappa 1.25e-13 took
    181 ms by the tilts for a bracket 6.6e-4 wide, now 16 ms and 5.4e-5). The bracket at the Monte
    Carlo's level (mc_rare_steps, 40,000 draws, seeded, 4 standard errors) contains its estimate and
    is narrower than 2e-3 in log (builder._ONE_JUMP_ENOUGH: final against the max test)."""
    log_p, log_q, se = mc_rare_steps(sigma, q, T, l, 40_000, seed=5)
    _no_tilts(monkeypatch)
    pld = dpsgd_pld([(sigma, q, T)])
    assert pld.tail_by_one_jump(log_q)
    lo, up = pld.tail_power(log_q)
    assert lo <= log_p + 4.0 * se and up >= log_p - 4.0 * se
    assert up - lo <= 2e-3
    b = rero_dpsgd(sigma, q, T, log_kappa=log_q, comparisons=False)
    assert (math.log(b.interval[0]), math.log(b.value)) == pytest.approx((lo, up), abs=1e-12)


def test_jump_sums_match_the_direct_dot_products() -> None:
    """onejump._jump_sums (one dot product per scanned label, on views) against the sums written out
    term by term, sum_m j_m F(l_k - l_m), on random non-negative data: within the summation bound
    (n + 2) u of the terms' sum."""
    from rerokit.bounds.pld.onejump import _jump_sums

    rng = np.random.default_rng(0)
    cut, n = 50, 300
    jm = rng.random(n) * (rng.random(n) < 0.3)
    jl = cut + np.arange(n)
    d0 = cut + 1 - int(jl[-1])
    f_up = np.sort(rng.random(900))[::-1]
    ks = np.array([cut + 1, cut + 7, 400, 650])  # (650: F's last label, 650 - cut - d0 = 898)
    want = np.array([sum(jm[m] * f_up[k - jl[m] - d0] for m in range(n)) for k in ks])
    got = _jump_sums(jm, f_up, ks - cut - 1)
    assert np.all(np.abs(got - want) <= (n + 2) * 2.0 ** -53 * want + 1e-300)
