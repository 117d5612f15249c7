"""A short segment beside a composed schedule (rerokit.bounds.pld.onestep,
SchedulePLD.short_segment_upper, dpsgd_exact._one_step_into): one step in closed form, several composed
under their own tilt ladders; an upper end of the power, against references independent of the
engine.

References: (1) one subsampled step (sigma_a, q_a) beside T Gaussian steps of q = 1 (sigma_b),
whose loss is N(mu^2 / 2, mu^2) under P and N(-mu^2 / 2, mu^2) under Q with mu = sqrt(T) / sigma_b
(Dong, Roth & Su 2022): the test L_A + L_B > l has P- and Q-probabilities
int p(x) Phi((L_A(x) -+ mu^2/2 - l) / mu) dx, by mpmath quadrature at 30 digits (its error far
below the 1e-9 slack used); that test is most powerful at its own level, so its P-probability is
the power there. (2) The importance-sampled Monte Carlo of the exact outputs
(tests/bounds/pld/_mc_reference.py) for one step beside a long subsampled segment, 4 standard errors.
(3) Two subsampled steps beside T Gaussian steps: the same test's probabilities as a double integral
int int p(x1) p(x2) Phi((L_A(x1) + L_A(x2) -+ mu^2/2 - l) / mu) dx2 dx1, by scipy's adaptive
quadrature on panels (relative tolerance 1e-12 inside, 1e-10 outside; scipy.special.ndtr, accurate
in relative terms far into the lower tail), no rerokit code.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import mpmath as mp
import pytest

from rerokit.bounds import dpsgd, dpsgd_exact
from rerokit.bounds.dpsgd import dpsgd_pld
from rerokit.bounds.pld.builder import SHORT_SEGMENT_STEPS

sys.path.insert(0, str(Path(__file__).parent))
from _mc_reference import mc_one_plus_bulk  # noqa: E402


def _gaussian_rest(sa: float, qa: float, sb: float, tb: int, l: float) -> tuple[float, float]:
    """(log power, log level) of the test L > l for one step (sa, qa) beside tb steps (sb, q = 1)."""
    with mp.workdps(30):
        mu = mp.sqrt(tb) / sb
        s, q = mp.mpf(sa), mp.mpf(qa)

        def loss_a(x):
            return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * s * s)))

        pts = [-mp.inf, -10 * s, 0, 1, 5 * s, 10 * s, 20 * s, 40 * s, mp.inf]
        level = mp.quad(lambda x: mp.npdf(x, 0, s) * mp.ncdf((loss_a(x) - mu * mu / 2 - l) / mu), pts)
        power = mp.quad(lambda x: ((1 - q) * mp.npdf(x, 0, s) + q * mp.npdf(x, 1, s))
                        * mp.ncdf((loss_a(x) + mu * mu / 2 - l) / mu), pts)
        return float(mp.log(power)), float(mp.log(level))


@pytest.mark.parametrize("sa,qa,sb,tb,l,width", [
    (1.0, 1e-4, 20.0, 100, 3.0, 1e-3),  # measured 5.1e-4 above the truth (log power -19.2276)
    (1.3, 2e-4, 40.0, 400, 4.0, 1e-3),  # 4.2e-4 (log power -33.0139)
    (0.9, 1e-3, 50.0, 1000, 6.0, 0.1),  # 4.4e-2: valid, loose (the composed tilt answers there)
])
def test_one_step_upper_is_above_the_exact_power(sa, qa, sb, tb, l, width) -> None:
    """The upper end never below the exact power (quadrature), within ``width`` in log of it; the
    full bracket (the better ends of every path) contains it."""
    log_power, log_level = _gaussian_rest(sa, qa, sb, tb, l)
    segs = [(sa, qa, 1), (sb, 1.0, tb)]
    up = dpsgd_pld(segs).short_segment_upper(log_level, l)
    assert up is not None
    assert log_power - 1e-9 <= up <= log_power + width
    b = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert math.log(b.interval[0]) - 1e-9 <= log_power <= math.log(b.value) + 1e-9


def test_one_jump_bracket_with_the_step_in_closed_form(monkeypatch) -> None:
    """sigma 1.298, q 1.3e-4 once beside sigma 3.024, q 2.6e-4 for 1585 steps, at the level of the
    test L >= 0.483 (~e^-68): the composed tilts' upper end was e^-67.588, 2.4 % above the lower
    end; with the step in closed form the bracket is 2.6e-4 wide (measured), the Monte Carlo
    estimate inside."""
    segs = [(1.298, 1.3e-4, 1), (3.024, 2.6e-4, 1585)]
    log_power, log_level, se = mc_one_plus_bulk(1.298, 1.3e-4, 3.024, 2.6e-4, 1585, 0.483, 60_000, seed=1)
    tol = 4.0 * se
    b = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    lo, up = math.log(b.interval[0]), math.log(b.value)
    assert lo - tol <= log_power <= up + tol
    assert up - lo <= 1e-3
    # without the sub-schedules' lower end, the test on the step's statistic beside the rest's
    # (SchedulePLD.short_segment_lower) gives one: measured 1.1e-3 below the upper end
    with monkeypatch.context() as m:
        m.setattr(dpsgd_exact, "_sub_schedules_into", lambda r, pld, lks: (r, {}))
        stat = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert math.log(stat.interval[0]) - tol <= log_power <= math.log(stat.value) + tol
    assert 1.0 - stat.interval[0] / stat.value <= 3e-3
    monkeypatch.setattr(dpsgd_exact, "_one_step_into", lambda r, subs, pld, lks: r)
    off = dpsgd.rero_dpsgd(segments=segs, log_kappa=log_level, comparisons=False)
    assert math.log(off.value) - math.log(off.interval[0]) > 0.01
    assert up <= math.log(off.value)


def _two_steps_gaussian_rest(sa: float, qa: float, sb: float, tb: int, l: float) -> tuple[float, float]:
    """(log power, log level) of the test L > l for two steps (sa, qa) beside tb steps (sb, q = 1)."""
    from scipy import integrate, special

    mu = math.sqrt(tb) / sb
    norm = 1.0 / (sa * math.sqrt(2.0 * math.pi))
    edges = [s_ * sa for s_ in (-60, -10, 0, 1 / sa, 5, 10, 20, 40, 80)]

    def loss(x: float) -> float:
        return math.log1p(qa * math.expm1((2.0 * x - 1.0) / (2.0 * sa * sa)))

    def p(x: float) -> float:
        return norm * ((1.0 - qa) * math.exp(-x * x / (2 * sa * sa)) + qa * math.exp(-(x - 1.0) ** 2 / (2 * sa * sa)))

    def q0(x: float) -> float:
        return norm * math.exp(-x * x / (2 * sa * sa))

    def panels(f, rel: float) -> float:
        return sum(integrate.quad(f, a, b, epsabs=0.0, epsrel=rel, limit=200)[0] for a, b in zip(edges[:-1], edges[1:]))

    out = []
    for dens, sign in ((p, 1.0), (q0, -1.0)):
        def inner(x1: float) -> float:
            l1 = loss(x1)
            return dens(x1) * panels(lambda x2: dens(x2) * special.ndtr((l1 + loss(x2) + sign * mu * mu / 2 - l) / mu), 1e-12)

        out.append(math.log(panels(inner, 1e-10)))
    return out[0], out[1]


@pytest.mark.parametrize("sa,qa,sb,tb,l,width", [
    (1.0, 1e-4, 500.0, 100, 1.0, 1e-5),  # upper 8e-7 above the truth (log power -53.99499), lower 1.6e-5 below
    (1.0, 1e-4, 200.0, 100, 0.5, 1e-5),  # 3.7e-6 above, 3.2e-6 below (log power -44.16526)
    (1.4, 1e-4, 100.0, 100, 1.5, 1e-2),  # 2.1e-3 above, 4.3e-2 below (log power -110.0671, below 1e-30)
])
def test_segment_ends_bracket_the_exact_power(sa, qa, sb, tb, l, width) -> None:
    """Two sampled steps' large deviation beside small Gaussian losses: the composed segment's upper
    end (pieces by the number of steps in the tail, each under its own tilts) never below the
    exact power (quadrature), within ``width`` in log of it; the lower end of the test on the two
    statistics never above it, within 0.1 ``width`` + 0.05 (measured above)."""
    log_power, log_level = _two_steps_gaussian_rest(sa, qa, sb, tb, l)
    pld = dpsgd_pld([(sa, qa, 2), (sb, 1.0, tb)])
    up, low = pld.short_segment_upper(log_level, l), pld.short_segment_lower(log_level, l)
    assert up is not None and low is not None
    assert log_power - 1e-8 <= up <= log_power + width
    assert log_power - 0.1 * width - 0.05 <= low <= log_power + 1e-8


@pytest.mark.parametrize("segs,kappa", [
    ([(1.381, 1.78e-4, 3), (1.786, 1.24e-4, 63991)], 4.65e-23),  # 3.0 % -> 0.24 % (measured)
    ([(1.164, 1.25e-4, 43), (3.103, 6.67e-4, 25735)], 7.42e-24),  # 3.0 % -> 0.012 %
])
def test_a_short_segment_apart_narrows_the_bracket(monkeypatch, segs, kappa) -> None:
    """A few steps of small sigma beside a long segment of small losses, at kappa ~1e-23: the
    composed tilts' upper end was 3 % above the lower end (the sub-schedules' own); with the short
    segment apart (its pieces for the upper end, the test on the two statistics for the lower) the
    bracket is within 5e-3, both ends inside the old bracket."""
    b = dpsgd.rero_dpsgd(segments=segs, kappa=kappa, comparisons=False)
    assert 1.0 - b.interval[0] / b.value <= 5e-3
    monkeypatch.setattr(dpsgd_exact, "_one_step_into", lambda r, subs, pld, lks: r)
    off = dpsgd.rero_dpsgd(segments=segs, kappa=kappa, comparisons=False)
    assert 1.0 - off.interval[0] / off.value > 0.025
    assert off.interval[0] <= b.interval[0] <= b.value <= off.value


def test_short_segment_upper_not_applicable() -> None:
    """None without a segment of at most SHORT_SEGMENT_STEPS steps, with a group of examples, or with
    a single segment."""
    lk = math.log(1e-30)
    assert dpsgd_pld([(1.2, 1e-3, SHORT_SEGMENT_STEPS + 1), (3.0, 1e-3, 100)]).short_segment_upper(lk, 0.5) is None
    assert dpsgd_pld([(1.2, 1e-3, 1), (3.0, 1e-3, 100)], group_size=2).short_segment_upper(lk, 0.5) is None
    assert dpsgd_pld([(1.2, 1e-3, 2), (3.0, 1e-3, 100)], group_size=2).short_segment_upper(lk, 0.5) is None
    assert dpsgd_pld([(1.2, 1e-3, 1)]).short_segment_upper(lk, 0.5) is None


def test_tilted_tails_bound_the_tails_of_a_direct_convolution() -> None:
    """tilted_tails of five copies of a small pmf (h 0.05, losses -0.5 ... 2.5, log-masses a
    concave quadratic) against numpy's direct convolution (every mass of order 1e-6 or more, so its
    rounding is ~1e-15 relative): never below, and within 1e-9 relative within two tilted standard
    deviations of the tilted mean; the mean ladder's tilts climb and their means reach y_top."""
    import numpy as np

    from rerokit.bounds.pld.tilt import log_moments, mean_ladder, tilted_tails

    h, off = 0.05, -10
    x = np.arange(61)
    pmf = np.exp(-0.004 * (x - 12.0) ** 2)
    pmf /= pmf.sum()
    direct = pmf
    for _ in range(4):
        direct = np.convolve(direct, pmf)
    tails = np.cumsum(direct[::-1])[::-1]  # P(L >= label), labels 5 off ...
    ladder = mean_ladder([(off, pmf, 5)], h, 0.05, 6.0, 3.0, 1e3, 40)
    assert all(b > a for a, b in zip(ladder, ladder[1:])) and log_moments([(off, pmf, 5)], h, ladder[-1])[1] >= 6.0 - 1e-9
    for t in ladder:
        o, u = tilted_tails([(off, pmf, 5)], h, t, 0.0, math.log(1e-6))
        k = np.arange(o, o + u.size)  # u[i] bounds P(L > k_i h) = P(L >= (k_i + 1) h)
        idx = k + 1 - 5 * off
        ok = (idx >= 0) & (idx < tails.size)
        truth = np.log(tails[idx[ok]])
        assert np.all(u[ok] >= truth - 1e-12)
        ls = (5 * off + np.arange(direct.size)) * h
        w = direct * np.exp(t * (ls - ls.max()))
        w /= w.sum()
        m = float(np.dot(w, ls))
        sd = math.sqrt(float(np.dot(w, (ls - m) ** 2)))
        near = np.abs(k[ok] * h - m) <= 2.0 * sd
        assert near.any() and np.all(u[ok][near] - truth[near] <= 1e-9)


