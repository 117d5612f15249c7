"""Closed-form reconstruction attack on generalised linear models (Balle et al. 2022, Sec. III).

Threat model: an informed adversary knows every training point but the target z = (x, y) and
the released parameters theta, which minimise exactly

    C(theta) = sum_i l(theta; x_i, y_i) + (1/2) sum_j l2_j theta_j^2,
    l(theta; x, y) = b(<theta, x>) - y <theta, x>,  b' = g^{-1}.

rerokit writes theta as a (K, d') matrix (K = 1 for linear/ridge/binary logistic regression, K =
number of classes for multinomial logistic regression) acting on features x in R^{d'} whose
first coordinate is the intercept 1. The optimality condition (Balle et al. Eq. (1)) reads

    r(theta x) x^T = M := -( sum_{i in D_-} r_i x_i^T + theta diag(l2) ),

with the residual r(eta) = g^{-1}(eta) - y (identity, sigmoid or softmax - onehot(y)). The
intercept column gives r = M[:, 0] (because x_0 = 1), hence (Thm 1)

    x = M^T m / ||m||^2 with m = M[:, 0]    (K = 1: x = (X_bar^T B + lam theta)/(X_bar_1^T B + lam theta_1)),
    y = g^{-1}(<theta, x>) - m              (onehot(y) = softmax(theta x) - m for K classes).

Note: the paper prints y = g^{-1}(<x, theta>) + lam X_bar_1^T B theta_1; its own proof gives
y = g^{-1}(<x, theta>) + X_bar_1^T B + lam theta_1 (= g^{-1} - m), which is what is implemented
(the printed product is a typo). sklearn's penalty leaves the intercept unpenalised
(l2_0 = 0); Balle et al.'s objective lam ||theta||^2 penalises it; both are supported.

Thm 8 (linear or ridge regression without intercept, label y known): x = alpha v with
v = X_bar^T(X_bar theta - Y_bar) + l2 theta and alpha^2 <v, theta> - alpha y + 1 = 0: two
candidates.

The models and their trainer live in :mod:`rerokit.training.glm` (``fit_glm``: Newton's method in
float64 to machine precision, so that the noiseless attack error is at numerical precision;
``GLMModel``, ``fit_glm`` and ``glm_model_from_sklearn`` are re-exported here).
"""

from __future__ import annotations

import numpy as np

from rerokit._validate import check_nonnegative, check_real
from rerokit.training.glm import LINKS, GLMModel, design_matrix, fit_glm, glm_mean, glm_model_from_sklearn, glm_targets

__all__ = [
    "LINKS",
    "GLMModel",
    "fit_glm",
    "glm_model_from_sklearn",
    "glm_reconstruct",
    "glm_reconstruct_all",
    "linear_no_intercept_reconstruct",
    "output_perturbation",
]

def _stat(model: GLMModel, X_known: np.ndarray, y_known: np.ndarray) -> np.ndarray:
    """M = -(sum_{D_-} r_i x_i^T + theta diag(l2)), shape (K, d')."""
    A = design_matrix(X_known, model.intercept)
    if A.shape[1] != model.theta.shape[1]:
        raise ValueError(f"X_known has {A.shape[1] - int(model.intercept)} features, model has {model.num_features}")
    K = model.theta.shape[0]
    Y = glm_targets(model.link, np.asarray(y_known).reshape(-1), K, model.classes)
    R = glm_mean(model.link, A @ model.theta.T) - Y
    return -(R.T @ A + model.theta * model.l2)


