"""What the uninformed gradient-inversion laws are, and are not: attack laws beside certified bounds.

The laws of :mod:`rerokit.bounds.uninformed` (MSE, PSNR, NCC; one release or averaged over T
steps; Riess et al. 2024, "From Mean to Extreme", Thm 2 / Prop. 3) are the exact law of *one* attack: the
optimal *unbiased* analytic gradient inversion X_hat = X + N(0, s^2 I), s^2 = sigma^2 ||X||^2 / k
(k averaged releases). Its Thm 1 ("X_hat is the best achievable estimator") holds among unbiased
estimators only (the proof goes through the minimum-variance unbiased estimator); a biased
attacker can do better, so these numbers are of kind **"attack law"**, never "certified".

This module gives (a) what an attacker without a data prior gets for free, with exact laws,

* the constant guess y = 0: MSE = ||X||^2 / N, succeeds exactly when ||X||^2 / N <= eta (and the
  data mean, or any fixed y, when data are given: the fraction of records within the threshold);
* shrinkage c X_hat, 0 <= c <= 1: c X_hat - X = c s (Z + (c - 1) X / (c s)), so
  N MSE / (c^2 s^2) ~ chi'^2_N(lambda) with non-centrality lambda = (1 - c)^2 k / (c^2 sigma^2)
  (independent of ||X||; the non-central chi-square of "Bounding Reconstruction Attack Success of Adversaries Without Data Priors", Prop. 5). c = 1 is the unbiased
  attack (central chi^2_N), c -> 0 the zero guess; the MSE-optimal factor is
  c* = 1 / (1 + N sigma^2 / k) (James-Stein type; E||c X_hat - X||^2 = ||X||^2 ((1-c)^2 + c^2 N
  sigma^2 / k)); :func:`best_shrinkage` maximises P(MSE <= eta) over c;

and (b) the **certified** statement for this threat model: informed ReRo with a continuous data
prior pi (Hayes et al. 2023, Thm 2): kappa(eta) = sup_y P_{X ~ pi}(MSE(X, y) <= eta) and
gamma = 1 - beta(kappa) on the run's trade-off curve, for a target drawn from pi. Without a prior
no bound below 1 holds against every attacker: the constant guess equal to the record succeeds.
Priors here: a uniform ball, an isotropic Gaussian (rerokit.bounds.priors), data uniform on
[0, R]^N (:func:`log_kappa_uniform_cube`) and samples of the user's data (Hayes et al. App. J's
upper confidence bound, :func:`rerokit.bounds.priors.kappa_from_samples`).

Pure numpy/scipy (never torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rerokit._validate import check_int, check_nonnegative, check_positive

__all__ = [
    "ATTACK_LAW",
    "CERTIFIED",
    "zero_guess_success",
    "shrinkage_success",
    "mse_optimal_shrinkage",
    "best_shrinkage",
    "NoPriorAttacks",
    "no_prior_attacks",
    "fixed_guess_success",
    "log_kappa_uniform_cube",
    "mse_prior_log_kappa",
]

ATTACK_LAW = "attack law"
"""Kind of a number that is the exact law of one named attack (what it achieves; not a bound on every attacker)."""

CERTIFIED = "certified"
"""Kind of a number that holds against every attacker of its threat model."""


def zero_guess_success(eta: float, norm: float, dim: int) -> float:
    """P(MSE(X, 0) <= eta) for a record of norm ``norm``: 1 if norm^2 / N <= eta, else 0 (deterministic).

    Args:
      eta: MSE threshold >= 0.
      norm: ||X||_2 >= 0.
      dim: N >= 1.

    Returns:
      1.0 or 0.0.
    """
    e = check_nonnegative("eta", eta)
    r = check_nonnegative("norm", norm)
    n = check_int("dim", dim, minimum=1)
    return 1.0 if r * r / n <= e else 0.0


def shrinkage_success(eta: float, noise_multiplier: float, norm: float, dim: int, shrink: float,
                      releases: int = 1) -> float:
    """Exact P(MSE(c X_hat, X) <= eta) of the shrunk unbiased attack c X_hat (see the module docstring).

    Args:
      eta: MSE threshold >= 0.
      noise_multiplier: sigma > 0.
      norm: ||X||_2 > 0 of the record.
      dim: N >= 1.
      shrink: c in [0, 1] (0: the zero guess; 1: the unbiased attack of Riess et al. 2024, Thm 2).
      releases: k >= 1 averaged releases.

    Returns:
      The probability, from scipy's non-central chi-square cdf (central for c = 1).

    Raises:
      ValueError: if a value is out of range.
    """
    from scipy import stats

    e = check_nonnegative("eta", eta)
    s = check_positive("noise_multiplier", noise_multiplier)
    r = check_positive("norm", norm)
    n = check_int("dim", dim, minimum=1)
    k = check_int("releases", releases, minimum=1)
    c = float(shrink)
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"shrink must be in [0, 1], got {shrink!r}")
    if c == 0.0:
        return zero_guess_success(e, r, n)
    scale2 = c * c * s * s * r * r / k  # per-coordinate variance of c X_hat
    x = n * e / scale2
    if c == 1.0:
        return float(stats.chi2.cdf(x, n))
    lam = (1.0 - c) ** 2 * k / (c * c * s * s)
    return float(stats.ncx2.cdf(x, n, lam))


def mse_optimal_shrinkage(noise_multiplier: float, dim: int, releases: int = 1) -> float:
    """c* = 1 / (1 + N sigma^2 / k): the factor minimising E||c X_hat - X||^2 for every X.

    Args:
      noise_multiplier: sigma > 0.
      dim: N >= 1.
      releases: k >= 1.

    Returns:
      c* in (0, 1].
    """
    s = check_positive("noise_multiplier", noise_multiplier)
    n = check_int("dim", dim, minimum=1)
    k = check_int("releases", releases, minimum=1)
    return 1.0 / (1.0 + n * s * s / k)


def best_shrinkage(eta: float, noise_multiplier: float, norm: float, dim: int, releases: int = 1) -> tuple[float, float]:
    """The shrinkage factor c in [0, 1] with the largest P(MSE(c X_hat, X) <= eta), and that probability.

    A grid of 241 factors (0, c*, 1 and a log grid over [1e-6, 1]) refined by a bounded scalar
    search around the best one; every candidate's probability is exact, so the returned pair is
    an achieved success (a lower bound on the best shrinkage's).

    Args:
      eta, noise_multiplier, norm, dim, releases: as :func:`shrinkage_success`.

    Returns:
      ``(c, success)``.
    """
    from scipy.optimize import minimize_scalar

    cs = np.unique(np.concatenate([[0.0, 1.0, mse_optimal_shrinkage(noise_multiplier, dim, releases)],
                                   np.logspace(-6, 0, 238)]))
    vals = np.array([shrinkage_success(eta, noise_multiplier, norm, dim, c, releases) for c in cs])
    i = int(np.argmax(vals))
    best_c, best_v = float(cs[i]), float(vals[i])
    if 0 < i < len(cs) - 1 and best_v < 1.0:
        res = minimize_scalar(lambda c: -shrinkage_success(eta, noise_multiplier, norm, dim, float(c), releases),
                              bounds=(float(cs[i - 1]), float(cs[i + 1])), method="bounded",
                              options={"xatol": 1e-10})
        if res.success and -res.fun > best_v:
            best_c, best_v = float(res.x), float(-res.fun)
    return best_c, best_v


@dataclass(frozen=True)
class NoPriorAttacks:
    """What an attacker without a data prior achieves on a record of norm r (exact laws; kind "attack law").

    Attributes:
      unbiased: P(MSE <= eta) of the optimal unbiased analytic attack X_hat (Riess et al. 2024, Thm 2 / Prop. 3).
      zero_guess: P(MSE(0, X) <= eta), 0 or 1.
      mse_optimal_factor, mse_optimal_shrinkage: c* and P(MSE(c* X_hat, X) <= eta).
      best_factor, best_shrinkage: the factor with the largest success and that success.
      best: the largest of these successes (what the best-known prior-free attack achieves).
      best_attack: its name.
    """

    unbiased: float
    zero_guess: float
    mse_optimal_factor: float
    mse_optimal_shrinkage: float
    best_factor: float
    best_shrinkage: float
    best: float
    best_attack: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (every number of kind "attack law")."""
        return {
            "kind": ATTACK_LAW,
            "record": "a record of the smallest norm r",
            "unbiased_attack": self.unbiased,
            "zero_guess": self.zero_guess,
            "mse_optimal_shrinkage": {"factor": self.mse_optimal_factor, "success": self.mse_optimal_shrinkage},
            "best_shrinkage": {"factor": self.best_factor, "success": self.best_shrinkage},
            "best_known": self.best,
            "best_known_attack": self.best_attack,
        }


def no_prior_attacks(eta: float, noise_multiplier: float, norm: float, dim: int, releases: int = 1,
                     unbiased: float | None = None) -> NoPriorAttacks:
    """The prior-free attacks of the module docstring on a record of norm ``norm``.

    Args:
      eta, noise_multiplier, norm, dim, releases: as :func:`shrinkage_success`.
      unbiased: the unbiased attack's success if already computed (else from the chi^2 law).

    Returns:
      :class:`NoPriorAttacks`.
    """
    u = shrinkage_success(eta, noise_multiplier, norm, dim, 1.0, releases) if unbiased is None else float(unbiased)
    z = zero_guess_success(eta, norm, dim)
    cstar = mse_optimal_shrinkage(noise_multiplier, dim, releases)
    ps = shrinkage_success(eta, noise_multiplier, norm, dim, cstar, releases)
    cb, pb = best_shrinkage(eta, noise_multiplier, norm, dim, releases)
    cands = [(u, "unbiased analytic attack X_hat"), (z, "constant guess 0"),
             (ps, f"shrinkage {cstar:.4g} X_hat (MSE-optimal)"), (pb, f"shrinkage {cb:.4g} X_hat")]
    best, name = max(cands, key=lambda t: t[0])
    return NoPriorAttacks(u, z, cstar, ps, cb, pb, best, name)


def fixed_guess_success(data: Any, eta: float, guess: Any = None) -> float:
    """Fraction of the records X of ``data`` with ||X - y||^2 / N <= eta for the fixed guess y.

    The exact success of the constant guess y against a target drawn uniformly from ``data``.

    Args:
      data: array (n, ...) of records (flattened).
      eta: MSE threshold >= 0.
      guess: y (a vector of N numbers); None: the data mean.

    Returns:
      The fraction, in [0, 1].
    """
    x = np.asarray(data, dtype=float)
    x = x.reshape(x.shape[0], -1)
    e = check_nonnegative("eta", eta)
    y = x.mean(axis=0) if guess is None else np.asarray(guess, dtype=float).reshape(-1)
    mse = np.mean((x - y) ** 2, axis=1)
    return float(np.mean(mse <= e))


def log_kappa_uniform_cube(dim: int, eta: float, data_range: float = 1.0) -> float:
    """Upper bound on log kappa(eta) for data uniform on [0, R]^N and the MSE threshold eta.

    kappa(eta) = sup_y P(||X - y||^2 <= N eta). The uniform density on the cube is symmetric about
    its centre and log-concave, and the ball is symmetric and convex, so by Anderson's inequality
    (Anderson 1955) the sup is attained at the centre: kappa = P(sum_i W_i^2 <= N eta), W_i
    i.i.d. uniform on [-R/2, R/2]. Chernoff: for every theta > 0,
    log kappa <= N (theta eta + log M(theta)), M(theta) = E e^{-theta W^2} =
    sqrt(pi/theta) erf(R sqrt(theta) / 2) / R; minimised over theta numerically (every theta
    gives a valid bound) and rounded up.

    Args:
      dim: N >= 1.
      eta: MSE threshold >= 0.
      data_range: R > 0 (default 1: pixels in [0, 1]).

    Returns:
      log kappa upper bound (<= 0).
    """
    from scipy.optimize import minimize_scalar
    from scipy.special import erf

    n = check_int("dim", dim, minimum=1)
    e = check_nonnegative("eta", eta)
    rr = check_positive("data_range", data_range)
    if e >= rr * rr / 4.0:  # the ball around the centre covers the cube
        return 0.0
    if e == 0.0:
        return -math.inf

    def f(log_t: float) -> float:
        t = math.exp(log_t)
        m = math.sqrt(math.pi / t) * float(erf(rr * math.sqrt(t) / 2.0)) / rr
        return n * (t * e + math.log(m))

    grid = np.linspace(-20.0, math.log(1e6 / (rr * rr)) + 20.0, 200)
    vals = [f(g) for g in grid]
    j = int(np.argmin(vals))
    lo, hi = grid[max(0, j - 1)], grid[min(len(grid) - 1, j + 1)]
    res = minimize_scalar(f, bounds=(lo, hi), method="bounded")
    v = min(vals[j], float(res.fun)) if res.success else vals[j]
    v += 1e-12 * (abs(v) + n)  # float round-off of the sum, on the safe side
    return min(0.0, v)


def mse_prior_log_kappa(prior: str, dim: int, eta: float, *, scale: float | None = None,
                        samples: Any = None, confidence: float = 0.95) -> tuple[float, str]:
    """log kappa(eta) of a continuous data prior for the MSE threshold eta (l2 radius sqrt(N eta)).

    Args:
      prior: "ball" (uniform on the l2 ball of radius ``scale``), "gaussian" (N(w, scale^2 I)),
        "cube" (uniform on [0, scale]^N) or "samples" (the user's data, Hayes et al. App. J upper
        confidence bound at ``confidence``; l2 metric).
      dim: N >= 1.
      eta: MSE threshold > 0.
      scale: the ball radius, the Gaussian's standard deviation or the cube's range.
      samples: array (n, N) for "samples".
      confidence: the confidence of the samples' upper bound (default 0.95).

    Returns:
      ``(log_kappa, description)``; log kappa an upper bound (a 1 - beta upper confidence bound for
      "samples").

    Raises:
      ValueError: if ``prior`` is unknown or its parameter is missing / out of range.
    """
    from rerokit._validate import check_choice
    from rerokit.bounds.priors import GaussianPrior, UniformBallPrior, kappa_from_samples

    prior = check_choice("prior", prior, ("ball", "gaussian", "cube", "samples"))
    n = check_int("dim", dim, minimum=1)
    e = check_positive("eta", eta)
    radius = math.sqrt(n * e)  # MSE <= eta  <=>  ||X - y||_2 <= sqrt(N eta)
    if prior == "samples":
        if samples is None:
            raise ValueError("samples must be given for prior 'samples'")
        b = kappa_from_samples(samples, radius, metric="l2", confidence=confidence)
        return (math.log(b.value) if b.value > 0 else -math.inf,
                f"{b.inputs['n_samples']} samples of the data (Hayes et al. App. J, {confidence:g} upper confidence "
                "bound)")
    s = check_positive("scale", scale)
    if prior == "ball":
        return UniformBallPrior(n).log_kappa(radius / s), f"uniform on the l2 ball of radius {s:g} in {n} dimensions"
    if prior == "gaussian":
        return GaussianPrior(n, s).log_kappa(radius), f"Gaussian N(w, {s:g}^2 I) in {n} dimensions"
    return log_kappa_uniform_cube(n, e, s), f"uniform on [0, {s:g}]^{n}"
