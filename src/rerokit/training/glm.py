"""Generalised linear models trained to optimality (the models of Balle et al. 2022, Sec. III).

A GLM minimises C(theta) = sum_i l(theta; x_i, y_i) + (1/2) sum_j l2_j theta_j^2 with
l(theta; x, y) = b(<theta, x>) - y <theta, x>, b' = g^{-1}. theta is a (K, d') matrix (K = 1 for
linear/ridge/binary logistic regression, K = number of classes for multinomial logistic
regression) acting on features x in R^{d'} whose first coordinate is the intercept 1.

:func:`fit_glm` is rerokit's own trainer (Newton's method in float64 to machine precision) and
:func:`glm_model_from_sklearn` reads a fitted scikit-learn estimator; the helpers
:func:`design_matrix`, :func:`glm_targets`, :func:`glm_mean` and :func:`l2_penalty` are shared with
the closed-form attack (:mod:`rerokit.attacks.glm`) and the Fisher-information accounting
(:mod:`rerokit.training.fil`). numpy only (no torch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rerokit._validate import check_choice, check_int, check_nonnegative

__all__ = ["LINKS", "GLMModel", "fit_glm", "glm_model_from_sklearn", "design_matrix", "glm_targets", "glm_mean",
           "l2_penalty"]

# model name -> link ("identity": linear/ridge, "logistic": binary, "softmax": multinomial)
LINKS = ("identity", "logistic", "softmax")


@dataclass(frozen=True)
class GLMModel:
    """Released GLM parameters and the objective they minimise (see module docstring).

    Attributes:
      theta: (K, d') parameters, with column 0 the intercept when ``intercept``.
      link: "identity", "logistic" or "softmax" (see :data:`LINKS`).
      l2: (d',) per-column L2 coefficients of (1/2) sum_j l2_j ||theta[:, j]||^2.
      intercept: whether x' = [1, x] (default True).
      classes: label values of the softmax rows (softmax link only), else None.
      extras: solver information (e.g. ``grad_norm`` at the returned theta).
    """

    theta: np.ndarray
    link: str
    l2: np.ndarray
    intercept: bool = True
    classes: np.ndarray | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def num_features(self) -> int:
        """d: the dimension of x without the intercept coordinate."""
        return self.theta.shape[1] - int(self.intercept)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _softmax(t: np.ndarray) -> np.ndarray:
    z = t - t.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def glm_mean(link: str, eta: np.ndarray) -> np.ndarray:
    """The mean function g^{-1}(eta) of ``link`` for eta of shape (..., K).

    Args:
      link: "identity", "logistic" (sigmoid) or "softmax" (any other value is treated as softmax).
      eta: linear predictors, shape (..., K).

    Returns:
      The means, same shape as ``eta``.
    """
    if link == "identity":
        return eta
    if link == "logistic":
        return _sigmoid(eta)
    return _softmax(eta)


def glm_targets(link: str, y: np.ndarray, K: int, classes: np.ndarray | None) -> np.ndarray:
    """Labels as (n, K): the value itself for K = 1, one-hot for softmax.

    Args:
      link: the model's link; only "softmax" one-hot encodes.
      y: labels, shape (n,) (flattened).
      K: number of rows of theta (classes for softmax).
      classes: sorted label values of the softmax rows (required for softmax; ignored otherwise).

    Returns:
      Float array of shape (n, 1), or (n, K) one-hot for softmax.

    Raises:
      ValueError: if a softmax label is not one of ``classes``.
    """
    y = np.asarray(y)
    if link != "softmax":
        return y.astype(float).reshape(-1, 1)
    assert classes is not None
    idx = np.searchsorted(classes, y)
    if np.any(idx >= len(classes)) or np.any(classes[np.minimum(idx, len(classes) - 1)] != y):
        raise ValueError("y contains a label that is not one of the model's classes")
    out = np.zeros((y.size, K))
    out[np.arange(y.size), idx] = 1.0
    return out


def design_matrix(X: np.ndarray, intercept: bool) -> np.ndarray:
    """Rows of X (flattened to (n, d)) with a leading column of ones when ``intercept``: (n, d').

    Args:
      X: features, shape (n, d) or (n, ...) (flattened per row).
      intercept: prepend a column of ones.

    Returns:
      Float64 array of shape (n, d + 1) with an intercept, else (n, d).

    Raises:
      ValueError: if ``X`` holds nan or inf.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        X = X.reshape(X.shape[0], -1)
    if not np.all(np.isfinite(X)):
        raise ValueError("X must contain finite numbers")
    return np.hstack([np.ones((X.shape[0], 1)), X]) if intercept else X


def l2_penalty(l2: float, dprime: int, intercept: bool, penalize_intercept: bool) -> np.ndarray:
    """Per-column L2 coefficients (d',): ``l2`` everywhere, 0 on the intercept unless penalised.

    Args:
      l2: the L2 coefficient.
      dprime: d', the number of columns of theta (intercept included).
      intercept: whether column 0 is the intercept.
      penalize_intercept: whether the intercept is penalised too.

    Returns:
      Float array of shape (d',).
    """
    pen = np.full(dprime, l2)
    if intercept and not penalize_intercept:
        pen[0] = 0.0
    return pen


def fit_glm(
    X: np.ndarray,
    y: np.ndarray,
    model: str = "logistic",
    l2: float = 1.0,
    *,
    intercept: bool = True,
    penalize_intercept: bool = True,
    max_iter: int = 100,
    tol: float = 1e-13,
) -> GLMModel:
    """Fit a GLM to optimality: minimise sum_i l(theta; x_i, y_i) + (l2/2) ||theta||^2.

    ``penalize_intercept`` follows Balle et al. (True) or scikit-learn (False). Linear and ridge
    regression are solved by least squares; logistic/multinomial by Newton's method with
    backtracking in float64 until the gradient norm is below ``tol`` times its initial value (or
    machine precision is reached). The reference code of Guo et al. uses l2 = n * lam.

    Args:
      X: features, shape (n, d) (or (n, ...), flattened per row); finite.
      y: labels or targets, shape (n,).
      model: "linear" (ridge if l2 > 0: with the default l2 = 1 it is ridge; pass ``l2=0`` for
        ordinary least squares), "ridge" (l2 > 0), "logistic" (default; binary labels in {0, 1})
        or "multinomial" (integer labels; softmax with one row per class).
      l2: L2 coefficient >= 0 (default 1); must be > 0 for ridge, logistic and multinomial.
      intercept: add an intercept column (default True).
      penalize_intercept: penalise the intercept too (default True, as Balle et al.).
      max_iter: maximum Newton iterations, an integer >= 1 (default 100).
      tol: relative gradient-norm tolerance of the Newton iterations (default 1e-13).

    Returns:
      The fitted :class:`GLMModel` (``extras["grad_norm"]`` for logistic/multinomial).

    Raises:
      ValueError: if ``model`` is unknown, ``l2`` is negative or 0 where it must be > 0, ``X``/``y``
        hold non-finite values or differ in length, or the labels do not fit the model.
      TypeError: if an argument has the wrong type.
    """
    check_choice("model", model, ("linear", "ridge", "logistic", "multinomial"))
    l2 = check_nonnegative("l2", l2)
    if model == "ridge" and l2 == 0:
        raise ValueError("l2 must be > 0 for ridge regression, got 0")
    if model in ("logistic", "multinomial") and l2 == 0:
        # Separable data (common in high dimension) has no finite optimum without a penalty.
        raise ValueError(f"l2 must be > 0 for {model} regression (no finite optimum on separable data), got 0")
    max_iter = check_int("max_iter", max_iter, minimum=1)
    A = design_matrix(X, intercept)
    n, dp = A.shape
    y = np.asarray(y).reshape(-1)
    if y.size != n:
        raise ValueError(f"y has {y.size} entries but X has {n} rows")
    pen = l2_penalty(l2, dp, intercept, penalize_intercept)
    if model in ("linear", "ridge"):
        if not np.all(np.isfinite(y.astype(float))):
            raise ValueError("y must contain finite numbers")
        H = A.T @ A + np.diag(pen)
        b = A.T @ y.astype(float)
        theta, *_ = np.linalg.lstsq(H, b, rcond=None)
        # One step of iterative refinement.
        theta = theta + np.linalg.lstsq(H, b - H @ theta, rcond=None)[0]
        return GLMModel(theta.reshape(1, -1), "identity", pen, intercept)
    if model == "logistic":
        if not np.all(np.isin(y, (0, 1))):
            raise ValueError("y must contain labels in {0, 1} for binary logistic regression")
        classes = None
        K, link = 1, "logistic"
    else:
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError("y must contain at least 2 classes for multinomial regression")
        K, link = classes.size, "softmax"
    Y = glm_targets(link, y, K, classes)
    theta = np.zeros((K, dp))

    def objective(th: np.ndarray) -> float:
        eta = A @ th.T
        if link == "logistic":
            e = eta[:, 0]
            val = np.sum(np.logaddexp(0.0, e) - Y[:, 0] * e)
        else:
            m = eta.max(axis=1, keepdims=True)
            lse = (m + np.log(np.exp(eta - m).sum(axis=1, keepdims=True)))[:, 0]
            val = np.sum(lse - np.sum(Y * eta, axis=1))
        return float(val + 0.5 * np.sum(pen * th**2))

    def gradient(th: np.ndarray) -> np.ndarray:
        R = glm_mean(link, A @ th.T) - Y
        return R.T @ A + th * pen

    g0 = np.linalg.norm(gradient(theta))
    for _ in range(max_iter):
        G = gradient(theta)
        gn = np.linalg.norm(G)
        if gn <= tol * max(g0, 1.0):
            break
        P = glm_mean(link, A @ theta.T)
        if link == "logistic":
            w = P[:, 0] * (1 - P[:, 0])
            H = (A * w[:, None]).T @ A + np.diag(pen)
        else:
            # Hessian of the softmax loss on vec(theta) (row-major: class-major blocks).
            H = np.zeros((K * dp, K * dp))
            for a in range(K):
                for c in range(a, K):
                    w = P[:, a] * ((a == c) - P[:, c])
                    blk = (A * w[:, None]).T @ A
                    H[a * dp:(a + 1) * dp, c * dp:(c + 1) * dp] = blk
                    H[c * dp:(c + 1) * dp, a * dp:(a + 1) * dp] = blk.T
            H += np.diag(np.tile(pen, K))
        step = np.linalg.lstsq(H, G.reshape(-1), rcond=None)[0].reshape(K, dp)
        f0, t = objective(theta), 1.0
        while t > 1e-10:
            cand = theta - t * step
            if objective(cand) <= f0 + 1e-12 * abs(f0) or np.linalg.norm(gradient(cand)) < gn:
                break
            t /= 2
        new = theta - t * step
        if np.array_equal(new, theta):
            break
        theta = new
    return GLMModel(theta, link, pen, intercept, classes, extras={"grad_norm": float(np.linalg.norm(gradient(theta)))})


def glm_model_from_sklearn(estimator: Any) -> GLMModel:
    """Read theta and the objective's l2 from a fitted scikit-learn estimator.

    Supported: ``LinearRegression`` (l2 = 0), ``Ridge(alpha)`` (objective ||y - Xw||^2 +
    alpha ||w||^2, i.e. l2 = alpha on the coefficients, intercept unpenalised),
    ``LogisticRegression(C)`` with the L2 penalty (objective C sum_i l_i + ||w||^2/2, i.e.
    l2 = 1/C, intercept unpenalised; binary, or multinomial with one row per class). The attack
    is exact only if the estimator was solved to optimality (e.g. ``solver="newton-cholesky"``,
    small ``tol``).

    Args:
      estimator: the fitted scikit-learn estimator.

    Returns:
      The :class:`GLMModel` of its parameters and objective.

    Raises:
      TypeError: if ``estimator`` is not one of the supported classes.
      ValueError: if it is not fitted, a logistic regression uses another penalty than L2 or was
        fitted on binary labels other than {0, 1}, or a regression has several outputs.
    """
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

    if not isinstance(estimator, (LinearRegression, LogisticRegression, Ridge)):
        raise TypeError(
            f"estimator must be LinearRegression, Ridge or LogisticRegression, got {type(estimator).__name__}"
        )
    if not hasattr(estimator, "coef_"):
        raise ValueError("estimator must be fitted (it has no coef_)")
    coef = np.atleast_2d(np.asarray(getattr(estimator, "coef_", None), dtype=float))
    fit_int = bool(getattr(estimator, "fit_intercept", False))
    K, d = coef.shape
    if fit_int:
        b = np.atleast_1d(np.asarray(estimator.intercept_, dtype=float)).reshape(K, 1)
        theta = np.hstack([b, coef])
    else:
        theta = coef
    classes = None
    if isinstance(estimator, LogisticRegression):
        l1r = getattr(estimator, "l1_ratio", 0.0) or 0.0
        pen_name = getattr(estimator, "penalty", "l2")
        if (pen_name not in ("l2", "deprecated", None)) or l1r not in (0, 0.0):
            raise ValueError("estimator must use the L2 penalty (l1_ratio = 0) for the GLM attack")
        C = float(estimator.C)
        l2 = 0.0 if not np.isfinite(C) else 1.0 / C
        if K == 1:
            link = "logistic"
            if not np.array_equal(np.asarray(estimator.classes_), [0, 1]):
                raise ValueError("binary LogisticRegression must be fitted on labels {0, 1}")
        else:
            link = "softmax"
            classes = np.asarray(estimator.classes_)
    elif isinstance(estimator, Ridge):
        link, l2 = "identity", float(estimator.alpha)
    elif isinstance(estimator, LinearRegression):
        link, l2 = "identity", 0.0
    else:
        raise TypeError(
            f"estimator must be LinearRegression, Ridge or LogisticRegression, got {type(estimator).__name__}"
        )
    if K != 1 and link == "identity":
        raise ValueError("multi-output regression is not supported")
    pen = l2_penalty(l2, theta.shape[1], fit_int, penalize_intercept=False)
    return GLMModel(theta, link, pen, fit_int, classes)