def _finish(model: GLMModel, M: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From M (..., K, d') to (x_hat (..., d), y_hat (...,) or (..., K), |m|^2)."""
    m = M[..., :, 0]
    m2 = np.sum(m**2, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        xfull = np.einsum("...kd,...k->...d", M, m) / m2[..., None]
    x_hat = xfull[..., 1:]
    eta = np.einsum("kd,...d->...k", model.theta, xfull)
    mean = glm_mean(model.link, eta) if np.all(np.isfinite(eta)) else np.full_like(eta, np.nan)
    yv = mean - m
    y_hat = yv[..., 0] if model.theta.shape[0] == 1 else yv
    return x_hat, y_hat, m2


def glm_reconstruct(model: GLMModel, X_known: np.ndarray, y_known: np.ndarray) -> tuple[np.ndarray, np.ndarray | float]:
    """Balle et al. 2022, Thm 1: reconstruct the missing point (x, y) from theta and D_-.

    Args:
      model: the released :class:`GLMModel` (with an intercept), fitted to optimality on D_- plus
        the target.
      X_known: features of D_-, shape (n - 1, d) (or (n - 1, ...), flattened per row).
      y_known: labels of D_-, shape (n - 1,).

    Returns:
      ``(x_hat, y_hat)``: x_hat of shape (d,) without the intercept coordinate; y_hat the
      real label (K = 1, a float) or the one-hot vector softmax(theta x_hat) - m (softmax; the class
      is its argmax).

    Raises:
      ValueError: if m = 0 (the target's gradient vanishes: it is not identifiable from theta), the
        model has no intercept (use Thm 8), ``X_known`` has the wrong number of features or
        non-finite values, or a label is not one of the model's classes.
    """
    if not model.intercept:
        raise ValueError("model must be fitted with an intercept for Thm 1; use linear_no_intercept_reconstruct")
    M = _stat(model, X_known, y_known)
    x_hat, y_hat, m2 = _finish(model, M)
    if not m2 > 0:
        raise ValueError("the target's residual is zero: it cannot be reconstructed from theta (Thm 1 needs m != 0)")
    return x_hat, (float(y_hat) if np.ndim(y_hat) == 0 else y_hat)


def glm_reconstruct_all(model: GLMModel, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thm 1 against every training point in turn, vectorised.

    For target t the informed adversary knows D_- = D minus t; M_t = -(sum_{i != t} r_i x_i^T +
    theta diag(l2)) = G + r_t x_t^T with G the same sum over all of D. This computes exactly the
    n separate attacks (each only a function of theta and D_-), in O(n K d') instead of
    O(n^2 K d').

    Args:
      model: the released :class:`GLMModel` (with an intercept), fitted to optimality on (X, y).
      X: all n training features, shape (n, d) (or (n, ...), flattened per row).
      y: all n training labels, shape (n,).

    Returns:
      ``(X_hat (n, d), y_hat)`` with y_hat of shape (n,) (K = 1) or (n, K) (softmax). Rows of
      X_hat of non-identifiable targets (||m_t|| <= 1e-8 max_i |r_i|: the target's gradient
      vanishes) are NaN; their y_hat is left as computed.

    Raises:
      ValueError: if the model has no intercept, ``X`` holds non-finite values, or a label is not one
        of the model's classes.
    """
    if not model.intercept:
        raise ValueError("model must be fitted with an intercept for Thm 1")
    A = design_matrix(X, model.intercept)
    K = model.theta.shape[0]
    Y = glm_targets(model.link, np.asarray(y).reshape(-1), K, model.classes)
    R = glm_mean(model.link, A @ model.theta.T) - Y  # (n, K)
    G = -(R.T @ A + model.theta * model.l2)  # (K, d')
    M = G[None] + R[:, :, None] * A[:, None, :]  # (n, K, d')
    x_hat, y_hat, m2 = _finish(model, M)
    # m_t = r_t up to the optimisation error in G: below 1e-8 of the largest residual the
    # ratio is rounding noise (the target is fitted exactly and leaves no trace in theta).
    scale = max(float(np.abs(R).max()), np.finfo(float).tiny)
    bad = ~(m2 > (1e-8 * scale) ** 2)
    x_hat[bad] = np.nan
    return x_hat, y_hat


def linear_no_intercept_reconstruct(
    theta: np.ndarray, X_known: np.ndarray, y_known: np.ndarray, y: float, l2: float = 0.0
) -> np.ndarray:
    """Balle et al. 2022, Thm 8: linear (l2 = 0) or ridge regression fitted without intercept.

    theta minimises (1/2)||X theta - Y||^2 + (l2/2)||theta||^2 over D_- plus (x, y), the label
    y is known. With v = X_bar^T (X_bar theta - Y_bar) + l2 theta, x = alpha v where
    alpha = (y +- sqrt(y^2 - 4 <v, theta>)) / (2 <v, theta>). A slightly negative discriminant
    (noise, rounding) is clipped to 0.

    Args:
      theta: the released parameters, d values.
      X_known: features of D_- (X_bar), shape (n - 1, d).
      y_known: targets of D_- (Y_bar), shape (n - 1,).
      y: the target's known label, a finite number.
      l2: the ridge coefficient >= 0 (default 0: linear regression).

    Returns:
      The two candidates, shape (2, d) ("+" first; both 1/y v when <v, theta> = 0).

    Raises:
      ValueError: if ``X_known`` does not have d features or holds non-finite values, ``y`` is not
        finite, ``l2`` is negative, or the target is not identifiable (<v, theta> = 0 and y = 0).
      TypeError: if ``y``/``l2`` is not a number.
    """
    th = np.asarray(theta, dtype=float).reshape(-1)
    Xb = design_matrix(X_known, False)
    if Xb.shape[1] != th.size:
        raise ValueError(f"X_known has {Xb.shape[1]} features, theta has {th.size}")
    yb = np.asarray(y_known, dtype=float).reshape(-1)
    yv = check_real("y", y)
    l2 = check_nonnegative("l2", l2)
    v = Xb.T @ (Xb @ th - yb) + l2 * th
    a = float(v @ th)
    if a == 0:
        if yv == 0:
            raise ValueError("the target is not identifiable (<v, theta> = 0 and y = 0)")
        alphas = np.array([1.0 / yv, 1.0 / yv])
    else:
        disc = max(yv * yv - 4 * a, 0.0)
        r = np.sqrt(disc)
        alphas = np.array([(yv + r) / (2 * a), (yv - r) / (2 * a)])
    return alphas[:, None] * v[None, :]


def output_perturbation(model: GLMModel, noise_std: float, rng: np.random.Generator) -> GLMModel:
    """Release theta + N(0, noise_std^2 I) (Chaudhuri et al. 2011; Guo et al. 2022 Sec. 7.1).

    Args:
      model: the :class:`GLMModel` to release.
      noise_std: standard deviation of the Gaussian noise, >= 0.
      rng: the numpy ``Generator`` that draws the noise.

    Returns:
      A new :class:`GLMModel` with the noisy theta (link, l2, intercept, classes and a copy of extras
      kept).

    Raises:
      ValueError: if ``noise_std`` is negative or not finite (TypeError if not a number).
    """
    s = check_nonnegative("noise_std", noise_std)
    th = model.theta + s * rng.standard_normal(model.theta.shape)
    return GLMModel(th, model.link, model.l2, model.intercept, model.classes, dict(model.extras))
