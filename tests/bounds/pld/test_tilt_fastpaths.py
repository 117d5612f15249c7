"""The tilted power's cheaper evaluations (rerokit.bounds.pld.tilt) against the paths they replace and
mpmath: the four-term log-sum of the upper end (was a stacked logsumexp_rows), the lower end's
single P-sum (was one entry of the full suffix sums), the statistic skipped where the max test's
closed form is a lower end close enough (against the exact power of two steps), the window's top
entering the sums as one bound (against mpmath and the whole window), the tail allowance kept
small enough for a tilt centred far from its threshold and lowered where it swamps the masses
there (against the exact power of two steps), and the tilt pulled below the saddle point
(its gap, its smaller window, its fallback; brackets against the Bromwich reference), and the
recomposition with long double forward transforms where the round-off bound nears the masses at
the threshold."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld import tilt
from rerokit.bounds.pld.logsum import suffix_logsumexp
from rerokit.bounds.pld.normal import logsumexp_rows
from rerokit.bounds.pld.tilt import _logsumexp4

sys.path.insert(0, str(Path(__file__).parent))
from _mp_reference import mp_two_steps  # noqa: E402 - the exact T = 2 power

builder = sys.modules["rerokit.bounds.pld.builder"]  # (loaded by rerokit.bounds.dpsgd)


def test_logsumexp4_matches_stacked_rows_and_mpmath():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = 400
        cols = [rng.uniform(-800.0, 10.0, n) for _ in range(3)]
        for c in cols:
            c[rng.random(n) < 0.1] = -np.inf
        d = -np.inf if trial % 2 else float(rng.uniform(-800.0, 10.0))
        got = _logsumexp4(cols[0], cols[1], cols[2], d)
        # the old path: bit-identical
        ref = logsumexp_rows(np.vstack(cols + [np.full(n, d)]).T)
        assert np.array_equal(got, ref)
        # never below the exact value (to rounding), and close to it
        for k in range(0, n, 37):
            terms = [float(c[k]) for c in cols] + [d]
            with mp.workdps(40):
                ex = mp.log(sum(mp.exp(mp.mpf(x)) for x in terms if np.isfinite(x))) if any(
                    np.isfinite(terms)) else -mp.inf
            if ex == -mp.inf:
                continue
            assert got[k] >= float(ex) - 1e-13 * (1.0 + abs(float(ex)))
            assert got[k] <= float(ex) + 1e-13 * (1.0 + abs(float(ex)))


def test_single_suffix_sum_equals_full_suffix_entry():
    rng = np.random.default_rng(4)
    for linear in (True, False):
        a = rng.uniform(-120.0, -5.0, 5000) if linear else rng.uniform(-760.0, -5.0, 5000)
        a[rng.random(a.size) < 0.05] = -np.inf
        s, err = suffix_logsumexp(a)
        for j in (0, 1, 17, 2500, 4998, 4999):
            s1, e1 = suffix_logsumexp(a[j:])
            assert s1[0] == s[j] and e1[0] == err[j]
        # and the entry is within its bound of the exact sum
        j = 2500
        with mp.workdps(50):
            ex = mp.log(sum(mp.exp(mp.mpf(float(x))) for x in a[j:] if np.isfinite(x)))
        assert abs(float(ex) - s[j]) <= err[j] + 1e-300


@pytest.mark.parametrize("l", [3.0, 5.0])
def test_the_tilt_skips_its_statistic_where_the_max_test_is_enough(l: float, monkeypatch, compose_precisions) -> None:
    """SchedulePLD._tail_power_from: where the max test's power (pld.maxtest, closed form) is within
    builder._MAX_TEST_ENOUGH of the tilt's upper end, the statistic's two compositions are not run
    and the lower end is the max test's. Two steps of sigma 1, q 0.01 at the levels of the tests
    S > 3 and S > 5 (8.0e-16 and 5.7e-24): the bracket contains the exact power (mpmath, 30
    digits), one composition runs instead of three, and the upper end is the full tilt's."""
    log_level, log_power = mp_two_steps(0.01, l)
    composed = compose_precisions(tilt)
    pld = dpsgd_pld([(1.0, 0.01, 2)])
    lo, up = pld.tail_power(log_level)
    assert len(composed) == 1
    assert lo == pld._max_test_log(log_level)  # noqa: SLF001
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert up - lo <= builder._MAX_TEST_ENOUGH  # measured 8.5e-4 and 1.5e-3 (in log)
    composed.clear()
    monkeypatch.setattr(builder, "_MAX_TEST_ENOUGH", -math.inf)  # the rule off: the full tilt
    lo_f, up_f = dpsgd_pld([(1.0, 0.01, 2)]).tail_power(log_level)
    assert len(composed) == 3
    assert up_f == up
    assert lo <= lo_f <= log_power + 1e-9  # the statistic's lower end, with the max test's


