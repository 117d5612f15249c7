"""The public PLD engine (rerokit.bounds.pld) against independent references: the Gaussian-DP
closed form at q = 1 (Dong, Roth & Su 2022, Eq. 6), exact one-step Neyman-Pearson powers for
groups of k examples and for the replace-one pair (likelihood ratio monotone in x, so the optimal
test is a threshold on x), a two-step quadrature (scipy), exact integer arithmetic for the FFT
round-off bound - never rerokit's own engine."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.stats import binom, norm

from rerokit.bounds.dpsgd import envelope_log_gamma, rero_dpsgd
from rerokit.bounds.schedule import Schedule
from rerokit.bounds.pld import LOG_TAU, DiscretePLD, compose, dpsgd_step_pld, schedule_pld

sys.path.insert(0, str(Path(__file__).parent))
from _mp_reference import mp_cells, mp_exact_split, mp_pair, mp_suffixes  # noqa: E402 - exact step references


def gdp_power(mu, kappa):
    return norm.cdf(norm.ppf(kappa) + mu)


# ----------------------------------------------------------------------------- q = 1


@pytest.mark.parametrize("sigma,T,kappa", [(1.0, 10, 0.01), (2.0, 100, 1e-4), (0.7, 3, 0.3)])
def test_full_batch_bracket_contains_the_gdp_closed_form(sigma, T, kappa):
    b = schedule_pld([(sigma, 1.0, T)]).power(math.log(kappa))
    truth = gdp_power(math.sqrt(T) / sigma, kappa)
    assert b.lower[0] <= truth <= b.upper[0]
    assert b.upper[0] - b.lower[0] < 1e-3


@pytest.mark.parametrize("k", [2, 3])
def test_group_full_batch_is_gdp_with_mu_k_sqrt_T_over_sigma(k):
    sigma, T, kappa = 3.0, 20, 0.01
    truth = gdp_power(k * math.sqrt(T) / sigma, kappa)
    b = schedule_pld([(sigma, 1.0, T)], group_size=k).power(math.log(kappa))
    assert b.lower[0] <= truth <= b.upper[0] and b.upper[0] - b.lower[0] < 1e-3
    r = rero_dpsgd(segments=Schedule.from_settings(sigma, 1.0, T, examples_per_user=k), kappa=kappa)  # q = 1: the closed form itself
    assert r.interval[0] <= truth <= r.value and r.error < 1e-12


# ----------------------------------------------------------------------------- one step, exact


@pytest.mark.parametrize("k,q,sigma,kappa", [(2, 0.1, 1.0, 0.01), (3, 0.5, 2.0, 0.1), (2, 0.3, 0.7, 1e-4)])
def test_group_one_step_brackets_the_neyman_pearson_power(k, q, sigma, kappa):
    """T = 1: L is increasing in x, the optimal test at level kappa is x > t with
    Phi(-t / sigma) = kappa, and gamma = sum_j Binomial(j; k, q) Phi((j - t) / sigma)."""
    t = sigma * norm.isf(kappa)
    truth = sum(binom.pmf(j, k, q) * norm.sf((t - j) / sigma) for j in range(k + 1))
    b = schedule_pld([(sigma, q, 1)], group_size=k).power(math.log(kappa))
    assert b.lower[0] <= truth <= b.upper[0]
    assert b.upper[0] - b.lower[0] < 1e-4


@pytest.mark.parametrize("q,sigma,kappa", [(0.2, 1.0, 0.01), (0.5, 2.0, 0.1), (1.0, 1.0, 1e-3)])
def test_replace_one_step_upper_end_is_above_the_neyman_pearson_power(q, sigma, kappa):
    """Replace-one pair P = (1-q)N(0) + qN(1), Q = (1-q)N(0) + qN(-1): L increasing in x, so the
    optimal test is x > t with Q(x > t) = kappa and gamma = P(x > t)."""
    def q_sf(t):
        return (1 - q) * norm.sf(t / sigma) + q * norm.sf((t + 1) / sigma)

    t = optimize.brentq(lambda t: q_sf(t) - kappa, -50, 50, xtol=1e-14)
    truth = (1 - q) * norm.sf(t / sigma) + q * norm.sf((t - 1) / sigma)
    pld = schedule_pld([(sigma, q, 1)], 1e-4)
    up = math.exp(pld.replace.power(math.log(kappa))[0][0])
    assert truth <= up <= truth + 1e-4


def test_two_steps_bracket_contains_quadrature():
    """T = 2 (remove): Q(L1 + L2 > t) and P(L1 + L2 > t) as one-dimensional integrals over x1 of the
    exact conditional tails in x2 (inverse of the monotone loss in closed form); t solves the level."""
    sigma, q, kappa = 1.0, 0.3, 0.01

    def loss(x):
        return np.logaddexp(math.log1p(-q), math.log(q) + (2 * x - 1) / (2 * sigma**2))

    def x_of(l):  # inverse of loss; -inf below its infimum log(1-q)
        v = math.exp(l) - (1 - q)
        return -math.inf if v <= 0 else sigma**2 * math.log(v / q) + 0.5

    def tails(t):
        def qi(x1):
            return norm.pdf(x1, 0, sigma) * norm.sf(x_of(t - loss(x1)) / sigma)

        def pi(x1):
            x2 = x_of(t - loss(x1))
            mix = (1 - q) * norm.pdf(x1, 0, sigma) + q * norm.pdf(x1, 1, sigma)
            return mix * ((1 - q) * norm.sf(x2 / sigma) + q * norm.sf((x2 - 1) / sigma))

        opts = dict(limit=400, epsabs=1e-14, epsrel=1e-12)
        return integrate.quad(qi, -12, 14, **opts)[0], integrate.quad(pi, -12, 14, **opts)[0]

    t = optimize.brentq(lambda t: tails(t)[0] - kappa, 0.0, 3.0, xtol=1e-12)
    truth = tails(t)[1]
    b = schedule_pld([(sigma, q, 2)]).power(math.log(kappa))
    assert b.lower[0] - 1e-9 <= truth <= b.upper[0] + 1e-9
    assert b.upper[0] - b.lower[0] < 1e-3


# ----------------------------------------------------------------------------- schedules


def test_group_size_one_is_the_default_and_schedules_carry_it():
    segs = [(1.0, 0.05, 200)]
    a = schedule_pld(segs)
    b = schedule_pld(segs, group_size=1)
    np.testing.assert_array_equal(a.upper.pmf, b.upper.pmf)
    assert rero_dpsgd(1.0, 0.05, 200, 0.01).value == rero_dpsgd(segments=Schedule.from_settings(1.0, 0.05, 200, examples_per_user=1), kappa=0.01).value
    sched = SimpleNamespace(segments=((2.0, 1.0, 10),), examples_per_user=2)
    assert schedule_pld(sched).group_size == 2
    truth = gdp_power(2 * math.sqrt(10) / 2.0, 0.05)
    br = schedule_pld(sched).power(math.log(0.05))
    assert br.lower[0] <= truth <= br.upper[0]


def test_alternating_history_equals_its_merged_schedule():
    """2,000 alternating (sigma, q) steps: composition is commutative, identical steps are merged."""
    hist = [(1.0, 0.01, 1), (1.5, 0.02, 1)] * 1000
    merged = [(1.0, 0.01, 1000), (1.5, 0.02, 1000)]
    a = rero_dpsgd(segments=hist, kappa=0.01, comparisons=False)
    b = rero_dpsgd(segments=merged, kappa=0.01, comparisons=False)
    assert a.value == b.value and a.interval == b.interval


def test_near_noiseless_segment_keeps_a_pld_quality_bound():
    """One step with sigma = 1e-6 (target revealed whenever sampled) after ten full-batch steps:
    gamma = q + (1 - q) Phi(Phi^-1(kappa) + sqrt(10)) exactly (the revealed indicator is a test of
    level 0); it used to send the whole schedule to the envelope."""
    kappa, q = 0.01, 0.05
    truth = q + (1 - q) * gdp_power(math.sqrt(10), kappa)
    b = rero_dpsgd(segments=[(1.0, 1.0, 10), (1e-6, q, 1)], kappa=kappa)
    assert b.method == "exact"
    assert b.interval[0] <= truth <= b.value and b.error < 1e-3
    env = math.exp(envelope_log_gamma([(1.0, 1.0, 10), (1e-6, q, 1)], math.log(kappa)))
    assert b.value < env


@pytest.mark.parametrize("sigma", [1e-4, 1e-3, 4e-3, 0.02])
def test_small_sigma_in_the_grid_range_beside_other_segments(sigma):
    """sigma 1e-4-0.02 (inside SIGMA_GRID_RANGE) beside full-batch steps: one such step's losses
    (~1 / (2 sigma^2) nats) used to force a grid step of 0.3-300 nats on the whole schedule (sigma
    1e-3: bracket [0.095, 0.58] in 8 s; found by fuzzing rero_dpsgd). The revealed-indicator pair
    is exact up to the decoding error eps = T Phi(-1/(2 sigma)) (< 1e-130 here): the truth is
    p1 + (1 - p1) Phi(Phi^-1(kappa) + mu) (p1 = 1 - (1 - q)^T, the indicator a test of level 0),
    within eps (1 + 1 / kappa) of it; the bracket must contain it and be narrow."""
    kappa, q, T = 1e-6, 1e-3, 100
    p1 = -math.expm1(T * math.log1p(-q))
    truth = p1 + (1 - p1) * gdp_power(1.0, kappa)  # (2, 1, 4): mu = sqrt(4) / 2 = 1
    b = rero_dpsgd(segments=[(2.0, 1.0, 4), (sigma, q, T)], kappa=kappa, comparisons=False)
    assert b.method == "exact"
    assert b.interval[0] <= truth * (1 + 1e-12) and truth * (1 - 1e-12) <= b.value
    assert b.value - b.interval[0] <= 1e-4 * b.value


def test_revealed_full_batch_segment_is_certain_not_a_math_domain_error():
    """A near-noiseless segment with q = 1 puts all its mass at +infinity; 1 - 1e-300 rounds to 1,
    so the composed infinity mass took log1p(-1) ('math domain error' from dpsgd_tradeoff; found
    by fuzzing). gamma = 1 and the curve is 0."""
    from rerokit.bounds.pld.compose import compose_inf_mass
    from rerokit.bounds.tradeoff import dpsgd_tradeoff

    assert compose_inf_mass([(0.5, 1), (1.0, 3)]) == 1.0 and compose_inf_mass([(1.0, 0)]) == 0.0
    segs = [(9.4, 0.0055, 3000), (0.0012, 1.0, 100)]
    b = rero_dpsgd(segments=segs, kappa=1e-6, comparisons=False)
    assert b.value == 1.0 and b.interval[0] > 1.0 - 1e-12
    beta = dpsgd_tradeoff(segments=segs).beta(np.array([1e-9, 0.1, 0.9]))
    assert np.all(beta.lower == 0.0) and np.all(beta.upper <= 1e-12)


def test_revealed_alternative_too_wide_keeps_the_schedules_own_bracket(monkeypatch):
    """SchedulePLD.revealed builds a second schedule, whose PLD can be too wide as well (sigma 0.045,
    q 0.067, T 1267 beside two segments, found by fuzzing: PLDTooWide escaped rero_dpsgd); then the
    schedule's own bracket stands."""
    from rerokit.bounds.pld import PLDTooWide, SchedulePLD

    segs = [(1.0, 0.01, 1000), (0.02, 1e-3, 100)]
    want = rero_dpsgd(segments=segs, kappa=1e-6, comparisons=False)

    def too_wide(self):
        raise PLDTooWide("too wide")

    monkeypatch.setattr(SchedulePLD, "revealed", too_wide)
    got = rero_dpsgd(segments=segs, kappa=1e-6, comparisons=False)
    assert got.method == "exact" and got.interval[0] <= want.value <= got.value * (1 + 1e-9)


