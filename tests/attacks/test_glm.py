"""GLM closed-form attack (Balle et al. 2022, Thm 1 and Thm 8): exact reconstruction."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

from rerokit.attacks.glm import (
    fit_glm,
    glm_model_from_sklearn,
    glm_reconstruct,
    glm_reconstruct_all,
    linear_no_intercept_reconstruct,
    output_perturbation,
)
from rerokit.data import load_dataset

# Without noise the attack is exact up to the optimiser's gradient norm (~1e-13) amplified by
# the conditioning of the ratio; 1e-8 on the max abs pixel error is "numerical precision" for
# pixels in [0, 1] (measured: <= 1e-10).
TOL = 1e-8


@pytest.fixture(scope="module")
def digits():
    d = load_dataset("digits")
    return np.asarray(d.flat, dtype=float), np.asarray(d.y)


def _synthetic(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    w = rng.standard_normal(d)
    return X, X @ w + 0.3 * rng.standard_normal(n), (X @ w > np.median(X @ w)).astype(int)


def test_logistic_digits_exact_own_trainer(digits):
    X, y = digits
    keep = (y == 0) | (y == 1)
    X, y = X[keep], y[keep]
    model = fit_glm(X, y, "logistic", l2=len(y) * 1e-2)
    assert model.extras["grad_norm"] < 1e-9
    Xh, yh = glm_reconstruct_all(model, X, y)
    assert np.max(np.abs(Xh - X)) < TOL
    np.testing.assert_allclose(yh, y, atol=1e-8)
    # The vectorised attack equals the per-target attack that only sees D_- (Thm 1 as stated).
    for t in (0, 17, 200):
        rest = np.arange(len(y)) != t
        xh, yt = glm_reconstruct(model, X[rest], y[rest])
        np.testing.assert_allclose(xh, Xh[t], atol=1e-10)
        assert yt == pytest.approx(y[t], abs=1e-8)


def test_multinomial_digits_exact(digits):
    X, y = digits
    keep = y < 3
    X, y = X[keep][:300], y[keep][:300]
    model = fit_glm(X, y, "multinomial", l2=1.0)
    Xh, Yh = glm_reconstruct_all(model, X, y)
    assert np.max(np.abs(Xh - X)) < TOL
    assert np.array_equal(np.argmax(Yh, axis=1), y)
    np.testing.assert_allclose(Yh, np.eye(3)[y], atol=1e-8)


@pytest.mark.parametrize("model,l2", [("linear", 0.0), ("ridge", 2.0)])
@pytest.mark.parametrize("penalize_intercept", [True, False])
def test_linear_ridge_exact(model, l2, penalize_intercept):
    X, yreg, _ = _synthetic()
    m = fit_glm(X, yreg, model, l2, penalize_intercept=penalize_intercept)
    Xh, yh = glm_reconstruct_all(m, X, yreg)
    assert np.max(np.abs(Xh - X)) < TOL
    np.testing.assert_allclose(yh, yreg, atol=1e-8)


def test_sklearn_estimators_exact(digits):
    X, y = digits
    keep = (y == 0) | (y == 1)
    Xb, yb = X[keep], y[keep]
    cases = [
        (LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12, max_iter=1000), Xb, yb),
        (LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-12, max_iter=1000), X[y < 3], y[y < 3]),
        (Ridge(alpha=3.0), X, y.astype(float)),
    ]
    for est, XX, yy in cases:
        est.fit(XX, yy)
        model = glm_model_from_sklearn(est)
        assert model.l2[0] == 0.0  # sklearn leaves the intercept unpenalised
        Xh, _ = glm_reconstruct_all(model, XX, yy)
        assert np.max(np.abs(Xh - XX)) < 1e-7, type(est).__name__
    Xs, yreg, _ = _synthetic()
    model = glm_model_from_sklearn(LinearRegression().fit(Xs, yreg))
    Xh, yh = glm_reconstruct_all(model, Xs, yreg)
    assert np.max(np.abs(Xh - Xs)) < TOL
    np.testing.assert_allclose(yh, yreg, atol=1e-8)


def test_sklearn_default_tolerance_is_not_exact(digits):
    # lbfgs with its default tol stops early: the optimality condition, hence the attack, is off.
    X, y = digits
    keep = (y == 0) | (y == 1)
    est = LogisticRegression(C=0.5).fit(X[keep], y[keep])
    Xh, _ = glm_reconstruct_all(glm_model_from_sklearn(est), X[keep], y[keep])
    assert np.nanmax(np.abs(Xh - X[keep])) > 1e-6


def test_non_identifiable_target_is_flagged(digits):
    # Unregularised linear regression on digits: one image is the only one with some non-zero
    # pixel, it is fitted exactly (residual 0) and leaves no trace in theta.
    X, y = digits
    m = fit_glm(X, y.astype(float), "linear", 0.0)
    Xh, _ = glm_reconstruct_all(m, X, y.astype(float))
    bad = np.isnan(Xh).any(axis=1)
    assert 1 <= bad.sum() <= 3
    assert np.max(np.abs(Xh[~bad] - X[~bad])) < 1e-6


def test_single_target_api_raises_when_gradient_vanishes():
    # theta = 0 fits D_- = {(0, 0), ...} exactly and the regulariser is 0: m = 0, nothing to invert.
    from rerokit.attacks.glm import GLMModel

    zero = GLMModel(np.zeros((1, 4)), "identity", np.zeros(4), True)
    with pytest.raises(ValueError, match="residual"):
        glm_reconstruct(zero, np.zeros((3, 3)), np.zeros(3))


@pytest.mark.parametrize("l2", [0.0, 1.5])
def test_thm8_no_intercept_two_candidates(l2):
    X, yreg, _ = _synthetic(n=80, d=5, seed=3)
    m = fit_glm(X, yreg, "ridge" if l2 else "linear", l2, intercept=False)
    theta = m.theta[0]
    for t in (0, 7, 41):
        rest = np.arange(len(yreg)) != t
        cands = linear_no_intercept_reconstruct(theta, X[rest], yreg[rest], yreg[t], l2=l2)
        assert cands.shape == (2, 5)
        err = np.min(np.max(np.abs(cands - X[t]), axis=1))
        assert err < 1e-8
    with pytest.raises(ValueError, match="intercept"):
        glm_reconstruct(m, X[1:], yreg[1:])


def test_output_perturbation_noise_degrades_gracefully(digits):
    X, y = digits
    keep = (y == 0) | (y == 1)
    X, y = X[keep], y[keep]
    model = fit_glm(X, y, "logistic", l2=len(y) * 1e-2)
    rng = np.random.default_rng(0)
    same = output_perturbation(model, 0.0, rng)
    np.testing.assert_array_equal(same.theta, model.theta)
    errs = []
    for s in (1e-6, 1e-4):
        Xh, _ = glm_reconstruct_all(output_perturbation(model, s, rng), X, y)
        errs.append(np.nanmedian(np.mean((Xh - X) ** 2, axis=1)))
    assert errs[0] < errs[1]
    assert errs[0] < 1e-4


def test_bad_input():
    X, yreg, ybin = _synthetic(n=20, d=3)
    with pytest.raises(ValueError, match="model"):
        fit_glm(X, yreg, "poisson", 1.0)
    with pytest.raises(ValueError, match="l2"):
        fit_glm(X, yreg, "ridge", 0.0)
    with pytest.raises(ValueError, match="l2"):
        fit_glm(X, yreg, "ridge", float("nan"))
    with pytest.raises(ValueError, match="l2 must be > 0 for logistic"):
        fit_glm(X, ybin, "logistic", 0.0)
    with pytest.raises(ValueError, match="labels"):
        fit_glm(X, yreg, "logistic", 1.0)
    with pytest.raises(ValueError, match="X"):
        fit_glm(np.full((20, 3), np.nan), ybin, "logistic", 1.0)
    with pytest.raises(TypeError, match="estimator"):
        glm_model_from_sklearn(object())
    m = fit_glm(X, ybin, "logistic", 1.0)
    with pytest.raises(ValueError, match="features"):
        glm_reconstruct(m, X[:, :2], ybin)