def test_the_window_top_enters_the_sums_as_one_bound() -> None:
    """tilt._top_log_mass: an upper bound on the untilted masses above an index (mpmath, 40 digits),
    within the factor e^{s (l_max - l_k1)} that bounding every e^{-s l_j} by the first one costs."""
    rng = np.random.default_rng(11)
    for trial in range(20):
        n = 300
        pmf = rng.random(n) ** 8 * 10.0 ** rng.uniform(-30, 0, n)
        pmf[rng.random(n) < 0.1] = 0.0
        k1, h, off = int(rng.integers(1, n)), 10.0 ** rng.uniform(-6, -2), int(rng.integers(-1000, 1000))
        log_c, s = float(rng.uniform(-800, 10)), float(rng.uniform(0, 500))
        got = tilt._top_log_mass(pmf, k1, log_c, s, (off + k1) * h)
        with mp.workdps(40):
            terms = [mp.mpf(float(pmf[j])) * mp.exp(mp.mpf(log_c) - s * (off + j) * mp.mpf(h)) for j in range(k1, n)]
            exact = mp.fsum(terms)
        if exact == 0:
            assert got == -math.inf
            continue
        assert got >= float(mp.log(exact))
        assert got <= float(mp.log(exact)) + s * (n - 1 - k1) * h + 1e-9
    assert tilt._top_log_mass(np.ones(5), 5, 0.0, 1.0, 1.0) == -math.inf  # nothing above the window


def test_the_tilt_with_the_window_top_bounded_matches_the_whole_window(monkeypatch) -> None:
    """The far-tail tilt's sums run below the tilted masses' upper 1 - tilt._TOP_MASS quantile, the
    masses above as one bound: at sigma 2, q 1e-3, T 1e4, kappa 1e-30 (a heavy-tailed window: 61 ->
    46 ms in all) the bracket is that of the whole window's sums within 1e-9 (their own proven
    rounding differs with the number of terms) and contains it up to that."""
    tops: list[float] = []
    real = tilt._top_log_mass

    def recording(*args):
        tops.append(real(*args))
        return tops[-1]

    monkeypatch.setattr(tilt, "_top_log_mass", recording)
    log_level = math.log(1e-30)
    lo, up = dpsgd_pld([(2.0, 1e-3, 10_000)]).tail_power(log_level)
    assert any(math.isfinite(x) for x in tops)  # the top was cut
    monkeypatch.setattr(tilt, "_TOP_MASS", 0.0)  # the whole window
    tops.clear()
    lo_w, up_w = dpsgd_pld([(2.0, 1e-3, 10_000)]).tail_power(log_level)
    assert not any(math.isfinite(x) for x in tops)
    assert up == pytest.approx(up_w, rel=1e-9, abs=0.0) and lo == pytest.approx(lo_w, rel=1e-9, abs=0.0)


def test_a_tilt_centred_far_from_its_threshold_stays_narrow(monkeypatch) -> None:
    """sigma 1.08, q 1.29e-4, T 285, kappa 8.4e-17: the saddle point centres the one-grid tilt at 0.51
    nats, while the threshold sits near 0.13 nats (the composition is nearly a lattice of sampled
    steps), where the tilted masses are ~1e-12. The allowance 3 tau for the tilted mass outside the
    window (tilt._LOG_TAU) must stay far below them: with tau 1e-12 the bracket is 8.3e-4 wide (in
    log), with 1e-9 it was 2.4e-2. It overlaps the two-grid tilt's (rerokit.bounds.pld.jumps, 1.0e-3),
    both certified."""
    pld = dpsgd_pld([(1.08, 1.29e-4, 285)])
    log_level = math.log(8.43e-17)
    lo, up = pld._tail_power_from(pld, log_level)  # noqa: SLF001 - the one-grid tilt on this grid
    monkeypatch.setattr(builder, "_JUMP_FEW_STEPS", 0)  # (T 285: the two grids are otherwise declined)
    lo_j, up_j, _ = pld._tail_power_jumps(log_level, pld._inf_truncation(log_level))  # noqa: SLF001
    assert lo <= up_j and lo_j <= up
    assert up - lo <= 2e-3