def test_full_batch_steps_with_a_huge_mu_are_one_exact_gaussian_step():
    """sigma 0.5, q 1, T 1e5 beside a subsampled segment: mu = 632 (the target is certain to be
    found: gamma >= Phi(Phi^-1(kappa) + mu), the full-batch part alone, exact Gaussian DP). Its 1e5
    steps composed one by one took 22-36 s (found by fuzzing); as one Gaussian step of noise
    1 / mu (the same pair, Dong, Roth & Su 2022) it is near-noiseless and answers at once. Where mu
    is moderate the steps stay apart (one step spanning hundreds of nats made the near-1 bracket
    100x wider): sigma 3, q 1, T 1e3 keeps its 1 - gamma within 1e-10."""
    b = rero_dpsgd(segments=[(1.0, 0.01, 1000), (0.5, 1.0, 100_000)], kappa=1e-30, comparisons=False)
    assert b.value == 1.0 and b.interval[0] >= 1.0 - 1e-12
    c = rero_dpsgd(segments=[(3.0, 1.0, 1000), (1.0, 0.01, 1000)], kappa=1e-9, comparisons=False)
    gdp = gdp_power(math.sqrt(1000) / 3.0, 1e-9)  # the full-batch part alone: a lower bound
    assert c.value >= gdp and c.value - c.interval[0] <= 1e-10


