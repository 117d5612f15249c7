"""Rényi DP of the Poisson-subsampled Gaussian, and the RDP bound on the ReRo gamma.

The moment function of one DP-SGD step: eps(alpha) = D_alpha(P || Q) for the REMOVE pair
P = (1-q) N(0, sigma^2) + q N(1, sigma^2), Q = N(0, sigma^2) (Mironov, Talwar & Zhang 2019,
"Rényi differential privacy of the sampled Gaussian mechanism"), and Balle et al. 2022
("Reconstructing training data with informed adversaries", Thm 2) turning an RDP curve into a
bound on the power of every test, used where it beats a PLD's error floor.

Every value is a proven upper bound: integer orders are the exact binomial sum rounded up;
fractional orders the smaller of the convexity chord between the neighbouring integer orders
(log A_alpha is convex in alpha) and a trapezoid sum with the Trefethen & Weideman (2014, Thm 5.1)
error bound and proven tail bounds (:func:`log_moment_step_real`); no quadrature estimate.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rerokit._validate import check_positive, check_probability
from rerokit.bounds.pld.normal import log_ndtr, logsumexp_rows

__all__ = ["RDP_ORDERS", "log_moment_step_int", "log_moment_step_real", "log_sum_rounded_up", "rdp_poisson_gaussian",
           "rdp_curve_subsampled_gaussian", "log_rdp_gamma_many"]

# RDP orders: dp-accounting's DEFAULT_RDP_ORDERS (1.1..10.9, 11..63, 128..1024) plus a few
# more integers; Thm 2 holds at every order, we take the best.
RDP_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 65))
    + [72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024]
)


def log_sum_rounded_up(t: np.ndarray) -> float:
    """log sum_i e^{t_i} plus its float round-off: each e^{t_i} carries a relative error of about
    eps |t_i| (from rounding t_i), the sum eps log2(n), the log eps |log A|. Without it tiny RDP
    values came out below the exact ones (log A ~ 1e-16 cancels): sigma=1e3, q=1e-5 gave 0 at
    alpha=2 and 1.1 (exact 1e-16 and 5.5e-17, mpmath)."""
    log_a = float(logsumexp_rows(t[None, :])[0])
    with np.errstate(under="ignore", invalid="ignore"):
        w = np.exp(np.maximum(t - log_a, -700.0))
        t_avg = float(np.sum(np.where(np.isfinite(t), w * np.abs(t), 0.0)))  # sum_i (e^t_i / A) |t_i|
    return log_a + 4.0 * np.finfo(float).eps * (t_avg + math.log2(t.size) + 2.0 + abs(log_a))


_SIGMA_RANGE = (1e-4, 1e100)
"""Noise multipliers outside which :func:`rdp_poisson_gaussian` answers without its grids (inf below, the
q = 1 value above: both upper bounds; the grids would overflow or hold astronomically many points)."""
_TINY = float(np.nextafter(0.0, 1.0))
_EPS = float(np.finfo(float).eps)
# libm's lgamma and erfc element-wise: the CLI's bound commands never import scipy (start-up time)
_LGAMMA = np.frompyfunc(math.lgamma, 1, 1)


def _gammaln(x: np.ndarray | float) -> np.ndarray:
    """log Gamma(x) for x > 0 (libm's lgamma, a few ulps; the callers add 8 ulps of slack)."""
    return np.asarray(_LGAMMA(np.asarray(x, dtype=float)), dtype=float)


def log_moment_step_int(sigma: float, q: float, alpha: int) -> float:
    """log A_alpha, A_alpha = E_nu[(mu/nu)^alpha], of one step at an integer order, rounded up.

    A_alpha = sum_k C(alpha,k) (1-q)^{alpha-k} q^k exp((k^2 - k)/(2 sigma^2)) exactly (Mironov, Talwar
    & Zhang 2019, Sec. 3.3): all terms positive, summed in logs by :func:`log_sum_rounded_up`; the
    log-binomials (gammaln) get 8 ulps of gammaln(alpha + 1) + alpha on top (not the k = 0 and
    k = alpha terms, where they cancel exactly).

    Args:
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1).
      alpha: integer order >= 1.

    Returns:
      An upper bound on log A_alpha (0 at alpha = 1).
    """
    gammaln = _gammaln
    a = int(alpha)
    if a == 1:
        return 0.0
    k = np.arange(a + 1, dtype=float)
    lg = float(gammaln(a + 1.0))
    terms = (
        lg - gammaln(k + 1.0) - gammaln(a - k + 1.0)
        + k * math.log(q) + (a - k) * math.log1p(-q) + (k * k - k) / (2.0 * sigma * sigma)
    )
    # the log-binomials cancel in the sum of log-gammas: 8 ulps of their size, not of the term's
    # (k = 0 and k = alpha cancel exactly: the same gammaln value minus itself)
    slack = np.full(a + 1, 8.0 * _EPS * (lg + a))
    slack[0] = slack[-1] = 0.0
    la = log_sum_rounded_up(terms + slack)
    return la


_MAX_POINTS = 2_000_000
"""At most this many quadrature points per fractional order (below sigma ~ 0.01 only the chord bound)."""
_LOG_TW = 60.0
"""The step h makes the Trefethen-Weideman discretisation error <= 2 e^-60 relative."""


def _chord(sigma: float, q: float, a: float) -> float:
    """Convexity (chord) bound on log A_a from the exact integer orders floor(a), floor(a) + 1."""
    n = math.floor(a)
    lo, hi = log_moment_step_int(sigma, q, n), log_moment_step_int(sigma, q, n + 1)
    t = a - n
    v = (1.0 - t) * lo + t * hi
    return v + 4.0 * _EPS * (abs(lo) + abs(hi) + abs(v))


def _trapezoid_bound(sigma: float, q: float, a: float) -> float:
    """Trapezoid sum plus proven discretisation, truncation and round-off bounds on log A_a (or inf)."""
    s2 = sigma * sigma
    strip = min(1.5 * s2, sigma)  # half-width of the strip of analyticity used (< pi sigma^2 / 2)
    # exponent of the discretisation error 2 M / (e^{2 pi strip / h} - 1), M <= e^{strip^2/(2 s2)} A
    h = min(sigma / 50.0, 2.0 * math.pi * strip / (strip * strip / (2.0 * s2) + _LOG_TW + 1.0))
    lo = -14.0 * sigma
    # right end: the q = 1 envelope e^{a(a-1)/(2 s2)} N(a, s2) has mass <= e^-80 above it
    hi = a + sigma * math.sqrt(2.0 * (a * (a - 1.0) / (2.0 * s2) + 80.0)) + sigma
    n = math.ceil((hi - lo) / h)
    if n > _MAX_POINTS:
        return math.inf
    x = lo + h * np.arange(n + 1, dtype=float)
    x_n = float(x[-1])
    z = (2.0 * x - 1.0) / (2.0 * s2)
    lq, l1q = math.log(q), math.log1p(-q)
    lmix = np.logaddexp(l1q, lq + z)
    g = x * x / (2.0 * s2)
    c = math.log(h) - math.log(sigma * math.sqrt(2.0 * math.pi))
    t = -g + a * lmix + c
    # rounding of each exponent: a few ulps of every piece (no cancellation credit)
    t = t + 16.0 * _EPS * (g + a * (np.abs(z) + abs(lq) + abs(l1q) + np.abs(lmix)) + abs(c) + 1.0)
    tails = np.array([
        float(log_ndtr(lo / sigma)),  # points left of lo: f is increasing there, sum <= int_{-inf}^{lo} f
        a * (a - 1.0) / (2.0 * s2) + float(log_ndtr((a - x_n) / sigma)),  # right of x_n: under the envelope
    ])
    tails = tails + 1e-12 * (np.abs(tails) + 1.0)
    r = math.log(2.0) + strip * strip / (2.0 * s2) - math.log(math.expm1(2.0 * math.pi * strip / h))
    return log_sum_rounded_up(np.concatenate((t, tails))) - math.log1p(-math.exp(r)) + 1e-15


def log_moment_step_real(sigma: float, q: float, alpha: float) -> float:
    """A proven upper bound on log A_alpha of one step (q < 1) at a real order alpha > 1.

    The smaller of two upper bounds:

    * Chord (convexity): log A_alpha is convex in alpha (Hölder's inequality: A is a moment generating
      function of the privacy loss), so on [n, n + 1], n = floor(alpha), it lies below the chord through
      the exact integer-order values (:func:`log_moment_step_int`, rounded up).
    * Trapezoid with a proven error: A = int f, f(x) = phi_sigma(x) (1 - q + q e^{(2x-1)/(2 sigma^2)})^alpha,
      is analytic in the strip |Im x| < a, a = min(1.5 sigma^2, sigma) < pi sigma^2 / 2 (there the
      base has real part > 1 - q > 0, so the principal power is analytic) and there
      int |f(x + iy)| dx <= e^{a^2/(2 sigma^2)} A =: M (|phi_sigma(x+iy)| = phi_sigma(x) e^{y^2/(2 sigma^2)},
      |base(x+iy)| <= base(x)). The infinite trapezoid sum I_h = h sum_k f(x_0 + k h) then satisfies
      |I_h - A| <= 2 M / (e^{2 pi a / h} - 1) (Trefethen & Weideman 2014, "The exponentially convergent
      trapezoidal rule", SIAM Review 56(3), Thm 5.1); h is chosen so that this is <= 2 e^-60 A, and
      A <= I_h / (1 - 2 e^{a^2/(2 sigma^2)} / (e^{2 pi a/h} - 1)). I_h is summed over [lo, x_N]; the
      points left of lo = -14 sigma (f increasing there, base <= 1) add at most Phi(lo/sigma), those right
      of x_N (f <= e^{alpha(alpha-1)/(2 sigma^2)} phi_sigma(x - alpha), decreasing there) at most
      e^{alpha(alpha-1)/(2 sigma^2)} Phi((alpha - x_N)/sigma). Each exponent gets 16 ulps of the sum of
      the magnitudes of its pieces, and the log-sum its own round-off (:func:`log_sum_rounded_up`).

    What is assumed: numpy's/libm's exp, log, log1p, logaddexp, lgamma, erfc are accurate to a few ulps
    (the tails' :func:`rerokit.bounds.pld.normal.log_ndtr`, within 1e-13 relative: 1e-12 is added).
    The chord is the tighter one for tiny values (log A ~ 1e-16, where rounding slack dominates the
    trapezoid), the trapezoid everywhere else (measured within 1e-12 relative of mpmath quadrature
    at sigma >= 0.3).

    Args:
      sigma: noise multiplier > 0.
      q: sampling rate in (0, 1).
      alpha: order, a finite float > 1.

    Returns:
      An upper bound on log A_alpha (>= 0).
    """
    a = float(alpha)
    if a.is_integer():
        return log_moment_step_int(sigma, q, int(a))
    return max(0.0, min(_chord(sigma, q, a), _trapezoid_bound(sigma, q, a)))


def rdp_poisson_gaussian(
    noise_multiplier: float, sample_rate: float, orders: Sequence[float] = RDP_ORDERS
) -> np.ndarray:
    """RDP eps(alpha) = D_alpha(mu || nu) of one step of the Poisson-subsampled Gaussian.

    mu = (1-q) N(0, sigma^2) + q N(1, sigma^2), nu = N(0, sigma^2) (the REMOVE pair of Hayes et
    al. Thm 2), eps(alpha) = log(A_alpha) / (alpha - 1), A_alpha = E_nu[(mu/nu)^alpha].
    Integer alpha: A_alpha = sum_k C(alpha,k) (1-q)^{alpha-k} q^k exp((k^2 - k)/(2 sigma^2))
    exactly (Mironov, Talwar & Zhang 2019, Sec. 3.3), rounded up (:func:`log_moment_step_int`).
    Fractional alpha: a proven upper bound, the smaller of the convexity chord between the exact
    neighbouring integer orders and a trapezoid sum with the Trefethen-Weideman (2014, Thm 5.1)
    error bound and proven tail bounds (:func:`log_moment_step_real`); never an estimate. q = 1:
    alpha / (2 sigma^2).

    Args:
      noise_multiplier: sigma, a finite number > 0.
      sample_rate: Poisson sampling rate q in (0, 1].
      orders: RDP orders alpha, each a finite number > 1 (default :data:`RDP_ORDERS`).

    Returns:
      Float array of eps(alpha), one per order, each >= 0 and rounded up.

    Raises:
      ValueError: if ``noise_multiplier``/``sample_rate`` is out of range, or an order is not a
        finite number > 1.
      TypeError: if ``noise_multiplier``/``sample_rate`` is not a number.
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sample_rate", sample_rate)
    out = np.empty(len(orders))
    for i, a in enumerate(orders):
        a = float(a)
        if not a > 1 or not math.isfinite(a):
            raise ValueError(f"orders must be finite numbers > 1, got {a!r}")
        if q == 1.0:  # alpha / (2 sigma^2), computed so that it neither overflows nor underflows to 0
            out[i] = max(a / (2.0 * sigma) / sigma, _TINY)
            continue
        if sigma < _SIGMA_RANGE[0]:  # e^{(k^2 - k)/(2 sigma^2)} overflows: the RDP is astronomically large
            out[i] = math.inf
            continue
        if sigma > _SIGMA_RANGE[1]:  # the q = 1 value bounds every q (the Renyi divergence is quasi-convex in
            # its first argument); a / (2 sigma^2) underflows here, so it is rounded up to the smallest double
            out[i] = max(a / (2.0 * sigma) / sigma, _TINY)
            continue
        if a.is_integer():
            out[i] = log_moment_step_int(sigma, q, int(a)) / (a - 1.0)
        else:
            out[i] = log_moment_step_real(sigma, q, a) / (a - 1.0)
    return np.maximum(out, 0.0)


def rdp_curve_subsampled_gaussian(
    segments: Sequence[tuple[float, float, int]], orders: Sequence[float] = RDP_ORDERS
) -> tuple[np.ndarray, np.ndarray]:
    """(orders, composed RDP) of a schedule: sum_i T_i eps_i(alpha) (RDP composition).

    Args:
      segments: (sigma, q, T) segments (:func:`normalize_segments`).
      orders: RDP orders alpha, each a finite number > 1 (default :data:`RDP_ORDERS`).

    Returns:
      ``(orders, rdp)``: two float arrays of the same length; rdp >= 0, rounded up per step as in
      :func:`rdp_poisson_gaussian`.

    Raises:
      ValueError: as :func:`rdp_poisson_gaussian`.
    """
    tot = np.zeros(len(orders))
    with np.errstate(over="ignore"):  # T * rdp beyond the double range is +inf: still an upper bound
        for s, q, T in segments:
            tot += T * rdp_poisson_gaussian(s, q, orders)
    return np.asarray(orders, dtype=float), tot


def log_rdp_gamma_many(segments: Sequence[tuple[float, float, int]], log_kappas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log gamma, best order) of Balle et al. 2022 Thm 2 on the schedule's RDP curve, per log kappa.

    Thm 2 bounds mu(E) <= (nu(E) e^{eps(alpha)})^{(alpha-1)/alpha} for every event E, so it is also
    an upper bound on the power (TPR) of every test at level (FPR) kappa. The curve is the
    exact-integer/proven-fractional RDP of :func:`rdp_curve_subsampled_gaussian` at :data:`RDP_ORDERS`;
    each value gets a few ulps so that it is never below the float-exact bound.

    Args:
      segments: validated (sigma, q, T) segments (:func:`normalize_segments`).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array (not validated here).

    Returns:
      ``(log_gamma, best_order)``: arrays with one entry per log kappa; log_gamma <= 0 is an upper
      bound.
    """
    orders, rdp = rdp_curve_subsampled_gaussian(segments)
    lk = np.asarray(log_kappas, dtype=float)[:, None]
    # + a few ulps of the terms: the float value is never below (kappa e^eps)^((alpha-1)/alpha)
    logs = (lk + rdp) * (orders - 1.0) / orders + 4.0 * np.finfo(float).eps * (np.abs(lk) + rdp + 1.0)
    i = np.argmin(logs, axis=1)
    return np.minimum(0.0, logs[np.arange(lk.shape[0]), i]), orders[i]