@pytest.fixture
def compose_taus(monkeypatch) -> list[float]:
    """The tail allowance (log tau) of every pld.tilt.compose call while the test holds this list."""
    taus: list[float] = []
    real = tilt.compose

    def recording(parts, h, log_tau, *args, **kwargs):
        taus.append(log_tau)
        return real(parts, h, log_tau, *args, **kwargs)

    monkeypatch.setattr(tilt, "compose", recording)
    return taus


@pytest.mark.parametrize("sigma,l,rule_off_wider", [(0.8, 0.1, 6e-2), (0.8, 0.05, 6e-2), (0.9, 0.2, 5e-3)])
def test_a_truncation_that_swamps_the_threshold_is_lowered(sigma: float, l: float, rule_off_wider: float,
                                                           compose_taus, monkeypatch) -> None:
    """tilt._upper_at: two steps of q 1e-5 at the levels of the tests S > l (9.5e-16, 8.7e-14 and
    1.2e-21). Almost all of the composed mass sits at loss ~0 (no step sampled), so the saddle point's
    tilted mass above the threshold is tiny and the window's allowance 3 tau (tau 1e-12) is a
    percent-sized share of the upper end. Where that share exceeds tilt._TAU_SHARE the tilt is composed
    again at a tau lowered by the excess, and the statistic's allowance goes as far below its own
    default: the bracket contains the exact power (mpmath, 30 digits),
    measured 4.8e-3 / 2.7e-3 / 4.9e-4 wide (5.0e-3 / 2.8e-3 / 9.1e-4 before the later tilts started at
    the lowered tau); with the rule off 6.9e-2 / 6.5e-2 / 5.9e-3 (the first two above the 2 % target).
    The one-jump bound (builder._tail_power_one_jump), which answers such cells now, is off: the
    tilt's rule is what is tested."""
    monkeypatch.setattr(builder, "_ONE_JUMP_Q", 0.0)
    monkeypatch.setattr(builder, "_ONE_JUMP_RARE_Q", 0.0)
    log_level, log_power = mp_two_steps(1e-5, l, sigma)
    taus = compose_taus
    lo, up = dpsgd_pld([(sigma, 1e-5, 2)]).tail_power(log_level)
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert -math.expm1(lo - up) <= rule_off_wider / 5.0
    defaults = {tilt._LOG_TAU, tilt._LOG_TAU_STAT}  # noqa: SLF001 - the upper end's and the statistic's
    assert any(x < tilt._LOG_TAU - 2.0 and x not in defaults for x in taus)  # noqa: SLF001 - a lowered tau
    if sigma == 0.8:  # (the statistic runs there: its allowance lowered as far below its default)
        assert any(x < tilt._LOG_TAU_STAT - 2.0 for x in taus)  # noqa: SLF001
    monkeypatch.setattr(tilt, "_TAU_SHARE", math.inf)  # the rule off
    taus.clear()
    lo_off, up_off = dpsgd_pld([(sigma, 1e-5, 2)]).tail_power(log_level)
    assert set(taus) <= defaults  # only the default allowances
    assert lo_off <= log_power + 1e-9 and up_off >= log_power - 1e-9
    assert -math.expm1(lo_off - up_off) >= rule_off_wider
    assert up <= up_off