def test_small_sigma_bound_is_monotone_across_the_revealed_boundary():
    """Segments up to REVEAL_BAND also get the revealed pair's upper end (it does not depend on
    sigma), so the bound does not rise where the near-noiseless rule stops (about sigma 0.005)."""
    segs = lambda s: [(1.0, 0.01, 1000), (s, 1e-3, 100)]  # noqa: E731
    vals = [rero_dpsgd(segments=segs(s), kappa=1e-6, comparisons=False).value for s in (1e-3, 4.9e-3, 5.2e-3, 0.01, 0.05, 0.1)]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(vals, vals[1:]))


def test_near_silent_segment_is_dominated_not_dropped():
    kappa = 0.01
    base = rero_dpsgd(1.0, 0.1, 50, kappa, comparisons=False)
    more = rero_dpsgd(segments=[(1.0, 0.1, 50), (1e9, 0.5, 100)], kappa=kappa, comparisons=False)
    assert more.method == "exact"
    assert more.value >= base.interval[0] and more.value - base.value < 1e-3


def test_monotone_across_the_small_sigma_boundary():
    """The bound used to rise with sigma where the exact range starts (9.9e-5 -> 0.99996, 1e-4 -> 1.0):
    the exact value is now never above the closed-form envelope."""
    vals = [rero_dpsgd(s, 0.3, 1, 0.1, comparisons=False).value for s in (9.9e-5, 1e-4, 1e-3)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))
    assert vals[0] == pytest.approx(1 - 0.9 * 0.7, rel=1e-12)  # never-sampled supremum