def test_pieces_only_where_the_short_segment_carries_the_tail(monkeypatch) -> None:
    """A short segment of q 0.114 (sigma 2.549, 43 steps) beside sigma 3.615, q 8.1e-4, 118595
    steps at kappa 5.19e-25: the bracket is 0.57 % wide, but the segment is not in the tiny-q jump
    regime (q > _SHORT_SEGMENT_Q) and its pieces (2.3 s there) narrowed nothing: they are not run.
    The 43-step segment of q 1.25e-4 is (its own lower end within 0.02 nats of the upper end)."""
    from rerokit.bounds.pld.builder import SchedulePLD

    calls: list[tuple] = []
    orig = SchedulePLD.short_segment_upper

    def spy(self, log_alpha, threshold):
        calls.append(self.short_segment())
        return orig(self, log_alpha, threshold)

    monkeypatch.setattr(SchedulePLD, "short_segment_upper", spy)
    b = dpsgd.rero_dpsgd(segments=[(2.549, 0.114, 43), (3.615, 8.1e-4, 118595)], kappa=5.19e-25, comparisons=False)
    assert 1.0 - b.interval[0] / b.value > dpsgd_exact._PRECISE_ENOUGH and calls == []
    dpsgd.rero_dpsgd(segments=[(1.164, 1.25e-4, 43), (3.103, 6.67e-4, 25735)], kappa=7.42e-24, comparisons=False)
    assert calls == [(1.164, 1.25e-4, 43)]


def test_one_step_in_closed_form_needs_no_grid_for_the_step() -> None:
    """sigma 1.423, q 1.2e-4 once beside sigma 4.953, q 1.5e-4 for 1296 steps at kappa e^-74.976:
    the single step's deep truncation would need 382,163 grid points (StepTooWide), but its closed
    form needs none: the upper end is still found (measured e^-74.6073, the Monte Carlo estimate of
    benchmarks/pld_soundness.py --one-jump seed 1 e^-74.607), while the lower end of the two
    statistics, which needs the step's grid, is not."""
    pld = dpsgd_pld([(1.423, 1.2e-4, 1), (4.953, 1.5e-4, 1296)])
    up = pld.short_segment_upper(-74.976, 0.351)
    assert up is not None and up <= -74.60
    assert pld.short_segment_lower(-74.976, 0.351) is None