@pytest.mark.parametrize("sigma,l", [(0.8, 0.3), (0.6, 1.0)])
def test_later_tilts_start_at_the_lowered_tau(sigma: float, l: float, compose_taus, monkeypatch) -> None:
    """tilt._REUSE_LOWERED: two steps of q 1e-5 at the levels of the tests S > l (the pulled tilt, the
    saddle point's, the long double recomposition: three upper ends). The first lowers tau; the
    later ones start e^tilt._TAU_MARGIN below it instead of composing at the default first (4
    compositions where there were 6; measured 3.3e-4 / 5.6e-5 wide against 5.5e-4 / 2.1e-4); both
    brackets contain the exact power (mpmath, 30 digits). The one-jump bound is off (as above). By
    default (tilt._PULLED_MIXED_FIRST) the pulled tilt in "mixed" is the second upper end and is kept:
    3 compositions, the lowered tau reused there too; the three upper ends are the rule off."""
    monkeypatch.setattr(builder, "_ONE_JUMP_Q", 0.0)
    monkeypatch.setattr(builder, "_ONE_JUMP_RARE_Q", 0.0)
    log_level, log_power = mp_two_steps(1e-5, l, sigma)
    taus = compose_taus
    lo, up = dpsgd_pld([(sigma, 1e-5, 2)]).tail_power(log_level)
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert taus.count(tilt._LOG_TAU) == 1 and len(taus) == 3  # noqa: SLF001 - the default once, then the lowered
    taus.clear()
    monkeypatch.setattr(tilt, "_PULLED_MIXED_FIRST", False)
    lo, up = dpsgd_pld([(sigma, 1e-5, 2)]).tail_power(log_level)
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert taus.count(tilt._LOG_TAU) == 1 and len(taus) == 4  # noqa: SLF001
    taus.clear()
    monkeypatch.setattr(tilt, "_REUSE_LOWERED", False)
    lo_off, up_off = dpsgd_pld([(sigma, 1e-5, 2)]).tail_power(log_level)
    assert lo_off <= log_power + 1e-9 and up_off >= log_power - 1e-9
    assert taus.count(tilt._LOG_TAU) == 3 and len(taus) == 6  # noqa: SLF001


def test_a_lowered_tau_whose_window_does_not_fit_keeps_the_first_upper_end(monkeypatch) -> None:
    """tilt._upper_at: where the window of the lowered tau exceeds the FFT limit (WindowTooWide), the
    first composition's upper end stands (the rule off gives the same), and a window that does not
    fit at the default tau still raises (the callers coarsen the grid)."""
    log_level, _ = mp_two_steps(1e-5, 0.1, 0.8)
    monkeypatch.setattr(tilt, "_TAU_SHARE", math.inf)
    off = dpsgd_pld([(0.8, 1e-5, 2)]).tail_power(log_level)
    monkeypatch.setattr(tilt, "_TAU_SHARE", math.log(1e-3))
    real = tilt.compose

    def no_room_below_default(parts, h, log_tau, *args, **kwargs):
        if log_tau not in (tilt._LOG_TAU, tilt._LOG_TAU_STAT):  # noqa: SLF001 - a lowered tau
            raise tilt.WindowTooWide("test: no room")
        return real(parts, h, log_tau, *args, **kwargs)

    monkeypatch.setattr(tilt, "compose", no_room_below_default)
    assert dpsgd_pld([(0.8, 1e-5, 2)]).tail_power(log_level)[1] == off[1]

    def no_room(*args, **kwargs):
        raise tilt.WindowTooWide("test: no room")

    monkeypatch.setattr(tilt, "compose", no_room)
    with pytest.raises(tilt.WindowTooWide):
        tilt._upper_at(dpsgd_pld([(0.8, 1e-5, 2)]).grid_steps("remove"), 1e-4, 10.0, 0.0, log_level,  # noqa: SLF001
                       "double", False)


def test_a_lattice_like_long_schedule_gets_a_narrow_bracket_without_the_grid_ladder(compose_precisions) -> None:
    """sigma 0.988, q 3.08e-5, T 361, kappa 1.9e-13 (q T = 0.011): with tau 1e-12 the allowance was
    0.8 % of the upper end on every grid, so the width rules refined the grid four times over (10 s)
    to a bracket 1.4 % wide; with the truncation lowered where it swamps the threshold
    (tilt._TAU_SHARE), the first tilt's bracket is 6.6e-4 wide (measured; 6 compositions), and the ladder
    stays off.
    No Bromwich reference converges here; the lower end is the same as the rule-off run's."""
    from rerokit.bounds.dpsgd import rero_dpsgd

    composed = compose_precisions(tilt)
    r = rero_dpsgd(0.988, 3.08e-5, 361, 1.9e-13, comparisons=False)
    lo, up = r.interval
    assert 1.9e-13 < lo <= up and (up - lo) / up <= 1e-3
    assert len(composed) <= 8  # (was 45: nine tilts on five grids)