# ----------------------------------------------------------------------------- round-off


def test_proven_roundoff_bound_holds_against_exact_integer_convolution():
    """Dyadic masses (integers / 2^20): their 12-fold convolution is exact in integers; the FFT's
    sum of absolute errors must be within the proven bound (no wrap-around: full window)."""
    rng = np.random.default_rng(3)
    ints = rng.integers(1, 2000, size=40)
    ints = [int(v) for v in ints]
    scale = 2**20
    pmf = np.array(ints, dtype=float) / scale
    exact = [1]
    for _ in range(12):
        exact = [sum(exact[i] * ints[j - i] for i in range(max(0, j - 39), min(len(exact), j + 1)))
                 for j in range(len(exact) + 39)]
    c = compose([(0, pmf, 12)], 1.0, LOG_TAU, window=(0, len(exact) - 1))
    den = scale**12
    err = sum(abs(Fraction(float(c.pmf[i])) - Fraction(exact[i], den)) for i in range(len(exact)))
    worst = max(abs(Fraction(float(c.pmf[i])) - Fraction(exact[i], den)) for i in range(len(exact)))
    assert err <= Fraction(c.roundoff) and worst <= Fraction(c.entry_roundoff)
    assert err > 0  # the comparison is not vacuous


# ----------------------------------------------------------------------------- DiscretePLD API


def test_discrete_pld_queries_are_consistent():
    st = dpsgd_step_pld(1.0, 0.2, 1e-3, "remove", LOG_TAU - math.log(20))
    one = DiscretePLD(1e-3, st.j_lo, st.split, inf_mass=st.inf_mass)
    ten = one.self_compose(10)
    eleven = ten.compose(one)
    assert ten.error > 0 and eleven.inf_mass > ten.inf_mass
    for d in (1e-3, 1e-6):
        eps = ten.epsilon(d)
        assert ten.hockey_stick(eps)[0] <= d * (1 + 1e-9)
        assert ten.hockey_stick(max(0.0, eps - 0.01))[0] > d  # the smallest such eps, up to the grid
    sched = schedule_pld([(1.0, 0.2, 10)], 1e-3)
    lk = np.log([1e-4, 1e-2, 0.3])
    np.testing.assert_allclose(ten.power(lk)[0], sched.upper.power(lk)[0], rtol=0, atol=1e-9)
    b = sched.power(lk)
    assert np.all(b.lower <= b.upper) and np.all(b.lower >= np.exp(lk) * (1 - 1e-12))


