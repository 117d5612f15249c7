"""The two-grid tilt of several distinct tiny-q steps (:func:`rerokit.bounds.pld.jumps.jump_parts_multi`:
product slices over the steps' jump counts) against independent references.

* T = 2 distinct steps (sigma 1, q 0.01 and sigma 1.5, q 0.02): the Neyman-Pearson power of the
  test S > l at its own level, P(S > l) = int p1(x1) P(x2 > f2^-1(l - f1(x1))) dx1 with the steps'
  losses f_i(x) = log(1 - q_i + q_i e^{mu_i x - mu_i^2 / 2}) (mu_i = 1 / sigma_i), mpmath quadrature.
* The one-grid tilt (:func:`rerokit.bounds.pld.tilt.tilted_power`): at r = 1 the product slices
  are the same measure as the one composition of the tilted steps, computed two ways.
* Direct numpy convolution of two steps tracked by their jump counts, for the per-label bound on
  the omitted slices (:class:`rerokit.bounds.pld.jumps._MultiOmitBound`).
* Two-segment schedules: the Bromwich inversion of the exact moment function
  (``tests/bounds/conftest.py``, no rerokit code), pinned (about 11 s per point; reproduce with
  ``Schedule(segments).point(threshold)`` of that module).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from rerokit.bounds.dpsgd import dpsgd_pld, rero_dpsgd
from rerokit.bounds.pld.builder import schedule_pld
from rerokit.bounds.pld.compose import compose_inf_mass
from rerokit.bounds.pld.jumps import MAX_SLICES, _MultiOmitBound, jump_parts_multi, jump_power, multi_slice_count
from rerokit.bounds.pld.tilt import saddle_tilt, tilted_power

_SEGS = ((1.0, 0.01), (1.5, 0.02))


def _exact_two_distinct(segs, l: float) -> tuple[float, float]:
    """(log Q(S > l), log P(S > l)) for one step of each (sigma, q) in ``segs`` (mpmath, 30 digits)."""
    with mp.workdps(30):
        l_ = mp.mpf(l)
        (s1, q1), (s2, q2) = [(mp.mpf(s), mp.mpf(q)) for s, q in segs]
        mu1, mu2 = 1 / s1, 1 / s2

        def f1(x):
            return mp.log(1 - q1 + q1 * mp.exp(mu1 * x - mu1 ** 2 / 2))

        def f_inv(y, q, mu):  # the x with f(x) = y; -inf below the loss's infimum log(1 - q)
            return (mp.log((mp.exp(y) - 1 + q) / q) + mu ** 2 / 2) / mu if y > mp.log(1 - q) else -mp.inf

        def sf_q(a):
            return mp.mpf(1) if a == -mp.inf else mp.ncdf(-a)

        def sf_p(a):
            return mp.mpf(1) if a == -mp.inf else (1 - q2) * mp.ncdf(-a) + q2 * mp.ncdf(mu2 - a)

        kink = f_inv(l_ - mp.log(1 - q2), q1, mu1)  # beyond it the second step passes whatever it is
        pts = sorted({-mp.inf, mp.mpf(-5), mp.mpf(0), kink, kink + 3, mp.mpf(30), mp.inf})
        q_tail = mp.quad(lambda x: mp.npdf(x) * sf_q(f_inv(l_ - f1(x), q2, mu2)), pts)
        p_tail = mp.quad(lambda x: ((1 - q1) * mp.npdf(x) + q1 * mp.npdf(x - mu1)) * sf_p(f_inv(l_ - f1(x), q2, mu2)),
                         pts)
        return float(mp.log(q_tail)), float(mp.log(p_tail))


def _args(counts, h: float, la: float):
    """jump_power's arguments for one step of each of _SEGS, ``counts`` copies, on the grid h."""
    pld = schedule_pld(tuple((s, q, T) for (s, q), T in zip(_SEGS, counts)), h)
    steps = pld._parts("remove")[0]  # noqa: SLF001 - the steps with their statistics
    assert len(steps) == 2
    return ([(st.j_lo, st.split, T) for st, T in steps], [(st.j_lo - 1, st.stat_p, T) for st, T in steps],
            [(st.j_lo - 1, st.stat_q, T) for st, T in steps], pld.h,
            compose_inf_mass([(st.inf_mass, T) for st, T in steps]), la), steps


@pytest.mark.parametrize("r", [1, 4])
def test_two_distinct_steps_bracket_contains_the_exact_power(r: int) -> None:
    l = 2.0
    log_level, log_power = _exact_two_distinct(_SEGS, l)
    args, steps = _args((1, 1), 2e-3, log_level)
    t = saddle_tilt(args[0], args[3], log_level)
    lo, up = jump_power(*args, t, r, 0.05)
    up += sum(st.loss_shift for st, _ in steps)  # what the builder adds to the upper end
    assert lo <= log_power + 1e-9 and up >= log_power - 1e-9
    assert up - lo <= 5e-4  # measured 7.2e-6 (r 1), 1.2e-4 (r 4)