def test_the_pulled_tilt_meets_its_gap() -> None:
    """tilt.pulled_tilt: D(t') = (t - t') Psi'(t) - Psi(t) + Psi(t') equals the pull (Newton's method
    from t / 2, which stays below the root of the convex, decreasing D: within 1e-3 t of it), t' in
    [t / 2, t]; t / 2 where even that is within the pull; t itself for no pull."""
    pld = dpsgd_pld([(3.27, 1.25e-4, 17)])
    parts, h = pld.grid_steps("remove"), pld.h
    log_level = math.log(1.88e-28)
    t = tilt.saddle_tilt(parts, h, log_level)
    psi, lstar = tilt.log_moments(parts, h, t)

    def gap(x: float) -> float:
        return (t - x) * lstar - (psi - tilt.log_moments(parts, h, x)[0])

    for pull in (1.0, 3.0, 5.0):
        tp = tilt.pulled_tilt(parts, h, t, pull)
        assert 0.5 * t <= tp < t
        assert gap(tp + 1e-3 * t) <= pull <= gap(tp) + 1e-9  # at most 1e-3 t below the root
    assert tilt.pulled_tilt(parts, h, t, 1e9) == 0.5 * t
    assert tilt.pulled_tilt(parts, h, t, 0.0) >= t * (1.0 - 1e-3)


def _windows(monkeypatch) -> list[int]:
    """The window size of every tilt.compose call while the test holds the list."""
    sizes: list[int] = []
    real = tilt.compose

    def recording(*args, **kwargs):
        c = real(*args, **kwargs)
        sizes.append(c.pmf.size)
        return c

    monkeypatch.setattr(tilt, "compose", recording)
    return sizes


@pytest.mark.parametrize("segs,log_level,log_power", [
    ([(2.0, 3e-3, 10_000)], -51.89195541899801, -50.266771241906525),
    ([(2.49, 8.73e-3, 339171)], -54.7552033296245, -35.16051115952847),
])
def test_the_pulled_tilt_shrinks_the_window_and_keeps_the_bracket(bromwich, monkeypatch, segs, log_level,
                                                                   log_power) -> None:
    """tilted_power pulls the tilt below the saddle point by tilt._PULL nats at the threshold: the
    tilted window's heavy top shrinks (small q), while the error terms stay far below the masses at
    the threshold. The compositions run on smaller windows, and the bracket is the saddle point's
    within 1e-4 (in log; measured the same to 1e-6); both contain the Bromwich reference (pinned).
    On the grids of the width law's aim 3e-3 (builder._WIDTH_AIM until the seventeenth stop; pinned
    here): at the aim 6e-3 the second cell runs on a grid 1.45x coarser (h 1.93e-4), where the pulled
    window is the larger one (164877 against 141237 labels)."""
    monkeypatch.setattr(builder, "_WIDTH_AIM", 3e-3)
    sizes = _windows(monkeypatch)
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    pulled = list(sizes)
    sizes.clear()
    monkeypatch.setattr(tilt, "_PULL", 0.0)
    lo0, up0 = dpsgd_pld(segs).tail_power(log_level)
    assert len(pulled) == len(sizes) and pulled[0] < sizes[0]
    for a, b in ((lo, up), (lo0, up0)):
        assert a <= log_power + bromwich.REF_TOL and b >= log_power - bromwich.REF_TOL
    assert abs(up - up0) <= 1e-4 and abs(lo - lo0) <= 1e-4