@pytest.mark.parametrize("kw,name", [(dict(group_size=0), "group_size"), (dict(group_size=1.5), "group_size")])
def test_bad_group_size_raises_naming_it(kw, name):
    with pytest.raises((ValueError, TypeError), match="examples_per_user"):  # rero_dpsgd's unit of privacy
        rero_dpsgd(segments=Schedule.from_settings(1.0, 0.1, 10, examples_per_user=kw["group_size"]), kappa=0.1)
    with pytest.raises(ValueError, match=name):
        schedule_pld([(1.0, 0.1, 10)], **kw)


def test_unknown_direction_raises():
    with pytest.raises(ValueError, match="direction"):
        dpsgd_step_pld(1.0, 0.1, 1e-3, "sideways", LOG_TAU)
    with pytest.raises(ValueError, match="group_size"):
        dpsgd_step_pld(1.0, 0.1, 1e-3, "replace", LOG_TAU, group_size=2)


# ----------------------------------------------------------------------------- far tails (tilting)


@pytest.mark.parametrize("sigma,T,lk10", [(1.0, 10, -20), (1.0, 10, -30), (0.5, 3, -100)])
def test_tilted_tail_brackets_the_gdp_closed_form(sigma, T, lk10):
    """q = 1 through the PLD (not the closed-form shortcut): the tilted bracket at kappa down to
    1e-100 contains log Phi(Phi^-1(kappa) + sqrt(T)/sigma) (scipy) and is a few % wide at most."""
    lk = lk10 * math.log(10)
    lo, up = schedule_pld([(sigma, 1.0, T)]).tail_power(lk)
    truth = norm.logcdf(norm.ppf(10.0**lk10) + math.sqrt(T) / sigma)
    assert lo <= truth <= up
    assert up - lo < 0.05


@pytest.mark.parametrize("sigma,q,lk10", [(1.0, 0.01, -30), (0.7, 0.3, -20), (2.0, 0.5, -12)])
def test_one_step_tiny_kappa_bracket_contains_neyman_pearson(sigma, q, lk10):
    """T = 1 at tiny kappa: gamma = (1-q) kappa + q Phi((1 - t)/sigma), t = sigma Phi^-1(1 - kappa)
    (scipy's isf, accurate in the tail); the bracket is relative-tight, not the old floor."""
    kappa = 10.0**lk10
    t = sigma * norm.isf(kappa)
    truth = (1 - q) * kappa + q * norm.sf((t - 1) / sigma)
    b = rero_dpsgd(sigma, q, 1, log_kappa=lk10 * math.log(10), comparisons=False)
    assert b.interval[0] <= truth * (1 + 1e-12) and truth <= b.value
    assert (b.value - b.interval[0]) / b.value < 0.02
    assert b.extras["floored"] is False


# ----------------------------------------------------------------------------- the masses' rounding

_STEP_CASES = [(1.0, 0.01, 1, "remove", 2e-3), (0.5, 0.3, 1, "add", 5e-3), (3.0, 1e-3, 1, "replace", 1e-3),
               (10.0, 1e-3, 2, "remove", 1e-4), (1.0, 0.1, 3, "add", 2e-3), (2.0, 1.0, 1, "remove", 1e-2)]