def test_product_slices_reassemble_the_one_grid_composition() -> None:
    # r = 1 (no re-discretisation): the product slices sum to the composition of the tilted steps,
    # which the one-grid tilt composes directly; the two brackets agree to the errors
    la = math.log(1e-9)
    args, _ = _args((20, 15), 1e-3, la)
    t = saddle_tilt(args[0], args[3], la)
    lo_o, up_o = tilted_power(*args, t=t)
    lo_n, up_n = jump_power(*args, t, 1, 0.2)
    assert lo_n <= up_o and lo_o <= up_n
    assert abs(up_n - up_o) < 1e-6 and abs(lo_n - lo_o) < 1e-6
    cut = math.ceil(0.2 / args[3])
    (part, err), = jump_parts_multi([(o, [p], T) for o, p, T in args[0]], [t], args[3], 1, cut)
    assert part.count == 1 and np.all(np.isfinite(err)) and np.all(err > 0)
    assert abs(math.fsum(part.pmf.tolist()) - 1.0) < 1e-12


def _slices(pmf: np.ndarray, i_c: int, m: int) -> list[np.ndarray]:
    """slices[k] = C(m, k) b^{*(m-k)} * j^{*k} (b, j: pmf below / from index i_c), by numpy."""
    b, j = np.zeros_like(pmf), np.zeros_like(pmf)
    b[:i_c], j[i_c:] = pmf[:i_c], pmf[i_c:]
    out = [np.array([1.0])]
    for _ in range(m):
        nxt = [np.convolve(s, b) for s in out] + [np.zeros(1)]
        for k, s in enumerate(out):
            c = np.convolve(s, j)
            nxt[k + 1] = c if nxt[k + 1].size == 1 else nxt[k + 1] + c
        out = nxt
    return out


def test_multi_omitted_bound_per_label_against_direct_convolution() -> None:
    # two steps with bulk (labels < cut) and jumps, m = 9 and 7 copies: the slices outside
    # {k1 <= K1, k2 <= K2}, by direct convolution, weighted as the tilt weighs errors above each
    # label, against _MultiOmitBound (r = 1: nothing moves, grow = 1)
    rng = np.random.default_rng(5)
    cut, h, t = 20, 0.05, 1.5
    steps, sl = [], []
    for off, m, n_b, n_j, scale in ((-3, 9, 23, 30, 1e-2), (-5, 7, 25, 18, 3e-2)):
        pmf = np.concatenate((rng.uniform(0.5, 1.0, n_b), scale * rng.uniform(0.5, 1.0, n_j)))
        pmf /= pmf.sum()
        i_c = cut - off
        beta, pi = float(pmf[:i_c].sum()), float(pmf[i_c:].sum())
        steps.append((off, pmf[:i_c] / beta, cut, pmf[i_c:] / pi, m, beta, pi))
        sl.append(_slices(pmf, i_c, m))
    lab0 = sum(s[0] * s[4] for s in steps)
    size = sl[0][0].size + sl[1][0].size - 1
    bound = _MultiOmitBound(steps, 1.0, h, h, t)
    for Ks in ((2, 1), (1, 3), (3, 0)):
        omitted = np.zeros(size)
        for k1, a in enumerate(sl[0]):
            for k2, b in enumerate(sl[1]):
                if k1 > Ks[0] or k2 > Ks[1]:
                    omitted += np.convolve(a, b)
        labels = lab0 + np.arange(size)
        got = np.exp(bound.log_at(labels, Ks))
        for J in range(0, size, 5):
            exact = float(np.sum(omitted[J:] * np.exp(-t * (labels[J:] - labels[J]) * h)))
            assert exact <= got[J] * (1 + 1e-9)
        assert float(omitted.sum()) <= bound.l1(Ks) * (1 + 1e-9)
        assert got[0] < 1e-2 * got[-1]  # below the omitted slices' losses the bound is far smaller


# (segments, threshold, log level, log power): tests/bounds/conftest.py Schedule(segments).point(threshold)
_BROMWICH = [
    ([(0.8, 1e-4, 100_000), (1.5, 5e-4, 10_000)], 1.6, -32.763106778140255, -31.047336511176084),
    ([(0.8, 1e-4, 100_000), (1.5, 5e-4, 10_000)], 2.5, -40.78563891141886, -38.164168541488),
    # the sigma 2 step has no loss above the cut (all bulk: jump_parts_multi's bulk-only step)
    ([(1.0, 1e-4, 500_000), (2.0, 2e-4, 500_000)], 0.9, -31.46243923520476, -30.546792901020215),
    # the sigma 0.5 step at t ~3: the builder's cut 0.5 nats (0.05 would need 208 slices)
    ([(0.5, 1e-4, 100_000), (1.0, 1e-3, 10_000)], 5.2, -24.62811586343765, -19.152271631069837),
    # a tiny-q segment beside one with q above builder._JUMP_Q (taken by the two-grid tilt since the
    # seventh stop: 0.67 -> 0.2 s and 22x at the second cell, which was the one-grid tilt's refinement)
    ([(0.961, 9.11e-4, 15831), (2.04, 0.0033, 88)], 2.2, -35.02602342793215, -32.722500567425456),
    ([(0.954, 3.06e-4, 875410), (7.193, 0.0282, 1461)], 4.7, -59.08600043706441, -54.292896680010934),
]


