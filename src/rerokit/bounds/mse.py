"""Lower bounds on the mean squared error of a data reconstruction attack (Guo et al. 2022).

The adversary observes the trained model h ~ A(D_- u {z}) and estimates z in Z subset R^d by
z_hat(h) with mean mu(z) = E[z_hat(h)]. Its error is MSE = E ||z_hat(h) - z||_2^2 / d.

* Thm 1 (RDP, via Hammersley-Chapman-Robbins): if A is (2, eps)-RDP for REPLACE-ONE neighbours
  (App. B compares A(D u {z}) with A(D u {z + Delta e_i}); for DP-SGD see
  :func:`rerokit.accounting.events.replace_one_rdp_order2`),
  MSE >= sum_i gamma_i^2 diam_i(Z)^2 / (4 d) / (e^eps - 1) + ||mu(z) - z||^2 / d,
  gamma_i = inf_z |d mu_i / d z_i| (1 for an unbiased attack).
* Thm 2 (Fisher information leakage, via Cramer-Rao): for an unbiased attack
  MSE >= d / Tr(I_h(z)) = 1 / dFIL,  with dFIL = eta_bar^2 = Tr(I_h(z)) / d (Sec. 7.1),
  and >= Tr(J_mu I^{-1} J_mu^T)/d + ||mu - z||^2/d in general.
* Output perturbation (Chaudhuri et al. 2011) of L2-regularised ERM and its (alpha, eps)-RDP.
* The subsampling factor of FIL accounting (Thm 4) and the (eps, delta)-DP of the Gaussian
  mechanism it needs (Alg. 1).

Pure numpy/scipy (no torch): the FIL itself is computed in :mod:`rerokit.training.fil`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit._validate import check_choice, check_int, check_nonnegative, check_positive, check_probability
from rerokit._validate import check_epsilon, check_real, check_real_array
from rerokit.bounds.types import Bound

__all__ = [
    "rdp_epsilon_at_order",
    "rdp_mse_lower_bound",
    "rdp_mse_lower_bound_from_curve",
    "output_perturbation_sensitivity",
    "output_perturbation_rdp",
    "cramer_rao_mse_lower_bound",
    "cramer_rao_mse_lower_bound_matrix",
    "gaussian_dp_epsilon",
    "fil_subsampling_factor",
    "GELU_CLIP_FACTOR",
]

# max_u u / (GELU(u - 1) + 1): the GELU-smoothed clip of Alg. 1 (Guo et al. 2022, Sec. 6.2)
# bounds ||g_tilde|| <= factor * C. The paper states 1.115; the exact maximum is 1.1152189 for the
# erf GELU (at u = 1.5487) and 1.1152382 for the tanh approximation, both slightly above 1.115,
# so rerokit rounds up to 1.1153 (checked in tests).
GELU_CLIP_FACTOR = 1.1153


def _per_coordinate(name: str, value: float | Sequence[float] | np.ndarray, dim: int | None) -> np.ndarray:
    arr = check_real_array(name, value)
    if arr.ndim == 0:
        if dim is None:
            dim = 1
        arr = np.full(dim, float(arr))
    elif arr.ndim != 1:
        raise ValueError(f"{name} must be a number or a 1-d sequence, got shape {arr.shape}")
    elif dim is not None and arr.size != dim:
        raise ValueError(f"{name} has {arr.size} entries but dim is {dim}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must contain finite numbers >= 0")
    return arr


def rdp_epsilon_at_order(orders: Sequence[float] | np.ndarray, rdp: Sequence[float] | np.ndarray, alpha: float = 2.0) -> tuple[float, float]:
    """A valid (alpha, eps)-RDP guarantee read off an RDP curve given at ``orders``.

    Renyi divergence is non-decreasing in its order (Guo et al. 2022, Sec. 4, observation 4), so
    eps(alpha) <= eps(beta) for every beta >= alpha: returns ``(eps, beta)`` with the smallest
    eps(beta) over the listed orders beta >= alpha. Never interpolates (an interpolated value
    could lie below the true eps(alpha)).

    Args:
      orders: the RDP orders of the curve (flattened; inf allowed).
      rdp: the RDP values eps(order) >= 0, same length as ``orders`` (inf allowed).
      alpha: the order wanted, a finite number > 1 (default 2, the order of Thm 1).

    Returns:
      ``(eps, beta)``: a valid eps for order ``alpha`` (never below the true eps(alpha) of the
      curve) and the listed order beta >= alpha it was read at.

    Raises:
      ValueError: if ``alpha`` is not a finite number > 1, the arrays are empty or of different
        lengths, hold nan or a negative RDP value, or no order >= alpha is listed.
      TypeError: if an argument is not a number / an array of numbers.
    """
    a = check_real("alpha", alpha)
    if a <= 1:
        raise ValueError(f"alpha must be a finite number > 1, got {alpha!r}")
    o = check_real_array("orders", orders).reshape(-1)
    r = check_real_array("rdp", rdp).reshape(-1)
    if o.size == 0 or o.size != r.size:
        raise ValueError(f"orders and rdp must be non-empty and of equal length, got {o.size} and {r.size}")
    if np.any(np.isnan(o)) or np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("orders must be numbers and rdp values numbers >= 0 (inf allowed)")
    ok = o >= a
    if not np.any(ok):
        raise ValueError(f"orders must include an order >= {a} (got max {o.max()}); RDP at a lower order does not bound order {a}")
    i = int(np.argmin(np.where(ok, r, np.inf)))
    return float(r[i]), float(o[i])


def rdp_mse_lower_bound(
    epsilon: float,
    diameter: float | Sequence[float] | np.ndarray = 1.0,
    dim: int | None = None,
    *,
    gamma: float | Sequence[float] | np.ndarray = 1.0,
    bias_sq: float = 0.0,
) -> Bound:
    """Guo et al. 2022, Thm 1: MSE lower bound of any attack on a (2, eps)-RDP learner.

    MSE = E||z_hat - z||^2 / d >= [sum_i gamma_i^2 diam_i^2 / (4 d)] / (e^eps - 1) + bias_sq / d,
    where ``bias_sq`` = ||mu(z) - z||^2 and ``gamma_i`` = inf |d mu_i/d z_i| (1 for unbiased).

    ``diameter`` and ``gamma`` are per-coordinate (length ``dim``) or scalars (then ``dim``
    coordinates all share it; the variance term is independent of ``dim`` in that case).
    For Z = [0, 1]^d and eps = 1 the unbiased bound is 0.25/(e - 1) = 0.14549.
    e^eps - 1 is computed with ``expm1`` (accurate for small eps, no overflow for large eps);
    eps = 0 gives +inf.

    Args:
      epsilon: the (2, eps)-RDP epsilon for replace-one neighbours, a finite number >= 0.
      diameter: diam_i(Z), the diameter of the data domain per coordinate: a number >= 0 or a 1-D
        sequence of them (default 1: Z = [0, 1]^d).
      dim: d, the number of coordinates (an integer >= 1); None (default) takes it from the
        per-coordinate arrays (1 if both are scalars).
      gamma: gamma_i = inf_z |d mu_i / d z_i| per coordinate, >= 0: a number or a 1-D sequence
        (default 1, an unbiased attack).
      bias_sq: ||mu(z) - z||^2 of the attack, >= 0 (default 0, unbiased).

    Returns:
      A :class:`Bound` with ``direction="lower"``: ``value`` the MSE lower bound, reduced by its
      float rounding (``error``) so it never exceeds the exact bound (+inf for eps = 0); ``extras``
      variance_term, bias_term and the reference.

    Raises:
      ValueError: if a value is negative or not finite, ``dim`` < 1, an array is empty, not 1-D, or
        its length differs from ``dim`` (or from the other array's).
      TypeError: if a value has the wrong type.
    """
    eps = check_nonnegative("epsilon", epsilon)
    if dim is not None:
        dim = check_int("dim", dim, minimum=1)
    # scalars stay scalars: with one diameter and one gamma the variance term does not depend on
    # d, so no array of d entries is built (d = 1e9 would need 8 GB per array for nothing)
    diam = _per_coordinate("diameter", diameter, None if np.ndim(diameter) == 0 else dim)
    g = _per_coordinate("gamma", gamma, None if np.ndim(gamma) == 0 else (dim if diam.size == 1 else diam.size))
    sizes = {diam.size, g.size} - {1}
    if len(sizes) > 1:
        raise ValueError(f"gamma has {g.size} entries but diameter has {diam.size}")
    d = dim if dim is not None else (sizes.pop() if sizes else 1)
    b2 = check_nonnegative("bias_sq", bias_sq)
    with np.errstate(over="ignore"):  # diameters beyond ~1e154: inf, handled below
        if diam.size == 1 and g.size == 1:  # sum over d equal terms, divided by d
            numerator = float(g[0] ** 2 * diam[0] ** 2) / 4.0
        else:
            numerator = float(np.sum(g**2 * diam**2)) / (4.0 * d)
    # numerator / (e^eps - 1) written as numerator e^{-eps} / (1 - e^{-eps}): no overflow for
    # large eps (the bound underflows towards 0, the safe side).
    variance = math.inf if eps == 0 else numerator * math.exp(-eps) / -math.expm1(-eps)
    if eps > 0 and not math.isfinite(variance):  # overflow (subnormal eps, huge diameters): the true
        variance = np.finfo(float).max  # bound is finite, so report the largest float (below it), not inf
    value = variance + b2 / d
    # Relative float rounding of the few operations above; subtract to stay on the safe side.
    err = 0.0 if not math.isfinite(value) else 8 * np.finfo(float).eps * value
    return Bound(
        value=value - err if math.isfinite(value) else value,
        error=err,
        method="rdp_hcrb",
        direction="lower",
        inputs={"epsilon": eps, "dim": d,
                "diameter": (np.full(d, diam[0]) if diam.size == 1 else diam).tolist() if d <= 16 else float(diam.mean()),
                "bias_sq": b2},
        extras={"variance_term": variance, "bias_term": b2 / d, "reference": "Guo et al. 2022, Thm 1"},
    )


def rdp_mse_lower_bound_from_curve(
    orders: Sequence[float] | np.ndarray,
    rdp: Sequence[float] | np.ndarray,
    diameter: float | Sequence[float] | np.ndarray = 1.0,
    dim: int | None = None,
) -> Bound:
    """Thm 1 (unbiased attack) from any RDP curve: eps_2 from :func:`rdp_epsilon_at_order`.

    Args:
      orders: the RDP orders of the curve; must include an order >= 2.
      rdp: the RDP values at ``orders`` (>= 0, inf allowed).
      diameter: per-coordinate diameter of the data domain, a number or a 1-D sequence (default 1).
      dim: number of coordinates d; None (default) takes it from ``diameter``.

    Returns:
      A :class:`Bound` (lower bound on the MSE) as :func:`rdp_mse_lower_bound`, with
      ``extras`` order_used and epsilon_used.

    Raises:
      ValueError: as :func:`rdp_epsilon_at_order` and :func:`rdp_mse_lower_bound`.
    """
    eps, order = rdp_epsilon_at_order(orders, rdp, 2.0)
    b = rdp_mse_lower_bound(eps, diameter, dim)
    extras = dict(b.extras, order_used=order, epsilon_used=eps)
    return Bound(b.value, b.error, b.method, b.direction, b.interval, dict(b.inputs), extras)


def output_perturbation_sensitivity(n: int, lam: float, lipschitz: float = 1.0, adjacency: str = "replace") -> float:
    """L2 sensitivity Delta of the minimiser of (1/n) sum_i l(w; z_i) + (lam/2) ||w||^2.

    The objective (times n) is (n lam)-strongly convex and each loss is ``lipschitz``-Lipschitz
    in w (logistic loss: L = max ||x||, so L = 1 for features in the unit ball, Chaudhuri et al.
    2011). Replace-one: Delta = 2 L / (n lam) (Chaudhuri et al. 2011, Cor. 8). Add/remove with
    n lam held fixed (the regulariser does not rescale with the dataset size): Delta = L/(n lam).

    Args:
      n: number of training examples, an integer >= 1.
      lam: L2 regularisation strength lambda > 0.
      lipschitz: Lipschitz constant L of each loss in w, > 0 (default 1).
      adjacency: "replace" (default, replace-one) or "add_remove".

    Returns:
      Delta as a float.

    Raises:
      ValueError: if a value is out of range or not finite, or ``adjacency`` is unknown.
      TypeError: if a value has the wrong type.
    """
    n = check_int("n", n, minimum=1)
    lam = check_positive("lam", lam)
    L = check_positive("lipschitz", lipschitz)
    check_choice("adjacency", adjacency, ("replace", "add_remove"))
    k = 2.0 if adjacency == "replace" else 1.0
    return k * L / (n * lam)


def output_perturbation_rdp(
    n: int, lam: float, noise_std: float, alpha: float = 2.0, *, lipschitz: float = 1.0, adjacency: str = "replace"
) -> float:
    """eps(alpha) of output perturbation w_priv = w* + N(0, noise_std^2 I) (Gaussian mechanism).

    eps(alpha) = alpha Delta^2 / (2 noise_std^2) with Delta from
    :func:`output_perturbation_sensitivity` (Mironov 2017, Prop. 7). At alpha = 2 with
    replace-one adjacency and L = 1: eps_2 = Delta^2/sigma^2 = 4 / (n lam sigma)^2.

    Which number is right (the issue's question). Guo et al. 2022, Sec. 7.1 state
    "(2, eps)-RDP where eps = 2/(n lam sigma)", giving 1.58 for n = 12665, lam = sigma = 1e-2
    (and 1579 for sigma = 1e-5); the authors' code (facebookresearch/bounding_data_reconstruction,
    mnist_logistic_regression.py) uses 4/(n lam sigma)^2 = 2.494 (and 2.49e6), and adds noise
    sigma * randn, i.e. sigma is the noise standard deviation. With sigma the standard deviation
    the (2, eps)-RDP of the Gaussian mechanism is Delta^2/sigma^2 = 4/(n lam sigma)^2: the code
    is right. 2/(n lam sigma) = Delta/sigma is the mu of mu-GDP (the sensitivity-to-noise
    ratio), whose RDP curve alpha mu^2/2 is mu^2 = 2.494, not mu, at alpha = 2. The paper's
    number matches no definition of sigma as a standard deviation (eps_2 = Delta^2/sigma^2) or
    a variance (Delta^2/sigma = 0.0249): it would need a noise standard deviation
    sqrt(sigma Delta). Since 1.58 < 2.494 the paper's value *understates* the
    privacy loss (its RDP MSE bound 0.25/(e^1.58 - 1) = 0.0649 is above the valid 0.0225).
    rerokit implements alpha Delta^2 / (2 sigma^2). Caveat shared by both: Delta = 2/(n lam)
    needs ||x|| <= 1, while the paper's MNIST pixels in [0, 1]^784 are not normalised; pass
    ``lipschitz`` = max ||x|| (including an intercept coordinate) for such data.

    Args:
      n, lam, lipschitz, adjacency: as in :func:`output_perturbation_sensitivity`.
      noise_std: standard deviation sigma of the added Gaussian noise, > 0.
      alpha: the RDP order, a finite number > 1 (default 2).

    Returns:
      eps(alpha) >= 0 as a float (+inf where Delta / noise_std overflows).

    Raises:
      ValueError, TypeError: as :func:`output_perturbation_sensitivity`, or for ``noise_std`` / ``alpha``.
    """
    a = check_real("alpha", alpha)
    if a <= 1:
        raise ValueError(f"alpha must be a finite number > 1, got {alpha!r}")
    s = check_positive("noise_std", noise_std)
    delta = output_perturbation_sensitivity(n, lam, lipschitz, adjacency)
    # as a ratio: +inf (no privacy) rather than OverflowError/ZeroDivisionError at extreme values
    r = delta / s
    return a * r * r / 2.0


def cramer_rao_mse_lower_bound(dfil: float | Sequence[float] | np.ndarray) -> np.ndarray | float:
    """Guo et al. 2022, Thm 2 (unbiased attack): MSE >= d / Tr(I_h(z)) = 1 / dFIL.

    dFIL = 0 gives +inf (no information, no finite-variance unbiased estimator).

    Args:
      dfil: eta_bar^2 = Tr(I_h(z)) / d, the diagonal Fisher information leakage of Sec. 7.1:
        a number >= 0 or an array of them (one per sample).

    Returns:
      1 / dFIL: a float for a scalar input, else an array of the same shape.

    Raises:
      ValueError: if a value is negative or not finite.
      TypeError: if ``dfil`` is not a number / an array of numbers.
    """
    arr = check_real_array("dfil", dfil)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("dfil must contain finite numbers >= 0")
    with np.errstate(divide="ignore"):
        out = np.where(arr > 0, 1.0 / np.where(arr > 0, arr, 1.0), np.inf)
    return float(out) if out.ndim == 0 else out


def cramer_rao_mse_lower_bound_matrix(
    fim: np.ndarray, jacobian: np.ndarray | None = None, bias: np.ndarray | None = None
) -> float:
    """Guo et al. 2022, Thm 2 in general: MSE >= Tr(J_mu I^{-1} J_mu^T)/d + ||mu(z) - z||^2/d.

    Args:
      fim: the d x d Fisher information matrix I_h(z), finite and positive definite (its symmetric
        part is used).
      jacobian: J_mu = d mu/dz, a finite d x d matrix; None (default) for the identity (unbiased
        attack).
      bias: mu(z) - z, d finite numbers; None (default) for 0.

    Returns:
      The lower bound on the MSE as a float.

    Raises:
      ValueError: if ``fim`` is not a finite square matrix or not positive definite, or
        ``jacobian``/``bias`` has the wrong shape or non-finite entries.
      TypeError: if an argument is not an array of numbers.
    """
    F = check_real_array("fim", fim)
    if F.ndim != 2 or F.shape[0] != F.shape[1] or not np.all(np.isfinite(F)):
        raise ValueError(f"fim must be a finite square matrix, got shape {F.shape}")
    d = F.shape[0]
    J = np.eye(d) if jacobian is None else check_real_array("jacobian", jacobian)
    if J.shape != (d, d) or not np.all(np.isfinite(J)):
        raise ValueError(f"jacobian must be a finite matrix of shape ({d}, {d}), got shape {J.shape}")
    try:
        Lc = np.linalg.cholesky((F + F.T) / 2)
    except np.linalg.LinAlgError:
        raise ValueError("fim must be positive definite for the Cramer-Rao bound") from None
    # Tr(J F^{-1} J^T) = ||L^{-1} J^T||_F^2 with F = L L^T.
    from scipy.linalg import solve_triangular

    Y = solve_triangular(Lc, J.T, lower=True)
    var = float(np.sum(Y**2)) / d
    if bias is None:
        b2 = 0.0
    else:
        bv = check_real_array("bias", bias).reshape(-1)
        if bv.size != d or not np.all(np.isfinite(bv)):
            raise ValueError(f"bias must be {d} finite numbers, got {bv.size} values")
        b2 = float(np.sum(bv**2)) / d
    return var + b2


def gaussian_dp_epsilon(sensitivity: float, noise_std: float, delta: float) -> float:
    """Exact eps of the Gaussian mechanism at ``delta`` (Balle & Wang 2018, Thm 8), rounded up.

    delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D), D = sensitivity, s = std:
    :func:`rerokit.bounds.gaussian.gaussian_epsilon` at mu = D/s. Used instead of the classical
    eps = D sqrt(2 log(1.25/delta))/s of Guo et al. Alg. 1, which is only valid for eps <= 1.

    Args:
      sensitivity: l2 sensitivity D > 0.
      noise_std: noise standard deviation s > 0.
      delta: delta in (0, 1).

    Returns:
      eps >= 0 (the private side: never below the exact value); inf when D/s exceeds 1e150.

    Raises:
      ValueError: if a value is out of range or not finite.
      TypeError: if a value is not a real number.
    """
    from rerokit.bounds.gaussian import gaussian_epsilon

    D = check_positive("sensitivity", sensitivity)
    s = check_positive("noise_std", noise_std)
    dl = check_probability("delta", delta, high_open=True)
    mu = D / s
    if not math.isfinite(mu) or mu > 1e150:  # noise negligible against the sensitivity: no finite eps
        return math.inf
    return gaussian_epsilon(dl, mu, rtol=1e-11)


def fil_subsampling_factor(sample_rate: float, epsilon: float) -> float:
    """kappa = q / (q + (1 - q) e^{-eps}) of Guo et al. 2022, Thm 4 (Eq. 3) and Alg. 1.

    The per-step FIM of a subsampled eps-DP step is at most kappa E_B[I(z|B)]; kappa = 1 is the
    always-valid convexity bound (Eq. 2). eps = inf gives kappa = 1.

    Args:
      sample_rate: Poisson sampling rate q in (0, 1].
      epsilon: the eps of one (non-subsampled) step's DP guarantee, >= 0 (inf allowed).

    Returns:
      kappa in (0, 1].

    Raises:
      ValueError: if ``sample_rate`` is not in (0, 1] or ``epsilon`` is nan or negative.
      TypeError: if a value is not a real number.
    """
    q = check_probability("sample_rate", sample_rate)
    e = check_epsilon("epsilon", epsilon)
    if math.isinf(e):
        return 1.0
    return q / (q + (1 - q) * math.exp(-e))