@pytest.mark.parametrize("sigma,q,k,direction,h", _STEP_CASES)
def test_step_tail_and_grid_point_accuracy_assumptions_hold(sigma, q, k, direction, h):
    """The two assumptions of rerokit.bounds.pld.step, measured against mpmath at 40 points of one
    step's grid: (i) each computed tail within NDTR_ULPS u (tail + sum_c w_c |a_c| phi(a_c)) (+ the
    weights' bound) of the exact tail at the computed point, with a factor 2 to spare; (ii) the
    computed point's exact loss within LOSS_POINT_ULPS u (1 + max |l|) of the grid value, with a
    factor 4 to spare."""
    import mpmath as mp
    from rerokit.bounds.pld import step

    mp.mp.dps = 40
    u = 2.0 ** -53
    lo, hi = step.loss_range(sigma, q, direction, LOG_TAU - math.log(1000), k)
    l = np.arange(math.floor(lo / h), math.ceil(hi / h) + 1) * h
    *tails, x = step._tails_at(l, sigma, q, direction, k)
    comp_p, comp_q, rel_w = step._components(sigma, q, direction, k)
    mp_p, mp_q, loss = mp_pair(sigma, q, k, direction)
    s = mp.mpf(sigma)
    for i in np.unique(np.linspace(0, l.size - 1, 40).astype(int)):
        if not np.isfinite(x[i]):
            continue
        xm = mp.mpf(float(x[i]))

        def above(comps):
            return mp.fsum(w * mp.erfc((xm - m) / s / mp.sqrt(2)) / 2 for w, m in comps)

        def below(comps):
            return mp.fsum(w * mp.erfc((m - xm) / s / mp.sqrt(2)) / 2 for w, m in comps)

        if direction == "add":  # L decreasing in x: L > l  <=>  X < x
            exact = (below(mp_p), above(mp_p), below(mp_q), above(mp_q))
        else:
            exact = (above(mp_p), below(mp_p), above(mp_q), below(mp_q))
        slack_p = float(step._arg_slack(x[i:i + 1], sigma, comp_p)[0])
        slack_q = float(step._arg_slack(x[i:i + 1], sigma, comp_q)[0])
        for got, ex, sl in zip(tails, exact, (slack_p, slack_p, slack_q, slack_q)):
            bound = (step.NDTR_ULPS * u + rel_w) * float(ex) + step.NDTR_ULPS * u * sl
            assert abs(mp.mpf(float(got[i])) - ex) <= bound / 2 + 1e-300
        eta = abs(loss(xm) - mp.mpf(float(l[i])))
        assert eta <= step.LOSS_POINT_ULPS * u * (1.0 + float(np.max(np.abs(l)))) / 4


@pytest.mark.parametrize("sigma,q,k,direction,h", _STEP_CASES[:4])
def test_step_masses_are_rounded_in_the_safe_stochastic_order(sigma, q, k, direction, h):
    """Every suffix sum (mass of the buckets >= a label) of the stored statistic is <= the exact
    one under P and >= under Q, and the stored split (with +infinity) is >= the exact
    connect-the-dots split of the same cells onto the grid points widened by the loss error
    (exact cell masses in mpmath at the computed points), so the tests S >= s and the dominating
    PLD need no allowance for the masses' rounding."""
    import mpmath as mp
    from rerokit.bounds.pld import step

    mp.mp.dps = 40
    log_tau = LOG_TAU - math.log(1000)
    st = dpsgd_step_pld(sigma, q, h, direction, log_tau, k)
    lo, hi = step.loss_range(sigma, q, direction, log_tau, k)
    l = np.arange(math.floor(lo / h), math.ceil(hi / h) + 1) * h
    *_, x = step._tails_at(l, sigma, q, direction, k)
    mp_p, mp_q, _ = mp_pair(sigma, q, k, direction)
    decreasing = direction == "add"  # the cells in x run the other way for add
    ep, eq_ = mp_cells(mp_p, x, sigma, decreasing), mp_cells(mp_q, x, sigma, decreasing)
    for stored, exact, below in ((st.stat_p, ep, True), (st.stat_q, eq_, False)):
        assert len(stored) == len(exact)
        got = mp_suffixes([mp.mpf(float(v)) for v in stored])
        for g, e in zip(got, mp_suffixes(exact)):
            assert (g <= e) if below else (g >= e)
    # the exact split, atoms widened by each bucket's loss error eta_j (<= StepPLD.loss_shift / 2)
    exact_split, etas = mp_exact_split(ep, eq_, l, h, step.LOSS_POINT_ULPS)
    assert all(2 * eta <= st.loss_shift for eta in etas)
    got = mp_suffixes([mp.mpf(float(v)) for v in st.split] + [mp.mpf(st.inf_mass)])
    for g, e in zip(got, mp_suffixes(exact_split)):
        assert g >= e
    # and the rounding moved almost nothing: relative 1e-8 of each suffix (1e-290 absolute)
    for g, e in zip(got, mp_suffixes(exact_split)):
        assert g - e <= 1e-8 * e + 1e-290
