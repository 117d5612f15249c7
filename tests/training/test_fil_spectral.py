"""Spectral-norm FIL (Guo et al. 2022, Sec. 5 and Thm 2: MSE >= 1/eta^2, eta^2 = ||I_h(z)||_2).

Checked against cases whose Fisher information is known in closed form: Gaussian output
perturbation of a linear map h = A z + N(0, s^2 I) has I = A^T A / s^2, so eta^2 is the largest
squared singular value of A over s^2 (numpy's SVD, an independent routine); and ridge regression
released with output perturbation, whose Jacobian d theta*/dx is written out by hand below.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rerokit.bounds.mse import cramer_rao_mse_lower_bound, cramer_rao_mse_lower_bound_matrix
from rerokit.training.fil_spectral import (
    output_perturbation_spectral_fil,
    spectral_fil,
    spectral_fil_mse_lower_bound,
)


@pytest.mark.parametrize("shape", [(5, 5), (8, 3), (3, 6)])
def test_spectral_fil_of_a_linear_gaussian_release(shape):
    rng = np.random.default_rng(sum(shape))
    A = rng.normal(size=shape)
    s = 0.3
    fim = A.T @ A / s**2
    smax = np.linalg.svd(A, compute_uv=False)[0]
    eta2 = spectral_fil(fim)
    assert eta2 == pytest.approx(smax**2 / s**2, rel=1e-12)
    assert eta2 >= smax**2 / s**2 * (1 - 1e-15)  # rounded up: the bound stays on the safe side
    assert spectral_fil_mse_lower_bound(fim) == pytest.approx(s**2 / smax**2, rel=1e-12)


def test_spectral_bound_is_the_weakest_form_of_thm2():
    # Tr(I^{-1})/d >= d/Tr(I) >= 1/eta^2 (Guo et al. 2022, proof of Thm 2)
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 4))
    fim = A.T @ A / 0.5**2
    d = fim.shape[0]
    trinv = cramer_rao_mse_lower_bound_matrix(fim)
    trace_form = cramer_rao_mse_lower_bound(np.trace(fim) / d)
    spectral = spectral_fil_mse_lower_bound(fim)
    assert trinv >= trace_form >= spectral
    # equality throughout for an isotropic FIM: I = c Id gives 1/c for all three
    assert spectral_fil_mse_lower_bound(4.0 * np.eye(3)) == pytest.approx(0.25, rel=1e-12)
    assert cramer_rao_mse_lower_bound_matrix(4.0 * np.eye(3)) == pytest.approx(0.25, rel=1e-12)


def test_spectral_fil_zero_and_bad_input():
    assert spectral_fil(np.zeros((3, 3))) == 0.0
    assert spectral_fil_mse_lower_bound(np.zeros((3, 3))) == math.inf
    with pytest.raises(ValueError, match="fim"):
        spectral_fil(np.ones((2, 3)))
    with pytest.raises(ValueError, match="positive semi-definite"):
        spectral_fil(np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="fim"):
        spectral_fil(np.array([[np.nan]]))
    with pytest.raises(TypeError):
        spectral_fil("abc")


def _ridge_jacobians(model, X, y):
    """d theta*/dx_t of ridge regression with intercept, by hand: the optimality condition
    sum_i (theta . x'_i - y_i) x'_i + diag(l2) theta = 0 differentiated in x_t gives
    J_t = -H^{-1} (x'_t theta_f^T + r_t E) with H = A^T A + diag(l2), r_t = theta . x'_t - y_t,
    theta_f the feature part of theta and E = d x'_t / d x_t = [0; I_d]."""
    n, d = X.shape
    A = np.hstack([np.ones((n, 1)), X])
    theta = model.theta[0]
    H = A.T @ A + np.diag(model.l2)
    E = np.vstack([np.zeros((1, d)), np.eye(d)])
    out = []
    for t in range(n):
        r = A[t] @ theta - y[t]
        out.append(-np.linalg.solve(H, np.outer(A[t], theta[1:]) + r * E))
    return out


def test_output_perturbation_spectral_fil_matches_ridge_by_hand():
    from rerokit.training.fil import output_perturbation_dfil
    from rerokit.training.glm import fit_glm

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(15, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=15)
    model = fit_glm(X, y, "ridge", 0.7)
    s = 0.2
    eta2 = output_perturbation_spectral_fil(model, X, y, s)
    dfil = output_perturbation_dfil(model, X, y, s)
    Js = _ridge_jacobians(model, X, y)
    want = np.array([np.linalg.svd(J, compute_uv=False)[0] ** 2 / s**2 for J in Js])
    np.testing.assert_allclose(eta2, want, rtol=1e-9)
    np.testing.assert_allclose(dfil, [np.sum(J**2) / (s**2 * 3) for J in Js], rtol=1e-9)
    assert np.all(eta2 >= dfil)  # ||I||_2 >= Tr(I)/d: the spectral bound is never above 1/dFIL
    with pytest.raises(ValueError, match="noise_std"):
        output_perturbation_spectral_fil(model, X, y, 0.0)
