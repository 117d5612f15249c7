"""Tests of rerokit.bounds.uninformed (paper 004) against scipy closed forms, Monte Carlo
simulations of the Gaussian mechanism (numpy only) and the reference value of the issue."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import special, stats

from rerokit.bounds import uninformed as u


# ----------------------------------------------------------------- reference value


def test_reference_value_issue_3072_dims():
    # Issue 3 reference: C <= min||X||, sigma = 0.1, C = 1, N = 3072: P(MSE <= 0.01) = 0.5034
    # (4 digits). Independent check: Gamma_R(1536, 1536) from scipy.
    b = u.mse_rero(0.01, 0.1, 3072, clip=1.0)
    assert b.value == pytest.approx(0.5034, abs=5e-5)
    assert b.value >= special.gammainc(1536, 1536)
    assert b.value - special.gammainc(1536, 1536) <= b.error + 1e-15
    assert "assumption" in b.extras


# ----------------------------------------------------------------- Thm 2: exact law of the MSE


@pytest.mark.parametrize("n,sigma,norm", [(1, 1.0, 1.0), (4, 0.3, 2.0), (64, 0.05, 3.7), (3072, 0.1, 1.0)])
def test_mse_cdf_matches_scipy_chi2(n, sigma, norm):
    v = sigma**2 * norm**2
    etas = v * np.array([0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 5.0])
    ours = u.mse_cdf(etas, sigma, norm, n)
    ref = stats.chi2.cdf(n * etas / v, df=n)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-14)
    d = u.mse_distribution(sigma, norm, n)
    np.testing.assert_allclose(d.cdf(etas), ref, rtol=1e-10, atol=1e-14)
    assert d.mean() == pytest.approx(u.expected_mse(sigma, norm), rel=1e-12)
    assert d.mean() == pytest.approx(v, rel=1e-12)  # Prop. 2, Eq. 21
    p = np.array([0.01, 0.3, 0.5, 0.99])
    np.testing.assert_allclose(u.mse_quantile(p, sigma, norm, n), v / n * stats.chi2.ppf(p, df=n), rtol=1e-9)
    np.testing.assert_allclose(u.mse_cdf(u.mse_quantile(p, sigma, norm, n), sigma, norm, n), p, rtol=1e-9)


def test_mse_law_against_monte_carlo_gaussian_mechanism():
    # Simulate X_hat = X + N(0, sigma^2 ||X||^2 I) (Eq. 20) and compare with Thm 2 by a KS test.
    rng = np.random.default_rng(1)
    n, sigma = 16, 0.2
    X = rng.random(n)
    nx = float(np.linalg.norm(X))
    Xh = X + rng.normal(0, sigma * nx, size=(4000, n))
    mse = ((Xh - X) ** 2).mean(axis=1)
    res = stats.kstest(mse, u.mse_distribution(sigma, nx, n).cdf)
    assert res.pvalue > 0.01
    assert mse.mean() == pytest.approx(sigma**2 * nx**2, rel=0.05)


def test_normal_limit_approaches_exact_cdf():
    # Prop. B.3: the normal limit converges to the chi-square CDF; Berry-Esseen rate O(1/sqrt(N)).
    errs = []
    for n in (10, 100, 1000, 100000):
        v = 0.01
        etas = v * (1 + np.linspace(-4, 4, 81) * math.sqrt(2 / n))
        etas = etas[etas > 0]
        exact = u.mse_cdf(etas, 0.1, 1.0, n)
        approx = u.mse_normal_limit_cdf(etas, 0.1, 1.0, n)
        errs.append(float(np.max(np.abs(exact - approx))))
    assert errs == sorted(errs, reverse=True)
    assert errs[-1] < 2e-3
    for e, n in zip(errs, (10, 100, 1000, 100000)):
        assert e < 0.5 / math.sqrt(n)


# ----------------------------------------------------------------- Prop. 3: ReRo for the MSE


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 5000),
    sigma=st.floats(1e-3, 10),
    r=st.floats(1e-2, 10),
    factor=st.floats(1.0, 5.0),
    q=st.floats(0.01, 3.0),
)
@example(n=74, sigma=1.5, r=1.0, factor=1.0000000000000002, q=0.5625)  # gamma' was 1 ulp below gamma
def test_prop3_gamma_bounds_every_target_and_is_safe(n, sigma, r, factor, q):
    eta = q * sigma**2 * r**2
    b = u.mse_rero(eta, sigma, n, min_norm=r)
    exact_min = stats.chi2.cdf(n * eta / (sigma**2 * r**2), df=n)
    assert b.value >= exact_min  # never below the exact value
    assert b.value - exact_min <= b.error + 1e-11 * exact_min + 1e-300
    # every target with ||X|| >= r has P(MSE <= eta) <= gamma (Eq. 24)
    assert u.mse_cdf(eta, sigma, r * factor, n) <= b.value
    # data-independent gamma' with C <= r is larger (Prop. 3, last part)
    c = r / factor
    b2 = u.mse_rero(eta, sigma, n, min_norm=r, clip=c)
    assert b2.extras["gamma_data_independent"] >= b.value
    assert b2.value == b.value


def test_prop3_underflow_keeps_a_positive_value_and_log():
    b = u.mse_rero(1e-6, 1.0, 3072, min_norm=1.0)
    assert b.value > 0
    # log of the series against mpmath's arbitrary-precision regularized gamma (independent)
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        ref = float(mpmath.log(mpmath.gammainc(1536, 0, 3072 * 1e-6 / 2, regularized=True)))
    assert b.extras["log_value"] == pytest.approx(ref, rel=1e-12)
    assert u.log_regularized_gamma_p(3.0, 0.5) == pytest.approx(math.log(special.gammainc(3.0, 0.5)), rel=1e-12)


# ----------------------------------------------------------------- Props. 4-5: PSNR


def test_psnr_rero_equals_mse_rero_at_transformed_threshold_and_bounds_monte_carlo():
    n, sigma, r, R = 64, 0.05, 2.0, 1.0
    for db in (10.0, 20.0, 25.0):
        eta_t = 10 ** (-db / 10) * R**2
        b = u.psnr_rero(db, R, sigma, n, min_norm=r)
        assert b.value == u.mse_rero(eta_t, sigma, n, min_norm=r).value
        assert b.extras["mse_threshold"] == pytest.approx(eta_t, rel=1e-15)
    # Monte Carlo: targets in [0, 1]^n with norm >= r; PSNR with peak max(X)-min(X) <= R
    rng = np.random.default_rng(2)
    X = rng.random(n)
    X *= max(1.0, r / np.linalg.norm(X))
    X = np.clip(X, 0, 1)
    nx = float(np.linalg.norm(X))
    assert nx >= r
    Xh = X + rng.normal(0, sigma * nx, size=(20000, n))
    mse = ((Xh - X) ** 2).mean(axis=1)
    psnr = 10 * np.log10((X.max() - X.min()) ** 2 / mse)
    for db in (8.0, 10.0, 12.0):
        emp = float((psnr >= db).mean())
        exact = u.psnr_sf(db, X.max() - X.min(), sigma, nx, n)
        se = math.sqrt(max(exact * (1 - exact), 1e-4) / psnr.size)
        assert abs(emp - exact) < 5 * se + 1e-3
        assert exact <= u.psnr_rero(db, R, sigma, n, min_norm=r).value


def test_psnr_pdf_integrates_to_sf():
    from scipy.integrate import quad

    args = (1.0, 0.1, 2.0, 16)
    tot, _ = quad(lambda s: u.psnr_pdf(s, *args), -40, 80, limit=200)
    assert tot == pytest.approx(1.0, abs=1e-6)
    part, _ = quad(lambda s: u.psnr_pdf(s, *args), 10.0, 80, limit=200)
    assert part == pytest.approx(u.psnr_sf(10.0, *args), abs=1e-6)


# ----------------------------------------------------------------- Prop. 6: NCC


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 200), sigma=st.floats(1e-3, 5), seed=st.integers(0, 10**6))
def test_ncc_value_below_data_free_bound(n, sigma, seed):
    X = np.random.default_rng(seed).normal(size=n) + 0.3
    var = float(X.var())
    if var <= 0:
        return
    assert u.ncc_value(sigma, float(np.linalg.norm(X)), var) <= u.ncc_bound(sigma, n) + 1e-15


def test_ncc_value_matches_large_sample_correlation():
    # Prop. 6 treats the coordinates as draws of x; for large N the sample NCC converges to it.
    rng = np.random.default_rng(3)
    n, sigma = 200000, 0.003
    X = rng.random(n)
    nx = float(np.linalg.norm(X))
    Xh = X + rng.normal(0, sigma * nx, size=n)
    emp = float(np.corrcoef(X, Xh)[0, 1])
    assert emp == pytest.approx(u.ncc_value(sigma, nx, float(X.var())), abs=5e-3)
    assert emp <= u.ncc_bound(sigma, n) + 5e-3


# ----------------------------------------------------------------- Eqs. 16-17, Prop. 1, Prop. B.2


def _simulate_estimator(X, sigma, C, M, d, rng, reps):
    """Eq. 11: grad~_Wj = beta d_j X + N(0, C^2 sigma^2 I); Eq. 16 estimator."""
    g = math.sqrt(float(np.sum(d**2))) * np.linalg.norm(X)
    beta = u.clipping_factor(g, C)
    out = np.empty((reps, X.size))
    for i in range(reps):
        noisy = beta * d[:, None] * X[None, :] + rng.normal(0, C * sigma, size=(M, X.size))
        out[i] = u.estimate_from_gradients(noisy, beta * d)
    return out


@pytest.mark.parametrize("C,M", [(0.5, 1), (4.0, 1), (4.0, 4), (4.0, 16), (4.0, 40)])
def test_estimator_variance_eq17_by_simulation(C, M):
    rng = np.random.default_rng(4)
    X = np.array([0.6, 0.8, 0.0])  # ||X|| = 1
    sigma = 0.5
    est = _simulate_estimator(X, sigma, C, M, np.ones(M), rng, 3000)
    v = u.estimator_variance(1.0, sigma, C, M)
    assert v == pytest.approx(sigma**2 * max(1.0, C**2 / M), rel=1e-12)
    # unbiased, per-coordinate variance v (chi-square CI on the variance, 3000*3 draws)
    assert np.abs(est.mean(axis=0) - X).max() < 5 * math.sqrt(v / 3000)
    assert est.var(axis=0, ddof=1).mean() == pytest.approx(v, rel=0.06)


def test_prop1_optimal_rows_minimise_variance_and_printed_rule_does_not():
    sigma = 1.0
    for C, r in [(4.0, 1.0), (10.0, 1.0), (0.5, 1.0), (3.0, 0.7), (math.sqrt(100) * 0.3, 0.3)]:
        m = u.optimal_rows(C, r)
        assert u.estimator_variance(r, sigma, C, m) == pytest.approx(sigma**2 * r**2, rel=1e-12)
        if m > 1:  # one row fewer is not enough
            assert u.estimator_variance(r, sigma, C, m - 1) > sigma**2 * r**2 * (1 + 1e-12)
        # any norm >= r is also at its minimum sigma^2 ||X||^2
        assert u.estimator_variance(2 * r, sigma, C, m) == pytest.approx(sigma**2 * 4 * r**2, rel=1e-12)
    assert u.optimal_rows(math.sqrt(100) * 0.3, 0.3) == 100  # Fig. 2 second row: C = sqrt(M) r
    # printed Eq. 18 (ceil(C/r)) leaves the gradient unclipped when C > r:
    assert u.rows_prop1_as_printed(4.0, 1.0) == 4
    assert u.estimator_variance(1.0, 1.0, 4.0, 4) == pytest.approx(4.0)


def test_prop_b2_unequal_output_gradients_or_extra_gradient_only_add_variance():
    rng = np.random.default_rng(5)
    for _ in range(50):
        M = int(rng.integers(1, 20))
        d = rng.uniform(0.1, 3.0, size=M)
        nx, C, s = float(rng.uniform(0.1, 3)), float(rng.uniform(0.1, 5)), float(rng.uniform(0.01, 2))
        rest = float(rng.uniform(0, 3))
        v = u.estimator_variance(nx, s, C, M, output_grads=d, rest_norm=rest)
        assert v >= s**2 * nx**2 * (1 - 1e-12)
    # equal d_j and no rest attain the minimum once clipped (Prop. 1)
    assert u.estimator_variance(1.0, 0.3, 1.0, 5, output_grads=np.full(5, 2.0)) == pytest.approx(0.09)


# ----------------------------------------------------------------- several releases


def test_averaging_k_releases_divides_variance_by_k():
    rng = np.random.default_rng(6)
    X = rng.random(8)
    nx, sigma, k = float(np.linalg.norm(X)), 0.3, 5
    avg = (X + rng.normal(0, sigma * nx, size=(4000, k, 8))).mean(axis=1)
    assert avg.var(axis=0, ddof=1).mean() == pytest.approx(u.averaged_variance(sigma, nx, k), rel=0.05)
    mse = ((avg - X) ** 2).mean(axis=1)
    assert stats.kstest(mse, u.mse_distribution(sigma, nx, 8, releases=k).cdf).pvalue > 0.01
    assert u.ncc_bound(sigma, 8, releases=k) == pytest.approx(math.sqrt(1 / (1 + sigma**2 * 8 / k)))


def test_prob_used_k_times_is_binomial():
    T, q = 30, 0.1
    ks = np.arange(T + 1)
    ref = np.array([math.comb(T, k) * q**k * (1 - q) ** (T - k) for k in ks])
    np.testing.assert_allclose(u.prob_used_k_times(ks, T, q), ref, rtol=1e-10, atol=1e-300)
    assert float(np.sum(u.prob_used_k_times(ks, T, q))) == pytest.approx(1.0)


def test_over_steps_mixture_against_direct_sum():
    eta, sigma, n, r, T, q = 0.02, 0.1, 100, 1.0, 12, 0.3
    direct = sum(
        math.comb(T, k) * q**k * (1 - q) ** (T - k) * (special.gammainc(n / 2, n * k * eta / (2 * sigma**2 * r**2)) if k else 0.0)
        for k in range(T + 1)
    )
    b = u.mse_rero_over_steps(eta, sigma, n, T, q, min_norm=r)
    assert b.value >= direct
    assert b.value - direct <= b.error + 1e-15
    assert b.value == pytest.approx(direct, rel=1e-9, abs=1e-14)
    # T = 1, q = 1: exactly one release, equals Prop. 3
    one = u.mse_rero_over_steps(eta, sigma, n, 1, 1.0, min_norm=r)
    assert one.value == pytest.approx(u.mse_rero(eta, sigma, n, min_norm=r).value, rel=1e-9)
    # more steps can only help the adversary
    vals = [u.mse_rero_over_steps(eta, sigma, n, t, q, min_norm=r).value for t in (1, 5, 20, 100)]
    assert vals == sorted(vals)


# ----------------------------------------------------------------- calibration


@pytest.mark.parametrize("target", [0.5, 0.05, 1e-3])
def test_calibration_mse_and_psnr(target):
    n, r, eta = 64, 2.0, 0.01
    b = u.calibrate_noise_mse(eta, target, n, min_norm=r)
    assert u.mse_rero(eta, b.value, n, min_norm=r).value <= target
    assert u.mse_cdf(eta, b.value * (1 - 1e-6), r, n) > target  # smallest such sigma
    p = u.calibrate_noise_psnr(20.0, 1.0, target, n, min_norm=r)
    assert p.value == pytest.approx(b.value, rel=1e-8)  # 20 dB with R = 1 is MSE 0.01
    assert u.psnr_rero(20.0, 1.0, p.value, n, min_norm=r).value <= target


# ----------------------------------------------------------------- validation, no torch


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: u.mse_rero(float("nan"), 0.1, 10, min_norm=1.0), "eta"),
        (lambda: u.mse_rero(0.1, -1.0, 10, min_norm=1.0), "noise_multiplier"),
        (lambda: u.mse_rero(0.1, 0.1, 0, min_norm=1.0), "dim"),
        (lambda: u.mse_rero(0.1, 0.1, 10), "min_norm"),
        (lambda: u.mse_rero(0.1, 0.1, 10, min_norm=0.0), "min_norm"),
        (lambda: u.mse_rero(0.1, 0.1, 10, min_norm=1.0, releases=0), "releases"),
        (lambda: u.psnr_rero(20.0, float("inf"), 0.1, 10, min_norm=1.0), "data_range"),
        (lambda: u.optimal_rows(1.0, 0.0), "min_norm"),
        (lambda: u.calibrate_noise_mse(0.1, 1.0, 10, min_norm=1.0), "target_gamma"),
        (lambda: u.mse_rero_over_steps(0.1, 0.1, 10, 5, 1.5, min_norm=1.0), "sampling_rate"),
        (lambda: u.min_nonzero_norm(np.zeros((3, 4))), "non-zero"),
    ],
)
def test_bad_input_names_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_min_nonzero_norm_skips_zero_records():
    X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 2.0]])
    assert u.min_nonzero_norm(X) == 2.0


def test_module_does_not_import_torch():
    code = "import sys, rerokit.bounds.uninformed; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_estimator_variance_tiny_clip_has_no_nan():
    # C / beta_C = max(C, ||G||): at C = 1e-300 the clip factor underflows, but the variance is
    # exactly sigma^2 ||G||^2 / M^2 summed over rows = sigma^2 ||X||^2 for Cor. 1's loss.
    from rerokit.bounds.uninformed import estimator_variance

    v = estimator_variance(2.0, 0.1, 1e-300, rows=4)
    assert v == pytest.approx(0.1**2 * 2.0**2, rel=1e-12)
    assert estimator_variance(2.0, 0.1, 3.0, rows=1) == pytest.approx(0.1**2 * 3.0**2, rel=1e-12)
