"""Tests of the DP-SGD ReRo bound (Hayes et al. 2023, Thm 2 / Cor. 3) against independent
computations: the one-step Neyman-Pearson closed form and scipy quadrature, the q = 1 Gaussian-DP
closed form, Hayes et al. Table 2 (paper 000, App. H), Monte Carlo (Alg. 1), dp-accounting's own
PLD / RDP accountants, and the README's measured q = 0.1 value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import norm

from rerokit.bounds import conversions as cv
from rerokit.bounds.options import MonteCarlo, Numerics
from rerokit.bounds.dpsgd import (
    RDP_ORDERS,
    dpsgd_pld,
    epsilon_from_pld,
    rdp_curve_subsampled_gaussian,
    rdp_poisson_gaussian,
    rero_dpsgd,
)


def exact(sigma, q, T, kappa, **kw):
    return rero_dpsgd(sigma, q, T, kappa, comparisons=False, **kw)


def one_step_truth(sigma, q, kappa):
    """T = 1: the likelihood ratio is increasing in x, so the Neyman-Pearson region at level kappa
    is {x > t} with nu(x > t) = kappa, and gamma = mu(x > t) = (1-q) kappa + q Phi((1 - t)/sigma)."""
    t = sigma * norm.isf(kappa)
    return (1 - q) * kappa + q * norm.sf((t - 1) / sigma), t


# ----------------------------------------------------------------------------- T = 1, exact truth


@pytest.mark.parametrize(
    "sigma,q,kappa",
    [(1.0, 0.01, 0.01), (0.5, 0.3, 0.1), (2.0, 0.5, 0.5), (0.7, 1.0, 0.1), (3.0, 1.0, 0.01), (1.0, 0.9, 1e-4)],
)
def test_single_step_brackets_neyman_pearson_truth(sigma, q, kappa):
    truth, t = one_step_truth(sigma, q, kappa)
    # independent route: integrate the mixture density over {x > t} with scipy quadrature
    dens = lambda x: (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)  # noqa: E731
    quad = integrate.quad(dens, t, t + 40 * sigma, epsabs=1e-14, epsrel=1e-12)[0]
    assert quad == pytest.approx(truth, abs=1e-10)
    b = exact(sigma, q, 1, kappa)
    lo, hi = b.interval
    assert lo <= truth + 1e-12 and truth <= b.value + 1e-12  # certified bracket holds the truth
    assert b.value - truth <= b.error + 1e-12
    assert b.error < 1e-4


def test_pld_direction_is_remove_log_mixture_over_null():
    """The one-step discrete PLD must be that of L = log(mixture / N(0)) under the mixture: its
    mean is KL(mu || nu), computed here by quadrature (and differs from the ADD direction)."""
    sigma, q = 1.0, 0.3
    L = lambda x: np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * sigma**2))  # noqa: E731
    mix = lambda x: (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)  # noqa: E731
    kl = integrate.quad(lambda x: mix(x) * L(x), -30, 30, epsabs=1e-13)[0]
    pld = dpsgd_pld([(sigma, q, 1)], 1e-4, lower=False, add_direction=True)
    mean_remove = float(pld.upper.pmf @ pld.upper.losses)
    mean_add = float(pld.add.pmf @ pld.add.losses)
    assert mean_remove == pytest.approx(kl, abs=2e-4)
    assert abs(mean_add - kl) > 1e-3


# ----------------------------------------------------------------------------- q = 1 closed form


@pytest.mark.parametrize("sigma,T,kappa", [(1.0, 1, 0.1), (2.0, 10, 0.01), (0.8, 3, 0.5), (5.0, 100, 1e-4), (1.0, 50, 1e-8)])
def test_full_batch_exact_vs_closed_form(sigma, T, kappa):
    cf = rero_dpsgd(sigma, 1.0, T, kappa, method="closed-form", comparisons=False)
    ex = exact(sigma, 1.0, T, kappa)
    assert cf.error == 0.0 and cf.method == "closed-form"
    assert cf.value == pytest.approx(cv.rero_from_gdp(math.sqrt(T) / sigma, kappa), rel=1e-12)
    assert ex.value >= cf.value - 1e-12  # the PLD value is a certified upper bound
    assert ex.value - cf.value <= ex.error + 1e-12  # and the truth lies in its bracket
    assert ex.interval[0] <= cf.value + 1e-12


def test_closed_form_rejects_subsampling_and_handles_segments():
    with pytest.raises(ValueError, match="sample_rate"):
        rero_dpsgd(1.0, 0.5, 10, 0.1, method="closed-form")
    b = rero_dpsgd(segments=[(1.0, 1.0, 4), (2.0, 1.0, 8)], kappa=0.1, method="closed-form", comparisons=False)
    assert b.value == pytest.approx(cv.rero_from_gdp(math.sqrt(4 / 1 + 8 / 4), 0.1), rel=1e-12)


# Hayes et al. 2023, App. H, Table 2 ("Ours" rows): advantage (gamma - kappa)/(1 - kappa) of a
# single full-batch step (q = 1, T = 1, sensitivity 1) for a uniform prior of size 10 / 100,
# printed to 3 digits. The paper computed them by Monte Carlo with 100,000 samples (Fig. 11
# caption), so they carry Monte Carlo noise: the exact values differ from the printed ones by up
# to 0.0023 (size 10) and 0.0062 (size 100), all within 2 standard errors of Algorithm 1 at
# N = 1e5 (computed below in closed form). The tolerance is 3 such standard errors + rounding.
TABLE2_SIGMAS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
TABLE2 = {
    10: (0.737, 0.322, 0.189, 0.128, 0.099, 0.080),
    100: (0.362, 0.077, 0.035, 0.024, 0.018, 0.012),
}


def alg1_advantage_se(sigma, kappa, n=100_000):
    """Standard error of Alg. 1's advantage estimate for N(1, s^2) vs N(0, s^2), one step: CLT term
    sqrt((E_nu[r^2 1{x>t}] - gamma^2)/N), E_nu[r^2 1{x>t}] = e^{mu^2} Phi(2 mu - t) with mu = 1/s,
    plus the threshold term r(t) sqrt(kappa(1-kappa)/N) (d gamma / d kappa = r(t))."""
    mu, t = 1.0 / sigma, norm.isf(kappa)
    g = norm.sf(t - mu)
    clt = math.sqrt((math.exp(mu * mu) * norm.sf(t - 2 * mu) - g * g) / n)
    thr = math.exp(mu * t - mu * mu / 2) * math.sqrt(kappa * (1 - kappa) / n)
    return math.hypot(clt, thr) / (1 - kappa)


@pytest.mark.parametrize("size", [10, 100])
def test_hayes_table2_ours_rows(size):
    kappa = 1.0 / size
    for sigma, printed in zip(TABLE2_SIGMAS, TABLE2[size]):
        cf = rero_dpsgd(sigma, 1.0, 1, kappa, method="closed-form", comparisons=False)
        ex = exact(sigma, 1.0, 1, kappa)
        adv_cf = cv.advantage(cf.value, kappa)
        adv_ex = cv.advantage(ex.value, kappa)
        tol = 3 * alg1_advantage_se(sigma, kappa) + 5e-4
        assert adv_cf == pytest.approx(printed, abs=tol), (size, sigma)
        assert adv_ex == pytest.approx(printed, abs=tol), (size, sigma)
        assert abs(ex.value - cf.value) <= max(1e-6, ex.error + 1e-12)  # exact vs closed form
    if size == 10:  # the size-10 row is reproduced to within 0.0023 (max MC deviation)
        advs = [cv.advantage(cv.rero_from_gdp(1 / s, kappa), kappa) for s in TABLE2_SIGMAS]
        assert np.max(np.abs(np.subtract(advs, TABLE2[10]))) < 0.0025


# ----------------------------------------------------------------------------- special functions


def test_normal_cdf_without_scipy_matches_scipy():
    """dpsgd's math.erfc-based Phi (used to keep scipy off the CLI path) vs scipy.special.ndtr,
    including both tails and infinities; the tail quantile is on the safe side."""
    from scipy.special import ndtr, ndtri_exp

    from rerokit.bounds.pld import normal as D

    x = np.concatenate((np.linspace(-38, 38, 2001), [-np.inf, np.inf, 0.0]))
    np.testing.assert_allclose(D.ndtr(x), ndtr(x), rtol=1e-13, atol=1e-300)  # (subnormals below)
    big = np.linspace(-10, 10, D.SCIPY_ABOVE + 10)  # the scipy path for large grids
    np.testing.assert_allclose(D.ndtr(big), ndtr(big), rtol=1e-13)
    for lt in (-1.0, -10.0, -45.0, -300.0):
        z = D.normal_isf_log(lt)
        assert np.log(ndtr(-z)) <= lt and z == pytest.approx(-ndtri_exp(lt), abs=1e-9)


# ----------------------------------------------------------------------------- composition


def test_fft_composition_equals_direct_convolution():
    """The FFT self-/cross-composition on its Chernoff window equals repeated np.convolve (all
    terms non-negative: tiny relative error), within the proven round-off bound; the mass it
    leaves outside the window is within the reported tail bound."""
    from rerokit.bounds.pld import LOG_TAU, compose, dpsgd_step_pld

    h = 1e-2
    a = dpsgd_step_pld(1.0, 0.3, h, "remove", LOG_TAU - math.log(50))
    b = dpsgd_step_pld(2.0, 1.0, h, "remove", LOG_TAU - math.log(50))
    ref = np.array([1.0])
    for _ in range(30):
        ref = np.convolve(ref, a.split)
    for _ in range(20):
        ref = np.convolve(ref, b.split)
    c = compose([(a.j_lo, a.split, 30), (b.j_lo, b.split, 20)], h, LOG_TAU)
    start = c.offset - (30 * a.j_lo + 20 * b.j_lo)
    seg = ref[start : start + c.pmf.size]
    # circular wrap-around adds at most the tail mass to the window entries
    assert np.max(np.abs(seg - c.pmf)) <= c.entry_roundoff + c.tail
    assert np.sum(np.abs(seg - c.pmf)) <= c.roundoff + c.tail
    assert ref.sum() - seg.sum() <= c.tail + 1e-15
    assert c.pmf.size < ref.size / 3  # the window is much narrower than the full support


# ----------------------------------------------------------------------------- benchmark setting


def test_benchmark_setting_accuracy_and_readme_value():
    # q=0.01, sigma=1, T=1000, kappa=0.01: certified bracket narrower than 1e-3 (issue 2)
    b = exact(1.0, 0.01, 1000, 0.01)
    assert b.error <= 1e-3
    assert b.interval[0] <= b.value
    # README (Hayes et al. main text, measured): q=0.1, sigma=1, T=1000, kappa=0.01: true 0.917
    g = exact(1.0, 0.1, 1000, 0.01)
    assert g.value == pytest.approx(0.917, abs=1e-3)
    assert g.error < 1e-3


def test_finer_grid_stays_inside_coarse_bracket():
    """Certified brackets at different grid steps must overlap (all contain the truth)."""
    coarse = exact(1.0, 0.05, 200, 0.05, numerics=Numerics(value_discretization_interval=1e-2))
    fine = exact(1.0, 0.05, 200, 0.05, numerics=Numerics(value_discretization_interval=1e-4))
    assert fine.error < coarse.error
    assert coarse.interval[0] <= fine.value + 1e-12 and fine.interval[0] <= coarse.value + 1e-12


# ----------------------------------------------------------------------------- vs dp-accounting


@pytest.mark.parametrize("sigma,q,T,kappa", [(1.0, 0.1, 50, 0.01), (2.0, 0.3, 20, 0.1)])
def test_gamma_vs_dp_accounting_pld(sigma, q, T, kappa):
    """gamma <= inf_eps e^eps kappa + delta(eps), with delta from dp-accounting's own pessimistic
    (connect-the-dots) REMOVE-direction PLD on a fine eps grid: an independent upper bound."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    pld = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4)
    pmf = pld._pmf_remove.self_compose(T)
    eps = np.arange(-1.0, 8.0, 2e-3)
    deltas = np.asarray(pmf.get_delta_for_epsilon(eps))
    dpacc = float(np.min(np.exp(eps) * kappa + deltas))
    b = exact(sigma, q, T, kappa)
    assert b.interval[0] <= dpacc + 1e-9  # our certified lower bound is below their upper bound
    assert b.value == pytest.approx(dpacc, abs=2e-4)


