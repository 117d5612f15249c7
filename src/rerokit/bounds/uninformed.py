"""Uninformed adversary: the optimal analytic gradient-inversion attack under DP-SGD and the
exact laws of its success (Riess et al. 2024, "From Mean to Extreme: Formal Differential Privacy Bounds on the Success of Real-World Data Reconstruction Attacks", arXiv:2402.12861, Secs. 3.3-4.3; its first version is titled "Bounding Reconstruction Attack Success of Adversaries Without Data Priors").

Pure math (numpy/scipy only, never torch). Notation of Riess et al. 2024: target ``X`` in R^N, noise multiplier
``sigma`` (noise std ``sigma * C`` on the clipped gradient), clipping norm ``C``, ``M`` rows of the
attacker's linear layer ``f(X) = W X`` with loss ``1_M^T W X`` (Cor. 1), ``beta_C(X)`` the clipping
factor (Eq. 10), ``r = min_{X in D \\ {0}} ||X||_2`` the dataset's smallest non-zero norm, ``k``
matched releases averaged by the attacker (Prop. 7).

Main facts implemented here:

* Eq. 16-17: the attacker's estimator ``X_hat_M = (1/M) sum_j grad~_{W_j} / (beta_C d_j)`` with
  ``d_j = dL/df_j`` and its per-coordinate variance ``(1/M^2) sum_j C^2 sigma^2 / (beta_C^2 d_j^2)``.
* Prop. 1 / Eq. 20: with ``d_j = 1`` the variance is ``sigma^2 max(||X||^2, C^2/M)``; it attains its
  minimum ``sigma^2 ||X||^2`` exactly when the gradient ``sqrt(M) ||X||`` is clipped, i.e. for
  ``M >= (C/||X||)^2``. **Deviation from the printed statement:** Prop. 1 (Eq. 18) prints
  ``M >= ceil(C / r)``, but its own proof (Eq. 48, ``M ||X||^2 >= C^2``), Fig. 1 ("M >= (C/||X||)^2")
  and Fig. 2 (second row, ``C = sqrt(M) r``) all need the square; e.g. ``C = 4 r`` with ``M = 4``
  leaves the gradient unclipped and the variance at ``4 sigma^2 r^2``. :func:`optimal_rows` returns
  the square rule, :func:`rows_prop1_as_printed` the printed one (for comparison only).
* Thm 2: ``MSE = ||X - X_hat||^2 / N ~ (sigma^2 ||X||^2 / N) chi^2_N`` (divided by ``k`` after
  averaging ``k`` releases, Prop. 7); Prop. 2: ``E[MSE] = sigma^2 ||X||^2``; Prop. B.3: normal limit.
* Prop. 3: ``gamma(eta) = Gamma_R(N/2, N eta / (2 sigma^2 r^2))``; with ``C <= r`` the
  data-independent ``gamma'(eta) = Gamma_R(N/2, N eta / (2 sigma^2 C^2))`` (>= gamma).
* Props. 4-5: PSNR threshold ``eta_dB`` with known data range ``R``: MSE threshold
  ``eta~ = 10^(-eta_dB/10) R^2``.
* Prop. 6: ``NCC = sqrt(1 / (1 + sigma^2 ||X||^2 / Var(x))) <= sqrt(1 / (1 + sigma^2 N))``.
* Sec. 4.3: a record used ``k ~ Binomial(T, q)`` times over ``T`` Poisson-sampled steps; the
  worst case over all steps is the mixture ``sum_k P(k) gamma_k(eta)``.

**What these numbers are.** Thm 1 of Riess et al. 2024 ("X_hat is the best achievable estimator") holds among
*unbiased* estimators only (its proof goes through the minimum-variance unbiased estimator): a
biased attacker - the constant guess 0, or the shrunk c X_hat - can do better (James-Stein). So
every law here (MSE, PSNR, NCC, over T steps) is the exact law of *one* attack, the optimal
unbiased analytic gradient inversion: kind "attack law", never a bound on every attacker. What a
prior-free attacker gets for free and the certified informed bound for a continuous prior are in
:mod:`rerokit.bounds.uninformed_scope`.

Every ReRo value is reported on the safe side of its numerics (``direction="upper"``): ``value = raw * (1 + rel)`` with
``rel = 1e-10 + 8 (N/2 + x) eps`` (relative accuracy of ``scipy.special.gammainc`` is ~1e-14, plus
the rounding of its argument x propagated through d log P / d log x <= N/2 + x) and ``error``
says by how much; when
the raw value underflows, the log value from a convergent series is kept in ``extras`` and the
reported value is the smallest positive float, never 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from rerokit._validate import check_int, check_nonnegative, check_positive, check_probability, check_real
from rerokit._validate import check_real_array
from rerokit.bounds.solve import AllFeasible, NoFeasibleValue, SearchRange, calibrate_monotone
from rerokit.bounds.types import Bound

__all__ = [
    "clipping_factor",
    "gradient_norm",
    "estimator_variance",
    "estimate_from_gradients",
    "optimal_rows",
    "rows_prop1_as_printed",
    "reconstruction_std",
    "expected_mse",
    "mse_distribution",
    "mse_cdf",
    "mse_quantile",
    "mse_normal_limit_cdf",
    "log_regularized_gamma_p",
    "mse_rero",
    "psnr_mse_threshold",
    "psnr_rero",
    "psnr_sf",
    "psnr_pdf",
    "ncc_value",
    "ncc_bound",
    "averaged_variance",
    "prob_used_k_times",
    "mse_rero_over_steps",
    "calibrate_noise_mse",
    "calibrate_noise_psnr",
    "min_nonzero_norm",
    "GAMMA_REL_ERROR",
]

#: Relative safety margin added to every regularized-gamma upper bound (scipy's gammainc is
#: accurate to ~1e-14 relative; the margin is 1e4 times larger).
GAMMA_REL_ERROR = 1e-10
_TINY = 5e-324


# --------------------------------------------------------------------------- the attack (Sec. 3.3, 4.1)


def clipping_factor(grad_norm: float | np.ndarray, clip: float) -> float | np.ndarray:
    """beta_C(X) = 1 / max(1, ||G_X||_2 / C), the clipping factor (Riess et al. 2024, Eq. 10).

    Args:
      grad_norm: per-example gradient norm(s) ||G_X||_2, finite numbers >= 0 (a number or an array).
      clip: clipping norm C > 0.

    Returns:
      beta_C in (0, 1]: a float for a scalar ``grad_norm``, else an array of its shape.

    Raises:
      ValueError: if ``clip`` is not a finite number > 0, or a gradient norm is negative or not finite.
      TypeError: if an argument is not a number / an array of numbers.
    """
    c = check_positive("clip", clip)
    g = check_real_array("grad_norm", grad_norm)
    if np.any(~np.isfinite(g)) or np.any(g < 0):
        raise ValueError("grad_norm must be finite numbers >= 0")
    return _scalar_or_array(1.0 / np.maximum(1.0, g / c))


def gradient_norm(norm_x: float, rows: int) -> float:
    """||G_X||_2 = sqrt(M) ||X||_2 for f(X) = W X (no bias) with loss 1_M^T W X (Cor. 1, Eq. 19).

    Each row's gradient is X.

    Args:
      norm_x: ||X||_2 of the target, a finite number >= 0.
      rows: M, the number of rows of the attacker's linear layer, an integer >= 1.

    Returns:
      The gradient norm as a float.

    Raises:
      ValueError: if ``norm_x`` is negative or not finite, or ``rows`` < 1.
      TypeError: if an argument has the wrong type.
    """
    nx = check_nonnegative("norm_x", norm_x)
    m = check_int("rows", rows, minimum=1)
    return math.sqrt(m) * nx


def estimator_variance(
    norm_x: float,
    noise_multiplier: float,
    clip: float,
    rows: int = 1,
    *,
    output_grads: np.ndarray | None = None,
    rest_norm: float = 0.0,
) -> float:
    """Per-coordinate variance of the estimator X_hat_M (Riess et al. 2024, Eq. 17): (1/M^2) sum_j C^2 sigma^2 / (beta_C(X)^2 d_j^2).

    Here d_j = dL/df(X)_j (``output_grads``, default all ones = Cor. 1's loss) and
    ||G_X||^2 = sum_j d_j^2 ||X||^2 + ``rest_norm``^2 (Eq. 35; ``rest_norm`` collects bias gradients
    and the rest G_{X,P} of the network).

    For d_j = 1 and no rest this equals sigma^2 max(||X||^2, C^2 / M) (>= sigma^2 ||X||^2, Prop. B.2).

    Args:
      norm_x: ||X||_2 of the target, a finite number > 0.
      noise_multiplier: sigma (noise std sigma C on the clipped gradient), a finite number >= 0.
      clip: clipping norm C > 0.
      rows: M, the number of rows of the attacker's linear layer, an integer >= 1 (default 1).
      output_grads: d_j for each of the M rows, finite and non-zero; None (default) for all ones.
      rest_norm: norm of the remaining gradient (biases, other layers), >= 0 (default 0).

    Returns:
      The per-coordinate variance as a float (inf where it exceeds the float range, never an error).

    Raises:
      ValueError: if a value is out of range or not finite, or ``output_grads`` does not have ``rows``
        entries or holds a zero.
      TypeError: if a value has the wrong type.
    """
    nx = check_positive("norm_x", norm_x)
    s = check_nonnegative("noise_multiplier", noise_multiplier)
    c = check_positive("clip", clip)
    m = check_int("rows", rows, minimum=1)
    rest = check_nonnegative("rest_norm", rest_norm)
    d = np.ones(m) if output_grads is None else check_real_array("output_grads", output_grads).reshape(-1)
    if d.size != m:
        raise ValueError(f"output_grads must have length rows={m}, got {d.size}")
    if np.any(~np.isfinite(d)) or np.any(d == 0):
        raise ValueError("output_grads must be finite and non-zero (a zero row carries no signal)")
    # ||G|| = hypot(||d|| ||X||, rest) without squaring ||X|| (no OverflowError for ||X|| ~ 1e200)
    g = math.hypot(float(np.sqrt(np.sum(d * d))) * nx, rest)
    # C / beta_C = C max(1, ||G|| / C) = max(C, ||G||): no 0/0 when beta underflows (tiny C).
    scale = max(c, g)
    with np.errstate(over="ignore"):  # a variance beyond 1.8e308 is reported as inf, never an error
        return float(np.sum(np.square(scale * s / d)) / (float(m) * m))


def estimate_from_gradients(noisy_weight_grads: np.ndarray, scales: np.ndarray | float) -> np.ndarray:
    """The attacker's estimator (Riess et al. 2024, Eq. 16): X_hat_M = (1/M) sum_j grad~_{W_j} / s_j.

    Args:
      noisy_weight_grads: the (M, N) privatized weight gradient grad~_W.
      scales: the known s_j = beta_C(X) dL/df(X)_j, one per row, or a scalar (beta_C for Cor. 1's
        loss); finite and non-zero.

    Returns:
      The estimate X_hat_M, a float array of shape (N,).

    Raises:
      ValueError: if ``noisy_weight_grads`` is not 2-D, ``scales`` has neither 1 nor M entries, or a
        scale is zero or not finite.
      TypeError: if an argument is not an array of numbers.
    """
    g = check_real_array("noisy_weight_grads", noisy_weight_grads)
    if g.ndim != 2:
        raise ValueError(f"noisy_weight_grads must be a 2-d (M, N) array, got shape {g.shape}")
    s = check_real_array("scales", scales).reshape(-1)
    if s.size not in (1, g.shape[0]):
        raise ValueError(f"scales must be a number or one number per row ({g.shape[0]}), got {s.size} values")
    s = np.broadcast_to(s, (g.shape[0],))
    if np.any(~np.isfinite(s)) or np.any(s == 0):
        raise ValueError("scales must be finite and non-zero")
    return (g / s[:, None]).mean(axis=0)


def optimal_rows(clip: float, min_norm: float) -> int:
    """Smallest M for which Cor. 1's gradient sqrt(M) ||X|| reaches C for every ||X|| >= r: M = max(1, ceil((C / r)^2)).

    Then the estimator variance is sigma^2 ||X||^2 (its minimum, Prop. 1). This is the rule of the
    proof of Prop. 1 (Eq. 48) and of Figs. 1-2 of Riess et al. 2024; Eq. 18 prints ceil(C / r), see the module
    docstring. A relative 1e-12 absorbs the rounding of (C / r)^2 at the threshold.

    Args:
      clip: clipping norm C > 0.
      min_norm: r, the dataset's smallest non-zero norm, > 0.

    Returns:
      M as an int >= 1.

    Raises:
      ValueError: if an argument is not a finite number > 0, or C / r > 1e150 (the layer would need
        more than 1e300 rows).
      TypeError: if an argument is not a number.
    """
    c = check_positive("clip", clip)
    r = check_positive("min_norm", min_norm)
    if c / r > 1e150:
        raise ValueError(f"clip / min_norm must be <= 1e150 (the optimal layer would need (C / r)^2 > 1e300 rows), "
                         f"got clip={clip!r}, min_norm={min_norm!r}")
    # smallest m with m r^2 >= c^2, up to a relative 1e-12 that absorbs the rounding of (c/r)^2
    # (at the threshold the variance is sigma^2 max(r^2, C^2/M) = sigma^2 r^2 (1 + O(1e-12)))
    target = (c * c) * (1.0 - 1e-12)
    m = max(1, math.ceil((c / r) ** 2 * (1.0 - 1e-12)))
    while m > 1 and (m - 1) * r * r >= target:
        m -= 1
    while m * r * r < target:
        m += 1
    return m


def rows_prop1_as_printed(clip: float, min_norm: float) -> int:
    """M = max(1, ceil(C / r)) exactly as Eq. 18 of Riess et al. 2024 prints it.

    Kept for comparison: it is optimal only when C <= r; use :func:`optimal_rows`.

    Args:
      clip, min_norm: as in :func:`optimal_rows`.

    Returns:
      M as an int >= 1.

    Raises:
      ValueError, TypeError: as :func:`optimal_rows` (no limit on C / r here).
    """
    c = check_positive("clip", clip)
    r = check_positive("min_norm", min_norm)
    x = c / r
    if not x <= 1e18:  # ceil(inf) raised OverflowError (min_norm 1e-320)
        raise ValueError(f"clip / min_norm must be at most 1e18 (rows of the attacker's layer), got clip={clip!r}, "
                         f"min_norm={min_norm!r}")
    return max(1, math.ceil(x))


def reconstruction_std(noise_multiplier: float, norm_x: float) -> float:
    """Per-coordinate std sigma ||X||_2 of the optimal reconstruction (Riess et al. 2024, Eq. 20, Cor. 1).

    X_hat ~ N(X, sigma^2 ||X||^2 I).

    Args:
      noise_multiplier: sigma, a finite number >= 0.
      norm_x: ||X||_2 of the target, a finite number >= 0.

    Returns:
      sigma ||X||_2 as a float.

    Raises:
      ValueError: if an argument is negative or not finite.
      TypeError: if an argument is not a number.
    """
    return check_nonnegative("noise_multiplier", noise_multiplier) * check_nonnegative("norm_x", norm_x)


def min_nonzero_norm(X: np.ndarray) -> float:
    r"""min_{X in D \ {0_N}} ||X||_2 over the rows of ``X`` (n, ...) (Riess et al. 2024, Prop. 1, 3).

    Args:
      X: the dataset, an array of n >= 1 records (each record flattened).

    Returns:
      r, the smallest non-zero l2 norm of a record.

    Raises:
      ValueError: if ``X`` holds no record, or no record with a non-zero norm.
      TypeError: if ``X`` is not an array of numbers.
    """
    a = check_real_array("X", X)
    if a.ndim < 1 or a.shape[0] == 0:
        raise ValueError("X must hold at least one record")
    norms = np.sqrt(np.sum(a.reshape(a.shape[0], -1) ** 2, axis=1))
    nz = norms[norms > 0]
    if nz.size == 0:
        raise ValueError("X has no record with non-zero norm")
    return float(nz.min())


# --------------------------------------------------------------------------- the MSE law (Thm 2, Props. 2, 3, B.3, 7)


def _scale(noise_multiplier: float, norm: float, releases: int) -> float:
    """Per-coordinate variance sigma^2 ||X||^2 / k (Eq. 20, Prop. 7)."""
    s = check_positive("noise_multiplier", noise_multiplier)
    nx = check_positive("norm", norm)
    k = check_int("releases", releases, minimum=1)
    return s * s * nx * nx / k


def _dim_and_scale(noise_multiplier: float, norm: float, dim: int, releases: int) -> tuple[int, float]:
    """(N, sigma^2 ||X||^2 / k): the parameters of the MSE law (Thm 2), checked."""
    n = check_int("dim", dim, minimum=1)
    return n, _scale(noise_multiplier, norm, releases)


def _numbers(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> np.ndarray:
    """``value`` (a number or an array) as a float array of numbers in [low, high], nan excluded."""
    a = check_real_array(name, value)
    if np.any(np.isnan(a)) or np.any(a < low) or np.any(a > high):
        rng = f"in [{low:g}, {high:g}]" if high < math.inf else f">= {low:g}" if low > -math.inf else "(not nan)"
        raise ValueError(f"{name} must be numbers {rng}")
    return a


def _scalar_or_array(out: Any) -> float | np.ndarray:
    """A float for a 0-d result (a scalar argument), else the array itself."""
    return float(out) if np.ndim(out) == 0 else out


def averaged_variance(noise_multiplier: float, norm: float, releases: int) -> float:
    """Var[x_hat_{i,avg}] = sigma^2 ||X||^2 / k after averaging k matched reconstructions (Prop. 7).

    Args:
      noise_multiplier, norm, releases: as in :func:`mse_distribution` (``releases`` required).

    Returns:
      The per-coordinate variance as a float.

    Raises:
      ValueError, TypeError: as :func:`mse_distribution`.
    """
    return _scale(noise_multiplier, norm, releases)


def expected_mse(noise_multiplier: float, norm: float, releases: int = 1) -> float:
    """E[MSE(X, X_hat)] = sigma^2 ||X||^2 (Riess et al. 2024, Prop. 2, Eq. 21), divided by k for k averaged releases (Prop. 7).

    With ``norm = r`` it is the smallest expected MSE over the dataset; with ``norm = C`` and C <= r,
    a data-independent lower bound.

    Args:
      noise_multiplier, releases: as in :func:`mse_distribution`.
      norm: ||X||_2 (or r, or C), a finite number > 0.

    Returns:
      The expected MSE as a float.

    Raises:
      ValueError, TypeError: as :func:`mse_distribution`.
    """
    return _scale(noise_multiplier, norm, releases)


def mse_distribution(noise_multiplier: float, norm: float, dim: int, releases: int = 1) -> Any:
    """The exact law (sigma^2 ||X||^2 / (N k)) chi^2_N of MSE(X, X_hat) (Riess et al. 2024, Thm 2, Eq. 22).

    The functions of this law below (:func:`mse_cdf`, :func:`mse_quantile`,
    :func:`mse_normal_limit_cdf`, :func:`psnr_sf`, :func:`psnr_pdf`) take these four parameters too.

    Args:
      noise_multiplier: sigma, a finite number > 0.
      norm: ||X||_2 of the target, a finite number > 0.
      dim: N, the number of coordinates, an integer >= 1.
      releases: k, the number of averaged releases, an integer >= 1 (default 1).

    Returns:
      A frozen ``scipy.stats.chi2`` (df = N, scale = sigma^2 ||X||^2 / (N k)).

    Raises:
      ValueError: if a value is out of range or not finite (the message names it).
      TypeError: if a value has the wrong type.
    """
    from scipy import stats  # lazy: scipy.stats is slow to import and the CLI path avoids it

    n, v = _dim_and_scale(noise_multiplier, norm, dim, releases)
    return stats.chi2(df=n, scale=v / n)


def mse_cdf(eta: float | np.ndarray, noise_multiplier: float, norm: float, dim: int, releases: int = 1):
    """P(MSE(X, X_hat) <= eta) = Gamma_R(N/2, N k eta / (2 sigma^2 ||X||^2)) (Riess et al. 2024, Thm 2, Eq. 23).

    The exact value as computed by scipy (no safe-side margin; :func:`mse_rero` adds one).

    Args:
      eta: MSE threshold(s) >= 0, a number or an array.
      noise_multiplier, norm, dim, releases: as in :func:`mse_distribution`.

    Returns:
      The probability: a float for a scalar ``eta``, else an array of its shape.

    Raises:
      ValueError: if ``eta`` is negative or nan; TypeError, ValueError: as :func:`mse_distribution`.
    """
    n, v = _dim_and_scale(noise_multiplier, norm, dim, releases)
    e = _numbers("eta", eta, low=0.0)
    return _scalar_or_array(special.gammainc(n / 2.0, n * e / (2.0 * v)))


def mse_quantile(p: float | np.ndarray, noise_multiplier: float, norm: float, dim: int, releases: int = 1):
    """The p-quantile of MSE(X, X_hat): (2 sigma^2 ||X||^2 / (N k)) Gamma_R^{-1}(N/2, p) (Thm 2).

    Args:
      p: probability (or probabilities) in [0, 1], a number or an array.
      noise_multiplier, norm, dim, releases: as in :func:`mse_distribution`.

    Returns:
      The quantile: a float for a scalar ``p``, else an array of its shape.

    Raises:
      ValueError: if ``p`` is not in [0, 1]; TypeError, ValueError: as :func:`mse_distribution`.
    """
    n, v = _dim_and_scale(noise_multiplier, norm, dim, releases)
    pa = _numbers("p", p, low=0.0, high=1.0)
    return _scalar_or_array(2.0 * v / n * special.gammaincinv(n / 2.0, pa))


def mse_normal_limit_cdf(eta: float | np.ndarray, noise_multiplier: float, norm: float, dim: int, releases: int = 1):
    """Normal approximation of P(MSE <= eta) from Prop. B.3: Phi(sqrt(N/2) (eta / v - 1)), v = sigma^2 ||X||^2 / k.

    From sqrt(N)(MSE - sigma^2||X||^2) -> N(0, 2 sigma^4 ||X||^4). An approximation for large N,
    not a bound.

    Args:
      eta: MSE threshold(s), a number or an array (not nan).
      noise_multiplier, norm, dim, releases: as in :func:`mse_distribution`.

    Returns:
      The approximate probability: a float for a scalar ``eta``, else an array of its shape.

    Raises:
      ValueError: if ``eta`` is nan; TypeError, ValueError: as :func:`mse_distribution`.
    """
    n, v = _dim_and_scale(noise_multiplier, norm, dim, releases)
    e = _numbers("eta", eta)
    return _scalar_or_array(special.ndtr(math.sqrt(n / 2.0) * (e / v - 1.0)))


def log_regularized_gamma_p(a: float, x: float) -> float:
    """log Gamma_R(a, x) (lower regularized gamma), accurate where Gamma_R underflows.

    Uses log(gammainc) where it is representable (> 1e-300), else the series
    Gamma_R(a, x) = x^a e^-x / Gamma(a+1) * sum_{j>=0} x^j / ((a+1)...(a+j)) in logs (it converges
    geometrically there since x < a + 1).

    Args:
      a: shape parameter, a finite number > 0 (N/2 for the MSE law).
      x: argument, a finite number >= 0.

    Returns:
      log Gamma_R(a, x) (<= 0); -inf for x = 0.

    Raises:
      ValueError: if ``a`` is not > 0, ``x`` is negative, or either is not finite.
      TypeError: if an argument is not a number.
    """
    a = check_positive("a", a)
    x = check_nonnegative("x", x)
    if x == 0:
        return -math.inf
    p = float(special.gammainc(a, x))
    if p > 1e-300:
        return math.log(p)
    # series (converges geometrically since x < a + 1 whenever p underflows)
    term, total, j = 1.0, 1.0, 0
    while term > 1e-17 * total and j < 100000:
        j += 1
        term *= x / (a + j)
        total += term
    return a * math.log(x) - x - float(special.gammaln(a + 1.0)) + math.log(total)


def _arg_x(n: int, k: int, eta: float, log_eta: float, sigma: float, norm: float) -> tuple[float, float, float]:
    """(x, log x, relative error of x) for x = N k eta / (2 sigma^2 r^2).

    Direct product/quotient (relative error < 8 eps) when every intermediate is a normal float;
    otherwise in logs (no ZeroDivisionError/overflow/underflow for tiny or huge sigma, r, eta;
    x may then be 0 or inf in floats while log x stays exact), with the rounding of the log sum.
    """
    eps = float(np.finfo(float).eps)
    if log_eta == -math.inf:
        return 0.0, -math.inf, 0.0
    den = 2.0 * sigma * sigma * norm * norm
    if 0.0 < eta < math.inf and 1e-300 < den < 1e300:
        x = n * k * eta / den
        if 1e-300 < x < 1e300:
            return x, math.log(x), 8.0 * eps
    terms = (math.log(n), math.log(k), log_eta, -math.log(2.0), -2.0 * math.log(sigma), -2.0 * math.log(norm))
    lx = math.fsum(terms)
    dlx = 4.0 * eps * (sum(abs(t) for t in terms) + abs(lx)) + 2.0 * eps
    return (math.exp(lx) if lx < 709.0 else math.inf), lx, dlx


def _gamma_bound(n: int, arg: tuple[float, float, float], method: str, inputs: dict[str, Any], extras: dict[str, Any]) -> Bound:
    """Bound with value Gamma_R(N/2, x) on the safe side; ``arg`` = (x, log x, rel. error of x)."""
    a = n / 2.0
    x, log_x, dlx = arg
    extras = dict(extras)
    if x == math.inf:
        return Bound(value=1.0, error=0.0, method=method, direction="upper", inputs=inputs,
                     extras=dict(extras, log_value=0.0))
    if x == 0.0 and log_x > -math.inf:
        # x underflowed: Gamma_R(a, x) = x^a e^-x / Gamma(a+1) * S, 1 <= S <= 1/(1 - x/(a+1)),
        # so log Gamma_R = a log x - lgamma(a+1) up to < 1e-300; add the rounding of that sum.
        lv = a * log_x - float(special.gammaln(a + 1.0))
        lv += a * dlx + 8.0 * np.finfo(float).eps * (abs(a * log_x) + abs(lv))
        return Bound(value=_TINY, error=_TINY, method=method, direction="upper", inputs=inputs,
                     extras=dict(extras, log_value=lv))
    raw = float(special.gammainc(a, x))
    if raw == 0.0 and x > 0:
        # log Gamma_R from the series, rounded up: the float sum a log x - x - lgamma(a+1) + ...
        # (a few ulps of its largest term) and the rounding of x (d log P / d log x <= a + x)
        lv = log_regularized_gamma_p(a, x)
        big = abs(a * log_x) + x + float(special.gammaln(a + 1.0)) + 1.0
        extras["log_value"] = lv + (a + x) * dlx + 8.0 * np.finfo(float).eps * big
        value = _TINY
        err = _TINY
    else:
        # relative error of gammainc plus the propagated rounding of its argument x
        # (d log P / d log x <= a + x for P = Gamma_R(a, x))
        rel = GAMMA_REL_ERROR + (a + x) * dlx
        value = min(1.0, raw * (1.0 + rel))
        err = value - raw
        if raw > 0:
            extras["log_value"] = math.log(value)
    return Bound(value=value, error=err, method=method, direction="upper", inputs=inputs, extras=extras)


def _norm_for_bound(min_norm: float | None, clip: float | None) -> tuple[float, str]:
    if min_norm is None and clip is None:
        raise ValueError("min_norm or clip must be given (min_norm > 0: the dataset's smallest non-zero norm)")
    if min_norm is not None:
        return check_positive("min_norm", min_norm), "min_norm"
    return check_positive("clip", clip), "clip (assumes C <= min ||X||)"


def mse_rero(
    eta: float, noise_multiplier: float, dim: int, *, min_norm: float | None = None, clip: float | None = None,
    releases: int = 1,
) -> Bound:
    """P(MSE <= eta) of the optimal unbiased analytic attack on a record of norm r (Riess et al. 2024, Prop. 3, Eq. 24).

    An attack law, not a bound on every attacker (see the module docstring and
    :mod:`rerokit.bounds.uninformed_scope`): Riess et al. 2024 state it as (eta, gamma)-ReRo, which holds among
    unbiased reconstructions only.

    gamma(eta) = Gamma_R(N/2, N k eta / (2 sigma^2 r^2)) with r = ``min_norm``, the dataset's smallest
    non-zero norm; k averaged releases divide the variance by k (Prop. 7).

    With only ``clip`` the data-independent gamma'(eta) = Gamma_R(N/2, N k eta / (2 sigma^2 C^2)) is
    returned; it holds under the assumption C <= r (stated in ``extras["assumption"]``). With both
    and C <= r, ``extras["gamma_data_independent"]`` also holds gamma' (>= gamma).

    Args:
      eta: MSE threshold >= 0.
      noise_multiplier: sigma, a finite number > 0.
      dim: N, the number of coordinates, an integer >= 1.
      min_norm: r > 0, the dataset's smallest non-zero norm (see :func:`min_nonzero_norm`).
      clip: clipping norm C > 0. Give ``min_norm``, ``clip`` or both.
      releases: k, the number of averaged releases, an integer >= 1 (default 1).

    Returns:
      A :class:`Bound` (``direction="upper"``) with value gamma rounded up by its relative error
      (``error``; see the module docstring; the smallest positive float with ``extras["log_value"]``
      where gamma underflows) and ``extras`` expected_mse, norm_used and, with both norms,
      optimal_rows.

    Raises:
      ValueError: if neither ``min_norm`` nor ``clip`` is given, a value is out of range or not
        finite, or (with both) clip / min_norm > 1e150.
      TypeError: if a value has the wrong type.
    """
    e = check_nonnegative("eta", eta)
    return _mse_rero(e, math.log(e) if e > 0 else -math.inf, noise_multiplier, dim, min_norm, clip, releases)


def _mse_rero(
    e: float, log_e: float, noise_multiplier: float, dim: int, min_norm: float | None, clip: float | None, releases: int
) -> Bound:
    """:func:`mse_rero` with eta also given as log eta (eta itself may be 0 or inf in floats)."""
    s = check_positive("noise_multiplier", noise_multiplier)
    n = check_int("dim", dim, minimum=1)
    k = check_int("releases", releases, minimum=1)
    norm, which = _norm_for_bound(min_norm, clip)
    c = None if clip is None else check_positive("clip", clip)
    extras: dict[str, Any] = {
        "expected_mse": expected_mse(s, norm, k),
        "norm_used": which,
    }
    if min_norm is None:
        extras["assumption"] = "clip <= min_X ||X||_2 (data-independent bound of Prop. 3)"
    elif c is not None:
        extras["optimal_rows"] = optimal_rows(c, norm)
    inputs = {"eta": e, "noise_multiplier": s, "dim": n, "min_norm": min_norm, "clip": clip, "releases": k}
    b = _gamma_bound(n, _arg_x(n, k, e, log_e, s, norm), "uninformed-mse (Riess et al. 2024 Prop. 3, Thm 2)", inputs, extras)
    if min_norm is not None and c is not None and c <= norm:
        # gamma' >= gamma (C <= r); at C within an ulp of r the rounding of the argument could put the
        # computed gamma' 1 ulp below gamma (found by hypothesis: r 1, C = r / (1 + 2^-52)): the max
        # is as certified (both upper bounds, gamma' the larger exactly)
        b.extras["gamma_data_independent"] = max(_gamma_bound(n, _arg_x(n, k, e, log_e, s, c), "", {}, {}).value, b.value)
    return b


def psnr_mse_threshold(psnr_threshold: float, data_range: float) -> float:
    """eta~(eta) = 10^(-eta/10) R^2, the MSE below which PSNR >= eta dB for data range R (Riess et al. 2024, Prop. 4).

    R = max_D max(X) - min_D min(X). Computed in logs for extreme thresholds.

    Args:
      psnr_threshold: eta in dB, a finite number.
      data_range: R > 0.

    Returns:
      eta~ as a float (0 or inf where it leaves the float range).

    Raises:
      ValueError: if ``psnr_threshold`` is not finite or ``data_range`` is not a finite number > 0.
      TypeError: if an argument is not a number.
    """
    p = check_real("psnr_threshold", psnr_threshold)
    r = check_positive("data_range", data_range)
    if abs(p) < 3000.0:  # 10^(-p/10) is a normal float (the product may still round to 0/inf)
        return 10.0 ** (-p / 10.0) * r * r
    lg = _log_psnr_mse_threshold(p, r)
    return math.exp(lg) if lg < 709.0 else math.inf


def _log_psnr_mse_threshold(p: float, r: float) -> float:
    """log eta~ = -(eta/10) ln 10 + 2 ln R (no overflow/underflow for extreme eta)."""
    return -p / 10.0 * math.log(10.0) + 2.0 * math.log(r)


def psnr_rero(
    psnr_threshold: float, data_range: float, noise_multiplier: float, dim: int, *,
    min_norm: float | None = None, clip: float | None = None, releases: int = 1,
) -> Bound:
    """P(PSNR(X, X_hat) >= eta) = Gamma_R(N/2, N k eta~ / (2 sigma^2 r^2)), eta~ = 10^(-eta/10) R^2 (Riess et al. 2024, Props. 4-5),
    for the optimal unbiased attack X_hat (an attack law).

    For the optimal unbiased reconstruction (an attack law, as :func:`mse_rero`): (-eta, gamma~)-ReRo w.r.t.
    -PSNR (Eqs. 25-27); with only ``clip``
    (C <= r assumed) the data-independent version (Eq. 26).

    Args:
      psnr_threshold, data_range: as in :func:`psnr_mse_threshold`.
      noise_multiplier, dim, min_norm, clip, releases: as in :func:`mse_rero`.

    Returns:
      A :class:`Bound` (upper bound, safe side) as :func:`mse_rero`, with ``extras["mse_threshold"]``.

    Raises:
      ValueError: as :func:`psnr_mse_threshold` and :func:`mse_rero`.
      TypeError: if a value has the wrong type.
    """
    eta_t = psnr_mse_threshold(psnr_threshold, data_range)
    log_eta_t = _log_psnr_mse_threshold(float(psnr_threshold), float(data_range))
    b = _mse_rero(eta_t, log_eta_t, noise_multiplier, dim, min_norm, clip, releases)
    return _psnr_bound(b, "uninformed-psnr (Riess et al. 2024 Props. 4-5)", psnr_threshold, data_range, eta_t)


def _psnr_bound(b: Bound, method: str, psnr_threshold: float, data_range: float, eta_t: float) -> Bound:
    """``b``, a bound at the MSE threshold eta~, restated for the PSNR threshold eta~ comes from."""
    inputs = dict(b.inputs, psnr_threshold=float(psnr_threshold), data_range=float(data_range))
    return Bound(b.value, b.error, method, "upper", None, inputs, dict(b.extras, mse_threshold=eta_t))


def psnr_sf(psnr_threshold: float | np.ndarray, peak: float, noise_multiplier: float, norm: float, dim: int, releases: int = 1):
    """P(PSNR(X, X_hat) >= eta) = P(MSE <= 10^(-eta/10) peak^2) for one target of norm ||X|| (Riess et al. 2024, Eq. 63).

    peak = max(X) - min(X) (or the data range); proof of Prop. 4. The exact value (no safe-side
    margin).

    Args:
      psnr_threshold: eta in dB, a number or an array (not nan).
      peak: the peak value (range) in the PSNR, > 0.
      noise_multiplier, norm, dim, releases: as in :func:`mse_distribution`.

    Returns:
      The probability: a float for a scalar threshold, else an array of its shape.

    Raises:
      ValueError: if a threshold is nan or ``peak`` is not > 0; TypeError, ValueError: as
        :func:`mse_distribution`.
    """
    pk = check_positive("peak", peak)
    t = _numbers("psnr_threshold", psnr_threshold)
    return mse_cdf(10.0 ** (-t / 10.0) * pk * pk, noise_multiplier, norm, dim, releases)


def psnr_pdf(psnr: float | np.ndarray, peak: float, noise_multiplier: float, norm: float, dim: int, releases: int = 1):
    """Density of PSNR = 10 log10(peak^2 / MSE) under Thm 2: f_MSE(m) * m ln(10) / 10 at m = peak^2 10^(-psnr/10).

    (Change of variables.)

    Args:
      psnr: PSNR value(s) in dB, a number or an array (not nan).
      peak, noise_multiplier, norm, dim, releases: as in :func:`psnr_sf`.

    Returns:
      The density: a float for a scalar ``psnr``, else an array of its shape.

    Raises:
      ValueError: if a PSNR value is nan; TypeError, ValueError: as :func:`psnr_sf`.
    """
    pk = check_positive("peak", peak)
    ps = _numbers("psnr", psnr)
    m = pk * pk * 10.0 ** (-ps / 10.0)
    density = mse_distribution(noise_multiplier, norm, dim, releases).pdf(m)
    return _scalar_or_array(density * m * math.log(10.0) / 10.0)


# --------------------------------------------------------------------------- NCC (Prop. 6)


def ncc_value(noise_multiplier: float, norm: float, var_x: float, releases: int = 1) -> float:
    """NCC(x, x_hat) = sqrt(1 / (1 + sigma^2 ||X||^2 / (k Var(x)))) (Riess et al. 2024, Prop. 6, Eq. 28, left side).

    k averaged releases.

    Args:
      noise_multiplier, norm, releases: as in :func:`mse_distribution`.
      var_x: Var(x), the empirical variance of the target's coordinates, > 0.

    Returns:
      The NCC in (0, 1).

    Raises:
      ValueError, TypeError: as :func:`mse_distribution`, or if ``var_x`` is not a finite number > 0.
    """
    v = check_positive("var_x", var_x)
    return math.sqrt(1.0 / (1.0 + _scale(noise_multiplier, norm, releases) / v))


def ncc_bound(noise_multiplier: float, dim: int, releases: int = 1) -> float:
    """NCC(x, x_hat) <= sqrt(1 / (1 + sigma^2 N / k)) (Riess et al. 2024, Prop. 6, Eq. 28, right side).

    Uses Var(x) <= ||X||^2 / N; k averaged releases divide sigma^2 by k (Prop. 7).

    Args:
      noise_multiplier: sigma, a finite number >= 0.
      dim, releases: as in :func:`mse_distribution`.

    Returns:
      The upper bound on the NCC, in (0, 1].

    Raises:
      ValueError, TypeError: as :func:`mse_distribution` (here sigma = 0 is allowed).
    """
    s = check_nonnegative("noise_multiplier", noise_multiplier)
    n = check_int("dim", dim, minimum=1)
    k = check_int("releases", releases, minimum=1)
    return math.sqrt(1.0 / (1.0 + s * s * n / k))


# --------------------------------------------------------------------------- several releases (Sec. 4.3)


def prob_used_k_times(k: int | np.ndarray, steps: int, sampling_rate: float):
    """P(a record is sampled exactly k times in T Poisson-sampled steps) = Binom(k; T, q).

    Riess et al. 2024 Sec. 4.3 writes C(T, k) |D|^-k for q = 1/|D|, omitting the factor (1-q)^(T-k).

    Args:
      k: release count(s), integers (a number or an array; values outside [0, T] give 0).
      steps: T, an integer >= 1.
      sampling_rate: q in (0, 1].

    Returns:
      The probability: a float for a scalar ``k``, else an array of its shape.

    Raises:
      ValueError: if a ``k`` is not a finite integer, ``steps`` < 1 or ``sampling_rate`` not in (0, 1].
      TypeError: if a value has the wrong type.
    """
    from scipy import stats

    t = check_int("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate)
    ka = check_real_array("k", k)
    if np.any(~np.isfinite(ka)) or np.any(ka != np.round(ka)):
        raise ValueError("k must be integers (release counts)")
    return _scalar_or_array(stats.binom.pmf(ka, t, q))


def _binom_pmf(ks: np.ndarray, t: int, q: float) -> tuple[np.ndarray, float]:
    """Binomial(t, q) probabilities of the integers ``ks`` (0 <= k <= t), from log-gamma functions,
    and a bound on their relative rounding error (the log's terms are large for large t)."""
    if q >= 1.0:
        return (ks == t).astype(float), 0.0
    terms = (special.gammaln(t + 1.0), special.gammaln(ks + 1.0), special.gammaln(t - ks + 1.0),
             special.xlogy(ks, q), (t - ks) * math.log1p(-q))
    lp = terms[0] - terms[1] - terms[2] + terms[3] + terms[4]
    err = 8.0 * np.finfo(float).eps * float(np.max(sum(np.abs(x) for x in terms) + np.abs(lp)))
    return np.exp(lp), math.expm1(err)


def _binom_window(t: int, q: float, tail: float) -> tuple[int, int]:
    """[lo, hi] holding all but about ``tail`` of the Binomial(t, q) mass (one step wider each side)."""
    if q >= 1.0:
        return t, t
    lo = special.bdtrik(tail / 2, t, q)
    hi = special.bdtrik(1.0 - tail / 2, t, q)
    lo = 0 if not np.isfinite(lo) else int(max(0, math.floor(lo) - 1))
    hi = t if not np.isfinite(hi) else int(min(t, math.ceil(hi) + 1))
    return lo, max(lo, hi)


def mse_rero_over_steps(
    eta: float, noise_multiplier: float, dim: int, steps: int, sampling_rate: float, *,
    min_norm: float | None = None, clip: float | None = None, baseline: float = 0.0, tail: float = 1e-15,
) -> Bound:
    """Worst case over all T steps when the adversary matches and averages every release (Riess et al. 2024, Sec. 4.3 + Prop. 7).

    gamma = sum_k Binom(k; T, q) gamma_k(eta), with gamma_k = Gamma_R(N/2, N k eta / (2 sigma^2 r^2))
    for k >= 1 and gamma_0 = ``baseline`` (the success without any release; 0 for the prior-free
    adversary, Riess et al. 2024, first version, Sec. 3.2).

    Only k in the central range holding all but ``tail`` of the binomial mass is summed; the mass
    left out is added to the value (gamma_k <= 1) and counted in ``error`` (with the relative
    rounding allowance).

    Args:
      eta, noise_multiplier, dim: as in :func:`mse_rero`.
      steps: T, an integer >= 1.
      sampling_rate: q in (0, 1].
      min_norm, clip: as in :func:`mse_rero`; ``clip`` is used only when ``min_norm`` is not given (and
        then assumes C <= r).
      baseline: gamma_0 in [0, 1] (default 0).
      tail: binomial mass that may be left out, in (0, 1) (default 1e-15).

    Returns:
      A :class:`Bound` (``direction="upper"``) with ``error`` = value - raw sum, and ``extras``
      norm_used, k_range, expected_releases and gamma_single_release.

    Raises:
      ValueError: if neither ``min_norm`` nor ``clip`` is given, or a value is out of range or not
        finite.
      TypeError: if a value has the wrong type.
    """
    e = check_nonnegative("eta", eta)
    s = check_positive("noise_multiplier", noise_multiplier)
    n = check_int("dim", dim, minimum=1)
    t = check_int("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate)
    b0 = check_probability("baseline", baseline, low_open=False)
    tl = check_probability("tail", tail, high_open=True)
    norm, which = _norm_for_bound(min_norm, clip)
    # the binomial through scipy.special (scipy.stats costs a second to import on the report's path); the
    # window only decides which k are summed: whatever mass it misses is added to the value below
    lo, hi = _binom_window(t, q, tl)
    ks = np.arange(lo, hi + 1)
    pmf, pmf_rel = _binom_pmf(ks, t, q)
    left_out = max(0.0, 1.0 - float(pmf.sum())) + pmf_rel * float(pmf.sum())
    x1, _, dx1 = _arg_x(n, 1, e, math.log(e) if e > 0 else -math.inf, s, norm)  # x of one release
    with np.errstate(invalid="ignore"):
        xk = np.where(ks == 0, 0.0, ks * x1)
    gk = special.gammainc(n / 2.0, xk)
    gk = np.where(ks == 0, b0, gk)
    raw = float(np.sum(pmf * gk))
    xmax = hi * x1
    rel = GAMMA_REL_ERROR + (n / 2.0 + xmax) * (dx1 + 4.0 * np.finfo(float).eps) + pmf_rel
    value = min(1.0, raw * (1.0 + rel) + left_out + 1e-15)
    inputs = {"eta": e, "noise_multiplier": s, "dim": n, "steps": t, "sampling_rate": q,
              "min_norm": min_norm, "clip": clip, "baseline": b0}
    extras = {"norm_used": which, "k_range": [lo, hi], "expected_releases": t * q,
              "gamma_single_release": float(special.gammainc(n / 2.0, x1))}
    return Bound(value, value - raw, "uninformed-mse-over-steps (Riess et al. 2024 Sec. 4.3, Prop. 7)", "upper", None, inputs, extras)


# --------------------------------------------------------------------------- calibration


def calibrate_noise_mse(
    eta: float, target_gamma: float, dim: int, *, min_norm: float | None = None, clip: float | None = None,
    releases: int = 1,
) -> Bound:
    """Smallest noise multiplier sigma with gamma(eta) <= target (Prop. 3 inverted).

    This calibrates the attack law of the optimal *unbiased* attack, not a bound on every attacker:
    for a certified target use the informed bound with a continuous prior
    (:mod:`rerokit.bounds.uninformed_scope`, :func:`rerokit.bounds.calibrate.calibrate_noise_multiplier`).

    sigma = sqrt(N k eta / (2 r^2 Gamma_R^{-1}(N/2, target))), nudged upward until the safe-side
    gamma is <= target. ``direction="upper"``: any sigma >= value keeps gamma <= target.

    Args:
      eta: MSE threshold > 0.
      target_gamma: target success bound, in (0, 1).
      dim, min_norm, clip, releases: as in :func:`mse_rero`; ``clip`` is used only when ``min_norm`` is
        not given (and then assumes C <= r).

    Returns:
      A :class:`Bound` with value sigma, ``error`` = its distance above the closed-form solution,
      and ``extras`` gamma_at_value (the certified gamma at sigma) and norm_used.

    Raises:
      ValueError: if neither ``min_norm`` nor ``clip`` is given, a value is out of range, or
        ``target_gamma`` is too small to invert Gamma_R(N/2, .).
      TypeError: if a value has the wrong type.
    """
    e = check_positive("eta", eta)
    g = check_probability("target_gamma", target_gamma, high_open=True)
    n = check_int("dim", dim, minimum=1)
    k = check_int("releases", releases, minimum=1)
    norm, which = _norm_for_bound(min_norm, clip)
    xstar = float(special.gammaincinv(n / 2.0, g))
    if not xstar > 0:
        raise ValueError(f"target_gamma={g!r} is too small to invert Gamma_R(N/2, .) for dim={n}")
    # closed-form start; the safe-side gamma (rounded up) may exceed the target there by a few
    # ulps, and the one solver then finds the smallest sigma whose certified value meets it
    s0 = math.sqrt(n * k * e / (2.0 * xstar)) / norm  # / norm: inf, not ZeroDivisionError, where norm^2 underflows
    try:
        r = calibrate_monotone(
            lambda s: (lambda b: (b.value, b))(mse_rero(e, s, n, min_norm=norm, releases=k)), g,
            feasible="above", search=SearchRange(1e-300, 1e300, min(s0, 1e300)), rtol=1e-12, growth=1.0 + 1e-9,
            transform="logit",
        )
    except (NoFeasibleValue, AllFeasible) as exc:  # pragma: no cover - gamma -> 0 as sigma grows
        raise ValueError(f"target_gamma={g!r}: calibration failed ({exc})") from None
    sigma, b = r.x, r.payload
    inputs = {"eta": e, "target_gamma": g, "dim": n, "min_norm": min_norm, "clip": clip, "releases": k}
    return Bound(sigma, max(0.0, sigma - s0), "uninformed-calibrate-mse (Riess et al. 2024 Prop. 3)", "upper", None, inputs,
                 {"gamma_at_value": b.value, "norm_used": which})


def calibrate_noise_psnr(
    psnr_threshold: float, data_range: float, target_gamma: float, dim: int, *,
    min_norm: float | None = None, clip: float | None = None, releases: int = 1,
) -> Bound:
    """Smallest sigma with P(PSNR >= eta) <= target (Props. 4-5 inverted through eta~).

    Args:
      psnr_threshold, data_range: as in :func:`psnr_mse_threshold`.
      target_gamma, dim, min_norm, clip, releases: as in :func:`calibrate_noise_mse`.

    Returns:
      A :class:`Bound` as :func:`calibrate_noise_mse` (value sigma), with ``extras["mse_threshold"]``.

    Raises:
      ValueError: as :func:`psnr_mse_threshold` and :func:`calibrate_noise_mse`.
      TypeError: if a value has the wrong type.
    """
    eta_t = psnr_mse_threshold(psnr_threshold, data_range)
    b = calibrate_noise_mse(eta_t, target_gamma, dim, min_norm=min_norm, clip=clip, releases=releases)
    return _psnr_bound(b, "uninformed-calibrate-psnr (Riess et al. 2024 Props. 4-5)", psnr_threshold, data_range, eta_t)
