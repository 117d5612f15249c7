"""Certified upper bounds on the ReRo gamma at tiny baselines (below the PLD's double range).

For the DP-SGD pair nu = N(0, sigma^2)^T, mu = prod_t [(1-q) N(0, sigma^2) + q N(1, sigma^2)] and
every event E with nu(E) <= kappa, Hölder's inequality gives, for every real alpha > 1,

    mu(E) = E_nu[(mu/nu) 1_E] <= M(alpha)^{1/alpha} kappa^{(alpha-1)/alpha},
    M(alpha) = E_nu[(mu/nu)^alpha] = prod_i A_i(alpha)^{T_i}

(Balle, Cherubin & Hayes 2022, "Reconstructing training data with informed adversaries", Thm 2, in
moment form). It is the optimal Chernoff bound on the power, but it misses the tail's polynomial
prefactor: its log gamma is off by 0.25-2 nats, i.e. up to 11 % of log gamma at kappa = 1e-300
(sigma 1, T 1000, q 1, gamma ~ 3e-8), 0.8-1.9 % at q < 1, T = 1e3-1e4, kappa 1e-340..1e-366.

The order is chosen over all reals > 1: A_i at integer orders is the exact binomial sum of Mironov,
Talwar & Zhang 2019 (Sec. 3.3), all terms positive, summed in logs and rounded up; at real orders a
proven upper bound (:func:`~rerokit.bounds.pld.rdp.log_moment_step_real`: the convexity chord of the
exact integer values, or a trapezoid sum with the Trefethen & Weideman 2014 error bound). Every order
gives a certified bound; we take the best found by a search over a geometric grid of integers up to
2^20, a local integer search and (for orders <= 64) a golden-section search over real orders.

:func:`log_chernoff_gamma_many` returns the smallest of that and two more certified bounds that keep
the prefactor: the binomial mixture of Gaussian shifts (:func:`log_gdp_mixture_gamma`: the Gaussian-DP
closed form at q = 1, exact at T = 1) and the tilted PLD (:mod:`rerokit.bounds.pld.tilt`, everything
in logs) where gamma is above N 1e-300 (N steps). Measured against independent references (GDP closed form,
exact Neyman-Pearson power at T = 1, 2, Lugannani-Rice saddle point at T = 1e3-1e4): within 3e-4
relative in log gamma for kappa in [1e-473, 1e-300], never below.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from rerokit.bounds.pld.normal import LOG_NDTR_REL, log_ndtr, normal_ppf_log
from rerokit.bounds.pld.rdp import log_moment_step_int, log_moment_step_real, log_sum_rounded_up

__all__ = ["log_moment_int", "log_moment_real", "log_gdp_mixture_gamma", "log_chernoff_gamma_many",
           "log_sum_test_power"]

_EPS = float(np.finfo(float).eps)
_MAX_ORDER = 1 << 20


def log_moment_int(segments: Sequence[tuple[float, float, int]], alpha: int) -> float:
    """log M(alpha) = sum_i T_i log E_nu[(mu_i/nu_i)^alpha] at an integer order, rounded up.

    Args:
      segments: validated (sigma, q, T) segments.
      alpha: an integer order >= 1.

    Returns:
      An upper bound on log M(alpha) (>= 0; exactly 0 at alpha = 1).
    """
    a = int(alpha)
    if a == 1:
        return 0.0
    total = 0.0
    for s, q, T in segments:
        if q == 1.0:
            la = a * (a - 1.0) / (2.0 * s * s)
            la += 4.0 * _EPS * la
        else:
            la = log_moment_step_int(s, q, a)
        total += T * max(la, 0.0)
        total += 2.0 * _EPS * total
    return total


def log_moment_real(segments: Sequence[tuple[float, float, int]], alpha: float) -> float:
    """A proven upper bound on log M(alpha) at a real order alpha > 1.

    q = 1: exactly alpha (alpha - 1) / (2 sigma^2), rounded up. q < 1: T times
    :func:`~rerokit.bounds.pld.rdp.log_moment_step_real` (the smaller of the convexity chord between
    the exact integer orders and a trapezoid sum with the Trefethen & Weideman 2014 error bound).

    Args:
      segments: validated (sigma, q, T) segments.
      alpha: the order, a float > 1.

    Returns:
      An upper bound on log M(alpha) (>= 0).
    """
    a = float(alpha)
    total = 0.0
    for s, q, T in segments:
        if q == 1.0:
            la = a * (a - 1.0) / (2.0 * s * s)
            la += 4.0 * _EPS * la
        else:
            la = log_moment_step_real(s, q, a)
        total += T * max(la, 0.0)
        total += 2.0 * _EPS * total
    return total


def _bound(log_m: float, alpha: float, lk: float) -> float:
    """((alpha - 1) log kappa + log M(alpha)) / alpha, rounded up."""
    v = ((alpha - 1.0) * lk + log_m) / alpha
    return v + 8.0 * _EPS * (abs(lk) + abs(log_m) / alpha + 1.0)


def _one(segments: Sequence[tuple[float, float, int]], lk: float, cache: dict[int, float]) -> tuple[float, float]:
    def lm(a: int) -> float:
        if a not in cache:
            cache[a] = log_moment_int(segments, a)
        return cache[a]

    def b(a: int) -> float:
        return _bound(lm(a), float(a), lk)

    grid = sorted({int(round(2.0 ** (j / 4.0))) for j in range(4, 4 * 20 + 1)} | set(range(2, 17)))
    grid = [a for a in grid if a <= _MAX_ORDER]
    vals = [b(a) for a in grid]
    j = int(np.argmin(vals))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    # local integer search (golden-section-like shrinking; any order is valid, this only picks one)
    while hi - lo > 3:
        m1 = lo + (hi - lo) // 3
        m2 = hi - (hi - lo) // 3
        if b(m1) <= b(m2):
            hi = m2
        else:
            lo = m1
    n = min(range(lo, hi + 1), key=b)
    best, order = b(n), float(n)
    # real orders: golden-section search on [n - 1, n + 1] with the certified real moment (any
    # order found gives a valid bound; the search only picks one)
    if n > 64:  # the integer order is within 1/64 of the best real one: not worth the integrals
        return min(0.0, best), order

    def br(x: float) -> float:
        return _bound(log_moment_real(segments, x), x, lk)

    a, c = max(1.0 + 1e-9, n - 1.0), n + 1.0
    g = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = c - g * (c - a), a + g * (c - a)
    f1, f2 = br(x1), br(x2)
    for _ in range(30):
        if f1 <= f2:
            c, x2, f2 = x2, x1, f1
            x1 = c - g * (c - a)
            f1 = br(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (c - a)
            f2 = br(x2)
        if c - a < 1e-3 * c:
            break
    for f, x in ((f1, x1), (f2, x2)):
        if f < best:
            best, order = f, x
    return min(0.0, best), order


_MAX_MIX_T = 100_000
_MAX_MIX_POINTS = 2_000_000  # joint (k_1, ..., k_m) combinations of several q < 1 segments
_MAX_TILTED_CALLS = 16
"""At most this many tilted-PLD evaluations per call (each 0.05-2 s); the other kappas keep the rest."""
_TILT_TRUNCATION = math.log(1e-300)
"""The tilted PLD is tried where the Hölder value is above this times the number of steps N: its
steps are truncated at 1e-300 (the smallest double-range tail), which puts a mass of about N 1e-300
at +infinity, so its upper end is of use only above that. Hölder misses the tail's polynomial
prefactor (measured ~0.25-2.1 nats up to T = 1e5: 1.6 nats at sigma 0.5, q 0.01, T 1e3,
kappa e^-1089, gamma ~ e^-679.6, where the tilt's upper end is within 0.015 of the exact value)."""


def _log_binomial_weights(T: int, q: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, log Bin(k; T, q), a bound on each log weight's float error) for k = 0..T: log-gamma
    terms (each within a few ulps of its size) and the log q, log(1 - q) products."""
    from scipy.special import gammaln

    k = np.arange(T + 1, dtype=float)
    lg = float(gammaln(T + 1.0))
    lb = lg - gammaln(k + 1.0) - gammaln(T - k + 1.0) + k * math.log(q) + (T - k) * math.log1p(-q)
    slack_b = np.full(T + 1, 8.0 * _EPS * (lg + T * (1.0 + abs(math.log(q)) + abs(math.log1p(-q)))))
    slack_b[0] = slack_b[-1] = 8.0 * _EPS * T * (abs(math.log(q)) + abs(math.log1p(-q)))
    return k, lb, slack_b


def log_gdp_mixture_gamma(segments: Sequence[tuple[float, float, int]], log_kappa: float) -> float:
    """Upper bound on log gamma from the binomial mixture of Gaussian shifts.

    With Poisson sampling, mu = sum_S P(S) N(1_S, sigma^2 I) over the set S of steps that drew the
    example, nu = N(0, sigma^2 I); each component against nu is exactly mu_S-GDP, mu_S^2 = sum
    over the steps in S of 1/sigma_t^2 (Dong, Roth & Su 2022, "Gaussian differential privacy",
    JRSS-B, Sec. 2), so every event with nu(E) <= kappa has
    mu(E) <= sum_k Bin(k; T, q) Phi(Phi^-1(kappa) + sqrt(k / sigma^2 + c)),
    c = sum over the q = 1 segments of T_i / sigma_i^2. Exact (up to rounding) when every segment
    has q = 1 (Gaussian DP closed form) or T = 1 (one threshold test is optimal for all
    components); increasingly loose with T (the components' optimal tests differ). With several
    segments of q < 1, mu_S^2 depends on S only through the counts k_i drawn in each (independent
    binomials), and the sum runs over (k_1, ..., k_m) with weight prod_i Bin(k_i; T_i, q_i) and
    mu^2 = sum_i k_i / sigma_i^2 + c (at most :data:`_MAX_MIX_POINTS` combinations).

    Rounding: Phi^-1(kappa) is rounded up (:func:`rerokit.bounds.pld.normal.normal_ppf_log`), each term gets 1e-13 of its
    magnitude (scipy's log_ndtr and gammaln assumed accurate to 1e-13 relative) plus 8 ulps of the
    log-binomial's gammaln(T + 1) and of the argument's square.

    Args:
      segments: validated (sigma, q, T) segments, at most one of them with q < 1.
      log_kappa: natural log of kappa (< 0).

    Returns:
      An upper bound on log gamma (<= 0), or +inf when the schedule is not of that form (or too long).
    """
    from scipy.special import log_ndtr

    mix = [(s, q, T) for s, q, T in segments if q < 1.0]
    if len(mix) > 1:
        return _log_gdp_mixture_many(segments, mix, log_kappa)
    if mix and mix[0][2] > _MAX_MIX_T:
        return math.inf
    c = sum(T / (s * s) for s, q, T in segments if q == 1.0)
    z = normal_ppf_log(float(log_kappa))  # Phi(z) >= kappa for certain
    if not math.isfinite(z):
        return math.inf
    if mix:
        s, q, T = mix[0]
        k, lb, slack_b = _log_binomial_weights(T, q)
        mu2 = k / (s * s) + c
    else:
        lb = np.zeros(1)
        slack_b = np.zeros(1)
        mu2 = np.array([c])
    x = z + np.sqrt(mu2) * (1.0 + 4.0 * _EPS)
    x = x + 4.0 * _EPS * (abs(z) + np.abs(x))
    lphi = log_ndtr(x)
    terms = lb + slack_b + lphi + 1e-13 * np.abs(lphi) + 1e-300
    return min(0.0, log_sum_rounded_up(terms))


def log_sum_test_power(segments: Sequence[tuple[float, float, int]], log_kappa: float) -> float:
    """A certified lower bound on log gamma: the power of the linear test U > c, U = sum_t x_t / sigma_t^2.

    Under nu, U ~ N(0, V), V = sum_i T_i / sigma_i^2, so the test at level kappa rejects when
    U / sqrt(V) > -z, z = Phi^-1(kappa); under mu (Poisson sampling, the mixture over the k steps of
    the one segment with q < 1 that drew the example), U / sqrt(V) ~ N(m_k / sqrt(V), 1),
    m_k = k / sigma^2 + c (c = sum over the q = 1 segments of T_i / sigma_i^2), so its power is
    sum_k Bin(k; T, q) Phi(z + m_k / sqrt(V)). Any test at level <= kappa has power <= gamma
    (Neyman & Pearson 1933). It is the Neyman-Pearson test of the all-sampled component, which
    dominates the tail at small T and tiny kappa: then within ~1e-9 (relative, in log) of the
    mixture's upper bound (:func:`log_gdp_mixture_gamma`), e.g. at T = 2 and kappa ~ e^-1089,
    where the PLD's tilt is spoiled by the unsampled component; exactly the Neyman-Pearson power at
    T = 1 and at q = 1 (Gaussian DP closed form).

    Rounding (all down): z with Phi(z) <= kappa for certain (:func:`rerokit.bounds.pld.normal.normal_ppf_log`),
    the argument lowered by 8 ulps of its parts, each log Phi by :data:`~rerokit.bounds.pld.normal.LOG_NDTR_REL`
    of itself plus 1e-15, each log-binomial by 8 ulps of its parts, the log-sum by 1e-13 relative plus 1e-300.

    Args:
      segments: validated (sigma, q, T) segments, at most one of them with q < 1 (with T <= 1e5).
      log_kappa: natural log of kappa (< 0).

    Returns:
      A lower bound on log gamma (<= 0), or -inf when the schedule is not of that form.
    """

    mix = [(s, q, T) for s, q, T in segments if q < 1.0]
    if len(mix) > 1 or (mix and mix[0][2] > _MAX_MIX_T):
        return -math.inf
    lk = float(log_kappa)
    if not lk < 0.0:
        return 0.0
    z = normal_ppf_log(lk, upper=False)  # Phi(z) <= kappa for certain
    if not math.isfinite(z):
        return -math.inf
    c = sum(T / (s * s) for s, q, T in segments if q == 1.0)
    v = c + sum(T / (s * s) for s, q, T in mix)
    if mix:
        s, q, T = mix[0]
        k, lb, slack_b = _log_binomial_weights(T, q)
        m = k / (s * s) + c
    else:
        lb, slack_b, m = np.zeros(1), np.zeros(1), np.array([c])
    shift = m / math.sqrt(v)
    x = z + shift - 8.0 * _EPS * (abs(z) + shift + 1.0)
    lphi = np.array([log_ndtr(float(xi)) for xi in x])
    terms = lb - slack_b + lphi - LOG_NDTR_REL * np.abs(lphi) - 1e-15  # (log_ndtr: 1e-16 absolute above 0)
    top = float(np.max(terms))
    if not math.isfinite(top):
        return -math.inf
    out = top + math.log(math.fsum(np.exp(terms - top).tolist()))
    return min(0.0, out - 1e-13 * abs(out) - 1e-300)


def _log_gdp_mixture_many(segments: Sequence[tuple[float, float, int]], mix: Sequence[tuple[float, float, int]],
                          log_kappa: float) -> float:
    """:func:`log_gdp_mixture_gamma` for several segments with q < 1 (the joint counts)."""
    from scipy.special import log_ndtr

    size = 1
    for _, _, T in mix:
        size *= T + 1
    if size > _MAX_MIX_POINTS:
        return math.inf
    c = sum(T / (s * s) for s, q, T in segments if q == 1.0)
    z = normal_ppf_log(float(log_kappa))  # Phi(z) >= kappa for certain
    if not math.isfinite(z):
        return math.inf
    lb = np.zeros(1)
    slack_b = np.zeros(1)
    mu2 = np.full(1, c)
    for s, q, T in mix:
        k, lb_i, sl_i = _log_binomial_weights(T, q)
        lb = (lb[:, None] + lb_i[None, :]).ravel()
        slack_b = (slack_b[:, None] + sl_i[None, :]).ravel()
        mu2 = (mu2[:, None] + (k / (s * s))[None, :]).ravel()
    # each sum of non-negative terms (k / sigma^2 and c, each rounded) is within (m + 3) ulps
    x = z + np.sqrt(mu2) * (1.0 + (4.0 + len(mix)) * _EPS)
    x = x + 4.0 * _EPS * (abs(z) + np.abs(x))
    lphi = log_ndtr(x)
    # slack per term: each binomial's and the sum of m logs (m ulps of their magnitude)
    terms = lb + slack_b + len(mix) * _EPS * np.abs(lb) + lphi + 1e-13 * np.abs(lphi) + 1e-300
    return min(0.0, log_sum_rounded_up(terms))


def log_chernoff_gamma_many(segments: Sequence[tuple[float, float, int]], log_kappas: np.ndarray,
                            tail_power: Callable[[float], tuple[float, float]] | None = None,
                            tilted: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(log gamma, order) per log kappa: the best of three certified upper bounds.

    * the Hölder bound at the best real order found (module docstring);
    * the binomial mixture of Gaussian shifts (:func:`log_gdp_mixture_gamma`: the closed form at
      q = 1, exact at T = 1 with one segment of q < 1, tight at small T; several segments of q < 1
      through their joint counts, up to 2e6 combinations);
    * the tilted PLD's certified upper end (:mod:`rerokit.bounds.pld.tilt`), from ``tail_power``
      (e.g. a :class:`~rerokit.bounds.pld.SchedulePLD`'s ``tail_power``) or, if ``tilted``, from a
      PLD of ``segments`` built here; used where the Hölder value is above N 1e-300 (N steps: below,
      the tilted PLD's truncation mass ~ N 1e-300 spoils its upper end).

    The Hölder bound misses the polynomial prefactor of the exact tail (log gamma off by ~1 nat,
    i.e. 11 % at kappa = 1e-300, sigma = 1, T = 1000, q = 1, where gamma ~ 3e-8); the other two
    recover it where gamma is above ~N 1e-300 or T is small, so the certified value stays within
    ~0.1 % (relative, in log) of the truth over kappa in [1e-473, 1e-300] in the measured settings
    (tests/bounds/pld/test_chernoff.py); below, with T ~ 1e3 and more, it can be 0.1-0.6 nats
    above (tests/bounds/test_dpsgd_pixel.py).

    Args:
      segments: validated (sigma, q, T) segments (group size 1: one example per step).
      log_kappas: natural logs of the baselines kappa (<= 0), a 1-D array (not validated here).
      tail_power: optional callable log_alpha -> (log lower, log upper) of the same schedule's
        power (certified; only the upper end is used).
      tilted: build the tilted PLD here when ``tail_power`` is None (default True); at most
        16 kappas per call use it.

    Returns:
      ``(log_gamma, order)``: arrays with one entry per log kappa; log_gamma <= 0 is a certified
      upper bound on log gamma (float round-off included, rounded up); order is the Rényi order
      of the Hölder bound where it is the one returned, NaN where another bound is smaller.
    """
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    lks = np.asarray(log_kappas, dtype=float).ravel()
    out = np.zeros(lks.size)
    orders = np.full(lks.size, np.nan)
    n_steps = max(sum(int(T) for _, _, T in segments), 1)
    cache: dict[int, float] = {}
    built: list = []
    calls = 0
    for i, lk in enumerate(lks):
        if lk >= 0.0:
            continue
        lk = float(lk)
        if all(q == 1.0 for _, q, _ in segments):
            out[i] = log_gdp_mixture_gamma(segments, lk)
            continue
        out[i], orders[i] = _one(segments, lk, cache)
        mx = log_gdp_mixture_gamma(segments, lk)
        if mx < out[i]:
            out[i], orders[i] = mx, np.nan
        if out[i] > _TILT_TRUNCATION + math.log(n_steps) and calls < _MAX_TILTED_CALLS:
            calls += 1
            tp = tail_power
            if tp is None and tilted:
                if not built:
                    built.append(_tilted_pld(segments))
                tp = built[0]
            if tp is not None:
                try:
                    up = float(tp(lk)[1])
                except (ValueError, ArithmeticError, MemoryError, WindowTooWide, StepTooWide):
                    up = math.inf
                if up < out[i]:
                    out[i], orders[i] = up, np.nan
    return out, orders


def _tilted_pld(segments: Sequence[tuple[float, float, int]]) -> Callable[[float], tuple[float, float]] | None:
    """The tail_power of the schedule's REMOVE PLD (no lower end), or None if it cannot be built."""
    from rerokit.bounds.pld.builder import schedule_pld
    from rerokit.bounds.pld.compose import WindowTooWide
    from rerokit.bounds.pld.step import StepTooWide

    try:
        return schedule_pld(list(segments), lower=False, add_direction=False, group_size=1).tail_power
    except (ValueError, ArithmeticError, MemoryError, WindowTooWide, StepTooWide):
        return None