@pytest.mark.parametrize("segments", [[(1.0, 0.1, 50)], [(1.5, 0.04, 300)], [(0.8, 1.0, 3)], [(1.0, 0.05, 40), (2.0, 0.2, 30)]])
def test_epsilon_vs_dp_accounting(segments):
    from rerokit.accounting.events import epsilon_pld

    pld = dpsgd_pld(segments, None, lower=False, add_direction=True)
    ours = max(epsilon_from_pld(pld.upper, 1e-5), epsilon_from_pld(pld.add, 1e-5))
    ref = epsilon_pld(segments, 1e-5)
    assert ours == pytest.approx(ref, rel=2e-3)


def test_opacus_epsilon_test_vector():
    """Opacus tests/accountants_test.py::test_prv_accountant: sigma=1.5, q=0.04, 2250 steps,
    delta=1e-5 gives 6.777395712150674, an upper estimate with PRV's default eps_error=0.01."""
    b = rero_dpsgd(1.5, 0.04, 2250, 0.01)
    assert b.extras["epsilon"] == pytest.approx(6.777395712150674, abs=0.011)
    assert b.extras["epsilon"] <= 6.777395712150674 + 1e-3


def test_rdp_curve_and_rdp_gamma_vs_dp_accounting():
    """Integer orders: exact binomial sum, equal to dp-accounting's to 1e-9. Fractional orders:
    our quadrature equals scipy.integrate.quad of E_nu[(mu/nu)^alpha] to 1e-7 and is never above
    dp-accounting's fractional series (which is larger, e.g. alpha=1.1, sigma=2, q=0.05:
    4.82e-4 vs the integral's 3.854e-4)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdplib

    ints = [o for o in RDP_ORDERS if float(o).is_integer()]
    fracs = [o for o in RDP_ORDERS if not float(o).is_integer()]
    for sigma, q in [(1.0, 0.01), (0.7, 0.3), (2.0, 1.0), (2.0, 0.05)]:
        ref = rdplib._compute_rdp_poisson_subsampled_gaussian(q, sigma, ints)
        np.testing.assert_allclose(rdp_curve_subsampled_gaussian([(sigma, q, 1)], ints)[1], ref, rtol=1e-9, atol=1e-14)
        ref_f = rdplib._compute_rdp_poisson_subsampled_gaussian(q, sigma, fracs)
        ours_f = rdp_curve_subsampled_gaussian([(sigma, q, 1)], fracs)[1]
        ok = np.isfinite(ref_f)
        assert np.all(ours_f[ok] <= ref_f[ok] * (1 + 1e-9))
    for sigma, q, a in [(2.0, 0.05, 1.1), (0.3, 0.01, 10.9), (1.0, 0.3, 5.5), (0.5, 0.9, 2.5)]:
        lf = lambda x: -x * x / (2 * sigma**2) + a * np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * sigma**2))  # noqa: E731
        m = max(lf(x) for x in np.linspace(-10 * sigma, a + 10 * sigma, 2001))
        A = integrate.quad(lambda x: math.exp(lf(x) - m), -20 * sigma, a + 20 * sigma, epsabs=0, epsrel=1e-13,
                           limit=500, points=[0, a])[0]
        ref = (math.log(A) + m - math.log(sigma * math.sqrt(2 * math.pi))) / (a - 1)
        assert rdp_poisson_gaussian(sigma, q, [a])[0] == pytest.approx(ref, rel=1e-7)
    # the comparison in extras is Balle et al. Thm 2 on that curve (== rero_from_rdp_curve)
    b = rero_dpsgd(1.0, 0.01, 1000, 0.01)
    o, r = rdp_curve_subsampled_gaussian([(1.0, 0.01, 1000)])
    assert b.extras["rdp_gamma"] == pytest.approx(cv.rero_from_rdp_curve(o, r, 0.01)[0], rel=1e-12)
    assert b.extras["rdp_gamma"] >= b.interval[0]  # RDP is a valid (looser) upper bound
    from rerokit.accounting.events import rdp_curve

    o2, r2 = rdp_curve([(1.0, 0.01, 1000)], orders=ints)  # dp-accounting's accountant, same orders
    assert cv.rero_from_rdp_curve(o2, r2, 0.01)[0] >= b.extras["rdp_gamma"] * (1 - 1e-9)


# ----------------------------------------------------------------------------- Monte Carlo


@pytest.mark.parametrize(
    "sigma,q,T,kappa,seed",
    [(2.0, 0.5, 10, 0.1, 1), (1.5, 0.2, 20, 0.05, 2), (1.0, 1.0, 2, 0.1, 3), (3.0, 0.3, 5, 0.2, 4)],
)
def test_exact_within_mc_interval(sigma, q, T, kappa, seed):
    """Hayes et al. Alg. 1 (reliable here: small T, moderate sigma) agrees with the exact bound."""
    ex = exact(sigma, q, T, kappa)
    mc = rero_dpsgd(sigma, q, T, kappa, method=MonteCarlo(samples=40_000, seed=seed), comparisons=False)
    lo, hi = mc.interval
    assert mc.direction == "estimate" and mc.extras["seed"] == seed and mc.extras["mc_samples"] == 40_000
    assert lo - ex.error <= ex.value and ex.interval[0] <= hi + 1e-12
    assert mc.error == pytest.approx((hi - lo) / 2)


def test_mc_is_reproducible_and_needs_enough_samples():
    a = rero_dpsgd(2.0, 0.5, 3, 0.1, method=MonteCarlo(samples=5000, seed=7), comparisons=False)
    b = rero_dpsgd(2.0, 0.5, 3, 0.1, method=MonteCarlo(samples=5000, seed=7), comparisons=False)
    assert a.value == b.value and a.interval == b.interval
    with pytest.raises(ValueError, match="mc_samples"):
        rero_dpsgd(2.0, 0.5, 3, 1e-6, method=MonteCarlo(samples=1000, seed=0))


# ----------------------------------------------------------------------------- schedules


def test_equal_segments_equal_homogeneous():
    h = 1e-3
    one = exact(1.2, 0.05, 300, 0.02, numerics=Numerics(value_discretization_interval=h))
    two = rero_dpsgd(segments=[(1.2, 0.05, 100), (1.2, 0.05, 200)], kappa=0.02, comparisons=False,
                     numerics=Numerics(value_discretization_interval=h))
    assert two.value == pytest.approx(one.value, abs=1e-10)
    assert two.inputs["segments"] == [[1.2, 0.05, 100], [1.2, 0.05, 200]]


def test_heterogeneous_schedule_between_its_homogeneous_bounds_and_from_event():
    from rerokit.accounting.events import schedule_event

    segs = [(1.0, 0.1, 20), (2.0, 0.1, 20)]
    het = rero_dpsgd(segments=segs, kappa=0.05, comparisons=False)
    lo = exact(2.0, 0.1, 40, 0.05)  # all steps noisier
    hi = exact(1.0, 0.1, 40, 0.05)  # all steps less noisy
    assert lo.interval[0] - 1e-12 <= het.value and het.interval[0] <= hi.value + 1e-12
    ev = rero_dpsgd(segments=schedule_event(segs), kappa=0.05, comparisons=False)
    assert ev.value == het.value
    mc = rero_dpsgd(segments=segs, kappa=0.05, method=MonteCarlo(samples=40_000, seed=5), comparisons=False)
    assert mc.interval[0] - het.error <= het.value and het.interval[0] <= mc.interval[1]


# ----------------------------------------------------------------------------- tiny kappa


def test_tiny_kappa_log_space_is_valid_and_flags_floor():
    lk = -1089.0  # kappa ~ 1e-473
    cf = rero_dpsgd(1.0, 1.0, 10, log_kappa=lk, method="closed-form", comparisons=False)
    ex = rero_dpsgd(1.0, 1.0, 10, log_kappa=lk)
    # q = 1: the exact Gaussian-DP closed form answers (issue 17), no PLD floor
    assert ex.extras["floored"] is False and "note" in ex.extras
    assert ex.extras["log_gamma"] >= cf.extras["log_gamma"] - 1e-9  # never below the truth
    assert ex.extras["log_gamma"] == pytest.approx(cf.extras["log_gamma"], rel=1e-12)
    assert ex.value > 0.0
    sub = rero_dpsgd(1.0, 0.01, 100, log_kappa=lk)
    assert sub.extras["floored"] is True and "note" in sub.extras
    assert lk <= sub.extras["log_gamma"] <= ex.extras["log_gamma"] + 1e-9  # q < 1 leaks less
    # moderate-small kappa is resolved by the PLD itself (no floor)
    mid = rero_dpsgd(1.0, 1.0, 10, log_kappa=-20.0)
    cfm = rero_dpsgd(1.0, 1.0, 10, log_kappa=-20.0, method="closed-form", comparisons=False)
    assert mid.extras["floored"] is False
    assert cfm.value <= mid.value <= cfm.value * (1 + 1e-3)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=6, deadline=None)
@given(
    sigma=st.floats(0.6, 4.0),
    q=st.sampled_from([0.02, 0.2, 1.0]),
    T=st.integers(1, 60),
    kappa=st.floats(1e-4, 0.6),
)
def test_properties_bounds_and_monotonicity(sigma, q, T, kappa):
    b = exact(sigma, q, T, kappa)
    lo = b.interval[0]
    assert kappa * (1 - 1e-12) <= lo <= b.value <= 1.0
    # monotone: more kappa, more steps, higher q, less noise -> gamma does not decrease
    for args in ((sigma, q, T, min(1.0, kappa * 1.5)), (sigma, q, T + 5, kappa), (sigma, min(1.0, q * 2), T, kappa),
                 (sigma * 0.8, q, T, kappa)):
        assert exact(*args).value >= lo - 1e-12, args
    if q == 1.0:
        cf = rero_dpsgd(sigma, 1.0, T, kappa, method="closed-form", comparisons=False)
        assert b.value >= cf.value - 1e-12


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(noise_multiplier=-1.0), "noise_multiplier"),
        (dict(noise_multiplier=float("nan")), "noise_multiplier"),
        (dict(sample_rate=0.0), "sample_rate"),
        (dict(sample_rate=1.5), "sample_rate"),
        (dict(steps=0), "steps"),
        (dict(kappa=0.0), "kappa"),
        (dict(kappa=1.2), "kappa"),
        (dict(method="nope"), "method"),
        (dict(log_kappa=-1.0), "kappa"),
    ],
)
def test_bad_arguments_raise_naming_parameter(kw, name):
    args = dict(noise_multiplier=1.0, sample_rate=0.1, steps=10, kappa=0.1)
    args.update(kw)
    with pytest.raises(ValueError, match=name):
        rero_dpsgd(**args)


def test_segments_and_scalars_are_exclusive():
    with pytest.raises(ValueError, match="segments"):
        rero_dpsgd(1.0, 0.1, 10, 0.1, segments=[(1.0, 0.1, 10)])
    with pytest.raises(ValueError, match=r"segments\[0\].sample_rate"):
        rero_dpsgd(segments=[(1.0, 2.0, 10)], kappa=0.1)
