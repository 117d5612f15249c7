"""The optimal analytic attack on real Opacus DP-SGD (batch size 1) against paper 004's laws."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from rerokit.attacks import analytic as A
from rerokit.executors import RunOptions
from rerokit.experiments.analytic import AnalyticConfig, run_analytic_attack  # moved from rerokit.attacks.analytic
from rerokit.bounds import uninformed as U
from rerokit.data import load_dataset


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits")


def test_opacus_release_is_clipped_gradient_plus_noise_with_known_scale():
    # Independent of rerokit's estimator: the released gradient equals beta * 1 x^T (sigma = 0)
    # with beta = min(1, C / (sqrt(M)||x|| + 1e-6)) (Opacus' clipping), and with sigma > 0 the
    # residual has std sigma * C (DPOptimizer noise, expected_batch_size = 1).
    x = np.array([0.3, 0.4, 1.2, 0.0])  # ||x|| = 1.3
    M, C = 3, 1.0
    att = A.OpacusAnalyticAttack(4, M, 0.0, C)
    g, beta, norm = att.privatized_step(x, A.target_generator(0, 0))
    assert norm == pytest.approx(math.sqrt(M) * 1.3, rel=1e-12)
    assert beta == pytest.approx(C / (math.sqrt(M) * 1.3 + 1e-6), rel=1e-12)
    np.testing.assert_allclose(g, beta * np.tile(x, (M, 1)), rtol=1e-12, atol=1e-15)
    sigma = 0.7
    att = A.OpacusAnalyticAttack(4, 50, sigma, C)
    res = np.concatenate([(att.privatized_step(x, A.target_generator(1, i))[0] - beta * 0).ravel() for i in range(40)])
    beta50 = C / (math.sqrt(50) * 1.3 + 1e-6)
    resid = res - np.tile(beta50 * x, 50 * 40)
    assert resid.std() == pytest.approx(sigma * C, rel=0.05)  # 8000 draws
    assert abs(resid.mean()) < 5 * sigma * C / math.sqrt(resid.size)


@pytest.mark.parametrize("M,C,sigma", [(1, 1.0, 0.5), (4, 20.0, 0.3), (30, 2.0, 1.0)])
def test_opacus_loop_equals_vectorised_torch_func_path(digits, M, C, sigma):
    X = digits.flat[:25].astype(np.float64)
    a = A.OpacusAnalyticAttack(64, M, sigma, C, seed=11).run(X)
    b = A.vectorized_analytic_attack(X, M, sigma, C, seed=11)
    np.testing.assert_allclose(a.reconstructions, b.reconstructions, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.clip_factors, b.clip_factors, rtol=1e-12)
    np.testing.assert_allclose(a.variances, b.variances, rtol=1e-12)
    # resuming from index 10 reproduces the same targets
    c = A.vectorized_analytic_attack(X[10:], M, sigma, C, seed=11, indices=np.arange(10, 25))
    np.testing.assert_allclose(c.reconstructions, b.reconstructions[10:], rtol=1e-12, atol=1e-12)


def test_no_noise_recovers_target_exactly(digits):
    X = digits.flat[:10].astype(np.float64)
    for backend in ("opacus", "vmap"):
        if backend == "opacus":
            r = A.OpacusAnalyticAttack(64, 5, 0.0, 0.5).run(X)
        else:
            r = A.vectorized_analytic_attack(X, 5, 0.0, 0.5)
        np.testing.assert_allclose(r.reconstructions, X, atol=1e-12)
        assert np.all(r.clip_factors < 1)


def _repeat_attack(x, M, sigma, C, runs, seed):
    return A.OpacusAnalyticAttack(x.size, M, sigma, C, seed=seed).run(np.repeat(x[None], runs, axis=0))


@pytest.mark.parametrize("clip_over_norm", [0.5, 1.0, 5.0])
def test_mse_follows_thm2_chi_square_when_rows_follow_prop1(digits, clip_over_norm):
    # 004 Thm 2: MSE ~ (sigma^2 ||X||^2 / N) chi^2_N with M = optimal_rows (Prop. 1, square rule).
    x = digits.flat[7].astype(np.float64)
    nx = float(np.linalg.norm(x))
    sigma, C = 0.05, clip_over_norm * nx
    M = U.optimal_rows(C, nx)
    assert M == max(1, math.ceil(clip_over_norm**2 - 1e-12))
    r = _repeat_attack(x, M, sigma, C, 500, seed=5)
    mse = ((r.reconstructions - x) ** 2).mean(axis=1)
    law = U.mse_distribution(sigma, nx, 64)
    assert stats.kstest(mse, law.cdf).pvalue > 0.01
    assert mse.mean() == pytest.approx(U.expected_mse(sigma, nx), rel=0.05)


def test_one_row_with_large_clip_adds_overproportional_noise(digits):
    # M = 1 and C = 10 ||X||: no clipping, variance sigma^2 C^2 = 100 x the optimum.
    x = digits.flat[3].astype(np.float64)
    nx = float(np.linalg.norm(x))
    sigma, C = 0.05, 10 * nx
    r = _repeat_attack(x, 1, sigma, C, 500, seed=6)
    mse = ((r.reconstructions - x) ** 2).mean(axis=1)
    assert np.all(r.clip_factors == 1.0)
    assert mse.mean() > 50 * U.expected_mse(sigma, nx)
    # it follows the chi-square law with the larger scale (Eq. 17 with beta = 1) ...
    assert stats.kstest(mse, stats.chi2(df=64, scale=(sigma * C) ** 2 / 64).cdf).pvalue > 0.01
    # ... and not the optimal law
    assert stats.kstest(mse, U.mse_distribution(sigma, nx, 64).cdf).pvalue < 1e-10
    # Prop. 1's printed rule ceil(C/r) = 10 rows is still not enough: variance C^2 sigma^2 / 10
    r10 = _repeat_attack(x, U.rows_prop1_as_printed(C, nx), sigma, C, 200, seed=7)
    mse10 = ((r10.reconstructions - x) ** 2).mean(axis=1)
    assert mse10.mean() > 5 * U.expected_mse(sigma, nx)


def test_sample_ncc_within_prop6_bound(digits):
    x = digits.flat[11].astype(np.float64)
    nx = float(np.linalg.norm(x))
    for sigma in (0.02, 0.1, 0.5):
        r = _repeat_attack(x, 1, sigma, 0.5 * nx, 300, seed=8)
        ncc = A.reconstruction_metrics(np.repeat(x[None], 300, 0), r.reconstructions, data_range=1.0)["ncc"]
        se = ncc.std(ddof=1) / math.sqrt(ncc.size)
        assert ncc.mean() <= U.ncc_bound(sigma, 64) + 3 * se
        # Prop. 6's left side with the target's own variance is the sharper prediction
        assert ncc.mean() <= U.ncc_value(sigma, nx, float(x.var())) + 3 * se + 0.02


def test_nonprivate_division_attack_is_exact(digits):
    X = digits.flat[:30].astype(np.float64)
    rec = A.nonprivate_division_attack(X, digits.y[:30], hidden=16, seed=1)
    np.testing.assert_allclose(rec, X, atol=1e-10)
    with pytest.raises(ValueError, match="bias gradient"):
        A.division_attack(np.ones((2, 3)), np.zeros(2))


def test_metrics_against_independent_implementations(digits):
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    rng = np.random.default_rng(0)
    X = digits.flat[:5].astype(np.float64)
    Xh = X + rng.normal(0, 0.1, X.shape)
    m = A.reconstruction_metrics(X, Xh, data_range=1.0, image_shape=(1, 8, 8))
    for i in range(5):
        assert m["mse"][i] == pytest.approx(np.mean((X[i] - Xh[i]) ** 2), rel=1e-12)
        assert m["psnr"][i] == pytest.approx(peak_signal_noise_ratio(X[i], Xh[i], data_range=1.0), rel=1e-10)
        assert m["ncc"][i] == pytest.approx(np.corrcoef(X[i], Xh[i])[0, 1], rel=1e-10)
        ref = structural_similarity(X[i].reshape(8, 8), Xh[i].reshape(8, 8), data_range=1.0, win_size=7)
        assert m["ssim"][i] == pytest.approx(ref, rel=1e-10)
    same = A.reconstruction_metrics(X, X.copy(), data_range=1.0, image_shape=(1, 8, 8))
    np.testing.assert_allclose(same["ssim"], 1.0)
    np.testing.assert_allclose(same["ncc"], 1.0)
    assert "ssim" not in A.reconstruction_metrics(X[:, :4], X[:, :4], data_range=1.0)


def test_run_analytic_attack_matches_predictions(digits):
    X = digits.flat[:400].astype(np.float64)
    r0 = U.min_nonzero_norm(digits.flat)
    sigma, C = 0.05, 1.0
    eta = float(np.median(sigma**2 * np.linalg.norm(X, axis=1) ** 2))
    out = run_analytic_attack(X, AnalyticConfig(noise_multiplier=sigma, clip=C, mse_threshold=eta, backend="vmap"),
                              seed=2, image_shape=(1, 8, 8), min_norm=r0)
    assert out["settings"]["rows"] == U.optimal_rows(C, r0) == 1
    # mean MSE against the predicted expectation (Prop. 2), 5 standard errors
    mse = np.array(out["per_target"]["mse"])
    assert abs(mse.mean() - out["predicted_expected_mse"]) < 5 * mse.std(ddof=1) / math.sqrt(mse.size)
    lo, hi = out["empirical_success_ci"]
    assert lo - 0.02 <= out["predicted_success"] <= hi + 0.02
    # every target has ||X|| >= r0: the Prop. 3 bound is above the predicted success
    assert out["predicted_gamma"] >= out["predicted_success"]
    assert out["mean_ncc"] <= out["ncc_bound"]
    assert set(out["per_target"]) >= {"mse", "psnr", "ncc", "ssim", "variance"}


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="noise_multiplier"):
        A.OpacusAnalyticAttack(4, 1, float("nan"), 1.0)
    with pytest.raises(ValueError, match="rows"):
        A.vectorized_analytic_attack(np.ones((2, 4)), 0, 0.1, 1.0)
    with pytest.raises(ValueError, match="backend"):
        run_analytic_attack(np.ones((2, 4)), AnalyticConfig(noise_multiplier=0.1, clip=1.0, backend="jax"))
    with pytest.raises(ValueError, match="noise_multiplier \\* clip"):
        AnalyticConfig(noise_multiplier=1e60, clip=1e60)
    with pytest.raises(ValueError, match="log"):
        run_analytic_attack(np.ones((2, 4)), AnalyticConfig(noise_multiplier=0.1, clip=1.0),
                            options=RunOptions(out="x.jsonl"))
    assert isinstance(A.target_generator(1, 2), torch.Generator)