def test_a_pulled_tilt_whose_error_term_is_too_large_falls_back(bromwich, monkeypatch) -> None:
    """sigma 1.36, q 1e-3, T 7e4 near the level 1e-33: the long schedule's round-off bound (~5e-11 of
    the tilted mass) comes within e^-7.2 of the pulled tilt's upper end. That is below
    tilt._PULL_ERR (e^-6.9, since the eleventh stop), so the pulled upper end is kept: one upper
    composition, the bracket containing the Bromwich reference. At the tenth stop's e^-9.2 the upper
    end is computed again at the saddle point (e^-9.9 there): two upper compositions, and the same
    bracket as without the pull (measured 2.9e-3 wide against 4.5e-3 pulled), containing it too."""
    shares: list[float] = []
    real = tilt._upper_at

    def recording(*args):
        r = real(*args)
        shares.append(r[1])
        return r

    monkeypatch.setattr(tilt, "_upper_at", recording)
    segs, log_level, log_power = [(1.36, 1e-3, 70_000)], -76.06259981572008, -73.11010653925497
    lo_p, up_p = dpsgd_pld(segs).tail_power(log_level)
    assert len(shares) == 1 and -9.2 < shares[0] <= tilt._PULL_ERR
    assert lo_p <= log_power + bromwich.REF_TOL and up_p >= log_power - bromwich.REF_TOL
    shares.clear()
    monkeypatch.setattr(tilt, "_PULL_ERR", math.log(1e-4))
    lo, up = dpsgd_pld(segs).tail_power(log_level)
    assert len(shares) == 2 and shares[0] > tilt._PULL_ERR >= shares[1]
    assert lo <= log_power + bromwich.REF_TOL and up >= log_power - bromwich.REF_TOL
    assert up <= up_p
    monkeypatch.setattr(tilt, "_PULL", 0.0)
    assert dpsgd_pld(segs).tail_power(log_level) == (lo, up)


def test_upper_with_pull_keeps_the_pulled_upper_end_unless_its_error_term_is_too_large() -> None:
    """tilt.upper_with_pull: the pulled tilt's upper end where its error term's log share is at most
    tilt._PULL_ERR, else the saddle point's (one more call); no fallback where nothing was pulled."""
    calls: list[float] = []

    def upper(share: float):
        def f(x: float) -> tuple[float, float]:
            calls.append(x)
            return -10.0 - x, share if x < 2.0 else -30.0
        return f

    assert tilt.upper_with_pull(upper(tilt._PULL_ERR - 1.0), 2.0, 1.5) == (-11.5, 1.5, tilt._PULL_ERR - 1.0) and calls == [1.5]
    calls.clear()
    assert tilt.upper_with_pull(upper(tilt._PULL_ERR + 1.0), 2.0, 1.5) == (-12.0, 2.0, -30.0) and calls == [1.5, 2.0]
    calls.clear()
    assert tilt.upper_with_pull(upper(0.0), 2.0, 2.0) == (-12.0, 2.0, -30.0) and calls == [2.0]


def test_a_lattice_like_tail_is_recomposed_in_mixed_precision(compose_precisions, monkeypatch) -> None:
    """sigma 1.47, q 1.77e-4, T 58700, kappa 3.87e-30: few sampled steps make the far tail nearly a
    lattice, and the tilted masses at the threshold are so small that the double FFT's proven
    round-off is e^-6 of the upper end there: the bracket was 2.9 % wide (in log) on every grid (3e-2
    at a 3x finer one). The upper end's error share above tilt._MIXED_SHARE recomposes with long
    double forward transforms ("mixed"): 1.1e-3. No reference reaches this setting (the Bromwich
    integral does not converge); both brackets are certified, so they overlap."""
    seen = compose_precisions(tilt)
    log_level = math.log(3.87e-30)
    lo, up = dpsgd_pld([(1.47, 1.77e-4, 58700)]).tail_power(log_level)
    assert "mixed" in seen
    assert up - lo <= 2e-3
    seen.clear()
    monkeypatch.setattr(tilt, "_MIXED_SHARE", math.inf)  # the rule off: double only
    lo_d, up_d = dpsgd_pld([(1.47, 1.77e-4, 58700)]).tail_power(log_level)
    assert "mixed" not in seen and up_d - lo_d > 2e-2
    assert lo <= up_d and lo_d <= up


def test_the_mixed_tilt_contains_the_bromwich_reference(bromwich, compose_precisions, monkeypatch) -> None:
    """The far-tail tilt in "mixed" precision throughout (tilt._MIXED_SHARE at -inf) at sigma 2,
    q 3e-3, T 1e4 (Bromwich reference pinned): the bracket contains it, as narrow as in double."""
    seen = compose_precisions(tilt)
    monkeypatch.setattr(tilt, "_MIXED_SHARE", -math.inf)
    lo, up = dpsgd_pld([(2.0, 3e-3, 10_000)]).tail_power(-51.89195541899801)
    assert "mixed" in seen
    log_power = -50.266771241906525
    assert lo <= log_power + bromwich.REF_TOL and up >= log_power - bromwich.REF_TOL
    assert up - lo <= 3e-3  # 2.1e-3 in double