@pytest.mark.parametrize("segs, thr, log_level, log_power", _BROMWICH)
def test_two_segment_cells_bracket_the_bromwich_reference(segs, thr, log_level, log_power, bromwich) -> None:
    pld = dpsgd_pld(segs)
    assert pld.tail_by_jumps(log_level)  # the path under test
    lo, up = pld.tail_power(log_level)
    tol = bromwich.REF_TOL
    assert lo <= log_power + tol and up >= log_power - tol
    assert up - lo <= 0.01  # measured 6.8e-4, 6.7e-4, 1.7e-3, 2.5e-4, 5.1e-4, 7.3e-3


def test_two_segment_rero_dpsgd_within_one_percent() -> None:
    b = rero_dpsgd(segments=[(1.0, 1e-4, 500_000), (2.0, 2e-4, 500_000)], kappa=1e-20, comparisons=False)
    assert (b.value - b.interval[0]) / b.value <= 0.01  # measured 1.1e-3 (9.2e-3 before, 13.6 s)


def test_too_many_slices_decline() -> None:
    la = math.log(1e-9)
    args, _ = _args((20, 15), 1e-3, la)
    t = saddle_tilt(args[0], args[3], la)
    cut = math.ceil(0.2 / args[3])
    n = multi_slice_count(args[0], t, args[3], 1, cut)
    assert n >= 2
    from rerokit.bounds.pld.compose import WindowTooWide
    with pytest.raises(WindowTooWide):
        jump_parts_multi([(o, [p], T) for o, p, T in args[0]], [t], args[3], 1, cut, max_slices=n - 1)
    assert MAX_SLICES >= 16


def test_many_distinct_steps_decline_before_counting_slices(monkeypatch) -> None:
    """More than builder._JUMP_MULTI_MAX_STEPS distinct tiny-q steps: the two-grid tilt is declined
    without counting the product set (a product over the steps of K_i + 1); at the limit it is counted."""
    import sys

    builder = sys.modules["rerokit.bounds.pld.builder"]
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return multi_slice_count(*args, **kwargs)

    monkeypatch.setattr(builder, "multi_slice_count", counting)
    rng = np.random.default_rng(3)
    la = math.log(1e-20)
    for n, counted in ((builder._JUMP_MULTI_MAX_STEPS + 1, False), (builder._JUMP_MULTI_MAX_STEPS, True)):
        calls.clear()
        segs = [(float(rng.uniform(0.9, 1.1)), float(rng.uniform(2e-4, 3e-4)), 2000) for _ in range(n)]
        pld = schedule_pld(segs)
        assert (pld._jump_forecast(la) is None) or counted
        assert bool(calls) == counted
        if not counted:
            lo, up = pld.tail_power(la)  # the one-grid tilt answers: a certified bracket
            assert lo <= up < 0.0


def test_bad_input_names_the_parameter() -> None:
    la = math.log(1e-9)
    args, _ = _args((20, 15), 1e-3, la)
    steps = [(o, [p], T) for o, p, T in args[0]]
    with pytest.raises(ValueError, match="r must"):
        jump_parts_multi(steps, [1.0], args[3], 0, 100)
    with pytest.raises(ValueError, match="T must"):
        jump_parts_multi([(o, p, 0) for o, p, _ in steps], [1.0], args[3], 4, 100)
    with pytest.raises(ValueError, match="kind"):
        jump_parts_multi(steps, [1.0], args[3], 4, 100, kind="x")
    with pytest.raises(ValueError, match="cut"):
        jump_parts_multi(steps, [1.0], args[3], 4, min(o for o, _, _ in steps) - 5)
    with pytest.raises(ValueError, match="steps"):
        jump_parts_multi([], [1.0], args[3], 4, 100)


def test_upper_end_is_the_same_without_the_statistic() -> None:
    # the path (and the product set) is chosen from the schedule and the level only: the upper end
    # of the two-grid tilt of several steps is the same with and without the lower end
    segs, la = [(0.8, 1e-4, 100_000), (1.5, 5e-4, 10_000)], math.log(1e-9)
    with_b = dpsgd_pld(segs)
    without = dpsgd_pld(segs, lower=False)
    assert with_b.tail_by_jumps(la) and without.tail_by_jumps(la)
    lo, up = with_b.tail_power(la)
    lo_n, up_n = without.tail_power(la)
    assert lo < up and up == pytest.approx(up_n, rel=1e-12, abs=0.0)
