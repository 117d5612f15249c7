"""FIL accounting (Guo et al. 2022): output perturbation by implicit differentiation, DP-SGD Alg. 1."""

import math

import numpy as np
import pytest
import torch
from torch.func import jacrev

from rerokit.attacks.glm import fit_glm
from rerokit.bounds.mse import GELU_CLIP_FACTOR, fil_subsampling_factor
from rerokit.data import load_dataset
from rerokit.training.fil import (
    FILAccountant,
    clipped_grad_fn,
    clipped_grad_jacobian_trace,
    clipped_grad_jacobian_trace_exact,
    dpsgd_fil,
    gelu_clip,
    output_perturbation_dfil,
    output_perturbation_jacobians,
    output_perturbation_trace_inverse_bound,
)
from rerokit.training.models import make_mlp
from rerokit.training.settings import DPSGDSettings
from rerokit.training.fil import FILOptions


def _synthetic(n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    w = rng.standard_normal(d) * 2
    s = X @ w
    p = 1 / (1 + np.exp(-(s - s.mean())))
    ybin = (rng.uniform(size=n) < p).astype(int)
    yreg = X @ w + 0.2 * rng.standard_normal(n)
    return X, ybin, yreg


@pytest.mark.parametrize("model,link_y", [("logistic", "bin"), ("ridge", "reg")])
def test_implicit_jacobian_matches_finite_differences_of_refits(model, link_y):
    # Independent: refit the model with x_t moved by +-h e_j and difference the optima.
    X, ybin, yreg = _synthetic()
    y = ybin if link_y == "bin" else yreg
    l2 = 0.7
    m = fit_glm(X, y, model, l2)
    Js = np.concatenate([J.numpy() for _, J in output_perturbation_jacobians(m, X, y, chunk=7)])
    assert Js.shape == (30, 4, 3)
    h = 1e-5
    for t in (0, 11):
        for j in range(3):
            Xp, Xm = X.copy(), X.copy()
            Xp[t, j] += h
            Xm[t, j] -= h
            fd = (fit_glm(Xp, y, model, l2).theta[0] - fit_glm(Xm, y, model, l2).theta[0]) / (2 * h)
            np.testing.assert_allclose(Js[t, :, j], fd, rtol=1e-5, atol=1e-8)


def test_output_perturbation_dfil_matches_closed_form_logistic():
    # Closed form for logistic regression (as in Hannun et al.'s code, derived independently):
    # J_t = -A (s_t x_t' theta~^T + r_t E), A = H^{-1}, E = [0; I], theta~ = theta without intercept,
    # ||J_t||_F^2 = s^2 ||A x'||^2 ||theta~||^2 + 2 s r x'^T A^2 [0; theta~] + r^2 ||A E||_F^2.
    d = load_dataset("digits")
    X = np.asarray(d.flat, float)
    y = np.asarray(d.y)
    keep = (y == 0) | (y == 1)
    X, y = X[keep][:120], y[keep][:120]
    n = len(y)
    m = fit_glm(X, y, "logistic", n * 1e-2)
    noise = 1e-3
    dfil = output_perturbation_dfil(m, X, y, noise)
    A1 = np.hstack([np.ones((n, 1)), X])
    th = m.theta[0]
    p = 1 / (1 + np.exp(-A1 @ th))
    r, w = p - y, p * (1 - p)
    Ainv = np.linalg.inv((A1 * w[:, None]).T @ A1 + np.diag(m.l2))
    tht = th.copy()
    tht[0] = 0.0
    E = np.vstack([np.zeros((1, 64)), np.eye(64)])
    AX = A1 @ Ainv
    fro = w**2 * np.sum(AX**2, 1) * np.sum(th[1:] ** 2) + 2 * w * r * (AX @ Ainv @ tht) + r**2 * np.sum((Ainv @ E) ** 2)
    np.testing.assert_allclose(dfil, fro / (noise**2 * 64), rtol=1e-9)
    # dFIL scales as 1/noise^2.
    np.testing.assert_allclose(output_perturbation_dfil(m, X, y, 2 * noise), dfil / 4, rtol=1e-12)
    with pytest.raises(ValueError, match="noise_std"):
        output_perturbation_dfil(m, X, y, 0.0)


def test_trace_inverse_bound_is_tighter_and_matches_numpy():
    X, ybin, _ = _synthetic(n=40, d=3, seed=2)
    m = fit_glm(X, ybin, "logistic", 0.5)
    noise = 0.01
    tinv = output_perturbation_trace_inverse_bound(m, X, ybin, noise)
    inv_dfil = 1 / output_perturbation_dfil(m, X, ybin, noise)
    J = np.concatenate([J.numpy() for _, J in output_perturbation_jacobians(m, X, ybin)])
    direct = np.array([np.trace(np.linalg.inv(j.T @ j / noise**2)) / 3 for j in J])
    np.testing.assert_allclose(tinv, direct, rtol=1e-8)
    assert np.all(tinv >= inv_dfil * (1 - 1e-12))  # Thm 2: Tr(I^-1)/d >= d/Tr(I)


def test_singular_hessian_is_a_value_error():
    # Unregularised least squares on digits: constant-zero pixels make the Hessian singular.
    d = load_dataset("digits")
    X, y = np.asarray(d.flat, float)[:200], np.asarray(d.y, float)[:200]
    m = fit_glm(X, y, "linear", 0.0)
    with pytest.raises(ValueError, match="singular"):
        output_perturbation_dfil(m, X, y, 1e-3)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    mod = make_mlp(6, [4], 3, activation="tanh").double()
    X = torch.rand(5, 6, dtype=torch.float64)
    Y = torch.tensor([0, 1, 2, 1, 0])
    return mod, X, Y


def test_jvp_trace_equals_full_jacobian(tiny):
    mod, X, Y = tiny
    params = {k: v.detach() for k, v in mod.named_parameters()}
    fn = clipped_grad_fn(mod, clip=0.5)
    exact = clipped_grad_jacobian_trace_exact(fn, params, X, Y)
    jvp_all = clipped_grad_jacobian_trace(fn, params, X, Y)
    torch.testing.assert_close(jvp_all, exact, rtol=1e-12, atol=1e-14)
    # And against jacrev written out by hand for one sample.
    J = jacrev(lambda x: fn(params, x, Y[2]))(X[2])
    assert float((J**2).sum()) == pytest.approx(float(exact[2]), rel=1e-12)


def test_sampled_coordinates_are_unbiased(tiny):
    mod, X, Y = tiny
    params = {k: v.detach() for k, v in mod.named_parameters()}
    fn = clipped_grad_fn(mod, clip=0.5)
    exact = clipped_grad_jacobian_trace_exact(fn, params, X, Y)
    g = torch.Generator().manual_seed(0)
    R = 4000  # independent coordinate draws, batched as R copies of the 5 samples
    draws = clipped_grad_jacobian_trace(fn, params, X.repeat(R, 1), Y.repeat(R), coords=2, generator=g).reshape(R, 5)
    mean, se = draws.mean(0), draws.std(0) / math.sqrt(draws.shape[0])
    # Unbiased: within 4 standard errors of the exact trace for every sample.
    assert torch.all((mean - exact).abs() <= 4 * se + 1e-12)
    # Sampling without replacement of all 6 coordinates is exact.
    torch.testing.assert_close(clipped_grad_jacobian_trace(fn, params, X, Y, coords=6, generator=g), exact)


def test_gelu_clip_norm_bound():
    g = torch.randn(2000, 50, dtype=torch.float64) * torch.logspace(-3, 3, 2000, dtype=torch.float64)[:, None]
    for C in (0.1, 1.0, 7.0):
        norms = gelu_clip(g * C, C).norm(dim=1)
        assert float(norms.max()) <= GELU_CLIP_FACTOR * C
        assert float(norms.max()) > 1.1 * C  # the bound is nearly attained
    # Large gradients are clipped to about C (GELU(u - 1) + 1 ~ u).
    big = torch.full((1, 4), 1e6, dtype=torch.float64)
    assert float(gelu_clip(big, 1.0).norm()) == pytest.approx(1.0, rel=1e-5)


def test_dpsgd_fil_one_step_full_batch_is_gaussian_mechanism_fim(tiny):
    # T = 1, q = 1: I(x) = J^T J / (sigma C)^2 at theta_0 (Guo et al. Eq. 1 with noise std sigma C).
    mod, X, Y = tiny
    sigma, C = 0.8, 0.5
    res = dpsgd_fil(mod, X, Y, DPSGDSettings(noise_multiplier=sigma, clip=C, steps=1, lr=0.1, sample_rate=1.0), seed=3)
    params = {k: v.detach() for k, v in mod.named_parameters()}
    exact = clipped_grad_jacobian_trace_exact(clipped_grad_fn(mod, C), params, X, Y).numpy()
    np.testing.assert_allclose(res.dfil, exact / (sigma * C) ** 2 / 6, rtol=1e-10)
    np.testing.assert_allclose(res.mse_lower_bound, 1 / res.dfil)


def test_dpsgd_fil_composes_over_steps(tiny):
    # Thm 3: the accountant sums per-step FIMs evaluated at the realised theta_{t-1}.
    mod, X, Y = tiny
    st = DPSGDSettings(noise_multiplier=1.0, clip=0.5, steps=1, lr=0.3, sample_rate=1.0)
    one = dpsgd_fil(mod, X, Y, st, seed=5)
    two = dpsgd_fil(mod, X, Y, st.replace(steps=2), seed=5)
    second = clipped_grad_jacobian_trace_exact(clipped_grad_fn(mod, 0.5), one.final_params, X, Y).numpy() / 0.25 / 6
    np.testing.assert_allclose(two.dfil, one.dfil + second, rtol=1e-8)


def test_dpsgd_fil_repeats_average_runs(tiny):
    mod, X, Y = tiny
    st = DPSGDSettings(noise_multiplier=1.0, clip=0.5, steps=3, lr=0.1, sample_rate=0.6)
    r0 = dpsgd_fil(mod, X, Y, st, seed=4)
    r1 = dpsgd_fil(mod, X, Y, st, seed=5)
    avg = dpsgd_fil(mod, X, Y, st, seed=4, fil=FILOptions(repeats=2))
    np.testing.assert_allclose(avg.dfil, (r0.dfil + r1.dfil) / 2, rtol=1e-12)
    np.testing.assert_allclose(avg.mse_lower_bound, 1 / avg.dfil)
    assert avg.settings["repeats"] == 2


def test_dpsgd_fil_subsampling(tiny):
    mod, X, Y = tiny
    st = DPSGDSettings(noise_multiplier=2.0, clip=0.5, steps=6, lr=0.1, sample_rate=0.5)
    base = dpsgd_fil(mod, X, Y, st, seed=1)
    amp = dpsgd_fil(mod, X, Y, st, seed=1, fil=FILOptions(subsampling="amplified", delta=1e-5))
    # Same training run (same seed), every per-step FIM scaled by kappa of Thm 4 Eq. 3.
    assert amp.kappa == pytest.approx(fil_subsampling_factor(0.5, amp.epsilon_step))
    assert 0.5 < amp.kappa < 1
    np.testing.assert_allclose(amp.dfil, amp.kappa * base.dfil, rtol=1e-10)
    assert base.kappa == 1.0
    with pytest.raises(ValueError, match="sample_rate"):
        dpsgd_fil(mod, X, Y, DPSGDSettings(noise_multiplier=1.0, clip=1.0, steps=1, lr=0.1, sample_rate=1.5))
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_fil(mod, X, Y, DPSGDSettings(noise_multiplier=float("nan"), clip=1.0, steps=1, lr=0.1, sample_rate=0.5))


def test_accountant_validation():
    acc = FILAccountant(3, 2)
    acc.add([0, 2, 2], [4.0, 1.0, 1.0], noise_std=2.0)
    np.testing.assert_allclose(acc.dfil, [0.5, 0.0, 0.25])
    np.testing.assert_allclose(acc.mse_lower_bound(), [2.0, np.inf, 4.0])
    with pytest.raises(ValueError):
        acc.add([0], [-1.0], noise_std=1.0)
    with pytest.raises(ValueError, match="kappa"):
        acc.add([0], [1.0], noise_std=1.0, kappa=1.5)


def test_fig3_dfil_bound_holds_for_most_samples_under_glm_attack(tmp_path):
    # Guo et al. 2022 Fig. 3 on digits 0 vs 1 (n = 360, d = 64), lam = 1e-2, output perturbation.
    # Paper: the bound holds "for the majority of samples" and for all samples left of MSE = 1;
    # the attack MSE is strongly rank-correlated with the bound. Tolerance: >= 90% of samples
    # (measured: 100% at noise 1e-4 and 1e-3; 65% at 1e-2 where the biased attack falls below
    # the unbiased bound for hard samples, but still 100% of those with bound <= 1).
    from rerokit.executors import RunOptions
    from rerokit.experiments.fil_glm import run_fil_glm

    res = run_fil_glm(tmp_path / "a", noise_std=1e-4, draws=60, seed=0, options=RunOptions(chunk_size=20, progress=False))
    assert res["n"] == 360 and res["samples_attack_failed"] == 0
    assert res["fraction_bound_holds"] >= 0.9
    assert res["spearman"] > 0.8
    assert res["fraction_trinv_bound_holds"] >= 0.9  # the tighter Tr(I^-1)/d form of Thm 2 too
    assert (tmp_path / "a" / "fil_glm.png").stat().st_size > 0
    rows = (tmp_path / "a" / "fil_glm.csv").read_text().splitlines()
    assert rows[0].startswith("index,label,dfil,mse_lower_bound,attack_mse") and len(rows) == 361
    # Resume: a finished run re-reads its blocks and reproduces the summary.
    again = run_fil_glm(tmp_path / "a", noise_std=1e-4, draws=60, seed=0, plot=False,
                        options=RunOptions(chunk_size=20, progress=False, resume=True))
    assert again["fraction_bound_holds"] == res["fraction_bound_holds"] and again["spearman"] == res["spearman"]
    # Heavy-tailed attack errors: with few draws the mean under-estimates the MSE (60 draws gave
    # 90% below the line, 300 draws 100%); tolerance 95% at 300 draws.
    big = run_fil_glm(tmp_path / "b", noise_std=1e-2, draws=300, seed=1, plot=False,
                      options=RunOptions(chunk_size=100, progress=False))
    assert big["samples_bound_below_1"] > 20
    assert big["fraction_bound_holds_below_1"] >= 0.95
    assert big["fraction_bound_holds"] < res["fraction_bound_holds"]  # violations appear with more noise
