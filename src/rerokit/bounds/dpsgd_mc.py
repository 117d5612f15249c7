"""Hayes, Mahloujifar & Balle 2023, Algorithm 1: the Monte Carlo *estimate* of the DP-SGD ReRo gamma.

A point estimate with a 95% confidence interval, not a guarantee (see :func:`mc_gamma`); the
certified value is :func:`rerokit.bounds.dpsgd.rero_dpsgd`'s exact method.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from rerokit.bounds.pld.normal import logsumexp_rows

__all__ = ["mc_gamma"]

_Z_MC = 2.241402727604947  # two-sided 97.5% normal quantile (Bonferroni over two error sources)


def mc_gamma(segs: Sequence[tuple[float, float, int]], lk: float, n: int, seed: int | None, chunk_elements: int) -> dict[str, Any]:
    """Hayes et al. Algorithm 1 with a 95% confidence interval.

    Samples x_1..x_N ~ nu = N(0, sigma^2)^T (numpy Generator(seed), in chunks of about
    ``chunk_elements`` numbers), log r_i = sum_t log((1-q) + q exp((2 x_it - 1)/(2 sigma^2)))
    (logaddexp), k = floor(kappa N), threshold tau = the (k+1)-th largest r, and
    gamma_hat = (1/N) sum_{i <= k} r_(i) = mean(r 1[r > tau]).

    Interval, two error sources, Bonferroni with 97.5% each (z = 2.2414):
    (1) threshold: the number K of samples above the true (1-kappa)-quantile tau* of r under nu
        is Binomial(N, kappa); with prob. >= 97.5% (normal approximation) it lies in
        [k_lo, k_hi] = [N kappa -+ z sqrt(N kappa (1-kappa))], and then mean(r 1[r > tau*]) =
        (1/N) sum_{i <= K} r_(i) lies between the top-k_lo and top-k_hi sums;
    (2) sampling: mean(r 1[r > tau*]) is an unbiased estimate of gamma = mu(r > tau*) with
        CLT standard error se = sd(r 1[r > tau]) / sqrt(N) (estimated at the k-th threshold).
    Interval = [top_{k_lo}/N - z se, top_{k_hi}/N + z se] clipped to [0, 1]. It assumes a finite,
    well-estimated second moment of r 1[r > tau]: false for heavy-tailed r (see module docstring).
    """
    kappa = math.exp(lk)
    k = math.floor(kappa * n)
    if k < 1:
        raise ValueError(f"mc_samples must be >= 1/kappa = {1.0 / kappa:.4g} for method='mc', got {n}")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    rng = np.random.default_rng(seed)
    t_total = sum(T for _, _, T in segs)
    rows = max(1, chunk_elements // t_total)
    logr = np.empty(n)
    for start in range(0, n, rows):
        m = min(rows, n - start)
        acc = np.zeros(m)
        for sigma, q, T in segs:
            # x = sigma z ~ N(0, sigma^2); log(mu/nu)(x) = log(1-q + q exp((2x-1)/(2 sigma^2)))
            a = rng.standard_normal((m, T))
            a *= 1.0 / sigma
            a += math.log(q) - 1.0 / (2.0 * sigma * sigma)
            if q < 1.0:
                np.logaddexp(math.log1p(-q), a, out=a)
            acc += a.sum(axis=1)
        logr[start : start + m] = acc
    spread = _Z_MC * math.sqrt(n * kappa * (1.0 - kappa))
    k_lo = max(0, math.floor(n * kappa - spread))
    k_hi = min(n, math.ceil(n * kappa + spread))
    top = np.sort(np.partition(logr, n - k_hi)[n - k_hi :])[::-1] if k_hi > 0 else np.empty(0)
    logn = math.log(n)

    def mean_top(j: int, power: float = 1.0) -> float:
        if j <= 0:
            return 0.0
        return math.exp(min(700.0, float(logsumexp_rows(power * top[None, :j])[0]) - logn))

    est = mean_top(k)
    second = mean_top(k, 2.0)
    var = max(0.0, second - est * est) * n / max(n - 1, 1)
    se = math.sqrt(var / n)
    lo = max(0.0, mean_top(k_lo) - _Z_MC * se)
    hi = min(1.0, mean_top(k_hi) + _Z_MC * se)
    return {
        "estimate": min(1.0, est),
        "interval": (lo, hi),
        "se": se,
        "seed": seed,
        "k": k,
        "log_threshold": float(top[k]) if k < top.size else float("-inf"),
        "chunk_rows": rows,
    }


