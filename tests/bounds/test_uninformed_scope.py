"""Attack laws vs certified bounds for the uninformed adversary (rerokit.bounds.uninformed_scope).

Independent references: seeded Monte Carlo of the attacks themselves, scipy's chi-square for the
unbiased attack, the exact one-dimensional kappa of the uniform cube.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from rerokit.bounds import uninformed as U
from rerokit.bounds import uninformed_scope as S


@pytest.mark.parametrize("sigma,r,n,eta,c,k", [(0.3, 2.0, 10, 0.5, 0.6, 1), (1.0, 1.0, 5, 0.3, 0.3, 2),
                                               (0.1, 3.0, 50, 0.05, 0.9, 1)])
def test_shrinkage_law_matches_simulation(sigma, r, n, eta, c, k):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    x *= r / np.linalg.norm(x)
    m = 100_000
    xhat = x + sigma * r / math.sqrt(k) * rng.standard_normal((m, n))
    mc = float(np.mean(np.mean((c * xhat - x) ** 2, axis=1) <= eta))
    p = S.shrinkage_success(eta, sigma, r, n, c, k)
    assert abs(p - mc) <= 4 * math.sqrt(max(p * (1 - p), 1e-6) / m) + 1e-4


def test_unbiased_is_the_central_law_and_zero_guess_is_deterministic():
    assert S.shrinkage_success(0.01, 0.1, 1.0, 3072, 1.0) == pytest.approx(
        float(U.mse_cdf(0.01, 0.1, 1.0, 3072)), rel=1e-12)
    assert S.zero_guess_success(0.01, 1.0, 3072) == 1.0 and S.zero_guess_success(0.01, 10.0, 3072) == 0.0
    assert S.shrinkage_success(0.01, 0.1, 1.0, 3072, 0.0) == 1.0


def test_issue_case_a_prior_free_attacker_beats_the_unbiased_law():
    """sigma 0.1, r 1, N 3072, eta 0.01: the unbiased attack succeeds with 0.5034, the zero guess always."""
    a = S.no_prior_attacks(0.01, 0.1, 1.0, 3072)
    assert a.unbiased == pytest.approx(0.5034, abs=5e-5)
    assert a.zero_guess == 1.0 and a.best == 1.0
    assert a.mse_optimal_factor == pytest.approx(1 / (1 + 3072 * 0.01))


def test_best_shrinkage_beats_the_unbiased_attack_where_noise_dominates():
    a = S.no_prior_attacks(0.05, 0.1, 3.0, 100)
    assert a.zero_guess == 0.0 and a.unbiased < 1e-3 and a.best_shrinkage > 0.8
    assert a.best_shrinkage >= a.mse_optimal_shrinkage
    # the best factor is a real optimum: nudging it does not help
    for dc in (-1e-3, 1e-3):
        assert S.shrinkage_success(0.05, 0.1, 3.0, 100, a.best_factor + dc) <= a.best_shrinkage + 1e-9


def test_uniform_cube_kappa_is_an_upper_bound():
    # N = 1: kappa = P(|W| <= sqrt(eta)) = 2 sqrt(eta) / R exactly
    for eta in (1e-4, 0.01, 0.05):
        assert math.exp(S.log_kappa_uniform_cube(1, eta)) >= 2 * math.sqrt(eta) - 1e-12
    rng = np.random.default_rng(1)
    w = rng.random((400_000, 4)) - 0.5
    mc = float(np.mean(np.mean(w ** 2, axis=1) <= 0.03))
    assert math.exp(S.log_kappa_uniform_cube(4, 0.03)) >= mc
    assert S.log_kappa_uniform_cube(4, 0.3) == 0.0
    # scaling by the data range
    assert S.log_kappa_uniform_cube(8, 0.01 * 4.0, 2.0) == pytest.approx(S.log_kappa_uniform_cube(8, 0.01), rel=1e-6)


def test_certified_bound_holds_for_a_simulated_shrinkage_attack_on_prior_data():
    """Data uniform on [0, 1]^4: the best shrinkage toward the centre of X_hat; its success rate stays
    below the certified gamma = Phi(Phi^-1(kappa) + 1/sigma) of one release."""
    n, sigma, eta = 4, 1.0, 0.03
    rng = np.random.default_rng(2)
    m = 100_000
    x = rng.random((m, n))
    xhat = x + sigma * np.linalg.norm(x, axis=1, keepdims=True) * rng.standard_normal((m, n))
    best = max(float(np.mean(np.mean((0.5 + c * (xhat - 0.5) - x) ** 2, axis=1) <= eta))
               for c in np.linspace(0, 1, 21))
    lk = S.log_kappa_uniform_cube(n, eta)
    gamma = float(norm.cdf(norm.ppf(math.exp(lk)) + 1 / sigma))
    assert best <= gamma


def test_mse_prior_log_kappa_forms():
    lk, name = S.mse_prior_log_kappa("ball", 10, 0.01, scale=2.0)
    assert lk == pytest.approx(10 * math.log(math.sqrt(0.1) / 2.0)) and "ball" in name
    lk, _ = S.mse_prior_log_kappa("gaussian", 10, 0.01, scale=1.0)
    from scipy.stats import chi2

    assert math.exp(lk) >= chi2.cdf(0.1, 10) * (1 - 1e-9)
    x = np.random.default_rng(0).random((300, 3))
    lk, name = S.mse_prior_log_kappa("samples", 3, 0.01, samples=x)
    assert 0 < math.exp(lk) <= 1 and "samples" in name
    with pytest.raises(ValueError, match="prior"):
        S.mse_prior_log_kappa("laplace", 3, 0.01, scale=1.0)
